//! What a histogram fills from a window's evaluated plans: the value's
//! numbers (per element of a collection, or per entry) that pass the cut,
//! with their weights, compacted without a branch per element.

use std::sync::Arc;

use super::AnalysisError;
use super::eval::{Inputs, SlotData, Val, and_masks, entry_mask, truth, zip};
use super::predicate::{Predicate, Rows};
use super::scan::extend_mapped_f64;
use crate::formats::root::{Values, by_number};

/// The numbers to fill for one window, in buffers a part reuses from window
/// to window: the values, their weights when the request has any, and how
/// many entries contributed.
#[derive(Default)]
pub(super) struct Fills {
    pub values: Vec<f64>,
    pub weighted: bool,
    pub weights: Vec<f64>,
    pub entries_selected: u64,
    /// Scratch: how many elements passed before each element, and the end.
    pub(super) passed_before: Vec<u32>,
    /// Scratch: 1 for each row a predicate passes, 0 for the others.
    pub(super) mask: Vec<u8>,
    /// Scratch: a window's paired columns as doubles (`pair_fills`).
    pub(super) pair_columns: Vec<Vec<f64>>,
}

impl Fills {
    pub(super) fn start(&mut self, weighted: bool) {
        self.values.clear();
        self.weights.clear();
        self.weighted = weighted;
        self.entries_selected = 0;
    }

    fn push(&mut self, x: f64, w: f64) {
        self.values.push(x);
        if self.weighted {
            self.weights.push(w);
        }
    }
}

/// `other` brought to the shape of the collection `like`: unchanged when it is
/// already a value per element of the same collection (no copy), else spread
/// or checked by `zip`.
fn shaped_like(like: &Val, other: Val, inputs: &Inputs<'_>) -> Result<Val, AnalysisError> {
    if let (Val::Jagged { offsets: a, .. }, Val::Jagged { offsets: b, .. }) = (like, &other)
        && (Arc::ptr_eq(a, b) || a == b)
    {
        return Ok(other);
    }
    zip(like.clone(), other, inputs, |_, o| o)
}

/// The elements of a collection's valid entries (`entry_ok`) that pass,
/// into `out` (emptied by `Fills::start`): every element is written and the cursor advances only
/// past those that pass, since a cut passing at random would otherwise cost a
/// mispredicted branch per element.
fn compact(
    (v, offsets, entry_ok): (&[f64], &[usize], Option<&[bool]>),
    pass: impl Fn(usize) -> bool,
    weight: impl Fn(usize) -> f64,
    out: &mut Fills,
) {
    let weighted = out.weighted;
    out.values.resize(v.len(), 0.0);
    if weighted {
        out.weights.resize(v.len(), 0.0);
    }
    // Counters in locals, not in `out`: the compiler keeps them in registers
    // instead of a load and store per entry.
    let (values, weights) = (&mut out.values[..], &mut out.weights[..]);
    let (mut kept, mut selected) = (0, 0);
    match entry_ok {
        // Every entry counts: one loop over the elements, whatever entry they
        // belong to (a loop per entry of two elements mispredicts its exit
        // about once an entry); an entry is selected when the count of
        // elements passed grows across it.
        None => {
            let passed_before = &mut out.passed_before;
            passed_before.resize(v.len() + 1, 0);
            kept = if weighted {
                compact_all::<true>(v, (pass, weight), (values, weights), passed_before)
            } else {
                compact_all::<false>(v, (pass, weight), (values, weights), passed_before)
            };
            selected = offsets
                .windows(2)
                .map(|w| u64::from(passed_before[w[1]] > passed_before[w[0]]))
                .sum();
        }
        Some(ok) => {
            for (e, w) in offsets.windows(2).enumerate() {
                if !ok[e] {
                    continue;
                }
                let before = kept;
                for (i, &x) in (w[0]..w[1]).zip(&v[w[0]..w[1]]) {
                    values[kept] = x;
                    if weighted {
                        weights[kept] = weight(i);
                    }
                    kept += usize::from(pass(i));
                }
                selected += u64::from(kept > before);
            }
        }
    }
    out.entries_selected += selected;
    out.values.truncate(kept);
    out.weights.truncate(if weighted { kept } else { 0 });
}

/// `compact`'s loop over every element, the weights' copy compiled in or out:
/// returns how many passed, and sets `passed_before[i]` to how many passed
/// before element `i` (a window's elements number far fewer than 2^32).
#[inline(always)]
fn compact_all<const WEIGHTED: bool>(
    v: &[f64],
    (pass, weight): (impl Fn(usize) -> bool, impl Fn(usize) -> f64),
    (values, weights): (&mut [f64], &mut [f64]),
    passed_before: &mut [u32],
) -> usize {
    let mut kept = 0;
    for (i, &x) in v.iter().enumerate() {
        values[kept] = x;
        if WEIGHTED {
            weights[kept] = weight(i);
        }
        passed_before[i] = kept as u32;
        kept += usize::from(pass(i));
    }
    passed_before[v.len()] = kept as u32;
    kept
}

/// One value per element (or entry) of `value`, with the cut and the weight
/// brought to its shape, into `out`. A per-entry value with a cut on a
/// collection is filled once for each entry where any element passes.
pub(super) fn fills(
    value: Val,
    (cut, weight): (Option<Val>, Option<Val>),
    flatten: bool,
    inputs: &Inputs<'_>,
    out: &mut Fills,
) -> Result<(), AnalysisError> {
    out.start(weight.is_some());
    if !matches!(value, Val::Jagged { .. }) {
        return entry_fills(value, cut, weight, inputs.entries, out);
    }
    let passing = cut.map(|c| shaped_like(&value, c, inputs)).transpose()?;
    let weights = weight.map(|w| shaped_like(&value, w, inputs)).transpose()?;
    let Val::Jagged {
        v, offsets, valid, ..
    } = &value
    else {
        unreachable!("a collection")
    };
    // The cut and the weight resolved once per window: the loops below index
    // plain slices.
    let (pass_each, pass_all): (Option<&[f64]>, bool) = match &passing {
        None => (None, true),
        Some(Val::Jagged { v, .. }) => (Some(v), false),
        Some(Val::Const(c)) => (None, truth(*c)),
        Some(Val::Scalar { .. }) => unreachable!("a collection zipped stays a collection"),
    };
    let entry_ok = match &passing {
        Some(Val::Jagged { valid: p, .. }) => and_masks(valid.clone(), p.clone()),
        _ => valid.clone(),
    };
    let (weight_each, weight_all): (Option<&[f64]>, f64) = match &weights {
        Some(Val::Jagged { v, .. }) => (Some(v), 1.0),
        Some(Val::Const(c)) => (None, *c),
        _ => (None, 1.0),
    };
    let weight_at = |i: usize| weight_each.map_or(weight_all, |w| w[i]);
    if flatten {
        let columns = (&v[..], &offsets[..], entry_ok.as_deref());
        match (pass_each, weight_each) {
            (Some(p), None) => compact(columns, |i| truth(p[i]), |_| weight_all, out),
            (Some(p), Some(w)) => compact(columns, |i| truth(p[i]), |i| w[i], out),
            (None, _) => compact(columns, |_| pass_all, weight_at, out),
        }
        return Ok(());
    }
    let element_ok = |i: usize| pass_each.map_or(pass_all, |p| truth(p[i]));
    for (e, w) in offsets.windows(2).enumerate() {
        if entry_ok.as_ref().is_some_and(|m| !m[e]) {
            continue;
        }
        let mut passed = (w[0]..w[1]).filter(|&i| element_ok(i));
        let first = passed.next();
        let count = first.map_or(0, |_| 1 + passed.count());
        if passing.is_none() || count > 0 {
            // The multiplicity of the entry's passing elements, weighted by
            // the entry's weight (its first element's for a collection).
            out.entries_selected += 1;
            let weight = first.map_or_else(|| entry_weight(&weights, w[0]), weight_at);
            out.push(count as f64, weight);
        }
    }
    Ok(())
}

/// `fills` of a bare column, flattened and unweighted, under a cut that
/// `predicate` runs over the column's rows (its entries, or its elements
/// when every column the cut compares is laid out as it is): the cut is
/// compared in the columns' own types and only the values filled become
/// doubles. None, with nothing filled, where that does not apply.
pub(super) fn predicate_fills(
    value: &SlotData<'_>,
    (predicate, inputs): (&Predicate, &Inputs<'_>),
    out: &mut Fills,
) -> Option<()> {
    if matches!(value.values, Values::Str(_)) {
        return None;
    }
    let rows = match &value.offsets {
        None => Rows::Entries,
        Some(offsets) => Rows::Elements(offsets),
    };
    let mut mask = std::mem::take(&mut out.mask);
    mask.clear();
    let run = predicate.chunks(inputs, rows, |chunk| mask.extend_from_slice(chunk));
    if run.is_none() || mask.len() != value.elements.len() {
        out.mask = mask;
        return None;
    }
    out.start(false);
    let n = mask.len();
    out.values.resize(n, 0.0);
    out.passed_before.resize(n + 1, 0);
    let into = (&mut out.values[..], &mut out.passed_before[..], &mask[..]);
    let r = value.elements.clone();
    let kept = by_number!(value.values, v, to => compact_masked(&v[r], to, into),
        strings: _s => unreachable!("refused above"));
    out.values.truncate(kept);
    let passed_before = &out.passed_before;
    out.entries_selected = match rows {
        Rows::Entries => kept as u64,
        Rows::Elements(offsets) => offsets
            .windows(2)
            .map(|w| u64::from(passed_before[w[1]] > passed_before[w[0]]))
            .sum(),
    };
    out.mask = mask;
    Some(())
}

/// `fills` of a bare column, flattened and unweighted, without a cut: its
/// values as doubles in one pass, the entries with any counted. None for
/// strings (the evaluator's).
pub(super) fn bare_fills(value: &SlotData<'_>, out: &mut Fills) -> Option<()> {
    if matches!(value.values, Values::Str(_)) {
        return None;
    }
    out.start(false);
    extend_mapped_f64(value.values, value.elements.clone(), |x| x, &mut out.values);
    out.entries_selected = match &value.offsets {
        None => out.values.len() as u64,
        Some(offsets) => offsets.windows(2).filter(|w| w[1] > w[0]).count() as u64,
    };
    Some(())
}

/// The values whose `mask` byte is 1, as doubles, into `values`, with
/// `passed_before` as `compact_all` sets it; returns how many.
#[inline(always)]
fn compact_masked<T: Copy>(
    v: &[T],
    to_f64: impl Fn(T) -> f64,
    (values, passed_before, mask): (&mut [f64], &mut [u32], &[u8]),
) -> usize {
    assert!(
        values.len() >= v.len() && mask.len() >= v.len() && passed_before.len() > v.len(),
        "room for every value"
    );
    let mut kept = 0;
    for ((&x, &pass), before) in v.iter().zip(mask).zip(passed_before.iter_mut()) {
        // Unchecked: a checked store here cost a third of this loop's time.
        // SAFETY: `kept` counts the values before this one that passed, so
        // it is below this value's index, below `v.len() <= values.len()`.
        unsafe { *values.get_unchecked_mut(kept) = to_f64(x) };
        *before = kept as u32;
        kept += usize::from(pass != 0);
    }
    passed_before[v.len()] = kept as u32;
    kept
}

/// `fills` of a value with one number per entry.
fn entry_fills(
    value: Val,
    cut: Option<Val>,
    weight: Option<Val>,
    n: usize,
    out: &mut Fills,
) -> Result<(), AnalysisError> {
    let (values, valid) = match value {
        Val::Const(c) => (vec![c; n], None),
        Val::Scalar { v, valid } => (v, valid),
        Val::Jagged { .. } => unreachable!("a value per entry"),
    };
    if let Some(Val::Jagged { name, .. }) = &weight {
        return Err(AnalysisError::invalid(
            0,
            "a weight with one value per entry",
            format!(
                "the weight '{name}' is a collection but the histogrammed value has one value per entry"
            ),
        ));
    }
    let mask = match &cut {
        None => vec![true; n],
        Some(c) => entry_mask(c, n),
    };
    if weight.is_none() && valid.is_none() {
        // Every entry the cut passes (all without one), without a branch per
        // entry.
        let kept = out.values.len();
        if cut.is_none() {
            out.values.extend_from_slice(&values);
        } else {
            out.values.resize(kept + n, 0.0);
            let mut at = kept;
            for (&x, &pass) in values.iter().zip(&mask) {
                out.values[at] = x;
                at += usize::from(pass);
            }
            out.values.truncate(at);
        }
        out.entries_selected += (out.values.len() - kept) as u64;
        return Ok(());
    }
    for e in 0..n {
        let weight_valid = match &weight {
            Some(Val::Scalar { valid: Some(m), .. }) => m[e],
            _ => true,
        };
        if mask[e] && valid.as_ref().is_none_or(|m| m[e]) && weight_valid {
            let w = match &weight {
                Some(Val::Scalar { v, .. }) => v[e],
                Some(Val::Const(c)) => *c,
                _ => 1.0,
            };
            out.entries_selected += 1;
            out.push(values[e], w);
        }
    }
    Ok(())
}

fn entry_weight(weights: &Option<Val>, first_element: usize) -> f64 {
    match weights {
        Some(Val::Jagged { v, .. }) => v.get(first_element).copied().unwrap_or(1.0),
        Some(Val::Const(c)) => *c,
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{Fills, bare_fills, fills, predicate_fills};
    use crate::analysis::eval::{Inputs, SlotData, evaluate};
    use crate::analysis::plan::{Node, unary_function};
    use crate::analysis::predicate::Predicate;
    use crate::analysis::syntax::BinOp;
    use crate::formats::root::Values;

    fn bits(f: &Fills) -> (Vec<u64>, u64) {
        (
            f.values.iter().map(|x| x.to_bits()).collect(),
            f.entries_selected,
        )
    }

    /// A bare column under `pt > 20 && abs(eta) < 2.4 || q == -1`, and
    /// without a cut, per element of a collection (empty entries among them)
    /// and per entry: the fast fills are the evaluator's, value for value,
    /// with the same entries selected.
    #[test]
    fn predicate_fills_are_the_evaluators() {
        let n = 2_000;
        let wave = |i: usize, k: f64| ((i as f64 * k).sin() * 40.0) as f32;
        let columns = [
            Values::F32((0..n).map(|i| wave(i, 0.37).abs()).collect()),
            Values::F32((0..n).map(|i| wave(i, 0.11) / 10.0).collect()),
            Values::I32((0..n).map(|i| (i % 3) as i32 - 1).collect()),
        ];
        let (abs, curve) = unary_function("abs", "abs").unwrap();
        let compare =
            |op, node: Node, c: f64| Node::Binary(op, Box::new(node), Box::new(Node::Const(c)));
        let eta = Node::Func1(abs, curve, Box::new(Node::Column(1)));
        let cut = Node::Binary(
            BinOp::Or,
            Box::new(Node::Binary(
                BinOp::And,
                Box::new(compare(BinOp::Gt, Node::Column(0), 20.0)),
                Box::new(compare(BinOp::Lt, eta, 2.4)),
            )),
            Box::new(compare(BinOp::Eq, Node::Column(2), -1.0)),
        );
        let predicate = Predicate::of(&cut).unwrap();
        let mut offsets = vec![0];
        while *offsets.last().unwrap() < n {
            offsets.push((offsets.last().unwrap() + offsets.len() % 4).min(n));
        }
        let offsets = Arc::new(offsets);
        for per_element in [true, false] {
            let entries = if per_element { offsets.len() - 1 } else { n };
            let slots: Vec<SlotData> = columns
                .iter()
                .map(|v| SlotData {
                    values: v,
                    elements: 0..n,
                    offsets: per_element.then(|| offsets.clone()),
                    name: Arc::from("x"),
                })
                .collect();
            let map = [0, 1, 2];
            let inputs = Inputs {
                entries,
                first_entry: 0,
                slots: &slots,
                map: &map,
            };
            let (mut fast, mut slow) = (Fills::default(), Fills::default());
            predicate_fills(&slots[0], (&predicate, &inputs), &mut fast).expect("fast path");
            let value = evaluate(&Node::Column(0), &inputs).unwrap();
            let passing = evaluate(&cut, &inputs).unwrap();
            fills(value, (Some(passing), None), true, &inputs, &mut slow).unwrap();
            assert_eq!(bits(&fast), bits(&slow), "per element: {per_element}");
            assert!(fast.entries_selected > 0 && fast.values.len() < n);
            // Without a cut, every value (and every entry with one).
            bare_fills(&slots[0], &mut fast).expect("a bare column");
            let value = evaluate(&Node::Column(0), &inputs).unwrap();
            fills(value, (None, None), true, &inputs, &mut slow).unwrap();
            assert_eq!(bits(&fast), bits(&slow), "per element: {per_element}");
            assert_eq!(fast.values.len(), n);
        }
    }
}
