//! The daemon's side of a file read by ranges (`quarry_hdf5::driver`): for one
//! call, a thread answers the `(offset, length)` requests a reader sends on one
//! end of a socket pair from a `ByteSource` (a remote file: its block cache,
//! retries and fetched-bytes counters); the reader, in a worker, holds the
//! other end and sees only bytes, never the storage's address or credentials.
//!
//! The requests come from another process, so each is checked before it costs
//! anything: a length past `MAX_CHUNK` or a range past the file's end is
//! answered with an error, and the one buffer, reused, never grows past
//! `MAX_CHUNK`. The thread ends when the reader closes its end, or when the
//! call is over (`finish`, also on drop: the call was cancelled or timed out),
//! within `POLL` and any fetch under way, which is told to stop.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::readable_within;
use crate::byte_source::ByteSource;
use quarry_hdf5::driver::protocol::{self, FAILED, MAX_CHUNK, MAX_MESSAGE, OK, REQUEST_LEN};

/// How often the serving thread looks whether the call is over.
const POLL: Duration = Duration::from_millis(50);
/// Longest a request's bytes may take to arrive once it has begun, and an
/// answer to be taken up: the reader is on the same machine.
const STALL: Duration = Duration::from_secs(30);

/// A thread serving one call's reads.
pub struct RangeServer {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<Option<io::Error>>>,
}

impl RangeServer {
    /// Starts serving `source`; returns the server and the reader's end.
    pub fn start(source: Arc<dyn ByteSource>) -> io::Result<(RangeServer, UnixStream)> {
        let (ours, theirs) = UnixStream::pair()?;
        ours.set_read_timeout(Some(STALL))?;
        ours.set_write_timeout(Some(STALL))?;
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::Builder::new()
            .name("quarry-ranges".into())
            .spawn(move || serve(&ours, source.as_ref(), &flag))?;
        Ok((
            RangeServer {
                done,
                thread: Some(thread),
            },
            theirs,
        ))
    }

    /// Ends the serving (the call is over) and gives the first error a read
    /// met: the reason a reader's read failed, better than the reader's own.
    pub fn finish(mut self) -> Option<io::Error> {
        self.stop()
    }

    fn stop(&mut self) -> Option<io::Error> {
        self.done.store(true, Ordering::Relaxed);
        self.thread.take().and_then(|t| t.join().ok().flatten())
    }
}

impl Drop for RangeServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Answers requests until the reader closes its end or `done` is set; the
/// first error met by a read.
fn serve(socket: &UnixStream, source: &dyn ByteSource, done: &AtomicBool) -> Option<io::Error> {
    let mut first_error = None;
    let mut buf = Vec::new();
    let (mut requests, mut bytes) = (0u64, 0u64);
    let stop = || done.load(Ordering::Relaxed);
    while !stop() {
        if !readable_within(socket, POLL) {
            continue;
        }
        let mut request = [0u8; REQUEST_LEN];
        if (&*socket).read_exact(&mut request).is_err() {
            // Closed (the reader is done) or out of step: nothing more to serve.
            break;
        }
        let (offset, len) = protocol::parse_request(&request);
        let answered = match checked(offset, len, source.size()) {
            Err(why) => answer_error(socket, &why),
            Ok(range) => {
                buf.resize(len as usize, 0);
                let read = source
                    .prefetch_until(std::slice::from_ref(&range), &stop)
                    .and_then(|()| source.read_into(offset, &mut buf));
                match read {
                    Ok(()) => {
                        requests += 1;
                        bytes += len;
                        answer_bytes(socket, &buf)
                    }
                    Err(e) => {
                        let why = e.to_string();
                        // A read stopped because the call is over (timed
                        // out, cancelled) is not why the call failed. Kept
                        // before the answer goes: once the reader has it, the
                        // call may end and `finish` look at once.
                        if !stop() {
                            first_error.get_or_insert(e);
                        }
                        answer_error(socket, &why)
                    }
                }
            }
        };
        if answered.is_err() {
            break;
        }
    }
    tracing::debug!("served {requests} ranged reads, {bytes} bytes, to a reader");
    first_error
}

/// The range a request asks for, if it is one the file can answer.
fn checked(offset: u64, len: u64, size: u64) -> Result<std::ops::Range<u64>, String> {
    if len > MAX_CHUNK {
        return Err(format!(
            "a read of {len} bytes asked at once (at most {MAX_CHUNK})"
        ));
    }
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(offset..end),
        _ => Err(format!(
            "a read of {len} bytes at {offset}, past the end of the file ({size} bytes)"
        )),
    }
}

fn answer_bytes(socket: &UnixStream, bytes: &[u8]) -> io::Result<()> {
    let mut out = socket;
    out.write_all(&protocol::header(OK, bytes.len() as u64))?;
    out.write_all(bytes)
}

fn answer_error(socket: &UnixStream, why: &str) -> io::Result<()> {
    let mut end = why.len().min(MAX_MESSAGE as usize);
    while !why.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = socket;
    out.write_all(&protocol::header(FAILED, end as u64))?;
    out.write_all(&why.as_bytes()[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_hdf5::driver::fetch;

    fn served(bytes: &[u8]) -> (RangeServer, UnixStream) {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        RangeServer::start(Arc::new(file)).unwrap()
    }

    #[test]
    fn ranges_are_answered_and_bad_requests_refused_without_allocating() {
        let (server, reader) = served(b"0123456789");
        let mut four = [0u8; 4];
        fetch(&reader, 3, &mut four).unwrap();
        assert_eq!(&four, b"3456");
        // Past the end, and a length far past any buffer: refused, and the
        // server still answers the next request.
        assert!(fetch(&reader, 8, &mut four).is_err());
        assert!(fetch(&reader, u64::MAX - 1, &mut four).is_err());
        (&reader)
            .write_all(&protocol::request(0, u64::MAX))
            .unwrap();
        let mut header = [0u8; protocol::HEADER_LEN];
        (&reader).read_exact(&mut header).unwrap();
        let (status, len) = protocol::parse_header(&header);
        assert_eq!(status, FAILED);
        assert!(len <= MAX_MESSAGE);
        let mut why = vec![0u8; len as usize];
        (&reader).read_exact(&mut why).unwrap();
        fetch(&reader, 0, &mut four).unwrap();
        assert_eq!(&four, b"0123");
        drop(reader);
        assert!(server.finish().is_none());
    }

    /// A source whose reads fail: the reader's read fails, and the server
    /// gives the source's own error back to the caller, even when the call
    /// ends the moment the reader has its answer (many times, as the race
    /// between the two is won by either).
    #[test]
    fn a_failed_read_is_the_callers_error() {
        for _ in 0..300 {
            a_failed_read_is_the_callers_error_once();
        }
    }

    fn a_failed_read_is_the_callers_error_once() {
        struct Failing;
        impl ByteSource for Failing {
            fn size(&self) -> u64 {
                100
            }
            fn read_into(&self, _: u64, _: &mut [u8]) -> io::Result<()> {
                Err(io::Error::new(io::ErrorKind::ConnectionAborted, "gone"))
            }
        }
        let (server, reader) = RangeServer::start(Arc::new(Failing)).unwrap();
        let mut four = [0u8; 4];
        let e = fetch(&reader, 0, &mut four).unwrap_err();
        assert!(e.to_string().contains("gone"), "{e}");
        let met = server.finish().unwrap();
        assert_eq!(met.kind(), io::ErrorKind::ConnectionAborted);
    }

    /// Bytes from another process, taken as requests: whatever they say,
    /// each is answered (most refused) with a bounded answer, nothing panics
    /// and the server ends when the peer closes its end.
    #[test]
    fn random_requests_are_answered_within_bounds() {
        let (server, reader) = served(&[7u8; 1000]);
        let drain = reader.try_clone().unwrap();
        let answers = std::thread::spawn(move || {
            let mut header = [0u8; protocol::HEADER_LEN];
            let mut count = 0;
            while (&drain).read_exact(&mut header).is_ok() {
                let (status, len) = protocol::parse_header(&header);
                assert!(status == OK && len <= 1000 || status == FAILED && len <= MAX_MESSAGE);
                io::copy(&mut (&drain).take(len), &mut io::sink()).unwrap();
                count += 1;
            }
            count
        });
        // xorshift64: the same bytes each run.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for i in 0..500u64 {
            let (offset, len) = match i % 4 {
                0 => (next(), next()),
                1 => (next() % 2000, next() % 2000),
                2 => (next() % 1000, u64::MAX - next() % 16),
                _ => (u64::MAX - next() % 16, next() % 64),
            };
            (&reader)
                .write_all(&protocol::request(offset, len))
                .unwrap();
        }
        // The server reads to the end of the requests, then closes its end,
        // which ends the answers.
        reader.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(answers.join().unwrap(), 500);
        assert!(server.finish().is_none());
    }

    /// The call is cancelled (or times out) while a fetch is under way: the
    /// fetch is told to stop, the thread ends at once, the reader's read
    /// fails, and the stopped fetch is not given as the call's error.
    #[test]
    fn a_fetch_under_way_stops_with_its_call() {
        struct Stalled;
        impl ByteSource for Stalled {
            fn size(&self) -> u64 {
                100
            }
            fn read_into(&self, _: u64, _: &mut [u8]) -> io::Result<()> {
                Ok(())
            }
            fn prefetch_until(
                &self,
                _: &[std::ops::Range<u64>],
                stop: &(dyn Fn() -> bool + Send + Sync),
            ) -> io::Result<()> {
                while !stop() {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"))
            }
        }
        let (server, reader) = RangeServer::start(Arc::new(Stalled)).unwrap();
        let read = std::thread::spawn(move || fetch(&reader, 0, &mut [0u8; 4]));
        std::thread::sleep(Duration::from_millis(200));
        let started = std::time::Instant::now();
        assert!(server.finish().is_none());
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(read.join().unwrap().is_err());
    }

    /// The call ends while the reader keeps its end open (a worker that was
    /// killed, a cancelled call): the thread still ends.
    #[test]
    fn the_server_ends_with_its_call() {
        let (server, _reader) = served(b"abc");
        let started = std::time::Instant::now();
        assert!(server.finish().is_none());
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
