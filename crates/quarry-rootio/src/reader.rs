//! Reading a branch one basket at a time, in any order the caller picks: the
//! analysis engine lines several branches up on entry ranges and reads only the
//! baskets that hold the entries it needs (a page of `read_branches` at a large
//! offset never decodes the baskets before it).

use std::ops::Range;

use super::RootFile;
use super::basket::{Buffers, Head};
use super::column::{Column, append, append_head};
use super::compression::decodes_part_way;
use super::tree::Branch;
use super::types::{Decoding, Layout, LeafType, decoding, leaf_decoding};
use crate::FormatError;

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

/// A branch's baskets, decoded on request.
pub struct ColumnReader<'a> {
    pub(super) file: &'a RootFile,
    pub(super) branch: &'a Branch,
    pub(super) decoding: Decoding,
    /// The entries each basket holds, in basket order.
    pub(super) ranges: Vec<Range<u64>>,
    pub(super) buffers: Buffers,
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

impl<'a> ColumnReader<'a> {
    /// The file this column is read from.
    pub fn file(&self) -> &'a RootFile {
        self.file
    }
}

impl ColumnReader<'_> {
    /// Where in the file the baskets holding any of `entries` are stored
    /// (those written as keys of their own; a basket kept inside the tree
    /// object is in memory already): what a remote file prefetches.
    pub fn basket_bytes_within(&self, entries: &Range<u64>) -> Vec<Range<u64>> {
        let written = self
            .branch
            .write_basket
            .min(self.branch.basket_seek.len())
            .min(self.branch.basket_bytes.len());
        self.ranges[..written.min(self.ranges.len())]
            .iter()
            .enumerate()
            .filter(|(_, r)| r.start < entries.end && entries.start < r.end)
            .filter_map(|(i, _)| {
                let seek = u64::try_from(self.branch.basket_seek[i]).ok()?;
                let bytes = u64::try_from(self.branch.basket_bytes[i]).ok()?;
                Some(seek..seek.checked_add(bytes)?)
            })
            .collect()
    }

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

    /// An empty column of this reader's layout, to read baskets into (a
    /// recycled column's memory when there is one).
    pub fn empty_column(&self) -> Column {
        Column::pooled(self.decoding)
    }
}
