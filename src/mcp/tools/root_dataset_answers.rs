//! What the ROOT analysis tools say about the files they read: the scan's
//! cost (clusters skipped, bytes read), for a dataset its files and those left
//! out, a dry run's estimate from the catalog alone, and the per-file
//! breakdown (`by_file`), held to a share of the result budget.

use serde_json::{Value, json};

use super::Context;
use super::root_dataset::{Named, OpenTree};
use crate::analysis::dataset::{Estimate, estimate};
use crate::analysis::{Plan, TreeColumns};
use crate::mcp::budget::{json_len, largest};
use crate::mcp::response::{ToolError, ToolOutput};

/// Files left out that an answer lists at most (the count says how many).
const SKIPPED_LISTED: usize = 20;

impl OpenTree {
    /// How the call named what it reads, as arguments to pass again:
    /// `path='...'` or `dataset='...'`.
    pub(super) fn source_args(&self) -> String {
        match &self.named {
            Named::Path => format!("path='{}'", self.first().known.abs().display()),
            Named::Glob(g) => format!("dataset='{g}'"),
            Named::Saved(d) => format!("dataset='{}'", d.name),
            Named::List => {
                let files: Vec<&str> = self
                    .parts
                    .iter()
                    .map(|p| p.shown.as_str())
                    .chain(self.skipped.iter().map(|(f, _)| f.as_str()))
                    .collect();
                format!("dataset={}", json!(files))
            }
        }
    }

    /// The dataset as the answer names it.
    fn named_json(&self) -> Value {
        match &self.named {
            Named::Path => Value::Null,
            Named::Glob(g) => json!({ "glob": g }),
            Named::Saved(d) => json!({ "saved": d.name }),
            Named::List => json!({ "list": self.parts.len() + self.skipped.len() }),
        }
    }
}

/// The scan's cost in the metadata: clusters the cut ruled out unread (in
/// every file), the bytes read, and for a dataset its files.
pub(super) fn scan_metadata(
    out: ToolOutput,
    t: &OpenTree,
    columns: &[TreeColumns<'_>],
) -> ToolOutput {
    let skipped: u64 = columns.iter().map(|c| c.bounds.clusters().1).sum();
    let out = out
        .meta("clusters_skipped", skipped)
        .meta("bytes_read", t.bytes_read());
    with_files(out, t)
}

/// For a dataset: how many files were read, how the dataset was named, and
/// the files left out (`skip_mismatched`) with why.
pub(super) fn with_files(out: ToolOutput, t: &OpenTree) -> ToolOutput {
    if !t.is_dataset() {
        return out;
    }
    let mut out = out
        .meta("files", t.parts.len())
        .meta("dataset", t.named_json());
    let defines = t.saved_defines();
    if !defines.is_empty() {
        let named: serde_json::Map<String, Value> = defines
            .iter()
            .map(|(name, expr)| (name.clone(), json!(expr)))
            .collect();
        out = out.meta("define", named);
    }
    if !t.skipped.is_empty() {
        let listed: Vec<Value> = t
            .skipped
            .iter()
            .take(SKIPPED_LISTED)
            .map(|(file, why)| json!({ "file": file, "reason": why }))
            .collect();
        out = out
            .meta("files_skipped", listed)
            .meta("files_skipped_count", t.skipped.len())
            .suggest(format!(
                "{} file(s) of the dataset were left out (skip_mismatched): see metadata.files_skipped",
                t.skipped.len()
            ));
    }
    out
}

/// The columns `first`, then those the plans read, each once, in order.
pub(super) fn columns_read(first: &[usize], plans: &[Option<&Plan>]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for &c in first {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    for p in plans.iter().flatten() {
        for &c in &p.columns {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// A dry run's answer: what reading `read` under `cut` would cost, from each
/// file's layout and recorded bounds in the catalog (no file opened): its
/// files, entries, clusters, the clusters the cut rules out by the recorded
/// ranges, and the bytes of the baskets left to read.
pub(super) fn dry_run_answer(
    ctx: &Context,
    tool: &'static str,
    t: &OpenTree,
    columns: &[TreeColumns<'_>],
    (read, cut): (&[usize], Option<&Plan>),
    by_file: bool,
) -> Result<ToolOutput, ToolError> {
    let mut total = Estimate::default();
    let mut files = Vec::new();
    for (part, tree) in t.parts.iter().zip(columns) {
        let e = estimate(tree, read, cut).map_err(|e| {
            ToolError::new(
                "corrupted_file",
                format!("'{}': {e}", part.shown),
                "Verify the file's integrity, or leave it out of the dataset",
            )
        })?;
        total.add(&e);
        if by_file {
            files.push(json!({
                "file": part.shown,
                "entries": e.entries,
                "clusters": e.clusters,
                "clusters_skipped": e.clusters_skipped,
                "bytes_to_read": e.bytes_to_read,
            }));
        }
    }
    let mut data = json!({
        "dry_run": true,
        "files": t.parts.len(),
        "entries": total.entries,
        "clusters": total.clusters,
        "clusters_skipped": total.clusters_skipped,
        "bytes_to_read": total.bytes_to_read,
    });
    if by_file {
        data["by_file"] = Value::Array(files);
    }
    let mut out = with_files(ToolOutput::new(data), t)
        .meta("dry_run", true)
        .suggest(format!(
            "An estimate from the catalog (no file was opened): {} entries in {} clusters, {} of them ruled out by the cut's recorded ranges, {:.1} MB of baskets to read",
            total.entries,
            total.clusters,
            total.clusters_skipped,
            total.bytes_to_read as f64 / 1e6
        ))
        .suggest("Clusters are skipped only where the statistics pass has recorded the cut's branches (list_branches(include_stats=true), or [index] stats = \"eager\"); call again without dry_run to run it");
    fit_by_file(ctx, tool, &mut out);
    Ok(out)
}

/// Holds `data.by_file` to a third of the tool's result budget (the rest is
/// the answer's own): the first files that fit are kept, and the metadata
/// says how many of how many are shown.
pub(super) fn fit_by_file(ctx: &Context, tool: &'static str, out: &mut ToolOutput) {
    let Some(Value::Array(items)) = out.data.get_mut("by_file") else {
        return;
    };
    let room = ctx.budget(tool).cap / 3;
    let sizes: Vec<usize> = items.iter().map(|i| json_len(i) + 1).collect();
    let total = items.len();
    let kept = largest(total, |k| 2 + sizes[..k].iter().sum::<usize>() <= room);
    if kept < total {
        items.truncate(kept);
        out.metadata.insert("by_file_shown".into(), json!(kept));
        out.metadata.insert("by_file_total".into(), json!(total));
        out.suggestions.push(format!(
            "by_file shows the first {kept} of {total} files (the answer's budget): narrow the dataset to see the others"
        ));
    }
}

/// `by_file` items: one per file read, in the order read, each `item(k)` with
/// the file's name added first.
pub(super) fn per_file(t: &OpenTree, mut item: impl FnMut(usize) -> Value) -> Value {
    Value::Array(
        t.parts
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let mut v = json!({ "file": p.shown });
                if let (Value::Object(o), Value::Object(more)) = (&mut v, item(k)) {
                    o.extend(more);
                }
                v
            })
            .collect(),
    )
}
