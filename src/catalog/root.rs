//! The ROOT kind's catalog tables: what `inspect_file` and `list_branches` answer
//! from without opening the file. Rows are keyed by (file id, sub-key):
//! - `root_file`: sub-key empty; the file's version, compression, directories,
//!   objects that are neither trees nor histograms, and every key (all cycles);
//! - `root_trees`: sub-key = position in the file (u32 big-endian); path, kind
//!   (TTree or RNTuple), entries, branch count, bytes; an RNTuple's leaf
//!   columns are its branches (`Muon.pt`) in the tables below;
//! - `root_branches`: sub-key = tree path, NUL, branch order (u32 big-endian), so a
//!   tree's branches come back in file order;
//! - `root_histograms`: sub-key = position in the file (u32 big-endian);
//! - `root_stats`: sub-key as in `root_branches`; statistics computed after
//!   indexing (eagerly or on first request) and dropped with the file's rows
//!   when it changes;
//! - `root_layouts`: sub-key = tree path; the tree's layout (`Tree::skeleton`:
//!   branches, leaves, types and basket tables, without basket data), from
//!   which a dataset's cost is estimated (`dry_run`) without opening the file
//!   (none for an RNTuple, whose footer a dry run reads instead).

use serde::{Deserialize, Serialize};

use super::records::KindTable;
use crate::formats::Kind;

pub const ROOT_FILE: &str = "root_file";
pub const ROOT_TREES: &str = "root_trees";
pub const ROOT_BRANCHES: &str = "root_branches";
pub const ROOT_HISTOGRAMS: &str = "root_histograms";
pub const ROOT_STATS: &str = "root_stats";
pub const ROOT_LAYOUTS: &str = "root_layouts";

pub const TABLES: [KindTable; 6] = [
    KindTable {
        kind: Kind::Root,
        name: ROOT_FILE,
        description: "ROOT version, compression, directories, other objects, keys",
    },
    KindTable {
        kind: Kind::Root,
        name: ROOT_TREES,
        description: "TTrees and RNTuples: path, kind, entries, branch count, bytes",
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
    KindTable {
        kind: Kind::Root,
        name: ROOT_LAYOUTS,
        description: "each tree's layout (branches, types, basket tables), by tree path",
    },
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RootFileRow {
    pub root_version: String,
    pub compression: String,
    pub directories: Vec<String>,
    /// (name, class, path) of keys that are neither trees nor histograms.
    pub other_objects: Vec<(String, String, String)>,
    /// Every key of the file, all cycles: (path, class, cycle), in file order.
    pub keys: Vec<(String, String, i16)>,
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
    /// The compression setting of most of the tree's bytes (`ZLIB:1`), spelt as
    /// the file's.
    pub compression: String,
    /// `ttree` or `rntuple` (`TREE_KIND_*`).
    pub kind: String,
    /// What only an RNTuple has.
    pub ntuple: Option<NtupleRow>,
}

pub const TREE_KIND_TTREE: &str = "ttree";
pub const TREE_KIND_RNTUPLE: &str = "rntuple";

/// An RNTuple's own facts, for `inspect_file`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NtupleRow {
    /// Top-level fields (`branches` counts the leaf columns).
    pub fields: u32,
    pub clusters: u64,
    /// The anchor's format version, `1.0.0.0`.
    pub format_version: String,
    /// The library that wrote it (`ROOT v6.34.02`).
    pub writer: String,
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

/// A running `Summary`, built chunk by chunk (each chunk summarised on its own,
/// then merged), so statistics never need the whole column in memory.
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
    /// The summary of a slice of numbers (non-finite ones left out), in two
    /// passes over it (sum and range, then squared deviations from its mean),
    /// each kept in eight independent lanes so the compiler vectorises them; a
    /// value-at-a-time update divides on every value and costs several times
    /// more.
    pub fn of_slice<T: Copy>(xs: &[T], to_f64: impl Fn(T) -> f64 + Copy) -> Accumulator {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { Self::of_slice_avx2(xs, to_f64) };
        }
        Self::of_slice_portable(xs, to_f64)
    }

    /// `of_slice` compiled for AVX2 (wider lanes), chosen at run time.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn of_slice_avx2<T: Copy>(xs: &[T], to_f64: impl Fn(T) -> f64 + Copy) -> Accumulator {
        Self::of_slice_portable(xs, to_f64)
    }

    #[inline(always)]
    fn of_slice_portable<T: Copy>(xs: &[T], to_f64: impl Fn(T) -> f64 + Copy) -> Accumulator {
        const LANES: usize = 8;
        let (mut n, mut sum) = ([0u64; LANES], [0.0f64; LANES]);
        let (mut lo, mut hi) = ([f64::INFINITY; LANES], [f64::NEG_INFINITY; LANES]);
        let mut first_pass = |lane: usize, x: f64| {
            let finite = x.is_finite();
            n[lane] += u64::from(finite);
            sum[lane] += if finite { x } else { 0.0 };
            lo[lane] = if finite && x < lo[lane] { x } else { lo[lane] };
            hi[lane] = if finite && x > hi[lane] { x } else { hi[lane] };
        };
        let chunks = xs.chunks_exact(LANES);
        let tail = chunks.remainder();
        for chunk in chunks {
            for (lane, &x) in chunk.iter().enumerate() {
                first_pass(lane, to_f64(x));
            }
        }
        for (lane, &x) in tail.iter().enumerate() {
            first_pass(lane, to_f64(x));
        }
        let count: u64 = n.iter().sum();
        let mut acc = Accumulator::default();
        if count == 0 {
            return acc;
        }
        let mean = sum.iter().sum::<f64>() / count as f64;
        let mut m2 = [0.0f64; LANES];
        let mut second_pass = |lane: usize, x: f64| {
            let d = if x.is_finite() { x - mean } else { 0.0 };
            m2[lane] += d * d;
        };
        for chunk in xs.chunks_exact(LANES) {
            for (lane, &x) in chunk.iter().enumerate() {
                second_pass(lane, to_f64(x));
            }
        }
        for (lane, &x) in tail.iter().enumerate() {
            second_pass(lane, to_f64(x));
        }
        acc.n = count;
        acc.mean = mean;
        acc.m2 = m2.iter().sum();
        acc.min = lo.iter().copied().fold(f64::INFINITY, f64::min);
        acc.max = hi.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        acc
    }

    /// Adds another part's values (Chan et al.'s pairwise update of the mean
    /// and squared deviations).
    pub fn merge(&mut self, other: &Accumulator) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        let n = self.n + other.n;
        let delta = other.mean - self.mean;
        let share = other.n as f64 / n as f64;
        self.mean += delta * share;
        self.m2 += other.m2 + delta * delta * self.n as f64 * share;
        self.n = n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
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
    /// The range of each basket's values, in entry order (empty when the
    /// branch is not numeric): what lets a cut skip a cluster unread.
    pub baskets: Vec<BasketBounds>,
}

/// One basket's share of a branch: its entries, its values (all elements of a
/// collection) and the smallest and largest of the finite ones.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BasketBounds {
    pub entries: u64,
    pub values: u64,
    /// Values that are finite; when fewer than `values`, a NaN or an infinity
    /// is among them and `min`/`max` do not bound them all.
    pub finite: u64,
    pub min: f64,
    pub max: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1..=10 in uneven parts, with a NaN and an infinity to leave out: mean 5.5,
    /// population variance (n² - 1) / 12 = 8.25, by hand.
    #[test]
    fn merged_parts_give_the_whole_summary() {
        let parts: [&[f64]; 4] = [
            &[1.0, 2.0, f64::NAN],
            &[],
            &[3.0, 4.0, 5.0, 6.0, 7.0],
            &[8.0, f64::INFINITY, 9.0, 10.0],
        ];
        let mut acc = Accumulator::default();
        for part in parts {
            acc.merge(&Accumulator::of_slice(part, |x| x));
        }
        let s = acc.finish().unwrap();
        assert_eq!((s.count, s.min, s.max), (10, 1.0, 10.0));
        assert!((s.mean - 5.5).abs() < 1e-15);
        assert!((s.std - 8.25_f64.sqrt()).abs() < 1e-15);
        assert!(Accumulator::of_slice(&[f64::NAN], |x| x).finish().is_none());
        // Large offsets cost no more than the ulp of the mean (deviations are
        // taken from each part's mean; raw sums of squares near 1e18 would lose
        // the whole spread).
        let big: Vec<f64> = (0..1000).map(|i| 1e9 + f64::from(i % 2)).collect();
        let mut acc = Accumulator::default();
        for part in big.chunks(7) {
            acc.merge(&Accumulator::of_slice(part, |x| x));
        }
        assert!((acc.finish().unwrap().std - 0.5).abs() < 1e-6);
    }
}
