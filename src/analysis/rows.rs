//! Reading entries as rows: which entries a page of a selection holds (only the
//! cut's branches are scanned), then the values of those entries, reading only
//! the baskets that hold them (a page at entry 5,000,000 decodes no basket
//! before it).

use std::ops::Range;

use super::counted::{CountedReader, open_readers};
use super::dataset::{Member, chain_entries, locate};
use super::eval::{Inputs, SlotData, Val};
use super::ops::{Counted, Together, window_slots};
use super::plan::{Plan, TreeColumns};
use super::predicate::{Predicate, mask_cut};
use super::scan::scan;
use super::source::Origin;
use super::{AnalysisError, balanced_groups};
use crate::formats::root::{Column, RootFile, Values};
use crate::job::Job;

/// One value as read, exactly (integers stay integers, uint64 included).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    List(Vec<Cell>),
}

/// The entries (numbered in the chain of members) at positions from `offset`,
/// `limit` of them, among those passing `cut` (all entries without one), with
/// how many were scanned and selected, in all and in each member.
pub fn page_entries(
    members: &[Member<'_>],
    cut: Option<&Plan>,
    offset: u64,
    limit: u64,
    job: &Job,
) -> Result<(Vec<u64>, Counted, Vec<Counted>), AnalysisError> {
    let total = chain_entries(members);
    let Some(cut) = cut else {
        // Without a cut only the page's entries are read.
        let start = offset.min(total);
        let end = offset.saturating_add(limit).min(total);
        let counted = Counted {
            scanned: end - start,
            selected: total,
        };
        let by_member = members
            .iter()
            .map(|m| {
                let first = m.first_entry;
                let mine = first..first + m.tree.entries;
                let read = start.max(mine.start)..end.min(mine.end);
                Counted {
                    scanned: read.end.saturating_sub(read.start),
                    selected: m.tree.entries,
                }
            })
            .collect();
        return Ok(((start..end).collect(), counted, by_member));
    };
    let map: Vec<usize> = (0..cut.columns.len()).collect();
    let predicate = Predicate::of(&cut.root);
    let mut page = Vec::new();
    let mut selected = 0;
    let mut by_member = vec![Counted::default(); members.len()];
    let scanned = scan(members, &cut.columns, 0..total, Some(cut), job, |w| {
        let slots: Vec<SlotData> = (0..cut.columns.len()).map(|i| w.slot_data(i)).collect();
        let inputs = Inputs {
            entries: w.len(),
            first_entry: w.global_start(),
            slots: &slots,
            map: &map,
        };
        let mask = mask_cut(predicate.as_ref(), &cut.root, &inputs)?;
        let mine = &mut by_member[w.member];
        mine.scanned += w.len() as u64;
        for (i, pass) in mask.into_iter().enumerate() {
            if pass {
                if selected >= offset && selected - offset < limit {
                    page.push(w.global_start() + i as u64);
                }
                selected += 1;
                mine.selected += 1;
            }
        }
        Ok(true)
    })?;
    Ok((page, Counted { scanned, selected }, by_member))
}

/// `read_rows` of entries numbered in the chain of members (ascending): each
/// member's entries read from its own file, the rows in the order given.
pub fn read_chain_rows(
    members: &[Member<'_>],
    columns: &[usize],
    entries: &[u64],
    job: &Job,
) -> Result<Vec<Vec<Cell>>, AnalysisError> {
    let mut rows = Vec::with_capacity(entries.len());
    let mut rest = entries;
    while let Some(&first) = rest.first() {
        let Some((m, _)) = locate(members, first) else {
            return Err(AnalysisError::Format(crate::formats::FormatError::Corrupt(
                format!("no file of the dataset holds entry {first}"),
            )));
        };
        let member = &members[m];
        let end = member.first_entry + member.tree.entries;
        let mine = rest.partition_point(|&e| e < end);
        let local: Vec<u64> = rest[..mine]
            .iter()
            .map(|e| e - member.first_entry)
            .collect();
        rows.extend(read_rows(member.file, member.tree, columns, &local, job)?);
        rest = &rest[mine..];
    }
    Ok(rows)
}

/// The values of `columns` (indices into `tree.columns`) at `entries`
/// (ascending): `rows[i][c]` is column `c` of entry `entries[i]`. A collection
/// or fixed array is a `Cell::List`. Columns are read in parallel, each from
/// the baskets holding the entries only.
pub fn read_rows(
    file: &RootFile,
    tree: &TreeColumns<'_>,
    columns: &[usize],
    entries: &[u64],
    job: &Job,
) -> Result<Vec<Vec<Cell>>, AnalysisError> {
    use rayon::prelude::*;
    let readers = open_readers(file, tree, columns)?;
    let read_column = |k: usize| -> Result<Vec<Cell>, AnalysisError> {
        let mut current = BasketCursor::new(&readers[k], entries);
        entries
            .iter()
            .map(|&entry| match job.stopped() {
                Some(stop) => Err(AnalysisError::Stopped {
                    stop,
                    entries_done: 0,
                }),
                None => current.cell(entry),
            })
            .collect()
    };
    let costs: Vec<u64> = columns
        .iter()
        .zip(&readers)
        .map(|(&c, reader)| read_cost(reader, tree.columns[c].origin, entries))
        .collect();
    let groups = balanced_groups(&costs, rayon::current_num_threads().max(1));
    let read: Vec<Vec<(usize, Vec<Cell>)>> = groups
        .par_iter()
        .with_max_len(1)
        .map(|group| group.iter().map(|&k| Ok((k, read_column(k)?))).collect())
        .collect::<Result<_, AnalysisError>>()?;
    let mut by_column: Vec<Vec<Cell>> = vec![Vec::new(); columns.len()];
    for (k, cells) in read.into_iter().flatten() {
        by_column[k] = cells;
    }
    let mut rows: Vec<Vec<Cell>> = entries
        .iter()
        .map(|_| Vec::with_capacity(columns.len()))
        .collect();
    for column in by_column {
        for (row, cell) in rows.iter_mut().zip(column) {
            row.push(cell);
        }
    }
    Ok(rows)
}

/// The values of expressions (`plans`) at `entries` (ascending, numbered in
/// the chain of members):
/// `rows[i][k]` is plan `k` at entry `entries[i]`, a number (NaN where it has
/// no value) or, for a collection, a list (empty where it has no value).
/// The columns the plans read are scanned from the first entry to the last,
/// and only the windows holding a wanted entry are evaluated.
pub fn read_computed(
    members: &[Member<'_>],
    plans: &[&Plan],
    entries: &[u64],
    job: &Job,
) -> Result<Vec<Vec<Cell>>, AnalysisError> {
    let mut rows: Vec<Vec<Cell>> = entries
        .iter()
        .map(|_| Vec::with_capacity(plans.len()))
        .collect();
    let (Some(&first), Some(&last)) = (entries.first(), entries.last()) else {
        return Ok(rows);
    };
    let together = Together::new(plans.to_vec());
    let mut next = 0;
    scan(
        members,
        &together.columns,
        first..last + 1,
        None,
        job,
        |w| {
            // Entries numbered in the chain of members, as `entries` are.
            let start = w.global_start();
            let end = start + w.len() as u64;
            let wanted = next..next + entries[next..].partition_point(|&e| e < end);
            if wanted.is_empty() {
                return Ok(true);
            }
            let slots = window_slots(&together, w);
            let values = together.evaluate(&slots, w)?;
            for i in wanted.clone() {
                let r = (entries[i] - start) as usize;
                rows[i].extend(values.iter().map(|v| computed_cell(v, r)));
            }
            next = wanted.end;
            Ok(next < entries.len())
        },
    )?;
    Ok(rows)
}

/// An evaluated value at a window's entry `r` as a cell.
fn computed_cell(v: &Val, r: usize) -> Cell {
    let missing = |valid: &Option<Vec<bool>>| valid.as_ref().is_some_and(|m| !m[r]);
    match v {
        Val::Const(c) => Cell::Float(*c),
        Val::Scalar { valid, .. } if missing(valid) => Cell::Float(f64::NAN),
        Val::Scalar { v, .. } => Cell::Float(v[r]),
        Val::Jagged { valid, .. } if missing(valid) => Cell::List(Vec::new()),
        Val::Jagged { v, offsets, .. } => Cell::List(
            v[offsets[r]..offsets[r + 1]]
                .iter()
                .map(|&x| Cell::Float(x))
                .collect(),
        ),
    }
}

/// The stored bytes of a column's baskets read for `entries` (ascending),
/// each up to the last entry wanted from it: what reading them costs, nearly
/// all of it decompression.
fn read_cost(reader: &CountedReader<'_>, origin: Origin<'_>, entries: &[u64]) -> u64 {
    let ranges = reader.basket_ranges();
    // A chunk's stored bytes: a branch's basket's; for an RNTuple column its
    // share, by entries, of its cluster's pages.
    let clusters = origin.chunk_bytes();
    let all_end = ranges.last().map_or(0, |r| r.end);
    let chunk_bytes = |basket: usize, range: &Range<u64>| -> u64 {
        if let Some(branch) = origin.branch() {
            return branch
                .basket_bytes
                .get(basket)
                .map_or(0, |&n| n.max(0) as u64);
        }
        let k = clusters
            .partition_point(|(start, _)| *start <= range.start)
            .saturating_sub(1);
        let Some(&(start, bytes)) = clusters.get(k) else {
            return 0;
        };
        let end = clusters.get(k + 1).map_or(all_end, |c| c.0);
        bytes * (range.end - range.start) / (end - start).max(1)
    };
    let mut cost = 0;
    let mut rest = entries;
    while let Some(&entry) = rest.first() {
        let basket = ranges.partition_point(|r| r.end <= entry);
        let Some(range) = ranges.get(basket) else {
            break;
        };
        let within = rest.partition_point(|&e| e < range.end);
        let last = rest[within.max(1) - 1];
        let bytes = chunk_bytes(basket, range);
        let span = (range.end - range.start).max(1);
        cost += bytes * (last + 1 - range.start).min(span) / span;
        rest = &rest[within.max(1)..];
    }
    cost
}

/// The basket of one column holding the entry last asked for, decoded up to
/// the last entry wanted from it (`wanted`, ascending).
struct BasketCursor<'r, 'f> {
    reader: &'r CountedReader<'f>,
    wanted: &'r [u64],
    basket: Option<usize>,
    column: Column,
    offsets: Vec<usize>,
}

impl<'r, 'f> BasketCursor<'r, 'f> {
    fn new(reader: &'r CountedReader<'f>, wanted: &'r [u64]) -> Self {
        BasketCursor {
            reader,
            wanted,
            basket: None,
            column: reader.empty_column(),
            offsets: Vec::new(),
        }
    }

    fn cell(&mut self, entry: u64) -> Result<Cell, AnalysisError> {
        let ranges = self.reader.basket_ranges();
        let index = ranges.partition_point(|r| r.end <= entry);
        let Some(range) = ranges.get(index).filter(|r| r.contains(&entry)) else {
            return Err(AnalysisError::Format(crate::formats::FormatError::Corrupt(
                format!("no basket holds entry {entry}"),
            )));
        };
        let first = range.start;
        if self.basket != Some(index) {
            self.load(index, range.clone(), entry)?;
        }
        let e = (entry - first) as usize;
        let Range { start: a, end: b } = entry_range(&self.column, &self.offsets, e);
        let is_list = self.column.counts.is_some() || self.column.inner > 1;
        if is_list {
            Ok(Cell::List(
                (a..b).map(|i| cell_at(&self.column.values, i)).collect(),
            ))
        } else {
            Ok(cell_at(&self.column.values, a))
        }
    }

    /// Decodes basket `index` (entries `range`) through the last entry wanted
    /// from it: a page early in a large basket inflates only its head.
    fn load(&mut self, index: usize, range: Range<u64>, entry: u64) -> Result<(), AnalysisError> {
        let last = self.wanted[..self.wanted.partition_point(|&e| e < range.end)]
            .last()
            .copied()
            .unwrap_or(entry)
            .max(entry);
        let head = (last + 1 - range.start) as usize;
        self.reader
            .read_basket_head(index, head, &mut self.column)?;
        self.basket = Some(index);
        entry_offsets(&self.column, &mut self.offsets);
        Ok(())
    }
}

/// Where each entry of a decoded jagged basket starts in its values
/// (`offsets[e]..offsets[e + 1]`); left empty for a column with a fixed
/// number of values per entry, whose ranges `entry_range` computes.
fn entry_offsets(column: &Column, offsets: &mut Vec<usize>) {
    offsets.clear();
    if let Some(counts) = &column.counts {
        offsets.reserve(counts.len() + 1);
        offsets.push(0);
        let mut at = 0;
        for c in counts {
            at += *c as usize * column.inner;
            offsets.push(at);
        }
    }
}

/// The values of entry `e` of a basket, given its `entry_offsets`.
fn entry_range(column: &Column, offsets: &[usize], e: usize) -> Range<usize> {
    if column.counts.is_some() {
        offsets[e]..offsets[e + 1]
    } else {
        e * column.inner..(e + 1) * column.inner
    }
}

fn cell_at(values: &Values, i: usize) -> Cell {
    match values {
        Values::Bool(v) => Cell::Bool(v[i]),
        Values::I8(v) => Cell::Int(v[i].into()),
        Values::U8(v) => Cell::UInt(v[i].into()),
        Values::I16(v) => Cell::Int(v[i].into()),
        Values::U16(v) => Cell::UInt(v[i].into()),
        Values::I32(v) => Cell::Int(v[i].into()),
        Values::U32(v) => Cell::UInt(v[i].into()),
        Values::I64(v) => Cell::Int(v[i]),
        Values::U64(v) => Cell::UInt(v[i]),
        Values::F32(v) => Cell::Float(v[i].into()),
        Values::F64(v) => Cell::Float(v[i]),
        Values::Str(v) => Cell::Str(v[i].clone()),
    }
}
