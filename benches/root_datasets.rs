//! Dataset benchmark (issue #28, part 4), one JSON line per figure, the server
//! time of each tool call (its handler, without the transport):
//! - `dimuon_dataset`: the opposite-charge dimuon invariant mass (muon mass the
//!   constant 0.105658) of events with `nMuon >= 2 && met > 20`, histogrammed
//!   over every file of the dataset, with the peak memory the call adds and the
//!   bin counts (compared with scripts/bench/uproot_dataset.py's);
//! - `dimuon_one_file`: the same over the first file alone (its bytes per
//!   second against the dataset's: no per-file overhead beyond opening);
//! - `dry_run`: the same call with `dry_run: true` (the catalog alone);
//! - `open_members`: `read_branches(limit=0)` over the dataset, per file.
//!
//! `cargo bench --bench root_datasets` runs one round over the gen_root.py
//! files in QUARRY_DATASET_BENCH_DIR (the catalog, with the statistics pass done
//! once, kept in QUARRY_BENCH_CATALOG between rounds);
//! scripts/bench-root-datasets.sh alternates rounds with uproot's and prints
//! the medians and ratios. Without `--bench` (as `cargo test --all-targets`
//! runs it) it checks itself on three copies of tests/data/root/dimuon.root.

mod common;

use std::path::PathBuf;
use std::time::Instant;

use common::handlers::{self, context, cpu_seconds, reset_peak_rss, rss_mb};
use quarry::mcp::tools::Context;
use serde_json::{Value, json};

/// The branch names of one family of files.
struct Names {
    tree: &'static str,
    pt: &'static str,
    eta: &'static str,
    phi: &'static str,
    charge: &'static str,
    count: &'static str,
    met: &'static str,
}

/// gen_root.py's events.
const EVENTS: Names = Names {
    tree: "events",
    pt: "muon_pt",
    eta: "muon_eta",
    phi: "muon_phi",
    charge: "muon_charge",
    count: "nMuon",
    met: "met",
};

/// The repository's small dimuon file (scripts/fixtures/root_quantities.py).
const DIMUON: Names = Names {
    tree: "Events",
    pt: "Muon_pt",
    eta: "Muon_eta",
    phi: "Muon_phi",
    charge: "Muon_charge",
    count: "nMuon",
    met: "met",
};

const MUON_MASS: &str = "0.105658";

/// The question's arguments, as a physicist writes them with defines.
fn dimuon_args(n: &Names) -> Value {
    let first = |b: &str| format!("PairFirst({b})");
    let second = |b: &str| format!("PairSecond({b})");
    let mass = format!(
        "InvariantMasses({}, {}, {}, {MUON_MASS}, {}, {}, {}, {MUON_MASS})",
        first(n.pt),
        first(n.eta),
        first(n.phi),
        second(n.pt),
        second(n.eta),
        second(n.phi)
    );
    let opposite = format!("{} != {}", first(n.charge), second(n.charge));
    json!({
        "tree": n.tree,
        "define": {"m": mass, "os": opposite},
        "branch": "m",
        "selection": format!("os && {} >= 2 && {} > 20", n.count, n.met),
        "bins": 120,
        "range": [0, 300],
    })
}

/// Runs a tool's handler (`handlers::timed`); its answer, with the CPU
/// seconds it took as `cpu_seconds`, and the wall seconds it took.
fn timed(ctx: &Context, tool: &str, args: &Value) -> (Value, f64) {
    let cpu = cpu_seconds();
    let (mut answer, seconds) = handlers::timed(ctx, tool, args);
    answer["cpu_seconds"] = json!(cpu_seconds() - cpu);
    (answer, seconds)
}

fn report(op: &str, files: usize, seconds: f64, extra: Value) {
    let mut line = json!({"tool": "quarry", "op": op, "files": files, "seconds": seconds});
    if let (Some(l), Some(e)) = (line.as_object_mut(), extra.as_object()) {
        l.extend(e.clone());
    }
    println!("{line}");
}

/// `args` with `more`'s members added.
fn with(args: &Value, more: Value) -> Value {
    let mut all = args.clone();
    all.as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    all
}

/// The histogram's counts as whole numbers (unweighted, so exact).
fn counts(v: &Value) -> Vec<u64> {
    v["data"]["bin_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap() as u64)
        .collect()
}

/// One round of every figure over `files` (names within the root); the pairs
/// filled over the dataset and over its first file.
fn round(ctx: &Context, n: &Names, files: &[String], bytes: u64, first_bytes: u64) -> (u64, u64) {
    let question = dimuon_args(n);
    let dataset = with(&question, json!({"dataset": "*.root"}));
    let (before, _) = rss_mb();
    reset_peak_rss();
    let (v, seconds) = timed(ctx, "compute_histogram", &dataset);
    let (_, peak) = rss_mb();
    let all = counts(&v);
    report(
        "dimuon_dataset",
        files.len(),
        seconds,
        json!({"pairs": all.iter().sum::<u64>(), "counts": all, "peak_rss_added_mb": peak - before,
               "mb_per_s": bytes as f64 / 1e6 / seconds, "cpu_seconds": v["cpu_seconds"]}),
    );
    let one = with(&question, json!({"path": files[0]}));
    let (v, seconds) = timed(ctx, "compute_histogram", &one);
    let one_pairs = counts(&v).iter().sum::<u64>();
    report(
        "dimuon_one_file",
        1,
        seconds,
        json!({"pairs": one_pairs, "mb_per_s": first_bytes as f64 / 1e6 / seconds,
               "cpu_seconds": v["cpu_seconds"]}),
    );
    let (v, seconds) = timed(
        ctx,
        "compute_histogram",
        &with(&dataset, json!({"dry_run": true})),
    );
    report(
        "dry_run",
        files.len(),
        seconds,
        json!({"clusters": v["data"]["clusters"], "bytes_to_read": v["data"]["bytes_to_read"]}),
    );
    let members = json!({"dataset": "*.root", "tree": n.tree, "branches": [n.met], "limit": 0});
    let (_, seconds) = timed(ctx, "read_branches", &members);
    report(
        "open_members",
        files.len(),
        seconds,
        json!({"ms_per_file": seconds * 1e3 / files.len() as f64}),
    );
    (all.iter().sum(), one_pairs)
}

/// The catalog's statistics of every file (once; kept between rounds), so that
/// cluster skipping has what it needs, as in a daemon that has run a while.
fn ensure_stats(ctx: &Context, n: &Names, files: &[String]) {
    let t = Instant::now();
    for f in files {
        timed(
            ctx,
            "list_branches",
            &json!({"path": f, "tree": n.tree, "include_stats": true, "limit": 1000}),
        );
    }
    eprintln!(
        "statistics of {} files: {:.2} s",
        files.len(),
        t.elapsed().as_secs_f64()
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let dir = std::env::var_os("QUARRY_DATASET_BENCH_DIR").map(PathBuf::from);
    let keep = std::env::var_os("QUARRY_BENCH_CATALOG").map(PathBuf::from);
    let tmp = tempfile::tempdir().unwrap();
    let work = keep.unwrap_or_else(|| tmp.path().to_path_buf());
    let catalog = work.join("catalog");
    let (names, data) = match dir {
        Some(dir) if full => (&EVENTS, dir),
        _ => {
            if full {
                eprintln!(
                    "QUARRY_DATASET_BENCH_DIR is not set: scripts/bench-root-datasets.sh generates the data"
                );
            }
            let data = work.join("data");
            std::fs::create_dir_all(&data).unwrap();
            let dimuon =
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/root/dimuon.root");
            for i in 0..3 {
                std::fs::copy(&dimuon, data.join(format!("dimuon_{i}.root"))).unwrap();
            }
            (&DIMUON, data)
        }
    };
    let mut files: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().to_string();
            name.ends_with(".root").then_some(name)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .root files in {}", data.display());
    let size = |f: &String| std::fs::metadata(data.join(f)).unwrap().len();
    let bytes: u64 = files.iter().map(size).sum();
    let ctx = context(&data, &catalog);
    ensure_stats(&ctx, names, &files);
    let (dataset_pairs, one_pairs) = round(&ctx, names, &files, bytes, size(&files[0]));
    if !full {
        // The self-check's files are copies of one: the dataset holds each
        // pair of the file once per copy (and the file has pairs to fill).
        assert!(one_pairs > 0, "the dimuon file fills no pair");
        assert_eq!(dataset_pairs, one_pairs * files.len() as u64);
    }
}
