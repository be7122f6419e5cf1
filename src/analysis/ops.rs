//! The operations the data tools are made of: counting the entries a cut
//! selects, and filling 1-D and 2-D histograms, each in one streamed pass over
//! the columns its plans name.

use super::AnalysisError;
use super::dataset::Member;
use super::eval::{Inputs, SlotData, Val, evaluate, zip};
use super::fills::{Fills, bare_fills, fills, predicate_fills};
use super::pair_fills::{PairFills, PlanOf};
use super::plan::{Node, Plan};
use super::predicate::{Predicate, count_cut};
use super::scan::{Parts, Window, scan_parallel};
use crate::job::Job;

/// Plans evaluated together over one scan: the union of their columns, and
/// each plan's slots mapped into it.
pub(super) struct Together<'p> {
    plans: Vec<&'p Plan>,
    pub(super) columns: Vec<usize>,
    maps: Vec<Vec<usize>>,
}

impl<'p> Together<'p> {
    pub(super) fn new(plans: Vec<&'p Plan>) -> Together<'p> {
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

    /// Plan `i`'s view of a window's columns.
    pub(super) fn inputs<'a>(
        &'a self,
        i: usize,
        slots: &'a [SlotData<'a>],
        w: &Window<'_, '_>,
    ) -> Inputs<'a> {
        Inputs {
            entries: w.len(),
            first_entry: w.global_start(),
            slots,
            map: &self.maps[i],
        }
    }

    /// Evaluates every plan over a window's columns.
    pub(super) fn evaluate(
        &self,
        slots: &[SlotData<'_>],
        w: &Window<'_, '_>,
    ) -> Result<Vec<Val>, AnalysisError> {
        (0..self.plans.len())
            .map(|i| evaluate(&self.plans[i].root, &self.inputs(i, slots, w)))
            .collect()
    }
}

/// How many entries a scan read (the clusters the cut ruled out are not
/// read, and not counted) and how many passed the cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counted {
    pub scanned: u64,
    pub selected: u64,
}

/// Counts the entries of the members that pass `cut` (an entry passes when
/// any of its elements does), reading clusters in parallel and skipping those
/// the cut rules out; with each member's own count.
pub fn count_selected(
    members: &[Member<'_>],
    cut: &Plan,
    job: &Job,
) -> Result<(Counted, Vec<Counted>), AnalysisError> {
    let together = Together::new(vec![cut]);
    let predicate = Predicate::of(&cut.root);
    let mut by_member = vec![Counted::default(); members.len()];
    let scanned = scan_parallel(
        members,
        (&together.columns, Some(cut)),
        (job, Parts::Small),
        Counted::default,
        |n, w| {
            let slots = window_slots(&together, w);
            let inputs = together.inputs(0, &slots, w);
            n.selected += count_cut(predicate.as_ref(), &cut.root, &inputs)?;
            n.scanned += w.len() as u64;
            Ok(())
        },
        |m, n| {
            by_member[m].scanned += n.scanned;
            by_member[m].selected += n.selected;
        },
    )?;
    let selected = by_member.iter().map(|c| c.selected).sum();
    Ok((Counted { scanned, selected }, by_member))
}

/// A window's inputs for combining values the plans already evaluated
/// (`fills`, `zip`), which look up no plan's slots.
fn evaluated_inputs<'a>(slots: &'a [SlotData<'a>], w: &Window<'_, '_>) -> Inputs<'a> {
    Inputs {
        entries: w.len(),
        first_entry: w.global_start(),
        slots,
        map: &[],
    }
}

/// A window's columns as the evaluator takes them.
pub(super) fn window_slots<'s>(together: &Together<'_>, w: &Window<'s, '_>) -> Vec<SlotData<'s>> {
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
        match self.slot(x) as usize {
            0 => Err(false),
            s if s == self.bins + 1 => Err(true),
            s => Ok(s - 1),
        }
    }

    /// `bin` as one number without a branch: 0 below the range, 1..=bins
    /// for the bins, bins + 1 at or above it (and for NaN, which fails both
    /// comparisons). In 32 bits (bins are at most 10,000): a double converts
    /// to a 32-bit integer in a vector instruction, to a 64-bit one only
    /// value by value, so the loop over a window vectorises.
    #[inline(always)]
    fn slot(&self, x: f64) -> u32 {
        let last = (self.bins - 1).min(i32::MAX as usize) as f64;
        // Clamped before the conversion (the same bin as clamping after):
        // `max` takes 0 over NaN, so the position is a number in
        // [0, bins - 1], which converts to an i32 in one vector instruction
        // (`as` would check for NaN and overflow value by value).
        let at = ((x - self.lo) / (self.hi - self.lo) * self.bins as f64)
            .max(0.0)
            .min(last);
        // SAFETY: `at` is finite and within [0, i32::MAX].
        let bin = unsafe { at.to_int_unchecked::<i32>() } as u32 + 1;
        let overflow = self.bins as u32 + 1;
        // Selects, not branches: `x < hi` fails at or above the range and
        // for NaN; below the range `x < lo` (which implies `x < hi`) wins.
        let inside = if x < self.lo { 0 } else { bin };
        if x < self.hi { inside } else { overflow }
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
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Hist1 {
    #[serde(with = "raw_doubles")]
    pub counts: Vec<f64>,
    /// Σw² per bin (for the errors).
    #[serde(with = "raw_doubles")]
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
    /// Each member's share (all but the bins), in member order.
    pub by_member: Vec<Hist1>,
}

impl Hist1 {
    pub fn empty(axis: &Axis) -> Hist1 {
        Hist1 {
            counts: vec![0.0; axis.bins],
            sumw2: vec![0.0; axis.bins],
            ..Hist1::default()
        }
    }

    /// Adds another part's fills (the same axis).
    pub fn merge(&mut self, other: Hist1) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        for (a, b) in self.sumw2.iter_mut().zip(&other.sumw2) {
            *a += b;
        }
        self.add_totals(&other);
    }

    /// Adds another part's totals (all but the bins).
    fn add_totals(&mut self, other: &Hist1) {
        self.scanned += other.scanned;
        self.underflow += other.underflow;
        self.overflow += other.overflow;
        self.entries += other.entries;
        self.sum_w += other.sum_w;
        self.sum_wx += other.sum_wx;
        self.sum_wx2 += other.sum_wx2;
        self.selected += other.selected;
    }

    /// Fills a window's values. The sums of the values in range are kept in
    /// separate lanes, so consecutive values do not wait on each other's
    /// additions; without weights every weight is 1 and none is read.
    fn fill_all(&mut self, axis: &Axis, f: &Fills) {
        self.entries += f.values.len() as u64;
        if f.weighted {
            self.fill_lanes(axis, f.values.iter().zip(&f.weights).map(|(&x, &w)| (x, w)));
        } else {
            self.fill_unweighted(axis, &f.values);
        }
    }

    /// `fill_lanes` with every weight 1, in two passes that do not wait on
    /// each other: each value's `Axis::slot` and the sums of the values in
    /// range, without branches, then the counts. One pass doing both spent a
    /// division's latency and a mispredicted branch on each value.
    fn fill_unweighted(&mut self, axis: &Axis, xs: &[f64]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { self.fill_unweighted_avx2(axis, xs) };
        }
        self.fill_unweighted_portable(axis, xs)
    }

    /// `fill_unweighted` compiled for AVX2: four slots at a time, divisions
    /// included. The sums add the same numbers in the same order either way.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn fill_unweighted_avx2(&mut self, axis: &Axis, xs: &[f64]) {
        self.fill_unweighted_portable(axis, xs)
    }

    #[inline(always)]
    fn fill_unweighted_portable(&mut self, axis: &Axis, xs: &[f64]) {
        const LANES: usize = 4;
        let bins = axis.bins;
        let overflow = bins + 1;
        let slots: Vec<u32> = xs.iter().map(|&x| axis.slot(x)).collect();
        // The same lanes as `fill_lanes` (value k in lane k % 4), so the sums
        // are the same to the last bit whichever path filled them.
        let (mut sw, mut swx, mut swx2) = ([0.0; LANES], [0.0; LANES], [0.0; LANES]);
        for (chunk, slot_chunk) in xs.chunks(LANES).zip(slots.chunks(LANES)) {
            for lane in 0..chunk.len() {
                let in_range = slot_chunk[lane] != 0 && slot_chunk[lane] as usize != overflow;
                let x = if in_range { chunk[lane] } else { 0.0 };
                sw[lane] += if in_range { 1.0 } else { 0.0 };
                swx[lane] += x;
                swx2[lane] += x * x;
            }
        }
        // Four sets of counts, a value in each in turn: runs of one bin (common
        // near a peak) would otherwise wait on the previous increment.
        let stride = bins + 2;
        let mut sets = vec![0u32; 4 * stride];
        let chunks = slots.chunks_exact(4);
        for &s in chunks.remainder() {
            sets[s as usize] += 1;
        }
        for c in chunks {
            sets[c[0] as usize] += 1;
            sets[stride + c[1] as usize] += 1;
            sets[2 * stride + c[2] as usize] += 1;
            sets[3 * stride + c[3] as usize] += 1;
        }
        let counts: Vec<u32> = (0..stride)
            .map(|b| sets[b] + sets[stride + b] + sets[2 * stride + b] + sets[3 * stride + b])
            .collect();
        self.underflow += f64::from(counts[0]);
        self.overflow += f64::from(counts[overflow]);
        for (b, &c) in counts[1..=bins].iter().enumerate() {
            self.counts[b] += f64::from(c);
            self.sumw2[b] += f64::from(c);
        }
        self.sum_w += sw.iter().sum::<f64>();
        self.sum_wx += swx.iter().sum::<f64>();
        self.sum_wx2 += swx2.iter().sum::<f64>();
    }

    #[inline(always)]
    fn fill_lanes(&mut self, axis: &Axis, pairs: impl Iterator<Item = (f64, f64)>) {
        const LANES: usize = 4;
        let (mut sw, mut swx, mut swx2) = ([0.0; LANES], [0.0; LANES], [0.0; LANES]);
        for (k, (x, w)) in pairs.enumerate() {
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

/// What a request fills, set up once per request: its plans evaluated
/// together, and its cut's predicate form when it has one.
struct Filling<'r, 'p> {
    req: &'r HistRequest<'p>,
    together: Together<'p>,
    predicate: Option<Predicate>,
    /// The fused form of pairs' masses under their cut, when it has one.
    pairs: Option<PairFills>,
}

impl<'r, 'p> Filling<'r, 'p> {
    fn new(req: &'r HistRequest<'p>) -> Filling<'r, 'p> {
        Filling {
            req,
            together: Together::new(plans_of(req, None)),
            predicate: req.cut.and_then(|c| Predicate::of(&c.root)),
            pairs: (req.flatten && req.weight.is_none())
                .then(|| PairFills::of(&req.value.root, req.cut.map(|c| &c.root)))
                .flatten(),
        }
    }

    /// Evaluates the request's plans over a window into `out`, what to fill.
    fn window(&self, w: &Window<'_, '_>, out: &mut Fills) -> Result<(), AnalysisError> {
        let (together, req) = (&self.together, self.req);
        let slots = window_slots(together, w);
        if self.bare_column_fills((&slots, w), out) || self.pair_fills((&slots, w), out)? {
            return Ok(());
        }
        let mut vals = together.evaluate(&slots, w)?.into_iter();
        let value = vals.next().expect("the value plan");
        let cut = req.cut.map(|_| vals.next().expect("the cut plan"));
        let weight = req.weight.map(|_| vals.next().expect("the weight plan"));
        let inputs = evaluated_inputs(&slots, w);
        fills(value, (cut, weight), req.flatten, &inputs, out)
    }

    /// Fills the masses of pairs under their cut by the fused loop, where
    /// the request and the window allow it. False (nothing filled) otherwise.
    fn pair_fills(
        &self,
        (slots, w): (&[SlotData<'_>], &Window<'_, '_>),
        out: &mut Fills,
    ) -> Result<bool, AnalysisError> {
        let Some(pairs) = &self.pairs else {
            return Ok(false);
        };
        // The value is plan 0 and the cut plan 1 (`plans_of`).
        let maps = &self.together.maps;
        let slot = |plan: PlanOf, s: usize| match plan {
            PlanOf::Value => &slots[maps[0][s]],
            PlanOf::Cut => &slots[maps[1][s]],
        };
        let inputs = self
            .together
            .inputs(if self.req.cut.is_some() { 1 } else { 0 }, slots, w);
        pairs.fill(slot, &inputs, out)
    }

    /// Fills a bare column histogrammed flattened and unweighted without the
    /// evaluator, where that can be done: without a cut, or under a cut made
    /// of comparisons. False (nothing filled) otherwise.
    fn bare_column_fills(
        &self,
        (slots, w): (&[SlotData<'_>], &Window<'_, '_>),
        out: &mut Fills,
    ) -> bool {
        let req = self.req;
        let Node::Column(slot) = req.value.root else {
            return false;
        };
        if !req.flatten || req.weight.is_some() {
            return false;
        }
        // The value is plan 0 and the cut plan 1 (`plans_of`).
        let value = &slots[self.together.maps[0][slot]];
        if req.cut.is_none() {
            return bare_fills(value, out).is_some();
        }
        let Some(predicate) = &self.predicate else {
            return false;
        };
        let inputs = self.together.inputs(1, slots, w);
        predicate_fills(value, (predicate, &inputs), out).is_some()
    }
}

fn plans_of<'p>(req: &HistRequest<'p>, extra: Option<&'p Plan>) -> Vec<&'p Plan> {
    let mut plans = vec![req.value];
    plans.extend(extra);
    plans.extend(req.cut);
    plans.extend(req.weight);
    plans
}

/// Fills a 1-D histogram of the members in one pass, clusters in parallel,
/// with each member's totals.
pub fn histogram(
    members: &[Member<'_>],
    req: &HistRequest<'_>,
    axis: Axis,
    job: &Job,
) -> Result<Hist1, AnalysisError> {
    let filling = Filling::new(req);
    let mut h = Hist1::empty(&axis);
    let mut by_member = vec![Hist1::default(); members.len()];
    let scanned = scan_parallel(
        members,
        (&filling.together.columns, req.cut),
        (job, Parts::Small),
        || (Hist1::empty(&axis), Fills::default()),
        |(part, f), w| {
            filling.window(w, f)?;
            part.selected += f.entries_selected;
            part.scanned += w.len() as u64;
            part.fill_all(&axis, f);
            Ok(())
        },
        |m, (part, _)| {
            by_member[m].add_totals(&part);
            h.merge(part);
        },
    )?;
    h.scanned = scanned;
    h.by_member = by_member;
    Ok(h)
}

/// Folds the values a request would fill (weights left out: no caller needs
/// them) into partial results, clusters in parallel: `each` adds a window's
/// values to a part made by `init`, and the parts are handed to `merge` in
/// entry order.
pub fn fold_values<A: Send>(
    members: &[Member<'_>],
    req: &HistRequest<'_>,
    job: &Job,
    init: impl Fn() -> A + Sync,
    each: impl Fn(&mut A, &[f64]) + Sync,
    mut merge: impl FnMut(usize, A, Counted) + Send,
) -> Result<Counted, AnalysisError> {
    let filling = Filling::new(req);
    let mut selected = 0;
    let scanned = scan_parallel(
        members,
        (&filling.together.columns, req.cut),
        (job, Parts::Large),
        || (init(), Counted::default(), Fills::default()),
        |(part, counted, f), w| {
            filling.window(w, f)?;
            counted.selected += f.entries_selected;
            counted.scanned += w.len() as u64;
            each(part, &f.values);
            Ok(())
        },
        |m, (part, counted, _)| {
            selected += counted.selected;
            merge(m, part, counted);
        },
    )?;
    Ok(Counted { scanned, selected })
}

/// The smallest and largest finite value a request would fill (for a range
/// the caller did not give), with the entries scanned.
pub fn value_range(
    members: &[Member<'_>],
    req: &HistRequest<'_>,
    job: &Job,
) -> Result<Option<(f64, f64)>, AnalysisError> {
    let filling = Filling::new(req);
    let widen = |range: Option<(f64, f64)>, (lo, hi): (f64, f64)| {
        Some(range.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))))
    };
    let mut range: Option<(f64, f64)> = None;
    scan_parallel(
        members,
        (&filling.together.columns, req.cut),
        (job, Parts::Small),
        || (None, Fills::default()),
        |(part, f): &mut (Option<(f64, f64)>, Fills), w| {
            filling.window(w, f)?;
            for &x in &f.values {
                if x.is_finite() {
                    *part = widen(*part, (x, x));
                }
            }
            Ok(())
        },
        |_, (part, _)| {
            if let Some(p) = part {
                range = widen(range, p);
            }
        },
    )?;
    Ok(range)
}

/// A filled 2-D histogram: `counts[y][x]`.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Hist2 {
    pub counts: Vec<Vec<f64>>,
    /// Pairs filled, in range or not, and those outside the range.
    pub entries: u64,
    pub outside: f64,
    pub scanned: u64,
    pub selected: u64,
    /// Each member's share (all but the cells), in member order.
    pub by_member: Vec<Hist2>,
}

impl Hist2 {
    pub fn empty(axes: &(Axis, Axis)) -> Hist2 {
        Hist2 {
            counts: vec![vec![0.0; axes.0.bins]; axes.1.bins],
            ..Hist2::default()
        }
    }

    pub fn merge(&mut self, other: Hist2) {
        for (row, more) in self.counts.iter_mut().zip(&other.counts) {
            for (a, b) in row.iter_mut().zip(more) {
                *a += b;
            }
        }
        self.add_totals(&other);
    }

    fn add_totals(&mut self, other: &Hist2) {
        self.scanned += other.scanned;
        self.entries += other.entries;
        self.outside += other.outside;
        self.selected += other.selected;
    }
}

/// Fills a 2-D histogram of `req.value` (x) against `y` in one pass, clusters
/// in parallel; x and y are per entry, or of one collection.
pub fn histogram_2d(
    members: &[Member<'_>],
    req: &HistRequest<'_>,
    y: &Plan,
    axes: (Axis, Axis),
    job: &Job,
) -> Result<Hist2, AnalysisError> {
    let together = Together::new(plans_of(req, Some(y)));
    let (ax, ay) = axes;
    let mut h = Hist2::empty(&axes);
    let mut by_member = vec![Hist2::default(); members.len()];
    let scanned = scan_parallel(
        members,
        (&together.columns, req.cut),
        (job, Parts::Small),
        || Hist2::empty(&axes),
        |part, w| {
            let slots = window_slots(&together, w);
            let mut vals = together.evaluate(&slots, w)?.into_iter();
            let x = vals.next().expect("x");
            let yv = vals.next().expect("y");
            let cut = req.cut.map(|_| vals.next().expect("cut"));
            let inputs = evaluated_inputs(&slots, w);
            // Pair y with x (same collection, or broadcast), then fill x with y
            // as its "weight" slot and read the pairs back.
            let paired_y = zip(x.clone(), yv, &inputs, |_, y| y)?;
            let paired_x = zip(paired_y.clone(), x, &inputs, |_, x| x)?;
            let (mut xs, mut ys) = (Fills::default(), Fills::default());
            fills(paired_x, (cut.clone(), None), true, &inputs, &mut xs)?;
            fills(paired_y, (cut, None), true, &inputs, &mut ys)?;
            part.selected += xs.entries_selected;
            part.scanned += w.len() as u64;
            for (&x, &y) in xs.values.iter().zip(&ys.values) {
                part.entries += 1;
                match (ax.bin(x), ay.bin(y)) {
                    (Ok(i), Ok(j)) => part.counts[j][i] += 1.0,
                    _ => part.outside += 1.0,
                }
            }
            Ok(())
        },
        |m, part| {
            by_member[m].add_totals(&part);
            h.merge(part);
        },
    )?;
    h.scanned = scanned;
    h.by_member = by_member;
    Ok(h)
}

/// Bins serialised as one run of bytes (each double's bits, little-endian)
/// rather than a number at a time: a cluster task's partial histogram of
/// 10,000 bins then encodes and decodes as one copy.
mod raw_doubles {
    use serde::de::{Error, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        s.serialize_bytes(&bytes)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        struct Doubles;
        impl Visitor<'_> for Doubles {
            type Value = Vec<f64>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes holding doubles")
            }
            fn visit_bytes<E: Error>(self, b: &[u8]) -> Result<Vec<f64>, E> {
                if !b.len().is_multiple_of(8) {
                    return Err(E::custom("not a whole number of doubles"));
                }
                Ok(b.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .collect())
            }
            fn visit_byte_buf<E: Error>(self, b: Vec<u8>) -> Result<Vec<f64>, E> {
                self.visit_bytes(&b)
            }
        }
        d.deserialize_bytes(Doubles)
    }
}

#[cfg(test)]
mod tests {
    use super::{Axis, Fills, Hist1};

    /// Bins by hand: [lo, hi) split in four, below is underflow, at or
    /// above hi (and NaN) overflow, as `TH1::Fill` places them.
    #[test]
    fn values_fall_in_the_bins_counted_by_hand() {
        let axis = Axis {
            bins: 4,
            lo: -1.0,
            hi: 1.0,
        };
        let cases = [
            (-1.0, Ok(0)),
            (-0.5000001, Ok(0)),
            (-0.5, Ok(1)),
            (-0.0, Ok(2)),
            (0.0, Ok(2)),
            (0.4999999, Ok(2)),
            (0.5, Ok(3)),
            (0.9999999, Ok(3)),
            (1.0, Err(true)),
            (1e300, Err(true)),
            (f64::INFINITY, Err(true)),
            (f64::NAN, Err(true)),
            (-1.0000001, Err(false)),
            (f64::NEG_INFINITY, Err(false)),
        ];
        for (x, want) in cases {
            assert_eq!(axis.bin(x), want, "{x}");
        }
        // The vectorised fill agrees, value for value.
        let mut h = Hist1::empty(&axis);
        let xs: Vec<f64> = cases.iter().map(|c| c.0).collect();
        h.fill_unweighted(&axis, &xs);
        assert_eq!(h.counts, vec![2.0, 1.0, 3.0, 2.0]);
        assert_eq!((h.underflow, h.overflow), (2.0, 4.0));
    }

    /// The unweighted fill (slots, then counts) against the one-pass fill
    /// with weights of 1: the same bins and the same sums to the last bit, on
    /// values at the edges, outside, infinite and NaN.
    #[test]
    fn unweighted_fills_match_weighted_fills_of_one() {
        let axis = Axis {
            bins: 7,
            lo: -1.5,
            hi: 2.0,
        };
        let mut values = vec![-1.5, 2.0, -1.5 - 1e-12, 2.0 - 1e-12, 0.0, -0.0];
        values.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, -1e300]);
        values.extend(axis.edges());
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..10_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            values.push((state >> 11) as f64 / (1u64 << 53) as f64 * 5.0 - 2.5);
        }
        let (mut plain, mut weighted) = (Hist1::empty(&axis), Hist1::empty(&axis));
        plain.fill_all(
            &axis,
            &Fills {
                values: values.clone(),
                ..Fills::default()
            },
        );
        weighted.fill_all(
            &axis,
            &Fills {
                weights: vec![1.0; values.len()],
                values,
                weighted: true,
                ..Fills::default()
            },
        );
        assert_eq!(plain, weighted);
        assert!(plain.underflow > 0.0 && plain.overflow > 0.0);
    }
}
