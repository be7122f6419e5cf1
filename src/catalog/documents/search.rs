//! Running a query over the text index: which lines of which documents match.
//!
//! The semantics: a line matches a term or phrase when the line's words,
//! lowercased and joined by single spaces, contain the term's words joined the
//! same way. For one word that is exactly a case-insensitive substring search of
//! the line (a substring made of letters and digits lies inside one word); a
//! phrase also matches across punctuation and runs of spaces.
//!
//! It is computed from the index alone, exactly:
//! 1. Each query word is expanded, through the vocabulary, into the index words
//!    it can be part of: for a one-word term the words containing it; in a
//!    phrase the first word must end with its word, the last start with its
//!    word, the ones between be equal (plus, with `fuzzy`, words a few edits
//!    away).
//! 2. A tantivy query over those terms (AND, OR; a NOT matches every document,
//!    since a document holding the excluded word can still have lines without
//!    it) gives the candidate documents.
//! 3. For each candidate, the positions of the terms and of the line breaks give
//!    each term's lines (a phrase's words at consecutive positions, which are on
//!    one line because every line break takes a position), and the query is
//!    evaluated line by line over those sets.
//!
//! No text is read: the tools read only the lines they show, from the catalog.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Instant;

use tantivy::collector::DocSetCollector;
use tantivy::columnar::{Column, StrColumn};
use tantivy::postings::Postings;
use tantivy::postings::SegmentPostings;
use tantivy::query::{AllQuery, BooleanQuery, Occur, Query, TermQuery, TermSetQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, SegmentReader, TERMINATED, Term};

use super::query::Expr;
use super::text_index::TextIndex;
use super::tokenizer::LINE_BREAK;
use super::vocabulary::{Fit, fuzzy_edits};
use crate::job::Job;

/// Which documents a search covers, by catalog path ("root name/relative path").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    All,
    /// Documents below this folder (its sub-folders included).
    Folder(String),
    Document(String),
}

#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Matches returned (all are counted).
    pub max_results: usize,
    pub fuzzy: bool,
    /// When to give up with `SearchError::Timeout`.
    pub deadline: Option<Instant>,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentHit {
    pub file_id: u64,
    /// Catalog path, "root name/relative path".
    pub path: String,
    /// 1-based, counted through the document's whole text.
    pub line: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchOutcome {
    /// The first `max_results` matching lines, by document path, then line.
    pub hits: Vec<DocumentHit>,
    /// Every matching line.
    pub total_matches: usize,
    pub documents_matched: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("the search took too long")]
    Timeout,
    /// The caller's job was stopped (its client went away or cancelled).
    #[error("the search was stopped")]
    Stopped,
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

impl From<tantivy::TantivyError> for SearchError {
    fn from(e: tantivy::TantivyError) -> Self {
        SearchError::Failed(e.into())
    }
}

impl From<std::io::Error> for SearchError {
    fn from(e: std::io::Error) -> Self {
        SearchError::Failed(e.into())
    }
}

/// A term or phrase with, for each of its words, the index terms it stands for.
struct Leaf {
    slots: Vec<Vec<String>>,
}

/// The query with its terms and phrases replaced by leaf numbers.
enum Node {
    Leaf(usize),
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
}

/// The documents a node can match, as a tantivy query.
enum Candidates {
    Everything,
    Nothing,
    Some(Box<dyn Query>),
}

impl TextIndex {
    pub fn search(
        &self,
        expr: &Expr,
        scope: &Scope,
        options: &SearchOptions,
        job: &Job,
    ) -> Result<SearchOutcome, SearchError> {
        let searcher = self.searcher();
        self.vocabulary.catch_up(&searcher, self.fields.text)?;
        let mut leaves = Vec::new();
        let root = self.plan(expr, options.fuzzy, &mut leaves);
        let query = match (self.candidates(&root, &leaves), scope) {
            (Candidates::Nothing, _) => return Ok(SearchOutcome::default()),
            (Candidates::Everything, Scope::Document(path)) => self.path_query(path),
            (Candidates::Everything, _) => Box::new(AllQuery),
            (Candidates::Some(q), Scope::Document(path)) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, q),
                (Occur::Must, self.path_query(path)),
            ])),
            (Candidates::Some(q), _) => q,
        };
        let mut by_segment: BTreeMap<u32, Vec<DocId>> = BTreeMap::new();
        for address in searcher.search(&query, &DocSetCollector)? {
            by_segment
                .entry(address.segment_ord)
                .or_default()
                .push(address.doc_id);
        }
        if job.is_stopped() {
            return Err(SearchError::Stopped);
        }
        let folder = match scope {
            Scope::Folder(f) => Some(format!("{f}/")),
            _ => None,
        };
        let mut found = Vec::new();
        let candidates: u64 = by_segment.values().map(|d| d.len() as u64).sum();
        let mut examined = 0u64;
        for (ord, mut docs) in by_segment {
            docs.sort_unstable();
            let segment = searcher.segment_reader(ord);
            let mut lines = SegmentLines::open(self, segment, &leaves)?;
            for (n, doc) in docs.into_iter().enumerate() {
                // A document costs milliseconds at most: checking before each
                // one stops the work promptly when nobody waits for it.
                if job.is_stopped() {
                    return Err(SearchError::Stopped);
                }
                if n % 32 == 0 && options.deadline.is_some_and(|d| Instant::now() > d) {
                    return Err(SearchError::Timeout);
                }
                job.progress(examined, Some(candidates));
                examined += 1;
                let path = lines.path(doc)?;
                if folder
                    .as_ref()
                    .is_some_and(|f| !path.starts_with(f.as_str()))
                {
                    continue;
                }
                let matched = lines.matching(doc, &root);
                if !matched.is_empty() {
                    found.push(DocumentLines {
                        file_id: lines.file_id(doc),
                        path,
                        count: matched.len(),
                        lines: matched.into_iter().take(options.max_results).collect(),
                    });
                }
            }
        }
        Ok(outcome(found, options.max_results))
    }

    fn path_query(&self, path: &str) -> Box<dyn Query> {
        Box::new(TermQuery::new(
            Term::from_field_text(self.fields.path, path),
            IndexRecordOption::Basic,
        ))
    }

    fn plan(&self, expr: &Expr, fuzzy: bool, leaves: &mut Vec<Leaf>) -> Node {
        let mut all = |children: &[Expr]| {
            children
                .iter()
                .map(|c| self.plan(c, fuzzy, leaves))
                .collect()
        };
        match expr {
            Expr::And(children) => Node::And(all(children)),
            Expr::Or(children) => Node::Or(all(children)),
            Expr::Not(inner) => Node::Not(Box::new(self.plan(inner, fuzzy, leaves))),
            Expr::Words(words) => {
                leaves.push(self.expand(words, fuzzy));
                Node::Leaf(leaves.len() - 1)
            }
        }
    }

    /// The index terms each word of a term or phrase stands for.
    fn expand(&self, words: &[String], fuzzy: bool) -> Leaf {
        let last = words.len() - 1;
        let slots = words
            .iter()
            .enumerate()
            .map(|(i, word)| {
                let fit = match (i, last) {
                    (_, 0) => Fit::Contains,
                    (0, _) => Fit::EndsWith,
                    (i, last) if i == last => Fit::StartsWith,
                    _ => Fit::Exact,
                };
                let edits = if fuzzy {
                    fuzzy_edits(word.chars().count())
                } else {
                    0
                };
                self.vocabulary.expand(word, fit, edits)
            })
            .collect();
        Leaf { slots }
    }

    fn candidates(&self, node: &Node, leaves: &[Leaf]) -> Candidates {
        match node {
            Node::Leaf(i) => {
                let slots = &leaves[*i].slots;
                if slots.iter().any(Vec::is_empty) {
                    return Candidates::Nothing;
                }
                let mut musts: Vec<(Occur, Box<dyn Query>)> = slots
                    .iter()
                    .map(|terms| (Occur::Must, self.term_set(terms)))
                    .collect();
                if musts.len() == 1 {
                    Candidates::Some(musts.pop().expect("one").1)
                } else {
                    Candidates::Some(Box::new(BooleanQuery::new(musts)))
                }
            }
            // A document with the excluded words may still have lines without them.
            Node::Not(_) => Candidates::Everything,
            Node::And(children) => {
                let mut musts = Vec::new();
                for c in children {
                    match self.candidates(c, leaves) {
                        Candidates::Nothing => return Candidates::Nothing,
                        Candidates::Everything => {}
                        Candidates::Some(q) => musts.push((Occur::Must, q)),
                    }
                }
                combine(musts, Candidates::Everything)
            }
            Node::Or(children) => {
                let mut shoulds = Vec::new();
                for c in children {
                    match self.candidates(c, leaves) {
                        Candidates::Everything => return Candidates::Everything,
                        Candidates::Nothing => {}
                        Candidates::Some(q) => shoulds.push((Occur::Should, q)),
                    }
                }
                combine(shoulds, Candidates::Nothing)
            }
        }
    }

    fn term_set(&self, terms: &[String]) -> Box<dyn Query> {
        let field = self.fields.text;
        Box::new(TermSetQuery::new(
            terms.iter().map(|t| Term::from_field_text(field, t)),
        ))
    }
}

fn combine(clauses: Vec<(Occur, Box<dyn Query>)>, if_none: Candidates) -> Candidates {
    match clauses.len() {
        0 => if_none,
        1 => Candidates::Some(clauses.into_iter().next().expect("one").1),
        _ => Candidates::Some(Box::new(BooleanQuery::new(clauses))),
    }
}

struct DocumentLines {
    file_id: u64,
    path: String,
    count: usize,
    lines: Vec<u32>,
}

/// The first `max_results` hits by path and line, and the totals.
fn outcome(mut found: Vec<DocumentLines>, max_results: usize) -> SearchOutcome {
    found.sort_by(|a, b| a.path.cmp(&b.path));
    let mut out = SearchOutcome {
        total_matches: found.iter().map(|d| d.count).sum(),
        documents_matched: found.len(),
        hits: Vec::new(),
    };
    for doc in found {
        for line in doc.lines {
            if out.hits.len() == max_results {
                return out;
            }
            out.hits.push(DocumentHit {
                file_id: doc.file_id,
                path: doc.path.clone(),
                line,
            });
        }
    }
    out
}

/// The postings of one segment that a query needs, walked forward document by
/// document.
struct SegmentLines {
    /// Leaf -> word slot -> the postings of the terms the slot stands for.
    leaves: Vec<Vec<SlotUnion>>,
    line_breaks: Option<SegmentPostings>,
    paths: StrColumn,
    ids: Column<u64>,
    /// Positions of the current document's line breaks.
    breaks: Vec<u32>,
    scratch: Vec<u32>,
}

impl SegmentLines {
    fn open(
        index: &TextIndex,
        segment: &SegmentReader,
        leaves: &[Leaf],
    ) -> Result<SegmentLines, SearchError> {
        let inverted = segment.inverted_index(index.fields.text)?;
        let postings = |term: &str| {
            inverted.read_postings(
                &Term::from_field_text(index.fields.text, term),
                IndexRecordOption::WithFreqsAndPositions,
            )
        };
        let mut all = Vec::with_capacity(leaves.len());
        for leaf in leaves {
            let mut slots = Vec::with_capacity(leaf.slots.len());
            for terms in &leaf.slots {
                let mut list = Vec::new();
                for term in terms {
                    list.extend(postings(term)?);
                }
                slots.push(SlotUnion::new(list));
            }
            all.push(slots);
        }
        let fast = segment.fast_fields();
        Ok(SegmentLines {
            leaves: all,
            line_breaks: postings(LINE_BREAK)?,
            paths: fast
                .str("path")?
                .ok_or_else(|| anyhow::anyhow!("the text index has no path column"))?,
            ids: fast.u64("file_id")?,
            breaks: Vec::new(),
            scratch: Vec::new(),
        })
    }

    fn path(&self, doc: DocId) -> Result<String, SearchError> {
        let mut path = String::new();
        if let Some(ord) = self.paths.term_ords(doc).next() {
            self.paths.ord_to_str(ord, &mut path)?;
        }
        Ok(path)
    }

    fn file_id(&self, doc: DocId) -> u64 {
        self.ids.first(doc).unwrap_or(0)
    }

    /// The lines of `doc` (sorted, 1-based) that match the query.
    fn matching(&mut self, doc: DocId, root: &Node) -> Vec<u32> {
        self.breaks.clear();
        if let Some(p) = self.line_breaks.as_mut()
            && at_doc(p, doc)
        {
            p.positions(&mut self.breaks);
        }
        let leaf_lines: Vec<Vec<u32>> = (0..self.leaves.len())
            .map(|i| self.leaf_lines(i, doc))
            .collect();
        evaluate(root, &leaf_lines, self.breaks.len() as u32)
    }

    /// The lines of `doc` holding leaf `i` (a word, or words in a row).
    fn leaf_lines(&mut self, i: usize, doc: DocId) -> Vec<u32> {
        let mut slot_positions: Vec<Vec<u32>> = Vec::with_capacity(self.leaves[i].len());
        for slot in &mut self.leaves[i] {
            let mut positions = Vec::new();
            slot.positions(doc, &mut positions, &mut self.scratch);
            if positions.is_empty() {
                return Vec::new();
            }
            positions.sort_unstable();
            positions.dedup();
            slot_positions.push(positions);
        }
        let (first, rest) = slot_positions.split_first().expect("a leaf has words");
        let mut lines: Vec<u32> = first
            .iter()
            .filter(|&&p| {
                rest.iter()
                    .enumerate()
                    .all(|(k, next)| next.binary_search(&(p + k as u32 + 1)).is_ok())
            })
            .map(|&p| self.breaks.partition_point(|&b| b < p) as u32 + 1)
            .collect();
        lines.dedup();
        lines
    }
}

/// The postings of every term a word slot stands for, merged by document, so
/// that the terms present in a document are found without visiting the others
/// (a short word can stand for thousands of terms).
struct SlotUnion {
    postings: Vec<SegmentPostings>,
    /// (current document, list) of each list not exhausted, smallest first.
    heap: BinaryHeap<Reverse<(DocId, usize)>>,
}

impl SlotUnion {
    fn new(postings: Vec<SegmentPostings>) -> SlotUnion {
        let heap = postings
            .iter()
            .enumerate()
            .filter(|(_, p)| p.doc() != TERMINATED)
            .map(|(i, p)| Reverse((p.doc(), i)))
            .collect();
        SlotUnion { postings, heap }
    }

    /// Appends the positions of the slot's terms in `doc` to `out`. Documents
    /// must come in increasing order.
    fn positions(&mut self, doc: DocId, out: &mut Vec<u32>, scratch: &mut Vec<u32>) {
        while let Some(&Reverse((at, i))) = self.heap.peek() {
            if at > doc {
                break;
            }
            self.heap.pop();
            let p = &mut self.postings[i];
            let mut at = if at < doc { p.seek(doc) } else { at };
            if at == doc {
                p.positions(scratch);
                out.extend_from_slice(scratch);
                at = p.advance();
            }
            if at != TERMINATED {
                self.heap.push(Reverse((at, i)));
            }
        }
    }
}

/// Moves postings forward to `doc`; whether `doc` holds the term.
fn at_doc(postings: &mut SegmentPostings, doc: DocId) -> bool {
    if postings.doc() < doc {
        postings.seek(doc);
    }
    postings.doc() == doc
}

/// The lines (sorted) of a document of `line_count` lines that match `node`,
/// given the lines of each leaf.
fn evaluate(node: &Node, leaf_lines: &[Vec<u32>], line_count: u32) -> Vec<u32> {
    match node {
        Node::Leaf(i) => leaf_lines[*i].clone(),
        Node::Or(children) => {
            let mut all: Vec<u32> = children
                .iter()
                .flat_map(|c| evaluate(c, leaf_lines, line_count))
                .collect();
            all.sort_unstable();
            all.dedup();
            all
        }
        Node::Not(inner) => {
            let excluded = evaluate(inner, leaf_lines, line_count);
            (1..=line_count)
                .filter(|l| excluded.binary_search(l).is_err())
                .collect()
        }
        Node::And(children) => {
            // Intersect the positive children first; take the excluded lines away
            // after, so a NOT inside an AND never lists every line.
            let (negative, positive): (Vec<&Node>, Vec<&Node>) =
                children.iter().partition(|c| matches!(c, Node::Not(_)));
            let mut acc: Option<Vec<u32>> = None;
            for c in positive {
                let lines = evaluate(c, leaf_lines, line_count);
                acc = Some(match acc {
                    None => lines,
                    Some(a) => a
                        .into_iter()
                        .filter(|l| lines.binary_search(l).is_ok())
                        .collect(),
                });
                if acc.as_ref().is_some_and(Vec::is_empty) {
                    return Vec::new();
                }
            }
            let mut acc = acc.unwrap_or_else(|| (1..=line_count).collect());
            for c in negative {
                let Node::Not(inner) = c else { continue };
                let excluded = evaluate(inner, leaf_lines, line_count);
                acc.retain(|l| excluded.binary_search(l).is_err());
            }
            acc
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluation_follows_boolean_logic_per_line() {
        // Leaf 0 on lines 1, 2, 5; leaf 1 on 2, 3; a document of 6 lines.
        let leaves = vec![vec![1, 2, 5], vec![2, 3]];
        let l = |i| Node::Leaf(i);
        let not = |n| Node::Not(Box::new(n));
        let eval = |n: &Node| evaluate(n, &leaves, 6);
        assert_eq!(eval(&Node::And(vec![l(0), l(1)])), vec![2]);
        assert_eq!(eval(&Node::Or(vec![l(0), l(1)])), vec![1, 2, 3, 5]);
        assert_eq!(eval(&Node::And(vec![l(0), not(l(1))])), vec![1, 5]);
        assert_eq!(eval(&not(l(0))), vec![3, 4, 6]);
        assert_eq!(eval(&Node::And(vec![not(l(0)), not(l(1))])), vec![4, 6]);
        assert_eq!(eval(&Node::Or(vec![not(l(0)), l(1)])), vec![2, 3, 4, 6]);
    }

    #[test]
    fn outcome_orders_by_path_and_counts_everything() {
        let found = vec![
            DocumentLines {
                file_id: 2,
                path: "r/b.md".into(),
                count: 3,
                lines: vec![1, 2],
            },
            DocumentLines {
                file_id: 1,
                path: "r/a.md".into(),
                count: 1,
                lines: vec![7],
            },
        ];
        let out = outcome(found, 2);
        assert_eq!(out.total_matches, 4);
        assert_eq!(out.documents_matched, 2);
        let got: Vec<(&str, u32)> = out.hits.iter().map(|h| (h.path.as_str(), h.line)).collect();
        assert_eq!(got, vec![("r/a.md", 7), ("r/b.md", 1)]);
    }
}
