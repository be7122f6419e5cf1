//! An in-memory index of every symbol name, for `find_symbol`.
//!
//! Why in memory rather than a redb table: a lookup must answer in about a
//! millisecond over a million symbols, with prefix, substring and
//! case-insensitive matching. Per file, the index keeps the decoded symbols; for
//! searching, a flat copy (`Lookup`) keeps every lower-cased name sorted (exact
//! and prefix matches are a binary search) and all lower-cased names and
//! qualified names in one string (a substring is one `memmem` pass). The flat
//! copy is rebuilt on the first search after a batch changed the index, so a
//! burst of indexing pays for one rebuild, not one per file.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use crate::formats::code::{CodeFile, Language, Symbol, SymbolKind};

/// One file's symbols as the index keeps them.
struct IndexedFile {
    root: usize,
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
    /// Entry numbers ordered by lower-cased name.
    by_name: Vec<u32>,
    /// Every entry's lower-cased name and qualified name, "name\tqualified\n",
    /// entry after entry; `starts[i]` is where entry i begins.
    text: String,
    starts: Vec<u32>,
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
    pub root: usize,
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
            .map(|(id, root, rel, file)| (id, Arc::new(indexed(root, rel, file))))
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

    pub fn insert(&self, file_id: u64, root: usize, rel: &str, file: CodeFile) {
        let mut inner = self.inner.write().expect("symbol index lock");
        inner
            .files
            .insert(file_id, Arc::new(indexed(root, rel.to_string(), file)));
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

fn indexed(root: usize, rel: String, file: CodeFile) -> IndexedFile {
    IndexedFile {
        root,
        rel,
        language: file.language,
        symbols: file.symbols,
    }
}

impl Lookup {
    fn build(files: &HashMap<u64, Arc<IndexedFile>>) -> Lookup {
        let mut ids: Vec<&u64> = files.keys().collect();
        ids.sort();
        let mut lookup = Lookup {
            entries: Vec::new(),
            names: Vec::new(),
            by_name: Vec::new(),
            text: String::new(),
            starts: Vec::new(),
        };
        for id in ids {
            let file = &files[id];
            for (i, s) in file.symbols.iter().enumerate() {
                lookup.entries.push((file.clone(), i as u32));
                lookup.names.push(s.name.to_lowercase().into());
                lookup.starts.push(lookup.text.len() as u32);
                lookup.text.push_str(&s.name.to_lowercase());
                lookup.text.push('\t');
                lookup.text.push_str(&s.qualified_name.to_lowercase());
                lookup.text.push('\n');
            }
        }
        let mut by_name: Vec<u32> = (0..lookup.entries.len() as u32).collect();
        by_name.sort_by(|&a, &b| lookup.names[a as usize].cmp(&lookup.names[b as usize]));
        lookup.by_name = by_name;
        lookup
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

    /// The entry whose text contains byte `offset`.
    fn entry_at(&self, offset: usize) -> u32 {
        (self.starts.partition_point(|&s| s as usize <= offset) - 1) as u32
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
        if needle.is_empty() {
            return;
        }
        // A qualified query (`Calibration::apply`) is looked up by its last part.
        let last = needle
            .rsplit("::")
            .next()
            .and_then(|p| p.rsplit('.').next())
            .unwrap_or(needle);
        let qualified = last.len() != needle.len();
        let lookup = self.lookup;
        for &e in lookup.name_prefix_range(last) {
            let s = lookup.symbol(e);
            let exact = lookup.names[e as usize].len() == last.len()
                && (!qualified || qualified_matches(&s.qualified_name, needle));
            if exact && !self.offer(e, MatchRank::Exact) {
                return;
            }
        }
        if !qualified {
            for &e in lookup.name_prefix_range(last) {
                if !self.offer(e, MatchRank::Prefix) {
                    return;
                }
            }
        }
        let finder = memchr::memmem::Finder::new(needle.as_bytes());
        let mut from = 0;
        while let Some(at) = finder.find(&lookup.text.as_bytes()[from..]) {
            let e = lookup.entry_at(from + at);
            if !self.offer(e, MatchRank::Substring) {
                return;
            }
            // Go on from the next entry: one hit per entry is enough.
            from = lookup
                .starts
                .get(e as usize + 1)
                .map_or(lookup.text.len(), |&s| s as usize);
        }
    }

    /// Adds an entry unless filtered out or already there; false when the limit
    /// is reached and the search should stop.
    fn offer(&mut self, entry: u32, rank: MatchRank) -> bool {
        let (file, i) = &self.lookup.entries[entry as usize];
        let symbol = &file.symbols[*i as usize];
        if self.query.kind.is_some_and(|k| k != symbol.kind)
            || self.query.language.is_some_and(|l| l != file.language)
            || self.seen.contains(&entry)
        {
            return true;
        }
        if self.hits.len() == self.query.limit {
            self.more = true;
            return false;
        }
        self.seen.insert(entry);
        self.hits.push(SymbolHit {
            root: file.root,
            rel: file.rel.clone(),
            language: file.language,
            symbol: symbol.clone(),
            rank,
        });
        true
    }
}

/// Whether a qualified query names this symbol: the whole qualified name, or
/// its tail after a scope separator (`Calibration::apply` in `calo::Calibration::apply`).
fn qualified_matches(qualified_name: &str, needle: &str) -> bool {
    let q = qualified_name.to_lowercase();
    let needle = needle.replace('.', "::");
    let q = q.replace('.', "::");
    q == needle || q.ends_with(&format!("::{needle}"))
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
}
