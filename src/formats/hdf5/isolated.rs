//! libhdf5 in a child process. libhdf5 itself can crash on a damaged file
//! (seen with 1.10.8: a segmentation fault while releasing the attributes of a
//! corrupt object header, another copying a variable-length string out of a
//! damaged global heap) or loop; no `catch_unwind` stops that. So when the
//! program has named a helper (the `quarry` binary, which answers `HELPER_ARG`
//! and `READ_ARG`), walking a tree, reading a slice and computing statistics
//! run in a child that gets the open file as its standard input and answers on
//! its standard output: a crash or a hang costs the child, and becomes that
//! file's (or that call's) error. Without a helper they run in this process.

use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::slice::Selection;
use super::{H5File, Moments, SliceData, Tree};
use crate::formats::FormatError;

/// The argument that makes the helper binary walk the file on its standard input.
pub const HELPER_ARG: &str = "__hdf5-tree";
/// The argument that makes the helper read from a dataset (a JSON `Request` follows).
pub const READ_ARG: &str = "__hdf5-read";

/// What the helper is asked to read from a dataset.
#[derive(Debug, Serialize, Deserialize)]
enum Request {
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

/// A slice as the helper sends it (the nested values as JSON text: bincode
/// cannot carry a self-describing value).
#[derive(Debug, Serialize, Deserialize)]
struct SliceWire {
    shape: Vec<u64>,
    data_json: String,
    non_finite: u64,
}
/// Longest a child may take over one file before it is killed.
const TIME_LIMIT: Duration = Duration::from_secs(120);

static HELPER: OnceLock<PathBuf> = OnceLock::new();

/// Names the binary that answers `HELPER_ARG` (set once, at start-up).
pub fn set_helper(exe: PathBuf) {
    let _ = HELPER.set(exe);
}

/// The tree of an open file: in a child process when a helper is set,
/// otherwise in this process.
pub fn tree_of(file: File) -> Result<Tree, FormatError> {
    match HELPER.get() {
        Some(exe) => tree_in_child(exe, file),
        None => H5File::open(file)?.tree(),
    }
}

fn tree_in_child(exe: &PathBuf, file: File) -> Result<Tree, FormatError> {
    let out = run_child(exe, &[HELPER_ARG.into()], file, &|| false)?;
    decode::<Tree>(&out)
}

/// Reads the selection of the dataset at `path`; `stop` is polled while the
/// child works (true kills it: `Ok(None)`).
pub fn read_slice(
    file: File,
    path: &str,
    sel: &Selection,
    stop: &dyn Fn() -> bool,
) -> Result<Option<SliceData>, FormatError> {
    let Some(exe) = HELPER.get() else {
        return H5File::open(file)?.dataset(path)?.read(sel).map(Some);
    };
    let request = Request::Slice {
        path: path.to_string(),
        sel: sel.clone(),
    };
    let Some(out) = run_request(exe, &request, file, stop)? else {
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
/// said to stop.
pub fn dataset_moments(
    file: File,
    path: &str,
    sel: &Selection,
    block: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Moments>, FormatError> {
    let Some(exe) = HELPER.get() else {
        return H5File::open(file)?
            .dataset(path)?
            .moments(sel, block, |_, _| !stop());
    };
    let request = Request::Stats {
        path: path.to_string(),
        sel: sel.clone(),
        block,
    };
    match run_request(exe, &request, file, stop)? {
        Some(out) => decode::<Moments>(&out).map(Some),
        None => Ok(None),
    }
}

fn run_request(
    exe: &PathBuf,
    request: &Request,
    file: File,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Vec<u8>>, FormatError> {
    let json = serde_json::to_string(request).expect("requests always encode");
    match run_child(exe, &[READ_ARG.into(), json], file, stop) {
        Err(FormatError::Unsupported(why)) if why == STOPPED => Ok(None),
        other => other.map(Some),
    }
}

const STOPPED: &str = "stopped";

fn decode<T: serde::de::DeserializeOwned>(out: &[u8]) -> Result<T, FormatError> {
    let (answer, _): (Result<T, (bool, String)>, _) =
        bincode::serde::decode_from_slice(out, bincode::config::standard())
            .map_err(|e| FormatError::Io(format!("the HDF5 reader's answer is garbled: {e}")))?;
    // `true` marks an error of the file's type that is not its fault.
    answer.map_err(|(unsupported, why)| {
        if unsupported {
            FormatError::Unsupported(why)
        } else {
            FormatError::Corrupt(why)
        }
    })
}

/// Runs the helper over `file`, returning what it wrote; kills it when `stop`
/// says so (`Unsupported(STOPPED)`) or after `TIME_LIMIT`.
fn run_child(
    exe: &PathBuf,
    args: &[String],
    file: File,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<u8>, FormatError> {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::from(file))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdout = child.stdout.take().expect("piped stdout");
    // Read while waiting: a large answer would otherwise fill the pipe and stall.
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).map(|_| out)
    });
    let started = Instant::now();
    let mut pause = Duration::from_micros(200);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let stopped = stop();
        if stopped || started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            let _ = reader.join();
            return Err(if stopped {
                FormatError::Unsupported(STOPPED.into())
            } else {
                FormatError::Corrupt(format!(
                    "the HDF5 reader took over {} s on this file and was stopped",
                    TIME_LIMIT.as_secs()
                ))
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    };
    let out = reader
        .join()
        .map_err(|_| FormatError::Io("reading the HDF5 reader's answer failed".into()))??;
    if !status.success() {
        use std::os::unix::process::ExitStatusExt;
        return Err(FormatError::Corrupt(match status.signal() {
            Some(signal) => format!("libhdf5 crashed reading this file (signal {signal})"),
            None => format!("the HDF5 reader failed on this file ({status})"),
        }));
    }
    Ok(out)
}

/// The helper's side: answers the request in its arguments about the file on
/// its standard input, on its standard output.
pub fn helper_main() -> std::process::ExitCode {
    use std::os::fd::AsFd;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let file = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(File::from)
        .map_err(FormatError::from);
    let bytes = match args.first().map(String::as_str) {
        Some(HELPER_ARG) => encode(file.and_then(H5File::open).and_then(|f| f.tree())),
        Some(READ_ARG) => {
            let request = args
                .get(1)
                .and_then(|r| serde_json::from_str::<Request>(r).ok());
            match request {
                Some(Request::Slice { path, sel }) => encode(
                    file.and_then(H5File::open)
                        .and_then(|f| f.dataset(&path)?.read(&sel))
                        .map(|d| SliceWire {
                            shape: d.shape,
                            data_json: d.data.to_string(),
                            non_finite: d.non_finite,
                        }),
                ),
                Some(Request::Stats { path, sel, block }) => encode(
                    file.and_then(H5File::open)
                        .and_then(|f| f.dataset(&path)?.moments(&sel, block, |_, _| true))
                        .map(|m| m.unwrap_or_default()),
                ),
                None => return std::process::ExitCode::FAILURE,
            }
        }
        _ => return std::process::ExitCode::FAILURE,
    };
    match std::io::stdout().lock().write_all(&bytes) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(_) => std::process::ExitCode::FAILURE,
    }
}

fn encode<T: Serialize>(answer: Result<T, FormatError>) -> Vec<u8> {
    let answer = answer.map_err(|e| (matches!(e, FormatError::Unsupported(_)), e.to_string()));
    bincode::serde::encode_to_vec(&answer, bincode::config::standard())
        .expect("answers always encode")
}
