//! ROOT::VecOps' functions over collections, with its names, argument order
//! and conventions: reductions of each entry's collection to one value
//! (`Sum`, `Max`, `Min`, `ArgMax`, `ArgMin`, `Any`, `All`, `InvariantMass`),
//! collections made from collections (`Take`, `Sort`, `Reverse`, `Where`,
//! and the pairs of `pairs`), and the element-wise kinematics of
//! `kinematics`. Type checking gives each call its shape; evaluation works a
//! window at a time, one pass over each argument's values.
//!
//! Where VecOps leaves an empty collection undefined, quarry defines it: `Max`
//! and `Min` of no element have no value (the entry fails a cut and is not
//! filled); `ArgMax`/`ArgMin` of none are 0 and `Sum` of none is 0, as
//! VecOps computes them; `Any` of none is false, `All` of none true.

use std::sync::Arc;

use super::AnalysisError;
use super::eval::{Inputs, Val, and_masks, different_lengths, spread, truth};
use super::kinematics;
use super::pairs;
use super::plan::{Checked, Checker, Collection, Node, Shape, arity, combine, first_column};
use super::syntax::Expr;

/// A VecOps function, as a plan runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VecOp {
    InvariantMass,
    InvariantMasses,
    DeltaR,
    DeltaPhi,
    Sum,
    Max,
    Min,
    ArgMax,
    ArgMin,
    Any,
    All,
    /// `Take(x, indices)`: the elements of `x` at a collection of indices.
    TakeIndices,
    /// `Take(x, n)`: the first `n` elements of `x` (the last `-n` when negative).
    TakeCount,
    Sort,
    Reverse,
    Where,
    PairFirst,
    PairSecond,
    /// Element `i` of each entry of a computed collection (`m[0]` of a define).
    At(usize),
    /// The element of each entry at that entry's own index (`x[ArgMax(y)]`).
    AtEach,
}

/// The functions' names, for messages.
pub const NAMES: [&str; 17] = [
    "InvariantMass",
    "InvariantMasses",
    "DeltaR",
    "DeltaPhi",
    "Sum",
    "Max",
    "Min",
    "ArgMax",
    "ArgMin",
    "Any",
    "All",
    "Take",
    "Sort",
    "Reverse",
    "Where",
    "PairFirst",
    "PairSecond",
];

/// The function a call's name means (also spelt `ROOT::VecOps::Sum`).
pub fn named(func: &str) -> Option<VecOp> {
    let bare = func
        .strip_prefix("ROOT::VecOps::")
        .or_else(|| func.strip_prefix("VecOps::"))
        .unwrap_or(func);
    Some(match bare {
        "InvariantMass" => VecOp::InvariantMass,
        "InvariantMasses" => VecOp::InvariantMasses,
        "DeltaR" => VecOp::DeltaR,
        "DeltaPhi" => VecOp::DeltaPhi,
        "Sum" => VecOp::Sum,
        "Max" => VecOp::Max,
        "Min" => VecOp::Min,
        "ArgMax" => VecOp::ArgMax,
        "ArgMin" => VecOp::ArgMin,
        "Any" => VecOp::Any,
        "All" => VecOp::All,
        "Take" => VecOp::TakeIndices,
        "Sort" => VecOp::Sort,
        "Reverse" => VecOp::Reverse,
        "Where" => VecOp::Where,
        "PairFirst" => VecOp::PairFirst,
        "PairSecond" => VecOp::PairSecond,
        _ => return None,
    })
}

impl VecOp {
    fn arity(self) -> usize {
        match self {
            VecOp::InvariantMasses => 8,
            VecOp::InvariantMass | VecOp::DeltaR => 4,
            VecOp::Where => 3,
            VecOp::DeltaPhi | VecOp::TakeIndices | VecOp::TakeCount => 2,
            _ => 1,
        }
    }
}

/// Type checks a call of `op` (named `func` in the cut) into a node and its shape.
pub(super) fn check(
    checker: &mut Checker<'_, '_>,
    op: VecOp,
    (func, args): (&str, &[Expr]),
    at: usize,
) -> Result<Checked, AnalysisError> {
    if matches!(op, VecOp::Max | VecOp::Min) && args.len() == 2 {
        let lower = if op == VecOp::Max { "max" } else { "min" };
        return Err(AnalysisError::invalid(
            at,
            &format!("1 argument for {func}"),
            format!(
                "at column {at}: {func} takes one collection (its {} element); the {} of two values is {lower}(a, b)",
                if op == VecOp::Max {
                    "greatest"
                } else {
                    "smallest"
                },
                if op == VecOp::Max {
                    "larger"
                } else {
                    "smaller"
                },
            ),
        ));
    }
    arity(func, args, op.arity(), at)?;
    let mut nodes = Vec::with_capacity(args.len());
    let mut shapes = Vec::with_capacity(args.len());
    for a in args {
        let (node, shape) = checker.check(a)?;
        nodes.push(node);
        shapes.push(shape);
    }
    let collection = |k: usize| -> Result<&Collection, AnalysisError> {
        match &shapes[k] {
            Shape::Jagged(c) => Ok(c),
            Shape::Scalar => Err(not_a_collection(func, k, &args[k])),
        }
    };
    let (op, shape) = match op {
        VecOp::InvariantMasses | VecOp::DeltaR | VecOp::DeltaPhi | VecOp::Where => {
            (op, combine_all(&shapes, at)?)
        }
        VecOp::InvariantMass => match combine_all(&shapes, at)? {
            Shape::Jagged(_) => (op, Shape::Scalar),
            Shape::Scalar => return Err(not_a_collection(func, 0, &args[0])),
        },
        VecOp::Sum
        | VecOp::Max
        | VecOp::Min
        | VecOp::ArgMax
        | VecOp::ArgMin
        | VecOp::Any
        | VecOp::All => {
            collection(0)?;
            (op, Shape::Scalar)
        }
        VecOp::Sort | VecOp::Reverse => (op, Shape::Jagged(collection(0)?.clone())),
        VecOp::TakeIndices | VecOp::TakeCount => {
            let x = collection(0)?;
            match &shapes[1] {
                Shape::Jagged(indices) => (VecOp::TakeIndices, Shape::Jagged(indices.clone())),
                // Lengths known only entry by entry: checked where used.
                Shape::Scalar => (
                    VecOp::TakeCount,
                    Shape::Jagged(Collection {
                        key: format!("take:{}@{at}", x.key),
                        certain: false,
                        branch: format!("{func}({}, ...)", x.branch),
                        pairs: false,
                    }),
                ),
            }
        }
        VecOp::PairFirst | VecOp::PairSecond => {
            let x = collection(0)?;
            if x.pairs {
                return Err(AnalysisError::invalid(
                    at,
                    "a collection of elements",
                    format!(
                        "at column {at}: {func} takes a collection of elements; '{}' is already pairs (pairs of pairs are not made)",
                        x.branch
                    ),
                ));
            }
            (op, Shape::Jagged(pairs::family(x)))
        }
        VecOp::At(_) | VecOp::AtEach => unreachable!("not named in cuts"),
    };
    Ok((Node::Vec(op, nodes), shape))
}

/// The error for `x[...]` where `x` (named by `subject`, which ends in its
/// verb) holds one value per entry.
pub(super) fn not_indexable(at: usize, subject: &str) -> AnalysisError {
    AnalysisError::invalid(
        at,
        "a collection before '['",
        format!("at column {at}: {subject} one value per entry and cannot be indexed"),
    )
}

/// `name[index]` where `name` is a define: element `index` of each entry of
/// the collection it computes.
pub(super) fn element(
    node: Node,
    shape: Shape,
    (name, index): (&str, usize),
    at: usize,
) -> Result<Checked, AnalysisError> {
    if shape == Shape::Scalar {
        return Err(not_indexable(at, &format!("the define '{name}' has")));
    }
    Ok((Node::Vec(VecOp::At(index), vec![node]), Shape::Scalar))
}

/// `name[index]` with an index computed per entry: `name` must be a
/// collection and `index` one value per entry.
pub(super) fn element_by(
    (collection, shape): Checked,
    (index, index_shape): Checked,
    at: usize,
) -> Result<Checked, AnalysisError> {
    if shape == Shape::Scalar {
        return Err(not_indexable(at, "the name before '[' has"));
    }
    if index_shape != Shape::Scalar {
        return Err(AnalysisError::invalid(
            at,
            "one index per entry",
            format!(
                "at column {at}: the index in '[...]' is a collection; an index is one value per entry \
(e.g. ArgMax(Muon_pt)), and Take(x, indices) takes the elements at a collection of indices"
            ),
        ));
    }
    Ok((
        Node::Vec(VecOp::AtEach, vec![collection, index]),
        Shape::Scalar,
    ))
}

fn combine_all(shapes: &[Shape], at: usize) -> Result<Shape, AnalysisError> {
    let mut shape = Shape::Scalar;
    for s in shapes {
        shape = combine(&shape, s, at)?;
    }
    Ok(shape)
}

fn not_a_collection(func: &str, k: usize, arg: &Expr) -> AnalysisError {
    let at = first_column(arg);
    AnalysisError::invalid(
        at,
        "a collection (one value per element of each entry)",
        format!(
            "{func} takes a collection as argument {}, but the one at column {at} has one value per entry; \
give a jagged branch (e.g. Jet_pt) or an expression of one",
            k + 1
        ),
    )
}

/// The error for pairs and elements paired element by element.
pub(super) fn pairs_and_elements(x: &Collection, y: &Collection, at: usize) -> AnalysisError {
    let (pairs, elements) = if x.pairs { (x, y) } else { (y, x) };
    AnalysisError::invalid(
        at,
        "pairs with pairs, or elements with elements",
        format!(
            "'{}' has one value per pair and '{}' one per element: n elements make n(n-1)/2 pairs, so they \
cannot be combined element by element; take PairFirst/PairSecond of both, or reduce one to a value per entry \
(Sum, Max, Any, ...)",
            pairs.branch, elements.branch
        ),
    )
}

/// Runs `op` over its arguments' values for a window.
pub(super) fn apply(op: VecOp, args: Vec<Val>, inputs: &Inputs<'_>) -> Result<Val, AnalysisError> {
    let mut args = args.into_iter();
    let mut next = || args.next().expect("arguments counted by the plan");
    let n = inputs.entries;
    Ok(match op {
        VecOp::InvariantMasses => {
            kinematics::invariant_masses(align((0..8).map(|_| next()).collect(), inputs)?)
        }
        VecOp::InvariantMass => {
            kinematics::invariant_mass(align((0..4).map(|_| next()).collect(), inputs)?, n)
        }
        VecOp::DeltaR => align((0..4).map(|_| next()).collect(), inputs)?
            .map(|[e1, e2, p1, p2]| kinematics::delta_r(e1, e2, p1, p2)),
        VecOp::DeltaPhi => {
            align(vec![next(), next()], inputs)?.map(|[p1, p2]| kinematics::delta_phi(p1, p2))
        }
        VecOp::Where => align(vec![next(), next(), next()], inputs)?
            .map(|[c, a, b]| if truth(c) { a } else { b }),
        VecOp::Sum => reduce(collection(next(), n), |x| Some(x.iter().sum())),
        VecOp::Max => reduce(collection(next(), n), |x| {
            first_extreme(x, |best, y| best < y).map(|i| x[i])
        }),
        VecOp::Min => reduce(collection(next(), n), |x| {
            first_extreme(x, |best, y| y < best).map(|i| x[i])
        }),
        VecOp::ArgMax => reduce(collection(next(), n), |x| {
            Some(first_extreme(x, |best, y| best < y).unwrap_or(0) as f64)
        }),
        VecOp::ArgMin => reduce(collection(next(), n), |x| {
            Some(first_extreme(x, |best, y| y < best).unwrap_or(0) as f64)
        }),
        VecOp::Any => reduce(collection(next(), n), |x| {
            Some(f64::from(u8::from(x.iter().any(|&v| truth(v)))))
        }),
        VecOp::All => reduce(collection(next(), n), |x| {
            Some(f64::from(u8::from(x.iter().all(|&v| truth(v)))))
        }),
        VecOp::Sort => rearranged(collection(next(), n), |x| x.sort_by(f64::total_cmp)),
        VecOp::Reverse => rearranged(collection(next(), n), |x| x.reverse()),
        VecOp::TakeIndices => {
            let x = collection(next(), n);
            take_indices(x, collection(next(), n), inputs)?
        }
        VecOp::TakeCount => {
            let x = collection(next(), n);
            take_count(x, per_entry(next(), n))
        }
        VecOp::PairFirst => pairs::pairs(collection(next(), n), false, inputs)?,
        VecOp::PairSecond => pairs::pairs(collection(next(), n), true, inputs)?,
        VecOp::At(i) => reduce(collection(next(), n), |x| x.get(i).copied()),
        VecOp::AtEach => {
            let x = collection(next(), n);
            element_at_each(x, per_entry(next(), n))
        }
    })
}

/// Each entry's element at the entry's index: none (the entry is not
/// filled, and fails a cut) where the index is missing, not a whole number, or
/// outside the entry's collection.
fn element_at_each(x: Coll, (index, valid): (Vec<f64>, Option<Vec<bool>>)) -> Val {
    let entries = x.offsets.len() - 1;
    let mut v = vec![0.0; entries];
    let mut found = vec![false; entries];
    for e in 0..entries {
        let i = index[e];
        let usable = valid.as_ref().is_none_or(|m| m[e]) && i >= 0.0 && i.fract() == 0.0;
        let range = x.entry(e);
        if usable && (i as usize) < range.len() {
            v[e] = x.v[range.start + i as usize];
            found[e] = true;
        }
    }
    Val::Scalar {
        v,
        valid: and_masks(x.valid, Some(found)),
    }
}

/// The index of the first greatest (or smallest) element as `std::max_element`
/// finds it: a later element replaces the best only when `better(best, it)`
/// (so NaN is handled as VecOps handles it). None for no element.
fn first_extreme(x: &[f64], better: impl Fn(f64, f64) -> bool) -> Option<usize> {
    let mut best = 0;
    for (i, &y) in x.iter().enumerate().skip(1) {
        if better(x[best], y) {
            best = i;
        }
    }
    (!x.is_empty()).then_some(best)
}

/// A window's collection: the values, where each entry's start (relative,
/// from 0), which entries have none at all, and a name for messages.
pub(super) struct Coll {
    pub v: Vec<f64>,
    pub offsets: Arc<Vec<usize>>,
    pub valid: Option<Vec<bool>>,
    pub name: Arc<str>,
}

impl Coll {
    fn entry(&self, e: usize) -> std::ops::Range<usize> {
        self.offsets[e]..self.offsets[e + 1]
    }

    fn into_val(self) -> Val {
        Val::Jagged {
            v: self.v,
            offsets: self.offsets,
            valid: self.valid,
            name: self.name,
        }
    }
}

/// A value as a collection: a collection as it is, one value per entry as
/// one element each (the plan lets only collections through; this keeps an
/// unexpected shape from panicking).
pub(super) fn collection(v: Val, entries: usize) -> Coll {
    let one_each = || Arc::new((0..=entries).collect::<Vec<_>>());
    match v {
        Val::Jagged {
            v,
            offsets,
            valid,
            name,
        } => Coll {
            v,
            offsets,
            valid,
            name,
        },
        Val::Scalar { v, valid } => Coll {
            v,
            offsets: one_each(),
            valid,
            name: "a value".into(),
        },
        Val::Const(c) => Coll {
            v: vec![c; entries],
            offsets: one_each(),
            valid: None,
            name: "a constant".into(),
        },
    }
}

/// A value per entry with its validity (a constant repeated).
fn per_entry(v: Val, entries: usize) -> (Vec<f64>, Option<Vec<bool>>) {
    match v {
        Val::Const(c) => (vec![c; entries], None),
        Val::Scalar { v, valid } => (v, valid),
        Val::Jagged { .. } => {
            let c = collection(v, entries);
            let mut valid = c.valid.clone().unwrap_or_else(|| vec![true; entries]);
            let firsts = (0..entries)
                .map(|e| {
                    let r = c.entry(e);
                    valid[e] &= !r.is_empty();
                    c.v.get(r.start).copied().unwrap_or(0.0)
                })
                .collect();
            (firsts, Some(valid))
        }
    }
}

/// One value per entry from each entry's elements: `f` of them, missing
/// where `f` gives none or the entry has no value.
fn reduce(c: Coll, f: impl Fn(&[f64]) -> Option<f64>) -> Val {
    let entries = c.offsets.len() - 1;
    let mut v = Vec::with_capacity(entries);
    let mut missing: Option<Vec<bool>> = None;
    for e in 0..entries {
        let got = f(&c.v[c.entry(e)]);
        v.push(got.unwrap_or(0.0));
        if got.is_none() {
            missing.get_or_insert_with(|| vec![true; entries])[e] = false;
        }
    }
    Val::Scalar {
        v,
        valid: and_masks(c.valid, missing),
    }
}

/// Each entry's elements rearranged in place by `f`.
fn rearranged(mut c: Coll, f: impl Fn(&mut [f64])) -> Val {
    let offsets = c.offsets.clone();
    for w in offsets.windows(2) {
        f(&mut c.v[w[0]..w[1]]);
    }
    c.into_val()
}

/// `Take(x, indices)`: for each entry, the elements of `x` at its indices
/// (whole numbers, truncated as C converts them); an index outside the entry's
/// elements (NanoAOD's -1 for "none") gives NaN, which no cut passes.
fn take_indices(x: Coll, indices: Coll, inputs: &Inputs<'_>) -> Result<Val, AnalysisError> {
    if x.offsets.len() != indices.offsets.len() {
        return Err(different_lengths(
            (&x.name, &x.offsets),
            (&indices.name, &indices.offsets),
            inputs,
        ));
    }
    let mut v = Vec::with_capacity(indices.v.len());
    for e in 0..x.offsets.len() - 1 {
        let elements = &x.v[x.entry(e)];
        v.extend(indices.v[indices.entry(e)].iter().map(|&i| {
            if i >= 0.0 && i < elements.len() as f64 {
                elements[i as usize]
            } else {
                f64::NAN
            }
        }));
    }
    Ok(Val::Jagged {
        v,
        offsets: indices.offsets,
        valid: and_masks(x.valid, indices.valid),
        name: x.name,
    })
}

/// `Take(x, n)`: the first `n` elements (the last `-n` for negative `n`,
/// truncated to a whole number). VecOps throws when an entry has fewer than
/// `|n|`; here such an entry (or one with a NaN `n`) has no value.
fn take_count(x: Coll, (n, n_valid): (Vec<f64>, Option<Vec<bool>>)) -> Val {
    let entries = x.offsets.len() - 1;
    let mut valid = and_masks(x.valid.clone(), n_valid).unwrap_or_else(|| vec![true; entries]);
    let mut v = Vec::new();
    let mut offsets = Vec::with_capacity(entries + 1);
    offsets.push(0);
    for e in 0..entries {
        let elements = &x.v[x.entry(e)];
        let k = n[e].trunc();
        if valid[e] && k.abs() <= elements.len() as f64 {
            let k = k.abs() as usize;
            let taken = if n[e] < 0.0 {
                &elements[elements.len() - k..]
            } else {
                &elements[..k]
            };
            v.extend_from_slice(taken);
        } else {
            valid[e] = false;
        }
        offsets.push(v.len());
    }
    let all_valid = valid.iter().all(|&ok| ok);
    Val::Jagged {
        v,
        offsets: Arc::new(offsets),
        valid: (!all_valid).then_some(valid),
        name: x.name,
    }
}

/// Arguments of an element-wise function brought to one shape: constants
/// kept as they are, values per entry spread over a collection's elements;
/// collections must have the same lengths.
pub(super) struct Aligned {
    lanes: Vec<Lane>,
    frame: Frame,
    valid: Option<Vec<bool>>,
}

enum Lane {
    Const(f64),
    Each(Vec<f64>),
}

impl Lane {
    #[inline(always)]
    fn at(&self, i: usize) -> f64 {
        match self {
            Lane::Const(c) => *c,
            Lane::Each(v) => v[i],
        }
    }
}

/// What the aligned values are: one value, one per entry, or one per element.
pub(super) enum Frame {
    Const,
    Entries(usize),
    Elements {
        offsets: Arc<Vec<usize>>,
        name: Arc<str>,
    },
}

pub(super) fn align(args: Vec<Val>, inputs: &Inputs<'_>) -> Result<Aligned, AnalysisError> {
    let mut frame = Frame::Const;
    for a in &args {
        match (a, &frame) {
            (
                Val::Jagged { offsets, name, .. },
                Frame::Elements {
                    offsets: o,
                    name: n,
                },
            ) if !Arc::ptr_eq(offsets, o) && offsets != o => {
                return Err(different_lengths((n, o), (name, offsets), inputs));
            }
            (Val::Jagged { .. }, Frame::Elements { .. }) => {}
            (Val::Jagged { offsets, name, .. }, _) => {
                frame = Frame::Elements {
                    offsets: offsets.clone(),
                    name: name.clone(),
                }
            }
            (Val::Scalar { .. }, Frame::Const) => frame = Frame::Entries(inputs.entries),
            _ => {}
        }
    }
    let mut valid = None;
    let lanes = args
        .into_iter()
        .map(|a| match a {
            Val::Const(c) => Lane::Const(c),
            Val::Scalar { v, valid: m } => {
                valid = and_masks(valid.take(), m);
                match &frame {
                    Frame::Elements { offsets, .. } => Lane::Each(spread(&v, offsets)),
                    _ => Lane::Each(v),
                }
            }
            Val::Jagged { v, valid: m, .. } => {
                valid = and_masks(valid.take(), m);
                Lane::Each(v)
            }
        })
        .collect();
    Ok(Aligned {
        lanes,
        frame,
        valid,
    })
}

impl Aligned {
    /// Values per row of the frame.
    fn len(&self) -> usize {
        match &self.frame {
            Frame::Const => 1,
            Frame::Entries(n) => *n,
            Frame::Elements { offsets, .. } => offsets.last().copied().unwrap_or(0),
        }
    }

    /// `f` of the `N` arguments' values, row by row.
    pub(super) fn map<const N: usize>(self, f: impl Fn([f64; N]) -> f64) -> Val {
        let lanes: [&Lane; N] = std::array::from_fn(|k| &self.lanes[k]);
        let v: Vec<f64> = (0..self.len())
            .map(|i| f(std::array::from_fn(|k| lanes[k].at(i))))
            .collect();
        self.with_values(v)
    }

    /// For each entry, `f` of its rows' values of the `N` arguments (`f`
    /// gets the rows as a range and a way to read argument `k` at a row).
    pub(super) fn reduce_entries<const N: usize>(
        self,
        entries: usize,
        f: impl Fn(std::ops::Range<usize>, &dyn Fn(usize, usize) -> f64) -> f64,
    ) -> Val {
        let lanes: [&Lane; N] = std::array::from_fn(|k| &self.lanes[k]);
        let read = |k: usize, i: usize| lanes[k].at(i);
        let v = (0..entries)
            .map(|e| {
                let rows = match &self.frame {
                    Frame::Elements { offsets, .. } => offsets[e]..offsets[e + 1],
                    Frame::Entries(_) => e..e + 1,
                    Frame::Const => 0..1,
                };
                f(rows, &read)
            })
            .collect();
        Val::Scalar {
            v,
            valid: self.valid,
        }
    }

    fn with_values(self, v: Vec<f64>) -> Val {
        match self.frame {
            Frame::Const => Val::Const(v[0]),
            Frame::Entries(_) => Val::Scalar {
                v,
                valid: self.valid,
            },
            Frame::Elements { offsets, name } => Val::Jagged {
                v,
                offsets,
                valid: self.valid,
                name,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(entries: usize) -> Inputs<'static> {
        Inputs {
            entries,
            first_entry: 0,
            slots: &[],
            map: &[],
        }
    }

    fn jagged(v: Vec<f64>, offsets: Vec<usize>) -> Val {
        Val::Jagged {
            v,
            offsets: Arc::new(offsets),
            valid: None,
            name: "x".into(),
        }
    }

    fn scalars(v: &Val) -> (Vec<f64>, Option<Vec<bool>>) {
        match v {
            Val::Scalar { v, valid } => (v.clone(), valid.clone()),
            other => panic!("{other:?}"),
        }
    }

    /// Entries [3, 1, 3, 2], [], [NaN, 1], worked by hand as VecOps (and
    /// std::max_element) would: the first greatest wins; an empty entry has
    /// no Max, an ArgMax of 0, a Sum of 0, Any false and All true.
    #[test]
    fn reductions_follow_vecops_on_ties_nan_and_empty_entries() {
        let x = || jagged(vec![3.0, 1.0, 3.0, 2.0, f64::NAN, 1.0], vec![0, 4, 4, 6]);
        let run = |op| scalars(&apply(op, vec![x()], &inputs(3)).unwrap());
        assert_eq!(run(VecOp::ArgMax).0, [0.0, 0.0, 0.0]);
        assert_eq!(run(VecOp::ArgMin).0, [1.0, 0.0, 0.0]);
        let (max, valid) = run(VecOp::Max);
        assert_eq!((max[0], valid), (3.0, Some(vec![true, false, true])));
        assert!(
            max[2].is_nan(),
            "the NaN first stays the greatest, as in VecOps"
        );
        assert_eq!(run(VecOp::Sum).0[..2], [9.0, 0.0]);
        assert_eq!(run(VecOp::Any).0, [1.0, 0.0, 1.0]);
        assert_eq!(run(VecOp::All).0, [1.0, 1.0, 1.0]);
    }

    #[test]
    fn take_sort_reverse_and_where_by_hand() {
        let x = || jagged(vec![5.0, 7.0, 6.0, 9.0], vec![0, 3, 3, 4]);
        let Val::Jagged {
            v, offsets, valid, ..
        } = apply(VecOp::TakeCount, vec![x(), Val::Const(-2.0)], &inputs(3)).unwrap()
        else {
            panic!()
        };
        assert_eq!((v, offsets.to_vec()), (vec![7.0, 6.0], vec![0, 2, 2, 2]));
        assert_eq!(valid, Some(vec![true, false, false]));
        let indices = jagged(vec![2.0, -1.0, 0.0, 3.0], vec![0, 2, 2, 4]);
        let Val::Jagged { v, .. } =
            apply(VecOp::TakeIndices, vec![x(), indices], &inputs(3)).unwrap()
        else {
            panic!()
        };
        assert_eq!(v[0], 6.0);
        assert!(v[1].is_nan() && v[3].is_nan(), "outside the entry: NaN");
        assert_eq!(v[2], 9.0);
        let Val::Jagged { v, .. } = apply(VecOp::Sort, vec![x()], &inputs(3)).unwrap() else {
            panic!()
        };
        assert_eq!(v, [5.0, 6.0, 7.0, 9.0]);
        let Val::Jagged { v, .. } = apply(VecOp::Reverse, vec![x()], &inputs(3)).unwrap() else {
            panic!()
        };
        assert_eq!(v, [6.0, 7.0, 5.0, 9.0]);
        // A per-entry value broadcast over the elements, a constant as it is.
        let per_entry = Val::Scalar {
            v: vec![1.0, 0.0, 0.0],
            valid: None,
        };
        let Val::Jagged { v, .. } = apply(
            VecOp::Where,
            vec![per_entry, x(), Val::Const(-1.0)],
            &inputs(3),
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(v, [5.0, 7.0, 6.0, -1.0]);
        // Collections of different lengths in one entry are refused.
        let other = jagged(vec![1.0, 2.0, 3.0, 4.0], vec![0, 2, 3, 4]);
        let e = apply(VecOp::DeltaPhi, vec![x(), other], &inputs(3)).unwrap_err();
        assert!(
            e.to_string().contains("entry 0 has different lengths"),
            "{e}"
        );
    }
}
