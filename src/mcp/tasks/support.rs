//! Which tools run as tasks (docs/decisions/0059-mcp-tasks.md, "Which tools").

/// Whether a tool may run as a task (MCP 2025-11-25 `execution.taskSupport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// Called plainly or as a task, as the client likes.
    Optional,
    /// Always answered at once: a task would only add round trips.
    Forbidden,
}

impl TaskSupport {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Optional => "optional",
            TaskSupport::Forbidden => "forbidden",
        }
    }
}

/// The tools whose time grows with the data they read, not with what they
/// answer: a pass over a tree's entries (or a dataset's files), every element of
/// an HDF5 dataset, every indexed document or source file, the RAG trees or an
/// LLM's answer. Every other tool reads the catalog or a capped part of one file
/// and answers in milliseconds. A tool added later is `Forbidden` until listed.
const LONG_TOOLS: &[&str] = &[
    // ROOT: every entry of a tree (or of each file of a dataset) is read.
    "apply_selection",
    "compute_histogram",
    "compute_histogram_2d",
    "get_branch_stats",
    "read_branches",
    "sample_tree",
    "export_branches",
    "fit_histogram",
    "cutflow",
    // HDF5: statistics stream every element of a dataset.
    "get_dataset_stats",
    // Documents: a search reads the matching lines of every document in scope.
    "search_documents",
    "search_multiple",
    // Code: a query parses every file a folder pattern names.
    "execute_query",
    // RAG: retrieval over every tree; answers and summaries may wait on an LLM;
    // ingesting reads and indexes a whole document.
    "rag_retrieve",
    "retrieve_documents",
    "answer_question",
    "rag_summarize",
    "ingest_document",
];

pub fn support_of(tool: &str) -> TaskSupport {
    if LONG_TOOLS.contains(&tool) {
        TaskSupport::Optional
    } else {
        TaskSupport::Forbidden
    }
}

/// `tool` as the name of a tool that runs as a task (a stored task's tool,
/// read back).
pub fn long_tool(tool: &str) -> Option<&'static str> {
    LONG_TOOLS.iter().copied().find(|t| *t == tool)
}
