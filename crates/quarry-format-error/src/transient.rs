//! Which I/O errors are the system's passing shortage rather than a file's fault.
//!
//! A file that cannot be opened because every descriptor is in use, or whose read
//! was interrupted, is not a bad file: recording it as failed would keep it out of
//! the catalog until it changes again. The index retries such errors and never
//! records them against the file.

use std::io;

/// Whether trying again later may succeed: descriptor or memory exhaustion, an
/// interrupted or would-block call, a network failure (remote roots: a server
/// down or timing out after the retries, which no local file read reports).
pub fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::EMFILE | libc::ENFILE | libc::EINTR | libc::EAGAIN | libc::ENOMEM | libc::ENOBUFS
        )
    ) || matches!(
        e.kind(),
        io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
            | io::ErrorKind::OutOfMemory
            | io::ErrorKind::TimedOut
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::NotConnected
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortages_are_transient_and_file_faults_are_not() {
        for errno in [
            libc::EMFILE,
            libc::ENFILE,
            libc::EINTR,
            libc::EAGAIN,
            libc::ENOMEM,
        ] {
            assert!(
                is_transient(&io::Error::from_raw_os_error(errno)),
                "{errno}"
            );
        }
        for errno in [libc::EACCES, libc::EIO, libc::ENOENT, libc::EISDIR] {
            assert!(
                !is_transient(&io::Error::from_raw_os_error(errno)),
                "{errno}"
            );
        }
    }
}
