//! What the index pipeline is doing right now: files waiting to be extracted, roots
//! being scanned, whether the watcher runs. Runtime state only; the catalog tables
//! hold what is done.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::formats::Kind;

pub struct Activity {
    pending: Mutex<BTreeMap<(usize, Kind), u64>>,
    scanning: Mutex<BTreeSet<usize>>,
    watching: AtomicBool,
    /// Counts the committed batches that added, changed or removed HDF5 files:
    /// whoever lists HDF5 files (the MCP front end's resources) subscribes and
    /// learns that its list changed, without the index knowing who listens.
    hdf5_changes: tokio::sync::watch::Sender<u64>,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            pending: Mutex::default(),
            scanning: Mutex::default(),
            watching: AtomicBool::default(),
            hdf5_changes: tokio::sync::watch::Sender::new(0),
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

    pub fn add_pending(&self, root: usize, kind: Kind, n: u64) {
        *self
            .pending
            .lock()
            .expect("activity lock")
            .entry((root, kind))
            .or_default() += n;
    }

    pub fn finish_pending(&self, root: usize, kind: Kind, n: u64) {
        let mut pending = self.pending.lock().expect("activity lock");
        if let Some(count) = pending.get_mut(&(root, kind)) {
            *count = count.saturating_sub(n);
            if *count == 0 {
                pending.remove(&(root, kind));
            }
        }
    }

    pub fn pending(&self, root: usize, kind: Kind) -> u64 {
        self.pending
            .lock()
            .expect("activity lock")
            .get(&(root, kind))
            .copied()
            .unwrap_or(0)
    }

    pub fn total_pending(&self) -> u64 {
        self.pending.lock().expect("activity lock").values().sum()
    }

    pub fn set_scanning(&self, root: usize, on: bool) {
        let mut scanning = self.scanning.lock().expect("activity lock");
        if on {
            scanning.insert(root);
        } else {
            scanning.remove(&root);
        }
    }

    pub fn is_scanning(&self, root: usize) -> bool {
        self.scanning.lock().expect("activity lock").contains(&root)
    }

    pub fn set_watching(&self, on: bool) {
        self.watching.store(on, Ordering::Relaxed);
    }

    pub fn is_watching(&self) -> bool {
        self.watching.load(Ordering::Relaxed)
    }
}
