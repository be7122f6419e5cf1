//! The code navigation targets of issue #31, part of `cargo bench --bench code`
//! (included from benches/code.rs), on each corpus tree after its indexing:
//! - indexing (parse + symbols + references) against tree-sitter's parse-only
//!   throughput on all cores: quarry's in-process extraction beside the same
//!   C parser alone, and beside py-tree-sitter parsing with a process per core
//!   (`scripts/bench/treesitter_parse.py`) in the same run (target >= 0.8);
//! - re-indexing one changed 2,000-line file, end to end (write, reconcile,
//!   commit, index updated, the new name found; target <= 30 ms);
//! - `find_references` p50 over names of every frequency (target <= 2 ms);
//! - catalog growth for references against the symbols' share (target <= 2x).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use quarry::catalog::code::{CODE_REFS, code_rows};
use quarry::catalog::{Catalog, encode};
use quarry::formats::code::{self, Language};
use quarry::indexing::Indexer;
use quarry::job::Job;
use quarry::mcp::tools::{self, Context};
use serde_json::{Value, json};

use super::{percentile, time_each};

/// py-tree-sitter parsing every file, a process per core: (MB/s, seconds).
fn py_parse_only(dir: &Path) -> Option<(f64, f64)> {
    let python = std::env::var_os("QUARRY_BENCH_PYTHON")?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bench/treesitter_parse.py");
    let out = Command::new(python).arg(script).arg(dir).output().ok()?;
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    Some((v["mb_per_s"].as_f64()?, v["seconds"].as_f64()?))
}

/// Runs `work` over the files on every core; wall seconds.
fn on_all_cores(texts: &[(Language, String)], work: impl Fn(Language, &str) + Sync) -> f64 {
    let threads = std::thread::available_parallelism().map_or(2, |c| c.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((l, text)) = texts.get(i) else { break };
                    work(*l, text);
                }
            });
        }
    });
    start.elapsed().as_secs_f64()
}

pub fn bench(
    dir: &Path,
    files: &[(PathBuf, u64)],
    catalog: &std::sync::Arc<Catalog>,
    indexer: &Indexer,
    ctx: &Context,
    full: bool,
) {
    let texts: Vec<(Language, String)> = files
        .iter()
        .filter_map(|(p, _)| {
            let language = Language::from_name(&p.to_string_lossy())?;
            Some((language, std::fs::read_to_string(p).ok()?))
        })
        .collect();
    let mb = texts.iter().map(|(_, t)| t.len()).sum::<usize>() as f64 / 1e6;
    let budget = Duration::from_secs(10);

    // 1. Throughput on all cores, best of 3 each.
    let best = |f: &dyn Fn() -> f64| (0..3).map(|_| f()).fold(f64::INFINITY, f64::min);
    let parse_only = best(&|| {
        on_all_cores(&texts, |l, t| {
            let _ = code::parse(l, t.to_string(), budget);
        })
    });
    let indexing = best(&|| {
        on_all_cores(&texts, |l, t| {
            if let Ok(p) = code::parse(l, t.to_string(), budget) {
                let e = code::extract(&p);
                std::hint::black_box(code_rows(&e).iter().map(|r| r.value.len()).sum::<usize>());
            }
        })
    });
    let py = match py_parse_only(dir) {
        Some((py_mbs, _)) => format!(
            "; py-tree-sitter parse-only {py_mbs:.1} MB/s -> ratio {:.2}",
            mb / indexing / py_mbs
        ),
        None => "; py-tree-sitter not run (QUARRY_BENCH_PYTHON unset)".into(),
    };
    println!(
        "indexing on all cores (parse + symbols + references, encoded): {:.1} MB/s; tree-sitter parse-only (same C parser, in process) {:.1} MB/s -> ratio {:.2}{py}  [target >= 0.8]",
        mb / indexing,
        mb / parse_only,
        parse_only / indexing
    );

    // 2. Catalog growth: what references add against what the symbols take.
    let (mut symbol_bytes, mut uses) = (0usize, 0usize);
    // Uses alone, includes, class bases and members.
    let mut parts = [0usize; 3];
    for (l, t) in &texts {
        if let Ok(p) = code::parse(*l, t.clone(), budget) {
            let e = code::extract(&p);
            symbol_bytes += encode(&e.file.symbols).len();
            // As the catalog stores them (compressed).
            parts[0] += code_rows(&e)
                .iter()
                .find(|r| r.table == CODE_REFS)
                .map_or(0, |r| r.value.len());
            parts[1] += encode(&e.file.includes).len();
            parts[2] += encode(&e.file.class_info).len();
            uses += e.refs.count();
        }
    }
    let reference_bytes: usize = parts.iter().sum();
    let mb = |b: usize| b as f64 / 1e6;
    println!(
        "catalog growth: references, includes, bases and members {:.1} MB (uses {:.2} MB = {:.1} bytes each for {uses}; includes {:.2} MB; bases and members {:.2} MB) against symbols {:.1} MB -> {:.2}x  [target <= 2x]",
        mb(reference_bytes),
        mb(parts[0]),
        parts[0] as f64 / uses.max(1) as f64,
        mb(parts[1]),
        mb(parts[2]),
        mb(symbol_bytes),
        reference_bytes as f64 / symbol_bytes.max(1) as f64
    );

    // 3. find_references over names of every frequency.
    let find = tools::all().find(|d| d.name == "find_references").unwrap();
    let mut names: Vec<(usize, String)> = Vec::new();
    for f in catalog.relations().all() {
        for (i, n) in f.refs.names.iter().enumerate() {
            if i % 97 == 0 {
                names.push((catalog.relations().uses(n).len(), n.clone()));
            }
        }
    }
    names.sort();
    names.dedup_by(|a, b| a.1 == b.1);
    let step = (names.len() / 200).max(1);
    let sample: Vec<String> = names.iter().step_by(step).map(|(_, n)| n.clone()).collect();
    let call = |args: Value| {
        (find.handler)(ctx, &Job::default(), args.as_object().unwrap().clone()).unwrap()
    };
    let (p50, max) = time_each(&sample, |n| {
        call(json!({"name": n}));
    });
    let mut times = Vec::new();
    for n in sample.iter().rev().take(10) {
        let t = Instant::now();
        call(json!({"name": n}));
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "find_references over {} uses, {} names (files using each: 1 to {}): p50 {p50:.3} ms, max {max:.3} ms; the 10 most used p50 {:.3} ms  [target p50 <= 2 ms]",
        catalog.relations().reference_count(),
        sample.len(),
        names.last().map_or(0, |n| n.0),
        percentile(&times, 0.5)
    );

    // 4. Re-index one changed 2,000-line file, end to end: only on the
    //    unpacked corpus (the self-check never writes into the repository).
    if !full {
        return;
    }
    let source = texts
        .iter()
        .filter(|(l, _)| *l == Language::Cpp)
        .max_by_key(|(_, t)| t.lines().count().min(2000))
        .map(|(_, t)| t.lines().take(2000).collect::<Vec<_>>().join("\n"));
    let Some(mut text) = source else { return };
    let lines = text.lines().count();
    let path = dir.join("quarry_bench_changed.cc");
    std::fs::write(&path, &text).unwrap();
    indexer.reconcile(std::slice::from_ref(&path)).unwrap();
    let mut times = Vec::new();
    for round in 0..20 {
        let marker = format!("quarry_bench_marker_{round}");
        text.push_str(&format!("\nint {marker}() {{ return {round}; }}\n"));
        let start = Instant::now();
        std::fs::write(&path, &text).unwrap();
        indexer.reconcile(std::slice::from_ref(&path)).unwrap();
        let found = call(json!({"name": marker}));
        times.push(start.elapsed().as_secs_f64() * 1e3);
        assert_eq!(
            found.data["total"], 1,
            "{marker} not found after re-indexing"
        );
    }
    std::fs::remove_file(&path).unwrap();
    indexer.reconcile(std::slice::from_ref(&path)).unwrap();
    times.sort_by(f64::total_cmp);
    println!(
        "re-index one changed {lines}-line file (write, parse, store, index, find_references sees it): p50 {:.1} ms, max {:.1} ms  [target <= 30 ms]",
        percentile(&times, 0.5),
        times.last().unwrap()
    );
}
