//! HDF5 datasets whose filter pipeline the reader cannot, or should not, trust:
//! a filter this build lacks is `unsupported_filter` (naming the filter), and
//! chunks that lie about their size (tests/data/hdf5/lying_chunks.h5, written by
//! scripts/fixtures/hdf5_lying_chunks.py) get an answer promptly, cost the
//! server nothing (libhdf5 runs in worker processes), and leave it serving.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::test_filter::write_with_test_filter;
use common::{Client, Sandbox, call, repo_testdata, wait_indexed};
use serde_json::{Value, json};

fn uri(s: &Sandbox, file: &str, path: &str) -> String {
    format!("h5://{}?path={path}", s.root.join(file).display())
}

async fn error_of(client: &Client, tool: &str, args: Value) -> Value {
    let (v, is_error) = call(client, tool, args).await;
    assert!(is_error, "{tool}: {v}");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_this_build_lacks_is_unsupported_filter() {
    let s = Sandbox::new();
    std::fs::copy(
        repo_testdata().join("hdf5/detector_conditions.h5"),
        s.root.join("conditions.h5"),
    )
    .unwrap();
    write_with_test_filter(&s.root.join("test_filter.h5"));
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdf5/filters.h5"),
        s.root.join("filters.h5"),
    )
    .unwrap();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    // The test filter is in no build at all; its id and name are the registry's.
    let cases = [(
        uri(&s, "test_filter.h5", "/filtered"),
        "filter quarry-test-identity (333) is not available",
    )];
    for (uri, expected) in &cases {
        for (tool, args) in [
            ("read_dataset_slice", json!({"uri": uri, "slice_str": ":4"})),
            ("get_dataset_stats", json!({"uri": uri})),
        ] {
            let v = error_of(&client, tool, args).await;
            assert_eq!(v["error"], "unsupported_filter", "{tool}: {v}");
            let message = v["message"].as_str().unwrap();
            assert!(message.contains(expected), "{tool}: {message}");
            assert!(v["suggestion"].as_str().unwrap().contains("read_resource"));
        }
    }
    // The file's other datasets read as ever.
    let (v, is_error) = call(
        &client,
        "read_dataset_slice",
        json!({"uri": uri(&s, "conditions.h5", "/detector/calibration/gains"), "slice_str": ":2"}),
    )
    .await;
    assert!(!is_error, "{v}");
    client.cancel().await.unwrap();
}

/// Peak resident memory of a process, in KiB.
fn peak_kib(pid: u32) -> u64 {
    status_field(pid, "VmHWM:").unwrap()
}

fn status_field(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets a process's peak resident memory to what it holds now.
fn reset_peak(pid: u32) {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
}

/// The children of a process (its HDF5 workers).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

fn lying_chunks() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdf5/lying_chunks.h5")
}

/// Bytes the `inflates_past_chunk` chunk inflates to (the script's INFLATED_BYTES).
const INFLATED_KIB: u64 = 64 << 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lying_chunks_are_answered_promptly_outside_the_server() {
    // The positive control: read in this process, the inflating chunk does
    // take its whole inflated size in memory.
    let me = std::process::id();
    reset_peak(me);
    let before = status_field(me, "VmRSS:").unwrap();
    {
        let f = hdf5::File::open(lying_chunks()).unwrap();
        let read: Vec<f64> = f
            .dataset("inflates_past_chunk")
            .unwrap()
            .read_raw()
            .unwrap();
        assert_eq!(read.len(), 1024);
    }
    let grew = peak_kib(me).saturating_sub(before);
    assert!(
        grew >= INFLATED_KIB * 3 / 4,
        "read here, the bomb took only {grew} KiB"
    );

    let s = Sandbox::new();
    std::fs::copy(lying_chunks(), s.root.join("lying.h5")).unwrap();
    let (client, server) = s.mcp_with_pid().await;
    wait_indexed(&client).await;
    reset_peak(server);
    let server_before = status_field(server, "VmRSS:").unwrap();
    let mut worker_peak = 0;
    for dataset in [
        "inflates_past_chunk",
        "inflates_short",
        "not_deflate",
        "huge_chunk_record",
    ] {
        let u = uri(&s, "lying.h5", &format!("/{dataset}"));
        for (tool, args) in [
            ("read_dataset_slice", json!({"uri": u, "slice_str": ":4"})),
            ("get_dataset_stats", json!({"uri": u})),
        ] {
            let started = Instant::now();
            let (v, is_error) = call(&client, tool, args).await;
            let took = started.elapsed();
            assert!(took < Duration::from_secs(20), "{tool} {dataset}: {took:?}");
            if is_error {
                assert_eq!(v["error"], "corrupted_file", "{tool} {dataset}: {v}");
            } else if tool == "read_dataset_slice" {
                assert_eq!(v["data"]["shape"], json!([4]), "{dataset}: {v}");
            } else {
                assert_eq!(v["data"]["count"], 1024, "{dataset}: {v}");
            }
            // A worker that answered is kept a few seconds: its peak is the cost.
            for worker in children(server) {
                worker_peak = worker_peak.max(status_field(worker, "VmHWM:").unwrap_or(0));
            }
        }
    }
    // Chunks whose record or stream is plainly wrong are errors.
    for dataset in ["not_deflate", "huge_chunk_record"] {
        let u = uri(&s, "lying.h5", &format!("/{dataset}"));
        let v = error_of(
            &client,
            "read_dataset_slice",
            json!({"uri": u, "slice_str": ":4"}),
        )
        .await;
        assert_eq!(v["error"], "corrupted_file", "{v}");
    }
    let server_grew = peak_kib(server).saturating_sub(server_before);
    eprintln!("server peak grew {server_grew} KiB; worker peak {worker_peak} KiB");
    assert!(
        server_grew < INFLATED_KIB / 2,
        "the server grew {server_grew} KiB"
    );
    // The server still serves the file's honest dataset (0.5 * i, as written).
    let (v, is_error) = call(
        &client,
        "read_dataset_slice",
        json!({"uri": uri(&s, "lying.h5", "/honest"), "slice_str": ":4"}),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["data"]["data"], json!([0.0, 0.5, 1.0, 1.5]));
    client.cancel().await.unwrap();
}
