//! `export_dataset`: an HDF5 dataset or slice written to a `.npy`, CSV or
//! Parquet file under the export folder. Blocks of at most `EXPORT_BLOCK`
//! elements are read in a worker and written as they come (`h5export`), so
//! nothing caps the size and memory stays bounded; the file is written under a
//! temporary name and renamed into place when complete, as `export_branches`'.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::hdf5::{dataset_of, format_error, open_file, selection};
use super::root_export::{export_target, refused};
use super::{Context, Effects, ToolDef, Toolset, parse_args};
use crate::formats::FormatError;
use crate::formats::hdf5::{Plain, blocks, isolated};
use crate::h5export::{ExportError, Exporter, Format, Layout, npy};
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};
use crate::roots::{CreateError, create_pending};

pub static TOOLS: &[ToolDef] = &[ToolDef {
    name: "export_dataset",
    title: "Export an HDF5 dataset to a file",
    toolset: Toolset::Hdf5,
    description: "Writes a numeric HDF5 dataset or slice of any size to an npy, parquet or csv file in the export folder.",
    input_schema: include_str!("../../../schema/tools/export_dataset.input.json"),
    output_schema: include_str!("../../../schema/tools/export_dataset.output.json"),
    // Replaces a file already at output_path; the same request writes the same
    // file again.
    effects: Effects {
        read_only: false,
        destructive: true,
        idempotent: true,
        asks_llm: false,
    },
    handler: export_dataset,
}];

/// Elements read and written at a time: 8 MiB of float64.
const EXPORT_BLOCK: u64 = 1 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportArgs {
    uri: String,
    slice_str: Option<String>,
    output_format: String,
    output_path: String,
}

fn export_dataset(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "export_dataset";
    let args: ExportArgs = parse_args(tool, args)?;
    let format = Format::parse(&args.output_format).ok_or_else(|| {
        ToolError::invalid_arguments(tool, "output_format must be 'npy', 'parquet' or 'csv'")
    })?;
    let (base, rel) = export_target(ctx, &args.output_path)?;
    let (file, path, info) = dataset_of(ctx, &args.uri)?;
    let unsupported = |why: String| format_error(&file, &args.uri, FormatError::Unsupported(why));
    let Some(plain) = Plain::of(&info.dtype) else {
        return Err(unsupported(format!(
            "only numbers and booleans are exported; this dataset holds {} (read_dataset_slice reads it)",
            info.dtype.numpy()
        )));
    };
    if info.shape.is_none() {
        return Err(unsupported(
            "the dataset has an empty (null) dataspace: it holds no values".into(),
        ));
    }
    let sel = selection(
        args.slice_str.as_deref().unwrap_or(""),
        info.shape.as_deref(),
    )?;
    let layout = Layout {
        name: path.rsplit('/').next().unwrap_or("value").to_string(),
        plain,
        shape: sel.shape(),
    };
    if format != Format::Npy && layout.shape.len() > 1 && layout.shape[1..].contains(&0) {
        return Err(ToolError::invalid_arguments(
            tool,
            "the slice's rows have no elements: nothing to put in a table (npy keeps the shape)",
        ));
    }
    let pending = create_pending(&base, &rel).map_err(|e| match e {
        CreateError::Escapes => refused(&args.output_path, &e.to_string()),
        CreateError::Io(io) => refused(&args.output_path, &io.to_string()),
    })?;
    let write_failed = |e: ExportError| {
        ToolError::new(
            "permission_denied",
            format!("writing '{}' failed: {e}", args.output_path),
            "Check the export folder's free space, then retry",
        )
    };
    let mut exporter = Exporter::new(pending, format, &layout).map_err(write_failed)?;
    let total = sel.len();
    let mut done = 0;
    job.progress(0, Some(total));
    for block in blocks(&sel, EXPORT_BLOCK, info.chunks.as_deref()) {
        if block.is_empty() {
            continue;
        }
        if job.is_stopped() {
            return Err(ToolError::stopped(job));
        }
        // Each block opens the file beneath its root again: the worker that
        // reads it may be a fresh one.
        let fd = open_file(ctx, &file)?;
        let bytes = isolated::read_raw(fd, &path, &block, &|| job.is_stopped())
            .map_err(|e| format_error(&file, &args.uri, e))?
            .ok_or_else(|| ToolError::stopped(job))?;
        if bytes.len() as u64 != block.len() * plain.size() as u64 {
            return Err(format_error(
                &file,
                &args.uri,
                FormatError::Corrupt(format!(
                    "a block of {} elements read as {} bytes",
                    block.len(),
                    bytes.len()
                )),
            ));
        }
        exporter.block(&bytes).map_err(write_failed)?;
        done += block.len();
        job.progress(done, Some(total));
    }
    exporter
        .finish()
        .map_err(write_failed)?
        .commit()
        .map_err(|e| refused(&args.output_path, &e.to_string()))?;
    let written = base.join(&rel);
    let size = std::fs::symlink_metadata(&written).map_or(0, |m| m.len());
    Ok(ToolOutput::new(json!({
        "uri": args.uri,
        "path": path,
        "slice": args.slice_str,
        "output_path": written.display().to_string(),
        "format": args.output_format,
        "shape": layout.shape,
        "dtype": npy::descr(plain),
        "elements_written": done,
        "size_bytes": size,
    }))
    .suggest(match format {
        Format::Npy => "Use numpy.load() to read it",
        Format::Parquet => {
            "Use pyarrow.parquet.read_table() to read it; rows of more than one element are fixed-size lists"
        }
        Format::Csv => "Use pandas.read_csv() or numpy.loadtxt(skiprows=1, delimiter=',') to read it",
    }))
}
