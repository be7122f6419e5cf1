//! The ROOT analysis engine: `TTree::Draw`-style cut strings parsed and type
//! checked into a plan (`syntax`, `plan`), evaluated column by column over
//! windows of entries that line the named branches up (`eval`, `scan`; the
//! commonest cuts, comparisons with constants, in `predicate`), and the
//! operations the data tools are built from (`ops`). Quantities are branches
//! or expressions (`quantities`), with named expressions (`defines`) and
//! ROOT::VecOps' functions over collections (`vecops`, `kinematics`,
//! `pairs`). It reads files through `formats::root` and knows nothing of the
//! catalog or of MCP.

pub mod compare;
mod computed;
mod counted;
pub mod cutflow;
pub mod dataset;
pub mod defines;
mod elementary;
pub mod eval;
pub mod export;
pub mod export_join;
mod fills;
mod kept;
mod kinematics;
pub mod ops;
mod pair_fills;
mod pairs;
pub mod plan;
pub mod plot;
pub mod plot_compare;
pub mod predicate;
pub mod prune;
pub mod quantiles;
pub mod quantities;
pub mod rows;
pub mod scan;
pub mod source;
pub mod syntax;
pub mod vecops;

use crate::formats::FormatError;
use crate::job::Stop;

pub use defines::Defines;
pub use plan::{Plan, TreeColumns};
pub use source::{Origin, TreeObject};

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
    /// An expression would make more values than a window may hold (the
    /// pairs of a large collection): a scan retries a window of several
    /// entries in smaller parts, so only one entry's alone reaches a caller.
    TooLarge { message: String },
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
            AnalysisError::TooLarge { message } => f.write_str(message),
        }
    }
}

/// The indices of `costs` in at most `n` groups of about equal total cost,
/// the largest placed first, each on the group with the least so far: worked
/// through side by side (columns read, or encoded), the groups then end
/// together (three columns on two cores split by halves could leave one core
/// two thirds of the work).
pub(crate) fn balanced_groups(costs: &[u64], n: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(costs[k]));
    let mut groups: Vec<(u64, Vec<usize>)> = vec![(0, Vec::new()); n.min(costs.len())];
    for k in order {
        let lightest = groups
            .iter_mut()
            .min_by_key(|(total, _)| *total)
            .expect("a group per column at least");
        lightest.0 += costs[k];
        lightest.1.push(k);
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

#[cfg(test)]
mod tests {
    use super::balanced_groups;

    #[test]
    fn the_largest_read_gets_a_core_of_its_own() {
        // The benchmark's page: met, muon_pt and event_number baskets (kB).
        let groups = balanced_groups(&[1260, 2993, 529], 2);
        assert_eq!(groups, vec![vec![1], vec![0, 2]]);
        let groups = balanced_groups(&[5, 5, 5, 5, 5], 8);
        assert_eq!(groups.len(), 5);
        let mut all: Vec<usize> = balanced_groups(&[3, 1, 4, 1, 5, 9, 2, 6], 3)
            .into_iter()
            .flatten()
            .collect();
        all.sort();
        assert_eq!(all, (0..8).collect::<Vec<_>>());
        assert!(balanced_groups(&[], 2).is_empty());
    }
}
