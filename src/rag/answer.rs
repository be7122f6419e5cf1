//! Extractive answers: the sentences of the retrieved nodes that share the
//! most (idf-weighted) words with the question, quoted verbatim with their
//! node and source. Nothing is written that the sources do not say.

use super::bm25::{Stats, query_terms};
use super::dataset::RagDataset;
use super::retrieve::Hit;
use crate::job::{Job, Stop};

/// Sentences an answer quotes at most.
pub const EVIDENCE_SENTENCES: usize = 3;

#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    pub node: usize,
    pub text: String,
    pub doc: u64,
    pub page: u32,
    pub line: u32,
    pub score: f32,
}

/// The best sentences of the hits; `Err` when `job` stops (looked at per node).
pub fn evidence(
    ds: &RagDataset,
    query: &str,
    hits: &[Hit],
    job: &Job,
) -> Result<Vec<Evidence>, Stop> {
    let terms = query_terms(query);
    let segments: Vec<&super::bm25::Segment> = ds.segments().into_iter().map(|(s, _)| s).collect();
    let stats = Stats::of(&segments, &terms);
    let mut found: Vec<Evidence> = Vec::new();
    let nodes = hits
        .iter()
        .flat_map(|h| std::iter::once(h.node).chain(h.leaves.iter().map(|l| l.0)));
    for n in nodes {
        job.check()?;
        let node = &ds.nodes[n];
        for p in &node.pieces {
            let text = node.piece_text(p);
            if found.iter().any(|e| e.text == text) {
                continue;
            }
            let words: std::collections::HashSet<String> = super::text::terms(text).collect();
            let score: f32 = stats
                .idf
                .iter()
                .filter(|(t, _)| words.contains(t))
                .map(|(_, idf)| idf.max(0.01))
                .sum();
            if score > 0.0 {
                found.push(Evidence {
                    node: n,
                    text: text.to_string(),
                    doc: p.doc,
                    page: p.page,
                    line: p.line,
                    score,
                });
            }
        }
    }
    found.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.node.cmp(&b.node)));
    found.truncate(EVIDENCE_SENTENCES);
    Ok(found)
}
