//! Where a reader's bytes come from: a local file, or a file on remote storage
//! read by ranges (a client this crate does not hold: quarry's XRootD, HTTP and
//! S3 clients implement the trait). Readers that take a `ByteSource` never learn
//! which; a remote source turns each read into ranged requests through its cache,
//! and `prefetch` lets a reader ask for many ranges it is about to read in one
//! vectored request (a cluster's baskets) instead of one round trip each.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;

/// Bytes addressable by offset, shared between threads.
pub trait ByteSource: Send + Sync {
    /// The size in bytes, as known when the source was opened.
    fn size(&self) -> u64;

    /// Fills `buf` with the bytes at `offset` (all of them, or an error).
    fn read_into(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;

    /// Says that the `ranges` are about to be read: a remote source fetches
    /// those it does not hold in one vectored request. Local files ignore it.
    fn prefetch(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        self.prefetch_until(ranges, &|| false)
    }

    /// `prefetch` for a call that may be cancelled: a remote source gives up
    /// (`ErrorKind::Interrupted`), even part-way through an answer, once
    /// `stop` returns true.
    fn prefetch_until(
        &self,
        _ranges: &[Range<u64>],
        _stop: &(dyn Fn() -> bool + Send + Sync),
    ) -> io::Result<()> {
        Ok(())
    }

    /// Bytes and requests this source has fetched from remote storage so far
    /// (`None` for a local file, where every read is a read).
    fn fetched(&self) -> Option<Fetched> {
        None
    }
}

/// What a remote source has fetched: bytes over the network and round trips.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fetched {
    pub bytes: u64,
    pub requests: u64,
}

impl ByteSource for File {
    fn size(&self) -> u64 {
        self.metadata().map_or(0, |m| m.len())
    }

    fn read_into(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }
}
