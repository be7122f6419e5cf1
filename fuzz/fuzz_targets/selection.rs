//! Feeds arbitrary text to the selection language as a cut on a real tree
//! (uproot-HZZ.root's `events`: scalar and jagged branches): parsing, type
//! checking and, for the cuts that check, evaluation over the whole tree.
//! Errors are expected; a panic, a hang or a runaway allocation is a bug. A cut
//! that checks is counted twice, with and without the basket ranges cluster
//! skipping uses: the counts must agree (a skip that drops a passing entry is
//! a bug). A cut the fast path takes (comparisons with constants) is also
//! counted and masked by it and by the evaluator over the whole tree, per
//! entry and, for a collection's cut, per element: they must agree too.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use quarry::analysis::eval::{Inputs, SlotData, Val, count_passing, entry_mask, evaluate, truth};
use quarry::analysis::dataset::Member;
use quarry::analysis::ops::count_selected;
use quarry::analysis::predicate::{Predicate, Rows};
use quarry::analysis::prune::BasketSpan;
use quarry::analysis::scan::to_f64;
use quarry::analysis::{Plan, TreeColumns};
use quarry::formats::root::{Column, RootFile, Tree, latest};
use quarry::job::Job;

static HZZ: &[u8] = include_bytes!("../../testdata/root/uproot-HZZ.root");

fn file_and_tree() -> &'static (RootFile, Tree) {
    static CELL: OnceLock<(RootFile, Tree)> = OnceLock::new();
    CELL.get_or_init(|| {
        // Cuts are evaluated on rayon's threads, with the stacks the daemon gives them.
        quarry::daemon::size_thread_stacks();
        let file = RootFile::from_bytes(HZZ.to_vec()).expect("the test file");
        let keys = file.walk().expect("its keys");
        let key = latest(&keys, "events", Some("TTree"))
            .expect("its tree")
            .key
            .clone();
        let tree = file.tree(&key).expect("the tree");
        (file, tree)
    })
}

/// Each column's baskets with the range of their values, as the statistics
/// pass records them.
fn basket_spans(file: &RootFile, columns: &TreeColumns<'_>) -> Vec<(usize, Vec<BasketSpan>)> {
    let mut out = Vec::new();
    for (i, c) in columns.columns.iter().enumerate() {
        // A TTree's whole branches only (the fuzzed files are TTrees).
        let Some(branch) = c.origin.branch().filter(|_| c.origin.leaf().is_none()) else {
            continue;
        };
        let mut spans = Vec::new();
        let mut at = 0u64;
        let read = file.for_each_chunk(branch, |chunk| {
            let values = to_f64(&chunk.values, 0..chunk.values.len());
            let finite: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
            let start = at;
            at += chunk.entries as u64;
            spans.push(BasketSpan {
                entries: start..at,
                values: values.len() as u64,
                finite: finite.len() as u64,
                min: finite.iter().copied().fold(f64::INFINITY, f64::min),
                max: finite.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            });
            Ok(())
        });
        if read.is_ok() {
            out.push((i, spans));
        }
    }
    out
}

/// Every column of the tree read whole (the file is small), with where each
/// entry's values start for a collection; None for what does not decode.
type Whole = Vec<Option<(Column, Option<Arc<Vec<usize>>>)>>;

fn whole_columns(file: &RootFile, columns: &TreeColumns<'_>) -> Whole {
    columns
        .columns
        .iter()
        .map(|c| {
            let branch = c.origin.branch()?;
            let column = match c.origin.leaf() {
                None => file.column(branch),
                Some(leaf) => file.leaf_column(branch, leaf),
            }
            .ok()?;
            let offsets = (column.counts.is_some() || column.inner > 1).then(|| {
                let mut at = 0;
                let mut offsets = vec![0];
                for e in 0..column.entries {
                    at += column.counts.as_ref().map_or(1, |c| c[e] as usize) * column.inner;
                    offsets.push(at);
                }
                Arc::new(offsets)
            });
            Some((column, offsets))
        })
        .collect()
}

/// The fast path's count and mask of `plan` (where it takes it) against the
/// evaluator's, over the whole tree.
fn predicate_agrees(plan: &Plan, whole: &Whole, entries: usize) {
    let Some(predicate) = Predicate::of(&plan.root) else {
        return;
    };
    let mut slots = Vec::new();
    for &c in &plan.columns {
        let Some((column, offsets)) = &whole[c] else {
            return;
        };
        slots.push(SlotData {
            values: &column.values,
            elements: 0..column.values.len(),
            offsets: offsets.clone(),
            name: Arc::from("x"),
        });
    }
    let map: Vec<usize> = (0..slots.len()).collect();
    let inputs = Inputs {
        entries,
        first_entry: 0,
        slots: &slots,
        map: &map,
    };
    let Some(count) = predicate.count(&inputs) else {
        return;
    };
    let Ok(value) = evaluate(&plan.root, &inputs) else {
        return;
    };
    assert_eq!(count, count_passing(&value, entries), "{}", plan.text);
    assert_eq!(
        predicate.mask(&inputs),
        Some(entry_mask(&value, entries)),
        "{}",
        plan.text
    );
    if let Val::Jagged { v, offsets, .. } = &value {
        let mut rows = Vec::new();
        let ran = predicate.chunks(&inputs, Rows::Elements(offsets), |c| {
            rows.extend_from_slice(c)
        });
        assert!(
            ran.is_some(),
            "a count over elements but no rows: {}",
            plan.text
        );
        let want: Vec<u8> = v.iter().map(|&x| u8::from(truth(x))).collect();
        assert_eq!(rows, want, "{}", plan.text);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (file, tree) = file_and_tree();
    let plain = TreeColumns::new(tree);
    let Ok(plan) = Plan::new(text, &plain) else {
        return;
    };
    static SPANS: OnceLock<Vec<(usize, Vec<BasketSpan>)>> = OnceLock::new();
    let spans = SPANS.get_or_init(|| basket_spans(file, &plain));
    let mut bounded = TreeColumns::new(tree);
    for (i, s) in spans {
        bounded.bounds.add_column(*i, s.clone(), bounded.entries);
    }
    static WHOLE: OnceLock<Whole> = OnceLock::new();
    let whole = WHOLE.get_or_init(|| whole_columns(file, &plain));
    predicate_agrees(&plan, whole, plain.entries as usize);
    let job = Job::default();
    let (a, b) = (
        count_selected(&Member::single(file, &plain), &plan, &job),
        count_selected(&Member::single(file, &bounded), &plan, &job),
    );
    if let (Ok((a, _)), Ok((b, _))) = (a, b) {
        assert_eq!(
            a.selected, b.selected,
            "cluster skipping changed the count of {text:?}"
        );
        // Skipped clusters are not read, and not counted as scanned.
        assert!(b.scanned <= a.scanned, "{text:?}: {b:?} read more than {a:?}");
        assert_eq!(a.scanned, plain.entries, "{text:?}: nothing to skip with");
    }
});
