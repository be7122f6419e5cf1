//! Reading several columns lined up on entries. Each column is read one basket
//! at a time; a window runs from the current entry to the nearest end of any
//! column's current basket, so every window lies within one basket of every
//! column and no basket is decoded twice. Memory holds one basket per column
//! (two for a sequential scan, which decodes the next cluster's ahead),
//! whatever the tree's size.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::AnalysisError;
use super::counted::{CountedReader, open_readers};
use super::eval::SlotData;
use super::plan::{Plan, TreeColumns};
use crate::formats::root::by_number;
use crate::formats::root::{Column, RootFile, StoredBasket, Values};
use crate::job::Job;

/// Entries per window at most: the evaluator's arrays for a window then stay
/// in the core's cache and are reused by the allocator, where a whole
/// basket's worth (hundreds of thousands of entries) would be fresh pages
/// every time. Without columns (a constant cut) it is the cluster size.
pub(super) const WINDOW: u64 = 1 << 13;

/// Entries per cluster when no column is read.
const EMPTY_CLUSTER: u64 = 1 << 16;

struct Stream<'f> {
    reader: CountedReader<'f>,
    name: Arc<str>,
    /// The basket loaded, if any: decoded into `column`, or kept in `stored`.
    basket: Option<usize>,
    /// A basket of numbers, one per entry, as stored, converted into
    /// `column` one window at a time (`load_window`) when the stream was
    /// opened `windowed`.
    stored: Option<StoredBasket>,
    windowed: bool,
    column: Column,
    /// The entry `column`'s first values belong to.
    column_start: u64,
    /// The current window's values in `column.values`.
    window_elements: Range<usize>,
    /// For a collection, where each of the window's entries starts relative
    /// to `window_elements.start`, and the end: made per window from the
    /// counts (a basket-wide table cost a pass over a basket's worth of
    /// memory per column), shared with the evaluator without a copy.
    window_offsets: Arc<Vec<usize>>,
    /// The entry of `column` after the last window, and its first value: the
    /// next window in entry order starts there without summing counts.
    next_window: (usize, usize),
}

impl Drop for Stream<'_> {
    /// The column's and the stored basket's memory go to the next scan's
    /// streams.
    fn drop(&mut self) {
        if let Some(stored) = self.stored.take() {
            self.reader.recycle(stored);
        }
        self.column.take().recycle();
    }
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
        if self.windowed && self.reader.keeps_stored() {
            self.reader.read_stored(index, &mut self.stored)?;
        } else {
            self.reader.read_basket(index, &mut self.column)?;
            self.column_start = r.start;
            self.next_window = (0, 0);
        }
        self.basket = Some(index);
        Ok(())
    }

    /// Makes `column` hold `entries` (within the loaded basket), and lays
    /// out their values: a stored basket's are converted now, a decoded
    /// basket holds them already.
    fn load_window(&mut self, entries: Range<u64>) {
        if let Some(stored) = &self.stored {
            let start = self.range().start;
            let within = (entries.start - start) as usize..(entries.end - start) as usize;
            self.reader.convert(stored, within, &mut self.column);
            self.column_start = entries.start;
        }
        let first = (entries.start - self.column_start) as usize;
        self.lay_out_window(first, (entries.end - entries.start) as usize);
    }

    /// Sets `window_elements` and `window_offsets` for the `len` entries of
    /// `column` from entry `first`.
    fn lay_out_window(&mut self, first: usize, len: usize) {
        let inner = self.column.inner;
        if Arc::get_mut(&mut self.window_offsets).is_none() {
            // The evaluator still holds the last window's table.
            self.window_offsets = Arc::default();
        }
        let offsets = Arc::get_mut(&mut self.window_offsets).expect("unshared");
        offsets.clear();
        self.window_elements = match &self.column.counts {
            Some(counts) => lay_out_collection(
                counts,
                inner,
                first..first + len,
                &mut self.next_window,
                offsets,
            ),
            None => {
                if inner > 1 {
                    offsets.extend((0..=len).map(|e| e * inner));
                }
                first * inner..(first + len) * inner
            }
        };
    }
}

/// Lays out `entries` of a collection whose entry `e` holds `counts[e] *
/// inner` values: appends to `offsets` where each entry starts relative to
/// the first, and the end, and returns the range of their values. `next` is
/// the entry after the last window laid out, and its first value: a window
/// that starts there needs no sum of the counts before it (it is updated).
fn lay_out_collection(
    counts: &[u32],
    inner: usize,
    entries: Range<usize>,
    next: &mut (usize, usize),
    offsets: &mut Vec<usize>,
) -> Range<usize> {
    let start = match *next {
        (entry, value) if entry == entries.start => value,
        _ => {
            counts[..entries.start]
                .iter()
                .map(|&c| c as usize)
                .sum::<usize>()
                * inner
        }
    };
    offsets.reserve(entries.len() + 1);
    offsets.push(0);
    let mut at = 0;
    for &c in &counts[entries.clone()] {
        at += c as usize * inner;
        offsets.push(at);
    }
    *next = (entries.end, start + at);
    start..start + at
}

/// One window of entries, with each column's part of it.
pub struct Window<'s, 'f> {
    pub entries: Range<u64>,
    streams: &'s [Stream<'f>],
}

/// A column's part of a window: values `elements` of `values`, laid out by
/// entry through `offsets` (a collection) or `inner` values per entry.
pub struct ColumnPart<'a> {
    pub values: &'a Values,
    pub elements: Range<usize>,
    /// Each entry's start relative to `elements.start`, for a collection.
    offsets: &'a [usize],
    counted: bool,
    inner: usize,
}

impl<'a> ColumnPart<'a> {
    /// Values computed for a window (an expression's): one per entry, or
    /// laid out by `offsets` (from 0, one more than the entries).
    pub fn computed(values: &'a Values, offsets: Option<&'a [usize]>) -> ColumnPart<'a> {
        ColumnPart {
            values,
            elements: 0..values.len(),
            offsets: offsets.unwrap_or(&[]),
            counted: offsets.is_some(),
            inner: 1,
        }
    }

    /// The values of the window's entry `r` in `values`.
    pub fn entry(&self, r: usize) -> Range<usize> {
        let start = self.elements.start;
        if self.counted {
            start + self.offsets[r]..start + self.offsets[r + 1]
        } else {
            let inner = self.inner;
            start + r * inner..start + (r + 1) * inner
        }
    }

    /// Whether each entry holds a list (a collection or a fixed array).
    pub fn is_list(&self) -> bool {
        self.counted || self.inner > 1
    }
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
        ColumnPart {
            values: &s.column.values,
            elements: s.window_elements.clone(),
            offsets: &s.window_offsets,
            counted: s.column.counts.is_some(),
            inner: s.column.inner,
        }
    }

    /// Column `i` for the evaluator: its typed values, converted to numbers
    /// only by the evaluator's first use of them.
    pub fn slot_data(&self, i: usize) -> SlotData<'s> {
        let part = self.part(i);
        let s = &self.streams[i];
        let is_collection = part.is_list();
        SlotData {
            values: part.values,
            elements: part.elements.clone(),
            offsets: is_collection.then(|| s.window_offsets.clone()),
            name: s.name.clone(),
        }
    }
}

/// `f` of each value `r` of a column taken as a number (strings, refused by
/// the plan before this, are NaN). Inlined into each caller so that the
/// conversion and `f` make one loop per type.
#[inline(always)]
pub fn map_f64(values: &Values, r: Range<usize>, f: impl Fn(f64) -> f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(r.len());
    extend_mapped_f64(values, r, f, &mut out);
    out
}

/// `map_f64`'s numbers appended to `out`.
#[inline(always)]
pub fn extend_mapped_f64(
    values: &Values,
    r: Range<usize>,
    f: impl Fn(f64) -> f64,
    out: &mut Vec<f64>,
) {
    by_number!(values, v, to => out.extend(v[r].iter().map(|&x| f(to(x)))),
        strings: v => out.extend(std::iter::repeat_n(f(f64::NAN), v[r].len())))
}

/// Values `r` of a column as numbers.
pub fn to_f64(values: &Values, r: Range<usize>) -> Vec<f64> {
    map_f64(values, r, |x| x)
}

/// Progress shared by the clusters of one scan: entries done out of `total`.
struct Progress<'j> {
    job: &'j Job,
    done: AtomicU64,
    total: u64,
}

impl Progress<'_> {
    fn add(&self, entries: u64) {
        let done = self.done.fetch_add(entries, Ordering::Relaxed) + entries;
        self.job.progress(done, Some(self.total));
    }

    /// The error of a stopped job, if it is stopped.
    fn check(&self) -> Result<(), AnalysisError> {
        match self.job.stopped() {
            Some(stop) => Err(AnalysisError::Stopped {
                stop,
                entries_done: self.done.load(Ordering::Relaxed),
            }),
            None => Ok(()),
        }
    }
}

/// The streams of `columns`; `windowed` ones keep a basket of numbers (one
/// per entry) as stored and convert each window's entries as it comes (see
/// `scan_parallel`).
fn open_streams<'f>(
    file: &'f RootFile,
    tree: &TreeColumns<'f>,
    columns: &[usize],
    windowed: bool,
) -> Result<Vec<Stream<'f>>, AnalysisError> {
    let readers = open_readers(file, tree, columns)?;
    Ok(columns
        .iter()
        .zip(readers)
        .map(|(&c, reader)| Stream {
            column: reader.empty_column(),
            reader,
            name: tree.columns[c].path.as_str().into(),
            basket: None,
            stored: None,
            windowed,
            column_start: 0,
            window_elements: 0..0,
            window_offsets: Arc::default(),
            next_window: (0, 0),
        })
        .collect())
}

/// The clusters of `entries`: runs of entries whose baskets start and end
/// together in every stream (ROOT's clusters, in a file written with them).
/// Without streams (a constant cut) they are runs of `EMPTY_CLUSTER` entries.
fn clusters(streams: &[Stream<'_>], entries: Range<u64>) -> Vec<Range<u64>> {
    let mut cuts: Vec<u64> = match streams.first() {
        Some(s) => s.reader.basket_ranges().iter().map(|r| r.start).collect(),
        None => (entries.start..entries.end)
            .step_by(EMPTY_CLUSTER as usize)
            .collect(),
    };
    for s in streams.iter().skip(1) {
        let starts = s.reader.basket_ranges();
        cuts.retain(|c| starts.binary_search_by(|r| r.start.cmp(c)).is_ok());
    }
    cuts.retain(|c| entries.contains(c) && *c > entries.start);
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut at = entries.start;
    for c in cuts.into_iter().chain(std::iter::once(entries.end)) {
        if c > at {
            out.push(at..c);
            at = c;
        }
    }
    out
}

/// Hands `each` the windows of `cluster`, in entry order; false when `each`
/// asked to stop. A window `each` finds `TooLarge` is handed over again in
/// halves (so `each` must fail before it changes anything). With `side_by_side`, columns needing their next basket
/// decode it in parallel (for a scan that is not already one of many).
fn scan_cluster(
    streams: &mut [Stream<'_>],
    (cluster, side_by_side): (Range<u64>, bool),
    progress: &Progress<'_>,
    each: &mut impl FnMut(&Window<'_, '_>) -> Result<bool, AnalysisError>,
) -> Result<bool, AnalysisError> {
    let mut at = cluster.start;
    // Entries per window at most: fewer, for the rest of the cluster, once
    // a window made more values than the evaluator allows (pairs).
    let mut span = WINDOW;
    while at < cluster.end {
        progress.check()?;
        let mut window_end = cluster.end.min(at + span);
        if side_by_side && streams.iter().filter(|s| !s.range().contains(&at)).count() > 1 {
            use rayon::prelude::*;
            streams.par_iter_mut().try_for_each(|s| s.seek(at))?;
        }
        for s in streams.iter_mut() {
            s.seek(at)?;
            window_end = window_end.min(s.range().end);
        }
        for s in streams.iter_mut() {
            s.load_window(at..window_end);
        }
        let window = Window {
            entries: at..window_end,
            streams,
        };
        let go_on = match each(&window) {
            // `each` leaves no trace of a window it failed on, so the same
            // entries are handed over again, in halves.
            Err(AnalysisError::TooLarge { .. }) if window_end - at > 1 => {
                span = (window_end - at) / 2;
                continue;
            }
            went => went?,
        };
        progress.add(window_end - at);
        at = window_end;
        if !go_on {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Hands `each` the windows covering `entries` of the columns `columns` (indices
/// into `tree.columns`), in entry order, leaving out the clusters `cut` cannot
/// select (by `tree.bounds`). Checks `job` between windows (a stop is
/// `AnalysisError::Stopped` with the entries done) and reports progress in
/// entries. `each` returns whether to go on.
///
/// While `each` works through a cluster, the next cluster's first baskets are
/// decoded beside it into a second set of streams, so the decoding of a
/// sequential scan (an export, a page of a selection) overlaps its
/// consumer's work instead of alternating with it.
///
/// Returns the entries read: those of the windows handed to `each` (not the
/// clusters left out, nor what lay past the point where `each` stopped).
pub fn scan(
    file: &RootFile,
    tree: &TreeColumns<'_>,
    columns: &[usize],
    entries: Range<u64>,
    cut: Option<&Plan>,
    job: &Job,
    mut each: impl FnMut(&Window<'_, '_>) -> Result<bool, AnalysisError>,
) -> Result<u64, AnalysisError> {
    let mut streams = open_streams(file, tree, columns, false)?;
    let mut ahead = open_streams(file, tree, columns, false)?;
    let entries = entries.start..entries.end.min(tree.entries);
    let progress = Progress {
        job,
        done: AtomicU64::new(0),
        total: entries.end.saturating_sub(entries.start),
    };
    let all = clusters(&streams, entries);
    let kept: Vec<bool> = all.iter().map(|c| tree.bounds.must_read(cut, c)).collect();
    let (mut read, mut skipped, mut entries_read) = (0, 0, 0);
    let mut each = |w: &Window<'_, '_>| {
        let went = each(w);
        if went.is_ok() {
            entries_read += w.entries.end - w.entries.start;
        }
        went
    };
    for (k, cluster) in all.iter().enumerate() {
        if !kept[k] {
            skipped += 1;
            progress.add(cluster.end - cluster.start);
            continue;
        }
        read += 1;
        let next = (k + 1..all.len()).find(|&n| kept[n]).map(|n| all[n].start);
        let consumer_stopped = AtomicBool::new(false);
        // The consumer stays on the calling thread: it may block (an export
        // waits for its encoder), which a pool thread must never do, as the
        // pool's work could then wait behind it.
        let (went_on, prefetched) = std::thread::scope(|threads| {
            let ahead = &mut ahead;
            let stop = &consumer_stopped;
            let prefetching = next.map(|start| threads.spawn(move || prefetch(ahead, start, stop)));
            let went_on = scan_cluster(&mut streams, (cluster.clone(), true), &progress, &mut each);
            if !matches!(went_on, Ok(true)) {
                consumer_stopped.store(true, Ordering::Relaxed);
            }
            let prefetched = prefetching.map_or(Ok(()), |p| {
                p.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            (went_on, prefetched)
        });
        if !went_on? {
            break;
        }
        prefetched?;
        std::mem::swap(&mut streams, &mut ahead);
    }
    tree.bounds.record_scan(read, skipped);
    Ok(entries_read)
}

/// Loads the baskets holding `entry` into `streams`, in parallel, giving up
/// on those not started once `stop` is set (the scan's consumer is done, and
/// the next cluster will not be wanted).
fn prefetch(
    streams: &mut [Stream<'_>],
    entry: u64,
    stop: &AtomicBool,
) -> Result<(), AnalysisError> {
    use rayon::prelude::*;
    streams.par_iter_mut().with_max_len(1).try_for_each(|s| {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        s.seek(entry)
    })
}

/// How costly a scan's partial results are, which sets how many runs of
/// clusters it is split into: enough that one slow run does not leave the
/// other threads idle for long, few enough that each run reuses its buffers
/// over several clusters and the parts to make and merge stay few.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parts {
    /// Counts and histograms: eight runs per thread. At four, the benchmark's
    /// 29 clusters made runs of four, and the last run left a core idle for
    /// up to a seventh of the scan (its LZ4 selection 21.6 ms, at eight runs
    /// of two clusters 20.0 ms, at sixteen no better).
    Small,
    /// Parts holding buffers (the statistics' values and 65,536 bins): four
    /// runs per thread (the LZ4 statistics took 37 ms so, 50 ms at eight).
    Large,
}

impl Parts {
    fn runs_per_thread(self) -> usize {
        match self {
            Parts::Small => 8,
            Parts::Large => 4,
        }
    }
}

/// `scan` for work whose parts combine: of the columns, the clusters the cut
/// does not rule out are split into runs of about equal entries, read in
/// parallel, each run folding its windows into a fresh `init()` with `each`;
/// the parts are handed to `merge` in entry order, so the result is the same
/// whatever the threads did. Memory holds one basket per column per thread,
/// and one partial result per run. Returns the entries read: those of the
/// clusters not ruled out.
///
/// A basket of numbers (one per entry, or a fixed array of them) stays as
/// stored and each window's entries are converted to native values as the
/// window comes, into a column the size of a window that stays in the
/// core's cache: the basket's values are read from memory once, not written
/// back converted and read again. (A sequential `scan` converts whole
/// baskets, on the thread that decodes ahead of its consumer.)
pub fn scan_parallel<A: Send>(
    file: &RootFile,
    tree: &TreeColumns<'_>,
    (columns, cut): (&[usize], Option<&Plan>),
    (job, part_cost): (&Job, Parts),
    init: impl Fn() -> A + Sync,
    each: impl Fn(&mut A, &Window<'_, '_>) -> Result<(), AnalysisError> + Sync,
    mut merge: impl FnMut(A),
) -> Result<u64, AnalysisError> {
    use rayon::prelude::*;
    let progress = Progress {
        job,
        done: AtomicU64::new(0),
        total: tree.entries,
    };
    let mut kept = Vec::new();
    let mut skipped = 0;
    for cluster in clusters(&open_streams(file, tree, columns, false)?, 0..tree.entries) {
        if tree.bounds.must_read(cut, &cluster) {
            kept.push(cluster);
        } else {
            skipped += 1;
            progress.add(cluster.end - cluster.start);
        }
    }
    tree.bounds.record_scan(kept.len() as u64, skipped);
    let entries_read = kept.iter().map(|c| c.end - c.start).sum();
    let runs = runs_of(
        kept,
        rayon::current_num_threads().max(1) * part_cost.runs_per_thread(),
    );
    // Sets of streams a finished run hands on to the next: their buffers are
    // then allocated once per thread, not once per run (fresh pages cost a
    // fault each, a fifth of a fast scan's time when every run took new ones).
    let idle: std::sync::Mutex<Vec<Vec<Stream<'_>>>> = Default::default();
    let parts: Vec<Result<A, AnalysisError>> = runs
        .par_iter()
        .map(|run| {
            let reused = idle.lock().expect("idle streams").pop();
            let mut streams = match reused {
                Some(s) => s,
                None => open_streams(file, tree, columns, true)?,
            };
            let mut acc = init();
            for cluster in run {
                scan_cluster(
                    &mut streams,
                    (cluster.clone(), false),
                    &progress,
                    &mut |w| each(&mut acc, w).map(|()| true),
                )?;
            }
            idle.lock().expect("idle streams").push(streams);
            Ok(acc)
        })
        .collect();
    for part in parts {
        merge(part?);
    }
    Ok(entries_read)
}

/// Consecutive clusters in at most `n` runs of about equal entries.
fn runs_of(clusters: Vec<Range<u64>>, n: usize) -> Vec<Vec<Range<u64>>> {
    let total: u64 = clusters.iter().map(|c| c.end - c.start).sum();
    let share = total.div_ceil(n as u64).max(1);
    let mut runs: Vec<Vec<Range<u64>>> = Vec::new();
    let mut in_run = 0;
    for c in clusters {
        if runs.is_empty() || in_run >= share {
            runs.push(Vec::new());
            in_run = 0;
        }
        in_run += c.end - c.start;
        runs.last_mut().expect("a run").push(c);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows laid out in order, and one that jumps ahead (its first value
    /// summed from the counts before it), give each entry's values where a
    /// table of the whole basket puts them (worked out by hand: entries of
    /// 4, 0, 6, 2, 8, 0, 0 and 10 values start at 0, 4, 4, 10, 12, 20, 20, 20).
    #[test]
    fn windows_of_a_collection_are_laid_out_from_its_counts() {
        let counts = [2, 0, 3, 1, 4, 0, 0, 5];
        let mut next = (0, 0);
        let mut offsets = Vec::new();
        let mut window = |entries: Range<usize>, next: &mut (usize, usize)| {
            offsets.clear();
            let values = lay_out_collection(&counts, 2, entries, next, &mut offsets);
            (values, offsets.clone())
        };
        assert_eq!(window(0..3, &mut next), (0..10, vec![0, 4, 4, 10]));
        assert_eq!(window(3..5, &mut next), (10..20, vec![0, 2, 10]));
        assert_eq!(window(5..8, &mut next), (20..30, vec![0, 0, 0, 10]));
        let mut next = (3, 10);
        assert_eq!(window(4..6, &mut next), (12..20, vec![0, 8, 8]));
        assert_eq!(next, (6, 20));
        assert_eq!(window(6..8, &mut next), (20..30, vec![0, 0, 10]));
    }
}
