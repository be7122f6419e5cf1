//! list_datasets, rag_retrieve and retrieve_documents.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{dataset, engine, node_brief, node_uri};
use crate::job::Job;
use crate::mcp::budget::{Cut, mark_offset};
use crate::mcp::response::{ToolError, ToolOutput};
use crate::mcp::tools::{Context, checked_offset, parse_args};
use crate::rag::retrieve::{Hit, Mode, Options, retrieve};

/// Most hits one call returns.
const MAX_TOP_K: usize = 50;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    offset: Option<i64>,
}

pub fn list_datasets(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "list_datasets";
    let args: ListArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let rag = engine(ctx)?;
    let mut out = Vec::new();
    let names = rag.dataset_names();
    let remaining = names.len().saturating_sub(offset);
    for name in names.into_iter().skip(offset) {
        let ds = dataset(ctx, &name, job)?;
        let counters = rag.counters(&name);
        out.push(json!({
            "id": name,
            "name": name,
            "documents": ds.docs.len(),
            "nodes": ds.nodes.len(),
            "trees_built": counters.trees_built,
            "nodes_written": counters.nodes_written,
            "retrieval": if rag.model().is_some() && ds.has_vectors() { "hybrid" } else { "lexical" },
        }));
    }
    let mut data = json!({
        "datasets": out,
        "model": rag.model().map(|m| m.dir().display().to_string()),
        "llm": rag.llm().map(|l| l.model.clone()),
    });
    if let Some(e) = rag.model_error() {
        data["model_error"] = json!(e);
    }
    let mut out = ToolOutput::new(data);
    ctx.budget(tool)
        .page(&mut out, "/datasets", offset, remaining, "datasets");
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RetrieveArgs {
    pub dataset_id: String,
    pub query: String,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub top_k: Option<i64>,
    #[serde(default)]
    pub levels_cap: Option<i64>,
    #[serde(default)]
    pub expand_k: Option<i64>,
    #[serde(default)]
    pub reranker: Option<bool>,
    #[serde(default)]
    pub score_threshold: Option<f64>,
    #[serde(default)]
    pub temperature: Option<f64>,
    /// rag_retrieve: hits to skip; retrieve_documents: documents to skip.
    #[serde(default)]
    pub offset: Option<i64>,
}

/// The retrieval options of a call's arguments, checked.
pub(super) fn options(args: &RetrieveArgs, default_expand: usize) -> Result<Options, ToolError> {
    let mode = match args.mode.as_deref().unwrap_or("collapsed") {
        "collapsed" => Mode::Collapsed,
        "traversal" => Mode::Traversal,
        other => {
            return Err(ToolError::new(
                "invalid_arguments",
                format!("mode '{other}' is not 'collapsed' or 'traversal'"),
                "Use mode 'collapsed' (rank every node) or 'traversal' (descend from the top layer)",
            ));
        }
    };
    let count = |name: &str, v: Option<i64>, default: usize, max: usize| match v {
        None => Ok(default),
        Some(n) if (0..=max as i64).contains(&n) => Ok(n as usize),
        Some(n) => Err(ToolError::new(
            "invalid_arguments",
            format!("{name} {n} is outside 0..={max}"),
            format!("Use a {name} between 0 and {max}"),
        )),
    };
    if args.query.trim().is_empty() {
        return Err(ToolError::new(
            "invalid_arguments",
            "the query is empty",
            "Give a few words to search for",
        ));
    }
    Ok(Options {
        mode,
        top_k: count("top_k", args.top_k, 5, MAX_TOP_K)?,
        levels_cap: args
            .levels_cap
            .map(|_| count("levels_cap", args.levels_cap, 0, 6))
            .transpose()?,
        expand_k: count("expand_k", args.expand_k, default_expand, 20)?,
        score_threshold: args.score_threshold.map(|t| t as f32),
        query_vector: None,
    })
}

/// A hit for listings. rag_retrieve shows the node's text once, in its
/// `content` item, so its hits leave it out (`with_text` false); the leaves
/// listed under a summary (`expanded`) keep theirs.
fn hit_json(ds: &crate::rag::RagDataset, hit: &Hit, with_text: bool) -> Value {
    let mut v = node_brief(ds, hit.node, with_text);
    v["score"] = json!(round4(hit.score));
    if !hit.leaves.is_empty() {
        v["expanded"] = hit
            .leaves
            .iter()
            .map(|&(n, s)| {
                let mut b = node_brief(ds, n, true);
                b["score"] = json!(round4(s));
                b
            })
            .collect();
    }
    v
}

fn round4(x: f32) -> f64 {
    (f64::from(x) * 1e4).round() / 1e4
}

pub fn rag_retrieve(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "rag_retrieve";
    let args: RetrieveArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let mut options = options(&args, 0)?;
    let top_k = options.top_k;
    // The hits after `offset` are ranked as the first `offset + top_k` are.
    options.top_k = top_k.saturating_add(offset);
    let ds = dataset(ctx, &args.dataset_id, job)?;
    options.query_vector = engine(ctx)?.query_vector(&ds, &args.query);
    let ranked = retrieve(&ds, &args.query, &options, job).map_err(|_| ToolError::stopped(job))?;
    let hits = &ranked[offset.min(ranked.len())..];
    let content: Vec<Value> = hits
        .iter()
        .map(|h| {
            json!({
                "type": "resource",
                "resource": {
                    "uri": node_uri(&ds, h.node),
                    "mimeType": "text/plain",
                    "text": ds.nodes[h.node].text,
                    "metadata": {
                        "score": round4(h.score),
                        "chunk_id": ds.node_id(h.node),
                        "doc_id": ds.document_of(h.node),
                    }
                }
            })
        })
        .collect();
    let hit_values: Vec<Value> = hits.iter().map(|h| hit_json(&ds, h, false)).collect();
    let mut out = ToolOutput::new(json!({
        "dataset_id": ds.name,
        "query": args.query,
        "mode": if options.mode == Mode::Collapsed { "collapsed" } else { "traversal" },
        "score": options.scoring(),
        "retrieval": if options.query_vector.is_some() { "hybrid" } else { "lexical" },
        "reranker": { "requested": args.reranker.unwrap_or(false), "applied": false },
        "content": content,
        "hits": hit_values,
    }));
    if hits.is_empty() && offset == 0 {
        out = out.suggest(
            "No node matches these words: try other words, or search_documents for exact text",
        );
    }
    // A content item and the hit of the same node go together.
    ctx.budget(tool)
        .cut_together(&mut out, &[("/content", 0), ("/hits", 0)], |o, cut| {
            mark_offset(o, cut, offset, tool, "hits");
        });
    Ok(out)
}

pub fn retrieve_documents(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "retrieve_documents";
    let args: RetrieveArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let mut options = options(&args, 3)?;
    let top_documents = options.top_k;
    options.top_k = MAX_TOP_K;
    let ds = dataset(ctx, &args.dataset_id, job)?;
    options.query_vector = engine(ctx)?.query_vector(&ds, &args.query);
    let hits = retrieve(&ds, &args.query, &options, job).map_err(|_| ToolError::stopped(job))?;
    // Documents in the order of their best node; the first `offset` are
    // skipped, then `top_k` are shown.
    let mut documents: Vec<(String, f32, Vec<Value>)> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    // A document's first node is always kept, further nodes only while the
    // nodes stay under the budget (the rest are counted in nodes_left_out).
    let cap = ctx.budget(tool).cap;
    let (mut bytes, mut nodes_left_out) = (0, 0);
    for h in &hits {
        let Some(doc) = ds.document_of(h.node) else {
            continue;
        };
        let rank = match seen.iter().position(|d| *d == doc) {
            Some(r) => r,
            None => {
                seen.push(doc);
                seen.len() - 1
            }
        };
        if rank < offset || rank >= offset.saturating_add(top_documents) {
            continue;
        }
        let node = hit_json(&ds, h, true);
        let size = crate::mcp::budget::json_len(&node);
        match documents.iter().position(|d| d.0 == doc) {
            Some(_) if bytes + size > cap => nodes_left_out += 1,
            Some(i) => {
                bytes += size;
                documents[i].2.push(node);
            }
            None => {
                bytes += size;
                documents.push((doc.to_string(), h.score, vec![node]));
            }
        }
    }
    let ranked_documents = seen.len();
    let documents: Vec<Value> = documents
        .into_iter()
        .map(|(doc, score, nodes)| json!({ "document": doc, "score": round4(score), "nodes": nodes }))
        .collect();
    let mut out = ToolOutput::new(json!({ "dataset_id": ds.name, "query": args.query,
        "score": options.scoring(), "documents": documents, "truncated": nodes_left_out > 0 }));
    if nodes_left_out > 0 {
        out = out
            .meta("nodes_left_out", nodes_left_out)
            .meta("truncated", true)
            .suggest(format!(
                "{nodes_left_out} more matching node(s) were left out to fit max_result_bytes: \
lower expand_k or top_k, or read a node with rag_node_get(node_id)"
            ));
    }
    // Documents ranked past the ones shown (by top_k or by the cut) are
    // reached with next_offset.
    let remaining = ranked_documents.saturating_sub(offset);
    ctx.budget(tool).cut_list(&mut out, "/documents", |o, cut| {
        let cut = Cut {
            total: remaining.max(cut.kept),
            ..cut
        };
        if cut.truncated() {
            crate::mcp::budget::set(&mut o.data, "truncated", true);
        }
        mark_offset(o, cut, offset, tool, "documents");
    });
    Ok(out)
}
