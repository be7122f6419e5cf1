//! The error codes tools answer, and which tool can answer which, for the tool
//! reference (`mcp::reference`).
//!
//! The codes are made where each failure is found (`ToolError::new` all over the
//! tool files and the shared mappings in `mcp::response`), so no function knows a
//! tool's codes; this table states them. Tests keep it honest: every code the
//! integration tests see a tool answer must be listed here for that tool
//! (`tests/common`'s `call`), and every code written as a literal in
//! `ToolError::new` must be described in `ERROR_CODES` (`tests/reference_docs.rs`).

/// One error code and when a tool answers it.
pub struct ErrorCode {
    pub code: &'static str,
    pub when: &'static str,
}

/// Every code a tool answers. Lower-case codes are the ROOT specification's (and
/// named as its for the other kinds); the upper-case ones are the document
/// tools' specification's.
pub const ERROR_CODES: &[ErrorCode] = &[
    code(
        "invalid_arguments",
        "an unknown argument, a missing or mistyped one, or a value the tool cannot use (`details.argument`, `details.expected` when a JSON string did not parse as the wanted type)",
    ),
    code(
        "timeout",
        "the call ran longer than `[limits] call_timeout_secs` (a task: `[server] task_timeout_secs`)",
    ),
    code("cancelled", "the client cancelled the call"),
    code(
        "internal_error",
        "an unexpected failure, including a panic inside the tool",
    ),
    code(
        "result_too_large",
        "the answer was still over `max_result_bytes` after the tool cut it (a bug: tools cut their own answers)",
    ),
    code(
        "file_not_found",
        "the path names no file quarry has indexed (not on disk, not indexed yet, hidden), or a file indexed as another kind; a code tool's file or folder does not exist",
    ),
    code(
        "resource_not_found",
        "`resource` names no configured root, a relative path is ambiguous between roots (`details.available_resources`), or a resource URI names nothing",
    ),
    code(
        "permission_denied",
        "a path or pattern that would leave the roots (outside every root, `..`, a NUL byte, too long, a link swapped in since indexing), a file the system will not let quarry read, HDF5 data stored in other files; an export: no export folder, an `output_path` leaving it, or a write that failed",
    ),
    code(
        "io_error",
        "a remote root could not be reached, reading the file failed, or a remote file kept changing while read (a call whose file is replaced once runs again on the new version)",
    ),
    code(
        "corrupted_file",
        "the file failed to index (the message gives the recorded error) or reading it failed",
    ),
    code(
        "unsupported_type",
        "the file holds something quarry's reader cannot decode yet, or a cut uses a string branch",
    ),
    code(
        "unsupported_filter",
        "an HDF5 dataset is stored through a filter this build of libhdf5 lacks (the message names it and its id)",
    ),
    code("not_a_dataset", "an HDF5 path names a group, not a dataset"),
    code("invalid_slice", "an HDF5 slice that does not parse"),
    code(
        "index_out_of_range",
        "an HDF5 slice's index outside the dataset's shape (the message names the axis)",
    ),
    code(
        "invalid_uri",
        "a resource URI that is neither `h5://` nor `raptor://` of the right form",
    ),
    code(
        "invalid_selection",
        "a cut or expression that does not parse (`details.column`, `details.expected`), pairs collections of different lengths, or a define that uses itself or has a branch's name",
    ),
    code(
        "branch_not_found",
        "the tree has no branch of that name (`details.closest`)",
    ),
    code(
        "tree_not_found",
        "no tree of that path, or the name is not unique in the file (`details.available_trees`)",
    ),
    code(
        "histogram_not_found",
        "no histogram of that path or name (`details.available_histograms`)",
    ),
    code(
        "dataset_mismatch",
        "a dataset holds files without the tree, with other branches than its first file's, or unreadable (`details.files`, `details.count`); `skip_mismatched: true` reads the others",
    ),
    code(
        "dataset_not_found",
        "no saved ROOT dataset, or no RAG dataset, of that name",
    ),
    code(
        "limit_exceeded",
        "a limit, size or bin count over its maximum (`retry_with` gives the largest allowed), or one item alone longer than the result budget",
    ),
    code(
        "invalid_query",
        "a tree-sitter query that does not compile (`details.kind`, `details.offset`)",
    ),
    code(
        "parse_failed",
        "a source file that failed to index or to parse",
    ),
    code(
        "symbol_not_found",
        "no class or function of that name (`details.classes_in_file` for `extract_interface`)",
    ),
    code("rag_unavailable", "this quarry runs no RAG engine"),
    code("node_not_found", "no RAPTOR node of that id"),
    code("session_not_found", "no chat session of that id"),
    code(
        "sessions_unavailable",
        "chat sessions cannot be stored (no catalog folder)",
    ),
    code(
        "ingest_disabled",
        "ingesting is off (`[rag] ingest_dir = false`, or no ingest folder could be made)",
    ),
    code("write_failed", "the file could not be written"),
    code(
        "COLLECTION_NOT_FOUND",
        "the collection (folder) does not exist",
    ),
    code("NOT_A_DIRECTORY", "the path is a file, not a collection"),
    code("PATH_TRAVERSAL_DETECTED", "the path would leave the roots"),
    code("DOCUMENT_NOT_FOUND", "no indexed document at that path"),
    code(
        "UNSUPPORTED_FORMAT",
        "the file is not a document quarry reads",
    ),
    code(
        "PAGE_OUT_OF_RANGE",
        "a requested page the document does not have",
    ),
    code(
        "FILTER_FAILED",
        "the document's text could not be extracted",
    ),
    code(
        "METADATA_EXTRACTION_FAILED",
        "the document's metadata could not be read",
    ),
    code(
        "SCOPE_NOT_FOUND",
        "the search scope names no folder or document",
    ),
    code("INVALID_QUERY", "a search query that does not parse"),
    code(
        "SEARCH_TIMEOUT",
        "the search ran longer than the call's time limit",
    ),
];

const fn code(code: &'static str, when: &'static str) -> ErrorCode {
    ErrorCode { code, when }
}

/// What any tool can answer, whatever it does.
pub const EVERY_TOOL: &[&str] = &[
    "invalid_arguments",
    "timeout",
    "cancelled",
    "internal_error",
    "result_too_large",
];

/// A path into the roots, resolved and opened (`ToolError::from_path`).
const PATH: &[&str] = &[
    "file_not_found",
    "resource_not_found",
    "permission_denied",
    "io_error",
];

/// A ROOT file read.
const ROOT_FILE: &[&str] = &["corrupted_file", "unsupported_type"];

/// The analysis tools: a tree's branches read, by path or as a dataset.
const ANALYSIS: &[&str] = &[
    "tree_not_found",
    "branch_not_found",
    "invalid_selection",
    "limit_exceeded",
    "dataset_mismatch",
];

const HDF5_READ: &[&str] = &[
    "corrupted_file",
    "unsupported_type",
    "unsupported_filter",
    "not_a_dataset",
    "limit_exceeded",
];

const CODE_FILE: &[&str] = &["parse_failed", "limit_exceeded"];

const DOCUMENT: &[&str] = &[
    "PATH_TRAVERSAL_DETECTED",
    "DOCUMENT_NOT_FOUND",
    "UNSUPPORTED_FORMAT",
];

/// The codes `tool` can answer besides `EVERY_TOOL`, as groups; `None` for a
/// tool this table does not know (`tests/reference_docs.rs` fails on it).
fn groups_of(tool: &str) -> Option<&'static [&'static [&'static str]]> {
    Some(match tool {
        "list_files" => &[&["resource_not_found", "permission_denied", "limit_exceeded"]],
        "index_status" => &[&["resource_not_found"]],
        "inspect_file" => &[PATH, ROOT_FILE],
        "list_branches" => &[PATH, ROOT_FILE, &["tree_not_found", "limit_exceeded"]],
        "read_histogram" => &[PATH, ROOT_FILE, &["histogram_not_found"]],
        "apply_selection"
        | "compute_histogram"
        | "compute_histogram_2d"
        | "get_branch_stats"
        | "read_branches"
        | "sample_tree"
        | "cutflow" => &[PATH, ROOT_FILE, ANALYSIS],
        "export_branches" => &[PATH, ROOT_FILE, ANALYSIS],
        "compare_histograms" | "fit_histogram" => {
            &[PATH, ROOT_FILE, ANALYSIS, &["histogram_not_found"]]
        }
        "define_dataset" => &[PATH, &["dataset_mismatch", "limit_exceeded"]],
        "list_root_datasets" => &[&["dataset_not_found"]],
        "read_dataset_slice" | "get_dataset_stats" | "export_dataset" => {
            &[PATH, HDF5_READ, &["invalid_slice", "index_out_of_range"]]
        }
        "find_datasets" => &[&["resource_not_found", "permission_denied", "limit_exceeded"]],
        "read_resource" => &[
            PATH,
            &[
                "invalid_uri",
                "corrupted_file",
                "rag_unavailable",
                "dataset_not_found",
            ],
        ],
        "list_collections" => &[&[
            "COLLECTION_NOT_FOUND",
            "NOT_A_DIRECTORY",
            "PATH_TRAVERSAL_DETECTED",
        ]],
        "find_document" => &[&[
            "SCOPE_NOT_FOUND",
            "NOT_A_DIRECTORY",
            "PATH_TRAVERSAL_DETECTED",
        ]],
        "search_documents" | "search_multiple" => &[&[
            "SCOPE_NOT_FOUND",
            "NOT_A_DIRECTORY",
            "PATH_TRAVERSAL_DETECTED",
            "INVALID_QUERY",
            "SEARCH_TIMEOUT",
            "FILTER_FAILED",
        ]],
        "read_document" => &[DOCUMENT, &["PAGE_OUT_OF_RANGE", "FILTER_FAILED"]],
        "get_document_info" => &[DOCUMENT, &["METADATA_EXTRACTION_FAILED"]],
        "parse_file" | "find_classes" | "find_functions" | "get_outline" | "get_file_summary"
        | "find_references" => &[PATH, CODE_FILE],
        "execute_query" => &[PATH, CODE_FILE, &["invalid_query"]],
        "extract_interface" => &[PATH, CODE_FILE, &["symbol_not_found"]],
        "find_symbol" | "get_include_graph" => {
            &[&["resource_not_found", "permission_denied", "limit_exceeded"]]
        }
        "get_class_hierarchy" | "get_call_graph" => &[&[
            "resource_not_found",
            "permission_denied",
            "limit_exceeded",
            "symbol_not_found",
        ]],
        "list_datasets" => &[&["rag_unavailable"]],
        "rag_retrieve" | "retrieve_documents" | "rag_summarize" => {
            &[&["rag_unavailable", "dataset_not_found", "node_not_found"]]
        }
        "answer_question" => &[&[
            "rag_unavailable",
            "dataset_not_found",
            "session_not_found",
            "sessions_unavailable",
            "write_failed",
        ]],
        "create_chat_session" => &[&[
            "rag_unavailable",
            "dataset_not_found",
            "sessions_unavailable",
            "write_failed",
        ]],
        "ingest_document" => &[&["rag_unavailable", "ingest_disabled", "write_failed"]],
        "rag_node_get" | "rag_node_children" | "rag_node_navigation" | "rag_path_to_root" => {
            &[&["rag_unavailable", "node_not_found"]]
        }
        _ => return None,
    })
}

/// Every code `tool` can answer, in `ERROR_CODES` order; `None` for a tool the
/// table does not know.
pub fn codes_of(tool: &str) -> Option<Vec<&'static str>> {
    let groups = groups_of(tool)?;
    let listed = |c: &str| EVERY_TOOL.contains(&c) || groups.iter().any(|g| g.contains(&c));
    Some(
        ERROR_CODES
            .iter()
            .map(|e| e.code)
            .filter(|c| listed(c))
            .collect(),
    )
}

/// What `code` means, if it is one of `ERROR_CODES`.
pub fn describe(code: &str) -> Option<&'static str> {
    ERROR_CODES.iter().find(|e| e.code == code).map(|e| e.when)
}
