//! Fetching an RNTuple block from the file (a payload longer than the
//! anchor's key limit is split over several keys, the offsets of the others
//! written at the end of the first) and checking an envelope: its type and
//! length in the first 64-bit word, an XXH3-64 of all before its last 8
//! bytes in those 8 bytes.

use xxhash_rust::xxh3::xxh3_64;

use super::bytes::{Le, Locator, corrupt, mismatch};
use crate::FormatError;
use crate::RootFile;
use crate::compression::decompress_into;

pub(super) const HEADER: u16 = 1;
pub(super) const FOOTER: u16 = 2;
pub(super) const PAGE_LIST: u16 = 3;

fn envelope_name(kind: u16) -> &'static str {
    match kind {
        HEADER => "header",
        FOOTER => "footer",
        PAGE_LIST => "page list",
        _ => "envelope",
    }
}

/// The bytes a locator names, as stored (compressed or not).
pub(super) fn read_located(
    file: &RootFile,
    locator: Locator,
    max_key_size: u64,
    what: &str,
) -> Result<Vec<u8>, FormatError> {
    let (offset, size) = match locator {
        Locator::File { offset, size } => (offset, size),
        Locator::Other { kind } => {
            return Err(FormatError::Unsupported(format!(
                "RNTuple {what} is stored through a locator of type {kind:#04x} \
                 (not a byte range of this file: an object store's)"
            )));
        }
    };
    // Every byte comes from the file, so a payload longer than the file is
    // damage, whatever chunking it claims.
    if size > file.size() {
        return Err(corrupt(format!(
            "RNTuple {what} of {size} bytes in a file of {}",
            file.size()
        )));
    }
    if max_key_size == 0 || size <= max_key_size {
        return file.read_at(offset, size as usize, what);
    }
    read_chunked(file, offset, size, max_key_size, what)
}

/// `read_located` over the start of a buffer the caller keeps (its tail
/// past the answer stale); returns how many bytes were read.
pub(super) fn read_located_over(
    file: &RootFile,
    locator: Locator,
    max_key_size: u64,
    what: &str,
    buf: &mut Vec<u8>,
) -> Result<usize, FormatError> {
    match locator {
        Locator::File { offset, size }
            if size <= file.size() && (max_key_size == 0 || size <= max_key_size) =>
        {
            file.read_over(offset, size as usize, what, buf)?;
            Ok(size as usize)
        }
        // Split over keys, or refused: rare enough to take fresh memory.
        _ => {
            *buf = read_located(file, locator, max_key_size, what)?;
            Ok(buf.len())
        }
    }
}

/// How many keys a payload of `size` bytes takes when none may exceed
/// `max`: the first also holds the 8-byte offsets of all the others.
pub(super) fn chunk_count(size: u64, max: u64) -> u64 {
    let mut chunks = size.div_ceil(max);
    let tail = size % max;
    let room = if tail > 0 { max - tail } else { 0 };
    if (chunks - 1) * 8 > room {
        chunks += 1;
    }
    chunks
}

fn read_chunked(
    file: &RootFile,
    offset: u64,
    size: u64,
    max: u64,
    what: &str,
) -> Result<Vec<u8>, FormatError> {
    let chunks = chunk_count(size, max);
    let offsets_len = (chunks - 1) * 8;
    if offsets_len >= max {
        return Err(corrupt(format!(
            "RNTuple {what}: {chunks} chunks of at most {max} bytes cannot list their offsets"
        )));
    }
    let first = file.read_at(offset, max as usize, what)?;
    let (head, offsets) = first.split_at((max - offsets_len) as usize);
    let mut out = Vec::with_capacity(size as usize);
    out.extend_from_slice(head);
    for at in offsets.chunks_exact(8) {
        let left = size - out.len() as u64;
        if left == 0 {
            break;
        }
        let chunk_offset = u64::from_le_bytes(at.try_into().expect("8 bytes"));
        out.extend(file.read_at(chunk_offset, left.min(max) as usize, what)?);
    }
    if out.len() as u64 != size {
        return Err(corrupt(format!(
            "RNTuple {what}: its chunks hold {} of its {size} bytes",
            out.len()
        )));
    }
    Ok(out)
}

/// Stored bytes decompressed into `len` bytes: a block stored as long as
/// its uncompressed size is raw (RNTuple allows nothing in between).
pub(super) fn unzip(stored: Vec<u8>, len: u64, what: &str) -> Result<Vec<u8>, FormatError> {
    let len = usize::try_from(len).map_err(|_| corrupt(format!("RNTuple {what} too large")))?;
    if stored.len() == len {
        return Ok(stored);
    }
    if stored.len() > len {
        return Err(corrupt(format!(
            "RNTuple {what} stored in {} bytes, more than its {len} uncompressed",
            stored.len()
        )));
    }
    let mut out = Vec::new();
    decompress_into(&stored, len, &mut out)?;
    Ok(out)
}

/// A checked envelope: its bytes and its checksum (which later envelopes
/// quote to say which header they belong to).
pub(super) struct Envelope {
    bytes: Vec<u8>,
    pub checksum: u64,
}

impl Envelope {
    /// A reader over the payload, between the type-and-length word and the
    /// checksum.
    pub fn payload(&self) -> Le<'_> {
        Le::new(&self.bytes[8..self.bytes.len() - 8])
    }
}

/// Reads the envelope of type `kind` a locator names (`len` bytes once
/// decompressed) and checks its type, length and checksum.
pub(super) fn read_envelope(
    file: &RootFile,
    locator: Locator,
    len: u64,
    max_key_size: u64,
    kind: u16,
) -> Result<Envelope, FormatError> {
    let what = format!("{} envelope", envelope_name(kind));
    let stored = read_located(file, locator, max_key_size, &what)?;
    check_envelope(unzip(stored, len, &what)?, kind)
}

pub(super) fn check_envelope(bytes: Vec<u8>, kind: u16) -> Result<Envelope, FormatError> {
    let name = envelope_name(kind);
    if bytes.len() < 16 {
        return Err(corrupt(format!(
            "RNTuple {name} envelope of {} bytes",
            bytes.len()
        )));
    }
    let word = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    let (found, length) = ((word & 0xffff) as u16, word >> 16);
    if found != kind {
        return Err(corrupt(format!(
            "RNTuple {name} envelope has type {found}, not {kind}"
        )));
    }
    if length != bytes.len() as u64 {
        return Err(corrupt(format!(
            "RNTuple {name} envelope says {length} bytes, its link {}",
            bytes.len()
        )));
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    let want = u64::from_le_bytes(sum.try_into().expect("8 bytes"));
    let checksum = xxh3_64(body);
    if mismatch(checksum, want) {
        return Err(corrupt(format!(
            "RNTuple {name} envelope checksum mismatch ({checksum:016x} computed, {want:016x} stored)"
        )));
    }
    Ok(Envelope { bytes, checksum })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_counts_leave_room_for_the_offsets() {
        // 25 bytes in keys of 10: three chunks, the tail's 5 spare bytes
        // too few for two offsets, so a fourth.
        assert_eq!(chunk_count(25, 10), 4);
        // 100 bytes in keys of 64: two chunks, the 28 spare hold one offset.
        assert_eq!(chunk_count(100, 64), 2);
        // Exact multiples leave no spare room.
        assert_eq!(chunk_count(128, 64), 3);
    }

    #[test]
    fn envelopes_are_checked() {
        let mut bytes = (HEADER as u64 | 24 << 16).to_le_bytes().to_vec();
        bytes.extend(7u64.to_le_bytes());
        let sum = xxh3_64(&bytes);
        bytes.extend(sum.to_le_bytes());
        let env = check_envelope(bytes.clone(), HEADER).unwrap();
        assert_eq!(env.payload().u64("x").unwrap(), 7);
        assert!(check_envelope(bytes.clone(), FOOTER).is_err());
        let mut damaged = bytes.clone();
        damaged[9] ^= 1;
        let e = check_envelope(damaged, HEADER).err().unwrap().to_string();
        assert!(e.contains("checksum"), "{e}");
        assert!(check_envelope(bytes[..16].to_vec(), HEADER).is_err());
    }
}
