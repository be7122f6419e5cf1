//! ingest_document: the text becomes a Markdown file (front matter with
//! `source` and `tags`) in the ingest folder's folder of the dataset, written
//! beneath it; the watcher indexes it like any root's file and the RAG pass
//! builds its tree. The catalog stays a cache: a rebuild re-reads the file.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::engine;
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};
use crate::mcp::tools::{Context, parse_args};

/// Largest text one call ingests.
const MAX_INGEST_BYTES: usize = 16 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IngestArgs {
    dataset_id: String,
    file_content: String,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    tags: Option<Vec<String>>,
}

/// A dataset id usable as a folder name.
fn valid_dataset_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

pub fn ingest_document(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: IngestArgs = parse_args("ingest_document", args)?;
    engine(ctx)?;
    let Some(dir) = &ctx.settings.ingest_dir else {
        return Err(ToolError::new(
            "ingest_disabled",
            "no ingest folder is configured",
            "Set [rag] ingest_dir in the config file; the roots' documents are already datasets (list_datasets)",
        ));
    };
    if !valid_dataset_id(&args.dataset_id) {
        return Err(ToolError::new(
            "invalid_arguments",
            format!("dataset_id '{}' is not a usable name", args.dataset_id),
            "Use 1 to 64 letters, digits, '_', '-' or '.', not starting with '.'",
        ));
    }
    if args.file_content.trim().is_empty() || args.file_content.len() > MAX_INGEST_BYTES {
        return Err(ToolError::new(
            "invalid_arguments",
            format!(
                "file_content has {} bytes; 1 to {MAX_INGEST_BYTES} are ingested",
                args.file_content.len()
            ),
            "Pass the document's text (split a larger one)",
        ));
    }
    let front = json!({ "source": args.source, "tags": args.tags.clone().unwrap_or_default() });
    // JSON values are YAML flow values, so the front matter is valid YAML.
    let text = format!(
        "---\nsource: {}\ntags: {}\n---\n\n{}\n",
        front["source"], front["tags"], args.file_content
    );
    let digest = xxhash_rust::xxh64::xxh64(text.as_bytes(), 0);
    let name = format!("{}-{digest:016x}.md", crate::indexing::now_ms());
    crate::roots::create_beneath(dir, &args.dataset_id, &name, text.as_bytes()).map_err(|e| {
        ToolError::new(
            "write_failed",
            format!("cannot write the document: {e}"),
            "Check that the ingest folder exists and is writable",
        )
    })?;
    let chunks = crate::rag::tree::leaves(0, &text, &[1]).len();
    let doc_id = format!("{}/{}/{name}", crate::rag::INGEST_ROOT, args.dataset_id);
    Ok(ToolOutput::new(json!({
        "dataset_id": args.dataset_id,
        "document_id": doc_id,
        "chunks": chunks,
        "source": args.source,
        "tags": args.tags.unwrap_or_default(),
        "status": "written; indexed and added to the dataset's trees within about a second",
    })))
}
