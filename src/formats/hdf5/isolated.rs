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
//!
//! A remote file (`H5Source::Ranges`) is never copied: the worker gets a socket
//! on which a thread of this process serves the byte ranges libhdf5 asks for
//! (`worker::RangeServer`, `quarry_hdf5::driver`). A read that failed there
//! (the storage failed, or the file changed under the read) fails the call
//! with that error, not libhdf5's.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::slice::Selection;
use super::{H5File, Moments, SliceData, Tree};
use crate::byte_source::ByteSource;
use crate::formats::FormatError;
use crate::formats::worker::{
    self, Progress, RangeServer, Service, answered_ok, decode_answer, encode_answer,
};

/// Where an HDF5 file's bytes come from.
pub enum H5Source {
    /// A local file opened beneath its root: libhdf5 reads its descriptor.
    File(File),
    /// A file read by ranges (a remote file, through its block cache).
    Ranges(Arc<dyn ByteSource>),
}

impl From<File> for H5Source {
    fn from(file: File) -> H5Source {
        H5Source::File(file)
    }
}

/// What a worker is sent: the request, and the size of the file when the
/// descriptor handed with it is a socket serving its ranges.
#[derive(Debug, Serialize, Deserialize)]
struct Asked {
    ranges_of: Option<u64>,
    request: Request,
}

/// Names the helper binary: kept here for the callers that set it through
/// this module (it names the helper of every worker service).
pub use crate::formats::worker::set_helper;

/// The argument that makes the helper binary serve requests as a worker.
pub const WORKER_ARG: &str = "__hdf5-worker";

/// What a worker is asked about the file handed with the request.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
pub fn tree_of(file: impl Into<H5Source>) -> Result<Tree, FormatError> {
    let file = file.into();
    if !worker::isolated() {
        return in_process(file, |h5| h5.tree());
    }
    match ask(&Request::Tree, file, &|| false)? {
        Some(out) => decode::<Tree>(&out),
        None => Err(FormatError::Io("the HDF5 worker was stopped".into())),
    }
}

/// Reads the selection of the dataset at `path`; `stop` is polled while the
/// worker works (true kills it: `Ok(None)`).
pub fn read_slice(
    file: impl Into<H5Source>,
    path: &str,
    sel: &Selection,
    stop: &dyn Fn() -> bool,
) -> Result<Option<SliceData>, FormatError> {
    let file = file.into();
    if !worker::isolated() {
        return in_process(file, |h5| h5.dataset(path)?.read(sel).map(Some));
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
    file: impl Into<H5Source>,
    path: &str,
    sel: &Selection,
    block: u64,
    stop: &dyn Fn() -> bool,
    progress: &dyn Fn(u64, u64),
) -> Result<Option<Moments>, FormatError> {
    let file = file.into();
    if !worker::isolated() {
        return in_process(file, |h5| {
            h5.dataset(path)?.moments(sel, block, |done, total| {
                progress(done, total);
                !stop()
            })
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
    file: impl Into<H5Source>,
    path: &str,
    sel: &Selection,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Vec<u8>>, FormatError> {
    let file = file.into();
    if !worker::isolated() {
        return in_process(file, |h5| h5.dataset(path)?.read_raw(sel).map(Some));
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

/// Opens the file in this process (no helper is set) and runs `f` on it.
fn in_process<T>(
    source: H5Source,
    f: impl FnOnce(H5File) -> Result<T, FormatError>,
) -> Result<T, FormatError> {
    match source {
        H5Source::File(file) => f(H5File::open(file)?),
        H5Source::Ranges(bytes) => {
            let (server, theirs) = RangeServer::start(bytes.clone())?;
            let result = H5File::open_ranges(theirs, bytes.size()).and_then(f);
            let met = server.finish();
            match (result, met) {
                (Err(_), Some(e)) => Err(ranges_error(e)),
                (result, _) => result,
            }
        }
    }
}

/// A read of a remote file that failed in this process (its storage failed,
/// or it changed under the read): the call's error instead of libhdf5's.
fn ranges_error(e: std::io::Error) -> FormatError {
    FormatError::from(e)
}

fn ask(
    request: &Request,
    file: H5Source,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Vec<u8>>, FormatError> {
    ask_with_progress(request, file, stop, &|_, _| {})
}

/// Has a worker answer `request` about `file`; `Ok(None)` when `stop` said to
/// stop (the worker is killed).
fn ask_with_progress(
    request: &Request,
    file: H5Source,
    stop: &dyn Fn() -> bool,
    progress: &dyn Fn(u64, u64),
) -> Result<Option<Vec<u8>>, FormatError> {
    let body = |ranges_of| {
        serde_json::to_vec(&Asked {
            ranges_of,
            request: request.clone(),
        })
        .expect("requests always encode")
    };
    let bytes = match file {
        H5Source::File(file) => return SERVICE.ask(&body(None), file, stop, progress),
        H5Source::Ranges(bytes) => bytes,
    };
    let (server, theirs) = RangeServer::start(bytes.clone())?;
    let socket = File::from(OwnedFd::from(theirs));
    let asked = SERVICE.ask(&body(Some(bytes.size())), socket, stop, progress);
    let met = server.finish();
    match (asked, met) {
        (Ok(Some(out)), Some(e)) if !answered_ok(&out) => Err(ranges_error(e)),
        (Err(_), Some(e)) => Err(ranges_error(e)),
        (asked, _) => asked,
    }
}

/// The worker's side: answers requests about the files handed to it, within
/// the limits its arguments set, until its input ends.
pub fn worker_main() -> std::process::ExitCode {
    worker::serve(
        |body, file, progress| match serde_json::from_slice::<Asked>(body) {
            Ok(asked) => answer(asked, file, progress),
            Err(e) => encode::<()>(Err(FormatError::Io(format!(
                "the HDF5 worker cannot read its request: {e}"
            )))),
        },
    )
}

/// Answers one request; statistics write progress frames to `out` meanwhile.
/// A read by ranges that failed is the answer's error (the daemon replaces it
/// with its own, fuller one).
fn answer(asked: Asked, file: File, progress: &mut Progress<'_>) -> Vec<u8> {
    // A pooled worker's earlier request left nothing to report.
    let _ = super::driver::take_failure();
    let h5 = match asked.ranges_of {
        Some(size) => H5File::open_ranges(UnixStream::from(OwnedFd::from(file)), size),
        None => H5File::open(file),
    };
    let answer = answer_with(asked.request, h5, progress);
    match super::driver::take_failure() {
        Some(why) if !answered_ok(&answer) => encode::<()>(Err(FormatError::Io(why))),
        _ => answer,
    }
}

fn answer_with(
    request: Request,
    h5: Result<H5File, FormatError>,
    progress: &mut Progress<'_>,
) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds() -> File {
        File::open(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/hdf5/kinds.h5"
        ))
        .unwrap()
    }

    /// Without a helper (this process reads), a file served by ranges gives
    /// the same tree and values as the file itself.
    #[test]
    fn a_file_read_by_ranges_reads_as_the_file() {
        let by_ranges = tree_of(H5Source::Ranges(Arc::new(kinds()))).unwrap();
        assert_eq!(by_ranges, tree_of(kinds()).unwrap());
        let sel = crate::formats::hdf5::slice::resolve(
            &crate::formats::hdf5::slice::parse("1:4").unwrap(),
            &[12],
        )
        .unwrap();
        let path = "/numbers/i1";
        let direct = read_slice(kinds(), path, &sel, &|| false).unwrap().unwrap();
        let ranged = read_slice(H5Source::Ranges(Arc::new(kinds())), path, &sel, &|| false)
            .unwrap()
            .unwrap();
        assert_eq!(direct.data, ranged.data);
    }
}
