//! What the catalog keeps of a ROOT file: rows for the tables of `catalog::root`,
//! built from quarry's ROOT reader at index time.

use std::collections::BTreeMap;
use std::fs::File;

use crate::catalog::root::{
    Accumulator, BasketBounds, BranchRow, HistogramRow, ROOT_BRANCHES, ROOT_FILE, ROOT_HISTOGRAMS,
    ROOT_LAYOUTS, ROOT_STATS, ROOT_TREES, RootFileRow, StatsRow, TREE_KIND_TTREE, TreeRow,
    branch_key,
};
use crate::catalog::{KindRow, encode};
use crate::formats::FormatError;
use crate::formats::root::rntuple::ANCHOR_CLASS;
use crate::formats::root::{
    Branch, Column, PathedKey, RootFile, Values, branch_type, by_number, compression_name,
    is_histogram, latest,
};
use crate::job::Job;

use super::root_ntuple::{ntuple_rows, ntuple_stats_rows};

pub(super) fn row<T: serde::Serialize>(table: &'static str, key: Vec<u8>, value: &T) -> KindRow {
    KindRow {
        table,
        key,
        value: encode(value),
    }
}

/// Keeps, for each path, the key with the highest cycle (what ROOT's `Get` returns).
fn latest_cycles(keys: Vec<PathedKey>) -> Vec<PathedKey> {
    let mut best: BTreeMap<String, usize> = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        let slot = best.entry(k.path()).or_insert(i);
        if keys[*slot].key.cycle < k.key.cycle {
            *slot = i;
        }
    }
    let keep: std::collections::HashSet<usize> = best.into_values().collect();
    keys.into_iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, k)| k)
        .collect()
}

/// Every branch depth first (a branch before the branches inside it), with its
/// '/'-joined path: the order of `root_branches` and `root_stats` rows.
fn depth_first<'a>(branches: &'a [Branch], parent: &str, out: &mut Vec<(String, &'a Branch)>) {
    for b in branches {
        let path = if parent.is_empty() {
            b.name.clone()
        } else {
            format!("{parent}/{}", b.name)
        };
        out.push((path.clone(), b));
        depth_first(&b.branches, &path, out);
    }
}

fn flatten(branches: &[Branch], file_compress: i32, out: &mut Vec<BranchRow>) {
    let mut all = Vec::new();
    depth_first(branches, "", &mut all);
    for (path, b) in all {
        let t = branch_type(b);
        let compress = if b.compress >= 0 {
            b.compress
        } else {
            file_compress
        };
        out.push(BranchRow {
            name: b.name.clone(),
            path,
            type_name: t.name,
            dtype: t.dtype,
            title: b.title.clone(),
            jagged: t.jagged,
            counter: t.counter,
            compression: compression_name(compress),
            entries: b.entries,
            compressed_bytes: b.zip_bytes,
            uncompressed_bytes: b.tot_bytes,
        });
    }
}

/// The compression setting that holds most of the branches' compressed bytes
/// (branches may each have their own); `None` for a tree without branches.
fn main_compression(branches: &[BranchRow]) -> Option<String> {
    let mut bytes: BTreeMap<&str, i64> = BTreeMap::new();
    for b in branches {
        *bytes.entry(b.compression.as_str()).or_default() += b.compressed_bytes;
    }
    bytes
        .into_iter()
        .max_by_key(|&(_, n)| n)
        .map(|(setting, _)| setting.to_string())
}

/// The catalog rows of an open ROOT file.
pub fn root_rows(file: File) -> Result<Vec<KindRow>, FormatError> {
    rows_of(RootFile::open(file)?)
}

/// The catalog rows of a remote ROOT file, read by ranges (its baskets are
/// never read).
pub fn remote_root_rows(
    source: std::sync::Arc<crate::remote::RemoteFile>,
) -> Result<Vec<KindRow>, FormatError> {
    rows_of(RootFile::from_source(source)?)
}

fn rows_of(file: RootFile) -> Result<Vec<KindRow>, FormatError> {
    let mut rows = Vec::new();
    let mut summary = RootFileRow {
        root_version: file.header.version_string(),
        compression: file.header.compression_string(),
        directories: Vec::new(),
        other_objects: Vec::new(),
        keys: Vec::new(),
    };
    let all_keys = file.walk()?;
    summary.keys = all_keys
        .iter()
        .map(|k| (k.path(), k.key.class_name.clone(), k.key.cycle))
        .collect();
    // Trees and histograms are keyed by their position in the file, so they come
    // back in file order (as ROOT lists them).
    let mut order = 0u32;
    for k in latest_cycles(all_keys) {
        order += 1;
        let key_path = k.path();
        if k.key.is_directory() {
            summary.directories.push(key_path);
        } else if k.key.class_name == "TTree" {
            let tree = file.tree(&k.key)?;
            let mut branches = Vec::new();
            flatten(&tree.branches, file.header.compress, &mut branches);
            rows.push(row(
                ROOT_TREES,
                order.to_be_bytes().to_vec(),
                &TreeRow {
                    name: k.key.name.clone(),
                    path: key_path.clone(),
                    cycle: k.key.cycle,
                    title: tree.title.clone(),
                    entries: tree.entries,
                    branches: branches.len() as u32,
                    compressed_bytes: branches.iter().map(|b| b.compressed_bytes).sum(),
                    uncompressed_bytes: branches.iter().map(|b| b.uncompressed_bytes).sum(),
                    compression: main_compression(&branches)
                        .unwrap_or_else(|| file.header.compression_string()),
                    kind: TREE_KIND_TTREE.to_string(),
                    ntuple: None,
                },
            ));
            for (i, b) in branches.iter().enumerate() {
                rows.push(row(ROOT_BRANCHES, branch_key(&key_path, i as u32), b));
            }
            rows.push(row(
                ROOT_LAYOUTS,
                key_path.as_bytes().to_vec(),
                &tree.skeleton(),
            ));
        } else if k.key.class_name == ANCHOR_CLASS
            && let Ok(ntuple) = ntuple_rows(&file, &k.key, &key_path, order)
        {
            // An RNTuple that cannot be read (a damaged anchor, a later
            // format) stays one of the other objects: the file's trees and
            // histograms are still listed.
            rows.extend(ntuple);
        } else if is_histogram(&k.key.class_name) {
            let h = file.histogram(&k.key)?;
            let bins = std::iter::once(h.x.nbins)
                .chain(h.y.as_ref().map(|y| y.nbins))
                .map(|n| n as u32)
                .collect();
            rows.push(row(
                ROOT_HISTOGRAMS,
                order.to_be_bytes().to_vec(),
                &HistogramRow {
                    name: k.key.name.clone(),
                    path: key_path,
                    class_name: k.key.class_name.clone(),
                    bins,
                    entries: h.entries,
                },
            ));
        } else {
            summary
                .other_objects
                .push((k.key.name.clone(), k.key.class_name.clone(), key_path));
        }
    }
    rows.push(row(ROOT_FILE, Vec::new(), &summary));
    Ok(rows)
}

/// The summary of one chunk's values; `None` for strings.
pub(super) fn summarize(values: &Values) -> Option<Accumulator> {
    Some(by_number!(values, v, to => Accumulator::of_slice(v, to), strings: _s => return None))
}

/// A branch's statistics, read basket by basket (memory holds a few baskets).
/// A stopped `job` ends the read between chunks (the row is then not usable).
fn branch_stats(file: &RootFile, branch: &Branch, job: &Job) -> StatsRow {
    let mut stats = ChunkStats::default();
    let read = file.for_each_chunk(branch, |chunk| {
        if job.is_stopped() {
            return Err(stopped());
        }
        stats.add(chunk);
        Ok(())
    });
    stats.finish(read)
}

/// A column's statistics folded chunk by chunk (a TTree's baskets, an
/// RNTuple's page runs): its values', its entries' multiplicities when it is
/// a collection, and each chunk's bounds.
pub(super) struct ChunkStats {
    values: Accumulator,
    multiplicity: Accumulator,
    numeric: bool,
    jagged: bool,
    baskets: Vec<BasketBounds>,
}

impl Default for ChunkStats {
    fn default() -> ChunkStats {
        ChunkStats {
            values: Accumulator::default(),
            multiplicity: Accumulator::default(),
            numeric: true,
            jagged: false,
            baskets: Vec::new(),
        }
    }
}

impl ChunkStats {
    pub(super) fn add(&mut self, chunk: &Column) {
        match summarize(&chunk.values) {
            Some(part) => {
                self.values.merge(&part);
                self.baskets.push(basket_bounds(chunk, &part));
            }
            None => self.numeric = false,
        }
        if let Some(counts) = &chunk.counts {
            self.jagged = true;
            self.multiplicity
                .merge(&Accumulator::of_slice(counts, f64::from));
        }
    }

    /// The row: the statistics, or why the column could not be read.
    pub(super) fn finish(self, read: Result<(), FormatError>) -> StatsRow {
        match read {
            Err(e) => StatsRow {
                values: None,
                multiplicity: None,
                unavailable: Some(e.to_string()),
                baskets: Vec::new(),
            },
            Ok(()) => StatsRow {
                values: if self.numeric {
                    self.values.finish()
                } else {
                    None
                },
                multiplicity: if self.jagged {
                    self.multiplicity.finish()
                } else {
                    None
                },
                unavailable: (!self.numeric).then(|| "not numeric".to_string()),
                baskets: if self.numeric {
                    self.baskets
                } else {
                    Vec::new()
                },
            },
        }
    }
}

/// A basket's entries and the range of its values, from its summary.
pub(super) fn basket_bounds(chunk: &Column, part: &Accumulator) -> BasketBounds {
    let summary = part.finish();
    BasketBounds {
        entries: chunk.entries as u64,
        values: chunk.values.len() as u64,
        finite: summary.map_or(0, |s| s.count),
        min: summary.map_or(f64::INFINITY, |s| s.min),
        max: summary.map_or(f64::NEG_INFINITY, |s| s.max),
    }
}

/// The error of statistics whose job stopped: transient, since the file is fine.
pub(super) fn stopped() -> FormatError {
    FormatError::Transient("the statistics were stopped before they were complete".into())
}

/// Statistics rows for every branch of the tree at `tree_path` (highest cycle),
/// keyed like its `root_branches` rows. Reports progress in branches to `job`,
/// and stops when it is stopped (an error: partial statistics are never rows).
pub fn tree_stats_rows(
    file: &RootFile,
    keys: &[PathedKey],
    tree_path: &str,
    job: &Job,
) -> Result<Vec<KindRow>, FormatError> {
    let Some(key) = latest(keys, tree_path, Some("TTree")) else {
        let ntuple = latest(keys, tree_path, Some(ANCHOR_CLASS))
            .ok_or_else(|| FormatError::Corrupt(format!("no tree '{tree_path}' in the file")))?;
        return ntuple_stats_rows(file, &ntuple.key, tree_path, job);
    };
    let tree = file.tree(&key.key)?;
    let mut all = Vec::new();
    depth_first(&tree.branches, "", &mut all);
    // Branches in parallel, each read basket by basket: decompression and the
    // summing of each basket's values then keep every core busy (one branch's
    // baskets in parallel would leave the cores idle while each is summed).
    let branches: Vec<&Branch> = all.iter().map(|(_, b)| *b).collect();
    stats_rows_in_parallel(&branches, tree_path, job, |b| branch_stats(file, b, job))
}

/// Statistics rows of a tree's columns (a TTree's branches, an RNTuple's
/// columns), one column per task on every core, each keyed by its position
/// like the tree's `root_branches` rows. Reports progress in columns to
/// `job`; a stop is an error, as partial statistics are never rows.
pub(super) fn stats_rows_in_parallel<C: Sync>(
    columns: &[C],
    tree_path: &str,
    job: &Job,
    stats_of: impl Fn(&C) -> StatsRow + Sync,
) -> Result<Vec<KindRow>, FormatError> {
    use rayon::prelude::*;
    let done = std::sync::atomic::AtomicU64::new(0);
    let total = columns.len() as u64;
    let rows = columns
        .par_iter()
        .enumerate()
        .map(|(i, column)| {
            if job.is_stopped() {
                return Err(stopped());
            }
            let stats = stats_of(column);
            let finished = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            job.progress(finished, Some(total));
            Ok(row(ROOT_STATS, branch_key(tree_path, i as u32), &stats))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if job.is_stopped() {
        return Err(stopped());
    }
    Ok(rows)
}

/// Statistics rows for every tree of an open ROOT file.
pub fn file_stats_rows(file: File) -> Result<Vec<KindRow>, FormatError> {
    let file = RootFile::open(file)?;
    let keys = latest_cycles(file.walk()?);
    let mut rows = Vec::new();
    let tree_like =
        |k: &&PathedKey| k.key.class_name == "TTree" || k.key.class_name == ANCHOR_CLASS;
    for k in keys.iter().filter(tree_like) {
        let stats = tree_stats_rows(&file, &keys, &k.path(), &Job::default());
        // An RNTuple the indexer could not read has no rows to add to.
        if k.key.class_name == ANCHOR_CLASS && stats.is_err() {
            continue;
        }
        rows.extend(stats?);
    }
    Ok(rows)
}
