//! Running a kind's reader over one file, safely: a reader that panics (third-party
//! parsers do, on hostile input) becomes a recorded error for that file, never a
//! crash of the daemon.

use std::time::Duration;

use crate::catalog::KindRow;
use crate::formats::hdf5::isolated::H5Source;
use crate::formats::{FormatError, Kind};
use crate::panics::catch_quietly;
use crate::roots::{DataRoot, OpenError, open_beneath};

/// What extracting one file gave.
#[derive(Debug, PartialEq)]
pub enum Extracted {
    Rows(Vec<KindRow>),
    /// The file's own fault: recorded against it until it changes.
    Failed(String),
    /// The system's passing shortage (descriptors, memory), still there after the
    /// retries: nothing is recorded, the file is tried again later.
    Deferred(String),
}

/// Waits between attempts when an error is transient.
const BACKOFF: [Duration; 4] = [
    Duration::from_millis(20),
    Duration::from_millis(100),
    Duration::from_millis(400),
    Duration::from_millis(1000),
];

/// Extracts what the catalog keeps of the file `rel` of kind `kind` under the
/// data root `root` (opened beneath it), retrying transient I/O errors. A remote
/// file must still be the version `listed` (size, modification time) that its
/// listing saw, or it is deferred until listed again.
pub fn extract(kind: Kind, root: &DataRoot, rel: &str, listed: (u64, i64)) -> Extracted {
    let mut attempt = 0;
    loop {
        match extract_once(kind, root, rel, listed) {
            Err(FormatError::Transient(why)) if attempt < BACKOFF.len() => {
                std::thread::sleep(BACKOFF[attempt]);
                attempt += 1;
                tracing::debug!("retrying {rel} after a transient error: {why}");
            }
            Err(FormatError::Transient(why)) => return Extracted::Deferred(why),
            Err(e) => {
                // One line per file, whatever went wrong (a reader's panic
                // included): the catalog keeps the same reason.
                tracing::info!("{rel}: not indexed: {e}");
                return Extracted::Failed(e.to_string());
            }
            Ok(rows) => return Extracted::Rows(rows),
        }
    }
}

fn extract_once(
    kind: Kind,
    root: &DataRoot,
    rel: &str,
    listed: (u64, i64),
) -> Result<Vec<KindRow>, FormatError> {
    let file = match &root.remote {
        Some(remote) => {
            let (size, mtime_ns) = listed;
            let expected = crate::remote::Meta {
                size,
                mtime_ns,
                etag: None,
            };
            let file = remote.open(rel, Some(&expected))?;
            if matches!(kind, Kind::Root | Kind::Hdf5) {
                // By ranges: a ROOT file's header, keys, streamers and trees'
                // metadata; an HDF5 file's superblock and object headers, as
                // libhdf5 asks for them through quarry's driver.
                let file = std::sync::Arc::new(file);
                let rows = if kind == Kind::Root {
                    guarded(kind, || super::root::remote_root_rows(file.clone()))
                } else {
                    let source = H5Source::Ranges(file.clone());
                    guarded(kind, || super::hdf5::rows(source))
                };
                if let Some(f) = crate::byte_source::ByteSource::fetched(file.as_ref()) {
                    tracing::info!(
                        "{}: indexed from {} bytes in {} requests (of {} bytes)",
                        file.url(),
                        f.bytes,
                        f.requests,
                        size
                    );
                }
                return rows;
            }
            // Documents and code are read whole by their parsers: fetched
            // whole, up to `[remote] max_whole_file_mb`; a larger file is
            // that file's error.
            file.to_memory_file()?
        }
        None => open_beneath(&root.canonical, rel).map_err(|e| match e {
            OpenError::Io(e) => FormatError::from(e),
            other => FormatError::Io(other.to_string()),
        })?,
    };
    let name = rel.rsplit('/').next().unwrap_or(rel);
    match kind {
        Kind::Root => guarded(kind, || super::root::root_rows(file)),
        Kind::Document => guarded(kind, || super::documents::rows(name, file)),
        Kind::Hdf5 => guarded(kind, || super::hdf5::rows(file)),
        Kind::Code => guarded(kind, || super::code::rows(name, file)),
    }
}

/// Runs a reader, turning its panics into the file's error, with where the
/// panic happened (the hook prints nothing for it: see `panics`).
fn guarded(
    kind: Kind,
    read: impl FnOnce() -> Result<Vec<KindRow>, FormatError>,
) -> Result<Vec<KindRow>, FormatError> {
    catch_quietly(read).unwrap_or_else(|caught| {
        let at = caught
            .location
            .as_deref()
            .map_or(String::new(), |l| format!(" (at {})", short_location(l)));
        Err(FormatError::Corrupt(format!(
            "the {kind} reader failed on this file: {}{at}",
            caught.message
        )))
    })
}

/// A panic's place without the folder a dependency's source was unpacked in:
/// `crate-1.2.3/src/lib.rs:10` rather than the whole path of this machine.
fn short_location(location: &str) -> &str {
    match location.find("/registry/src/") {
        Some(at) => {
            let rest = &location[at + "/registry/src/".len()..];
            rest.split_once('/').map_or(rest, |(_, path)| path)
        }
        None => location,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_that_panics_becomes_the_files_error() {
        let err = guarded(Kind::Root, || panic!("basket 3 points past the end")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the root reader failed on this file: basket 3 points past the end"),
            "{err}"
        );
        let err = guarded(Kind::Hdf5, || std::panic::panic_any(42u32)).unwrap_err();
        assert!(err.to_string().contains(": unknown panic"), "{err}");
        let err = guarded(Kind::Code, || Err(FormatError::Corrupt("bad".into()))).unwrap_err();
        assert_eq!(err.to_string(), "bad");
        assert_eq!(guarded(Kind::Document, || Ok(Vec::new())), Ok(Vec::new()));
    }

    #[test]
    fn a_dependencys_panic_is_placed_within_its_crate() {
        assert_eq!(
            short_location(
                "/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pdf-extract-0.12.1/src/lib.rs:1237"
            ),
            "pdf-extract-0.12.1/src/lib.rs:1237"
        );
        assert_eq!(
            short_location("src/indexing/root.rs:10"),
            "src/indexing/root.rs:10"
        );
    }
}
