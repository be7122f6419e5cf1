//! A read-only libhdf5 virtual file driver whose bytes come from another
//! process over a Unix socket: a remote file is read by the byte ranges
//! libhdf5 asks for, not copied whole. The process holding the file (quarry's
//! daemon, with the storage's credentials and its block cache) answers
//! `(offset, length)` requests on one end of a socket pair; this driver, in the
//! process running libhdf5 (a worker), holds the other end and sees bytes only.
//!
//! The protocol (`protocol`) is tiny and every length in it is bounded, on both
//! sides: a request asks for at most `MAX_CHUNK` bytes (larger reads are split),
//! an answer carries exactly the bytes asked for or an error message of at most
//! `MAX_MESSAGE` bytes. A socket that goes quiet for `READ_TIMEOUT`, closes, or
//! answers out of protocol fails the read, which libhdf5 reports as its error.
//!
//! The driver's class is laid out as libhdf5 1.10's `H5FD_class_t` (Debian 12
//! ships 1.10.8). `hdf5-sys` declares the 1.8/1.12 shape for 1.10 (no
//! `terminate` member, an `H5FD_t` without `access_flags`), so the layout here
//! follows 1.10.8's `H5FDpublic.h` and is checked against sizes and offsets
//! measured from that header with a C compiler (see the tests); the driver is
//! registered only when the linked library says it is 1.10.

use std::ffi::{CStr, c_char, c_int, c_uint, c_ulong, c_void};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use hdf5_sys::h5::{haddr_t, herr_t, hsize_t};
use hdf5_sys::h5i::hid_t;

use crate::FormatError;

/// The requests and answers exchanged on the socket.
pub mod protocol {
    /// A request: the offset and the length, each a little-endian u64.
    pub const REQUEST_LEN: usize = 16;
    /// An answer's header: a status byte, then a length (little-endian u64) of
    /// the bytes that follow.
    pub const HEADER_LEN: usize = 9;
    /// The answer carries the bytes asked for, exactly.
    pub const OK: u8 = 0;
    /// The answer carries an error message (UTF-8).
    pub const FAILED: u8 = 1;
    /// The most bytes one request may ask for: libhdf5's larger reads are
    /// split, and the serving side never sizes a buffer past this.
    pub const MAX_CHUNK: u64 = 8 << 20;
    /// The longest error message an answer may carry.
    pub const MAX_MESSAGE: u64 = 4096;

    pub fn request(offset: u64, len: u64) -> [u8; REQUEST_LEN] {
        let mut out = [0u8; REQUEST_LEN];
        out[..8].copy_from_slice(&offset.to_le_bytes());
        out[8..].copy_from_slice(&len.to_le_bytes());
        out
    }

    pub fn parse_request(bytes: &[u8; REQUEST_LEN]) -> (u64, u64) {
        let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        (word(0), word(8))
    }

    pub fn header(status: u8, len: u64) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0] = status;
        out[1..].copy_from_slice(&len.to_le_bytes());
        out
    }

    pub fn parse_header(bytes: &[u8; HEADER_LEN]) -> (u8, u64) {
        let len = u64::from_le_bytes(bytes[1..].try_into().expect("8 bytes"));
        (bytes[0], len)
    }
}

use protocol::{FAILED, HEADER_LEN, MAX_CHUNK, MAX_MESSAGE, OK};

/// Longest wait for an answer: the serving side retries and times out its
/// own requests well within it; past it, that side is taken to be gone.
const READ_TIMEOUT: Duration = Duration::from_secs(150);

/// The driver's name, as libhdf5 reports it.
const NAME: &CStr = c"quarry-ranges";
/// The file names this driver opens: `PREFIX<descriptor>/<size>`. Nothing can
/// exist below `/dev/null`, so libhdf5's own look-ups of the name (links to
/// resolve) find nothing.
const PREFIX: &str = "/dev/null/quarry-ranges/";

// libhdf5 1.10's public types (H5public.h, H5Fpublic.h, H5FDpublic.h).
const H5F_ACC_RDWR: c_uint = 0x0001;
const H5F_CLOSE_WEAK: c_int = 1;
/// `(haddr_t)1 << 63) - 1`: what sec2 gives as its largest address.
const MAXADDR: haddr_t = (1 << 63) - 1;
const HADDR_UNDEF: haddr_t = haddr_t::MAX;
/// Metadata read into libhdf5's accumulator and raw data sieved: fewer,
/// larger reads, each a round trip to the serving process.
const FEATURES: c_ulong = 0x4 | 0x8;

/// A callback slot the driver leaves empty (libhdf5 then does without it).
type Unused = Option<unsafe extern "C" fn()>;
type MemType = c_int;

/// libhdf5 1.10.8's `H5FD_class_t`.
#[repr(C)]
struct Class {
    name: *const c_char,
    maxaddr: haddr_t,
    fc_degree: c_int,
    terminate: Unused,
    sb_size: Unused,
    sb_encode: Unused,
    sb_decode: Unused,
    fapl_size: usize,
    fapl_get: Unused,
    fapl_copy: Unused,
    fapl_free: Unused,
    dxpl_size: usize,
    dxpl_copy: Unused,
    dxpl_free: Unused,
    open: Option<unsafe extern "C" fn(*const c_char, c_uint, hid_t, haddr_t) -> *mut Public>,
    close: Option<unsafe extern "C" fn(*mut Public) -> herr_t>,
    cmp: Unused,
    query: Option<unsafe extern "C" fn(*const Public, *mut c_ulong) -> herr_t>,
    get_type_map: Unused,
    alloc: Unused,
    free: Unused,
    get_eoa: Option<unsafe extern "C" fn(*const Public, MemType) -> haddr_t>,
    set_eoa: Option<unsafe extern "C" fn(*mut Public, MemType, haddr_t) -> herr_t>,
    get_eof: Option<unsafe extern "C" fn(*const Public, MemType) -> haddr_t>,
    get_handle: Unused,
    read: Option<
        unsafe extern "C" fn(*mut Public, MemType, hid_t, haddr_t, usize, *mut c_void) -> herr_t,
    >,
    write: Option<
        unsafe extern "C" fn(*mut Public, MemType, hid_t, haddr_t, usize, *const c_void) -> herr_t,
    >,
    flush: Unused,
    truncate: Unused,
    lock: Unused,
    unlock: Unused,
    fl_map: [MemType; 7],
}

/// libhdf5 1.10.8's `H5FD_t`: the part of an open file libhdf5 fills in.
#[repr(C)]
struct Public {
    driver_id: hid_t,
    cls: *const Class,
    fileno: c_ulong,
    access_flags: c_uint,
    feature_flags: c_ulong,
    maxaddr: haddr_t,
    base_addr: haddr_t,
    threshold: hsize_t,
    alignment: hsize_t,
    paged_aggr: bool,
}

/// An open file of this driver: libhdf5's part first, then ours.
#[repr(C)]
struct RangeFile {
    public: Public,
    socket: UnixStream,
    /// The end of the file libhdf5 has allocated (it sets it from the superblock).
    eoa: haddr_t,
    /// The file's size, as the serving side gave it.
    eof: haddr_t,
}

/// The class lives as long as the process (libhdf5 keeps a pointer to it).
struct Registered(Class);
// SAFETY: the class is never written after it is built; its only pointer is
// to a 'static C string.
unsafe impl Sync for Registered {}
unsafe impl Send for Registered {}

static CLASS: Registered = Registered(Class {
    name: NAME.as_ptr(),
    maxaddr: MAXADDR,
    fc_degree: H5F_CLOSE_WEAK,
    terminate: None,
    sb_size: None,
    sb_encode: None,
    sb_decode: None,
    fapl_size: 0,
    fapl_get: None,
    fapl_copy: None,
    fapl_free: None,
    dxpl_size: 0,
    dxpl_copy: None,
    dxpl_free: None,
    open: Some(open),
    close: Some(close),
    cmp: None,
    query: Some(query),
    get_type_map: None,
    alloc: None,
    free: None,
    get_eoa: Some(get_eoa),
    set_eoa: Some(set_eoa),
    get_eof: Some(get_eof),
    get_handle: None,
    read: Some(read),
    write: Some(write),
    flush: None,
    truncate: None,
    lock: None,
    unlock: None,
    fl_map: [0; 7],
});

/// The driver's id, registered at the first call (the caller holds libhdf5's
/// lock); an error when the linked libhdf5 is not 1.10, whose layout this is.
pub(crate) fn id() -> Result<hid_t, FormatError> {
    static ID: OnceLock<Result<hid_t, FormatError>> = OnceLock::new();
    ID.get_or_init(|| {
        let (mut major, mut minor, mut micro) = (0, 0, 0);
        // SAFETY: three out-parameters we own.
        unsafe { hdf5_sys::h5::H5get_libversion(&mut major, &mut minor, &mut micro) };
        if (major, minor) != (1, 10) {
            return Err(FormatError::Unsupported(format!(
                "reading remote HDF5 files by ranges needs libhdf5 1.10; this build links {major}.{minor}.{micro}"
            )));
        }
        // SAFETY: a class laid out as 1.10's, alive for the whole process.
        let id = unsafe { hdf5_sys::h5fd::H5FDregister((&CLASS.0 as *const Class).cast()) };
        if id < 0 {
            return Err(crate::ffi::last_error());
        }
        Ok(id)
    })
    .clone()
}

/// The name to open the file served on `socket` under, `size` bytes long.
pub(crate) fn file_name(socket: &UnixStream, size: u64) -> std::ffi::CString {
    std::ffi::CString::new(format!("{PREFIX}{}/{size}", socket.as_raw_fd()))
        .expect("no NUL in a number")
}

/// Why the last read failed, for the error of the call that made it.
static LAST_FAILURE: Mutex<Option<String>> = Mutex::new(None);

fn fail(why: String) -> herr_t {
    *LAST_FAILURE.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    -1
}

/// Why the last read by this driver failed, once.
pub fn take_failure() -> Option<String> {
    LAST_FAILURE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
}

/// Parses `PREFIX<fd>/<size>`.
fn parse_name(name: &str) -> Option<(i32, u64)> {
    let (fd, size) = name.strip_prefix(PREFIX)?.split_once('/')?;
    Some((fd.parse().ok().filter(|&fd| fd >= 0)?, size.parse().ok()?))
}

unsafe extern "C" fn open(
    name: *const c_char,
    flags: c_uint,
    _fapl: hid_t,
    _maxaddr: haddr_t,
) -> *mut Public {
    if name.is_null() || flags & H5F_ACC_RDWR != 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: libhdf5 passes the NUL-terminated name it was given.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    let Some((fd, size)) = parse_name(&name) else {
        return std::ptr::null_mut();
    };
    // Our own copy of the caller's descriptor, closed with the file.
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor number; the result is checked.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if copy < 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: `copy` was just made and is owned by nothing else.
    let socket = UnixStream::from(unsafe { OwnedFd::from_raw_fd(copy) });
    if socket.set_read_timeout(Some(READ_TIMEOUT)).is_err()
        || socket.set_write_timeout(Some(READ_TIMEOUT)).is_err()
    {
        return std::ptr::null_mut();
    }
    let file = Box::new(RangeFile {
        // SAFETY: all-zero is a valid `Public` (integers, a null pointer,
        // false); libhdf5 fills it in after `open` returns.
        public: unsafe { std::mem::zeroed() },
        socket,
        eoa: 0,
        eof: size,
    });
    Box::into_raw(file).cast()
}

/// The driver's file behind libhdf5's pointer.
///
/// # Safety
/// `file` is a pointer `open` returned and `close` has not freed.
unsafe fn ours<'a>(file: *const Public) -> &'a RangeFile {
    // SAFETY: per the contract; `Public` is `RangeFile`'s first member.
    unsafe { &*file.cast::<RangeFile>() }
}

unsafe extern "C" fn close(file: *mut Public) -> herr_t {
    if !file.is_null() {
        // SAFETY: `open` made it with `Box::into_raw`; libhdf5 closes it once.
        drop(unsafe { Box::from_raw(file.cast::<RangeFile>()) });
    }
    0
}

unsafe extern "C" fn query(_file: *const Public, flags: *mut c_ulong) -> herr_t {
    if !flags.is_null() {
        // SAFETY: libhdf5 passes a place for the flags.
        unsafe { *flags = FEATURES };
    }
    0
}

unsafe extern "C" fn get_eoa(file: *const Public, _type: MemType) -> haddr_t {
    // SAFETY: libhdf5 passes a file this driver opened.
    unsafe { ours(file) }.eoa
}

unsafe extern "C" fn set_eoa(file: *mut Public, _type: MemType, addr: haddr_t) -> herr_t {
    // SAFETY: as for `ours`, and libhdf5 holds no other reference meanwhile.
    unsafe { (*file.cast::<RangeFile>()).eoa = addr };
    0
}

unsafe extern "C" fn get_eof(file: *const Public, _type: MemType) -> haddr_t {
    // SAFETY: libhdf5 passes a file this driver opened.
    unsafe { ours(file) }.eof
}

unsafe extern "C" fn write(
    _file: *mut Public,
    _type: MemType,
    _dxpl: hid_t,
    _addr: haddr_t,
    _size: usize,
    _buf: *const c_void,
) -> herr_t {
    fail("the remote-file driver is read-only".into())
}

unsafe extern "C" fn read(
    file: *mut Public,
    _type: MemType,
    _dxpl: hid_t,
    addr: haddr_t,
    size: usize,
    buf: *mut c_void,
) -> herr_t {
    if buf.is_null() || addr == HADDR_UNDEF {
        return fail("libhdf5 asked for an undefined address".into());
    }
    // SAFETY: libhdf5 passes a file this driver opened and a buffer of `size` bytes.
    let (file, buf) = unsafe {
        (
            ours(file),
            std::slice::from_raw_parts_mut(buf.cast::<u8>(), size),
        )
    };
    match read_at(&file.socket, file.eof, addr, buf) {
        Ok(()) => 0,
        Err(e) => fail(e.to_string()),
    }
}

/// Fills `buf` with the bytes at `addr`: those within the file asked for in
/// chunks of at most `MAX_CHUNK`, those past its end zeros (as libhdf5's own
/// drivers give them).
fn read_at(socket: &UnixStream, eof: u64, addr: u64, buf: &mut [u8]) -> io::Result<()> {
    let within = eof.saturating_sub(addr).min(buf.len() as u64) as usize;
    let (inside, past) = buf.split_at_mut(within);
    past.fill(0);
    let mut at = addr;
    for chunk in inside.chunks_mut(MAX_CHUNK as usize) {
        fetch(socket, at, chunk)?;
        at += chunk.len() as u64;
    }
    Ok(())
}

/// One request and its answer, read straight into `into`.
pub fn fetch(socket: &UnixStream, offset: u64, into: &mut [u8]) -> io::Result<()> {
    let mut stream = socket;
    stream.write_all(&protocol::request(offset, into.len() as u64))?;
    let mut header = [0u8; HEADER_LEN];
    stream.read_exact(&mut header)?;
    match protocol::parse_header(&header) {
        (OK, len) if len == into.len() as u64 => stream.read_exact(into),
        (FAILED, len) if len <= MAX_MESSAGE => {
            let mut why = vec![0u8; len as usize];
            stream.read_exact(&mut why)?;
            Err(io::Error::other(String::from_utf8_lossy(&why).into_owned()))
        }
        (status, len) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the remote file's bytes came out of protocol (status {status}, {len} bytes)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// Sizes and offsets printed by a C program compiled against Debian 12's
    /// libhdf5 1.10.8 headers (`sizeof(H5FD_class_t)`, `offsetof(...)`).
    #[test]
    fn the_class_is_laid_out_as_libhdf5_1_10s() {
        assert_eq!(size_of::<Class>(), 280);
        assert_eq!(offset_of!(Class, fc_degree), 16);
        assert_eq!(offset_of!(Class, open), 112);
        assert_eq!(offset_of!(Class, read), 200);
        assert_eq!(offset_of!(Class, lock), 232);
        assert_eq!(offset_of!(Class, fl_map), 248);
        assert_eq!(size_of::<Public>(), 80);
        assert_eq!(offset_of!(Public, paged_aggr), 72);
    }

    /// Random answers (xorshift64, the same each run): the read succeeds only
    /// on an answer of status OK and exactly the length asked; never a panic.
    #[test]
    fn random_answers_fail_the_read_unless_exact() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..200 {
            let status = (next() % 3) as u8;
            let len = match next() % 3 {
                0 => 4,
                1 => next() % 8,
                _ => next(),
            };
            let payload: Vec<u8> = (0..(len.min(16))).map(|_| next() as u8).collect();
            let (ours, theirs) = UnixStream::pair().unwrap();
            let mut answer = protocol::header(status, len).to_vec();
            answer.extend_from_slice(&payload);
            let peer = std::thread::spawn(move || {
                let mut request = [0u8; protocol::REQUEST_LEN];
                (&theirs).read_exact(&mut request).unwrap();
                let _ = (&theirs).write_all(&answer);
            });
            let mut buf = [0u8; 4];
            let got = fetch(&ours, 0, &mut buf);
            assert_eq!(got.is_ok(), status == OK && len == 4, "{status} {len}");
            peer.join().unwrap();
        }
    }

    /// Serves `bytes` on a socket as the daemon does (a thread answering
    /// requests); counts the bytes served.
    fn serve(bytes: Vec<u8>) -> (UnixStream, std::thread::JoinHandle<u64>) {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let server = std::thread::spawn(move || {
            let mut served = 0;
            let mut request = [0u8; protocol::REQUEST_LEN];
            while (&theirs).read_exact(&mut request).is_ok() {
                let (offset, len) = protocol::parse_request(&request);
                let range = offset as usize..(offset + len) as usize;
                (&theirs).write_all(&protocol::header(OK, len)).unwrap();
                (&theirs).write_all(&bytes[range]).unwrap();
                served += len;
            }
            served
        });
        (ours, server)
    }

    /// libhdf5 opens and reads a file through the driver (h5py's values for
    /// tiny.h5, as in the crate's example), and a write is refused.
    #[test]
    fn libhdf5_reads_a_file_served_by_ranges() {
        let path = format!("{}/tests/data/hdf5/tiny.h5", crate::REPO);
        let bytes = std::fs::read(path).unwrap();
        let size = bytes.len() as u64;
        let (socket, server) = serve(bytes);
        let h5 = crate::H5File::open_ranges(socket, size).unwrap();
        let hv = h5.dataset("/conditions/hv").unwrap();
        let sel = crate::slice::resolve(
            &crate::slice::parse("1:3").unwrap(),
            hv.shape.as_deref().unwrap(),
        )
        .unwrap();
        assert_eq!(hv.read(&sel).unwrap().data, serde_json::json!([1.0, 2.0]));
        drop(hv);
        drop(h5);
        let served = server.join().unwrap();
        assert!(served > 0 && served <= 2 * size, "{served} of {size}");
    }

    #[test]
    fn a_file_that_is_not_hdf5_is_refused_before_libhdf5_sees_it() {
        let bytes = b"just text pretending to be hdf5".to_vec();
        let size = bytes.len() as u64;
        let (socket, server) = serve(bytes);
        let e = crate::H5File::open_ranges(socket, size).err().unwrap();
        assert!(e.to_string().contains("no HDF5 signature"), "{e}");
        server.join().unwrap();
    }

    #[test]
    fn names_carry_the_descriptor_and_size() {
        assert_eq!(parse_name(&format!("{PREFIX}7/1234")), Some((7, 1234)));
        assert_eq!(parse_name(&format!("{PREFIX}-1/1")), None);
        assert_eq!(parse_name("/data/x.h5"), None);
        assert_eq!(parse_name(&format!("{PREFIX}7")), None);
    }

    /// A peer that answers out of protocol (too long a message, the wrong
    /// length of bytes) or goes away fails the read; nothing is sized from
    /// its lengths.
    #[test]
    fn answers_out_of_protocol_fail_the_read() {
        let mut buf = [0u8; 4];
        for answer in [
            protocol::header(FAILED, u64::MAX).to_vec(),
            protocol::header(OK, 1 << 40).to_vec(),
            protocol::header(7, 4).to_vec(),
            Vec::new(),
        ] {
            let (ours, theirs) = UnixStream::pair().unwrap();
            let peer = std::thread::spawn(move || {
                let mut request = [0u8; protocol::REQUEST_LEN];
                (&theirs).read_exact(&mut request).unwrap();
                (&theirs).write_all(&answer).unwrap();
            });
            assert!(fetch(&ours, 0, &mut buf).is_err());
            peer.join().unwrap();
        }
        let (ours, theirs) = UnixStream::pair().unwrap();
        let peer = std::thread::spawn(move || {
            let mut request = [0u8; protocol::REQUEST_LEN];
            (&theirs).read_exact(&mut request).unwrap();
            assert_eq!(protocol::parse_request(&request), (8, 4));
            (&theirs).write_all(&protocol::header(OK, 4)).unwrap();
            (&theirs).write_all(b"abcd").unwrap();
        });
        fetch(&ours, 8, &mut buf).unwrap();
        assert_eq!(&buf, b"abcd");
        peer.join().unwrap();
    }
}
