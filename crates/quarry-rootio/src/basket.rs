//! Baskets: the blocks of entries a branch's data is stored in. A basket is a key
//! whose header ends with the TBasket fields; its (possibly compressed) record
//! holds the entries' bytes up to `border`, then, for entries of varying size, a
//! table of where each entry starts.

use std::ops::Range;
use std::sync::Mutex;

use super::RootFile;
use super::compression::decompress_head_over;
use super::cursor::Cursor;
use super::spare::{SparePool, fitting};
use super::tree::Branch;
use crate::FormatError;

/// The TBasket fields at the end of a basket's key header, and the flag byte.
const TAIL: usize = 19;

/// One basket's entries, uncompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Basket {
    pub entries: usize,
    /// The buffer holding the entries' bytes at `range` (a basket stored raw is
    /// used where it was read, without a copy), and the entry offset table.
    buf: Vec<u8>,
    range: Range<usize>,
    /// For entries of varying size: where the table of entry starts is in `buf`
    /// (big-endian i32s counted from the key header), kept as stored and decoded
    /// by whoever needs it, checked as it is decoded.
    table: Option<Range<usize>>,
    key_len: usize,
}

impl Basket {
    /// The entries' bytes, back to back.
    pub fn data(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }

    /// Whether the entries vary in size (and so come with a table of offsets).
    pub fn has_offsets(&self) -> bool {
        self.table.is_some()
    }

    /// Each entry's start in `data`, then `data.len()`, into `out`; an error
    /// when the table is out of order or points outside the data. Without a
    /// table, `out` is left empty.
    pub fn entry_offsets(&self, out: &mut Vec<usize>) -> Result<(), FormatError> {
        out.clear();
        let Some(table) = &self.table else {
            return Ok(());
        };
        let border = self.range.len();
        out.reserve(self.entries + 1);
        out.extend(self.buf[table.clone()].chunks_exact(4).map(|b| {
            (i64::from(i32::from_be_bytes(b.try_into().expect("4 bytes"))) - self.key_len as i64)
                as usize
        }));
        out.push(border);
        // In order from the data's start and within the data: a negative start
        // wraps to a huge usize, so one comparison of neighbours covers all.
        let first_ok = out.first().is_none_or(|&o| o <= border);
        if !first_ok || out.windows(2).any(|w| w[0] > w[1]) {
            return Err(out_of_order());
        }
        Ok(())
    }

    /// The number of `item`-byte items in each entry, appended to `counts`,
    /// straight from the offset table: one pass that checks order and bounds
    /// and whole items with bit masks folded over all entries (no branch per
    /// entry, so it vectorises; compiled for AVX2 too, as `extend_from_be` is).
    /// Without a table, `counts` is left unchanged.
    pub fn push_item_counts(&self, counts: &mut Vec<u32>, item: usize) -> Result<(), FormatError> {
        let Some(table) = &self.table else {
            return Ok(());
        };
        let raw = &self.buf[table.clone()];
        let start = |b: &[u8; 4]| i64::from(i32::from_be_bytes(*b)) - self.key_len as i64;
        let (Some(first), Some(last)) = (raw.first_chunk::<4>(), raw.last_chunk::<4>()) else {
            return Ok(());
        };
        let (first, last) = (start(first), start(last));
        let border = self.range.len() as i64;
        counts.reserve(self.entries);
        #[cfg(target_arch = "x86_64")]
        let (whole, spanned) = if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            unsafe { entry_sizes_avx2(raw, item, counts) }
        } else {
            entry_sizes(raw, item, counts)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let (whole, spanned) = entry_sizes(raw, item, counts);
        let last_size = border - last;
        let last_whole = last_size >= 0 && last_size % item as i64 == 0;
        counts.push((last_size.max(0) / item as i64) as u32);
        // The entries must tile the data exactly, from its first byte to its
        // last, so that the counts add up to the values: the first starts at 0,
        // and the sizes add up to the distance from first to last start (a size
        // that wrapped around would add 2^32 to that sum).
        if !(first == 0 && whole && spanned == last - first && last_whole) {
            return Err(FormatError::Corrupt(
                "basket entry offsets out of order or range, or entries of partial items".into(),
            ));
        }
        Ok(())
    }
}

/// Items per entry for all but the last entry (the differences of neighbouring
/// starts in a big-endian i32 table), pushed to `counts`. Returns whether every
/// size is a non-negative whole number of items, and the sum of the sizes. Sizes
/// are i32, as the starts are; power-of-two item sizes use a shift and a mask.
#[inline(always)]
fn entry_sizes(raw: &[u8], item: usize, counts: &mut Vec<u32>) -> (bool, i64) {
    let n = (raw.len() / 4).saturating_sub(1);
    let at = counts.len();
    counts.resize(at + n, 0);
    // A plain loop over zipped slices (no iterator adapter left to a call of
    // its own, which would be compiled without AVX2).
    let pairs = raw
        .chunks_exact(4)
        .zip(raw[4.min(raw.len())..].chunks_exact(4));
    let (mut bad, mut sum) = (0i32, 0i64);
    if item.is_power_of_two() {
        let (shift, mask) = (item.trailing_zeros(), item as i32 - 1);
        for ((a, b), out) in pairs.zip(&mut counts[at..]) {
            let size = be_i32(b).wrapping_sub(be_i32(a));
            bad |= size & (i32::MIN | mask);
            sum += i64::from(size);
            *out = (size >> shift) as u32;
        }
    } else {
        let item = item as i32;
        for ((a, b), out) in pairs.zip(&mut counts[at..]) {
            let size = be_i32(b).wrapping_sub(be_i32(a));
            bad |= (size & i32::MIN) | (size % item);
            sum += i64::from(size);
            *out = (size / item) as u32;
        }
    }
    (bad == 0, sum)
}

#[inline(always)]
fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes(b.try_into().expect("4 bytes"))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn entry_sizes_avx2(raw: &[u8], item: usize, counts: &mut Vec<u32>) -> (bool, i64) {
    entry_sizes(raw, item, counts)
}

fn out_of_order() -> FormatError {
    FormatError::Corrupt("basket entry offsets out of order or range".into())
}

struct Header {
    nbytes: usize,
    obj_len: usize,
    key_len: usize,
    entry_size: i64,
    entries: usize,
    last: usize,
}

impl Header {
    fn read(c: &mut Cursor<'_>) -> Result<Header, FormatError> {
        let start = c.pos();
        let nbytes = c.i32("basket size")?;
        c.i16("basket key version")?;
        let obj_len = c.i32("basket object length")?;
        c.u32("basket date")?;
        let key_len = c.i16("basket key length")?;
        c.i16("basket cycle")?;
        let (Ok(nbytes), Ok(obj_len), Ok(key_len)) = (
            usize::try_from(nbytes),
            usize::try_from(obj_len),
            usize::try_from(key_len),
        ) else {
            return Err(FormatError::Corrupt("basket with negative sizes".into()));
        };
        if key_len < TAIL + 18 {
            return Err(FormatError::Corrupt(format!(
                "basket key header of {key_len} bytes"
            )));
        }
        c.set_pos(start + key_len - TAIL, "basket header")?;
        c.u16("basket version")?;
        c.i32("basket buffer size")?;
        let entry_size = i64::from(c.i32("basket entry size")?);
        let entries = c.i32("basket entries")?;
        let last = c.i32("basket end of data")?;
        c.u8("basket flag")?;
        let (Ok(entries), Ok(last)) = (usize::try_from(entries), usize::try_from(last)) else {
            return Err(FormatError::Corrupt(
                "basket with negative entry count or end".into(),
            ));
        };
        if last < key_len {
            return Err(FormatError::Corrupt(format!(
                "basket data ends ({last}) inside its header ({key_len})"
            )));
        }
        Ok(Header {
            nbytes,
            obj_len,
            key_len,
            entry_size,
            entries,
            last,
        })
    }

    fn border(&self) -> usize {
        self.last - self.key_len
    }

    /// Where the entry offset table lies in the cursor's buffer (after the
    /// entry count), checked to fit.
    fn table(&self, c: &mut Cursor<'_>, base: usize) -> Result<Range<usize>, FormatError> {
        c.i32("basket entry count")?;
        c.fits(self.entries, 4, "basket entry offsets")?;
        let at = base + c.pos();
        c.skip(self.entries * 4, "basket entry offsets")?;
        Ok(at..at + self.entries * 4)
    }
}

/// Buffers of baskets already handed on, for the next baskets to reuse: reading a
/// branch keeps a window's worth of buffers instead of mapping (and faulting in)
/// fresh pages for every basket, which cost a quarter of a read's time. A
/// reader dropped hands its buffers to a small process-wide pool that the
/// next readers draw from, so that a call (or a run of clusters) does not
/// start with fresh pages either.
#[derive(Default)]
pub(super) struct Buffers {
    bytes: Mutex<Vec<Vec<u8>>>,
}

/// Buffers kept between readers.
static SHARED: SparePool = SparePool::new();

impl Buffers {
    /// A buffer for `want` bytes: the shortest kept that is at least that
    /// long, else the longest. Growing a buffer zeroes its new bytes, so a
    /// buffer that held a small compressed basket and is handed out for a
    /// large decoded one costs a pass over memory (a fortieth of the LZ4
    /// selection's CPU when buffers went round in turn).
    fn bytes(&self, want: usize) -> Vec<u8> {
        let own = self
            .bytes
            .lock()
            .ok()
            .and_then(|mut v| fitting(&mut v, want));
        own.or_else(|| SHARED.take_fitting(want))
            .unwrap_or_default()
    }

    fn give_bytes(&self, buf: Vec<u8>) {
        if let Ok(mut pool) = self.bytes.lock() {
            pool.push(buf);
        }
    }

    pub(super) fn recycle(&self, basket: Basket) {
        self.give_bytes(basket.buf);
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        if let Ok(own) = self.bytes.get_mut() {
            SHARED.keep(own.drain(..));
        }
    }
}

/// The part of a basket's entry bytes a read wants, without the offset table:
/// the first `bytes`, or (`all`) all of them, counted by the caller from
/// elsewhere (a counter leaf), whose count disagreeing with the basket's is
/// corrupt data.
#[derive(Debug, Clone, Copy)]
pub(super) struct Head {
    pub bytes: usize,
    pub all: bool,
}

impl Head {
    /// The error when a basket holding `stored` bytes of entries cannot give
    /// this head; `at` says which basket.
    fn check(self, stored: usize, at: &dyn Fn() -> String) -> Result<(), FormatError> {
        if self.bytes > stored || self.all && self.bytes != stored {
            return Err(FormatError::Corrupt(format!(
                "{} holds {stored} bytes of entries, the entries wanted take {}",
                at(),
                self.bytes
            )));
        }
        Ok(())
    }
}

/// A basket written to the file as a key of its own; with `head`, only that
/// part of its entries' bytes is wanted, and its record is decompressed no
/// further than needed for them (no offset table then).
fn read_free(
    file: &RootFile,
    seek: u64,
    bytes: usize,
    buffers: &Buffers,
    head: Option<Head>,
) -> Result<Basket, FormatError> {
    // The pooled buffers keep their length (`read_over`): `raw` holds the
    // basket in its first `bytes`, stale bytes after them.
    let mut raw = buffers.bytes(bytes);
    file.read_over(seek, bytes, "basket", &mut raw)?;
    let h = Header::read(&mut Cursor::new(&raw[..bytes], seek))?;
    if h.nbytes > bytes || h.key_len > h.nbytes {
        return Err(FormatError::Corrupt(format!(
            "basket at byte {seek} claims {} bytes, the branch records {bytes}",
            h.nbytes
        )));
    }
    let border = h.border();
    if let Some(head) = head {
        head.check(border, &|| format!("basket at byte {seek}"))?;
    }
    let stored = h.nbytes - h.key_len;
    let (buf, start, end) = if stored == h.obj_len {
        (raw, h.key_len, h.nbytes)
    } else {
        let want = head.map_or(h.obj_len, |head| head.bytes);
        let mut out = buffers.bytes(want);
        let unpacked = decompress_head_over(&raw[h.key_len..h.nbytes], h.obj_len, want, &mut out);
        buffers.give_bytes(raw);
        (out, 0, unpacked?)
    };
    if let Some(Head { bytes: head, .. }) = head {
        // A damaged header can claim entries past the record it stores.
        if start + head > end {
            return Err(FormatError::Corrupt(format!(
                "basket at byte {seek} holds {} bytes, its first entries need {head}",
                end - start
            )));
        }
        return Ok(Basket {
            entries: h.entries,
            buf,
            range: start..start + head,
            table: None,
            key_len: h.key_len,
        });
    }
    if start + border > end {
        return Err(FormatError::Corrupt(format!(
            "basket data ends at {border}, past its {} bytes",
            end - start
        )));
    }
    let table = if start + border == end {
        None
    } else {
        let c = &mut Cursor::new(&buf[start + border..end], seek);
        Some(h.table(c, start + border)?)
    };
    Ok(Basket {
        entries: h.entries,
        buf,
        range: start..start + border,
        table,
        key_len: h.key_len,
    })
}

/// A basket streamed inside the TTree: header, entry offsets (when entries vary
/// in size), a second copy of the key header, then the data, uncompressed.
fn read_embedded(bytes: &[u8], buffers: &Buffers) -> Result<Basket, FormatError> {
    let c = &mut Cursor::new(bytes, 0);
    let h = Header::read(c)?;
    let fixed_size = h
        .entry_size
        .checked_mul(h.entries as i64)
        .and_then(|n| n.checked_add(h.key_len as i64));
    let table = if fixed_size == Some(h.last as i64) {
        None
    } else {
        Some(h.table(c, 0)?)
    };
    c.skip(h.key_len, "embedded basket's second key")?;
    // One buffer: the data, then a copy of the offset table.
    let mut buf = buffers.bytes(0);
    buf.clear();
    buf.extend_from_slice(c.bytes(h.border(), "embedded basket data")?);
    let data_len = buf.len();
    let table = table.map(|t| {
        buf.extend_from_slice(&bytes[t.clone()]);
        data_len..data_len + t.len()
    });
    Ok(Basket {
        entries: h.entries,
        range: 0..data_len,
        buf,
        table,
        key_len: h.key_len,
    })
}

/// Where one basket of a branch is.
enum Source<'b> {
    Free { seek: u64, bytes: usize },
    Embedded(&'b [u8]),
}

fn source_at<'s, 'b>(
    sources: &'s [Source<'b>],
    branch: &Branch,
    index: usize,
) -> Result<&'s Source<'b>, FormatError> {
    sources.get(index).ok_or_else(|| {
        FormatError::Corrupt(format!("branch '{}' has no basket {index}", branch.name))
    })
}

impl RootFile {
    fn read_source(&self, source: &Source<'_>, buffers: &Buffers) -> Result<Basket, FormatError> {
        match source {
            Source::Free { seek, bytes } => read_free(self, *seek, *bytes, buffers, None),
            Source::Embedded(b) => read_embedded(b, buffers),
        }
    }

    fn basket_sources<'b>(&self, branch: &'b Branch) -> Result<Vec<Source<'b>>, FormatError> {
        let mut out = Vec::with_capacity(branch.write_basket + branch.embedded_baskets.len());
        for i in 0..branch.write_basket {
            let negative = |what: &str| {
                FormatError::Corrupt(format!(
                    "basket {i} of '{}' has a negative {what}",
                    branch.name
                ))
            };
            let seek = u64::try_from(branch.basket_seek[i]).map_err(|_| negative("seek"))?;
            let bytes = usize::try_from(branch.basket_bytes[i]).map_err(|_| negative("size"))?;
            out.push(Source::Free { seek, bytes });
        }
        out.extend(branch.embedded_baskets.iter().map(|b| Source::Embedded(b)));
        Ok(out)
    }

    /// The entries each basket of a branch holds (`basket_ranges`).
    pub(super) fn basket_ranges(&self, branch: &Branch) -> Result<Vec<Range<u64>>, FormatError> {
        basket_ranges(branch)
    }

    /// Reads and decompresses basket `index` of a branch (in the order of
    /// `basket_ranges`).
    pub(super) fn basket(
        &self,
        branch: &Branch,
        index: usize,
        buffers: &Buffers,
    ) -> Result<Basket, FormatError> {
        let sources = self.basket_sources(branch)?;
        self.read_source(source_at(&sources, branch, index)?, buffers)
    }

    /// The `head` of basket `index`'s entry bytes (the caller knows how many
    /// entries they hold), decompressing no further than needed.
    pub(super) fn basket_head(
        &self,
        branch: &Branch,
        index: usize,
        head: Head,
        buffers: &Buffers,
    ) -> Result<Basket, FormatError> {
        let sources = self.basket_sources(branch)?;
        match source_at(&sources, branch, index)? {
            Source::Free { seek, bytes } => read_free(self, *seek, *bytes, buffers, Some(head)),
            embedded => {
                let mut basket = self.read_source(embedded, buffers)?;
                let at = || format!("basket {index} of '{}'", branch.name);
                if let Err(e) = head.check(basket.range.len(), &at) {
                    buffers.recycle(basket);
                    return Err(e);
                }
                basket.range.end = basket.range.start + head.bytes;
                basket.table = None;
                Ok(basket)
            }
        }
    }

    /// Hands every basket of a branch, passed through `map`, to `each`, in entry
    /// order: those written to the file, then those embedded in the TTree.
    /// Baskets are read, decompressed and mapped (decoded) in parallel, a window
    /// of one per thread at a time, while `each` works through the window
    /// before: memory holds two windows, never the whole branch. A basket's
    /// buffers go back to the pool as soon as `map` is done with it.
    pub(super) fn for_each_basket<T: Send>(
        &self,
        branch: &Branch,
        map: impl Fn(&Basket) -> Result<T, FormatError> + Sync,
        mut each: impl FnMut(T) -> Result<(), FormatError> + Send,
    ) -> Result<(), FormatError> {
        use rayon::prelude::*;
        let sources = self.basket_sources(branch)?;
        let buffers = Buffers::default();
        let read = |source: &Source<'_>| {
            let basket = self.read_source(source, &buffers)?;
            let mapped = map(&basket);
            buffers.recycle(basket);
            mapped
        };
        // Already on a pool thread (branches read in parallel): one basket after
        // another, the other threads being busy with other branches.
        if rayon::current_thread_index().is_some() {
            return sources.iter().try_for_each(|s| each(read(s)?));
        }
        let read_window = |window: &[Source<'_>]| -> Vec<Result<T, FormatError>> {
            window.par_iter().map(read).collect()
        };
        let mut windows = sources.chunks(rayon::current_num_threads().max(1));
        let mut ahead = windows.next().map(read_window);
        while let Some(current) = ahead.take() {
            let next = windows.next();
            let (read, handed) = rayon::join(
                || next.map(read_window),
                || current.into_iter().try_for_each(|t| each(t?)),
            );
            handed?;
            ahead = read;
        }
        Ok(())
    }
}

/// An embedded basket's header alone (its key and TBasket fields, not its
/// data): all `basket_ranges` reads of it, a few dozen bytes.
pub(super) fn header_only(bytes: &[u8]) -> Vec<u8> {
    // The key header's length is the big-endian i16 at byte 14.
    let key_len = bytes
        .get(14..16)
        .map_or(0, |b| i16::from_be_bytes([b[0], b[1]]).max(0) as usize);
    bytes[..key_len.min(bytes.len())].to_vec()
}

/// The entries each basket of a branch holds, in basket order: the baskets
/// written as keys from the branch's entry table, then the embedded ones from
/// their headers (in memory already, or kept alone by `Tree::skeleton`).
/// Reads nothing from the file.
pub fn basket_ranges(branch: &Branch) -> Result<Vec<Range<u64>>, FormatError> {
    let corrupt = || {
        FormatError::Corrupt(format!(
            "branch '{}' has an entry table out of order",
            branch.name
        ))
    };
    let mut ranges = Vec::with_capacity(branch.write_basket + branch.embedded_baskets.len());
    let table = &branch.basket_entry;
    for i in 0..branch.write_basket {
        let (Some(&a), Some(&b)) = (table.get(i), table.get(i + 1)) else {
            return Err(corrupt());
        };
        let (Ok(a), Ok(b)) = (u64::try_from(a), u64::try_from(b)) else {
            return Err(corrupt());
        };
        if a > b {
            return Err(corrupt());
        }
        ranges.push(a..b);
    }
    let mut at = ranges.last().map_or(0, |r| r.end);
    for bytes in &branch.embedded_baskets {
        let entries = Header::read(&mut Cursor::new(bytes, 0))?.entries as u64;
        ranges.push(at..at + entries);
        at += entries;
    }
    Ok(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A basket of 12 data bytes whose entry table holds `starts` (counted from
    /// a 10-byte key header, as ROOT stores them).
    fn basket(starts: &[i32]) -> Basket {
        let mut buf = vec![0u8; 12];
        for s in starts {
            buf.extend_from_slice(&(s + 10).to_be_bytes());
        }
        Basket {
            entries: starts.len(),
            table: Some(12..buf.len()),
            buf,
            range: 0..12,
            key_len: 10,
        }
    }

    #[test]
    fn counts_and_offsets_come_from_the_table() {
        let b = basket(&[0, 0, 4, 12]);
        let mut counts = Vec::new();
        b.push_item_counts(&mut counts, 4).unwrap();
        assert_eq!(counts, [0, 1, 2, 0]);
        let mut offsets = Vec::new();
        b.entry_offsets(&mut offsets).unwrap();
        assert_eq!(offsets, [0, 0, 4, 12, 12]);
        // Items of 3 bytes (an odd fixed array): 4 bytes hold a partial one.
        assert!(b.push_item_counts(&mut Vec::new(), 3).is_err());
    }

    #[test]
    fn damaged_tables_are_errors() {
        for starts in [&[4, 0][..], &[-2, 4], &[0, 16], &[0, 8, 4], &[13]] {
            let b = basket(starts);
            assert!(
                b.push_item_counts(&mut Vec::new(), 1).is_err(),
                "{starts:?}"
            );
            assert!(b.entry_offsets(&mut Vec::new()).is_err(), "{starts:?}");
        }
        // Counts must add up to the data: entries that skip its first bytes, or
        // starts that wrap i32 around with every size still looking sane (three
        // sizes of 1,431,655,768 bytes add up to 2^32 + 8), are refused.
        for starts in [&[4, 8][..], &[0, 1_431_655_768, -1_431_655_760, 8]] {
            let counted = basket(starts).push_item_counts(&mut Vec::new(), 1);
            assert!(counted.is_err(), "{starts:?}");
        }
    }
}
