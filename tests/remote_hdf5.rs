//! HDF5 files on remote roots (issue #32): nginx and moto (S3) on loopback,
//! started and stopped by the test. An HDF5 file is fetched whole into memory
//! (up to `[remote] max_whole_file_mb`) and read by libhdf5 as a local one;
//! its resource is `h5://` followed by its URL. Expected values are h5py's and
//! NumPy's (tests/fixtures/hdf5/slices.json, scripts/fixtures/hdf5_files.py).

use crate::common;

use std::path::Path;

use common::remote::{Over, moto_server};
use common::{Sandbox, call, call_ok as ok, wait_indexed};
use serde_json::{Value, json};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The file's URL on the server `s` is served by.
fn file_url(s: &Sandbox, rel: &str) -> String {
    format!("{}{rel}", s.url.as_ref().expect("served"))
}

async fn datasets_read_as_h5py_reads_them(over: Over) {
    let mut s = Sandbox::new();
    let kinds = std::fs::read(repo().join("tests/data/hdf5/kinds.h5")).unwrap();
    s.write("hdf5/kinds.h5", &kinds);
    let server = s.serve_over(over).unwrap();
    let client = s.mcp().await;
    wait_indexed(&client).await;

    // Indexed, not just listed: its datasets are found by name.
    let status = ok(&client, "index_status", json!({})).await;
    let root = &status["data"]["roots"][0];
    assert_eq!(root["kinds"]["hdf5"]["failed"], 0, "{status}");
    let found = ok(&client, "find_datasets", json!({"name": "i1"})).await;
    let text = found.to_string();
    assert!(text.contains("/numbers/i1"), "{found}");

    let url = file_url(&s, "hdf5/kinds.h5");
    let cases: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("tests/fixtures/hdf5/slices.json")).unwrap(),
    )
    .unwrap();
    let mut checked = 0;
    for case in cases.as_array().unwrap() {
        if case.get("error").is_some() {
            continue;
        }
        let dataset = case["dataset"].as_str().unwrap();
        let args = json!({
            "uri": format!("h5://{url}?path={dataset}"),
            "slice_str": case["slice"],
        });
        let (v, is_error) = call(&client, "read_dataset_slice", args).await;
        let what = format!("{dataset} [{}] over {over:?}", case["slice"]);
        assert!(!is_error, "{what}: {v}");
        assert_eq!(v["data"]["shape"], case["shape"], "{what}");
        assert_eq!(v["data"]["data"], case["data"], "{what}");
        checked += 1;
    }
    assert!(checked >= 30, "{checked} cases");
    server.assert_read_by_ranges();
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hdf5_over_http_reads_as_h5py() {
    datasets_read_as_h5py_reads_them(Over::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hdf5_over_s3_reads_as_h5py() {
    if moto_server().is_none() {
        return;
    }
    datasets_read_as_h5py_reads_them(Over::S3).await;
}

/// A file past the whole-file limit is that file's error, naming the limit;
/// the files under it are indexed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hdf5_file_past_the_whole_file_limit_is_refused_with_the_limit() {
    let mut s = Sandbox::new();
    let kinds = std::fs::read(repo().join("tests/data/hdf5/kinds.h5")).unwrap();
    s.write("hdf5/kinds.h5", &kinds);
    // Past 1 MiB: kinds.h5 with zeros after its end (only its size matters).
    let mut big = kinds.clone();
    big.resize((1 << 20) + 1, 0);
    s.write("hdf5/big.h5", &big);
    let config = s.catalog.with_file_name("quarry.toml");
    std::fs::write(&config, "[remote]\nmax_whole_file_mb = 1\n").unwrap();
    let _server = s.serve_over(Over::Http).unwrap();
    let client = s
        .mcp_with_args(&["--config", config.to_str().unwrap()])
        .await;
    wait_indexed(&client).await;
    let status = ok(&client, "index_status", json!({})).await;
    let root = &status["data"]["roots"][0];
    let failed = root["failed_files"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{status}");
    assert!(
        failed[0]["path"].as_str().unwrap().ends_with("hdf5/big.h5"),
        "{status}"
    );
    let error = failed[0]["error"].as_str().unwrap();
    assert!(
        error.contains("read whole only up to 1048576 bytes"),
        "{error}"
    );
    assert_eq!(root["kinds"]["hdf5"]["indexed"], 1, "{status}");
    client.cancel().await.unwrap();
}
