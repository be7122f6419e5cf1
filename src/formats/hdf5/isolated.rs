//! libhdf5 in child processes. libhdf5 itself can crash on a damaged file
//! (seen with 1.10.8: a segmentation fault while releasing the attributes of a
//! corrupt object header, another copying a variable-length string out of a
//! damaged global heap) or loop; no `catch_unwind` stops that. So when the
//! program has named a helper (the `quarry` binary, which answers `WORKER_ARG`),
//! walking a tree, reading a slice and computing statistics run in a worker
//! process: a crash or a hang costs the worker, and becomes that file's (or
//! that call's) error. Without a helper they run in this process.
//!
//! Workers are kept between requests (a pool of idle ones), since starting a
//! process and libhdf5 costs milliseconds a request. Each request hands the
//! worker the file already opened beneath its root, as a descriptor over a Unix
//! socket (`fdpass`); the worker never resolves a path. The answer comes back on
//! the worker's standard output, framed by its length. A worker whose request
//! failed (the file may have left libhdf5 in a bad state), crashed, ran over the
//! time limit or was cancelled is never reused.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::fdpass;
use super::slice::Selection;
use super::{H5File, Moments, SliceData, Tree};
use crate::formats::FormatError;

/// The argument that makes the helper binary serve requests as a worker.
pub const WORKER_ARG: &str = "__hdf5-worker";

/// What a worker is asked about the file handed with the request.
#[derive(Debug, Serialize, Deserialize)]
enum Request {
    Tree,
    Slice {
        path: String,
        sel: Selection,
    },
    Stats {
        path: String,
        sel: Selection,
        block: u64,
    },
}

/// A slice as the worker sends it (the nested values as JSON text: bincode
/// cannot carry a self-describing value).
#[derive(Debug, Serialize, Deserialize)]
struct SliceWire {
    shape: Vec<u64>,
    data_json: String,
    non_finite: u64,
}

/// Longest a worker may take over one request before it is killed.
const TIME_LIMIT: Duration = Duration::from_secs(120);
/// Idle workers kept for later requests.
const MAX_IDLE: usize = 4;
/// How long an idle worker is kept: a burst of requests reuses workers, and a
/// daemon left alone holds no worker processes (nor their descriptors).
const IDLE_TTL: Duration = Duration::from_secs(3);
/// Requests one worker serves before it is retired (bounds any slow leak).
const MAX_REQUESTS: u32 = 2000;

static HELPER: OnceLock<PathBuf> = OnceLock::new();
static IDLE: Mutex<Vec<(Worker, Instant)>> = Mutex::new(Vec::new());
static REAPER: std::sync::Once = std::sync::Once::new();

/// Names the binary that answers `WORKER_ARG` (set once, at start-up).
pub fn set_helper(exe: PathBuf) {
    let _ = HELPER.set(exe);
}

/// The tree of an open file: in a worker when a helper is set, otherwise in
/// this process.
pub fn tree_of(file: File) -> Result<Tree, FormatError> {
    if HELPER.get().is_none() {
        return H5File::open(file)?.tree();
    }
    match ask(&Request::Tree, file, &|| false)? {
        Some(out) => decode::<Tree>(&out),
        None => Err(FormatError::Io("the HDF5 worker was stopped".into())),
    }
}

/// Reads the selection of the dataset at `path`; `stop` is polled while the
/// worker works (true kills it: `Ok(None)`).
pub fn read_slice(
    file: File,
    path: &str,
    sel: &Selection,
    stop: &dyn Fn() -> bool,
) -> Result<Option<SliceData>, FormatError> {
    if HELPER.get().is_none() {
        return H5File::open(file)?.dataset(path)?.read(sel).map(Some);
    }
    let request = Request::Slice {
        path: path.to_string(),
        sel: sel.clone(),
    };
    let Some(out) = ask(&request, file, stop)? else {
        return Ok(None);
    };
    let wire = decode::<SliceWire>(&out)?;
    Ok(Some(SliceData {
        shape: wire.shape,
        data: serde_json::from_str(&wire.data_json)
            .map_err(|e| FormatError::Io(format!("the HDF5 reader's values are garbled: {e}")))?,
        non_finite: wire.non_finite,
    }))
}

/// The moments of the selection, read block by block; `Ok(None)` when `stop`
/// said to stop. `progress` hears (elements done, elements in all) after each
/// block.
pub fn dataset_moments(
    file: File,
    path: &str,
    sel: &Selection,
    block: u64,
    stop: &dyn Fn() -> bool,
    progress: &dyn Fn(u64, u64),
) -> Result<Option<Moments>, FormatError> {
    if HELPER.get().is_none() {
        return H5File::open(file)?
            .dataset(path)?
            .moments(sel, block, |done, total| {
                progress(done, total);
                !stop()
            });
    }
    let request = Request::Stats {
        path: path.to_string(),
        sel: sel.clone(),
        block,
    };
    match ask_with_progress(&request, file, stop, progress)? {
        Some(out) => decode::<Moments>(&out).map(Some),
        None => Ok(None),
    }
}

fn decode<T: serde::de::DeserializeOwned>(out: &[u8]) -> Result<T, FormatError> {
    let (answer, _): (Result<T, FormatError>, _) =
        bincode::serde::decode_from_slice(out, bincode::config::standard())
            .map_err(|e| FormatError::Io(format!("the HDF5 reader's answer is garbled: {e}")))?;
    // The worker's I/O is on the file it was handed: the file's error.
    answer.map_err(|e| match e {
        FormatError::Io(why) | FormatError::Transient(why) => FormatError::Corrupt(why),
        other => other,
    })
}

/// Whether an encoded answer is a success (its first byte is `Ok`'s tag).
fn answered_ok(out: &[u8]) -> bool {
    out.first() == Some(&0)
}

/// A worker process: its request socket (its standard input) and its output.
struct Worker {
    child: Child,
    requests: UnixStream,
    answers: ChildStdout,
    served: u32,
}

impl Worker {
    fn spawn(exe: &PathBuf) -> io::Result<Worker> {
        let (ours, theirs) = UnixStream::pair()?;
        let mut child = Command::new(exe)
            .arg(WORKER_ARG)
            // libhdf5 prefers these to the prefixes quarry sets on each dataset.
            .env("HDF5_EXTFILE_PREFIX", super::NOWHERE)
            .env("HDF5_VDS_PREFIX", super::NOWHERE)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let answers = child.stdout.take().expect("piped stdout");
        Ok(Worker {
            child,
            requests: ours,
            answers,
            served: 0,
        })
    }

    fn end(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Why the worker stopped answering, once it has exited.
    fn death(mut self) -> FormatError {
        let _ = self.child.kill();
        let status = self.child.wait();
        use std::os::unix::process::ExitStatusExt;
        FormatError::Corrupt(match status.ok().and_then(|s| s.signal()) {
            Some(signal) => format!("libhdf5 crashed reading this file (signal {signal})"),
            None => "the HDF5 reader failed on this file".to_string(),
        })
    }
}

/// An idle worker, or a new one.
fn take_worker(exe: &PathBuf) -> Result<Worker, FormatError> {
    // The most recently used first, so the others age out.
    if let Some((w, _)) = IDLE.lock().unwrap_or_else(|p| p.into_inner()).pop() {
        return Ok(w);
    }
    Worker::spawn(exe).map_err(FormatError::from)
}

fn give_back(worker: Worker) {
    if worker.served >= MAX_REQUESTS {
        return worker.end();
    }
    REAPER.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("hdf5-reaper".into())
            .spawn(reap_idle_workers);
    });
    let mut idle = IDLE.lock().unwrap_or_else(|p| p.into_inner());
    if idle.len() < MAX_IDLE {
        idle.push((worker, Instant::now()));
    } else {
        drop(idle);
        worker.end();
    }
}

/// Ends the workers idle for longer than `IDLE_TTL`, once a second, for good.
fn reap_idle_workers() {
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let expired: Vec<Worker> = {
            let mut idle = IDLE.lock().unwrap_or_else(|p| p.into_inner());
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

fn ask(
    request: &Request,
    file: File,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Vec<u8>>, FormatError> {
    ask_with_progress(request, file, stop, &|_, _| {})
}

/// Has a worker answer `request` about `file`; `Ok(None)` when `stop` said to
/// stop (the worker is killed).
fn ask_with_progress(
    request: &Request,
    file: File,
    stop: &dyn Fn() -> bool,
    progress: &dyn Fn(u64, u64),
) -> Result<Option<Vec<u8>>, FormatError> {
    let exe = HELPER.get().expect("a helper is set");
    let body = serde_json::to_vec(request).expect("requests always encode");
    let mut worker = take_worker(exe)?;
    if fdpass::send(&worker.requests, file.as_raw_fd(), &body).is_err() {
        // An idle worker that died meanwhile (it should not): a fresh one.
        worker.end();
        worker = Worker::spawn(exe)?;
        if let Err(e) = fdpass::send(&worker.requests, file.as_raw_fd(), &body) {
            worker.end();
            return Err(e.into());
        }
    }
    // The worker holds its own copy of the descriptor now.
    drop(file);
    match read_answer(&mut worker.answers, stop, progress) {
        Ok(Some(out)) => {
            worker.served += 1;
            if answered_ok(&out) {
                give_back(worker);
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
                "the HDF5 reader took over {} s on this file and was stopped",
                TIME_LIMIT.as_secs()
            )))
        }
        Err(Answer::Died) => Err(worker.death()),
    }
}

enum Answer {
    TimedOut,
    Died,
}

/// The length that marks a progress frame (two u64: done, total) instead of
/// the answer.
const PROGRESS_FRAME: u64 = u64::MAX;

/// Reads one length-framed answer, polling `stop` and the time limit while
/// waiting and passing progress frames on; `Ok(None)` when stopped.
fn read_answer(
    out: &mut ChildStdout,
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
                buf.reserve(want.saturating_sub(buf.len()));
                continue;
            }
            buf.drain(..8);
            return Ok(Some(buf));
        }
        if stop() {
            return Ok(None);
        }
        if started.elapsed() > TIME_LIMIT {
            return Err(Answer::TimedOut);
        }
        let mut pfd = libc::pollfd {
            fd: out.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, 5) };
        if ready <= 0 {
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

/// The worker's side: answers requests from its standard input (a Unix socket
/// carrying each request's file) on its standard output, until the input ends.
pub fn worker_main() -> std::process::ExitCode {
    use std::os::fd::AsFd;
    let Ok(input) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return std::process::ExitCode::FAILURE;
    };
    let requests = UnixStream::from(input);
    let mut stdout = std::io::stdout().lock();
    loop {
        let (fd, body) = match fdpass::receive(&requests) {
            Ok(Some(got)) => got,
            Ok(None) => return std::process::ExitCode::SUCCESS,
            Err(_) => return std::process::ExitCode::FAILURE,
        };
        let Ok(request) = serde_json::from_slice::<Request>(&body) else {
            return std::process::ExitCode::FAILURE;
        };
        let bytes = answer(request, File::from(fd), &mut stdout);
        let framed = stdout
            .write_all(&(bytes.len() as u64).to_le_bytes())
            .and_then(|()| stdout.write_all(&bytes))
            .and_then(|()| stdout.flush());
        if framed.is_err() {
            return std::process::ExitCode::FAILURE;
        }
    }
}

/// Answers one request; statistics write progress frames to `out` meanwhile.
fn answer(request: Request, file: File, out: &mut impl Write) -> Vec<u8> {
    let h5 = H5File::open(file);
    match request {
        Request::Tree => encode(h5.and_then(|f| f.tree())),
        Request::Slice { path, sel } => encode(h5.and_then(|f| f.dataset(&path)?.read(&sel)).map(
            |d| SliceWire {
                shape: d.shape,
                data_json: d.data.to_string(),
                non_finite: d.non_finite,
            },
        )),
        Request::Stats { path, sel, block } => encode(
            h5.and_then(|f| {
                f.dataset(&path)?.moments(&sel, block, |done, total| {
                    let mut frame = [0u8; 24];
                    frame[..8].copy_from_slice(&PROGRESS_FRAME.to_le_bytes());
                    frame[8..16].copy_from_slice(&done.to_le_bytes());
                    frame[16..].copy_from_slice(&total.to_le_bytes());
                    // A parent that went away ends the worker at its next read.
                    let _ = out.write_all(&frame).and_then(|()| out.flush());
                    true
                })
            })
            .map(|m| m.unwrap_or_default()),
        ),
    }
}

fn encode<T: Serialize>(answer: Result<T, FormatError>) -> Vec<u8> {
    bincode::serde::encode_to_vec(&answer, bincode::config::standard())
        .expect("answers always encode")
}
