//! An HDF5 filter no build has, for tests of `unsupported_filter`.

use std::path::Path;

/// A filter id from the range The HDF Group keeps for testing (256-511): no
/// build of libhdf5 or plugin has it.
const TEST_FILTER: hdf5_sys::h5z::H5Z_filter_t = 333;
const TEST_FILTER_NAME: &std::ffi::CStr = c"quarry-test-identity";

/// The test filter: leaves the chunk as it is.
unsafe extern "C" fn identity(
    _flags: std::ffi::c_uint,
    _cd_nelmts: usize,
    _cd_values: *const std::ffi::c_uint,
    nbytes: usize,
    _buf_size: *mut usize,
    _buf: *mut *mut std::ffi::c_void,
) -> usize {
    nbytes
}

/// Writes `file` holding `/filtered`: 0.0 .. 99.0 in chunks of 10, each chunk
/// passed through `TEST_FILTER`, registered in this process only.
pub fn write_with_test_filter(file: &Path) {
    use hdf5_sys::h5z::{H5Z_CLASS_T_VERS, H5Z_class2_t, H5Zregister};
    // libhdf5 copies the class; the name is static.
    let class = H5Z_class2_t {
        version: H5Z_CLASS_T_VERS as _,
        id: TEST_FILTER,
        encoder_present: 1,
        decoder_present: 1,
        name: TEST_FILTER_NAME.as_ptr(),
        can_apply: None,
        set_local: None,
        filter: Some(identity),
    };
    {
        let _only_caller = hdf5_sys::LOCK.lock();
        // SAFETY: a valid filter class; the lock is held.
        assert!(unsafe { H5Zregister((&raw const class).cast()) } >= 0);
    }
    let values: Vec<f64> = (0..100).map(f64::from).collect();
    let f = hdf5::File::create(file).unwrap();
    f.new_dataset_builder()
        .with_data(&values)
        .chunk(10)
        .add_filter(TEST_FILTER, &[])
        .create("filtered")
        .unwrap();
}
