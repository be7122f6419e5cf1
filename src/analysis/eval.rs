//! Columnar evaluation of a plan over one window of entries. Everything is
//! computed in double precision, as `TTree::Draw` does. A value is a constant,
//! one number per entry, or one number per element with the entries' offsets;
//! entries where a value is missing (`x[3]` of an entry with three elements)
//! are marked invalid and never pass.

use std::ops::Range;
use std::sync::Arc;

use super::AnalysisError;
use super::plan::{Aggregate, Fn1, Node, mixed_collections};
use super::scan::{map_f64, to_f64};
use super::syntax::{BinOp, UnOp};
use super::vecops;
use crate::formats::root::Values;

/// Runs `$body` with `$g` bound to the operator `$op` as a closure of a
/// constant operator, one arm per operator: each arm's loops inline `apply`
/// and vectorise, where a per-element `match` on the operator would not.
macro_rules! with_operator {
    ($op:expr, $g:ident => $body:expr) => {
        with_operator!(@ $op, $g => $body;
            Add, Sub, Mul, Div, Mod, Lt, Le, Gt, Ge, Eq, Ne, And, Or)
    };
    (@ $op:expr, $g:ident => $body:expr; $($o:ident),*) => {
        match $op {
            $(BinOp::$o => {
                let $g = |a: f64, b: f64| apply(BinOp::$o, a, b);
                $body
            })*
        }
    };
}

/// `with_operator` for the functions of one number.
macro_rules! with_function {
    ($f:expr, $g:ident => $body:expr) => {
        with_function!(@ $f, $g => $body;
            Abs, Sqrt, Exp, Ln, Log10, Log2, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh,
            Tanh, Floor, Ceil, Square)
    };
    (@ $f:expr, $g:ident => $body:expr; $($v:ident),*) => {
        match $f {
            $(Fn1::$v => {
                let $g = |x: f64| Fn1::$v.call(x);
                $body
            })*
        }
    };
}

/// One column over a window: the decoded basket's values and the window's
/// elements of them, and for collections the offsets of each entry's elements
/// (`entries + 1` of them, relative to `elements.start`).
#[derive(Debug, Clone)]
pub struct SlotData<'a> {
    pub values: &'a Values,
    pub elements: Range<usize>,
    pub offsets: Option<Arc<Vec<usize>>>,
    /// The column's path, for messages.
    pub name: Arc<str>,
}

impl SlotData<'_> {
    /// `f` of each of the window's values, shaped as the column: the one copy
    /// of a column the evaluator makes, fused with the operation on it.
    #[inline(always)]
    fn mapped(&self, f: impl Fn(f64) -> f64) -> Val {
        let v = map_f64(self.values, self.elements.clone(), f);
        match &self.offsets {
            None => Val::Scalar { v, valid: None },
            Some(offsets) => Val::Jagged {
                v,
                offsets: offsets.clone(),
                valid: None,
                name: self.name.clone(),
            },
        }
    }
}

/// The columns of a plan for a window of `entries` entries, by slot.
pub struct Inputs<'a> {
    pub entries: usize,
    /// The first entry of the window in the tree (for messages).
    pub first_entry: u64,
    pub slots: &'a [SlotData<'a>],
    /// A plan's slot -> its index in `slots` (plans evaluated together share
    /// one window of columns).
    pub map: &'a [usize],
}

impl Inputs<'_> {
    fn slot(&self, slot: usize) -> &SlotData<'_> {
        &self.slots[self.map[slot]]
    }
}

#[derive(Debug, Clone)]
pub enum Val {
    Const(f64),
    Scalar {
        v: Vec<f64>,
        valid: Option<Vec<bool>>,
    },
    Jagged {
        v: Vec<f64>,
        offsets: Arc<Vec<usize>>,
        /// Entries whose elements all count as missing.
        valid: Option<Vec<bool>>,
        name: Arc<str>,
    },
}

pub(super) fn and_masks(a: Option<Vec<bool>>, b: Option<Vec<bool>>) -> Option<Vec<bool>> {
    match (a, b) {
        (None, m) | (m, None) => m,
        (Some(mut a), Some(b)) => {
            a.iter_mut().zip(b).for_each(|(x, y)| *x &= y);
            Some(a)
        }
    }
}

/// A per-entry value repeated for each element of the entries (`offsets`).
pub(super) fn spread(v: &[f64], offsets: &[usize]) -> Vec<f64> {
    let mut out = Vec::with_capacity(offsets.last().copied().unwrap_or(0));
    for (x, w) in v.iter().zip(offsets.windows(2)) {
        out.extend(std::iter::repeat_n(*x, w[1] - w[0]));
    }
    out
}

pub fn truth(x: f64) -> bool {
    x != 0.0
}

#[inline(always)]
pub fn apply(op: BinOp, a: f64, b: f64) -> f64 {
    let bool_of = |c: bool| if c { 1.0 } else { 0.0 };
    match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div => a / b,
        BinOp::Mod => remainder(a, b),
        BinOp::Lt => bool_of(a < b),
        BinOp::Le => bool_of(a <= b),
        BinOp::Gt => bool_of(a > b),
        BinOp::Ge => bool_of(a >= b),
        BinOp::Eq => bool_of(a == b),
        BinOp::Ne => bool_of(a != b),
        // `&` and `|`: both sides are computed anyway, and a branch per
        // element would be mispredicted on real data.
        BinOp::And => bool_of(truth(a) & truth(b)),
        BinOp::Or => bool_of(truth(a) | truth(b)),
    }
}

/// `%` as TTreeFormula computes it: C's remainder of the two operands truncated to
/// 64-bit integers (so `7.9 % 2` is 1, and the sign follows the dividend). Where C is
/// undefined (and ROOT's process dies of SIGFPE) the answer is defined instead: a zero
/// divisor, or an operand that is NaN or infinite, gives NaN, which no comparison passes;
/// `i64::MIN % -1` is 0, the exact remainder. Operands beyond the 64-bit range saturate.
#[inline(always)]
pub(super) fn remainder(a: f64, b: f64) -> f64 {
    if !(a.is_finite() && b.is_finite()) {
        return f64::NAN;
    }
    let (a, b) = (a as i64, b as i64);
    match a.checked_rem(b) {
        Some(r) => r as f64,
        None if b == 0 => f64::NAN,
        None => 0.0, // i64::MIN % -1: the only other overflow
    }
}

/// Evaluates a plan's tree over one window.
pub fn evaluate(node: &Node, inputs: &Inputs<'_>) -> Result<Val, AnalysisError> {
    Ok(match node {
        Node::Const(c) => Val::Const(*c),
        Node::Column(slot) => inputs.slot(*slot).mapped(|x| x),
        Node::Index { slot, index } => index_of(inputs.slot(*slot), *index, inputs.entries),
        Node::Unary(op, inner) => {
            let f = match op {
                UnOp::Neg => |x: f64| -x,
                UnOp::Not => |x: f64| if truth(x) { 0.0 } else { 1.0 },
            };
            map(evaluate(inner, inputs)?, f)
        }
        // A function or an operator with a constant applied to a column is
        // computed as the column is converted: one pass, no intermediate array.
        Node::Func1(f, _, inner) => match &**inner {
            Node::Column(slot) => {
                let d = inputs.slot(*slot);
                with_function!(*f, g => d.mapped(g))
            }
            _ => {
                let v = evaluate(inner, inputs)?;
                with_function!(*f, g => map(v, g))
            }
        },
        Node::Binary(op, l, r) => match (&**l, &**r) {
            (Node::Column(slot), Node::Const(c)) => {
                let (d, c) = (inputs.slot(*slot), *c);
                with_operator!(*op, g => d.mapped(move |x| g(x, c)))
            }
            (Node::Const(c), Node::Column(slot)) => {
                let (d, c) = (inputs.slot(*slot), *c);
                with_operator!(*op, g => d.mapped(move |x| g(c, x)))
            }
            _ => binary(*op, evaluate(l, inputs)?, evaluate(r, inputs)?, inputs)?,
        },
        Node::Func2(f, _, a, b) => zip(evaluate(a, inputs)?, evaluate(b, inputs)?, inputs, *f)?,
        Node::Alt(primary, alternative) => alt(
            evaluate(primary, inputs)?,
            evaluate(alternative, inputs)?,
            inputs,
        )?,
        Node::Aggregate(kind, value, condition) => {
            let value = evaluate(value, inputs)?;
            let condition = condition
                .as_ref()
                .map(|c| evaluate(c, inputs))
                .transpose()?;
            aggregate(*kind, value, condition, inputs)?
        }
        Node::Vec(op, args) => {
            let values = args
                .iter()
                .map(|a| evaluate(a, inputs))
                .collect::<Result<Vec<_>, _>>()?;
            vecops::apply(*op, values, inputs)?
        }
    })
}

/// `zip` with the operator chosen once per window rather than per element.
fn binary(op: BinOp, a: Val, b: Val, inputs: &Inputs<'_>) -> Result<Val, AnalysisError> {
    with_operator!(op, g => zip(a, b, inputs, g))
}

fn index_of(d: &SlotData<'_>, index: usize, entries: usize) -> Val {
    let offsets = d.offsets.as_ref().expect("indexed columns are collections");
    let values = to_f64(d.values, d.elements.clone());
    let mut v = vec![0.0; entries];
    let mut valid = vec![false; entries];
    for (e, w) in offsets.windows(2).enumerate() {
        if w[0] + index < w[1] {
            v[e] = values[w[0] + index];
            valid[e] = true;
        }
    }
    Val::Scalar {
        v,
        valid: Some(valid),
    }
}

fn map(v: Val, f: impl Fn(f64) -> f64) -> Val {
    match v {
        Val::Const(c) => Val::Const(f(c)),
        Val::Scalar { mut v, valid } => {
            v.iter_mut().for_each(|x| *x = f(*x));
            Val::Scalar { v, valid }
        }
        Val::Jagged {
            mut v,
            offsets,
            valid,
            name,
        } => {
            v.iter_mut().for_each(|x| *x = f(*x));
            Val::Jagged {
                v,
                offsets,
                valid,
                name,
            }
        }
    }
}

/// Two values brought to one shape: constants and per-entry values spread over
/// a collection's elements; two collections must have the same lengths.
pub fn zip(
    a: Val,
    b: Val,
    inputs: &Inputs<'_>,
    f: impl Fn(f64, f64) -> f64,
) -> Result<Val, AnalysisError> {
    Ok(match (a, b) {
        (Val::Const(x), Val::Const(y)) => Val::Const(f(x, y)),
        (Val::Const(x), Val::Scalar { mut v, valid }) => {
            v.iter_mut().for_each(|y| *y = f(x, *y));
            Val::Scalar { v, valid }
        }
        (Val::Scalar { mut v, valid }, Val::Const(y)) => {
            v.iter_mut().for_each(|x| *x = f(*x, y));
            Val::Scalar { v, valid }
        }
        (
            Val::Const(x),
            Val::Jagged {
                mut v,
                offsets,
                valid,
                name,
            },
        ) => {
            v.iter_mut().for_each(|y| *y = f(x, *y));
            Val::Jagged {
                v,
                offsets,
                valid,
                name,
            }
        }
        (
            Val::Jagged {
                mut v,
                offsets,
                valid,
                name,
            },
            Val::Const(y),
        ) => {
            v.iter_mut().for_each(|x| *x = f(*x, y));
            Val::Jagged {
                v,
                offsets,
                valid,
                name,
            }
        }
        (Val::Scalar { mut v, valid }, Val::Scalar { v: w, valid: wv }) => {
            v.iter_mut().zip(&w).for_each(|(x, y)| *x = f(*x, *y));
            Val::Scalar {
                v,
                valid: and_masks(valid, wv),
            }
        }
        (
            Val::Scalar { v: s, valid: sv },
            Val::Jagged {
                mut v,
                offsets,
                valid,
                name,
            },
        ) => {
            let s = spread(&s, &offsets);
            v.iter_mut().zip(&s).for_each(|(y, x)| *y = f(*x, *y));
            Val::Jagged {
                v,
                offsets,
                valid: and_masks(valid, sv),
                name,
            }
        }
        (
            Val::Jagged {
                mut v,
                offsets,
                valid,
                name,
            },
            Val::Scalar { v: s, valid: sv },
        ) => {
            let s = spread(&s, &offsets);
            v.iter_mut().zip(&s).for_each(|(x, y)| *x = f(*x, *y));
            Val::Jagged {
                v,
                offsets,
                valid: and_masks(valid, sv),
                name,
            }
        }
        (
            Val::Jagged {
                mut v,
                offsets,
                valid,
                name,
            },
            Val::Jagged {
                v: w,
                offsets: wo,
                valid: wv,
                name: wname,
            },
        ) => {
            if !Arc::ptr_eq(&offsets, &wo) && offsets != wo {
                return Err(different_lengths((&name, &offsets), (&wname, &wo), inputs));
            }
            v.iter_mut().zip(&w).for_each(|(x, y)| *x = f(*x, *y));
            Val::Jagged {
                v,
                offsets,
                valid: and_masks(valid, wv),
                name,
            }
        }
    })
}

/// The error for two collections found to differ in length in an entry
/// (vectors, or lengths computed entry by entry), naming the first such entry.
pub(super) fn different_lengths(
    (a, a_offsets): (&str, &[usize]),
    (b, b_offsets): (&str, &[usize]),
    inputs: &Inputs<'_>,
) -> AnalysisError {
    let entry = a_offsets
        .windows(2)
        .zip(b_offsets.windows(2))
        .position(|(x, y)| x[1] - x[0] != y[1] - y[0])
        .unwrap_or(0);
    let AnalysisError::InvalidSelection {
        column,
        expected,
        message,
    } = mixed_collections(a, b, 0)
    else {
        unreachable!("an invalid selection")
    };
    AnalysisError::InvalidSelection {
        column,
        expected,
        message: format!(
            "{message} (entry {} has different lengths)",
            inputs.first_entry + entry as u64
        ),
    }
}

fn alt(primary: Val, alternative: Val, inputs: &Inputs<'_>) -> Result<Val, AnalysisError> {
    match primary {
        Val::Scalar {
            mut v,
            valid: Some(valid),
        } => {
            let alternative = per_entry(&alternative, inputs.entries);
            for (e, ok) in valid.iter().enumerate() {
                if !ok {
                    v[e] = alternative.0[e];
                }
            }
            Ok(Val::Scalar {
                v,
                valid: alternative.1,
            })
        }
        other => Ok(other),
    }
}

/// A value as one number per entry (a constant repeated), with its validity.
fn per_entry(v: &Val, entries: usize) -> (Vec<f64>, Option<Vec<bool>>) {
    match v {
        Val::Const(c) => (vec![*c; entries], None),
        Val::Scalar { v, valid } => (v.clone(), valid.clone()),
        Val::Jagged {
            v, offsets, valid, ..
        } => {
            // A collection where one value per entry is wanted: its first element.
            let mut out = vec![0.0; entries];
            let mut ok = valid.clone().unwrap_or_else(|| vec![true; entries]);
            for (e, w) in offsets.windows(2).enumerate() {
                if w[0] < w[1] {
                    out[e] = v[w[0]];
                } else {
                    ok[e] = false;
                }
            }
            (out, Some(ok))
        }
    }
}

fn aggregate(
    kind: Aggregate,
    value: Val,
    condition: Option<Val>,
    inputs: &Inputs<'_>,
) -> Result<Val, AnalysisError> {
    let n = inputs.entries;
    // The condition brought to the value's shape (element by element).
    let (value, keep) = match condition {
        None => (value, None),
        Some(c) => {
            let pair = zip(value.clone(), c, inputs, |_, c| c)?;
            let keep = match pair {
                Val::Const(c) => Keep::Const(truth(c)),
                Val::Scalar { v, .. } | Val::Jagged { v, .. } => {
                    Keep::Each(v.iter().map(|&c| truth(c)).collect())
                }
            };
            (value, Some(keep))
        }
    };
    let (v, offsets, valid): (Vec<f64>, Arc<Vec<usize>>, Option<Vec<bool>>) = match value {
        Val::Const(c) => (vec![c; n], Arc::new((0..=n).collect()), None),
        Val::Scalar { v, valid } => (v, Arc::new((0..=n).collect()), valid),
        Val::Jagged {
            v, offsets, valid, ..
        } => (v, offsets, valid),
    };
    let kept = |i: usize| match &keep {
        None => true,
        Some(Keep::Const(k)) => *k,
        Some(Keep::Each(k)) => k.get(i).copied().unwrap_or(false),
    };
    let mut out = vec![0.0; n];
    for (e, w) in offsets.windows(2).enumerate() {
        if valid.as_ref().is_some_and(|m| !m[e]) {
            continue; // a missing value contributes nothing
        }
        let elements = (w[0]..w[1]).filter(|&i| kept(i)).map(|i| v[i]);
        out[e] = match kind {
            Aggregate::Length => (w[1] - w[0]) as f64,
            Aggregate::Sum => elements.sum(),
            Aggregate::Min | Aggregate::MinIf => elements.reduce(f64::min).unwrap_or(0.0),
            Aggregate::Max | Aggregate::MaxIf => elements.reduce(f64::max).unwrap_or(0.0),
        };
    }
    Ok(Val::Scalar {
        v: out,
        valid: None,
    })
}

enum Keep {
    Const(bool),
    Each(Vec<bool>),
}

/// Which entries pass a cut: valid and, for a collection, any element true.
pub fn entry_mask(v: &Val, entries: usize) -> Vec<bool> {
    match v {
        Val::Const(c) => vec![truth(*c); entries],
        // Without branches: a cut passing at random would mispredict.
        Val::Scalar { v, valid: None } => v.iter().map(|&x| truth(x)).collect(),
        Val::Scalar { v, valid: Some(m) } => {
            v.iter().zip(m).map(|(&x, &ok)| truth(x) & ok).collect()
        }
        Val::Jagged {
            v, offsets, valid, ..
        } => offsets
            .windows(2)
            .enumerate()
            .map(|(e, w)| {
                valid.as_ref().is_none_or(|m| m[e]) && v[w[0]..w[1]].iter().any(|x| truth(*x))
            })
            .collect(),
    }
}

/// How many entries pass a cut (`entry_mask`'s trues, without the mask).
pub fn count_passing(v: &Val, entries: usize) -> u64 {
    match v {
        Val::Scalar { v, valid: None } => v.iter().map(|&x| u64::from(truth(x))).sum(),
        other => entry_mask(other, entries)
            .iter()
            .map(|&p| u64::from(p))
            .sum(),
    }
}
