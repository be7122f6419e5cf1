//! Summary statistics with exact quantiles in bounded memory. Quantiles follow
//! numpy's default (linear interpolation between the order statistics at
//! `q * (n - 1)`). When the values fit in the buffer (`cap` values) one pass
//! sorts them; otherwise each further pass counts the values in 65,536 bins
//! between the bounds known so far, keeps only the bins that hold a wanted
//! rank, and narrows to them until what is left fits, then sorts that.

use super::AnalysisError;
use super::ops::{Counted, HistRequest, for_each_value};
use super::plan::TreeColumns;
use crate::formats::root::RootFile;
use crate::job::Job;

/// Values held at once by default (32 MB of f64).
pub const DEFAULT_CAP: usize = 1 << 22;
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
}

/// Running count, mean and sum of squared deviations (Welford).
#[derive(Default)]
struct Moments {
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

impl Moments {
    fn add(&mut self, x: f64) {
        if self.n == 0 {
            (self.min, self.max) = (x, x);
        }
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }
}

/// The statistics of what `req` would fill (its values, weights ignored).
pub fn branch_stats(
    file: &RootFile,
    tree: &TreeColumns<'_>,
    req: &HistRequest<'_>,
    quantiles: &[f64],
    cap: usize,
    job: &Job,
) -> Result<Stats, AnalysisError> {
    let mut m = Moments::default();
    let mut kept: Vec<f64> = Vec::new();
    let mut overflowed = false;
    let counted: Counted = for_each_value(file, tree, req, job, |x, _| {
        if !x.is_finite() {
            return;
        }
        m.add(x);
        if !overflowed {
            if kept.len() < cap {
                kept.push(x);
            } else {
                overflowed = true;
                kept = Vec::new();
            }
        }
    })?;
    let mut stats = Stats {
        count: m.n,
        scanned: counted.scanned,
        selected: counted.selected,
        passes: 1,
        ..Stats::default()
    };
    if m.n == 0 {
        stats.quantiles = vec![None; quantiles.len()];
        return Ok(stats);
    }
    stats.mean = Some(m.mean);
    stats.std = Some((m.m2 / m.n as f64).sqrt());
    (stats.min, stats.max) = (Some(m.min), Some(m.max));
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
    let values = if overflowed {
        let (found, passes) = order_statistics(file, tree, req, (m.min, m.max), &wanted, cap, job)?;
        stats.passes += passes;
        found
    } else {
        kept.sort_unstable_by(f64::total_cmp);
        wanted.iter().map(|&k| (k, kept[k as usize])).collect()
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

/// The values at the wanted ranks (0-based, ascending), by narrowing passes.
fn order_statistics(
    file: &RootFile,
    tree: &TreeColumns<'_>,
    req: &HistRequest<'_>,
    (min, max): (f64, f64),
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
        // Each span's values counted per bin, with each bin's smallest and largest.
        let mut bins = vec![vec![(0u64, f64::INFINITY, f64::NEG_INFINITY); BINS]; spans.len()];
        for_each_value(file, tree, req, job, |x, _| {
            if !x.is_finite() {
                return;
            }
            for (s, b) in spans.iter().zip(bins.iter_mut()) {
                if s.holds(x) {
                    let cell = &mut b[bin_of(x, s.lo, s.hi)];
                    cell.0 += 1;
                    cell.1 = cell.1.min(x);
                    cell.2 = cell.2.max(x);
                }
            }
        })?;
        passes += 1;
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
            found.extend(collect_spans(file, tree, req, &gather, job)?);
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
    file: &RootFile,
    tree: &TreeColumns<'_>,
    req: &HistRequest<'_>,
    spans: &[Span],
    job: &Job,
) -> Result<Vec<(u64, f64)>, AnalysisError> {
    let mut held: Vec<Vec<f64>> = spans.iter().map(|_| Vec::new()).collect();
    for_each_value(file, tree, req, job, |x, _| {
        for (s, h) in spans.iter().zip(held.iter_mut()) {
            if x.is_finite() && s.holds(x) {
                h.push(x);
            }
        }
    })?;
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
