//! Opening a file beneath its root: the one way quarry turns a root-relative path
//! into an open file.
//!
//! A path checked when a call starts can be changed before the file is opened: a
//! file replaced by a link to `/etc/...`, or a folder on its path replaced by a
//! link out of the root. Checking the path and then opening it by name would follow
//! that link. So the check and the open are one step: on Linux the kernel resolves
//! the path with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` from a handle on
//! the root, and refuses any component that would leave it. Where `openat2` cannot
//! decide (an absolute link inside the root that leads back into it, or a kernel
//! without the call), the file is opened first and its real path is read from the
//! open handle afterwards: the handle pins the file, so no later swap can change
//! what was checked. Either way nothing outside the root is read.
//!
//! Only regular files are opened; the open never blocks on a FIFO and never makes
//! a device its controlling terminal.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// Why a file could not be opened beneath its root.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Some component of the path resolves outside the root (a link leading out).
    #[error("the path leads outside its root")]
    Escapes,
    #[error("no such file")]
    NotFound,
    #[error("not a regular file")]
    NotAFile,
    #[error(transparent)]
    Io(io::Error),
}

impl OpenError {
    fn from_io(e: io::Error) -> OpenError {
        match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::ENOTDIR) => OpenError::NotFound,
            Some(libc::EXDEV) | Some(libc::ELOOP) => OpenError::Escapes,
            _ => OpenError::Io(e),
        }
    }

    /// Whether trying again later may succeed (descriptor or memory exhaustion, an
    /// interrupted call): such an error is never the file's own fault.
    pub fn is_transient(&self) -> bool {
        matches!(self, OpenError::Io(e) if crate::transient::is_transient(e))
    }
}

/// Opens `rel` (a `/`-separated path relative to `root`, without `..`) for
/// reading, refusing anything that resolves outside `root` (a canonical folder).
pub fn open_beneath(root: &Path, rel: &str) -> Result<File, OpenError> {
    if rel.is_empty() || rel.split('/').any(|c| c == "..") {
        return Err(OpenError::NotAFile);
    }
    let file = open_resolved(root, rel)?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    if !meta.is_file() {
        return Err(OpenError::NotAFile);
    }
    clear_nonblocking(&file).map_err(OpenError::Io)?;
    Ok(file)
}

#[cfg(target_os = "linux")]
fn open_resolved(root: &Path, rel: &str) -> Result<File, OpenError> {
    let dir = open_dir(root).map_err(OpenError::from_io)?;
    match openat2_beneath(&dir, rel) {
        Ok(file) => Ok(file),
        // EXDEV: an absolute link, or one that leaves and re-enters the root;
        // ENOSYS / EPERM: no openat2 here (old kernel, seccomp filter). Decide from
        // the opened file's real path instead.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EXDEV | libc::ENOSYS | libc::EPERM)
            ) =>
        {
            open_then_check(root, rel)
        }
        Err(e) => Err(OpenError::from_io(e)),
    }
}

/// Writes `bytes` as the new file `folder/name` beneath `root` (a canonical
/// folder; `folder` and `name` single path components): the folder is created
/// if missing, the bytes go to a temporary file created with
/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, `O_CREAT | O_EXCL`, mode
/// 0600, which is then renamed into place within the folder. A link anywhere on
/// the way is refused, so nothing is ever written outside `root`.
#[cfg(target_os = "linux")]
pub fn create_beneath(root: &Path, folder: &str, name: &str, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let single = |c: &str| !c.is_empty() && c != "." && c != ".." && !c.contains('/');
    if !single(folder) || !single(name) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a single path component",
        ));
    }
    let dir = open_dir(root)?;
    let c_folder = c_path(Path::new(folder))?;
    // SAFETY: `c_folder` is NUL-terminated; `dir` is an open directory handle.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), c_folder.as_ptr(), 0o700) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    let temporary = format!("{folder}/.{name}.{}.tmp", std::process::id());
    let mut file = openat2_create(&dir, &temporary)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    let target = format!("{folder}/{name}");
    let (c_tmp, c_target) = (c_path(Path::new(&temporary))?, c_path(Path::new(&target))?);
    // SAFETY: both paths are NUL-terminated and relative to the same handle;
    // their folder was just resolved beneath the root without links.
    let renamed = written.and_then(|()| {
        let rc = unsafe {
            libc::renameat(
                dir.as_raw_fd(),
                c_tmp.as_ptr(),
                dir.as_raw_fd(),
                c_target.as_ptr(),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    });
    if renamed.is_err() {
        // SAFETY: as above; removing our own temporary file.
        unsafe { libc::unlinkat(dir.as_raw_fd(), c_tmp.as_ptr(), 0) };
    }
    renamed
}

/// openat2(2) of `rel` below `dir` with these flags, mode and resolve rules.
#[cfg(target_os = "linux")]
pub(super) fn openat2(
    dir: &OwnedFd,
    rel: &str,
    flags: i32,
    mode: u64,
    resolve: u64,
) -> io::Result<OwnedFd> {
    let c = c_path(Path::new(rel))?;
    // SAFETY: open_how is plain data; all-zero is its "nothing asked" value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.mode = mode;
    how.resolve = resolve;
    // SAFETY: the pointers are valid for the call; the size is the struct's.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor from openat2(2), owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(target_os = "linux")]
pub(super) fn openat2_create(dir: &OwnedFd, rel: &str) -> io::Result<File> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    let resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    openat2(dir, rel, flags, 0o600, resolve).map(File::from)
}

#[cfg(not(target_os = "linux"))]
pub fn create_beneath(_root: &Path, _folder: &str, _name: &str, _bytes: &[u8]) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "writing beneath a folder needs Linux",
    ))
}

#[cfg(not(target_os = "linux"))]
fn open_resolved(root: &Path, rel: &str) -> Result<File, OpenError> {
    open_then_check(root, rel)
}

#[cfg(target_os = "linux")]
pub(super) fn open_dir(dir: &Path) -> io::Result<OwnedFd> {
    let c = c_path(dir)?;
    // SAFETY: `c` is a NUL-terminated path; the flags ask for a path-only handle.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open(2) and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(target_os = "linux")]
fn openat2_beneath(dir: &OwnedFd, rel: &str) -> io::Result<File> {
    let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY;
    let resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    loop {
        match openat2(dir, rel, flags, 0, resolve) {
            Ok(fd) => return Ok(File::from(fd)),
            // RESOLVE_BENEATH may answer EAGAIN when a rename raced the lookup.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Opens the path (following links), then judges the file actually opened by its
/// real path. Opening does not read: a file found outside is closed unread.
fn open_then_check(root: &Path, rel: &str) -> Result<File, OpenError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(root.join(rel))
        .map_err(OpenError::from_io)?;
    if !opened_inside(root, rel, &file).map_err(OpenError::Io)? {
        return Err(OpenError::Escapes);
    }
    Ok(file)
}

/// Whether the open file lies beneath `root`, judged by where the handle really
/// points (not by its name, which can be changed after the open).
#[cfg(target_os = "linux")]
fn opened_inside(root: &Path, _rel: &str, file: &File) -> io::Result<bool> {
    let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
    Ok(real.starts_with(root))
}

/// Without a handle-to-path call every Unix has: the name's canonical form must lie
/// beneath the root and still be the very file that is open (same device and inode).
#[cfg(not(target_os = "linux"))]
fn opened_inside(root: &Path, rel: &str, file: &File) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let real = root.join(rel).canonicalize()?;
    let (named, open) = (std::fs::metadata(&real)?, file.metadata()?);
    Ok(real.starts_with(root) && named.dev() == open.dev() && named.ino() == open.ino())
}

fn clear_nonblocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function's caller owns.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(super) fn c_path(p: &Path) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte in a path"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    struct Tree {
        _tmp: tempfile::TempDir,
        root: std::path::PathBuf,
        outside: std::path::PathBuf,
    }

    fn tree() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("sub/in.txt"), "inside").unwrap();
        std::fs::write(outside.join("secret.txt"), "TOPSECRET").unwrap();
        Tree {
            _tmp: tmp,
            root,
            outside,
        }
    }

    fn read(root: &Path, rel: &str) -> Result<String, OpenError> {
        let mut s = String::new();
        open_beneath(root, rel)?.read_to_string(&mut s).unwrap();
        Ok(s)
    }

    #[test]
    fn files_inside_open_and_links_inside_are_followed() {
        let t = tree();
        assert_eq!(read(&t.root, "sub/in.txt").unwrap(), "inside");
        symlink("sub/in.txt", t.root.join("rel-link")).unwrap();
        assert_eq!(read(&t.root, "rel-link").unwrap(), "inside");
        // An absolute link back into the root: openat2 refuses it, the fallback
        // judges the opened file and accepts it.
        symlink(t.root.join("sub/in.txt"), t.root.join("abs-link")).unwrap();
        assert_eq!(read(&t.root, "abs-link").unwrap(), "inside");
        symlink("sub", t.root.join("dir-link")).unwrap();
        assert_eq!(read(&t.root, "dir-link/in.txt").unwrap(), "inside");
    }

    #[test]
    fn links_leading_out_are_refused_at_every_component() {
        let t = tree();
        symlink(t.outside.join("secret.txt"), t.root.join("abs")).unwrap();
        symlink("../outside/secret.txt", t.root.join("rel")).unwrap();
        symlink(&t.outside, t.root.join("dir")).unwrap();
        symlink("../../outside", t.root.join("sub/up")).unwrap();
        for rel in ["abs", "rel", "dir/secret.txt", "sub/up/secret.txt"] {
            assert!(
                matches!(read(&t.root, rel), Err(OpenError::Escapes)),
                "{rel}"
            );
        }
    }

    #[test]
    fn a_file_swapped_for_a_link_after_indexing_is_refused() {
        let t = tree();
        assert!(read(&t.root, "sub/in.txt").is_ok());
        // The file becomes a link out; then its folder becomes one.
        std::fs::remove_file(t.root.join("sub/in.txt")).unwrap();
        symlink(t.outside.join("secret.txt"), t.root.join("sub/in.txt")).unwrap();
        assert!(matches!(
            read(&t.root, "sub/in.txt"),
            Err(OpenError::Escapes)
        ));
        std::fs::remove_dir_all(t.root.join("sub")).unwrap();
        std::fs::write(t.outside.join("in.txt"), "TOPSECRET").unwrap();
        symlink(&t.outside, t.root.join("sub")).unwrap();
        assert!(matches!(
            read(&t.root, "sub/in.txt"),
            Err(OpenError::Escapes)
        ));
    }

    #[test]
    fn only_regular_files_open_and_fifos_do_not_block() {
        let t = tree();
        assert!(matches!(
            open_beneath(&t.root, "sub"),
            Err(OpenError::NotAFile)
        ));
        assert!(matches!(
            open_beneath(&t.root, ""),
            Err(OpenError::NotAFile)
        ));
        assert!(matches!(
            open_beneath(&t.root, "nope"),
            Err(OpenError::NotFound)
        ));
        assert!(matches!(
            open_beneath(&t.root, "sub/in.txt/x"),
            Err(OpenError::NotFound)
        ));
        let fifo = c_path(&t.root.join("pipe")).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            open_beneath(&t.root, "pipe"),
            Err(OpenError::NotAFile)
        ));
    }
}
