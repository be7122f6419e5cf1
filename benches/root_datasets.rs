//! Dataset benchmark (issue #28, part 4), one JSON line per figure, the server
//! time of each tool call (its handler, without the transport):
//! - `dimuon_dataset`: the opposite-charge dimuon invariant mass (muon mass the
//!   constant 0.105658) of events with `nMuon >= 2 && met > 20`, histogrammed
//!   over every file of the dataset, with the peak memory the call adds and the
//!   bin counts (compared with scripts/bench/uproot_dataset.py's);
//! - `dimuon_one_file`: the same over the first file alone (its bytes per
//!   second against the dataset's: no per-file overhead beyond opening);
//! - `dry_run`: the same call with `dry_run: true` (the catalog alone);
//! - `open_members`: `read_branches(limit=0)` over the dataset, per file;
//! - `inflate_limit`: the stored baskets of the question's six branches in
//!   every file (read beforehand, not timed) only decompressed, on all cores,
//!   each thread into a buffer it keeps: what the histogram could reach if
//!   reading, decoding, the cut and the pairs cost nothing (the figure the
//!   ratio against uproot is bounded by).
//!
//! `cargo bench --bench root_datasets` runs one round over the gen_root.py
//! files in QUARRY_DATASET_BENCH_DIR (the catalog, with the statistics pass done
//! once, kept in QUARRY_BENCH_CATALOG between rounds);
//! scripts/bench-root-datasets.sh alternates rounds with uproot's and prints
//! the medians and ratios. Without `--bench` (as `cargo test --all-targets`
//! runs it) it checks itself on three copies of tests/data/root/dimuon.root.

mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use common::handlers::{
    self, Record, context, cpu_seconds, decompress_on_all_cores, minor_faults, reset_peak_rss,
    rss_mb,
};
use quarry::formats::root::RootFile;
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
/// seconds it took as `cpu_seconds` and the pages it touched fresh as
/// `minor_faults` (each one a page the kernel zeroed: buffers not reused),
/// and the wall seconds it took.
fn timed(ctx: &Context, tool: &str, args: &Value) -> (Value, f64) {
    let (cpu, faults) = (cpu_seconds(), minor_faults());
    let (mut answer, seconds) = handlers::timed(ctx, tool, args);
    answer["cpu_seconds"] = json!(cpu_seconds() - cpu);
    answer["minor_faults"] = json!(minor_faults() - faults);
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
               "mb_per_s": bytes as f64 / 1e6 / seconds, "cpu_seconds": v["cpu_seconds"],
               "minor_faults": v["minor_faults"]}),
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

/// The stored baskets of the question's branches in the file at `path`,
/// each read once, key and all, then its key's header dropped.
fn stored_baskets(path: &Path, n: &Names) -> Vec<Record> {
    let file = RootFile::open(std::fs::File::open(path).unwrap()).unwrap();
    let keys = file.walk().unwrap();
    let key = keys
        .iter()
        .find(|k| k.key.class_name == "TTree" && k.key.name == n.tree)
        .unwrap_or_else(|| panic!("{} holds no tree '{}'", path.display(), n.tree));
    let tree = file.tree(&key.key).unwrap();
    let wanted = [n.count, n.met, n.pt, n.eta, n.phi, n.charge];
    let mut baskets = Vec::new();
    for branch in tree
        .branches
        .iter()
        .filter(|b| wanted.contains(&b.name.as_str()))
    {
        let written = branch.basket_seek.iter().zip(&branch.basket_bytes);
        for (&seek, &bytes) in written.take(branch.write_basket) {
            let (Ok(seek), Ok(bytes)) = (u64::try_from(seek), usize::try_from(bytes)) else {
                continue;
            };
            if bytes == 0 {
                continue;
            }
            let mut stored = file.read_at(seek, bytes, "basket").unwrap();
            // A TKey: nbytes (4), version (2), object length (4), date (4),
            // key length (2), all big-endian.
            let object_len = u32::from_be_bytes(stored[6..10].try_into().unwrap()) as usize;
            let key_len = usize::from(u16::from_be_bytes(stored[14..16].try_into().unwrap()));
            stored.drain(..key_len);
            baskets.push((stored, object_len));
        }
    }
    baskets
}

/// Wall and CPU seconds to decompress the question's baskets of every file
/// in `files` on all cores (`decompress_on_all_cores`), ten files at a time
/// (their baskets read beforehand, not timed: memory for ten files, and a
/// wait for the last basket of a batch that is a small share of it), and
/// the stored and decompressed bytes.
fn inflate_limit(files: &[PathBuf], n: &Names) -> (f64, f64, u64, u64) {
    let (mut wall, mut cpu, mut stored, mut inflated) = (0.0, 0.0, 0, 0);
    for batch in files.chunks(10) {
        let baskets: Vec<Record> = batch.iter().flat_map(|f| stored_baskets(f, n)).collect();
        let (w, c) = decompress_on_all_cores(&baskets);
        wall += w;
        cpu += c;
        stored += baskets.iter().map(|(b, _)| b.len() as u64).sum::<u64>();
        inflated += baskets.iter().map(|(_, len)| *len as u64).sum::<u64>();
    }
    (wall, cpu, stored, inflated)
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
    let paths: Vec<PathBuf> = files.iter().map(|f| data.join(f)).collect();
    let (seconds, cpu, stored, inflated) = inflate_limit(&paths, names);
    report(
        "inflate_limit",
        files.len(),
        seconds,
        json!({"cpu_seconds": cpu, "stored_mb": stored as f64 / 1e6,
               "uncompressed_mb": inflated as f64 / 1e6}),
    );
    if !full {
        // The self-check's files are copies of one: the dataset holds each
        // pair of the file once per copy (and the file has pairs to fill).
        assert!(one_pairs > 0, "the dimuon file fills no pair");
        assert_eq!(dataset_pairs, one_pairs * files.len() as u64);
    }
}
