//! LZF decompression (Marc Lehmann's liblzf format, as h5py's `lzf` filter
//! stores each chunk: the bare compressed bytes, no header).
//!
//! The stream is a sequence of runs, each opened by a control byte:
//! - below 32: a literal run of `control + 1` bytes follows;
//! - otherwise a back-reference: its length is `(control >> 5) + 2`, where a
//!   top value of 7 takes one more byte added to it, and its distance is
//!   `((control & 31) << 8) + next byte + 1` bytes back in the output.
//!
//! The decoder never writes past `limit` bytes, so a stream cannot make it
//! allocate more than the caller allows.

use std::fmt;

/// Why a stream cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LzfError {
    /// The stream ends inside a run.
    Truncated,
    /// A back-reference points before the start of the output.
    BadReference,
    /// The output would exceed the limit.
    TooLong(usize),
}

impl fmt::Display for LzfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LzfError::Truncated => f.write_str("the LZF stream ends inside a run"),
            LzfError::BadReference => {
                f.write_str("an LZF back-reference points before the start of the output")
            }
            LzfError::TooLong(limit) => {
                write!(f, "the LZF stream decodes to more than {limit} bytes")
            }
        }
    }
}

impl std::error::Error for LzfError {}

/// Decodes `input`, refusing to produce more than `limit` bytes.
pub fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>, LzfError> {
    // A back-reference of 3 input bytes yields at most 264 output bytes; start
    // from a modest guess and let the vector grow, never past `limit`.
    let mut out = Vec::with_capacity(limit.min(input.len().saturating_mul(4)));
    let mut at = 0;
    let next = |at: &mut usize| -> Result<usize, LzfError> {
        let byte = *input.get(*at).ok_or(LzfError::Truncated)?;
        *at += 1;
        Ok(usize::from(byte))
    };
    while at < input.len() {
        let control = next(&mut at)?;
        if control < 32 {
            let len = control + 1;
            let literal = input.get(at..at + len).ok_or(LzfError::Truncated)?;
            at += len;
            grow_within(&out, len, limit)?;
            out.extend_from_slice(literal);
            continue;
        }
        let mut len = control >> 5;
        if len == 7 {
            len += next(&mut at)?;
        }
        len += 2;
        let distance = ((control & 31) << 8) + next(&mut at)? + 1;
        let start = out
            .len()
            .checked_sub(distance)
            .ok_or(LzfError::BadReference)?;
        grow_within(&out, len, limit)?;
        // The source may overlap what this run writes (a distance shorter than
        // the length repeats a pattern), so bytes are copied one at a time.
        for k in start..start + len {
            let byte = out[k];
            out.push(byte);
        }
    }
    Ok(out)
}

fn grow_within(out: &[u8], more: usize, limit: usize) -> Result<(), LzfError> {
    if out.len() + more > limit {
        Err(LzfError::TooLong(limit))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Streams built by hand from the format description above.

    #[test]
    fn literal_runs_are_copied() {
        assert_eq!(decompress(&[2, b'a', b'b', b'c'], 10).unwrap(), b"abc");
        assert_eq!(decompress(&[], 10).unwrap(), b"");
    }

    #[test]
    fn back_references_repeat_earlier_output() {
        // "ab", then a reference of length (1 << 5 >> 5) + 2 = 3 at distance 2:
        // "aba", giving "ababa".
        assert_eq!(
            decompress(&[1, b'a', b'b', 1 << 5, 1], 10).unwrap(),
            b"ababa"
        );
        // A long reference: top value 7 plus 10 more, + 2 = 19 copies of the
        // byte one back.
        let expected = vec![b'z'; 20];
        assert_eq!(
            decompress(&[0, b'z', 7 << 5, 10, 0], 100).unwrap(),
            expected
        );
        // A distance with high bits: (1 << 8) + 0 + 1 = 257 back, after 288
        // literal bytes 0, 1, 2, ...: the three bytes from position 31.
        let mut stream = Vec::new();
        for run in 0..9u8 {
            stream.push(31);
            stream.extend((0..32u8).map(|b| b.wrapping_add(run.wrapping_mul(32))));
        }
        stream.extend([(1 << 5) | 1, 0]);
        let out = decompress(&stream, 1000).unwrap();
        assert_eq!(out.len(), 291);
        assert_eq!(&out[288..], &[31, 32, 33]);
    }

    #[test]
    fn broken_streams_are_errors() {
        assert_eq!(decompress(&[5, b'a'], 10), Err(LzfError::Truncated));
        assert_eq!(decompress(&[0, b'a', 7 << 5], 10), Err(LzfError::Truncated));
        assert_eq!(
            decompress(&[0, b'a', 1 << 5, 5], 10),
            Err(LzfError::BadReference)
        );
        assert_eq!(decompress(&[1 << 5, 0], 10), Err(LzfError::BadReference));
    }

    #[test]
    fn output_stops_at_the_limit() {
        // 1 literal + a reference of 7 + 255 + 2 = 264 bytes.
        let bomb = [0, 0, 7 << 5, 255, 0];
        assert_eq!(decompress(&bomb, 265).unwrap().len(), 265);
        assert_eq!(decompress(&bomb, 264), Err(LzfError::TooLong(264)));
        assert_eq!(decompress(&[3, 1, 2, 3, 4], 3), Err(LzfError::TooLong(3)));
    }
}
