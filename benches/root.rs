//! ROOT engine benchmark (issue #3 targets), printing one JSON line per figure:
//! - full read of a flat and a jagged float branch, in MB/s of uncompressed
//!   basket data (target >= 500 MB/s; >= 3x uproot on the jagged one, which
//!   scripts/bench-root.sh measures in the same run);
//! - inspect_file / list_branches server time from the catalog (target 0.2 ms).
//!
//! `cargo bench --bench root` reads the files in QUARRY_ROOT_BENCH_FILES
//! (colon-separated, from ../shared/benchgen/gen_root.py; scripts/bench-root.sh
//! generates them). Without `--bench` (as `cargo test --all-targets` runs it) it
//! checks itself on the bundled HZZ file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use quarry::catalog::Catalog;
use quarry::formats::root::RootFile;
use quarry::index::{IndexOptions, Indexer, Quiet, StatsMode};
use quarry::mcp::tools::{self, Context, ServerSettings};
use quarry::roots::Roots;
use serde_json::json;

/// Opens the file, reads its tree and decodes one whole branch: what a full read
/// costs from scratch (the page cache is warm for both tools).
fn read_branch(path: &Path, name: &str) -> (usize, f64) {
    let file = RootFile::open(path).unwrap();
    let keys = file.walk().unwrap();
    let key = keys.iter().find(|k| k.key.class_name == "TTree").unwrap();
    let tree = file.tree(&key.key).unwrap();
    let branch = tree.branches.iter().find(|b| b.name == name).unwrap();
    (
        file.column(branch).unwrap().values.len(),
        branch.tot_bytes as f64 / 1e6,
    )
}

fn read_throughput(path: &Path, branches: &[&str], repeats: usize) {
    for name in branches {
        let mut best = f64::INFINITY;
        let (mut values, mut mb) = (0, 0.0);
        for _ in 0..repeats {
            let t = Instant::now();
            (values, mb) = read_branch(path, name);
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{}",
            json!({"tool": "quarry", "file": path.file_name().unwrap().to_string_lossy(), "branch": name,
                   "seconds": best, "uncompressed_mb": mb, "mb_per_s": mb / best, "values": values})
        );
    }
}

fn catalog_latency(data: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let catalog_dir = tmp.path().join("catalog");
    let roots = Roots::new(vec![("data".into(), data.to_path_buf())]).unwrap();
    let catalog = Arc::new(Catalog::open(&catalog_dir, &roots).unwrap());
    let options = IndexOptions {
        threads: 2,
        batch: 512,
        excluded_dirs: vec![catalog_dir.clone()],
        stats: StatsMode::Lazy,
    };
    Indexer::new(catalog.clone(), options)
        .unwrap()
        .scan_all(&Quiet)
        .unwrap();
    let ctx = Context::new(catalog, ServerSettings::default());
    let calls = [
        (
            "inspect_file",
            json!({"path": "root/nanoAOD_2015_CMS_Open_Data_ttbar.root"}),
        ),
        (
            "list_branches",
            json!({"path": "root/nanoAOD_2015_CMS_Open_Data_ttbar.root", "tree": "Events", "pattern": "Jet_*"}),
        ),
        (
            "list_branches",
            json!({"path": "root/uproot-HZZ.root", "tree": "events"}),
        ),
    ];
    for (tool, args) in calls {
        let def = tools::all().find(|d| d.name == tool).unwrap();
        let mut times: Vec<f64> = (0..300)
            .map(|_| {
                let t = Instant::now();
                (def.handler)(&ctx, args.as_object().unwrap().clone()).unwrap();
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{}",
            json!({"tool": "quarry", "call": tool, "args": args, "p50_ms": times[150], "p99_ms": times[296], "target_ms": 0.2})
        );
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let testdata = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata");
    // QUARRY_ROOT_BENCH_BRANCH=name reads only that branch (for profiling).
    if let Ok(only) = std::env::var("QUARRY_ROOT_BENCH_BRANCH") {
        for f in std::env::var("QUARRY_ROOT_BENCH_FILES")
            .unwrap_or_default()
            .split(':')
        {
            read_throughput(Path::new(f), &[only.as_str()], 20);
        }
        return;
    }
    catalog_latency(&testdata);
    let files = std::env::var("QUARRY_ROOT_BENCH_FILES").unwrap_or_default();
    if files.is_empty() {
        if full {
            eprintln!(
                "QUARRY_ROOT_BENCH_FILES is not set: scripts/bench-root.sh generates the data and runs this"
            );
        }
        read_throughput(
            &testdata.join("root/uproot-HZZ.root"),
            &["MET_px", "Jet_Px"],
            1,
        );
        return;
    }
    for f in files.split(':') {
        read_throughput(Path::new(f), &["met", "muon_pt"], 3);
    }
}
