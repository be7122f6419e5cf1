//! Column types and pages: a page is fetched through its locator, its
//! checksum verified when it has one, decompressed by the same bounded
//! block decoder as TTree baskets into exactly the size its element count
//! gives, then decoded: little-endian numbers, bits, byte-split encodings
//! (undone within the page, with zigzag for signed integers and deltas for
//! collection offsets), half floats, truncated and quantized floats, and
//! the (index, tag) pairs of variants.

use xxhash_rust::xxh3::xxh3_64;

use super::bytes::{Locator, corrupt, mismatch};
use super::clusters::Page;
use super::envelope::{read_located, unzip};
use super::schema::ColumnRecord;
use crate::formats::FormatError;
use crate::formats::root::{RootFile, Values};

/// The column types of format 1.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Bit,
    Byte,
    Char,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Real16,
    Real32,
    Real64,
    Index32,
    Index64,
    Switch,
    SplitInt16,
    SplitUInt16,
    SplitInt32,
    SplitUInt32,
    SplitInt64,
    SplitUInt64,
    /// In the specification's table though ROOT never writes it; read as
    /// its name says.
    SplitReal16,
    SplitReal32,
    SplitReal64,
    SplitIndex32,
    SplitIndex64,
    Real32Trunc,
    Real32Quant,
}

use ColumnType as T;

impl ColumnType {
    pub fn from_code(code: u16) -> Option<ColumnType> {
        const ALL: [ColumnType; 30] = [
            T::Bit,
            T::Byte,
            T::Char,
            T::Int8,
            T::UInt8,
            T::Int16,
            T::UInt16,
            T::Int32,
            T::UInt32,
            T::Int64,
            T::UInt64,
            T::Real16,
            T::Real32,
            T::Real64,
            T::Index32,
            T::Index64,
            T::Switch,
            T::SplitInt16,
            T::SplitUInt16,
            T::SplitInt32,
            T::SplitUInt32,
            T::SplitInt64,
            T::SplitUInt64,
            T::SplitReal16,
            T::SplitReal32,
            T::SplitReal64,
            T::SplitIndex32,
            T::SplitIndex64,
            T::Real32Trunc,
            T::Real32Quant,
        ];
        ALL.get(usize::from(code)).copied()
    }

    /// The bits an element takes on storage, or the range allowed.
    fn bits(self) -> std::ops::RangeInclusive<u16> {
        match self {
            T::Bit => 1..=1,
            T::Byte | T::Char | T::Int8 | T::UInt8 => 8..=8,
            T::Int16 | T::UInt16 | T::Real16 | T::SplitInt16 | T::SplitUInt16 | T::SplitReal16 => {
                16..=16
            }
            T::Int32
            | T::UInt32
            | T::Real32
            | T::Index32
            | T::SplitInt32
            | T::SplitUInt32
            | T::SplitReal32
            | T::SplitIndex32 => 32..=32,
            T::Int64
            | T::UInt64
            | T::Real64
            | T::Index64
            | T::SplitInt64
            | T::SplitUInt64
            | T::SplitReal64
            | T::SplitIndex64 => 64..=64,
            T::Switch => 96..=96,
            T::Real32Trunc => 10..=31,
            T::Real32Quant => 1..=32,
        }
    }

    pub fn is_index(self) -> bool {
        matches!(
            self,
            T::Index32 | T::Index64 | T::SplitIndex32 | T::SplitIndex64
        )
    }

    /// The bytes a decoded element takes in memory.
    pub(super) fn decoded_size(self) -> u64 {
        match self {
            T::Bit | T::Byte | T::Char | T::Int8 | T::UInt8 => 1,
            T::Int16 | T::UInt16 | T::SplitInt16 | T::SplitUInt16 => 2,
            T::Int32 | T::UInt32 | T::SplitInt32 | T::SplitUInt32 => 4,
            T::Real16 | T::SplitReal16 | T::Real32 | T::SplitReal32 => 4,
            T::Real32Trunc | T::Real32Quant => 4,
            T::Switch => 16,
            _ => 8,
        }
    }

    /// The name the specification gives it.
    pub fn name(self) -> String {
        format!("{self:?}")
    }
}

/// A column as the reader uses it: its type, width and value range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ColumnCodec {
    pub kind: ColumnType,
    pub bits: u16,
    pub range: Option<(f64, f64)>,
}

impl ColumnCodec {
    /// The codec of a column record, or why it cannot be read.
    pub fn of(record: &ColumnRecord) -> Result<ColumnCodec, String> {
        let kind = ColumnType::from_code(record.type_code).ok_or_else(|| {
            format!(
                "column type {:#04x}, unknown to format 1.0",
                record.type_code
            )
        })?;
        if !kind.bits().contains(&record.bits) {
            return Err(format!(
                "a {kind:?} column of {} bits on storage",
                record.bits
            ));
        }
        if record.unknown_flags() != 0 {
            return Err(format!("column flags {:#06x}", record.flags));
        }
        if kind == T::Real32Quant
            && record
                .range
                .is_none_or(|(lo, hi)| lo.partial_cmp(&hi).is_none_or(|o| o.is_gt()))
        {
            return Err("a quantized column without a valid value range".into());
        }
        Ok(ColumnCodec {
            kind,
            bits: record.bits,
            range: record.range,
        })
    }

    /// The bytes `n` elements take on storage.
    pub fn stored_len(&self, n: u64) -> Option<u64> {
        n.checked_mul(u64::from(self.bits)).map(|b| b.div_ceil(8))
    }
}

/// A page's decoded elements.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Decoded {
    Values(Values),
    /// Collection offsets (the end of each item's elements, cluster-relative).
    Index(Vec<u64>),
    /// Variant switches: (index within the alternative, tag; 0 = none).
    Switch(Vec<(u64, u32)>),
}

impl Decoded {
    pub fn len(&self) -> usize {
        match self {
            Decoded::Values(v) => v.len(),
            Decoded::Index(v) => v.len(),
            Decoded::Switch(v) => v.len(),
        }
    }

    /// `n` zero elements (a deferred column's elements before its first).
    pub fn zeros(kind: ColumnType, n: usize) -> Decoded {
        match kind {
            k if k.is_index() => Decoded::Index(vec![0; n]),
            T::Switch => Decoded::Switch(vec![(0, 0); n]),
            T::Bit => Decoded::Values(Values::Bool(vec![false; n])),
            T::Byte | T::Char | T::UInt8 => Decoded::Values(Values::U8(vec![0; n])),
            T::Int8 => Decoded::Values(Values::I8(vec![0; n])),
            T::Int16 | T::SplitInt16 => Decoded::Values(Values::I16(vec![0; n])),
            T::UInt16 | T::SplitUInt16 => Decoded::Values(Values::U16(vec![0; n])),
            T::Int32 | T::SplitInt32 => Decoded::Values(Values::I32(vec![0; n])),
            T::UInt32 | T::SplitUInt32 => Decoded::Values(Values::U32(vec![0; n])),
            T::Int64 | T::SplitInt64 => Decoded::Values(Values::I64(vec![0; n])),
            T::UInt64 | T::SplitUInt64 => Decoded::Values(Values::U64(vec![0; n])),
            T::Real64 | T::SplitReal64 => Decoded::Values(Values::F64(vec![0.0; n])),
            _ => Decoded::Values(Values::F32(vec![0.0; n])),
        }
    }

    /// Appends elements `range` of `other` (of the same column type).
    pub fn extend_from(&mut self, other: &Decoded, range: std::ops::Range<usize>) {
        match (self, other) {
            (Decoded::Index(a), Decoded::Index(b)) => a.extend_from_slice(&b[range]),
            (Decoded::Switch(a), Decoded::Switch(b)) => a.extend_from_slice(&b[range]),
            (Decoded::Values(a), Decoded::Values(b)) => super::convert::extend_slice(a, b, range),
            _ => unreachable!("pages of one column share its type"),
        }
    }
}

/// Reads and decodes one page of `elements` elements.
pub(super) fn read_page(
    file: &RootFile,
    codec: &ColumnCodec,
    page: &Page,
    max_key_size: u64,
) -> Result<Decoded, FormatError> {
    let n = page.elements as usize;
    let len = codec
        .stored_len(u64::from(page.elements))
        .ok_or_else(|| corrupt("RNTuple page too large"))?;
    let locator = match page.locator {
        // The checksum's 8 bytes follow the page, outside its stated size.
        Locator::File { offset, size } if page.checksum => Locator::File {
            offset,
            size: size + 8,
        },
        other => other,
    };
    let mut stored = read_located(file, locator, max_key_size, "page")?;
    if page.checksum {
        let sum = stored.split_off(stored.len() - 8);
        let want = u64::from_le_bytes(sum.try_into().expect("8 bytes"));
        let got = xxh3_64(&stored);
        if mismatch(got, want) {
            return Err(corrupt(format!(
                "RNTuple page checksum mismatch ({got:016x} computed, {want:016x} stored)"
            )));
        }
    }
    let bytes = unzip(stored, len, "page")?;
    decode(codec, &bytes, n)
}

/// Decodes `n` elements from a page's uncompressed bytes (exactly as many
/// as `n` elements take, which the decompressor checked).
pub(super) fn decode(codec: &ColumnCodec, bytes: &[u8], n: usize) -> Result<Decoded, FormatError> {
    macro_rules! le {
        ($variant:ident, $t:ty) => {
            Values::$variant(
                bytes
                    .chunks_exact(std::mem::size_of::<$t>())
                    .map(|c| <$t>::from_le_bytes(c.try_into().expect("sized")))
                    .collect(),
            )
        };
    }
    macro_rules! split {
        ($variant:ident, $t:ty) => {
            Values::$variant(unsplit(bytes, n, <$t>::from_le_bytes))
        };
    }
    macro_rules! zigzag {
        ($variant:ident, $u:ty, $i:ty) => {
            Values::$variant(unsplit(bytes, n, |b| {
                let u = <$u>::from_le_bytes(b);
                ((u >> 1) as $i) ^ -((u & 1) as $i)
            }))
        };
    }
    let values = match codec.kind {
        T::Bit => Values::Bool((0..n).map(|i| bytes[i / 8] >> (i % 8) & 1 != 0).collect()),
        T::Byte | T::Char | T::UInt8 => Values::U8(bytes.to_vec()),
        T::Int8 => Values::I8(bytes.iter().map(|&b| b as i8).collect()),
        T::Int16 => le!(I16, i16),
        T::UInt16 => le!(U16, u16),
        T::Int32 => le!(I32, i32),
        T::UInt32 => le!(U32, u32),
        T::Int64 => le!(I64, i64),
        T::UInt64 => le!(U64, u64),
        T::Real32 => le!(F32, f32),
        T::Real64 => le!(F64, f64),
        T::Real16 => half_floats(bytes.chunks_exact(2).map(|c| [c[0], c[1]])),
        T::SplitInt16 => zigzag!(I16, u16, i16),
        T::SplitInt32 => zigzag!(I32, u32, i32),
        T::SplitInt64 => zigzag!(I64, u64, i64),
        T::SplitUInt16 => split!(U16, u16),
        T::SplitUInt32 => split!(U32, u32),
        T::SplitUInt64 => split!(U64, u64),
        T::SplitReal16 => half_floats(unsplit(bytes, n, |b: [u8; 2]| b).into_iter()),
        T::SplitReal32 => split!(F32, f32),
        T::SplitReal64 => split!(F64, f64),
        T::Real32Trunc => {
            let shift = 32 - u32::from(codec.bits);
            Values::F32(
                unpack_bits(bytes, codec.bits, n)
                    .map(|v| f32::from_bits(v << shift))
                    .collect(),
            )
        }
        T::Real32Quant => {
            let (lo, hi) = codec.range.expect("checked by ColumnCodec::of");
            let steps = ((1u64 << codec.bits) - 1) as f64;
            Values::F32(
                unpack_bits(bytes, codec.bits, n)
                    .map(|q| (lo + f64::from(q) * (hi - lo) / steps) as f32)
                    .collect(),
            )
        }
        T::Index32 => return Ok(Decoded::Index(index32(bytes).collect())),
        T::Index64 => return Ok(Decoded::Index(index64(bytes).collect())),
        T::SplitIndex32 => {
            let deltas = unsplit(bytes, n, |b| u64::from(u32::from_le_bytes(b)));
            return Ok(Decoded::Index(undelta(deltas)));
        }
        T::SplitIndex64 => {
            return Ok(Decoded::Index(undelta(unsplit(
                bytes,
                n,
                u64::from_le_bytes,
            ))));
        }
        T::Switch => {
            return Ok(Decoded::Switch(
                bytes
                    .chunks_exact(12)
                    .map(|c| {
                        let index = u64::from_le_bytes(c[..8].try_into().expect("8"));
                        let tag = u32::from_le_bytes(c[8..].try_into().expect("4"));
                        (index, tag)
                    })
                    .collect(),
            ));
        }
    };
    if values.len() != n {
        return Err(corrupt(format!(
            "RNTuple page of {n} elements decoded to {}",
            values.len()
        )));
    }
    Ok(Decoded::Values(values))
}

fn index32(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| u64::from(u32::from_le_bytes(c.try_into().expect("4"))))
}

fn index64(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8")))
}

/// Undoes delta encoding: the first element as stored, each next one the
/// difference from the one before (wrapping, as the writer's unsigned
/// arithmetic does).
fn undelta(mut values: Vec<u64>) -> Vec<u64> {
    let mut sum = 0u64;
    for v in &mut values {
        sum = sum.wrapping_add(*v);
        *v = sum;
    }
    values
}

/// Undoes byte splitting: the page holds every element's first byte, then
/// every second byte, and so on; each element's bytes gathered are handed
/// to `make`.
fn unsplit<const N: usize, T>(bytes: &[u8], n: usize, make: impl Fn([u8; N]) -> T) -> Vec<T> {
    let planes: [&[u8]; N] = std::array::from_fn(|k| &bytes[k * n..(k + 1) * n]);
    (0..n)
        .map(|i| make(std::array::from_fn(|k| planes[k][i])))
        .collect()
}

/// `n` unsigned integers of `bits` bits each, packed least significant bit
/// first.
fn unpack_bits(bytes: &[u8], bits: u16, n: usize) -> impl Iterator<Item = u32> + '_ {
    let bits = usize::from(bits);
    let mask = if bits == 32 {
        u64::from(u32::MAX)
    } else {
        (1u64 << bits) - 1
    };
    (0..n).map(move |i| {
        let start = i * bits;
        let mut window = [0u8; 8];
        let from = start / 8;
        let to = bytes.len().min(from + 8);
        window[..to - from].copy_from_slice(&bytes[from..to]);
        ((u64::from_le_bytes(window) >> (start % 8)) & mask) as u32
    })
}

fn half_floats(halves: impl Iterator<Item = [u8; 2]>) -> Values {
    Values::F32(halves.map(|h| half_to_f32(u16::from_le_bytes(h))).collect())
}

/// An IEEE 754 half-precision float, exactly as a single.
fn half_to_f32(h: u16) -> f32 {
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
mod tests {
    use super::*;

    #[test]
    fn half_floats_convert_exactly() {
        assert_eq!(half_to_f32(0x3c00), 1.0);
        assert_eq!(half_to_f32(0xc000), -2.0);
        assert_eq!(half_to_f32(0x7bff), 65504.0);
        assert_eq!(half_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(half_to_f32(0x8000).to_bits(), (-0.0f32).to_bits());
        assert!(half_to_f32(0x7c00).is_infinite());
        assert!(half_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn split_zigzag_and_delta_encodings() {
        // 1, -1, 2 as zigzag 2, 1, 4, split into low then high bytes.
        let codec = ColumnCodec {
            kind: T::SplitInt16,
            bits: 16,
            range: None,
        };
        let d = decode(&codec, &[2, 1, 4, 0, 0, 0], 3).unwrap();
        assert_eq!(d, Decoded::Values(Values::I16(vec![1, -1, 2])));
        // Offsets 3, 3, 10 stored as deltas 3, 0, 7.
        let codec = ColumnCodec {
            kind: T::SplitIndex32,
            bits: 32,
            range: None,
        };
        let mut bytes = vec![3, 0, 7];
        bytes.extend([0; 9]);
        assert_eq!(
            decode(&codec, &bytes, 3).unwrap(),
            Decoded::Index(vec![3, 3, 10])
        );
    }

    #[test]
    fn packed_bits_read_least_significant_first() {
        let got: Vec<u32> = unpack_bits(&[0b1010_0101, 0b0000_0011], 3, 4).collect();
        assert_eq!(got, [0b101, 0b100, 0b110, 0b001]);
        let all: Vec<u32> = unpack_bits(&u32::MAX.to_le_bytes(), 32, 1).collect();
        assert_eq!(all, [u32::MAX]);
    }
}
