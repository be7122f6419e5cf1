//! How long-running work learns that it should stop, and tells how far it got.
//!
//! A `Job` is handed to every tool call and passed down to the engines it drives
//! (which know nothing of MCP). Work checks `stopped()` between batches (a basket
//! window, a cluster, a chunk) and reports `progress(done, total)` as it goes; the
//! front end decides what a stop means (the client cancelled or hung up, or the
//! call's time ran out) and where progress goes (MCP `notifications/progress`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why work was asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The client cancelled the request or went away: nobody will read the result.
    Cancelled,
    /// The call's time limit passed.
    TimedOut,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stop::Cancelled => "the call was cancelled",
            Stop::TimedOut => "the call ran out of time",
        })
    }
}

/// A stop travels through `anyhow` errors too (found again by downcasting).
impl std::error::Error for Stop {}

type ProgressSink = Box<dyn Fn(u64, Option<u64>) + Send + Sync>;

/// Least time between two progress reports (MCP clients need no more).
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

/// Shared by a call and the work it started; cheap to clone.
#[derive(Clone)]
pub struct Job {
    inner: Arc<Inner>,
    /// The chain entries a dataset scan covers (none: all). A cluster task
    /// reading a share of one big file is the same scan limited to its run
    /// of clusters; carried here because every scan of the task, whatever
    /// its operation, takes it.
    entries: Option<std::ops::Range<u64>>,
}

struct Inner {
    cancelled: AtomicBool,
    deadline: Option<Instant>,
    started: Instant,
    /// Milliseconds after `started` of the last progress report sent.
    last_report_ms: AtomicU64,
    sink: Mutex<Option<ProgressSink>>,
    /// What the work is doing, in words (a cluster job's tasks by state).
    note: Mutex<Option<String>>,
    /// Raised by a remote file this work reads when it finds that file
    /// replaced under it (`source_changed_flag`): the call may then run once
    /// more on the new version.
    source_changed: Arc<AtomicBool>,
}

impl Default for Job {
    fn default() -> Self {
        Job::new(None)
    }
}

impl Job {
    /// Work that stops when cancelled or, if given, when `limit` has passed.
    pub fn new(limit: Option<Duration>) -> Job {
        let started = Instant::now();
        Job {
            inner: Arc::new(Inner {
                cancelled: AtomicBool::new(false),
                deadline: limit.map(|l| started + l),
                started,
                last_report_ms: AtomicU64::new(0),
                sink: Mutex::new(None),
                note: Mutex::new(None),
                source_changed: Arc::default(),
            }),
            entries: None,
        }
    }

    /// This work, its scans limited to the chain entries `entries`.
    pub fn limited_to(&self, entries: std::ops::Range<u64>) -> Job {
        Job {
            inner: self.inner.clone(),
            entries: Some(entries),
        }
    }

    /// The chain entries scans cover: `all` unless limited.
    pub fn entries_within(&self, all: std::ops::Range<u64>) -> std::ops::Range<u64> {
        match &self.entries {
            Some(r) => r.start.max(all.start)..r.end.min(all.end),
            None => all,
        }
    }

    /// Where progress reports go; without a sink they are dropped.
    pub fn on_progress(&self, sink: impl Fn(u64, Option<u64>) + Send + Sync + 'static) {
        *self.inner.sink.lock().expect("progress sink") = Some(Box::new(sink));
    }

    /// Says what the work is doing (shown with a task's status).
    pub fn set_note(&self, note: String) {
        *self.inner.note.lock().expect("job note") = Some(note);
    }

    /// The last `set_note`.
    pub fn note(&self) -> Option<String> {
        self.inner.note.lock().expect("job note").clone()
    }

    /// Asks the work to stop; it notices at its next check.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether (and why) the work should stop now. Cheap enough for every batch.
    pub fn stopped(&self) -> Option<Stop> {
        if self.inner.cancelled.load(Ordering::Relaxed) {
            Some(Stop::Cancelled)
        } else if self.inner.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::TimedOut)
        } else {
            None
        }
    }

    /// `Err` with the reason once the work should stop: for `?` between
    /// batches of engines that return `Stop`.
    pub fn check(&self) -> Result<(), Stop> {
        match self.stopped() {
            Some(stop) => Err(stop),
            None => Ok(()),
        }
    }

    /// The flag a remote file read for this work raises when it finds its
    /// file is no longer the version it opened.
    pub fn source_changed_flag(&self) -> Arc<AtomicBool> {
        self.inner.source_changed.clone()
    }

    /// Whether a file this work read changed under it since the last call
    /// (lowered again: a run after it starts with the flag down).
    pub fn take_source_changed(&self) -> bool {
        self.inner.source_changed.swap(false, Ordering::Relaxed)
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped().is_some()
    }

    /// Time left before the deadline (`None` without one; zero once past).
    pub fn remaining(&self) -> Option<Duration> {
        self.inner
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// How long the work has run.
    pub fn elapsed(&self) -> Duration {
        self.inner.started.elapsed()
    }

    /// Reports `done` of `total` units (entries, bytes, files); sent on at most
    /// every `PROGRESS_INTERVAL`, and always when `done` reaches `total`.
    pub fn progress(&self, done: u64, total: Option<u64>) {
        let now_ms = self.inner.started.elapsed().as_millis() as u64;
        let last = self.inner.last_report_ms.load(Ordering::Relaxed);
        let finished = total.is_some_and(|t| done >= t);
        if !finished && now_ms < last + PROGRESS_INTERVAL.as_millis() as u64 {
            return;
        }
        if self
            .inner
            .last_report_ms
            .compare_exchange(
                last,
                now_ms.max(last + 1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_err()
            && !finished
        {
            return; // another thread reported just now
        }
        if let Some(sink) = self.inner.sink.lock().expect("progress sink").as_ref() {
            sink(done, total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_source_change_is_seen_once_by_every_clone() {
        let job = Job::new(None);
        assert!(!job.take_source_changed());
        job.limited_to(0..1)
            .source_changed_flag()
            .store(true, Ordering::Relaxed);
        assert!(job.clone().take_source_changed());
        assert!(!job.take_source_changed(), "taken: lowered again");
    }

    #[test]
    fn cancel_and_deadline_stop_the_work() {
        let job = Job::new(None);
        assert_eq!(job.stopped(), None);
        let clone = job.clone();
        clone.cancel();
        assert_eq!(job.stopped(), Some(Stop::Cancelled));

        let job = Job::new(Some(Duration::from_millis(20)));
        assert_eq!(job.stopped(), None);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(job.stopped(), Some(Stop::TimedOut));
    }

    #[test]
    fn progress_is_rate_limited_but_the_end_is_always_sent() {
        let job = Job::new(None);
        let sent = Arc::new(AtomicUsize::new(0));
        let counter = sent.clone();
        job.on_progress(move |_, _| {
            counter.fetch_add(1, Ordering::Relaxed);
        });
        for i in 0..1000 {
            job.progress(i, Some(1000));
        }
        // Within one interval nothing is sent (the first report waits one
        // interval too); reaching the total is.
        assert_eq!(sent.load(Ordering::Relaxed), 0);
        job.progress(1000, Some(1000));
        assert_eq!(sent.load(Ordering::Relaxed), 1);
        std::thread::sleep(PROGRESS_INTERVAL + Duration::from_millis(10));
        job.progress(5, None);
        assert_eq!(sent.load(Ordering::Relaxed), 2);
    }
}
