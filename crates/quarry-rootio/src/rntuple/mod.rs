//! quarry's reader of RNTuple, ROOT's columnar successor of TTree (binary
//! format 1.0.x.x, ROOT 6.34 on), on the specification
//! (`tree/ntuple/doc/BinaryFormatSpecification.md` in ROOT's repository).
//!
//! An RNTuple is found through its anchor, a `ROOT::RNTuple` key
//! (`anchor.rs`), which locates the header and footer envelopes
//! (`envelope.rs`; their frames and locators in `bytes.rs`). The header and
//! the footer's extension give the fields and columns (`schema.rs`), the
//! footer's cluster groups lead to page lists (`clusters.rs`). A field's
//! C++ type becomes a `Shape` (`fields.rs`), read over entry ranges page by
//! page (`read.rs`; pages fetched into reused buffers in `pages.rs`, their
//! elements decoded in place in `decode.rs`) into nested `FieldData`
//! (`data.rs`), or, field by field down to the leaves, into the `Column` a
//! TTree branch decodes into (`columns.rs`; numbers, fixed arrays and one
//! collection straight into it, `flat.rs`).
//!
//! Every size and count comes from the file and is checked before it sizes
//! anything; pages decompress through the bounded decoder TTree baskets use.

mod anchor;
mod bytes;
mod clusters;
mod columns;
mod convert;
mod counts;
mod data;
mod decode;
mod envelope;
mod fields;
mod flat;
mod pages;
mod read;
mod schema;
#[cfg(test)]
mod tests;

use std::ops::Range;

pub use anchor::Anchor;
pub use bytes::Locator;
pub use clusters::{Cluster, ColumnRange, Page};
pub use columns::{NtupleColumn, NtupleReader};
pub use data::{FieldData, value_json};
pub use pages::ColumnType;
use read::DEFAULT_READ_LIMIT;
pub use schema::{ColumnRecord, FieldRecord, Role, Schema};

use super::{Key, RootFile};
use crate::FormatError;
use bytes::{Locator as Loc, corrupt};
use clusters::{read_clusters, read_footer};
use envelope::{FOOTER, HEADER, read_envelope};
use fields::{Catalog, Shape, type_label};
use pages::ColumnCodec;
use read::Reading;
use schema::{check_ids, read_header};

/// The class of an RNTuple's anchor key.
pub const ANCHOR_CLASS: &str = "ROOT::RNTuple";

/// Whether a key of this class is an RNTuple anchor (of format 1, or of
/// ROOT's pre-release, which is refused when read).
pub fn is_rntuple(class_name: &str) -> bool {
    class_name == ANCHOR_CLASS || class_name == "ROOT::Experimental::RNTuple"
}

/// A top-level field.
#[derive(Debug, Clone, PartialEq)]
pub struct NtupleField {
    pub id: usize,
    pub name: String,
    /// The C++ type the file records (`std::vector<float>`).
    pub cpp_type: String,
    /// The type in quarry's spelling (`float32[]`, `{pt: float32}`).
    pub type_name: String,
    pub description: String,
    /// Why the field cannot be read, if it cannot.
    pub unsupported: Option<String>,
    shape: Shape,
}

/// An RNTuple: its schema, its clusters and pages, and what its fields
/// hold. Values are read through `RootFile::ntuple_field`,
/// `RootFile::ntuple_column` and `RootFile::ntuple_reader`.
#[derive(Debug, Clone)]
pub struct RNTuple {
    pub anchor: Anchor,
    /// The name the header records (the key's name is how files list it).
    pub name: String,
    pub description: String,
    /// The library that wrote it ("ROOT v6.34.02").
    pub writer: String,
    pub schema: Schema,
    /// Clusters in entry order, tiling entries 0 to `entries`.
    pub clusters: Vec<Cluster>,
    pub entries: u64,
    /// The top-level fields, in field order.
    pub fields: Vec<NtupleField>,
    /// One per leaf of the top-level fields, as TTree branches are listed.
    pub columns: Vec<NtupleColumn>,
    codecs: Vec<Result<ColumnCodec, String>>,
    /// Per physical column, the elements one entry holds when the column
    /// lies outside any collection (what places a deferred column's zeros).
    per_entry: Vec<Option<u64>>,
}

impl RootFile {
    /// Reads the RNTuple whose anchor is `key`: anchor, header, footer and
    /// page lists (no pages).
    pub fn rntuple(&self, key: &Key) -> Result<RNTuple, FormatError> {
        if key.class_name != ANCHOR_CLASS {
            return Err(FormatError::Unsupported(format!(
                "'{}' is a {}, not a {ANCHOR_CLASS} of format 1",
                key.name, key.class_name
            )));
        }
        let anchor = anchor::parse_anchor(&self.object(key)?)?;
        let link = |seek, nbytes| Loc::File {
            offset: seek,
            size: nbytes,
        };
        let max_key = anchor.max_key_size;
        let header = read_envelope(
            self,
            link(anchor.seek_header, anchor.nbytes_header),
            anchor.len_header,
            max_key,
            HEADER,
        )?;
        let mut schema = Schema::default();
        let info = read_header(&mut header.payload(), &mut schema)?;
        let footer_env = read_envelope(
            self,
            link(anchor.seek_footer, anchor.nbytes_footer),
            anchor.len_footer,
            max_key,
            FOOTER,
        )?;
        let footer = read_footer(&mut footer_env.payload(), header.checksum, &mut schema)?;
        check_ids(&schema)?;
        let clusters = read_clusters(
            self,
            &footer,
            header.checksum,
            schema.columns.len(),
            max_key,
        )?;
        let entries = clusters.last().map_or(0, |c| c.first_entry + c.entries);
        let codecs: Vec<_> = schema.columns.iter().map(ColumnCodec::of).collect();
        let catalog = Catalog::new(&schema, &codecs);
        let fields: Vec<NtupleField> = catalog
            .top_level()
            .into_iter()
            .map(|id| {
                let shape = catalog.shape(id);
                let record = &schema.fields[id];
                NtupleField {
                    id,
                    name: record.name.clone(),
                    cpp_type: record.type_name.clone(),
                    type_name: type_label(&shape),
                    description: record.description.clone(),
                    unsupported: first_unsupported(&shape),
                    shape,
                }
            })
            .collect();
        let mut per_entry = vec![None; schema.columns.len()];
        for f in &fields {
            place_columns(&f.shape, Some(1), &mut per_entry);
        }
        let mut columns = columns::flat_columns(&fields);
        columns::name_counters(&mut columns, &fields);
        Ok(RNTuple {
            anchor,
            name: info.name,
            description: info.description,
            writer: info.writer,
            schema,
            clusters,
            entries,
            fields,
            columns,
            codecs,
            per_entry,
        })
    }

    /// The values of top-level field `field` for `entries`, taking at most
    /// `DEFAULT_READ_LIMIT` bytes of memory.
    pub fn ntuple_field(
        &self,
        nt: &RNTuple,
        field: &NtupleField,
        entries: Range<u64>,
    ) -> Result<FieldData, FormatError> {
        self.ntuple_field_within(nt, field, entries, DEFAULT_READ_LIMIT)
    }

    /// `ntuple_field` taking at most `limit` bytes of memory (values,
    /// decoded pages); past it the read is refused as `Unsupported`.
    pub fn ntuple_field_within(
        &self,
        nt: &RNTuple,
        field: &NtupleField,
        entries: Range<u64>,
        limit: u64,
    ) -> Result<FieldData, FormatError> {
        let mut reading = Reading::new(self, nt);
        reading.set_limit(limit);
        reading.entries(&field.shape, entries)
    }
}

/// Records the elements per entry of the columns outside collections.
fn place_columns(shape: &Shape, per_entry: Option<u64>, out: &mut [Option<u64>]) {
    let mut mark = |reprs: &fields::Reprs, n: Option<u64>| {
        for &c in reprs.iter().flatten() {
            if out[c].is_none() {
                out[c] = n;
            }
        }
    };
    match shape {
        Shape::Leaf { columns, .. }
        | Shape::Str { columns }
        | Shape::Cardinality { columns, .. } => mark(columns, per_entry),
        Shape::Array { size, item } => {
            place_columns(item, per_entry.and_then(|n| n.checked_mul(*size)), out)
        }
        Shape::Collection { columns, item, .. } => {
            mark(columns, per_entry);
            place_columns(item, None, out);
        }
        Shape::Variant {
            columns,
            alternatives,
        } => {
            mark(columns, per_entry);
            for a in alternatives {
                place_columns(a, None, out);
            }
        }
        Shape::Record { members, .. } => {
            for m in members {
                place_columns(&m.shape, per_entry, out);
            }
        }
        Shape::Unsupported(_) => {}
    }
}

/// The first reason a shape cannot be read, if any part of it cannot.
fn first_unsupported(shape: &Shape) -> Option<String> {
    match shape {
        Shape::Unsupported(why) => Some(why.clone()),
        Shape::Array { item, .. } | Shape::Collection { item, .. } => first_unsupported(item),
        Shape::Record { members, .. } => members.iter().find_map(|m| first_unsupported(&m.shape)),
        Shape::Variant { alternatives, .. } => alternatives.iter().find_map(first_unsupported),
        _ => None,
    }
}

impl RNTuple {
    /// The entries of each cluster, in order.
    pub fn cluster_ranges(&self) -> Vec<Range<u64>> {
        self.clusters
            .iter()
            .map(|c| c.first_entry..c.first_entry + c.entries)
            .collect()
    }

    /// A top-level field by name.
    pub fn field(&self, name: &str) -> Option<&NtupleField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// A column by path (`Muon.pt`).
    pub fn column(&self, path: &str) -> Option<&NtupleColumn> {
        self.columns.iter().find(|c| c.path == path)
    }

    /// The type of a physical column, or why it cannot be read.
    pub fn column_type(&self, column: usize) -> Result<ColumnType, String> {
        self.codecs[column]
            .as_ref()
            .map(|c| c.kind)
            .map_err(Clone::clone)
    }

    /// Bytes a physical column takes on storage and once decompressed,
    /// over every cluster.
    pub(crate) fn physical_sizes(&self, column: usize) -> (u64, u64) {
        let bits = u64::from(self.schema.columns[column].bits);
        let mut sizes = (0u64, 0u64);
        for c in &self.clusters {
            for page in c.columns.get(column).map_or(&[][..], |r| &r.pages) {
                if let Loc::File { size, .. } = page.locator {
                    sizes.0 = sizes.0.saturating_add(size);
                }
                let bytes = (u64::from(page.elements) * bits).div_ceil(8);
                sizes.1 = sizes.1.saturating_add(bytes);
            }
        }
        sizes
    }

    /// Bytes the whole RNTuple's pages take, stored and decompressed.
    pub fn sizes(&self) -> (u64, u64) {
        (0..self.schema.columns.len())
            .map(|c| self.physical_sizes(c))
            .fold((0, 0), |a, b| {
                (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
            })
    }

    /// Bytes a column's own data takes (its values' columns in every
    /// representation, not the index of the collection it belongs to),
    /// stored and decompressed.
    pub fn column_sizes(&self, column: &NtupleColumn) -> (u64, u64) {
        let mut ids = Vec::new();
        own_columns(&column.shape, &mut ids);
        ids.iter()
            .map(|&c| self.physical_sizes(c))
            .fold((0, 0), |a, b| {
                (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
            })
    }

    /// Stored bytes of a column's own pages in each cluster, in cluster
    /// order: what reading the column there reads (a scan's cost estimate).
    pub fn column_cluster_bytes(&self, column: &NtupleColumn) -> Vec<u64> {
        let mut ids = Vec::new();
        own_columns(&column.shape, &mut ids);
        self.clusters
            .iter()
            .map(|c| {
                ids.iter()
                    .filter_map(|&id| c.columns.get(id))
                    .flat_map(|r| &r.pages)
                    .map(|p| match p.locator {
                        Loc::File { size, .. } => size,
                        _ => 0,
                    })
                    .fold(0u64, u64::saturating_add)
            })
            .collect()
    }

    /// Where the pages of `column` (its own columns, as `column_cluster_bytes`
    /// counts them) lie in the file, for the clusters holding any of
    /// `entries`: what a remote file prefetches before reading them.
    pub(crate) fn column_page_ranges(
        &self,
        column: &NtupleColumn,
        entries: &std::ops::Range<u64>,
    ) -> Vec<std::ops::Range<u64>> {
        let mut ids = Vec::new();
        own_columns(&column.shape, &mut ids);
        self.clusters
            .iter()
            .filter(|c| {
                c.first_entry < entries.end
                    && entries.start < c.first_entry.saturating_add(c.entries)
            })
            .flat_map(|c| ids.iter().filter_map(|&id| c.columns.get(id)))
            .flat_map(|r| &r.pages)
            .filter_map(|p| match p.locator {
                Loc::File { offset, size } => Some(offset..offset.checked_add(size)?),
                _ => None,
            })
            .collect()
    }

    /// The compression setting (algorithm * 100 + level) of the first page
    /// range stored, as a file's; None without pages.
    pub fn compression(&self) -> Option<u32> {
        self.clusters
            .iter()
            .flat_map(|c| &c.columns)
            .find_map(|r| r.compression)
    }

    /// The representation of `reprs` stored in `cluster`, if one is.
    pub(super) fn stored_repr<'r>(
        &self,
        reprs: &'r fields::Reprs,
        cluster: usize,
    ) -> Option<&'r [usize]> {
        let ranges = &self.clusters[cluster].columns;
        reprs
            .iter()
            .find(|r| {
                r.iter()
                    .all(|&c| ranges.get(c).is_some_and(|x| x.first_element.is_some()))
            })
            .map(Vec::as_slice)
    }

    /// How many of a column's elements in `cluster` come before the first
    /// it stores there: the zeros of a column added after writing began.
    pub(super) fn lead_zeros(&self, column: usize, cluster: usize) -> Result<u64, FormatError> {
        if self.schema.columns[column].first_element <= 0 {
            return Ok(0);
        }
        let c = &self.clusters[cluster];
        let Some(per_entry) = self.per_entry[column] else {
            return Err(FormatError::Unsupported(
                "a column added late inside a collection (a later format's feature)".into(),
            ));
        };
        let logical = c
            .first_entry
            .checked_mul(per_entry)
            .ok_or_else(|| corrupt("RNTuple column element index overflows"))?;
        let in_cluster = c.entries.saturating_mul(per_entry);
        Ok(match c.columns.get(column).and_then(|r| r.first_element) {
            Some(first) => first.saturating_sub(logical).min(in_cluster),
            // Not in this cluster's page list: all zeros here.
            None => in_cluster,
        })
    }
}

/// The physical columns holding a cut-down shape's values.
fn own_columns(shape: &Shape, out: &mut Vec<usize>) {
    match shape {
        Shape::Leaf { columns, .. }
        | Shape::Str { columns }
        | Shape::Cardinality { columns, .. } => out.extend(columns.iter().flatten()),
        Shape::Variant { columns, .. } => out.extend(columns.iter().flatten()),
        Shape::Array { item, .. } | Shape::Collection { item, .. } => own_columns(item, out),
        Shape::Record { members, .. } => {
            for m in members {
                own_columns(&m.shape, out);
            }
        }
        Shape::Unsupported(_) => {}
    }
}
