//! RNTuple's own serialization inside its envelopes: little-endian integers,
//! strings with a 32-bit length, record and list frames (always left by the
//! size they state, so frames a later format version extends still parse),
//! locators and envelope links. Every read is bounds checked: a damaged
//! envelope gives `FormatError::Corrupt`, never a panic.

use crate::FormatError;

/// A little-endian reader over one envelope's bytes (or a frame within it).
#[derive(Clone)]
pub(super) struct Le<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// Where a block of an RNTuple lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locator {
    /// A byte range of the file (the standard locator, or the large one with
    /// a 64-bit size).
    File { offset: u64, size: u64 },
    /// A locator of another storage (type 0x02 is an object store's): parsed
    /// past, but it names nothing a file reader can fetch.
    Other { kind: u8 },
}

/// What a frame holds: a record, or a list of `count` items.
pub(super) enum FrameKind {
    Record,
    List(u32),
}

/// Whether a checksum that does not match refuses the data. Always, except
/// in the fuzzer's build (`cfg(fuzzing)`), where inputs mutated past their
/// checksums must reach the parsers behind them.
pub(super) fn mismatch(computed: u64, stored: u64) -> bool {
    computed != stored && !cfg!(fuzzing)
}

pub(super) fn corrupt(why: impl Into<String>) -> FormatError {
    FormatError::Corrupt(why.into())
}

macro_rules! le_int {
    ($name:ident, $t:ty) => {
        pub fn $name(&mut self, what: &str) -> Result<$t, FormatError> {
            let bytes = self.take(std::mem::size_of::<$t>(), what)?;
            Ok(<$t>::from_le_bytes(bytes.try_into().expect("sized")))
        }
    };
}

impl<'a> Le<'a> {
    pub fn new(buf: &'a [u8]) -> Le<'a> {
        Le { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], FormatError> {
        if n > self.remaining() {
            return Err(corrupt(format!(
                "RNTuple {what}: needs {n} bytes, {} left in its envelope",
                self.remaining()
            )));
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    le_int!(u16, u16);
    le_int!(u32, u32);
    le_int!(u64, u64);
    le_int!(i32, i32);
    le_int!(i64, i64);

    pub fn f64(&mut self, what: &str) -> Result<f64, FormatError> {
        Ok(f64::from_bits(self.u64(what)?))
    }

    /// A string: a 32-bit length, then UTF-8 bytes (invalid bytes replaced:
    /// a name that is not quite UTF-8 still names its field).
    pub fn string(&mut self, what: &str) -> Result<String, FormatError> {
        let len = self.u32(what)? as usize;
        Ok(String::from_utf8_lossy(self.take(len, what)?).into_owned())
    }

    /// Feature flags: 64-bit words, read on while the last one is negative (its
    /// top bit says more flags follow). Any bit set is a feature format 1.0
    /// does not define, so the words are returned for the caller to refuse.
    pub fn feature_flags(&mut self, what: &str) -> Result<Vec<u64>, FormatError> {
        let mut words = Vec::new();
        loop {
            let word = self.u64(what)?;
            words.push(word);
            if (word as i64) >= 0 {
                return Ok(words);
            }
        }
    }

    /// The next frame: its kind and a reader over its payload; this reader
    /// moves past the whole frame by the size it states.
    pub fn frame(&mut self, what: &str) -> Result<(FrameKind, Le<'a>), FormatError> {
        let start = self.pos;
        let size = self.i64(what)?;
        let (kind, header) = if size >= 0 {
            (FrameKind::Record, 8)
        } else {
            (FrameKind::List(self.u32(what)?), 12)
        };
        let total = size.unsigned_abs();
        let available = (self.buf.len() - start) as u64;
        if total < header || total > available {
            return Err(corrupt(format!(
                "RNTuple {what}: a frame of {total} bytes where {available} remain"
            )));
        }
        let end = start + total as usize;
        let body = Le::new(&self.buf[start + header as usize..end]);
        self.pos = end;
        Ok((kind, body))
    }

    pub fn record_frame(&mut self, what: &str) -> Result<Le<'a>, FormatError> {
        match self.frame(what)? {
            (FrameKind::Record, body) => Ok(body),
            (FrameKind::List(_), _) => Err(corrupt(format!(
                "RNTuple {what}: a list frame where a record frame belongs"
            ))),
        }
    }

    /// A list frame: its item count and a reader over its items. The count
    /// comes from the file, so callers size nothing by it before reading.
    pub fn list_frame(&mut self, what: &str) -> Result<(u32, Le<'a>), FormatError> {
        match self.frame(what)? {
            (FrameKind::List(count), body) => Ok((count, body)),
            (FrameKind::Record, _) => Err(corrupt(format!(
                "RNTuple {what}: a record frame where a list frame belongs"
            ))),
        }
    }

    /// A locator: a non-negative 32-bit size and a 64-bit offset, or a
    /// negative word giving the locator's own size (bits 0-15) and type
    /// (bits 24-30) once negated, then a payload of that size.
    pub fn locator(&mut self, what: &str) -> Result<Locator, FormatError> {
        let head = self.i32(what)?;
        if head >= 0 {
            let offset = self.u64(what)?;
            return Ok(Locator::File {
                offset,
                size: head as u64,
            });
        }
        let word = head.unsigned_abs();
        let own_size = (word & 0xffff) as usize;
        let kind = ((word >> 24) & 0x7f) as u8;
        let payload = own_size.checked_sub(4).ok_or_else(|| {
            corrupt(format!(
                "RNTuple {what}: a locator claiming {own_size} bytes"
            ))
        })?;
        let mut body = Le::new(self.take(payload, what)?);
        match kind {
            0x01 => {
                let size = body.u64(what)?;
                let offset = body.u64(what)?;
                Ok(Locator::File { offset, size })
            }
            _ => Ok(Locator::Other { kind }),
        }
    }

    /// An envelope link: the envelope's uncompressed size and its locator.
    pub fn envelope_link(&mut self, what: &str) -> Result<(u64, Locator), FormatError> {
        let len = self.u64(what)?;
        Ok((len, self.locator(what)?))
    }
}

/// At most how many items to reserve room for, for a list of `count` items
/// each taking at least `min_item` bytes of the `remaining` ones: a damaged
/// count cannot make a reader allocate more than the envelope could hold.
pub(super) fn plausible(count: u32, remaining: usize, min_item: usize) -> usize {
    (count as usize).min(remaining / min_item.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_left_by_their_stated_size() {
        // A record frame of 20 bytes whose reader knows only its first 4:
        // the next value is read after the whole frame.
        let mut bytes = 20i64.to_le_bytes().to_vec();
        bytes.extend(7u32.to_le_bytes());
        bytes.extend([0xEE; 8]);
        bytes.extend(99u16.to_le_bytes());
        let mut r = Le::new(&bytes);
        let mut body = r.record_frame("probe").unwrap();
        assert_eq!(body.u32("x").unwrap(), 7);
        assert_eq!(r.u16("after").unwrap(), 99);
        // A list frame: negative size, then the item count.
        let mut list = (-16i64).to_le_bytes().to_vec();
        list.extend(3u32.to_le_bytes());
        list.extend([1, 2, 3, 4]);
        let (count, body) = Le::new(&list).list_frame("probe").unwrap();
        assert_eq!((count, body.remaining()), (3, 4));
        // Sizes past the envelope, or smaller than the frame's own header.
        assert!(Le::new(&(-99i64).to_le_bytes()).frame("probe").is_err());
        assert!(Le::new(&4i64.to_le_bytes()).frame("probe").is_err());
        assert!(Le::new(&i64::MIN.to_le_bytes()).frame("probe").is_err());
    }

    #[test]
    fn locators_of_every_kind() {
        let mut std_loc = 40i32.to_le_bytes().to_vec();
        std_loc.extend(503u64.to_le_bytes());
        assert_eq!(
            Le::new(&std_loc).locator("l").unwrap(),
            Locator::File {
                offset: 503,
                size: 40
            }
        );
        // Large: type 1, own size 20, then a 64-bit size and offset.
        let mut large = (-((1 << 24) | 20i32)).to_le_bytes().to_vec();
        large.extend((5u64 << 32).to_le_bytes());
        large.extend(77u64.to_le_bytes());
        large.extend(1u16.to_le_bytes());
        let mut r = Le::new(&large);
        assert_eq!(
            r.locator("l").unwrap(),
            Locator::File {
                offset: 77,
                size: 5 << 32
            }
        );
        assert_eq!(r.u16("after").unwrap(), 1);
        // An object-store locator (type 2, 12-byte payload) is skipped whole.
        let mut daos = (-((2 << 24) | 16i32)).to_le_bytes().to_vec();
        daos.extend([9; 12]);
        daos.extend(5u16.to_le_bytes());
        let mut r = Le::new(&daos);
        assert_eq!(r.locator("l").unwrap(), Locator::Other { kind: 2 });
        assert_eq!(r.u16("after").unwrap(), 5);
        assert!(Le::new(&(-2i32).to_le_bytes()).locator("l").is_err());
    }

    #[test]
    fn feature_flags_continue_while_negative() {
        let mut bytes = (1u64 << 63 | 4).to_le_bytes().to_vec();
        bytes.extend(0u64.to_le_bytes());
        assert_eq!(
            Le::new(&bytes).feature_flags("f").unwrap(),
            vec![1 << 63 | 4, 0]
        );
    }
}
