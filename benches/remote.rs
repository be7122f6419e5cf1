//! Remote roots benchmark (issue #32), one JSON line per figure. One run is one
//! process (the block cache starts cold) on one remote root URL:
//! - `index`: indexing the root (a folder holding one gen_root.py file of
//!   10,000,000 events): seconds, bytes fetched and, when a counting proxy
//!   sits in front of the server, the round trips;
//! - `histogram_jagged_cut`: compute_histogram of `muon_pt` with
//!   `muon_pt > 20 && abs(muon_eta) < 2.4`, first call (cold cache) and
//!   `histogram_again`, the same call again (bytes fetched again).
//!
//! scripts/bench-remote.sh starts xrootd and nginx on loopback, the delaying
//! proxy (scripts/bench/delay_proxy.py) and runs these beside uproot
//! (scripts/bench/uproot_remote.py) reading the same URLs, interleaved.
//!
//! Environment: QUARRY_REMOTE_BENCH_URL (the root's URL), _FILE (the file's
//! name in it), _LABEL (named in the output), _TURNS (the proxy's round-trip
//! count file, optional), _CACHE_MB (the block cache, default 1024: the cut
//! reads two branches of about 300 MB compressed, which must fit for the
//! second call to be served from memory). Without `--bench` (as `cargo test
//! --all-targets` runs it) it does nothing: it needs servers.

mod common;

use std::path::Path;
use std::time::Instant;

use common::handlers::{context, timed};
use quarry::mcp::tools::Context;
use serde_json::{Value, json};

fn env(name: &str) -> Option<String> {
    std::env::var(format!("QUARRY_REMOTE_BENCH_{name}")).ok()
}

/// Round trips the proxy has counted so far (0 without a proxy).
fn turns() -> u64 {
    env("TURNS")
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}

/// Bytes and ranged requests the root has fetched so far.
fn fetched(ctx: &Context) -> (u64, u64) {
    let root = &ctx.catalog.roots().list()[0];
    let status = root.remote.as_ref().expect("a remote root").status();
    (status.bytes_fetched, status.requests)
}

fn report(label: &str, op: &str, seconds: f64, extra: Value) {
    let mut line = json!({"tool": "quarry", "label": label, "op": op, "seconds": seconds});
    if let (Some(l), Some(e)) = (line.as_object_mut(), extra.as_object()) {
        l.extend(e.clone());
    }
    println!("{line}");
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("benches/remote.rs needs servers: scripts/bench-remote.sh runs it");
        return;
    }
    let (Some(url), Some(file)) = (env("URL"), env("FILE")) else {
        eprintln!("set QUARRY_REMOTE_BENCH_URL and _FILE (scripts/bench-remote.sh does)");
        std::process::exit(2);
    };
    let label = env("LABEL").unwrap_or_else(|| url.clone());
    let cache_mb: usize = env("CACHE_MB").and_then(|m| m.parse().ok()).unwrap_or(1024);
    quarry::remote::cache::set_limit(cache_mb << 20);
    let catalog = tempfile::tempdir().unwrap();

    let (turns_before, t) = (turns(), Instant::now());
    let ctx = context(Path::new(&url), catalog.path());
    let seconds = t.elapsed().as_secs_f64();
    let (bytes, requests) = fetched(&ctx);
    let root = &ctx.catalog.roots().list()[0];
    let size = root
        .remote
        .as_ref()
        .unwrap()
        .list("", &|_| false)
        .unwrap()
        .iter()
        .find(|(rel, _)| *rel == file)
        .map(|(_, meta)| meta.size)
        .expect("the file is in the root");
    report(
        &label,
        "index",
        seconds,
        json!({"bytes": bytes, "file_bytes": size, "fraction": bytes as f64 / size as f64,
               "requests": requests, "round_trips": turns() - turns_before}),
    );

    let args = json!({"path": file, "tree": "events", "branch": "muon_pt", "bins": 100,
                      "range": [0, 200], "selection": "muon_pt > 20 && abs(muon_eta) < 2.4"});
    let mut before = fetched(&ctx);
    for op in ["histogram_jagged_cut", "histogram_again"] {
        let turns_before = turns();
        let (v, seconds) = timed(&ctx, "compute_histogram", &args);
        let after = fetched(&ctx);
        let bytes = after.0 - before.0;
        report(
            &label,
            op,
            seconds,
            json!({"entries": v["data"]["entries"], "bytes": bytes,
                   "fraction": bytes as f64 / size as f64, "requests": after.1 - before.1,
                   "round_trips": turns() - turns_before}),
        );
        before = after;
    }
}
