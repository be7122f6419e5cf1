//! The ROOT kind's catalog tables: what `inspect_file` and `list_branches` answer
//! from without opening the file. Rows are keyed by (file id, sub-key):
//! - `root_file`: sub-key empty; the file's version, compression, directories and
//!   objects that are neither trees nor histograms;
//! - `root_trees`: sub-key = position in the file (u32 big-endian); path, entries,
//!   branch count, bytes;
//! - `root_branches`: sub-key = tree path, NUL, branch order (u32 big-endian), so a
//!   tree's branches come back in file order;
//! - `root_histograms`: sub-key = position in the file (u32 big-endian).

use serde::{Deserialize, Serialize};

use super::records::KindTable;
use crate::formats::Kind;

pub const ROOT_FILE: &str = "root_file";
pub const ROOT_TREES: &str = "root_trees";
pub const ROOT_BRANCHES: &str = "root_branches";
pub const ROOT_HISTOGRAMS: &str = "root_histograms";

pub const TABLES: [KindTable; 4] = [
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
        description: "TH1/TH2 histograms: class, bins, entries",
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
