//! What the catalog keeps of an RNTuple: a `root_trees` row of kind
//! `rntuple`, one `root_branches` row per leaf column (`Muon.pt`, typed as a
//! TTree branch of the same data would be), and statistics per column with
//! the range of each chunk (page run) for cluster skipping, as for TTree
//! branches.

use crate::catalog::KindRow;
use crate::catalog::root::{
    BranchRow, NtupleRow, ROOT_BRANCHES, ROOT_TREES, StatsRow, TREE_KIND_RNTUPLE, TreeRow,
    branch_key,
};
use crate::formats::FormatError;
use crate::formats::root::{
    Column, Key, LeafType, NtupleColumn, RNTuple, RootFile, compression_name,
};
use crate::job::Job;

use super::root::{ChunkStats, row, stats_rows_in_parallel, stopped};

/// The `root_trees` and `root_branches` rows of the RNTuple anchored at
/// `key` (found at `key_path`, `order`-th in the file).
pub(super) fn ntuple_rows(
    file: &RootFile,
    key: &Key,
    key_path: &str,
    order: u32,
) -> Result<Vec<KindRow>, FormatError> {
    let nt = file.rntuple(key)?;
    let compression = compression_name(nt.compression().map_or(0, |c| c as i32));
    let mut rows = Vec::with_capacity(nt.columns.len() + 1);
    let (stored, decompressed) = nt.sizes();
    rows.push(row(
        ROOT_TREES,
        order.to_be_bytes().to_vec(),
        &TreeRow {
            name: key.name.clone(),
            path: key_path.to_string(),
            cycle: key.cycle,
            title: nt.description.clone(),
            entries: i64::try_from(nt.entries).unwrap_or(i64::MAX),
            branches: nt.columns.len() as u32,
            compressed_bytes: i64::try_from(stored).unwrap_or(i64::MAX),
            uncompressed_bytes: i64::try_from(decompressed).unwrap_or(i64::MAX),
            compression: compression.clone(),
            kind: TREE_KIND_RNTUPLE.to_string(),
            ntuple: Some(NtupleRow {
                fields: nt.fields.len() as u32,
                clusters: nt.clusters.len() as u64,
                format_version: nt.anchor.version_string(),
                writer: nt.writer.clone(),
            }),
        },
    ));
    for (i, c) in nt.columns.iter().enumerate() {
        rows.push(row(
            ROOT_BRANCHES,
            branch_key(key_path, i as u32),
            &column_row(&nt, c, &compression),
        ));
    }
    Ok(rows)
}

/// A leaf column as `list_branches` shows a branch.
fn column_row(nt: &RNTuple, c: &NtupleColumn, compression: &str) -> BranchRow {
    let (stored, decompressed) = nt.column_sizes(c);
    let scalar = c
        .layout
        .as_ref()
        .is_ok_and(|l| !l.jagged && l.inner == 1 && matches!(l.leaf_type, LeafType::Prim(_)));
    let jagged = c.layout.as_ref().is_ok_and(|l| l.jagged);
    let title = nt
        .fields
        .iter()
        .find(|f| f.id == c.field)
        .map_or(String::new(), |f| f.description.clone());
    BranchRow {
        name: c.path.clone(),
        path: c.path.clone(),
        type_name: c.type_name.clone(),
        dtype: scalar.then(|| c.type_name.clone()),
        title,
        jagged,
        counter: if jagged { c.counter.clone() } else { None },
        compression: compression.to_string(),
        entries: i64::try_from(nt.entries).unwrap_or(i64::MAX),
        compressed_bytes: i64::try_from(stored).unwrap_or(i64::MAX),
        uncompressed_bytes: i64::try_from(decompressed).unwrap_or(i64::MAX),
    }
}

/// Statistics rows of every column of the RNTuple at `key`, keyed like its
/// `root_branches` rows; columns in parallel, each read chunk by chunk.
pub(super) fn ntuple_stats_rows(
    file: &RootFile,
    key: &Key,
    tree_path: &str,
    job: &Job,
) -> Result<Vec<KindRow>, FormatError> {
    let nt = file.rntuple(key)?;
    stats_rows_in_parallel(&nt.columns, tree_path, job, |c| {
        column_stats(file, &nt, c, job)
    })
}

/// A column's statistics, a chunk at a time; an unreadable column's row
/// says why.
fn column_stats(file: &RootFile, nt: &RNTuple, c: &NtupleColumn, job: &Job) -> StatsRow {
    let mut stats = ChunkStats::default();
    let read = (|| -> Result<(), FormatError> {
        let reader = file.ntuple_reader(nt, c)?;
        let mut chunk: Column = reader.empty_column();
        for index in 0..reader.basket_ranges().len() {
            if job.is_stopped() {
                return Err(stopped());
            }
            reader.read_basket(index, &mut chunk)?;
            stats.add(&chunk);
        }
        Ok(())
    })();
    stats.finish(read)
}
