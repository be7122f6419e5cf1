//! Remote roots over S3 (issue #32): moto (an S3-compatible server from PyPI,
//! scripts/setup-moto.sh) on loopback, the test data uploaded as objects of a
//! bucket. Paths are `s3://bucket/prefix/...` URLs and no other bucket is
//! reached; documents are read; listing and bytes fetched show in
//! index_status. (The ROOT tools' answers over S3 are checked by the
//! `*_over_s3` tests of root_tools.rs and root_analysis_tools.rs.)

use crate::common;

use std::path::Path;

use common::remote::{Over, moto_server};
use common::{Client, Sandbox, call, call_ok as ok, wait_indexed};
use serde_json::{Value, json};

async fn error_code(client: &Client, tool: &str, args: Value) -> String {
    let (v, is_error) = call(client, tool, args).await;
    assert!(is_error, "{tool} should fail: {v}");
    v["error"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_paths_are_urls_in_the_bucket_and_files_are_read() {
    if moto_server().is_none() {
        return;
    }
    let mut s = Sandbox::with_testdata();
    let server = s.serve_over(Over::S3).unwrap();
    let client = s.mcp().await;
    wait_indexed(&client).await;

    let v = ok(
        &client,
        "list_files",
        json!({"kind": "root", "limit": 1000}),
    )
    .await;
    let paths: Vec<&str> = v["data"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    let histograms = "s3://quarry-test/data/root/uproot-histograms.root";
    assert!(paths.contains(&histograms), "{paths:?}");
    let by_url = ok(&client, "inspect_file", json!({"path": histograms})).await;
    assert_eq!(by_url["data"]["path"], histograms);
    assert!(!by_url["data"]["histograms"].as_array().unwrap().is_empty());

    // Another bucket, prefix or scheme is never reached.
    for outside in [
        "s3://other-bucket/data/root/uproot-histograms.root",
        "s3://quarry-test/elsewhere/uproot-histograms.root",
        "https://quarry-test/data/root/uproot-histograms.root",
    ] {
        let code = error_code(&client, "inspect_file", json!({"path": outside})).await;
        assert_eq!(code, "permission_denied", "{outside}");
    }

    // A document, fetched whole, reads as the file it was uploaded from.
    let md = "docs/notes/beam_test_2024.md";
    let v = ok(&client, "read_document", json!({"path": md})).await;
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata")
            .join(md),
    )
    .unwrap();
    let heading = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap()
        .trim_start_matches('#')
        .trim();
    assert!(
        v["data"]["content"].as_str().unwrap().contains(heading),
        "{v}"
    );

    let status = ok(&client, "index_status", json!({})).await;
    let root = &status["data"]["roots"][0];
    for kind in ["root", "document", "code"] {
        assert_eq!(root["kinds"][kind]["failed"], 0, "{status}");
    }
    let remote = &root["remote"];
    assert!(remote["last_listing"].is_string(), "{status}");
    assert!(remote["last_error"].is_null(), "{status}");
    assert!(remote["bytes_fetched"].as_u64().unwrap() > 0, "{status}");
    server.assert_read_by_ranges();
    client.cancel().await.unwrap();
}

/// The fixture's first histogram of `file` (uproot + numpy's counts).
fn uproot_histogram(file: &str) -> (Value, Value) {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/selections.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let f = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"] == format!("testdata/root/{file}"))
        .unwrap();
    let h = &f["histograms"][0];
    let args = json!({"path": format!("root/{file}"), "tree": f["tree"], "branch": h["value"],
        "bins": h["bins"], "range": h["range"]});
    (args, h["bin_counts"].clone())
}

/// S3 answering 503 (as it does when throttling) or cutting responses short:
/// the retries see the call through, with uproot's counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_throttling_and_cut_responses_are_retried() {
    if moto_server().is_none() {
        return;
    }
    let mut s = Sandbox::with_testdata();
    let Some(common::remote::Server::Moto(moto)) = s.serve_over(Over::S3) else {
        unreachable!()
    };
    let proxy = common::remote::FaultProxy::new(moto.port);
    for (k, v) in &mut s.env {
        if k == "AWS_ENDPOINT_URL_S3" {
            *v = proxy.url.trim_end_matches('/').to_string();
        }
    }
    let client = s.mcp().await;
    wait_indexed(&client).await;
    proxy.set(|f| f.unavailable = 3);
    let (args, want) = uproot_histogram("uproot-HZZ.root");
    let v = ok(&client, "compute_histogram", args).await;
    assert_eq!(v["data"]["bin_counts"], want);
    assert_eq!(proxy.faults().served_unavailable, 3);
    proxy.set(|f| f.truncate = 2);
    let (args, want) = uproot_histogram("uproot-HZZ-lz4.root");
    let v = ok(&client, "compute_histogram", args).await;
    assert_eq!(v["data"]["bin_counts"], want);
    assert_eq!(proxy.faults().served_truncated, 2);
    client.cancel().await.unwrap();
}
