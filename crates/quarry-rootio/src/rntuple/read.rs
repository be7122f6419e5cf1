//! Reading a field's shape over a range of entries of one cluster: each
//! column's elements from the pages that hold them, the primary
//! representation of the cluster chosen, and a deferred column's elements
//! before its first read as zeros. A page wanted whole is decoded straight
//! from the read's page buffers into the values built; one wanted in part
//! is kept, prepared, for the ranges after (consecutive ranges share pages).

use std::collections::HashMap;
use std::ops::Range;

use super::RNTuple;
use super::bytes::corrupt;
use super::convert::into_prim;
use super::counts::ChunkEnd;
use super::data::FieldData;
use super::decode::{decode_into, fill_direct, prepare};
use super::fields::{Reprs, Shape};
use super::pages::{
    ColumnCodec, Decoded, PageBuffers, fetch_page, fetch_page_into, with_offsets_page,
};
use crate::FormatError;
use crate::{RootFile, Values};

/// Most elements a page may hold: ROOT writes pages of at most 1 MiB by
/// default (8 Mi elements of the smallest type), and a page is decoded
/// whole, so a damaged count must not make it allocate gigabytes.
pub(super) const MAX_PAGE_ELEMENTS: u32 = 1 << 24;

/// The memory one read may take by default: the values it returns, the
/// pages it decodes, a deferred column's zeros. Pages may share their bytes
/// (a file of 2 kB can hold 200 MB of values) and a fixed-size array
/// multiplies what an entry holds, so what a damaged file makes a read
/// allocate is counted, not bounded by the file's size; a read past this
/// is refused, to be made in smaller ranges.
pub const DEFAULT_READ_LIMIT: u64 = 4 << 30;

/// A page of a column kept for the ranges that want the rest of it.
#[derive(Debug)]
struct KeptPage {
    cluster: usize,
    page: usize,
    /// How its `bytes` are laid out: the column's codec, or its plain
    /// counterpart once a split page is prepared.
    codec: ColumnCodec,
    elements: usize,
    /// Its first `len` bytes are the page's.
    bytes: Vec<u8>,
    len: usize,
}

/// A read's state: the RNTuple, its file, the buffers pages are fetched
/// into, the last page of each column read in part, and the memory the
/// current read may still take.
pub(super) struct Reading<'a> {
    pub file: &'a RootFile,
    pub nt: &'a RNTuple,
    pub(super) buffers: PageBuffers,
    pages: HashMap<usize, KeptPage>,
    /// Where the last chunk of a collection's counts read from whole pages
    /// ended (`counts_of_whole_pages`), for the next chunk to start from.
    pub(super) chunk_end: Option<ChunkEnd>,
    /// A collection's offsets, kept for the flat reads' next chunk.
    pub(super) offsets: Decoded,
    limit: u64,
    budget: u64,
}

impl<'a> Reading<'a> {
    pub fn new(file: &'a RootFile, nt: &'a RNTuple) -> Reading<'a> {
        Reading {
            file,
            nt,
            buffers: PageBuffers::pooled(),
            pages: HashMap::new(),
            chunk_end: None,
            offsets: Decoded::Index(Vec::new()),
            limit: DEFAULT_READ_LIMIT,
            budget: DEFAULT_READ_LIMIT,
        }
    }

    /// Sets the memory each read may take (`DEFAULT_READ_LIMIT` otherwise).
    pub fn set_limit(&mut self, bytes: u64) {
        self.limit = bytes;
    }

    /// Starts a read: the whole limit is left to take.
    pub fn restart_budget(&mut self) {
        self.budget = self.limit;
    }

    /// Counts `bytes` against the current read's limit.
    pub(super) fn charge(&mut self, bytes: u64) -> Result<(), FormatError> {
        if bytes > self.budget {
            return Err(FormatError::Unsupported(format!(
                "reading these entries would take more than {} MiB of memory: read fewer at a time",
                self.limit >> 20
            )));
        }
        self.budget -= bytes;
        Ok(())
    }

    /// `shape` over global entries `entries`, cluster by cluster.
    pub fn entries(
        &mut self,
        shape: &Shape,
        entries: Range<u64>,
    ) -> Result<FieldData, FormatError> {
        self.restart_budget();
        if entries.end > self.nt.entries || entries.start > entries.end {
            return Err(corrupt(format!(
                "entries {}..{} of an RNTuple of {}",
                entries.start, entries.end, self.nt.entries
            )));
        }
        if entries.start == entries.end {
            return FieldData::empty(shape);
        }
        let first = self
            .nt
            .clusters
            .partition_point(|c| c.first_entry + c.entries <= entries.start);
        let mut out: Option<FieldData> = None;
        for (index, c) in self.nt.clusters.iter().enumerate().skip(first) {
            if c.first_entry >= entries.end && out.is_some() {
                break;
            }
            let start = entries.start.max(c.first_entry) - c.first_entry;
            let end = entries.end.min(c.first_entry + c.entries) - c.first_entry;
            let part = self.read(shape, index, start..end.max(start))?;
            match &mut out {
                None => out = Some(part),
                Some(data) => data.append(part),
            }
        }
        match out {
            Some(data) => Ok(data),
            // No clusters at all: an RNTuple without entries.
            None => Err(corrupt(
                "an RNTuple without clusters has no entries to read",
            )),
        }
    }

    /// `shape` over items `range` (cluster-relative) of cluster `cluster`.
    pub fn read(
        &mut self,
        shape: &Shape,
        cluster: usize,
        range: Range<u64>,
    ) -> Result<FieldData, FormatError> {
        match shape {
            Shape::Leaf { prim, columns } => {
                let column = self.choose(columns, cluster)?[0];
                let values = self.values(column, cluster, range)?;
                // A conversion to a wider type takes more memory.
                self.charge((values.len() * prim.size()) as u64)?;
                Ok(FieldData::Values(into_prim(values, *prim)))
            }
            Shape::Str { columns } => {
                let repr = self.choose(columns, cluster)?;
                let (start, ends) = self.offsets(repr[0], cluster, range)?;
                let chars = match self.values(
                    repr[1],
                    cluster,
                    start..ends.last().copied().unwrap_or(start),
                )? {
                    Values::U8(bytes) => bytes,
                    Values::I8(bytes) => bytes.into_iter().map(|b| b as u8).collect(),
                    _ => return Err(corrupt("RNTuple string with a character column of numbers")),
                };
                self.charge((ends.len() * std::mem::size_of::<String>()) as u64)?;
                let mut strings = Vec::with_capacity(ends.len());
                let mut from = 0usize;
                for end in ends {
                    let to = (end - start) as usize;
                    strings.push(String::from_utf8_lossy(&chars[from..to]).into_owned());
                    from = to;
                }
                Ok(FieldData::Values(Values::Str(strings)))
            }
            Shape::Cardinality { prim, columns } => {
                let column = self.choose(columns, cluster)?[0];
                let (mut last, ends) = self.offsets(column, cluster, range)?;
                let sizes: Vec<u64> = ends
                    .into_iter()
                    .map(|end| {
                        let size = end - last;
                        last = end;
                        size
                    })
                    .collect();
                Ok(FieldData::Values(into_prim(Values::U64(sizes), *prim)))
            }
            Shape::Array { size, item } => {
                let scaled = range
                    .start
                    .checked_mul(*size)
                    .zip(range.end.checked_mul(*size))
                    .ok_or_else(|| corrupt("RNTuple fixed-size array too large"))?;
                let items = self.read(item, cluster, scaled.0..scaled.1)?;
                Ok(FieldData::Array {
                    size: usize::try_from(*size).map_err(|_| corrupt("array too large"))?,
                    len: (range.end - range.start) as usize,
                    items: Box::new(items),
                })
            }
            Shape::Collection {
                columns,
                item,
                optional,
            } => {
                let column = self.choose(columns, cluster)?[0];
                let (start, ends) = self.offsets(column, cluster, range)?;
                let end = ends.last().copied().unwrap_or(start);
                if *optional
                    && ends
                        .iter()
                        .scan(start, |last, &e| {
                            let n = e - *last;
                            *last = e;
                            Some(n)
                        })
                        .any(|n| n > 1)
                {
                    return Err(corrupt("RNTuple optional holding more than one item"));
                }
                let items = self.read(item, cluster, start..end)?;
                let mut offsets = Vec::with_capacity(ends.len() + 1);
                offsets.push(0);
                offsets.extend(ends.iter().map(|e| e - start));
                Ok(FieldData::List {
                    offsets,
                    items: Box::new(items),
                    optional: *optional,
                })
            }
            Shape::Record { members, tuple } => {
                let mut fields = Vec::with_capacity(members.len());
                for m in members {
                    fields.push(self.read(&m.shape, cluster, range.clone())?);
                }
                Ok(FieldData::Record {
                    names: members.iter().map(|m| m.name.clone()).collect(),
                    fields,
                    tuple: *tuple,
                    len: (range.end - range.start) as usize,
                })
            }
            Shape::Variant {
                columns,
                alternatives,
            } => self.variant(columns, alternatives, cluster, range),
            Shape::Unsupported(why) => Err(FormatError::Unsupported(why.clone())),
        }
    }

    fn variant(
        &mut self,
        columns: &Reprs,
        alternatives: &[Shape],
        cluster: usize,
        range: Range<u64>,
    ) -> Result<FieldData, FormatError> {
        let column = self.choose(columns, cluster)?[0];
        let Decoded::Switch(switches) = self.elements(column, cluster, range)? else {
            return Err(corrupt("RNTuple variant without a switch column"));
        };
        // Each alternative's items among these entries: from the least
        // index to the greatest (they are written in order).
        let mut spans: Vec<Option<Range<u64>>> = vec![None; alternatives.len()];
        for &(index, tag) in &switches {
            if tag == 0 {
                continue;
            }
            let span = spans.get_mut(tag as usize - 1).ok_or_else(|| {
                corrupt(format!(
                    "RNTuple variant tag {tag} of {} alternatives",
                    alternatives.len()
                ))
            })?;
            let end = index
                .checked_add(1)
                .ok_or_else(|| corrupt("variant index"))?;
            *span = Some(match span.take() {
                None => index..end,
                Some(s) => s.start.min(index)..s.end.max(end),
            });
        }
        let mut read = Vec::with_capacity(alternatives.len());
        for (shape, span) in alternatives.iter().zip(&spans) {
            let span = span.clone().unwrap_or(0..0);
            read.push(self.read(shape, cluster, span)?);
        }
        let indices = switches
            .iter()
            .map(|&(index, tag)| match tag {
                0 => 0,
                t => index - spans[t as usize - 1].as_ref().map_or(0, |s| s.start),
            })
            .collect();
        Ok(FieldData::Variant {
            tags: switches.iter().map(|&(_, tag)| tag).collect(),
            indices,
            alternatives: read,
        })
    }

    /// The representation that holds `cluster`'s data: the first one not
    /// suppressed there; failing that, one whose columns are deferred past
    /// this cluster (all zeros here); failing that the first, which holds
    /// nothing here (an error unless no element is wanted).
    pub(super) fn choose<'r>(
        &self,
        reprs: &'r Reprs,
        cluster: usize,
    ) -> Result<&'r [usize], FormatError> {
        let deferred = |r: &&Vec<usize>| {
            r.iter()
                .all(|&c| self.nt.schema.columns[c].first_element > 0)
        };
        self.nt
            .stored_repr(reprs, cluster)
            .or_else(|| reprs.iter().find(deferred).map(Vec::as_slice))
            .or_else(|| reprs.first().map(Vec::as_slice))
            .ok_or_else(|| corrupt("RNTuple field without columns where it needs them"))
    }

    /// A collection's offsets for items `range`: where the first item's
    /// elements start and where each item's end (cluster-relative).
    fn offsets(
        &mut self,
        column: usize,
        cluster: usize,
        range: Range<u64>,
    ) -> Result<(u64, Vec<u64>), FormatError> {
        if range.start == range.end {
            return Ok((0, Vec::new()));
        }
        let from = range.start.saturating_sub(1);
        let Decoded::Index(mut ends) = self.elements(column, cluster, from..range.end)? else {
            return Err(corrupt("RNTuple collection without an index column"));
        };
        let start = if range.start == 0 { 0 } else { ends.remove(0) };
        let mut last = start;
        for &end in &ends {
            if end < last {
                return Err(corrupt(format!(
                    "RNTuple collection offsets go backwards ({end} after {last})"
                )));
            }
            last = end;
        }
        Ok((start, ends))
    }

    fn values(
        &mut self,
        column: usize,
        cluster: usize,
        range: Range<u64>,
    ) -> Result<Values, FormatError> {
        match self.elements(column, cluster, range)? {
            Decoded::Values(v) => Ok(v),
            _ => Err(corrupt(
                "RNTuple values stored in an index or switch column",
            )),
        }
    }

    /// Elements `range` (cluster-relative) of physical `column`.
    fn elements(
        &mut self,
        column: usize,
        cluster: usize,
        range: Range<u64>,
    ) -> Result<Decoded, FormatError> {
        let codec = self.codec(column)?;
        let mut out = Decoded::empty(codec.kind);
        self.elements_into(column, cluster, range, &mut out)?;
        Ok(out)
    }

    /// The codec of physical `column`, or why it cannot be read.
    pub(super) fn codec(&self, column: usize) -> Result<ColumnCodec, FormatError> {
        self.nt.codecs[column]
            .clone()
            .map_err(FormatError::Unsupported)
    }

    /// Appends elements `range` (cluster-relative) of physical `column` to
    /// `out`, which holds what the column decodes to.
    pub(super) fn elements_into(
        &mut self,
        column: usize,
        cluster: usize,
        range: Range<u64>,
        out: &mut Decoded,
    ) -> Result<(), FormatError> {
        let nt = self.nt;
        let codec = self.codec(column)?;
        let c = &nt.clusters[cluster];
        let stored = c.columns.get(column);
        let zeros = nt.lead_zeros(column, cluster)?;
        let want = range.end - range.start;
        self.charge(want.saturating_mul(codec.kind.decoded_size()))?;
        let zero_part = range.end.min(zeros).saturating_sub(range.start);
        out.extend_zeros(codec.kind, zero_part as usize);
        let from = range.start.max(zeros) - zeros;
        let to = range.end.max(zeros) - zeros;
        if from == to {
            return Ok(());
        }
        let Some(stored) = stored.filter(|s| s.first_element.is_some()) else {
            return Err(corrupt(format!(
                "RNTuple column {column} holds no elements in cluster {cluster}"
            )));
        };
        if to > stored.elements() {
            return Err(corrupt(format!(
                "RNTuple column {column} holds {} elements in cluster {cluster}, element {} wanted",
                stored.elements(),
                to - 1
            )));
        }
        let mut page = stored.starts.partition_point(|&s| s <= from) - 1;
        let mut at = from;
        while at < to {
            let (page_start, page_end) = (stored.starts[page], stored.starts[page + 1]);
            let end = to.min(page_end);
            let n = (page_end - page_start) as usize;
            let wanted = (at - page_start) as usize..(end - page_start) as usize;
            match self.pages.get(&column) {
                Some(kept) if kept.cluster == cluster && kept.page == page => {
                    let bytes = &kept.bytes[..kept.len];
                    decode_into(&kept.codec, bytes, kept.elements, wanted, out)?;
                }
                _ => {
                    let info = &stored.pages[page];
                    if info.elements > MAX_PAGE_ELEMENTS {
                        return Err(FormatError::Unsupported(format!(
                            "RNTuple page of {} elements, more than the {MAX_PAGE_ELEMENTS} quarry decodes",
                            info.elements
                        )));
                    }
                    self.charge(u64::from(info.elements) * codec.kind.decoded_size())?;
                    let max_key = nt.anchor.max_key_size;
                    let whole = wanted.len() == n;
                    if whole && codec.kind.is_index() {
                        let (file, buffers) = (self.file, &mut self.buffers);
                        with_offsets_page(file, &codec, info, max_key, buffers, |bytes| {
                            decode_into(&codec, bytes, n, wanted, out)
                        })??;
                    } else if whole
                        && let (file, buffers) = (self.file, &mut self.buffers)
                        // SAFETY: `fetch_page_into` writes every byte of the
                        // room when it succeeds.
                        && let Some(fetched) = unsafe {
                            fill_direct(&codec, n, out, |room| {
                                fetch_page_into(file, &codec, info, max_key, buffers, room)
                            })
                        }
                    {
                        fetched?;
                    } else {
                        let len = fetch_page(self.file, &codec, info, max_key, &mut self.buffers)?;
                        if whole {
                            decode_into(&codec, &self.buffers.bytes[..len], n, wanted, out)?;
                        } else {
                            let kept = self.keep(column, cluster, page, &codec, n, len);
                            let bytes = &kept.bytes[..kept.len];
                            decode_into(&kept.codec, bytes, n, wanted, out)?;
                        }
                    }
                }
            }
            at = end;
            page += 1;
        }
        Ok(())
    }

    /// Keeps the page just fetched (its first `len` bytes in the page
    /// buffer) as `column`'s, a split page prepared as plain numbers so any
    /// range of it decodes without the split undone again.
    fn keep(
        &mut self,
        column: usize,
        cluster: usize,
        page: usize,
        codec: &ColumnCodec,
        elements: usize,
        len: usize,
    ) -> &KeptPage {
        let kept = self.pages.entry(column).or_insert_with(|| KeptPage {
            cluster,
            page,
            codec: *codec,
            elements,
            bytes: Vec::new(),
            len: 0,
        });
        kept.cluster = cluster;
        kept.page = page;
        kept.elements = elements;
        if prepare(codec, &self.buffers.bytes[..len], elements, &mut kept.bytes) {
            kept.codec = codec.plain();
            kept.len = kept.bytes.len();
        } else {
            // Plain already: the buffers trade places, no copy.
            std::mem::swap(&mut kept.bytes, &mut self.buffers.bytes);
            kept.codec = *codec;
            kept.len = len;
        }
        kept
    }
}
