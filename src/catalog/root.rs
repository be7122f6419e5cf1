//! The ROOT kind's catalog tables: what `inspect_file` and `list_branches` answer
//! from without opening the file. Rows are keyed by (file id, sub-key):
//! - `root_file`: sub-key empty; the file's version, compression, directories and
//!   objects that are neither trees nor histograms;
//! - `root_trees`: sub-key = position in the file (u32 big-endian); path, entries,
//!   branch count, bytes;
//! - `root_branches`: sub-key = tree path, NUL, branch order (u32 big-endian), so a
//!   tree's branches come back in file order;
//! - `root_histograms`: sub-key = position in the file (u32 big-endian);
//! - `root_stats`: sub-key as in `root_branches`; statistics computed after
//!   indexing (eagerly or on first request) and dropped with the file's rows
//!   when it changes.

use serde::{Deserialize, Serialize};

use super::records::KindTable;
use crate::formats::Kind;

pub const ROOT_FILE: &str = "root_file";
pub const ROOT_TREES: &str = "root_trees";
pub const ROOT_BRANCHES: &str = "root_branches";
pub const ROOT_HISTOGRAMS: &str = "root_histograms";
pub const ROOT_STATS: &str = "root_stats";

pub const TABLES: [KindTable; 5] = [
    KindTable {
        kind: Kind::Root,
        name: ROOT_FILE,
        description: "ROOT version, compression, directories, other objects",
    },
    KindTable {
        kind: Kind::Root,
        name: ROOT_TREES,
        description: "TTrees: path, entries, branch count, bytes",
    },
    KindTable {
        kind: Kind::Root,
        name: ROOT_BRANCHES,
        description: "branches of each tree, in file order: type, title, bytes",
    },
    KindTable {
        kind: Kind::Root,
        name: ROOT_HISTOGRAMS,
        description: "TH1/TH2/TProfile histograms: class, bins, entries",
    },
    KindTable {
        kind: Kind::Root,
        name: ROOT_STATS,
        description: "branch statistics, keyed like root_branches; computed after indexing",
    },
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RootFileRow {
    pub root_version: String,
    pub compression: String,
    pub directories: Vec<String>,
    /// (name, class, path) of keys that are neither trees nor histograms.
    pub other_objects: Vec<(String, String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeRow {
    pub name: String,
    pub path: String,
    pub cycle: i16,
    pub title: String,
    pub entries: i64,
    /// Every branch, nested ones included.
    pub branches: u32,
    pub compressed_bytes: i64,
    pub uncompressed_bytes: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BranchRow {
    pub name: String,
    /// Names from the top branch down, joined by '/', for nested branches.
    pub path: String,
    pub type_name: String,
    pub dtype: Option<String>,
    pub title: String,
    pub jagged: bool,
    pub counter: Option<String>,
    pub compression: String,
    pub entries: i64,
    pub compressed_bytes: i64,
    pub uncompressed_bytes: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramRow {
    pub name: String,
    pub path: String,
    pub class_name: String,
    /// Bins per axis (one or two).
    pub bins: Vec<u32>,
    pub entries: f64,
}

/// The sub-key of a branch row.
pub fn branch_key(tree_path: &str, order: u32) -> Vec<u8> {
    let mut key = tree_path.as_bytes().to_vec();
    key.push(0);
    key.extend_from_slice(&order.to_be_bytes());
    key
}

/// The sub-key prefix of a tree's branch rows.
pub fn branch_prefix(tree_path: &str) -> Vec<u8> {
    let mut key = tree_path.as_bytes().to_vec();
    key.push(0);
    key
}

/// count, min, max, mean and standard deviation of a set of numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub std: f64,
}

impl Summary {
    /// Over the finite values; `None` when there are none.
    pub fn of(values: impl Iterator<Item = f64>) -> Option<Summary> {
        let mut acc = Accumulator::default();
        values.for_each(|x| acc.push(x));
        acc.finish()
    }
}

/// A running `Summary`, fed one value at a time (Welford's algorithm: one pass,
/// numerically stable), so statistics never need the whole column in memory.
#[derive(Debug, Clone, Copy)]
pub struct Accumulator {
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

impl Default for Accumulator {
    fn default() -> Self {
        Accumulator {
            n: 0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

impl Accumulator {
    /// Adds a value; NaN and infinities are left out.
    pub fn push(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    pub fn finish(&self) -> Option<Summary> {
        (self.n > 0).then(|| Summary {
            count: self.n,
            min: self.min,
            max: self.max,
            mean: self.mean,
            std: (self.m2 / self.n as f64).sqrt(),
        })
    }
}

/// A branch's cached statistics: over all its values (all elements of a jagged
/// branch), and for jagged branches over the per-entry multiplicity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsRow {
    /// `None` when the branch holds no finite number (or is not numeric).
    pub values: Option<Summary>,
    pub multiplicity: Option<Summary>,
    /// Why there are no statistics (a type the decoder cannot read yet).
    pub unavailable: Option<String>,
}
