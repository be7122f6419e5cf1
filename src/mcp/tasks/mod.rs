//! Long tool calls as MCP tasks: the call answers at once with a task, the work
//! goes on in the daemon, and the client polls for its status and fetches the
//! result when it is done (or cancels it).
//!
//! Tasks belong to the serving process, not to a session: a task's work is a
//! runtime task of its own, so a client that disconnects and connects again (to
//! the same daemon) polls its tasks by id. Work still running ends with the
//! process; a finished task's result is stored in the catalog folder
//! (`store`) and served by the next daemon until its ttl has passed.
//!
//! Two generations of the protocol ask for tasks, and quarry serves both from the
//! one registry here (`wire` renders each):
//! - the Tasks extension of MCP 2026-07-28 (`io.modelcontextprotocol/tasks`,
//!   SEP-2663): a client declares the extension in a request's capabilities and
//!   the server decides to answer with a task; `tasks/get` inlines the result,
//!   `tasks/cancel`, `tasks/update`;
//! - the tasks of MCP 2025-11-25: a client asks with a `task` member in the
//!   `tools/call` params; `tasks/get`, `tasks/result` (waits for the end),
//!   `tasks/list`, `tasks/cancel`.
//!
//! Bounds: at most `max_live` tasks whose work is running (a new one past it is
//! refused with a clear error); finished results are counted against
//! `results_bytes` (the oldest finished tasks are dropped past it), and dropped
//! once their ttl has passed.

mod requests;
mod store;
mod support;
mod wire;

pub use requests::answer;
pub use support::{TaskSupport, support_of};
pub use wire::{
    CreatedTask, Generation, generation, legacy_initialize_fields, legacy_tools_fields,
    wants_extension_task,
};

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rmcp::model::{CallToolResult, JsonObject};
use tokio::sync::watch;

use crate::job::Job;

/// How a finished task is kept when the client names no ttl.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60 * 60);
/// The longest ttl honoured; a longer request gets this.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// The shortest ttl honoured: a result must outlive one poll.
pub const MIN_TTL: Duration = Duration::from_secs(1);
/// How often clients are asked to poll.
pub const POLL_INTERVAL_MS: u64 = 1000;
/// How often expired tasks are dropped (their stored results removed) when
/// no request comes to do it.
const SWEEP_EVERY: Duration = Duration::from_secs(30);
/// What a task costs in memory besides its result, for the results budget.
const ENTRY_OVERHEAD_BYTES: usize = 512;

/// What tasks are held to (`[server]` in the config).
#[derive(Debug, Clone)]
pub struct TaskSettings {
    /// Tasks whose work runs at once (queued for a call slot or running).
    pub max_live: usize,
    /// Bytes of finished tasks' results kept at once.
    pub results_bytes: usize,
    /// Longest a task's work may run (a call's own limit, `call_timeout`, is
    /// what clients wait for; a task is polled instead).
    pub timeout: Duration,
    /// Where finished tasks' results are kept on disk (`tasks/` in the
    /// catalog folder), so that they outlive a restart; none: in memory only.
    pub store: Option<std::path::PathBuf>,
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            max_live: 32,
            results_bytes: 64 << 20,
            timeout: Duration::from_secs(60 * 60),
            store: None,
        }
    }
}

/// Why a task could not be made.
#[derive(Debug, PartialEq, Eq)]
pub enum StartError {
    /// `max_live` tasks are running already.
    TooMany(usize),
}

/// How far a task's work has got, written by its `Job`'s progress reports.
#[derive(Default)]
pub struct Progress {
    done: AtomicU64,
    /// `u64::MAX` while no report has come, `u64::MAX - 1` for an unknown total.
    total: AtomicU64,
    /// When the last report came (milliseconds since the epoch).
    at_ms: AtomicU64,
}

const NO_REPORT: u64 = u64::MAX;
const NO_TOTAL: u64 = u64::MAX - 1;

impl Progress {
    pub fn new() -> Arc<Progress> {
        let p = Progress::default();
        p.total.store(NO_REPORT, Ordering::Relaxed);
        Arc::new(p)
    }

    pub fn report(&self, done: u64, total: Option<u64>) {
        self.done.store(done, Ordering::Relaxed);
        self.total
            .store(total.unwrap_or(NO_TOTAL).min(NO_TOTAL), Ordering::Relaxed);
        self.at_ms
            .store(epoch_ms(SystemTime::now()), Ordering::Relaxed);
    }

    /// The last report: (done, total when known).
    fn last(&self) -> Option<(u64, Option<u64>)> {
        match self.total.load(Ordering::Relaxed) {
            NO_REPORT => None,
            NO_TOTAL => Some((self.done.load(Ordering::Relaxed), None)),
            total => Some((self.done.load(Ordering::Relaxed), Some(total))),
        }
    }
}

fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Where a task stands.
#[derive(Debug, Clone)]
pub enum Outcome {
    Working,
    /// The tool answered (a tool error, `isError`, included).
    Completed(Arc<JsonObject>),
    /// The work failed outside the tool's answer: a JSON-RPC error object.
    Failed(Arc<JsonObject>),
    /// `tasks/cancel` stopped it; whatever the work still produces is dropped.
    Cancelled,
}

impl Outcome {
    pub fn is_terminal(&self) -> bool {
        !matches!(self, Outcome::Working)
    }
}

/// What `Tasks::cancel` did.
#[derive(Debug)]
pub enum Cancel {
    /// The task is cancelled now.
    Done(Snapshot),
    /// It had ended already (how, the snapshot says).
    Ended(Snapshot),
    NotFound,
}

/// A task as a request sees it at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub id: String,
    pub tool: &'static str,
    pub outcome: Outcome,
    pub created: SystemTime,
    pub updated: SystemTime,
    /// From creation until the task may be dropped (grows when it finishes late).
    pub ttl: Duration,
    pub progress: Option<(u64, Option<u64>)>,
    /// What the work says it is doing (`Job::set_note`).
    pub note: Option<String>,
    /// How long the work ran (to its end, or so far).
    pub ran: Duration,
}

struct Entry {
    seq: u64,
    tool: &'static str,
    created: SystemTime,
    started: Instant,
    /// How long the task is kept once finished: the ttl asked for.
    keep: Duration,
    job: Job,
    progress: Arc<Progress>,
    outcome: Outcome,
    /// Whether its work still runs (a cancelled task's work may, until it notices).
    running: bool,
    finished: Option<(Instant, SystemTime)>,
    done: watch::Sender<bool>,
    /// Its weight against `results_bytes`.
    bytes: usize,
}

impl Entry {
    fn snapshot(&self, id: &str) -> Snapshot {
        let progress = self.progress.last();
        let reported = self.progress.at_ms.load(Ordering::Relaxed);
        let mut updated = self.created;
        if progress.is_some() {
            updated = updated.max(SystemTime::UNIX_EPOCH + Duration::from_millis(reported));
        }
        let (ttl, ran) = match self.finished {
            Some((at, wall)) => {
                updated = updated.max(wall);
                let ran = at.duration_since(self.started);
                (ran + self.keep, ran)
            }
            None => (self.keep, self.started.elapsed()),
        };
        Snapshot {
            id: id.to_string(),
            tool: self.tool,
            outcome: self.outcome.clone(),
            created: self.created,
            updated,
            ttl,
            progress,
            note: self.job.note(),
            ran,
        }
    }

    fn expired(&self, now: Instant) -> bool {
        !self.running && self.finished.is_some_and(|(at, _)| now >= at + self.keep)
    }

    fn finish(&mut self, outcome: Outcome) {
        self.outcome = outcome;
        self.finished = Some((Instant::now(), SystemTime::now()));
        self.done.send_replace(true);
    }
}

#[derive(Default)]
struct Registry {
    entries: HashMap<String, Entry>,
    next_seq: u64,
    /// What finished tasks weigh (`Entry::bytes`).
    kept_bytes: usize,
    /// Where finished results are stored (`TaskSettings::store`).
    store: Option<std::path::PathBuf>,
}

impl Registry {
    fn sweep(&mut self) {
        let now = Instant::now();
        let expired: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, e)| e.expired(now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.remove(&id);
        }
    }

    fn remove(&mut self, id: &str) {
        if let Some(e) = self.entries.remove(id) {
            self.kept_bytes -= e.bytes;
            if let Some(dir) = &self.store {
                store::remove(dir, id);
            }
        }
    }

    /// Registers the results an earlier daemon stored and whose ttl has not
    /// passed, as finished tasks (their times kept: a task's ttl still runs
    /// from its end).
    fn restore(&mut self, dir: &std::path::Path) {
        let (now, wall) = (Instant::now(), SystemTime::now());
        let mut kept = store::load(dir, wall);
        kept.sort_by_key(|s| s.created_ms);
        for s in kept {
            let Some(tool) = support::long_tool(&s.tool) else {
                store::remove(dir, &s.id);
                continue;
            };
            let at = |ms: u64| SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
            let finished_wall = at(s.finished_ms);
            let since = wall.duration_since(finished_wall).unwrap_or_default();
            let finished = now.checked_sub(since).unwrap_or(now);
            let started = finished
                .checked_sub(Duration::from_millis(s.ran_ms))
                .unwrap_or(finished);
            let bytes = json_len(&s.result) + ENTRY_OVERHEAD_BYTES;
            let result = Arc::new(s.result);
            let entry = Entry {
                seq: self.next_seq,
                tool,
                created: at(s.created_ms),
                started,
                keep: Duration::from_millis(s.keep_ms),
                job: Job::default(),
                progress: Progress::new(),
                outcome: if s.completed {
                    Outcome::Completed(result)
                } else {
                    Outcome::Failed(result)
                },
                running: false,
                finished: Some((finished, finished_wall)),
                done: watch::channel(true).0,
                bytes,
            };
            self.next_seq += 1;
            self.kept_bytes += bytes;
            self.entries.insert(s.id, entry);
        }
    }

    /// Drops the finished tasks that finished first until what is kept fits
    /// `cap` (`keep` is never dropped: the result just stored).
    fn evict_to(&mut self, cap: usize, keep: &str) {
        while self.kept_bytes > cap {
            let oldest = self
                .entries
                .iter()
                .filter(|(id, e)| e.bytes > 0 && !e.running && id.as_str() != keep)
                .min_by_key(|(_, e)| e.finished.map(|(at, _)| at))
                .map(|(id, _)| id.clone());
            let Some(id) = oldest else { return };
            tracing::info!("dropping task {id}'s result: task results are over their budget");
            self.remove(&id);
        }
    }

    fn running(&self) -> usize {
        self.entries.values().filter(|e| e.running).count()
    }
}

/// The daemon's tasks. Cheap to clone; every clone is the same registry.
#[derive(Clone, Default)]
pub struct Tasks {
    registry: Arc<Mutex<Registry>>,
    settings: TaskSettings,
}

impl Tasks {
    /// The registry; with a store, the results an earlier daemon kept and
    /// whose ttl has not passed are there again, and a thread drops expired
    /// tasks (and their files) every `SWEEP_EVERY` while the registry lives.
    pub fn new(settings: TaskSettings) -> Tasks {
        let mut registry = Registry {
            store: settings.store.clone(),
            ..Registry::default()
        };
        if let Some(dir) = &settings.store {
            registry.restore(dir);
            registry.evict_to(settings.results_bytes, "");
        }
        let registry = Arc::new(Mutex::new(registry));
        if settings.store.is_some() {
            let weak = Arc::downgrade(&registry);
            let _ = std::thread::Builder::new()
                .name("quarry-task-sweep".into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(SWEEP_EVERY);
                        let Some(registry) = weak.upgrade() else {
                            return;
                        };
                        registry.lock().unwrap_or_else(|p| p.into_inner()).sweep();
                    }
                });
        }
        Tasks { registry, settings }
    }

    pub fn settings(&self) -> &TaskSettings {
        &self.settings
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        // A panic while holding the lock leaves the map consistent (every
        // change is one statement), so a poisoned lock is still usable.
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a task for `tool` and runs `work` on the runtime, detached from
    /// the session that asked. `job` is the work's: `cancel` stops it through it.
    pub fn start(
        &self,
        tool: &'static str,
        ttl: Option<Duration>,
        job: Job,
        progress: Arc<Progress>,
        work: impl Future<Output = CallToolResult> + Send + 'static,
    ) -> Result<Snapshot, StartError> {
        let id = new_task_id();
        let snapshot = {
            let mut registry = self.lock();
            registry.sweep();
            if registry.running() >= self.settings.max_live {
                return Err(StartError::TooMany(self.settings.max_live));
            }
            let seq = registry.next_seq;
            registry.next_seq += 1;
            let entry = Entry {
                seq,
                tool,
                created: SystemTime::now(),
                started: Instant::now(),
                keep: ttl.unwrap_or(DEFAULT_TTL).clamp(MIN_TTL, MAX_TTL),
                job,
                progress,
                outcome: Outcome::Working,
                running: true,
                finished: None,
                done: watch::channel(false).0,
                bytes: 0,
            };
            let snapshot = entry.snapshot(&id);
            registry.entries.insert(id.clone(), entry);
            snapshot
        };
        let running = tokio::spawn(work);
        let tasks = self.clone();
        tokio::spawn(async move {
            let outcome = match running.await {
                Ok(result) => match serde_json::to_value(result) {
                    Ok(serde_json::Value::Object(result)) => Outcome::Completed(Arc::new(result)),
                    other => Outcome::Failed(internal_error(format!(
                        "the result could not be encoded: {other:?}"
                    ))),
                },
                Err(e) => Outcome::Failed(internal_error(format!("the task's work failed: {e}"))),
            };
            tasks.finished(&id, outcome);
        });
        Ok(snapshot)
    }

    /// The work of task `id` has ended with `outcome`.
    fn finished(&self, id: &str, outcome: Outcome) {
        // Measured before the lock: a result can be megabytes of JSON, and
        // every tasks/get, list and cancel waits on the registry.
        let bytes = match &outcome {
            Outcome::Completed(r) | Outcome::Failed(r) => json_len(r) + ENTRY_OVERHEAD_BYTES,
            _ => ENTRY_OVERHEAD_BYTES,
        };
        // Stored before the task reads as finished: a client that saw it
        // done finds the result after a restart too.
        if let Some(dir) = &self.settings.store {
            self.store(dir, id, &outcome);
        }
        let mut registry = self.lock();
        let Some(entry) = registry.entries.get_mut(id) else {
            return;
        };
        entry.running = false;
        if entry.outcome.is_terminal() {
            // Cancelled while it ran: the cancellation stands and the late
            // answer is dropped.
            if let Some(dir) = &self.settings.store {
                store::remove(dir, id);
            }
            return;
        }
        entry.bytes = bytes;
        entry.finish(outcome);
        registry.kept_bytes += bytes;
        registry.evict_to(self.settings.results_bytes, id);
    }

    /// Writes the result of task `id` to the store (a failure to is logged:
    /// the result is still served from memory).
    fn store(&self, dir: &std::path::Path, id: &str, outcome: &Outcome) {
        let (completed, result) = match outcome {
            Outcome::Completed(r) => (true, r),
            Outcome::Failed(r) => (false, r),
            _ => return,
        };
        let Some((tool, created, started, keep)) = self
            .lock()
            .entries
            .get(id)
            .map(|e| (e.tool, e.created, e.started, e.keep))
        else {
            return;
        };
        let stored = store::Stored {
            id: id.to_string(),
            tool: tool.to_string(),
            created_ms: epoch_ms(created),
            finished_ms: epoch_ms(SystemTime::now()),
            ran_ms: started.elapsed().as_millis() as u64,
            keep_ms: keep.as_millis() as u64,
            completed,
            result: result.as_ref(),
        };
        if let Err(e) = store::save(dir, &stored) {
            tracing::warn!("task {id}'s result is kept in memory only: {e}");
        }
    }

    pub fn get(&self, id: &str) -> Option<Snapshot> {
        let mut registry = self.lock();
        registry.sweep();
        registry.entries.get(id).map(|e| e.snapshot(id))
    }

    /// Cancels task `id`: its status is `cancelled` at once and its work stops
    /// at its next check.
    pub fn cancel(&self, id: &str) -> Cancel {
        let mut registry = self.lock();
        registry.sweep();
        let registry = &mut *registry;
        let Some(entry) = registry.entries.get_mut(id) else {
            return Cancel::NotFound;
        };
        if entry.outcome.is_terminal() {
            return Cancel::Ended(entry.snapshot(id));
        }
        entry.job.cancel();
        entry.bytes = ENTRY_OVERHEAD_BYTES;
        entry.finish(Outcome::Cancelled);
        registry.kept_bytes += ENTRY_OVERHEAD_BYTES;
        Cancel::Done(entry.snapshot(id))
    }

    /// Waits until task `id` has ended; `None` when there is no such task.
    pub async fn wait(&self, id: &str) -> Option<Snapshot> {
        let mut done = self.lock().entries.get(id)?.done.subscribe();
        // The sender lives as long as the entry; an entry dropped while waited
        // on (evicted, expired) ends the wait too.
        let _ = done.wait_for(|d| *d).await;
        self.get(id)
    }

    /// Up to `limit` tasks after position `after` (a cursor from an earlier
    /// page), oldest first, and the cursor of the next page.
    pub fn list(&self, after: Option<u64>, limit: usize) -> (Vec<Snapshot>, Option<u64>) {
        let mut registry = self.lock();
        registry.sweep();
        let mut entries: Vec<(&String, &Entry)> = registry
            .entries
            .iter()
            .filter(|(_, e)| after.is_none_or(|a| e.seq > a))
            .collect();
        entries.sort_by_key(|(_, e)| e.seq);
        let more = entries.len() > limit;
        entries.truncate(limit);
        let next = more.then(|| entries.last().map(|(_, e)| e.seq)).flatten();
        (entries.iter().map(|(id, e)| e.snapshot(id)).collect(), next)
    }
}

fn json_len(v: &JsonObject) -> usize {
    serde_json::to_vec(v).map_or(0, |b| b.len())
}

fn internal_error(message: String) -> Arc<JsonObject> {
    tracing::error!("{message}");
    let mut error = JsonObject::new();
    error.insert("code".into(), (-32603).into());
    error.insert("message".into(), message.into());
    Arc::new(error)
}

/// A task id: 128 bits no other client can guess (task ids are the only key to
/// a task's result). Each half is SipHash under a fresh random key (std's
/// `RandomState`, seeded from the system's randomness) of a counter and the time.
fn new_task_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let half = |salt: u64| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(n);
        h.write_u128(now);
        h.write_u64(salt);
        h.finish()
    };
    format!("{:016x}{:016x}", half(1), half(2))
}

#[cfg(test)]
mod tests;
