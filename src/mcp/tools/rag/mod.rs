//! The RAPTOR tool family (raptor spec) over the RAG engine (`crate::rag`):
//! datasets and retrieval (retrieve.rs), answers and summaries (answer.rs),
//! navigation (navigate.rs); `raptor://` resources are read by
//! `crate::mcp::resources::raptor`. Results are JSON in
//! structuredContent, never Python-style dict strings.

mod answer;
mod ingest;
mod navigate;
mod retrieve;
mod session;

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Context, Effects, ToolDef, Toolset};
use crate::job::{Job, Stop};
use crate::mcp::response::ToolError;
use crate::rag::{Rag, RagDataset};

macro_rules! rag_tool {
    ($name:literal, $title:literal, $description:literal, $handler:path) => {
        ToolDef {
            name: $name,
            title: $title,
            toolset: Toolset::Rag,
            description: $description,
            input_schema: include_str!(concat!("../../../../schema/tools/", $name, ".input.json")),
            output_schema: include_str!(concat!(
                "../../../../schema/tools/",
                $name,
                ".output.json"
            )),
            effects: Effects::READS,
            handler: $handler,
        }
    };
}

/// A new file each call (a session, an ingested document named by time and
/// content), nothing replaced.
const ADDS_A_FILE: Effects = Effects {
    read_only: false,
    destructive: false,
    idempotent: false,
    asks_llm: false,
};

pub static TOOLS: &[ToolDef] = &[
    rag_tool!(
        "list_datasets",
        "List RAG datasets",
        "The RAG datasets (one per root, its documents as RAPTOR trees), with document and node counts.",
        retrieve::list_datasets
    ),
    ToolDef {
        effects: ADDS_A_FILE,
        ..rag_tool!(
            "create_chat_session",
            "Create a chat session",
            "A chat session over a dataset; answer_question with its session_id records each question.",
            session::create_chat_session
        )
    },
    ToolDef {
        effects: ADDS_A_FILE,
        ..rag_tool!(
            "ingest_document",
            "Ingest a document",
            "Adds text to a dataset (created on first use) as a Markdown file in the ingest folder, searchable within a \
second. Needs [rag] ingest_dir.",
            ingest::ingest_document
        )
    },
    rag_tool!(
        "rag_retrieve",
        "Retrieve RAPTOR tree nodes",
        "Ranks a dataset's tree nodes (chunks, summaries) against a query by BM25: hits with id, uri, score, level, \
document, page, text.",
        retrieve::rag_retrieve
    ),
    rag_tool!(
        "retrieve_documents",
        "Retrieve documents",
        "The documents of a dataset that best answer a query, ranked by their best RAPTOR node, with those nodes.",
        retrieve::retrieve_documents
    ),
    ToolDef {
        // With session_id the question is appended to the session's file; with
        // an [llm] model the question and its sources are sent to it.
        effects: Effects {
            read_only: false,
            destructive: false,
            idempotent: false,
            asks_llm: true,
        },
        ..rag_tool!(
            "answer_question",
            "Answer a question from a dataset",
            "Answers from the best nodes: extractive (sentences quoted with node ids and sources), or with an [llm] model \
its answer citing numbered sources (extractive with llm_error if it fails).",
            answer::answer_question
        )
    },
    ToolDef {
        // Writes nothing; with an [llm] model the nodes are sent to it.
        effects: Effects {
            asks_llm: true,
            ..Effects::READS
        },
        ..rag_tool!(
            "rag_summarize",
            "Summarise nodes",
            "A summary of nodes: extractive (central, diverse sentences, about 100 tokens, with sources), or abstractive \
with an [llm] model.",
            answer::rag_summarize
        )
    },
    rag_tool!(
        "rag_node_get",
        "Get a tree node",
        "A RAPTOR node: text, level, kind (leaf or summary), document, sources, children count, parents.",
        navigate::rag_node_get
    ),
    rag_tool!(
        "rag_node_children",
        "List a node's children",
        "The child nodes of a RAPTOR node (empty for a leaf chunk).",
        navigate::rag_node_children
    ),
    rag_tool!(
        "rag_node_navigation",
        "Navigate from a node",
        "'parent': the node's parents (several when clustered into several); 'siblings': its parents' other children.",
        navigate::rag_node_navigation
    ),
    rag_tool!(
        "rag_path_to_root",
        "Path to the root",
        "The nodes from a node up to a root of its dataset's tree, following each node's first parent.",
        navigate::rag_path_to_root
    ),
];

fn engine(ctx: &Context) -> Result<&Arc<Rag>, ToolError> {
    ctx.rag.as_ref().ok_or_else(|| {
        ToolError::new(
            "rag_unavailable",
            "this quarry runs no RAG engine",
            "Use the documents tools (search_documents) instead",
        )
    })
}

/// The dataset named `id`, or `dataset_not_found` naming list_datasets; a view
/// built for the call stops when `job` does.
fn dataset(ctx: &Context, id: &str, job: &Job) -> Result<Arc<RagDataset>, ToolError> {
    let rag = engine(ctx)?;
    if !rag.has_dataset(id) {
        return Err(ToolError::new(
            "dataset_not_found",
            format!("no dataset named '{id}'"),
            "Call list_datasets for the valid dataset ids (ingest_document creates one)",
        ));
    }
    rag.dataset_within(id, Some(job))
        .map_err(|e| stopped_or_internal(e, job))
}

/// A stop of the engine as the call's `cancelled` or `timeout` error; any other
/// failure is internal.
fn stopped_or_internal(e: anyhow::Error, job: &Job) -> ToolError {
    if e.downcast_ref::<Stop>().is_some() {
        ToolError::stopped(job)
    } else {
        ToolError::internal(e)
    }
}

/// The node with public id `id`, or `node_not_found` naming the tools that
/// list node ids.
fn node(ctx: &Context, id: &str) -> Result<(Arc<RagDataset>, usize), ToolError> {
    engine(ctx)?
        .find_node(id)
        .map_err(ToolError::internal)?
        .ok_or_else(|| {
            ToolError::new(
                "node_not_found",
                format!("no node with id '{id}'"),
                "Node ids come from rag_retrieve, rag_node_children or rag_path_to_root; call rag_retrieve first",
            )
        })
}

pub use crate::mcp::resources::raptor::node_uri;

/// A node's summary for listings: id, uri, level, kind, document, first
/// source, tokens, and optionally its text.
fn node_brief(ds: &RagDataset, i: usize, with_text: bool) -> Value {
    let n = &ds.nodes[i];
    let first = n.pieces.first();
    let mut v = json!({
        "id": ds.node_id(i),
        "uri": node_uri(ds, i),
        "level": n.level,
        "kind": if n.is_leaf() { "leaf" } else { "summary" },
        "document": first.and_then(|p| ds.document_path(p.doc)),
        "page": first.map(|p| p.page),
        "line": first.map(|p| p.line),
        "tokens": n.tokens,
        "children_count": n.children.len(),
    });
    if with_text {
        v["text"] = json!(n.text);
    }
    v
}

/// A node's sentences with their sources.
fn sources(ds: &RagDataset, i: usize) -> Value {
    let n = &ds.nodes[i];
    n.pieces
        .iter()
        .map(|p| {
            json!({
                "text": n.piece_text(p),
                "document": ds.document_path(p.doc),
                "page": p.page,
                "line": p.line,
                "end_line": p.end_line,
            })
        })
        .collect()
}
