//! Foundation benchmark (issue #2 targets), on a generated root of small files:
//! - initial metadata scan (walk, detect, validate headers, commit): <= 10 s for 100k;
//! - list_files server time with a pattern and limit 100: <= 1 ms;
//! - watcher latency after a write settles: <= 1 s;
//! - daemon RSS idle with that catalog: <= 60 MB.
//!
//! `cargo bench --bench foundation` runs it on 100,000 files. Without `--bench`
//! (as `cargo test --all-targets` runs it) it checks itself on 2,000 files.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use common::percentile;

use quarry::catalog::Catalog;
use quarry::indexing::{IndexOptions, Indexer, Quiet};
use quarry::mcp::tools::{self, Context, ServerSettings};
use quarry::roots::Roots;
use serde_json::{Value, json};

/// The smallest well-formed ROOT file: a header (version 6.20/04, ZLIB:1), the top
/// directory record at byte 100, and an empty key list at 130 (its own 29-byte key
/// header plus a zero count), 163 bytes in all.
fn tiny_root() -> Vec<u8> {
    let mut b = vec![0u8; 163];
    b[..4].copy_from_slice(b"root");
    b[4..8].copy_from_slice(&62004i32.to_be_bytes());
    b[8..12].copy_from_slice(&100i32.to_be_bytes()); // begin
    b[12..16].copy_from_slice(&163i32.to_be_bytes()); // end
    b[28..32].copy_from_slice(&0i32.to_be_bytes()); // nbytes_name
    b[33..37].copy_from_slice(&101i32.to_be_bytes()); // compression
    b[37..41].copy_from_slice(&150i32.to_be_bytes()); // seek_info
    // Top directory: version 5, dates, key list of 33 bytes at 130.
    b[100..102].copy_from_slice(&5i16.to_be_bytes());
    b[110..114].copy_from_slice(&33i32.to_be_bytes());
    b[126..130].copy_from_slice(&130i32.to_be_bytes());
    // Key list: nbytes 33, version 4, object length 4, key header length 29.
    b[130..134].copy_from_slice(&33i32.to_be_bytes());
    b[134..136].copy_from_slice(&4i16.to_be_bytes());
    b[136..140].copy_from_slice(&4i32.to_be_bytes());
    b[144..146].copy_from_slice(&29i16.to_be_bytes());
    b
}

/// `n` files in folders of 100: 70% ROOT, 10% each HDF5, Markdown, Python.
fn generate(root: &Path, n: usize) {
    let rootfile = tiny_root();
    // A real (2 KiB) HDF5 file: the index reads each one's whole object tree.
    let h5 = include_bytes!("../tests/data/hdf5/tiny.h5").to_vec();
    for i in 0..n {
        let dir = root.join(format!("run{:04}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let year = 2020 + (i % 5);
        let (name, bytes): (String, &[u8]) = match i % 10 {
            0 => (format!("cond_{i:06}.h5"), &h5),
            1 => (
                format!("notes_{i:06}.md"),
                b"# run notes\n\nnothing unusual\n",
            ),
            2 => (format!("ana_{i:06}.py"), b"def f():\n    return 1\n"),
            _ => (format!("run_{i:06}_{year}.root"), &rootfile),
        };
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let n = if full { 100_000 } else { 2_000 };
    let n = std::env::var("QUARRY_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n);
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let data = base.join("data");
    let catalog_dir = base.join("catalog");

    let t = Instant::now();
    generate(&data, n);
    println!("generated {n} files in {:.1} s", t.elapsed().as_secs_f64());

    // 1. Initial scan, as the daemon runs it.
    let roots = Roots::new(vec![("data".into(), data.clone())]).unwrap();
    let catalog = Arc::new(Catalog::open(&catalog_dir, &roots).unwrap());
    let threads = std::thread::available_parallelism().map_or(2, |c| c.get());
    let indexer = Indexer::new(
        catalog.clone(),
        IndexOptions {
            threads,
            batch: 512,
            excluded_dirs: vec![catalog_dir.clone()],
            stats: quarry::indexing::StatsMode::Lazy,
        },
    )
    .unwrap();
    let t = Instant::now();
    let summary = indexer.scan_all(&Quiet).unwrap();
    let scan_s = t.elapsed().as_secs_f64();
    assert_eq!(summary.indexed, n, "{summary:?}");
    println!(
        "initial scan: {scan_s:.2} s for {n} files ({:.0} files/s)  [target <= 10 s for 100k]",
        n as f64 / scan_s
    );

    // 2. list_files server time (the handler, as the server times it).
    let ctx = Context::new(catalog.clone(), ServerSettings::default());
    let list = tools::all().find(|d| d.name == "list_files").unwrap();
    for pattern in [
        "run_0042*",
        "*2024*.root",
        "*.root",
        "run0420/*.root",
        "*_01234?_*",
    ] {
        let args = json!({"pattern": pattern, "limit": 100});
        let mut times = Vec::new();
        let mut matched = 0;
        for _ in 0..200 {
            let t = Instant::now();
            let out = (list.handler)(
                &ctx,
                &quarry::job::Job::default(),
                args.as_object().unwrap().clone(),
            )
            .unwrap();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            matched = out.data["total_matched"].as_u64().unwrap();
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let glob = quarry::glob::Glob::new(pattern).unwrap();
        let t = Instant::now();
        for _ in 0..200 {
            std::hint::black_box(catalog.files().query(&quarry::catalog::FileQuery {
                roots: &[0],
                kinds: quarry::catalog::KindSet::only(quarry::formats::Kind::Root),
                glob: Some(&glob),
                limit: 100,
            }));
        }
        println!(
            "  raw catalog query: {:.3} ms",
            t.elapsed().as_secs_f64() * 1000.0 / 200.0
        );
        println!(
            "list_files pattern={pattern:<14} limit=100: p50 {:.3} ms, p99 {:.3} ms ({matched} matched)  [target <= 1 ms]",
            percentile(&times, 0.5),
            percentile(&times, 0.99)
        );
    }
    drop((ctx, indexer, catalog));

    // 3. The daemon on that catalog: idle RSS and watcher latency.
    let (daemon, mut session) = common::serve("data", &data, &catalog_dir, Duration::from_secs(60));
    session.wait_indexed();
    let mut call = |name: &str, args: Value| session.call(name, args);
    std::thread::sleep(Duration::from_secs(2));
    let rss = rss_kb(daemon.child.id());
    println!(
        "daemon RSS idle with {n} files catalogued: {:.1} MB  [target <= 60 MB]",
        rss as f64 / 1024.0
    );

    let settle = 0.3;
    let mut latencies = Vec::new();
    for i in 0..10 {
        let name = format!("fresh_{i}.md");
        let t = Instant::now();
        std::fs::write(data.join("run0000").join(&name), b"# new\n").unwrap();
        while call("list_files", json!({"kind": "document", "pattern": name}))["data"]["total_matched"]
            != json!(1)
        {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "watcher never saw {name}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        latencies.push(t.elapsed().as_secs_f64() - settle);
    }
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "watcher latency after the write settles ({settle} s settle): median {:.0} ms, max {:.0} ms  [target <= 1000 ms]",
        percentile(&latencies, 0.5) * 1000.0,
        latencies.last().unwrap() * 1000.0
    );
}
