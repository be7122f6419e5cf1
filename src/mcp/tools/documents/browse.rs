//! `list_collections` and `find_document`: folders and file names, from the
//! catalog's in-memory file list (no database read, no file opened).

use crate::job::Job;
use crate::roots::RootId;
use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{bounded, first_at_or_after, name_of, parent_of, resolve, tool_path};
use crate::catalog::{FileEntry, Snapshot};
use crate::formats::Kind;
use crate::mcp::budget::mark_offset;
use crate::mcp::response::{ToolError, ToolOutput, iso8601_ns};
use crate::mcp::tools::{Context, checked_offset, parse_args};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    path: Option<String>,
    offset: Option<i64>,
}

pub fn list_collections(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: ListArgs = parse_args("list_collections", args)?;
    let offset = checked_offset("list_collections", "offset", args.offset)?;
    let path = args.path.unwrap_or_default();
    let path = path.trim();
    if path.is_empty() && ctx.catalog.roots().sole().is_none() {
        let mut out = list_roots_from(ctx, offset);
        cut_listing(ctx, &mut out, offset);
        return Ok(out);
    }
    let (root_id, rel) = resolve(ctx, path, collection_not_found)?;
    let snap = ctx.catalog.files().snapshot(root_id);
    let listing = Listing::of(&snap, &rel);
    if listing.is_file {
        return Err(ToolError::new(
            "NOT_A_DIRECTORY",
            format!("'{path}' is a file, not a collection"),
            format!("Use get_document_info(path='{path}') or read_document(path='{path}') for a document"),
        )
        .details(json!({ "path": path })));
    }
    if !rel.is_empty() && !listing.exists {
        return Err(collection_not_found(path));
    }
    // `offset` skips the first sub-collections and the first documents.
    let collections: Vec<Value> = listing
        .children
        .iter()
        .skip(offset)
        .map(|(name, child)| {
            let child_rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            json!({
                "name": name,
                "path": tool_path(ctx, root_id, &child_rel),
                "document_count": child.documents,
                "subcollection_count": child.subcollections.len(),
            })
        })
        .collect();
    let documents: Vec<Value> = listing
        .documents
        .iter()
        .skip(offset)
        .map(|&i| document_json(ctx, root_id, snap.rel(i), snap.entry(i)))
        .collect();
    let mut out = ToolOutput::new(json!({
        "current_path": tool_path(ctx, root_id, &rel),
        "collections": collections,
        "documents": documents,
    }));
    if let Some(first) = collections.first() {
        out = out.suggest(format!(
            "Browse deeper with list_collections(path='{}')",
            first["path"].as_str().unwrap_or_default()
        ));
    }
    if let Some(doc) = documents.first() {
        out = out.suggest(format!(
            "See a document's contents with get_document_info(path='{}')",
            doc["path"].as_str().unwrap_or_default()
        ));
    }
    let mut out = out.suggest(
        "Search inside the documents of this collection with search_documents(scope={type:'collection', path:...})",
    );
    cut_listing(ctx, &mut out, offset);
    Ok(out)
}

/// A listing's collections and documents cut at the same index.
fn cut_listing(ctx: &Context, out: &mut ToolOutput, offset: usize) {
    let lists = [("/collections", 0), ("/documents", 0)];
    ctx.budget("list_collections")
        .cut_together(out, &lists, |o, cut| {
            mark_offset(
                o,
                cut,
                offset,
                "list_collections",
                "collections and documents",
            );
        });
}

fn collection_not_found(path: &str) -> ToolError {
    ToolError::new(
        "COLLECTION_NOT_FOUND",
        format!("Collection not found: {path}"),
        "Use list_collections(path='') to browse the collections from the top",
    )
    .details(json!({ "path": path }))
}

/// With several roots, the top level lists the roots.
fn list_roots_from(ctx: &Context, offset: usize) -> ToolOutput {
    let collections: Vec<Value> = ctx
        .catalog
        .roots()
        .list()
        .iter()
        .enumerate()
        .skip(offset)
        .map(|(i, root)| {
            let listing = Listing::of(&ctx.catalog.files().snapshot(i), "");
            json!({
                "name": root.name,
                "path": root.name,
                "document_count": listing.documents.len(),
                "subcollection_count": listing.children.len(),
            })
        })
        .collect();
    ToolOutput::new(json!({
        "current_path": "",
        "collections": collections,
        "documents": [],
    }))
    .suggest("Each root is a collection: browse one with list_collections(path='<root name>')")
}

#[derive(Default)]
struct Child {
    /// Documents directly in the folder.
    documents: usize,
    /// Folders directly in it that hold documents (at any depth).
    subcollections: BTreeSet<String>,
}

/// What the file list holds in one folder of a root.
struct Listing {
    /// Some file lies below the folder.
    exists: bool,
    /// The path is itself a file.
    is_file: bool,
    /// Sub-folders holding documents, by name.
    children: BTreeMap<String, Child>,
    /// Snapshot positions of the documents directly in the folder.
    documents: Vec<usize>,
}

impl Listing {
    fn of(snap: &Snapshot, rel: &str) -> Listing {
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        let at = first_at_or_after(snap, rel);
        let mut listing = Listing {
            exists: false,
            is_file: !rel.is_empty() && at < snap.len() && snap.rel(at) == rel,
            children: BTreeMap::new(),
            documents: Vec::new(),
        };
        // Paths sharing a prefix are contiguous in the (sorted) snapshot.
        for i in first_at_or_after(snap, &prefix)..snap.len() {
            let Some(rest) = snap.rel(i).strip_prefix(prefix.as_str()) else {
                break;
            };
            listing.exists = true;
            if snap.entry(i).kind != Kind::Document {
                continue;
            }
            match rest.split_once('/') {
                None => listing.documents.push(i),
                Some((child, below)) => {
                    let child = listing.children.entry(child.to_string()).or_default();
                    match below.split_once('/') {
                        None => child.documents += 1,
                        Some((grandchild, _)) => {
                            child.subcollections.insert(grandchild.to_string());
                        }
                    }
                }
            }
        }
        listing
    }
}

fn document_json(ctx: &Context, root_id: RootId, rel: &str, entry: &FileEntry) -> Value {
    let mut v = json!({
        "name": name_of(rel),
        "path": tool_path(ctx, root_id, rel),
        "size_bytes": entry.size,
        "modified": iso8601_ns(entry.mtime_ns),
    });
    if entry.failed {
        v["index_failed"] = json!(true);
    }
    v
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FindArgs {
    query: String,
    limit: Option<i64>,
    offset: Option<i64>,
}

/// Scores of the spec's order: the whole name, then the name without its
/// extension, then a prefix, then anywhere in the name.
const EXACT: f64 = 1.0;
const EXACT_STEM: f64 = 0.9;
const PREFIX: f64 = 0.75;
const CONTAINS: f64 = 0.5;

fn name_score(name: &str, query: &str) -> Option<f64> {
    let name = name.to_lowercase();
    let stem = name.rsplit_once('.').map_or(name.as_str(), |(s, _)| s);
    if name == query {
        Some(EXACT)
    } else if stem == query {
        Some(EXACT_STEM)
    } else if name.starts_with(query) {
        Some(PREFIX)
    } else if name.contains(query) {
        Some(CONTAINS)
    } else {
        None
    }
}

pub fn find_document(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: FindArgs = parse_args("find_document", args)?;
    let limit = bounded("find_document", "limit", args.limit, 10, 1, 100)?;
    let offset = checked_offset("find_document", "offset", args.offset)?;
    let query = args.query.trim().to_lowercase();
    if query.is_empty() {
        return Err(ToolError::invalid_arguments(
            "find_document",
            "query is empty: give a file name or part of one",
        ));
    }
    let mut found: Vec<(f64, usize, String, FileEntry)> = Vec::new();
    for root_id in 0..ctx.catalog.roots().list().len() {
        let snap = ctx.catalog.files().snapshot(root_id);
        for i in 0..snap.len() {
            if snap.entry(i).kind != Kind::Document {
                continue;
            }
            if let Some(score) = name_score(snap.name(i), &query) {
                found.push((score, root_id, snap.rel(i).to_string(), *snap.entry(i)));
            }
        }
    }
    found.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| tool_path(ctx, a.1, &a.2).cmp(&tool_path(ctx, b.1, &b.2)))
    });
    let matches: Vec<Value> = found
        .iter()
        .skip(offset)
        .take(limit)
        .map(|(score, root_id, rel, entry)| {
            let mut v = document_json(ctx, *root_id, rel, entry);
            v["collection"] = json!(tool_path(ctx, *root_id, parent_of(rel)));
            v["score"] = json!(score);
            v
        })
        .collect();
    let remaining = found.len().saturating_sub(offset);
    let mut out = ToolOutput::new(json!({ "matches": matches, "total_found": found.len() }))
        .meta("truncated", remaining > matches.len());
    if let Some(first) = matches.first() {
        out = out.suggest(format!(
            "See its table of contents with get_document_info(path='{}')",
            first["path"].as_str().unwrap_or_default()
        ));
    } else {
        out = out.suggest(format!(
            "No document name contains '{query}': search the text instead with search_documents(query='{query}', scope={{type:'global'}})"
        ));
    }
    if remaining > matches.len() {
        out = out.suggest("Many names match: use a longer name, or page on with offset");
    }
    ctx.budget("find_document")
        .page(&mut out, "/matches", offset, remaining, "documents");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_score_exact_then_prefix_then_contains() {
        assert_eq!(name_score("Tutorial.pdf", "tutorial.pdf"), Some(EXACT));
        assert_eq!(name_score("Tutorial.pdf", "tutorial"), Some(EXACT_STEM));
        assert_eq!(name_score("Tutorial-2.pdf", "tutorial"), Some(PREFIX));
        assert_eq!(name_score("my_tutorial.md", "tutorial"), Some(CONTAINS));
        assert_eq!(name_score("notes.md", "tutorial"), None);
    }
}
