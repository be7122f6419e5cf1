//! `export_branches`: the entries passing a cut written to a JSON, CSV or
//! Parquet file under the export folder, streamed window by window, written
//! under a temporary name and renamed into place when complete.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::root_analysis::{analysis_error, open_for, open_named};
use super::root_dataset::{DatasetArg, OpenTree, add_bounds, reading};
use super::root_dataset_answers::{
    columns_read, dry_run_answer, fit_by_file, per_file, scan_metadata,
};
use super::root_executor::{
    Cluster, ClusterAnswer, cluster_for, cluster_metadata, run_on_cluster_then,
};
use super::root_quantities::{column_specs, defines_of, expression_plan, named_columns};
use super::{Context, Effects, ToolDef, Toolset, parse_args};
use crate::analysis::Plan;
use crate::analysis::export::{ExportError, ExportFormat, Exported, export};
use crate::analysis::export_join::{Part, join_parts};
use crate::analysis::quantities::Quantity;
use crate::analysis::{Defines, TreeColumns};
use crate::executor::partial::{Partial, cut_exports_to, export_part_path};
use crate::executor::spec::Op;
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};
use crate::roots::{CreateError, PendingFile, create_pending};

pub static TOOLS: &[ToolDef] = &[ToolDef {
    name: "export_branches",
    title: "Export entries to a file",
    toolset: Toolset::Root,
    description: "Writes the entries passing an optional cut (branches or expressions, up to 10,000,000) to a json, csv or \
parquet file in the export folder.",
    input_schema: include_str!("../../../schema/tools/export_branches.input.json"),
    output_schema: include_str!("../../../schema/tools/export_branches.output.json"),
    // Replaces a file already at output_path; the same request writes the same
    // file again.
    effects: Effects {
        read_only: false,
        destructive: true,
        idempotent: true,
        asks_llm: false,
    },
    handler: export_branches,
}];

const EXPORT_MAX: i64 = 10_000_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportArgs {
    path: Option<String>,
    dataset: Option<DatasetArg>,
    tree: Option<String>,
    branches: Value,
    define: Option<Value>,
    selection: Option<String>,
    limit: Option<i64>,
    output_format: String,
    output_path: String,
    skip_mismatched: Option<bool>,
    by_file: Option<bool>,
    dry_run: Option<bool>,
    executor: Option<String>,
    files_per_job: Option<i64>,
}

pub(super) fn refused(output_path: &str, why: &str) -> ToolError {
    ToolError::new(
        "permission_denied",
        format!("cannot write '{output_path}': {why}"),
        "Give output_path relative to the export folder (e.g. 'muons.parquet' or 'study/muons.parquet'), without '..' or links",
    )
}

/// The export folder (created if missing) and `output_path` relative to it, as
/// `/`-separated components. Anything that would land elsewhere is refused.
pub(super) fn export_target(
    ctx: &Context,
    output_path: &str,
) -> Result<(PathBuf, String), ToolError> {
    let Some(dir) = &ctx.settings.export_dir else {
        return Err(ToolError::new(
            "permission_denied",
            "this server has no export folder",
            "Set export_dir in the config file",
        ));
    };
    std::fs::create_dir_all(dir).map_err(|e| refused(output_path, &e.to_string()))?;
    let base = dir
        .canonicalize()
        .map_err(|e| refused(output_path, &e.to_string()))?;
    if output_path.contains('\0') || output_path.len() > 4096 {
        return Err(refused(output_path, "not a usable file name"));
    }
    let p = Path::new(output_path);
    let rel = if p.is_absolute() {
        p.strip_prefix(dir)
            .or_else(|_| p.strip_prefix(&base))
            .map_err(|_| {
                refused(
                    output_path,
                    &format!("only the export folder {} is written", base.display()),
                )
            })?
    } else {
        p
    };
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => parts.push(
                s.to_str()
                    .ok_or_else(|| refused(output_path, "not UTF-8"))?
                    .to_string(),
            ),
            Component::CurDir => {}
            _ => return Err(refused(output_path, "'..' would leave the export folder")),
        }
    }
    if parts.is_empty() {
        return Err(refused(output_path, "no file name"));
    }
    Ok((base, parts.join("/")))
}

fn export_branches(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: ExportArgs = parse_args("export_branches", args)?;
    let format = match args.output_format.as_str() {
        "json" => ExportFormat::Json,
        "csv" => ExportFormat::Csv,
        "parquet" => ExportFormat::Parquet,
        _ => {
            return Err(ToolError::invalid_arguments(
                "export_branches",
                "output_format must be 'json', 'csv' or 'parquet'",
            ));
        }
    };
    let limit = args.limit.unwrap_or(EXPORT_MAX);
    if !(0..=EXPORT_MAX).contains(&limit) {
        return Err(ToolError::new(
            "limit_exceeded",
            format!("limit {limit} is outside 0..={EXPORT_MAX}"),
            "Export at most 10,000,000 entries per call; narrow the selection, or summarise with compute_histogram",
        )
        .retry_with(json!({ "limit": EXPORT_MAX })));
    }
    let specs = column_specs("export_branches", &args.branches)?;
    if specs.is_empty() {
        return Err(ToolError::invalid_arguments(
            "export_branches",
            "branches must name at least one branch (see list_branches)",
        ));
    }
    let tool = "export_branches";
    let (base, rel) = export_target(ctx, &args.output_path)?;
    let (t, dry_run, by_file) = open_named!(ctx, job, tool, args)?;
    let mut columns = t.columns();
    let defines = defines_of(tool, args.define.as_ref(), &columns[0], &t)?;
    let named = named_columns(&specs, &columns[0], &defines, &t)?;
    let cut = expression_plan(args.selection.as_deref(), &columns[0], &defines, &t)?;
    add_bounds(ctx, &t, &mut columns, cut.as_ref())?;
    let mut stored = Vec::new();
    let mut plans: Vec<Option<&Plan>> = vec![cut.as_ref()];
    for n in &named {
        match &n.quantity {
            Quantity::Branch(c) => stored.push(*c),
            Quantity::Expression(p) => plans.push(Some(p)),
        }
    }
    let read = columns_read(&stored, &plans);
    if dry_run {
        return dry_run_answer(ctx, tool, &t, &columns, (&read, cut.as_ref()), by_file);
    }
    let chosen = (args.executor.as_deref(), args.files_per_job);
    let cluster = cluster_for(ctx, tool, chosen, &t, (&columns, &read))?;
    let members = t.members(&columns);
    let pending = create_pending(&base, &rel).map_err(|e| match e {
        CreateError::Escapes => refused(&args.output_path, &e.to_string()),
        CreateError::Io(io) => refused(&args.output_path, &io.to_string()),
    })?;
    // A dataset's rows say where each came from, as read_branches' do.
    let files: Option<Vec<String>> = t
        .is_dataset()
        .then(|| t.parts.iter().map(|p| p.shown.clone()).collect());
    let written_by = |e: ExportError| match e {
        ExportError::Analysis(a) => analysis_error(a, &t, args.selection.as_deref()),
        ExportError::Write(w) => ToolError::new(
            "permission_denied",
            format!("writing '{}' failed: {w}", args.output_path),
            "Check the export folder's free space, then retry",
        ),
    };
    let (done, pending, on_cluster) = match &cluster {
        Some(cluster) => {
            let op = Op::Export {
                columns: specs.clone(),
                cut: cut.as_ref().map(|c| c.text.clone()),
                limit: limit as u64,
                format,
                provenance: files.is_some(),
            };
            let on = (&t, columns.as_slice(), &defines);
            let (done, pending, answer) =
                cluster_export(cluster, job, on, op, (&read, cut.as_ref()), pending)?;
            (done, pending.map_err(written_by)?, Some(answer))
        }
        None => {
            let (done, pending) = export(
                &members,
                &named,
                files.as_deref(),
                cut.as_ref(),
                limit as u64,
                format,
                pending,
                job,
            )
            .map_err(written_by)?;
            (done, pending, None)
        }
    };
    pending
        .commit()
        .map_err(|e| refused(&args.output_path, &e.to_string()))?;
    let written = base.join(&rel);
    let size = std::fs::symlink_metadata(&written).map_or(0, |m| m.len());
    let truncated = match &on_cluster {
        Some(_) => done.stopped_at < t.entries(),
        None => done.entries_written == limit as u64 && done.stopped_at < t.entries(),
    };
    let mut data = json!({
        "output_path": written.display().to_string(),
        "format": args.output_format,
        "entries_written": done.entries_written,
        "size_bytes": size,
    });
    if by_file {
        data["by_file"] = per_file(&t, |k| {
            json!({
                "entries_scanned": done.by_member[k].scanned,
                "entries_written": done.by_member[k].selected,
            })
        });
    }
    let mut out = ToolOutput::new(data);
    fit_by_file(ctx, tool, &mut out);
    let mut out = scan_metadata(out, &t, &columns)
        .meta("entries_scanned", done.entries_scanned)
        .meta("truncated", truncated)
        .suggest(format!(
            "Exported {} entries to {} ({:.1} MB)",
            done.entries_written,
            args.output_format,
            size as f64 / 1e6
        ));
    if truncated && on_cluster.is_some() {
        out = out.suggest(format!(
            "The limit of {limit} entries stopped the export; raise limit or narrow the selection"
        ));
    } else if truncated {
        out = out.suggest(format!(
            "The limit of {limit} entries stopped the export at entry {}; raise limit or narrow the selection",
            done.stopped_at
        ));
    }
    if let Some(answer) = &on_cluster {
        out = cluster_metadata(out, answer);
    }
    Ok(out.suggest(match format {
        ExportFormat::Parquet => {
            "Use pandas.read_parquet() or pyarrow.parquet.read_table() to read it"
        }
        ExportFormat::Csv => {
            "Use pandas.read_csv() to read it; collections are JSON arrays in one cell"
        }
        ExportFormat::Json => "Use json.load() or pandas.read_json() to read it",
    }))
}

/// The export as a cluster job: each task writes its files' rows to a part
/// in the job's folder (at most `limit`), and the parts are joined here, in
/// task order, into `pending` up to the call's limit. Gives what was
/// written (`stopped_at` is the entry count unless the limit cut rows off),
/// the file (or why joining failed) and the cluster's account.
fn cluster_export(
    cluster: &Cluster,
    job: &Job,
    on: (&OpenTree, &[TreeColumns<'_>], &Defines),
    op: Op,
    read: (&[usize], Option<&Plan>),
    pending: PendingFile,
) -> Result<(Exported, Result<PendingFile, ExportError>, ClusterAnswer), ToolError> {
    let Op::Export { limit, format, .. } = op else {
        unreachable!("an export's job")
    };
    let entries = on.0.entries();
    let (mut answer, (joined, truncated)) =
        run_on_cluster_then(cluster, job, on, op, read, |dir, results| {
            let (rows, truncated) = cut_exports_to(results, limit);
            let parts: Vec<Part> = results
                .iter()
                .zip(rows)
                .filter(|(r, _)| r.partial.is_some())
                .map(|(r, rows)| Part {
                    path: export_part_path(dir, r.task),
                    rows,
                })
                .collect();
            if parts.is_empty() {
                // Every file failed on the cluster: nothing to write, said
                // as a read failure naming the first file and why.
                let why = results
                    .iter()
                    .flat_map(|r| &r.failed)
                    .next()
                    .map_or("no file was read".into(), |(f, why)| {
                        format!("'{f}': {why}")
                    });
                let error = crate::formats::FormatError::Corrupt(format!(
                    "no file could be read on the cluster ({why})"
                ));
                return (Err(ExportError::Analysis(error.into())), truncated);
            }
            (join_parts(&parts, format, pending, job), truncated)
        })?;
    let mut done = Exported {
        stopped_at: if truncated { 0 } else { entries },
        ..Exported::default()
    };
    if let Some(Partial::Export {
        entries_scanned,
        entries_written,
        by_file,
    }) = answer.partial.take()
    {
        done.entries_scanned = entries_scanned;
        done.entries_written = entries_written;
        done.by_member = by_file;
    } else {
        done.by_member = vec![Default::default(); on.0.parts.len()];
    }
    Ok((done, joined, answer))
}
