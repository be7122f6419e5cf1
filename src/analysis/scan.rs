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
use super::dataset::{Member, cluster_bytes, clusters_of, in_member};
use super::eval::SlotData;
use super::plan::{Plan, TreeColumns};
use crate::formats::root::by_number;
use crate::formats::root::{Column, RootFile, StoredBasket, Values};
use crate::job::Job;

mod read_ahead;

/// Entries per window at most: the evaluator's arrays for a window then stay
/// in the core's cache and are reused by the allocator, where a whole
/// basket's worth (hundreds of thousands of entries) would be fresh pages
/// every time. Without columns (a constant cut) it is the cluster size.
pub(super) const WINDOW: u64 = 1 << 13;

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
    let counts = &counts[entries.clone()];
    let old = offsets.len();
    offsets.reserve(counts.len() + 1);
    // Written into the spare room and the length set once: `push` stored the
    // length and checked the capacity at every entry, which made this loop a
    // twentieth of a histogram's time.
    let room = &mut offsets.spare_capacity_mut()[..counts.len() + 1];
    room[0].write(0);
    let mut at = 0;
    for (slot, &c) in room[1..].iter_mut().zip(counts) {
        at += c as usize * inner;
        slot.write(at);
    }
    // SAFETY: the loop above wrote every one of the `counts.len() + 1`
    // elements after the `old` ones, within the room reserved.
    unsafe { offsets.set_len(old + counts.len() + 1) };
    *next = (entries.end, start + at);
    start..start + at
}

/// One window of entries, with each column's part of it.
pub struct Window<'s, 'f> {
    /// The entries, numbered within the member's tree.
    pub entries: Range<u64>,
    /// The member (of those scanned) the entries are of, and the chain's
    /// number of its entry 0.
    pub member: usize,
    pub first_entry: u64,
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
    /// The chain's number of the window's first entry (`Entry$`).
    pub fn global_start(&self) -> u64 {
        self.first_entry + self.entries.start
    }

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

/// Progress shared by the clusters of one scan: units (the bytes of the
/// baskets to read, or entries when there are none) done out of `total`, and
/// the entries done, which a stop reports.
struct Progress<'j> {
    job: &'j Job,
    done: AtomicU64,
    total: u64,
    entries_done: AtomicU64,
}

impl Progress<'_> {
    fn add(&self, units: u64, entries: u64) {
        self.entries_done.fetch_add(entries, Ordering::Relaxed);
        let done = self.done.fetch_add(units, Ordering::Relaxed) + units;
        self.job.progress(done, Some(self.total));
    }

    /// The error of a stopped job, if it is stopped.
    fn check(&self) -> Result<(), AnalysisError> {
        match self.job.stopped() {
            Some(stop) => Err(AnalysisError::Stopped {
                stop,
                entries_done: self.entries_done.load(Ordering::Relaxed),
            }),
            None => Ok(()),
        }
    }
}

/// A cluster to read: its member, its entries there, and its share of the
/// scan's progress.
#[derive(Debug, Clone)]
struct Item {
    member: usize,
    entries: Range<u64>,
    weight: u64,
}

/// The clusters of the chain's entries `within` that `cut` does not rule out
/// (by each member's bounds), in chain order, and the scan's progress, the
/// clusters ruled out counted done already. Each member's bounds note what
/// this scan reads and skips of it.
fn work<'j>(
    members: &[Member<'_>],
    (columns, cut): (&[usize], Option<&Plan>),
    within: Range<u64>,
    job: &'j Job,
) -> Result<(Vec<Item>, Progress<'j>), AnalysisError> {
    let mut all: Vec<(Item, bool)> = Vec::new();
    for (m, member) in members.iter().enumerate() {
        let start = within.start.saturating_sub(member.first_entry);
        let end = within.end.saturating_sub(member.first_entry);
        let local = start.min(member.tree.entries)..end.min(member.tree.entries);
        if local.is_empty() {
            continue;
        }
        let (mut read, mut skipped) = (0, 0);
        let clusters =
            clusters_of(member.tree, columns, local).map_err(|e| in_member(e, member))?;
        let weights = cluster_bytes(member.tree, columns, &clusters);
        for (cluster, weight) in clusters.into_iter().zip(weights) {
            let keep = member.tree.bounds.must_read(cut, &cluster);
            if keep {
                read += 1;
            } else {
                skipped += 1;
            }
            let item = Item {
                member: m,
                entries: cluster,
                weight,
            };
            all.push((item, keep));
        }
        member.tree.bounds.record_scan(read, skipped);
    }
    // Progress in bytes; in entries when the baskets hold none (all kept in
    // the tree objects, or no column read).
    if all.iter().all(|(item, _)| item.weight == 0) {
        for (item, _) in &mut all {
            item.weight = item.entries.end - item.entries.start;
        }
    }
    let progress = Progress {
        job,
        done: AtomicU64::new(0),
        total: all.iter().map(|(item, _)| item.weight).sum(),
        entries_done: AtomicU64::new(0),
    };
    let mut kept = Vec::with_capacity(all.len());
    for (item, keep) in all {
        if keep {
            kept.push(item);
        } else {
            progress.add(item.weight, item.entries.end - item.entries.start);
        }
    }
    Ok((kept, progress))
}

/// The streams of `columns` of one member; `windowed` ones keep a basket of
/// numbers (one per entry) as stored and convert each window's entries as it
/// comes (see `scan_parallel`).
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

/// A remote file's baskets of a cluster, for every column read, asked for in
/// one vectored read before the first is decoded (a local file reads as it
/// goes). A failure here is met again, and reported, by the read itself; a
/// stopped job ends the fetch part-way (the scan stops at its next check).
fn prefetch_remote(streams: &[Stream<'_>], cluster: &Range<u64>, job: &Job) {
    if let Some((file, ranges)) = remote_ranges(streams, cluster) {
        let _ = file.prefetch(&ranges, &|| job.is_stopped());
    }
}

/// The stored bytes of a cluster's chunks in every column of a remote file
/// (`None` for a local one).
fn remote_ranges<'f>(
    streams: &[Stream<'f>],
    cluster: &Range<u64>,
) -> Option<(&'f RootFile, Vec<Range<u64>>)> {
    let mut file = None;
    let mut ranges = Vec::new();
    for stream in streams {
        if let Some((f, r)) = stream.reader.remote_chunks(cluster) {
            file = Some(f);
            ranges.extend(r);
        }
    }
    file.map(|f| (f, ranges))
}

/// Hands `each` the windows of a cluster, in entry order; false when `each`
/// asked to stop. A window `each` finds `TooLarge` is handed over again in
/// halves (so `each` must fail before it changes anything). With
/// `side_by_side`, columns needing their next basket
/// decode it in parallel (for a scan that is not already one of many).
fn scan_cluster(
    streams: &mut [Stream<'_>],
    (item, first_entry, side_by_side): (&Item, u64, bool),
    progress: &Progress<'_>,
    each: &mut impl FnMut(&Window<'_, '_>) -> Result<bool, AnalysisError>,
) -> Result<bool, AnalysisError> {
    let cluster = &item.entries;
    prefetch_remote(streams, cluster, progress.job);
    let len = cluster.end - cluster.start;
    // The share of the cluster's weight done once `at` is reached.
    let share = |at: u64| {
        (u128::from(item.weight) * u128::from(at - cluster.start) / u128::from(len.max(1))) as u64
    };
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
            member: item.member,
            first_entry,
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
        progress.add(share(window_end) - share(at), window_end - at);
        at = window_end;
        if !go_on {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Hands `each` the windows covering the chain's entries `entries` of the
/// columns `columns` (indices into each member's `tree.columns`), in chain
/// order, leaving out the clusters `cut` cannot select (by each member's
/// bounds). Checks `job` between windows (a stop is `AnalysisError::Stopped`
/// with the entries done) and reports progress in the bytes of the baskets
/// read. `each` returns whether to go on.
///
/// While `each` works through a cluster, the next cluster's first baskets
/// (in the same member or the next) are decoded beside it into a second set
/// of streams, so the decoding of a sequential scan (an export, a page of a
/// selection) overlaps its consumer's work instead of alternating with it.
///
/// Returns the entries read: those of the windows handed to `each` (not the
/// clusters left out, nor what lay past the point where `each` stopped).
pub fn scan(
    members: &[Member<'_>],
    columns: &[usize],
    entries: Range<u64>,
    cut: Option<&Plan>,
    job: &Job,
    mut each: impl FnMut(&Window<'_, '_>) -> Result<bool, AnalysisError>,
) -> Result<u64, AnalysisError> {
    let (items, progress) = work(members, (columns, cut), entries, job)?;
    let mut entries_read = 0;
    let mut each = |w: &Window<'_, '_>| {
        let went = each(w);
        if went.is_ok() {
            entries_read += w.entries.end - w.entries.start;
        }
        went
    };
    let open = |m: usize| {
        let member = &members[m];
        open_streams(member.file, member.tree, columns, false).map_err(|e| in_member(e, member))
    };
    // The streams of the cluster to read next, and a spare set, each with its member.
    let mut current: Option<(usize, Vec<Stream<'_>>)> = None;
    let mut spare: Option<(usize, Vec<Stream<'_>>)> = None;
    for (k, item) in items.iter().enumerate() {
        let mut streams = match current.take() {
            Some((m, s)) if m == item.member => s,
            _ => open(item.member)?,
        };
        let next = items.get(k + 1);
        let mut ahead = match (spare.take(), next) {
            (Some((m, s)), Some(n)) if m == n.member => Some(s),
            (_, Some(n)) => Some(open(n.member)?),
            (_, None) => None,
        };
        let consumer_stopped = AtomicBool::new(false);
        let first_entry = members[item.member].first_entry;
        // The consumer stays on the calling thread: it may block (an export
        // waits for its encoder), which a pool thread must never do, as the
        // pool's work could then wait behind it.
        let (went_on, prefetched) = std::thread::scope(|threads| {
            let stop = &consumer_stopped;
            let prefetching = match (ahead.as_mut(), next) {
                (Some(a), Some(n)) => {
                    let start = n.entries.start;
                    Some(threads.spawn(move || prefetch(a, start, stop)))
                }
                _ => None,
            };
            let went_on = scan_cluster(
                &mut streams,
                (item, first_entry, true),
                &progress,
                &mut each,
            );
            if !matches!(went_on, Ok(true)) {
                consumer_stopped.store(true, Ordering::Relaxed);
            }
            let prefetched = prefetching.map_or(Ok(()), |p| {
                p.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            (went_on, prefetched)
        });
        let member = &members[item.member];
        if !went_on.map_err(|e| in_member(e, member))? {
            break;
        }
        if let (Err(e), Some(n)) = (prefetched, next) {
            return Err(in_member(e, &members[n.member]));
        }
        spare = Some((item.member, streams));
        current = next.zip(ahead).map(|(n, a)| (n.member, a));
    }
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

/// The parts of finished runs, handed on to `merge` in run order as soon as
/// every run before them is merged: the parts held at once are those of the
/// runs finished ahead of a slower one (fewer than the threads' worth), not
/// those of the whole scan.
struct InOrder<A, F> {
    next: usize,
    waiting: std::collections::BTreeMap<usize, Vec<(usize, A)>>,
    merge: F,
    /// The earliest run that failed, with its error.
    failed: Option<(usize, AnalysisError)>,
}

impl<A, F: FnMut(usize, A)> InOrder<A, F> {
    fn deliver(&mut self, run: usize, parts: Result<Vec<(usize, A)>, AnalysisError>) {
        match parts {
            Ok(parts) => {
                self.waiting.insert(run, parts);
            }
            Err(e) => {
                if self.failed.as_ref().is_none_or(|(r, _)| *r > run) {
                    self.failed = Some((run, e));
                }
            }
        }
        while let Some(parts) = self.waiting.remove(&self.next) {
            for (member, part) in parts {
                (self.merge)(member, part);
            }
            self.next += 1;
        }
    }
}

/// `scan` for work whose parts combine: of the columns, the clusters the cut
/// does not rule out (in every member) are split into runs of about equal
/// entries, read in parallel, each run folding its windows into a fresh
/// `init()` with `each` (a fresh one again where it passes from one member to
/// the next); the parts are handed to `merge` with their member in chain
/// order, so the result is the same whatever the threads did. Memory holds
/// one basket per column per thread, and the parts of the runs finished
/// ahead of a slower one: the same for a hundred files as for one. Returns
/// the entries read: those of the clusters not ruled out.
///
/// A basket of numbers (one per entry, or a fixed array of them) stays as
/// stored and each window's entries are converted to native values as the
/// window comes, into a column the size of a window that stays in the
/// core's cache: the basket's values are read from memory once, not written
/// back converted and read again. (A sequential `scan` converts whole
/// baskets, on the thread that decodes ahead of its consumer.)
pub fn scan_parallel<'a, A: Send>(
    members: &[Member<'a>],
    (columns, cut): (&[usize], Option<&Plan>),
    (job, part_cost): (&Job, Parts),
    init: impl Fn() -> A + Sync,
    each: impl Fn(&mut A, &Window<'_, '_>) -> Result<(), AnalysisError> + Sync,
    merge: impl FnMut(usize, A) + Send,
) -> Result<u64, AnalysisError> {
    let total = super::dataset::chain_entries(members);
    let within = job.entries_within(0..total);
    let (kept, progress) = work(members, (columns, cut), within, job)?;
    let entries_read = kept.iter().map(|c| c.entries.end - c.entries.start).sum();
    let threads = rayon::current_num_threads().max(1);
    let runs = runs_of(kept, threads * part_cost.runs_per_thread());
    // Sets of streams a finished run hands on to the next run over the same
    // member: their buffers are then allocated once per thread, not once per
    // run (fresh pages cost a fault each, a fifth of a fast scan's time when
    // every run took new ones). At most one set per thread is kept.
    let idle: std::sync::Mutex<Vec<(usize, Vec<Stream<'a>>)>> = Default::default();
    let take_idle = |m: usize| {
        let mut idle = idle.lock().expect("idle streams");
        let at = idle.iter().position(|(owner, _)| *owner == m)?;
        Some(idle.remove(at).1)
    };
    let give_back = |m: usize, streams: Vec<Stream<'a>>| {
        let mut idle = idle.lock().expect("idle streams");
        idle.push((m, streams));
        if idle.len() > threads {
            idle.remove(0);
        }
    };
    // Clusters whose decoding has begun (the read-ahead keeps a few beyond).
    let begun = std::sync::atomic::AtomicUsize::new(0);
    let run_parts = |run: &[Item]| -> Result<Vec<(usize, A)>, AnalysisError> {
        let mut parts = Vec::new();
        let mut current: Option<(usize, Vec<Stream<'a>>, A)> = None;
        for item in run {
            if current.as_ref().is_none_or(|(m, _, _)| *m != item.member) {
                if let Some((m, streams, acc)) = current.take() {
                    parts.push((m, acc));
                    give_back(m, streams);
                }
                let member = &members[item.member];
                let streams = match take_idle(item.member) {
                    Some(s) => s,
                    None => open_streams(member.file, member.tree, columns, true)
                        .map_err(|e| in_member(e, member))?,
                };
                current = Some((item.member, streams, init()));
            }
            let (_, streams, acc) = current.as_mut().expect("streams for the item");
            let first_entry = members[item.member].first_entry;
            begun.fetch_add(1, Ordering::Relaxed);
            scan_cluster(streams, (item, first_entry, false), &progress, &mut |w| {
                each(acc, w).map(|()| true)
            })
            .map_err(|e| in_member(e, &members[item.member]))?;
        }
        if let Some((m, streams, acc)) = current {
            parts.push((m, acc));
            give_back(m, streams);
        }
        Ok(parts)
    };
    let merger = std::sync::Mutex::new(InOrder {
        next: 0,
        waiting: Default::default(),
        merge,
        failed: None,
    });
    let next_run = std::sync::atomic::AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // Runs are handed out in order, one at a time, to one worker per thread:
    // a part waits only for the runs begun before its own. Remote files are
    // fetched a few clusters ahead of them, in the background.
    let over = AtomicBool::new(false);
    std::thread::scope(|background| {
        if members.iter().any(|m| m.file.fetched().is_some()) {
            background.spawn(|| {
                read_ahead::read_ahead(members, columns, (&runs, threads), (&begun, &over), job)
            });
        }
        rayon::scope(|scope| {
            for _ in 0..threads.min(runs.len()) {
                scope.spawn(|_| {
                    loop {
                        let r = next_run.fetch_add(1, Ordering::Relaxed);
                        if r >= runs.len() || stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let parts = run_parts(&runs[r]);
                        if parts.is_err() {
                            stop.store(true, Ordering::Relaxed);
                        }
                        merger.lock().expect("merger").deliver(r, parts);
                    }
                });
            }
        });
        over.store(true, Ordering::Relaxed);
    });
    match merger.into_inner().expect("merger").failed {
        Some((_, e)) => Err(e),
        None => Ok(entries_read),
    }
}

/// Consecutive clusters in at most `n` runs of about equal entries.
fn runs_of(clusters: Vec<Item>, n: usize) -> Vec<Vec<Item>> {
    let total: u64 = clusters
        .iter()
        .map(|c| c.entries.end - c.entries.start)
        .sum();
    let share = total.div_ceil(n as u64).max(1);
    let mut runs: Vec<Vec<Item>> = Vec::new();
    let mut in_run = 0;
    for c in clusters {
        if runs.is_empty() || in_run >= share {
            runs.push(Vec::new());
            in_run = 0;
        }
        in_run += c.entries.end - c.entries.start;
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
