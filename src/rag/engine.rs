//! The RAG engine's handle, `Rag`: its settings, the RAG datasets' views (one per
//! data root, rebuilt by the RAG pass after each change, so requests find them
//! ready), the document trees they reuse, the sentence model and the chat
//! sessions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use crate::catalog::Catalog;
use crate::formats::Kind;
use crate::job::Job;
use crate::roots::RootId;

use super::bm25::Segment;
use super::dataset::{DocTree, RagDataset};
use super::embed::Embedder;
use super::store::load_tree;

/// Counters per dataset, for list_datasets and the tests.
#[derive(Default, Clone, Copy, Debug)]
pub struct Counters {
    pub trees_built: u64,
    pub nodes_written: u64,
}

/// What the RAG engine runs with (the `[rag]` and `[llm]` settings).
#[derive(Debug, Clone, Default)]
pub struct RagOptions {
    /// The name of the root of ingested documents (`[rag] ingest_dir`), if any.
    pub ingest_root_name: Option<String>,
    /// The catalog folder, where chat sessions are kept; `None` keeps none.
    pub catalog_dir: Option<std::path::PathBuf>,
    /// A BERT-family sentence model's folder (`[rag] model_dir`).
    pub model_dir: Option<std::path::PathBuf>,
    /// The LLM that makes answers abstractive (`[llm]`).
    pub llm: Option<super::llm::LlmConfig>,
}

/// The RAG engine's shared state: the datasets' views and the pass counters.
pub struct Rag {
    catalog: Arc<Catalog>,
    sessions: super::sessions::Sessions,
    llm: Option<super::llm::LlmConfig>,
    /// The sentence model, or why it could not be loaded.
    model: Result<Option<Arc<Embedder>>, String>,
    /// Each dataset's view with the number of the refresh that built it.
    views: RwLock<HashMap<String, (u64, Arc<RagDataset>)>>,
    /// Numbers refreshes in the order they started reading the catalog.
    refreshes: std::sync::atomic::AtomicU64,
    /// The root that holds ingested documents, a folder per dataset.
    ingest_root_id: Option<RootId>,
    /// Document trees by file id, reused across view rebuilds.
    trees: Mutex<HashMap<u64, DocTree>>,
    pub(crate) counters: Mutex<HashMap<String, Counters>>,
}

impl Rag {
    /// The engine over `catalog`.
    pub fn new(catalog: Arc<Catalog>, options: RagOptions) -> Arc<Rag> {
        let llm = options.llm.clone();
        let model = match &options.model_dir {
            None => Ok(None),
            Some(dir) => match Embedder::load(dir) {
                Ok(m) => {
                    tracing::info!("sentence model loaded from {}", dir.display());
                    Ok(Some(Arc::new(m)))
                }
                Err(e) => {
                    tracing::error!("{e:#}; retrieval stays lexical");
                    Err(format!("{e:#}"))
                }
            },
        };
        let ingest_root_id = options
            .ingest_root_name
            .and_then(|n| catalog.roots().id_of(&n));
        Arc::new(Rag {
            ingest_root_id,
            sessions: super::sessions::Sessions::new(options.catalog_dir),
            llm,
            model,
            catalog,
            views: RwLock::default(),
            refreshes: Default::default(),
            trees: Mutex::default(),
            counters: Mutex::default(),
        })
    }

    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// The sentence model, if one is configured and loaded.
    pub fn model(&self) -> Option<&Embedder> {
        self.model.as_ref().ok().and_then(|m| m.as_deref())
    }

    /// Why the configured sentence model is not used, if it failed to load.
    pub fn model_error(&self) -> Option<&str> {
        self.model.as_ref().err().map(String::as_str)
    }

    /// The model's vector length (0 without a model).
    pub fn model_dims(&self) -> usize {
        self.model().map_or(0, Embedder::dims)
    }

    /// The query's unit vector, when the model is loaded and the dataset's
    /// nodes have vectors of its size.
    pub fn query_vector(&self, ds: &RagDataset, query: &str) -> Option<Vec<f32>> {
        let model = self.model()?;
        if !ds.has_vectors() || ds.nodes[0].vector.len() != model.dims() {
            return None;
        }
        match model.embed(&[query]) {
            Ok(mut v) => v.pop(),
            Err(e) => {
                tracing::warn!("sentence model on a query: {e:#}");
                None
            }
        }
    }

    /// The configured LLM, if any.
    pub fn llm(&self) -> Option<&super::llm::LlmConfig> {
        self.llm.as_ref()
    }

    pub fn sessions(&self) -> &super::sessions::Sessions {
        &self.sessions
    }

    pub fn ingest_root_id(&self) -> Option<RootId> {
        self.ingest_root_id
    }

    /// Every dataset's name: each root's (but the ingest root's), then each
    /// folder of the ingest root that names no root.
    pub fn dataset_names(&self) -> Vec<String> {
        let roots = self.catalog.roots().list();
        let mut names: Vec<String> = (0..roots.len())
            .filter(|&r| Some(r) != self.ingest_root_id)
            .map(|r| roots[r].name.clone())
            .collect();
        if let Some(ingest) = self.ingest_root_id {
            let mut folders: Vec<String> = self
                .catalog
                .files()
                .under(ingest, "")
                .into_iter()
                .filter_map(|(rel, _)| rel.split_once('/').map(|(f, _)| f.to_string()))
                .filter(|f| !names.contains(f))
                .collect();
            folders.dedup();
            names.extend(folders);
        }
        names
    }

    pub fn has_dataset(&self, name: &str) -> bool {
        self.dataset_names().iter().any(|n| n == name)
    }

    /// The datasets fed by a root's files.
    pub fn datasets_of_root(&self, root_id: RootId) -> Vec<String> {
        if Some(root_id) == self.ingest_root_id {
            return self.dataset_names();
        }
        vec![self.catalog.roots().list()[root_id].name.clone()]
    }

    /// The dataset a document of data root `root_id` at `rel` belongs to.
    pub fn dataset_of(&self, root_id: RootId, rel: &str) -> Option<String> {
        if Some(root_id) == self.ingest_root_id {
            return rel.split_once('/').map(|(f, _)| f.to_string());
        }
        Some(self.catalog.roots().list()[root_id].name.clone())
    }

    pub fn counters(&self, name: &str) -> Counters {
        self.counters
            .lock()
            .expect("rag counters")
            .get(name)
            .copied()
            .unwrap_or_default()
    }

    /// The dataset's current view (built now if the pass has not yet).
    pub fn dataset(&self, name: &str) -> anyhow::Result<Arc<RagDataset>> {
        self.dataset_within(name, None)
    }

    /// As `dataset`, for a call: building the view stops between documents
    /// when `job` does, with an error holding the `Stop`.
    pub fn dataset_within(&self, name: &str, job: Option<&Job>) -> anyhow::Result<Arc<RagDataset>> {
        if let Some((_, v)) = self.views.read().expect("rag views").get(name) {
            return Ok(v.clone());
        }
        self.refresh_within(name, job)
    }

    /// A dataset's documents: the root of its name's, and those ingested into
    /// the ingest root's folder of its name (paths shown with the root's name).
    fn documents_of(&self, name: &str) -> Vec<(String, crate::catalog::FileEntry)> {
        let roots = self.catalog.roots().list();
        let mut out = Vec::new();
        let own =
            (0..roots.len()).find(|&r| Some(r) != self.ingest_root_id && roots[r].name == name);
        if let Some(r) = own {
            out.extend(self.catalog.files().under(r, ""));
        }
        if let Some(ingest) = self.ingest_root_id {
            let shown = |rel: String| format!("{}/{rel}", roots[ingest].name);
            out.extend(
                self.catalog
                    .files()
                    .under(ingest, name)
                    .into_iter()
                    .filter(|(rel, _)| rel.len() > name.len())
                    .map(|(rel, e)| (shown(rel), e)),
            );
        }
        out.retain(|(_, e)| e.kind == Kind::Document && !e.failed);
        out
    }

    /// Rebuilds a dataset's view from the catalog: unchanged documents' trees
    /// are reused, the top layer is clustered again.
    ///
    /// A request and the pass may refresh the same dataset at once; the view
    /// kept is the one whose refresh started last (it read the newer catalog),
    /// so a slow refresh of an older state never replaces a newer view.
    pub fn refresh(&self, name: &str) -> anyhow::Result<Arc<RagDataset>> {
        self.refresh_within(name, None)
    }

    fn refresh_within(&self, name: &str, job: Option<&Job>) -> anyhow::Result<Arc<RagDataset>> {
        let number = self
            .refreshes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut docs = Vec::new();
        for (rel, entry) in self.documents_of(name) {
            if let Some(job) = job {
                job.check()?;
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
        let view = Arc::new(RagDataset::assemble(name.to_string(), docs, self.model()));
        let mut views = self.views.write().expect("rag views");
        match views.get(name) {
            Some((newer, kept)) if *newer > number => Ok(kept.clone()),
            _ => {
                views.insert(name.to_string(), (number, view.clone()));
                Ok(view)
            }
        }
    }

    /// Forgets a document's cached tree (it was rebuilt).
    pub(crate) fn forget(&self, file_id: u64) {
        self.trees.lock().expect("rag trees").remove(&file_id);
    }

    /// The dataset and node index of a public node id.
    pub fn find_node(&self, id: &str) -> anyhow::Result<Option<(Arc<RagDataset>, usize)>> {
        for name in self.dataset_names() {
            let ds = self.dataset(&name)?;
            if let Some(i) = ds.find(id) {
                return Ok(Some((ds, i)));
            }
        }
        Ok(None)
    }
}
