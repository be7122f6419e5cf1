//! Readers in child processes. Some readers can crash on a hostile file (libhdf5
//! 1.10.8 segfaults on some damaged ones), loop, or inflate a small stream into
//! gigabytes (a PDF page whose FlateDecode stream holds a bomb); no
//! `catch_unwind` stops any of that. So when the program has named a helper (the
//! `quarry` binary, which answers each service's argument), such a reader runs
//! in a worker process held to limits, and a crash, a hang or running out of
//! memory costs the worker and becomes that file's (or that call's) error.
//! Without a helper (library tests) the callers run their reader in-process.
//!
//! A `Service` is one kind of worker (HDF5, PDF) and its pool of idle workers:
//! starting a process costs milliseconds a request. Each request hands the
//! worker the file already opened beneath its root, as a descriptor over a Unix
//! socket (`fdpass`), with a body the service defines; the worker never resolves
//! a path. The answer comes back on the worker's standard output, framed by its
//! length, after any progress frames. A worker whose request failed (the file
//! may have left its library in a bad state), crashed, ran over a limit or was
//! cancelled is never reused.
//!
//! Every worker limits itself before its first request (`serve`): its address
//! space (`RLIMIT_AS`, `[limits] worker_memory_mib`, 1 GiB by default), its CPU
//! time per request (`RLIMIT_CPU`, the service's time limit and a margin: a
//! worker whose parent is gone cannot spin for ever) and no core files. The
//! parent kills a worker that runs over the service's wall-clock limit.
//!
//! A file on remote storage is not handed over as a descriptor of its bytes:
//! the worker gets one end of a socket on which `ranges` serves the byte
//! ranges its reader asks for (HDF5's `quarry_hdf5::driver`).

mod fdpass;
mod ranges;
mod serve;

use std::fs::File;
use std::io::{self, Read, Seek};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::FormatError;

pub use ranges::RangeServer;
pub use serve::{Progress, serve};

/// The address space a worker may use unless the settings say otherwise.
pub const DEFAULT_MEMORY_MIB: u64 = 1024;
/// The least address space a worker is given: the binary and its libraries
/// take about 100 MiB of it before any request.
pub const MIN_MEMORY_MIB: u64 = 256;
/// CPU seconds a worker may use per request beyond its service's wall-clock
/// limit: the parent normally stops it first; this stops an orphan.
const CPU_MARGIN_SECS: u64 = 10;
/// Idle workers kept per service for later requests.
const MAX_IDLE: usize = 4;
/// How long an idle worker is kept: a burst of requests reuses workers, and a
/// daemon left alone holds no worker processes (nor their descriptors).
const IDLE_TTL: Duration = Duration::from_secs(3);
/// Requests one worker serves before it is retired (bounds any slow leak).
const MAX_REQUESTS: u32 = 2000;
/// The length that marks a progress frame (two u64: done, total) instead of
/// the answer.
const PROGRESS_FRAME: u64 = u64::MAX;
/// What Rust writes to standard error when an allocation fails (then it
/// aborts): under the address-space limit, the mark of a memory bomb.
const OUT_OF_MEMORY: &str = "memory allocation of";
/// The most of a dead worker's standard error read for its reason.
const STDERR_TAIL: u64 = 4096;

static HELPER: OnceLock<PathBuf> = OnceLock::new();
static MEMORY_MIB: AtomicU64 = AtomicU64::new(DEFAULT_MEMORY_MIB);

/// Names the binary that answers the services' arguments (set once, at
/// start-up); from then on the services' readers run in workers.
pub fn set_helper(exe: PathBuf) {
    let _ = HELPER.set(exe);
}

/// Whether readers run in workers (a helper is named).
pub fn isolated() -> bool {
    HELPER.get().is_some()
}

/// Sets the address space of workers started from now on (at least
/// `MIN_MEMORY_MIB`).
pub fn set_memory_limit_mib(mib: u64) {
    MEMORY_MIB.store(mib.max(MIN_MEMORY_MIB), Ordering::Relaxed);
}

/// The address space workers are started with, in MiB.
pub fn memory_limit_mib() -> u64 {
    MEMORY_MIB.load(Ordering::Relaxed)
}

/// One kind of worker and its pool of idle processes.
pub struct Service {
    /// The argument that makes the helper binary serve this kind of request.
    arg: &'static str,
    /// The library that runs in the worker, as a crash names it ("libhdf5").
    library: &'static str,
    /// The reader as other errors name it ("the HDF5 reader").
    reader: &'static str,
    /// Longest a request may take before the worker is killed.
    time_limit: Duration,
    /// Environment variables the worker starts with.
    env: &'static [(&'static str, &'static str)],
    idle: Mutex<Vec<(Worker, Instant)>>,
    reaper: Once,
}

impl Service {
    pub const fn new(
        arg: &'static str,
        library: &'static str,
        reader: &'static str,
        time_limit: Duration,
        env: &'static [(&'static str, &'static str)],
    ) -> Service {
        Service {
            arg,
            library,
            reader,
            time_limit,
            env,
            idle: Mutex::new(Vec::new()),
            reaper: Once::new(),
        }
    }

    /// Has a worker answer `body` about `file`; `Ok(None)` when `stop` said
    /// to stop (the worker is killed). `progress` hears the worker's progress
    /// frames (done, total).
    pub fn ask(
        &'static self,
        body: &[u8],
        file: File,
        stop: &dyn Fn() -> bool,
        progress: &dyn Fn(u64, u64),
    ) -> Result<Option<Vec<u8>>, FormatError> {
        let exe = HELPER
            .get()
            .ok_or_else(|| FormatError::Io(format!("{} has no worker program", self.reader)))?;
        let mut worker = self.take_worker(exe)?;
        if worker.send(file.as_raw_fd(), body).is_err() {
            // An idle worker that died meanwhile (it should not): a fresh one.
            worker.end();
            worker = Worker::spawn(exe, self)?;
            if let Err(e) = worker.send(file.as_raw_fd(), body) {
                worker.end();
                return Err(e.into());
            }
        }
        // The worker holds its own copy of the descriptor now.
        drop(file);
        match read_answer(&mut worker.answers, self.time_limit, stop, progress) {
            Ok(Some(out)) => {
                worker.served += 1;
                if answered_ok(&out) {
                    self.give_back(worker);
                } else {
                    worker.end();
                }
                Ok(Some(out))
            }
            Ok(None) => {
                worker.end();
                Ok(None)
            }
            Err(Answer::TimedOut) => {
                worker.end();
                Err(FormatError::Corrupt(format!(
                    "{} took over {} s on this file and was stopped",
                    self.reader,
                    self.time_limit.as_secs()
                )))
            }
            Err(Answer::Died) => Err(worker.death(self)),
        }
    }

    /// The idle workers' process ids (for tests of their limits).
    pub fn idle_pids(&self) -> Vec<u32> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.iter().map(|(w, _)| w.child.id()).collect()
    }

    /// An idle worker, or a new one.
    fn take_worker(&'static self, exe: &PathBuf) -> Result<Worker, FormatError> {
        // The most recently used first, so the others age out.
        if let Some((w, _)) = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(w);
        }
        Worker::spawn(exe, self).map_err(FormatError::from)
    }

    fn give_back(&'static self, worker: Worker) {
        if worker.served >= MAX_REQUESTS {
            return worker.end();
        }
        self.reaper.call_once(|| {
            let _ = std::thread::Builder::new()
                .name(format!("{}-reaper", self.arg.trim_start_matches('_')))
                .spawn(|| self.reap_idle_workers());
        });
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push((worker, Instant::now()));
        } else {
            drop(idle);
            worker.end();
        }
    }

    /// Ends the workers idle for longer than `IDLE_TTL`, once a second, for good.
    fn reap_idle_workers(&self) {
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let expired: Vec<Worker> = {
                let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
                let (old, fresh): (Vec<_>, Vec<_>) = idle
                    .drain(..)
                    .partition(|(_, since)| since.elapsed() > IDLE_TTL);
                *idle = fresh;
                old.into_iter().map(|(w, _)| w).collect()
            };
            for worker in expired {
                worker.end();
            }
        }
    }
}

/// Encodes a worker's answer: the value, or the error itself, so its kind
/// (unsupported, refused, a missing filter) survives the trip.
pub fn encode_answer<T: Serialize>(answer: Result<T, FormatError>) -> Vec<u8> {
    bincode::serde::encode_to_vec(&answer, bincode::config::standard())
        .expect("answers always encode")
}

/// Decodes what `encode_answer` made; `reader` names the reader in the error
/// for an answer that cannot be decoded. The worker's I/O is on the file it was
/// handed, so its I/O errors are the file's.
pub fn decode_answer<T: DeserializeOwned>(out: &[u8], reader: &str) -> Result<T, FormatError> {
    let (answer, _): (Result<T, FormatError>, _) =
        bincode::serde::decode_from_slice(out, bincode::config::standard())
            .map_err(|e| FormatError::Io(format!("{reader}'s answer is garbled: {e}")))?;
    answer.map_err(|e| match e {
        FormatError::Io(why) | FormatError::Transient(why) => FormatError::Corrupt(why),
        other => other,
    })
}

/// Whether `fd` has something to read (or was closed) within `wait`.
fn readable_within(fd: &impl AsRawFd, wait: Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let ready = unsafe { libc::poll(&mut pfd, 1, wait.as_millis() as libc::c_int) };
    ready > 0
}

/// Whether an encoded answer is a success (its first byte is `Ok`'s tag).
pub fn answered_ok(out: &[u8]) -> bool {
    out.first() == Some(&0)
}

/// A worker process: its request socket (its standard input), its output,
/// and its standard error (an in-memory file, read when it dies).
struct Worker {
    child: Child,
    requests: UnixStream,
    answers: ChildStdout,
    stderr: File,
    served: u32,
}

impl Worker {
    fn spawn(exe: &PathBuf, service: &Service) -> io::Result<Worker> {
        let (ours, theirs) = UnixStream::pair()?;
        let stderr = in_memory_file()?;
        let cpu_secs = service.time_limit.as_secs() + CPU_MARGIN_SECS;
        let mut child = Command::new(exe)
            .arg(service.arg)
            .arg(serve::MEMORY_FLAG)
            .arg(memory_limit_mib().to_string())
            .arg(serve::CPU_FLAG)
            .arg(cpu_secs.to_string())
            .envs(service.env.iter().copied())
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr.try_clone()?))
            .spawn()?;
        let answers = child.stdout.take().expect("piped stdout");
        Ok(Worker {
            child,
            requests: ours,
            answers,
            stderr,
            served: 0,
        })
    }

    /// Sends a request; what the worker wrote to its standard error before
    /// is dropped, so a death is explained by this request's last words.
    fn send(&mut self, fd: std::os::fd::RawFd, body: &[u8]) -> io::Result<()> {
        let _ = self.stderr.set_len(0);
        fdpass::send(&self.requests, fd, body)
    }

    fn end(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Why the worker stopped answering, once it has exited.
    fn death(mut self, service: &Service) -> FormatError {
        let _ = self.child.kill();
        let status = self.child.wait();
        let last_words = self.last_words();
        use std::os::unix::process::ExitStatusExt;
        let signal = status.ok().and_then(|s| s.signal());
        FormatError::Corrupt(if last_words.contains(OUT_OF_MEMORY) {
            format!(
                "{} ran out of its {} MiB memory limit on this file ({last_words})",
                service.reader,
                memory_limit_mib()
            )
        } else if signal == Some(libc::SIGXCPU) {
            format!(
                "{} used over {} s of CPU time on this file and was stopped",
                service.reader,
                service.time_limit.as_secs() + CPU_MARGIN_SECS
            )
        } else if let Some(signal) = signal {
            format!(
                "{} crashed reading this file (signal {signal}{})",
                service.library,
                if last_words.is_empty() {
                    String::new()
                } else {
                    format!(": {last_words}")
                }
            )
        } else {
            format!("{} failed on this file", service.reader)
        })
    }

    /// The line of the worker's standard error that explains its death: the
    /// report of a failed allocation, else its last line.
    fn last_words(&mut self) -> String {
        let size = self.stderr.metadata().map_or(0, |m| m.len());
        let mut tail = Vec::new();
        let read = self
            .stderr
            .seek(io::SeekFrom::Start(size.saturating_sub(STDERR_TAIL)))
            .and_then(|_| (&mut self.stderr).take(STDERR_TAIL).read_to_end(&mut tail));
        if read.is_err() {
            return String::new();
        }
        let text = String::from_utf8_lossy(&tail);
        let mut lines = text.lines().rev().map(str::trim).filter(|l| !l.is_empty());
        // Rust's report of a failed allocation may be followed by a note on
        // the backtrace: the report is what explains the death.
        let oom = lines.clone().find(|l| l.contains(OUT_OF_MEMORY));
        oom.or_else(|| lines.next()).unwrap_or("").to_string()
    }
}

/// An anonymous file in memory (nothing is written to disk), closed on exec.
fn in_memory_file() -> io::Result<File> {
    // SAFETY: a valid NUL-terminated name and flags; the descriptor returned
    // (checked below) is ours alone.
    let fd = unsafe { libc::memfd_create(c"quarry-worker-stderr".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    use std::os::fd::FromRawFd;
    // SAFETY: `fd` was just created and is owned by nothing else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

enum Answer {
    TimedOut,
    Died,
}

/// The most bytes of answer buffer reserved ahead of what has arrived: the
/// length a worker announces never sizes a buffer on its own.
const RESERVE_AHEAD: usize = 16 << 20;

/// Reads one length-framed answer, polling `stop` and the time limit while
/// waiting and passing progress frames on; `Ok(None)` when stopped.
fn read_answer(
    out: &mut ChildStdout,
    time_limit: Duration,
    stop: &dyn Fn() -> bool,
    progress: &dyn Fn(u64, u64),
) -> Result<Option<Vec<u8>>, Answer> {
    let started = Instant::now();
    let mut buf: Vec<u8> = Vec::new();
    let mut want = 8usize;
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        if buf.len() >= want {
            let word = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
            if want == 8 && word(0) == PROGRESS_FRAME {
                want = 24;
                continue;
            }
            if want == 24 && word(0) == PROGRESS_FRAME {
                progress(word(8), word(16));
                buf.drain(..24);
                want = 8;
                continue;
            }
            if want == 8 {
                let len = word(0);
                if len > 1 << 40 {
                    return Err(Answer::Died);
                }
                want = 8 + len as usize;
                buf.reserve(want.saturating_sub(buf.len()).min(RESERVE_AHEAD));
                continue;
            }
            buf.drain(..8);
            return Ok(Some(buf));
        }
        if stop() {
            return Ok(None);
        }
        if started.elapsed() > time_limit {
            return Err(Answer::TimedOut);
        }
        if !readable_within(out, Duration::from_millis(5)) {
            continue;
        }
        match out.read(&mut chunk) {
            Ok(0) => return Err(Answer::Died),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Answer::Died),
        }
    }
}
