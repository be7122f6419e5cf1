//! Keeps the catalog fresh: a notify watcher on every root feeds a debouncer that
//! waits for each path to settle (no event for `settle`), then hands the settled
//! paths to `Indexer::reconcile`. Renames arrive as two paths (the old one is gone,
//! the new one exists), a write-then-rename save as a new file over an old one, a
//! deleted folder as a gone path whose entries are all dropped: `reconcile` looks at
//! what is on disk now, so each is handled by the same code. An overflowed event
//! queue triggers a full rescan.
//!
//! The watcher never follows links: each real folder of a root gets a watch of its
//! own (a link to a folder is a name, not a folder to descend into), and a folder
//! that appears later (created or moved in) gets watches for its subtree when its
//! event arrives. Registering folder by folder also means that one folder that
//! cannot be watched (unreadable, or the inotify limit reached) is skipped with a
//! warning instead of turning live updates off for the whole root. Which paths an
//! event may bring into the catalog is decided by the indexer (`observe_tree`), which
//! refuses any path that passes through a link.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{Config, RecommendedWatcher, RecursiveMode, Watcher as _};

use super::{Indexer, Quiet};
use crate::formats::{Kind, kind_from_name};

/// How often the debouncer looks for settled paths.
const TICK: Duration = Duration::from_millis(50);
/// How long files deferred by transient errors wait before another try.
const RETRY_DEFERRED: Duration = Duration::from_secs(2);

pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts watching every root. Events that arrive before the initial scan finishes
/// are applied after it (the indexer runs one sync at a time).
pub fn start(indexer: Arc<Indexer>, settle: Duration) -> anyhow::Result<Watcher> {
    let (tx, rx) = mpsc::channel();
    let mut watcher = RecommendedWatcher::new(tx, Config::default().with_follow_symlinks(false))?;
    // Remote roots have no events to follow: they are listed again on a
    // schedule (`daemon`).
    for root in indexer
        .catalog()
        .roots()
        .list()
        .iter()
        .filter(|r| !r.is_remote())
    {
        watch_tree(&mut watcher, &root.canonical);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let thread = std::thread::Builder::new()
        .name("quarry-watch".into())
        .spawn({
            let stop = stop.clone();
            move || Debouncer::new(indexer, watcher, settle).run(rx, &stop)
        })?;
    Ok(Watcher {
        stop,
        thread: Some(thread),
    })
}

/// Watches `dir` and every real folder below it, each on its own; links are not
/// followed and hidden folders are left out (the indexer ignores them too). A
/// folder that cannot be watched is skipped with a warning.
fn watch_tree(watcher: &mut RecommendedWatcher, dir: &Path) {
    let walk = ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .hidden(true)
        .follow_links(false)
        .build();
    for entry in walk {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!("not watching a folder: {e}");
                continue;
            }
        };
        if !entry.file_type().is_some_and(|t| t.is_dir()) {
            continue;
        }
        if let Err(e) = watcher.watch(entry.path(), RecursiveMode::NonRecursive) {
            tracing::warn!(
                "not watching {} ({e}); changes below it are seen at the next scan",
                entry.path().display()
            );
        }
    }
}

struct Waiting {
    last_event: Instant,
    /// The root and kind counted as pending for this path, if any.
    pending: Option<(usize, Kind)>,
}

struct Debouncer {
    indexer: Arc<Indexer>,
    /// Owned here so that folders appearing later can be watched as they arrive.
    watcher: RecommendedWatcher,
    settle: Duration,
    last_retry: Instant,
    waiting: HashMap<PathBuf, Waiting>,
    rescan: bool,
}

impl Debouncer {
    fn new(indexer: Arc<Indexer>, watcher: RecommendedWatcher, settle: Duration) -> Debouncer {
        Debouncer {
            indexer,
            watcher,
            settle,
            last_retry: Instant::now(),
            waiting: HashMap::new(),
            rescan: false,
        }
    }

    fn run(mut self, rx: mpsc::Receiver<notify::Result<notify::Event>>, stop: &AtomicBool) {
        self.indexer.catalog().activity().set_watching(true);
        while !stop.load(Ordering::Relaxed) {
            match rx.recv_timeout(TICK) {
                Ok(event) => {
                    self.note(event);
                    while let Ok(more) = rx.try_recv() {
                        self.note(more);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.flush();
        }
        self.indexer.catalog().activity().set_watching(false);
    }

    fn note(&mut self, event: notify::Result<notify::Event>) {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!("file watcher error: {e}; rescanning the roots");
                self.rescan = true;
                return;
            }
        };
        if event.need_rescan() {
            self.rescan = true;
        }
        // Reads (our own included) are not changes; a close after writing is.
        if let EventKind::Access(kind) = event.kind
            && kind != AccessKind::Close(AccessMode::Write)
        {
            return;
        }
        let now = Instant::now();
        for path in event.paths {
            if self.indexer.ignores(&path) {
                continue;
            }
            // A folder created or moved in: watch its subtree (a link is not a
            // folder here: symlink_metadata does not follow it).
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                watch_tree(&mut self.watcher, &path);
            }
            let activity = self.indexer.catalog().activity();
            let w = self.waiting.entry(path).or_insert_with_key(|path| {
                let pending = pending_kind(&self.indexer, path);
                if let Some((root_id, kind)) = pending {
                    activity.add_pending(root_id, kind, 1);
                }
                Waiting {
                    last_event: now,
                    pending,
                }
            });
            w.last_event = now;
        }
    }

    fn flush(&mut self) {
        if std::mem::take(&mut self.rescan)
            && let Err(e) = self.indexer.scan_all(&Quiet)
        {
            tracing::error!("rescan failed: {e:#}");
        }
        if let Err(e) = self.indexer.sync_noted_changes() {
            tracing::error!("indexing remote files found changed failed: {e:#}");
        }
        if self.indexer.has_deferred() && self.last_retry.elapsed() >= RETRY_DEFERRED {
            self.last_retry = Instant::now();
            if let Err(e) = self.indexer.retry_deferred() {
                tracing::error!("retrying deferred files failed: {e:#}");
            }
        }
        let now = Instant::now();
        let settled: Vec<PathBuf> = self
            .waiting
            .iter()
            .filter(|(_, w)| now.duration_since(w.last_event) >= self.settle)
            .map(|(p, _)| p.clone())
            .collect();
        if settled.is_empty() {
            return;
        }
        if let Err(e) = self.indexer.reconcile(&settled) {
            tracing::error!("updating the catalog failed: {e:#}");
        }
        let activity = self.indexer.catalog().activity();
        for path in settled {
            if let Some(Waiting {
                pending: Some((root_id, kind)),
                ..
            }) = self.waiting.remove(&path)
            {
                activity.finish_pending(root_id, kind, 1);
            }
        }
    }
}

/// The root and kind a changed path will be indexed as, judged by its name.
fn pending_kind(indexer: &Indexer, path: &std::path::Path) -> Option<(usize, Kind)> {
    let (root_id, _) = indexer.catalog().roots().locate(path)?;
    let kind = kind_from_name(path.file_name()?.to_str()?)?;
    Some((root_id, kind))
}
