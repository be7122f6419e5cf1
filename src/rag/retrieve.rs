//! Retrieval over a dataset's nodes, lexically. Scores are BM25 of the node's
//! text against the query (higher is better; `score_threshold` compares with
//! it). Collapsed: every node ranked at once, the best filling `top_k` within a
//! token budget. Traversal: from the top layer down, the `top_k` best children
//! of the nodes chosen one layer up; a node is ranked there by the best score
//! in its subtree, so a fact no summary picked still leads down to its leaf.

use std::collections::HashMap;

use super::bm25::{Stats, query_terms, score_into};
use super::dataset::Dataset;

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
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub node: usize,
    pub score: f32,
    /// Best leaves beneath a summary hit (node, score), `expand_k` at most.
    pub leaves: Vec<(usize, f32)>,
}

/// Every node's BM25 score for the query (nodes without a query word absent).
pub fn scores(ds: &Dataset, query: &str) -> HashMap<usize, f32> {
    let terms = query_terms(query);
    let segments = ds.segments();
    let plain: Vec<&super::bm25::Segment> = segments.iter().map(|(s, _)| *s).collect();
    let stats = Stats::of(&plain, &terms);
    let mut out = HashMap::new();
    for (segment, offset) in segments {
        score_into(segment, &stats, offset, &mut out);
    }
    out
}

pub fn retrieve(ds: &Dataset, query: &str, options: &Options) -> Vec<Hit> {
    let scores = scores(ds, query);
    let ranked = match options.mode {
        Mode::Collapsed => collapsed(ds, &scores, options),
        Mode::Traversal => traversal(ds, &scores, options),
    };
    let mut hits = Vec::new();
    let mut tokens = 0;
    for (node, score) in ranked {
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
    hits
}

fn by_score(a: &(usize, f32), b: &(usize, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

fn collapsed(ds: &Dataset, scores: &HashMap<usize, f32>, options: &Options) -> Vec<(usize, f32)> {
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

fn traversal(ds: &Dataset, scores: &HashMap<usize, f32>, options: &Options) -> Vec<(usize, f32)> {
    let best = subtree_best(ds, scores);
    let own = |n: usize| scores.get(&n).copied().unwrap_or(0.0);
    let mut layer: Vec<usize> = (0..ds.nodes.len())
        .filter(|&n| ds.nodes[n].parents.is_empty())
        .collect();
    let mut chosen: Vec<usize> = Vec::new();
    let mut depth = 0;
    while !layer.is_empty() && options.levels_cap.is_none_or(|cap| depth < cap) {
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
    ranked
}

/// For each node, the best score in its subtree (itself included).
fn subtree_best(ds: &Dataset, scores: &HashMap<usize, f32>) -> Vec<f32> {
    let mut best: Vec<f32> = (0..ds.nodes.len())
        .map(|n| scores.get(&n).copied().unwrap_or(0.0))
        .collect();
    // Children sit at lower levels: settle levels from the leaves up.
    let mut order: Vec<usize> = (0..ds.nodes.len()).collect();
    order.sort_by_key(|&n| ds.nodes[n].level);
    for n in order {
        for &c in &ds.nodes[n].children {
            best[n] = best[n].max(best[c as usize]);
        }
    }
    best
}

/// The `k` best-scoring leaves beneath `node`.
fn best_leaves(
    ds: &Dataset,
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
