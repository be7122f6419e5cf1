//! Finished tasks' results kept in the catalog folder (`tasks/ID.json`), so
//! that a daemon started again still answers `tasks/get` and `tasks/result`
//! for them until their ttl has passed (a cluster call's answer can take
//! hours of many nodes: a restart must not lose it). Written atomically when
//! the work ends, removed when the task is dropped (ttl passed, results over
//! their budget); files past their ttl are removed when the daemon starts
//! and by the registry's periodic sweep. Cancelled tasks keep no file: they
//! have no result.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rmcp::model::JsonObject;
use serde::{Deserialize, Serialize};

/// One finished task as stored.
/// `R` is the result: owned when read back, borrowed when written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Stored<R = JsonObject> {
    pub id: String,
    pub tool: String,
    /// Milliseconds since the epoch.
    pub created_ms: u64,
    pub finished_ms: u64,
    /// How long the work ran, and how long the result is kept after.
    pub ran_ms: u64,
    pub keep_ms: u64,
    /// `completed` (a tool's answer) or `failed` (a JSON-RPC error object).
    pub completed: bool,
    pub result: R,
}

impl<R> Stored<R> {
    /// When the task may be dropped, as wall time.
    pub fn expires(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(self.finished_ms + self.keep_ms)
    }
}

/// The file of task `id` (ids are 32 hex digits: no path can be made of one;
/// anything else is refused).
fn path_of(dir: &Path, id: &str) -> Option<PathBuf> {
    (!id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| dir.join(format!("{id}.json")))
}

/// Writes `task` through a temporary file and a rename: a daemon stopping
/// mid-write leaves the old state, never half a result.
pub(super) fn save(dir: &Path, task: &Stored<&JsonObject>) -> std::io::Result<()> {
    let path = path_of(dir, &task.id).ok_or_else(|| std::io::Error::other("not a task id"))?;
    std::fs::create_dir_all(dir)?;
    let bytes = serde_json::to_vec(task).map_err(std::io::Error::other)?;
    crate::executor::spec::write_atomically(&path, &bytes)
}

pub(super) fn remove(dir: &Path, id: &str) {
    if let Some(path) = path_of(dir, id) {
        let _ = std::fs::remove_file(path);
    }
}

/// The stored tasks still within their ttl; removes the others (expired,
/// unreadable, or temporary files a stopped daemon left).
pub(super) fn load(dir: &Path, now: SystemTime) -> Vec<Stored> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let stored = name
            .strip_suffix(".json")
            .filter(|id| path_of(dir, id).is_some())
            .and_then(|_| std::fs::read(&path).ok())
            .and_then(|bytes| serde_json::from_slice::<Stored>(&bytes).ok())
            .filter(|s| path_of(dir, &s.id) == Some(path.clone()));
        match stored {
            Some(s) if s.expires() > now => kept.push(s),
            _ => {
                tracing::debug!("removing the stored task {name} (expired or unreadable)");
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    kept
}
