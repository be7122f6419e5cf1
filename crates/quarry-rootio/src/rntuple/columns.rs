//! An RNTuple seen as the TTree tools see a tree: one column per leaf field,
//! named by its path (record members joined with '.', `Muon.pt`), typed in
//! the spelling of TTree branches (`float32`, `float32[]`, `int32[3]`,
//! `string`), each read into the same `Column` a branch decodes into, one
//! page of its entry-level column at a time (a basket's counterpart) or any
//! range of entries.

use std::ops::Range;
use std::sync::Mutex;

use super::bytes::corrupt;
use super::data::FieldData;
use super::fields::{Member, Reprs, Shape, type_label};
use super::flat::{Flat, flat_plan};
use super::read::Reading;
use super::{NtupleField, RNTuple};
use crate::FormatError;
use crate::column::Column;
use crate::types::{Decoding, Layout};
use crate::{ColumnLayout, LeafType, RootFile};

/// Entries per chunk where no page sets the edges (a deferred column's
/// zeros, a field without columns of its own).
const ZERO_CHUNK: u64 = 1 << 16;

/// A column of an RNTuple, as a TTree branch is one.
#[derive(Debug, Clone, PartialEq)]
pub struct NtupleColumn {
    /// `Muon.pt`: the top-level field, then record members, joined by '.'.
    pub path: String,
    /// `float32`, `float32[]`, `int32[3]`, `string`, `?float32`; for what
    /// the `Column` cannot hold, the field's full type (`int32[][]`).
    pub type_name: String,
    /// How entries are laid out, or why this column cannot be read as one.
    pub layout: Result<ColumnLayout, String>,
    /// For a column of a collection's items: the field holding its sizes
    /// (an `RNTupleCardinality` field over the same index, as `nMuon` in a
    /// NanoAOD), else the collection's path. Columns with the same counter
    /// have the same number of items in every entry.
    pub counter: Option<String>,
    /// The top-level field this column belongs to.
    pub field: usize,
    /// The field's shape cut down to this column.
    pub(super) shape: Shape,
}

/// The columns of the top-level fields, in field order.
pub(super) fn flat_columns(fields: &[NtupleField]) -> Vec<NtupleColumn> {
    let mut out = Vec::new();
    for f in fields {
        let mut parts = Vec::new();
        flatten(&f.shape, f.name.clone(), None, &mut parts);
        for (path, shape, collection) in parts {
            let layout = layout_of(&shape);
            let type_name = match &layout {
                Ok(l) => layout_label(l, optional_inside(&shape)),
                Err(_) => type_label(strip_records(&shape)),
            };
            out.push(NtupleColumn {
                path,
                type_name,
                layout,
                counter: collection.map(|(path, _)| path),
                field: f.id,
                shape,
            });
        }
    }
    out
}

/// The collections' index columns each column's counter stands for, to
/// name the counter after a cardinality field when one exists.
pub(super) fn name_counters(columns: &mut [NtupleColumn], fields: &[NtupleField]) {
    // Physical index column -> the first cardinality field over it.
    let mut cardinality: std::collections::HashMap<usize, &str> = Default::default();
    for f in fields {
        if let Shape::Cardinality { columns, .. } = &f.shape {
            for &id in columns.iter().flatten() {
                cardinality.entry(id).or_insert(f.name.as_str());
            }
        }
    }
    for c in columns.iter_mut() {
        let Some(index) = collection_columns(&c.shape) else {
            continue;
        };
        if let Some(name) = index.iter().flatten().find_map(|id| cardinality.get(id)) {
            c.counter = Some((*name).to_string());
        }
    }
}

type Part = (String, Shape, Option<(String, Reprs)>);

/// Splits a shape at its records: one part per leaf, with the shape cut
/// down to the path to it and the first collection on that path.
fn flatten(shape: &Shape, path: String, collection: Option<(String, Reprs)>, out: &mut Vec<Part>) {
    match shape {
        Shape::Record { members, tuple } if !members.is_empty() => {
            for m in members {
                let mut sub = Vec::new();
                flatten(
                    &m.shape,
                    format!("{path}.{}", m.name),
                    collection.clone(),
                    &mut sub,
                );
                out.extend(sub.into_iter().map(|(p, s, c)| {
                    let member = Member {
                        name: m.name.clone(),
                        shape: s,
                    };
                    let record = Shape::Record {
                        members: vec![member],
                        tuple: *tuple,
                    };
                    (p, record, c)
                }));
            }
        }
        Shape::Array { size, item } => {
            let mut sub = Vec::new();
            flatten(item, path, collection, &mut sub);
            out.extend(sub.into_iter().map(|(p, s, c)| {
                let array = Shape::Array {
                    size: *size,
                    item: Box::new(s),
                };
                (p, array, c)
            }));
        }
        Shape::Collection {
            columns,
            item,
            optional,
        } => {
            let mut sub = Vec::new();
            let mine = collection.or_else(|| Some((path.clone(), columns.clone())));
            flatten(item, path, mine, &mut sub);
            out.extend(sub.into_iter().map(|(p, s, c)| {
                let list = Shape::Collection {
                    columns: columns.clone(),
                    item: Box::new(s),
                    optional: *optional,
                };
                (p, list, c)
            }));
        }
        _ => out.push((path, shape.clone(), collection)),
    }
}

/// The shape without the one-member records a flattened path passes.
fn strip_records(shape: &Shape) -> &Shape {
    match shape {
        Shape::Record { members, .. } if members.len() == 1 => strip_records(&members[0].shape),
        other => other,
    }
}

/// The index columns of the collection a cut-down shape passes through.
fn collection_columns(shape: &Shape) -> Option<&Reprs> {
    match shape {
        Shape::Record { members, .. } => members.first().and_then(|m| collection_columns(&m.shape)),
        Shape::Array { item, .. } => collection_columns(item),
        Shape::Collection { columns, .. } => Some(columns),
        _ => None,
    }
}

fn optional_inside(shape: &Shape) -> bool {
    match strip_records(shape) {
        Shape::Collection { optional, .. } => *optional,
        Shape::Array { item, .. } => optional_inside(item),
        _ => false,
    }
}

/// The layout of a cut-down shape: fixed arrays multiply the items per
/// element, one collection makes entries jagged; more than that a
/// `Column` cannot hold.
fn layout_of(shape: &Shape) -> Result<ColumnLayout, String> {
    let mut inner = 1usize;
    let mut jagged = false;
    let mut at = shape;
    loop {
        match at {
            Shape::Record { members, .. } if members.len() == 1 => at = &members[0].shape,
            Shape::Array { size, item } => {
                let size = usize::try_from(*size)
                    .map_err(|_| "a fixed-size array too large".to_string())?;
                inner = inner
                    .checked_mul(size)
                    .ok_or_else(|| "a fixed-size array too large".to_string())?;
                at = item;
            }
            Shape::Collection { item, .. } => {
                if jagged {
                    return Err(
                        "a collection of collections (quarry reads one level of nesting)".into(),
                    );
                }
                if inner != 1 {
                    return Err("a fixed-size array of collections".into());
                }
                jagged = true;
                at = item;
            }
            Shape::Leaf { prim, .. } | Shape::Cardinality { prim, .. } => {
                return Ok(ColumnLayout {
                    leaf_type: LeafType::Prim(*prim),
                    inner,
                    jagged,
                });
            }
            Shape::Str { .. } if inner == 1 => {
                return Ok(ColumnLayout {
                    leaf_type: LeafType::Str,
                    inner,
                    jagged,
                });
            }
            Shape::Str { .. } => return Err("a fixed-size array of strings".into()),
            Shape::Variant { .. } => {
                return Err("a std::variant (its alternatives differ in type)".into());
            }
            Shape::Unsupported(why) => return Err(why.clone()),
            Shape::Record { members, .. } if members.is_empty() => {
                return Err("a record without members".into());
            }
            Shape::Record { .. } => return Err("a record".into()),
        }
    }
}

/// A layout's name, as `branch_type` spells a TTree branch's.
fn layout_label(layout: &ColumnLayout, optional: bool) -> String {
    let element = match layout.leaf_type {
        LeafType::Str => "string",
        LeafType::Prim(p) => p.name(),
    };
    match (layout.jagged, layout.inner, optional) {
        (true, 1, true) => format!("?{element}"),
        (true, 1, false) => format!("{element}[]"),
        (true, n, _) => format!("{element}[][{n}]"),
        (false, n, _) if n != 1 => format!("{element}[{n}]"),
        _ => element.to_string(),
    }
}

/// The column deciding where a cut-down shape's chunks end, with the
/// elements it holds per entry.
fn entry_column(shape: &Shape) -> Option<(&Reprs, u64)> {
    let mut per_entry = 1u64;
    let mut at = shape;
    loop {
        match at {
            Shape::Record { members, .. } => at = &members.first()?.shape,
            Shape::Array { size, item } => {
                per_entry = per_entry.checked_mul(*size)?;
                at = item;
            }
            Shape::Collection { columns, .. }
            | Shape::Leaf { columns, .. }
            | Shape::Str { columns }
            | Shape::Cardinality { columns, .. }
            | Shape::Variant { columns, .. } => return Some((columns, per_entry)),
            Shape::Unsupported(_) => return None,
        }
    }
}

/// Entry ranges tiling `nt`, cut at cluster edges and at the page edges of
/// the column that `shape` reads at entry level.
fn chunk_ranges(nt: &RNTuple, shape: &Shape) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    let column = entry_column(shape);
    for (index, c) in nt.clusters.iter().enumerate() {
        let mut edges = vec![0, c.entries];
        if let Some((reprs, per_entry)) = column.filter(|(_, n)| *n > 0)
            && let Some(repr) = nt.stored_repr(reprs, index)
            && let Some(range) = c.columns.get(repr[0])
        {
            let zeros = nt.lead_zeros(repr[0], index).unwrap_or(0);
            edges.extend(
                range.starts[1..]
                    .iter()
                    .map(|s| (zeros.saturating_add(*s) / per_entry).min(c.entries)),
            );
            edges.push((zeros / per_entry).min(c.entries));
        }
        edges.sort_unstable();
        edges.dedup();
        for w in edges.windows(2) {
            // Stretches no page bounds (zeros) go in pieces of bounded size,
            // and in no more than 2^16 pieces (a damaged cluster may claim
            // 2^56 entries).
            let piece = ZERO_CHUNK.max((w[1] - w[0]) >> 16);
            let mut at = w[0];
            while at < w[1] {
                let end = if w[1] - at > piece && is_unpaged(nt, shape, index, at) {
                    at + piece
                } else {
                    w[1]
                };
                out.push(c.first_entry + at..c.first_entry + end);
                at = end;
            }
        }
    }
    out
}

/// Whether entry `at` of a cluster lies where the entry-level column has
/// no pages (before a deferred column's first element, or no column).
fn is_unpaged(nt: &RNTuple, shape: &Shape, cluster: usize, at: u64) -> bool {
    let Some((reprs, per_entry)) = entry_column(shape) else {
        return true;
    };
    let Some(repr) = nt.stored_repr(reprs, cluster) else {
        return true;
    };
    let zeros = nt.lead_zeros(repr[0], cluster).unwrap_or(0);
    per_entry == 0 || at.saturating_mul(per_entry) < zeros
}

/// A reader of one column of an RNTuple, chunk by chunk or by entry range.
pub struct NtupleReader<'a> {
    file: &'a RootFile,
    nt: &'a RNTuple,
    column: &'a NtupleColumn,
    layout: ColumnLayout,
    /// How chunks are read straight into a `Column`, when they can be.
    flat: Option<Flat>,
    chunks: Vec<Range<u64>>,
    reading: Mutex<Reading<'a>>,
}

impl<'a> NtupleReader<'a> {
    /// The file this column is read from.
    pub fn file(&self) -> &'a RootFile {
        self.file
    }

    /// Where the pages holding any of `entries` lie in the file.
    pub fn page_bytes_within(&self, entries: &Range<u64>) -> Vec<Range<u64>> {
        self.nt.column_page_ranges(self.column, entries)
    }
}

impl RootFile {
    /// A reader of `column` of `nt` (read from this file).
    pub fn ntuple_reader<'a>(
        &'a self,
        nt: &'a RNTuple,
        column: &'a NtupleColumn,
    ) -> Result<NtupleReader<'a>, FormatError> {
        let layout = column
            .layout
            .clone()
            .map_err(|why| FormatError::Unsupported(format!("column '{}': {why}", column.path)))?;
        Ok(NtupleReader {
            file: self,
            nt,
            column,
            layout,
            flat: flat_plan(&column.shape),
            chunks: chunk_ranges(nt, &column.shape),
            reading: Mutex::new(Reading::new(self, nt)),
        })
    }

    /// Every entry of `column`, read a chunk at a time.
    pub fn ntuple_column(
        &self,
        nt: &RNTuple,
        column: &NtupleColumn,
    ) -> Result<Column, FormatError> {
        let reader = self.ntuple_reader(nt, column)?;
        let mut all = reader.empty_column();
        let mut chunk = reader.empty_column();
        for index in 0..reader.basket_ranges().len() {
            reader.read_basket(index, &mut chunk)?;
            all.extend_from(&chunk);
        }
        Ok(all)
    }
}

impl NtupleReader<'_> {
    pub fn layout(&self) -> ColumnLayout {
        self.layout
    }

    /// The entries of each chunk, in order; together they tile the RNTuple,
    /// and none crosses a cluster edge. A chunk is a page of the column's
    /// entry-level column (its own, or its collection's index), the
    /// counterpart of a TTree basket.
    pub fn basket_ranges(&self) -> &[Range<u64>] {
        &self.chunks
    }

    /// The entries of each cluster: edges every column of the RNTuple
    /// shares.
    pub fn cluster_ranges(&self) -> Vec<Range<u64>> {
        self.nt.cluster_ranges()
    }

    /// Decodes chunk `index` into `into` (replaced).
    pub fn read_basket(&self, index: usize, into: &mut Column) -> Result<(), FormatError> {
        let range = self.chunks.get(index).cloned().ok_or_else(|| {
            corrupt(format!(
                "column '{}' has no chunk {index}",
                self.column.path
            ))
        })?;
        self.read_entries(range, into)
    }

    /// Decodes entries `entries` (any range within the RNTuple) into `into`
    /// (emptied first, its buffers reused when it has this reader's layout).
    pub fn read_entries(&self, entries: Range<u64>, into: &mut Column) -> Result<(), FormatError> {
        let mut reading = self.reading.lock().unwrap_or_else(|e| e.into_inner());
        if into.layout_differs(decoding(self.layout)) {
            *into = Column::empty(decoding(self.layout));
        }
        into.clear();
        if entries.start == entries.end {
            return Ok(());
        }
        if let Some(flat) = &self.flat {
            if reading.read_flat(flat, entries.clone(), into)? {
                return Ok(());
            }
            into.clear();
        }
        let data = reading.entries(&self.column.shape, entries)?;
        *into = into_column(data, self.layout)?;
        Ok(())
    }

    /// Sets the memory each read may take (`DEFAULT_READ_LIMIT` otherwise).
    pub fn set_read_limit(&mut self, bytes: u64) {
        self.reading
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .set_limit(bytes);
    }

    /// An empty column of this reader's layout (a recycled column's
    /// memory when there is one).
    pub fn empty_column(&self) -> Column {
        Column::pooled(decoding(self.layout))
    }
}

fn decoding(layout: ColumnLayout) -> Decoding {
    Decoding {
        leaf_type: layout.leaf_type,
        inner: layout.inner,
        jagged: layout.jagged,
        layout: Layout::Plain,
    }
}

/// A cut-down field's values as a `Column`: records passed through, fixed
/// arrays as items of `inner` elements, the collection's sizes as counts.
fn into_column(data: FieldData, layout: ColumnLayout) -> Result<Column, FormatError> {
    let entries = data.len();
    let mut counts = None;
    let mut at = data;
    let values = loop {
        match at {
            FieldData::Values(v) => break v,
            FieldData::Record { mut fields, .. } if fields.len() == 1 => {
                at = fields.pop().expect("one member")
            }
            FieldData::Array { items, .. } => at = *items,
            FieldData::List { offsets, items, .. } => {
                let sizes: Result<Vec<u32>, _> = offsets
                    .windows(2)
                    .map(|w| u32::try_from(w[1] - w[0]))
                    .collect();
                counts = Some(sizes.map_err(|_| corrupt("a collection of over 2^32 items"))?);
                at = *items;
            }
            _ => return Err(corrupt("RNTuple column read into an unexpected shape")),
        }
    };
    let mut column = Column::empty(decoding(layout));
    column.entries = entries;
    column.values = values;
    if layout.jagged {
        column.counts = Some(counts.unwrap_or_default());
    }
    Ok(column)
}
