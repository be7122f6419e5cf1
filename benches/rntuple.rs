//! RNTuple benchmark (issue #29, "Performance"), one JSON line per figure:
//! - `raw_read`: every column of the RNTuple read whole, through the reader
//!   the analysis engine scans with (`Origin::open`, chunk by chunk), the
//!   columns' clusters spread over all cores; the time includes opening the
//!   file and reading its metadata, as uproot's `ntuple.arrays` does;
//! - `decompress_limit`: the same pages' stored bytes (read beforehand, not
//!   timed) only decompressed, on all cores: what the reader could reach if
//!   decoding, checksums and I/O cost nothing (each thread into a buffer it
//!   keeps, grown beforehand);
//! - `histogram_decompress_limit`: the same, of the pages of the fields the
//!   histogram reads (`muon_pt`, `muon_eta`: values and offsets): what the
//!   histogram could reach if nothing but decompression cost anything;
//! - `histogram_distinct_limit`: the same with each distinct stored page
//!   once (the four muon vectors store the same offsets, which the reader
//!   decompresses once): the floor of what the histogram's answer needs;
//! - `histogram_jagged_cut_rntuple` and `_ttree`: compute_histogram of jagged
//!   `muon_pt` with `muon_pt > 20 && abs(muon_eta) < 2.4` (the TTree
//!   headline of benches/root_analysis.rs), server time of the tool's
//!   handler, on the RNTuple and on the TTree of the same events.
//!
//! `cargo bench --bench rntuple` runs one round over the pairs in
//! QUARRY_RNTUPLE_BENCH_PAIRS (`rntuple.root,ttree.root:...`, the files of
//! benchgen/gen_root.py with and without `--rntuple`); the catalog, with its
//! statistics pass done once, is kept in QUARRY_BENCH_CATALOG between
//! rounds. QUARRY_RNTUPLE_BENCH_ONLY=figure runs that figure alone,
//! QUARRY_RNTUPLE_BENCH_REPEAT times (for a profiler). scripts/bench-rntuple.sh alternates rounds with uproot's
//! (scripts/bench/uproot_rntuple.py) and prints the medians and ratios.
//! Without `--bench` (as `cargo test --all-targets` runs it) it checks itself
//! on the repository's `clusters.root` and its RNTuple copy: both forms must
//! give the same values and the same histogram.

mod common;

use std::hint::black_box;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::handlers::{
    Record, context, decompress_on_all_cores, link_into, reset_peak_rss, rss_mb, timed,
};
use quarry::analysis::Origin;
use quarry::formats::root::rntuple::Locator;
use quarry::formats::root::{RNTuple, RootFile, is_rntuple};
use quarry::mcp::tools::Context;
use rayon::prelude::*;
use serde_json::{Value, json};

/// The tree (or RNTuple) of gen_root.py's events, in both forms.
const TREE: &str = "events";

/// The RNTuple of a file and the file it is read from.
fn open_ntuple(path: &Path) -> (RootFile, RNTuple) {
    let file = RootFile::open(std::fs::File::open(path).unwrap()).unwrap();
    let keys = file.walk().unwrap();
    let key = keys
        .iter()
        .find(|k| is_rntuple(&k.key.class_name) && k.key.name == TREE)
        .unwrap_or_else(|| panic!("{} holds no RNTuple '{TREE}'", path.display()));
    let nt = file.rntuple(&key.key).unwrap();
    (file, nt)
}

/// What a whole read of an RNTuple found.
struct Raw {
    seconds: f64,
    entries: u64,
    /// Values of every column, the items of jagged ones counted one by one.
    values: u64,
    /// The pages' bytes once decompressed.
    uncompressed_bytes: u64,
}

/// Opens the file and reads every column whole. Each task is one column over
/// one cluster, with a reader of its own (a reader decodes one chunk at a
/// time, as each of the engine's threads has its own); the chunks are
/// decoded into typed values and dropped, as uproot's figure drops its array
/// (their memory given back to the pool, as the engine's streams do).
fn raw_read(path: &Path) -> Raw {
    let t = Instant::now();
    let (file, nt) = open_ntuple(path);
    let clusters = nt.cluster_ranges();
    let tasks: Vec<(usize, &Range<u64>)> = (0..nt.columns.len())
        .flat_map(|c| clusters.iter().map(move |r| (c, r)))
        .collect();
    let values: u64 = tasks
        .par_iter()
        .map(|&(c, cluster)| {
            let column = &nt.columns[c];
            let reader = Origin::Ntuple {
                ntuple: &nt,
                column,
            }
            .open(&file)
            .unwrap_or_else(|e| panic!("column {}: {e}", column.path));
            let mut chunk = reader.empty_column();
            let mut n = 0u64;
            for (i, range) in reader.basket_ranges().iter().enumerate() {
                // Chunks never cross a cluster's edge.
                if cluster.start <= range.start && range.end <= cluster.end {
                    reader.read_basket(i, &mut chunk).unwrap();
                    n += black_box(&chunk.values).len() as u64;
                }
            }
            // Its memory goes to the next task's chunk, as a scan's streams
            // give theirs back when they are dropped.
            chunk.recycle();
            n
        })
        .sum();
    Raw {
        seconds: t.elapsed().as_secs_f64(),
        entries: nt.entries,
        values,
        uncompressed_bytes: nt.sizes().1,
    }
}

/// Seconds to decompress the pages of the RNTuple's top-level fields
/// `fields` (every field when empty) on all cores (`decompress_on_all_cores`),
/// and the bytes that makes. With `distinct`, a page stored byte for byte as
/// one already taken is left out: its bytes decompressed are the same, and
/// the reader decompresses such offsets pages once (gen_root.py's four muon
/// vectors store the same offsets), so that floor is what the answer needs.
fn decompress_limit(path: &Path, fields: &[&str], distinct: bool) -> (f64, u64) {
    let (file, nt) = open_ntuple(path);
    let top = |mut field: usize| {
        while nt.schema.fields[field].parent != field {
            field = nt.schema.fields[field].parent;
        }
        field
    };
    let wanted = |c: usize| {
        let name = &nt.schema.fields[top(nt.schema.columns[c].field)].name;
        fields.is_empty() || fields.contains(&name.as_str())
    };
    let mut pages: Vec<Record> = Vec::new();
    let mut taken = std::collections::HashSet::new();
    for cluster in &nt.clusters {
        for (c, range) in cluster.columns.iter().enumerate() {
            if !wanted(c) {
                continue;
            }
            let bits = u64::from(nt.schema.columns[c].bits);
            for page in &range.pages {
                // The checksum a page may carry lies past its stated size.
                if let Locator::File { offset, size } = page.locator {
                    let len = (u64::from(page.elements) * bits).div_ceil(8);
                    let stored = file.read_at(offset, size as usize, "page").unwrap();
                    if !distinct || taken.insert(stored.clone()) {
                        pages.push((stored, len as usize));
                    }
                }
            }
        }
    }
    let (seconds, _) = decompress_on_all_cores(&pages);
    (seconds, pages.iter().map(|(_, len)| *len as u64).sum())
}

/// The TTree's values, counted as `raw_read` counts the RNTuple's (the
/// self-check's independent side: the TTree reader, not the RNTuple one).
fn ttree_values(path: &Path) -> u64 {
    let file = RootFile::open(std::fs::File::open(path).unwrap()).unwrap();
    let keys = file.walk().unwrap();
    let key = keys
        .iter()
        .find(|k| k.key.class_name == "TTree" && k.key.name == TREE)
        .unwrap();
    let tree = file.tree(&key.key).unwrap();
    tree.branches
        .iter()
        .map(|b| file.column(b).unwrap().values.len() as u64)
        .sum()
}

/// The fields the histogram reads.
const HISTOGRAM_FIELDS: [&str; 2] = ["muon_pt", "muon_eta"];

/// compute_histogram of the TTree headline on `name` in the root; returns
/// the answer's figures and the server time.
fn histogram(ctx: &Context, name: &str) -> (Value, f64) {
    let args = json!({"path": name, "tree": TREE, "branch": "muon_pt", "bins": 100,
                      "range": [0, 200], "selection": "muon_pt > 20 && abs(muon_eta) < 2.4"});
    let (before, _) = rss_mb();
    reset_peak_rss();
    let (v, seconds) = timed(ctx, "compute_histogram", &args);
    let (_, peak) = rss_mb();
    let counts = v["data"]["bin_counts"].clone();
    let in_range: f64 = counts
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .sum();
    let figures = json!({"entries": v["data"]["entries"], "in_range": in_range as u64,
                         "bin_counts": counts, "peak_rss_added_mb": peak - before});
    (figures, seconds)
}

fn report(file: &str, op: &str, seconds: f64, extra: Value) {
    let mut line = json!({"tool": "quarry", "op": op, "file": file, "seconds": seconds});
    if let (Some(l), Some(e)) = (line.as_object_mut(), extra.as_object()) {
        l.extend(e.clone());
    }
    println!("{line}");
}

/// The catalog's statistics pass for the file's tree (once; kept between rounds).
fn ensure_stats(ctx: &Context, name: &str) {
    let t = Instant::now();
    timed(
        ctx,
        "list_branches",
        &json!({"path": name, "tree": TREE, "include_stats": true, "limit": 1000}),
    );
    eprintln!("statistics of {name}: {:.2} s", t.elapsed().as_secs_f64());
}

/// An RNTuple file and the TTree file of the same events.
struct Pair {
    rntuple: PathBuf,
    ttree: PathBuf,
    /// Their names in the benchmark's root.
    names: (String, String),
}

/// One round of every figure on one pair; with `check`, the two forms must
/// agree value for value.
fn round(ctx: &Context, pair: &Pair, check: bool) {
    let file = pair.names.0.as_str();
    let raw = raw_read(&pair.rntuple);
    let raw_mb = raw.uncompressed_bytes as f64 / 1e6;
    report(
        file,
        "raw_read",
        raw.seconds,
        json!({"entries": raw.entries, "values": raw.values, "uncompressed_mb": raw_mb,
               "mb_per_s": raw_mb / raw.seconds}),
    );
    let (seconds, bytes) = decompress_limit(&pair.rntuple, &[], false);
    let mb = bytes as f64 / 1e6;
    report(
        file,
        "decompress_limit",
        seconds,
        json!({"uncompressed_mb": mb, "mb_per_s": mb / seconds}),
    );
    for (op, distinct) in [
        ("histogram_decompress_limit", false),
        ("histogram_distinct_limit", true),
    ] {
        let (seconds, bytes) = decompress_limit(&pair.rntuple, &HISTOGRAM_FIELDS, distinct);
        report(
            file,
            op,
            seconds,
            json!({"uncompressed_mb": bytes as f64 / 1e6}),
        );
    }
    let (on_rntuple, rntuple_seconds) = histogram(ctx, &pair.names.0);
    let (on_ttree, ttree_seconds) = histogram(ctx, &pair.names.1);
    report(
        file,
        "histogram_jagged_cut_rntuple",
        rntuple_seconds,
        on_rntuple.clone(),
    );
    report(
        file,
        "histogram_jagged_cut_ttree",
        ttree_seconds,
        on_ttree.clone(),
    );
    // The same events must fill the same bins, whichever form holds them.
    assert_eq!(
        on_rntuple["bin_counts"], on_ttree["bin_counts"],
        "{file}: the RNTuple and the TTree filled different histograms"
    );
    assert_eq!(on_rntuple["entries"], on_ttree["entries"]);
    assert_eq!(bytes, raw.uncompressed_bytes, "{file}: the limit's pages");
    if check {
        assert!(raw.entries > 0 && on_rntuple["in_range"].as_u64() > Some(0));
        assert_eq!(raw.values, ttree_values(&pair.ttree), "{file}: values read");
    }
}

/// The pairs of QUARRY_RNTUPLE_BENCH_PAIRS (`rntuple.root,ttree.root:...`).
fn pairs_from(list: &str) -> Vec<Pair> {
    list.split(':')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (rntuple, ttree) = p
                .split_once(',')
                .expect("a pair is RNTUPLE_FILE,TTREE_FILE");
            let name = |f: &str| {
                Path::new(f)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .to_string()
            };
            let names = (name(rntuple), name(ttree));
            assert_ne!(names.0, names.1, "the two files of a pair need two names");
            Pair {
                rntuple: rntuple.into(),
                ttree: ttree.into(),
                names,
            }
        })
        .collect()
}

/// The self-check's pair: the repository's events-like `clusters.root`
/// (several clusters) and its RNTuple copy (tests/data/README.md).
fn bundled_pair() -> Pair {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    Pair {
        rntuple: data.join("rntuple/copies/clusters.root"),
        ttree: data.join("root/clusters.root"),
        names: ("clusters_rntuple.root".into(), "clusters.root".into()),
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let listed = std::env::var("QUARRY_RNTUPLE_BENCH_PAIRS").unwrap_or_default();
    let pairs = if full && !listed.is_empty() {
        pairs_from(&listed)
    } else {
        if full {
            eprintln!(
                "QUARRY_RNTUPLE_BENCH_PAIRS is not set: scripts/bench-rntuple.sh generates the data"
            );
        }
        vec![bundled_pair()]
    };
    let keep = std::env::var_os("QUARRY_BENCH_CATALOG").map(PathBuf::from);
    let tmp = tempfile::tempdir().unwrap();
    let work = keep.unwrap_or_else(|| tmp.path().to_path_buf());
    let (data, catalog) = (work.join("data"), work.join("catalog"));
    std::fs::create_dir_all(&data).unwrap();
    for p in &pairs {
        link_into(&data, &p.rntuple, &p.names.0);
        link_into(&data, &p.ttree, &p.names.1);
    }
    let ctx = context(&data, &catalog);
    let only = std::env::var("QUARRY_RNTUPLE_BENCH_ONLY").unwrap_or_default();
    for p in &pairs {
        ensure_stats(&ctx, &p.names.0);
        ensure_stats(&ctx, &p.names.1);
        if only.is_empty() {
            round(&ctx, p, !full);
        } else {
            repeat(&ctx, p, &only);
        }
    }
}

/// One figure only, QUARRY_RNTUPLE_BENCH_REPEAT times (default 5): for a
/// profiler (`perf record`) to see that figure's work and nothing else.
fn repeat(ctx: &Context, pair: &Pair, op: &str) {
    let times: usize = std::env::var("QUARRY_RNTUPLE_BENCH_REPEAT")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    for _ in 0..times {
        let seconds = match op {
            "raw_read" => raw_read(&pair.rntuple).seconds,
            "decompress_limit" => decompress_limit(&pair.rntuple, &[], false).0,
            "histogram_decompress_limit" => {
                decompress_limit(&pair.rntuple, &HISTOGRAM_FIELDS, false).0
            }
            "histogram_distinct_limit" => {
                decompress_limit(&pair.rntuple, &HISTOGRAM_FIELDS, true).0
            }
            "histogram_jagged_cut_rntuple" => histogram(ctx, &pair.names.0).1,
            "histogram_jagged_cut_ttree" => histogram(ctx, &pair.names.1).1,
            other => panic!("QUARRY_RNTUPLE_BENCH_ONLY: no figure '{other}'"),
        };
        report(&pair.names.0, op, seconds, json!({}));
    }
}
