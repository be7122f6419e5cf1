//! BM25 over node texts, kept per segment (one document's tree, or a dataset's
//! top layer) so that a changed document re-indexes only its own nodes; the
//! dataset combines the segments' statistics at query time. Scores are BM25
//! (k1 = 1.2, b = 0.75): higher is better, 0 when no query word occurs.

use std::collections::HashMap;

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// The postings of one segment's nodes.
#[derive(Debug, Default)]
pub struct Segment {
    /// term -> (node index in the segment, term frequency)
    postings: HashMap<String, Vec<(u32, u32)>>,
    /// Each node's length in terms.
    lengths: Vec<u32>,
}

impl Segment {
    pub fn build<'a>(texts: impl Iterator<Item = &'a str>) -> Segment {
        let mut segment = Segment::default();
        for (i, text) in texts.enumerate() {
            let mut counts: HashMap<String, u32> = HashMap::new();
            let mut length = 0;
            for term in super::text::terms(text) {
                *counts.entry(term).or_default() += 1;
                length += 1;
            }
            segment.lengths.push(length);
            for (term, tf) in counts {
                segment
                    .postings
                    .entry(term)
                    .or_default()
                    .push((i as u32, tf));
            }
        }
        segment
    }

    pub fn document_frequency(&self, term: &str) -> usize {
        self.postings.get(term).map_or(0, Vec::len)
    }

    pub fn nodes(&self) -> usize {
        self.lengths.len()
    }

    pub fn total_length(&self) -> u64 {
        self.lengths.iter().map(|&l| u64::from(l)).sum()
    }
}

/// Corpus-wide statistics for scoring: node count, mean length, and the query
/// terms' document frequencies.
pub struct Stats {
    pub nodes: usize,
    pub mean_length: f32,
    pub idf: Vec<(String, f32)>,
}

impl Stats {
    pub fn of(segments: &[&Segment], query_terms: &[String]) -> Stats {
        let nodes: usize = segments.iter().map(|s| s.nodes()).sum();
        let total: u64 = segments.iter().map(|s| s.total_length()).sum();
        let idf = query_terms
            .iter()
            .map(|t| {
                let df: usize = segments.iter().map(|s| s.document_frequency(t)).sum();
                let n = nodes as f32;
                let df = df as f32;
                (t.clone(), ((n - df + 0.5) / (df + 0.5) + 1.0).ln())
            })
            .collect();
        Stats {
            nodes,
            mean_length: if nodes == 0 {
                1.0
            } else {
                total as f32 / nodes as f32
            },
            idf,
        }
    }
}

/// Adds the segment's scores for the query into `scores` at `offset`.
pub fn score_into(
    segment: &Segment,
    stats: &Stats,
    offset: usize,
    scores: &mut HashMap<usize, f32>,
) {
    for (term, idf) in &stats.idf {
        let Some(list) = segment.postings.get(term) else {
            continue;
        };
        for &(i, tf) in list {
            let length = segment.lengths[i as usize] as f32;
            let tf = tf as f32;
            let part =
                idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / stats.mean_length));
            *scores.entry(offset + i as usize).or_default() += part;
        }
    }
}

/// The distinct lowercased words of a query.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = super::text::terms(query).collect();
    terms.sort();
    terms.dedup();
    terms
}
