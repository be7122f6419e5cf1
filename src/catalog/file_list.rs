//! The in-memory mirror of the `files` table, which `list_files`, `index_status`
//! and indexing's diffing read without a database transaction.
//!
//! Each root keeps a `BTreeMap` (path order, cheap updates) and, built lazily after
//! a change, a `Snapshot`: every relative path in one contiguous string with a
//! parallel array of entries. A scan of 100,000 names then walks two flat arrays
//! instead of chasing tree nodes.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::formats::Kind;
use crate::glob::Glob;
use crate::roots::RootId;

/// What the mirror keeps of a file: everything but the error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileEntry {
    pub id: u64,
    pub kind: Kind,
    pub size: u64,
    pub mtime_ns: i64,
    pub fingerprint: u64,
    pub failed: bool,
}

/// A set of kinds, as a bit mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindSet(u8);

impl KindSet {
    pub const ALL: KindSet = KindSet(0b1111);

    pub fn only(kind: Kind) -> KindSet {
        KindSet(1 << kind as u8)
    }

    pub fn contains(self, kind: Kind) -> bool {
        self.0 & (1 << kind as u8) != 0
    }
}

struct Span {
    start: u32,
    name: u32,
    end: u32,
}

/// An immutable, flat copy of one root's entries in path order. `text` holds every
/// relative path, each followed by a NUL (which no path or pattern contains), so a
/// literal can be searched for across all paths at once and no hit spans two.
pub struct Snapshot {
    text: String,
    spans: Vec<Span>,
    entries: Vec<FileEntry>,
    per_kind: [usize; 4],
}

impl Snapshot {
    fn build(files: &BTreeMap<Box<str>, FileEntry>) -> Snapshot {
        let mut text = String::with_capacity(files.keys().map(|k| k.len() + 1).sum());
        let mut spans = Vec::with_capacity(files.len());
        let mut entries = Vec::with_capacity(files.len());
        let mut per_kind = [0; 4];
        for (rel, entry) in files {
            let start = text.len() as u32;
            let name = start + rel.rfind('/').map_or(0, |i| i as u32 + 1);
            text.push_str(rel);
            spans.push(Span {
                start,
                name,
                end: text.len() as u32,
            });
            text.push('\0');
            entries.push(*entry);
            per_kind[entry.kind as usize] += 1;
        }
        Snapshot {
            text,
            spans,
            entries,
            per_kind,
        }
    }

    /// How many entries are of the kinds in `kinds`.
    pub fn count_of(&self, kinds: KindSet) -> usize {
        Kind::ALL
            .into_iter()
            .filter(|k| kinds.contains(*k))
            .map(|k| self.per_kind[k as usize])
            .sum()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn rel(&self, i: usize) -> &str {
        let s = &self.spans[i];
        &self.text[s.start as usize..s.end as usize]
    }

    pub fn name(&self, i: usize) -> &str {
        let s = &self.spans[i];
        &self.text[s.name as usize..s.end as usize]
    }

    pub fn entry(&self, i: usize) -> &FileEntry {
        &self.entries[i]
    }
}

#[derive(Default)]
struct RootFiles {
    files: BTreeMap<Box<str>, FileEntry>,
    snapshot: Option<Arc<Snapshot>>,
}

/// One mirror per configured root, in the order of `Roots::list()`.
pub struct FileList {
    roots: Vec<RwLock<RootFiles>>,
}

pub struct FileQuery<'a> {
    pub roots: &'a [RootId],
    pub kinds: KindSet,
    pub glob: Option<&'a Glob>,
    pub limit: usize,
}

#[derive(Debug, Clone)]
pub struct FileMatch {
    pub root_id: RootId,
    pub rel: String,
    pub entry: FileEntry,
}

/// Roots with at least this many entries are queried on two threads.
const PARALLEL_QUERY_MIN: usize = 20_000;

fn scan_range(
    snap: &Snapshot,
    root_id: RootId,
    range: std::ops::Range<usize>,
    q: &FileQuery<'_>,
) -> FileQueryResult {
    let mut out = FileQueryResult::default();
    for i in range {
        if !q.kinds.contains(snap.entry(i).kind) {
            continue;
        }
        out.total_scanned += 1;
        if q.glob
            .is_none_or(|g| g.matches_file(snap.name(i), snap.rel(i)))
        {
            out.record(snap, root_id, i, q.limit);
        }
    }
    out
}

/// How many entries `rarest_literal` samples.
const LITERAL_SAMPLE: usize = 256;
/// Above this estimated share of entries holding it, a literal search costs more
/// than matching every entry.
const LITERAL_MAX_SHARE: f64 = 0.25;

/// The pattern's literal held by the fewest entries, estimated on an evenly spaced
/// sample; `None` when even that one is common (or the root is small).
fn rarest_literal<'g>(snap: &Snapshot, glob: &'g Glob) -> Option<&'g [u8]> {
    let literals = glob.required_literals();
    if literals.is_empty() || snap.len() < LITERAL_SAMPLE {
        return None;
    }
    let step = snap.len() / LITERAL_SAMPLE;
    let sample: Vec<&[u8]> = (0..LITERAL_SAMPLE)
        .map(|i| snap.rel(i * step).as_bytes())
        .collect();
    let (share, literal) = literals
        .into_iter()
        .map(|lit| {
            let finder = memchr::memmem::Finder::new(lit);
            let holding = sample
                .iter()
                .filter(|rel| finder.find(rel).is_some())
                .count();
            (holding as f64 / LITERAL_SAMPLE as f64, lit)
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))?;
    (share <= LITERAL_MAX_SHARE).then_some(literal)
}

/// Finds the entries of `range` holding `literal` with one search over their text,
/// then matches only those: for selective patterns this skips most entries. Leaves
/// `total_scanned` to the caller.
fn scan_literal_hits(
    snap: &Snapshot,
    root_id: RootId,
    literal: &[u8],
    range: std::ops::Range<usize>,
    q: &FileQuery<'_>,
) -> FileQueryResult {
    let mut out = FileQueryResult::default();
    if range.is_empty() {
        return out;
    }
    let from = snap.spans[range.start].start as usize;
    let to = snap.spans[range.end - 1].end as usize;
    let mut entry = range.start;
    let mut last_checked = usize::MAX;
    for hit in memchr::memmem::find_iter(&snap.text.as_bytes()[from..to], literal) {
        // Hits come in text order; entries too: walk forward to the one holding it.
        while snap.spans[entry].end as usize <= from + hit {
            entry += 1;
        }
        if entry == last_checked {
            continue;
        }
        last_checked = entry;
        if q.kinds.contains(snap.entry(entry).kind)
            && q.glob
                .is_some_and(|g| g.matches_file(snap.name(entry), snap.rel(entry)))
        {
            out.record(snap, root_id, entry, q.limit);
        }
    }
    out
}

#[derive(Debug, Default)]
pub struct FileQueryResult {
    pub files: Vec<FileMatch>,
    /// Entries of the requested kinds that pass the pattern.
    pub total_matched: usize,
    /// Entries of the requested kinds that were looked at.
    pub total_scanned: usize,
}

impl FileQueryResult {
    /// Counts entry `i` as a match, keeping it while fewer than `limit` are kept.
    fn record(&mut self, snap: &Snapshot, root_id: RootId, i: usize, limit: usize) {
        self.total_matched += 1;
        if self.files.len() < limit {
            self.files.push(FileMatch {
                root_id,
                rel: snap.rel(i).to_string(),
                entry: *snap.entry(i),
            });
        }
    }

    /// Appends the result of a later range (or root).
    fn absorb(&mut self, later: FileQueryResult, limit: usize) {
        self.total_scanned += later.total_scanned;
        self.total_matched += later.total_matched;
        let room = limit.saturating_sub(self.files.len());
        self.files.extend(later.files.into_iter().take(room));
    }
}

/// Per-kind counts of one root.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct KindCounts {
    pub ok: u64,
    pub failed: u64,
}

impl FileList {
    pub fn new(root_count: usize) -> FileList {
        FileList {
            roots: (0..root_count).map(|_| RwLock::default()).collect(),
        }
    }

    pub(crate) fn insert(&self, root_id: RootId, rel: &str, entry: FileEntry) {
        let mut r = self.roots[root_id].write().expect("file list lock");
        r.files.insert(rel.into(), entry);
        r.snapshot = None;
    }

    pub(crate) fn clear(&self) {
        for root in &self.roots {
            *root.write().expect("file list lock") = RootFiles::default();
        }
    }

    pub(crate) fn remove(&self, root_id: RootId, rel: &str) {
        let mut r = self.roots[root_id].write().expect("file list lock");
        if r.files.remove(rel).is_some() {
            r.snapshot = None;
        }
    }

    /// The entry of the file `rel`, if listed.
    pub fn get(&self, root_id: RootId, rel: &str) -> Option<FileEntry> {
        let r = self.roots[root_id].read().expect("file list lock");
        r.files.get(rel).copied()
    }

    /// Entries at `rel` or below it (all entries when `rel` is empty).
    pub fn under(&self, root_id: RootId, rel: &str) -> Vec<(String, FileEntry)> {
        let r = self.roots[root_id].read().expect("file list lock");
        if rel.is_empty() {
            return r.files.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        }
        let dir_prefix = format!("{rel}/");
        r.files
            .range::<str, _>((std::ops::Bound::Included(rel), std::ops::Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(rel))
            .filter(|(k, _)| k.len() == rel.len() || k.starts_with(&dir_prefix))
            .map(|(k, v)| (k.to_string(), *v))
            .collect()
    }

    /// The current flat copy of a root's entries, built on first use after a change.
    pub fn snapshot(&self, root_id: RootId) -> Arc<Snapshot> {
        if let Some(s) = &self.roots[root_id].read().expect("file list lock").snapshot {
            return s.clone();
        }
        let mut r = self.roots[root_id].write().expect("file list lock");
        if let Some(s) = &r.snapshot {
            return s.clone();
        }
        let s = Arc::new(Snapshot::build(&r.files));
        r.snapshot = Some(s.clone());
        s
    }

    pub fn query(&self, q: &FileQuery<'_>) -> FileQueryResult {
        let mut out = FileQueryResult::default();
        for &root_id in q.roots {
            let snap = self.snapshot(root_id);
            let literal = q.glob.and_then(|g| rarest_literal(&snap, g));
            let scan = |range: std::ops::Range<usize>| match literal {
                Some(literal) => scan_literal_hits(&snap, root_id, literal, range, q),
                None => scan_range(&snap, root_id, range, q),
            };
            let mut part = if snap.len() >= PARALLEL_QUERY_MIN {
                // Two halves on two threads; the left half's matches come first in
                // path order, so the merge keeps the first `limit` of the whole.
                let mid = snap.len() / 2;
                let (mut left, right) = rayon::join(|| scan(0..mid), || scan(mid..snap.len()));
                left.absorb(right, q.limit);
                left
            } else {
                scan(0..snap.len())
            };
            if literal.is_some() {
                // The literal search skips entries; their count comes from the snapshot.
                part.total_scanned = snap.count_of(q.kinds);
            }
            out.absorb(part, q.limit);
        }
        out
    }

    /// Files per kind in a root, split into indexed and failed.
    pub fn counts(&self, root_id: RootId) -> BTreeMap<Kind, KindCounts> {
        let snap = self.snapshot(root_id);
        let mut counts: BTreeMap<Kind, KindCounts> = BTreeMap::new();
        for i in 0..snap.len() {
            let e = snap.entry(i);
            let c = counts.entry(e.kind).or_default();
            if e.failed {
                c.failed += 1;
            } else {
                c.ok += 1;
            }
        }
        counts
    }

    /// Relative paths of the failed files of a root (path order).
    pub fn failed(&self, root_id: RootId) -> Vec<String> {
        let snap = self.snapshot(root_id);
        (0..snap.len())
            .filter(|&i| snap.entry(i).failed)
            .map(|i| snap.rel(i).to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: Kind, failed: bool) -> FileEntry {
        FileEntry {
            id: 1,
            kind,
            size: 10,
            mtime_ns: 0,
            fingerprint: 0,
            failed,
        }
    }

    fn sample() -> FileList {
        let list = FileList::new(2);
        list.insert(0, "a/run_1.root", entry(Kind::Root, false));
        list.insert(0, "a/run_2.root", entry(Kind::Root, true));
        list.insert(0, "a/b/notes.md", entry(Kind::Document, false));
        list.insert(0, "ab.root", entry(Kind::Root, false));
        list.insert(1, "run_9.root", entry(Kind::Root, false));
        list
    }

    #[test]
    fn query_filters_by_kind_pattern_and_limit() {
        let list = sample();
        let glob = Glob::new("run_*").unwrap();
        let r = list.query(&FileQuery {
            roots: &[0, 1],
            kinds: KindSet::only(Kind::Root),
            glob: Some(&glob),
            limit: 2,
        });
        assert_eq!(r.total_scanned, 4);
        assert_eq!(r.total_matched, 3);
        let got: Vec<_> = r
            .files
            .iter()
            .map(|f| (f.root_id, f.rel.as_str()))
            .collect();
        assert_eq!(got, vec![(0, "a/run_1.root"), (0, "a/run_2.root")]);

        let r = list.query(&FileQuery {
            roots: &[0],
            kinds: KindSet::ALL,
            glob: None,
            limit: 100,
        });
        assert_eq!((r.total_scanned, r.total_matched), (4, 4));
    }

    #[test]
    fn large_roots_split_the_scan_and_keep_path_order() {
        let list = FileList::new(1);
        let n = PARALLEL_QUERY_MIN + 11;
        for i in 0..n {
            list.insert(0, &format!("f{i:06}.root"), entry(Kind::Root, false));
        }
        let glob = Glob::new("*1.root").unwrap();
        let r = list.query(&FileQuery {
            roots: &[0],
            kinds: KindSet::ALL,
            glob: Some(&glob),
            limit: 3,
        });
        assert_eq!(r.total_scanned, n);
        // Names ending in 1: one in ten of 0..n.
        assert_eq!(r.total_matched, (0..n).filter(|i| i % 10 == 1).count());
        let got: Vec<_> = r.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(got, vec!["f000001.root", "f000011.root", "f000021.root"]);
    }

    #[test]
    fn literal_search_agrees_with_a_plain_scan() {
        let list = FileList::new(1);
        let names = [
            "aa.root",
            "a",
            "ab/aa.md",
            "baab.root",
            "x2024y.root",
            "2024.h5",
            "zz/q2024.root",
        ];
        for n in names {
            let kind = crate::formats::kind_from_name(n).unwrap_or(Kind::Code);
            list.insert(0, n, entry(kind, false));
        }
        for pattern in [
            "*aa*",
            "*2024*.root",
            "aa.*",
            "*.root",
            "zz/*.root",
            "*aa?r*",
            "b*b.root",
        ] {
            let glob = Glob::new(pattern).unwrap();
            for kinds in [KindSet::ALL, KindSet::only(Kind::Root)] {
                let q = FileQuery {
                    roots: &[0],
                    kinds,
                    glob: Some(&glob),
                    limit: 100,
                };
                let snap = list.snapshot(0);
                for literal in glob.required_literals() {
                    let mut fast = scan_literal_hits(&snap, 0, literal, 0..3, &q);
                    fast.absorb(
                        scan_literal_hits(&snap, 0, literal, 3..snap.len(), &q),
                        q.limit,
                    );
                    fast.total_scanned = snap.count_of(q.kinds);
                    let slow = scan_range(&snap, 0, 0..snap.len(), &q);
                    let rels = |r: &FileQueryResult| {
                        r.files.iter().map(|f| f.rel.clone()).collect::<Vec<_>>()
                    };
                    assert_eq!(rels(&fast), rels(&slow), "{pattern}");
                    assert_eq!(
                        (fast.total_matched, fast.total_scanned),
                        (slow.total_matched, slow.total_scanned),
                        "{pattern}"
                    );
                }
            }
        }
    }

    #[test]
    fn under_selects_a_folder_not_its_siblings() {
        let list = sample();
        let got: Vec<_> = list.under(0, "a").into_iter().map(|(k, _)| k).collect();
        assert_eq!(got, vec!["a/b/notes.md", "a/run_1.root", "a/run_2.root"]);
        // "ab.root" shares the prefix "a" but is not inside folder "a".
        assert_eq!(list.under(0, "a/run_1.root").len(), 1);
        assert_eq!(list.under(0, "").len(), 4);
    }

    #[test]
    fn snapshots_follow_changes_and_counts_split_failures() {
        let list = sample();
        let before = list.snapshot(0);
        list.remove(0, "ab.root");
        assert_eq!(before.len(), 4);
        assert_eq!(list.snapshot(0).len(), 3);
        let counts = list.counts(0);
        assert_eq!(counts[&Kind::Root], KindCounts { ok: 1, failed: 1 });
        assert_eq!(counts[&Kind::Document], KindCounts { ok: 1, failed: 0 });
        assert_eq!(list.failed(0), vec!["a/run_2.root"]);
    }
}
