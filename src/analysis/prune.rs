//! Ruling out clusters a cut cannot select, before reading them. The statistics
//! pass records the smallest and largest value of every basket of every numeric
//! branch; over a cluster (a run of entries whose baskets start and end
//! together in every column read) each column's values then lie in a known
//! span. The cut is evaluated once over those spans (interval arithmetic): when
//! no value it can take is true, no entry of the cluster passes and the cluster
//! is skipped without decompressing anything.
//!
//! Every rule here must over-approximate: a span may hold values that never
//! occur, never miss one that does. NaN is tracked apart (it fails every
//! comparison but `!=`, and is true as a truth value), and anything not
//! modelled (aggregates, `Alt$`, periodic functions, `%`, the VecOps functions
//! but pairs, `Sort` and `Reverse`) is "any value".

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use super::plan::{Curve, Fn1, Node, Pair, Plan};
use super::syntax::{BinOp, UnOp};
use super::vecops::VecOp;

/// One basket of a column: the entries it holds, and the range of its values
/// as the statistics pass found them.
#[derive(Debug, Clone, PartialEq)]
pub struct BasketSpan {
    pub entries: Range<u64>,
    /// Values (elements, for a collection) the basket holds.
    pub values: u64,
    /// Finite values among them; fewer than `values` means a NaN or an
    /// infinity, which `min`/`max` do not bound.
    pub finite: u64,
    pub min: f64,
    pub max: f64,
}

/// The recorded baskets of the columns that have them (by index into
/// `TreeColumns::columns`), and how many clusters the scans that consulted
/// them read and skipped.
#[derive(Debug, Default)]
pub struct Bounds {
    columns: HashMap<usize, Vec<BasketSpan>>,
    clusters_read: AtomicU64,
    clusters_skipped: AtomicU64,
}

impl Bounds {
    /// Adds a column's baskets, given in entry order by their entry counts and
    /// value ranges; ignored unless they tile `0..entries` exactly.
    pub fn add_column(&mut self, column: usize, baskets: Vec<BasketSpan>, entries: u64) {
        let tiles = baskets.first().is_none_or(|b| b.entries.start == 0)
            && baskets
                .windows(2)
                .all(|w| w[0].entries.end == w[1].entries.start)
            && baskets.last().map_or(0, |b| b.entries.end) == entries;
        if tiles && !baskets.is_empty() {
            self.columns.insert(column, baskets);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The recorded baskets of column `column`, if any (handed on to a
    /// worker in a job description).
    pub fn spans(&self, column: usize) -> Option<&[BasketSpan]> {
        self.columns.get(&column).map(Vec::as_slice)
    }

    /// The span of column `column`'s values over `entries`, if recorded.
    fn column_span(&self, column: usize, entries: &Range<u64>) -> Span {
        let Some(baskets) = self.columns.get(&column) else {
            return Span::ANY;
        };
        let first = baskets.partition_point(|b| b.entries.end <= entries.start);
        let mut span = Span::NONE;
        for b in baskets[first..]
            .iter()
            .take_while(|b| b.entries.start < entries.end)
        {
            if b.finite < b.values {
                return Span::ANY;
            }
            if b.finite > 0 {
                span = span.hull(Span::of(b.min, b.max));
            }
        }
        span
    }

    /// Whether some entry of `entries` could pass `cut`: false only when the
    /// recorded spans prove that none can.
    pub fn may_pass(&self, cut: &Plan, entries: &Range<u64>) -> bool {
        let span = self.eval(&cut.root, cut, entries);
        !span.none && span.may_be_true()
    }

    /// Whether a scan must read the cluster `entries`.
    pub fn must_read(&self, cut: Option<&Plan>, entries: &Range<u64>) -> bool {
        cut.is_none_or(|c| self.is_empty() || self.may_pass(c, entries))
    }

    /// Notes what one scan read and skipped; a call may scan several times (a
    /// range, then the fills), and reports its most pruned scan.
    pub fn record_scan(&self, read: u64, skipped: u64) {
        self.clusters_read.fetch_max(read, Ordering::Relaxed);
        self.clusters_skipped.fetch_max(skipped, Ordering::Relaxed);
    }

    /// Clusters read and skipped by the scans so far (the most of any one).
    pub fn clusters(&self) -> (u64, u64) {
        (
            self.clusters_read.load(Ordering::Relaxed),
            self.clusters_skipped.load(Ordering::Relaxed),
        )
    }

    fn eval(&self, node: &Node, plan: &Plan, entries: &Range<u64>) -> Span {
        match node {
            Node::Const(c) => Span::constant(*c),
            Node::Column(slot) | Node::Index { slot, .. } => {
                self.column_span(plan.columns[*slot], entries)
            }
            Node::Unary(UnOp::Neg, inner) => self.eval(inner, plan, entries).negated(),
            Node::Unary(UnOp::Not, inner) => self.eval(inner, plan, entries).not(),
            Node::Func1(f, curve, inner) => self.eval(inner, plan, entries).mapped(*f, *curve),
            Node::Binary(op, l, r) => binary(
                *op,
                self.eval(l, plan, entries),
                self.eval(r, plan, entries),
            ),
            Node::Func2(_, pair, a, b) => {
                let (a, b) = (self.eval(a, plan, entries), self.eval(b, plan, entries));
                let frame = a.with(b);
                match pair {
                    // Without NaN, min and max are monotone in both arguments;
                    // with one, the result is NaN or either argument.
                    _ if frame.none => Span::NONE,
                    Pair::Min if !frame.nan && a.has_finite() && b.has_finite() => {
                        Span::of(a.lo.min(b.lo), a.hi.min(b.hi))
                    }
                    Pair::Max if !frame.nan && a.has_finite() && b.has_finite() => {
                        Span::of(a.lo.max(b.lo), a.hi.max(b.hi))
                    }
                    Pair::Min | Pair::Max => frame.hull_of(a, b),
                    Pair::Other => frame.any(),
                }
            }
            // Pairs, sorted and reversed collections hold elements of their
            // argument (none when it has none); no other VecOps function is
            // bounded (a sum of no element is 0 even where its argument has
            // no value at all).
            Node::Vec(
                VecOp::PairFirst | VecOp::PairSecond | VecOp::Sort | VecOp::Reverse,
                args,
            ) => self.eval(&args[0], plan, entries),
            Node::Aggregate(..) | Node::Alt(..) | Node::Vec(..) => Span::ANY,
        }
    }
}

/// The values an expression can take over a cluster: the finite ones lie in
/// `[lo, hi]` (none when `lo > hi`), NaN among them when `nan`; `none` when it
/// has no value at all (a collection with no elements in the cluster: nothing
/// element-wise can pass).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Span {
    lo: f64,
    hi: f64,
    nan: bool,
    none: bool,
}

impl Span {
    const ANY: Span = Span {
        lo: f64::NEG_INFINITY,
        hi: f64::INFINITY,
        nan: true,
        none: false,
    };
    const NONE: Span = Span {
        lo: f64::INFINITY,
        hi: f64::NEG_INFINITY,
        nan: false,
        none: true,
    };

    fn of(lo: f64, hi: f64) -> Span {
        Span {
            lo,
            hi,
            nan: false,
            none: false,
        }
    }

    fn constant(c: f64) -> Span {
        if c.is_nan() {
            Span {
                nan: true,
                ..Span::of(f64::INFINITY, f64::NEG_INFINITY)
            }
        } else {
            Span::of(c, c)
        }
    }

    /// A truth value's span: which of false (0) and true (1) can occur.
    fn truth(may_be_false: bool, may_be_true: bool) -> Span {
        Span::of(
            if may_be_false { 0.0 } else { 1.0 },
            if may_be_true { 1.0 } else { 0.0 },
        )
    }

    fn has_finite(&self) -> bool {
        self.lo <= self.hi
    }

    fn hull(self, other: Span) -> Span {
        Span {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
            nan: self.nan || other.nan,
            none: self.none && other.none,
        }
    }

    /// The frame of a result computed from `self` and `other` element-wise:
    /// nothing when either has nothing, NaN when either may be NaN.
    fn with(self, other: Span) -> Frame {
        Frame {
            none: self.none || other.none,
            nan: self.nan || other.nan,
        }
    }

    /// True as a truth value: nonzero, or NaN (`x != 0` holds for NaN).
    fn may_be_true(&self) -> bool {
        self.nan || (self.has_finite() && !(self.lo == 0.0 && self.hi == 0.0))
    }

    fn may_be_false(&self) -> bool {
        self.has_finite() && self.lo <= 0.0 && 0.0 <= self.hi
    }

    fn negated(self) -> Span {
        Span {
            lo: -self.hi,
            hi: -self.lo,
            ..self
        }
    }

    fn not(self) -> Span {
        if self.none {
            return Span::NONE;
        }
        Span::truth(self.may_be_true(), self.may_be_false())
    }

    fn mapped(self, f: Fn1, curve: Curve) -> Span {
        let f = |x: f64| f.call(x);
        if self.none || !self.has_finite() {
            return Span {
                nan: self.nan,
                ..self
            };
        }
        let (lo, hi) = match curve {
            Curve::Rising => (f(self.lo), f(self.hi)),
            Curve::Falling => (f(self.hi), f(self.lo)),
            Curve::Valley if self.hi < 0.0 => (f(self.hi), f(self.lo)),
            Curve::Valley if self.lo > 0.0 => (f(self.lo), f(self.hi)),
            Curve::Valley => (f(0.0), f(self.lo).max(f(self.hi))),
            Curve::Other => return Span::ANY,
        };
        // An end outside the function's domain, or an infinite image, is not
        // modelled: any value.
        if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
            return Span::ANY;
        }
        Span {
            lo,
            hi,
            nan: self.nan,
            none: false,
        }
    }
}

/// The frame of an element-wise result (see `Span::with`).
#[derive(Clone, Copy)]
struct Frame {
    none: bool,
    nan: bool,
}

impl Frame {
    fn span(self, lo: f64, hi: f64) -> Span {
        if self.none {
            return Span::NONE;
        }
        if lo > hi || lo.is_nan() || hi.is_nan() {
            return self.any();
        }
        Span {
            lo,
            hi,
            nan: self.nan,
            none: false,
        }
    }

    fn any(self) -> Span {
        if self.none { Span::NONE } else { Span::ANY }
    }

    fn hull_of(self, a: Span, b: Span) -> Span {
        if self.none {
            return Span::NONE;
        }
        let h = a.hull(b);
        Span {
            nan: self.nan,
            none: false,
            ..h
        }
    }

    fn truth(self, may_be_false: bool, may_be_true: bool) -> Span {
        if self.none {
            Span::NONE
        } else {
            Span::truth(may_be_false, may_be_true)
        }
    }
}

/// The extremes of `op` over the corners of two finite spans, or any value when
/// a corner is NaN (`inf - inf`, `0 * inf`).
fn corners(frame: Frame, a: Span, b: Span, op: impl Fn(f64, f64) -> f64) -> Span {
    let xs = [
        op(a.lo, b.lo),
        op(a.lo, b.hi),
        op(a.hi, b.lo),
        op(a.hi, b.hi),
    ];
    if xs.iter().any(|x| x.is_nan()) {
        return frame.any();
    }
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    frame.span(lo, hi)
}

fn binary(op: BinOp, a: Span, b: Span) -> Span {
    let frame = a.with(b);
    if frame.none {
        return Span::NONE;
    }
    let finite = a.has_finite() && b.has_finite();
    match op {
        BinOp::And => frame.truth(
            a.may_be_false() || b.may_be_false(),
            a.may_be_true() && b.may_be_true(),
        ),
        BinOp::Or => frame.truth(
            a.may_be_false() && b.may_be_false(),
            a.may_be_true() || b.may_be_true(),
        ),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne => {
            let (may_be_false, may_be_true) = comparison(op, a, b, finite);
            frame.truth(may_be_false, may_be_true)
        }
        BinOp::Mod => frame.any(),
        BinOp::Div if !(b.lo > 0.0 || b.hi < 0.0) => frame.any(),
        // A side holding only NaN makes every result NaN.
        _ if !finite => Span {
            nan: true,
            ..Span::of(f64::INFINITY, f64::NEG_INFINITY)
        },
        BinOp::Add => frame.span(a.lo + b.lo, a.hi + b.hi).or_any_if_nan(frame),
        BinOp::Sub => frame.span(a.lo - b.hi, a.hi - b.lo).or_any_if_nan(frame),
        BinOp::Mul => corners(frame, a, b, |x, y| x * y),
        BinOp::Div => corners(frame, a, b, |x, y| x / y),
    }
}

impl Span {
    /// `inf - inf` gives a NaN bound: then any value.
    fn or_any_if_nan(self, frame: Frame) -> Span {
        if self.lo.is_nan() || self.hi.is_nan() {
            frame.any()
        } else {
            self
        }
    }
}

/// Whether `a op b` may be false and may be true for values in the spans.
fn comparison(op: BinOp, a: Span, b: Span, finite: bool) -> (bool, bool) {
    let nan = a.nan || b.nan;
    if !finite {
        // Only NaN on a side: every comparison is false but `!=`.
        return if op == BinOp::Ne {
            (false, true)
        } else {
            (true, false)
        };
    }
    let point = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
    let overlap = a.lo <= b.hi && b.lo <= a.hi;
    let (may_be_false, may_be_true) = match op {
        BinOp::Lt => (a.hi >= b.lo, a.lo < b.hi),
        BinOp::Le => (a.hi > b.lo, a.lo <= b.hi),
        BinOp::Gt => (a.lo <= b.hi, a.hi > b.lo),
        BinOp::Ge => (a.lo < b.hi, a.hi >= b.lo),
        BinOp::Eq => (!point, overlap),
        BinOp::Ne => (overlap, !point),
        _ => unreachable!("only comparisons"),
    };
    // NaN fails every comparison but `!=`, which it passes.
    if op == BinOp::Ne {
        (may_be_false, may_be_true || nan)
    } else {
        (may_be_false || nan, may_be_true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::eval::{apply, truth};
    use crate::analysis::plan::{binary_function, unary_function};

    /// Whether a concrete value is among those a span allows.
    fn holds(s: &Span, x: f64) -> bool {
        !s.none
            && if x.is_nan() {
                s.nan
            } else {
                s.lo <= x && x <= s.hi
            }
    }

    /// A small deterministic generator (xorshift64*), so the test needs no crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
        /// A number from a mix of scales, signs, zeros and integers.
        fn number(&mut self) -> f64 {
            match self.next() % 6 {
                0 => 0.0,
                1 => (self.next() % 7) as f64 - 3.0,
                2 => self.unit() * 2.0 - 1.0,
                3 => (self.unit() - 0.5) * 1e6,
                4 => self.unit() * 1e-3,
                _ => (self.unit() - 0.5) * 10.0,
            }
        }
        /// A span and a value inside it.
        fn span_and_value(&mut self) -> (Span, f64) {
            let (a, b) = (self.number(), self.number());
            let nan = self.next().is_multiple_of(5);
            let span = Span {
                nan,
                ..Span::of(a.min(b), a.max(b))
            };
            let x = if nan && self.next().is_multiple_of(3) {
                f64::NAN
            } else {
                match self.next() % 3 {
                    0 => span.lo,
                    1 => span.hi,
                    _ => span.lo + (span.hi - span.lo) * self.unit(),
                }
            };
            (span, x)
        }
    }

    /// Every binary operator: arithmetic, comparisons, then `&&` and `||`.
    fn all_operators() -> Vec<BinOp> {
        [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Mod]
            .into_iter()
            .chain(BinOp::COMPARISONS)
            .chain([BinOp::And, BinOp::Or])
            .collect()
    }

    /// Soundness: for random spans and values inside them, what the
    /// evaluator computes is always inside the span `prune` derives.
    #[test]
    fn every_result_lies_in_the_derived_span() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let ops = all_operators();
        for _ in 0..200_000 {
            let (a, x) = rng.span_and_value();
            let (b, y) = rng.span_and_value();
            let op = ops[(rng.next() % ops.len() as u64) as usize];
            let span = binary(op, a, b);
            let got = apply(op, x, y);
            assert!(
                holds(&span, got),
                "{x} {op:?} {y} = {got} outside {span:?} ({a:?}, {b:?})"
            );
            let not = a.not();
            let negated = if truth(x) { 0.0 } else { 1.0 };
            assert!(holds(&not, negated), "!{x} outside {not:?}");
            assert!(holds(&a.negated(), -x));
        }
        for name in [
            "abs", "sqrt", "exp", "log", "log10", "log2", "sin", "cos", "tan", "asin", "acos",
            "atan", "sinh", "cosh", "tanh", "floor", "ceil",
        ] {
            let (f, curve) = unary_function(name, name).unwrap();
            for _ in 0..20_000 {
                let (a, x) = rng.span_and_value();
                let span = a.mapped(f, curve);
                assert!(
                    holds(&span, f.call(x)),
                    "{name}({x}) = {} outside {span:?} ({a:?})",
                    f.call(x)
                );
            }
        }
        for name in ["min", "max", "pow", "atan2", "hypot", "fmod"] {
            let (f, pair) = binary_function(name, name).unwrap();
            for _ in 0..20_000 {
                let ((a, x), (b, y)) = (rng.span_and_value(), rng.span_and_value());
                let frame = a.with(b);
                let span = match pair {
                    Pair::Min if !frame.nan => Span::of(a.lo.min(b.lo), a.hi.min(b.hi)),
                    Pair::Max if !frame.nan => Span::of(a.lo.max(b.lo), a.hi.max(b.hi)),
                    Pair::Min | Pair::Max => frame.hull_of(a, b),
                    Pair::Other => frame.any(),
                };
                assert!(holds(&span, f(x, y)), "{name}({x}, {y}) outside {span:?}");
            }
        }
    }

    /// Cases worked by hand: what may and may not pass.
    #[test]
    fn cuts_are_ruled_out_only_when_nothing_can_pass() {
        let x = Span::of(0.0, 3.0);
        let five = Span::constant(5.0);
        assert!(!binary(BinOp::Gt, x, five).may_be_true());
        assert!(binary(BinOp::Lt, x, five).may_be_true());
        // x > 5 fails for NaN too, so !(x > 5) may hold; with NaN, x > 5 still cannot.
        let x_nan = Span { nan: true, ..x };
        assert!(!binary(BinOp::Gt, x_nan, five).may_be_true());
        assert!(binary(BinOp::Gt, x_nan, five).not().may_be_true());
        assert!(binary(BinOp::Ne, x_nan, Span::constant(1.0)).may_be_true());
        // A point equal to the constant: == must hold, != cannot.
        let two = Span::of(2.0, 2.0);
        assert!(!binary(BinOp::Ne, two, Span::constant(2.0)).may_be_true());
        assert!(!binary(BinOp::Eq, two, Span::constant(2.0)).may_be_false());
        // A collection with no element in the cluster: nothing element-wise passes,
        // not even `!(x < 0)` or `x < 0 || 1`.
        let none = Span::NONE;
        assert!(binary(BinOp::Lt, none, Span::constant(0.0)).not().none);
        assert!(
            binary(
                BinOp::Or,
                binary(BinOp::Lt, none, five),
                Span::constant(1.0)
            )
            .none
        );
        // abs(eta) < 2.4 with eta in [2.45, 2.5] or [-2.5, -2.45]: ruled out.
        let (abs, curve) = unary_function("abs", "abs").unwrap();
        for eta in [Span::of(2.45, 2.5), Span::of(-2.5, -2.45)] {
            let cut = binary(BinOp::Lt, eta.mapped(abs, curve), Span::constant(2.4));
            assert!(!cut.may_be_true());
        }
        assert!(
            binary(
                BinOp::Lt,
                Span::of(-2.5, 2.5).mapped(abs, curve),
                Span::constant(2.4)
            )
            .may_be_true()
        );
        // Division by a span holding zero, and sqrt of a negative end: any value.
        assert_eq!(binary(BinOp::Div, x, Span::of(-1.0, 1.0)), Span::ANY);
        let (sqrt, rising) = unary_function("sqrt", "sqrt").unwrap();
        assert_eq!(Span::of(-1.0, 4.0).mapped(sqrt, rising), Span::ANY);
        assert_eq!(Span::of(1.0, 4.0).mapped(sqrt, rising), Span::of(1.0, 2.0));
    }

    #[test]
    fn a_column_spans_the_baskets_a_cluster_covers() {
        let basket = |start: u64, end: u64, finite: u64, min: f64, max: f64| BasketSpan {
            entries: start..end,
            values: end - start,
            finite,
            min,
            max,
        };
        let mut bounds = Bounds::default();
        bounds.add_column(
            0,
            vec![
                basket(0, 10, 10, 0.0, 9.0),
                basket(10, 20, 10, 10.0, 19.0),
                basket(20, 30, 9, 20.0, 28.0),
            ],
            30,
        );
        assert_eq!(bounds.column_span(0, &(0..10)), Span::of(0.0, 9.0));
        assert_eq!(bounds.column_span(0, &(0..20)), Span::of(0.0, 19.0));
        // A basket with a non-finite value bounds nothing.
        assert_eq!(bounds.column_span(0, &(20..30)), Span::ANY);
        assert_eq!(bounds.column_span(1, &(0..10)), Span::ANY);
        // Baskets that do not tile the entries are not used.
        let mut gappy = Bounds::default();
        gappy.add_column(
            0,
            vec![basket(0, 10, 10, 0.0, 9.0), basket(12, 30, 18, 0.0, 1.0)],
            30,
        );
        assert!(gappy.is_empty());
    }
}
