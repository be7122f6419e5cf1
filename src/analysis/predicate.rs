//! The commonest cuts counted without the evaluator's arrays: comparisons of
//! columns, or of their absolute values, with constants (`met > 50`,
//! `2 <= nMuon`, `abs(Muon_eta) < 2.4`), joined by `&&`, `||` and `!`. Each
//! comparison runs in its column's own type over a chunk of rows into a byte
//! per row on the stack, where the evaluator would convert the column to
//! doubles, write a double per row for each comparison and another for
//! their `&&`, then read them all back. The rows are a window's entries, or
//! the elements of one collection when every column compared is that
//! collection's (a histogram's cut on its own muons).
//!
//! Only comparisons that give what the evaluator gives (`TTree::Draw`'s double
//! precision) take this path: a float column with any constant (one a float
//! cannot hold becomes the float bound that gives the same answer: `x < 2.4`
//! is `x <= 2.3999999` in floats), a double column, and an integer column of
//! at most 32 bits (exact in a double) with a whole constant in its range,
//! not under `abs`. Anything else in the cut leaves it to the evaluator.
//!
//! A window's cut runs as a postfix program over a small stack of chunks,
//! not by walking the tree: one loop without recursion, which is compiled a
//! second time for AVX2 (wider comparisons and byte packing) and chosen when
//! the CPU has it.

use super::AnalysisError;
use super::eval::{Inputs, count_passing, entry_mask, evaluate};
use super::plan::{Fn1, Node};
use super::syntax::{BinOp, UnOp};
use crate::formats::root::Values;

/// Rows compared at a time: a few byte arrays of this size stay in the
/// first-level cache.
const CHUNK: usize = 512;

/// A cut made only of comparisons of columns with constants.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `column op constant`, or `abs(column) op constant` (a constant on
    /// the left is turned around).
    Compare {
        slot: usize,
        abs: bool,
        op: BinOp,
        constant: f64,
    },
    And(Box<Predicate>, Box<Predicate>),
    Or(Box<Predicate>, Box<Predicate>),
    Not(Box<Predicate>),
}

/// What a predicate's rows are: a window's entries (every column compared
/// holds one value per entry), or the elements of a collection whose
/// entries start at these offsets (every column compared is laid out so).
#[derive(Debug, Clone, Copy)]
pub enum Rows<'a> {
    Entries,
    Elements(&'a [usize]),
}

/// One step of a predicate's postfix program for a window: a comparison
/// pushes a chunk of 1s and 0s, `&&` and `||` join the top two, `!` flips
/// the top one.
#[derive(Debug, Clone, Copy)]
enum Step {
    Compare {
        slot: usize,
        abs: bool,
        op: BinOp,
        constant: Native,
    },
    And,
    Or,
    Not,
}

impl Predicate {
    /// The predicate a cut's tree is, if it is one.
    pub fn of(node: &Node) -> Option<Predicate> {
        let boxed = |n: &Node| Predicate::of(n).map(Box::new);
        match node {
            Node::Binary(BinOp::And, a, b) => Some(Predicate::And(boxed(a)?, boxed(b)?)),
            Node::Binary(BinOp::Or, a, b) => Some(Predicate::Or(boxed(a)?, boxed(b)?)),
            Node::Unary(UnOp::Not, a) => Some(Predicate::Not(boxed(a)?)),
            Node::Binary(op, a, b) => match (compared(a), &**b, &**a, compared(b)) {
                (Some((slot, abs)), Node::Const(c), _, _) => compare(slot, abs, *op, *c),
                (_, _, Node::Const(c), Some((slot, abs))) => compare(slot, abs, turned(*op)?, *c),
                _ => None,
            },
            _ => None,
        }
    }

    /// How many of the window's entries pass (an entry of a collection when
    /// any of its elements does), or None when the fast path does not apply
    /// (the evaluator then counts).
    pub fn count(&self, inputs: &Inputs<'_>) -> Option<u64> {
        let mut passed = 0u64;
        match self.rows(inputs) {
            // Summed as u32 (a chunk's at most CHUNK), which vectorises
            // where widening every byte to u64 does not.
            Rows::Entries => self.chunks(inputs, Rows::Entries, |chunk| {
                passed += u64::from(chunk.iter().map(|&b| u32::from(b)).sum::<u32>());
            })?,
            rows @ Rows::Elements(offsets) => {
                let elements = self.element_mask(inputs, rows)?;
                passed = offsets
                    .windows(2)
                    .map(|w| u64::from(elements[w[0]..w[1]].contains(&1)))
                    .sum();
            }
        }
        Some(passed)
    }

    /// Which of the window's entries pass (`count`'s entries, one by one).
    pub fn mask(&self, inputs: &Inputs<'_>) -> Option<Vec<bool>> {
        let mut mask = Vec::with_capacity(inputs.entries);
        match self.rows(inputs) {
            Rows::Entries => self.chunks(inputs, Rows::Entries, |chunk| {
                mask.extend(chunk.iter().map(|&b| b != 0))
            })?,
            rows @ Rows::Elements(offsets) => {
                let elements = self.element_mask(inputs, rows)?;
                mask.extend(
                    offsets
                        .windows(2)
                        .map(|w| elements[w[0]..w[1]].contains(&1)),
                );
            }
        }
        Some(mask)
    }

    /// The rows of the window's first comparison's column: a cut runs over
    /// the elements of a collection when the columns it compares are all
    /// laid out as that one (which `chunks` checks).
    fn rows<'a>(&self, inputs: &'a Inputs<'a>) -> Rows<'a> {
        match self {
            Predicate::Compare { slot, .. } => match &inputs.slots[inputs.map[*slot]].offsets {
                None => Rows::Entries,
                Some(offsets) => Rows::Elements(offsets),
            },
            Predicate::And(a, _) | Predicate::Or(a, _) | Predicate::Not(a) => a.rows(inputs),
        }
    }

    /// A byte per row, 1 where the row passes.
    fn element_mask(&self, inputs: &Inputs<'_>, rows: Rows<'_>) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.chunks(inputs, rows, |chunk| out.extend_from_slice(chunk))?;
        Some(out)
    }

    /// Hands `each` the window's rows a chunk at a time, in order, 1 for
    /// those that pass and 0 for the others; None when the fast path does
    /// not apply to these rows.
    pub fn chunks(
        &self,
        inputs: &Inputs<'_>,
        rows: Rows<'_>,
        mut each: impl FnMut(&[u8]),
    ) -> Option<()> {
        let mut steps = Vec::new();
        let depth = self.postfix(inputs, rows, &mut steps)?;
        let mut stack = vec![[0u8; CHUNK]; depth];
        let count = match rows {
            Rows::Entries => inputs.entries,
            Rows::Elements(offsets) => offsets[inputs.entries] - offsets[0],
        };
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            unsafe { run_avx2(&steps, (inputs, count), &mut stack, &mut each) };
            return Some(());
        }
        run(&steps, (inputs, count), &mut stack, &mut each);
        Some(())
    }

    /// Appends this predicate's program for the window to `steps` and returns
    /// the stack depth it needs; None when a column is not laid out as the
    /// rows or a comparison cannot be made exactly in its column's type.
    fn postfix(&self, inputs: &Inputs<'_>, rows: Rows<'_>, steps: &mut Vec<Step>) -> Option<usize> {
        match self {
            Predicate::Compare {
                slot,
                abs,
                op,
                constant,
            } => {
                let d = &inputs.slots[inputs.map[*slot]];
                let laid_out = match (&d.offsets, rows) {
                    (None, Rows::Entries) => true,
                    (Some(have), Rows::Elements(want)) => have.as_slice() == want,
                    _ => false,
                };
                if !laid_out {
                    return None;
                }
                let (op, constant) = native_comparison(d.values, *abs, *op, *constant)?;
                steps.push(Step::Compare {
                    slot: *slot,
                    abs: *abs,
                    op,
                    constant,
                });
                Some(1)
            }
            Predicate::And(a, b) | Predicate::Or(a, b) => {
                let first = a.postfix(inputs, rows, steps)?;
                let second = b.postfix(inputs, rows, steps)?;
                steps.push(match self {
                    Predicate::And(..) => Step::And,
                    _ => Step::Or,
                });
                Some(first.max(second + 1))
            }
            Predicate::Not(a) => {
                let depth = a.postfix(inputs, rows, steps)?;
                steps.push(Step::Not);
                Some(depth)
            }
        }
    }
}

/// The column (and whether under `abs`) a comparison's side reads.
fn compared(node: &Node) -> Option<(usize, bool)> {
    match node {
        Node::Column(slot) => Some((*slot, false)),
        Node::Func1(Fn1::Abs, _, inner) => match **inner {
            Node::Column(slot) => Some((slot, true)),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn run_avx2(
    steps: &[Step],
    rows: (&Inputs<'_>, usize),
    stack: &mut [[u8; CHUNK]],
    each: &mut impl FnMut(&[u8]),
) {
    run(steps, rows, stack, each)
}

/// Runs a window's program over its `count` rows chunk by chunk, handing
/// `each` the result of each.
#[inline(always)]
fn run(
    steps: &[Step],
    (inputs, count): (&Inputs<'_>, usize),
    stack: &mut [[u8; CHUNK]],
    each: &mut impl FnMut(&[u8]),
) {
    let mut start = 0;
    while start < count {
        let n = CHUNK.min(count - start);
        let mut top = 0;
        for step in steps {
            match *step {
                Step::Compare {
                    slot,
                    abs,
                    op,
                    constant,
                } => {
                    let d = &inputs.slots[inputs.map[slot]];
                    let at = d.elements.start + start;
                    let out = &mut stack[top][..n];
                    compare_values(d.values, at..at + n, (abs, op, constant), out);
                    top += 1;
                }
                Step::And | Step::Or => {
                    let (below, above) = stack.split_at_mut(top - 1);
                    let (into, other) = (&mut below[top - 2][..n], &above[0][..n]);
                    if matches!(step, Step::And) {
                        into.iter_mut().zip(other).for_each(|(x, y)| *x &= y);
                    } else {
                        into.iter_mut().zip(other).for_each(|(x, y)| *x |= y);
                    }
                    top -= 1;
                }
                Step::Not => stack[top - 1][..n].iter_mut().for_each(|x| *x ^= 1),
            }
        }
        each(&stack[0][..n]);
        start += n;
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

fn compare(slot: usize, abs: bool, op: BinOp, constant: f64) -> Option<Predicate> {
    BinOp::COMPARISONS
        .contains(&op)
        .then_some(Predicate::Compare {
            slot,
            abs,
            op,
            constant,
        })
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

/// The comparison in the column's own type that gives, for every value,
/// exactly what comparing the values (or their absolute values) as doubles
/// with `c` gives; None where there is none here.
fn native_comparison(values: &Values, abs: bool, op: BinOp, c: f64) -> Option<(BinOp, Native)> {
    let whole = |lo: f64, hi: f64| c.fract() == 0.0 && (lo..=hi).contains(&c);
    let int = |lo: f64, hi: f64| (!abs && whole(lo, hi)).then_some((op, Native::Int(c as i64)));
    match values {
        Values::F32(_) => f32_comparison(op, c),
        Values::F64(_) => Some((op, Native::F64(c))),
        Values::I8(_) => int(-128.0, 127.0),
        Values::U8(_) => int(0.0, 255.0),
        Values::I16(_) => int(-32_768.0, 32_767.0),
        Values::U16(_) => int(0.0, 65_535.0),
        Values::I32(_) => int(-2_147_483_648.0, 2_147_483_647.0),
        Values::U32(_) => int(0.0, 4_294_967_295.0),
        _ => None,
    }
}

/// `x op c` for every float `x` (widened to a double), as a comparison of
/// floats: with `c` itself where a float holds it, else with the float just
/// below it (`<`, `<=`) or just above it (`>`, `>=`); `==` is then never
/// true and `!=` always, which a comparison with NaN gives.
fn f32_comparison(op: BinOp, c: f64) -> Option<(BinOp, Native)> {
    let near = c as f32;
    if near.is_nan() {
        return None;
    }
    let (below, above) = match f64::from(near) {
        n if n == c => return Some((op, Native::F32(near))),
        n if n < c => (near, near.next_up()),
        _ => (near.next_down(), near),
    };
    Some(match op {
        BinOp::Lt | BinOp::Le => (BinOp::Le, Native::F32(below)),
        BinOp::Gt | BinOp::Ge => (BinOp::Ge, Native::F32(above)),
        _ => (op, Native::F32(f32::NAN)),
    })
}

#[derive(Debug, Clone, Copy)]
enum Native {
    F32(f32),
    F64(f64),
    Int(i64),
}

/// `values[range] op constant` (of their absolute values with `abs`) into
/// `out`, in the values' type, as `native_comparison` made it.
#[inline(always)]
fn compare_values(
    values: &Values,
    range: std::ops::Range<usize>,
    (abs, op, constant): (bool, BinOp, Native),
    out: &mut [u8],
) {
    match (values, constant) {
        (Values::F32(v), Native::F32(c)) if abs => compare_slice(&v[range], f32::abs, c, op, out),
        (Values::F64(v), Native::F64(c)) if abs => compare_slice(&v[range], f64::abs, c, op, out),
        (Values::F32(v), Native::F32(c)) => compare_slice(&v[range], same, c, op, out),
        (Values::F64(v), Native::F64(c)) => compare_slice(&v[range], same, c, op, out),
        (Values::I8(v), Native::Int(c)) => compare_slice(&v[range], same, c as i8, op, out),
        (Values::U8(v), Native::Int(c)) => compare_slice(&v[range], same, c as u8, op, out),
        (Values::I16(v), Native::Int(c)) => compare_slice(&v[range], same, c as i16, op, out),
        (Values::U16(v), Native::Int(c)) => compare_slice(&v[range], same, c as u16, op, out),
        (Values::I32(v), Native::Int(c)) => compare_slice(&v[range], same, c as i32, op, out),
        (Values::U32(v), Native::Int(c)) => compare_slice(&v[range], same, c as u32, op, out),
        _ => unreachable!("native_comparison matches the values' type"),
    }
}

#[inline(always)]
fn same<T>(x: T) -> T {
    x
}

/// One loop per operator, so that each vectorises.
#[inline(always)]
fn compare_slice<T: PartialOrd + Copy>(
    v: &[T],
    f: impl Fn(T) -> T,
    c: T,
    op: BinOp,
    out: &mut [u8],
) {
    match op {
        BinOp::Lt => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(f(x) < c)),
        BinOp::Le => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(f(x) <= c)),
        BinOp::Gt => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(f(x) > c)),
        BinOp::Ge => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(f(x) >= c)),
        BinOp::Eq => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(f(x) == c)),
        BinOp::Ne => out
            .iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = u8::from(f(x) != c)),
        _ => unreachable!("only comparisons are predicates"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{Predicate, Rows};
    use crate::analysis::eval::{
        Inputs, SlotData, Val, count_passing, entry_mask, evaluate, truth,
    };
    use crate::analysis::plan::{Node, unary_function};
    use crate::analysis::syntax::{BinOp, UnOp};
    use crate::formats::root::Values;

    const OPS: [BinOp; 6] = BinOp::COMPARISONS;

    /// The constants compared with: whole and not, exact in a float and not
    /// (0.1, 2.4, 1e-50), beyond a float's range, signed zeros and NaN.
    const CONSTANTS: [f64; 16] = [
        2.0,
        2.5,
        2.4,
        0.0,
        -0.0,
        50.0,
        0.1,
        -0.1,
        -3.0,
        255.0,
        256.0,
        1e-50,
        -1e-50,
        1e300,
        3.4028235677973366e38,
        f64::NAN,
    ];

    /// The cuts of `cuts` the fast path takes, of 1,536 a column: the float
    /// column's but those against NaN (1,440), all the double column's,
    /// and the integer columns' without `abs` against whole constants in
    /// their range (7 constants for the int, 336 cuts; 5 for the byte, 240);
    /// none of the 64-bit column's.
    const FAST_CUTS: usize = 1_440 + 1_536 + 336 + 240;

    /// Rows enough for chunks to end inside the window.
    const N: usize = 1_300;

    /// Columns of every kind the fast path takes, with values at and around
    /// the constants (each one as a float, and the floats either side of
    /// it), NaN, infinities and signed zeros among them.
    fn columns() -> Vec<Values> {
        let mut floats = vec![49.999, 1e30, f64::INFINITY, f64::NEG_INFINITY];
        for c in CONSTANTS {
            let near = c as f32;
            floats.extend([near, near.next_up(), near.next_down()].map(f64::from));
            floats.push(c);
        }
        let f = |i: usize| floats[(i * 7 + i / 3) % floats.len()];
        vec![
            Values::F32((0..N).map(|i| f(i) as f32).collect()),
            Values::F64((0..N).map(|i| f(N - 1 - i)).collect()),
            Values::I32((0..N).map(|i| (i % 7) as i32 - 3).collect()),
            Values::U8((0..N).map(|i| (i * 13 % 256) as u8).collect()),
            Values::I64((0..N).map(|i| i as i64 - 600).collect()),
        ]
    }

    /// `column op c` (or of its absolute value), the constant on either side.
    fn compare(op: BinOp, slot: usize, c: f64, (flip, abs): (bool, bool)) -> Node {
        let mut col = Node::Column(slot);
        if abs {
            let (f, curve) = unary_function("abs", "abs").expect("abs");
            col = Node::Func1(f, curve, Box::new(col));
        }
        let (col, k) = (Box::new(col), Box::new(Node::Const(c)));
        if flip {
            Node::Binary(op, k, col)
        } else {
            Node::Binary(op, col, k)
        }
    }

    /// Each column as a window's slot: one value per entry, or (`offsets`)
    /// the elements of entries starting there.
    fn slots<'a>(columns: &'a [Values], offsets: Option<&Arc<Vec<usize>>>) -> Vec<SlotData<'a>> {
        columns
            .iter()
            .map(|v| SlotData {
                values: v,
                elements: 0..N,
                offsets: offsets.cloned(),
                name: Arc::from("x"),
            })
            .collect()
    }

    /// A window of `entries` entries over these slots, each its own.
    fn window<'a>(slots: &'a [SlotData<'a>], map: &'a [usize], entries: usize) -> Inputs<'a> {
        Inputs {
            entries,
            first_entry: 0,
            slots,
            map,
        }
    }

    /// Every cut tried: each comparison of each column with each constant,
    /// turned around or not, of the value or its absolute value, alone,
    /// negated, and joined with another column's comparison.
    fn cuts(columns: usize) -> Vec<Node> {
        let mut cuts = Vec::new();
        for slot in 0..columns {
            for op in OPS {
                for c in CONSTANTS {
                    for how in [(false, false), (true, false), (false, true), (true, true)] {
                        let leaf = compare(op, slot, c, how);
                        cuts.push(leaf.clone());
                        cuts.push(Node::Unary(UnOp::Not, Box::new(leaf.clone())));
                        for join in [BinOp::And, BinOp::Or] {
                            let other = (slot + 1) % 3;
                            let other = compare(OPS[(slot + 1) % 6], other, 2.0, (!how.0, false));
                            cuts.push(Node::Binary(join, Box::new(leaf.clone()), Box::new(other)));
                        }
                    }
                }
            }
        }
        cuts
    }

    /// Over entries, every cut the fast path takes counts and masks what
    /// the evaluator does; it takes float comparisons whatever the constant,
    /// and leaves to the evaluator integers against fractions, integers
    /// under `abs`, 64-bit integers and NaN against floats.
    #[test]
    fn predicates_count_what_the_evaluator_counts() {
        let columns = columns();
        let slots = slots(&columns, None);
        let map: Vec<usize> = (0..slots.len()).collect();
        let inputs = window(&slots, &map, N);
        let (mut fast, mut total) = (0, 0);
        for node in cuts(slots.len()) {
            total += 1;
            let predicate = Predicate::of(&node).expect("a predicate");
            let Some(got) = predicate.count(&inputs) else {
                continue;
            };
            let value = evaluate(&node, &inputs).unwrap();
            assert_eq!(got, count_passing(&value, N), "{node:?}");
            let mask = predicate.mask(&inputs).expect("a mask where a count");
            assert_eq!(mask, entry_mask(&value, N), "{node:?}");
            fast += 1;
        }
        assert_eq!((fast, total), (FAST_CUTS, 7_680));
        // The benchmark's cut takes the fast path.
        let cut = Node::Binary(
            BinOp::And,
            Box::new(compare(BinOp::Gt, 0, 50.0, (false, false))),
            Box::new(compare(BinOp::Ge, 2, 2.0, (false, false))),
        );
        assert!(Predicate::of(&cut).unwrap().count(&inputs).is_some());
        // Arithmetic, functions but `abs`, and bare columns are the evaluator's.
        let sum = Node::Binary(
            BinOp::Add,
            Box::new(Node::Column(0)),
            Box::new(Node::Const(1.0)),
        );
        assert_eq!(Predicate::of(&sum), None);
        assert_eq!(Predicate::of(&Node::Column(2)), None);
        let (sqrt, curve) = unary_function("sqrt", "sqrt").unwrap();
        let root = Node::Func1(sqrt, curve, Box::new(Node::Column(0)));
        let cut = Node::Binary(BinOp::Lt, Box::new(root), Box::new(Node::Const(2.0)));
        assert_eq!(Predicate::of(&cut), None);
    }

    /// Over the elements of one collection, row by row, every cut the fast
    /// path takes passes the elements the evaluator passes; a column laid
    /// out otherwise (one value per entry here) leaves the cut to it.
    #[test]
    fn predicates_over_elements_pass_what_the_evaluator_passes() {
        let columns = columns();
        // Entries of 0 to 4 elements, ending inside chunks.
        let mut offsets = vec![0];
        while *offsets.last().unwrap() < N {
            let next = offsets.last().unwrap() + offsets.len() % 5;
            offsets.push(next.min(N));
        }
        let entries = offsets.len() - 1;
        let offsets = Arc::new(offsets);
        let slots = slots(&columns, Some(&offsets));
        let map: Vec<usize> = (0..slots.len()).collect();
        let inputs = window(&slots, &map, entries);
        let (mut fast, mut total) = (0, 0);
        for node in cuts(slots.len()) {
            total += 1;
            let predicate = Predicate::of(&node).expect("a predicate");
            let mut got = Vec::new();
            let rows = Rows::Elements(&offsets);
            if predicate
                .chunks(&inputs, rows, |c| got.extend_from_slice(c))
                .is_none()
            {
                continue;
            }
            let value = evaluate(&node, &inputs).unwrap();
            let Val::Jagged { v, .. } = &value else {
                panic!("a collection's cut is a collection")
            };
            let want: Vec<u8> = v.iter().map(|&x| u8::from(truth(x))).collect();
            assert_eq!(got, want, "{node:?}");
            let count = predicate.count(&inputs).expect("a count where a mask");
            assert_eq!(count, count_passing(&value, entries), "{node:?}");
            let mask = predicate.mask(&inputs).expect("a mask where a count");
            assert_eq!(mask, entry_mask(&value, entries), "{node:?}");
            fast += 1;
        }
        assert_eq!((fast, total), (FAST_CUTS, 7_680));
        // A per-entry column in an element-wise cut is the evaluator's.
        let mut mixed = slots.clone();
        mixed[2].offsets = None;
        mixed[2].elements = 0..entries;
        let inputs = Inputs {
            slots: &mixed,
            ..inputs
        };
        let cut = Predicate::of(&Node::Binary(
            BinOp::And,
            Box::new(compare(BinOp::Gt, 0, 2.0, (false, false))),
            Box::new(compare(BinOp::Ge, 2, 0.0, (false, false))),
        ))
        .unwrap();
        let rows = Rows::Elements(&offsets);
        assert!(cut.chunks(&inputs, rows, |_| {}).is_none());
    }
}
