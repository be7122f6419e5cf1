//! What the catalog keeps of an HDF5 file: its object tree, read once at index
//! time by the HDF5 reader and stored as rows of `catalog::hdf5`.

use std::fs::File;

use crate::catalog::KindRow;
use crate::catalog::hdf5::tree_rows;
use crate::formats::FormatError;
use crate::formats::hdf5::isolated::tree_of;

/// The catalog rows of an open HDF5 file (walked in a child process when the
/// program set one up: libhdf5 can crash on a damaged file).
pub fn rows(file: File) -> Result<Vec<KindRow>, FormatError> {
    Ok(tree_rows(&tree_of(file)?))
}
