//! HDF5 benchmark (issue #9 targets), one JSON line per figure:
//! - `read_dataset_slice` of `1000000:1100000, :` and `::1000, 0` on the big
//!   gzip file of `gen_h5.py` (QUARRY_HDF5_BENCH_FILE), each round followed by
//!   h5py reading the same slice (scripts/bench/h5py_read.py, run with
//!   QUARRY_HDF5_BENCH_PYTHON), so the two tools are interleaved; medians of
//!   the rounds (target: quarry <= 1.1x h5py);
//! - `resources/read` server time of a group, a dataset and a link (target
//!   0.2 ms);
//! - indexing rate of small HDF5 files (copies of the test files; target 200
//!   files/s).
//!
//! The libhdf5 work runs in the `quarry` binary's workers, as when serving.
//! `cargo bench --bench hdf5` runs it all (scripts/bench-hdf5.sh sets it up);
//! without `--bench` (as `cargo test --all-targets` runs it) it checks itself on
//! the bundled files with few rounds.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use quarry::catalog::Catalog;
use quarry::formats::hdf5::isolated::set_helper;
use quarry::indexing::{IndexOptions, Indexer, Quiet, StatsMode};
use quarry::mcp::resources;
use quarry::mcp::tools::{self, Context, ServerSettings};
use quarry::roots::Roots;
use serde_json::{Value, json};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// A catalog of the files under `data`; returns the indexing time too.
fn indexed(data: &Path, max_slice: u64) -> (tempfile::TempDir, Context, f64) {
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
    let t = Instant::now();
    Indexer::new(catalog.clone(), options)
        .unwrap()
        .scan_all(&Quiet)
        .unwrap();
    let seconds = t.elapsed().as_secs_f64();
    let mut settings = ServerSettings::default();
    settings.limits.max_slice_elements = max_slice;
    (tmp, Context::new(catalog, settings), seconds)
}

/// One tool call as the server answers it: handler, envelope, JSON text.
fn call(ctx: &Context, tool: &str, args: &Value) -> (f64, usize) {
    let def = tools::all().find(|d| d.name == tool).unwrap();
    let t = Instant::now();
    let out = (def.handler)(
        ctx,
        &quarry::job::Job::default(),
        args.as_object().unwrap().clone(),
    )
    .unwrap_or_else(|e| panic!("{tool}: {}", e.into_json()));
    let text = out.into_json(tool, 0.0).to_string();
    (t.elapsed().as_secs_f64(), text.len())
}

fn h5py(python: &str, file: &Path, which: &str) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/bench/h5py_read.py");
    let out = Command::new(python)
        .arg(script)
        .arg(file)
        .arg(which)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// read_dataset_slice on the big file beside h5py, interleaved round by round.
fn slices(file: &Path, python: Option<&str>, rounds: usize) {
    let dir = file.parent().unwrap();
    let (_tmp, ctx, _) = indexed(dir, 10_000_000);
    let abs = file.canonicalize().unwrap();
    let uri = resources::h5::uri_of(&abs.to_string_lossy(), "/data");
    for (which, text) in [("rows", "1000000:1100000, :"), ("strided", "::1000, 0")] {
        let args = json!({"uri": uri, "slice_str": text});
        call(&ctx, "read_dataset_slice", &args); // warm-up: a worker, the page cache
        let (mut ours, mut read, mut answer) = (Vec::new(), Vec::new(), Vec::new());
        let mut bytes = 0;
        for _ in 0..rounds {
            let (s, b) = call(&ctx, "read_dataset_slice", &args);
            ours.push(s);
            bytes = b;
            if let Some(py) = python {
                let h = h5py(py, file, which);
                read.push(h["read_seconds"].as_f64().unwrap());
                answer.push(h["answer_seconds"].as_f64().unwrap());
            }
        }
        let q = median(ours);
        let mut line = json!({"tool": "quarry", "call": "read_dataset_slice", "slice": which,
                              "slice_str": text, "rounds": rounds, "median_seconds": q, "json_bytes": bytes});
        if !read.is_empty() {
            let (r, a) = (median(read), median(answer));
            line["h5py_read_median_seconds"] = json!(r);
            line["h5py_answer_median_seconds"] = json!(a);
            line["ratio_vs_h5py_answer"] = json!(q / a);
            line["ratio_vs_h5py_read"] = json!(q / r);
            line["target_ratio"] = json!(1.1);
        }
        println!("{line}");
    }
}

/// resources/read server time of objects of a test file, p50 and p99.
fn resource_latency(testdata: &Path, n: usize) {
    let (_tmp, ctx, _) = indexed(&testdata.join("hdf5"), 100_000);
    let file = testdata
        .join("hdf5/pylhe-testfile-hpcgen.hdf5")
        .canonicalize()
        .unwrap();
    let file = file.to_string_lossy();
    let kinds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdf5");
    let (_tmp2, ctx2, _) = indexed(&kinds, 100_000);
    let kinds_file = kinds.join("kinds.h5").canonicalize().unwrap();
    let kinds_file = kinds_file.to_string_lossy();
    let cases = [
        (&ctx, resources::h5::uri_of(&file, "/")),
        (&ctx, resources::h5::uri_of(&file, "/events")),
        (
            &ctx2,
            resources::h5::uri_of(&kinds_file, "/numbers/chunked"),
        ),
        (
            &ctx2,
            resources::h5::uri_of(&kinds_file, "/links/soft_to_matrix"),
        ),
    ];
    for (ctx, uri) in cases {
        let mut times: Vec<f64> = (0..n)
            .map(|_| {
                let t = Instant::now();
                let c = resources::read(ctx, &uri).unwrap_or_else(|e| panic!("{uri}: {e:?}"));
                std::hint::black_box(c.into_resource(uri.clone()));
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{}",
            json!({"tool": "quarry", "call": "resources/read", "uri": uri,
                   "p50_ms": times[n / 2], "p99_ms": times[n * 99 / 100], "target_ms": 0.2})
        );
    }
}

/// Indexing rate of `count` small HDF5 files (the test files, copied).
fn indexing(testdata: &Path, count: usize, rounds: usize) {
    let mut sources: Vec<PathBuf> = std::fs::read_dir(testdata.join("hdf5"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    sources.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdf5/kinds.h5"));
    sources.sort();
    let data = tempfile::tempdir().unwrap();
    let mut bytes = 0;
    for i in 0..count {
        let dir = data.path().join(format!("d{}", i / 100));
        std::fs::create_dir_all(&dir).unwrap();
        bytes += std::fs::copy(&sources[i % sources.len()], dir.join(format!("f{i}.h5"))).unwrap();
    }
    let rates: Vec<f64> = (0..rounds)
        .map(|_| {
            let (_tmp, ctx, seconds) = indexed(data.path(), 100_000);
            assert_eq!(ctx.catalog.files().snapshot(0).len(), count);
            count as f64 / seconds
        })
        .collect();
    println!(
        "{}",
        json!({"tool": "quarry", "indexing": "hdf5", "files": count, "mean_file_bytes": bytes / count as u64,
               "rounds": rounds, "median_files_per_s": median(rates), "target_files_per_s": 200})
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    set_helper(env!("CARGO_BIN_EXE_quarry").into());
    let testdata = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let rounds = if full { 5 } else { 1 };
    resource_latency(&testdata, if full { 1000 } else { 20 });
    indexing(
        &testdata,
        if full { 1000 } else { 40 },
        if full { 5 } else { 1 },
    );
    if let Ok(file) = std::env::var("QUARRY_HDF5_BENCH_FILE") {
        let python = std::env::var("QUARRY_HDF5_BENCH_PYTHON").ok();
        slices(Path::new(&file), python.as_deref(), rounds);
    }
}
