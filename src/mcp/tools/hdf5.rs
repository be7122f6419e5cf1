//! The HDF5 tools: `read_dataset_slice` and `get_dataset_stats` read the file
//! (only the selected hyperslab); `find_datasets` answers from the catalog
//! alone (as `read_resource`, in `resources.rs`, does for `h5://` URIs).

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Context, Effects, ToolDef, Toolset, checked_limit, checked_offset, parse_args};
use crate::catalog::hdf5::HDF5_OBJECTS;
use crate::formats::FormatError;
use crate::formats::hdf5::isolated::H5Source;
use crate::formats::hdf5::slice::{self, Selection, SliceError};
use crate::formats::hdf5::{DType, DatasetInfo, Entry, Object, isolated};
use crate::glob::Glob;
use crate::job::Job;
use crate::mcp::budget::{self, Cut};
use crate::mcp::resources::h5::{self, KnownHdf5File};
use crate::mcp::resources::{self, ResourceError};
use crate::mcp::response::{ToolError, ToolOutput};

pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "read_dataset_slice",
        title: "Read a slice of an HDF5 dataset",
        toolset: Toolset::Hdf5,
        description: "Part of an HDF5 dataset by NumPy basic indexing, as nested lists: strings decoded, compounds as objects, \
enums as names, NaN/inf null. Over the element cap: a retry_with thinning the slice.",
        input_schema: include_str!("../../../schema/tools/read_dataset_slice.input.json"),
        output_schema: include_str!("../../../schema/tools/read_dataset_slice.output.json"),
        effects: Effects::READS,
        handler: read_dataset_slice,
    },
    ToolDef {
        name: "find_datasets",
        title: "Find HDF5 datasets",
        toolset: Toolset::Hdf5,
        description: "Searches every indexed HDF5 file's datasets by name, dtype, rank and attributes: URI, shape, dtype.",
        input_schema: include_str!("../../../schema/tools/find_datasets.input.json"),
        output_schema: include_str!("../../../schema/tools/find_datasets.output.json"),
        effects: Effects::READS,
        handler: find_datasets,
    },
    ToolDef {
        name: "get_dataset_stats",
        title: "Statistics of an HDF5 dataset",
        toolset: Toolset::Hdf5,
        description: "Count, min, max, mean, std and NaN count of a numeric HDF5 dataset or slice (any size); NaN and infinities \
left out of the rest.",
        input_schema: include_str!("../../../schema/tools/get_dataset_stats.input.json"),
        output_schema: include_str!("../../../schema/tools/get_dataset_stats.output.json"),
        effects: Effects::READS,
        handler: get_dataset_stats,
    },
];

/// The dataset a URI names, through soft links, with its file.
pub(super) fn dataset_of(
    ctx: &Context,
    uri: &str,
) -> Result<(KnownHdf5File, String, DatasetInfo), ToolError> {
    let parsed =
        h5::parse_uri(uri).map_err(|why| resources::tool_error(ResourceError::BadUri(why)))?;
    let file = h5::known_hdf5_file(ctx, uri, &parsed.file).map_err(resources::tool_error)?;
    let missing = || {
        resources::tool_error(ResourceError::NotFound {
            uri: uri.to_string(),
            why: format!("no dataset '{}' in {}", parsed.path, file.abs),
        })
    };
    let object: Object = h5::follow(ctx, file.id, &parsed.path)
        .map_err(resources::tool_error)?
        .ok_or_else(missing)?;
    match object.entry {
        Entry::Dataset(info) => match info.refusal(&object.path) {
            Some(why) => Err(refused(uri, why)),
            None => Ok((file, object.path, *info)),
        },
        Entry::ExternalLink { file: f, path } => Err(ToolError::new(
            "not_a_dataset",
            format!(
                "'{}' is an external link to {path} in {f}; quarry does not follow external links",
                parsed.path
            ),
            "Read the linked file directly if it is inside a configured root (list_files(kind='hdf5'))",
        )),
        other => Err(ToolError::new(
            "not_a_dataset",
            format!(
                "'{}' is a {}, not a dataset",
                parsed.path,
                other.kind().as_str()
            ),
            format!("Read its members with read_resource(uri='{uri}')"),
        )),
    }
}

fn slice_error(e: SliceError) -> ToolError {
    let code = match e {
        SliceError::Syntax { .. } => "invalid_slice",
        _ => "index_out_of_range",
    };
    ToolError::new(
        code,
        e.to_string(),
        "Use NumPy basic indexing: integers, start:stop:step, '...'; read_resource shows the dataset's shape",
    )
}

/// A dataset whose data lies in other files (external storage, a virtual
/// dataset): never read.
fn refused(uri: &str, why: String) -> ToolError {
    ToolError::new(
        "permission_denied",
        why,
        format!("read_resource(uri='{uri}') shows the dataset's layout and the files it names"),
    )
}

pub(super) fn format_error(file: &KnownHdf5File, uri: &str, e: FormatError) -> ToolError {
    match e {
        FormatError::Refused(why) => refused(uri, why),
        FormatError::UnsupportedFilter(why) => ToolError::new(
            "unsupported_filter",
            why,
            format!(
                "read_resource(uri='{uri}') lists the dataset's filters; datasets stored without it read normally"
            ),
        ),
        FormatError::Unsupported(why) => ToolError::new(
            "unsupported_type",
            why,
            "read_resource shows the dataset's type; find_datasets(dtype='float') lists numeric ones",
        ),
        FormatError::Transient(why) => ToolError::new("io_error", why, "Retry in a moment"),
        // Only a read by ranges (a remote file) reaches here as an I/O error: a
        // worker's own I/O errors are the file's (`decode_answer`).
        FormatError::Io(why) => ToolError::new(
            "io_error",
            format!("reading {}: {why}", file.abs),
            "Retry in a moment; index_status() shows the remote root's last error",
        ),
        other => ToolError::new(
            "corrupted_file",
            format!("cannot read {}: {other}", file.abs),
            "Verify the file's integrity; quarry re-indexes it when it changes",
        ),
    }
}

/// Opens the file beneath its root (a link swapped in since indexing cannot
/// lead out); a remote root's file is read by ranges. The dataset's shape and
/// type come from the catalog, so a remote file that is no longer the version
/// the catalog describes is not read: the call fails, and the file is noted
/// for the index to state again at once (as ROOT tools' opens do).
pub(super) fn open_file(ctx: &Context, file: &KnownHdf5File) -> Result<H5Source, ToolError> {
    let roots = ctx.catalog.roots();
    let Some(remote) = roots.open_remote_as_indexed(file.root_id, &file.rel, file.fingerprint)
    else {
        return roots
            .open(file.root_id, &file.rel)
            .map(H5Source::File)
            .map_err(|e| ToolError::from_path(&e));
    };
    let (remote, current) = remote.map_err(|e| ToolError::from_path(&e))?;
    if !current {
        return Err(changed_since_indexed(&remote.url()));
    }
    Ok(H5Source::Ranges(std::sync::Arc::new(remote)))
}

/// The error for a remote file the server holds another version of than the
/// catalog's.
pub(super) fn changed_since_indexed(url: &str) -> ToolError {
    ToolError::new(
        "io_error",
        format!("{url} changed on the server since quarry indexed it"),
        "Retry in a few seconds: quarry is indexing the new version now (index_status() shows it)",
    )
}

/// The selection a slice string makes of a dataset of `shape` (`None`: empty).
pub(super) fn selection(slice_str: &str, shape: Option<&[u64]>) -> Result<Selection, ToolError> {
    let indices = slice::parse(slice_str).map_err(slice_error)?;
    slice::resolve(&indices, shape.unwrap_or(&[])).map_err(slice_error)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SliceArgs {
    uri: String,
    slice_str: String,
    offset: Option<i64>,
}

fn read_dataset_slice(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: SliceArgs = parse_args("read_dataset_slice", args)?;
    let (file, path, info) = dataset_of(ctx, &args.uri)?;
    let sel = selection(&args.slice_str, info.shape.as_deref())?;
    let cap = ctx.settings.limits.max_slice_elements;
    if sel.len() > cap {
        let thinner = sel.thinned(cap);
        return Err(ToolError::new(
            "limit_exceeded",
            format!(
                "the slice selects {} elements, over the limit of {cap}",
                sel.len()
            ),
            "Read fewer elements: a step (::N) samples the whole range, or narrow start:stop",
        )
        .details(json!({ "elements": sel.len(), "max_elements": cap, "shape": sel.shape() }))
        .retry_with(json!({ "uri": args.uri, "slice_str": thinner.to_string() })));
    }
    // Only the rows of the result's first axis that can fit the budget are
    // read: a row of n elements takes at least 2n bytes of JSON.
    let budget = ctx.budget("read_dataset_slice");
    let offset = checked_offset("read_dataset_slice", "offset", args.offset)? as u64;
    let rows_total = sel.rows_total();
    let shape = sel.shape();
    let row_elements = shape.iter().skip(1).product::<u64>().max(1);
    let readable = (budget.cap as u64 / (2 * row_elements)).max(1) + 1;
    let page = sel.rows(offset, readable).unwrap_or_else(|| sel.clone());
    let rows_left = rows_total.saturating_sub(offset);
    let fd = open_file(ctx, &file)?;
    let data = isolated::read_slice(fd, &path, &page, &|| job.is_stopped())
        .map_err(|e| format_error(&file, &args.uri, e))?
        .ok_or_else(|| ToolError::stopped(job))?;
    let mut notes = Vec::new();
    if info.shape.is_none() {
        notes.push("the dataset has an empty (null) dataspace: it holds no values".to_string());
    }
    if data.non_finite > 0 {
        notes.push(format!(
            "{} NaN or infinite value(s) are shown as null",
            data.non_finite
        ));
    }
    let mut out = ToolOutput::new(json!({
        "uri": args.uri,
        "path": path,
        "slice": args.slice_str,
        "shape": data.shape,
        "dtype": info.dtype.numpy(),
        "data": data.data,
        "notes": notes,
    }))
    .meta("elements", sel.len());
    if shape.is_empty() {
        // A scalar: nothing to page; a long string is shortened.
        if !budget.fits(&out) {
            let room = budget.cap - (budget.len(&out) - budget::json_len(&out.data["data"]));
            if !budget::shorten(&mut out.data["data"], room) {
                return Err(row_too_long(&args, &sel, budget.cap));
            }
            out = out.meta("truncated", true).suggest(
                "The value was too long for max_result_bytes: it ends with a '…[cut here' marker",
            );
        }
        return Ok(out);
    }
    let cut = budget.cut_list(&mut out, "/data", |o, cut| {
        // Rows past the ones read are there too: the cut counts every row left.
        let cut = Cut {
            total: (rows_left as usize).max(cut.kept),
            ..cut
        };
        if cut.truncated() || offset > 0 {
            let mut returned = shape.clone();
            returned[0] = cut.kept as u64;
            budget::set(&mut o.data, "shape", json!(returned));
            o.metadata.insert("selection_shape".into(), json!(shape));
        }
        budget::mark_offset(o, cut, offset as usize, "read_dataset_slice", "rows");
    });
    if cut.kept == 0 && rows_left > 0 {
        return Err(row_too_long(&args, &sel, budget.cap));
    }
    Ok(out)
}

/// One row of the result (of numbers, which are never shortened) is over the
/// budget: the error retries with that row thinned to fit.
fn row_too_long(args: &SliceArgs, sel: &Selection, cap: usize) -> ToolError {
    let offset = args.offset.unwrap_or(0).max(0) as u64;
    let row = sel.rows(offset, 1).unwrap_or_else(|| sel.clone());
    // 24 bytes hold the longest number JSON shows.
    let thinner = row.thinned((cap / 24) as u64);
    ToolError::new(
        "limit_exceeded",
        format!(
            "one row of this slice ({} elements) is longer than max_result_bytes ({cap} bytes)",
            row.len()
        ),
        "Select fewer elements per row: a step (::N) along the inner axes, or a narrower start:stop",
    )
    .retry_with(json!({ "uri": args.uri, "slice_str": thinner.to_string() }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatsArgs {
    uri: String,
    slice_str: Option<String>,
}

/// Elements read per block when streaming statistics (whole chunks along the
/// first axis are read at a time, so the real block can be larger).
const STATS_BLOCK: u64 = 1 << 20;

fn get_dataset_stats(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: StatsArgs = parse_args("get_dataset_stats", args)?;
    let (file, path, info) = dataset_of(ctx, &args.uri)?;
    if !info.dtype.is_numeric() && !matches!(info.dtype, DType::Enum { .. }) {
        return Err(format_error(
            &file,
            &args.uri,
            FormatError::Unsupported(format!(
                "statistics need numbers; this dataset holds {}",
                info.dtype.numpy()
            )),
        ));
    }
    let sel = selection(
        args.slice_str.as_deref().unwrap_or(""),
        info.shape.as_deref(),
    )?;
    let total = sel.len();
    job.progress(0, Some(total));
    let fd = open_file(ctx, &file)?;
    let m = isolated::dataset_moments(
        fd,
        &path,
        &sel,
        STATS_BLOCK,
        &|| job.is_stopped(),
        &|done, _| job.progress(done, Some(total)),
    )
    .map_err(|e| format_error(&file, &args.uri, e))?
    .ok_or_else(|| ToolError::stopped(job))?;
    job.progress(total, Some(total));
    let some = |x: f64| (m.count > 0).then_some(x);
    Ok(ToolOutput::new(json!({
        "uri": args.uri,
        "path": path,
        "slice": args.slice_str,
        "dtype": info.dtype.numpy(),
        "count": total,
        "finite_count": m.count,
        "nan_count": m.nan,
        "inf_count": m.inf,
        "min": some(m.min),
        "max": some(m.max),
        "mean": some(m.mean),
        "std": some(m.std()),
    })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FindArgs {
    name: Option<String>,
    dtype: Option<String>,
    rank: Option<u32>,
    attribute: Option<String>,
    attribute_value: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
}

const FIND_LIMIT_DEFAULT: usize = 100;
const FIND_LIMIT_MAX: usize = 1000;

/// Whether a type matches a `dtype` argument: its NumPy string, or its class.
fn dtype_matches(d: &crate::formats::hdf5::DType, wanted: &str) -> bool {
    use crate::formats::hdf5::DType as T;
    let wanted = wanted.trim().to_ascii_lowercase();
    if d.numpy().eq_ignore_ascii_case(&wanted) {
        return true;
    }
    matches!(
        (wanted.as_str(), d),
        ("float", T::Float { .. })
            | ("bool", T::Bool)
            | ("compound", T::Compound { .. })
            | ("enum", T::Enum { .. })
            | ("string" | "str", T::String { .. })
            | ("int" | "integer", T::Int { signed: true, .. })
            | ("uint", T::Int { signed: false, .. })
    )
}

fn find_datasets(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: FindArgs = parse_args("find_datasets", args)?;
    let limit = checked_limit(
        args.limit,
        FIND_LIMIT_DEFAULT,
        FIND_LIMIT_MAX,
        "narrow the search with `name` or `dtype`",
    )?;
    let glob = |p: Option<&str>| {
        p.map(|p| Glob::new(p).map_err(|e| ToolError::invalid_arguments("find_datasets", e)))
            .transpose()
    };
    let on_path = args.name.as_deref().is_some_and(|n| n.contains('/'));
    // A path pattern is matched against the path without its leading `/`, so that one
    // written as the answers show paths (`/detector/*`) matches too.
    let name_pattern = args.name.as_deref().map(|n| {
        if on_path {
            n.trim_start_matches('/')
        } else {
            n
        }
    });
    let (name, attribute) = (glob(name_pattern)?, glob(args.attribute.as_deref())?);
    let offset = checked_offset("find_datasets", "offset", args.offset)?;
    let mut found = Vec::new();
    let mut matched = 0usize;
    for (abs, _) in h5::files(ctx) {
        if job.stopped().is_some() {
            return Err(ToolError::stopped(job));
        }
        let uri0 = h5::uri_of(&abs, "/");
        let Ok(file) = h5::known_hdf5_file(ctx, &uri0, &abs) else {
            continue;
        };
        let objects: Vec<Object> = ctx
            .catalog
            .kind_rows(HDF5_OBJECTS, file.id, b"")
            .map_err(ToolError::internal)?;
        for o in objects {
            let Entry::Dataset(d) = &o.entry else {
                continue;
            };
            let leaf = o.path.rsplit('/').next().unwrap_or("");
            if let Some(g) = &name
                && !g.is_match(if on_path {
                    o.path.trim_start_matches('/')
                } else {
                    leaf
                })
            {
                continue;
            }
            if args
                .dtype
                .as_deref()
                .is_some_and(|t| !dtype_matches(&d.dtype, t))
            {
                continue;
            }
            let rank = d.shape.as_ref().map_or(0, |s| s.len() as u32);
            if args.rank.is_some_and(|r| r != rank) {
                continue;
            }
            let attrs: Vec<&crate::formats::hdf5::Attribute> = d
                .attributes
                .iter()
                .filter(|a| attribute.as_ref().is_none_or(|g| g.is_match(&a.name)))
                .filter(|a| {
                    args.attribute_value.as_deref().is_none_or(|v| {
                        a.value
                            .as_deref()
                            .is_some_and(|t| t.to_lowercase().contains(&v.to_lowercase()))
                    })
                })
                .collect();
            if (attribute.is_some() || args.attribute_value.is_some()) && attrs.is_empty() {
                continue;
            }
            matched += 1;
            if matched > offset && found.len() < limit {
                let mut v = json!({
                    "uri": h5::uri_of(&abs, &o.path),
                    "file": abs,
                    "path": o.path,
                    "shape": d.shape,
                    "dtype": d.dtype.numpy(),
                });
                if attribute.is_some() || args.attribute_value.is_some() {
                    v["attributes"] = attrs
                        .iter()
                        .map(|a| {
                            let value = a
                                .value
                                .as_deref()
                                .and_then(|t| serde_json::from_str::<Value>(t).ok());
                            (a.name.clone(), value.unwrap_or(Value::Null))
                        })
                        .collect::<Map<_, _>>()
                        .into();
                }
                found.push(v);
            }
        }
    }
    let remaining = matched.saturating_sub(offset);
    let mut out = ToolOutput::new(json!({ "datasets": found, "total_matched": matched }))
        .meta("truncated", remaining > found.len());
    if let Some(first) = found.first() {
        out = out.suggest(format!(
            "Read values with read_dataset_slice(uri='{}', slice_str='0:10')",
            first["uri"].as_str().unwrap_or("")
        ));
    }
    ctx.budget("find_datasets")
        .page(&mut out, "/datasets", offset, remaining, "datasets");
    Ok(out)
}
