//! answer_question and rag_summarize: extractive, quoting the sources.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::retrieve::{RetrieveArgs, options};
use super::{dataset, node};
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};
use crate::mcp::tools::{Context, parse_args};
use crate::rag::answer::evidence;
use crate::rag::retrieve::retrieve;
use crate::rag::summary::{SUMMARY_TOKENS, summarise};

pub fn answer_question(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: RetrieveArgs = parse_args("answer_question", args)?;
    let options = options(&args, 3)?;
    let ds = dataset(ctx, &args.dataset_id)?;
    let hits = retrieve(&ds, &args.query, &options);
    let found = evidence(&ds, &args.query, &hits);
    let answer = found
        .iter()
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let evidence: Vec<Value> = found
        .iter()
        .map(|e| {
            json!({
                "text": e.text,
                "node_id": ds.node_id(e.node),
                "uri": super::node_uri(&ds, e.node),
                "document": ds.document_path(e.doc),
                "page": e.page,
                "line": e.line,
            })
        })
        .collect();
    let mut out = ToolOutput::new(json!({
        "dataset_id": ds.name,
        "query": args.query,
        "mode": "extractive",
        "answer": answer,
        "evidence": evidence,
        "temperature": args.temperature,
        "temperature_applied": false,
    }));
    if found.is_empty() {
        out = out.suggest("No sentence matches the question's words: rephrase, or use rag_retrieve / search_documents");
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SummarizeArgs {
    node_ids: Vec<String>,
}

pub fn rag_summarize(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: SummarizeArgs = parse_args("rag_summarize", args)?;
    if args.node_ids.is_empty() || args.node_ids.len() > 50 {
        return Err(ToolError::new(
            "invalid_arguments",
            format!(
                "{} node ids given; 1 to 50 are summarised",
                args.node_ids.len()
            ),
            "Pass the ids of 1 to 50 nodes from rag_retrieve",
        ));
    }
    let mut found = Vec::new();
    for id in &args.node_ids {
        found.push(node(ctx, id)?);
    }
    let ds = found[0].0.clone();
    if found.iter().any(|(d, _)| d.name != ds.name) {
        return Err(ToolError::new(
            "invalid_arguments",
            "the nodes belong to different datasets",
            "Summarise nodes of one dataset at a time",
        ));
    }
    let nodes: Vec<&crate::rag::tree::Node> = found.iter().map(|(_, i)| &ds.nodes[*i]).collect();
    let summary = summarise(&nodes, SUMMARY_TOKENS);
    let sentences: Vec<Value> = summary
        .pieces
        .iter()
        .map(|p| {
            json!({
                "text": summary.piece_text(p),
                "document": ds.document_path(p.doc),
                "page": p.page,
                "line": p.line,
            })
        })
        .collect();
    Ok(ToolOutput::new(json!({
        "dataset_id": ds.name,
        "node_ids": args.node_ids,
        "mode": "extractive",
        "summary": summary.text,
        "sentences": sentences,
    })))
}
