//! A big-endian reader over bytes of a ROOT file in which every read is bounds
//! checked: a truncated or hostile file yields `FormatError::Corrupt`, never a panic.

use crate::FormatError;

pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Where `buf` starts in the file, for error messages.
    origin: u64,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8], origin: u64) -> Cursor<'a> {
        Cursor {
            buf,
            pos: 0,
            origin,
        }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The bytes between two positions already checked to lie in the buffer.
    pub fn between(&self, start: usize, end: usize) -> &'a [u8] {
        &self.buf[start..end]
    }

    /// Moves to `pos` (within the buffer), e.g. past an object by its byte count.
    pub fn set_pos(&mut self, pos: usize, what: &str) -> Result<(), FormatError> {
        if pos > self.buf.len() {
            return Err(FormatError::Corrupt(format!(
                "{what} ends at byte {} of the file, past its record",
                self.origin + pos as u64
            )));
        }
        self.pos = pos;
        Ok(())
    }

    pub fn f64(&mut self, what: &str) -> Result<f64, FormatError> {
        Ok(f64::from_be_bytes(self.array(what)?))
    }

    /// A NUL-terminated string (class names in object references).
    pub fn cstring(&mut self, what: &str) -> Result<String, FormatError> {
        let rest = &self.buf[self.pos..];
        let len = memchr::memchr(0, rest).ok_or_else(|| self.short(rest.len() + 1, what))?;
        let s = String::from_utf8_lossy(&rest[..len]).into_owned();
        self.pos += len + 1;
        Ok(s)
    }

    /// `n` values of `width` bytes each, checked to fit before anything is allocated.
    pub fn fits(&self, n: usize, width: usize, what: &str) -> Result<(), FormatError> {
        match n.checked_mul(width) {
            Some(bytes) if bytes <= self.remaining() => Ok(()),
            _ => Err(self.short(n.saturating_mul(width), what)),
        }
    }

    fn short(&self, n: usize, what: &str) -> FormatError {
        FormatError::Corrupt(format!(
            "unexpected end of data reading {what} ({n} bytes) at byte {} of the file",
            self.origin + self.pos as u64
        ))
    }

    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], FormatError> {
        if self.remaining() < n {
            return Err(self.short(n, what));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn skip(&mut self, n: usize, what: &str) -> Result<(), FormatError> {
        self.bytes(n, what).map(|_| ())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], FormatError> {
        let b = self.bytes(N, what)?;
        Ok(b.try_into().expect("length checked"))
    }

    pub fn u8(&mut self, what: &str) -> Result<u8, FormatError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub fn i16(&mut self, what: &str) -> Result<i16, FormatError> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    pub fn u16(&mut self, what: &str) -> Result<u16, FormatError> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub fn i32(&mut self, what: &str) -> Result<i32, FormatError> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    pub fn u32(&mut self, what: &str) -> Result<u32, FormatError> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    pub fn i64(&mut self, what: &str) -> Result<i64, FormatError> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    /// A file offset stored as 32 bits in small records and 64 in large ones.
    pub fn seek(&mut self, large: bool, what: &str) -> Result<u64, FormatError> {
        let v = if large {
            self.i64(what)?
        } else {
            i64::from(self.i32(what)?)
        };
        u64::try_from(v).map_err(|_| FormatError::Corrupt(format!("negative {what} ({v})")))
    }

    /// ROOT's TString: a length byte (255 means a 32-bit length follows), then bytes.
    pub fn tstring(&mut self, what: &str) -> Result<String, FormatError> {
        let short = self.u8(what)?;
        let len = if short == 255 {
            let long = self.i32(what)?;
            usize::try_from(long)
                .map_err(|_| FormatError::Corrupt(format!("negative length of {what}")))?
        } else {
            usize::from(short)
        };
        Ok(String::from_utf8_lossy(self.bytes(len, what)?).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_big_endian_values_and_tstrings() {
        let mut data = vec![
            0x01, 0x02, 0xff, 0xfe, 0, 0, 0, 5, 3, b'a', b'b', b'c', 255, 0, 0, 0, 2, b'x', b'y',
        ];
        data.extend_from_slice(&(-1i64).to_be_bytes());
        let mut c = Cursor::new(&data, 100);
        assert_eq!(c.u16("a").unwrap(), 0x0102);
        assert_eq!(c.i16("b").unwrap(), -2);
        assert_eq!(c.seek(false, "seek").unwrap(), 5);
        assert_eq!(c.tstring("s").unwrap(), "abc");
        assert_eq!(c.tstring("long").unwrap(), "xy");
        assert!(c.seek(true, "negative seek").is_err());
    }

    #[test]
    fn short_reads_are_errors_naming_the_offset() {
        let data = [0u8, 10, b'a'];
        let mut c = Cursor::new(&data, 500);
        c.u8("x").unwrap();
        let err = c.tstring("name").unwrap_err().to_string();
        assert!(err.contains("reading name (10 bytes) at byte 502"), "{err}");
        let mut c = Cursor::new(&[], 0);
        assert!(c.i64("x").is_err());
        let mut c = Cursor::new(&[255, 0xff, 0xff, 0xff, 0xff], 0);
        assert!(c.tstring("negative").is_err());
    }
}
