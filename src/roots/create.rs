//! Writing a new file beneath a folder, streamed: the file is created under a
//! temporary name inside its destination folder and renamed into place only
//! when it is complete, so a reader never sees half a file and a failed or
//! cancelled write leaves nothing behind.
//!
//! Every folder on the way is resolved from a handle on the base folder with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` and created with `mkdirat`
//! when missing, so a link anywhere on the path (or one swapped in while the
//! file is written) cannot lead the write outside the base folder.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// Why a file could not be created beneath its folder.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// `..`, an empty component, or a link on the way (or at the destination).
    #[error("the path leads outside the folder, or through a link")]
    Escapes,
    #[error(transparent)]
    Io(io::Error),
}

impl CreateError {
    fn from_io(e: io::Error) -> CreateError {
        match e.raw_os_error() {
            Some(libc::EXDEV) | Some(libc::ELOOP) => CreateError::Escapes,
            _ => CreateError::Io(e),
        }
    }
}

/// A file being written under a temporary name; `commit` renames it into
/// place, dropping it uncommitted removes it.
#[derive(Debug)]
pub struct PendingFile {
    file: Option<File>,
    /// Bytes written, and how far the system was asked to start writing
    /// them to disk (`WRITEBACK_STEP` at a time).
    written: u64,
    writeback_from: u64,
    #[cfg(target_os = "linux")]
    dir: std::os::fd::OwnedFd,
    temporary: std::ffi::CString,
    target: std::ffi::CString,
}

/// Starts the file `rel` (`/`-separated, relative to `base`, a canonical
/// folder), creating missing folders on the way (mode 0700).
#[cfg(target_os = "linux")]
pub fn create_pending(base: &Path, rel: &str) -> Result<PendingFile, CreateError> {
    use super::open::{c_path, open_dir, openat2_create};
    use std::os::fd::AsRawFd;
    let parts: Vec<&str> = rel.split('/').collect();
    if parts
        .iter()
        .any(|c| c.is_empty() || *c == "." || *c == "..")
    {
        return Err(CreateError::Escapes);
    }
    let (name, folders) = parts.split_last().ok_or(CreateError::Escapes)?;
    let mut dir = open_dir(base).map_err(CreateError::Io)?;
    for folder in folders {
        let c = c_path(Path::new(folder)).map_err(CreateError::Io)?;
        // SAFETY: `c` is NUL-terminated; `dir` is an open directory handle.
        if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o700) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(CreateError::from_io(e));
            }
        }
        dir = open_subdir(&dir, folder).map_err(CreateError::from_io)?;
    }
    if is_link(&dir, name)? {
        return Err(CreateError::Escapes);
    }
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temporary = format!(".{name}.{}.{n}.tmp", std::process::id());
    let file = openat2_create(&dir, &temporary).map_err(CreateError::from_io)?;
    Ok(PendingFile {
        file: Some(file),
        written: 0,
        writeback_from: 0,
        temporary: c_path(Path::new(&temporary)).map_err(CreateError::Io)?,
        target: c_path(Path::new(name)).map_err(CreateError::Io)?,
        dir,
    })
}

#[cfg(not(target_os = "linux"))]
pub fn create_pending(_base: &Path, _rel: &str) -> Result<PendingFile, CreateError> {
    Err(CreateError::Io(io::Error::new(
        io::ErrorKind::Unsupported,
        "writing beneath a folder needs Linux",
    )))
}

#[cfg(target_os = "linux")]
fn open_subdir(dir: &std::os::fd::OwnedFd, name: &str) -> io::Result<std::os::fd::OwnedFd> {
    let flags = libc::O_PATH | libc::O_DIRECTORY;
    let resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    super::open::openat2(dir, name, flags, 0, resolve)
}

/// Whether `name` in `dir` is a symbolic link (a missing name is not).
#[cfg(target_os = "linux")]
fn is_link(dir: &std::os::fd::OwnedFd, name: &str) -> Result<bool, CreateError> {
    use std::os::fd::AsRawFd;
    let c = super::open::c_path(Path::new(name)).map_err(CreateError::Io)?;
    // SAFETY: stat is plain data, filled by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers; AT_SYMLINK_NOFOLLOW stats the link itself.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOENT) => Ok(false),
            _ => Err(CreateError::Io(e)),
        };
    }
    Ok(st.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

impl PendingFile {
    /// Flushes the file to disk and renames it into place (replacing a file of
    /// that name, never following a link there).
    #[cfg(target_os = "linux")]
    pub fn commit(mut self) -> Result<(), CreateError> {
        use std::os::fd::AsRawFd;
        let file = self.file.take().ok_or(CreateError::Escapes)?;
        file.sync_all().map_err(CreateError::Io)?;
        drop(file);
        let name = self.target.to_string_lossy().into_owned();
        if is_link(&self.dir, &name)? {
            return Err(CreateError::Escapes);
        }
        // SAFETY: both names are single components, NUL-terminated, relative to
        // the same folder handle.
        let rc = unsafe {
            libc::renameat(
                self.dir.as_raw_fd(),
                self.temporary.as_ptr(),
                self.dir.as_raw_fd(),
                self.target.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(CreateError::Io(io::Error::last_os_error()));
        }
        self.temporary = std::ffi::CString::default();
        Ok(())
    }

    #[cfg(not(target_os = "linux"))]
    pub fn commit(self) -> Result<(), CreateError> {
        Err(CreateError::Io(io::Error::new(
            io::ErrorKind::Unsupported,
            "writing beneath a folder needs Linux",
        )))
    }

    /// Asks the system to start writing what was written since the last
    /// request to disk, without waiting for it. Only advice: an error shows
    /// again in `commit`'s flush, which is what guarantees the data.
    fn start_writeback(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(file) = &self.file {
            use std::os::fd::AsRawFd;
            let (from, len) = (self.writeback_from, self.written - self.writeback_from);
            // SAFETY: a range of our own open file; the call only schedules I/O.
            unsafe {
                libc::sync_file_range(
                    file.as_raw_fd(),
                    from as libc::off64_t,
                    len as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                )
            };
        }
        self.writeback_from = self.written;
    }

    fn file(&mut self) -> io::Result<&mut File> {
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("the file was already committed"))
    }
}

/// Bytes written between requests that the system start writing them to
/// disk: `commit`'s flush then waits for the last few megabytes only, the
/// rest having gone to disk while the file was still being written (an
/// 18 MB export spent 9 ms in that flush otherwise).
const WRITEBACK_STEP: u64 = 4 << 20;

impl Write for PendingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file()?.write(buf)?;
        self.written += n as u64;
        if self.written - self.writeback_from >= WRITEBACK_STEP {
            self.start_writeback();
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file()?.flush()
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if !self.temporary.as_bytes().is_empty() {
            use std::os::fd::AsRawFd;
            // SAFETY: removing our own temporary file, by its name in its folder.
            unsafe { libc::unlinkat(self.dir.as_raw_fd(), self.temporary.as_ptr(), 0) };
        }
    }
}
