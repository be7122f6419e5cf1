//! The files a code tool covers and how their results are shaped: a
//! `filepath` argument resolved to one file or many (a list, a folder filtered
//! by patterns), each file's symbols from the catalog (or parsed when not
//! indexed yet), and the single- or many-file answer held to the result budget.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::Context;
use crate::catalog::FileStatus;
use crate::formats::Kind;
use crate::formats::code::{self, CodeFile};
use crate::glob::Glob;
use crate::job::Job;
use crate::mcp::budget::{Budget, Cut, mark_offset, set};
use crate::mcp::response::{ToolError, ToolOutput};
use crate::roots::PathError;
use crate::roots::RootId;

const DEFAULT_PATTERNS: [&str; 6] = ["*.cpp", "*.hpp", "*.h", "*.cc", "*.cxx", "*.py"];
/// Most files one call covers; a larger directory answers `truncated`.
pub(super) const MAX_FILES: usize = 1000;

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum PathArg {
    One(String),
    Many(Vec<String>),
}

/// One file a call covers: how the result names it, and where it is.
pub(super) struct Target {
    pub(super) display: String,
    pub(super) place: Result<(RootId, String), String>,
}

/// The files a `filepath` argument names: one file (single-file result shape) or
/// several (list and directory shape).
pub(super) enum Targets {
    Single(Target),
    Many { files: Vec<Target>, truncated: bool },
}

fn not_found(path: &str) -> ToolError {
    ToolError::new(
        "file_not_found",
        format!("Failed to open file: {path}"),
        "Check the path; list_files(kind='code') shows the source files quarry knows",
    )
}

pub(super) fn path_error(path: &str, e: &PathError) -> ToolError {
    match e {
        PathError::NotFound(_) => not_found(path),
        other => ToolError::from_path(other),
    }
}

pub(super) fn targets(
    ctx: &Context,
    filepath: PathArg,
    recursive: Option<bool>,
    patterns: Option<Vec<String>>,
) -> Result<Targets, ToolError> {
    let patterns = patterns.unwrap_or_else(|| DEFAULT_PATTERNS.map(String::from).to_vec());
    let globs = patterns
        .iter()
        .map(|p| Glob::new(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ToolError::invalid_arguments("file_patterns", e))?;
    let recursive = recursive.unwrap_or(true);
    let roots = ctx.catalog.roots();
    match filepath {
        PathArg::One(path) => {
            let resolved = roots
                .resolve(&path, None)
                .map_err(|e| path_error(&path, &e))?;
            if resolved.abs.is_dir() {
                let (files, truncated) =
                    folder_files(ctx, resolved.root_id, &resolved.rel, recursive, &globs);
                Ok(Targets::Many { files, truncated })
            } else {
                Ok(Targets::Single(Target {
                    display: path,
                    place: Ok((resolved.root_id, resolved.rel)),
                }))
            }
        }
        PathArg::Many(paths) => {
            let mut files = Vec::new();
            for path in paths.into_iter().take(MAX_FILES + 1) {
                let place = match roots.resolve(&path, None) {
                    Ok(r) if r.abs.is_dir() => {
                        let (inner, _) = folder_files(ctx, r.root_id, &r.rel, recursive, &globs);
                        files.extend(inner);
                        continue;
                    }
                    Ok(r) => Ok((r.root_id, r.rel)),
                    Err(e) => Err(path_error(&path, &e).message),
                };
                files.push(Target {
                    display: path,
                    place,
                });
            }
            let truncated = files.len() > MAX_FILES;
            files.truncate(MAX_FILES);
            Ok(Targets::Many { files, truncated })
        }
    }
}

/// The indexed source files in a folder that match the patterns, in path order.
fn folder_files(
    ctx: &Context,
    root_id: RootId,
    rel: &str,
    recursive: bool,
    globs: &[Glob],
) -> (Vec<Target>, bool) {
    let multi_root = ctx.catalog.roots().sole().is_none();
    let root_name = &ctx.catalog.roots().list()[root_id].name;
    let mut out = Vec::new();
    for (path, entry) in ctx.catalog.files().under(root_id, rel) {
        if entry.kind != Kind::Code {
            continue;
        }
        let below = path[rel.len()..].trim_start_matches('/');
        let name = path.rsplit('/').next().unwrap_or(&path);
        if (!recursive && below.contains('/')) || !globs.iter().any(|g| g.matches_file(name, &path))
        {
            continue;
        }
        if out.len() == MAX_FILES {
            return (out, true);
        }
        let display = if multi_root {
            format!("{root_name}/{path}")
        } else {
            path.clone()
        };
        out.push(Target {
            display,
            place: Ok((root_id, path)),
        });
    }
    (out, false)
}

/// A source file's symbols: from the catalog when it is indexed, parsed now when
/// it is not indexed yet (written a moment ago).
pub(super) fn code_file(ctx: &Context, root_id: RootId, rel: &str) -> Result<CodeFile, String> {
    let record = ctx
        .catalog
        .record(root_id, rel)
        .map_err(|e| e.to_string())?;
    match record {
        Some(r) if r.info.kind == Kind::Code => match r.info.status {
            FileStatus::Failed(why) => Err(format!("Failed to parse file: {why}")),
            FileStatus::Ok => ctx
                .catalog
                .code_file(r.id)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "the catalog has no symbols for this file".to_string()),
        },
        _ => {
            let file = ctx
                .catalog
                .roots()
                .open(root_id, rel)
                .map_err(|e| e.to_string())?;
            let name = rel.rsplit('/').next().unwrap_or(rel);
            code::read(name, file)
                .map(|e| e.file)
                .map_err(|e| format!("Failed to parse file: {e}"))
        }
    }
}

/// Runs `per_file` over the targets, in the single or many-file result shape,
/// held to the budget. One file: its `list` (the tool's list: functions,
/// classes, errors, matches) from item `offset` on, cut to fit. Several: the
/// files from `offset` on, cut at a file (the counts cover every file); a
/// first file too long alone has its list cut, with `<list>_total`.
pub(super) fn for_each_file(
    job: &Job,
    targets: Targets,
    budget: &Budget,
    (list, offset): (&str, usize),
    mut per_file: impl FnMut(RootId, &str) -> Result<Map<String, Value>, String>,
) -> Result<ToolOutput, ToolError> {
    let tool = budget.operation;
    match targets {
        Targets::Single(t) => {
            let (root_id, rel) = t
                .place
                .map_err(|m| ToolError::new("file_not_found", m, "Check the path"))?;
            let mut fields = per_file(root_id, &rel).map_err(|why| {
                ToolError::new(
                    "parse_failed",
                    why,
                    "index_status() lists files that failed to index; fix the file and it is re-read",
                )
            })?;
            fields.insert("success".into(), true.into());
            let remaining = skip_items(&mut fields, list, offset);
            let mut out = ToolOutput::new(Value::Object(fields)).meta("truncated", false);
            let pointer = format!("/{list}");
            budget.cut_list(&mut out, &pointer, |o, cut| {
                let cut = Cut {
                    total: remaining.max(cut.kept),
                    ..cut
                };
                if cut.truncated() {
                    set(&mut o.data, "truncated", true);
                    set(&mut o.data, &format!("{list}_total"), offset + remaining);
                }
                mark_offset(o, cut, offset, tool, list);
            });
            Ok(out)
        }
        Targets::Many { files, truncated } => {
            let total = files.len();
            let mut results = Vec::new();
            let mut failed = 0;
            for (done, t) in files.into_iter().enumerate() {
                if let Some(stop) = job.stopped() {
                    return Err(stopped(stop));
                }
                job.progress(done as u64, Some(total as u64));
                let mut entry = Map::new();
                entry.insert("filepath".into(), t.display.into());
                match t.place.and_then(|(root_id, rel)| per_file(root_id, &rel)) {
                    Ok(fields) => {
                        entry.extend(fields);
                        entry.insert("success".into(), true.into());
                    }
                    Err(why) => {
                        failed += 1;
                        entry.insert("success".into(), false.into());
                        entry.insert("error".into(), why.into());
                    }
                }
                if done >= offset {
                    results.push(Value::Object(entry));
                }
            }
            let mut out = ToolOutput::new(json!({
                "total_files": total,
                "processed_files": total - failed,
                "failed_files": failed,
                "results": results,
                "truncated": truncated,
            }))
            .meta("truncated", truncated);
            if truncated {
                out = out.suggest(format!(
                    "Only the first {MAX_FILES} files are covered: name a narrower folder or file_patterns"
                ));
            }
            let remaining = total.saturating_sub(offset);
            let first = out.data["results"].get(0).cloned();
            let mut paged = out.clone();
            let cut = budget.page(&mut paged, "/results", offset, remaining, "files");
            match first {
                Some(Value::Object(first)) if cut.kept == 0 => {
                    // The first file alone is too long: its list is cut.
                    first_file_cut(budget, &mut out, first, list, offset)?;
                }
                _ => out = paged,
            }
            if out.metadata.get("truncated") == Some(&Value::Bool(true)) {
                set(&mut out.data, "truncated", true);
            }
            Ok(out)
        }
    }
}

/// Drops the first `offset` items of `fields[list]`; how many remain.
fn skip_items(fields: &mut Map<String, Value>, list: &str, offset: usize) -> usize {
    match fields.get_mut(list) {
        Some(Value::Array(items)) => {
            items.drain(..offset.min(items.len()));
            items.len()
        }
        _ => 0,
    }
}

/// A many-file answer whose first file did not fit: that file's entry alone,
/// its list cut to fit (with `<list>_total` and `truncated`), and the way to
/// its other items (the file alone, with offset) and to the next files.
fn first_file_cut(
    budget: &Budget,
    out: &mut ToolOutput,
    entry: Map<String, Value>,
    list: &str,
    offset: usize,
) -> Result<(), ToolError> {
    let total_files = out.data["total_files"].as_u64().unwrap_or(0) as usize;
    let filepath = entry.get("filepath").cloned().unwrap_or(Value::Null);
    let items = entry
        .get(list)
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    out.data["results"] = json!([Value::Object(entry)]);
    let tool = budget.operation;
    let pointer = format!("/results/0/{list}");
    let cut = budget.cut_list(out, &pointer, |o, cut| {
        set(&mut o.data["results"][0], &format!("{list}_total"), items);
        set(&mut o.data["results"][0], "truncated", true);
        o.metadata.insert("truncated".into(), true.into());
        let next = offset + 1;
        let files = if next < total_files {
            o.metadata.insert("next_offset".into(), next.into());
            format!(", and on the folder with offset={next} for the next files")
        } else {
            o.metadata.remove("next_offset");
            String::new()
        };
        o.suggestions.push(format!(
            "{} of the {items} {list} of {filepath} shown: call {tool} on that file alone with offset={} for the rest{files}",
            cut.kept, cut.kept
        ));
    });
    if cut.kept == 0 && items > 0 {
        return Err(ToolError::new(
            "limit_exceeded",
            format!("one of the {list} of {filepath} is longer than max_result_bytes"),
            "Name the file alone, or a narrower query",
        ));
    }
    Ok(())
}

fn stopped(stop: crate::job::Stop) -> ToolError {
    ToolError::new(
        "timeout",
        format!("the call stopped before covering every file ({stop:?})"),
        "Name fewer files, or a narrower folder or file_patterns",
    )
}
