//! `search_documents` and `search_multiple`: the text index finds the matching
//! lines (catalog::documents::search), and only the lines shown, with their
//! context, are read from the stored text.

use crate::job::Job;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    Entry, bounded, entry_at, known_document, page_of_line, resolve, tool_path_of_catalog_path,
};
use crate::catalog::documents::{DocumentHit, Scope, SearchError, SearchOptions, query};
use crate::formats::Kind;
use crate::mcp::budget::{self, Cut};
use crate::mcp::response::{ToolError, ToolOutput};
use crate::mcp::tools::{Context, checked_offset, parse_args};

/// Longest line text a match shows, in characters; longer lines are cut with "…".
const MAX_LINE_CHARS: usize = 1000;
const CONTEXT_DEFAULT: usize = 5;
const CONTEXT_MAX: usize = 50;
const RESULTS_DEFAULT: usize = 20;
const RESULTS_MAX: usize = 500;
const MAX_QUERIES: usize = 10;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeArg {
    #[serde(rename = "type")]
    kind: String,
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    scope: ScopeArg,
    context_lines: Option<i64>,
    max_results: Option<i64>,
    fuzzy: Option<bool>,
    offset: Option<i64>,
}

/// The context lines and the result cap of a search call, each defaulted and
/// checked against its range (`max` names the cap's argument in the tool).
fn result_bounds(
    tool: &str,
    context_lines: Option<i64>,
    (max_name, max): (&str, Option<i64>),
) -> Result<(usize, usize), ToolError> {
    let context = bounded(
        tool,
        "context_lines",
        context_lines,
        CONTEXT_DEFAULT,
        0,
        CONTEXT_MAX,
    )?;
    let max_results = bounded(tool, max_name, max, RESULTS_DEFAULT, 1, RESULTS_MAX)?;
    Ok((context, max_results))
}

pub fn search_documents(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "search_documents";
    let args: SearchArgs = parse_args(tool, args)?;
    let (context, max_results) =
        result_bounds(tool, args.context_lines, ("max_results", args.max_results))?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let scope = resolve_scope(ctx, &args.scope)?;
    let options = SearchOptions {
        max_results: offset.saturating_add(max_results),
        fuzzy: args.fuzzy.unwrap_or(false),
        deadline: Some(deadline(ctx)),
    };
    let result = run_query(ctx, job, &args.query, &scope, &options, context, offset)?;
    let mut out = ToolOutput::new(json!({
        "matches": result.matches,
        "total_matches": result.total_matches,
        "truncated": result.truncated,
        "query": args.query,
    }))
    .meta("documents_matched", result.documents_matched);
    out.suggestions = search_suggestions(ctx, &args.query, &result);
    let total = result.total_matches;
    ctx.budget(tool).cut_list(&mut out, "/matches", |o, cut| {
        let next = (offset + cut.kept < total).then_some(offset + cut.kept);
        mark_search(o, cut, next, "");
    });
    Ok(out)
}

/// What a search answer says of its extent: `truncated` (the spec's field,
/// and in the metadata), `next_offset` when matches remain, and how to get
/// them. `at` is "" for search_documents, or the query's key in
/// search_multiple's `results`.
fn mark_search(out: &mut ToolOutput, cut: Cut, next: Option<usize>, at: &str) {
    let truncated = cut.shortened || next.is_some();
    if let Some(v) = out.data.pointer_mut(&format!("{at}/truncated")) {
        *v = truncated.into();
    }
    if at.is_empty() {
        budget::or_truncated(&mut out.metadata, truncated);
        if let Some(next) = next {
            out.metadata.insert("next_offset".into(), next.into());
            out.suggestions.push(format!(
                "More matches: call search_documents again with the same arguments and offset={next}"
            ));
        }
    }
    if cut.shortened {
        out.suggestions.push(
            "A match was too long for max_result_bytes: its text ends with a '…[cut here' marker; \
read_document gives the whole text"
                .into(),
        );
    }
}

/// Searches end a little before the server's call timeout, so they can answer
/// SEARCH_TIMEOUT themselves.
fn deadline(ctx: &Context) -> Instant {
    let limit = ctx.settings.limits.call_timeout;
    Instant::now()
        + limit
            .saturating_sub(limit / 10)
            .max(Duration::from_millis(100))
}

/// The catalog scope of a `scope` argument, checked against the catalog.
fn resolve_scope(ctx: &Context, scope: &ScopeArg) -> Result<Scope, ToolError> {
    let path = scope.path.as_deref().unwrap_or("").trim();
    match scope.kind.as_str() {
        "global" => Ok(Scope::All),
        "collection" if path.is_empty() && ctx.catalog.roots().sole().is_none() => Ok(Scope::All),
        "collection" => {
            let (root_id, rel) = resolve(ctx, path, scope_not_found)?;
            let name = &ctx.catalog.roots().list()[root_id].name;
            if rel.is_empty() {
                return Ok(Scope::Folder(name.clone()));
            }
            match entry_at(ctx, root_id, &rel) {
                Entry::Folder => Ok(Scope::Folder(format!("{name}/{rel}"))),
                Entry::File => Err(ToolError::new(
                    "NOT_A_DIRECTORY",
                    format!("'{path}' is a document, not a collection"),
                    format!(
                        "Search one document with search_documents(scope={{type:'document', path:'{path}'}})"
                    ),
                )
                .details(json!({ "path": path }))),
                Entry::Missing => Err(scope_not_found(path)),
            }
        }
        "document" => {
            if path.is_empty() {
                return Err(ToolError::invalid_arguments(
                    "search_documents",
                    "scope type 'document' needs scope.path",
                ));
            }
            let doc = known_document(ctx, path).map_err(|e| match e.code.as_str() {
                "DOCUMENT_NOT_FOUND" => scope_not_found(path),
                _ => e,
            })?;
            if let Err(why) = &doc.meta {
                return Err(filter_failed(path, why));
            }
            let name = &ctx.catalog.roots().list()[doc.root_id].name;
            Ok(Scope::Document(format!("{name}/{}", doc.rel)))
        }
        other => Err(ToolError::invalid_arguments(
            "search_documents",
            format!("scope type '{other}' is not one of global, collection, document"),
        )
        .retry_with(json!({ "scope": { "type": "global" } }))),
    }
}

fn scope_not_found(path: &str) -> ToolError {
    ToolError::new(
        "SCOPE_NOT_FOUND",
        format!("Scope not found: {path}"),
        "Check the path: list_collections() shows the collections, find_document() finds documents by name",
    )
    .details(json!({ "path": path }))
}

pub(super) fn filter_failed(path: &str, why: &str) -> ToolError {
    ToolError::new(
        "FILTER_FAILED",
        format!("The text of '{path}' could not be extracted: {why}"),
        "quarry records the error (index_status() lists it) and re-reads the file when it changes; get_document_info() shows what else is known",
    )
    .details(json!({ "path": path, "error": why }))
}

struct QueryResult {
    matches: Vec<Value>,
    total_matches: usize,
    truncated: bool,
    documents_matched: usize,
}

/// Runs a query; the matches shown are the hits after the first `offset`.
fn run_query(
    ctx: &Context,
    job: &Job,
    text: &str,
    scope: &Scope,
    options: &SearchOptions,
    context: usize,
    offset: usize,
) -> Result<QueryResult, ToolError> {
    let expr = query::parse(text).map_err(|e| invalid_query(text, &e.0))?;
    let outcome = ctx
        .catalog
        .search_documents(&expr, scope, options, job)
        .map_err(|e| match e {
            SearchError::Stopped => ToolError::stopped(job),
            SearchError::Timeout => ToolError::new(
                "SEARCH_TIMEOUT",
                format!("the search for '{text}' took longer than allowed"),
                "Reduce the scope (search_documents with a collection or document scope) or use rarer terms",
            ),
            SearchError::Failed(e) => ToolError::internal(format!("{e:#}")),
        })?;
    let hits = &outcome.hits[offset.min(outcome.hits.len())..];
    let matches = show(ctx, hits, context).map_err(ToolError::internal)?;
    Ok(QueryResult {
        truncated: outcome.total_matches > offset + matches.len(),
        matches,
        total_matches: outcome.total_matches,
        documents_matched: outcome.documents_matched,
    })
}

fn invalid_query(query: &str, why: &str) -> ToolError {
    ToolError::new(
        "INVALID_QUERY",
        format!("Malformed search query '{query}': {why}"),
        "Retry search_documents with space for AND, | for OR, -term for NOT, \"...\" for a phrase and balanced parentheses, e.g. (pedestal|gain) drift -led",
    )
    .details(json!({ "query": query, "reason": why }))
}

/// The matches as the spec shows them: each line with its context, read from
/// the stored text (each document's blocks decompressed once).
fn show(ctx: &Context, hits: &[DocumentHit], context: usize) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::with_capacity(hits.len());
    // Hits come grouped by document (in path order).
    for group in hits.chunk_by(|a, b| a.file_id == b.file_id) {
        let id = group[0].file_id;
        // A document changed since the search has no rows left: skip its hits.
        let Some(meta) = ctx.catalog.document_meta(id)? else {
            continue;
        };
        let mut reader = ctx.catalog.document_text_reader(id, &meta);
        for hit in group {
            let c = context as u32;
            let from = hit.line.saturating_sub(c).max(1);
            let lines = reader.lines(from, hit.line + c)?;
            let before = (hit.line - from) as usize;
            let Some(text) = lines.get(before) else {
                continue;
            };
            let mut m = json!({
                "document": tool_path_of_catalog_path(ctx, &hit.path),
                "line": hit.line,
                "text": clip(text),
                "context_before": lines[..before].iter().map(|l| clip(l)).collect::<Vec<_>>(),
                "context_after": lines[before + 1..].iter().map(|l| clip(l)).collect::<Vec<_>>(),
            });
            if meta.format == "pdf"
                && let Some(page) = page_of_line(&meta, hit.line)
            {
                m["page"] = json!(page);
            }
            out.push(m);
        }
    }
    Ok(out)
}

/// A line as shown: without a carriage return, at most `MAX_LINE_CHARS`.
fn clip(line: &str) -> String {
    let line = line.strip_suffix('\r').unwrap_or(line);
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

fn search_suggestions(ctx: &Context, query: &str, result: &QueryResult) -> Vec<String> {
    let mut s = Vec::new();
    if let Some(first) = result.matches.first() {
        let doc = first["document"].as_str().unwrap_or_default();
        match first.get("page") {
            Some(page) => s.push(format!(
                "Read the page with read_document(path='{doc}', pages=[{page}])"
            )),
            None => s.push(format!(
                "See the structure of '{doc}' with get_document_info(path='{doc}')"
            )),
        }
    }
    if result.truncated {
        s.push(format!(
            "{} lines match in all: narrow the scope or the query, or page on with offset",
            result.total_matches
        ));
    }
    if result.total_matches == 0 {
        s.push(format!(
            "No line matches '{query}': try fuzzy=true, fewer terms, or '|' between alternatives; find_document() searches file names"
        ));
    }
    let pending: u64 = (0..ctx.catalog.roots().list().len())
        .map(|r| ctx.catalog.activity().pending(r, Kind::Document))
        .sum();
    if pending > 0 {
        s.push(format!(
            "{pending} documents are waiting to be indexed: results may be incomplete, see index_status()"
        ));
    }
    s
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MultipleArgs {
    queries: Vec<String>,
    scope: ScopeArg,
    context_lines: Option<i64>,
    max_results_per_query: Option<i64>,
    offsets: Option<Map<String, Value>>,
}

/// Each query's offset from the `offsets` argument (0 for a query not named).
fn query_offsets(
    tool: &str,
    queries: &[String],
    offsets: Option<&Map<String, Value>>,
) -> Result<std::collections::HashMap<String, usize>, ToolError> {
    let mut out = std::collections::HashMap::new();
    for (query, value) in offsets.into_iter().flatten() {
        if !queries.contains(query) {
            return Err(ToolError::invalid_arguments(
                tool,
                format!("offsets names '{query}', which is not one of the queries"),
            ));
        }
        let offset = checked_offset(tool, &format!("offsets['{query}']"), value.as_i64())
            .and_then(|n| match value.is_i64() {
                true => Ok(n),
                false => Err(ToolError::invalid_arguments(
                    tool,
                    format!("offsets['{query}'] must be a whole number, got {value}"),
                )),
            })?;
        out.insert(query.clone(), offset);
    }
    Ok(out)
}

/// A JSON pointer token for an object key (RFC 6901).
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

pub fn search_multiple(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "search_multiple";
    let started = Instant::now();
    let args: MultipleArgs = parse_args(tool, args)?;
    if args.queries.is_empty() || args.queries.len() > MAX_QUERIES {
        return Err(ToolError::invalid_arguments(
            tool,
            format!(
                "queries holds {} queries; give 1 to {MAX_QUERIES}",
                args.queries.len()
            ),
        ));
    }
    let (context, max_results) = result_bounds(
        tool,
        args.context_lines,
        ("max_results_per_query", args.max_results_per_query),
    )?;
    // A scope that does not exist fails every query alike: it is the call's error.
    let scope = resolve_scope(ctx, &args.scope)?;
    let options = SearchOptions {
        max_results,
        fuzzy: false,
        deadline: Some(deadline(ctx)),
    };
    let offsets = query_offsets(tool, &args.queries, args.offsets.as_ref())?;
    let mut distinct = args.queries.clone();
    distinct.sort();
    distinct.dedup();
    let answers: Vec<(String, Result<QueryResult, ToolError>)> = distinct
        .into_par_iter()
        .map(|q| {
            let offset = offsets.get(&q).copied().unwrap_or(0);
            let options = SearchOptions {
                max_results: offset.saturating_add(max_results),
                ..options.clone()
            };
            let r = run_query(ctx, job, &q, &scope, &options, context, offset);
            (q, r)
        })
        .collect();
    let mut results = Map::new();
    let (mut completed, mut failed) = (0, 0);
    // (query, its offset, its total) in the order `results` shows them.
    let mut extents = Vec::new();
    for (q, answer) in answers {
        let offset = offsets.get(&q).copied().unwrap_or(0);
        let value = match answer {
            Ok(r) => {
                completed += 1;
                extents.push((q.clone(), offset, r.total_matches));
                json!({
                    "query": q,
                    "matches": r.matches,
                    "total_matches": r.total_matches,
                    "truncated": r.truncated,
                })
            }
            Err(e) => {
                failed += 1;
                extents.push((q.clone(), offset, 0));
                json!({
                    "query": q,
                    "matches": [],
                    "total_matches": 0,
                    "truncated": false,
                    "error": { "code": e.code, "message": e.message, "suggestion": e.suggestion },
                })
            }
        };
        results.insert(q, value);
    }
    let mut out = ToolOutput::new(json!({
        "results": results,
        "search_duration_ms": started.elapsed().as_millis() as u64,
        "queries_completed": completed,
        "queries_failed": failed,
    }));
    if failed > 0 {
        out = out.suggest("Some queries failed: see each one's error; fix its syntax and run it with search_documents()");
    }
    out = out.suggest("Look at a matching document with read_document(path=..., pages=[...]) or get_document_info(path=...)");
    // `results` is keyed by query, so its order is the queries' sorted order,
    // which the cut follows: earlier queries' matches first.
    extents.sort_by(|a, b| a.0.cmp(&b.0));
    let pointers: Vec<String> = extents
        .iter()
        .map(|(q, _, _)| format!("/results/{}/matches", pointer_token(q)))
        .collect();
    ctx.budget(tool)
        .cut_in_sequence(&mut out, &pointers, |o, kept, shortened| {
            mark_queries(o, &extents, kept, shortened)
        });
    Ok(out)
}

/// What a search_multiple answer says of its extent: each query's
/// `truncated`; when matches remain for any, `metadata.next_offsets` holds
/// every query's next offset (a finished query's total, so that passing it
/// back as `offsets` gives nothing twice) and `metadata.truncated` is true.
fn mark_queries(
    out: &mut ToolOutput,
    extents: &[(String, usize, usize)],
    kept: &[usize],
    shortened: bool,
) {
    let mut next_offsets = Map::new();
    let mut more = false;
    let last_kept = kept.iter().rposition(|&k| k > 0);
    for (i, ((q, offset, total), &k)) in extents.iter().zip(kept).enumerate() {
        let next = offset + k;
        more |= next < *total;
        next_offsets.insert(q.clone(), next.min(*total).max(*offset).into());
        let cut = Cut {
            kept: k,
            total: k,
            shortened: shortened && Some(i) == last_kept,
        };
        mark_search(
            out,
            cut,
            (next < *total).then_some(next),
            &format!("/results/{}", pointer_token(q)),
        );
    }
    budget::or_truncated(&mut out.metadata, more || shortened);
    if more {
        out.metadata
            .insert("next_offsets".into(), Value::Object(next_offsets));
        out.suggestions.push(
            "More matches: call search_multiple again with the same arguments and offsets=metadata.next_offsets"
                .into(),
        );
    }
}
