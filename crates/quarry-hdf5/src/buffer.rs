//! Memory for elements libhdf5 reads, in the native layout of a type, and
//! the release of what variable-length elements point to.

use hdf5::Datatype;
use hdf5::types::TypeDescriptor;
use serde_json::Value;

use super::ffi::{self, locked};
use super::types::{self, DecodeNotes};
use crate::FormatError;

/// Most bytes one read may take in memory.
pub const MAX_READ_BYTES: u64 = 1 << 31;

pub(super) struct Buffer {
    desc: TypeDescriptor,
    memtype: Datatype,
    bytes: Vec<u8>,
    len: usize,
    /// Set once libhdf5 wrote into `bytes`: from then on variable-length
    /// elements hold pointers to memory it allocated.
    filled: bool,
}

fn has_varlen(d: &TypeDescriptor) -> bool {
    match d {
        TypeDescriptor::VarLenArray(_)
        | TypeDescriptor::VarLenAscii
        | TypeDescriptor::VarLenUnicode => true,
        TypeDescriptor::FixedArray(base, _) => has_varlen(base),
        TypeDescriptor::Compound(c) => c.fields.iter().any(|f| has_varlen(&f.ty)),
        _ => false,
    }
}

impl Buffer {
    /// Room for `len` elements of `desc`.
    pub fn new(desc: &TypeDescriptor, len: usize) -> Result<Buffer, FormatError> {
        let size = types::mem_size(desc);
        let bytes = (len as u64).saturating_mul(size as u64);
        if bytes > MAX_READ_BYTES {
            return Err(FormatError::Unsupported(format!(
                "reading {len} elements needs {bytes} bytes of memory, over the {MAX_READ_BYTES}-byte limit"
            )));
        }
        let memtype = locked(|| Datatype::from_descriptor(desc)).map_err(ffi::corrupt)?;
        Ok(Buffer {
            desc: desc.clone(),
            memtype,
            bytes: vec![0u8; bytes as usize],
            len,
            filled: false,
        })
    }

    pub fn memtype_id(&self) -> hdf5_sys::h5i::hid_t {
        self.memtype.id()
    }

    pub fn as_mut_ptr(&mut self) -> *mut std::ffi::c_void {
        self.bytes.as_mut_ptr().cast()
    }

    /// Marks the buffer as written by libhdf5 (its pointers are to be freed).
    pub fn filled_by_library(&mut self) {
        self.filled = true;
    }

    /// Every element decoded, in order.
    pub fn decode_all(&self) -> (Vec<Value>, DecodeNotes) {
        let mut notes = DecodeNotes::default();
        if !self.filled {
            return (Vec::new(), notes);
        }
        let step = types::mem_size(&self.desc).max(1);
        let values = (0..self.len)
            // SAFETY: the buffer was filled by a read of this very type.
            .map(|i| unsafe { types::decode(&self.desc, &self.bytes[i * step..], &mut notes) })
            .collect();
        (values, notes)
    }

    /// The elements' bytes, for types without variable-length parts (whose
    /// bytes would be pointers); `None` for those.
    pub fn into_bytes(mut self) -> Option<Vec<u8>> {
        if has_varlen(&self.desc) {
            return None;
        }
        Some(std::mem::take(&mut self.bytes))
    }

    /// Every element as a number; `None` for a type that is not numeric.
    pub fn numbers(&self) -> Option<Vec<f64>> {
        let step = types::mem_size(&self.desc).max(1);
        (0..self.len)
            .map(|i| types::as_f64(&self.desc, &self.bytes[i * step..]))
            .collect()
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if !self.filled || self.len == 0 || !has_varlen(&self.desc) {
            return;
        }
        locked(|| {
            let dims = [self.len as u64];
            // SAFETY: a one-dimensional space of the buffer's length; the
            // buffer holds elements of `memtype` written by libhdf5, whose
            // variable-length parts libhdf5 frees here.
            unsafe {
                let space = hdf5_sys::h5s::H5Screate_simple(1, dims.as_ptr(), std::ptr::null());
                if space >= 0 {
                    #[allow(deprecated)]
                    hdf5_sys::h5d::H5Dvlen_reclaim(
                        self.memtype.id(),
                        space,
                        hdf5_sys::h5p::H5P_DEFAULT,
                        self.bytes.as_mut_ptr().cast(),
                    );
                    hdf5_sys::h5s::H5Sclose(space);
                }
            }
        });
    }
}
