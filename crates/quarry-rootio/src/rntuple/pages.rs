//! Column types and pages: a page is fetched through its locator into a
//! buffer the read keeps, its checksum verified when it has one,
//! decompressed by the same bounded block decoder as TTree baskets into
//! exactly the size its element count gives (into a second kept buffer),
//! then decoded (`decode.rs`). A page of plain numbers wanted whole is
//! decompressed straight into its values instead (`fetch_page_into`), and a
//! page of offsets through a per-thread memo (`with_offsets_page`).

use std::mem::MaybeUninit;

use xxhash_rust::xxh3::xxh3_64;

use super::bytes::{Locator, corrupt, mismatch};
use super::clusters::Page;
use super::envelope::read_located_over;
use super::schema::ColumnRecord;
use crate::FormatError;
use crate::compression::{decompress_exact, decompress_head_over};
use crate::spare::SparePool;
use crate::{Prim, RootFile, Values};

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

    /// The type of the values it decodes to; None for offsets and switches.
    pub(super) fn value_prim(self) -> Option<Prim> {
        Some(match self {
            T::Bit => Prim::Bool,
            T::Byte | T::Char | T::UInt8 => Prim::U8,
            T::Int8 => Prim::I8,
            T::Int16 | T::SplitInt16 => Prim::I16,
            T::UInt16 | T::SplitUInt16 => Prim::U16,
            T::Int32 | T::SplitInt32 => Prim::I32,
            T::UInt32 | T::SplitUInt32 => Prim::U32,
            T::Int64 | T::SplitInt64 => Prim::I64,
            T::UInt64 | T::SplitUInt64 => Prim::U64,
            T::Real64 | T::SplitReal64 => Prim::F64,
            T::Real16 | T::SplitReal16 | T::Real32 | T::SplitReal32 => Prim::F32,
            T::Real32Trunc | T::Real32Quant => Prim::F32,
            _ => return None,
        })
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

    /// No elements of a column of `kind`, to append to.
    pub fn empty(kind: ColumnType) -> Decoded {
        Decoded::zeros(kind, 0)
    }

    /// Appends `n` zero elements (of this column's type, `kind`).
    pub fn extend_zeros(&mut self, kind: ColumnType, n: usize) {
        match self {
            Decoded::Index(v) => v.resize(v.len() + n, 0),
            Decoded::Switch(v) => v.resize(v.len() + n, (0, 0)),
            Decoded::Values(_) if n > 0 => self.extend_from(&Decoded::zeros(kind, n), 0..n),
            Decoded::Values(_) => {}
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

/// The buffers a read fetches pages into, kept from page to page: a page
/// read costs no fresh memory (fresh pages from the system cost a fault and
/// a zeroed page every 4 kB, a third of the reader's time when every page
/// took new ones).
#[derive(Debug, Default)]
pub(super) struct PageBuffers {
    /// The page as stored (with its checksum).
    stored: Vec<u8>,
    /// The page decompressed: its first `len` bytes, `fetch_page`'s answer.
    pub bytes: Vec<u8>,
}

/// Page buffers of reads done, for the next reads: the engine opens a
/// reader per column and run of clusters, and each would otherwise start
/// with fresh pages (within the pool's limits, `formats::root::spare`).
static SPARE: SparePool = SparePool::new();

impl PageBuffers {
    /// Buffers made of spare ones where there are some.
    pub fn pooled() -> PageBuffers {
        let mut spare = SPARE.take_last(2);
        let mut take = || spare.pop().unwrap_or_default();
        PageBuffers {
            stored: take(),
            bytes: take(),
        }
    }
}

impl Drop for PageBuffers {
    fn drop(&mut self) {
        SPARE.keep([
            std::mem::take(&mut self.stored),
            std::mem::take(&mut self.bytes),
        ]);
    }
}

/// Fetches a page into `buffers`: read, its checksum verified when it has
/// one, decompressed into the first bytes of `buffers.bytes`; returns how
/// many (exactly what its elements take on storage).
pub(super) fn fetch_page(
    file: &RootFile,
    codec: &ColumnCodec,
    page: &Page,
    max_key_size: u64,
    buffers: &mut PageBuffers,
) -> Result<usize, FormatError> {
    let (stored, len) = fetch_stored(file, codec, page, max_key_size, buffers)?;
    if stored == len {
        // Stored raw: the buffers trade places rather than copy the bytes
        // (the stored ones start the buffer).
        std::mem::swap(&mut buffers.stored, &mut buffers.bytes);
        return Ok(len);
    }
    decompress_head_over(&buffers.stored[..stored], len, len, &mut buffers.bytes)
}

/// `fetch_page` into `out` rather than `buffers.bytes`: the room for the
/// values the page decodes to, when its bytes are theirs (`decode::fill_direct`),
/// so they are written once. `out` must be exactly the page's size; every
/// byte of it is written when this returns `Ok`.
pub(super) fn fetch_page_into(
    file: &RootFile,
    codec: &ColumnCodec,
    page: &Page,
    max_key_size: u64,
    buffers: &mut PageBuffers,
    out: &mut [MaybeUninit<u8>],
) -> Result<(), FormatError> {
    let (stored, len) = fetch_stored(file, codec, page, max_key_size, buffers)?;
    if len != out.len() {
        return Err(corrupt(format!(
            "RNTuple page of {len} bytes decoded into {} bytes of values",
            out.len()
        )));
    }
    let stored = &buffers.stored[..stored];
    if stored.len() == len {
        for (to, &b) in out.iter_mut().zip(stored) {
            to.write(b);
        }
        return Ok(());
    }
    decompress_exact(stored, out)
}

/// The last page of collection offsets this thread decompressed: its
/// stored bytes (`key`) and its bytes decompressed. Collections of the same
/// sizes (the vectors uproot writes as fields of their own, each with its
/// own offsets column) store byte-identical offsets pages, and a scan reads
/// each cluster's columns one after the other on one thread: the second
/// such page is found here and not decompressed again. Its stored bytes are
/// compared whole, never a hash, so two different pages never meet here.
#[derive(Default)]
struct OffsetsMemo {
    key: Vec<u8>,
    bytes: Vec<u8>,
    /// The decompressed length; 0 when the memo holds nothing.
    len: usize,
}

/// Pages larger than this are not kept in the memo (its memory stays small).
const MEMO_LARGEST: usize = 16 << 20;

thread_local! {
    static OFFSETS_MEMO: std::cell::RefCell<OffsetsMemo> = Default::default();
    /// Offsets pages served from the memo on this thread (for the tests).
    #[cfg(test)]
    pub(super) static MEMO_HITS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Fetches a page of collection offsets and hands its decompressed bytes to
/// `decode`: from the thread's memo when its stored bytes are those of the
/// last offsets page decompressed here (`OffsetsMemo`), else decompressed
/// into the memo.
pub(super) fn with_offsets_page<R>(
    file: &RootFile,
    codec: &ColumnCodec,
    page: &Page,
    max_key_size: u64,
    buffers: &mut PageBuffers,
    decode: impl FnOnce(&[u8]) -> R,
) -> Result<R, FormatError> {
    let (stored_len, len) = fetch_stored(file, codec, page, max_key_size, buffers)?;
    let stored = &buffers.stored[..stored_len];
    if len > MEMO_LARGEST {
        let len = decompress_head_over(stored, len, len, &mut buffers.bytes)?;
        return Ok(decode(&buffers.bytes[..len]));
    }
    OFFSETS_MEMO.with_borrow_mut(|memo| {
        if memo.len == len && memo.key == stored {
            #[cfg(test)]
            MEMO_HITS.set(MEMO_HITS.get() + 1);
            return Ok(decode(&memo.bytes[..len]));
        }
        memo.len = 0;
        if stored.len() == len {
            memo.bytes.clear();
            memo.bytes.extend_from_slice(stored);
        } else {
            decompress_head_over(stored, len, len, &mut memo.bytes)?;
        }
        memo.key.clear();
        memo.key.extend_from_slice(stored);
        memo.len = len;
        Ok(decode(&memo.bytes[..len]))
    })
}

/// Reads a page as stored into `buffers.stored` and verifies its checksum
/// when it has one; returns the length of its stored bytes (without the
/// checksum) and of its elements uncompressed. A page stored in no fewer
/// bytes than its elements take is stored raw (equal) or damaged (more).
fn fetch_stored(
    file: &RootFile,
    codec: &ColumnCodec,
    page: &Page,
    max_key_size: u64,
    buffers: &mut PageBuffers,
) -> Result<(usize, usize), FormatError> {
    let len = codec
        .stored_len(u64::from(page.elements))
        .and_then(|len| usize::try_from(len).ok())
        .ok_or_else(|| corrupt("RNTuple page too large"))?;
    let locator = match page.locator {
        // The checksum's 8 bytes follow the page, outside its stated size.
        Locator::File { offset, size } if page.checksum => Locator::File {
            offset,
            size: size.saturating_add(8),
        },
        other => other,
    };
    let read = read_located_over(file, locator, max_key_size, "page", &mut buffers.stored)?;
    let mut stored = &buffers.stored[..read];
    if page.checksum {
        let (body, sum) = stored.split_at(read - 8);
        let want = u64::from_le_bytes(sum.try_into().expect("8 bytes"));
        let got = xxh3_64(body);
        if mismatch(got, want) {
            return Err(corrupt(format!(
                "RNTuple page checksum mismatch ({got:016x} computed, {want:016x} stored)"
            )));
        }
        stored = body;
    }
    if stored.len() > len {
        return Err(corrupt(format!(
            "RNTuple page stored in {} bytes, more than its {len} uncompressed",
            stored.len()
        )));
    }
    Ok((stored.len(), len))
}
