//! The dimuon question's histogram without the evaluator's arrays: the
//! `InvariantMasses` of the pairs of one collection's elements
//! (`PairFirst`/`PairSecond` of its columns, or constants), flattened and
//! unweighted, under a cut made of per-entry conditions (`nMuon >= 2 &&
//! met > 20`) and comparisons of a pair's two elements
//! (`PairFirst(charge) != PairSecond(charge)`), joined by `&&`.
//!
//! The evaluator would build eight arrays of every pair of every entry and
//! the kinematics of each, then throw most away: here the per-entry part of
//! the cut runs first (by the predicate, in the columns' own types), and
//! only the pairs of the entries it passes are visited, in place over the
//! collection's offsets (only their numbers are read as doubles); a pair's
//! comparisons are checked before its mass is computed, from its elements'
//! four-vectors, each made once per entry. The mass is the arithmetic of
//! `kinematics::pair_mass`, the evaluator's own, so the values filled, their
//! order and the entries counted are those of the evaluator to the last bit
//! (the tests compare the two).
//! Anything else (or a window where a column is not laid out as expected)
//! is left to the evaluator.

use std::sync::Arc;

use super::AnalysisError;
use super::eval::{Inputs, SlotData, apply, truth};
use super::fills::Fills;
use super::kinematics::{four_vector, mass_of, pair_mass};
use super::pairs::MAX_PAIRS;
use super::plan::Node;
use super::predicate::{Predicate, mask_cut};
use super::scan::extend_mapped_f64;
use super::syntax::BinOp;
use super::vecops::VecOp;
use crate::formats::root::Values;

/// Which plan a slot belongs to: the value's, or the cut's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PlanOf {
    Value,
    Cut,
}

/// A number of a pair: an element of a paired column (by its position in
/// `PairFills::columns`), of the pair's first or second element, or a
/// constant.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Arg {
    First(usize),
    Second(usize),
    Const(f64),
}

/// A histogram request the fused loop can fill.
#[derive(Debug, Clone)]
pub(super) struct PairFills {
    /// The paired columns, as (plan, slot), each once.
    columns: Vec<(PlanOf, usize)>,
    /// `InvariantMasses`' eight arguments.
    mass: [Arg; 8],
    /// Comparisons of a pair's numbers, all of which must hold.
    conditions: Vec<(BinOp, Arg, Arg)>,
    /// The rest of the cut (in the cut plan's slots), all of it per entry,
    /// with its predicate form when it has one.
    entry_cut: Option<(Node, Option<Predicate>)>,
}

impl PairFills {
    /// The fused form of a value and a cut, when they have one.
    pub(super) fn of(value: &Node, cut: Option<&Node>) -> Option<PairFills> {
        let mut columns = Vec::new();
        let Node::Vec(VecOp::InvariantMasses, args) = value else {
            return None;
        };
        let mut mass = [Arg::Const(0.0); 8];
        for (k, a) in args.iter().enumerate() {
            *mass.get_mut(k)? = arg(a, PlanOf::Value, &mut columns)?;
        }
        if args.len() != 8 || columns.is_empty() {
            return None;
        }
        let (mut conditions, mut entry_parts) = (Vec::new(), Vec::new());
        let mut conjuncts = Vec::new();
        if let Some(cut) = cut {
            conjuncts_of(cut, &mut conjuncts);
        }
        for c in conjuncts {
            if let Node::Binary(op, a, b) = c
                && BinOp::COMPARISONS.contains(op)
                && (mentions_pairs(a) || mentions_pairs(b))
            {
                let a = arg(a, PlanOf::Cut, &mut columns)?;
                let b = arg(b, PlanOf::Cut, &mut columns)?;
                conditions.push((*op, a, b));
            } else if mentions_pairs(c) {
                return None;
            } else {
                entry_parts.push(c.clone());
            }
        }
        let entry_cut = entry_parts
            .into_iter()
            .reduce(|a, b| Node::Binary(BinOp::And, Box::new(a), Box::new(b)))
            .map(|node| {
                let predicate = Predicate::of(&node);
                (node, predicate)
            });
        Some(PairFills {
            columns,
            mass,
            conditions,
            entry_cut,
        })
    }

    /// Fills `out` with the window's pairs; false (nothing filled) when the
    /// window is not laid out as this path needs, for the evaluator to do.
    /// `slot` finds a plan's slot's column; `cut_inputs` is the cut plan's
    /// view of the window.
    pub(super) fn fill<'a>(
        &self,
        slot: impl Fn(PlanOf, usize) -> &'a SlotData<'a>,
        cut_inputs: &Inputs<'_>,
        out: &mut Fills,
    ) -> Result<bool, AnalysisError> {
        let paired: Vec<&SlotData<'_>> = self.columns.iter().map(|&(p, s)| slot(p, s)).collect();
        let Some(offsets) = common_offsets(&paired) else {
            return Ok(false);
        };
        // An entry making more pairs than the evaluator allows is its error
        // to report.
        if offsets
            .windows(2)
            .any(|w| pairs_of(w[1] - w[0]) > MAX_PAIRS)
        {
            return Ok(false);
        }
        let entries = cut_inputs.entries;
        let mask = match &self.entry_cut {
            None => None,
            Some((node, predicate)) => {
                if !per_entry(node, cut_inputs) {
                    return Ok(false);
                }
                Some(mask_cut(predicate.as_ref(), node, cut_inputs)?)
            }
        };
        // Only the entries the per-entry cut passes are read, each one's
        // paired numbers gathered as doubles; each element's four-vector is
        // made once, the first time a passing pair needs it (an element is in
        // up to n - 1 pairs).
        let mut numbers = std::mem::take(&mut out.pair_columns);
        numbers.resize_with(paired.len(), Vec::new);
        let mut particles = Particles::new(&self.mass);
        out.start(false);
        let mut selected = 0u64;
        for e in 0..entries {
            if mask.as_ref().is_some_and(|m| !m[e]) {
                continue;
            }
            let (lo, hi) = (offsets[e], offsets[e + 1]);
            if hi - lo < 2 {
                continue;
            }
            for (column, d) in numbers.iter_mut().zip(&paired) {
                column.clear();
                let start = d.elements.start;
                extend_mapped_f64(d.values, start + lo..start + hi, |x| x, column);
            }
            let read = |a: Arg, i: usize, j: usize| match a {
                Arg::First(c) => numbers[c][i],
                Arg::Second(c) => numbers[c][j],
                Arg::Const(x) => x,
            };
            particles.start(hi - lo);
            let before = out.values.len();
            for i in 0..hi - lo {
                for j in i + 1..hi - lo {
                    let pass = self
                        .conditions
                        .iter()
                        .all(|&(op, a, b)| truth(apply(op, read(a, i, j), read(b, i, j))));
                    if pass {
                        out.values.push(particles.mass(i, j, &read));
                    }
                }
            }
            selected += u64::from(out.values.len() > before);
        }
        out.entries_selected = selected;
        out.pair_columns = numbers;
        Ok(true)
    }
}

/// The four-vectors of one entry's elements, each made once. `InvariantMasses`'
/// first particle is read from `PairFirst`s and constants only, its second
/// from `PairSecond`s and constants (as the dimuon question writes it): the
/// first particle of pair (i, j) is then element i's four-vector, the second
/// element j's, and the two are one cache when both read the same columns.
/// Any other spelling makes each pair's mass from its eight numbers.
struct Particles {
    mass: [Arg; 8],
    /// Whether the pairs' particles are their elements' (the shape above).
    cached: bool,
    /// Whether the second particle reads what the first does.
    same: bool,
    /// The entry's stamp (0 is never one: fresh room is not made).
    stamp: u32,
    first: Made,
    second: Made,
}

/// Four-vectors of one entry's elements, each stamped with the entry it was
/// made for (so a new entry forgets them without a pass over the buffer).
#[derive(Default)]
struct Made {
    vectors: Vec<[f64; 4]>,
    stamps: Vec<u32>,
}

impl Made {
    /// Element `k`'s four-vector for the entry stamped `stamp`, made by
    /// `make` the first time.
    #[inline]
    fn get(&mut self, k: usize, stamp: u32, make: impl FnOnce() -> [f64; 4]) -> [f64; 4] {
        if self.stamps[k] != stamp {
            self.vectors[k] = make();
            self.stamps[k] = stamp;
        }
        self.vectors[k]
    }

    /// Room for `n` elements.
    fn fit(&mut self, n: usize) {
        if self.vectors.len() < n {
            self.vectors.resize(n, [0.0; 4]);
            self.stamps.resize(n, 0);
        }
    }
}

impl Particles {
    fn new(mass: &[Arg; 8]) -> Particles {
        let (a, b) = mass.split_at(4);
        let first_only = a.iter().all(|x| !matches!(x, Arg::Second(_)));
        let second_only = b.iter().all(|x| !matches!(x, Arg::First(_)));
        let mirrored = a.iter().zip(b).all(|pair| match pair {
            (Arg::First(c), Arg::Second(d)) => c == d,
            (Arg::Const(x), Arg::Const(y)) => x.to_bits() == y.to_bits(),
            _ => false,
        });
        Particles {
            mass: *mass,
            cached: first_only && second_only,
            same: mirrored,
            stamp: 0,
            first: Made::default(),
            second: Made::default(),
        }
    }

    /// Forgets the last entry's four-vectors: the next entry has `n` elements.
    fn start(&mut self, n: usize) {
        self.stamp = self.stamp.wrapping_add(1);
        for made in [&mut self.first, &mut self.second] {
            if self.stamp == 0 {
                made.stamps.fill(0);
            }
            made.fit(n);
        }
        self.stamp = self.stamp.max(1);
    }

    /// The mass of pair (i, j), bit for bit `kinematics::pair_mass` of its
    /// eight numbers (`read` gives one of them for the pair).
    #[inline]
    fn mass(&mut self, i: usize, j: usize, read: &impl Fn(Arg, usize, usize) -> f64) -> f64 {
        let m = &self.mass;
        if !self.cached {
            return pair_mass(m.map(|a| read(a, i, j)));
        }
        // A first particle reads only element i (`j` is never used), a second
        // only element j.
        let first_of = |k: usize| {
            four_vector(
                read(m[0], k, k),
                read(m[1], k, k),
                read(m[2], k, k),
                read(m[3], k, k),
            )
        };
        let second_of = |k: usize| {
            four_vector(
                read(m[4], k, k),
                read(m[5], k, k),
                read(m[6], k, k),
                read(m[7], k, k),
            )
        };
        let stamp = self.stamp;
        let a = self.first.get(i, stamp, || first_of(i));
        let b = if self.same {
            self.first.get(j, stamp, || first_of(j))
        } else {
            self.second.get(j, stamp, || second_of(j))
        };
        mass_of(std::array::from_fn(|k| a[k] + b[k]))
    }
}

fn pairs_of(n: usize) -> u64 {
    let n = n as u64;
    n * n.saturating_sub(1) / 2
}

/// A pair's number as `arg` reads it: `PairFirst(column)`,
/// `PairSecond(column)` or a constant.
fn arg(node: &Node, plan: PlanOf, columns: &mut Vec<(PlanOf, usize)>) -> Option<Arg> {
    let mut position = |slot: usize| match columns.iter().position(|&c| c == (plan, slot)) {
        Some(k) => k,
        None => {
            columns.push((plan, slot));
            columns.len() - 1
        }
    };
    match node {
        Node::Const(c) => Some(Arg::Const(*c)),
        Node::Vec(op @ (VecOp::PairFirst | VecOp::PairSecond), inner) => {
            let [Node::Column(slot)] = inner.as_slice() else {
                return None;
            };
            let k = position(*slot);
            Some(if *op == VecOp::PairFirst {
                Arg::First(k)
            } else {
                Arg::Second(k)
            })
        }
        _ => None,
    }
}

/// The terms of a cut joined by `&&`.
fn conjuncts_of<'n>(node: &'n Node, out: &mut Vec<&'n Node>) {
    match node {
        Node::Binary(BinOp::And, a, b) => {
            conjuncts_of(a, out);
            conjuncts_of(b, out);
        }
        other => out.push(other),
    }
}

/// Whether a tree takes the pairs of anything.
fn mentions_pairs(node: &Node) -> bool {
    match node {
        Node::Const(_) | Node::Column(_) | Node::Index { .. } => false,
        Node::Vec(VecOp::PairFirst | VecOp::PairSecond, _) => true,
        Node::Unary(_, a) | Node::Func1(_, _, a) => mentions_pairs(a),
        Node::Binary(_, a, b) | Node::Func2(_, _, a, b) | Node::Alt(a, b) => {
            mentions_pairs(a) || mentions_pairs(b)
        }
        Node::Aggregate(_, a, c) => mentions_pairs(a) || c.as_deref().is_some_and(mentions_pairs),
        Node::Vec(_, args) => args.iter().any(mentions_pairs),
    }
}

/// Whether a tree gives one value per entry over this window: it reads
/// columns of one number per entry, elements by index, or reductions of
/// collections (`Sum$`, `Length$`...), and no VecOps function.
fn per_entry(node: &Node, inputs: &Inputs<'_>) -> bool {
    match node {
        Node::Const(_) | Node::Index { .. } | Node::Aggregate(..) => true,
        Node::Column(slot) => inputs.slots[inputs.map[*slot]].offsets.is_none(),
        Node::Unary(_, a) | Node::Func1(_, _, a) => per_entry(a, inputs),
        Node::Binary(_, a, b) | Node::Func2(_, _, a, b) | Node::Alt(a, b) => {
            per_entry(a, inputs) && per_entry(b, inputs)
        }
        Node::Vec(..) => false,
    }
}

/// The offsets every paired column is laid out by, when they all are
/// collections of numbers laid out alike.
fn common_offsets(paired: &[&SlotData<'_>]) -> Option<Arc<Vec<usize>>> {
    let first = paired.first()?.offsets.clone()?;
    for d in paired {
        if matches!(d.values, Values::Str(_)) {
            return None;
        }
        let o = d.offsets.as_ref()?;
        if !Arc::ptr_eq(o, &first) && **o != *first {
            return None;
        }
    }
    Some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::eval::evaluate;
    use crate::analysis::fills::fills;

    const MUON_MASS: f64 = 0.105658;

    fn pair(op: VecOp, slot: usize) -> Node {
        Node::Vec(op, vec![Node::Column(slot)])
    }

    fn binary(op: BinOp, a: Node, b: Node) -> Node {
        Node::Binary(op, Box::new(a), Box::new(b))
    }

    /// `InvariantMasses` of the pairs of the value plan's slots 0 (pt),
    /// 1 (eta), 2 (phi), the muon mass a constant.
    fn dimuon_mass() -> Node {
        let (f, s) = (VecOp::PairFirst, VecOp::PairSecond);
        let m = Node::Const(MUON_MASS);
        Node::Vec(
            VecOp::InvariantMasses,
            vec![
                pair(f, 0),
                pair(f, 1),
                pair(f, 2),
                m.clone(),
                pair(s, 0),
                pair(s, 1),
                pair(s, 2),
                m,
            ],
        )
    }

    /// Muons of a window: 0 to 5 per entry (pt, eta, phi as floats, the
    /// charge as ints), and per entry nMuon and met; the value plan reads
    /// slots 0..3, the cut plan charge, nMuon, met, pt as its slots 0..4.
    struct Window {
        columns: Vec<Values>,
        offsets: Arc<Vec<usize>>,
    }

    fn window(entries: usize) -> Window {
        let counts: Vec<usize> = (0..entries).map(|e| (e * 7 + e / 3) % 6).collect();
        let mut offsets = vec![0];
        for c in &counts {
            offsets.push(offsets.last().unwrap() + c);
        }
        let n = *offsets.last().unwrap();
        let wave = |i: usize, k: f64| (i as f64 * k).sin();
        let columns = vec![
            Values::F32(
                (0..n)
                    .map(|i| (5.0 + 60.0 * wave(i, 0.37).abs()) as f32)
                    .collect(),
            ),
            Values::F32((0..n).map(|i| (2.4 * wave(i, 0.11)) as f32).collect()),
            Values::F32((0..n).map(|i| (3.1 * wave(i, 0.53)) as f32).collect()),
            Values::I32(
                (0..n)
                    .map(|i| if wave(i, 0.71) > 0.0 { 1 } else { -1 })
                    .collect(),
            ),
            Values::I32(counts.iter().map(|&c| c as i32).collect()),
            Values::F32(
                (0..entries)
                    .map(|e| (40.0 * wave(e, 0.29).abs()) as f32)
                    .collect(),
            ),
        ];
        Window {
            columns,
            offsets: Arc::new(offsets),
        }
    }

    fn slots(w: &Window) -> Vec<SlotData<'_>> {
        w.columns
            .iter()
            .enumerate()
            .map(|(k, v)| SlotData {
                values: v,
                elements: 0..v.len(),
                offsets: (k < 4).then(|| w.offsets.clone()),
                name: Arc::from(format!("c{k}")),
            })
            .collect()
    }

    const VALUE_MAP: [usize; 3] = [0, 1, 2];
    const CUT_MAP: [usize; 4] = [3, 4, 5, 0];

    /// The fused fills of `cut` (in the cut plan's slots) and the
    /// evaluator's: the values' bits and the entries selected.
    fn both(cut: Option<&Node>, w: &Window) -> [(Vec<u64>, u64); 2] {
        both_of(&dimuon_mass(), cut, w)
    }

    /// `both` for any value in the value plan's slots.
    fn both_of(value: &Node, cut: Option<&Node>, w: &Window) -> [(Vec<u64>, u64); 2] {
        let slots = slots(w);
        let entries = w.offsets.len() - 1;
        let inputs = |map| Inputs {
            entries,
            first_entry: 0,
            slots: &slots,
            map,
        };
        let (value_inputs, cut_inputs) = (inputs(&VALUE_MAP), inputs(&CUT_MAP));
        let fused = PairFills::of(value, cut).expect("a fused form");
        let mut fast = Fills::default();
        let slot = |p: PlanOf, s: usize| match p {
            PlanOf::Value => &slots[VALUE_MAP[s]],
            PlanOf::Cut => &slots[CUT_MAP[s]],
        };
        assert!(fused.fill(slot, &cut_inputs, &mut fast).unwrap());
        let mut slow = Fills::default();
        let value = evaluate(value, &value_inputs).unwrap();
        let passing = cut.map(|c| evaluate(c, &cut_inputs).unwrap());
        fills(value, (passing, None), true, &value_inputs, &mut slow).unwrap();
        [&fast, &slow].map(|f| {
            (
                f.values.iter().map(|x| x.to_bits()).collect(),
                f.entries_selected,
            )
        })
    }

    /// The dimuon question's cut (opposite charges, `nMuon >= 2 && met >
    /// 20`), the same with a pair's cut on a constant and an entry's cut on
    /// an element (`pt[1] > 20`: missing for entries of fewer muons), and no
    /// cut: the fused loop fills what the evaluator fills, bit for bit, in
    /// the same order, with the same entries selected.
    #[test]
    fn fused_pairs_are_the_evaluators() {
        let w = window(3_000);
        let (f, s) = (VecOp::PairFirst, VecOp::PairSecond);
        let opposite = binary(BinOp::Ne, pair(f, 0), pair(s, 0));
        let entry = binary(
            BinOp::And,
            binary(BinOp::Ge, Node::Column(1), Node::Const(2.0)),
            binary(BinOp::Gt, Node::Column(2), Node::Const(20.0)),
        );
        let question = binary(BinOp::And, opposite.clone(), entry.clone());
        let harder = binary(
            BinOp::And,
            binary(
                BinOp::And,
                binary(BinOp::Lt, Node::Const(25.0), pair(s, 3)),
                question.clone(),
            ),
            binary(
                BinOp::Gt,
                Node::Index { slot: 3, index: 1 },
                Node::Const(20.0),
            ),
        );
        for cut in [
            Some(&question),
            Some(&harder),
            Some(&entry),
            Some(&opposite),
            None,
        ] {
            let [fast, slow] = both(cut, &w);
            assert_eq!(fast, slow, "{cut:?}");
            assert!(fast.1 > 0 && !fast.0.is_empty(), "{cut:?}");
        }
    }

    /// Masses whose two particles are not read alike: the second particle
    /// reading other columns than the first (its eta is the first's phi
    /// column), or another constant mass (an electron's), which keep a
    /// four-vector per element for each particle; and a first particle
    /// reading the pair's second element, which makes each pair's from its
    /// eight numbers. Each fills what the evaluator fills, bit for bit.
    #[test]
    fn masses_of_unlike_particles_are_the_evaluators() {
        let w = window(3_000);
        let (f, s) = (VecOp::PairFirst, VecOp::PairSecond);
        let opposite = binary(BinOp::Ne, pair(f, 0), pair(s, 0));
        let cut = binary(
            BinOp::And,
            opposite,
            binary(BinOp::Ge, Node::Column(1), Node::Const(2.0)),
        );
        let (m, electron) = (Node::Const(MUON_MASS), Node::Const(0.000511));
        let mass = |a: [Node; 8]| Node::Vec(VecOp::InvariantMasses, a.to_vec());
        let other_columns = mass([
            pair(f, 0),
            pair(f, 1),
            pair(f, 2),
            m.clone(),
            pair(s, 0),
            pair(s, 2),
            pair(s, 2),
            m.clone(),
        ]);
        let other_mass = mass([
            pair(f, 0),
            pair(f, 1),
            pair(f, 2),
            m.clone(),
            pair(s, 0),
            pair(s, 1),
            pair(s, 2),
            electron,
        ]);
        let crossed = mass([
            pair(s, 0),
            pair(f, 1),
            pair(f, 2),
            m.clone(),
            pair(f, 0),
            pair(s, 1),
            pair(s, 2),
            m,
        ]);
        for value in [&other_columns, &other_mass, &crossed] {
            let [fast, slow] = both_of(value, Some(&cut), &w);
            assert_eq!(fast, slow, "{value:?}");
            assert!(fast.1 > 0 && !fast.0.is_empty(), "{value:?}");
        }
    }

    /// What the fused loop does not take: a weight-less request whose value
    /// is not pairs' masses, a cut mixing pairs in other than a comparison,
    /// and (per window) paired columns laid out differently.
    #[test]
    fn other_requests_are_left_to_the_evaluator() {
        let (f, s) = (VecOp::PairFirst, VecOp::PairSecond);
        assert!(PairFills::of(&Node::Column(0), None).is_none());
        let or = binary(
            BinOp::Or,
            binary(BinOp::Ne, pair(f, 0), pair(s, 0)),
            binary(BinOp::Gt, Node::Column(2), Node::Const(20.0)),
        );
        assert!(PairFills::of(&dimuon_mass(), Some(&or)).is_none());
        let w = window(50);
        let mut slots = slots(&w);
        let shifted: Vec<usize> = w.offsets.iter().map(|&o| o.min(10)).collect();
        slots[1].offsets = Some(Arc::new(shifted));
        let inputs = Inputs {
            entries: 50,
            first_entry: 0,
            slots: &slots,
            map: &CUT_MAP,
        };
        let fused = PairFills::of(&dimuon_mass(), None).unwrap();
        let slot = |_: PlanOf, s: usize| &slots[VALUE_MAP[s]];
        let mut out = Fills::default();
        assert!(!fused.fill(slot, &inputs, &mut out).unwrap());
    }
}
