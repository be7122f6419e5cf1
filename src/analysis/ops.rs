//! The operations the data tools are made of: counting the entries a cut
//! selects, and filling 1-D and 2-D histograms, each in one streamed pass over
//! the columns its plans name.

use super::AnalysisError;
use super::eval::{Inputs, SlotData, Val, entry_mask, evaluate, truth, zip};
use super::plan::{Plan, TreeColumns};
use super::scan::{Window, scan_parallel};
use crate::formats::root::RootFile;
use crate::job::Job;

/// Plans evaluated together over one scan: the union of their columns, and
/// each plan's slots mapped into it.
struct Together<'p> {
    plans: Vec<&'p Plan>,
    columns: Vec<usize>,
    maps: Vec<Vec<usize>>,
}

impl<'p> Together<'p> {
    fn new(plans: Vec<&'p Plan>) -> Together<'p> {
        let mut columns: Vec<usize> = Vec::new();
        let maps = plans
            .iter()
            .map(|p| {
                p.columns
                    .iter()
                    .map(|c| match columns.iter().position(|x| x == c) {
                        Some(i) => i,
                        None => {
                            columns.push(*c);
                            columns.len() - 1
                        }
                    })
                    .collect()
            })
            .collect();
        Together {
            plans,
            columns,
            maps,
        }
    }

    /// Evaluates every plan over a window's columns.
    fn evaluate(
        &self,
        slots: &[SlotData],
        entries: usize,
        first_entry: u64,
    ) -> Result<Vec<Val>, AnalysisError> {
        self.plans
            .iter()
            .zip(&self.maps)
            .map(|(p, map)| {
                evaluate(
                    &p.root,
                    &Inputs {
                        entries,
                        first_entry,
                        slots,
                        map,
                    },
                )
            })
            .collect()
    }
}

/// How many entries a scan looked at and how many passed the cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counted {
    pub scanned: u64,
    pub selected: u64,
}

/// Counts the entries that pass `cut` (an entry passes when any of its
/// elements does), reading clusters in parallel and skipping those the cut
/// rules out.
pub fn count_selected(
    file: &RootFile,
    tree: &TreeColumns<'_>,
    cut: &Plan,
    job: &Job,
) -> Result<Counted, AnalysisError> {
    let together = Together::new(vec![cut]);
    let mut selected = 0;
    scan_parallel(
        file,
        tree,
        (&together.columns, Some(cut)),
        job,
        || 0u64,
        |n, w| {
            let slots = window_slots(&together, w);
            let vals = together.evaluate(&slots, w.len(), w.entries.start)?;
            *n += entry_mask(&vals[0], w.len()).iter().filter(|&&p| p).count() as u64;
            Ok(())
        },
        |n| selected += n,
    )?;
    Ok(Counted {
        scanned: tree.entries,
        selected,
    })
}

/// A window's columns as the evaluator takes them.
fn window_slots(together: &Together<'_>, w: &Window<'_, '_>) -> Vec<SlotData> {
    (0..together.columns.len())
        .map(|i| w.slot_data(i))
        .collect()
}

/// Equal-width bins over `[lo, hi)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    pub bins: usize,
    pub lo: f64,
    pub hi: f64,
}

impl Axis {
    /// The bin of `x`: `Err(false)` below, `Err(true)` at or above the range
    /// (NaN counts as overflow, as `TH1::Fill` puts it there).
    pub fn bin(&self, x: f64) -> Result<usize, bool> {
        if x < self.lo {
            return Err(false);
        }
        if x >= self.hi || x.is_nan() {
            return Err(true);
        }
        let b = ((x - self.lo) / (self.hi - self.lo) * self.bins as f64) as usize;
        Ok(b.min(self.bins - 1))
    }

    pub fn edges(&self) -> Vec<f64> {
        let width = (self.hi - self.lo) / self.bins as f64;
        (0..=self.bins)
            .map(|i| {
                if i == self.bins {
                    self.hi
                } else {
                    self.lo + width * i as f64
                }
            })
            .collect()
    }
}

/// A filled 1-D histogram.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hist1 {
    pub counts: Vec<f64>,
    /// Σw² per bin (for the errors).
    pub sumw2: Vec<f64>,
    pub underflow: f64,
    pub overflow: f64,
    /// Every value filled, in range or not.
    pub entries: u64,
    /// Σw, Σw·x, Σw·x² of the values in range (ROOT's statistics).
    pub sum_w: f64,
    pub sum_wx: f64,
    pub sum_wx2: f64,
    /// Entries scanned, and entries with at least one value filled.
    pub scanned: u64,
    pub selected: u64,
}

impl Hist1 {
    fn empty(axis: &Axis) -> Hist1 {
        Hist1 {
            counts: vec![0.0; axis.bins],
            sumw2: vec![0.0; axis.bins],
            ..Hist1::default()
        }
    }

    /// Adds another part's fills (the same axis).
    fn merge(&mut self, other: Hist1) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        for (a, b) in self.sumw2.iter_mut().zip(other.sumw2) {
            *a += b;
        }
        self.underflow += other.underflow;
        self.overflow += other.overflow;
        self.entries += other.entries;
        self.sum_w += other.sum_w;
        self.sum_wx += other.sum_wx;
        self.sum_wx2 += other.sum_wx2;
        self.selected += other.selected;
    }

    /// Fills every (value, weight) pair. The sums of the values in range are
    /// kept in separate lanes, so consecutive values do not wait on each
    /// other's additions.
    fn fill_all(&mut self, axis: &Axis, pairs: &[(f64, f64)]) {
        const LANES: usize = 4;
        let (mut sw, mut swx, mut swx2) = ([0.0; LANES], [0.0; LANES], [0.0; LANES]);
        self.entries += pairs.len() as u64;
        for (k, &(x, w)) in pairs.iter().enumerate() {
            match axis.bin(x) {
                Ok(b) => {
                    self.counts[b] += w;
                    self.sumw2[b] += w * w;
                    let lane = k % LANES;
                    sw[lane] += w;
                    swx[lane] += w * x;
                    swx2[lane] += w * x * x;
                }
                Err(false) => self.underflow += w,
                Err(true) => self.overflow += w,
            }
        }
        self.sum_w += sw.iter().sum::<f64>();
        self.sum_wx += swx.iter().sum::<f64>();
        self.sum_wx2 += swx2.iter().sum::<f64>();
    }

    pub fn mean(&self) -> Option<f64> {
        (self.sum_w != 0.0).then(|| self.sum_wx / self.sum_w)
    }

    pub fn std(&self) -> Option<f64> {
        let mean = self.mean()?;
        Some((self.sum_wx2 / self.sum_w - mean * mean).max(0.0).sqrt())
    }
}

/// What to histogram: a value, the cut, the weight, and whether collections
/// are flattened (false: one entry per passing entry, its number of passing
/// elements).
pub struct HistRequest<'p> {
    pub value: &'p Plan,
    pub cut: Option<&'p Plan>,
    pub weight: Option<&'p Plan>,
    pub flatten: bool,
}

/// The numbers to fill for one window: (value, weight) pairs, and how many
/// entries contributed.
struct Fills {
    pairs: Vec<(f64, f64)>,
    entries_selected: u64,
}

/// One value per element (or entry) of `value`, with the cut and the weight
/// brought to its shape. A per-entry value with a cut on a collection is
/// filled once for each entry where any element passes.
fn fills(
    value: Val,
    cut: Option<Val>,
    weight: Option<Val>,
    flatten: bool,
    inputs: &Inputs<'_>,
) -> Result<Fills, AnalysisError> {
    let n = inputs.entries;
    let weight_of = |w: Option<Val>, like: &Val| -> Result<Option<Val>, AnalysisError> {
        w.map(|w| zip(like.clone(), w, inputs, |_, w| w))
            .transpose()
    };
    match &value {
        Val::Jagged {
            v, offsets, valid, ..
        } => {
            let passing = match cut {
                None => None,
                Some(c) => Some(zip(value.clone(), c, inputs, |_, c| c)?),
            };
            let weights = weight_of(weight, &value)?;
            // The cut and the weight resolved once per window: the loops below
            // index plain slices.
            let (pass_each, pass_all): (Option<&[f64]>, bool) = match &passing {
                None => (None, true),
                Some(Val::Jagged { v, .. }) => (Some(v), false),
                Some(Val::Const(c)) => (None, truth(*c)),
                Some(Val::Scalar { .. }) => unreachable!("a collection zipped stays a collection"),
            };
            let element_ok = |i: usize| pass_each.map_or(pass_all, |p| truth(p[i]));
            let entry_ok = |e: usize| {
                valid.as_ref().is_none_or(|m| m[e])
                    && match &passing {
                        Some(Val::Jagged { valid: Some(m), .. }) => m[e],
                        _ => true,
                    }
            };
            let (weight_each, weight_all): (Option<&[f64]>, f64) = match &weights {
                Some(Val::Jagged { v, .. }) => (Some(v), 1.0),
                Some(Val::Const(c)) => (None, *c),
                _ => (None, 1.0),
            };
            let weight_at = |i: usize| weight_each.map_or(weight_all, |w| w[i]);
            if flatten {
                // Every element is written and the cursor advances only past
                // those that pass: a cut passing at random would otherwise cost
                // a mispredicted branch per element.
                let mut pairs = vec![(0.0, 0.0); v.len()];
                let (mut kept, mut entries_selected) = (0, 0);
                for (e, w) in offsets.windows(2).enumerate() {
                    if !entry_ok(e) {
                        continue;
                    }
                    let before = kept;
                    for (i, &x) in v.iter().enumerate().take(w[1]).skip(w[0]) {
                        pairs[kept] = (x, weight_at(i));
                        kept += usize::from(element_ok(i));
                    }
                    entries_selected += u64::from(kept > before);
                }
                pairs.truncate(kept);
                return Ok(Fills {
                    pairs,
                    entries_selected,
                });
            }
            let mut out = Fills {
                pairs: Vec::with_capacity(n),
                entries_selected: 0,
            };
            for (e, w) in offsets.windows(2).enumerate() {
                if !entry_ok(e) {
                    continue;
                }
                let mut passed = (w[0]..w[1]).filter(|&i| element_ok(i));
                let first = passed.next();
                let count = first.map_or(0, |_| 1 + passed.count());
                if passing.is_none() || count > 0 {
                    // The multiplicity of the entry's passing elements, weighted by
                    // the entry's weight (its first element's for a collection).
                    out.entries_selected += 1;
                    let weight = first.map_or_else(|| entry_weight(&weights, e, w[0]), weight_at);
                    out.pairs.push((count as f64, weight));
                }
            }
            Ok(out)
        }
        _ => {
            let mask = match &cut {
                None => vec![true; n],
                Some(c) => entry_mask(c, n),
            };
            let (values, valid) = match value {
                Val::Const(c) => (vec![c; n], None),
                Val::Scalar { v, valid } => (v, valid),
                Val::Jagged { .. } => unreachable!("handled above"),
            };
            let weights = match weight {
                None => None,
                Some(Val::Jagged { name, .. }) => {
                    return Err(AnalysisError::invalid(
                        0,
                        "a weight with one value per entry",
                        format!(
                            "the weight '{name}' is a collection but the histogrammed value has one value per entry"
                        ),
                    ));
                }
                Some(w) => Some(w),
            };
            let mut out = Fills {
                pairs: Vec::new(),
                entries_selected: 0,
            };
            for e in 0..n {
                let weight_valid = match &weights {
                    Some(Val::Scalar { valid: Some(m), .. }) => m[e],
                    _ => true,
                };
                if mask[e] && valid.as_ref().is_none_or(|m| m[e]) && weight_valid {
                    let weight = match &weights {
                        Some(Val::Scalar { v, .. }) => v[e],
                        Some(Val::Const(c)) => *c,
                        _ => 1.0,
                    };
                    out.entries_selected += 1;
                    out.pairs.push((values[e], weight));
                }
            }
            Ok(out)
        }
    }
}

fn entry_weight(weights: &Option<Val>, _entry: usize, first_element: usize) -> f64 {
    match weights {
        Some(Val::Jagged { v, .. }) => v.get(first_element).copied().unwrap_or(1.0),
        Some(Val::Const(c)) => *c,
        _ => 1.0,
    }
}

/// Evaluates a request's plans over a window and returns what to fill.
fn window_fills(
    together: &Together<'_>,
    req: &HistRequest<'_>,
    w: &super::scan::Window<'_, '_>,
) -> Result<Fills, AnalysisError> {
    let slots = window_slots(together, w);
    let mut vals = together
        .evaluate(&slots, w.len(), w.entries.start)?
        .into_iter();
    let value = vals.next().expect("the value plan");
    let cut = req.cut.map(|_| vals.next().expect("the cut plan"));
    let weight = req.weight.map(|_| vals.next().expect("the weight plan"));
    let map: Vec<usize> = Vec::new();
    let inputs = Inputs {
        entries: w.len(),
        first_entry: w.entries.start,
        slots: &slots,
        map: &map,
    };
    fills(value, cut, weight, req.flatten, &inputs)
}

fn plans_of<'p>(req: &HistRequest<'p>, extra: Option<&'p Plan>) -> Vec<&'p Plan> {
    let mut plans = vec![req.value];
    plans.extend(extra);
    plans.extend(req.cut);
    plans.extend(req.weight);
    plans
}

/// Fills a 1-D histogram in one pass, clusters in parallel.
pub fn histogram(
    file: &RootFile,
    tree: &TreeColumns<'_>,
    req: &HistRequest<'_>,
    axis: Axis,
    job: &Job,
) -> Result<Hist1, AnalysisError> {
    let together = Together::new(plans_of(req, None));
    let mut h = Hist1::empty(&axis);
    scan_parallel(
        file,
        tree,
        (&together.columns, req.cut),
        job,
        || Hist1::empty(&axis),
        |part, w| {
            let f = window_fills(&together, req, w)?;
            part.selected += f.entries_selected;
            part.fill_all(&axis, &f.pairs);
            Ok(())
        },
        |part| h.merge(part),
    )?;
    h.scanned = tree.entries;
    Ok(h)
}

/// Folds every value a request would fill (with its weight) into partial
/// results, clusters in parallel: `each` adds a value to a part made by
/// `init`, and the parts are handed to `merge` in entry order.
pub fn fold_values<A: Send>(
    file: &RootFile,
    tree: &TreeColumns<'_>,
    req: &HistRequest<'_>,
    job: &Job,
    init: impl Fn() -> A + Sync,
    each: impl Fn(&mut A, f64, f64) + Sync,
    mut merge: impl FnMut(A),
) -> Result<Counted, AnalysisError> {
    let together = Together::new(plans_of(req, None));
    let mut counted = Counted {
        scanned: tree.entries,
        selected: 0,
    };
    scan_parallel(
        file,
        tree,
        (&together.columns, req.cut),
        job,
        || (init(), 0u64),
        |(part, selected), w| {
            let f = window_fills(&together, req, w)?;
            *selected += f.entries_selected;
            for (x, weight) in f.pairs {
                each(part, x, weight);
            }
            Ok(())
        },
        |(part, selected)| {
            counted.selected += selected;
            merge(part);
        },
    )?;
    Ok(counted)
}

/// The smallest and largest finite value a request would fill (for a range
/// the caller did not give), with the entries scanned.
pub fn value_range(
    file: &RootFile,
    tree: &TreeColumns<'_>,
    req: &HistRequest<'_>,
    job: &Job,
) -> Result<Option<(f64, f64)>, AnalysisError> {
    let together = Together::new(plans_of(req, None));
    let widen = |range: Option<(f64, f64)>, (lo, hi): (f64, f64)| {
        Some(range.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))))
    };
    let mut range: Option<(f64, f64)> = None;
    scan_parallel(
        file,
        tree,
        (&together.columns, req.cut),
        job,
        || None,
        |part: &mut Option<(f64, f64)>, w| {
            for (x, _) in window_fills(&together, req, w)?.pairs {
                if x.is_finite() {
                    *part = widen(*part, (x, x));
                }
            }
            Ok(())
        },
        |part| {
            if let Some(p) = part {
                range = widen(range, p);
            }
        },
    )?;
    Ok(range)
}

/// A filled 2-D histogram: `counts[y][x]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hist2 {
    pub counts: Vec<Vec<f64>>,
    /// Pairs filled, in range or not, and those outside the range.
    pub entries: u64,
    pub outside: f64,
    pub scanned: u64,
    pub selected: u64,
}

impl Hist2 {
    fn empty(axes: &(Axis, Axis)) -> Hist2 {
        Hist2 {
            counts: vec![vec![0.0; axes.0.bins]; axes.1.bins],
            ..Hist2::default()
        }
    }

    fn merge(&mut self, other: Hist2) {
        for (row, more) in self.counts.iter_mut().zip(other.counts) {
            for (a, b) in row.iter_mut().zip(more) {
                *a += b;
            }
        }
        self.entries += other.entries;
        self.outside += other.outside;
        self.selected += other.selected;
    }
}

/// Fills a 2-D histogram of `req.value` (x) against `y` in one pass, clusters
/// in parallel; x and y are per entry, or of one collection.
pub fn histogram_2d(
    file: &RootFile,
    tree: &TreeColumns<'_>,
    req: &HistRequest<'_>,
    y: &Plan,
    axes: (Axis, Axis),
    job: &Job,
) -> Result<Hist2, AnalysisError> {
    let together = Together::new(plans_of(req, Some(y)));
    let (ax, ay) = axes;
    let mut h = Hist2::empty(&axes);
    scan_parallel(
        file,
        tree,
        (&together.columns, req.cut),
        job,
        || Hist2::empty(&axes),
        |part, w| {
            let slots = window_slots(&together, w);
            let mut vals = together
                .evaluate(&slots, w.len(), w.entries.start)?
                .into_iter();
            let x = vals.next().expect("x");
            let yv = vals.next().expect("y");
            let cut = req.cut.map(|_| vals.next().expect("cut"));
            let map: Vec<usize> = Vec::new();
            let inputs = Inputs {
                entries: w.len(),
                first_entry: w.entries.start,
                slots: &slots,
                map: &map,
            };
            // Pair y with x (same collection, or broadcast), then fill x with y
            // as its "weight" slot and read the pairs back.
            let paired_y = zip(x.clone(), yv, &inputs, |_, y| y)?;
            let paired_x = zip(paired_y.clone(), x, &inputs, |_, x| x)?;
            let xs = fills(paired_x, cut.clone(), None, true, &inputs)?;
            let ys = fills(paired_y, cut, None, true, &inputs)?;
            part.selected += xs.entries_selected;
            for ((x, _), (y, _)) in xs.pairs.into_iter().zip(ys.pairs) {
                part.entries += 1;
                match (ax.bin(x), ay.bin(y)) {
                    (Ok(i), Ok(j)) => part.counts[j][i] += 1.0,
                    _ => part.outside += 1.0,
                }
            }
            Ok(())
        },
        |part| h.merge(part),
    )?;
    h.scanned = tree.entries;
    Ok(h)
}
