//! libhdf5 in child processes. libhdf5 itself can crash on a damaged file
//! (seen with 1.10.8: a segmentation fault while releasing the attributes of a
//! corrupt object header, another copying a variable-length string out of a
//! damaged global heap) or loop; no `catch_unwind` stops that. So when the
//! program has named a helper (`formats::worker`), walking a tree, reading a
//! slice and computing statistics run in `quarry __hdf5-worker` processes: a
//! crash, a hang or an allocation past the worker's address-space limit costs
//! the worker, and becomes that file's (or that call's) error. Without a helper
//! they run in this process.
//!
//! The pool, the descriptor passing, the framing and the limits are the shared
//! worker machinery's; this file holds what an HDF5 worker is asked and answers.

use std::fs::File;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::slice::Selection;
use super::{H5File, Moments, SliceData, Tree};
use crate::formats::FormatError;
use crate::formats::worker::{self, Progress, Service, decode_answer, encode_answer};

/// Names the helper binary: kept here for the callers that set it through
/// this module (it names the helper of every worker service).
pub use crate::formats::worker::set_helper;

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
    Raw {
        path: String,
        sel: Selection,
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

/// The HDF5 workers: a request may take two minutes before its worker is killed.
static SERVICE: Service = Service::new(
    WORKER_ARG,
    "libhdf5",
    "the HDF5 reader",
    Duration::from_secs(120),
    // libhdf5 prefers these to the prefixes quarry sets on each dataset: a name of an
    // external file or virtual source that slipped past the refusal resolves nowhere.
    &[
        ("HDF5_EXTFILE_PREFIX", super::NOWHERE),
        ("HDF5_VDS_PREFIX", super::NOWHERE),
        // The workers only read: a file its writer still holds open is read as it
        // is (and re-read when the writer's change is seen), not refused as locked.
        ("HDF5_USE_FILE_LOCKING", "FALSE"),
    ],
);

/// The process ids of the idle HDF5 workers (for tests of their limits).
pub fn idle_worker_pids() -> Vec<u32> {
    SERVICE.idle_pids()
}

/// The tree of an open file: in a worker when a helper is set, otherwise in
/// this process.
pub fn tree_of(file: File) -> Result<Tree, FormatError> {
    if !worker::isolated() {
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
    if !worker::isolated() {
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
    if !worker::isolated() {
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

/// The selected numbers' raw bytes in NumPy's order (`OpenDataset::read_raw`);
/// `stop` as for `read_slice`.
pub fn read_raw(
    file: File,
    path: &str,
    sel: &Selection,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Vec<u8>>, FormatError> {
    if !worker::isolated() {
        return H5File::open(file)?.dataset(path)?.read_raw(sel).map(Some);
    }
    let request = Request::Raw {
        path: path.to_string(),
        sel: sel.clone(),
    };
    match ask(&request, file, stop)? {
        Some(out) => decode::<Vec<u8>>(&out).map(Some),
        None => Ok(None),
    }
}

fn decode<T: serde::de::DeserializeOwned>(out: &[u8]) -> Result<T, FormatError> {
    decode_answer(out, "the HDF5 reader")
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
    let body = serde_json::to_vec(request).expect("requests always encode");
    SERVICE.ask(&body, file, stop, progress)
}

/// The worker's side: answers requests about the files handed to it, within
/// the limits its arguments set, until its input ends.
pub fn worker_main() -> std::process::ExitCode {
    worker::serve(
        |body, file, progress| match serde_json::from_slice::<Request>(body) {
            Ok(request) => answer(request, file, progress),
            Err(e) => encode::<()>(Err(FormatError::Io(format!(
                "the HDF5 worker cannot read its request: {e}"
            )))),
        },
    )
}

/// Answers one request; statistics write progress frames to `out` meanwhile.
fn answer(request: Request, file: File, progress: &mut Progress<'_>) -> Vec<u8> {
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
                    progress.report(done, total);
                    true
                })
            })
            .map(|m| m.unwrap_or_default()),
        ),
        Request::Raw { path, sel } => encode(h5.and_then(|f| f.dataset(&path)?.read_raw(&sel))),
    }
}

fn encode<T: Serialize>(answer: Result<T, FormatError>) -> Vec<u8> {
    encode_answer(answer)
}
