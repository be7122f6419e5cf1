//! Baskets: the blocks of entries a branch's data is stored in. A basket is a key
//! whose header ends with the TBasket fields; its (possibly compressed) record
//! holds the entries' bytes up to `border`, then, for entries of varying size, a
//! table of where each entry starts.

use std::sync::Mutex;

use super::RootFile;
use super::compression::decompress_into;
use super::cursor::Cursor;
use super::tree::Branch;
use crate::formats::FormatError;

/// The TBasket fields at the end of a basket's key header, and the flag byte.
const TAIL: usize = 19;

/// One basket's entries, uncompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Basket {
    pub entries: usize,
    /// The buffer holding the entries' bytes at `range` (a basket stored raw is
    /// used where it was read, without a copy).
    buf: Vec<u8>,
    range: std::ops::Range<usize>,
    /// Where each entry starts in `data`, plus `data.len()`; only for entries of
    /// varying size.
    pub offsets: Option<Vec<usize>>,
}

impl Basket {
    /// The entries' bytes, back to back.
    pub fn data(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }
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

    /// Entry starts as stored (big-endian i32s counted from the key header), made
    /// relative to the data and closed with `border`; decoded in one pass.
    fn offsets(&self, c: &mut Cursor<'_>, mut out: Vec<usize>) -> Result<Vec<usize>, FormatError> {
        c.fits(self.entries, 4, "basket entry offsets")?;
        let raw = c.bytes(self.entries * 4, "basket entry offsets")?;
        let border = self.border();
        out.clear();
        out.reserve(self.entries + 1);
        let (key_len, limit) = (self.key_len as i64, border as i64);
        let mut prev = 0i64;
        for b in raw.chunks_exact(4) {
            let at = i64::from(i32::from_be_bytes(b.try_into().expect("4 bytes"))) - key_len;
            // In order from the data's start (prev >= 0) and within the data:
            // two comparisons cover negative, early, late and out-of-order starts.
            if at < prev || at > limit {
                return Err(FormatError::Corrupt(format!(
                    "basket entry offset {} out of order or range",
                    at + key_len
                )));
            }
            out.push(at as usize);
            prev = at;
        }
        out.push(border);
        Ok(out)
    }
}

/// Buffers of baskets already handed on, for the next baskets to reuse: reading a
/// branch keeps a window's worth of buffers instead of mapping (and faulting in)
/// fresh pages for every basket, which cost a quarter of a read's time.
#[derive(Default)]
struct Buffers {
    bytes: Mutex<Vec<Vec<u8>>>,
    offsets: Mutex<Vec<Vec<usize>>>,
}

impl Buffers {
    fn bytes(&self) -> Vec<u8> {
        self.bytes
            .lock()
            .map(|mut v| v.pop())
            .unwrap_or_default()
            .unwrap_or_default()
    }

    fn offsets(&self) -> Vec<usize> {
        self.offsets
            .lock()
            .map(|mut v| v.pop())
            .unwrap_or_default()
            .unwrap_or_default()
    }

    fn give_bytes(&self, buf: Vec<u8>) {
        if let Ok(mut pool) = self.bytes.lock() {
            pool.push(buf);
        }
    }

    fn recycle(&self, basket: Basket) {
        self.give_bytes(basket.buf);
        if let (Some(offsets), Ok(mut pool)) = (basket.offsets, self.offsets.lock()) {
            pool.push(offsets);
        }
    }
}

/// A basket written to the file as a key of its own.
fn read_free(
    file: &RootFile,
    seek: u64,
    bytes: usize,
    buffers: &Buffers,
) -> Result<Basket, FormatError> {
    let mut raw = buffers.bytes();
    file.read_into(seek, bytes, "basket", &mut raw)?;
    let h = Header::read(&mut Cursor::new(&raw, seek))?;
    if h.nbytes > raw.len() || h.key_len > h.nbytes {
        return Err(FormatError::Corrupt(format!(
            "basket at byte {seek} claims {} bytes, the branch records {bytes}",
            h.nbytes
        )));
    }
    let border = h.border();
    let stored = h.nbytes - h.key_len;
    let (buf, start) = if stored == h.obj_len {
        (raw, h.key_len)
    } else {
        let mut out = buffers.bytes();
        let unpacked = decompress_into(&raw[h.key_len..h.nbytes], h.obj_len, &mut out);
        buffers.give_bytes(raw);
        unpacked?;
        (out, 0)
    };
    let end = start + h.obj_len.min(buf.len() - start);
    if start + border > end {
        return Err(FormatError::Corrupt(format!(
            "basket data ends at {border}, past its {} bytes",
            end - start
        )));
    }
    let offsets = if start + border == end {
        None
    } else {
        let mut c = Cursor::new(&buf[start + border..end], seek);
        c.i32("basket entry count")?;
        Some(h.offsets(&mut c, buffers.offsets())?)
    };
    Ok(Basket {
        entries: h.entries,
        buf,
        range: start..start + border,
        offsets,
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
    let offsets = if fixed_size == Some(h.last as i64) {
        None
    } else {
        c.i32("basket entry count")?;
        Some(h.offsets(c, buffers.offsets())?)
    };
    c.skip(h.key_len, "embedded basket's second key")?;
    let mut data = buffers.bytes();
    data.clear();
    data.extend_from_slice(c.bytes(h.border(), "embedded basket data")?);
    Ok(Basket {
        entries: h.entries,
        range: 0..data.len(),
        buf: data,
        offsets,
    })
}

/// Where one basket of a branch is.
enum Source<'b> {
    Free { seek: u64, bytes: usize },
    Embedded(&'b [u8]),
}

impl RootFile {
    fn read_source(&self, source: &Source<'_>, buffers: &Buffers) -> Result<Basket, FormatError> {
        match source {
            Source::Free { seek, bytes } => read_free(self, *seek, *bytes, buffers),
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

    /// Hands every basket of a branch to `each`, in entry order: those written
    /// to the file, then those embedded in the TTree. Baskets are read and
    /// decompressed in parallel, a window of a few per thread at a time, while
    /// `each` works through the window before: memory holds two windows of
    /// baskets, never the whole branch.
    pub fn for_each_basket(
        &self,
        branch: &Branch,
        mut each: impl FnMut(&Basket) -> Result<(), FormatError> + Send,
    ) -> Result<(), FormatError> {
        use rayon::prelude::*;
        let sources = self.basket_sources(branch)?;
        let buffers = Buffers::default();
        let mut hand_on = |basket: Result<Basket, FormatError>| {
            let basket = basket?;
            each(&basket)?;
            buffers.recycle(basket);
            Ok::<(), FormatError>(())
        };
        // Already on a pool thread (branches read in parallel): one basket after
        // another, the other threads being busy with other branches.
        if rayon::current_thread_index().is_some() {
            for source in &sources {
                hand_on(self.read_source(source, &buffers))?;
            }
            return Ok(());
        }
        let read_window = |window: &[Source<'_>]| -> Vec<Result<Basket, FormatError>> {
            window
                .par_iter()
                .map(|s| self.read_source(s, &buffers))
                .collect()
        };
        let mut windows = sources.chunks(rayon::current_num_threads().max(1));
        let mut ahead = windows.next().map(read_window);
        while let Some(current) = ahead.take() {
            let next = windows.next();
            let (read, handed) = rayon::join(
                || next.map(read_window),
                || current.into_iter().try_for_each(&mut hand_on),
            );
            handed?;
            ahead = read;
        }
        Ok(())
    }
}
