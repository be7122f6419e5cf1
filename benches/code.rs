//! Code benchmark (issue #10 targets), on real repository trees
//! (the shared data's `corpus/`: abseil-cpp and uproot5, unpacked by `scripts/bench-code.sh`
//! into the folder named by `QUARRY_CODE_BENCH_DIR`, one tree per subfolder):
//! - indexing throughput in symbols/s, beside universal-ctags on the same tree
//!   in the same run (target: at least ctags's);
//! - `find_functions` server time on one indexed file (target <= 1 ms) and on
//!   the whole tree, beside py-tree-sitter parsing the tree (target >= 20x faster;
//!   `scripts/bench/treesitter_functions.py`, run when `QUARRY_BENCH_PYTHON`
//!   names a Python with the bindings);
//! - `find_symbol` for names of every kind of match (target <= 2 ms for any name);
//! - the symbol index alone at a million symbols (the catalog's design goal: a
//!   lookup in about a millisecond);
//! - the code navigation targets of issue #31 (`code_nav/navigation.rs`):
//!   indexing with references against tree-sitter's parse-only throughput,
//!   re-indexing one changed file, `find_references`, catalog growth.
//!
//! Without `QUARRY_CODE_BENCH_DIR` this runs on the repository's `testdata/code` as the
//! self-check `cargo test --all-targets` runs: the symbol count must equal what
//! py-tree-sitter read (tests/fixtures/code/symbols.json); timings are printed,
//! never asserted.

mod common;
#[path = "code_nav/navigation.rs"]
mod navigation;

use common::percentile;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use quarry::catalog::Catalog;
use quarry::catalog::code::{SymbolIndex, SymbolQuery};
use quarry::formats::code::{self, CodeFile, Language, Symbol, SymbolKind};
use quarry::indexing::{IndexOptions, Indexer, Quiet, StatsMode};
use quarry::job::Job;
use quarry::mcp::tools::{self, Context, ServerSettings, ToolDef};
use quarry::roots::Roots;
use serde_json::{Value, json};

const CODE_EXTS: [&str; 8] = ["py", "cpp", "cc", "cxx", "hpp", "hh", "h", "hxx"];

/// Times `f` once per item; (p50, max) in ms.
fn time_each<T>(items: &[T], mut f: impl FnMut(&T)) -> (f64, f64) {
    let mut t: Vec<f64> = items
        .iter()
        .map(|item| {
            let start = Instant::now();
            f(item);
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (percentile(&t, 0.5), *t.last().unwrap())
}

/// Every code file under `dir` (no links), with its size.
fn code_files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            let p = e.path();
            if t.is_dir() {
                stack.push(p);
            } else if t.is_file()
                && p.extension()
                    .is_some_and(|x| CODE_EXTS.iter().any(|c| x == *c))
            {
                out.push((p, e.metadata().unwrap().len()));
            }
        }
    }
    out.sort();
    out
}

/// universal-ctags over the tree: (tags, seconds), best of 3.
fn ctags(dir: &Path) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    for _ in 0..3 {
        let start = Instant::now();
        let out = Command::new("ctags")
            .args(["-R", "-f", "-", "--languages=C++,Python", "."])
            .current_dir(dir)
            .output()
            .ok()?;
        let secs = start.elapsed().as_secs_f64();
        let tags = out
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty() && l[0] != b'!')
            .count();
        if best.is_none_or(|(_, b)| secs < b) {
            best = Some((tags, secs));
        }
    }
    best
}

/// py-tree-sitter finding every function of the tree: (functions, seconds).
fn py_tree_sitter(dir: &Path) -> Option<(u64, f64)> {
    let python = std::env::var_os("QUARRY_BENCH_PYTHON")?;
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bench/treesitter_functions.py");
    let out = Command::new(python).arg(script).arg(dir).output().ok()?;
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    Some((v["functions"].as_u64()?, v["seconds"].as_f64()?))
}

struct Tree {
    name: String,
    dir: PathBuf,
}

fn trees() -> (Vec<Tree>, bool) {
    match std::env::var_os("QUARRY_CODE_BENCH_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir).canonicalize().unwrap();
            let mut trees: Vec<Tree> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir())
                .map(|p| Tree {
                    name: p.file_name().unwrap().to_string_lossy().into_owned(),
                    dir: p,
                })
                .collect();
            trees.sort_by(|a, b| a.name.cmp(&b.name));
            (trees, true)
        }
        None => {
            println!(
                "QUARRY_CODE_BENCH_DIR is not set: self-check on testdata/code (scripts/bench-code.sh runs the corpus)"
            );
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("testdata/code")
                .canonicalize()
                .unwrap();
            (
                vec![Tree {
                    name: "code".into(),
                    dir,
                }],
                false,
            )
        }
    }
}

fn main() {
    let (trees, full) = trees();
    for tree in &trees {
        bench_tree(tree, full);
    }
    million_symbols(if full { 1_000_000 } else { 50_000 });
}

fn bench_tree(tree: &Tree, full: bool) {
    let files = code_files(&tree.dir);
    let bytes: u64 = files.iter().map(|(_, n)| n).sum();
    println!(
        "\n== {}: {} code files, {:.1} MB",
        tree.name,
        files.len(),
        bytes as f64 / 1e6
    );

    // 1. Indexing as the daemon's first scan runs it (walk, parse, extract,
    //    write), every kind the tree holds (a few documents too).
    let tmp = tempfile::tempdir().unwrap();
    let catalog_dir = tmp.path().join("catalog");
    let roots = Roots::new(vec![(tree.name.clone(), tree.dir.clone())]).unwrap();
    let catalog = Arc::new(Catalog::open(&catalog_dir, &roots).unwrap());
    let threads = std::thread::available_parallelism().map_or(2, |c| c.get());
    let options = IndexOptions {
        threads,
        batch: 512,
        excluded_dirs: vec![catalog_dir.clone()],
        stats: StatsMode::Lazy,
    };
    let indexer = Indexer::new(catalog.clone(), options).unwrap();
    let start = Instant::now();
    let summary = indexer.scan_all(&Quiet).unwrap();
    let secs = start.elapsed().as_secs_f64();
    let symbols = catalog.symbols().symbol_count();
    let anchor = match ctags(&tree.dir) {
        Some((tags, ctags_secs)) => format!(
            "; ctags {tags} tags in {ctags_secs:.2} s = {:.0}k tags/s -> ratio {:.2}",
            tags as f64 / ctags_secs / 1e3,
            (symbols as f64 / secs) / (tags as f64 / ctags_secs)
        ),
        None => "; ctags not installed".into(),
    };
    println!(
        "indexing: {} files in {secs:.2} s, {symbols} symbols = {:.0}k symbols/s on {threads} threads{anchor}  [target ratio >= 1]",
        summary.indexed,
        symbols as f64 / secs / 1e3
    );
    if !full {
        self_check(symbols);
    }
    phases(&files);

    let ctx = Context::new(catalog.clone(), ServerSettings::default());
    let tool = |name: &str| tools::all().find(|d| d.name == name).unwrap();
    let call = |def: &ToolDef, args: Value| {
        (def.handler)(&ctx, &Job::default(), args.as_object().unwrap().clone())
            .unwrap_or_else(|e| panic!("{}: {e:?}", def.name))
    };

    // 2. find_functions: the largest file, then the whole tree.
    let find_functions = tool("find_functions");
    let (largest, _) = files.iter().max_by_key(|(_, n)| *n).unwrap();
    let rel = largest.strip_prefix(&tree.dir).unwrap().to_string_lossy();
    // One root: paths are relative to it.
    let one = json!({"filepath": rel});
    let runs = vec![(); if full { 200 } else { 20 }];
    let (p50, max) = time_each(&runs, |_| {
        call(find_functions, one.clone());
    });
    let n = call(find_functions, one.clone()).data["functions"]
        .as_array()
        .map_or(0, Vec::len);
    println!(
        "find_functions one file ({rel}, {n} functions): p50 {p50:.3} ms, max {max:.3} ms  [target <= 1 ms]"
    );
    let whole = json!({"filepath": tree.dir});
    let (p50, _) = time_each(&[(); 5], |_| {
        call(find_functions, whole.clone());
    });
    let out = call(find_functions, whole.clone());
    let found: usize = out.data["results"].as_array().map_or(0, |r| {
        r.iter()
            .map(|f| f["functions"].as_array().map_or(0, Vec::len))
            .sum()
    });
    let anchor = match py_tree_sitter(&tree.dir) {
        Some((functions, py_secs)) => format!(
            "; py-tree-sitter {functions} functions in {:.0} ms -> {:.0}x",
            py_secs * 1e3,
            py_secs * 1e3 / p50
        ),
        None => "; py-tree-sitter not run (QUARRY_BENCH_PYTHON unset)".into(),
    };
    println!(
        "find_functions whole tree ({} files, {found} functions, truncated {}): p50 {p50:.1} ms{anchor}  [target >= 20x]",
        out.data["processed_files"], out.data["truncated"]
    );

    // 3. find_symbol for names that match exactly, by prefix, by substring,
    //    qualified, and not at all (a full substring pass).
    let find_symbol = tool("find_symbol");
    let names = sample_names(
        &catalog
            .symbols()
            .search(&SymbolQuery {
                name: "a",
                kind: None,
                language: None,
                limit: 5000,
            })
            .0
            .into_iter()
            .map(|h| h.symbol)
            .collect::<Vec<_>>(),
    );
    let (p50, max) = time_each(&names, |name| {
        call(find_symbol, json!({"name": name}));
    });
    println!(
        "find_symbol over {symbols} symbols, {} names: p50 {p50:.3} ms, max {max:.3} ms  [target <= 2 ms]",
        names.len()
    );

    navigation::bench(&tree.dir, &files, &catalog, &indexer, &ctx, full);
}

/// CPU time of this thread, in seconds (steadier than wall time on a shared machine).
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Where indexing's time goes, on one thread: reading the files, tree-sitter's
/// parse, and the extraction of symbols from the trees.
fn phases(files: &[(PathBuf, u64)]) {
    let t = thread_cpu();
    let texts: Vec<(Language, String)> = files
        .iter()
        .filter_map(|(p, _)| {
            let language = Language::from_name(&p.to_string_lossy())?;
            Some((language, std::fs::read_to_string(p).ok()?))
        })
        .collect();
    let read = thread_cpu() - t;
    let t = thread_cpu();
    let parsed: Vec<_> = texts
        .into_iter()
        .filter_map(|(l, text)| code::parse(l, text, std::time::Duration::from_secs(10)).ok())
        .collect();
    let parse = thread_cpu() - t;
    let t = thread_cpu();
    let symbols: usize = parsed
        .iter()
        .map(|p| code::extract(p).file.symbols.len())
        .sum();
    let extract = thread_cpu() - t;
    println!(
        "one thread's CPU time: read {:.0} ms, tree-sitter parse {:.0} ms, extract {:.0} ms ({symbols} symbols = {:.0}k symbols/s of CPU)",
        read * 1e3,
        parse * 1e3,
        extract * 1e3,
        symbols as f64 / (read + parse + extract) / 1e3
    );
}

/// Query names of every kind: whole names, prefixes, inner substrings,
/// qualified names, and names nothing has.
fn sample_names(symbols: &[Symbol]) -> Vec<String> {
    let mut names = vec!["zzqqxx_absent".to_string(), "Absent::nothing".into()];
    for s in symbols.iter().step_by((symbols.len() / 40).max(1)) {
        let chars: Vec<char> = s.name.chars().collect();
        names.push(s.name.clone());
        names.push(s.qualified_name.clone());
        if chars.len() > 4 {
            names.push(chars[..3].iter().collect());
            names.push(chars[1..chars.len() - 1].iter().collect());
        }
    }
    names
}

/// The self-check: as many symbols as py-tree-sitter's classes and functions.
fn self_check(symbols: usize) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code/symbols.json");
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let expected: usize = fixture["files"]
        .as_object()
        .unwrap()
        .values()
        .map(|f| f["classes"].as_array().unwrap().len() + f["functions"].as_array().unwrap().len())
        .sum();
    assert_eq!(symbols, expected, "symbols indexed vs py-tree-sitter's");
}

/// The symbol index alone, filled with `count` synthetic symbols whose names
/// look like a C++ code base's: scoped, camel-case, shared stems, and about 40%
/// distinct names (abseil-cpp's classes and functions: 7,420 distinct of 17,409).
fn million_symbols(count: usize) {
    let stems = [
        "Calibration",
        "Channel",
        "Cluster",
        "Detector",
        "Event",
        "Hit",
        "Jet",
        "Muon",
        "Track",
        "Vertex",
        "Trigger",
        "Reader",
        "Writer",
        "Buffer",
        "Stream",
        "Parser",
        "Index",
        "Cache",
    ];
    let verbs = [
        "apply", "get", "set", "find", "build", "read", "write", "merge", "fit", "reset",
    ];
    let distinct = (count * 2 / 5).max(1);
    let index = SymbolIndex::default();
    let per_file = 100;
    let start = Instant::now();
    for f in 0..count / per_file {
        let symbols = (0..per_file)
            .map(|i| {
                let n = f * per_file + i;
                let class = format!("{}{}", stems[n % stems.len()], n / 97);
                let id = (n as u64 * 2_654_435_761 % distinct as u64) as usize;
                let name = format!(
                    "{}{}{}",
                    verbs[id % verbs.len()],
                    stems[(id / verbs.len()) % stems.len()],
                    id / (verbs.len() * stems.len())
                );
                let (name, kind) = if i % 10 == 0 {
                    (class.clone(), SymbolKind::Class)
                } else {
                    (name, SymbolKind::Method)
                };
                Symbol {
                    qualified_name: format!("ns{}::{class}::{name}", f % 50),
                    name,
                    kind,
                    line: i as u32 + 1,
                    column: 0,
                    end_line: i as u32 + 2,
                    parent: None,
                }
            })
            .collect();
        let file = CodeFile {
            language: Language::Cpp,
            symbols,
            include_count: 0,
            has_errors: false,
            error_ranges: vec![],
            includes: vec![],
            class_info: vec![],
            lines: Default::default(),
        };
        index.insert(f as u64, 0, &format!("src/file{f}.cpp"), file);
    }
    let fill = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let first = search(&index, "Muon7", None);
    let build = start.elapsed().as_secs_f64();
    assert!(!first.is_empty());
    let names = [
        "Muon7",
        "applyJet12",
        "apply",
        "etector12",
        "Calibration3::getTrack",
        "zzqqxx_absent",
        "rack",
        "ns7::Muon",
    ];
    let reps: Vec<&str> = names
        .iter()
        .cycle()
        .take(names.len() * 20)
        .copied()
        .collect();
    let (p50, max) = time_each(&reps, |name| {
        search(&index, name, None);
    });
    let (kind_p50, kind_max) = time_each(&reps, |name| {
        search(&index, name, Some(SymbolKind::Function));
    });
    println!(
        "\nsymbol index at {} symbols: filled in {fill:.2} s, lookup built on first search in {build:.2} s; \
search p50 {p50:.3} ms, max {max:.3} ms; with a kind no symbol has (worst case) p50 {kind_p50:.3} ms, max {kind_max:.3} ms",
        index.symbol_count()
    );
}

fn search(index: &SymbolIndex, name: &str, kind: Option<SymbolKind>) -> Vec<String> {
    index
        .search(&SymbolQuery {
            name,
            kind,
            language: None,
            limit: 50,
        })
        .0
        .into_iter()
        .map(|h| h.symbol.qualified_name)
        .collect()
}
