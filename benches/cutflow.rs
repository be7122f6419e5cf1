//! Cutflow benchmark (issue #30, part 4): a 10-step `cutflow` against one
//! `apply_selection` of what its last step selects (the ten cuts together),
//! the server time of each tool call (its handler), as JSON lines, and their
//! ratio (the target: at most 1.3).
//!
//! `cargo bench --bench cutflow` reads the files in QUARRY_CUTFLOW_BENCH_FILES
//! (colon-separated, from benchgen/gen_root.py; ten files of 1M events stand
//! for the 10M-event file) as one dataset, QUARRY_BENCH_ROUNDS times (3 by
//! default), and prints each figure's median. Without `--bench` (as
//! `cargo test --all-targets` runs it) it checks itself on the bundled HZZ
//! file: the cutflow's last step selects what apply_selection selects.

mod common;

use std::path::PathBuf;

use common::handlers::{context, link_into, timed};
use serde_json::{Value, json};

/// gen_root.py's branches: ten cuts, each on what the ones before leave.
const EVENTS: [&str; 10] = [
    "nMuon >= 1",
    "met > 10",
    "Sum$(muon_pt > 20) >= 1",
    "nJet >= 2",
    "abs(muon_eta) < 2.4",
    "weight > 0.8",
    "Max$(jet_pt) > 40",
    "met < 300",
    "nMuon >= 2",
    "Sum$(muon_charge) == 0",
];

/// The bundled HZZ file's nearest equivalents (the self-check).
const HZZ: [&str; 10] = [
    "NMuon >= 1",
    "MET_px > -100",
    "Sum$(Muon_Px > 5) >= 1",
    "NJet >= 0",
    "abs(Muon_Pz) < 500",
    "EventWeight > 0",
    "Max$(Muon_E) > 10",
    "MET_py < 300",
    "NMuon >= 2",
    "Sum$(Muon_Charge) == 0",
];

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let files = std::env::var("QUARRY_CUTFLOW_BENCH_FILES").unwrap_or_default();
    let rounds: usize = std::env::var("QUARRY_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(if full { 3 } else { 1 });
    let tmp = tempfile::tempdir().unwrap();
    let (data, catalog) = (tmp.path().join("data"), tmp.path().join("catalog"));
    std::fs::create_dir_all(&data).unwrap();
    let (cuts, list): (&[&str; 10], Vec<PathBuf>) = if files.is_empty() || !full {
        if full {
            eprintln!("QUARRY_CUTFLOW_BENCH_FILES is not set: the self-check on the HZZ file runs");
        }
        let hzz = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/root/uproot-HZZ.root");
        (&HZZ, vec![hzz])
    } else {
        (&EVENTS, files.split(':').map(PathBuf::from).collect())
    };
    // A root of hard links (or copies, across file systems) to just these files.
    for f in &list {
        link_into(&data, f, &f.file_name().unwrap().to_string_lossy());
    }
    let ctx = context(&data, &catalog);
    let steps: Vec<Value> = cuts
        .iter()
        .enumerate()
        .map(|(k, c)| json!({"name": format!("step {}", k + 1), "cut": c}))
        .collect();
    let all: Vec<String> = cuts.iter().map(|c| format!("({c})")).collect();
    let together = all.join(" && ");
    let flow = json!({"dataset": "*.root", "tree": "events", "cuts": steps});
    let selection = json!({"dataset": "*.root", "tree": "events", "selection": together});
    let (mut flow_s, mut sel_s) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let (f, fs) = timed(&ctx, "cutflow", &flow);
        let (s, ss) = timed(&ctx, "apply_selection", &selection);
        let last = &f["data"]["steps"][9]["entries"];
        assert_eq!(
            last, &s["data"]["entries_selected"],
            "the last step selects what the ten cuts together select"
        );
        assert_eq!(f["data"]["entries_total"], s["data"]["entries_total"]);
        println!(
            "{}",
            json!({"round": round, "cutflow_seconds": fs, "apply_selection_seconds": ss,
                   "entries_total": f["data"]["entries_total"], "last_step": last})
        );
        flow_s.push(fs);
        sel_s.push(ss);
    }
    let (f, s) = (median(flow_s), median(sel_s));
    println!(
        "{}",
        json!({"op": "cutflow_10_steps_vs_apply_selection", "files": list.len(),
               "cutflow_median_seconds": f, "apply_selection_median_seconds": s, "ratio": f / s})
    );
}
