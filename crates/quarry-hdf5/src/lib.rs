//! quarry's HDF5 layer, through libhdf5 (the `hdf5` crate, hdf5-metno): the
//! whole object tree of a file (groups, datasets with their layout, filters
//! and attributes, named types, links), and hyperslab reads of datasets
//! selected with NumPy's basic indexing. It knows nothing of quarry's catalog,
//! tools or configuration; quarry runs it in worker processes of its own so
//! that a libhdf5 crash on a damaged file is that file's error.
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
//! - `driver`: a read-only virtual file driver reading a file's byte ranges
//!   from another process over a socket (remote files, never copied whole).
//!
//! Files are opened from an already open descriptor (opened beneath its root by
//! the caller): libhdf5 opens by name, so it is handed `/proc/self/fd/N`, which
//! reopens that very inode; a link swapped in after the open cannot redirect it.
//!
//! ```
//! # fn main() -> Result<(), quarry_hdf5::FormatError> {
//! use quarry_hdf5::{H5File, slice};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/hdf5/tiny.h5");
//! let h5 = H5File::open(std::fs::File::open(path)?)?;
//! let paths: Vec<_> = h5.tree()?.objects.into_iter().map(|o| o.path).collect();
//! assert_eq!(paths, ["/", "/conditions", "/conditions/hv"]);
//!
//! let hv = h5.dataset("/conditions/hv")?;
//! let selection = slice::resolve(&slice::parse("1:3").unwrap(), hv.shape.as_deref().unwrap()).unwrap();
//! assert_eq!(hv.read(&selection)?.data, serde_json::json!([1.0, 2.0]));
//! # Ok(())
//! # }
//! ```

/// README.md's example, run as a test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

mod attributes;
mod buffer;
mod dataset;
pub mod driver;
mod ffi;
pub mod filters;
mod outside;
mod raw;
mod read;
mod signature;
pub mod slice;
mod tree;
mod types;

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

pub use attributes::Attribute;
pub use dataset::{DatasetInfo, Filter};
pub use outside::{ExternalData, NOWHERE};
pub use raw::{Plain, blocks};
pub use read::{Moments, OpenDataset, SliceData};
pub use signature::SIGNATURE;
pub use tree::{Entry, Member, MemberKind, Object, Tree, absolute_target};
pub use types::{DType, Field};

use signature::check_signature;

pub use quarry_format_error::FormatError;

/// The repository this crate lives in: its tests read the HDF5 files kept in
/// quarry's `testdata/` and `tests/data/`.
#[cfg(test)]
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

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

    /// Opens the HDF5 file of `size` bytes served on `socket` by ranges
    /// (`driver`): libhdf5 reads only the ranges it needs, each asked of the
    /// serving process. The signature is checked first, through the socket.
    pub fn open_ranges(socket: UnixStream, size: u64) -> Result<H5File, FormatError> {
        check_served_signature(&socket, size)?;
        let name = driver::file_name(&socket, size);
        let inner = ffi::locked(|| -> Result<hdf5::File, FormatError> {
            use hdf5_sys::h5f::{H5F_ACC_RDONLY, H5Fopen};
            use hdf5_sys::h5p::{H5P_CLS_FILE_ACCESS, H5Pclose, H5Pcreate, H5Pset_driver};
            let driver = driver::id()?;
            // SAFETY: a file-access list of a registered class set to our
            // registered driver (it takes no driver info); the file id opened
            // is handed to the crate, which closes it.
            unsafe {
                let fapl = ffi::Owned::new(H5Pcreate(*H5P_CLS_FILE_ACCESS), H5Pclose)?;
                ffi::check(H5Pset_driver(fapl.id, driver, std::ptr::null()))?;
                let id = H5Fopen(name.as_ptr(), H5F_ACC_RDONLY, fapl.id);
                if id < 0 {
                    return Err(match driver::take_failure() {
                        Some(why) => FormatError::Io(why),
                        None => ffi::last_error(),
                    });
                }
                hdf5::from_id::<hdf5::File>(id).map_err(ffi::corrupt)
            }
        })?;
        // The driver holds its own copy of the socket.
        drop(socket);
        Ok(H5File { inner })
    }
}

/// `check_signature` for a file served by ranges.
fn check_served_signature(socket: &UnixStream, size: u64) -> Result<(), FormatError> {
    let mut offset = 0u64;
    let mut head = [0u8; 8];
    while offset + 8 <= size {
        driver::fetch(socket, offset, &mut head)?;
        if head == SIGNATURE {
            return Ok(());
        }
        offset = if offset == 0 { 512 } else { offset * 2 };
    }
    Err(FormatError::Corrupt(
        "not an HDF5 file: no HDF5 signature at offset 0 or any user-block boundary".into(),
    ))
}
