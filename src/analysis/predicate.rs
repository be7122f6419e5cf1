//! The commonest cuts counted without the evaluator's arrays: comparisons of
//! per-entry columns with constants (`met > 50`, `2 <= nMuon`), joined by
//! `&&`, `||` and `!`. Each comparison runs in its column's own type over a
//! chunk of entries into a byte per entry on the stack, where the evaluator
//! would convert the column to doubles, write a double per entry for each
//! comparison and another for their `&&`, then read them all back.
//!
//! Only comparisons that give what the evaluator gives (`TTree::Draw`'s double
//! precision) take this path: a float column with a constant that is exactly
//! a float, a double column, and an integer column of at most 32 bits (exact
//! in a double) with a whole constant in its range. Anything else in the cut,
//! or a collection, leaves the cut to the evaluator.

use super::AnalysisError;
use super::eval::{Inputs, count_passing, entry_mask, evaluate};
use super::plan::Node;
use super::syntax::{BinOp, UnOp};
use crate::formats::root::Values;

/// Entries compared at a time: a few byte arrays of this size stay in the
/// first-level cache.
const CHUNK: usize = 512;

/// A cut made only of comparisons of columns with constants.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `column op constant` (a constant on the left is turned around).
    Compare {
        slot: usize,
        op: BinOp,
        constant: f64,
    },
    And(Box<Predicate>, Box<Predicate>),
    Or(Box<Predicate>, Box<Predicate>),
    Not(Box<Predicate>),
}

impl Predicate {
    /// The predicate a cut's tree is, if it is one.
    pub fn of(node: &Node) -> Option<Predicate> {
        let boxed = |n: &Node| Predicate::of(n).map(Box::new);
        match node {
            Node::Binary(BinOp::And, a, b) => Some(Predicate::And(boxed(a)?, boxed(b)?)),
            Node::Binary(BinOp::Or, a, b) => Some(Predicate::Or(boxed(a)?, boxed(b)?)),
            Node::Unary(UnOp::Not, a) => Some(Predicate::Not(boxed(a)?)),
            Node::Binary(op, a, b) => match (&**a, &**b) {
                (Node::Column(slot), Node::Const(c)) => compare(*slot, *op, *c),
                (Node::Const(c), Node::Column(slot)) => compare(*slot, turned(*op)?, *c),
                _ => None,
            },
            _ => None,
        }
    }

    /// How many of the window's entries pass, or None when a column of the
    /// window is a collection or a comparison is not exact in its type (the
    /// evaluator then counts).
    pub fn count(&self, inputs: &Inputs<'_>) -> Option<u64> {
        let mut passed = 0u64;
        self.chunks(inputs, |chunk| {
            passed += chunk.iter().map(|&b| u64::from(b)).sum::<u64>();
        })?;
        Some(passed)
    }

    /// Which of the window's entries pass (`count`'s entries, one by one).
    pub fn mask(&self, inputs: &Inputs<'_>) -> Option<Vec<bool>> {
        let mut mask = Vec::with_capacity(inputs.entries);
        self.chunks(inputs, |chunk| mask.extend(chunk.iter().map(|&b| b != 0)))?;
        Some(mask)
    }

    /// Hands `each` the window's entries a chunk at a time, 1 for those that
    /// pass and 0 for the others; None when the fast path does not apply.
    fn chunks(&self, inputs: &Inputs<'_>, mut each: impl FnMut(&[u8])) -> Option<()> {
        if !self.exact_in(inputs) {
            return None;
        }
        let mut start = 0;
        while start < inputs.entries {
            let n = CHUNK.min(inputs.entries - start);
            let mut out = [0u8; CHUNK];
            self.fill(inputs, start, &mut out[..n]);
            each(&out[..n]);
            start += n;
        }
        Some(())
    }

    fn exact_in(&self, inputs: &Inputs<'_>) -> bool {
        match self {
            Predicate::Compare { slot, constant, .. } => {
                let d = &inputs.slots[inputs.map[*slot]];
                d.offsets.is_none() && native_constant(d.values, *constant).is_some()
            }
            Predicate::And(a, b) | Predicate::Or(a, b) => a.exact_in(inputs) && b.exact_in(inputs),
            Predicate::Not(a) => a.exact_in(inputs),
        }
    }

    /// 1 or 0 for each entry of `out`, from entry `start` of the window.
    fn fill(&self, inputs: &Inputs<'_>, start: usize, out: &mut [u8]) {
        match self {
            Predicate::Compare { slot, op, constant } => {
                let d = &inputs.slots[inputs.map[*slot]];
                let at = d.elements.start + start;
                compare_values(d.values, at..at + out.len(), *op, *constant, out);
            }
            Predicate::And(a, b) | Predicate::Or(a, b) => {
                a.fill(inputs, start, out);
                let mut other = [0u8; CHUNK];
                let other = &mut other[..out.len()];
                b.fill(inputs, start, other);
                if matches!(self, Predicate::And(..)) {
                    out.iter_mut().zip(&*other).for_each(|(x, y)| *x &= y);
                } else {
                    out.iter_mut().zip(&*other).for_each(|(x, y)| *x |= y);
                }
            }
            Predicate::Not(a) => {
                a.fill(inputs, start, out);
                out.iter_mut().for_each(|x| *x ^= 1);
            }
        }
    }
}

/// How many of a window's entries pass `cut` (`predicate` being its
/// predicate form, if it has one): by the predicate where it applies, else
/// by the evaluator.
pub fn count_cut(
    predicate: Option<&Predicate>,
    cut: &Node,
    inputs: &Inputs<'_>,
) -> Result<u64, AnalysisError> {
    match predicate.and_then(|p| p.count(inputs)) {
        Some(passed) => Ok(passed),
        None => Ok(count_passing(&evaluate(cut, inputs)?, inputs.entries)),
    }
}

/// Which of a window's entries pass `cut`, as `count_cut` decides.
pub fn mask_cut(
    predicate: Option<&Predicate>,
    cut: &Node,
    inputs: &Inputs<'_>,
) -> Result<Vec<bool>, AnalysisError> {
    match predicate.and_then(|p| p.mask(inputs)) {
        Some(mask) => Ok(mask),
        None => Ok(entry_mask(&evaluate(cut, inputs)?, inputs.entries)),
    }
}

fn compare(slot: usize, op: BinOp, constant: f64) -> Option<Predicate> {
    BinOp::COMPARISONS
        .contains(&op)
        .then_some(Predicate::Compare { slot, op, constant })
}

/// `c op x` as `x op' c`.
fn turned(op: BinOp) -> Option<BinOp> {
    Some(match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        BinOp::Eq | BinOp::Ne => op,
        _ => return None,
    })
}

/// The constant in the column's own type, when comparing in that type gives
/// exactly what comparing the column's values as doubles gives.
fn native_constant(values: &Values, c: f64) -> Option<Native> {
    let whole = |lo: f64, hi: f64| c.fract() == 0.0 && (lo..=hi).contains(&c);
    match values {
        Values::F32(_) => (f64::from(c as f32) == c).then_some(Native::F32(c as f32)),
        Values::F64(_) => Some(Native::F64(c)),
        Values::I8(_) => whole(-128.0, 127.0).then_some(Native::Int(c as i64)),
        Values::U8(_) => whole(0.0, 255.0).then_some(Native::Int(c as i64)),
        Values::I16(_) => whole(-32_768.0, 32_767.0).then_some(Native::Int(c as i64)),
        Values::U16(_) => whole(0.0, 65_535.0).then_some(Native::Int(c as i64)),
        Values::I32(_) => whole(-2_147_483_648.0, 2_147_483_647.0).then_some(Native::Int(c as i64)),
        Values::U32(_) => whole(0.0, 4_294_967_295.0).then_some(Native::Int(c as i64)),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy)]
enum Native {
    F32(f32),
    F64(f64),
    Int(i64),
}

/// `values[range] op constant` into `out`, in the values' type (the
/// constant checked exact by `native_constant`).
fn compare_values(
    values: &Values,
    range: std::ops::Range<usize>,
    op: BinOp,
    c: f64,
    out: &mut [u8],
) {
    let Some(native) = native_constant(values, c) else {
        unreachable!("checked by exact_in")
    };
    match (values, native) {
        (Values::F32(v), Native::F32(c)) => compare_slice(&v[range], c, op, out),
        (Values::F64(v), Native::F64(c)) => compare_slice(&v[range], c, op, out),
        (Values::I8(v), Native::Int(c)) => compare_slice(&v[range], c as i8, op, out),
        (Values::U8(v), Native::Int(c)) => compare_slice(&v[range], c as u8, op, out),
        (Values::I16(v), Native::Int(c)) => compare_slice(&v[range], c as i16, op, out),
        (Values::U16(v), Native::Int(c)) => compare_slice(&v[range], c as u16, op, out),
        (Values::I32(v), Native::Int(c)) => compare_slice(&v[range], c as i32, op, out),
        (Values::U32(v), Native::Int(c)) => compare_slice(&v[range], c as u32, op, out),
        _ => unreachable!("native_constant matches the values' type"),
    }
}

/// One loop per operator, so that each vectorises.
#[inline(always)]
fn compare_slice<T: PartialOrd + Copy>(v: &[T], c: T, op: BinOp, out: &mut [u8]) {
    match op {
        BinOp::Lt => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(x < c)),
        BinOp::Le => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(x <= c)),
        BinOp::Gt => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(x > c)),
        BinOp::Ge => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(x >= c)),
        BinOp::Eq => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(x == c)),
        BinOp::Ne => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(x != c)),
        _ => unreachable!("only comparisons are predicates"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::Predicate;
    use crate::analysis::eval::{Inputs, SlotData, count_passing, entry_mask, evaluate};
    use crate::analysis::plan::Node;
    use crate::analysis::syntax::{BinOp, UnOp};
    use crate::formats::root::Values;

    const OPS: [BinOp; 6] = BinOp::COMPARISONS;

    /// Columns of every kind the fast path takes, with values at and around
    /// the constants, NaN and signed zeros among them; 1,300 entries, so
    /// that chunks end inside the window.
    fn columns() -> Vec<Values> {
        let n = 1_300;
        let floats = [2.0, 2.5, -0.0, 0.0, f64::NAN, 50.0, 49.999, 1e30, -3.0, 0.1];
        let f = |i: usize| floats[(i * 7 + i / 3) % floats.len()];
        vec![
            Values::F32((0..n).map(|i| f(i) as f32).collect()),
            Values::F64((0..n).map(f).collect()),
            Values::I32((0..n).map(|i| (i % 7) as i32 - 3).collect()),
            Values::U8((0..n).map(|i| (i * 13 % 256) as u8).collect()),
            Values::I64((0..n).map(|i| i as i64 - 600).collect()),
        ]
    }

    fn compare(op: BinOp, slot: usize, c: f64, flip: bool) -> Node {
        let (col, k) = (Box::new(Node::Column(slot)), Box::new(Node::Const(c)));
        if flip {
            Node::Binary(op, k, col)
        } else {
            Node::Binary(op, col, k)
        }
    }

    /// Every comparison, turned around or not, alone, negated and joined,
    /// counts what the evaluator counts; the fast path takes the exact
    /// comparisons and leaves the others (a float column against 0.1, an
    /// integer column against 2.5, any 64-bit integer column) to it.
    #[test]
    fn predicates_count_what_the_evaluator_counts() {
        let columns = columns();
        let entries = 1_300;
        let slots: Vec<SlotData> = columns
            .iter()
            .map(|v| SlotData {
                values: v,
                elements: 0..entries,
                offsets: None,
                name: Arc::from("x"),
            })
            .collect();
        let map: Vec<usize> = (0..slots.len()).collect();
        let inputs = Inputs {
            entries,
            first_entry: 0,
            slots: &slots,
            map: &map,
        };
        let (mut fast, mut total) = (0, 0);
        let mut check = |node: &Node| {
            let want = count_passing(&evaluate(node, &inputs).unwrap(), entries);
            total += 1;
            let predicate = Predicate::of(node).expect("a predicate");
            if let Some(got) = predicate.count(&inputs) {
                assert_eq!(got, want, "{node:?}");
                let mask = predicate.mask(&inputs).expect("a mask where a count");
                let value = evaluate(node, &inputs).unwrap();
                assert_eq!(mask, entry_mask(&value, entries), "{node:?}");
                fast += 1;
            }
        };
        let constants = [2.0, 2.5, 0.0, -0.0, 50.0, 0.1, -3.0, 255.0, 256.0, f64::NAN];
        for slot in 0..slots.len() {
            for op in OPS {
                for c in constants {
                    for flip in [false, true] {
                        let leaf = compare(op, slot, c, flip);
                        check(&leaf);
                        check(&Node::Unary(UnOp::Not, Box::new(leaf.clone())));
                        for join in [BinOp::And, BinOp::Or] {
                            let other = compare(OPS[(slot + 1) % 6], (slot + 1) % 3, 2.0, !flip);
                            check(&Node::Binary(join, Box::new(leaf.clone()), Box::new(other)));
                        }
                    }
                }
            }
        }
        assert!(fast > total / 2 && fast < total, "{fast} of {total}");
        // The benchmark's cut takes the fast path.
        let cut = Node::Binary(
            BinOp::And,
            Box::new(compare(BinOp::Gt, 0, 50.0, false)),
            Box::new(compare(BinOp::Ge, 2, 2.0, false)),
        );
        assert!(Predicate::of(&cut).unwrap().count(&inputs).is_some());
        // Arithmetic, functions and bare columns are the evaluator's.
        let sum = Node::Binary(
            BinOp::Add,
            Box::new(Node::Column(0)),
            Box::new(Node::Const(1.0)),
        );
        assert_eq!(Predicate::of(&sum), None);
        assert_eq!(Predicate::of(&Node::Column(2)), None);
    }
}
