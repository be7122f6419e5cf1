//! File discovery from the catalog alone: `list_files` and `index_status`. Neither
//! opens a data file.

use crate::job::Job;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Context, Effects, ToolDef, Toolset, checked_limit, checked_offset, parse_args};
use crate::catalog::{FileMatch, FileQuery, KindSet};
use crate::formats::Kind;
use crate::glob::Glob;
use crate::mcp::response::{ToolError, ToolOutput, iso8601_ms, iso8601_ns};

pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "list_files",
        title: "List files",
        // Core, not Root: it lists every kind, so it stays when toolsets are off.
        toolset: Toolset::Core,
        description: "Files under the data roots, from the catalog: ROOT by default, or kind hdf5, document, code, all. Absolute \
paths for the other tools.",
        input_schema: include_str!("../../../schema/tools/list_files.input.json"),
        output_schema: include_str!("../../../schema/tools/list_files.output.json"),
        effects: Effects::READS,
        handler: list_files,
    },
    ToolDef {
        name: "index_status",
        title: "Index status",
        toolset: Toolset::Core,
        description: "How complete and fresh the catalog is per root and kind: files indexed, pending, failed (with errors), scan \
running, last scan. Call it when results look incomplete.",
        input_schema: include_str!("../../../schema/tools/index_status.input.json"),
        output_schema: include_str!("../../../schema/tools/index_status.output.json"),
        effects: Effects::READS,
        handler: index_status,
    },
];

const LIST_LIMIT_DEFAULT: usize = 100;
const LIST_LIMIT_MAX: usize = 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListFilesArgs {
    resource: Option<String>,
    pattern: Option<String>,
    limit: Option<i64>,
    kind: Option<String>,
    offset: Option<i64>,
}

fn kinds_of(arg: Option<&str>) -> Result<KindSet, ToolError> {
    match arg.unwrap_or("root") {
        "all" => Ok(KindSet::ALL),
        name => Kind::parse(name).map(KindSet::only).ok_or_else(|| {
            ToolError::invalid_arguments("list_files", format!("unknown kind '{name}'"))
                .retry_with(json!({ "kind": "all" }))
        }),
    }
}

fn list_files(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: ListFilesArgs = parse_args("list_files", args)?;
    let roots = ctx.catalog.roots();
    let selected: Vec<usize> = match &args.resource {
        Some(name) => vec![roots.resource(name).map_err(|e| ToolError::from_path(&e))?],
        None => (0..roots.list().len()).collect(),
    };
    let limit = checked_limit(
        args.limit,
        LIST_LIMIT_DEFAULT,
        LIST_LIMIT_MAX,
        "narrow the listing with `pattern`",
    )?;
    let offset = checked_offset("list_files", "offset", args.offset)?;
    let kinds = kinds_of(args.kind.as_deref())?;
    let glob = args.pattern.as_deref().map(checked_glob).transpose()?;
    let mut result = ctx.catalog.files().query(&FileQuery {
        roots: &selected,
        kinds,
        glob: glob.as_ref(),
        limit: offset.saturating_add(limit),
    });
    result.files.drain(..offset.min(result.files.len()));

    let files: Vec<Value> = result.files.iter().map(|f| file_json(ctx, f)).collect();
    let remaining = result.total_matched.saturating_sub(offset);
    let truncated = remaining > files.len();
    let mut out = ToolOutput::new(json!({
        "files": files,
        "total_matched": result.total_matched,
        "total_scanned": result.total_scanned,
    }))
    .meta("truncated", truncated);
    out.suggestions = list_suggestions(
        ctx,
        &args,
        &result.files,
        result.total_matched,
        truncated,
        &selected,
        kinds,
    );
    ctx.budget("list_files")
        .page(&mut out, "/files", offset, remaining, "files");
    Ok(out)
}

/// Refuses patterns that try to reach outside a root; compiles the rest.
fn checked_glob(pattern: &str) -> Result<Glob, ToolError> {
    if pattern.starts_with('/') || pattern.split('/').any(|c| c == "..") || pattern.contains('\0') {
        return Err(ToolError::new(
            "permission_denied",
            format!("pattern '{pattern}' points outside the configured roots"),
            "Patterns match names inside the roots: use e.g. pattern='*.root' or 'subdir/*.root'",
        ));
    }
    Glob::new(pattern).map_err(|e| ToolError::invalid_arguments("list_files", e))
}

fn file_json(ctx: &Context, f: &FileMatch) -> Value {
    let root = &ctx.catalog.roots().list()[f.root_id];
    let mut v = json!({
        "path": root.canonical.join(&f.rel).to_string_lossy(),
        "size_bytes": f.entry.size,
        "modified": iso8601_ns(f.entry.mtime_ns),
        "resource": root.name,
        "kind": f.entry.kind.as_str(),
    });
    if f.entry.failed {
        v["index_failed"] = json!(true);
    }
    v
}

/// The tool that looks into a file of `kind`, if this server offers it.
fn next_tool_for(ctx: &Context, kind: Kind) -> Option<&'static str> {
    let name = match kind {
        Kind::Root => "inspect_file",
        Kind::Hdf5 => "read_resource",
        Kind::Document => "get_document_info",
        Kind::Code => "parse_file",
    };
    ctx.serves(name).then_some(name)
}

fn list_suggestions(
    ctx: &Context,
    args: &ListFilesArgs,
    shown: &[FileMatch],
    matched: usize,
    truncated: bool,
    selected: &[usize],
    kinds: KindSet,
) -> Vec<String> {
    let mut s = Vec::new();
    if let Some(first) = shown.first()
        && let Some(tool) = next_tool_for(ctx, first.entry.kind)
    {
        let path = ctx.catalog.roots().list()[first.root_id]
            .canonical
            .join(&first.rel);
        if first.entry.kind == Kind::Hdf5 {
            s.push(format!(
                "Browse {} with {tool}(uri='{}')",
                first.rel,
                crate::mcp::resources::h5::uri_of(&path.to_string_lossy(), "/")
            ));
        } else {
            s.push(format!(
                "Inspect {} with {tool}(path='{}')",
                first.rel,
                path.display()
            ));
        }
    }
    if truncated {
        s.push(format!(
            "{matched} files match: narrow with pattern (e.g. pattern='run_123*'), or page on with offset (limit at most {LIST_LIMIT_MAX})"
        ));
    }
    if matched == 0 {
        // Files per kind over the selected roots, counted once.
        let mut per_kind: std::collections::BTreeMap<Kind, u64> = Default::default();
        for &r in selected {
            for (k, c) in ctx.catalog.files().counts(r) {
                *per_kind.entry(k).or_default() += c.ok + c.failed;
            }
        }
        let other: Vec<String> = Kind::ALL
            .into_iter()
            .filter(|k| !kinds.contains(*k))
            .filter_map(|k| {
                let n = per_kind.get(&k).copied().unwrap_or(0);
                (n > 0).then(|| format!("{n} {}", k.label()))
            })
            .collect();
        if !other.is_empty() {
            s.push(format!(
                "Nothing matched; there are also {}: try kind='all'",
                other.join(", ")
            ));
        }
        if let Some(p) = &args.pattern
            && !p.contains('*')
        {
            s.push(format!(
                "Patterns are globs: try pattern='*{p}*' to match names containing '{p}'"
            ));
        }
    }
    let pending = ctx.catalog.activity().total_pending();
    if pending > 0
        || selected
            .iter()
            .any(|&r| ctx.catalog.activity().is_scanning(r))
    {
        s.push(format!(
            "Indexing is in progress ({pending} files pending): results may be incomplete, see index_status()"
        ));
    }
    s
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexStatusArgs {
    resource: Option<String>,
    max_errors: Option<usize>,
    offset: Option<i64>,
}

fn index_status(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: IndexStatusArgs = parse_args("index_status", args)?;
    let catalog = &ctx.catalog;
    let roots = catalog.roots();
    let selected: Vec<usize> = match &args.resource {
        Some(name) => vec![roots.resource(name).map_err(|e| ToolError::from_path(&e))?],
        None => (0..roots.list().len()).collect(),
    };
    let max_errors = args
        .max_errors
        .unwrap_or(20)
        .min(ctx.settings.limits.max_listed_failures);
    // `offset` skips the first failures and skipped paths of each root.
    let offset = checked_offset("index_status", "offset", args.offset)?;
    let listed = offset.saturating_add(max_errors);
    let mut left = 0; // failures and skipped paths past the ones listed
    let activity = catalog.activity();
    let mut complete = true;
    let mut total_failed = 0;
    let mut total_stats_failed = 0;
    let mut root_values = Vec::new();
    for &r in &selected {
        let root = &roots.list()[r];
        let counts = catalog.files().counts(r);
        let mut kinds = Map::new();
        let mut failed_here = 0;
        for kind in Kind::ALL {
            let c = counts.get(&kind).copied().unwrap_or_default();
            let pending = activity.pending(r, kind);
            failed_here += c.failed;
            complete &= pending == 0;
            kinds.insert(
                kind.as_str().into(),
                json!({ "indexed": c.ok, "pending": pending, "failed": c.failed }),
            );
        }
        let last_scan = catalog.scan_completed(r).map_err(ToolError::internal)?;
        let scanning = activity.is_scanning(r);
        complete &= !scanning && last_scan.is_some();
        total_failed += failed_here;
        let failures = catalog.failures(r, listed).map_err(ToolError::internal)?;
        let (skipped_total, skipped) = catalog.skipped(r, listed).map_err(ToolError::internal)?;
        let (stats_failed_total, stats_failed) = catalog.stats_failures(r, listed);
        total_stats_failed += stats_failed_total;
        left = left
            .max(failed_here as usize)
            .max(skipped_total)
            .max(stats_failed_total as usize);
        let mut value = json!({
            "name": root.name,
            "path": root.canonical.to_string_lossy(),
            "scanning": scanning,
            "last_full_scan": last_scan.map(iso8601_ms),
            "kinds": kinds,
            "failed_total": failed_here,
            "failed_files": failures.iter().skip(offset).map(|(rel, kind, error)| json!({
                "path": root.canonical.join(rel).to_string_lossy(),
                "kind": kind.as_str(),
                "error": error,
            })).collect::<Vec<_>>(),
            "skipped_total": skipped_total,
            "skipped_paths": skipped.iter().skip(offset).map(|(rel, reason)| json!({
                "path": root.canonical.join(rel).to_string_lossy(),
                "reason": reason,
            })).collect::<Vec<_>>(),
            "stats_failed_total": stats_failed_total,
            "stats_failed_files": stats_failed.iter().skip(offset).map(|(rel, reason)| json!({
                "path": root.canonical.join(rel).to_string_lossy(),
                "reason": reason,
            })).collect::<Vec<_>>(),
        });
        if let Some(remote) = &root.remote {
            let st = remote.status();
            value["remote"] = json!({
                "last_listing": st.last_listing_ms.map(iso8601_ms),
                "files_listed": st.files_listed,
                "last_error": st.last_error,
                "bytes_fetched": st.bytes_fetched,
                "requests": st.requests,
            });
        }
        root_values.push(value);
    }
    let mut out = ToolOutput::new(json!({
        "complete": complete,
        "watching": activity.is_watching(),
        "roots": root_values,
    }));
    if !complete {
        out = out.suggest("Indexing is still running: call index_status() again in a few seconds");
    }
    if total_failed > 0 {
        out = out.suggest(format!(
            "{total_failed} files failed to index: their errors are listed under failed_files; fix or remove them and quarry re-indexes them automatically"
        ));
    }
    if total_stats_failed > 0 {
        out = out.suggest(format!(
            "The background statistics failed on {total_stats_failed} ROOT files (stats_failed_files): cuts on them read every cluster; list_branches(include_stats=true) retries one"
        ));
    }
    let mut out = out.suggest("List files with list_files(kind='all')");
    // Each root's three lists are cut at the same index.
    let pointers: Vec<String> = (0..selected.len())
        .flat_map(|i| {
            [
                format!("/roots/{i}/failed_files"),
                format!("/roots/{i}/skipped_paths"),
                format!("/roots/{i}/stats_failed_files"),
            ]
        })
        .collect();
    let arrays: Vec<(&str, usize)> = pointers.iter().map(|p| (p.as_str(), 0)).collect();
    let remaining = left.saturating_sub(offset);
    ctx.budget("index_status")
        .cut_together(&mut out, &arrays, |o, cut| {
            let cut = crate::mcp::budget::Cut {
                total: remaining.max(cut.kept),
                ..cut
            };
            crate::mcp::budget::mark_offset(
                o,
                cut,
                offset,
                "index_status",
                "failures, skipped paths and statistics failures per root",
            );
        });
    Ok(out)
}
