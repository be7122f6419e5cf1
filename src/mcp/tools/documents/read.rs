//! `read_document` and `get_document_info`: the stored pages, table of contents
//! and metadata of one document. Nothing is extracted again: the text was stored
//! at index time.

use crate::job::Job;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::search::filter_failed;
use super::{KnownDocument, known_document, name_of, parent_of, tool_path};
use crate::catalog::documents::{DocMetaRow, TocRow};
use crate::mcp::budget;
use crate::mcp::response::{ToolError, ToolOutput, iso8601_ns};
use crate::mcp::tools::{Context, checked_offset, parse_args};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    pages: Vec<i64>,
    /// Characters of the content (as these pages assemble it) to skip.
    offset: Option<i64>,
}

pub fn read_document(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "read_document";
    let args: ReadArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let doc = known_document(ctx, &args.path)?;
    let meta = doc
        .meta
        .as_ref()
        .map_err(|why| filter_failed(&args.path, why))?;
    let total = meta.pages.len() as u32;
    let pages = chosen_pages(meta, &args.pages, &args.path)?;
    let cap = ctx.settings.limits.max_document_read_chars;
    let mut content =
        assemble(ctx, &doc, meta, &pages, offset, cap).map_err(ToolError::internal)?;
    let path = tool_path(ctx, doc.root_id, &doc.rel);
    let build = |content: &Content| {
        let char_count = content.text.chars().count();
        let mut out = ToolOutput::new(json!({
            "content": content.text,
            "pages_read": content.pages_read,
            "total_pages": total,
            "format": meta.format,
            "truncated": content.truncated,
            "char_count": char_count,
        }));
        if content.truncated {
            let next = offset + char_count;
            out = out.meta("truncated", true).meta("next_offset", next).suggest(format!(
                "Cut at {char_count} characters: read on with read_document(path='{path}'{}, offset={next}), \
or find the lines you need with search_documents(scope={{type:'document', path:'{path}'}})",
                if args.pages.is_empty() { String::new() } else { format!(", pages={:?}", args.pages) }
            ));
        }
        out
    };
    // The character cap is cut further when the text's JSON (multi-byte
    // characters, escapes) would pass the byte budget.
    let budget = ctx.budget(tool);
    let mut out = build(&content);
    if !budget.fits(&out) {
        content.truncated = true;
        let widest = build(&content);
        let others = budget.len(&widest) - budget::json_len(&widest.data["content"]);
        let keep = budget::prefix_within(&content.text, budget.cap.saturating_sub(others + 2));
        content.text.truncate(keep);
        out = build(&content);
    }
    Ok(out)
}

/// The pages to read: all when none are asked for (and always for documents
/// without pages), else the ones asked for, each checked, in order, once.
fn chosen_pages(meta: &DocMetaRow, asked: &[i64], path: &str) -> Result<Vec<u32>, ToolError> {
    let total = meta.pages.len() as u32;
    if asked.is_empty() || meta.format != "pdf" {
        return Ok((1..=total).collect());
    }
    if let Some(&bad) = asked.iter().find(|&&p| p < 1 || p > i64::from(total)) {
        let valid: Vec<i64> = asked
            .iter()
            .copied()
            .filter(|&p| (1..=i64::from(total)).contains(&p))
            .collect();
        return Err(ToolError::new(
            "PAGE_OUT_OF_RANGE",
            format!("'{path}' has {total} pages; page {bad} does not exist"),
            format!("Pages are 1 to {total}; get_document_info(path='{path}') shows which page each section starts on"),
        )
        .details(json!({ "path": path, "page": bad, "total_pages": total }))
        .retry_with(json!({ "path": path, "pages": valid })));
    }
    let mut pages: Vec<u32> = asked.iter().map(|&p| p as u32).collect();
    pages.sort_unstable();
    pages.dedup();
    Ok(pages)
}

struct Content {
    text: String,
    pages_read: Vec<u32>,
    truncated: bool,
}

/// The pages' text, with `--- Page N ---` separators when the document has more
/// than one page, from character `offset` on, cut after `cap` characters.
fn assemble(
    ctx: &Context,
    doc: &KnownDocument,
    meta: &DocMetaRow,
    pages: &[u32],
    offset: usize,
    cap: usize,
) -> anyhow::Result<Content> {
    let separators = meta.pages.len() > 1;
    let mut reader = ctx.catalog.document_text_reader(doc.record.id, meta);
    let mut out = Content {
        text: String::new(),
        pages_read: Vec::new(),
        truncated: false,
    };
    // Characters of the whole content before the current piece, and the
    // characters taken so far.
    let (mut at, mut used) = (0usize, 0usize);
    for (i, &page) in pages.iter().enumerate() {
        if separators {
            let header = format!("{}--- Page {page} ---\n\n", if i > 0 { "\n" } else { "" });
            let n = header.chars().count();
            let skip = offset.saturating_sub(at).min(n);
            at += n;
            let rest: String = header.chars().skip(skip).collect();
            let take = (n - skip).min(cap - used);
            out.text.extend(rest.chars().take(take));
            used += take;
            if take < n - skip {
                out.truncated = true;
                break;
            }
        }
        let skip = offset.saturating_sub(at);
        let (text, whole, skipped) = reader.page_from(page, skip, cap - used)?;
        at += skipped;
        let n = text.chars().count();
        (at, used) = (at + n, used + n);
        // A page counts as read when some of its text is shown (or it is
        // empty and read from its start).
        if n > 0 || (skip == 0 && whole) {
            out.pages_read.push(page);
        }
        out.text.push_str(&text);
        if !whole {
            out.truncated = true;
            break;
        }
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InfoArgs {
    path: String,
    /// TOC entries (in document order, at any level) to skip.
    offset: Option<i64>,
}

pub fn get_document_info(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: InfoArgs = parse_args("get_document_info", args)?;
    let doc = known_document(ctx, &args.path)?;
    let meta = doc.meta.as_ref().map_err(|why| {
        ToolError::new(
            "METADATA_EXTRACTION_FAILED",
            format!("'{}' could not be read: {why}", args.path),
            "quarry records the error (index_status() lists it) and re-reads the file when it changes",
        )
        .details(json!({ "path": args.path, "error": why }))
    })?;
    let toc = ctx
        .catalog
        .document_toc(doc.record.id)
        .map_err(ToolError::internal)?;
    let path = tool_path(ctx, doc.root_id, &doc.rel);
    let tool = "get_document_info";
    let offset = checked_offset(tool, "offset", args.offset)?;
    let entries = &toc[offset.min(toc.len())..];
    let build = |k: usize| {
        let mut data = json!({
            "name": name_of(&doc.rel),
            "path": path,
            "collection": tool_path(ctx, doc.root_id, parent_of(&doc.rel)),
            "format": meta.format,
            "size_bytes": doc.record.info.size,
            "size_human": human_size(doc.record.info.size),
            "pages": meta.pages.len(),
            "modified": iso8601_ns(doc.record.info.mtime_ns),
            "has_toc": !toc.is_empty(),
            "toc": nest(&entries[..k]),
            "metadata": metadata(meta),
        });
        if !meta.warnings.is_empty() {
            data["warnings"] = json!(meta.warnings);
        }
        let mut out = ToolOutput::new(data);
        if let Some(first) = toc.first() {
            out = out.suggest(if meta.format == "pdf" {
                format!(
                    "Read a section with read_document(path='{path}', pages=[{}])",
                    first.page
                )
            } else {
                format!("Read it with read_document(path='{path}')")
            });
        }
        out = out.suggest(format!(
            "Search inside it with search_documents(query=..., scope={{type:'document', path:'{path}'}})"
        ));
        // A page of the TOC that starts inside a section lists its remaining
        // subsections at the top.
        let cut = budget::Cut {
            kept: k,
            total: entries.len(),
            shortened: false,
        };
        budget::mark_offset(&mut out, cut, offset, tool, "TOC entries");
        out
    };
    let budget = ctx.budget(tool);
    let (_, mut out) = budget.fit_prefix(entries.len(), build);
    // A document whose warnings alone are too long shows the first ones.
    budget.cut_list(&mut out, "/warnings", |o, cut| {
        if cut.truncated() {
            o.metadata.insert("truncated".into(), true.into());
            o.metadata
                .insert("warnings_total".into(), meta.warnings.len().into());
        }
    });
    Ok(out)
}

fn metadata(meta: &DocMetaRow) -> Value {
    let meta = &meta.metadata;
    let mut m = Map::new();
    for (key, value) in [
        ("title", &meta.title),
        ("author", &meta.author),
        ("subject", &meta.subject),
        ("created", &meta.created),
    ] {
        if let Some(v) = value {
            m.insert(key.into(), json!(v));
        }
    }
    if !meta.keywords.is_empty() {
        m.insert("keywords".into(), json!(meta.keywords));
    }
    Value::Object(m)
}

/// Sizes in binary units with one decimal ("9.1 KB", "2.3 MB"), bytes as they are.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The flat TOC as a tree: each entry holds, under `children`, the entries of
/// deeper levels that follow it.
fn nest(rows: &[TocRow]) -> Vec<Value> {
    let mut top = Vec::new();
    let mut open: Vec<(u32, Value)> = Vec::new();
    for row in rows {
        while open.last().is_some_and(|(level, _)| *level >= row.level) {
            close_last(&mut open, &mut top);
        }
        let mut entry = json!({ "title": row.title, "page": row.page, "level": row.level });
        if let Some(line) = row.line {
            entry["line"] = json!(line);
        }
        open.push((row.level, entry));
    }
    while !open.is_empty() {
        close_last(&mut open, &mut top);
    }
    top
}

fn close_last(open: &mut Vec<(u32, Value)>, top: &mut Vec<Value>) {
    let Some((_, entry)) = open.pop() else { return };
    match open.last_mut() {
        Some((_, parent)) => match parent.get_mut("children").and_then(Value::as_array_mut) {
            Some(children) => children.push(entry),
            None => parent["children"] = json!([entry]),
        },
        None => top.push(entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(title: &str, level: u32) -> TocRow {
        TocRow {
            title: title.into(),
            level,
            page: 1,
            line: None,
        }
    }

    #[test]
    fn tocs_nest_by_level() {
        let rows = [
            row("A", 1),
            row("A.1", 2),
            row("A.1.a", 3),
            row("A.2", 2),
            row("B", 1),
            row("deep first", 3),
            row("C", 1),
        ];
        let titles = |v: &Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|e| e["title"].as_str().unwrap().to_string())
                .collect()
        };
        let tree = Value::Array(nest(&rows));
        assert_eq!(titles(&tree), vec!["A", "B", "C"]);
        assert_eq!(titles(&tree[0]["children"]), vec!["A.1", "A.2"]);
        assert_eq!(titles(&tree[0]["children"][0]["children"]), vec!["A.1.a"]);
        assert_eq!(titles(&tree[1]["children"]), vec!["deep first"]);
        assert!(tree[2].get("children").is_none());
    }

    #[test]
    fn sizes_read_like_a_file_browser() {
        assert_eq!(human_size(532), "532 B");
        assert_eq!(human_size(9323), "9.1 KB");
        assert_eq!(human_size(2_457_600), "2.3 MB");
        assert_eq!(human_size(5 << 30), "5.0 GB");
    }
}
