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
pub use types::{DType, Field};

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
        if is_memory_file(&path) {
            return open_image(&file);
        }
        let inner = ffi::locked(|| hdf5::File::open(&path)).map_err(|e| {
            FormatError::Corrupt(format!("not a readable HDF5 file: {}", ffi::corrupt(e)))
        })?;
        // libhdf5 holds its own descriptor now; ours may close.
        drop(file);
        Ok(H5File { inner })
    }
}

/// Whether the descriptor behind `/proc/self/fd/N` is an in-memory file (a
/// remote file's copy, `memfd`): libhdf5 asks for the real path of the name
/// it opens, which such a file does not have.
fn is_memory_file(fd_path: &str) -> bool {
    std::fs::read_link(fd_path).is_ok_and(|target| target.to_string_lossy().starts_with("/memfd:"))
}

/// Opens an in-memory file's bytes as a libhdf5 file image (the core driver,
/// no backing file): libhdf5 copies the image, and the name it is given,
/// which the core driver requires not to exist, can never exist (nothing can
/// be below `/dev/null`).
fn open_image(file: &File) -> Result<H5File, FormatError> {
    use hdf5_sys::h5f::{H5F_ACC_RDONLY, H5Fopen};
    use hdf5_sys::h5p::{
        H5P_CLS_FILE_ACCESS, H5Pclose, H5Pcreate, H5Pset_fapl_core, H5Pset_file_image,
    };
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(file.metadata()?.len())
        .map_err(|_| FormatError::Unsupported("an in-memory file too large to map".into()))?;
    let mut image = vec![0u8; len];
    file.read_exact_at(&mut image, 0)?;
    let inner = ffi::locked(|| -> Result<hdf5::File, FormatError> {
        // SAFETY: a property list of a registered class, set up with valid
        // arguments (libhdf5 copies the image); the file id it opens is
        // handed to the crate, which closes it.
        unsafe {
            let fapl = ffi::Owned::new(H5Pcreate(*H5P_CLS_FILE_ACCESS), H5Pclose)?;
            ffi::check(H5Pset_fapl_core(fapl.id, 1 << 20, 0))?;
            ffi::check(H5Pset_file_image(
                fapl.id,
                image.as_mut_ptr().cast(),
                image.len(),
            ))?;
            let id = H5Fopen(c"/dev/null/quarry-image".as_ptr(), H5F_ACC_RDONLY, fapl.id);
            if id < 0 {
                return Err(ffi::last_error());
            }
            hdf5::from_id::<hdf5::File>(id).map_err(ffi::corrupt)
        }
    })?;
    Ok(H5File { inner })
}
