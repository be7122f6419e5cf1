//! What indexing is doing right now: files waiting to be extracted, roots
//! being scanned, whether the watcher runs, which files the background statistics
//! pass failed on. Runtime state only; the catalog tables hold what is done.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::formats::Kind;
use crate::roots::RootId;

pub struct Activity {
    pending: Mutex<BTreeMap<(usize, Kind), u64>>,
    scanning: Mutex<BTreeSet<usize>>,
    watching: AtomicBool,
    /// Counts the committed batches that added, changed or removed HDF5 files:
    /// whoever lists HDF5 files (the MCP front end's resources) subscribes and
    /// learns that its list changed, without the indexer knowing who listens.
    hdf5_changes: tokio::sync::watch::Sender<u64>,
    stats_failures: Mutex<StatsFailures>,
}

/// The files the background statistics pass failed on (its reader panicked, or
/// the file could not be read), by (root id, path): the version that failed (its
/// fingerprint) and why. At most `MAX_STATS_FAILURES` are kept; the rest are
/// only counted.
#[derive(Default)]
struct StatsFailures {
    files: BTreeMap<(RootId, String), (u64, String)>,
    beyond: BTreeMap<usize, u64>,
}

/// Failures kept with their reasons (a few hundred bytes each).
const MAX_STATS_FAILURES: usize = 10_000;
/// The longest reason kept, in characters (a panic message can be long).
const MAX_REASON_CHARS: usize = 500;

impl Default for Activity {
    fn default() -> Self {
        Activity {
            pending: Mutex::default(),
            scanning: Mutex::default(),
            watching: AtomicBool::default(),
            hdf5_changes: tokio::sync::watch::Sender::new(0),
            stats_failures: Mutex::default(),
        }
    }
}

impl Activity {
    /// Tells the subscribers that the set or content of HDF5 files changed.
    pub fn note_hdf5_change(&self) {
        self.hdf5_changes.send_modify(|n| *n += 1);
    }

    /// A receiver that sees each change of the HDF5 files (`changed()`).
    pub fn subscribe_hdf5(&self) -> tokio::sync::watch::Receiver<u64> {
        self.hdf5_changes.subscribe()
    }

    pub fn add_pending(&self, root_id: RootId, kind: Kind, n: u64) {
        *self
            .pending
            .lock()
            .expect("activity lock")
            .entry((root_id, kind))
            .or_default() += n;
    }

    pub fn finish_pending(&self, root_id: RootId, kind: Kind, n: u64) {
        let mut pending = self.pending.lock().expect("activity lock");
        if let Some(count) = pending.get_mut(&(root_id, kind)) {
            *count = count.saturating_sub(n);
            if *count == 0 {
                pending.remove(&(root_id, kind));
            }
        }
    }

    pub fn pending(&self, root_id: RootId, kind: Kind) -> u64 {
        self.pending
            .lock()
            .expect("activity lock")
            .get(&(root_id, kind))
            .copied()
            .unwrap_or(0)
    }

    pub fn total_pending(&self) -> u64 {
        self.pending.lock().expect("activity lock").values().sum()
    }

    pub fn set_scanning(&self, root_id: RootId, on: bool) {
        let mut scanning = self.scanning.lock().expect("activity lock");
        if on {
            scanning.insert(root_id);
        } else {
            scanning.remove(&root_id);
        }
    }

    pub fn is_scanning(&self, root_id: RootId) -> bool {
        self.scanning
            .lock()
            .expect("activity lock")
            .contains(&root_id)
    }

    pub fn set_watching(&self, on: bool) {
        self.watching.store(on, Ordering::Relaxed);
    }

    pub fn is_watching(&self) -> bool {
        self.watching.load(Ordering::Relaxed)
    }

    /// Records that the statistics of the version `fingerprint` of a file failed.
    pub fn note_stats_failure(&self, root_id: RootId, rel: &str, fingerprint: u64, reason: &str) {
        let reason: String = reason.chars().take(MAX_REASON_CHARS).collect();
        let mut f = self.stats_failures.lock().expect("activity lock");
        let key = (root_id, rel.to_string());
        if f.files.len() < MAX_STATS_FAILURES || f.files.contains_key(&key) {
            f.files.insert(key, (fingerprint, reason));
        } else {
            *f.beyond.entry(root_id).or_default() += 1;
        }
    }

    /// Forgets a file's statistics failure (its statistics are now stored).
    pub fn clear_stats_failure(&self, root_id: RootId, rel: &str) {
        let mut f = self.stats_failures.lock().expect("activity lock");
        f.files.remove(&(root_id, rel.to_string()));
    }

    /// The statistics failures of a root in path order, as (path, fingerprint,
    /// reason), and how many more failed than were kept.
    pub fn stats_failures(&self, root_id: RootId) -> (Vec<(String, u64, String)>, u64) {
        let f = self.stats_failures.lock().expect("activity lock");
        let kept = f
            .files
            .range((root_id, String::new())..)
            .take_while(|((r, _), _)| *r == root_id)
            .map(|((_, rel), (fp, why))| (rel.clone(), *fp, why.clone()))
            .collect();
        (kept, f.beyond.get(&root_id).copied().unwrap_or(0))
    }
}
