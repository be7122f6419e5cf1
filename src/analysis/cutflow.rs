//! Cutflows: named cuts applied in order, each step's entries (and sum of
//! weights) counted in one pass over the data. Every window evaluates the cuts
//! one after the other on the entries still passing; with `n_minus_one` every
//! cut is evaluated on every entry, so that each cut's count with all the
//! others applied comes from the same pass.

use super::AnalysisError;
use super::dataset::Member;
use super::eval::{Val, evaluate};
use super::ops::{Together, window_slots};
use super::plan::Plan;
use super::predicate::{Predicate, mask_cut};
use super::scan::{Parts, Window, scan_parallel};
use crate::job::Job;

/// Entries and their weights: a step's (or an n-1 count's) totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Tally {
    pub entries: u64,
    /// Sum of the weights (the entries' number when unweighted).
    pub sum_w: f64,
    /// Sum of the squared weights: the sum's error is its square root.
    pub sum_w2: f64,
}

impl Tally {
    fn add(&mut self, w: f64) {
        self.entries += 1;
        self.sum_w += w;
        self.sum_w2 += w * w;
    }

    fn merge(&mut self, other: &Tally) {
        self.entries += other.entries;
        self.sum_w += other.sum_w;
        self.sum_w2 += other.sum_w2;
    }
}

/// A cutflow's totals: one tally per step (the entries passing that cut and
/// every one before it), and with n-1 one per cut (the entries passing every
/// other cut), with the entries scanned.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Flow {
    pub steps: Vec<Tally>,
    pub n_minus_one: Vec<Tally>,
    pub scanned: u64,
}

impl Flow {
    fn empty(cuts: usize, n_minus_one: bool) -> Flow {
        Flow {
            steps: vec![Tally::default(); cuts],
            n_minus_one: vec![Tally::default(); if n_minus_one { cuts } else { 0 }],
            scanned: 0,
        }
    }

    /// Adds another part's tallies (the same cuts).
    pub fn merge(&mut self, other: &Flow) {
        for (a, b) in self.steps.iter_mut().zip(&other.steps) {
            a.merge(b);
        }
        for (a, b) in self.n_minus_one.iter_mut().zip(&other.n_minus_one) {
            a.merge(b);
        }
        self.scanned += other.scanned;
    }
}

/// What a cutflow counts: the cuts in order, an optional weight (one value
/// per entry) and whether to count each cut's n-1.
pub struct FlowRequest<'p> {
    pub cuts: Vec<&'p Plan>,
    pub weight: Option<&'p Plan>,
    pub n_minus_one: bool,
}

/// The cutflow of the members in one pass, clusters in parallel, with each
/// member's own. Without n-1 the clusters the first cut rules out are left
/// unread (no entry there passes any step); with it every cluster is read, as
/// an entry failing one cut alone counts in that cut's n-1.
pub fn cutflow(
    members: &[Member<'_>],
    req: &FlowRequest<'_>,
    job: &Job,
) -> Result<(Flow, Vec<Flow>), AnalysisError> {
    if let Some(w) = req.weight
        && w.is_jagged()
    {
        return Err(AnalysisError::invalid(
            0,
            "a weight with one value per entry",
            "a cutflow weighs entries: the weight must have one value per entry, not a collection"
                .to_string(),
        ));
    }
    let n = req.cuts.len();
    let mut plans = req.cuts.clone();
    plans.extend(req.weight);
    let together = Together::new(plans);
    let predicates: Vec<Option<Predicate>> =
        req.cuts.iter().map(|c| Predicate::of(&c.root)).collect();
    let prune = if req.n_minus_one {
        None
    } else {
        req.cuts.first().copied()
    };
    let mut total = Flow::empty(n, req.n_minus_one);
    let mut by_member = vec![Flow::empty(n, req.n_minus_one); members.len()];
    scan_parallel(
        members,
        (&together.columns, prune),
        (job, Parts::Small),
        || Flow::empty(n, req.n_minus_one),
        |flow, w| window_flow(flow, w, (&together, &predicates), req),
        |m, part| {
            by_member[m].merge(&part);
            total.merge(&part);
        },
    )?;
    Ok((total, by_member))
}

/// Adds a window's entries to `flow`.
fn window_flow(
    flow: &mut Flow,
    w: &Window<'_, '_>,
    (together, predicates): (&Together<'_>, &[Option<Predicate>]),
    req: &FlowRequest<'_>,
) -> Result<(), AnalysisError> {
    let n = req.cuts.len();
    let entries = w.len();
    let slots = window_slots(together, w);
    let weights = match req.weight {
        Some(plan) => Some(entry_weights(
            evaluate(&plan.root, &together.inputs(n, &slots, w))?,
            entries,
        )),
        None => None,
    };
    let weight = |e: usize| weights.as_ref().map_or(1.0, |v| v[e]);
    // Per entry: how many cuts it failed, and the last one it failed.
    let mut failed = vec![0u32; entries];
    let mut last_failed = vec![0usize; entries];
    // Whether the entry passed every cut so far.
    let mut alive = vec![true; entries];
    let mut tallies = vec![Tally::default(); n];
    for (k, cut) in req.cuts.iter().enumerate() {
        if !req.n_minus_one && !alive.iter().any(|&a| a) {
            break;
        }
        let inputs = together.inputs(k, &slots, w);
        let mask = mask_cut(predicates[k].as_ref(), &cut.root, &inputs)?;
        for e in 0..entries {
            if !mask[e] {
                alive[e] = false;
                failed[e] += 1;
                last_failed[e] = k;
            } else if alive[e] {
                tallies[k].add(weight(e));
            }
        }
    }
    for (a, b) in flow.steps.iter_mut().zip(&tallies) {
        a.merge(b);
    }
    if req.n_minus_one {
        for e in 0..entries {
            match failed[e] {
                0 => flow.n_minus_one.iter_mut().for_each(|t| t.add(weight(e))),
                1 => flow.n_minus_one[last_failed[e]].add(weight(e)),
                _ => {}
            }
        }
    }
    flow.scanned += entries as u64;
    Ok(())
}

/// A weight per entry; an entry whose weight is missing (an element out of
/// range) weighs nothing, as such an entry fills no histogram either.
fn entry_weights(v: Val, entries: usize) -> Vec<f64> {
    match v {
        Val::Const(c) => vec![c; entries],
        Val::Scalar { v, valid: None } => v,
        Val::Scalar { v, valid: Some(m) } => v
            .iter()
            .zip(&m)
            .map(|(&x, &ok)| if ok { x } else { 0.0 })
            .collect(),
        Val::Jagged { .. } => unreachable!("a jagged weight is refused before the scan"),
    }
}
