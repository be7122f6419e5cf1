//! Indexing, the pipeline that fills the catalog: finds files in the data roots,
//! extracts what each kind keeps, and writes it to the catalog in batched
//! transactions. A full scan and a watcher-driven update are the same operation
//! (`sync`) over a root or a subtree: observe what is on disk, diff against the
//! catalog's mirror, extract what is new or changed, drop what is gone.

pub mod code;
pub mod documents;
mod extract;
pub mod hdf5;
pub mod root;
mod root_ntuple;
mod stats_pass;
mod walk;
pub mod watcher;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

pub use extract::{Extracted, extract};
pub use walk::{Exclusions, Found, Observed, Skipped};

use crate::catalog::{Catalog, Change, FileInfo, FileStatus};
use crate::formats::Kind;
use crate::roots::DataRoot;
use crate::roots::RootId;

/// When branch statistics are computed and cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StatsMode {
    /// By a background pass as soon as a ROOT file is indexed.
    Eager,
    /// On the first request (list_branches with include_stats), then cached.
    #[default]
    Lazy,
    /// Computed on request, never cached.
    Off,
}

#[derive(Debug, Clone)]
pub struct IndexOptions {
    /// Threads for walking and extraction.
    pub threads: usize,
    /// Files per catalog transaction.
    pub batch: usize,
    /// Absolute folders never indexed (the catalog and export folders).
    pub excluded_dirs: Vec<PathBuf>,
    pub stats: StatsMode,
}

/// Told how a sync advances (for `rebuild`'s progress bar).
pub trait Progress: Sync {
    fn found(&self, _root_name: &str, _to_index: usize) {}
    fn indexed(&self, _files: usize) {}
}

/// A progress observer that says nothing.
pub struct Quiet;
impl Progress for Quiet {}

/// What one sync did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SyncSummary {
    pub indexed: usize,
    pub failed: usize,
    pub unchanged: usize,
    pub removed: usize,
    /// Files left for later after transient errors outlasted the retries.
    pub deferred: usize,
}

impl SyncSummary {
    fn add(&mut self, other: SyncSummary) {
        self.indexed += other.indexed;
        self.failed += other.failed;
        self.unchanged += other.unchanged;
        self.removed += other.removed;
        self.deferred += other.deferred;
    }
}

/// What the indexer tells a document listener (the RAG pass) after a commit.
#[derive(Debug, Clone)]
pub enum DocumentEvent {
    /// A document was indexed (new or changed; possibly failed).
    Indexed {
        root_id: RootId,
        rel: String,
        fingerprint: u64,
    },
    /// Files of this root were removed.
    Removed { root_id: RootId },
}

pub struct Indexer {
    catalog: Arc<Catalog>,
    options: IndexOptions,
    exclusions: Exclusions,
    pool: rayon::ThreadPool,
    /// One sync at a time: a scan and a watcher update never interleave their
    /// diffs, so the catalog always converges to the last state observed.
    sync_lock: Mutex<()>,
    /// ROOT files waiting for the statistics pass (eager mode, once started).
    stats_queue: Mutex<Option<std::sync::mpsc::Sender<stats_pass::Queued>>>,
    /// Files whose extraction met only transient errors, to try again
    /// (`retry_deferred`).
    deferred: Mutex<BTreeSet<(RootId, String)>>,
    /// Told of committed document changes (the RAG pass), once set.
    document_listener: Mutex<Option<std::sync::mpsc::Sender<DocumentEvent>>>,
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Indexer {
    pub fn new(catalog: Arc<Catalog>, options: IndexOptions) -> anyhow::Result<Indexer> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(options.threads.max(1))
            .thread_name(|i| format!("quarry-index-{i}"))
            .build()?;
        Ok(Indexer {
            exclusions: Exclusions::new(options.excluded_dirs.clone()),
            catalog,
            options,
            pool,
            sync_lock: Mutex::new(()),
            stats_queue: Mutex::new(None),
            deferred: Mutex::new(BTreeSet::new()),
            document_listener: Mutex::new(None),
        })
    }

    /// Starts the background statistics pass (eager mode): every ROOT file indexed
    /// from now on gets its branch statistics computed and cached.
    pub fn start_stats_pass(self: &Arc<Self>) -> anyhow::Result<()> {
        if self.options.stats != StatsMode::Eager {
            return Ok(());
        }
        let (tx, rx) = std::sync::mpsc::channel::<stats_pass::Queued>();
        *self.stats_queue.lock().expect("stats queue") = Some(tx);
        // Files indexed before this start (unchanged since) get their turn too.
        {
            let queue = self.stats_queue.lock().expect("stats queue");
            let tx = queue.as_ref().expect("just set");
            for root_id in 0..self.catalog.roots().list().len() {
                for (rel, e) in self.catalog.files().under(root_id, "") {
                    if e.kind == Kind::Root && !e.failed {
                        let _ = tx.send((root_id, rel, e.fingerprint));
                    }
                }
            }
        }
        let catalog = self.catalog.clone();
        std::thread::Builder::new()
            .name("quarry-stats".into())
            .spawn(move || stats_pass::run(catalog, rx))?;
        Ok(())
    }

    /// Sends every committed document change to `tx` from now on.
    pub fn set_document_listener(&self, tx: std::sync::mpsc::Sender<DocumentEvent>) {
        *self.document_listener.lock().expect("document listener") = Some(tx);
    }

    fn tell_documents(&self, events: impl Iterator<Item = DocumentEvent>) {
        let listener = self.document_listener.lock().expect("document listener");
        if let Some(tx) = listener.as_ref() {
            for e in events {
                let _ = tx.send(e);
            }
        }
    }

    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Brings every root's catalog entries up to date with the disk.
    pub fn scan_all(&self, progress: &dyn Progress) -> anyhow::Result<SyncSummary> {
        let mut total = SyncSummary::default();
        for root_id in 0..self.catalog.roots().list().len() {
            total.add(self.scan_root(root_id, progress)?);
        }
        Ok(total)
    }

    pub fn scan_root(
        &self,
        root_id: RootId,
        progress: &dyn Progress,
    ) -> anyhow::Result<SyncSummary> {
        let activity = self.catalog.activity();
        activity.set_scanning(root_id, true);
        let result = self.sync(root_id, "", progress, true).and_then(|summary| {
            self.catalog
                .set_scan_completed(root_id, now_ms())
                .map(|()| summary)
        });
        activity.set_scanning(root_id, false);
        result
    }

    /// Re-examines absolute paths the watcher reported (files or folders, present
    /// or gone).
    pub fn reconcile(&self, paths: &[PathBuf]) -> anyhow::Result<SyncSummary> {
        let targets: BTreeSet<(RootId, String)> = paths
            .iter()
            .filter_map(|p| self.catalog.roots().locate(p))
            .filter(|(_, rel)| !self.exclusions.excludes_rel(rel))
            .collect();
        let mut total = SyncSummary::default();
        for (root_id, rel) in targets {
            // The watcher already counts these paths as pending.
            total.add(self.sync(root_id, &rel, &Quiet, false)?);
        }
        Ok(total)
    }

    /// Whether files wait for another try after transient errors.
    pub fn has_deferred(&self) -> bool {
        !self.deferred.lock().expect("deferred files").is_empty()
    }

    /// Tries again the files that met only transient errors.
    pub fn retry_deferred(&self) -> anyhow::Result<SyncSummary> {
        let files = std::mem::take(&mut *self.deferred.lock().expect("deferred files"));
        let mut total = SyncSummary::default();
        for (root_id, rel) in files {
            total.add(self.sync(root_id, &rel, &Quiet, false)?);
        }
        Ok(total)
    }

    /// States again the files of remote roots that a read found changed
    /// since the catalog's version (`RemoteRoot::note_changed`), instead of
    /// leaving them described by the old version until the next listing.
    pub fn sync_noted_changes(&self) -> anyhow::Result<SyncSummary> {
        let mut total = SyncSummary::default();
        let roots = self.catalog.roots();
        for (root_id, spec) in roots.list().iter().enumerate() {
            let Some(remote) = &spec.remote else { continue };
            for rel in remote.take_changed() {
                total.add(self.sync(root_id, &rel, &Quiet, false)?);
            }
        }
        Ok(total)
    }

    /// Whether a path is one the indexer ignores.
    pub fn ignores(&self, abs: &Path) -> bool {
        self.exclusions.excludes_abs(abs)
            || self
                .catalog
                .roots()
                .locate(abs)
                .is_none_or(|(_, rel)| self.exclusions.excludes_rel(&rel))
    }

    /// Makes the catalog's entries at or below `rel` match the disk; with
    /// `track_pending`, the files it extracts count as pending meanwhile.
    pub fn sync(
        &self,
        root_id: RootId,
        rel: &str,
        progress: &dyn Progress,
        track_pending: bool,
    ) -> anyhow::Result<SyncSummary> {
        let _one_at_a_time = self.sync_lock.lock().expect("sync lock");
        let spec = &self.catalog.roots().list()[root_id];
        let found = walk::observe_tree(spec, rel, &self.exclusions, self.options.threads);
        if let Some(why) = found.unlisted {
            // A remote root that did not answer: what the catalog holds stays
            // (nothing is known to be gone); the next listing tries again.
            tracing::debug!("sync of root {root_id} skipped: {why}");
            return Ok(SyncSummary::default());
        }
        let skipped: Vec<(String, String)> = found
            .skipped
            .into_iter()
            .map(|s| (s.rel, s.reason))
            .collect();
        self.catalog.replace_skipped(root_id, rel, &skipped)?;
        let observed = found.files;
        let known: HashMap<String, _> = self
            .catalog
            .files()
            .under(root_id, rel)
            .into_iter()
            .collect();

        let mut summary = SyncSummary::default();
        let mut to_index = Vec::new();
        let mut seen = BTreeSet::new();
        for o in observed {
            let unchanged = known
                .get(&o.rel)
                .is_some_and(|e| e.fingerprint == o.fingerprint && e.kind == o.kind);
            seen.insert(o.rel.clone());
            if unchanged {
                summary.unchanged += 1;
            } else {
                to_index.push(o);
            }
        }
        let removals: Vec<Change> = known
            .keys()
            .filter(|k| !seen.contains(*k))
            .map(|k| Change::Remove {
                root_id,
                rel: k.clone(),
            })
            .collect();
        summary.removed = removals.len();
        progress.found(&spec.name, to_index.len());
        self.catalog.apply(&removals)?;
        if !removals.is_empty() {
            self.tell_documents(std::iter::once(DocumentEvent::Removed { root_id }));
        }

        if track_pending {
            self.mark_pending(root_id, &to_index);
        }
        let mut stored = 0;
        let outcome = self.extract_and_store(
            root_id,
            &to_index,
            &mut summary,
            progress,
            track_pending,
            &mut stored,
        );
        // What the batches gave the text index becomes searchable before the
        // sync returns, so a scan or watcher update that index_status reports
        // done is done for search too.
        self.catalog.flush_text();
        // After a failed transaction, what was never stored is no longer pending.
        if track_pending {
            for o in &to_index[stored..] {
                self.catalog.activity().finish_pending(root_id, o.kind, 1);
            }
        }
        outcome?;
        Ok(summary)
    }

    fn mark_pending(&self, root_id: RootId, files: &[Observed]) {
        let mut by_kind: BTreeMap<Kind, u64> = BTreeMap::new();
        for o in files {
            *by_kind.entry(o.kind).or_default() += 1;
        }
        for (&kind, &n) in &by_kind {
            self.catalog.activity().add_pending(root_id, kind, n);
        }
    }

    fn extract_and_store(
        &self,
        root_id: RootId,
        files: &[Observed],
        summary: &mut SyncSummary,
        progress: &dyn Progress,
        track_pending: bool,
        stored: &mut usize,
    ) -> anyhow::Result<()> {
        let base = self.catalog.roots().list()[root_id].clone();
        for chunk in batches(files, self.options.batch.max(1), MAX_BATCH_BYTES) {
            let outcomes: Vec<Option<Change>> = self.pool.install(|| {
                chunk
                    .par_iter()
                    .map(|o| extract_change(root_id, &base, o))
                    .collect()
            });
            for (o, c) in chunk.iter().zip(&outcomes) {
                match c {
                    None => {
                        summary.deferred += 1;
                        self.deferred
                            .lock()
                            .expect("deferred files")
                            .insert((root_id, o.rel.clone()));
                    }
                    Some(Change::Upsert { file, .. }) if file.status.is_failed() => {
                        summary.failed += 1
                    }
                    Some(_) => summary.indexed += 1,
                }
            }
            let changes: Vec<Change> = outcomes.into_iter().flatten().collect();
            self.catalog.apply(&changes)?;
            self.queue_stats(root_id, &changes);
            self.tell_documents(changes.iter().filter_map(|c| match c {
                Change::Upsert { rel, file, .. } if file.kind == Kind::Document => {
                    Some(DocumentEvent::Indexed {
                        root_id,
                        rel: rel.clone(),
                        fingerprint: file.fingerprint,
                    })
                }
                _ => None,
            }));
            if track_pending {
                for o in chunk {
                    self.catalog.activity().finish_pending(root_id, o.kind, 1);
                }
            }
            *stored += chunk.len();
            progress.indexed(chunk.len());
        }
        Ok(())
    }
}

impl Indexer {
    /// Hands freshly indexed ROOT files to the statistics pass, if it runs.
    fn queue_stats(&self, root_id: RootId, changes: &[Change]) {
        let queue = self.stats_queue.lock().expect("stats queue");
        let Some(tx) = queue.as_ref() else { return };
        for c in changes {
            if let Change::Upsert { rel, file, .. } = c
                && file.kind == Kind::Root
                && !file.status.is_failed()
            {
                let _ = tx.send((root_id, rel.clone(), file.fingerprint));
            }
        }
    }
}

/// Most bytes of rows one batch may hold, as `weight` estimates them: a
/// batch's rows stay in memory until it is committed (a document's hold its
/// text), and its documents' text goes to the text index together.
const MAX_BATCH_BYTES: u64 = 32 << 20;

/// What a file may add to a batch's rows, at most: a document contributes at
/// most `MAX_DOCUMENT_TEXT_BYTES` of text, a source file is read only that
/// far, and the ROOT and HDF5 rows are the files' structure, not their data.
fn weight(o: &Observed) -> u64 {
    o.size
        .min(crate::formats::document::MAX_DOCUMENT_TEXT_BYTES as u64)
}

/// `files` cut into batches of at most `max_files` files and (unless a single
/// file weighs more) `max_bytes` of `weight`.
fn batches(
    files: &[Observed],
    max_files: usize,
    max_bytes: u64,
) -> impl Iterator<Item = &[Observed]> {
    let mut rest = files;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut bytes = 0u64;
        let mut n = 0;
        while n < rest.len() && n < max_files && (n == 0 || bytes + weight(&rest[n]) <= max_bytes) {
            bytes += weight(&rest[n]);
            n += 1;
        }
        let (batch, tail) = rest.split_at(n);
        rest = tail;
        Some(batch)
    })
}

/// The catalog change for one observed file; `None` when a transient error
/// outlasted the retries (nothing is recorded, the file is tried again later).
fn extract_change(root_id: RootId, base: &DataRoot, o: &Observed) -> Option<Change> {
    let (status, rows) = match extract(o.kind, base, &o.rel, (o.size, o.mtime_ns)) {
        Extracted::Rows(rows) => (FileStatus::Ok, rows),
        Extracted::Failed(msg) => (FileStatus::Failed(msg), Vec::new()),
        Extracted::Deferred(why) => {
            tracing::warn!("{} deferred after a transient error: {why}", o.rel);
            return None;
        }
    };
    Some(Change::Upsert {
        root_id,
        rel: o.rel.clone(),
        file: FileInfo {
            kind: o.kind,
            size: o.size,
            mtime_ns: o.mtime_ns,
            fingerprint: o.fingerprint,
            status,
            indexed_at_ms: now_ms(),
        },
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(size: u64) -> Observed {
        Observed {
            rel: String::new(),
            kind: Kind::Document,
            size,
            mtime_ns: 0,
            fingerprint: 0,
        }
    }

    #[test]
    fn batches_are_bounded_by_count_and_bytes() {
        let sizes = |files: &[Observed], max_files, max_bytes| -> Vec<Vec<u64>> {
            batches(files, max_files, max_bytes)
                .map(|b| b.iter().map(|o| o.size).collect())
                .collect()
        };
        let files: Vec<Observed> = [5, 5, 5, 20, 1, 1].into_iter().map(file).collect();
        assert_eq!(
            sizes(&files, 2, 100),
            vec![vec![5, 5], vec![5, 20], vec![1, 1]]
        );
        // A file larger than the byte limit is a batch of its own.
        assert_eq!(
            sizes(&files, 10, 12),
            vec![vec![5, 5], vec![5], vec![20], vec![1, 1]]
        );
        assert!(sizes(&[], 3, 10).is_empty());
        // A file weighs what it may contribute, not its size: 2 GiB files
        // batch like files of the cap.
        let cap = crate::formats::document::MAX_DOCUMENT_TEXT_BYTES as u64;
        let large: Vec<Observed> = [2 << 30, 2 << 30, 2 << 30, 1]
            .into_iter()
            .map(file)
            .collect();
        assert_eq!(
            sizes(&large, 10, 2 * cap)
                .iter()
                .map(Vec::len)
                .collect::<Vec<_>>(),
            vec![2, 2]
        );
    }
}
