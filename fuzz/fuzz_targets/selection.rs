//! Feeds arbitrary text to the selection language as a cut on a real tree
//! (uproot-HZZ.root's `events`: scalar and jagged branches): parsing, type
//! checking and, for the cuts that check, evaluation over the whole tree.
//! Errors are expected; a panic, a hang or a runaway allocation is a bug.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use quarry::analysis::ops::count_selected;
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

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (file, tree) = file_and_tree();
    let columns = TreeColumns::new(tree);
    if let Ok(plan) = Plan::new(text, &columns) {
        let _ = count_selected(file, &columns, &plan, 0..columns.entries, &Job::default());
    }
});
