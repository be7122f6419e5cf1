//! HDF5 files: the reader is the crate `quarry-hdf5` (crates/quarry-hdf5),
//! re-exported here; `isolated` runs its tree walks, slices and statistics in
//! worker processes started from quarry's own binary (the shared
//! `formats::worker` machinery: a pool, each file handed as a descriptor,
//! memory and time limits), so a libhdf5 crash or hang on a damaged file is
//! that file's error.

pub use quarry_hdf5::*;

pub mod isolated;
