//! Decoding a branch into a column: typed values for all entries, plus per-entry
//! counts for jagged data. Covers scalars of every basic type, fixed-size arrays,
//! C-style variable arrays (a counter leaf, or a split object's 1-byte header),
//! `std::vector` of numbers, and strings (`char*`, TString, `std::string`,
//! `std::vector<std::string>`).

use std::sync::Mutex;

use super::RootFile;
use super::basket::Basket;
use super::cursor::Cursor;
use super::tree::Branch;
use super::types::{Decoding, Layout, LeafType, decoding, leaf_decoding};
use super::values::Values;
use crate::FormatError;

/// An object streamed with its byte count has this bit set in the count's word.
const BYTE_COUNT_MASK: u32 = 0x4000_0000;

/// Columns given back by finished scans (`Column::recycle`) for the next
/// ones: a scan's columns hold a basket's values each (1.4 MB for the 10M
/// benchmark's clusters), which fresh from the system cost a page fault and
/// a zeroed page every 4 kB, a tenth of a fast selection's time. At most
/// `SPARE_BYTES` are kept.
static SPARE: Mutex<Vec<Column>> = Mutex::new(Vec::new());
const SPARE_BYTES: usize = 32 << 20;

/// A decoded branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub entries: usize,
    pub leaf_type: LeafType,
    pub values: Values,
    /// Elements per item: the fixed array size (`[3]`), 1 for scalars.
    pub inner: usize,
    /// Items per entry, for jagged columns (counter leaf).
    pub counts: Option<Vec<u32>>,
    layout: Layout,
}

impl RootFile {
    /// Reads every entry of a branch.
    pub fn column(&self, branch: &Branch) -> Result<Column, FormatError> {
        self.decode(branch, decoding(branch)?)
    }

    /// Reads every entry of one leaf of a leaf list (by its position).
    pub fn leaf_column(&self, branch: &Branch, leaf: usize) -> Result<Column, FormatError> {
        self.decode(branch, leaf_decoding(branch, leaf)?)
    }

    fn decode(&self, branch: &Branch, d: Decoding) -> Result<Column, FormatError> {
        let mut col = Column::empty(d);
        col.reserve_for(branch, self.size);
        self.for_each_decoded(branch, d, |chunk| {
            col.extend_from(chunk);
            Ok(())
        })?;
        check_entries(branch, col.entries)?;
        Ok(col)
    }

    /// Decodes a branch basket by basket, handing each basket's entries to `each`
    /// as a column of their own: memory holds a few baskets, not the branch.
    pub fn for_each_chunk(
        &self,
        branch: &Branch,
        mut each: impl FnMut(&Column) -> Result<(), FormatError> + Send,
    ) -> Result<(), FormatError> {
        let mut entries = 0;
        self.for_each_decoded(branch, decoding(branch)?, |chunk| {
            entries += chunk.entries;
            each(chunk)
        })?;
        check_entries(branch, entries)
    }

    /// Baskets decoded in parallel into chunks, handed to `each` in entry order;
    /// chunks come back to a pool once handed on, so their buffers are reused.
    fn for_each_decoded(
        &self,
        branch: &Branch,
        d: Decoding,
        mut each: impl FnMut(&Column) -> Result<(), FormatError> + Send,
    ) -> Result<(), FormatError> {
        let spare: Mutex<Vec<Column>> = Mutex::new(Vec::new());
        self.for_each_basket(
            branch,
            |basket| {
                let mut chunk = spare
                    .lock()
                    .ok()
                    .and_then(|mut s| s.pop())
                    .unwrap_or_else(|| Column::empty(d));
                chunk.clear();
                append(&mut chunk, basket, &branch.name)?;
                Ok(chunk)
            },
            |chunk| {
                each(&chunk)?;
                if let Ok(mut s) = spare.lock() {
                    s.push(chunk);
                }
                Ok(())
            },
        )
    }
}

impl Column {
    /// Appends another chunk of the same branch.
    pub(super) fn extend_from(&mut self, chunk: &Column) {
        self.entries += chunk.entries;
        self.values.extend_from(&chunk.values);
        if let (Some(counts), Some(more)) = (&mut self.counts, &chunk.counts) {
            counts.extend_from_slice(more);
        }
    }

    /// Makes this column a copy of `other`, reusing its buffers.
    pub fn copy_from(&mut self, other: &Column) {
        if self.layout_differs(other.decoding()) {
            *self = other.clone();
            return;
        }
        self.clear();
        self.extend_from(other);
    }

    /// The layout this column was made for.
    fn decoding(&self) -> Decoding {
        Decoding {
            leaf_type: self.leaf_type,
            inner: self.inner,
            jagged: self.counts.is_some(),
            layout: self.layout,
        }
    }

    /// Empties the column, keeping its buffers' capacity.
    pub(super) fn clear(&mut self) {
        self.entries = 0;
        self.values.clear();
        if let Some(counts) = &mut self.counts {
            counts.clear();
        }
    }

    /// Reserves room for the whole branch at once (its uncompressed size bounds the
    /// values), so the column is not copied as it grows. The sizes come from the
    /// file: a damaged one could claim exabytes, so the reservation is capped at
    /// what the file could plausibly hold (64 times its size); a column beyond
    /// that still grows as it is read.
    fn reserve_for(&mut self, branch: &Branch, file_size: u64) {
        const PLAUSIBLE_RATIO: u64 = 64;
        let cap = usize::try_from(file_size.saturating_mul(PLAUSIBLE_RATIO)).unwrap_or(usize::MAX);
        let bytes = usize::try_from(branch.tot_bytes).unwrap_or(0).min(cap);
        let entries = usize::try_from(branch.entries).unwrap_or(0);
        if let (LeafType::Prim(p), Some(counts)) = (self.leaf_type, &mut self.counts) {
            // Every entry of a jagged branch takes at least its 4-byte offset.
            counts.reserve(entries.min(bytes / 4));
            self.values.reserve(bytes / p.size());
        } else if let LeafType::Prim(p) = self.leaf_type {
            self.values
                .reserve(entries.saturating_mul(self.inner).min(bytes / p.size()));
        }
    }

    /// Whether this column was made for another layout than `d`'s.
    pub(super) fn layout_differs(&self, d: Decoding) -> bool {
        self.leaf_type != d.leaf_type
            || self.inner != d.inner
            || self.counts.is_some() != d.jagged
            || self.layout != d.layout
    }

    /// An empty column of layout `d`, made of a spare column's memory when
    /// one of that layout was given back (`recycle`).
    pub(super) fn pooled(d: Decoding) -> Column {
        let spare = SPARE.lock().ok().and_then(|mut pool| {
            let at = pool.iter().position(|c| !c.layout_differs(d))?;
            Some(pool.swap_remove(at))
        });
        match spare {
            Some(mut column) => {
                column.clear();
                column
            }
            None => Column::empty(d),
        }
    }

    /// Gives this column's memory to the columns made next (`pooled`), as
    /// far as the pool keeps it.
    pub fn recycle(self) {
        let Some(bytes) = self.spare_bytes() else {
            return;
        };
        let Ok(mut pool) = SPARE.lock() else {
            return;
        };
        let kept: usize = pool.iter().filter_map(Column::spare_bytes).sum();
        if bytes > 0 && kept + bytes <= SPARE_BYTES {
            pool.push(self);
        }
    }

    /// What the pool counts for this column: its buffers' room in bytes.
    fn spare_bytes(&self) -> Option<usize> {
        let counts = self.counts.as_ref().map_or(0, |c| c.capacity() * 4);
        Some(self.values.capacity_bytes()? + counts)
    }

    /// An empty column of the same layout, without memory (what a column
    /// taken out leaves behind).
    pub fn take(&mut self) -> Column {
        std::mem::replace(self, Column::empty(self.decoding()))
    }

    pub(super) fn empty(d: Decoding) -> Column {
        Column {
            entries: 0,
            leaf_type: d.leaf_type,
            values: Values::empty(d.leaf_type),
            inner: d.inner,
            counts: d.jagged.then(Vec::new),
            layout: d.layout,
        }
    }
}

fn check_entries(branch: &Branch, entries: usize) -> Result<(), FormatError> {
    if entries as i64 != branch.entries {
        return Err(FormatError::Corrupt(format!(
            "branch '{}' records {} entries, its baskets hold {entries}",
            branch.name, branch.entries
        )));
    }
    Ok(())
}

pub(super) fn append(col: &mut Column, basket: &Basket, branch: &str) -> Result<(), FormatError> {
    let corrupt = |why: String| FormatError::Corrupt(format!("branch '{branch}': {why}"));
    // Entry starts, for the layouts that walk entry by entry.
    let entries_of = || {
        if !basket.has_offsets() {
            return Err(corrupt(
                "entries of varying size without entry offsets".into(),
            ));
        }
        let mut offsets = Vec::new();
        basket.entry_offsets(&mut offsets)?;
        Ok(offsets)
    };
    match (col.leaf_type, col.layout) {
        (LeafType::Str, Layout::Object { framed }) => {
            append_string_objects(col, basket, &entries_of()?, framed)
        }
        (LeafType::Str, _) => append_tstrings(col, basket, &entries_of()?),
        (LeafType::Prim(_), Layout::Strided { offset, stride }) => {
            append_strided(col, basket.data(), basket.entries, offset, stride)
        }
        (LeafType::Prim(_), Layout::Object { .. }) => {
            if !basket.has_offsets() && basket.data().is_empty() {
                return append_empty_entries(col, basket);
            }
            append_vectors(col, basket, &entries_of()?)
        }
        (LeafType::Prim(_), Layout::Headed(header)) => {
            append_headed(col, basket, &entries_of()?, header)
        }
        (LeafType::Prim(_), Layout::Plain) => append_plain(col, basket),
    }
    .map_err(|e| match e {
        FormatError::Corrupt(why) => corrupt(why),
        other => other,
    })?;
    col.entries += basket.entries;
    Ok(())
}

/// The first `entries` entries of a basket whose data was cut to just their
/// bytes: items of one size back to back (`Plain`, `Strided`), or a counter
/// leaf's arrays with the item counts the caller read from the counter (and
/// sized the data by).
pub(super) fn append_head(
    col: &mut Column,
    basket: &Basket,
    entries: usize,
    counts: Option<&[u32]>,
    branch: &str,
) -> Result<(), FormatError> {
    let corrupt = |why: String| FormatError::Corrupt(format!("branch '{branch}': {why}"));
    let item = item_size(col);
    let data = basket.data();
    match (col.leaf_type, col.layout, &mut col.counts, counts) {
        (LeafType::Prim(_), Layout::Strided { offset, stride }, None, None) => {
            append_strided(col, data, entries, offset, stride).map_err(|e| match e {
                FormatError::Corrupt(why) => corrupt(why),
                other => other,
            })?;
        }
        (LeafType::Prim(_), Layout::Plain, None, None) => {
            if data.len() != entries * item {
                return Err(corrupt(format!(
                    "{entries} entries of {item} bytes in {} bytes",
                    data.len()
                )));
            }
            col.values.extend_from_be(data);
        }
        (LeafType::Prim(_), Layout::Plain, Some(own), Some(given)) => {
            // The reader cut the data to the bytes these counts give, and the
            // basket checked them against its own length.
            debug_assert_eq!(given.len(), entries);
            debug_assert_eq!(
                given.iter().map(|&n| n as usize * item).sum::<usize>(),
                data.len()
            );
            own.extend_from_slice(given);
            col.values.extend_from_be(data);
        }
        _ => {
            return Err(FormatError::Unsupported(format!(
                "branch '{branch}': its entries are found through the basket's offset table"
            )));
        }
    }
    col.entries += entries;
    Ok(())
}

/// The size of one item: an element times the fixed array length.
fn item_size(col: &Column) -> usize {
    match col.leaf_type {
        LeafType::Prim(p) => p.size() * col.inner,
        LeafType::Str => 1,
    }
}

/// Numbers back to back: fixed-size entries, or entries of varying size whose
/// item counts follow from the entry offsets (a counter leaf's arrays).
fn append_plain(col: &mut Column, basket: &Basket) -> Result<(), FormatError> {
    let item = item_size(col);
    let data = basket.data();
    if !data.len().is_multiple_of(item) {
        return Err(FormatError::Corrupt(format!(
            "{} bytes of {item}-byte items",
            data.len()
        )));
    }
    match (&mut col.counts, basket.has_offsets()) {
        (Some(counts), true) => basket.push_item_counts(counts, item)?,
        (Some(counts), false) if data.is_empty() => {
            counts.extend(std::iter::repeat_n(0, basket.entries))
        }
        (Some(_), false) => {
            return Err(FormatError::Corrupt(
                "jagged data without entry offsets".into(),
            ));
        }
        (None, _) if data.len() != basket.entries * item => {
            return Err(FormatError::Corrupt(format!(
                "{} entries of {item} bytes in {} bytes",
                basket.entries,
                data.len()
            )));
        }
        (None, _) => {}
    }
    col.values.extend_from_be(data);
    Ok(())
}

/// Entries that each start with a fixed header, then their items.
fn append_headed(
    col: &mut Column,
    basket: &Basket,
    offsets: &[usize],
    header: usize,
) -> Result<(), FormatError> {
    let item = item_size(col);
    let data = basket.data();
    let counts = col.counts.get_or_insert_with(Vec::new);
    for w in offsets.windows(2) {
        let start = w[0] + header;
        if start > w[1] || !(w[1] - start).is_multiple_of(item) {
            return Err(FormatError::Corrupt(format!(
                "an entry of {} bytes does not fit its header",
                w[1] - w[0]
            )));
        }
        counts.push(((w[1] - start) / item) as u32);
        col.values.extend_from_be(&data[start..w[1]]);
    }
    Ok(())
}

/// A basket of entries that are all empty (nothing stored, no offsets).
fn append_empty_entries(col: &mut Column, basket: &Basket) -> Result<(), FormatError> {
    if let Some(counts) = &mut col.counts {
        counts.extend(std::iter::repeat_n(0, basket.entries));
    }
    Ok(())
}

/// Skips the byte count and version a streamed object starts with.
fn skip_object_header(c: &mut Cursor<'_>) -> Result<(), FormatError> {
    if c.u32("object byte count")? & BYTE_COUNT_MASK == 0 {
        return Err(FormatError::Corrupt(
            "a streamed object without its byte count".into(),
        ));
    }
    c.skip(2, "object version")
}

/// One leaf of a leaf list: its items at `offset` in each `stride`-byte entry.
fn append_strided(
    col: &mut Column,
    data: &[u8],
    entries: usize,
    offset: usize,
    stride: usize,
) -> Result<(), FormatError> {
    if data.len() != entries * stride {
        return Err(FormatError::Corrupt(format!(
            "{entries} entries of {stride} bytes in {} bytes",
            data.len()
        )));
    }
    let width = item_size(col);
    let mut picked = Vec::with_capacity(entries * width);
    for entry in data.chunks_exact(stride) {
        picked.extend_from_slice(&entry[offset..offset + width]);
    }
    col.values.extend_from_be(&picked);
    Ok(())
}

/// Each entry a `std::vector` of numbers: the object header, a length, the items.
fn append_vectors(col: &mut Column, basket: &Basket, offsets: &[usize]) -> Result<(), FormatError> {
    let item = item_size(col);
    let data = basket.data();
    let counts = col.counts.get_or_insert_with(Vec::new);
    for w in offsets.windows(2) {
        let c = &mut Cursor::new(&data[w[0]..w[1]], 0);
        skip_object_header(c)?;
        let n = c.u32("vector length")? as usize;
        if n.checked_mul(item) != Some(c.remaining()) {
            return Err(FormatError::Corrupt(format!(
                "a vector of {n} items in {} bytes",
                c.remaining()
            )));
        }
        counts.push(n as u32);
        col.values
            .extend_from_be(c.bytes(c.remaining(), "vector items")?);
    }
    Ok(())
}

/// Each entry one TString (`char*` leaves, TString members).
fn append_tstrings(
    col: &mut Column,
    basket: &Basket,
    offsets: &[usize],
) -> Result<(), FormatError> {
    let Values::Str(strings) = &mut col.values else {
        unreachable!("string column")
    };
    for w in offsets.windows(2) {
        let mut c = Cursor::new(&basket.data()[w[0]..w[1]], 0);
        strings.push(c.tstring("string entry")?);
    }
    Ok(())
}

/// Each entry a streamed `std::string`, or a `std::vector<std::string>` (jagged).
fn append_string_objects(
    col: &mut Column,
    basket: &Basket,
    offsets: &[usize],
    framed: bool,
) -> Result<(), FormatError> {
    let Values::Str(strings) = &mut col.values else {
        unreachable!("string column")
    };
    for w in offsets.windows(2) {
        let c = &mut Cursor::new(&basket.data()[w[0]..w[1]], 0);
        // A vector is always framed; a lone string only inside a split object.
        if framed || col.counts.is_some() {
            skip_object_header(c)?;
        }
        match &mut col.counts {
            None => strings.push(c.tstring("string")?),
            Some(counts) => {
                let n = c.u32("vector length")? as usize;
                // Each string takes at least its 1-byte length.
                c.fits(n, 1, "vector of strings")?;
                for _ in 0..n {
                    strings.push(c.tstring("string in a vector")?);
                }
                counts.push(n as u32);
            }
        }
        if c.remaining() != 0 {
            return Err(FormatError::Corrupt(format!(
                "{} bytes left after a string entry",
                c.remaining()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Column, SPARE_BYTES};
    use crate::Values;
    use crate::types::{Decoding, Layout, LeafType, Prim};

    /// A recycled column comes back empty, with its room, for the same
    /// layout only; one larger than the pool keeps is not kept. (A layout no
    /// other test reads, so that tests running beside this one cannot take
    /// its columns.)
    #[test]
    fn recycled_columns_come_back_empty_with_their_room() {
        let d = Decoding {
            leaf_type: LeafType::Prim(Prim::U16),
            inner: 7,
            jagged: false,
            layout: Layout::Plain,
        };
        let mut column = Column::pooled(d);
        column.values = Values::U16(Vec::with_capacity(70_000));
        column.values.extend_from_be(&[0, 1, 0, 2]);
        column.entries = 1;
        column.recycle();
        let again = Column::pooled(d);
        assert_eq!((again.entries, again.values.len()), (0, 0));
        assert!(matches!(&again.values, Values::U16(v) if v.capacity() >= 70_000));
        let other = Column::pooled(Decoding { inner: 6, ..d });
        assert_eq!(other.values.capacity_bytes(), Some(0));
        let mut huge = again;
        huge.values = Values::U16(Vec::with_capacity(SPARE_BYTES));
        huge.recycle();
        assert_eq!(Column::pooled(d).values.capacity_bytes(), Some(0));
    }
}
