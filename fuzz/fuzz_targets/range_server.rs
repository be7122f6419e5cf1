//! Feeds arbitrary bytes, as requests, to the range server that answers a
//! worker's libhdf5 driver (`formats::worker::RangeServer`): a worker that a
//! hostile HDF5 file has corrupted may send anything. Every request is
//! answered or refused, the server never sizes a buffer from an unchecked
//! length, and it ends when the worker's end closes. A panic, a hang or an
//! answer longer than the protocol allows is a bug.
#![no_main]

use std::io::{self, Read, Write};
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use quarry::byte_source::ByteSource;
use quarry::formats::worker::RangeServer;

/// A small file: byte `i` is `i mod 251`.
struct Pattern(u64);

impl ByteSource for Pattern {
    fn size(&self) -> u64 {
        self.0
    }

    fn read_into(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = ((offset + i as u64) % 251) as u8;
        }
        Ok(())
    }
}

/// Requests are 16 bytes; an answer is a 9-byte header and at most the
/// file's size (what any in-bounds request can ask) or a 4 KiB message.
const REQUEST: usize = 16;
const HEADER: usize = 9;
const MESSAGE: usize = 4096;
const SIZE: u64 = 4096;

fuzz_target!(|data: &[u8]| {
    let (server, mut reader) = RangeServer::start(Arc::new(Pattern(SIZE))).expect("a socket pair");
    // The requests fit the socket's buffer; the answers are read after.
    let _ = reader.write_all(data);
    let _ = reader.shutdown(std::net::Shutdown::Write);
    let mut answers = Vec::new();
    let _ = reader.read_to_end(&mut answers);
    let most = (data.len() / REQUEST) * (HEADER + MESSAGE.max(SIZE as usize));
    assert!(answers.len() <= most, "{} bytes of answers to {} bytes of requests", answers.len(), data.len());
    let _ = server.finish();
});
