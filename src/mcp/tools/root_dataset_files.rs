//! The files a `dataset` argument names, as tools show them and in the order
//! their entries are numbered (by root, then path): a glob matched against
//! the catalog's file list (as `list_files` matches its pattern), a list of
//! paths, or a saved dataset's files as they are now.

use serde_json::json;

use super::Context;
use super::root_dataset::{DatasetArg, MAX_FILES, Named};
use crate::catalog::datasets::{DatasetFiles, SavedDataset};
use crate::catalog::{FileQuery, KindSet};
use crate::formats::Kind;
use crate::glob::Glob;
use crate::mcp::response::ToolError;
use crate::roots::RootId;

/// Characters that make a string a glob.
pub(super) const GLOB_CHARS: [char; 6] = ['*', '?', '[', ']', '{', '}'];

/// The files of a `dataset` argument, in the order their entries are numbered:
/// by root, then by path.
pub(super) fn dataset_files(
    ctx: &Context,
    tool: &str,
    d: &DatasetArg,
) -> Result<(Vec<String>, Named), ToolError> {
    let text = match d {
        DatasetArg::List(paths) => return Ok((listed_files(ctx, paths)?, Named::List)),
        DatasetArg::One(text) => text.trim(),
    };
    // A list sent as a JSON string.
    if text.starts_with('[')
        && let Ok(paths) = serde_json::from_str::<Vec<String>>(text)
    {
        return Ok((listed_files(ctx, &paths)?, Named::List));
    }
    if !text.contains('/')
        && !text.contains(GLOB_CHARS)
        && let Some(saved) = ctx.catalog.dataset(text).map_err(ToolError::internal)?
    {
        let files = saved_files(ctx, &saved)?;
        return Ok((files, Named::Saved(saved)));
    }
    if !text.contains(GLOB_CHARS) && text.contains('/') {
        return Ok((listed_files(ctx, &[text.to_string()])?, Named::List));
    }
    let files = glob_files(ctx, tool, text)?;
    if files.is_empty() && !text.contains('/') && !text.contains(GLOB_CHARS) {
        let names: Vec<String> = ctx
            .catalog
            .datasets()
            .map_err(ToolError::internal)?
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        return Err(ToolError::new(
            "file_not_found",
            format!("no saved dataset and no indexed ROOT file is named '{text}'"),
            "list_root_datasets() shows the saved datasets; a glob (e.g. 'run2012/**/*.root') names files",
        )
        .details(json!({ "saved_datasets": names })));
    }
    Ok((files, Named::Glob(text.to_string())))
}

/// The files a saved dataset holds now.
pub(super) fn saved_files(ctx: &Context, d: &SavedDataset) -> Result<Vec<String>, ToolError> {
    match &d.files {
        DatasetFiles::Glob(g) => glob_files(ctx, "list_root_datasets", g),
        DatasetFiles::List(paths) => listed_files(ctx, paths),
    }
}

/// Paths given one by one, as tools show them (each checked against the roots
/// by its text), in root then path order, each once.
fn listed_files(ctx: &Context, paths: &[String]) -> Result<Vec<String>, ToolError> {
    let roots = ctx.catalog.roots();
    let mut files: Vec<(RootId, String)> = paths
        .iter()
        .map(|p| {
            roots
                .resolve_lexically(p, None)
                .map_err(|e| ToolError::from_path(&e))
        })
        .collect::<Result<_, _>>()?;
    files.sort();
    files.dedup();
    Ok(files
        .into_iter()
        .map(|(root_id, rel)| shown_path(ctx, root_id, &rel))
        .collect())
}

/// A file as tools show it: root-relative, with the root's name first when
/// there are several roots (what `path` arguments take back).
pub(super) fn shown_path(ctx: &Context, root_id: RootId, rel: &str) -> String {
    let roots = ctx.catalog.roots();
    if roots.sole().is_some() {
        rel.to_string()
    } else {
        format!("{}/{rel}", roots.list()[root_id].name)
    }
}

/// The indexed ROOT files a glob matches, in root then path order. A pattern
/// without '/' matches file names anywhere, one with '/' root-relative paths
/// ('**' crosses folders), as `list_files` matches them; with several roots a
/// pattern may start with a root's name, and an absolute pattern with a
/// root's folder.
pub(super) fn glob_files(
    ctx: &Context,
    tool: &str,
    pattern: &str,
) -> Result<Vec<String>, ToolError> {
    let roots = ctx.catalog.roots();
    let outside = || {
        ToolError::new(
            "permission_denied",
            format!("the glob '{pattern}' reaches outside the configured roots"),
            "Globs match files inside the roots: e.g. 'run2012/**/*.root' or '*.root'",
        )
    };
    if pattern.contains('\0') || pattern.split('/').any(|c| c == "..") {
        return Err(outside());
    }
    let (selected, pattern): (Vec<usize>, String) = if pattern.starts_with('/') {
        let (root_id, rest) = absolute_glob(ctx, pattern).ok_or_else(outside)?;
        (vec![root_id], rest)
    } else {
        match pattern.split_once('/') {
            Some((first, rest)) if roots.sole().is_none() && roots.id_of(first).is_some() => {
                (vec![roots.id_of(first).expect("a root")], rest.to_string())
            }
            _ => ((0..roots.list().len()).collect(), pattern.to_string()),
        }
    };
    let glob = Glob::new(&pattern).map_err(|e| ToolError::invalid_arguments(tool, e))?;
    let found = ctx.catalog.files().query(&FileQuery {
        roots: &selected,
        kinds: KindSet::only(Kind::Root),
        glob: Some(&glob),
        limit: MAX_FILES + 1,
    });
    let mut files: Vec<(RootId, String)> = found
        .files
        .into_iter()
        .map(|f| (f.root_id, f.rel))
        .collect();
    files.sort();
    Ok(files
        .into_iter()
        .map(|(root_id, rel)| shown_path(ctx, root_id, &rel))
        .collect())
}

/// An absolute glob as (root id, pattern relative to it): the folders before the
/// first component with a wildcard must lie in a root.
fn absolute_glob(ctx: &Context, pattern: &str) -> Option<(RootId, String)> {
    let parts: Vec<&str> = pattern.split('/').collect();
    let literal = parts.iter().position(|c| c.contains(GLOB_CHARS))?;
    let folder = parts[..literal].join("/");
    let (root_id, rel) =
        ctx.catalog
            .roots()
            .locate(std::path::Path::new(if folder.is_empty() {
                "/"
            } else {
                &folder
            }))?;
    let rest = parts[literal..].join("/");
    Some((
        root_id,
        if rel.is_empty() {
            rest
        } else {
            format!("{rel}/{rest}")
        },
    ))
}
