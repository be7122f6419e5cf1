//! ROOT analysis engine benchmark (issue #8 §4), one JSON line per figure, the
//! server time of each tool call (its handler, without the transport):
//! - compute_histogram of jagged `muon_pt` with `muon_pt > 20 && abs(muon_eta)
//!   < 2.4`, with the peak memory it adds;
//! - compute_histogram of flat `met`; apply_selection `met > 50 && nMuon >= 2`;
//! - read_branches of 10,000 rows x 3 branches at offset 5,000,000;
//! - get_branch_stats of `met` with quantiles (compared with its histogram);
//! - export_branches of 1,000,000 entries x 4 branches to Parquet;
//! - apply_selection `event_number < 1000`: the bytes it reads.
//!
//! `cargo bench --bench root_analysis` runs one round over the files in
//! QUARRY_ROOT_BENCH_FILES (from benchgen/gen_root.py; the catalog,
//! with the statistics pass done once, is kept in QUARRY_BENCH_CATALOG between
//! rounds). scripts/bench-root-analysis.sh alternates rounds with uproot's
//! (scripts/bench/uproot_analysis.py) and prints the medians and ratios.
//! Without `--bench` (as `cargo test --all-targets` runs it) it checks itself
//! on the bundled HZZ file.

mod common;

use std::path::PathBuf;
use std::time::Instant;

use common::handlers::{context, link_into, reset_peak_rss, rss_mb, timed};
use quarry::mcp::tools::Context;
use serde_json::{Value, json};

struct Names {
    tree: &'static str,
    jagged: &'static str,
    jagged_cut: &'static str,
    flat: &'static str,
    flat_cut: &'static str,
    rows: [&'static str; 3],
    export: [&'static str; 4],
    first_entries_cut: &'static str,
}

/// gen_root.py's branches.
const EVENTS: Names = Names {
    tree: "events",
    jagged: "muon_pt",
    jagged_cut: "muon_pt > 20 && abs(muon_eta) < 2.4",
    flat: "met",
    flat_cut: "met > 50 && nMuon >= 2",
    rows: ["event_number", "met", "muon_pt"],
    export: ["event_number", "met", "nMuon", "muon_pt"],
    first_entries_cut: "event_number < 1000",
};

/// The bundled HZZ file's nearest equivalents (the self-check).
const HZZ: Names = Names {
    tree: "events",
    jagged: "Muon_Px",
    jagged_cut: "Muon_Px > 20 && abs(Muon_Py) < 40",
    flat: "MET_px",
    flat_cut: "MET_px > 5 && NMuon >= 2",
    rows: ["NMuon", "MET_px", "Muon_Px"],
    export: ["NMuon", "MET_px", "MET_py", "Muon_Px"],
    first_entries_cut: "NMuon < 0",
};

/// QUARRY_BENCH_OP=name runs only that figure, QUARRY_BENCH_REPEAT times (for
/// profiling).
fn wanted(op: &str) -> bool {
    std::env::var("QUARRY_BENCH_OP").map_or(true, |only| only == op)
}

fn report(file: &str, op: &str, seconds: f64, extra: Value) {
    let mut line = json!({"tool": "quarry", "op": op, "file": file, "seconds": seconds});
    if let (Some(l), Some(e)) = (line.as_object_mut(), extra.as_object()) {
        l.extend(e.clone());
    }
    println!("{line}");
}

/// What a figure reports beside its time, from the tool's answer.
type Extra = fn(&Value, &Names) -> Value;

/// One round of every figure on one file (`name` within the root, `size`
/// bytes), with `offset` for the page and `export` entries to export.
fn round(ctx: &Context, name: &str, n: &Names, offset: u64, export: u64, size: u64) {
    let out = format!("bench-{}.parquet", name.replace('/', "_"));
    let figures: [(&str, &str, Value, Extra); 7] = [
        (
            "histogram_jagged_cut",
            "compute_histogram",
            json!({"branch": n.jagged, "bins": 100, "range": [0, 200], "selection": n.jagged_cut}),
            |v, _| json!({"entries": v["data"]["entries"]}),
        ),
        (
            "histogram_flat",
            "compute_histogram",
            json!({"branch": n.flat, "bins": 100, "range": [0, 500]}),
            |v, _| json!({"entries": v["data"]["entries"]}),
        ),
        (
            "selection_flat",
            "apply_selection",
            json!({"selection": n.flat_cut}),
            |v, _| json!({"selected": v["data"]["entries_selected"]}),
        ),
        (
            "read_page",
            "read_branches",
            json!({"branches": n.rows, "offset": offset, "limit": 10_000}),
            |v, _| json!({"rows": v["data"]["entries"]}),
        ),
        (
            "stats_quantiles",
            "get_branch_stats",
            json!({"branches": [n.flat], "quantiles": [0.25, 0.5, 0.75]}),
            |v, n| json!({"count": v["data"]["statistics"][n.flat]["count"]}),
        ),
        (
            "export_parquet",
            "export_branches",
            json!({"branches": n.export, "output_path": out, "output_format": "parquet", "limit": export}),
            |v, _| json!({"entries": v["data"]["entries_written"], "bytes": v["data"]["size_bytes"]}),
        ),
        (
            "selection_first_entries",
            "apply_selection",
            json!({"selection": n.first_entries_cut}),
            |v, _| {
                json!({"bytes_read": v["metadata"]["bytes_read"],
                       "clusters_skipped": v["metadata"]["clusters_skipped"]})
            },
        ),
    ];
    let repeat: usize = std::env::var("QUARRY_BENCH_REPEAT")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    for (op, tool, args, extra) in figures {
        if !wanted(op) {
            continue;
        }
        let mut all = json!({"path": name, "tree": n.tree});
        all.as_object_mut()
            .unwrap()
            .extend(args.as_object().unwrap().clone());
        for _ in 0..repeat {
            let (before, _) = rss_mb();
            reset_peak_rss();
            let (v, seconds) = timed(ctx, tool, &all);
            let (_, peak) = rss_mb();
            let mut more = extra(&v, n);
            more["peak_rss_added_mb"] = json!(peak - before);
            if let Some(read) = v["metadata"]["bytes_read"].as_u64() {
                more["fraction_read"] = json!(read as f64 / size as f64);
            }
            report(name, op, seconds, more);
        }
    }
}

/// The catalog's statistics pass for the file's tree (once; kept between rounds).
fn ensure_stats(ctx: &Context, name: &str, tree: &str) {
    let t = Instant::now();
    timed(
        ctx,
        "list_branches",
        &json!({"path": name, "tree": tree, "include_stats": true, "limit": 1000}),
    );
    eprintln!("statistics of {name}: {:.2} s", t.elapsed().as_secs_f64());
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let files = std::env::var("QUARRY_ROOT_BENCH_FILES").unwrap_or_default();
    let keep = std::env::var_os("QUARRY_BENCH_CATALOG").map(PathBuf::from);
    let tmp = tempfile::tempdir().unwrap();
    let work = keep.unwrap_or_else(|| tmp.path().to_path_buf());
    let (data, catalog) = (work.join("data"), work.join("catalog"));
    std::fs::create_dir_all(&data).unwrap();
    let (names, list): (&Names, Vec<PathBuf>) = if files.is_empty() || !full {
        if full {
            eprintln!(
                "QUARRY_ROOT_BENCH_FILES is not set: scripts/bench-root-analysis.sh generates the data"
            );
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
    for f in &list {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let size = std::fs::metadata(f).unwrap().len();
        ensure_stats(&ctx, &name, names.tree);
        let (offset, export) = if full {
            (5_000_000, 1_000_000)
        } else {
            (100, 1000)
        };
        round(&ctx, &name, names, offset, export, size);
    }
}
