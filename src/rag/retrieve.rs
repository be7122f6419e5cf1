//! Retrieval over a dataset's nodes. Scores are BM25 of the node's text
//! against the query (higher is better; `score_threshold` compares with it);
//! with a sentence model, the BM25 ranking and the cosine-similarity ranking
//! are fused by reciprocal rank fusion (score Σ 1/(60 + rank), higher is
//! better, at most 2/61). Collapsed: every node ranked at once, the best filling `top_k` within a
//! token budget. Traversal: from the top layer down, the `top_k` best children
//! of the nodes chosen one layer up; a node is ranked there by the best score
//! in its subtree, so a fact no summary picked still leads down to its leaf.

use std::collections::HashMap;

use super::bm25::{Stats, query_terms, score_into};
use super::dataset::RagDataset;
use crate::job::{Job, Stop};

/// Nodes scored, ranked or walked between two looks at the call's `Job`.
const CHECK_EVERY: usize = 4096;

/// Tokens of node text one retrieval returns at most (RAPTOR's collapsed
/// setting).
pub const TOKEN_BUDGET: usize = 3_500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Collapsed,
    Traversal,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub mode: Mode,
    pub top_k: usize,
    /// Collapsed: only levels below this; traversal: at most this many layers
    /// descended from the top.
    pub levels_cap: Option<usize>,
    /// Leaves shown under each summary hit (its best-scoring ones).
    pub expand_k: usize,
    pub score_threshold: Option<f32>,
    /// The query's model vector: retrieval is hybrid when given.
    pub query_vector: Option<Vec<f32>>,
}

impl Options {
    /// What the scores are, for the results.
    pub fn scoring(&self) -> &'static str {
        if self.query_vector.is_some() {
            "rrf(bm25,cosine)"
        } else {
            "bm25"
        }
    }
}

/// Reciprocal rank fusion's constant (Cormack et al. 2009).
pub const RRF_K: f32 = 60.0;
/// Nodes the cosine ranking contributes at most.
const DENSE_CANDIDATES: usize = 1_000;

#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub node: usize,
    pub score: f32,
    /// Best leaves beneath a summary hit (node, score), `expand_k` at most.
    pub leaves: Vec<(usize, f32)>,
}

/// Every node's score for the query: BM25 (nodes without a query word
/// absent), fused with the cosine ranking when a query vector is given.
pub fn scores(
    ds: &RagDataset,
    query: &str,
    query_vector: Option<&[f32]>,
    job: &Job,
) -> Result<HashMap<usize, f32>, Stop> {
    let lexical = bm25_scores(ds, query, job)?;
    Ok(match query_vector {
        Some(q) if ds.has_vectors() => fuse(&lexical, &dense_ranking(ds, q, job)?),
        _ => lexical,
    })
}

/// Nodes by cosine similarity to the query vector, best first.
pub fn dense_ranking(ds: &RagDataset, q: &[f32], job: &Job) -> Result<Vec<(usize, f32)>, Stop> {
    let mut ranked: Vec<(usize, f32)> = Vec::with_capacity(ds.nodes.len());
    for (start, batch) in ds.nodes.chunks(CHECK_EVERY).enumerate() {
        job.check()?;
        let first = start * CHECK_EVERY;
        ranked.extend(
            batch
                .iter()
                .enumerate()
                .map(|(i, n)| (first + i, super::embed::cosine(&n.vector, q))),
        );
    }
    let keep = DENSE_CANDIDATES.min(ranked.len());
    if keep > 0 && keep < ranked.len() {
        ranked.select_nth_unstable_by(keep - 1, by_score);
        ranked.truncate(keep);
    }
    ranked.sort_by(by_score);
    Ok(ranked)
}

/// Reciprocal rank fusion of the BM25 scores and a dense ranking.
fn fuse(lexical: &HashMap<usize, f32>, dense: &[(usize, f32)]) -> HashMap<usize, f32> {
    let mut ranked: Vec<(usize, f32)> = lexical.iter().map(|(&n, &s)| (n, s)).collect();
    ranked.sort_by(by_score);
    let mut out: HashMap<usize, f32> = HashMap::new();
    for list in [&ranked[..], dense] {
        for (rank, &(n, _)) in list.iter().enumerate() {
            *out.entry(n).or_default() += 1.0 / (RRF_K + rank as f32 + 1.0);
        }
    }
    out
}

/// Every node's BM25 score for the query (nodes without a query word absent).
/// Stops between segments (a segment is one document's tree) when `job` does.
pub fn bm25_scores(ds: &RagDataset, query: &str, job: &Job) -> Result<HashMap<usize, f32>, Stop> {
    let terms = query_terms(query);
    let segments = ds.segments();
    let plain: Vec<&super::bm25::Segment> = segments.iter().map(|(s, _)| *s).collect();
    let stats = Stats::of(&plain, &terms);
    let mut out = HashMap::new();
    for (segment, offset) in segments {
        job.check()?;
        score_into(segment, &stats, offset, &mut out);
    }
    Ok(out)
}

/// The hits for `query`; `Err` when `job` is cancelled or out of time, looked
/// at between segments, batches of nodes, layers and hits.
pub fn retrieve(
    ds: &RagDataset,
    query: &str,
    options: &Options,
    job: &Job,
) -> Result<Vec<Hit>, Stop> {
    let scores = scores(ds, query, options.query_vector.as_deref(), job)?;
    job.check()?;
    let ranked = match options.mode {
        Mode::Collapsed => collapsed(ds, &scores, options),
        Mode::Traversal => traversal(ds, &scores, options, job)?,
    };
    let mut hits = Vec::new();
    let mut tokens = 0;
    for (node, score) in ranked {
        job.check()?;
        if options.score_threshold.is_some_and(|t| score < t) || hits.len() == options.top_k {
            break;
        }
        let size = ds.nodes[node].tokens as usize;
        if !hits.is_empty() && tokens + size > TOKEN_BUDGET {
            break;
        }
        tokens += size;
        let leaves = if ds.nodes[node].is_leaf() || options.expand_k == 0 {
            Vec::new()
        } else {
            best_leaves(ds, node, &scores, options.expand_k)
        };
        hits.push(Hit {
            node,
            score,
            leaves,
        });
    }
    Ok(hits)
}

fn by_score(a: &(usize, f32), b: &(usize, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

fn collapsed(
    ds: &RagDataset,
    scores: &HashMap<usize, f32>,
    options: &Options,
) -> Vec<(usize, f32)> {
    let mut ranked: Vec<(usize, f32)> = scores
        .iter()
        .filter(|&(&n, _)| {
            options
                .levels_cap
                .is_none_or(|cap| (ds.nodes[n].level as usize) < cap)
        })
        .map(|(&n, &s)| (n, s))
        .collect();
    ranked.sort_by(by_score);
    ranked
}

fn traversal(
    ds: &RagDataset,
    scores: &HashMap<usize, f32>,
    options: &Options,
    job: &Job,
) -> Result<Vec<(usize, f32)>, Stop> {
    let best = subtree_best(ds, scores, job)?;
    let own = |n: usize| scores.get(&n).copied().unwrap_or(0.0);
    let mut layer: Vec<usize> = (0..ds.nodes.len())
        .filter(|&n| ds.nodes[n].parents.is_empty())
        .collect();
    let mut chosen: Vec<usize> = Vec::new();
    let mut depth = 0;
    while !layer.is_empty() && options.levels_cap.is_none_or(|cap| depth < cap) {
        job.check()?;
        let mut ranked: Vec<(usize, f32)> = layer.iter().map(|&n| (n, best[n])).collect();
        ranked.sort_by(by_score);
        ranked.truncate(options.top_k.max(1));
        let picked: Vec<usize> = ranked.into_iter().map(|(n, _)| n).collect();
        chosen.extend(&picked);
        let mut next: Vec<usize> = picked
            .iter()
            .flat_map(|&n| ds.nodes[n].children.iter().map(|&c| c as usize))
            .collect();
        next.sort_unstable();
        next.dedup();
        layer = next;
        depth += 1;
    }
    chosen.sort_unstable();
    chosen.dedup();
    let mut ranked: Vec<(usize, f32)> = chosen.into_iter().map(|n| (n, own(n))).collect();
    ranked.sort_by(by_score);
    Ok(ranked)
}

/// For each node, the best score in its subtree (itself included).
fn subtree_best(
    ds: &RagDataset,
    scores: &HashMap<usize, f32>,
    job: &Job,
) -> Result<Vec<f32>, Stop> {
    let mut best: Vec<f32> = (0..ds.nodes.len())
        .map(|n| scores.get(&n).copied().unwrap_or(0.0))
        .collect();
    // Children sit at lower levels: settle levels from the leaves up.
    let mut order: Vec<usize> = (0..ds.nodes.len()).collect();
    order.sort_by_key(|&n| ds.nodes[n].level);
    for (k, n) in order.into_iter().enumerate() {
        if k % CHECK_EVERY == 0 {
            job.check()?;
        }
        for &c in &ds.nodes[n].children {
            best[n] = best[n].max(best[c as usize]);
        }
    }
    Ok(best)
}

/// The `k` best-scoring leaves beneath `node`.
fn best_leaves(
    ds: &RagDataset,
    node: usize,
    scores: &HashMap<usize, f32>,
    k: usize,
) -> Vec<(usize, f32)> {
    let mut stack = vec![node];
    let mut seen = std::collections::HashSet::new();
    let mut leaves = Vec::new();
    while let Some(n) = stack.pop() {
        if !seen.insert(n) {
            continue;
        }
        if ds.nodes[n].is_leaf() {
            leaves.push((n, scores.get(&n).copied().unwrap_or(0.0)));
        } else {
            stack.extend(ds.nodes[n].children.iter().map(|&c| c as usize));
        }
    }
    leaves.sort_by(by_score);
    leaves.truncate(k);
    leaves
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::rag::answer::evidence;
    use crate::rag::bm25::Segment;
    use crate::rag::dataset::DocTree;
    use crate::rag::summary::{SUMMARY_TOKENS, summarise};
    use crate::rag::tree::document_tree;

    /// A dataset of two documents' trees (summaries above the chunks).
    fn dataset() -> RagDataset {
        let topics = [
            "The muon trigger fires when two chambers agree on a track.",
            "Calorimeter calibration uses electrons from Z decays to fix the energy scale.",
            "The tracker alignment is refined with cosmic rays every week.",
        ];
        let docs = (1..=2)
            .map(|file_id| {
                let mut text = String::new();
                for round in 0..12 {
                    for (t, s) in topics.iter().enumerate() {
                        text.push_str(&format!("{s} Run {round} note {t} of {file_id}.\n"));
                    }
                    text.push('\n');
                }
                let nodes = document_tree(file_id, &text, &[1], None);
                DocTree {
                    file_id,
                    fingerprint: 0,
                    rel: format!("doc{file_id}.md"),
                    segment: Arc::new(Segment::build(nodes.iter().map(|n| n.text.as_str()))),
                    nodes: Arc::new(nodes),
                }
            })
            .collect();
        RagDataset::assemble("d".into(), docs, None)
    }

    fn options(mode: Mode) -> Options {
        Options {
            mode,
            top_k: 5,
            levels_cap: None,
            expand_k: 3,
            score_threshold: None,
            query_vector: None,
        }
    }

    /// Each piece of RAG work answers a stopped job with the stop instead of
    /// its result; the same work with a live job finds something (so the stop is
    /// what ended it).
    #[test]
    fn stopped_jobs_stop_retrieval_evidence_and_summaries() {
        let ds = dataset();
        let query = "calibration electrons";
        let live = Job::new(None);
        let cancelled = Job::new(None);
        cancelled.cancel();
        let out_of_time = Job::new(Some(Duration::ZERO));
        for mode in [Mode::Collapsed, Mode::Traversal] {
            let hits = retrieve(&ds, query, &options(mode), &live).unwrap();
            assert!(!hits.is_empty(), "{mode:?}");
            assert_eq!(
                retrieve(&ds, query, &options(mode), &cancelled),
                Err(Stop::Cancelled)
            );
            assert_eq!(
                retrieve(&ds, query, &options(mode), &out_of_time),
                Err(Stop::TimedOut)
            );
        }
        let hits = retrieve(&ds, query, &options(Mode::Collapsed), &live).unwrap();
        assert!(!evidence(&ds, query, &hits, &live).unwrap().is_empty());
        assert_eq!(
            evidence(&ds, query, &hits, &cancelled),
            Err(Stop::Cancelled)
        );
        let nodes: Vec<&crate::rag::tree::Node> = hits.iter().map(|h| &ds.nodes[h.node]).collect();
        assert!(
            !summarise(&nodes, SUMMARY_TOKENS, &live)
                .unwrap()
                .text
                .is_empty()
        );
        assert!(matches!(
            summarise(&nodes, SUMMARY_TOKENS, &cancelled),
            Err(Stop::Cancelled)
        ));
    }
}
