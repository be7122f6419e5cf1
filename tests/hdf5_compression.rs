//! Datasets compressed by the filters h5py users write (tests/data/hdf5/filters.h5,
//! written by scripts/fixtures/hdf5_filters.py with h5py and hdf5plugin) read as
//! h5py reads them (tests/fixtures/hdf5/filters.json): LZF and Zstandard through
//! quarry's own filters, LZ4, BZip2 and Blosc through Debian's libhdf5 plugins
//! (scripts/setup-system.sh installs them), all in the HDF5 workers.

use crate::common;

use std::path::Path;

use common::{Client, Sandbox, call, repo_testdata, wait_indexed};
use serde_json::{Value, json};

fn expected() -> Value {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hdf5/filters.json"),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn sandbox() -> Sandbox {
    let s = Sandbox::new();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdf5/filters.h5"),
        s.root.join("filters.h5"),
    )
    .unwrap();
    std::fs::copy(
        repo_testdata().join("hdf5/detector_conditions.h5"),
        s.root.join("conditions.h5"),
    )
    .unwrap();
    s
}

fn uri(s: &Sandbox, file: &str, path: &str) -> String {
    format!("h5://{}?path={path}", s.root.join(file).display())
}

/// Every row of the dataset, read page by page (`offset`) as the results'
/// budget cuts them.
async fn read_all(client: &Client, uri: &str) -> Value {
    let mut rows = Vec::new();
    loop {
        let (v, is_error) = call(
            client,
            "read_dataset_slice",
            json!({"uri": uri, "slice_str": ":", "offset": rows.len()}),
        )
        .await;
        assert!(!is_error, "{uri}: {v}");
        let page = v["data"]["data"].as_array().unwrap().clone();
        assert!(!page.is_empty(), "{uri}: an empty page at {}", rows.len());
        rows.extend(page);
        if v["metadata"]["truncated"] != true {
            return Value::Array(rows);
        }
    }
}

/// Values equal element by element (numbers as f64: Python and serde_json
/// may print the same double differently), the first difference reported.
fn same(got: &Value, want: &Value, what: &str) {
    match (got, want) {
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{what}: lengths");
            for (i, (g, w)) in g.iter().zip(w).enumerate() {
                same(g, w, &format!("{what}[{i}]"));
            }
        }
        (Value::Number(g), Value::Number(w)) => {
            assert_eq!(g.as_f64(), w.as_f64(), "{what}");
        }
        _ => assert_eq!(got, want, "{what}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_filter_reads_as_h5py_reads_it() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let expected = expected();
    for filter in ["lzf", "zstd", "lz4", "bzip2", "blosc", "bitshuffle"] {
        for name in ["grid", "counts"] {
            let path = format!("/{filter}/{name}");
            let got = read_all(&client, &uri(&s, "filters.h5", &path)).await;
            same(&got, &expected["values"][name], &path);
        }
    }
    // LZF chunks it could not shrink are stored unfiltered (the filter is optional).
    let got = read_all(&client, &uri(&s, "filters.h5", "/lzf/noise")).await;
    same(&got, &expected["values"]["noise"], "/lzf/noise");
    // The testdata's own LZF dataset.
    let got = read_all(
        &client,
        &uri(&s, "conditions.h5", "/detector/calibration/dead_channels"),
    )
    .await;
    same(&got, &expected["dead_channels"], "dead_channels");
    client.cancel().await.unwrap();
}

/// quarry sets libhdf5's plugin folders itself: a `HDF5_PLUGIN_PATH` in its
/// environment is not where plugins come from (nothing beyond the system's
/// plugin folders is loaded), and the system's plugins are still found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_come_from_the_system_folder_whatever_the_environment_says() {
    let s = sandbox();
    let elsewhere = s.root.join("not-plugins");
    std::fs::create_dir(&elsewhere).unwrap();
    let client = s
        .mcp_with_env(&[], &[("HDF5_PLUGIN_PATH", elsewhere.to_str().unwrap())])
        .await;
    wait_indexed(&client).await;
    let expected = expected();
    for filter in ["lz4", "bzip2", "blosc"] {
        let path = format!("/{filter}/counts");
        let got = read_all(&client, &uri(&s, "filters.h5", &path)).await;
        same(&got, &expected["values"]["counts"], &path);
    }
    client.cancel().await.unwrap();
}

/// `resources/read` of a chunked dataset reports its chunk storage as h5py's
/// chunk iteration sees it (`dset.id.get_num_chunks`, the sum of
/// `get_chunk_info` sizes), from the catalog: `/sparse` has 5 of its 100
/// chunks written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_report_chunk_storage_as_h5py_counts_it() {
    use rmcp::model::{ReadResourceRequestParams, ResourceContents};
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let expected = expected();
    let datasets = expected["datasets"].as_object().unwrap();
    assert!(datasets.len() >= 14);
    for (path, want) in datasets {
        let result = client
            .read_resource(ReadResourceRequestParams::new(uri(&s, "filters.h5", path)))
            .await
            .unwrap();
        let ResourceContents::TextResourceContents { text, .. } = &result.contents[0] else {
            panic!("a text resource");
        };
        let v: Value = serde_json::from_str(text).unwrap();
        let chunks = &want["chunks"];
        let got = &v["chunk_storage"];
        assert_eq!(got["chunks"], chunks["chunks_in_extent"], "{path}: {v}");
        assert_eq!(got["chunks_written"], chunks["count"], "{path}");
        assert_eq!(got["allocated_bytes"], chunks["stored_bytes"], "{path}");
        let fraction =
            chunks["count"].as_f64().unwrap() / chunks["chunks_in_extent"].as_f64().unwrap();
        assert_eq!(got["fraction_written"].as_f64(), Some(fraction), "{path}");
    }
    // A dataset stored without chunks has no chunk storage.
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri(
            &s,
            "conditions.h5",
            "/detector/channel_ids",
        )))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &result.contents[0] else {
        panic!("a text resource");
    };
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["layout"], "contiguous");
    assert!(v.get("chunk_storage").is_none(), "{v}");
    client.cancel().await.unwrap();
}
