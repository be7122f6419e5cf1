//! What the benchmarks that call tool handlers in process share: a catalog
//! of a root indexed once, a tool's handler timed (the server time, without
//! the transport), and this process's resident memory.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use quarry::catalog::Catalog;
use quarry::formats::root::decompress_into;
use quarry::indexing::{IndexOptions, Indexer, Quiet, StatsMode};
use quarry::mcp::tools::{self, Context, Limits, ServerSettings};
use quarry::roots::Roots;
use serde_json::Value;

/// A catalog of the files in `data` (kept in `catalog_dir`), with an export
/// folder beside it and a result cap large enough for 10,000 rows.
pub fn context(data: &Path, catalog_dir: &Path) -> Context {
    let roots = Roots::new(vec![("data".into(), data.to_path_buf())]).unwrap();
    let catalog = Arc::new(Catalog::open(catalog_dir, &roots).unwrap());
    let exports = catalog_dir.join("exports");
    std::fs::create_dir_all(&exports).unwrap();
    let options = IndexOptions {
        threads: 2,
        batch: 512,
        excluded_dirs: vec![catalog_dir.to_path_buf()],
        stats: StatsMode::Lazy,
    };
    Indexer::new(catalog.clone(), options)
        .unwrap()
        .scan_all(&Quiet)
        .unwrap();
    let settings = ServerSettings {
        export_dir: Some(exports),
        limits: Limits {
            max_result_bytes: 64 << 20,
            ..Limits::default()
        },
        ..ServerSettings::default()
    };
    Context::new(catalog, settings)
}

/// Runs a tool's handler; returns its answer and the seconds it took.
pub fn timed(ctx: &Context, tool: &str, args: &Value) -> (Value, f64) {
    let def = tools::all().find(|d| d.name == tool).unwrap();
    let t = Instant::now();
    let out = (def.handler)(
        ctx,
        &quarry::job::Job::default(),
        args.as_object().unwrap().clone(),
    )
    .unwrap_or_else(|e| panic!("{tool} {args}: {e:?}"));
    let seconds = t.elapsed().as_secs_f64();
    (out.into_json(tool, seconds), seconds)
}

/// Puts `file` into the root `data` as `name`: a hard link, or a copy
/// across file systems (a benchmark's root holds just its files).
pub fn link_into(data: &Path, file: &Path, name: &str) {
    let link = data.join(name);
    if !link.exists() && std::fs::hard_link(file, &link).is_err() {
        std::fs::copy(file, &link).unwrap();
    }
}

/// Resets the kernel's peak-RSS mark of this process (Linux: clear_refs 5).
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// This process's resident set: (now, peak since the last reset), in MB.
pub fn rss_mb() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The CPU time (user and system, every thread) this process has used, in
/// seconds: on a shared machine it says what work cost whatever else ran.
pub fn cpu_seconds() -> f64 {
    let usage = usage();
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// This process's minor page faults so far: each one a page the kernel
/// handed over zeroed (memory taken fresh, not reused).
pub fn minor_faults() -> i64 {
    usage().ru_minflt
}

/// This process's resource usage so far.
fn usage() -> libc::rusage {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage
}

/// A record's stored bytes (an RNTuple page, a basket without its key) and
/// its size once decompressed.
pub type Record = (Vec<u8>, usize);

/// Wall and CPU seconds to decompress `records` on all cores, one task a
/// record, each thread into a buffer it keeps, grown beforehand to the
/// largest record: a decompressor's limit, not that of the system's fresh
/// pages (rayon may start a task's `init` many times a thread).
pub fn decompress_on_all_cores(records: &[Record]) -> (f64, f64) {
    use rayon::prelude::*;
    let largest = records.iter().map(|(_, len)| *len).max().unwrap_or(0);
    let buffers: Vec<std::sync::Mutex<Vec<u8>>> = (0..rayon::current_num_threads())
        .map(|_| std::sync::Mutex::new(vec![1u8; largest]))
        .collect();
    let (cpu, t) = (cpu_seconds(), Instant::now());
    records
        .par_iter()
        .with_max_len(1)
        .for_each(|(stored, len)| {
            let thread = rayon::current_thread_index().unwrap_or(0);
            let mut out = buffers[thread % buffers.len()].lock().unwrap();
            decompress_keeping_length(stored, *len, &mut out);
            std::hint::black_box(&out);
        });
    (t.elapsed().as_secs_f64(), cpu_seconds() - cpu)
}

/// `decompress_into`, but `buf` keeps its length: `decompress_into` cuts a
/// buffer to the record's size, so a larger record after it would pay for
/// zeroing the growth, which the readers' pooled buffers do not (the limit
/// would be slower than the decompressor).
fn decompress_keeping_length(src: &[u8], len: usize, buf: &mut Vec<u8>) {
    let kept = buf.len();
    decompress_into(src, len, buf).unwrap();
    if buf.len() < kept {
        assert!(buf.capacity() >= kept);
        // SAFETY: the buffer held `kept` initialised bytes before the call,
        // in the same allocation (its capacity never shrinks), and cutting a
        // Vec<u8> short leaves the bytes past its end as they were.
        unsafe { buf.set_len(kept) };
    }
}
