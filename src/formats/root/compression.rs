//! ROOT's compressed records: a sequence of blocks, each with a 9-byte header
//! (2-byte algorithm tag, 1 method byte, compressed and uncompressed sizes as
//! 3-byte little-endian integers) and a payload:
//! - `ZL`: a zlib stream (decoded with libdeflate, which needs the exact output
//!   size, which ROOT records);
//! - `L4`: an 8-byte big-endian XXH64 checksum of the LZ4 block that follows;
//! - `XZ`: an xz stream (LZMA);
//! - `ZS`: a Zstandard frame;
//! - `CS`: ROOT's pre-2000 algorithm, not supported.

use crate::formats::FormatError;

const HEADER: usize = 9;

fn corrupt(why: String) -> FormatError {
    FormatError::Corrupt(why)
}

fn u24(b: &[u8]) -> usize {
    usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16
}

/// Decompresses a record of `uncompressed_len` bytes stored as `src`. A record
/// whose stored size equals its uncompressed size is stored raw.
pub fn decompress(src: &[u8], uncompressed_len: usize) -> Result<Vec<u8>, FormatError> {
    let mut out = Vec::new();
    decompress_into(src, uncompressed_len, &mut out)?;
    Ok(out)
}

/// `decompress` into a buffer the caller keeps (its old contents are dropped,
/// its capacity reused: a buffer used again costs no fresh pages).
pub fn decompress_into(
    src: &[u8],
    uncompressed_len: usize,
    out: &mut Vec<u8>,
) -> Result<(), FormatError> {
    if src.len() == uncompressed_len {
        out.clear();
        out.extend_from_slice(src);
        return Ok(());
    }
    // The buffer grows block by block, each block present in `src` (a damaged
    // length must not make it allocate more than the blocks hold), and a reused
    // buffer is only zeroed where it grows: the blocks overwrite the rest.
    let mut filled = 0;
    let mut rest = src;
    while filled < uncompressed_len {
        if rest.len() < HEADER {
            return Err(corrupt(format!(
                "compressed record ends after {filled} of {uncompressed_len} bytes"
            )));
        }
        let (tag, c_len, u_len) = (&rest[..2], u24(&rest[3..6]), u24(&rest[6..9]));
        if rest.len() < HEADER + c_len {
            return Err(corrupt(format!(
                "compressed block of {c_len} bytes is cut short ({} left)",
                rest.len() - HEADER
            )));
        }
        if filled + u_len > uncompressed_len {
            return Err(corrupt(format!(
                "compressed blocks hold more than the record's {uncompressed_len} bytes"
            )));
        }
        let payload = &rest[HEADER..HEADER + c_len];
        if out.len() < filled + u_len {
            out.resize(filled + u_len, 0);
        }
        decode_block(tag, payload, &mut out[filled..filled + u_len])?;
        filled += u_len;
        rest = &rest[HEADER + c_len..];
    }
    out.truncate(uncompressed_len);
    Ok(())
}

thread_local! {
    /// One zlib decoder per thread, kept: making one allocates its tables.
    static INFLATER: std::cell::RefCell<libdeflater::Decompressor> =
        std::cell::RefCell::new(libdeflater::Decompressor::new());
}

fn decode_block(tag: &[u8], payload: &[u8], out: &mut [u8]) -> Result<(), FormatError> {
    let expected = out.len();
    let produced = match tag {
        b"ZL" => INFLATER
            .with_borrow_mut(|inflater| inflater.zlib_decompress(payload, out))
            .map_err(|e| corrupt(format!("bad zlib block: {e}")))?,
        b"L4" => {
            if payload.len() < 8 {
                return Err(corrupt("LZ4 block shorter than its checksum".into()));
            }
            let (sum, block) = payload.split_at(8);
            let want = u64::from_be_bytes(sum.try_into().expect("8 bytes"));
            let got = xxhash_rust::xxh64::xxh64(block, 0);
            if want != got {
                return Err(corrupt(format!(
                    "LZ4 block checksum mismatch ({got:016x} != {want:016x})"
                )));
            }
            lz4_flex::block::decompress_into(block, out)
                .map_err(|e| corrupt(format!("bad LZ4 block: {e}")))?
        }
        b"XZ" => {
            let mut decoded = Vec::with_capacity(expected);
            lzma_rs::xz_decompress(&mut std::io::Cursor::new(payload), &mut decoded)
                .map_err(|e| corrupt(format!("bad LZMA block: {e}")))?;
            let n = decoded.len().min(expected);
            out[..n].copy_from_slice(&decoded[..n]);
            decoded.len()
        }
        b"ZS" => zstd::bulk::decompress_to_buffer(payload, out)
            .map_err(|e| corrupt(format!("bad ZSTD block: {e}")))?,
        b"CS" => {
            return Err(FormatError::Unsupported(
                "ROOT's old 'CS' compression algorithm is not supported".into(),
            ));
        }
        other => {
            return Err(corrupt(format!(
                "unknown compression algorithm tag {:?}",
                String::from_utf8_lossy(other)
            )));
        }
    };
    if produced != expected {
        return Err(corrupt(format!(
            "compressed block decoded to {produced} bytes, its header says {expected}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(tag: &[u8; 2], payload: &[u8], u_len: usize) -> Vec<u8> {
        let mut b = tag.to_vec();
        b.push(0);
        b.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
        b.extend_from_slice(&(u_len as u32).to_le_bytes()[..3]);
        b.extend_from_slice(payload);
        b
    }

    /// An L4 record of `plain`: ROOT's XXH64 checksum, then lz4_flex's block.
    fn lz4_record(plain: &[u8]) -> Vec<u8> {
        let lz = lz4_flex::block::compress(plain);
        let mut payload = xxhash_rust::xxh64::xxh64(&lz, 0).to_be_bytes().to_vec();
        payload.extend_from_slice(&lz);
        block(b"L4", &payload, plain.len())
    }

    fn text() -> Vec<u8> {
        b"muon_pt muon_eta muon_phi ".repeat(40)
    }

    #[test]
    fn decodes_each_algorithm_written_by_an_independent_encoder() {
        let plain = text();
        let zl = libdeflater::Compressor::new(libdeflater::CompressionLvl::default());
        let mut zbuf = vec![0; 2048];
        let n = {
            let mut c = zl;
            c.zlib_compress(&plain, &mut zbuf).unwrap()
        };
        assert_eq!(
            decompress(&block(b"ZL", &zbuf[..n], plain.len()), plain.len()).unwrap(),
            plain
        );

        assert_eq!(decompress(&lz4_record(&plain), plain.len()).unwrap(), plain);

        let zs = zstd::bulk::compress(&plain, 3).unwrap();
        // Two blocks in one record: ROOT splits records above 16 MiB this way.
        let mut two = block(b"ZS", &zs, plain.len());
        two.extend(block(b"ZS", &zs, plain.len()));
        let both = decompress(&two, 2 * plain.len()).unwrap();
        assert_eq!(&both[..plain.len()], plain.as_slice());
        assert_eq!(&both[plain.len()..], plain.as_slice());
    }

    #[test]
    fn damage_is_reported_not_panicked_on() {
        let plain = text();
        let mut rec = lz4_record(&plain);
        let last = rec.len() - 1;
        rec[last] ^= 0xff;
        assert!(
            decompress(&rec, plain.len())
                .unwrap_err()
                .to_string()
                .contains("checksum")
        );
        assert!(decompress(&block(b"ZL", b"not zlib", 100), 100).is_err());
        assert!(
            decompress(&block(b"QQ", b"x", 100), 100)
                .unwrap_err()
                .to_string()
                .contains("unknown")
        );
        assert!(matches!(
            decompress(&block(b"CS", b"x", 100), 100),
            Err(FormatError::Unsupported(_))
        ));
        let full = block(b"ZL", b"abcdef", 100);
        assert!(decompress(&full[..8], 100).is_err());
        assert!(decompress(&full[..12], 100).is_err());
        // A block claiming more than the record holds.
        assert!(decompress(&block(b"ZL", b"abc", 200), 100).is_err());
        // A record claiming a terabyte: refused once its blocks run out, without
        // first allocating what it claims (found by the fuzzer).
        assert!(decompress(&lz4_record(&plain), 1 << 40).is_err());
    }

    #[test]
    fn a_reused_buffer_holds_only_the_new_record() {
        let plain = text();
        let mut out = vec![0xAB; plain.len() * 3];
        decompress_into(&lz4_record(&plain), plain.len(), &mut out).unwrap();
        assert_eq!(out, plain);
        decompress_into(b"raw bytes", 9, &mut out).unwrap();
        assert_eq!(out, b"raw bytes");
    }
}
