//! An in-memory index of every symbol name, for `find_symbol`.
//!
//! Why in memory rather than a redb table: a lookup must answer in about a
//! millisecond over a million symbols, with prefix, substring and
//! case-insensitive matching. Per file, the index keeps the decoded symbols; for
//! searching, a flat copy (`Lookup`) keeps every lower-cased name sorted (exact
//! and prefix matches are a binary search) and each *distinct* lower-cased name
//! once in one string, so a substring is one `memmem` pass over a few bytes per
//! distinct name (code bases repeat names: `get`, `size`, `operator==`), not
//! over every qualified name. A query with a scope (`calo::Calib`) matches its
//! last part against names and checks the scope on the candidates. The flat copy
//! is rebuilt on the first search after a batch changed the index, so a burst of
//! indexing pays for one rebuild, not one per file.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use crate::formats::code::{CodeFile, Language, Symbol, SymbolKind};
use crate::roots::RootId;

/// One file's symbols as the index keeps them.
struct IndexedFile {
    root_id: RootId,
    rel: String,
    language: Language,
    symbols: Vec<Symbol>,
}

#[derive(Default)]
struct Inner {
    files: HashMap<u64, Arc<IndexedFile>>,
    lookup: Option<Arc<Lookup>>,
}

#[derive(Default)]
pub struct SymbolIndex {
    inner: RwLock<Inner>,
}

/// A flat, searchable copy of the index.
struct Lookup {
    /// (file, symbol position in the file) per entry.
    entries: Vec<(Arc<IndexedFile>, u32)>,
    /// Lower-cased names, parallel to `entries`.
    names: Vec<Box<str>>,
    /// Kind and language, parallel to `entries`: the filters read these
    /// instead of following each entry to its file.
    filters: Vec<(SymbolKind, Language)>,
    /// Entry numbers ordered by lower-cased name (then entry number).
    by_name: Vec<u32>,
    /// Every distinct lower-cased name, "name\n" after "name\n", in name order;
    /// `distinct[i]` is where distinct name i begins in `text` and where its
    /// run of entries begins in `by_name`.
    text: String,
    distinct: Vec<Distinct>,
}

#[derive(Clone, Copy)]
struct Distinct {
    text_start: u32,
    run_start: u32,
}

/// What `find_symbol` asks.
#[derive(Debug, Clone)]
pub struct SymbolQuery<'a> {
    pub name: &'a str,
    pub kind: Option<SymbolKind>,
    pub language: Option<Language>,
    pub limit: usize,
}

/// How well a symbol matched: exact beats prefix beats substring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MatchRank {
    Exact,
    Prefix,
    Substring,
}

impl MatchRank {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchRank::Exact => "exact",
            MatchRank::Prefix => "prefix",
            MatchRank::Substring => "substring",
        }
    }
}

#[derive(Debug, Clone)]
pub struct SymbolHit {
    pub root_id: RootId,
    pub rel: String,
    pub language: Language,
    pub symbol: Symbol,
    pub rank: MatchRank,
}

impl SymbolIndex {
    /// Replaces the whole index (at open).
    pub fn load(&self, files: impl Iterator<Item = (u64, usize, String, CodeFile)>) {
        let mut inner = self.inner.write().expect("symbol index lock");
        inner.files = files
            .map(|(id, root_id, rel, file)| (id, Arc::new(indexed(root_id, rel, file))))
            .collect();
        inner.lookup = None;
    }

    /// Forgets a file's symbols (it changed or went).
    pub fn remove(&self, file_id: u64) {
        let mut inner = self.inner.write().expect("symbol index lock");
        if inner.files.remove(&file_id).is_some() {
            inner.lookup = None;
        }
    }

    pub fn insert(&self, file_id: u64, root_id: RootId, rel: &str, file: CodeFile) {
        let mut inner = self.inner.write().expect("symbol index lock");
        inner
            .files
            .insert(file_id, Arc::new(indexed(root_id, rel.to_string(), file)));
        inner.lookup = None;
    }

    pub fn symbol_count(&self) -> usize {
        let inner = self.inner.read().expect("symbol index lock");
        inner.files.values().map(|f| f.symbols.len()).sum()
    }

    /// The best matches for `q.name`, exact first, then prefix, then substring,
    /// at most `q.limit`; the flag says whether more matched.
    pub fn search(&self, q: &SymbolQuery<'_>) -> (Vec<SymbolHit>, bool) {
        let lookup = self.lookup();
        let needle = q.name.to_lowercase();
        let mut search = Search {
            lookup: &lookup,
            query: q,
            hits: Vec::new(),
            seen: HashSet::new(),
            more: false,
        };
        search.run(&needle);
        (search.hits, search.more)
    }

    fn lookup(&self) -> Arc<Lookup> {
        if let Some(l) = &self.inner.read().expect("symbol index lock").lookup {
            return l.clone();
        }
        let mut inner = self.inner.write().expect("symbol index lock");
        if let Some(l) = &inner.lookup {
            return l.clone();
        }
        let lookup = Arc::new(Lookup::build(&inner.files));
        inner.lookup = Some(lookup.clone());
        lookup
    }
}

fn indexed(root_id: RootId, rel: String, file: CodeFile) -> IndexedFile {
    IndexedFile {
        root_id,
        rel,
        language: file.language,
        symbols: file.symbols,
    }
}

impl Lookup {
    fn build(files: &HashMap<u64, Arc<IndexedFile>>) -> Lookup {
        let mut ids: Vec<&u64> = files.keys().collect();
        ids.sort();
        let mut entries = Vec::new();
        let mut names: Vec<Box<str>> = Vec::new();
        let mut filters = Vec::new();
        for id in ids {
            let file = &files[id];
            for (i, s) in file.symbols.iter().enumerate() {
                entries.push((file.clone(), i as u32));
                names.push(s.name.to_lowercase().into());
                filters.push((s.kind, file.language));
            }
        }
        let mut by_name: Vec<u32> = (0..entries.len() as u32).collect();
        // Stable: entries of one name stay in file order.
        by_name.sort_by(|&a, &b| names[a as usize].cmp(&names[b as usize]));
        let mut text = String::new();
        let mut distinct = Vec::new();
        for (run_start, &e) in by_name.iter().enumerate() {
            let name = &names[e as usize];
            let new = distinct.last().is_none_or(|d: &Distinct| {
                *names[by_name[d.run_start as usize] as usize] != **name
            });
            if new {
                distinct.push(Distinct {
                    text_start: text.len() as u32,
                    run_start: run_start as u32,
                });
                text.push_str(name);
                text.push('\n');
            }
        }
        Lookup {
            entries,
            names,
            filters,
            by_name,
            text,
            distinct,
        }
    }

    /// Entries whose lower-cased name starts with `prefix`, in name order.
    fn name_prefix_range(&self, prefix: &str) -> &[u32] {
        let start = self
            .by_name
            .partition_point(|&e| &*self.names[e as usize] < prefix);
        let len =
            self.by_name[start..].partition_point(|&e| self.names[e as usize].starts_with(prefix));
        &self.by_name[start..start + len]
    }

    fn symbol(&self, entry: u32) -> &Symbol {
        let (file, i) = &self.entries[entry as usize];
        &file.symbols[*i as usize]
    }

    /// The distinct name whose text holds byte `offset`.
    fn distinct_at(&self, offset: usize) -> usize {
        self.distinct
            .partition_point(|d| d.text_start as usize <= offset)
            - 1
    }

    /// The entries of distinct name `d`, and where the next name's text begins.
    fn run(&self, d: usize) -> (&[u32], usize) {
        let start = self.distinct[d].run_start as usize;
        match self.distinct.get(d + 1) {
            Some(next) => (
                &self.by_name[start..next.run_start as usize],
                next.text_start as usize,
            ),
            None => (&self.by_name[start..], self.text.len()),
        }
    }
}

struct Search<'a> {
    lookup: &'a Lookup,
    query: &'a SymbolQuery<'a>,
    hits: Vec<SymbolHit>,
    seen: HashSet<u32>,
    more: bool,
}

impl Search<'_> {
    fn run(&mut self, needle: &str) {
        // A query with a scope (`Calibration::apply`, `pkg.mod.f`) is looked up
        // by its last part; the scope is checked on each candidate. Trailing
        // separators (`Calibration::`) name the scope itself.
        let needle = needle.trim_end_matches([':', '.']).replace('.', "::");
        let last = needle.rsplit("::").next().unwrap_or(&needle).to_string();
        if last.is_empty() {
            return;
        }
        let scope = (last.len() != needle.len()).then_some(needle.as_str());
        let lookup = self.lookup;
        let candidates = lookup.name_prefix_range(&last);
        // Exact names sort first in their prefix range.
        for &e in candidates {
            if lookup.names[e as usize].len() != last.len() {
                break;
            }
            let fits =
                scope.is_none_or(|s| qualified_ends_with(&lookup.symbol(e).qualified_name, s));
            if fits && !self.offer(e, MatchRank::Exact) {
                return;
            }
        }
        if scope.is_none() {
            for &e in candidates {
                if !self.offer(e, MatchRank::Prefix) {
                    return;
                }
            }
        }
        let finder = memchr::memmem::Finder::new(last.as_bytes());
        let mut from = 0;
        while let Some(at) = finder.find(&lookup.text.as_bytes()[from..]) {
            let d = lookup.distinct_at(from + at);
            let (run, next) = lookup.run(d);
            for &e in run {
                let fits = scope.is_none_or(|s| self.in_scope(e, s, false));
                if fits && !self.offer(e, MatchRank::Substring) {
                    return;
                }
            }
            // One hit per distinct name is enough.
            from = next;
        }
    }

    /// Whether the entry passes the query's kind and language filters.
    fn wanted(&self, entry: u32) -> bool {
        let (kind, language) = self.lookup.filters[entry as usize];
        self.query.kind.is_none_or(|k| k == kind)
            && self.query.language.is_none_or(|l| l == language)
    }

    /// Whether the entry's qualified name fits the query's scope (`ends`: the
    /// scoped name ends it; else it occurs anywhere in it).
    fn in_scope(&self, entry: u32, scope: &str, ends: bool) -> bool {
        if !self.wanted(entry) {
            return false;
        }
        let (file, i) = &self.lookup.entries[entry as usize];
        let qualified = &file.symbols[*i as usize].qualified_name;
        if ends {
            qualified_ends_with(qualified, scope)
        } else {
            qualified_contains(qualified, scope)
        }
    }

    /// Adds an entry unless filtered out or already there; false when the limit
    /// is reached and the search should stop.
    fn offer(&mut self, entry: u32, rank: MatchRank) -> bool {
        if !self.wanted(entry) || self.seen.contains(&entry) {
            return true;
        }
        let (file, i) = &self.lookup.entries[entry as usize];
        let symbol = &file.symbols[*i as usize];
        if self.hits.len() == self.query.limit {
            self.more = true;
            return false;
        }
        self.seen.insert(entry);
        self.hits.push(SymbolHit {
            root_id: file.root_id,
            rel: file.rel.clone(),
            language: file.language,
            symbol: symbol.clone(),
            rank,
        });
        true
    }
}

/// Whether `qualified_name` (scopes joined by `::` or `.`) equals `needle`
/// (lower-cased, scopes joined by `::`) from byte `at` on, ignoring case and
/// reading `.` as `::`. Allocates only for names that are not ASCII.
fn matches_at(qualified_name: &str, at: usize, needle: &str) -> Option<usize> {
    let (q, n) = (qualified_name.as_bytes(), needle.as_bytes());
    let (mut i, mut j) = (at, 0);
    while j < n.len() {
        if i < q.len() && q[i] == b'.' && n[j..].starts_with(b"::") {
            i += 1;
            j += 2;
        } else if i < q.len() && q[i].eq_ignore_ascii_case(&n[j]) {
            i += 1;
            j += 1;
        } else {
            return None;
        }
    }
    Some(i)
}

/// `qualified_name` lower-cased with `::` for every scope separator.
fn normalised(qualified_name: &str) -> String {
    qualified_name.to_lowercase().replace('.', "::")
}

/// Whether a scoped query names this symbol: the whole qualified name, or its
/// tail after a scope separator (`Calibration::apply` in `calo::Calibration::apply`).
fn qualified_ends_with(qualified_name: &str, needle: &str) -> bool {
    if !qualified_name.is_ascii() {
        let q = normalised(qualified_name);
        return q == needle || q.ends_with(&format!("::{needle}"));
    }
    let q = qualified_name.as_bytes();
    (0..q.len()).any(|at| {
        (at == 0 || q[at - 1] == b':' || q[at - 1] == b'.')
            && matches_at(qualified_name, at, needle) == Some(q.len())
    })
}

/// Whether a scoped query occurs anywhere in the qualified name.
fn qualified_contains(qualified_name: &str, needle: &str) -> bool {
    if !qualified_name.is_ascii() {
        return normalised(qualified_name).contains(needle);
    }
    (0..qualified_name.len()).any(|at| matches_at(qualified_name, at, needle).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(name: &str, qualified: &str, kind: SymbolKind) -> Symbol {
        Symbol {
            name: name.into(),
            qualified_name: qualified.into(),
            kind,
            line: 1,
            column: 0,
            end_line: 1,
            parent: None,
        }
    }

    fn index() -> SymbolIndex {
        let idx = SymbolIndex::default();
        let file = |symbols| CodeFile {
            language: Language::Cpp,
            symbols,
            include_count: 0,
            has_errors: false,
            error_ranges: vec![],
            includes: vec![],
            class_info: vec![],
            lines: Default::default(),
        };
        idx.insert(
            1,
            0,
            "a.cpp",
            file(vec![
                sym("Calibration", "calo::Calibration", SymbolKind::Class),
                sym("apply", "calo::Calibration::apply", SymbolKind::Method),
                sym("applyAll", "calo::applyAll", SymbolKind::Function),
                sym("reapply", "reapply", SymbolKind::Function),
            ]),
        );
        idx.insert(
            2,
            0,
            "b.cpp",
            file(vec![sym("apply", "other::apply", SymbolKind::Function)]),
        );
        idx
    }

    fn names(idx: &SymbolIndex, name: &str, limit: usize) -> (Vec<(String, &'static str)>, bool) {
        let q = SymbolQuery {
            name,
            kind: None,
            language: None,
            limit,
        };
        let (hits, more) = idx.search(&q);
        (
            hits.into_iter()
                .map(|h| (h.symbol.qualified_name, h.rank.as_str()))
                .collect(),
            more,
        )
    }

    #[test]
    fn exact_then_prefix_then_substring_case_insensitively() {
        let idx = index();
        let (got, more) = names(&idx, "APPLY", 10);
        assert_eq!(
            got,
            vec![
                ("calo::Calibration::apply".into(), "exact"),
                ("other::apply".into(), "exact"),
                ("calo::applyAll".into(), "prefix"),
                ("reapply".into(), "substring"),
            ]
        );
        assert!(!more);
        let (got, more) = names(&idx, "apply", 2);
        assert_eq!(got.len(), 2);
        assert!(more);
    }

    #[test]
    fn qualified_queries_match_a_scope_tail() {
        let idx = index();
        let (got, _) = names(&idx, "Calibration::apply", 10);
        assert_eq!(got[0], ("calo::Calibration::apply".into(), "exact"));
        assert_eq!(got.len(), 1);
        idx.remove(1);
        assert_eq!(names(&idx, "Calibration::apply", 10).0, vec![]);
        assert_eq!(idx.symbol_count(), 1);
    }

    #[test]
    fn substrings_match_names_and_scopes_are_checked_on_candidates() {
        let idx = index();
        // A scope's name inside a qualified name does not make its members match.
        assert_eq!(
            names(&idx, "LIBRA", 10).0,
            vec![("calo::Calibration".into(), "substring")]
        );
        assert_eq!(
            names(&idx, "Calibration::app", 10).0,
            vec![("calo::Calibration::apply".into(), "substring")]
        );
        assert_eq!(
            names(&idx, "calo.Calibration.", 10).0,
            vec![("calo::Calibration".into(), "exact")]
        );
        assert_eq!(names(&idx, "::", 10).0, vec![]);
    }

    #[test]
    fn scopes_compare_without_case_and_with_either_separator() {
        assert!(qualified_ends_with(
            "calo::Calibration::apply",
            "calibration::apply"
        ));
        assert!(qualified_ends_with(
            "calo.Calibration.apply",
            "calibration::apply"
        ));
        assert!(!qualified_ends_with(
            "calo::XCalibration::apply",
            "calibration::apply"
        ));
        assert!(qualified_ends_with(
            "Calibration::apply",
            "calibration::apply"
        ));
        assert!(qualified_contains("calo.Calibration.apply", "o::calib"));
        assert!(!qualified_contains(
            "calo::Calibration",
            "calibration::apply"
        ));
        assert!(qualified_contains("ns::Größe::f", "größe::f"));
    }
}
