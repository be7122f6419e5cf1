//! What the index pipeline is doing right now: files waiting to be extracted, roots
//! being scanned, whether the watcher runs. Runtime state only; the catalog tables
//! hold what is done.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::formats::Kind;

#[derive(Default)]
pub struct Activity {
    pending: Mutex<BTreeMap<(usize, Kind), u64>>,
    scanning: Mutex<BTreeSet<usize>>,
    watching: AtomicBool,
}

impl Activity {
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
