//! The RAG engine: RAPTOR trees over the catalog's documents, built lexically
//! (no model, nothing to set up) and kept per document, with a small top layer
//! per dataset; retrieval, extractive answers and navigation over them. It
//! knows nothing of MCP.

pub mod answer;
pub mod bm25;
pub mod dataset;
pub mod embed;
pub mod engine;
pub mod gmm;
pub mod llm;
mod pass;
pub mod retrieve;
pub mod sessions;
pub mod store;
pub mod summary;
pub mod text;
pub mod tree;
pub mod vectors;

/// The name of the root that holds ingested documents (`[rag] ingest_dir`).
pub const INGEST_ROOT: &str = "ingest";

pub use dataset::RagDataset;
pub use engine::{Counters, Rag, RagOptions};
