//! HDF5 files through libhdf5 (the `hdf5` crate, hdf5-metno): the whole
//! object tree for the catalog, and hyperslab reads of datasets.
//!
//! - `ffi`: the one place libhdf5 is called from (a global lock; errors typed);
//! - `filters`: LZF and Zstandard registered with libhdf5, and its plugin folders;
//! - `tree`: groups, datasets, named types and links, depth first;
//! - `dataset`, `attributes`: what is kept of each dataset and attribute;
//! - `types`: NumPy-style type strings and the decoding of values;
//! - `slice`: NumPy basic indexing parsed by hand and resolved to hyperslabs;
//! - `read`: reading a selection (or streaming it block by block);
//! - `raw`: a selection's numbers as raw bytes in NumPy's order, in blocks (exports);
//! - `outside`: datasets whose data lies in other files (external storage,
//!   virtual datasets): recorded, never read;
//! - `signature`: the signature check that runs before libhdf5 sees a file;
//! - `isolated`: tree walks, slices and statistics in worker processes (the
//!   shared `formats::worker` machinery: a pool, each file handed as a
//!   descriptor, memory and time limits), so a libhdf5 crash or hang on a
//!   damaged file is that file's error.
//!
//! Files are opened from an already open descriptor (opened beneath its root by
//! the caller): libhdf5 opens by name, so it is handed `/proc/self/fd/N`, which
//! reopens that very inode; a link swapped in after the open cannot redirect it.

mod attributes;
mod buffer;
mod dataset;
mod ffi;
pub mod filters;
pub mod isolated;
mod outside;
mod raw;
mod read;
mod signature;
pub mod slice;
mod tree;
mod types;

use std::fs::File;
use std::os::fd::AsRawFd;

pub use attributes::{Attribute, MAX_VALUE_CHARS};
pub use dataset::{DatasetInfo, Filter};
pub use outside::{ExternalData, NOWHERE};
pub use raw::{Plain, blocks};
pub use read::{Moments, OpenDataset, SliceData};
pub use signature::{SIGNATURE, check_signature};
pub use tree::{Entry, MAX_OBJECTS, Member, MemberKind, Object, Tree, absolute_target};
pub use types::DType;

use super::FormatError;

/// An HDF5 file open for reading.
pub struct H5File {
    inner: hdf5::File,
}

impl H5File {
    /// Opens an HDF5 file from an open descriptor.
    pub fn open(mut file: File) -> Result<H5File, FormatError> {
        check_signature(&mut file)?;
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        let inner = ffi::locked(|| hdf5::File::open(&path)).map_err(|e| {
            FormatError::Corrupt(format!("not a readable HDF5 file: {}", ffi::corrupt(e)))
        })?;
        // libhdf5 holds its own descriptor now; ours may close.
        drop(file);
        Ok(H5File { inner })
    }
}
