//! Expressions written out beside branches (`export_branches`' columns):
//! which columns a scan reads for the branches, the cut and the
//! expressions, and an expression's values for a window laid out as a
//! column's part for the writers.

use super::eval::Val;
use super::plan::Plan;
use super::quantities::{Named, Quantity};
use super::scan::ColumnPart;
use crate::formats::root::Values;

/// Where an exported column's values come from in a window.
pub(super) enum Source {
    /// The scan's column at this position.
    Stored(usize),
    /// The expression at this position of `ReadColumns::plans`.
    Computed(usize),
}

/// The columns a scan reads (indices into `TreeColumns::columns`, each
/// once), and how the exported columns, the expressions and the cut find
/// theirs among them.
pub(super) struct ReadColumns<'p> {
    pub columns: Vec<usize>,
    pub sources: Vec<Source>,
    pub plans: Vec<&'p Plan>,
    /// Each expression's slots as positions in `columns`.
    pub plan_maps: Vec<Vec<usize>>,
    /// The cut's slots as positions in `columns`.
    pub cut_map: Vec<usize>,
}

impl<'p> ReadColumns<'p> {
    /// The exported branches are read first, in order, then what the
    /// expressions and the cut read besides.
    pub fn new(named: &'p [Named], cut: Option<&Plan>) -> ReadColumns<'p> {
        let mut columns: Vec<usize> = Vec::new();
        let position =
            |c: usize, columns: &mut Vec<usize>| match columns.iter().position(|&x| x == c) {
                Some(i) => i,
                None => {
                    columns.push(c);
                    columns.len() - 1
                }
            };
        let mut sources = Vec::with_capacity(named.len());
        for n in named {
            if let Quantity::Branch(c) = n.quantity {
                sources.push(Source::Stored(position(c, &mut columns)));
            }
        }
        let (mut plans, mut plan_maps) = (Vec::new(), Vec::new());
        let mut stored = sources.into_iter();
        let mut sources = Vec::with_capacity(named.len());
        for n in named {
            match &n.quantity {
                Quantity::Branch(_) => sources.push(stored.next().expect("one per branch")),
                Quantity::Expression(plan) => {
                    plan_maps.push(
                        plan.columns
                            .iter()
                            .map(|&c| position(c, &mut columns))
                            .collect(),
                    );
                    plans.push(plan);
                    sources.push(Source::Computed(plans.len() - 1));
                }
            }
        }
        let cut_map = cut.map_or(Vec::new(), |p| {
            p.columns
                .iter()
                .map(|&c| position(c, &mut columns))
                .collect()
        });
        ReadColumns {
            columns,
            sources,
            plans,
            plan_maps,
            cut_map,
        }
    }
}

/// An expression's values over a window, as a column: a number per entry
/// (NaN where it has no value), or a list per entry (empty where it has no
/// value).
pub(super) struct Computed {
    values: Values,
    offsets: Option<Vec<usize>>,
}

impl Computed {
    pub fn of(v: Val, entries: usize) -> Computed {
        let (values, offsets) = match v {
            Val::Const(c) => (vec![c; entries], None),
            Val::Scalar { mut v, valid } => {
                if let Some(valid) = valid {
                    for (x, ok) in v.iter_mut().zip(valid) {
                        if !ok {
                            *x = f64::NAN;
                        }
                    }
                }
                (v, None)
            }
            Val::Jagged {
                v, offsets, valid, ..
            } => match valid {
                None => (v, Some(offsets.to_vec())),
                Some(valid) => {
                    let mut kept = Vec::with_capacity(v.len());
                    let mut starts = Vec::with_capacity(offsets.len());
                    starts.push(0);
                    for (w, ok) in offsets.windows(2).zip(valid) {
                        if ok {
                            kept.extend_from_slice(&v[w[0]..w[1]]);
                        }
                        starts.push(kept.len());
                    }
                    (kept, Some(starts))
                }
            },
        };
        Computed {
            values: Values::F64(values),
            offsets,
        }
    }

    pub fn part(&self) -> ColumnPart<'_> {
        ColumnPart::computed(&self.values, self.offsets.as_deref())
    }
}
