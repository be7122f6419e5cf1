//! A RAG dataset's view for retrieval and navigation: every document tree of one
//! data root (loaded from the catalog, reused while the document is unchanged), a
//! small top layer clustered over the documents' root nodes, and the BM25
//! segments. The engine (`engine.rs`) builds and keeps the views.

use std::collections::HashMap;
use std::sync::Arc;

use super::bm25::Segment;
use super::embed::Embedder;
use super::tree::{Node, build_layers};

/// One document's tree as the view holds it.
#[derive(Clone)]
pub struct DocTree {
    pub file_id: u64,
    pub fingerprint: u64,
    pub rel: String,
    pub nodes: Arc<Vec<Node>>,
    pub segment: Arc<Segment>,
}

/// Where a node of the view comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Node `index` of the tree of document `file_id`.
    Document { file_id: u64, index: u32 },
    /// Node `index` of the dataset's top layer.
    Top { index: u32 },
}

/// A RAG dataset (a named collection of documents) as retrieval and navigation
/// see it: its documents' trees and the top layer over them.
pub struct RagDataset {
    pub name: String,
    pub docs: Vec<DocTree>,
    /// Every node: the documents' in turn, then the top layer's; children and
    /// parents are indices into this list.
    pub nodes: Vec<Node>,
    pub origins: Vec<Origin>,
    doc_offsets: Vec<usize>,
    doc_by_id: HashMap<u64, usize>,
    top_start: usize,
    top_segment: Segment,
}

impl RagDataset {
    /// Assembles the view from document trees (in path order); the top layer's
    /// summaries get the model's vectors when there is one.
    pub fn assemble(name: String, docs: Vec<DocTree>, model: Option<&Embedder>) -> RagDataset {
        let mut nodes = Vec::new();
        let mut origins = Vec::new();
        let mut doc_offsets = Vec::with_capacity(docs.len());
        for d in &docs {
            let offset = nodes.len();
            doc_offsets.push(offset);
            for (i, n) in d.nodes.iter().enumerate() {
                let mut n = n.clone();
                n.children.iter_mut().for_each(|c| *c += offset as u32);
                n.parents.iter_mut().for_each(|p| *p += offset as u32);
                nodes.push(n);
                origins.push(Origin::Document {
                    file_id: d.file_id,
                    index: i as u32,
                });
            }
        }
        let top_start = nodes.len();
        let roots: Vec<usize> = (0..top_start)
            .filter(|&i| nodes[i].parents.is_empty())
            .collect();
        if roots.len() > 1 {
            let base = roots.iter().map(|&i| nodes[i].level).max().unwrap_or(0);
            build_layers(&mut nodes, roots, base, model);
        }
        for k in top_start..nodes.len() {
            origins.push(Origin::Top {
                index: (k - top_start) as u32,
            });
        }
        let top_segment = Segment::build(nodes[top_start..].iter().map(|n| n.text.as_str()));
        let doc_by_id = docs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.file_id, i))
            .collect();
        RagDataset {
            name,
            docs,
            nodes,
            origins,
            doc_offsets,
            doc_by_id,
            top_start,
            top_segment,
        }
    }

    /// The segments with the index of their first node.
    pub fn segments(&self) -> Vec<(&Segment, usize)> {
        let mut out: Vec<(&Segment, usize)> = self
            .docs
            .iter()
            .zip(&self.doc_offsets)
            .map(|(d, &o)| (d.segment.as_ref(), o))
            .collect();
        out.push((&self.top_segment, self.top_start));
        out
    }

    /// The node's public id: `FILEID.INDEX` for a document's node,
    /// `top:DATASET:INDEX` for the top layer's (top-layer ids change when the
    /// layer is re-clustered).
    pub fn node_id(&self, i: usize) -> String {
        match self.origins[i] {
            Origin::Document { file_id, index } => format!("{file_id}.{index}"),
            Origin::Top { index } => format!("top:{}:{index}", self.name),
        }
    }

    /// The node with public id `id`, if this dataset has it.
    pub fn find(&self, id: &str) -> Option<usize> {
        if let Some(top) = id.strip_prefix("top:") {
            let (name, index) = top.rsplit_once(':')?;
            let index: usize = index.parse().ok()?;
            let found = name == self.name && index < self.nodes.len() - self.top_start;
            return found.then_some(self.top_start + index);
        }
        let (head, index) = id.split_once('.')?;
        let index: usize = index.parse().ok()?;
        let doc = *self.doc_by_id.get(&head.parse::<u64>().ok()?)?;
        (index < self.docs[doc].nodes.len()).then_some(self.doc_offsets[doc] + index)
    }

    /// The document path (relative to the root) of a catalog file id.
    pub fn document_path(&self, file_id: u64) -> Option<&str> {
        self.doc_by_id
            .get(&file_id)
            .map(|&d| self.docs[d].rel.as_str())
    }

    /// The document a node belongs to (`None` for the top layer).
    pub fn document_of(&self, i: usize) -> Option<&str> {
        match self.origins[i] {
            Origin::Document { file_id, .. } => self.document_path(file_id),
            Origin::Top { .. } => None,
        }
    }

    pub fn is_top(&self, i: usize) -> bool {
        i >= self.top_start
    }

    /// Whether every node has a model vector (retrieval is then hybrid).
    pub fn has_vectors(&self) -> bool {
        !self.nodes.is_empty() && self.nodes.iter().all(|n| !n.vector.is_empty())
    }
}
