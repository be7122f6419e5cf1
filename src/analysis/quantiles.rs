//! Summary statistics with exact quantiles in bounded memory. Quantiles follow
//! numpy's default (linear interpolation between the order statistics at
//! `q * (n - 1)`). When the values fit in the buffer (`cap` doubles, twice as
//! many floats) one pass keeps them and the wanted ranks are selected in
//! memory; otherwise each further pass counts the values in 65,536 bins
//! between the bounds known so far, keeps only the bins that hold a wanted
//! rank, and narrows to them until what is left fits, then sorts that.

use super::AnalysisError;
use super::kept::Kept;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::dataset::Member;
use super::ops::{Counted, HistRequest, fold_values};
use crate::job::Job;

/// Values held at once by default: 48 MB, 6.3M f64 or 12.6M f32 (a 10M-entry
/// float branch is answered in one pass).
pub const DEFAULT_CAP: usize = 6 << 20;
const BINS: usize = 1 << 16;
/// Narrowing passes before giving up (each divides the span by 65,536, so
/// doubles are exhausted long before).
const MAX_PASSES: usize = 12;

/// count, mean, std, min, max of the finite values, and the quantiles asked for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stats {
    pub count: u64,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub quantiles: Vec<Option<f64>>,
    pub scanned: u64,
    pub selected: u64,
    /// Passes over the data it took.
    pub passes: usize,
    /// Each member's count, mean, std, min and max (no quantiles), with
    /// its entries scanned and selected, in member order.
    pub by_member: Vec<Stats>,
}

impl Stats {
    /// The count, mean, std, min and max of some moments (none of no value).
    pub fn of_moments(m: &Moments) -> Stats {
        let any = m.n > 0;
        Stats {
            count: m.n,
            mean: any.then_some(m.mean),
            std: any.then(|| (m.m2 / m.n as f64).sqrt()),
            min: any.then_some(m.min),
            max: any.then_some(m.max),
            ..Stats::default()
        }
    }
}

/// Lanes the sums are taken in: value k goes to lane k % 4, so the lanes stay
/// in registers and the loop vectorises.
const LANES: usize = 4;

/// A first pass over values: their sum, minimum and maximum by lane.
struct Sums {
    sum: [f64; LANES],
    lo: [f64; LANES],
    hi: [f64; LANES],
}

impl Sums {
    fn of(xs: &[f64]) -> Sums {
        // Local arrays, made a `Sums` at the end: a struct's fields written
        // in the loop were kept on the stack, a store and a load per value.
        let (mut sum, mut lo, mut hi) = (
            [0.0; LANES],
            [f64::INFINITY; LANES],
            [f64::NEG_INFINITY; LANES],
        );
        for chunk in xs.chunks(LANES) {
            for (lane, &x) in chunk.iter().enumerate() {
                sum[lane] += x;
                // Plain comparisons: `f64::min`'s NaN rule keeps the loop
                // from vectorising (and NaN shows in the sum anyway).
                lo[lane] = if x < lo[lane] { x } else { lo[lane] };
                hi[lane] = if x > hi[lane] { x } else { hi[lane] };
            }
        }
        Sums { sum, lo, hi }
    }

    fn total(&self) -> f64 {
        self.sum.iter().sum()
    }

    /// Whether the values summed were all finite, told by their sum: a NaN
    /// or an infinity makes it NaN or infinite. A sum that overflowed says
    /// no for finite values too, which only sends them the slower way.
    fn all_finite(&self) -> bool {
        self.total().is_finite()
    }
}

/// Count, mean, sum of squared deviations, minimum and maximum of finite
/// values, built batch by batch and merged pairwise (partial results of a
/// cluster's tasks carry them: f64s travel as their bits).
#[derive(Debug, Default, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Moments {
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

impl Moments {
    /// The moments of finite values `xs` from their `Sums`: the mean, then
    /// a second pass for the squared deviations from it, summed in lanes.
    fn from_sums(xs: &[f64], sums: Sums) -> Moments {
        if xs.is_empty() {
            return Moments::default();
        }
        let mean = sums.total() / xs.len() as f64;
        let mut m2 = [0.0; LANES];
        for chunk in xs.chunks(LANES) {
            for (lane, &x) in chunk.iter().enumerate() {
                m2[lane] += (x - mean) * (x - mean);
            }
        }
        Moments {
            n: xs.len() as u64,
            mean,
            m2: m2.iter().sum(),
            min: sums.lo.iter().copied().fold(f64::INFINITY, f64::min),
            max: sums.hi.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    /// Adds another part's values (Chan et al.'s pairwise update).
    pub fn merge(&mut self, other: Moments) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = other;
            return;
        }
        let n = self.n + other.n;
        let delta = other.mean - self.mean;
        let share = other.n as f64 / n as f64;
        self.mean += delta * share;
        self.m2 += other.m2 + delta * delta * self.n as f64 * share;
        self.n = n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

/// The moments of what `req` would fill, in total and by member (with each
/// member's entries scanned and selected), without the values kept for
/// quantiles: what a cluster's task computes for `get_branch_stats`. The
/// batches are `branch_stats`' first pass's, so each part's moments are the
/// ones it would have made.
pub fn branch_moments(
    members: &[Member<'_>],
    req: &HistRequest<'_>,
    job: &Job,
) -> Result<MomentsShare, AnalysisError> {
    #[derive(Default)]
    struct Part {
        m: Moments,
        pending: Vec<f64>,
    }
    impl Part {
        fn flush(&mut self) {
            let xs = std::mem::take(&mut self.pending);
            if !xs.is_empty() {
                self.m.merge(Moments::from_sums(&xs, Sums::of(&xs)));
            }
        }
    }
    let mut total = Moments::default();
    let mut by_member = vec![(Moments::default(), Counted::default()); members.len()];
    let counted = fold_values(
        members,
        req,
        job,
        Part::default,
        |part: &mut Part, xs| {
            for batch in xs.chunks(BATCH) {
                let sums = Sums::of(batch);
                if sums.all_finite() {
                    part.m.merge(Moments::from_sums(batch, sums));
                } else {
                    part.pending.extend(batch.iter().filter(|x| x.is_finite()));
                    if part.pending.len() >= BATCH {
                        part.flush();
                    }
                }
            }
        },
        |member, mut part, counted| {
            part.flush();
            let (m, c) = &mut by_member[member];
            m.merge(part.m);
            c.scanned += counted.scanned;
            c.selected += counted.selected;
            total.merge(part.m);
        },
    )?;
    Ok(MomentsShare {
        total,
        by_member,
        counted,
    })
}

/// Moments of some members' values: in total, by member (with its entries
/// counted), and the entries scanned and selected.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct MomentsShare {
    pub total: Moments,
    pub by_member: Vec<(Moments, Counted)>,
    pub counted: Counted,
}

impl MomentsShare {
    /// Adds the share of the members after this one's (their moments
    /// merged after this one's, their members appended).
    pub fn add(&mut self, next: MomentsShare) {
        self.total.merge(next.total);
        self.by_member.extend(next.by_member);
        self.counted.scanned += next.counted.scanned;
        self.counted.selected += next.counted.selected;
    }

    /// The statistics without quantiles, as `branch_stats` gives them.
    pub fn stats(&self) -> Stats {
        Stats {
            scanned: self.counted.scanned,
            selected: self.counted.selected,
            passes: 1,
            by_member: self
                .by_member
                .iter()
                .map(|(m, c)| Stats {
                    scanned: c.scanned,
                    selected: c.selected,
                    ..Stats::of_moments(m)
                })
                .collect(),
            ..Stats::of_moments(&self.total)
        }
    }
}

/// The statistics of what `req` would fill (its values, weights ignored).
/// `range`, when the caller knows every value lies in it (the catalog's
/// minimum and maximum of a branch read without a cut), lets the first pass
/// also count the values in bins, saving the narrowing passes one pass.
pub fn branch_stats(
    members: &[Member<'_>],
    req: &HistRequest<'_>,
    quantiles: &[f64],
    cap: usize,
    range: Option<(f64, f64)>,
    job: &Job,
) -> Result<Stats, AnalysisError> {
    // One pass: the moments, and the values themselves while they fit (the
    // parts share one count of values kept, so memory stays within `cap`).
    let kept_total = AtomicUsize::new(0);
    // With a known range the first pass also counts bins once the values
    // turn out not to fit, which lead to the quantiles in one more pass.
    let mut first = First::default();
    let mut by_member = vec![(Moments::default(), Counted::default()); members.len()];
    let counted: Counted = fold_values(
        members,
        req,
        job,
        First::default,
        |part: &mut First, xs| {
            // A batch at a time, while it is in the first-level cache. The
            // moments' first pass tells whether the batch is all finite (no
            // branch per value, which costs more than the rare batch holding
            // a NaN, whose finite values wait in `pending` for a batch of
            // their own).
            for batch in xs.chunks(BATCH) {
                let sums = Sums::of(batch);
                if sums.all_finite() {
                    part.add_finite(batch, sums, range, cap, &kept_total);
                } else {
                    part.pending.extend(batch.iter().filter(|x| x.is_finite()));
                    if part.pending.len() >= BATCH {
                        part.flush(range, cap, &kept_total);
                    }
                }
            }
        },
        |member, mut part, counted| {
            part.flush(range, cap, &kept_total);
            let (m, c) = &mut by_member[member];
            m.merge(part.m);
            c.scanned += counted.scanned;
            c.selected += counted.selected;
            first.merge(part, range);
        },
    )?;
    let First {
        m,
        kept,
        overflowed,
        bins,
        ..
    } = first;
    let mut stats = Stats {
        count: m.n,
        scanned: counted.scanned,
        selected: counted.selected,
        passes: 1,
        by_member: by_member
            .into_iter()
            .map(|(m, c)| Stats {
                scanned: c.scanned,
                selected: c.selected,
                ..Stats::of_moments(&m)
            })
            .collect(),
        ..Stats::default()
    };
    if m.n == 0 {
        stats.quantiles = vec![None; quantiles.len()];
        return Ok(stats);
    }
    let moments = Stats::of_moments(&m);
    (stats.mean, stats.std) = (moments.mean, moments.std);
    (stats.min, stats.max) = (moments.min, moments.max);
    // The order statistics each quantile interpolates between.
    let ranks: Vec<(u64, u64, f64)> = quantiles
        .iter()
        .map(|q| {
            let h = q * (m.n - 1) as f64;
            let lo = h.floor() as u64;
            (lo, (lo + 1).min(m.n - 1), h - h.floor())
        })
        .collect();
    let mut wanted: Vec<u64> = ranks.iter().flat_map(|&(a, b, _)| [a, b]).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let values = if wanted.is_empty() {
        Vec::new()
    } else if overflowed {
        // Bins counted in the first pass are used when the range held every value.
        let (span, binned) = match (range, bins) {
            (Some((lo, hi)), Some(b)) if lo <= m.min && m.max <= hi => ((lo, hi), Some(b)),
            _ => ((m.min, m.max), None),
        };
        let (found, passes) = order_statistics(members, req, span, binned, &wanted, cap, job)?;
        stats.passes += passes;
        found
    } else {
        kept.select(&wanted)
    };
    let value_of = |k: u64| {
        values
            .iter()
            .find(|(r, _)| *r == k)
            .map(|(_, v)| *v)
            .expect("a wanted rank")
    };
    stats.quantiles = ranks
        .iter()
        .map(|&(a, b, frac)| {
            let (x, y) = (value_of(a), value_of(b));
            Some(x + (y - x) * frac)
        })
        .collect();
    Ok(stats)
}

/// A span of values still to narrow: the values that fall in bin `bin` of
/// each test in `chain` (one per earlier pass, outermost first), whose ranks
/// start at `below` (the count of smaller values), holding the wanted `ranks`;
/// `lo..hi` are its nominal bounds, binned again by the next pass.
#[derive(Clone)]
struct Span {
    chain: Vec<(f64, f64, usize)>,
    lo: f64,
    hi: f64,
    below: u64,
    ranks: Vec<u64>,
}

impl Span {
    /// Whether `x` belongs to the span. Bins are decided by the same
    /// arithmetic in every pass, so each value lands in exactly one bin (a
    /// value on a nominal edge is not counted twice).
    fn holds(&self, x: f64) -> bool {
        self.chain
            .iter()
            .all(|&(lo, hi, bin)| x >= lo && x <= hi && bin_of(x, lo, hi) == bin)
    }
}

/// The bin of `x` among `BINS` between `lo` and `hi` (monotonic in `x`;
/// values at `hi` go to the last bin).
fn bin_of(x: f64, lo: f64, hi: f64) -> usize {
    if hi <= lo {
        return 0;
    }
    (((x - lo) / (hi - lo) * BINS as f64) as usize).min(BINS - 1)
}

/// A span's `BINS` bins: the values counted in each, with the smallest and
/// largest of them.
type Bins = Vec<(u64, f64, f64)>;

fn empty_bins(spans: usize) -> Vec<Bins> {
    vec![vec![(0u64, f64::INFINITY, f64::NEG_INFINITY); BINS]; spans]
}

fn count_in(bins: &mut Bins, x: f64, lo: f64, hi: f64) {
    let cell = &mut bins[bin_of(x, lo, hi)];
    cell.0 += 1;
    cell.1 = cell.1.min(x);
    cell.2 = cell.2.max(x);
}

fn add_bins(into: &mut [Bins], part: Vec<Bins>) {
    for (b, p) in into.iter_mut().zip(part) {
        for (cell, more) in b.iter_mut().zip(p) {
            cell.0 += more.0;
            cell.1 = cell.1.min(more.1);
            cell.2 = cell.2.max(more.2);
        }
    }
}

/// Values the first pass handles at a time: their moments are summed in two
/// passes over them (no division per value) while they stay in the
/// first-level cache, and the shared count of values kept is updated once
/// per batch, not once per value.
const BATCH: usize = 4096;

/// What the first pass gathers: the moments, the values while they fit, and
/// with a known range the first level of bins; `pending` gathers the finite
/// values of batches that held others.
#[derive(Default)]
struct First {
    m: Moments,
    kept: Kept,
    overflowed: bool,
    bins: Option<Vec<Bins>>,
    pending: Vec<f64>,
}

impl First {
    /// Adds the pending (finite) values, as `add_finite` does.
    fn flush(&mut self, range: Option<(f64, f64)>, cap: usize, kept_total: &AtomicUsize) {
        let pending = std::mem::take(&mut self.pending);
        self.add_finite(&pending, Sums::of(&pending), range, cap, kept_total);
        self.pending = pending;
        self.pending.clear();
    }

    /// Adds finite values `xs`, whose `Sums` are taken, to the moments, and
    /// keeps them while the values kept by every part stay within `cap`.
    /// Bins are counted only once the values no longer fit: the values kept
    /// so far are binned then, and every later value as it comes (kept
    /// values need no bins).
    fn add_finite(
        &mut self,
        xs: &[f64],
        sums: Sums,
        range: Option<(f64, f64)>,
        cap: usize,
        kept_total: &AtomicUsize,
    ) {
        if xs.is_empty() {
            return;
        }
        self.m.merge(Moments::from_sums(xs, sums));
        if self.overflowed {
            self.bin(xs.iter().copied(), range);
        } else {
            let units = self.kept.extend(xs);
            if kept_total.fetch_add(units, Ordering::Relaxed) + units > 2 * cap {
                self.spill(range);
            }
        }
    }

    /// Counts `xs` in the bins over a known range, made at the first values
    /// binned: a pass whose values fit (the usual case) never makes them
    /// (65,536 bins of 24 bytes per part, zeroed, then added up).
    fn bin(&mut self, xs: impl IntoIterator<Item = f64>, range: Option<(f64, f64)>) {
        let Some((lo, hi)) = range else {
            return;
        };
        let bins = self.bins.get_or_insert_with(|| empty_bins(1));
        for x in xs {
            count_in(&mut bins[0], x, lo, hi);
        }
    }

    /// Gives up keeping values: those kept go into the bins.
    fn spill(&mut self, range: Option<(f64, f64)>) {
        self.overflowed = true;
        let kept = std::mem::take(&mut self.kept);
        self.bin(kept.values(), range);
    }

    fn merge(&mut self, mut part: First, range: Option<(f64, f64)>) {
        self.m.merge(std::mem::take(&mut part.m));
        if self.overflowed || part.overflowed {
            // The bins must then hold every value: spill whichever side kept its own.
            if !self.overflowed {
                self.spill(range);
            }
            if !part.overflowed {
                part.spill(range);
            }
        } else {
            self.kept.append(part.kept);
        }
        match (&mut self.bins, part.bins) {
            (Some(b), Some(p)) => add_bins(b, p),
            (None, Some(p)) => self.bins = Some(p),
            _ => {}
        }
    }
}

/// The values at the wanted ranks (0-based, ascending), by narrowing passes.
#[allow(clippy::too_many_arguments)]
fn order_statistics(
    members: &[Member<'_>],
    req: &HistRequest<'_>,
    (min, max): (f64, f64),
    mut binned: Option<Vec<Bins>>,
    wanted: &[u64],
    cap: usize,
    job: &Job,
) -> Result<(Vec<(u64, f64)>, usize), AnalysisError> {
    let mut spans = vec![Span {
        chain: Vec::new(),
        lo: min,
        hi: max,
        below: 0,
        ranks: wanted.to_vec(),
    }];
    let mut found = Vec::new();
    let mut passes = 0;
    while !spans.is_empty() {
        if passes == MAX_PASSES {
            return Err(AnalysisError::Format(
                crate::formats::FormatError::Unsupported(
                    "quantiles did not narrow down within the passes allowed".into(),
                ),
            ));
        }
        // Each span's values counted per bin, with each bin's smallest and
        // largest (the first span's may have been counted by the first pass).
        let bins = match binned.take() {
            Some(b) => b,
            None => {
                let mut bins = empty_bins(spans.len());
                fold_values(
                    members,
                    req,
                    job,
                    || empty_bins(spans.len()),
                    |bins, xs| {
                        for &x in xs.iter().filter(|x| x.is_finite()) {
                            for (s, b) in spans.iter().zip(bins.iter_mut()) {
                                if s.holds(x) {
                                    count_in(b, x, s.lo, s.hi);
                                }
                            }
                        }
                    },
                    |_, part, _| add_bins(&mut bins, part),
                )?;
                passes += 1;
                bins
            }
        };
        let (mut narrow, mut gather) = (Vec::new(), Vec::new());
        for (s, b) in spans.iter().zip(&bins) {
            let mut start = s.below;
            for (i, &(n, lo, hi)) in b.iter().enumerate() {
                let ranks: Vec<u64> = s
                    .ranks
                    .iter()
                    .copied()
                    .filter(|&r| r >= start && r < start + n)
                    .collect();
                if !ranks.is_empty() {
                    if lo == hi {
                        // Every value of the bin is the same: no need to look again.
                        found.extend(ranks.iter().map(|&r| (r, lo)));
                    } else {
                        let mut chain = s.chain.clone();
                        chain.push((s.lo, s.hi, i));
                        let span = Span {
                            chain,
                            lo,
                            hi,
                            below: start,
                            ranks,
                        };
                        if n as usize <= cap {
                            gather.push(span)
                        } else {
                            narrow.push(span)
                        }
                    }
                }
                start += n;
            }
        }
        if !gather.is_empty() {
            found.extend(collect_spans(members, req, &gather, job)?);
            passes += 1;
        }
        spans = narrow;
    }
    found.sort_unstable_by_key(|&(k, _)| k);
    Ok((found, passes))
}

/// The wanted ranks of spans small enough to hold: their values gathered in one
/// pass, sorted, and picked.
fn collect_spans(
    members: &[Member<'_>],
    req: &HistRequest<'_>,
    spans: &[Span],
    job: &Job,
) -> Result<Vec<(u64, f64)>, AnalysisError> {
    let empty = || -> Vec<Vec<f64>> { spans.iter().map(|_| Vec::new()).collect() };
    let mut held = empty();
    fold_values(
        members,
        req,
        job,
        empty,
        |held, xs| {
            for &x in xs.iter().filter(|x| x.is_finite()) {
                for (s, h) in spans.iter().zip(held.iter_mut()) {
                    if s.holds(x) {
                        h.push(x);
                    }
                }
            }
        },
        |_, part, _| {
            for (h, p) in held.iter_mut().zip(part) {
                h.extend(p);
            }
        },
    )?;
    let mut out = Vec::new();
    for (s, mut v) in spans.iter().zip(held) {
        v.sort_unstable_by(f64::total_cmp);
        for &r in &s.ranks {
            let at = usize::try_from(r - s.below)
                .unwrap_or(usize::MAX)
                .min(v.len().saturating_sub(1));
            let value = v.get(at).copied().ok_or_else(|| {
                AnalysisError::Format(crate::formats::FormatError::Corrupt(
                    "the file changed between passes over it".into(),
                ))
            })?;
            out.push((r, value));
        }
    }
    Ok(out)
}
