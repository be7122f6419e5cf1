//! The ROOT analysis engine: `TTree::Draw`-style cut strings parsed and type
//! checked into a plan (`syntax`, `plan`), evaluated column by column over
//! windows of entries that line the named branches up (`eval`, `scan`), and the
//! operations the data tools are built from (`ops`). It reads files through
//! `formats::root` and knows nothing of the catalog or of MCP.

pub mod eval;
pub mod export;
mod fills;
pub mod ops;
pub mod plan;
pub mod plot;
pub mod prune;
pub mod quantiles;
pub mod rows;
pub mod scan;
pub mod syntax;

use crate::formats::FormatError;
use crate::job::Stop;

pub use plan::{Plan, TreeColumns};

/// Why an analysis could not be done; the front end maps each to the spec's
/// error code.
#[derive(Debug, Clone, PartialEq)]
pub enum AnalysisError {
    /// The cut is not well formed, or its parts do not fit together.
    InvalidSelection {
        /// 1-based column of the problem in the cut (0 when it has none).
        column: usize,
        expected: String,
        message: String,
    },
    /// A name that is no column of the tree, with the closest ones.
    BranchNotFound { name: String, closest: Vec<String> },
    /// A column that cannot take part in arithmetic (strings, unreadable types).
    UnsupportedType { name: String, why: String },
    /// The file could not be read.
    Format(FormatError),
    /// The job was stopped after `entries_done` entries.
    Stopped { stop: Stop, entries_done: u64 },
}

impl AnalysisError {
    pub(crate) fn syntax(column: usize, expected: &str, found: &str) -> AnalysisError {
        AnalysisError::InvalidSelection {
            column,
            expected: expected.to_string(),
            message: format!("at column {column}: expected {expected}, found {found}"),
        }
    }

    pub(crate) fn invalid(column: usize, expected: &str, message: String) -> AnalysisError {
        AnalysisError::InvalidSelection {
            column,
            expected: expected.to_string(),
            message,
        }
    }
}

impl From<FormatError> for AnalysisError {
    fn from(e: FormatError) -> AnalysisError {
        AnalysisError::Format(e)
    }
}

impl std::fmt::Display for AnalysisError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnalysisError::InvalidSelection { message, .. } => f.write_str(message),
            AnalysisError::BranchNotFound { name, closest } => {
                write!(f, "no branch '{name}' in this tree")?;
                if !closest.is_empty() {
                    write!(f, " (closest: {})", closest.join(", "))?;
                }
                Ok(())
            }
            AnalysisError::UnsupportedType { name, why } => write!(f, "'{name}': {why}"),
            AnalysisError::Format(e) => write!(f, "{e}"),
            AnalysisError::Stopped { entries_done, .. } => {
                write!(f, "stopped after {entries_done} entries")
            }
        }
    }
}
