//! Filters libhdf5 lacks, registered in every process that reads HDF5 (the
//! server when it reads in-process, and each worker), and the folders its
//! plugins are loaded from.
//!
//! - LZF (32000): h5py's own filter, decoded by `lzf` (quarry's decoder);
//! - Zstandard (32015, the id hdf5plugin registers), decoded by the `zstd` crate.
//!
//! Both only decode: quarry never writes HDF5. Each runs at the C boundary
//! under `catch_quietly` (a panic becomes a failed chunk, never an unwind into
//! libhdf5), and its output is bounded: by the chunk size the writer recorded
//! in the filter's settings (LZF) or the frame header (Zstandard), and never
//! past `MAX_CHUNK_BYTES`, so a small chunk cannot inflate into the reader's
//! memory.
//!
//! Other compressors come as libhdf5 plugins (Debian's `hdf5-filter-plugin`:
//! LZ4, BZip2; `hdf5-filter-plugin-blosc-serial`: Blosc). libhdf5 would also
//! load any library in the folders `HDF5_PLUGIN_PATH` names; quarry replaces
//! that list with the system's plugin folders (`plugin_dirs`), so nothing
//! in a data root, or anywhere else the environment points, is ever loaded.

pub mod lzf;

use std::ffi::{CStr, CString, c_uint, c_void};
use std::io::Read;

use hdf5_sys::h5z::{H5Z_CLASS_T_VERS, H5Z_FLAG_REVERSE, H5Z_class2_t, H5Z_filter_t, H5Zregister};

/// h5py's LZF filter id, as registered with The HDF Group.
pub(crate) const LZF_ID: H5Z_filter_t = 32000;
/// The Zstandard filter id, as registered with The HDF Group.
pub(crate) const ZSTD_ID: H5Z_filter_t = 32015;

/// The most bytes one chunk may decode to: 1 GiB, the default memory of a
/// worker. HDF5 allows chunks up to 4 GiB; h5py's automatic chunks stay
/// under 1 MiB.
pub(crate) const MAX_CHUNK_BYTES: usize = 1 << 30;

/// Registers quarry's filters and sets the plugin folders. Called once per
/// process, before the first use of libhdf5; takes the library's lock.
pub(super) fn register() {
    let _only_caller = hdf5_sys::LOCK.lock();
    // SAFETY: initialising the library is idempotent.
    unsafe { hdf5_sys::h5::H5open() };
    for (id, name, filter) in [
        (LZF_ID, c"lzf", lzf_filter as FilterFn),
        (ZSTD_ID, c"zstd", zstd_filter as FilterFn),
    ] {
        register_one(id, name, filter);
    }
    set_plugin_dirs(&plugin_dirs());
}

type FilterFn = unsafe extern "C" fn(
    c_uint,
    usize,
    *const c_uint,
    usize,
    *mut usize,
    *mut *mut c_void,
) -> usize;

fn register_one(id: H5Z_filter_t, name: &'static CStr, filter: FilterFn) {
    let class = H5Z_class2_t {
        version: H5Z_CLASS_T_VERS as _,
        id,
        encoder_present: 0,
        decoder_present: 1,
        name: name.as_ptr(),
        can_apply: None,
        set_local: None,
        filter: Some(filter),
    };
    // SAFETY: a valid class (libhdf5 copies it; the name is static); the
    // lock is held. A failure leaves the filter missing, which a read reports
    // as `unsupported_filter`.
    unsafe { H5Zregister((&raw const class).cast()) };
}

/// The system's libhdf5 plugin folders that exist: Debian's (multiarch) and
/// The HDF Group's default.
pub(crate) fn plugin_dirs() -> Vec<String> {
    let arch = std::env::consts::ARCH;
    [
        format!("/usr/lib/{arch}-linux-gnu/hdf5/serial/plugins"),
        format!("/usr/lib/{arch}-linux-gnu/hdf5/plugins"),
        "/usr/local/hdf5/lib/plugin".to_string(),
    ]
    .into_iter()
    .filter(|d| std::path::Path::new(d).is_dir())
    .collect()
}

/// Replaces libhdf5's plugin search list (read from `HDF5_PLUGIN_PATH` or
/// its built-in default) with `dirs`.
fn set_plugin_dirs(dirs: &[String]) {
    use hdf5_sys::h5pl::{H5PLappend, H5PLremove, H5PLsize};
    let mut count: c_uint = 0;
    // SAFETY: plain calls on libhdf5's path table; the lock is held.
    unsafe {
        if H5PLsize(&mut count) >= 0 {
            for _ in 0..count {
                H5PLremove(0);
            }
        }
        for dir in dirs {
            if let Ok(dir) = CString::new(dir.as_str()) {
                H5PLappend(dir.as_ptr());
            }
        }
    }
}

/// The LZF filter. Its settings, as h5py writes them, are the filter
/// version, the LZF version and the chunk's size in bytes.
unsafe extern "C" fn lzf_filter(
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    // SAFETY: libhdf5 passes `cd_nelmts` settings at `cd_values`.
    let recorded = unsafe { setting(cd_nelmts, cd_values, 2) };
    let limit = match recorded {
        Some(n) if n > 0 => (n as usize).min(MAX_CHUNK_BYTES),
        _ => MAX_CHUNK_BYTES,
    };
    // SAFETY: the buffer arguments are libhdf5's, passed on unchanged.
    unsafe {
        decode_in_place(flags, nbytes, buf_size, buf, |input| {
            lzf::decompress(input, limit).ok()
        })
    }
}

/// The Zstandard filter: each chunk is one or more Zstandard frames.
unsafe extern "C" fn zstd_filter(
    flags: c_uint,
    _cd_nelmts: usize,
    _cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    // SAFETY: the buffer arguments are libhdf5's, passed on unchanged.
    unsafe { decode_in_place(flags, nbytes, buf_size, buf, zstd_decompress) }
}

/// Decodes Zstandard frames into at most the size the first frame states
/// (when it states one) and never more than `MAX_CHUNK_BYTES`.
pub(crate) fn zstd_decompress(input: &[u8]) -> Option<Vec<u8>> {
    let stated = zstd::zstd_safe::get_frame_content_size(input)
        .ok()
        .flatten();
    let limit = stated.map_or(MAX_CHUNK_BYTES, |n| {
        usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(MAX_CHUNK_BYTES)
    });
    let decoder = zstd::stream::read::Decoder::with_buffer(input).ok()?;
    let mut out = Vec::with_capacity(limit.min(input.len().saturating_mul(8)));
    decoder.take(limit as u64 + 1).read_to_end(&mut out).ok()?;
    (out.len() <= limit).then_some(out)
}

/// The `index`th setting, when there is one.
unsafe fn setting(cd_nelmts: usize, cd_values: *const c_uint, index: usize) -> Option<c_uint> {
    if cd_values.is_null() || index >= cd_nelmts {
        return None;
    }
    // SAFETY: `index` is below the count libhdf5 gave.
    Some(unsafe { *cd_values.add(index) })
}

/// The part every decoding filter shares: `decode` turns the chunk's `nbytes`
/// bytes into its plain bytes, which replace libhdf5's buffer. Returns the
/// new length, or 0 (libhdf5's "failed") when asked to encode, when
/// `decode` fails or panics, or when memory cannot be had.
unsafe fn decode_in_place(
    flags: c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
    decode: impl FnOnce(&[u8]) -> Option<Vec<u8>>,
) -> usize {
    if flags & H5Z_FLAG_REVERSE == 0 || buf.is_null() || buf_size.is_null() {
        return 0;
    }
    // SAFETY: libhdf5 hands a buffer of `*buf_size` bytes holding `nbytes`.
    let input = unsafe {
        if (*buf).is_null() || nbytes > *buf_size {
            return 0;
        }
        std::slice::from_raw_parts((*buf).cast::<u8>(), nbytes)
    };
    let Ok(Some(plain)) = quarry_format_error::panics::catch_quietly(|| decode(input)) else {
        return 0;
    };
    if plain.is_empty() {
        return 0;
    }
    // The buffer must come from libhdf5's allocator: the library frees it.
    // SAFETY: allocating and filling `plain.len()` bytes, then freeing the old
    // buffer, which libhdf5 allocated and hands over.
    unsafe {
        let out = hdf5_sys::h5::H5allocate_memory(plain.len(), 0);
        if out.is_null() {
            return 0;
        }
        std::ptr::copy_nonoverlapping(plain.as_ptr(), out.cast::<u8>(), plain.len());
        hdf5_sys::h5::H5free_memory(*buf);
        *buf = out;
        *buf_size = plain.len();
    }
    plain.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_output_is_bounded_by_the_frame_and_the_cap() {
        let plain = vec![7u8; 100_000];
        let frame = zstd::bulk::compress(&plain, 3).unwrap();
        assert_eq!(zstd_decompress(&frame).unwrap(), plain);
        // A streamed frame states no size: decoded up to the cap.
        let mut streamed = Vec::new();
        {
            let mut enc = zstd::stream::write::Encoder::new(&mut streamed, 3).unwrap();
            std::io::Write::write_all(&mut enc, &plain).unwrap();
            enc.finish().unwrap();
        }
        assert_eq!(zstd_get_size(&streamed), None);
        assert_eq!(zstd_decompress(&streamed).unwrap(), plain);
        assert_eq!(zstd_decompress(b"not zstd"), None);
        // Two frames where the first states 10 bytes: more is refused.
        let mut two = zstd::bulk::compress(&[1u8; 10], 3).unwrap();
        two.extend(zstd::bulk::compress(&[2u8; 10], 3).unwrap());
        assert_eq!(zstd_decompress(&two), None);
    }

    /// In this process (no worker), as the library's tests and a helper-less
    /// program read: LZF, Zstandard and a Debian plugin give h5py's values
    /// (tests/fixtures/hdf5/filters.json, scripts/fixtures/hdf5_filters.py).
    #[test]
    fn filters_work_in_process() {
        use crate::H5File;
        use crate::slice::Selection;
        let repo = std::path::Path::new(crate::REPO);
        let expected: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(repo.join("tests/fixtures/hdf5/filters.json")).unwrap(),
        )
        .unwrap();
        let file = std::fs::File::open(repo.join("tests/data/hdf5/filters.h5")).unwrap();
        let h5 = H5File::open(file).unwrap();
        for path in ["/lzf/counts", "/zstd/counts", "/lz4/counts"] {
            let ds = h5.dataset(path).unwrap();
            let all = Selection::all(ds.shape.as_deref().unwrap());
            assert_eq!(
                ds.read(&all).unwrap().data,
                expected["values"]["counts"],
                "{path}"
            );
        }
    }

    fn zstd_get_size(input: &[u8]) -> Option<u64> {
        zstd::zstd_safe::get_frame_content_size(input)
            .ok()
            .flatten()
    }
}
