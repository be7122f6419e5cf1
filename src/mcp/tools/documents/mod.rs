//! The documents tool family (contextfs spec): `list_collections` and
//! `find_document` (browse.rs) answer from the catalog's file list;
//! `search_documents` and `search_multiple` (search.rs) from the text index and
//! the stored text; `read_document` and `get_document_info` (read.rs) from the
//! stored pages, TOC and metadata. No tool opens a document file.
//!
//! Paths are as the spec shows them, relative to the knowledge root: a root's
//! relative path when quarry has one root, `NAME/relative path` with several. The
//! ingest folder, a root quarry adds itself, does not count (`Roots::sole`): beside
//! one root of the user's, its documents are shown by absolute path.
//! Absolute paths inside a root are accepted too.

mod browse;
mod read;
mod search;

use serde_json::json;

use super::{Context, Effects, ToolDef, Toolset};
use crate::catalog::documents::DocMetaRow;
use crate::catalog::{FileRecord, Snapshot};
use crate::formats::{Kind, kind_from_name};
use crate::mcp::response::ToolError;
use crate::roots::PathError;
use crate::roots::RootId;

pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "list_collections",
        title: "List document collections",
        toolset: Toolset::Docs,
        description: "Browse the document collections (folders): sub-collections with document counts, and the documents in the \
folder.",
        input_schema: include_str!("../../../../schema/tools/list_collections.input.json"),
        output_schema: include_str!("../../../../schema/tools/list_collections.output.json"),
        effects: Effects::READS,
        handler: browse::list_collections,
    },
    ToolDef {
        name: "find_document",
        title: "Find documents by name",
        toolset: Toolset::Docs,
        description: "Find documents by file name, any case: exact names, then prefixes, then substrings.",
        input_schema: include_str!("../../../../schema/tools/find_document.input.json"),
        output_schema: include_str!("../../../../schema/tools/find_document.output.json"),
        effects: Effects::READS,
        handler: browse::find_document,
    },
    ToolDef {
        name: "search_documents",
        title: "Search inside documents",
        toolset: Toolset::Docs,
        description: "Full-text search of the documents, line by line: matching lines (PDFs with page) with context, total \
matches. scope: global, a collection or a document.",
        input_schema: include_str!("../../../../schema/tools/search_documents.input.json"),
        output_schema: include_str!("../../../../schema/tools/search_documents.output.json"),
        effects: Effects::READS,
        handler: search::search_documents,
    },
    ToolDef {
        name: "search_multiple",
        title: "Run several searches",
        toolset: Toolset::Docs,
        description: "Up to 10 search_documents queries over one scope, results keyed by query; a failing query does not stop the \
others.",
        input_schema: include_str!("../../../../schema/tools/search_multiple.input.json"),
        output_schema: include_str!("../../../../schema/tools/search_multiple.output.json"),
        effects: Effects::READS,
        handler: search::search_multiple,
    },
    ToolDef {
        name: "read_document",
        title: "Read a document",
        toolset: Toolset::Docs,
        description: "A document's text, or some PDF pages ('--- Page N ---' separators), from the catalog; cut at the character \
cap (truncated=true).",
        input_schema: include_str!("../../../../schema/tools/read_document.input.json"),
        output_schema: include_str!("../../../../schema/tools/read_document.output.json"),
        effects: Effects::READS,
        handler: read::read_document,
    },
    ToolDef {
        name: "get_document_info",
        title: "Document information",
        toolset: Toolset::Docs,
        description: "A document's format, size, pages, modification time, metadata (title, author, created, keywords) and table \
of contents.",
        input_schema: include_str!("../../../../schema/tools/get_document_info.input.json"),
        output_schema: include_str!("../../../../schema/tools/get_document_info.output.json"),
        effects: Effects::READS,
        handler: read::get_document_info,
    },
];

/// The path a tool shows for a root-relative path (see the module comment).
fn tool_path(ctx: &Context, root_id: RootId, rel: &str) -> String {
    let roots = ctx.catalog.roots();
    match roots.sole() {
        Some(sole) if sole == root_id => rel.to_string(),
        // Beside a sole root, a root set aside (the ingest folder) cannot be told
        // apart by a name prefix: its files are shown by their absolute paths.
        Some(_) => roots.list()[root_id]
            .dir
            .join(rel)
            .to_string_lossy()
            .into_owned(),
        None => {
            let name = &roots.list()[root_id].name;
            if rel.is_empty() {
                name.clone()
            } else {
                format!("{name}/{rel}")
            }
        }
    }
}

/// The tool path of a catalog path ("root name/relative path").
fn tool_path_of_catalog_path(ctx: &Context, catalog_path: &str) -> String {
    let (name, rel) = catalog_path.split_once('/').unwrap_or((catalog_path, ""));
    match ctx.catalog.roots().id_of(name) {
        Some(root_id) => tool_path(ctx, root_id, rel),
        None => catalog_path.to_string(),
    }
}

/// The folder part of a relative path ("" at the top of a root).
fn parent_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn name_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or(rel, |(_, name)| name)
}

/// A tool path's root and relative path, judged on its text alone. Paths that
/// try to leave the roots are PATH_TRAVERSAL_DETECTED; a root name that is not
/// configured is `missing` (the tool's not-found error).
fn resolve(
    ctx: &Context,
    path: &str,
    missing: impl Fn(&str) -> ToolError,
) -> Result<(RootId, String), ToolError> {
    ctx.catalog
        .roots()
        .resolve_lexically(path, None)
        .map_err(|e| match &e {
            PathError::UnknownResource { available, .. }
            | PathError::Ambiguous { available, .. } => {
                missing(path).details(json!({ "path": path, "available_roots": available }))
            }
            _ => traversal(path, &e),
        })
}

fn traversal(path: &str, why: &PathError) -> ToolError {
    ToolError::new(
        "PATH_TRAVERSAL_DETECTED",
        format!("'{path}' is refused: {why}"),
        "Use paths within the knowledge root, as list_collections() and find_document() return them",
    )
    .details(json!({ "path": path }))
}

fn document_not_found(path: &str) -> ToolError {
    let stem = name_of(path)
        .rsplit_once('.')
        .map_or(name_of(path), |(s, _)| s);
    ToolError::new(
        "DOCUMENT_NOT_FOUND",
        format!("Document not found: {path}"),
        format!("Check the path with find_document(query='{stem}'); a document written just now appears within seconds"),
    )
    .details(json!({ "path": path }))
}

fn unsupported_format(path: &str, what: &str) -> ToolError {
    ToolError::new(
        "UNSUPPORTED_FORMAT",
        format!("'{path}' is not a document quarry reads ({what})"),
        "Documents are PDF, Markdown and text files (.pdf, .md, .markdown, .txt, .log, .rst): \
find them with find_document() or list_collections(); list_files(kind='all') shows the other kinds",
    )
    .details(json!({ "path": path }))
}

/// A document the catalog knows, with its stored metadata.
struct KnownDocument {
    root_id: RootId,
    rel: String,
    record: FileRecord,
    /// `Err` holds the error recorded when the document failed to index.
    meta: Result<DocMetaRow, String>,
}

/// Finds a document by tool path in the catalog (the file is not touched).
fn known_document(ctx: &Context, path: &str) -> Result<KnownDocument, ToolError> {
    let (root_id, rel) = resolve(ctx, path, document_not_found)?;
    if rel.is_empty() {
        return Err(document_not_found(path));
    }
    let record = ctx
        .catalog
        .record(root_id, &rel)
        .map_err(ToolError::internal)?;
    let Some(record) = record else {
        let name = name_of(&rel);
        return Err(
            if name.contains('.') && kind_from_name(name) != Some(Kind::Document) {
                unsupported_format(path, "its extension is not a document's")
            } else {
                document_not_found(path)
            },
        );
    };
    if record.info.kind != Kind::Document {
        return Err(unsupported_format(
            path,
            &format!("quarry indexed it as {}", record.info.kind.label()),
        ));
    }
    let meta = match &record.info.status {
        crate::catalog::FileStatus::Failed(why) => Err(why.clone()),
        crate::catalog::FileStatus::Ok => ctx
            .catalog
            .document_meta(record.id)
            .map_err(ToolError::internal)?
            .ok_or_else(|| "the catalog holds no text for it".to_string()),
    };
    Ok(KnownDocument {
        root_id,
        rel,
        record,
        meta,
    })
}

/// The page (1-based) holding a line, for documents with pages.
fn page_of_line(meta: &DocMetaRow, line: u32) -> Option<u32> {
    meta.pages
        .iter()
        .position(|p| line >= p.first_line && line < p.first_line + p.lines)
        .map(|i| i as u32 + 1)
}

/// An integer argument checked against its range; the error says what to retry
/// with.
fn bounded(
    tool: &str,
    name: &str,
    value: Option<i64>,
    default: usize,
    min: usize,
    max: usize,
) -> Result<usize, ToolError> {
    match value {
        None => Ok(default),
        Some(v) if (min as i64..=max as i64).contains(&v) => Ok(v as usize),
        Some(v) => Err(ToolError::invalid_arguments(
            tool,
            format!("{name} = {v} is outside {min}..={max}"),
        )
        .retry_with(json!({ name: v.clamp(min as i64, max as i64) }))),
    }
}

/// The first snapshot position whose path is not before `key`.
fn first_at_or_after(snap: &Snapshot, key: &str) -> usize {
    let (mut lo, mut hi) = (0, snap.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if snap.rel(mid) < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// What a root-relative path names in the catalog's file list.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    File,
    /// A folder with indexed files below it.
    Folder,
    Missing,
}

/// Finds out what `rel` is by two binary searches of the root's file list.
fn entry_at(ctx: &Context, root_id: RootId, rel: &str) -> Entry {
    let snap = ctx.catalog.files().snapshot(root_id);
    let at = first_at_or_after(&snap, rel);
    if at < snap.len() && snap.rel(at) == rel {
        return Entry::File;
    }
    let prefix = format!("{rel}/");
    let at = first_at_or_after(&snap, &prefix);
    if at < snap.len() && snap.rel(at).starts_with(&prefix) {
        Entry::Folder
    } else {
        Entry::Missing
    }
}
