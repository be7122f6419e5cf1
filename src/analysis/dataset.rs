//! Many files read as one, as a `TChain` reads them: each file's tree is a
//! member, its entries numbered after those of the members before it (in the
//! order the caller sorted them), and its columns put in the first member's
//! order, so one plan (whose slots are column indices) reads every member.
//! The scans (`scan`) take a list of members; one file is a list of one.
//!
//! Also here: a tree's clusters and their bytes from its layout alone (no file
//! read), which the scans and the cost estimate (`estimate`) share.

use std::ops::Range;

use super::AnalysisError;
use super::plan::{ColumnInfo, Plan, TreeColumns};
use crate::formats::root::Branch;

/// One file's tree among those read as one.
#[derive(Clone, Copy)]
pub struct Member<'a> {
    pub file: &'a crate::formats::root::RootFile,
    /// Its columns, in the first member's order (`align`).
    pub tree: &'a TreeColumns<'a>,
    /// The chain's number of this tree's entry 0: the entries of the members
    /// before it.
    pub first_entry: u64,
    /// The file's name for messages: an error reading it says which file of
    /// several it is in (empty for a lone file, whose caller names it).
    pub label: &'a str,
}

impl<'a> Member<'a> {
    /// A file read on its own: the members of a one-file call.
    pub fn single(
        file: &'a crate::formats::root::RootFile,
        tree: &'a TreeColumns<'a>,
    ) -> [Member<'a>; 1] {
        [Member {
            file,
            tree,
            first_entry: 0,
            label: "",
        }]
    }
}

/// `e` saying which member's file it arose in (a format error only: the
/// others are not the file's).
pub fn in_member(e: AnalysisError, member: &Member<'_>) -> AnalysisError {
    use crate::formats::FormatError as F;
    let label = member.label;
    let AnalysisError::Format(f) = e else {
        return e;
    };
    if label.is_empty() {
        return AnalysisError::Format(f);
    }
    let within = |why: String| format!("'{label}': {why}");
    AnalysisError::Format(match f {
        F::Corrupt(w) => F::Corrupt(within(w)),
        F::Unsupported(w) => F::Unsupported(within(w)),
        F::Refused(w) => F::Refused(within(w)),
        F::UnsupportedFilter(w) => F::UnsupportedFilter(within(w)),
        F::Io(w) => F::Io(within(w)),
        F::Transient(w) => F::Transient(within(w)),
    })
}

/// Entries of all members together.
pub fn chain_entries(members: &[Member<'_>]) -> u64 {
    members.last().map_or(0, |m| m.first_entry + m.tree.entries)
}

/// Each member's first entry in the chain, for trees of these entry counts.
pub fn first_entries(entries: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let mut at = 0;
    entries
        .into_iter()
        .map(|n| {
            let first = at;
            at += n;
            first
        })
        .collect()
}

/// Where the chain's entry `global` lies: the member, and the entry there.
pub fn locate(members: &[Member<'_>], global: u64) -> Option<(usize, u64)> {
    let m = members.partition_point(|m| m.first_entry + m.tree.entries <= global);
    members
        .get(m)
        .filter(|member| global >= member.first_entry)
        .map(|member| (m, global - member.first_entry))
}

/// How a member's columns differ from the first member's: columns it lacks,
/// columns it has besides, and columns of another type (path, first's type,
/// its type).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Mismatch {
    pub missing: Vec<String>,
    pub extra: Vec<String>,
    pub retyped: Vec<(String, String, String)>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let listed = |names: &[String]| {
            let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
            let more = names.len().saturating_sub(5);
            if more > 0 {
                format!("{} and {more} more", shown.join(", "))
            } else {
                shown.join(", ")
            }
        };
        let mut parts = Vec::new();
        if !self.missing.is_empty() {
            parts.push(format!("lacks {}", listed(&self.missing)));
        }
        if !self.extra.is_empty() {
            parts.push(format!("has besides {}", listed(&self.extra)));
        }
        if !self.retyped.is_empty() {
            let typed: Vec<String> = self
                .retyped
                .iter()
                .map(|(p, a, b)| format!("{p} is {b}, not {a}"))
                .collect();
            parts.push(listed(&typed));
        }
        write!(
            f,
            "its branches differ from the first file's: {}",
            parts.join("; ")
        )
    }
}

/// A column's type as `list_branches` names it (a leaf of a leaf list by its
/// layout), and its counter when `counted`: what must agree between members.
/// An RNTuple's collections count themselves (no counter branch), so a
/// TTree's column and an RNTuple's agree by type alone.
fn type_of(info: &ColumnInfo<'_>, counted: bool) -> String {
    let counted = match &info.counter {
        Some(c) if counted => format!(" counted by {c}"),
        _ => String::new(),
    };
    match (&info.layout, info.origin.leaf()) {
        (Err(_), _) => "unsupported".into(),
        (Ok(_), None) => format!("{}{counted}", info.origin.type_name()),
        (Ok(l), Some(_)) => format!(
            "{:?}{}",
            l.leaf_type,
            if l.inner > 1 {
                format!("[{}]", l.inner)
            } else {
                String::new()
            }
        ),
    }
}

/// A fingerprint of what a tree's columns are made of (each branch's name,
/// class, leaves and member, depth first; not its baskets, sizes or titles):
/// two trees with the same one have the same columns in the same order, so
/// lining them up needs no column by column comparison. Hashed within this
/// process only (never stored).
pub fn layout_signature(object: &super::TreeObject) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    object.kind().hash(&mut h);
    let tree = match object {
        super::TreeObject::TTree(tree) => tree,
        super::TreeObject::RNTuple(nt) => {
            for c in &nt.columns {
                (&c.path, &c.type_name, &c.counter).hash(&mut h);
            }
            return h.finish();
        }
    };
    fn branches(bs: &[Branch], h: &mut std::collections::hash_map::DefaultHasher) {
        bs.len().hash(h);
        for b in bs {
            (&b.name, &b.class_name, &b.element).hash(h);
            b.leaves.len().hash(h);
            for l in &b.leaves {
                let shape = (
                    l.len,
                    l.len_type,
                    l.is_unsigned,
                    l.element_id,
                    l.element_type,
                );
                (&l.name, &l.class_name, &l.count, shape).hash(h);
            }
            branches(&b.branches, h);
        }
    }
    branches(&tree.branches, &mut h);
    h.finish()
}

/// The order of `other`'s columns that lines them up with `first`'s
/// (`other.columns[order[i]]` is `first.columns[i]`), when both trees have the
/// same columns of the same types (in any order); else how they differ.
pub fn alignment(first: &TreeColumns<'_>, other: &TreeColumns<'_>) -> Result<Vec<usize>, Mismatch> {
    let by_path: std::collections::HashMap<&str, usize> = other
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.path.as_str(), i))
        .collect();
    let mut mismatch = Mismatch::default();
    let mut order = Vec::with_capacity(first.columns.len());
    for c in &first.columns {
        match by_path.get(c.path.as_str()) {
            None => mismatch.missing.push(c.path.clone()),
            Some(&i) => {
                let o = &other.columns[i];
                let counted = !c.origin.is_ntuple() && !o.origin.is_ntuple();
                let (a, b) = (type_of(c, counted), type_of(o, counted));
                if a != b {
                    mismatch.retyped.push((c.path.clone(), a, b));
                }
                order.push(i);
            }
        }
    }
    if other.columns.len() > order.len() {
        let known: std::collections::HashSet<&str> =
            first.columns.iter().map(|c| c.path.as_str()).collect();
        mismatch.extra = other
            .columns
            .iter()
            .filter(|c| !known.contains(c.path.as_str()))
            .map(|c| c.path.clone())
            .collect();
    }
    if mismatch == Mismatch::default() {
        Ok(order)
    } else {
        Err(mismatch)
    }
}

/// Puts a member's columns in the first member's order (`alignment`); its
/// recorded bounds, if any, must be added after.
pub fn align(tree: &mut TreeColumns<'_>, order: &[usize]) {
    let mut taken: Vec<Option<ColumnInfo<'_>>> = std::mem::take(&mut tree.columns)
        .into_iter()
        .map(Some)
        .collect();
    tree.columns = order
        .iter()
        .map(|&i| taken[i].take().expect("an order names each column once"))
        .collect();
}

/// Entries per cluster when no column is read (a constant cut).
pub(super) const EMPTY_CLUSTER: u64 = 1 << 16;

/// The entries each basket of the columns' branches holds.
fn ranges_of(
    tree: &TreeColumns<'_>,
    columns: &[usize],
) -> Result<Vec<Vec<Range<u64>>>, AnalysisError> {
    columns
        .iter()
        .map(|&c| Ok(tree.columns[c].origin.entry_ranges()?))
        .collect()
}

/// The clusters of `entries`: runs of entries whose baskets start and end
/// together in every column read (ROOT's clusters, in a file written with
/// them); runs of `EMPTY_CLUSTER` entries when no column is read.
pub fn clusters_of(
    tree: &TreeColumns<'_>,
    columns: &[usize],
    entries: Range<u64>,
) -> Result<Vec<Range<u64>>, AnalysisError> {
    Ok(cluster_cuts(&ranges_of(tree, columns)?, entries))
}

/// `clusters_of`, given each column's basket ranges.
pub(super) fn cluster_cuts(ranges: &[Vec<Range<u64>>], entries: Range<u64>) -> Vec<Range<u64>> {
    let mut cuts: Vec<u64> = match ranges.first() {
        Some(r) => r.iter().map(|r| r.start).collect(),
        None => (entries.start..entries.end)
            .step_by(EMPTY_CLUSTER as usize)
            .collect(),
    };
    for starts in ranges.iter().skip(1) {
        cuts.retain(|c| starts.binary_search_by(|r| r.start.cmp(c)).is_ok());
    }
    cuts.retain(|c| entries.contains(c) && *c > entries.start);
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut at = entries.start;
    for c in cuts.into_iter().chain(std::iter::once(entries.end)) {
        if c > at {
            out.push(at..c);
            at = c;
        }
    }
    out
}

/// The stored bytes of the chunks (baskets, or an RNTuple's clusters) of the
/// columns' branches or RNTuple columns (each once) that start within each
/// of `clusters` (ascending, disjoint): what reading each reads. A basket
/// kept inside the TTree object counts nothing (it came with the tree).
pub fn cluster_bytes(
    tree: &TreeColumns<'_>,
    columns: &[usize],
    clusters: &[Range<u64>],
) -> Vec<u64> {
    let mut bytes = vec![0; clusters.len()];
    let mut seen: Vec<*const ()> = Vec::new();
    for &c in columns {
        let origin = tree.columns[c].origin;
        // The leaves of a leaf list share their branch's baskets.
        if seen.contains(&origin.chunk_owner()) {
            continue;
        }
        seen.push(origin.chunk_owner());
        for (start, size) in origin.chunk_bytes() {
            let k = clusters.partition_point(|c| c.end <= start);
            if clusters.get(k).is_some_and(|c| c.contains(&start)) {
                bytes[k] += size;
            }
        }
    }
    bytes
}

/// What reading a tree's columns would cost, from its layout and recorded
/// bounds alone: its entries, its clusters, those the cut rules out, and the
/// bytes of the baskets of the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Estimate {
    pub entries: u64,
    pub clusters: u64,
    pub clusters_skipped: u64,
    pub bytes_to_read: u64,
}

impl Estimate {
    pub fn add(&mut self, other: &Estimate) {
        self.entries += other.entries;
        self.clusters += other.clusters;
        self.clusters_skipped += other.clusters_skipped;
        self.bytes_to_read += other.bytes_to_read;
    }
}

/// The estimate for a tree (a member's columns with their bounds), reading
/// `columns` under `cut`: the clusters a scan would make, and which of them
/// the cut rules out by the recorded ranges. Reads nothing.
pub fn estimate(
    tree: &TreeColumns<'_>,
    columns: &[usize],
    cut: Option<&Plan>,
) -> Result<Estimate, AnalysisError> {
    let mut e = Estimate {
        entries: tree.entries,
        ..Estimate::default()
    };
    let clusters = clusters_of(tree, columns, 0..tree.entries)?;
    let bytes = cluster_bytes(tree, columns, &clusters);
    for (cluster, bytes) in clusters.iter().zip(bytes) {
        e.clusters += 1;
        if tree.bounds.must_read(cut, cluster) {
            e.bytes_to_read += bytes;
        } else {
            e.clusters_skipped += 1;
        }
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clusters by hand: baskets starting at 0, 10, 20, 30 in one column and
    /// 0, 20 in another cut the entries at 20 only; a window not starting at a
    /// cut starts its first cluster there.
    #[test]
    fn clusters_are_cut_where_every_column_starts_a_basket() {
        let a = vec![0..10, 10..20, 20..30, 30..40];
        let b = vec![0..20, 20..40];
        assert_eq!(
            cluster_cuts(&[a.clone(), b.clone()], 0..40),
            vec![0..20, 20..40]
        );
        assert_eq!(
            cluster_cuts(std::slice::from_ref(&a), 5..35),
            vec![5..10, 10..20, 20..30, 30..35]
        );
        assert_eq!(
            cluster_cuts(&[], 0..70_000),
            vec![0..EMPTY_CLUSTER, EMPTY_CLUSTER..70_000]
        );
        assert!(cluster_cuts(&[a], 7..7).is_empty());
    }

    #[test]
    fn first_entries_number_the_chain() {
        assert_eq!(first_entries([5, 0, 7, 3]), vec![0, 5, 5, 12]);
        assert!(first_entries([]).is_empty());
    }
}
