//! What the catalog keeps of an HDF5 file: its object tree, read once at index
//! time by the HDF5 reader and stored as rows of `catalog::hdf5`.

use std::fs::File;

use crate::catalog::KindRow;
use crate::catalog::hdf5::tree_rows;
use crate::formats::FormatError;
use crate::formats::hdf5::H5File;

/// The catalog rows of an open HDF5 file.
pub fn rows(file: File) -> Result<Vec<KindRow>, FormatError> {
    let file = H5File::open(file)?;
    Ok(tree_rows(&file.tree()?))
}
