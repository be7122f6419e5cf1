//! Reading several columns lined up on entries. Each column is read one basket
//! at a time; a window runs from the current entry to the nearest end of any
//! column's current basket, so every window lies within one basket of every
//! column and no basket is decoded twice. Memory holds one basket per column,
//! whatever the tree's size.

use std::ops::Range;
use std::sync::Arc;

use super::AnalysisError;
use super::eval::SlotData;
use super::plan::TreeColumns;
use crate::formats::root::{Column, ColumnReader, RootFile, Values};
use crate::job::Job;

/// Entries per window when no column is read (a constant cut).
const EMPTY_WINDOW: u64 = 1 << 16;

struct Stream<'f> {
    reader: ColumnReader<'f>,
    name: Arc<str>,
    /// The basket in `column`, if any.
    basket: Option<usize>,
    column: Column,
    /// Where each entry's elements start in `column.values`, and the end.
    offsets: Vec<usize>,
}

impl Stream<'_> {
    fn range(&self) -> Range<u64> {
        self.basket
            .map_or(0..0, |b| self.reader.basket_ranges()[b].clone())
    }

    /// Loads the basket holding `entry`.
    fn seek(&mut self, entry: u64) -> Result<(), AnalysisError> {
        if self.range().contains(&entry) {
            return Ok(());
        }
        let ranges = self.reader.basket_ranges();
        let index = ranges.partition_point(|r| r.end <= entry);
        let Some(r) = ranges.get(index) else {
            return Err(AnalysisError::Format(crate::formats::FormatError::Corrupt(
                format!("branch '{}' has no basket for entry {entry}", self.name),
            )));
        };
        if !r.contains(&entry) {
            return Err(AnalysisError::Format(crate::formats::FormatError::Corrupt(
                format!(
                    "branch '{}' has a gap in its baskets at entry {entry}",
                    self.name
                ),
            )));
        }
        self.reader.read_basket(index, &mut self.column)?;
        self.basket = Some(index);
        entry_offsets(&self.column, &mut self.offsets);
        Ok(())
    }
}

/// Where each entry of a decoded basket starts in its values (`offsets[e]..
/// offsets[e + 1]`), for jagged and fixed-size columns alike.
pub(super) fn entry_offsets(column: &Column, offsets: &mut Vec<usize>) {
    offsets.clear();
    offsets.push(0);
    let inner = column.inner;
    match &column.counts {
        Some(counts) => {
            let mut at = 0;
            for c in counts {
                at += *c as usize * inner;
                offsets.push(at);
            }
        }
        None => offsets.extend((1..=column.entries).map(|e| e * inner)),
    }
}

/// One window of entries, with each column's part of it.
pub struct Window<'s, 'f> {
    pub entries: Range<u64>,
    streams: &'s [Stream<'f>],
}

/// A column's part of a window: values `elements` of `column`, entry by entry
/// as `offsets` says (relative to `elements.start`).
pub struct ColumnPart<'a> {
    pub column: &'a Column,
    pub elements: Range<usize>,
    pub offsets: &'a [usize],
}

impl<'s, 'f> Window<'s, 'f> {
    pub fn len(&self) -> usize {
        (self.entries.end - self.entries.start) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Column `i` (in the order given to `scan`) over this window.
    pub fn part(&self, i: usize) -> ColumnPart<'s> {
        let s = &self.streams[i];
        let first = (self.entries.start - s.range().start) as usize;
        let offsets = &s.offsets[first..=first + self.len()];
        ColumnPart {
            column: &s.column,
            elements: offsets[0]..offsets[self.len()],
            offsets,
        }
    }

    /// Column `i` as numbers, for the evaluator.
    pub fn slot_data(&self, i: usize) -> SlotData {
        let part = self.part(i);
        let s = &self.streams[i];
        let is_collection = part.column.counts.is_some() || part.column.inner > 1;
        SlotData {
            values: to_f64(&part.column.values, part.elements.clone()),
            offsets: is_collection
                .then(|| Arc::new(part.offsets.iter().map(|o| o - part.offsets[0]).collect())),
            name: s.name.clone(),
        }
    }
}

/// Numbers of a column as f64 (strings are refused by the plan before this).
pub fn to_f64(values: &Values, r: Range<usize>) -> Vec<f64> {
    match values {
        Values::Bool(v) => v[r].iter().map(|&b| f64::from(u8::from(b))).collect(),
        Values::I8(v) => v[r].iter().map(|&x| f64::from(x)).collect(),
        Values::U8(v) => v[r].iter().map(|&x| f64::from(x)).collect(),
        Values::I16(v) => v[r].iter().map(|&x| f64::from(x)).collect(),
        Values::U16(v) => v[r].iter().map(|&x| f64::from(x)).collect(),
        Values::I32(v) => v[r].iter().map(|&x| f64::from(x)).collect(),
        Values::U32(v) => v[r].iter().map(|&x| f64::from(x)).collect(),
        Values::I64(v) => v[r].iter().map(|&x| x as f64).collect(),
        Values::U64(v) => v[r].iter().map(|&x| x as f64).collect(),
        Values::F32(v) => v[r].iter().map(|&x| f64::from(x)).collect(),
        Values::F64(v) => v[r].to_vec(),
        Values::Str(v) => vec![f64::NAN; v[r].len()],
    }
}

/// Hands `each` the windows covering `entries` of the columns `columns` (indices
/// into `tree.columns`), in entry order. Checks `job` between windows (a stop
/// is `AnalysisError::Stopped` with the entries done) and reports progress
/// against `total` units of `progress_base + entries done`. `each` returns
/// whether to go on.
pub fn scan(
    file: &RootFile,
    tree: &TreeColumns<'_>,
    columns: &[usize],
    entries: Range<u64>,
    job: &Job,
    mut each: impl FnMut(&Window<'_, '_>) -> Result<bool, AnalysisError>,
) -> Result<(), AnalysisError> {
    let mut streams = columns
        .iter()
        .map(|&c| {
            let info = &tree.columns[c];
            let reader = file.column_reader(info.branch, info.leaf)?;
            let column = reader.empty_column();
            Ok(Stream {
                reader,
                name: info.path.as_str().into(),
                basket: None,
                column,
                offsets: Vec::new(),
            })
        })
        .collect::<Result<Vec<_>, AnalysisError>>()?;
    let end = entries.end.min(tree.entries);
    let total = end.saturating_sub(entries.start);
    let mut at = entries.start;
    while at < end {
        if let Some(stop) = job.stopped() {
            return Err(AnalysisError::Stopped {
                stop,
                entries_done: at - entries.start,
            });
        }
        let mut window_end = end.min(at + EMPTY_WINDOW);
        if !streams.is_empty() {
            window_end = end;
        }
        for s in &mut streams {
            s.seek(at)?;
            window_end = window_end.min(s.range().end);
        }
        let window = Window {
            entries: at..window_end,
            streams: &streams,
        };
        let go_on = each(&window)?;
        at = window_end;
        job.progress(at - entries.start, Some(total));
        if !go_on {
            break;
        }
    }
    Ok(())
}
