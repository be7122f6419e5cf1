//! Reading a branch one basket at a time, in any order the caller picks: the
//! analysis engine lines several branches up on entry ranges and reads only the
//! baskets that hold the entries it needs (a page of `read_branches` at a large
//! offset never decodes the baskets before it).

use std::ops::Range;

use super::RootFile;
use super::basket::{Basket, Buffers, Head};
use super::column::{Column, append, append_head};
use super::compression::decodes_part_way;
use super::tree::Branch;
use super::types::{Decoding, Layout, LeafType, decoding, leaf_decoding};
use crate::formats::FormatError;

/// What one column (a branch, or one leaf of a leaf list) holds per entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnLayout {
    pub leaf_type: LeafType,
    /// Elements per item: a fixed array's length, 1 otherwise.
    pub inner: usize,
    /// Whether entries hold a varying number of items.
    pub jagged: bool,
}

impl From<Decoding> for ColumnLayout {
    fn from(d: Decoding) -> ColumnLayout {
        ColumnLayout {
            leaf_type: d.leaf_type,
            inner: d.inner,
            jagged: d.jagged,
        }
    }
}

/// The layout of a branch (`leaf: None`) or of one leaf of a leaf list; an
/// `Unsupported` error for what the decoder cannot read.
pub fn column_layout(branch: &Branch, leaf: Option<usize>) -> Result<ColumnLayout, FormatError> {
    Ok(match leaf {
        None => decoding(branch)?.into(),
        Some(i) => leaf_decoding(branch, i)?.into(),
    })
}

/// A basket of numbers, one item per entry, kept as stored (big-endian, in
/// the buffer it was read or decompressed into) and converted to native values
/// a few entries at a time by `ColumnReader::convert`.
pub struct StoredBasket {
    basket: Basket,
    /// Bytes per entry.
    item: usize,
}

impl StoredBasket {
    pub fn entries(&self) -> usize {
        self.basket.entries
    }
}

/// A branch's baskets, decoded on request.
pub struct ColumnReader<'a> {
    file: &'a RootFile,
    branch: &'a Branch,
    decoding: Decoding,
    /// The entries each basket holds, in basket order.
    ranges: Vec<Range<u64>>,
    buffers: Buffers,
}

impl RootFile {
    /// A reader of a branch (`leaf: None`) or of one leaf of a leaf list.
    pub fn column_reader<'a>(
        &'a self,
        branch: &'a Branch,
        leaf: Option<usize>,
    ) -> Result<ColumnReader<'a>, FormatError> {
        let decoding = match leaf {
            None => decoding(branch)?,
            Some(i) => leaf_decoding(branch, i)?,
        };
        let ranges = self.basket_ranges(branch)?;
        Ok(ColumnReader {
            file: self,
            branch,
            decoding,
            ranges,
            buffers: Buffers::default(),
        })
    }
}

impl ColumnReader<'_> {
    pub fn layout(&self) -> ColumnLayout {
        self.decoding.into()
    }

    /// The entries of each basket, in order; together they tile the branch.
    pub fn basket_ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// Decodes basket `index` into `into` (emptied first, its buffers reused).
    pub fn read_basket(&self, index: usize, into: &mut Column) -> Result<(), FormatError> {
        let want = self.ranges.get(index).ok_or_else(|| {
            FormatError::Corrupt(format!(
                "branch '{}' has no basket {index}",
                self.branch.name
            ))
        })?;
        if into.layout_differs(self.decoding) {
            *into = Column::empty(self.decoding);
        }
        into.clear();
        let basket = self.file.basket(self.branch, index, &self.buffers)?;
        let appended = append(into, &basket, &self.branch.name);
        self.buffers.recycle(basket);
        appended?;
        if into.entries as u64 != want.end - want.start {
            return Err(FormatError::Corrupt(format!(
                "basket {index} of '{}' holds {} entries, the branch records {}",
                self.branch.name,
                into.entries,
                want.end - want.start
            )));
        }
        Ok(())
    }

    /// Decodes the first `entries` entries of basket `index` into `into`
    /// (emptied first), decompressing only as far as their bytes where the
    /// layout says where they end: entries of one size, or a counter leaf's
    /// arrays when `counts` gives their item counts (read from the counter).
    /// Otherwise the whole basket is decoded. Either way `into` then starts
    /// with the basket's first entries, `entries` of them at least. Counts for
    /// all of a basket's entries spare it its offset table: its entries' bytes
    /// are decompressed, not the 4 bytes per entry that follow them, and the
    /// counts must then account for every byte (else the data is corrupt).
    pub fn read_basket_head(
        &self,
        index: usize,
        entries: usize,
        counts: Option<&[u32]>,
        into: &mut Column,
    ) -> Result<(), FormatError> {
        let basket_entries = self.ranges.get(index).map(|r| r.end - r.start);
        let all = basket_entries.is_none_or(|n| entries as u64 >= n);
        let counted_all = counts.is_some() && basket_entries == Some(entries as u64);
        let bytes = self
            .head_bytes(entries, counts)
            .filter(|_| !all || counted_all);
        let Some(bytes) = bytes else {
            return self.read_basket(index, into);
        };
        if into.layout_differs(self.decoding) {
            *into = Column::empty(self.decoding);
        }
        into.clear();
        let head = Head { bytes, all };
        let basket = self
            .file
            .basket_head(self.branch, index, head, &self.buffers)?;
        let appended = append_head(into, &basket, entries, counts, &self.branch.name);
        self.buffers.recycle(basket);
        appended
    }

    /// The bytes the first `entries` entries of a basket take, when that
    /// follows from the layout (and the counts of a counter leaf's arrays).
    fn head_bytes(&self, entries: usize, counts: Option<&[u32]>) -> Option<usize> {
        let LeafType::Prim(p) = self.decoding.leaf_type else {
            return None;
        };
        let item = p.size().checked_mul(self.decoding.inner)?;
        match (self.decoding.layout, self.decoding.jagged, counts) {
            (Layout::Plain, false, None) => entries.checked_mul(item),
            (Layout::Strided { stride, .. }, false, None) => entries.checked_mul(stride),
            (Layout::Plain, true, Some(counts)) if counts.len() == entries => {
                let items: u64 = counts.iter().map(|&n| u64::from(n)).sum();
                usize::try_from(items).ok()?.checked_mul(item)
            }
            _ => None,
        }
    }

    /// Whether `read_basket_head` of this column's jagged entries needs their
    /// item counts from the counter leaf (and then reads only their bytes).
    pub fn head_needs_counts(&self) -> bool {
        self.decoding.jagged
            && self.decoding.layout == Layout::Plain
            && matches!(self.decoding.leaf_type, LeafType::Prim(_))
    }

    /// Whether this column's baskets are decompressed only as far as the
    /// bytes wanted (zlib), by the branch's compression setting, or the
    /// file's where the branch leaves it at 0 (as uproot writes it): reading
    /// a head there saves work, elsewhere nothing. A wrong answer (a basket
    /// stored otherwise) costs time, never values.
    pub fn inflates_part_way(&self) -> bool {
        let setting = match self.branch.compress {
            s if s > 0 => s,
            _ => self.file.header.compress,
        };
        decodes_part_way(setting)
    }

    /// Whether this column's baskets can be read as `StoredBasket`s: numbers,
    /// one fixed-size item per entry, laid out back to back.
    pub fn keeps_stored(&self) -> bool {
        matches!(self.decoding.leaf_type, LeafType::Prim(_))
            && self.decoding.layout == Layout::Plain
            && !self.decoding.jagged
    }

    /// Reads basket `index` of a column that `keeps_stored`, into `into`; the
    /// basket it held before goes back to this reader's buffers.
    pub fn read_stored(
        &self,
        index: usize,
        into: &mut Option<StoredBasket>,
    ) -> Result<(), FormatError> {
        let (LeafType::Prim(p), true) = (self.decoding.leaf_type, self.keeps_stored()) else {
            return Err(FormatError::Unsupported(format!(
                "branch '{}' does not hold one number or fixed array per entry",
                self.branch.name
            )));
        };
        if let Some(old) = into.take() {
            self.recycle(old);
        }
        let item = p.size() * self.decoding.inner;
        let basket = self.file.basket(self.branch, index, &self.buffers)?;
        let want = self.ranges.get(index).map(|r| r.end - r.start);
        let entries = basket.entries;
        if want != Some(entries as u64) || basket.data().len() != entries * item {
            let held = basket.data().len();
            self.buffers.recycle(basket);
            return Err(FormatError::Corrupt(format!(
                "basket {index} of '{}' holds {held} bytes for {entries} entries of \
                 {item} bytes, the branch records {}",
                self.branch.name,
                want.unwrap_or(0)
            )));
        }
        *into = Some(StoredBasket { basket, item });
        Ok(())
    }

    /// Entries `entries` of a stored basket, converted into `into` (emptied
    /// first, its buffers reused).
    pub fn convert(&self, stored: &StoredBasket, entries: Range<usize>, into: &mut Column) {
        if into.layout_differs(self.decoding) {
            *into = Column::empty(self.decoding);
        }
        into.clear();
        let bytes = entries.start * stored.item..entries.end * stored.item;
        into.values.extend_from_be(&stored.basket.data()[bytes]);
        into.entries = entries.len();
    }

    /// Gives a stored basket's buffer back to this reader, for its next reads.
    pub fn recycle(&self, stored: StoredBasket) {
        self.buffers.recycle(stored.basket);
    }

    /// An empty column of this reader's layout, to read baskets into (a
    /// recycled column's memory when there is one).
    pub fn empty_column(&self) -> Column {
        Column::pooled(self.decoding)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(name: &str) -> (RootFile, super::super::Tree) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/root")
            .join(name);
        let file = RootFile::open(std::fs::File::open(path).unwrap()).unwrap();
        let key = file
            .walk()
            .unwrap()
            .into_iter()
            .find(|k| k.key.class_name == "TTree")
            .unwrap()
            .key;
        let tree = file.tree(&key).unwrap();
        (file, tree)
    }

    /// A stored basket converted a few entries at a time (windows of 7, so
    /// they straddle nothing in particular) gives the basket's decoded values,
    /// in every compression; reading the next basket recycles the buffer.
    #[test]
    fn stored_baskets_convert_to_the_decoded_values() {
        for name in [
            "uproot-HZZ-lz4.root",
            "uproot-HZZ-zlib.root",
            "uproot-HZZ-uncompressed.root",
        ] {
            let (file, tree) = events(name);
            let mut checked = 0;
            for branch in &tree.branches {
                let Ok(reader) = file.column_reader(branch, None) else {
                    continue;
                };
                if !reader.keeps_stored() {
                    continue;
                }
                let mut stored = None;
                let (mut whole, mut window) = (reader.empty_column(), reader.empty_column());
                for index in 0..reader.basket_ranges().len() {
                    reader.read_basket(index, &mut whole).unwrap();
                    reader.read_stored(index, &mut stored).unwrap();
                    let basket = stored.as_ref().unwrap();
                    assert_eq!(basket.entries(), whole.entries, "{name} {}", branch.name);
                    let mut joined = reader.empty_column();
                    for start in (0..basket.entries()).step_by(7) {
                        let end = (start + 7).min(basket.entries());
                        reader.convert(basket, start..end, &mut window);
                        assert_eq!(window.entries, end - start);
                        joined.extend_from(&window);
                    }
                    assert_eq!(joined.values, whole.values, "{name} {}", branch.name);
                    checked += 1;
                }
            }
            assert!(checked > 10, "{name}: {checked} baskets");
        }
    }

    #[test]
    fn jagged_and_string_columns_are_not_kept_stored() {
        let (file, tree) = events("uproot-HZZ-lz4.root");
        let reader = |name: &str| {
            let branch = tree.branches.iter().find(|b| b.name == name).unwrap();
            file.column_reader(branch, None).unwrap()
        };
        assert!(reader("MET_px").keeps_stored());
        assert!(!reader("Muon_Px").keeps_stored());
        let mut stored = None;
        assert!(reader("Muon_Px").read_stored(0, &mut stored).is_err());
        assert!(stored.is_none());
    }
}
