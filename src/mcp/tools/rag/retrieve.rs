//! list_datasets, rag_retrieve and retrieve_documents.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{dataset, engine, node_brief, node_uri};
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};
use crate::mcp::tools::{Context, parse_args};
use crate::rag::retrieve::{Hit, Mode, Options, retrieve};

/// Most hits one call returns.
const MAX_TOP_K: usize = 50;

pub fn list_datasets(
    ctx: &Context,
    _job: &Job,
    _args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let rag = engine(ctx)?;
    let mut out = Vec::new();
    for name in rag.dataset_names() {
        let ds = rag.dataset(&name).map_err(ToolError::internal)?;
        let counters = rag.counters(&name);
        out.push(json!({
            "id": name,
            "name": name,
            "documents": ds.docs.len(),
            "nodes": ds.nodes.len(),
            "trees_built": counters.trees_built,
            "nodes_written": counters.nodes_written,
        }));
    }
    Ok(ToolOutput::new(json!({ "datasets": out })))
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
    })
}

fn hit_json(ds: &crate::rag::Dataset, hit: &Hit) -> Value {
    let mut v = node_brief(ds, hit.node, true);
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
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: RetrieveArgs = parse_args("rag_retrieve", args)?;
    let options = options(&args, 0)?;
    let ds = dataset(ctx, &args.dataset_id)?;
    let hits = retrieve(&ds, &args.query, &options);
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
    let hit_values: Vec<Value> = hits.iter().map(|h| hit_json(&ds, h)).collect();
    let mut out = ToolOutput::new(json!({
        "dataset_id": ds.name,
        "query": args.query,
        "mode": if options.mode == Mode::Collapsed { "collapsed" } else { "traversal" },
        "score": "bm25",
        "reranker": { "requested": args.reranker.unwrap_or(false), "applied": false },
        "content": content,
        "hits": hit_values,
    }));
    if hits.is_empty() {
        out = out.suggest(
            "No node matches these words: try other words, or search_documents for exact text",
        );
    }
    Ok(out)
}

pub fn retrieve_documents(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: RetrieveArgs = parse_args("retrieve_documents", args)?;
    let mut options = options(&args, 3)?;
    let top_documents = options.top_k;
    options.top_k = MAX_TOP_K;
    let ds = dataset(ctx, &args.dataset_id)?;
    let hits = retrieve(&ds, &args.query, &options);
    let mut documents: Vec<(String, f32, Vec<Value>)> = Vec::new();
    for h in &hits {
        let Some(doc) = ds.document_of(h.node) else {
            continue;
        };
        if let Some(d) = documents.iter_mut().find(|d| d.0 == doc) {
            d.2.push(hit_json(&ds, h));
        } else if documents.len() < top_documents {
            documents.push((doc.to_string(), h.score, vec![hit_json(&ds, h)]));
        }
    }
    let documents: Vec<Value> = documents
        .into_iter()
        .map(|(doc, score, nodes)| json!({ "document": doc, "score": round4(score), "nodes": nodes }))
        .collect();
    Ok(ToolOutput::new(
        json!({ "dataset_id": ds.name, "query": args.query, "documents": documents }),
    ))
}
