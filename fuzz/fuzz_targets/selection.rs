//! Feeds arbitrary text to the selection language as a cut on a real tree
//! (uproot-HZZ.root's `events`: scalar and jagged branches): parsing, type
//! checking and, for the cuts that check, evaluation over the whole tree.
//! Errors are expected; a panic, a hang or a runaway allocation is a bug. A cut
//! that checks is counted twice, with and without the basket ranges cluster
//! skipping uses: the counts must agree (a skip that drops a passing entry is
//! a bug).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use quarry::analysis::ops::count_selected;
use quarry::analysis::prune::BasketSpan;
use quarry::analysis::scan::to_f64;
use quarry::analysis::{Plan, TreeColumns};
use quarry::formats::root::{RootFile, Tree, latest};
use quarry::job::Job;

static HZZ: &[u8] = include_bytes!("../../testdata/root/uproot-HZZ.root");

fn file_and_tree() -> &'static (RootFile, Tree) {
    static CELL: OnceLock<(RootFile, Tree)> = OnceLock::new();
    CELL.get_or_init(|| {
        let file = RootFile::from_bytes(HZZ.to_vec()).expect("the test file");
        let keys = file.walk().expect("its keys");
        let key = latest(&keys, "events", Some("TTree")).expect("its tree").key.clone();
        let tree = file.tree(&key).expect("the tree");
        (file, tree)
    })
}

/// Each column's baskets with the range of their values, as the statistics
/// pass records them.
fn basket_spans(file: &RootFile, columns: &TreeColumns<'_>) -> Vec<(usize, Vec<BasketSpan>)> {
    let mut out = Vec::new();
    for (i, c) in columns.columns.iter().enumerate() {
        if c.leaf.is_some() {
            continue;
        }
        let mut spans = Vec::new();
        let mut at = 0u64;
        let read = file.for_each_chunk(c.branch, |chunk| {
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

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (file, tree) = file_and_tree();
    let plain = TreeColumns::new(tree);
    let Ok(plan) = Plan::new(text, &plain) else { return };
    static SPANS: OnceLock<Vec<(usize, Vec<BasketSpan>)>> = OnceLock::new();
    let spans = SPANS.get_or_init(|| basket_spans(file, &plain));
    let mut bounded = TreeColumns::new(tree);
    for (i, s) in spans {
        bounded.bounds.add_column(*i, s.clone(), bounded.entries);
    }
    let job = Job::default();
    let (a, b) = (
        count_selected(file, &plain, &plan, &job),
        count_selected(file, &bounded, &plan, &job),
    );
    if let (Ok(a), Ok(b)) = (a, b) {
        assert_eq!(a, b, "cluster skipping changed the count of {text:?}");
    }
});
