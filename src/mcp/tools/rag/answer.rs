//! answer_question and rag_summarize: extractive by default, quoting the
//! sources; abstractive through the `[llm]` model when one is configured, with
//! the extractive result (and a note) when the model fails.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::retrieve::{RetrieveArgs, options};
use super::session::session_error;
use super::{dataset, engine, node};
use crate::job::Job;
use crate::mcp::budget::Budget;
use crate::mcp::response::{ToolError, ToolOutput};
use crate::mcp::tools::{Context, checked_offset, parse_args};
use crate::rag::RagDataset;
use crate::rag::answer::evidence;
use crate::rag::llm::{LlmConfig, LlmError, Prompt, Source, answer_prompt, summary_prompt};
use crate::rag::retrieve::retrieve;
use crate::rag::summary::{SUMMARY_TOKENS, summarise};

/// The spec's default temperature.
const DEFAULT_TEMPERATURE: f64 = 0.7;

/// A source's label for the model: document, page and line.
fn label(ds: &RagDataset, i: usize) -> String {
    let n = &ds.nodes[i];
    match n.pieces.first() {
        Some(p) => format!(
            "{} p.{} l.{}",
            ds.document_path(p.doc).unwrap_or("?"),
            p.page,
            p.line
        ),
        None => ds.node_id(i),
    }
}

/// The numbered sources shown to the model and returned beside its text.
fn sources_json(ds: &RagDataset, nodes: &[usize]) -> Vec<Value> {
    nodes
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let first = ds.nodes[i].pieces.first();
            json!({
                "n": k + 1,
                "node_id": ds.node_id(i),
                "uri": super::node_uri(ds, i),
                "document": first.and_then(|p| ds.document_path(p.doc)),
                "page": first.map(|p| p.page),
                "line": first.map(|p| p.line),
                "text": ds.nodes[i].text,
            })
        })
        .collect()
}

/// Asks the model when one is configured: `Some(Ok(text))`, `Some(Err(_))`
/// when it failed, `None` without a model.
fn ask(
    llm: Option<&LlmConfig>,
    prompt: impl FnOnce() -> Prompt,
    temperature: f64,
    job: &Job,
) -> Option<Result<String, LlmError>> {
    llm.map(|l| l.complete(&prompt(), temperature, job))
}

fn temperature(t: Option<f64>) -> Result<f64, ToolError> {
    match t {
        None => Ok(DEFAULT_TEMPERATURE),
        Some(t) if (0.0..=2.0).contains(&t) => Ok(t),
        Some(t) => Err(ToolError::new(
            "invalid_arguments",
            format!("temperature {t} is outside 0..=2"),
            "Use a temperature between 0 and 2 (0.7 by default)",
        )),
    }
}

fn fallback_note(e: &LlmError) -> String {
    format!("The LLM failed ({e}); this answer is extractive: quoted sentences of the sources")
}

pub fn answer_question(
    ctx: &Context,
    job: &Job,
    mut args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let session_id = match args.remove("session_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Err(ToolError::new(
                "invalid_arguments",
                format!("session_id must be a string, not {other}"),
                "Pass the session_id create_chat_session returned",
            ));
        }
    };
    let args: RetrieveArgs = parse_args("answer_question", args)?;
    let mut options = options(&args, 3)?;
    let temperature = temperature(args.temperature)?;
    let ds = dataset(ctx, &args.dataset_id, job)?;
    let rag = engine(ctx)?;
    options.query_vector = rag.query_vector(&ds, &args.query);
    if let Some(id) = &session_id {
        let session = rag.sessions().get(id).map_err(session_error)?;
        if session.dataset_id != ds.name {
            return Err(ToolError::new(
                "invalid_arguments",
                format!(
                    "session '{id}' is about dataset '{}', not '{}'",
                    session.dataset_id, ds.name
                ),
                format!(
                    "Ask with dataset_id '{}', or create_chat_session for '{}'",
                    session.dataset_id, ds.name
                ),
            ));
        }
    }
    let stopped = |_| ToolError::stopped(job);
    let hits = retrieve(&ds, &args.query, &options, job).map_err(stopped)?;
    let mut found = evidence(&ds, &args.query, &hits, job).map_err(stopped)?;
    // `offset` skips evidence sentences (a cut answer's next_offset).
    let offset = checked_offset("answer_question", "offset", args.offset)?;
    let found_total = found.len();
    found.drain(..offset.min(found.len()));
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
    let extractive = found
        .iter()
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let source_nodes: Vec<usize> = hits.iter().map(|h| h.node).collect();
    let llm = if source_nodes.is_empty() {
        None // nothing to ground an answer on: the model is not asked
    } else {
        ask(
            rag.llm(),
            || {
                let sources: Vec<Source> = source_nodes
                    .iter()
                    .map(|&i| Source {
                        label: label(&ds, i),
                        text: &ds.nodes[i].text,
                    })
                    .collect();
                answer_prompt(&args.query, &sources)
            },
            temperature,
            job,
        )
    };
    // A call stopped meanwhile (the model's wait included) records nothing.
    job.check().map_err(stopped)?;
    let mut data = json!({
        "dataset_id": ds.name,
        "query": args.query,
        "evidence": evidence,
        "temperature": temperature,
    });
    let mut suggestions = Vec::new();
    match llm {
        Some(Ok(text)) => {
            data["mode"] = json!("abstractive");
            data["answer"] = json!(text);
            data["model"] = json!(rag.llm().map(|l| l.model.clone()));
            data["temperature_applied"] = json!(true);
            data["sources"] = json!(sources_json(&ds, &source_nodes));
        }
        other => {
            data["mode"] = json!("extractive");
            data["answer"] = json!(extractive);
            data["temperature_applied"] = json!(false);
            if let Some(Err(e)) = other {
                data["llm_error"] = json!(e.to_string());
                suggestions.push(fallback_note(&e));
            }
        }
    }
    if let Some(id) = &session_id {
        let mode = data["mode"].as_str().unwrap_or("extractive");
        let asked = rag
            .sessions()
            .record(id, &args.query, mode)
            .map_err(session_error)?;
        data["session_id"] = json!(id);
        data["session_questions"] = json!(asked);
    }
    let mut out = ToolOutput::new(data);
    if found_total == 0 {
        out = out.suggest("No sentence matches the question's words: rephrase, or use rag_retrieve / search_documents");
    }
    for s in suggestions {
        out = out.suggest(s);
    }
    let budget = ctx.budget("answer_question");
    without_source_texts(&budget, &mut out, "/evidence");
    let extractive = out.data["mode"] == "extractive";
    let texts: Vec<&str> = found.iter().map(|e| e.text.as_str()).collect();
    let remaining = texts.len();
    budget.cut_list(&mut out, "/evidence", |o, cut| {
        // An extractive answer is the evidence shown, joined.
        if extractive {
            o.data["answer"] = json!(texts[..cut.kept].join(" "));
        }
        let cut = crate::mcp::budget::Cut {
            total: remaining.max(cut.kept),
            ..cut
        };
        crate::mcp::budget::mark_offset(o, cut, offset, "answer_question", "evidence sentences");
    });
    Ok(out)
}

/// An abstractive answer's `sources` lose their texts, last first, until the
/// answer would fit with its list at `list` empty: each keeps its node_id,
/// which rag_node_get reads.
fn without_source_texts(budget: &Budget, out: &mut ToolOutput, list: &str) {
    let Some(Value::Array(sources)) = out.data.get("sources") else {
        return;
    };
    let mut left = sources.len();
    let saved = out.data.pointer_mut(list).map(std::mem::take);
    let mut dropped = false;
    while !budget.fits(out) && left > 0 {
        left -= 1;
        if let Some(Value::Object(source)) = out.data["sources"].get_mut(left) {
            dropped |= source.remove("text").is_some();
        }
    }
    if let (Some(saved), Some(slot)) = (saved, out.data.pointer_mut(list)) {
        *slot = saved;
    }
    if dropped {
        out.metadata.insert("truncated".into(), true.into());
        out.suggestions.push(
            "Some sources are shown without their text to fit max_result_bytes: rag_node_get(node_id) reads one"
                .into(),
        );
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SummarizeArgs {
    node_ids: Vec<String>,
    #[serde(default)]
    temperature: Option<f64>,
}

pub fn rag_summarize(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: SummarizeArgs = parse_args("rag_summarize", args)?;
    let temperature = temperature(args.temperature)?;
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
    let indices: Vec<usize> = found.iter().map(|(_, i)| *i).collect();
    let nodes: Vec<&crate::rag::tree::Node> = indices.iter().map(|&i| &ds.nodes[i]).collect();
    let summary = summarise(&nodes, SUMMARY_TOKENS, job).map_err(|_| ToolError::stopped(job))?;
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
    let rag = engine(ctx)?;
    let llm = ask(
        rag.llm(),
        || {
            let sources: Vec<Source> = indices
                .iter()
                .map(|&i| Source {
                    label: label(&ds, i),
                    text: &ds.nodes[i].text,
                })
                .collect();
            summary_prompt(&sources)
        },
        temperature,
        job,
    );
    let mut data = json!({
        "dataset_id": ds.name,
        "node_ids": args.node_ids,
        "sentences": sentences,
    });
    let mut out_suggestions = Vec::new();
    match llm {
        Some(Ok(text)) => {
            data["mode"] = json!("abstractive");
            data["summary"] = json!(text);
            data["model"] = json!(rag.llm().map(|l| l.model.clone()));
            data["temperature"] = json!(temperature);
            data["sources"] = json!(sources_json(&ds, &indices));
        }
        other => {
            data["mode"] = json!("extractive");
            data["summary"] = json!(summary.text);
            if let Some(Err(e)) = other {
                data["llm_error"] = json!(e.to_string());
                out_suggestions.push(fallback_note(&e));
            }
        }
    }
    let mut out = ToolOutput::new(data);
    for s in out_suggestions {
        out = out.suggest(s);
    }
    // The summary is about 100 tokens; the sources given to the model and
    // the sentences are what can grow.
    let budget = ctx.budget("rag_summarize");
    without_source_texts(&budget, &mut out, "/sentences");
    budget.cut_list(&mut out, "/sentences", |o, cut| {
        if cut.truncated() {
            o.metadata.insert("truncated".into(), true.into());
            o.metadata
                .insert("sentences_total".into(), cut.total.into());
        }
    });
    Ok(out)
}
