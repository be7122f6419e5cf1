//! Keeps the catalog fresh: a notify watcher on every root feeds a debouncer that
//! waits for each path to settle (no event for `settle`), then hands the settled
//! paths to `Indexer::reconcile`. Renames arrive as two paths (the old one is gone,
//! the new one exists), a write-then-rename save as a new file over an old one, a
//! deleted folder as a gone path whose entries are all dropped: `reconcile` looks at
//! what is on disk now, so each is handled by the same code. An overflowed event
//! queue triggers a full rescan.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};

use super::{Indexer, Quiet};
use crate::formats::{Kind, kind_from_name};

/// How often the debouncer looks for settled paths.
const TICK: Duration = Duration::from_millis(50);

pub struct Watcher {
    _watcher: RecommendedWatcher,
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
    let mut watcher = notify::recommended_watcher(tx)?;
    for root in indexer.catalog().roots().list() {
        watcher.watch(&root.canonical, RecursiveMode::Recursive)?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let thread = std::thread::Builder::new()
        .name("quarry-watch".into())
        .spawn({
            let stop = stop.clone();
            move || Debouncer::new(indexer, settle).run(rx, &stop)
        })?;
    Ok(Watcher {
        _watcher: watcher,
        stop,
        thread: Some(thread),
    })
}

struct Waiting {
    last_event: Instant,
    /// The root and kind counted as pending for this path, if any.
    pending: Option<(usize, Kind)>,
}

struct Debouncer {
    indexer: Arc<Indexer>,
    settle: Duration,
    waiting: HashMap<PathBuf, Waiting>,
    rescan: bool,
}

impl Debouncer {
    fn new(indexer: Arc<Indexer>, settle: Duration) -> Debouncer {
        Debouncer {
            indexer,
            settle,
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
            let activity = self.indexer.catalog().activity();
            let w = self.waiting.entry(path).or_insert_with_key(|path| {
                let pending = pending_kind(&self.indexer, path);
                if let Some((root, kind)) = pending {
                    activity.add_pending(root, kind, 1);
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
                pending: Some((root, kind)),
                ..
            }) = self.waiting.remove(&path)
            {
                activity.finish_pending(root, kind, 1);
            }
        }
    }
}

/// The root and kind a changed path will be indexed as, judged by its name.
fn pending_kind(indexer: &Indexer, path: &std::path::Path) -> Option<(usize, Kind)> {
    let (root, _) = indexer.catalog().roots().locate(path)?;
    let kind = kind_from_name(path.file_name()?.to_str()?)?;
    Some((root, kind))
}
