//! Decoding a page's uncompressed bytes: any range of its elements appended
//! straight to the values being built (little-endian numbers, bits,
//! byte-split encodings gathered from their planes, with zigzag for signed
//! integers and deltas for collection offsets, half floats, truncated and
//! quantized floats, the (index, tag) pairs of variants), so a page read
//! whole costs one pass and no buffer of its own. A page only partly wanted
//! is `prepare`d once into its plain counterpart (the split undone), which
//! any range then decodes from as plain numbers.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::bytes::corrupt;
use super::pages::{ColumnCodec, ColumnType, Decoded};
use crate::FormatError;
use crate::Values;

use ColumnType as T;

impl ColumnCodec {
    /// The codec of this column's pages once `prepare`d: a split encoding's
    /// plain counterpart (offsets of either width as 64-bit ones, their
    /// deltas summed), other types as they are.
    pub(super) fn plain(&self) -> ColumnCodec {
        let (kind, bits) = match self.kind {
            T::SplitInt16 => (T::Int16, 16),
            T::SplitUInt16 => (T::UInt16, 16),
            T::SplitInt32 => (T::Int32, 32),
            T::SplitUInt32 => (T::UInt32, 32),
            T::SplitInt64 => (T::Int64, 64),
            T::SplitUInt64 => (T::UInt64, 64),
            T::SplitReal16 => (T::Real16, 16),
            T::SplitReal32 => (T::Real32, 32),
            T::SplitReal64 => (T::Real64, 64),
            T::SplitIndex32 | T::SplitIndex64 => (T::Index64, 64),
            other => (other, self.bits),
        };
        ColumnCodec {
            kind,
            bits,
            range: self.range,
        }
    }
}

/// Writes the `n` elements of a page of a split encoding (`bytes`, its
/// uncompressed bytes) into `out` (replaced) as its `plain` codec lays them
/// out. Other types are already plain: nothing to do, and false is returned.
pub(super) fn prepare(codec: &ColumnCodec, bytes: &[u8], n: usize, out: &mut Vec<u8>) -> bool {
    out.clear();
    match codec.kind {
        T::SplitInt16 => gather_into(bytes, n, out, |b| zigzag16(b).to_le_bytes()),
        T::SplitInt32 => gather_into(bytes, n, out, |b| zigzag32(b).to_le_bytes()),
        T::SplitInt64 => gather_into(bytes, n, out, |b| zigzag64(b).to_le_bytes()),
        T::SplitUInt16 | T::SplitReal16 => gather_into(bytes, n, out, |b: [u8; 2]| b),
        T::SplitUInt32 | T::SplitReal32 => gather_into(bytes, n, out, |b: [u8; 4]| b),
        T::SplitUInt64 | T::SplitReal64 => gather_into(bytes, n, out, |b: [u8; 8]| b),
        T::SplitIndex32 => {
            let mut sum = 0u64;
            gather_into(bytes, n, out, |b| {
                sum = sum.wrapping_add(u64::from(u32::from_le_bytes(b)));
                sum.to_le_bytes()
            })
        }
        T::SplitIndex64 => {
            let mut sum = 0u64;
            gather_into(bytes, n, out, |b| {
                sum = sum.wrapping_add(u64::from_le_bytes(b));
                sum.to_le_bytes()
            })
        }
        _ => return false,
    }
    true
}

/// Each element's bytes gathered from the planes of a byte-split page, made
/// into `M` bytes by `make`, appended to `out`.
fn gather_into<const N: usize, const M: usize>(
    bytes: &[u8],
    n: usize,
    out: &mut Vec<u8>,
    mut make: impl FnMut([u8; N]) -> [u8; M],
) {
    let planes: [&[u8]; N] = std::array::from_fn(|k| &bytes[k * n..(k + 1) * n]);
    out.reserve(n * M);
    (0..n).for_each(|i| out.extend_from_slice(&make(std::array::from_fn(|k| planes[k][i]))));
}

fn zigzag16(b: [u8; 2]) -> i16 {
    let u = u16::from_le_bytes(b);
    ((u >> 1) as i16) ^ -((u & 1) as i16)
}

fn zigzag32(b: [u8; 4]) -> i32 {
    let u = u32::from_le_bytes(b);
    ((u >> 1) as i32) ^ -((u & 1) as i32)
}

fn zigzag64(b: [u8; 8]) -> i64 {
    let u = u64::from_le_bytes(b);
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Appends elements `range` of a page of `n` elements (`bytes`, exactly the
/// bytes `n` elements take, which the decompressor checked) to `out`, which
/// holds the type the codec decodes to.
pub(super) fn decode_into(
    codec: &ColumnCodec,
    bytes: &[u8],
    n: usize,
    range: Range<usize>,
    out: &mut Decoded,
) -> Result<(), FormatError> {
    if range.start > range.end || range.end > n {
        return Err(corrupt(format!(
            "RNTuple elements {}..{} of a page of {n}",
            range.start, range.end
        )));
    }
    let r = range;
    let wrong = || corrupt("RNTuple page decoded into values of another type");
    match out {
        Decoded::Index(v) => match codec.kind {
            T::Index32 => extend_le(v, bytes, r, |b| u64::from(u32::from_le_bytes(b))),
            T::Index64 => extend_le(v, bytes, r, u64::from_le_bytes),
            T::SplitIndex32 => undelta_into(v, bytes, n, r, |b| u64::from(u32::from_le_bytes(b))),
            T::SplitIndex64 => undelta_into(v, bytes, n, r, u64::from_le_bytes),
            _ => return Err(wrong()),
        },
        Decoded::Switch(v) if codec.kind == T::Switch => {
            v.extend(bytes[r.start * 12..r.end * 12].chunks_exact(12).map(|c| {
                let index = u64::from_le_bytes(c[..8].try_into().expect("8"));
                let tag = u32::from_le_bytes(c[8..].try_into().expect("4"));
                (index, tag)
            }))
        }
        Decoded::Switch(_) => return Err(wrong()),
        Decoded::Values(values) => decode_values(codec, bytes, n, r, values).ok_or_else(wrong)?,
    }
    Ok(())
}

/// For a page of `n` elements wanted whole whose stored bytes are its
/// values' own (plain little-endian numbers of the values' type, on a
/// little-endian machine): the page decoded straight into the memory after
/// `out`'s values, `fill` writing its bytes into that room, which then holds
/// `n` more values of `out`. The page's bytes are written once, where a page
/// buffer decoded into the values wrote them twice and read them once more,
/// and the room is not zeroed first (a thirtieth of a histogram's time when
/// it was). None, with `fill` not called, for every other page; `out` is
/// untouched unless `fill` succeeds.
///
/// # Safety
/// `fill` must have written every byte of the room it is handed when it
/// returns `Ok`.
pub(super) unsafe fn fill_direct(
    codec: &ColumnCodec,
    n: usize,
    out: &mut Decoded,
    fill: impl FnOnce(&mut [MaybeUninit<u8>]) -> Result<(), FormatError>,
) -> Option<Result<(), FormatError>> {
    /// # Safety
    /// As `fill_direct`'s.
    unsafe fn grow<V: bytemuck::Pod>(
        v: &mut Vec<V>,
        n: usize,
        fill: impl FnOnce(&mut [MaybeUninit<u8>]) -> Result<(), FormatError>,
    ) -> Result<(), FormatError> {
        v.reserve(n);
        let old = v.len();
        let room = &mut v.spare_capacity_mut()[..n];
        let len = std::mem::size_of_val(room);
        // SAFETY: the room's own memory, as bytes that need not be
        // initialised (no validity to break).
        let bytes = unsafe { std::slice::from_raw_parts_mut(room.as_mut_ptr().cast(), len) };
        fill(bytes)?;
        // SAFETY: `fill` wrote every byte of the `n` values' room (the
        // caller's promise), and any bytes are a `V` (plain old data).
        unsafe { v.set_len(old + n) };
        Ok(())
    }
    if cfg!(target_endian = "big") {
        return None;
    }
    // SAFETY (each arm): as this function's.
    Some(unsafe {
        match (codec.kind, out) {
            (T::Byte | T::Char | T::UInt8, Decoded::Values(Values::U8(v))) => grow(v, n, fill),
            (T::Int8, Decoded::Values(Values::I8(v))) => grow(v, n, fill),
            (T::Int16, Decoded::Values(Values::I16(v))) => grow(v, n, fill),
            (T::UInt16, Decoded::Values(Values::U16(v))) => grow(v, n, fill),
            (T::Int32, Decoded::Values(Values::I32(v))) => grow(v, n, fill),
            (T::UInt32, Decoded::Values(Values::U32(v))) => grow(v, n, fill),
            (T::Int64, Decoded::Values(Values::I64(v))) => grow(v, n, fill),
            (T::UInt64, Decoded::Values(Values::U64(v))) => grow(v, n, fill),
            (T::Real32, Decoded::Values(Values::F32(v))) => grow(v, n, fill),
            (T::Real64, Decoded::Values(Values::F64(v))) => grow(v, n, fill),
            _ => return None,
        }
    })
}

/// `decode_into` for the value types; None when `out` holds another type.
fn decode_values(
    codec: &ColumnCodec,
    bytes: &[u8],
    n: usize,
    r: Range<usize>,
    out: &mut Values,
) -> Option<()> {
    match (codec.kind, out) {
        (T::Bit, Values::Bool(v)) => v.extend(r.map(|i| bytes[i / 8] >> (i % 8) & 1 != 0)),
        (T::Byte | T::Char | T::UInt8, Values::U8(v)) => v.extend_from_slice(&bytes[r]),
        (T::Int8, Values::I8(v)) => v.extend(bytes[r].iter().map(|&b| b as i8)),
        (T::Int16, Values::I16(v)) => extend_le(v, bytes, r, i16::from_le_bytes),
        (T::UInt16, Values::U16(v)) => extend_le(v, bytes, r, u16::from_le_bytes),
        (T::Int32, Values::I32(v)) => extend_le(v, bytes, r, i32::from_le_bytes),
        (T::UInt32, Values::U32(v)) => extend_le(v, bytes, r, u32::from_le_bytes),
        (T::Int64, Values::I64(v)) => extend_le(v, bytes, r, i64::from_le_bytes),
        (T::UInt64, Values::U64(v)) => extend_le(v, bytes, r, u64::from_le_bytes),
        (T::Real32, Values::F32(v)) => extend_le(v, bytes, r, f32::from_le_bytes),
        (T::Real64, Values::F64(v)) => extend_le(v, bytes, r, f64::from_le_bytes),
        (T::Real16, Values::F32(v)) => {
            extend_le(v, bytes, r, |h| half_to_f32(u16::from_le_bytes(h)))
        }
        (T::SplitInt16, Values::I16(v)) => extend_split(v, bytes, n, r, zigzag16),
        (T::SplitInt32, Values::I32(v)) => extend_split(v, bytes, n, r, zigzag32),
        (T::SplitInt64, Values::I64(v)) => extend_split(v, bytes, n, r, zigzag64),
        (T::SplitUInt16, Values::U16(v)) => extend_split(v, bytes, n, r, u16::from_le_bytes),
        (T::SplitUInt32, Values::U32(v)) => extend_split(v, bytes, n, r, u32::from_le_bytes),
        (T::SplitUInt64, Values::U64(v)) => extend_split(v, bytes, n, r, u64::from_le_bytes),
        (T::SplitReal16, Values::F32(v)) => {
            extend_split(v, bytes, n, r, |h| half_to_f32(u16::from_le_bytes(h)))
        }
        (T::SplitReal32, Values::F32(v)) => extend_split(v, bytes, n, r, f32::from_le_bytes),
        (T::SplitReal64, Values::F64(v)) => extend_split(v, bytes, n, r, f64::from_le_bytes),
        (T::Real32Trunc, Values::F32(v)) => {
            let shift = 32 - u32::from(codec.bits);
            v.extend(unpack_bits(bytes, codec.bits, r).map(|x| f32::from_bits(x << shift)))
        }
        (T::Real32Quant, Values::F32(v)) => {
            let (lo, hi) = codec.range.expect("checked by ColumnCodec::of");
            let steps = ((1u64 << codec.bits) - 1) as f64;
            v.extend(
                unpack_bits(bytes, codec.bits, r)
                    .map(|q| (lo + f64::from(q) * (hi - lo) / steps) as f32),
            )
        }
        _ => return None,
    }
    Some(())
}

/// Appends elements `r` of plain little-endian numbers of `N` bytes each.
fn extend_le<V, const N: usize>(
    out: &mut Vec<V>,
    bytes: &[u8],
    r: Range<usize>,
    make: impl Fn([u8; N]) -> V,
) {
    out.extend(
        bytes[r.start * N..r.end * N]
            .chunks_exact(N)
            .map(|c| make(c.try_into().expect("sized"))),
    );
}

/// Appends elements `r` of a byte-split page of `n` elements: the page holds
/// every element's first byte, then every second byte, and so on; each
/// element's bytes gathered are handed to `make`.
fn extend_split<V, const N: usize>(
    out: &mut Vec<V>,
    bytes: &[u8],
    n: usize,
    r: Range<usize>,
    make: impl Fn([u8; N]) -> V,
) {
    let planes: [&[u8]; N] = std::array::from_fn(|k| &bytes[k * n + r.start..k * n + r.end]);
    out.extend((0..r.len()).map(|i| make(std::array::from_fn(|k| planes[k][i]))));
}

/// Appends elements `r` of a byte-split, delta-encoded page of offsets (the
/// first as stored, each next one the difference from the one before,
/// wrapping as the writer's unsigned arithmetic does). A range not from the
/// page's start first sums the deltas before it.
fn undelta_into<const N: usize>(
    out: &mut Vec<u64>,
    bytes: &[u8],
    n: usize,
    r: Range<usize>,
    delta: impl Fn([u8; N]) -> u64,
) {
    let planes: [&[u8]; N] = std::array::from_fn(|k| &bytes[k * n..(k + 1) * n]);
    let at = |i: usize| delta(std::array::from_fn(|k| planes[k][i]));
    let mut sum = (0..r.start).fold(0u64, |s, i| s.wrapping_add(at(i)));
    out.extend(r.map(|i| {
        sum = sum.wrapping_add(at(i));
        sum
    }));
}

/// Elements `r` of unsigned integers of `bits` bits each, packed least
/// significant bit first.
pub(super) fn unpack_bits(
    bytes: &[u8],
    bits: u16,
    r: Range<usize>,
) -> impl Iterator<Item = u32> + '_ {
    let bits = usize::from(bits);
    let mask = if bits == 32 {
        u64::from(u32::MAX)
    } else {
        (1u64 << bits) - 1
    };
    r.map(move |i| {
        let start = i * bits;
        let mut window = [0u8; 8];
        let from = start / 8;
        let to = bytes.len().min(from + 8);
        window[..to - from].copy_from_slice(&bytes[from..to]);
        ((u64::from_le_bytes(window) >> (start % 8)) & mask) as u32
    })
}

/// An IEEE 754 half-precision float, exactly as a single.
pub(super) fn half_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exponent = u32::from(h >> 10) & 0x1f;
    let mantissa = u32::from(h) & 0x3ff;
    let bits = match (exponent, mantissa) {
        (0, 0) => sign,
        // Subnormal: mantissa * 2^-24, exact in a single.
        (0, m) => {
            let value = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -value } else { value };
        }
        (0x1f, m) => sign | 0x7f80_0000 | m << 13,
        (e, m) => sign | (e + 127 - 15) << 23 | m << 13,
    };
    f32::from_bits(bits)
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
