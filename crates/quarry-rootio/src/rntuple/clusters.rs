//! The footer (feature flags, the header's checksum, the schema extension,
//! the cluster groups) and each group's page list envelope: its clusters'
//! entry ranges and, per cluster and column, where each page lies.

use super::bytes::{Le, Locator, corrupt, mismatch, plausible};
use super::envelope::{PAGE_LIST, read_envelope};
use super::schema::{Schema, read_schema_lists, refuse_features};
use crate::FormatError;
use crate::RootFile;

/// One page of a column in a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub elements: u32,
    /// An XXH3-64 of the stored bytes follows the page.
    pub checksum: bool,
    pub locator: Locator,
}

/// A column's pages in one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnRange {
    /// The column's index of the cluster's first element; None when the
    /// column is suppressed here (another representation holds the data).
    pub first_element: Option<u64>,
    pub compression: Option<u32>,
    pub pages: Vec<Page>,
    /// The element each page starts at, relative to the cluster, and the
    /// total at the end (one more than `pages`).
    pub starts: Vec<u64>,
}

impl ColumnRange {
    pub fn elements(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }
}

/// A cluster: an entry range and the pages of every column in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    pub first_entry: u64,
    pub entries: u64,
    /// By physical column id; shorter than the column list when columns
    /// were added after this cluster's page list was written.
    pub columns: Vec<ColumnRange>,
}

/// What the footer holds besides the extension (which goes into the schema).
pub(super) struct Footer {
    pub groups: Vec<Group>,
}

pub(super) struct Group {
    pub clusters: u32,
    pub page_list: (u64, Locator),
}

/// Reads the footer payload; its schema extension is appended to `schema`.
pub(super) fn read_footer(
    r: &mut Le<'_>,
    header_checksum: u64,
    schema: &mut Schema,
) -> Result<Footer, FormatError> {
    refuse_features(&r.feature_flags("footer feature flags")?, "footer")?;
    check_header_checksum(
        r.u64("footer's header checksum")?,
        header_checksum,
        "footer",
    )?;
    let mut extension = r.record_frame("schema extension")?;
    // An empty extension may be a frame with nothing in it.
    if extension.remaining() > 0 {
        read_schema_lists(&mut extension, schema)?;
    }
    let (count, mut items) = r.list_frame("cluster groups")?;
    let mut groups = Vec::with_capacity(plausible(count, items.remaining(), 8 + 32));
    for _ in 0..count {
        let mut g = items.record_frame("cluster group")?;
        let _min_entry = g.u64("cluster group first entry")?;
        let _span = g.u64("cluster group entry span")?;
        let clusters = g.u32("cluster group cluster count")?;
        let page_list = g.envelope_link("page list link")?;
        groups.push(Group {
            clusters,
            page_list,
        });
    }
    // Format 1.0.1 follows with linked attribute sets (RNTuples of their
    // own, holding metadata): not read, and nothing after them is needed.
    Ok(Footer { groups })
}

fn check_header_checksum(found: u64, header: u64, envelope: &str) -> Result<(), FormatError> {
    if mismatch(found, header) {
        return Err(corrupt(format!(
            "RNTuple {envelope} belongs to another header (checksum {found:016x}, header {header:016x})"
        )));
    }
    Ok(())
}

/// Reads every group's page list into clusters, sorted by first entry and
/// checked to tile the entries from 0 without gaps.
pub(super) fn read_clusters(
    file: &RootFile,
    footer: &Footer,
    header_checksum: u64,
    columns: usize,
    max_key_size: u64,
) -> Result<Vec<Cluster>, FormatError> {
    let mut clusters = Vec::new();
    for group in &footer.groups {
        let (len, locator) = group.page_list;
        let envelope = read_envelope(file, locator, len, max_key_size, PAGE_LIST)?;
        let before = clusters.len();
        read_page_list(
            &mut envelope.payload(),
            header_checksum,
            columns,
            &mut clusters,
        )?;
        if clusters.len() - before != group.clusters as usize {
            return Err(corrupt(format!(
                "RNTuple cluster group of {} clusters has a page list of {}",
                group.clusters,
                clusters.len() - before
            )));
        }
    }
    clusters.sort_by_key(|c| c.first_entry);
    let mut next = 0u64;
    for c in &clusters {
        if c.first_entry != next {
            return Err(corrupt(format!(
                "RNTuple clusters leave a gap or overlap at entry {next} (a cluster starts at {})",
                c.first_entry
            )));
        }
        next = next
            .checked_add(c.entries)
            .ok_or_else(|| corrupt("RNTuple clusters hold more than 2^64 entries"))?;
    }
    Ok(clusters)
}

fn read_page_list(
    r: &mut Le<'_>,
    header_checksum: u64,
    columns: usize,
    out: &mut Vec<Cluster>,
) -> Result<(), FormatError> {
    check_header_checksum(
        r.u64("page list's header checksum")?,
        header_checksum,
        "page list",
    )?;
    let (count, mut items) = r.list_frame("cluster summaries")?;
    let first = out.len();
    for _ in 0..count {
        let mut s = items.record_frame("cluster summary")?;
        let first_entry = s.u64("cluster first entry")?;
        let word = s.u64("cluster entries")?;
        if (word >> 56) & 0x01 != 0 {
            return Err(FormatError::Unsupported(
                "RNTuple with sharded clusters (cluster flag 0x01): a feature of a later format, not read"
                    .into(),
            ));
        }
        out.push(Cluster {
            first_entry,
            entries: word & ((1 << 56) - 1),
            columns: Vec::new(),
        });
    }
    let (listed, mut items) = r.list_frame("page locations")?;
    if listed != count {
        return Err(corrupt(format!(
            "RNTuple page list: {count} cluster summaries, page locations of {listed}"
        )));
    }
    for cluster in &mut out[first..] {
        let (ncols, mut cols) = items.list_frame("cluster's columns")?;
        if ncols as usize > columns {
            return Err(corrupt(format!(
                "RNTuple page list names {ncols} columns, the schema {columns}"
            )));
        }
        cluster.columns.reserve(ncols as usize);
        for _ in 0..ncols {
            cluster.columns.push(read_column_range(&mut cols)?);
        }
    }
    Ok(())
}

fn read_column_range(r: &mut Le<'_>) -> Result<ColumnRange, FormatError> {
    let (count, mut body) = r.list_frame("column pages")?;
    let mut pages = Vec::with_capacity(plausible(count, body.remaining(), 16));
    let mut starts = Vec::with_capacity(pages.capacity() + 1);
    let mut total = 0u64;
    starts.push(0);
    for _ in 0..count {
        let n = body.i32("page element count")?;
        let locator = body.locator("page locator")?;
        let elements = n.unsigned_abs();
        total += u64::from(elements);
        starts.push(total);
        pages.push(Page {
            elements,
            checksum: n < 0,
            locator,
        });
    }
    let offset = body.i64("column element offset")?;
    let (first_element, compression) = if offset < 0 {
        (None, None)
    } else {
        (Some(offset as u64), Some(body.u32("compression settings")?))
    };
    if first_element.is_none() && !pages.is_empty() {
        return Err(corrupt("RNTuple suppressed column with pages"));
    }
    Ok(ColumnRange {
        first_element,
        compression,
        pages,
        starts,
    })
}
