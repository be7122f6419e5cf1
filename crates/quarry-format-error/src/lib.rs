//! The error type shared by quarry's file format readers (`quarry-rootio`,
//! `quarry-hdf5`) and the daemon that uses them: why a file could not be read
//! as its format, in a few kinds a caller can act on (a corrupt file, a
//! feature not supported, a read refused, a filter missing, an I/O failure,
//! and an I/O failure worth trying again); and `panics`, which turns a panic
//! of a third-party decoder into that file's error without the default
//! hook's stack trace.
//!
//! ```
//! use quarry_format_error::FormatError;
//!
//! let err = FormatError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
//! assert!(matches!(err, FormatError::Transient(_)));
//! let err = FormatError::from(std::io::Error::from_raw_os_error(libc::EIO));
//! assert!(matches!(err, FormatError::Io(_)));
//! ```

pub mod panics;
mod transient;

/// README.md's example, run as a test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

use std::io;

pub use transient::is_transient;

/// Why a file could not be read as its kind (serde: it crosses from quarry's
/// HDF5 worker process).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum FormatError {
    #[error("{0}")]
    Corrupt(String),
    #[error("{0}")]
    Unsupported(String),
    /// The file asks for something the reader will not do (read data kept in
    /// another file, outside the data root); the message names the route and
    /// target.
    #[error("{0}")]
    Refused(String),
    /// Data stored through a filter (compression) this build cannot decode.
    #[error("{0}")]
    UnsupportedFilter(String),
    #[error("I/O error: {0}")]
    Io(String),
    /// The system was short of something (descriptors, memory) or the call was
    /// interrupted: not the file's fault, worth trying again.
    #[error("I/O error (transient): {0}")]
    Transient(String),
}

impl From<io::Error> for FormatError {
    fn from(e: io::Error) -> Self {
        if is_transient(&e) {
            FormatError::Transient(e.to_string())
        } else {
            FormatError::Io(e.to_string())
        }
    }
}
