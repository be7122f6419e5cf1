//! The in-memory mirror of the `files` table, which `list_files`, `index_status`
//! and the index pipeline's diffing read without a database transaction.
//!
//! Each root keeps a `BTreeMap` (path order, cheap updates) and, built lazily after
//! a change, a `Snapshot`: every relative path in one contiguous string with a
//! parallel array of entries. A scan of 100,000 names then walks two flat arrays
//! instead of chasing tree nodes.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::formats::Kind;
use crate::glob::Glob;

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

/// An immutable, flat copy of one root's entries in path order.
pub struct Snapshot {
    text: String,
    spans: Vec<Span>,
    entries: Vec<FileEntry>,
}

impl Snapshot {
    fn build(files: &BTreeMap<Box<str>, FileEntry>) -> Snapshot {
        let mut text = String::with_capacity(files.keys().map(|k| k.len()).sum());
        let mut spans = Vec::with_capacity(files.len());
        let mut entries = Vec::with_capacity(files.len());
        for (rel, entry) in files {
            let start = text.len() as u32;
            let name = start + rel.rfind('/').map_or(0, |i| i as u32 + 1);
            text.push_str(rel);
            spans.push(Span {
                start,
                name,
                end: text.len() as u32,
            });
            entries.push(*entry);
        }
        Snapshot {
            text,
            spans,
            entries,
        }
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
    pub roots: &'a [usize],
    pub kinds: KindSet,
    pub glob: Option<&'a Glob>,
    pub limit: usize,
}

#[derive(Debug, Clone)]
pub struct FileMatch {
    pub root: usize,
    pub rel: String,
    pub entry: FileEntry,
}

/// Roots with at least this many entries are queried on two threads.
const PARALLEL_QUERY_MIN: usize = 20_000;

fn scan_range(
    snap: &Snapshot,
    root: usize,
    range: std::ops::Range<usize>,
    q: &FileQuery<'_>,
) -> FileQueryResult {
    let mut out = FileQueryResult::default();
    for i in range {
        if !q.kinds.contains(snap.entry(i).kind) {
            continue;
        }
        out.total_scanned += 1;
        if let Some(glob) = q.glob
            && !glob.matches_file(snap.name(i), snap.rel(i))
        {
            continue;
        }
        out.total_matched += 1;
        if out.files.len() < q.limit {
            out.files.push(FileMatch {
                root,
                rel: snap.rel(i).to_string(),
                entry: *snap.entry(i),
            });
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

    pub fn root_count(&self) -> usize {
        self.roots.len()
    }

    pub(crate) fn insert(&self, root: usize, rel: &str, entry: FileEntry) {
        let mut r = self.roots[root].write().expect("file list lock");
        r.files.insert(rel.into(), entry);
        r.snapshot = None;
    }

    pub(crate) fn clear(&self) {
        for root in &self.roots {
            *root.write().expect("file list lock") = RootFiles::default();
        }
    }

    pub(crate) fn remove(&self, root: usize, rel: &str) {
        let mut r = self.roots[root].write().expect("file list lock");
        if r.files.remove(rel).is_some() {
            r.snapshot = None;
        }
    }

    pub fn get(&self, root: usize, rel: &str) -> Option<FileEntry> {
        self.roots[root]
            .read()
            .expect("file list lock")
            .files
            .get(rel)
            .copied()
    }

    /// Entries at `rel` or below it (all entries when `rel` is empty).
    pub fn under(&self, root: usize, rel: &str) -> Vec<(String, FileEntry)> {
        let r = self.roots[root].read().expect("file list lock");
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
    pub fn snapshot(&self, root: usize) -> Arc<Snapshot> {
        if let Some(s) = &self.roots[root].read().expect("file list lock").snapshot {
            return s.clone();
        }
        let mut r = self.roots[root].write().expect("file list lock");
        if let Some(s) = &r.snapshot {
            return s.clone();
        }
        let s = Arc::new(Snapshot::build(&r.files));
        r.snapshot = Some(s.clone());
        s
    }

    pub fn query(&self, q: &FileQuery<'_>) -> FileQueryResult {
        let mut out = FileQueryResult::default();
        for &root in q.roots {
            let snap = self.snapshot(root);
            let part = if snap.len() >= PARALLEL_QUERY_MIN {
                // Two halves on two threads; the left half's matches come first in
                // path order, so the merge keeps the first `limit` of the whole.
                let mid = snap.len() / 2;
                let (mut left, right) = rayon::join(
                    || scan_range(&snap, root, 0..mid, q),
                    || scan_range(&snap, root, mid..snap.len(), q),
                );
                left.absorb(right, q.limit);
                left
            } else {
                scan_range(&snap, root, 0..snap.len(), q)
            };
            out.absorb(part, q.limit);
        }
        out
    }

    /// Files per kind in a root, split into indexed and failed.
    pub fn counts(&self, root: usize) -> BTreeMap<Kind, KindCounts> {
        let snap = self.snapshot(root);
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
    pub fn failed(&self, root: usize) -> Vec<String> {
        let snap = self.snapshot(root);
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
        let got: Vec<_> = r.files.iter().map(|f| (f.root, f.rel.as_str())).collect();
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
