//! The one door to libhdf5. The library is not thread-safe, so every call made
//! by this module, directly or through the `hdf5` crate, runs under
//! `hdf5_sys::LOCK`: the same re-entrant mutex the crate takes around its own
//! calls, so a raw call of ours and one of the crate's never interleave.
//! Once per process, libhdf5's own error printing is silenced and quarry's
//! filters registered. Its errors come back as `FormatError`s carrying the
//! innermost message of its error stack.

use std::sync::Once;

use crate::FormatError;

static SETUP: Once = Once::new();

/// Runs `f` with exclusive use of libhdf5. The first call of a process also
/// silences the library's error printing and registers quarry's filters.
pub(super) fn locked<R>(f: impl FnOnce() -> R) -> R {
    SETUP.call_once(|| {
        hdf5::silence_errors(true);
        super::filters::register();
    });
    let _only_caller = hdf5_sys::LOCK.lock();
    f()
}

/// A libhdf5 error as the file's error.
pub(super) fn corrupt(e: hdf5::Error) -> FormatError {
    FormatError::Corrupt(format!("HDF5: {e}"))
}

/// Checks a raw call's status (negative means failure).
pub(super) fn check(status: hdf5_sys::h5::herr_t) -> Result<(), FormatError> {
    if status < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

/// An id that libhdf5 must close: closed when dropped.
pub(super) struct Owned {
    pub id: hdf5_sys::h5i::hid_t,
    close: unsafe extern "C" fn(hdf5_sys::h5i::hid_t) -> hdf5_sys::h5::herr_t,
}

impl Owned {
    pub fn new(
        id: hdf5_sys::h5i::hid_t,
        close: unsafe extern "C" fn(hdf5_sys::h5i::hid_t) -> hdf5_sys::h5::herr_t,
    ) -> Result<Owned, FormatError> {
        if id < 0 {
            return Err(last_error());
        }
        Ok(Owned { id, close })
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: `id` is a valid id of the kind `close` closes; callers hold the lock.
        locked(|| unsafe {
            (self.close)(self.id);
        });
    }
}

/// The error libhdf5 just reported.
pub(super) fn last_error() -> FormatError {
    corrupt(hdf5::Error::query().unwrap_or_else(|e| e))
}
