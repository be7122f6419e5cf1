//! Handing an open file to a worker: a Unix socket message carrying the
//! descriptor (SCM_RIGHTS), so the worker reads exactly the file the server
//! opened beneath its root and never resolves a path itself.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

const FD_SIZE: u32 = std::mem::size_of::<RawFd>() as u32;

/// Control-message buffer for one descriptor, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct ControlBuffer([u8; 64]);

/// Sends `body` framed by its length, with `fd` attached to the frame's header.
pub fn send(sock: &UnixStream, fd: RawFd, body: &[u8]) -> io::Result<()> {
    let header = (body.len() as u32).to_le_bytes();
    let mut iov = libc::iovec {
        iov_base: header.as_ptr() as *mut libc::c_void,
        iov_len: header.len(),
    };
    let mut control = ControlBuffer([0; 64]);
    // SAFETY: the msghdr points at `iov` and `control`, both alive for the call;
    // CMSG_* only compute offsets inside `control`, which is large enough for one
    // descriptor (CMSG_SPACE(4) is 24 bytes on Linux).
    let sent = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = libc::CMSG_SPACE(FD_SIZE) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(FD_SIZE) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg) as *mut RawFd, fd);
        libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL)
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut writer = sock;
    writer.write_all(&header[sent as usize..])?;
    writer.write_all(body)
}

/// Receives one frame and its descriptor; `Ok(None)` at end of input.
pub fn receive(sock: &UnixStream) -> io::Result<Option<(OwnedFd, Vec<u8>)>> {
    let mut header = [0u8; 4];
    let mut iov = libc::iovec {
        iov_base: header.as_mut_ptr() as *mut libc::c_void,
        iov_len: header.len(),
    };
    let mut control = ControlBuffer([0; 64]);
    let mut fd = None;
    // SAFETY: as in `send`; the kernel writes at most msg_controllen bytes of
    // control data, and a descriptor it hands over is owned from here on.
    let got = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = control.0.len() as _;
        let got = libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if got > 0 {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                    let raw = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const RawFd);
                    fd = Some(OwnedFd::from_raw_fd(raw));
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        got
    };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    if got == 0 {
        return Ok(None);
    }
    let mut reader = sock;
    reader.read_exact(&mut header[got as usize..])?;
    let fd = fd.ok_or_else(|| io::Error::other("a request came without its file"))?;
    let mut body = vec![0u8; u32::from_le_bytes(header) as usize];
    reader.read_exact(&mut body)?;
    Ok(Some((fd, body)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Seek;

    #[test]
    fn a_descriptor_and_its_frame_arrive_together() {
        let (a, b) = UnixStream::pair().unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"hello").unwrap();
        file.rewind().unwrap();
        send(&a, file.as_raw_fd(), b"request").unwrap();
        drop(file);
        let (fd, body) = receive(&b).unwrap().unwrap();
        assert_eq!(body, b"request");
        let mut text = String::new();
        std::fs::File::from(fd).read_to_string(&mut text).unwrap();
        assert_eq!(text, "hello");
        drop(a);
        assert!(receive(&b).unwrap().is_none());
    }
}
