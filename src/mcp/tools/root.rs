//! The ROOT discovery tools: `inspect_file` and `list_branches` answer from the
//! catalog alone; `read_histogram`, and `list_branches` with `include_stats`, read
//! the file.

use crate::job::Job;
use crate::roots::RootId;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Context, Effects, ToolDef, Toolset, bins, checked_limit, checked_offset, parse_args};
use crate::catalog::root::{
    BranchRow, HistogramRow, ROOT_BRANCHES, ROOT_FILE, ROOT_HISTOGRAMS, ROOT_STATS, ROOT_TREES,
    RootFileRow, StatsRow, Summary, TreeRow, branch_prefix,
};
use crate::catalog::{FileRecord, FileSnapshot, FileStatus, decode};
use crate::formats::Kind;
use crate::formats::root::{RootFile, latest};
use crate::glob::Glob;
use crate::indexing::root::tree_stats_rows;
use crate::mcp::budget::mark_offset;
use crate::mcp::response::{ToolError, ToolOutput};

pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "inspect_file",
        title: "Inspect a ROOT file",
        toolset: Toolset::Root,
        description: "A ROOT file's contents from the catalog: version, compression, trees (TTrees and RNTuples: path, kind, \
entries, branches, size), histograms, directories, other objects.",
        input_schema: include_str!("../../../schema/tools/inspect_file.input.json"),
        output_schema: include_str!("../../../schema/tools/inspect_file.output.json"),
        effects: Effects::READS,
        handler: inspect_file,
    },
    ToolDef {
        name: "list_branches",
        title: "List a tree's branches",
        toolset: Toolset::Root,
        description: "Branches of a TTree (an RNTuple's leaf fields, `Muon.pt`) from the catalog: uproot-style type (float32, \
float32[], int32[3]), title, compression, jagged.",
        input_schema: include_str!("../../../schema/tools/list_branches.input.json"),
        output_schema: include_str!("../../../schema/tools/list_branches.output.json"),
        effects: Effects::READS,
        handler: list_branches,
    },
    ToolDef {
        name: "read_histogram",
        title: "Read a histogram",
        toolset: Toolset::Root,
        description: "A stored TH1, TH2, TProfile or TProfile2D: bin edges, counts, errors, under/overflow, entries, axis titles; \
2-D counts [y][x].",
        input_schema: include_str!("../../../schema/tools/read_histogram.input.json"),
        output_schema: include_str!("../../../schema/tools/read_histogram.output.json"),
        effects: Effects::READS,
        handler: read_histogram,
    },
];

const LIMIT_DEFAULT: usize = 100;
const LIMIT_MAX: usize = 1000;

/// A ROOT file the catalog knows: where it is and its record.
pub(super) struct KnownRootFile {
    pub(super) root_id: RootId,
    pub(super) rel: String,
    /// The root's canonical folder (the file is `rel` beneath it).
    pub(super) root_dir: std::path::PathBuf,
    pub(super) record: FileRecord,
}

/// Finds a ROOT file in the catalog by a tool path, without touching the disk.
pub(super) fn known_root_file(ctx: &Context, path: &str) -> Result<KnownRootFile, ToolError> {
    known_root_file_snapshot(ctx, path).map(|(file, _)| file)
}

/// `known_root_file`, with the catalog snapshot its record was read from: for
/// a tool reading several of the file's rows, all of one version.
fn known_root_file_snapshot(
    ctx: &Context,
    path: &str,
) -> Result<(KnownRootFile, FileSnapshot), ToolError> {
    let roots = ctx.catalog.roots();
    let (root_id, rel) = roots
        .resolve_lexically(path, None)
        .map_err(|e| ToolError::from_path(&e))?;
    let not_found = || {
        ToolError::new(
            "file_not_found",
            format!("'{path}' is not a file quarry has indexed"),
            "Use list_files() to see the ROOT files; a file written just now appears within seconds (index_status())",
        )
    };
    let snapshot = ctx
        .catalog
        .file_snapshot(root_id, &rel)
        .map_err(ToolError::internal)?
        .ok_or_else(not_found)?;
    let record = &snapshot.record;
    if record.info.kind != Kind::Root {
        return Err(ToolError::new(
            "file_not_found",
            format!(
                "'{path}' is not a ROOT file (quarry indexed it as {})",
                record.info.kind
            ),
            "Use list_files(kind='root') to see the ROOT files",
        ));
    }
    if let FileStatus::Failed(why) = &record.info.status {
        return Err(ToolError::new(
            "corrupted_file",
            format!("'{path}' cannot be read: {why}"),
            "Verify the file's integrity (was it copied completely?); quarry re-reads it when it changes",
        ));
    }
    let file = KnownRootFile {
        root_dir: roots.list()[root_id].canonical.clone(),
        root_id,
        rel,
        record: record.clone(),
    };
    Ok((file, snapshot))
}

/// A ROOT file opened for a call, with the identity of the version it reads
/// (`catalog::fingerprint` of the open descriptor).
pub(super) struct Opened {
    pub(super) file: RootFile,
    pub(super) fingerprint: u64,
    /// The bytes' own identity, what a tree parsed from them is cached by:
    /// the fingerprint, and a remote file's ETag too (an object replaced
    /// within the same second at the same size has the same fingerprint).
    pub(super) version: u64,
}

impl KnownRootFile {
    /// The file's absolute path (for messages).
    pub(super) fn abs(&self) -> std::path::PathBuf {
        self.root_dir.join(&self.rel)
    }

    /// Opens the file beneath its root (a link swapped in since indexing cannot
    /// lead out) and reads its ROOT header. A remote file reports to `job` when a read finds it replaced (the call
    /// then runs once more on the new version: `tools::invoke`).
    pub(super) fn open(&self, ctx: &Context, job: &Job) -> Result<Opened, ToolError> {
        let roots = ctx.catalog.roots();
        if let Some(remote) =
            roots.open_remote_as_indexed(self.root_id, &self.rel, self.record.info.fingerprint)
        {
            // Read by ranges; the version is what the storage says now (one
            // the catalog does not describe is being indexed again).
            let (remote, _) = remote.map_err(|e| ToolError::from_path(&e))?;
            let remote = remote.reporting_changes_to(job.source_changed_flag());
            let fingerprint = remote.fingerprint();
            let mut version = fingerprint.to_le_bytes().to_vec();
            version.extend_from_slice(remote.meta().etag.as_deref().unwrap_or("").as_bytes());
            let version = xxhash_rust::xxh3::xxh3_64(&version);
            let file = RootFile::from_source(std::sync::Arc::new(remote))
                .map_err(|e| corrupted(&self.abs(), &e))?;
            return Ok(Opened {
                file,
                fingerprint,
                version,
            });
        }
        let file = ctx
            .catalog
            .roots()
            .open(self.root_id, &self.rel)
            .map_err(|e| ToolError::from_path(&e))?;
        // The descriptor's own identity: the file may have been rewritten
        // since the catalog saw it, and only this names what is read.
        let meta = file.metadata().map_err(ToolError::internal)?;
        let fingerprint = crate::catalog::fingerprint(&meta);
        let file = RootFile::open(file).map_err(|e| corrupted(&self.abs(), &e))?;
        Ok(Opened {
            file,
            fingerprint,
            version: fingerprint,
        })
    }

    /// The rows of `table` under `prefix` that the catalog holds for the version
    /// of the file with `fingerprint`; `None` when the catalog describes another
    /// version (the file changed and is not re-indexed yet, or never will be in
    /// a folder the watcher cannot follow).
    pub(super) fn rows_of_version<T: serde::de::DeserializeOwned>(
        &self,
        ctx: &Context,
        table: &'static str,
        fingerprint: u64,
        prefix: &[u8],
    ) -> Result<Option<Vec<T>>, ToolError> {
        ctx.catalog
            .rows_of_version(table, (self.root_id, &self.rel), fingerprint, prefix)
            .map_err(ToolError::internal)
    }
}

pub(super) fn rows<T: serde::de::DeserializeOwned>(
    ctx: &Context,
    table: &'static str,
    id: u64,
    prefix: &[u8],
) -> Result<Vec<T>, ToolError> {
    ctx.catalog
        .kind_rows(table, id, prefix)
        .map_err(ToolError::internal)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InspectArgs {
    path: String,
    include_histograms: Option<bool>,
    include_trees: Option<bool>,
    offset: Option<i64>,
}

fn inspect_file(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: InspectArgs = parse_args("inspect_file", args)?;
    // The record and every row from one transaction: read one by one, a
    // re-index committing in between gave one version's size and summary
    // with the next one's trees.
    let (file, snapshot) = known_root_file_snapshot(ctx, &args.path)?;
    fn rows_of<T: serde::de::DeserializeOwned>(
        snapshot: &FileSnapshot,
        table: &'static str,
        wanted: Option<bool>,
    ) -> Result<Vec<T>, ToolError> {
        if wanted.unwrap_or(true) {
            snapshot.rows(table, b"").map_err(ToolError::internal)
        } else {
            Ok(Vec::new())
        }
    }
    let summary = snapshot
        .rows::<RootFileRow>(ROOT_FILE, b"")
        .map_err(ToolError::internal)?
        .pop()
        .ok_or_else(|| ToolError::internal("the catalog has no summary of this file"))?;
    let trees: Vec<TreeRow> = rows_of(&snapshot, ROOT_TREES, args.include_trees)?;
    let hists: Vec<HistogramRow> = rows_of(&snapshot, ROOT_HISTOGRAMS, args.include_histograms)?;
    let path = file.abs().to_string_lossy().into_owned();
    // `offset` skips the first items of each list (a file with thousands of
    // objects is read over several calls).
    let offset = checked_offset("inspect_file", "offset", args.offset)?;
    let mut out = ToolOutput::new(json!({
        "path": path,
        "size_bytes": file.record.info.size,
        "compression": summary.compression,
        "root_version": summary.root_version,
        "trees": trees.iter().skip(offset).map(tree_json).collect::<Vec<_>>(),
        "histograms": hists.iter().skip(offset).map(|h| json!({
            "name": h.name, "type": h.class_name, "path": h.path,
            "bins": if h.bins.len() == 1 { json!(h.bins[0]) } else { json!(h.bins) },
            "entries": h.entries,
        })).collect::<Vec<_>>(),
        "directories": summary.directories.iter().skip(offset).collect::<Vec<_>>(),
        "other_objects": summary.other_objects.iter().skip(offset).map(|(name, class, p)| json!({
            "name": name, "type": class, "path": p,
        })).collect::<Vec<_>>(),
    }));
    for t in trees.iter().take(3) {
        out = out.suggest(format!(
            "List the {} branches of '{}' ({} entries) with list_branches(path='{path}', tree='{}')",
            t.branches, t.path, t.entries, t.path
        ));
    }
    if let Some(h) = hists.first() {
        out = out.suggest(format!(
            "Read histogram '{}' with read_histogram(path='{path}', name='{}')",
            h.path, h.path
        ));
    }
    let lists = ["/trees", "/histograms", "/directories", "/other_objects"].map(|p| (p, 0));
    ctx.budget("inspect_file")
        .cut_together(&mut out, &lists, |o, cut| {
            mark_offset(o, cut, offset, "inspect_file", "objects of each kind");
        });
    Ok(out)
}

/// The tree named by a tool argument: its path, or its name when that is unique.
/// A tree as `inspect_file` lists it; an RNTuple with its own facts.
fn tree_json(t: &TreeRow) -> Value {
    let mut v = json!({
        "name": t.name, "path": t.path, "kind": t.kind, "entries": t.entries, "branches": t.branches,
        "size_bytes": t.compressed_bytes, "uncompressed_bytes": t.uncompressed_bytes,
        "compression": t.compression,
    });
    if let Some(n) = &t.ntuple {
        v["fields"] = json!(n.fields);
        v["clusters"] = json!(n.clusters);
        v["format_version"] = json!(n.format_version);
        v["writer"] = json!(n.writer);
    }
    v
}

pub(super) fn find_tree(
    ctx: &Context,
    file: &KnownRootFile,
    tree: &str,
) -> Result<TreeRow, ToolError> {
    let trees: Vec<TreeRow> = rows(ctx, ROOT_TREES, file.record.id, b"")?;
    let wanted = tree.split(';').next().unwrap_or(tree).trim_matches('/');
    if let Some(t) = trees.iter().find(|t| t.path == wanted) {
        return Ok(t.clone());
    }
    let by_name: Vec<&TreeRow> = trees.iter().filter(|t| t.name == wanted).collect();
    if let [only] = by_name.as_slice() {
        return Ok((*only).clone());
    }
    let available: Vec<&str> = trees.iter().map(|t| t.path.as_str()).collect();
    Err(ToolError::new(
        "tree_not_found",
        if by_name.len() > 1 {
            format!("several trees are named '{wanted}': give the path")
        } else {
            format!("no tree '{wanted}' in this file")
        },
        "Use inspect_file() to list the trees; pass the tree's path",
    )
    .details(json!({ "available_trees": available })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListBranchesArgs {
    path: String,
    tree: String,
    pattern: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
    include_stats: Option<bool>,
}

fn list_branches(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: ListBranchesArgs = parse_args("list_branches", args)?;
    let file = known_root_file(ctx, &args.path)?;
    let tree = find_tree(ctx, &file, &args.tree)?;
    let limit = checked_limit(
        args.limit,
        LIMIT_DEFAULT,
        LIMIT_MAX,
        "filter with `pattern`",
    )?;
    let glob = args
        .pattern
        .as_deref()
        .map(|p| Glob::new(p).map_err(|e| ToolError::invalid_arguments("list_branches", e)))
        .transpose()?;
    let key = (
        file.record.id,
        file.record.info.fingerprint,
        tree.path.clone(),
    );
    let all = ctx.cache.branches(key, || {
        rows(
            ctx,
            ROOT_BRANCHES,
            file.record.id,
            &branch_prefix(&tree.path),
        )
    })?;
    // Matching branches with their position in the tree (which keys their stats).
    let matched: Vec<(usize, &BranchRow)> = all
        .iter()
        .enumerate()
        .filter(|(_, b)| {
            glob.as_ref()
                .is_none_or(|g| g.is_match(&b.name) || g.is_match(&b.path))
        })
        .collect();
    let offset = checked_offset("list_branches", "offset", args.offset)?;
    let shown: Vec<(usize, &BranchRow)> =
        matched.iter().skip(offset).take(limit).copied().collect();
    let remaining = matched.len().saturating_sub(offset);
    let stats = if args.include_stats.unwrap_or(false) {
        Some(tree_stats(ctx, job, &file, &tree, all.len())?)
    } else {
        None
    };
    let branches: Vec<Value> = shown
        .iter()
        .map(|&(i, b)| {
            let mut v = json!({
                "name": b.path, "type": b.type_name, "dtype": b.dtype, "title": b.title,
                "compression": b.compression, "is_jagged": b.jagged,
            });
            if let Some(stats) = &stats {
                v["stats"] = stats.get(i).map_or(Value::Null, stats_json);
            }
            v
        })
        .collect();
    let mut out = ToolOutput::new(json!({
        "tree": tree.path,
        "total_entries": tree.entries,
        "total_branches": all.len(),
        "branches": branches,
        "matched": matched.len(),
    }))
    .meta("truncated", remaining > shown.len());
    if remaining > shown.len() {
        out = out.suggest("Filter with pattern (e.g. pattern='Muon_*') to see fewer branches");
    }
    if let Some((_, j)) = shown.iter().find(|(_, b)| b.jagged) {
        out = out.suggest(format!(
            "'{}' is jagged (variable-length per entry)",
            j.path
        ));
    }
    ctx.budget("list_branches")
        .page(&mut out, "/branches", offset, remaining, "branches");
    Ok(out)
}

/// The statistics of every branch of a tree, in branch order: from the catalog
/// when cached, else computed from the file (and cached unless configured off).
fn tree_stats(
    ctx: &Context,
    job: &Job,
    file: &KnownRootFile,
    tree: &TreeRow,
    branches: usize,
) -> Result<Vec<StatsRow>, ToolError> {
    let cached: Vec<StatsRow> = rows(ctx, ROOT_STATS, file.record.id, &branch_prefix(&tree.path))?;
    if cached.len() == branches {
        return Ok(cached);
    }
    let opened = file.open(ctx, job)?;
    let root_file = &opened.file;
    let keys = root_file.walk().map_err(|e| corrupted(&file.abs(), &e))?;
    let computed = tree_stats_rows(root_file, &keys, &tree.path, job).map_err(|e| {
        // Stopped work is not the file's fault (and leaves nothing to store).
        if job.is_stopped() {
            ToolError::stopped(job)
        } else {
            corrupted(&file.abs(), &e)
        }
    })?;
    if ctx.settings.cache_stats {
        // Stored under the identity of the version read: when the file changed
        // since the catalog saw it, the catalog describes another version and
        // keeps none of these (add_rows refuses them).
        ctx.catalog
            .add_rows(file.root_id, &file.rel, opened.fingerprint, &computed)
            .map_err(ToolError::internal)?;
    }
    computed
        .iter()
        .map(|r| decode::<StatsRow>(&r.value).map_err(ToolError::internal))
        .collect()
}

fn summary_json(s: &Option<Summary>) -> Value {
    match s {
        Some(s) => {
            json!({ "count": s.count, "min": s.min, "max": s.max, "mean": s.mean, "std": s.std })
        }
        None => json!({ "count": 0, "min": null, "max": null, "mean": null, "std": null }),
    }
}

/// A branch's statistics as list_branches shows them; null when unavailable.
fn stats_json(s: &StatsRow) -> Value {
    if s.unavailable.is_some() {
        return Value::Null;
    }
    let mut v = summary_json(&s.values);
    if s.multiplicity.is_some() {
        v["multiplicity"] = summary_json(&s.multiplicity);
    }
    v
}

pub(super) fn corrupted(path: &std::path::Path, e: &crate::formats::FormatError) -> ToolError {
    match e {
        crate::formats::FormatError::Unsupported(why) => ToolError::new(
            "unsupported_type",
            why.clone(),
            "Skip this object or branch; quarry cannot decode it yet",
        ),
        // A remote server down, slow or cut short after the retries; or a
        // file that changed while it was read: not the file's fault.
        crate::formats::FormatError::Transient(why) => ToolError::new(
            "io_error",
            format!("{}: {why}", path.display()),
            "Retry in a moment; index_status() shows a remote root's last error",
        ),
        other => ToolError::new(
            "corrupted_file",
            format!("{}: {other}", path.display()),
            "Verify the file's integrity",
        ),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadHistogramArgs {
    path: String,
    name: String,
    /// 1-D: the first bin shown.
    offset: Option<i64>,
    /// 2-D: the first column and row shown.
    x_offset: Option<i64>,
    y_offset: Option<i64>,
}

/// The histogram `name` (`name;cycle` for a cycle) stored in the ROOT file
/// `path`, with its catalog row: read_histogram's, compare_histograms' and
/// fit_histogram's.
pub(super) fn stored_histogram(
    ctx: &Context,
    job: &Job,
    path: &str,
    name: &str,
) -> Result<(crate::formats::root::Histogram, HistogramRow), ToolError> {
    let file = known_root_file(ctx, path)?;
    let hists: Vec<HistogramRow> = rows(ctx, ROOT_HISTOGRAMS, file.record.id, b"")?;
    let (wanted, cycle) = match name.split_once(';') {
        Some((name, cycle)) => (name, Some(cycle)),
        None => (name, None),
    };
    let wanted = wanted.trim_matches('/');
    let Some(row) = hists
        .iter()
        .find(|h| h.path == wanted)
        .or_else(|| hists.iter().find(|h| h.name == wanted))
    else {
        let available: Vec<&str> = hists.iter().map(|h| h.path.as_str()).collect();
        return Err(ToolError::new(
            "histogram_not_found",
            format!("no histogram '{wanted}' in this file"),
            "Use inspect_file() to list the histograms",
        )
        .details(json!({ "available_histograms": available })));
    };
    let cycle = cycle
        .map(|c| wanted_cycle(ctx, &file, row, c))
        .transpose()?;
    let root_file = file.open(ctx, job)?.file;
    let keys = root_file.walk().map_err(|e| corrupted(&file.abs(), &e))?;
    let key = match cycle {
        None => latest(&keys, &row.path, Some(&row.class_name)),
        Some(cycle) => keys
            .iter()
            .find(|k| k.path() == row.path && k.key.cycle == cycle),
    }
    .ok_or_else(|| ToolError::internal("the histogram is in the catalog but not in the file"))?;
    let h = root_file
        .histogram(&key.key)
        .map_err(|e| corrupted(&file.abs(), &e))?;
    Ok((h, row.clone()))
}

fn read_histogram(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: ReadHistogramArgs = parse_args("read_histogram", args)?;
    let (h, row) = stored_histogram(ctx, job, &args.path, &args.name)?;
    let (values, errors) = (h.values(), h.errors());
    let nx = h.x.nbins + 2;
    let tool = "read_histogram";
    let offset = checked_offset(tool, "offset", args.offset)?;
    let x_offset = checked_offset(tool, "x_offset", args.x_offset)?;
    let y_offset = checked_offset(tool, "y_offset", args.y_offset)?;
    let mut data = match &h.y {
        None => json!({
            "name": h.name, "type": h.class_name, "path": row.path, "title": h.title, "entries": h.entries,
            "x_title": h.x.title, "bin_edges": bins::from(&h.x.edges, offset),
            "bin_counts": bins::from(&values[1..nx - 1], offset),
            "bin_errors": bins::from(&errors[1..nx - 1], offset),
            "underflow": values[0], "overflow": values[nx - 1],
        }),
        Some(y) => {
            let ny = y.nbins + 2;
            // A profile's flow is the weight outside the edges (a sum of means
            // would mean nothing).
            let flow = flow_total(
                h.profile.as_ref().map_or(&h.contents, |p| &p.bin_entries),
                nx,
                ny,
            );
            json!({
                "name": h.name, "type": h.class_name, "path": row.path, "title": h.title, "entries": h.entries,
                "x_title": h.x.title, "y_title": y.title,
                "x_edges": bins::from(&h.x.edges, x_offset), "y_edges": bins::from(&y.edges, y_offset),
                "counts": bins::window(&grid(&values, nx, ny), x_offset, y_offset),
                "errors": bins::window(&grid(&errors, nx, ny), x_offset, y_offset),
                "flow": flow,
            })
        }
    };
    if let Some(p) = &h.profile {
        data["error_option"] = json!(p.errors.option());
        data["bin_entries"] = match &h.y {
            None => bins::from(&p.bin_entries[1..nx - 1], offset),
            Some(y) => bins::window(&grid(&p.bin_entries, nx, y.nbins + 2), x_offset, y_offset),
        };
    }
    let hint = match (h.y.is_some(), h.profile.is_some()) {
        (true, false) => {
            "counts are [y][x]: x_edges and y_edges have one more element than each axis' bins; flow is the content outside the edges"
        }
        (false, false) => {
            "bin_edges has one more element than bin_counts; underflow and overflow are outside the edges"
        }
        (_, true) => {
            "a profile: counts are the mean of the profiled value in each bin, errors follow error_option ('' error on the mean, 's' spread), bin_entries the sum of weights in each bin"
        }
    };
    let mut out = ToolOutput::new(data).suggest(hint);
    let budget = ctx.budget(tool);
    let profile = h.profile.is_some();
    match &h.y {
        None => {
            let mut per_bin = vec!["/bin_counts", "/bin_errors"];
            if profile {
                per_bin.push("/bin_entries");
            }
            bins::page_1d(&budget, &mut out, "/bin_edges", &per_bin, offset, h.x.nbins);
        }
        Some(y) => {
            let mut grids = vec!["/counts", "/errors"];
            if profile {
                grids.push("/bin_entries");
            }
            let at = bins::Window {
                x_offset,
                y_offset,
                x_bins: h.x.nbins,
                y_bins: y.nbins,
            };
            bins::page_2d(&budget, &mut out, &grids, at);
        }
    }
    Ok(out)
}

/// The cycle asked for with `name;cycle`, checked against the catalog's keys
/// (ROOT keeps earlier cycles of an object written again).
fn wanted_cycle(
    ctx: &Context,
    file: &KnownRootFile,
    row: &HistogramRow,
    asked: &str,
) -> Result<i16, ToolError> {
    let summary: Option<RootFileRow> = rows(ctx, ROOT_FILE, file.record.id, b"")?.pop();
    let cycles: Vec<i16> = summary
        .map(|s| s.keys)
        .unwrap_or_default()
        .into_iter()
        .filter(|(path, class, _)| *path == row.path && *class == row.class_name)
        .map(|(_, _, cycle)| cycle)
        .collect();
    asked
        .trim()
        .parse::<i16>()
        .ok()
        .filter(|c| cycles.contains(c))
        .ok_or_else(|| {
            ToolError::new(
                "histogram_not_found",
                format!("'{}' has no cycle {asked}", row.path),
                "Ask for one of the cycles the file holds, or give the name alone for the highest",
            )
            .details(json!({ "available_cycles": cycles }))
        })
}

/// The in-range cells of a 2-D histogram as rows of y, columns of x (ROOT stores
/// cell (ix, iy) at ix + nx * iy, flow cells included).
fn grid(cells: &[f64], nx: usize, ny: usize) -> Vec<Vec<f64>> {
    (1..ny - 1)
        .map(|iy| (1..nx - 1).map(|ix| cells[ix + nx * iy]).collect())
        .collect()
}

/// The content of a 2-D histogram outside its edges on either axis.
fn flow_total(cells: &[f64], nx: usize, ny: usize) -> f64 {
    (0..ny)
        .flat_map(|iy| (0..nx).map(move |ix| (ix, iy)))
        .filter(|&(ix, iy)| ix == 0 || iy == 0 || ix == nx - 1 || iy == ny - 1)
        .map(|(ix, iy)| cells[ix + nx * iy])
        .sum()
}
