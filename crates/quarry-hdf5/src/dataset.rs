//! What the catalog keeps of a dataset: shape, maximum shape, type, layout,
//! chunks, filters with their settings, fill value, sizes and attributes.

use hdf5::datatype::ByteOrder;
use hdf5::{Dataset, Datatype};
use serde::{Deserialize, Serialize};

use super::buffer::Buffer;
use super::ffi::{self, locked};
use super::outside::{self, ExternalData};
use super::types::DType;
use super::{H5File, attributes};
use crate::FormatError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetInfo {
    /// `None` for an empty (null) dataspace; `[]` for a scalar.
    pub shape: Option<Vec<u64>>,
    /// Per axis, `None` when unlimited.
    pub maxshape: Vec<Option<u64>>,
    pub dtype: DType,
    /// `compact`, `contiguous`, `chunked`, `virtual`, or `external_storage`
    /// (contiguous data in raw files the dataset names).
    pub layout: String,
    pub chunks: Option<Vec<u64>>,
    pub filters: Vec<Filter>,
    /// The fill value as JSON text, when one is defined.
    pub fill_value: Option<String>,
    /// Bytes the data takes in the file (after compression).
    pub storage_size: u64,
    /// Bytes of the data uncompressed: elements times the element size.
    pub logical_size: u64,
    pub attributes: Vec<attributes::Attribute>,
    /// The files other than its own that hold the dataset's data (external
    /// storage, virtual dataset sources): at most `outside::MAX_TARGETS`.
    pub external_data: Vec<ExternalData>,
    /// How many such files the dataset names in all; quarry reads no data of
    /// a dataset that names any.
    pub external_data_total: u64,
    /// For a chunked dataset, how many of its chunks are written (allocated in
    /// the file); the others read as the fill value. `None` when not chunked.
    pub chunks_written: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    pub id: i32,
    /// h5py's name for the filters it knows (`gzip`, `shuffle`, ...), else the
    /// name the file gives.
    pub name: String,
    /// The filter's client data (for gzip, the level).
    pub settings: Vec<u32>,
}

impl DatasetInfo {
    /// How many chunks the dataset's current extent spans (`None`: not chunked).
    pub fn chunks_in_extent(&self) -> Option<u64> {
        let chunks = self.chunks.as_ref()?;
        let shape = self.shape.as_ref()?;
        Some(
            shape
                .iter()
                .zip(chunks)
                .map(|(&n, &c)| n.div_ceil(c.max(1)))
                .product(),
        )
    }

    /// Why reading the dataset (at `path`) is refused: its data lies in other
    /// files.
    pub fn refusal(&self, path: &str) -> Option<String> {
        (self.external_data_total > 0)
            .then(|| outside::refusal(path, &self.external_data, self.external_data_total))
    }

    /// h5py's `compression`: the compressing filter, if any.
    pub fn compression(&self) -> Option<&Filter> {
        self.filters
            .iter()
            .find(|f| matches!(f.name.as_str(), "gzip" | "lzf" | "szip") || f.id >= 256)
    }
}

/// Our type description of a libhdf5 type.
pub(super) fn dtype_of(t: &Datatype) -> DType {
    match t.to_descriptor() {
        Ok(d) => DType::from_descriptor(&d, t.byte_order() == ByteOrder::BigEndian),
        Err(_) => DType::Unsupported(class_name(t).into()),
    }
}

fn class_name(t: &Datatype) -> &'static str {
    use hdf5_sys::h5t::{H5T_class_t::*, H5Tget_class};
    // SAFETY: a valid datatype id; callers hold the lock.
    match unsafe { H5Tget_class(t.id()) } {
        H5T_TIME => "time",
        H5T_BITFIELD => "bitfield",
        H5T_OPAQUE => "opaque",
        H5T_REFERENCE => "reference",
        H5T_FLOAT => "float (unusual size)",
        H5T_INTEGER => "integer (unusual size)",
        _ => "unknown",
    }
}

fn filter_name(id: i32, given: &str) -> String {
    match id {
        1 => "gzip".into(),
        2 => "shuffle".into(),
        3 => "fletcher32".into(),
        4 => "szip".into(),
        5 => "nbit".into(),
        6 => "scaleoffset".into(),
        32000 => "lzf".into(),
        // hdf5plugin's names for the filters registered with The HDF Group.
        307 => "bzip2".into(),
        32001 => "blosc".into(),
        32004 => "lz4".into(),
        32008 => "bitshuffle".into(),
        32015 => "zstd".into(),
        _ if !given.is_empty() => given.into(),
        _ => format!("filter {id}"),
    }
}

pub(super) fn describe(_file: &H5File, ds: &Dataset) -> Result<DatasetInfo, FormatError> {
    locked(|| {
        // The creation list first: the dataspace of a virtual dataset is not
        // asked of the dataset (with an unlimited mapping, libhdf5 would open
        // its sources to learn the extent).
        let dcpl = ds.dcpl().map_err(ffi::corrupt)?;
        let (external_data, external_data_total) = outside::targets_of(dcpl.id())?;
        let layout = ds.layout();
        let space = if layout == hdf5::dataset::Layout::Virtual {
            virtual_space(ds, dcpl.id())?
        } else {
            ds.space().map_err(ffi::corrupt)?
        };
        let is_null = {
            use hdf5_sys::h5s::{H5S_class_t, H5Sget_simple_extent_type};
            // SAFETY: a valid dataspace id.
            unsafe { H5Sget_simple_extent_type(space.id()) == H5S_class_t::H5S_NULL }
        };
        let shape: Vec<u64> = space.shape().into_iter().map(|n| n as u64).collect();
        let maxshape = space
            .maxdims()
            .into_iter()
            .map(|m| m.map(|n| n as u64))
            .collect();
        let file_type = ds.dtype().map_err(ffi::corrupt)?;
        let dtype = dtype_of(&file_type);
        let elements: u64 = if is_null { 0 } else { shape.iter().product() };
        let external_storage = external_data
            .iter()
            .any(|t| matches!(t, ExternalData::Storage { .. }));
        let chunks = ds
            .chunk()
            .map(|c| c.into_iter().map(|n| n as u64).collect::<Vec<u64>>());
        let chunks_written = chunks.as_ref().and_then(|_| written_chunks(ds));
        Ok(DatasetInfo {
            layout: if external_storage {
                "external_storage".into()
            } else {
                format!("{layout:?}").to_lowercase()
            },
            chunks,
            chunks_written,
            filters: filters(dcpl.id())?,
            fill_value: fill_value(dcpl.id(), &file_type),
            storage_size: ds.storage_size(),
            logical_size: elements.saturating_mul(file_type.size() as u64),
            attributes: attributes::of(ds)?,
            shape: (!is_null).then_some(shape),
            maxshape,
            dtype,
            external_data,
            external_data_total,
        })
    })
}

/// How many chunks of a chunked dataset are written in the file, from its
/// chunk index (read once, at index time); `None` when libhdf5 cannot say.
fn written_chunks(ds: &Dataset) -> Option<u64> {
    // libhdf5 1.10 refuses H5S_ALL here; the dataset's own dataspace counts
    // every chunk (the selection is not consulted).
    let space = ds.space().ok()?;
    let mut count: hdf5_sys::h5::hsize_t = 0;
    // SAFETY: valid dataset and dataspace ids, an out-pointer to a local;
    // callers hold the lock.
    let status = unsafe { hdf5_sys::h5d::H5Dget_num_chunks(ds.id(), space.id(), &mut count) };
    (status >= 0).then_some(count)
}

/// A virtual dataset's dataspace as its file states it (the extent of its
/// first mapping's virtual selection), learnt without opening any source; a
/// virtual dataset with no mapping has no source, and is asked directly.
fn virtual_space(ds: &Dataset, dcpl: hdf5_sys::h5i::hid_t) -> Result<hdf5::Dataspace, FormatError> {
    use hdf5_sys::h5p::{H5Pget_virtual_count, H5Pget_virtual_vspace};
    let mut count: usize = 0;
    // SAFETY: a valid dataset creation property list, out-pointer to a local.
    ffi::check(unsafe { H5Pget_virtual_count(dcpl, &mut count) })?;
    if count == 0 {
        return ds.space().map_err(ffi::corrupt);
    }
    // SAFETY: mapping 0 exists; libhdf5 returns a new dataspace id.
    let id = unsafe { H5Pget_virtual_vspace(dcpl, 0) };
    if id < 0 {
        return Err(ffi::last_error());
    }
    // SAFETY: a fresh dataspace id, owned by the handle from here on.
    unsafe { hdf5::from_id(id) }.map_err(ffi::corrupt)
}

pub(super) fn filters(dcpl: hdf5_sys::h5i::hid_t) -> Result<Vec<Filter>, FormatError> {
    use hdf5_sys::h5p::{H5Pget_filter2, H5Pget_nfilters};
    // SAFETY: a valid dataset creation property list.
    let n = unsafe { H5Pget_nfilters(dcpl) };
    if n < 0 {
        return Err(ffi::last_error());
    }
    let mut out = Vec::new();
    for i in 0..n as u32 {
        let mut flags = 0u32;
        let mut settings = [0u32; 32];
        let mut count: usize = settings.len();
        let mut name = [0 as std::ffi::c_char; 256];
        let mut config = 0u32;
        // SAFETY: every out-pointer points to a local of the size given.
        let id = unsafe {
            H5Pget_filter2(
                dcpl,
                i,
                &mut flags,
                &mut count,
                settings.as_mut_ptr(),
                name.len(),
                name.as_mut_ptr(),
                &mut config,
            )
        };
        if id < 0 {
            return Err(ffi::last_error());
        }
        // SAFETY: libhdf5 NUL-terminates the name within the buffer.
        let given = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy();
        out.push(Filter {
            id,
            name: filter_name(id, &given),
            settings: settings[..count.min(settings.len())].to_vec(),
        });
    }
    Ok(out)
}

/// The dataset's fill value as JSON text (the default one is zero, as h5py shows it).
fn fill_value(dcpl: hdf5_sys::h5i::hid_t, file_type: &Datatype) -> Option<String> {
    use hdf5_sys::h5d::H5D_fill_value_t;
    use hdf5_sys::h5p::{H5Pfill_value_defined, H5Pget_fill_value};
    let mut status = H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED;
    // SAFETY: valid plist, out-pointer to a local.
    if unsafe { H5Pfill_value_defined(dcpl, &mut status) } < 0
        || status == H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED
    {
        return None;
    }
    let desc = file_type.to_descriptor().ok()?;
    let mut buf = Buffer::new(&desc, 1).ok()?;
    // SAFETY: `buf` holds one element of the memory type.
    if unsafe { H5Pget_fill_value(dcpl, buf.memtype_id(), buf.as_mut_ptr()) } < 0 {
        return None;
    }
    buf.filled_by_library();
    let (values, _) = buf.decode_all();
    values.into_iter().next().map(|v| v.to_string())
}
