//! HDF5 files on remote roots (issue #32): nginx and moto (S3) on loopback,
//! started and stopped by the test. An HDF5 file is read by the byte ranges
//! libhdf5 asks for (quarry's virtual file driver, served by the daemon from
//! its block cache), never fetched whole; its resource is `h5://` followed by
//! its URL. Expected values are h5py's and NumPy's
//! (tests/fixtures/hdf5/slices.json, scripts/fixtures/hdf5_files.py;
//! tests/fixtures/hdf5/big_remote.json, scripts/fixtures/hdf5_big_remote.py).

use crate::common;

use std::path::{Path, PathBuf};

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

/// A document past the whole-file limit (documents are read whole by their
/// parsers) is that file's error, naming the limit; an HDF5 file past it is
/// indexed all the same (read by ranges).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_past_the_whole_file_limit_is_refused_with_the_limit_and_hdf5_is_not() {
    let mut s = Sandbox::new();
    let kinds = std::fs::read(repo().join("tests/data/hdf5/kinds.h5")).unwrap();
    s.write("hdf5/kinds.h5", &kinds);
    // Past 1 MiB: kinds.h5 with zeros after its end (libhdf5 reads to the end
    // of its data; the rest is never asked for).
    let mut big = kinds.clone();
    big.resize((1 << 20) + 1, 0);
    s.write("hdf5/big.h5", &big);
    s.write("notes/big.txt", &vec![b'a'; (1 << 20) + 1]);
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
        failed[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("notes/big.txt"),
        "{status}"
    );
    let error = failed[0]["error"].as_str().unwrap();
    assert!(
        error.contains("read whole only up to 1048576 bytes"),
        "{error}"
    );
    assert_eq!(root["kinds"]["hdf5"]["indexed"], 2, "{status}");
    client.cancel().await.unwrap();
}

/// h5py's values of big.h5 (scripts/fixtures/hdf5_big_remote.py).
fn big_expected() -> Value {
    let text = std::fs::read_to_string(repo().join("tests/fixtures/hdf5/big_remote.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// big.h5, 32 MiB: the head the repository keeps (its metadata and the small
/// dataset) and the big dataset's values appended, i * 0.25 as little-endian
/// float64, the formula the fixture script wrote them with.
fn big_file(expected: &Value) -> Vec<u8> {
    let mut bytes = std::fs::read(repo().join("tests/data/hdf5/big_head.h5")).unwrap();
    assert_eq!(
        bytes.len() as u64,
        expected["data_offset"].as_u64().unwrap()
    );
    let count = expected["big_count"].as_u64().unwrap();
    bytes.reserve(count as usize * 8);
    for i in 0..count {
        bytes.extend_from_slice(&(i as f64 * 0.25).to_le_bytes());
    }
    assert_eq!(bytes.len() as u64, expected["size"].as_u64().unwrap());
    bytes
}

/// Where a test's big.h5 is served: the binary's shared nginx or moto, or,
/// for a test that replaces the object on S3, a moto of its own (moto
/// refuses an unsigned overwrite, so replacing resets its state, which the
/// shared one must never see).
enum Served {
    Shared(common::remote::Server),
    OwnMoto(common::remote::Moto),
}

impl Served {
    /// The server's port (a fault proxy's upstream).
    fn port(&self) -> u16 {
        match self {
            Served::Shared(server) => server.port(),
            Served::OwnMoto(moto) => moto.port,
        }
    }

    fn assert_read_by_ranges(&self) {
        match self {
            Served::Shared(server) => server.assert_read_by_ranges(),
            Served::OwnMoto(moto) => moto.assert_read_by_ranges("data/"),
        }
    }

    /// What makes `bytes` the served big.h5 (run later, maybe on a fault
    /// proxy's thread).
    fn replacing_big_file(&self, s: &Sandbox, bytes: Vec<u8>) -> common::faults::Hook {
        match self {
            Served::OwnMoto(moto) => {
                let endpoint = moto.endpoint.clone();
                Box::new(move || {
                    common::remote::replace_object_at(&endpoint, "data/hdf5/big.h5", &bytes)
                })
            }
            Served::Shared(_) => {
                let path = s.root.join("hdf5/big.h5");
                Box::new(move || std::fs::write(path, bytes).unwrap())
            }
        }
    }
}

/// A sandbox serving big.h5 over `over` (S3 on a moto of its own with
/// `own_moto`), with `[remote] max_whole_file_mb = 1` (the file is 32 times
/// that); with `through_proxy`, a fault proxy in front of the server.
fn sandbox_with_big_file(
    over: Over,
    own_moto: bool,
    through_proxy: bool,
) -> (Sandbox, Served, Option<common::remote::FaultProxy>, PathBuf) {
    let expected = big_expected();
    let bytes = big_file(&expected);
    let mut s = Sandbox::new();
    s.write("hdf5/big.h5", &bytes);
    let config = s.catalog.with_file_name("quarry.toml");
    std::fs::write(&config, "[remote]\nmax_whole_file_mb = 1\n").unwrap();
    let served = if over == Over::S3 && own_moto {
        Served::OwnMoto(s.serve_over_own_moto().unwrap())
    } else {
        Served::Shared(s.serve_over(over).unwrap())
    };
    let proxy = through_proxy.then(|| {
        let proxy = common::remote::FaultProxy::new(served.port());
        match &served {
            Served::Shared(server) if over != Over::S3 => {
                s.url = Some(server.url_through(proxy.port));
            }
            _ => {
                for (k, v) in &mut s.env {
                    if k == "AWS_ENDPOINT_URL_S3" {
                        *v = proxy.url.trim_end_matches('/').to_string();
                    }
                }
            }
        }
        proxy
    });
    (s, served, proxy, config)
}

/// `sandbox_with_big_file` with its daemon, once it has indexed.
async fn serving_big_file(over: Over, own_moto: bool) -> (Sandbox, Served, common::Client) {
    let (s, served, _, config) = sandbox_with_big_file(over, own_moto, false);
    let client = s
        .mcp_with_args(&["--config", config.to_str().unwrap()])
        .await;
    wait_indexed(&client).await;
    (s, served, client)
}

/// Waits (30 s at most) until the catalog describes big.h5 as the tiny.h5
/// that replaced it: its `/conditions/hv`, and no `/big/values` any more.
async fn wait_indexed_as_tiny(client: &common::Client) {
    let started = std::time::Instant::now();
    loop {
        let found = ok(client, "find_datasets", json!({"name": "hv"})).await;
        if found.to_string().contains("/conditions/hv") {
            let gone = ok(client, "find_datasets", json!({"name": "values"})).await;
            assert!(!gone.to_string().contains("/big/values"), "{gone}");
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "still the old file: {found}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

async fn bytes_fetched(client: &common::Client) -> u64 {
    let status = ok(client, "index_status", json!({})).await;
    status["data"]["roots"][0]["remote"]["bytes_fetched"]
        .as_u64()
        .unwrap()
}

/// A 32 MiB file past the whole-file limit is indexed, its small dataset and
/// slices of its big one read as h5py reads them, and all of it fetches a
/// small fraction of the file's bytes.
async fn a_big_file_is_read_by_ranges(over: Over) {
    let expected = big_expected();
    let (s, server, client) = serving_big_file(over, false).await;
    let size = expected["size"].as_u64().unwrap();
    let status = ok(&client, "index_status", json!({})).await;
    let root = &status["data"]["roots"][0];
    assert_eq!(root["kinds"]["hdf5"]["indexed"], 1, "{status}");
    assert_eq!(root["kinds"]["hdf5"]["failed"], 0, "{status}");
    let indexing = bytes_fetched(&client).await;

    let url = file_url(&s, "hdf5/big.h5");
    let small = ok(
        &client,
        "read_dataset_slice",
        json!({"uri": format!("h5://{url}?path=/small/calib"), "slice_str": ":"}),
    )
    .await;
    assert_eq!(small["data"]["data"], expected["small"], "{small}");
    let after_small = bytes_fetched(&client).await;
    eprintln!(
        "{over:?}: indexing big.h5 ({size} bytes) fetched {indexing} bytes; \
         reading /small/calib, {after_small} in all"
    );
    assert!(
        after_small * 100 <= size,
        "indexing and one small dataset fetched {after_small} of {size} bytes"
    );

    for case in expected["slices"].as_array().unwrap() {
        let v = ok(
            &client,
            "read_dataset_slice",
            json!({"uri": format!("h5://{url}?path=/big/values"), "slice_str": case["slice"]}),
        )
        .await;
        assert_eq!(
            v["data"]["data"], case["data"],
            "[{}] over {over:?}",
            case["slice"]
        );
    }
    let in_all = bytes_fetched(&client).await;
    let status = ok(&client, "index_status", json!({})).await;
    let requests = &status["data"]["roots"][0]["remote"]["requests"];
    eprintln!(
        "{over:?}: with four slices of /big/values, {in_all} bytes in all, {requests} ranged requests"
    );
    assert!(in_all * 50 <= size, "fetched {in_all} of {size} bytes");
    server.assert_read_by_ranges();
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_hdf5_file_over_http_is_read_by_ranges() {
    a_big_file_is_read_by_ranges(Over::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_hdf5_file_over_s3_is_read_by_ranges() {
    if moto_server().is_none() {
        return;
    }
    a_big_file_is_read_by_ranges(Over::S3).await;
}

/// big.h5 replaced on the server by tiny.h5 after it was indexed: a slice of
/// the indexed dataset is a clear io_error (never values of another file
/// read with the old file's shape), the daemon answers the next call, and
/// the catalog describes the new file seconds later, not at the next
/// scheduled listing.
async fn a_replaced_file_is_an_error_and_indexed_again(over: Over) {
    let (s, served, client) = serving_big_file(over, true).await;
    let tiny = std::fs::read(repo().join("tests/data/hdf5/tiny.h5")).unwrap();
    served.replacing_big_file(&s, tiny)();
    let url = file_url(&s, "hdf5/big.h5");
    let (v, is_error) = call(
        &client,
        "read_dataset_slice",
        json!({"uri": format!("h5://{url}?path=/big/values"), "slice_str": "0:5"}),
    )
    .await;
    assert!(is_error, "{v}");
    assert_eq!(v["error"], "io_error", "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("changed on the server"),
        "{v}"
    );
    wait_indexed_as_tiny(&client).await;
    let hv = ok(
        &client,
        "read_dataset_slice",
        json!({"uri": format!("h5://{url}?path=/conditions/hv"), "slice_str": "1:3"}),
    )
    .await;
    assert_eq!(hv["data"]["data"], json!([1.0, 2.0]), "{hv}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_hdf5_file_over_http_is_an_error_and_indexed_again() {
    a_replaced_file_is_an_error_and_indexed_again(Over::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_hdf5_file_over_s3_is_an_error_and_indexed_again() {
    if moto_server().is_none() {
        return;
    }
    a_replaced_file_is_an_error_and_indexed_again(Over::S3).await;
}

/// big.h5 replaced on the server while a slice is read (after the tool's
/// open saw the indexed version, before the first ranged request for the
/// slice's bytes reaches the server, through a fault proxy): the read fails
/// with a clear io_error saying so (never bytes of two versions mixed), the
/// daemon answers the next call, and the catalog describes the new file soon.
async fn a_file_replaced_while_read_is_an_error(over: Over) {
    let (s, served, proxy, config) = sandbox_with_big_file(over, true, true);
    let proxy = proxy.unwrap();
    let client = s
        .mcp_with_args(&["--config", config.to_str().unwrap()])
        .await;
    wait_indexed(&client).await;
    let tiny = std::fs::read(repo().join("tests/data/hdf5/tiny.h5")).unwrap();
    let replace = served.replacing_big_file(&s, tiny);
    proxy.set(|f| f.before_ranged = Some(replace));
    let url = file_url(&s, "hdf5/big.h5");
    let (v, is_error) = call(
        &client,
        "read_dataset_slice",
        json!({"uri": format!("h5://{url}?path=/big/values"), "slice_str": "1000000:1000008"}),
    )
    .await;
    assert!(
        proxy.faults().before_ranged.is_none(),
        "the file was never replaced"
    );
    assert!(is_error, "{v}");
    assert_eq!(v["error"], "io_error", "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("changed on the server while it was being read"),
        "{v}"
    );
    wait_indexed_as_tiny(&client).await;
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hdf5_file_replaced_while_read_over_http_is_an_error() {
    a_file_replaced_while_read_is_an_error(Over::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hdf5_file_replaced_while_read_over_s3_is_an_error() {
    if moto_server().is_none() {
        return;
    }
    a_file_replaced_while_read_is_an_error(Over::S3).await;
}

/// The server goes away in the middle of reading a slice (the tool's open
/// saw the file; its first ranged request meets a closed server): a clear
/// io_error in bounded time, never a hang or libhdf5's own message; the
/// daemon answers, and once the server is back the same call gives h5py's
/// values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_gone_while_an_hdf5_slice_is_read_is_an_io_error_in_bounded_time() {
    let expected = big_expected();
    let bytes = big_file(&expected);
    let mut s = Sandbox::new();
    s.write("hdf5/big.h5", &bytes);
    let nginx = s.serve_over(Over::Http).unwrap();
    let proxy = common::remote::FaultProxy::new(nginx.port());
    s.url = Some(nginx.url_through(proxy.port));
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let url = file_url(&s, "hdf5/big.h5");
    let case = &expected["slices"][1];
    let args = json!({"uri": format!("h5://{url}?path=/big/values"), "slice_str": case["slice"]});
    proxy.set(|f| f.down_after = Some(0));
    let started = std::time::Instant::now();
    let (v, is_error) = call(&client, "read_dataset_slice", args.clone()).await;
    assert!(is_error, "{v}");
    assert_eq!(v["error"], "io_error", "{v}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert!(proxy.faults().refused > 0);
    let status = ok(&client, "index_status", json!({})).await;
    assert!(
        status["data"]["roots"][0]["remote"]["last_error"].is_string(),
        "{status}"
    );
    proxy.set(|f| f.down = false);
    let v = ok(&client, "read_dataset_slice", args).await;
    assert_eq!(v["data"]["data"], case["data"], "{v}");
    client.cancel().await.unwrap();
}
