//! Datasets whose raw data lies outside their file: external storage (raw files
//! the dataset names, `H5Pset_external`) and virtual datasets (mappings onto
//! datasets of HDF5 files named by the mapping, `H5Pset_virtual`). libhdf5 opens
//! those files by name, wherever the names lead (an absolute path, `../`, the
//! file's own folder, the working directory), never through the file quarry
//! opened beneath its root. So quarry reads no data through either route: the
//! catalog records what a dataset names (so a user sees why), and opening such
//! a dataset for reading is refused before libhdf5 touches its data.
//!
//! As a second line, every dataset is opened with the external-storage and
//! virtual-dataset prefixes set to `NOWHERE`; libhdf5 1.10 still tries absolute
//! names, and a virtual source's name beside the file and in the working
//! directory, whatever the prefix, so the refusal is what closes those.

use std::ffi::{CStr, CString, c_char};

use serde::{Deserialize, Serialize};

use super::ffi::{self, Owned};
use crate::FormatError;

/// Where libhdf5 is told to look for external-storage files and virtual-dataset
/// sources named by a relative path: beneath a character device, where no file
/// can ever be (every such open fails with ENOTDIR). The HDF5 worker also gets
/// it as `HDF5_EXTFILE_PREFIX` and `HDF5_VDS_PREFIX`, which libhdf5 prefers to
/// the access property.
pub const NOWHERE: &str = "/dev/null";

/// Targets kept per dataset in the catalog; the rest are only counted.
pub const MAX_TARGETS: usize = 16;
/// Bytes of a target's name kept (a file's name inside the file can be long).
const MAX_NAME: usize = 4096;

/// A file other than its own that a dataset names as holding its raw data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExternalData {
    /// External storage: `size` bytes (`None`: up to the end of the file) of
    /// the raw file `file` from byte `offset`.
    Storage {
        file: String,
        offset: u64,
        size: Option<u64>,
    },
    /// A virtual dataset's mapping onto the dataset `dataset` of the HDF5 file
    /// `file` (`.` is the virtual dataset's own file).
    VirtualSource { file: String, dataset: String },
}

impl ExternalData {
    /// The route and its target, as a refusal names them.
    pub fn route(&self) -> String {
        match self {
            ExternalData::Storage { file, .. } => format!("external storage → {file}"),
            ExternalData::VirtualSource { file, dataset } => {
                format!("virtual dataset → {file}:{dataset}")
            }
        }
    }
}

/// Why reading the dataset at `path` is refused, naming every target kept
/// (`total` counts them all).
pub fn refusal(path: &str, targets: &[ExternalData], total: u64) -> String {
    let mut routes: Vec<String> = targets.iter().map(ExternalData::route).collect();
    if total > targets.len() as u64 {
        routes.push(format!("and {} more", total - targets.len() as u64));
    }
    format!(
        "'{path}' keeps its data outside this file ({}); quarry reads no data through external \
storage or virtual datasets, which libhdf5 would open by name outside the root",
        routes.join(", ")
    )
}

/// The files a dataset creation property list names for the raw data: at most
/// `MAX_TARGETS` of them, and how many it names in all. Reading the list
/// opens nothing.
pub(super) fn targets_of(
    dcpl: hdf5_sys::h5i::hid_t,
) -> Result<(Vec<ExternalData>, u64), FormatError> {
    let (mut found, mut total) = external_files(dcpl)?;
    let (virtual_found, virtual_total) = virtual_sources(dcpl)?;
    found.extend(virtual_found);
    found.truncate(MAX_TARGETS);
    total += virtual_total;
    Ok((found, total))
}

fn external_files(dcpl: hdf5_sys::h5i::hid_t) -> Result<(Vec<ExternalData>, u64), FormatError> {
    use hdf5_sys::h5p::{H5Pget_external, H5Pget_external_count};
    // SAFETY: a valid dataset creation property list; callers hold the lock.
    let count = unsafe { H5Pget_external_count(dcpl) };
    if count < 0 {
        return Err(ffi::last_error());
    }
    let mut found = Vec::new();
    for i in 0..(count as u32).min(MAX_TARGETS as u32) {
        let mut name = vec![0 as c_char; MAX_NAME + 1];
        let mut offset: libc::off_t = 0;
        let mut size: hdf5_sys::h5::hsize_t = 0;
        // SAFETY: `name` holds MAX_NAME + 1 bytes and libhdf5 writes at most
        // the size given; the other out-pointers point to locals.
        ffi::check(unsafe {
            H5Pget_external(dcpl, i, MAX_NAME, name.as_mut_ptr(), &mut offset, &mut size)
        })?;
        found.push(ExternalData::Storage {
            file: c_text(&name),
            offset: offset.max(0) as u64,
            size: (size != hdf5_sys::h5f::H5F_UNLIMITED).then_some(size),
        });
    }
    Ok((found, count as u64))
}

fn virtual_sources(dcpl: hdf5_sys::h5i::hid_t) -> Result<(Vec<ExternalData>, u64), FormatError> {
    use hdf5_sys::h5d::H5D_layout_t;
    use hdf5_sys::h5p::{
        H5Pget_layout, H5Pget_virtual_count, H5Pget_virtual_dsetname, H5Pget_virtual_filename,
    };
    // SAFETY: a valid dataset creation property list; callers hold the lock.
    if unsafe { H5Pget_layout(dcpl) } != H5D_layout_t::H5D_VIRTUAL {
        return Ok((Vec::new(), 0));
    }
    let mut count: usize = 0;
    // SAFETY: valid plist, out-pointer to a local.
    ffi::check(unsafe { H5Pget_virtual_count(dcpl, &mut count) })?;
    let mut found = Vec::new();
    for i in 0..count.min(MAX_TARGETS) {
        let mut file = vec![0 as c_char; MAX_NAME + 1];
        let mut dataset = vec![0 as c_char; MAX_NAME + 1];
        // SAFETY: each buffer holds MAX_NAME + 1 bytes; libhdf5 writes at most
        // the size given, NUL included.
        let got = unsafe {
            (
                H5Pget_virtual_filename(dcpl, i, file.as_mut_ptr(), MAX_NAME + 1),
                H5Pget_virtual_dsetname(dcpl, i, dataset.as_mut_ptr(), MAX_NAME + 1),
            )
        };
        if got.0 < 0 || got.1 < 0 {
            return Err(ffi::last_error());
        }
        found.push(ExternalData::VirtualSource {
            file: c_text(&file),
            dataset: c_text(&dataset),
        });
    }
    // A virtual dataset with no mapping names no file (it holds only its fill
    // value), so it is read as any other.
    Ok((found, count as u64))
}

/// A NUL-terminated name from a buffer (the buffer's last byte is always NUL).
fn c_text(buf: &[c_char]) -> String {
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    let bytes: Vec<u8> = buf[..end].iter().map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Refuses to follow external links: a dataset path never leads out of the
/// file that was opened beneath its root.
extern "C" fn refuse_external_link(
    _parent_file: *const c_char,
    _parent_group: *const c_char,
    _child_file: *const c_char,
    _child_object: *const c_char,
    _flags: *mut std::ffi::c_uint,
    _fapl: hdf5_sys::h5i::hid_t,
    _data: *mut std::ffi::c_void,
) -> hdf5_sys::h5::herr_t {
    -1
}

/// The dataset access property list every dataset is opened with: external
/// links refused, and relative external-storage and virtual-source names
/// pointed at `NOWHERE`.
fn access_plist() -> Result<Owned, FormatError> {
    use hdf5_sys::h5p::{
        H5P_CLS_DATASET_ACCESS, H5Pclose, H5Pcreate, H5Pset_efile_prefix, H5Pset_elink_cb,
        H5Pset_virtual_prefix,
    };
    let nowhere = CString::new(NOWHERE).expect("no NUL");
    // SAFETY: creating a property list of a registered class.
    let dapl = Owned::new(unsafe { H5Pcreate(*H5P_CLS_DATASET_ACCESS) }, H5Pclose)?;
    // SAFETY: valid plist; the callback needs no data; libhdf5 copies the
    // prefixes into the list.
    unsafe {
        ffi::check(H5Pset_elink_cb(
            dapl.id,
            Some(refuse_external_link),
            std::ptr::null_mut(),
        ))?;
        ffi::check(H5Pset_efile_prefix(dapl.id, nowhere.as_ptr()))?;
        ffi::check(H5Pset_virtual_prefix(dapl.id, nowhere.as_ptr()))?;
    }
    Ok(dapl)
}

/// Opens the dataset `name` relative to the location `loc` with
/// `access_plist` (callers hold the lock). Opening reads the dataset's header
/// only: no external-storage file or virtual source is touched.
pub(super) fn open_dataset(
    loc: hdf5_sys::h5i::hid_t,
    name: &CStr,
) -> Result<hdf5::Dataset, FormatError> {
    let dapl = access_plist()?;
    // SAFETY: a valid location id and a NUL-terminated name.
    let id = unsafe { hdf5_sys::h5d::H5Dopen2(loc, name.as_ptr(), dapl.id) };
    if id < 0 {
        return Err(ffi::last_error());
    }
    // SAFETY: a fresh dataset id, owned by the handle from here on.
    unsafe { hdf5::from_id(id) }.map_err(ffi::corrupt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_each_route_and_target() {
        let targets = [
            ExternalData::Storage {
                file: "/home/u/.ssh/id_rsa".into(),
                offset: 0,
                size: Some(40),
            },
            ExternalData::VirtualSource {
                file: "../other.h5".into(),
                dataset: "/data".into(),
            },
        ];
        let why = refusal("/ext", &targets, 5);
        assert!(
            why.starts_with("'/ext' keeps its data outside this file ("),
            "{why}"
        );
        assert!(
            why.contains("external storage → /home/u/.ssh/id_rsa, "),
            "{why}"
        );
        assert!(
            why.contains("virtual dataset → ../other.h5:/data, and 3 more)"),
            "{why}"
        );
    }
}
