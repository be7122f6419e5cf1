//! The HDF5 kind's catalog tables: each file's whole object tree, so that
//! resources, `read_resource` and `find_datasets` answer without opening it.
//! Rows are keyed by (file id, sub-key):
//! - `hdf5_file`: sub-key empty; object counts and how many were left out;
//! - `hdf5_objects`: sub-key = the object's path in the file (`/`, `/a/b`);
//!   the object as the HDF5 reader describes it (`formats::hdf5::Object`):
//!   group members and attributes, dataset metadata, link targets;
//! - `hdf5_aliases`: sub-key = another path of an object reached by several
//!   hard links; value = the path its `hdf5_objects` row is under.

use serde::{Deserialize, Serialize};

use super::records::{KindRow, KindTable, encode};
use crate::formats::Kind;
use crate::formats::hdf5::{Entry, Tree};

pub const HDF5_FILE: &str = "hdf5_file";
pub const HDF5_OBJECTS: &str = "hdf5_objects";
pub const HDF5_ALIASES: &str = "hdf5_aliases";

pub const TABLES: [KindTable; 3] = [
    KindTable {
        kind: Kind::Hdf5,
        name: HDF5_FILE,
        description: "per HDF5 file: object counts, objects left out",
    },
    KindTable {
        kind: Kind::Hdf5,
        name: HDF5_OBJECTS,
        description: "HDF5 groups, datasets, named types and links by path",
    },
    KindTable {
        kind: Kind::Hdf5,
        name: HDF5_ALIASES,
        description: "other paths (hard links) of HDF5 objects -> their row's path",
    },
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hdf5FileRow {
    pub groups: u64,
    pub datasets: u64,
    pub links: u64,
    /// Objects not described (past the reader's limits).
    pub omitted: u64,
}

/// The rows of one file's tree.
pub fn tree_rows(tree: &Tree) -> Vec<KindRow> {
    let mut summary = Hdf5FileRow {
        groups: 0,
        datasets: 0,
        links: 0,
        omitted: tree.omitted,
    };
    let mut rows = Vec::with_capacity(tree.objects.len() + 1);
    for object in &tree.objects {
        match object.entry {
            Entry::Group { .. } => summary.groups += 1,
            Entry::Dataset(_) => summary.datasets += 1,
            Entry::SoftLink { .. } | Entry::ExternalLink { .. } => summary.links += 1,
            Entry::Datatype { .. } => {}
        }
        rows.push(KindRow {
            table: HDF5_OBJECTS,
            key: object.path.as_bytes().to_vec(),
            value: encode(object),
        });
        for alias in &object.aliases {
            rows.push(KindRow {
                table: HDF5_ALIASES,
                key: alias.as_bytes().to_vec(),
                value: encode(&object.path),
            });
        }
    }
    rows.push(KindRow {
        table: HDF5_FILE,
        key: Vec::new(),
        value: encode(&summary),
    });
    rows
}
