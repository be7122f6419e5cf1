//! Running a kind's reader over one file, safely: a reader that panics (third-party
//! parsers do, on hostile input) becomes a recorded error for that file, never a
//! crash of the daemon.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use crate::catalog::KindRow;
use crate::formats::{self, FormatError, Kind};
use crate::panics::panic_message;

/// Extracts what the catalog keeps of a file of `kind`; `Err` holds the message
/// recorded against the file.
pub fn extract(kind: Kind, path: &Path) -> Result<Vec<KindRow>, String> {
    match kind {
        Kind::Root => guarded(kind, || super::root::root_rows(path)),
        Kind::Document => guarded(kind, || super::documents::rows(path)),
        _ => guarded(kind, || formats::validate(kind, path).map(|()| Vec::new())),
    }
}

/// Runs a reader, turning its errors and panics into the file's error message.
fn guarded(
    kind: Kind,
    read: impl FnOnce() -> Result<Vec<KindRow>, FormatError>,
) -> Result<Vec<KindRow>, String> {
    match catch_unwind(AssertUnwindSafe(read)) {
        Ok(Ok(rows)) => Ok(rows),
        Ok(Err(e)) => Err(e.to_string()),
        Err(panic) => Err(format!(
            "the {kind} reader failed on this file: {}",
            panic_message(panic.as_ref())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_that_panics_becomes_the_files_error() {
        let err = guarded(Kind::Root, || panic!("basket 3 points past the end")).unwrap_err();
        assert_eq!(
            err,
            "the root reader failed on this file: basket 3 points past the end"
        );
        let err = guarded(Kind::Hdf5, || std::panic::panic_any(42u32)).unwrap_err();
        assert!(err.ends_with("unknown panic"), "{err}");
        let err = guarded(Kind::Code, || Err(FormatError::Corrupt("bad".into()))).unwrap_err();
        assert_eq!(err, "bad");
        assert_eq!(guarded(Kind::Document, || Ok(Vec::new())), Ok(Vec::new()));
    }
}
