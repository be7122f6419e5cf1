//! The RAG pass: a background thread fed by the indexer. A document indexed or
//! changed gets its own tree rebuilt (and only its own); after each batch of
//! events the touched datasets' views are rebuilt, which re-clusters their
//! small top layers. Removed documents leave with their catalog rows. Nothing
//! here runs on a request's path.

use std::collections::BTreeSet;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use crate::formats::Kind;
use crate::indexing::DocumentEvent;
use crate::roots::RootId;

use super::engine::Rag;
use super::store::{build_and_store, has_tree};

impl Rag {
    /// Starts the pass; the indexer sends its document events to the returned
    /// sender. Documents indexed before (and unchanged since) get their trees
    /// first if they lack one.
    pub fn start_pass(self: &Arc<Self>) -> anyhow::Result<Sender<DocumentEvent>> {
        let (tx, rx) = channel();
        let rag = self.clone();
        std::thread::Builder::new()
            .name("quarry-rag".into())
            .spawn(move || {
                rag.build_missing_trees();
                rag.follow(rx);
            })?;
        Ok(tx)
    }

    /// Builds the trees documents lack, then every dataset's view (the pass's
    /// start; `quarry call` runs it in-process).
    pub fn build_missing_trees(&self) {
        let mut missing = Vec::new();
        for root_id in 0..self.catalog().roots().list().len() {
            for (rel, e) in self.catalog().files().under(root_id, "") {
                if e.kind == Kind::Document
                    && !e.failed
                    && !has_tree(self.catalog(), e.id, self.model_dims())
                {
                    missing.push((root_id, rel, e.fingerprint));
                }
            }
        }
        self.build_all(&missing);
        for name in self.dataset_names() {
            self.refresh_logged(&name);
        }
    }

    fn follow(&self, rx: Receiver<DocumentEvent>) {
        while let Ok(first) = rx.recv() {
            let mut touched = BTreeSet::new();
            let mut indexed = Vec::new();
            for event in std::iter::once(first).chain(rx.try_iter()) {
                match event {
                    DocumentEvent::Indexed {
                        root_id,
                        rel,
                        fingerprint,
                    } => {
                        touched.extend(self.dataset_of(root_id, &rel));
                        indexed.push((root_id, rel, fingerprint));
                    }
                    DocumentEvent::Removed { root_id } => {
                        touched.extend(self.datasets_of_root(root_id));
                    }
                }
            }
            self.build_all(&indexed);
            for name in touched {
                self.refresh_logged(&name);
            }
        }
    }

    /// Builds the trees of `documents` (root id, path, fingerprint), one
    /// document per task: trees are independent, and each is deterministic
    /// whatever thread builds it. The tasks run on the pass's own pool, so a
    /// long tree (the sentence model's matrix products included) never sits
    /// in the queue of the shared pool that requests' scans run on.
    fn build_all(&self, documents: &[(RootId, String, u64)]) {
        let build_each = || {
            documents
                .par_iter()
                .with_max_len(1)
                .for_each(|(root_id, rel, fingerprint)| self.build(*root_id, rel, *fingerprint));
        };
        on_pass_pool(build_each);
    }

    /// Builds one document's tree; a failure (or a panic) is logged and leaves
    /// the document without a tree, never stops the pass.
    fn build(&self, root_id: RootId, rel: &str, fingerprint: u64) {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            build_and_store(self.catalog(), root_id, rel, fingerprint, self.model())
        }));
        match outcome {
            Ok(Ok(written)) => {
                if let Ok(Some(r)) = self.catalog().record(root_id, rel) {
                    self.forget(r.id);
                }
                let Some(name) = self.dataset_of(root_id, rel) else {
                    return;
                };
                let mut counters = self.counters.lock().expect("rag counters");
                let c = counters.entry(name).or_default();
                c.trees_built += 1;
                c.nodes_written += written as u64;
            }
            Ok(Err(e)) => tracing::warn!("RAG tree of {rel}: {e:#}"),
            Err(panic) => tracing::error!(
                "RAG tree of {rel} panicked: {}",
                crate::panics::panic_message(&panic)
            ),
        }
    }

    fn refresh_logged(&self, name: &str) {
        if let Err(e) = on_pass_pool(|| self.refresh(name)) {
            tracing::warn!("RAG dataset {name}: {e:#}");
        }
    }
}

/// Runs `work` on the RAG pass's own threads, one per core (on the shared
/// pool if they could not be started), so that its parallel work, the
/// sentence model's included, never queues ahead of requests' scans.
fn on_pass_pool<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("quarry-rag-{i}"))
            .build()
            .map_err(|e| tracing::warn!("RAG pass threads: {e}"))
            .ok()
    });
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
}
