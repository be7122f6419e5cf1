//! What the catalog keeps of an HDF5 file: its object tree, read once at index
//! time by the HDF5 reader and stored as rows of `catalog::hdf5`.

use crate::catalog::KindRow;
use crate::catalog::hdf5::tree_rows;
use crate::formats::FormatError;
use crate::formats::hdf5::isolated::{H5Source, tree_of};

/// The catalog rows of an open HDF5 file, local or read by ranges (walked in
/// a child process when the program set one up: libhdf5 can crash on a
/// damaged file).
pub fn rows(file: impl Into<H5Source>) -> Result<Vec<KindRow>, FormatError> {
    Ok(tree_rows(&tree_of(file)?))
}
