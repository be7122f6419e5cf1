//! Running a kind's reader over one file, safely: a reader that panics (third-party
//! parsers do, on hostile input) becomes a recorded error for that file, never a
//! crash of the daemon.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use crate::catalog::KindRow;
use crate::formats::{self, Kind};
use crate::panics::panic_message;

/// Extracts what the catalog keeps of a file of `kind`; `Err` holds the message
/// recorded against the file.
pub fn extract(kind: Kind, path: &Path) -> Result<Vec<KindRow>, String> {
    match catch_unwind(AssertUnwindSafe(|| formats::validate(kind, path))) {
        Ok(Ok(())) => Ok(Vec::new()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(panic) => Err(format!(
            "the {kind} reader failed on this file: {}",
            panic_message(panic.as_ref())
        )),
    }
}
