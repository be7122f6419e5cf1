//! Extractive summaries: the sentences of a group of nodes closest to the
//! group's centre, picked with diversity (maximal marginal relevance) up to
//! about 100 tokens and shown in source order. Nothing is written that the
//! sources do not say; every sentence keeps its source position.

use super::tree::{Node, Piece};
use super::vectors::{Sparse, TfIdf, centre, sparse_dot};
use crate::job::{Job, Stop};

/// About how many tokens a summary holds.
pub const SUMMARY_TOKENS: usize = 100;
/// Relevance against redundancy in the pick (1 = relevance only).
const MMR_LAMBDA: f32 = 0.7;

/// A candidate sentence: which node and piece it is.
struct Candidate<'a> {
    text: &'a str,
    piece: &'a Piece,
    tokens: usize,
    vector: Sparse,
}

/// A summary node (level, children and parents left for the caller) of the
/// nodes `members`.
pub fn extractive_summary(nodes: &[Node], members: &[usize]) -> Node {
    // The tree pass has no call to stop it: its work is bounded per document.
    summary_of(nodes, members, SUMMARY_TOKENS, None).expect("no job, never stopped")
}

/// Candidate sentences turned into vectors between two looks at the job.
const CHECK_EVERY: usize = 512;

/// The most central sentences of the members, with diversity, within `budget`
/// tokens, each keeping its source; `Err` when `job` (if any) stops.
fn summary_of(
    nodes: &[Node],
    members: &[usize],
    budget: usize,
    job: Option<&Job>,
) -> Result<Node, Stop> {
    let check = || job.map_or(Ok(()), Job::check);
    let candidates = candidates(nodes, members);
    let texts: Vec<&str> = members.iter().map(|&m| nodes[m].text.as_str()).collect();
    let tfidf = TfIdf::fit(texts.iter().copied());
    check()?;
    let member_vectors: Vec<Sparse> = texts.iter().map(|t| tfidf.vector(t)).collect();
    let mid = centre(member_vectors.iter());
    let mut vectors = Vec::with_capacity(candidates.len());
    for (k, (text, piece)) in candidates.into_iter().enumerate() {
        if k % CHECK_EVERY == 0 {
            check()?;
        }
        vectors.push(Candidate {
            text,
            piece,
            tokens: super::text::token_count(text),
            vector: tfidf.vector(text),
        });
    }
    let picked = pick(&vectors, &mid, budget, &check)?;
    Ok(assemble(picked.into_iter().map(|i| &vectors[i])))
}

/// Every distinct sentence of the members, in source order: by line within a
/// document, documents in the order the members first name them. Not by the
/// documents' ids: those are catalog numbers given in the order indexing
/// finished, so a summary across documents would change with the timing of
/// the scan that indexed them.
fn candidates<'a>(nodes: &'a [Node], members: &[usize]) -> Vec<(&'a str, &'a Piece)> {
    let mut all: Vec<(&str, &Piece)> = members
        .iter()
        .flat_map(|&m| {
            nodes[m]
                .pieces
                .iter()
                .map(move |p| (nodes[m].piece_text(p), p))
        })
        .collect();
    let mut docs: Vec<u64> = Vec::new();
    for (_, p) in &all {
        if !docs.contains(&p.doc) {
            docs.push(p.doc);
        }
    }
    all.sort_by_cached_key(|&(text, p)| (docs.iter().position(|&d| d == p.doc), p.line, text));
    all.dedup_by(|a, b| a.0 == b.0 && a.1.doc == b.1.doc && a.1.line == b.1.line);
    all
}

/// Indices of the candidates chosen by maximal marginal relevance until the
/// token budget is spent (at least one), in source order.
fn pick(
    candidates: &[Candidate],
    mid: &Sparse,
    budget: usize,
    check: &dyn Fn() -> Result<(), Stop>,
) -> Result<Vec<usize>, Stop> {
    let relevance: Vec<f32> = candidates
        .iter()
        .map(|c| sparse_dot(&c.vector, mid))
        .collect();
    let mut chosen: Vec<usize> = Vec::new();
    let mut tokens = 0;
    while tokens < budget && chosen.len() < candidates.len() {
        check()?;
        let best = (0..candidates.len())
            .filter(|i| !chosen.contains(i))
            .filter(|&i| chosen.is_empty() || tokens + candidates[i].tokens <= budget + budget / 5)
            .map(|i| {
                let redundancy = chosen
                    .iter()
                    .map(|&j| sparse_dot(&candidates[i].vector, &candidates[j].vector))
                    .fold(0.0f32, f32::max);
                (
                    i,
                    MMR_LAMBDA * relevance[i] - (1.0 - MMR_LAMBDA) * redundancy,
                )
            })
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        let Some((i, _)) = best else { break };
        tokens += candidates[i].tokens;
        chosen.push(i);
    }
    chosen.sort_unstable();
    Ok(chosen)
}

/// A node whose text is the sentences joined by spaces, each kept as a piece.
fn assemble<'a>(sentences: impl Iterator<Item = &'a Candidate<'a>>) -> Node {
    let mut text = String::new();
    let mut pieces = Vec::new();
    let mut tokens = 0;
    for c in sentences {
        if !text.is_empty() {
            text.push(' ');
        }
        let start = text.len() as u32;
        text.push_str(c.text);
        pieces.push(Piece {
            start,
            end: text.len() as u32,
            ..c.piece.clone()
        });
        tokens += c.tokens as u32;
    }
    Node {
        level: 0,
        text,
        pieces,
        tokens,
        children: Vec::new(),
        parents: Vec::new(),
        vector: Vec::new(),
    }
}

/// An extractive summary of any nodes (rag_summarize): the same pick over their
/// sentences with a budget of `budget` tokens; `Err` when `job` stops.
pub fn summarise(nodes: &[&Node], budget: usize, job: &Job) -> Result<Node, Stop> {
    let owned: Vec<Node> = nodes.iter().map(|n| (*n).clone()).collect();
    let members: Vec<usize> = (0..owned.len()).collect();
    summary_of(&owned, &members, budget, Some(job))
}
