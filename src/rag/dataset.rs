//! A dataset's view for retrieval and navigation: every document tree of one
//! root (loaded from the catalog, reused while the document is unchanged), a
//! small top layer clustered over the documents' root nodes, and the BM25
//! segments. Views are rebuilt by the RAG pass after each change, so requests
//! find them ready.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use crate::catalog::Catalog;
use crate::formats::Kind;

use super::bm25::Segment;
use super::store::load_tree;
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

pub struct Dataset {
    pub name: String,
    pub root: usize,
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

impl Dataset {
    /// Assembles the view from document trees (in path order).
    pub fn assemble(name: String, root: usize, docs: Vec<DocTree>) -> Dataset {
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
            build_layers(&mut nodes, roots, base);
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
        Dataset {
            name,
            root,
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

    /// The node's public id: `FILEID.INDEX` for a document's node, `tROOT.INDEX`
    /// for the top layer's (top-layer ids change when the layer is re-clustered).
    pub fn node_id(&self, i: usize) -> String {
        match self.origins[i] {
            Origin::Document { file_id, index } => format!("{file_id}.{index}"),
            Origin::Top { index } => format!("t{}.{index}", self.root),
        }
    }

    /// The node with public id `id`, if this dataset has it.
    pub fn find(&self, id: &str) -> Option<usize> {
        let (head, index) = id.split_once('.')?;
        let index: usize = index.parse().ok()?;
        if let Some(root) = head.strip_prefix('t') {
            let found = root.parse::<usize>().ok()? == self.root
                && index < self.nodes.len() - self.top_start;
            return found.then_some(self.top_start + index);
        }
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
}

/// Counters per dataset, for list_datasets and the tests.
#[derive(Default, Clone, Copy, Debug)]
pub struct Counters {
    pub trees_built: u64,
    pub nodes_written: u64,
}

/// The RAG engine's shared state: the datasets' views and the pass counters.
pub struct Rag {
    catalog: Arc<Catalog>,
    views: RwLock<HashMap<usize, Arc<Dataset>>>,
    /// Document trees by file id, reused across view rebuilds.
    trees: Mutex<HashMap<u64, DocTree>>,
    pub(crate) counters: Mutex<HashMap<usize, Counters>>,
}

impl Rag {
    pub fn new(catalog: Arc<Catalog>) -> Arc<Rag> {
        Arc::new(Rag {
            catalog,
            views: RwLock::default(),
            trees: Mutex::default(),
            counters: Mutex::default(),
        })
    }

    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// The root index of dataset `name`.
    pub fn dataset_root(&self, name: &str) -> Option<usize> {
        self.catalog
            .roots()
            .list()
            .iter()
            .position(|r| r.name == name)
    }

    pub fn counters(&self, root: usize) -> Counters {
        self.counters
            .lock()
            .expect("rag counters")
            .get(&root)
            .copied()
            .unwrap_or_default()
    }

    /// The dataset's current view (built now if the pass has not yet).
    pub fn dataset(&self, root: usize) -> anyhow::Result<Arc<Dataset>> {
        if let Some(v) = self.views.read().expect("rag views").get(&root) {
            return Ok(v.clone());
        }
        self.refresh(root)
    }

    /// Rebuilds a dataset's view from the catalog: unchanged documents' trees
    /// are reused, the top layer is clustered again.
    pub fn refresh(&self, root: usize) -> anyhow::Result<Arc<Dataset>> {
        let mut docs = Vec::new();
        for (rel, entry) in self.catalog.files().under(root, "") {
            if entry.kind != Kind::Document || entry.failed {
                continue;
            }
            let cached = self
                .trees
                .lock()
                .expect("rag trees")
                .get(&entry.id)
                .filter(|t| t.fingerprint == entry.fingerprint && t.rel == rel)
                .cloned();
            let tree = match cached {
                Some(t) => t,
                None => {
                    let nodes = load_tree(&self.catalog, entry.id)?;
                    let segment = Segment::build(nodes.iter().map(|n| n.text.as_str()));
                    let tree = DocTree {
                        file_id: entry.id,
                        fingerprint: entry.fingerprint,
                        rel,
                        nodes: Arc::new(nodes),
                        segment: Arc::new(segment),
                    };
                    // A tree not built yet is not remembered: it is loaded again
                    // once the pass has stored it.
                    if !tree.nodes.is_empty() {
                        self.trees
                            .lock()
                            .expect("rag trees")
                            .insert(entry.id, tree.clone());
                    }
                    tree
                }
            };
            if !tree.nodes.is_empty() {
                docs.push(tree);
            }
        }
        let name = self.catalog.roots().list()[root].name.clone();
        let view = Arc::new(Dataset::assemble(name, root, docs));
        self.views
            .write()
            .expect("rag views")
            .insert(root, view.clone());
        Ok(view)
    }

    /// Forgets a document's cached tree (it was rebuilt).
    pub(crate) fn forget(&self, file_id: u64) {
        self.trees.lock().expect("rag trees").remove(&file_id);
    }

    /// The dataset and node index of a public node id.
    pub fn find_node(&self, id: &str) -> anyhow::Result<Option<(Arc<Dataset>, usize)>> {
        for root in 0..self.catalog.roots().list().len() {
            let ds = self.dataset(root)?;
            if let Some(i) = ds.find(id) {
                return Ok(Some((ds, i)));
            }
        }
        Ok(None)
    }
}
