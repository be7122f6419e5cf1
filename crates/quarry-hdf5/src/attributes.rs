//! Attributes of a group or dataset, with their values when small.

use hdf5::Location;
use serde::{Deserialize, Serialize};

use super::buffer::Buffer;
use super::dataset::dtype_of;
use super::ffi::{self, locked};
use super::types::DType;
use crate::FormatError;

/// Largest attribute read, in bytes of memory.
const MAX_VALUE_BYTES: usize = 64 << 10;
/// Longest value text kept; longer text is cut and marked truncated.
pub const MAX_VALUE_CHARS: usize = 1024;
/// Most attributes described per object.
const MAX_ATTRIBUTES: usize = 1000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribute {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    /// The value as JSON text (a scalar, or nested lists); `None` when it was
    /// not read (too large, or a type quarry does not decode).
    pub value: Option<String>,
    /// Whether `value` was cut at `MAX_VALUE_CHARS` (or not read for its size).
    pub truncated: bool,
}

/// The attributes of an object, in name order.
pub(super) fn of(loc: &Location) -> Result<Vec<Attribute>, FormatError> {
    locked(|| {
        let names = loc.attr_names().map_err(ffi::corrupt)?;
        names
            .into_iter()
            .take(MAX_ATTRIBUTES)
            .map(|name| {
                let attr = loc.attr(&name).map_err(ffi::corrupt)?;
                let dtype = attr.dtype().map_err(ffi::corrupt)?;
                let shape: Vec<u64> = attr.shape().into_iter().map(|n| n as u64).collect();
                let (value, truncated) = value_text(&attr, &dtype, &shape);
                Ok(Attribute {
                    name,
                    dtype: dtype_of(&dtype),
                    shape,
                    value,
                    truncated,
                })
            })
            .collect()
    })
}

fn value_text(
    attr: &hdf5::Attribute,
    dtype: &hdf5::Datatype,
    shape: &[u64],
) -> (Option<String>, bool) {
    let Ok(desc) = dtype.to_descriptor() else {
        return (None, false);
    };
    let n: u64 = shape.iter().product();
    if n.saturating_mul(desc.size() as u64) > MAX_VALUE_BYTES as u64 {
        return (None, true);
    }
    let Ok(mut buf) = Buffer::new(&desc, n as usize) else {
        return (None, false);
    };
    // SAFETY: `buf` has room for every element of the attribute in memory layout.
    let status = unsafe { hdf5_sys::h5a::H5Aread(attr.id(), buf.memtype_id(), buf.as_mut_ptr()) };
    if status < 0 {
        return (None, false);
    }
    buf.filled_by_library();
    let (values, _) = buf.decode_all();
    let value = if shape.is_empty() {
        values.into_iter().next().unwrap_or_default()
    } else {
        super::read::nest(values, shape)
    };
    cap(value.to_string())
}

/// Cuts text longer than `MAX_VALUE_CHARS`, at a character boundary.
fn cap(text: String) -> (Option<String>, bool) {
    if text.chars().count() <= MAX_VALUE_CHARS {
        return (Some(text), false);
    }
    (Some(text.chars().take(MAX_VALUE_CHARS).collect()), true)
}
