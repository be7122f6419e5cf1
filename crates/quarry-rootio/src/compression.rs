//! ROOT's compressed records: a sequence of blocks, each with a 9-byte header
//! (2-byte algorithm tag, 1 method byte, compressed and uncompressed sizes as
//! 3-byte little-endian integers) and a payload:
//! - `ZL`: a zlib stream (decoded with libdeflate, which needs the exact output
//!   size, which ROOT records);
//! - `L4`: an 8-byte big-endian XXH64 checksum of the LZ4 block that follows
//!   (decoded with the system's liblz4: see `lz4_block`);
//! - `XZ`: an xz stream (LZMA), read as a stream into the stated size and no
//!   further (see `xz_block`);
//! - `ZS`: a Zstandard frame;
//! - `CS`: ROOT's pre-2000 algorithm, not supported.

use std::mem::MaybeUninit;

use crate::FormatError;

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
    decompress_head_into(src, uncompressed_len, uncompressed_len, out)
}

/// Whether records written with a compression setting (algorithm * 100 +
/// level; algorithm 0 is ROOT's global default, zlib) are decompressed only
/// as far as the bytes wanted: zlib's are (`decompress_head_into`), the
/// others decode whole blocks, and level 0 stores them raw.
pub fn decodes_part_way(setting: i32) -> bool {
    matches!(setting / 100, 0 | 1) && setting % 100 > 0
}

/// Past the bytes wanted, how far a zlib block is inflated when only its head
/// is wanted: enough for any symbol that starts before the end of the head to
/// be written whole (a stored block holds at most 65,535 bytes, a match 258).
const HEAD_MARGIN: usize = 1 << 16;

/// `decompress_into`, but only as far as the first `want` bytes of the record
/// (at least those, at most all `uncompressed_len`): `out` holds them, and the
/// rest of the last block decoded when that block is not zlib. A page of
/// entries early in a large basket costs inflating the bytes up to it, not the
/// whole basket.
pub fn decompress_head_into(
    src: &[u8],
    uncompressed_len: usize,
    want: usize,
    out: &mut Vec<u8>,
) -> Result<(), FormatError> {
    if src.len() == uncompressed_len {
        out.clear();
        out.extend_from_slice(&src[..want.min(uncompressed_len)]);
        return Ok(());
    }
    let filled = decompress_head_over(src, uncompressed_len, want, out)?;
    out.truncate(filled);
    Ok(())
}

/// `decompress_head_into` for a compressed record, writing over the start of
/// `out` and returning how many bytes it decoded there; `out` grows when it
/// is too short but never shrinks. A buffer that held a large record and is
/// reused for a small one keeps its length, so it is not zeroed again when a
/// large one comes back (Rust zeroes what a vector grows by): a pass over the
/// decoded bytes for every basket read through a pool of buffers.
pub(super) fn decompress_head_over(
    src: &[u8],
    uncompressed_len: usize,
    want: usize,
    out: &mut Vec<u8>,
) -> Result<usize, FormatError> {
    let want = want.min(uncompressed_len);
    // The buffer grows block by block, each block present in `src` (a damaged
    // length must not make it allocate more than the blocks hold), and a reused
    // buffer is only zeroed where it grows: the blocks overwrite the rest.
    let mut filled = 0;
    let mut rest = src;
    while filled < want {
        let block = next_block(&mut rest, filled, uncompressed_len)?;
        // Only zlib is inflated part way: LZ4 and ZSTD decode so fast that
        // the rest of a block costs little, and their decoders promise
        // nothing of a cut-short output.
        let take = if block.tag == b"ZL" {
            (block.u_len).min(want.saturating_sub(filled).saturating_add(HEAD_MARGIN))
        } else {
            block.u_len
        };
        if out.len() < filled + take {
            out.resize(filled + take, 0);
        }
        if take < block.u_len {
            inflate_head(block.payload, &mut out[filled..filled + take])?;
            // Past `want`, the margin holds what was written before the
            // symbol that did not fit, then stale bytes: it is cut off.
            filled = want;
        } else {
            decode_block(
                block.tag,
                block.payload,
                as_room(&mut out[filled..filled + block.u_len]),
            )?;
            filled += block.u_len;
        }
    }
    Ok(filled)
}

/// A compressed record (`src`, not stored raw) decoded whole into `out`,
/// exactly its uncompressed size: the caller's own memory (the room for an
/// RNTuple page's typed values), so the bytes are written once, not decoded
/// into a buffer and copied, nor zeroed first. Every byte of `out` is
/// written when this returns `Ok`.
pub(super) fn decompress_exact(src: &[u8], out: &mut [MaybeUninit<u8>]) -> Result<(), FormatError> {
    let mut filled = 0;
    let mut rest = src;
    while filled < out.len() {
        let block = next_block(&mut rest, filled, out.len())?;
        decode_block(
            block.tag,
            block.payload,
            &mut out[filled..filled + block.u_len],
        )?;
        filled += block.u_len;
    }
    Ok(())
}

/// One compressed block of a record.
struct Block<'a> {
    tag: &'a [u8],
    payload: &'a [u8],
    u_len: usize,
}

/// The block at the start of `rest` (moved past it), of a record of
/// `uncompressed_len` bytes of which `filled` are decoded: refused when its
/// header runs past the bytes there are or its size past the record's.
fn next_block<'a>(
    rest: &mut &'a [u8],
    filled: usize,
    uncompressed_len: usize,
) -> Result<Block<'a>, FormatError> {
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
    *rest = &rest[HEADER + c_len..];
    Ok(Block {
        tag,
        payload,
        u_len,
    })
}

#[link(name = "lz4")]
unsafe extern "C" {
    /// liblz4's bounds-checked block decoder: the number of bytes written, or
    /// a negative number for a malformed block.
    fn LZ4_decompress_safe(
        src: *const std::ffi::c_char,
        dst: *mut std::ffi::c_char,
        compressed_size: std::ffi::c_int,
        dst_capacity: std::ffi::c_int,
    ) -> std::ffi::c_int;
}

/// Decodes an LZ4 block into `out`; the bytes written. liblz4 (1.9.4 on
/// Debian 12) rather than lz4_flex: on the benchmark's `nMuon` baskets it
/// decodes about a tenth faster, and decoding them is half of an LZ4
/// selection's time (docs/decisions/0029-lz4-through-liblz4.md).
fn lz4_block(block: &[u8], out: &mut [MaybeUninit<u8>]) -> Result<usize, FormatError> {
    let (Ok(src_len), Ok(dst_len)) = (i32::try_from(block.len()), i32::try_from(out.len())) else {
        return Err(corrupt(format!(
            "LZ4 block of {} bytes decoding to {} is beyond LZ4's 2 GB",
            block.len(),
            out.len()
        )));
    };
    // SAFETY: the safe decoder reads at most `src_len` bytes from `block`
    // and writes at most `dst_len` bytes into `out`, whatever the bytes.
    let written = unsafe {
        LZ4_decompress_safe(
            block.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            src_len,
            dst_len,
        )
    };
    usize::try_from(written).map_err(|_| corrupt(format!("bad LZ4 block (liblz4 error {written})")))
}

/// Most memory an XZ block's decoder may take, in KiB: ROOT writes LZMA with
/// liblzma's presets 1 to 9, whose dictionaries are at most 64 MiB; a header
/// asking for more is refused before anything is allocated.
const XZ_MEMORY_LIMIT_KIB: u32 = 65 << 10;

/// Decodes an XZ block into `out`, which is exactly the size the block's
/// header states; the bytes written. The stream is read as it decodes and
/// stops at the first byte past `out`: a block of a few kilobytes can hold a
/// stream of gigabytes (zeros compress about 7,000 to 1), and inflating it
/// whole before checking its size is what a hostile file counts on.
fn xz_block(payload: &[u8], out: &mut [u8]) -> Result<usize, FormatError> {
    use std::io::Read;
    let bad = |e: std::io::Error| corrupt(format!("bad LZMA block: {e}"));
    let mut stream = lzma_rust2::XzReader::new_mem_limit(payload, false, XZ_MEMORY_LIMIT_KIB);
    let mut filled = 0;
    while filled < out.len() {
        match stream.read(&mut out[filled..]) {
            // Fewer bytes than stated: the caller names both sizes.
            Ok(0) => return Ok(filled),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(bad(e)),
        }
    }
    // The end of the stream must come now (reading on also checks its index
    // and footer); one byte more is one byte past what the header states.
    let mut past = [0u8; 1];
    loop {
        match stream.read(&mut past) {
            Ok(0) => return Ok(filled),
            Ok(_) => {
                return Err(corrupt(format!(
                    "LZMA block decodes to more than the {} bytes its header says",
                    out.len()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(bad(e)),
        }
    }
}

/// A libdeflate decoder, freed when its thread ends. libdeflate itself
/// rather than its Rust wrapper: the wrapper writes only into initialised
/// memory (an RNTuple page's values would be zeroed before every page, a
/// thirtieth of a histogram's time), and panics on a result code it does not
/// know.
struct Inflater(std::ptr::NonNull<libdeflate_sys::libdeflate_decompressor>);

impl Drop for Inflater {
    fn drop(&mut self) {
        // SAFETY: the decoder came from `libdeflate_alloc_decompressor` and
        // is freed once, here.
        unsafe { libdeflate_sys::libdeflate_free_decompressor(self.0.as_ptr()) }
    }
}

thread_local! {
    /// One zlib decoder per thread, kept: making one allocates its tables.
    /// None if libdeflate could not allocate one.
    static INFLATER: Option<Inflater> =
        // SAFETY: allocating a decoder has no precondition (null: no memory).
        std::ptr::NonNull::new(unsafe { libdeflate_sys::libdeflate_alloc_decompressor() })
            .map(Inflater);
}

/// How a zlib stream inflated into a buffer ended.
enum Inflated {
    /// The stream ended, this many bytes written.
    Whole(usize),
    /// The buffer filled before the stream ended: every symbol before the
    /// first that did not fit is written.
    OutOfRoom,
}

/// Inflates the zlib stream `payload` into `out`, writing no byte past it.
fn inflate(payload: &[u8], out: &mut [MaybeUninit<u8>]) -> Result<Inflated, FormatError> {
    use libdeflate_sys as ld;
    INFLATER.with(|inflater| {
        let Some(inflater) = inflater else {
            return Err(corrupt("no memory for a zlib decoder".into()));
        };
        let mut written = 0usize;
        // SAFETY: libdeflate reads at most `payload.len()` bytes of `payload`
        // and writes at most `out.len()` bytes into `out` (which need not be
        // initialised), whatever the bytes; the decoder is this thread's
        // own, used by one call at a time.
        let result = unsafe {
            ld::libdeflate_zlib_decompress(
                inflater.0.as_ptr(),
                payload.as_ptr().cast(),
                payload.len(),
                out.as_mut_ptr().cast(),
                out.len(),
                &mut written,
            )
        };
        match result {
            ld::libdeflate_result_LIBDEFLATE_SUCCESS => Ok(Inflated::Whole(written)),
            ld::libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE => Ok(Inflated::OutOfRoom),
            ld::libdeflate_result_LIBDEFLATE_BAD_DATA => Err(corrupt(
                "bad zlib block: its data is invalid (a bad code, length or checksum)".into(),
            )),
            other => Err(corrupt(format!(
                "bad zlib block: libdeflate result {other}"
            ))),
        }
    })
}

thread_local! {
    /// One zstd decoding context per thread, kept: making one allocates and
    /// initialises its tables, which for a page of an RNTuple (often tens of
    /// kilobytes) costs about what decoding it does. None if zstd could not
    /// make one (a one-shot context is then made per block).
    static ZSTD: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        std::cell::RefCell::new(zstd::bulk::Decompressor::new().ok());
}

/// The first `out.len()` bytes of a zlib block that holds more. libdeflate
/// stops with "insufficient space" at the first symbol that does not fit,
/// everything before it written: with `HEAD_MARGIN` to spare, the bytes wanted
/// are all there (`a_zlib_head_is_the_head_of_the_whole` checks it on every
/// cut of real data, so a libdeflate that behaved otherwise fails the tests).
fn inflate_head(payload: &[u8], out: &mut [u8]) -> Result<(), FormatError> {
    match inflate(payload, as_room(out))? {
        Inflated::OutOfRoom => Ok(()),
        Inflated::Whole(n) => Err(corrupt(format!(
            "compressed block decoded to {n} bytes, fewer than its header says"
        ))),
    }
}

/// `bytes` as room a decoder writes into. Sound because what is written
/// through it is only ever decoded bytes, never an uninitialised one.
fn as_room(bytes: &mut [u8]) -> &mut [MaybeUninit<u8>] {
    // SAFETY: the same layout; `decode_block` writes initialised bytes only.
    unsafe { &mut *(bytes as *mut [u8] as *mut [MaybeUninit<u8>]) }
}

/// `room` zeroed, for the decoders that take initialised memory.
fn zeroed(room: &mut [MaybeUninit<u8>]) -> &mut [u8] {
    room.fill(MaybeUninit::new(0));
    // SAFETY: every byte was just written.
    unsafe { &mut *(room as *mut [MaybeUninit<u8>] as *mut [u8]) }
}

/// `room`'s first bytes as zstd fills them (ZSTD writes into memory that
/// need not be initialised and says how much it wrote).
struct ZstdRoom<'a> {
    room: &'a mut [MaybeUninit<u8>],
    filled: usize,
}

// SAFETY: `as_slice` covers only the bytes zstd said it wrote (`filled_until`),
// `capacity` and `as_mut_ptr` are the room's own.
unsafe impl zstd::zstd_safe::WriteBuf for ZstdRoom<'_> {
    fn as_slice(&self) -> &[u8] {
        // SAFETY: the first `filled` bytes were written by zstd.
        unsafe { std::slice::from_raw_parts(self.room.as_ptr().cast(), self.filled) }
    }
    fn capacity(&self) -> usize {
        self.room.len()
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.room.as_mut_ptr().cast()
    }
    unsafe fn filled_until(&mut self, n: usize) {
        self.filled = n;
    }
}

/// Decodes one block into `out` (room that need not be initialised), which
/// must come out exactly full: every byte of it written when this returns
/// `Ok`.
fn decode_block(
    tag: &[u8],
    payload: &[u8],
    out: &mut [MaybeUninit<u8>],
) -> Result<(), FormatError> {
    let expected = out.len();
    let produced = match tag {
        b"ZL" => match inflate(payload, out)? {
            Inflated::Whole(n) => n,
            Inflated::OutOfRoom => {
                return Err(corrupt(format!(
                    "zlib block decodes to more than the {expected} bytes its header says"
                )));
            }
        },
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
            lz4_block(block, out)?
        }
        b"XZ" => xz_block(payload, zeroed(out))?,
        b"ZS" => ZSTD
            .with_borrow_mut(|zstd| match zstd {
                Some(d) => d.decompress_to_buffer(
                    payload,
                    &mut ZstdRoom {
                        room: out,
                        filled: 0,
                    },
                ),
                None => zstd::bulk::decompress_to_buffer(payload, zeroed(out)),
            })
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
        // An LZ4 block that is not one, behind a checksum that matches it;
        // and a good block decoding to more than its record says.
        let junk = [0xf0, 0x01, 0x02];
        let mut payload = xxhash_rust::xxh64::xxh64(&junk, 0).to_be_bytes().to_vec();
        payload.extend_from_slice(&junk);
        let error = decompress(&block(b"L4", &payload, 100), 100).unwrap_err();
        assert!(error.to_string().contains("bad LZ4 block"), "{error}");
        let mut shorter = lz4_record(&plain);
        shorter[6..9].copy_from_slice(&(plain.len() as u32 - 1).to_le_bytes()[..3]);
        assert!(decompress(&shorter, plain.len() - 1).is_err());
        // A record claiming a terabyte: refused once its blocks run out, without
        // first allocating what it claims (found by the fuzzer).
        assert!(decompress(&lz4_record(&plain), 1 << 40).is_err());
    }

    /// Bytes that compress in every way deflate has: runs of text (long
    /// matches), float-like noise (literals), and random stretches that
    /// libdeflate stores raw (the longest symbols).
    fn mixed_bytes() -> Vec<u8> {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut out = Vec::new();
        for round in 0..6 {
            out.extend(text().repeat(20));
            for _ in 0..20_000 {
                let pt = 20.0 + (next() % 10_000) as f32 / 100.0;
                out.extend_from_slice(&pt.to_be_bytes());
            }
            out.extend((0..70_000 + round * 1_000).map(|_| next() as u8));
        }
        out
    }

    #[test]
    fn a_zlib_head_is_the_head_of_the_whole() {
        let plain = mixed_bytes();
        for level in [1, 6, 12] {
            let mut c =
                libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).unwrap());
            let mut z = vec![0; c.zlib_compress_bound(plain.len())];
            let n = c.zlib_compress(&plain, &mut z).unwrap();
            let record = block(b"ZL", &z[..n], plain.len());
            let mut head = Vec::new();
            for want in (0..plain.len())
                .step_by(4_093)
                .chain([1, plain.len() - 1, plain.len()])
            {
                decompress_head_into(&record, plain.len(), want, &mut head).unwrap();
                assert!(head.len() >= want, "level {level}: {} < {want}", head.len());
                let differs = head.iter().zip(&plain).position(|(a, b)| a != b);
                assert_eq!(differs, None, "level {level}, head of {want}");
            }
        }
    }

    /// Written over, a longer buffer keeps its length (its tail untouched),
    /// so a pooled buffer is never shortened and zeroed again as it grows.
    #[test]
    fn decoding_over_a_buffer_keeps_its_length() {
        let plain = text();
        let mut out = vec![0xAB; plain.len() * 3];
        let n = decompress_head_over(&lz4_record(&plain), plain.len(), plain.len(), &mut out);
        assert_eq!(n.unwrap(), plain.len());
        assert_eq!(out.len(), plain.len() * 3);
        assert_eq!(&out[..plain.len()], &plain[..]);
        assert!(out[plain.len()..].iter().all(|&b| b == 0xAB));
        let mut short = vec![1; 3];
        let n = decompress_head_over(&lz4_record(&plain), plain.len(), plain.len(), &mut short);
        assert_eq!((n.unwrap(), &short[..]), (plain.len(), &plain[..]));
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
