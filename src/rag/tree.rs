//! RAPTOR trees, built lexically: leaves are ~100-token chunks of a document;
//! each layer above clusters the one below (TF-IDF reduced by SVD, Gaussian
//! mixtures chosen by BIC, soft membership) and summarises every cluster
//! extractively, so a node may have several parents (a DAG) and every word a
//! node shows is a sentence of the source.

use serde::{Deserialize, Serialize};

use super::gmm::soft_clusters;
use super::summary::extractive_summary;
use super::text::{Sentence, chunks, sentences};
use super::vectors::{Sparse, TfIdf, reduce};

/// Layers above the leaves, at most (RAPTOR's published setting).
pub const MAX_LAYERS: u8 = 5;
/// A cluster holding more tokens than this is clustered again.
pub const MAX_CLUSTER_TOKENS: usize = 3_500;
/// Dimensions kept by the SVD before clustering.
const REDUCED_DIMS: usize = 10;
/// Most mixture components tried by BIC in one clustering.
const MAX_COMPONENTS: usize = 16;
/// Fixed so that the same corpus always gives the same tree.
const SEED: u64 = 0x5241_5054_4F52; // "RAPTOR"

/// A sentence of a node: a byte range of the node's text and its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Piece {
    pub start: u32,
    pub end: u32,
    /// The catalog file id of the document it comes from.
    pub doc: u64,
    pub page: u32,
    pub line: u32,
    pub end_line: u32,
}

/// A node of a tree: a leaf chunk (level 0) or an extractive summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub level: u8,
    pub text: String,
    pub pieces: Vec<Piece>,
    pub tokens: u32,
    /// Indices of this node's children and parents in its tree.
    pub children: Vec<u32>,
    pub parents: Vec<u32>,
}

impl Node {
    pub fn piece_text(&self, p: &Piece) -> &str {
        &self.text[p.start as usize..p.end as usize]
    }

    pub fn is_leaf(&self) -> bool {
        self.level == 0
    }
}

/// The leaves of document `doc`: its text cut into sentence-packed chunks.
/// `page_first_lines` holds each page's first line.
pub fn leaves(doc: u64, text: &str, page_first_lines: &[u32]) -> Vec<Node> {
    let all = sentences(text, page_first_lines);
    chunks(&all)
        .into_iter()
        .map(|range| leaf(doc, text, &all[range]))
        .collect()
}

fn leaf(doc: u64, text: &str, run: &[Sentence]) -> Node {
    let (from, to) = (run[0].start, run[run.len() - 1].end);
    let pieces = run
        .iter()
        .map(|s| Piece {
            start: s.start - from,
            end: s.end - from,
            doc,
            page: s.page,
            line: s.line,
            end_line: s.end_line,
        })
        .collect();
    Node {
        level: 0,
        text: text[from as usize..to as usize].to_string(),
        pieces,
        tokens: run.iter().map(|s| s.tokens).sum(),
        children: Vec::new(),
        parents: Vec::new(),
    }
}

/// A document's tree: its leaves, then summary layers until one node is left,
/// clustering stops reducing, or `MAX_LAYERS` is reached. Nodes are in layer
/// order; the last layer's nodes have no parents.
pub fn document_tree(doc: u64, text: &str, page_first_lines: &[u32]) -> Vec<Node> {
    let mut nodes = leaves(doc, text, page_first_lines);
    let first: Vec<usize> = (0..nodes.len()).collect();
    build_layers(&mut nodes, first, 0);
    nodes
}

/// Adds summary layers above the nodes `layer` (all of one level) and returns
/// the indices of the topmost layer.
pub fn build_layers(nodes: &mut Vec<Node>, mut layer: Vec<usize>, base_level: u8) -> Vec<usize> {
    let mut level = base_level;
    while layer.len() > 1 && level < MAX_LAYERS {
        let groups = cluster_layer(nodes, &layer, u64::from(level));
        if groups.len() >= layer.len() {
            break; // clustering no longer reduces: this layer is the top
        }
        level += 1;
        let mut next = Vec::with_capacity(groups.len());
        for members in groups {
            let children: Vec<usize> = members.iter().map(|&m| layer[m]).collect();
            let mut summary = extractive_summary(nodes, &children);
            summary.level = level;
            let id = nodes.len();
            for &c in &children {
                nodes[c].parents.push(id as u32);
            }
            summary.children = children.iter().map(|&c| c as u32).collect();
            nodes.push(summary);
            next.push(id);
        }
        layer = next;
    }
    layer
}

/// Groups of positions in `layer`: soft clusters, those over
/// `MAX_CLUSTER_TOKENS` clustered again (or, if that cannot split them, cut in
/// order).
fn cluster_layer(nodes: &[Node], layer: &[usize], salt: u64) -> Vec<Vec<usize>> {
    let tfidf = TfIdf::fit(layer.iter().map(|&i| nodes[i].text.as_str()));
    let vectors: Vec<Sparse> = layer
        .iter()
        .map(|&i| tfidf.vector(&nodes[i].text))
        .collect();
    let all: Vec<usize> = (0..layer.len()).collect();
    let tokens: Vec<usize> = layer.iter().map(|&i| nodes[i].tokens as usize).collect();
    let mut out = Vec::new();
    split_until_small(&vectors, &tokens, all, SEED ^ salt, 0, &mut out);
    out.sort();
    out.dedup();
    out
}

fn split_until_small(
    vectors: &[Sparse],
    tokens: &[usize],
    members: Vec<usize>,
    seed: u64,
    depth: u32,
    out: &mut Vec<Vec<usize>>,
) {
    let size: usize = members.iter().map(|&m| tokens[m]).sum();
    if members.len() <= 2 || (depth > 0 && size <= MAX_CLUSTER_TOKENS) {
        out.push(members);
        return;
    }
    let rows: Vec<Sparse> = members.iter().map(|&m| vectors[m].clone()).collect();
    let reduced = reduce(&rows, REDUCED_DIMS.min(members.len() - 1), seed);
    let max_k = MAX_COMPONENTS.min(members.len() / 2 + 1);
    let groups = soft_clusters(&reduced, max_k, seed);
    if groups.len() <= 1 {
        if size <= MAX_CLUSTER_TOKENS || depth > 0 {
            cut_in_order(members, tokens, out);
        } else {
            out.push(members);
        }
        return;
    }
    for g in groups {
        let g: Vec<usize> = g.into_iter().map(|i| members[i]).collect();
        let g_size: usize = g.iter().map(|&m| tokens[m]).sum();
        if g_size > MAX_CLUSTER_TOKENS && g.len() < members.len() && depth < 3 {
            split_until_small(vectors, tokens, g, seed.rotate_left(7) ^ 1, depth + 1, out);
        } else if g_size > MAX_CLUSTER_TOKENS {
            cut_in_order(g, tokens, out);
        } else {
            out.push(g);
        }
    }
}

/// Consecutive runs of at most `MAX_CLUSTER_TOKENS` tokens (the last resort for
/// a cluster the mixture cannot split).
fn cut_in_order(members: Vec<usize>, tokens: &[usize], out: &mut Vec<Vec<usize>>) {
    let mut run = Vec::new();
    let mut size = 0;
    for m in members {
        if !run.is_empty() && size + tokens[m] > MAX_CLUSTER_TOKENS {
            out.push(std::mem::take(&mut run));
            size = 0;
        }
        size += tokens[m];
        run.push(m);
    }
    if !run.is_empty() {
        out.push(run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> String {
        let topics = [
            "The muon trigger fires when two chambers agree on a track.",
            "Calorimeter calibration uses electrons from Z decays to fix the energy scale.",
            "The tracker alignment is refined with cosmic rays every week.",
        ];
        let mut text = String::new();
        for round in 0..12 {
            for (t, s) in topics.iter().enumerate() {
                text.push_str(&format!(
                    "{s} Run {round} note {t} adds detail number {}.\n",
                    round * 7 + t
                ));
            }
            text.push('\n');
        }
        text
    }

    #[test]
    fn trees_are_deterministic_dags_whose_text_comes_from_the_source() {
        let text = corpus();
        let a = document_tree(1, &text, &[1]);
        assert_eq!(a, document_tree(1, &text, &[1]));
        assert!(a.iter().any(|n| n.level > 0), "no summaries");
        for (i, n) in a.iter().enumerate() {
            for p in &n.pieces {
                assert!(text.contains(n.piece_text(p)));
            }
            for &c in &n.children {
                assert!(a[c as usize].parents.contains(&(i as u32)));
                assert_eq!(a[c as usize].level + 1, n.level);
            }
        }
    }
}
