//! Damaged HDF5 files given to the reader: the file cut at many lengths, and
//! 16-byte windows of it overwritten, densely across the metadata at its start
//! and sparsely through the data. The tree is walked and, where that succeeds,
//! a few elements and the statistics of some datasets are read, as quarry does
//! it: in the `quarry` helper process, since libhdf5 itself crashes on some
//! damage (both a tree walk and a read did, before). Each case must end in a
//! result or an error, never a crash or a hang.
//!
//! Deterministic (no randomness), so a failure repeats. To stay within a few
//! seconds the reads are sampled: each damaged file reads `READS_PER_CASE`
//! datasets, rotating with the case number so that every dataset of the file is
//! read under some damage; the cases run on a few threads. The fuzz target
//! `hdf5_reader` (scripts/fuzz.sh) reads every dataset of every input.

use std::path::Path;
use std::time::Instant;

use quarry::formats::hdf5::Entry;
use quarry::formats::hdf5::isolated::{dataset_moments, read_slice, set_helper, tree_of};
use quarry::formats::hdf5::slice::{parse, resolve};

/// Datasets read (a slice and the statistics) per damaged file that walks.
const READS_PER_CASE: usize = 8;
/// Threads the cases are spread over.
const THREADS: usize = 3;

/// Walks one damaged file and reads some of its datasets; returns how many
/// reads were made.
fn exercise(bytes: &[u8], dir: &Path, n: usize) -> usize {
    let path = dir.join(format!("case{n}.h5"));
    std::fs::write(&path, bytes).unwrap();
    let open = || std::fs::File::open(&path).unwrap();
    let mut reads = 0;
    if let Ok(tree) = tree_of(open()) {
        let datasets: Vec<_> = tree
            .objects
            .iter()
            .filter_map(|o| match &o.entry {
                Entry::Dataset(info) => Some((o.path.clone(), info.shape.clone())),
                _ => None,
            })
            .collect();
        for j in 0..datasets.len().min(READS_PER_CASE) {
            let (object, shape) = &datasets[(n * READS_PER_CASE + j) % datasets.len()];
            let shape = shape.clone().unwrap_or_default();
            let text = if shape.is_empty() { "" } else { ":3" };
            if let Ok(sel) = resolve(&parse(text).unwrap(), &shape) {
                let _ = read_slice(open(), object, &sel, &|| false);
                let _ = dataset_moments(open(), object, &sel, 64, &|| false, &|_, _| {});
                reads += 1;
            }
        }
    }
    std::fs::remove_file(&path).unwrap();
    reads
}

/// The damaged versions of `original`: cut short, then overwritten windows.
fn cases(original: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for len in (0..original.len()).step_by(original.len() / 11 + 1) {
        out.push(original[..len].to_vec());
    }
    let step = |at: usize| if at < 8192 { 389 } else { 7919 };
    let mut at = 0;
    while at + 16 <= original.len() {
        let mut bytes = original.to_vec();
        for (i, b) in bytes[at..at + 16].iter_mut().enumerate() {
            *b = if i % 2 == 0 { 0xff } else { (at + i) as u8 };
        }
        out.push(bytes);
        at += step(at);
    }
    out
}

#[test]
fn damaged_files_are_errors_never_crashes() {
    let original =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdf5/kinds.h5"))
            .unwrap();
    set_helper(env!("CARGO_BIN_EXE_quarry").into());
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let cases = cases(&original);
    let reads: usize = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (cases, dir) = (&cases, tmp.path());
                s.spawn(move || {
                    (t..cases.len())
                        .step_by(THREADS)
                        .map(|n| exercise(&cases[n], dir, n))
                        .sum::<usize>()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    assert!(cases.len() > 30, "{} cases", cases.len());
    assert!(reads > 20, "only {reads} datasets were read");
    // Hangs are bounded by the helper's own time limit; this is only a report.
    eprintln!(
        "{} damaged files, {reads} dataset reads, in {:?}",
        cases.len(),
        started.elapsed()
    );
}

/// Every worker holds itself to the workers' limits before its first
/// request: its address space (1 GiB by default), its CPU time per request,
/// and no core file.
#[test]
fn workers_run_within_their_limits() {
    // Alone: another test of this binary may have set the workers' memory limit.
    if !crate::common::running_alone() {
        return crate::common::run_alone(module_path!(), "workers_run_within_their_limits");
    }
    set_helper(env!("CARGO_BIN_EXE_quarry").into());
    let tiny = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdf5/tiny.h5");
    tree_of(std::fs::File::open(&tiny).unwrap()).unwrap();
    let pids = quarry::formats::hdf5::isolated::idle_worker_pids();
    assert!(!pids.is_empty(), "no idle worker after a request");
    for pid in pids {
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let limit = |name: &str| -> (String, String) {
            let line = limits.lines().find(|l| l.starts_with(name)).unwrap();
            let fields: Vec<&str> = line[name.len()..].split_whitespace().collect();
            (fields[0].to_string(), fields[1].to_string())
        };
        let gib = (1u64 << 30).to_string();
        assert_eq!(limit("Max address space"), (gib.clone(), gib), "{limits}");
        assert_eq!(limit("Max core file size"), ("0".into(), "0".into()));
        let cpu: u64 = limit("Max cpu time").0.parse().expect("a finite CPU limit");
        assert!((130..3600).contains(&cpu), "{limits}");
    }
}
