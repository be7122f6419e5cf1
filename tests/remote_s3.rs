//! Remote roots over S3 (issue #32): moto (an S3-compatible server from PyPI,
//! scripts/setup-moto.sh) on loopback, the test data uploaded as objects of a
//! bucket. Paths are `s3://bucket/prefix/...` URLs and no other bucket is
//! reached; documents are read; listing and bytes fetched show in
//! index_status. (The ROOT tools' answers over S3 are checked by the
//! `*_over_s3` tests of root_tools.rs and root_analysis_tools.rs.)

use crate::common;

use std::path::Path;

use common::remote::{Over, moto_server, uproot_histogram, uproot_histogram_with_cut};
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

/// A fault-injecting proxy in front of moto (on `moto_port`), made the endpoint the
/// sandbox's quarry reaches S3 at.
fn through_fault_proxy(s: &mut Sandbox, moto_port: u16) -> common::remote::FaultProxy {
    let proxy = common::remote::FaultProxy::new(moto_port);
    for (k, v) in &mut s.env {
        if k == "AWS_ENDPOINT_URL_S3" {
            *v = proxy.url.trim_end_matches('/').to_string();
        }
    }
    proxy
}

/// The S3 faults of issue #32 through a fault-injecting proxy in front of
/// moto: 503 Slow Down (S3's throttling) then recovery, responses cut short,
/// and the server going away in the middle of a read. Throttling and cut
/// responses are retried to uproot's counts; the server gone fails the call
/// with io_error in bounded time while the daemon answers, says so in
/// index_status and reads again once the server is back; the catalog keeps
/// every file indexed throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_faults_are_retried_or_reported_and_the_daemon_stays_up() {
    if moto_server().is_none() {
        return;
    }
    let mut s = Sandbox::with_testdata();
    let moto = s.serve_over(Over::S3).unwrap();
    let proxy = through_fault_proxy(&mut s, moto.port());
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let indexed = ok(&client, "list_files", json!({"kind": "all", "limit": 1000})).await;
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

    // The server dies while sending the first answer of a read: cut short,
    // then nothing answers any more.
    proxy.set(|f| {
        f.truncate = 1;
        f.down_after = Some(1);
    });
    let (args, want) = uproot_histogram("uproot-HZZ-zstd.root");
    let started = std::time::Instant::now();
    let (v, is_error) = call(&client, "compute_histogram", args.clone()).await;
    assert!(is_error, "{v}");
    assert_eq!(v["error"], "io_error", "{v}");
    assert!(
        v["suggestion"].as_str().unwrap().contains("index_status"),
        "{v}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    {
        let f = proxy.faults();
        assert!(f.down && f.refused > 0 && f.served_truncated == 3);
    }
    let status = ok(&client, "index_status", json!({})).await;
    let error = status["data"]["roots"][0]["remote"]["last_error"].clone();
    assert!(
        error
            .as_str()
            .is_some_and(|e| e.contains("uproot-HZZ-zstd.root")),
        "{status}"
    );
    // Back up: the same call gives uproot's counts, and the catalog lost nothing.
    proxy.set(|f| f.down = false);
    let v = ok(&client, "compute_histogram", args).await;
    assert_eq!(v["data"]["bin_counts"], want);
    common::remote::assert_catalog_kept(&client, &indexed).await;
    client.cancel().await.unwrap();
}

/// An object replaced on the server after the listing saw it and while its
/// first ranged read is on its way (S3 is not a file system: an object is
/// replaced whole, under a new ETag and size): the index never stores the
/// new bytes under the listed version, nor the old version's rows; it
/// lists the object again and indexes what is there now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_replaced_between_listing_and_reading_is_indexed_as_it_is_now() {
    if moto_server().is_none() {
        return;
    }
    let mut s = Sandbox::new();
    let old = std::fs::read(common::repo_testdata().join("root/uproot-histograms.root")).unwrap();
    let new = std::fs::read(common::repo_testdata().join("root/uproot-nesteddirs.root")).unwrap();
    assert_ne!(old.len(), new.len());
    s.write("root/f.root", &old);
    // A moto of its own: its state is reset.
    let moto = std::sync::Arc::new(s.serve_over_own_moto().unwrap());
    let proxy = through_fault_proxy(&mut s, moto.port);
    let (m, replacement) = (moto.clone(), new.clone());
    proxy.set(|f| {
        f.before_ranged = Some(Box::new(move || {
            common::remote::replace_object(&m, "data/root/f.root", &replacement)
        }))
    });
    let client = s.mcp().await;
    common::remote::wait_indexed_as_replaced(&client, new.len()).await;
    assert!(
        proxy.faults().before_ranged.is_none(),
        "the object was never replaced"
    );
    client.cancel().await.unwrap();
}

/// `[remote] s3_addressing = "virtual"`: the bucket is in the host name
/// (`quarry-test.localhost:PORT`, which quarry resolves to loopback as
/// RFC 6761 allows) and request paths are the keys alone; left to its
/// default on a custom endpoint, addressing is path-style
/// (`localhost:PORT`, `/quarry-test/...`). Seen by a recording proxy in
/// front of moto, which serves both; a histogram with a cut is uproot's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_buckets_are_addressed_virtual_hosted_or_path_style() {
    if moto_server().is_none() {
        return;
    }
    let mut s = Sandbox::with_testdata();
    let moto = s.serve_over(Over::S3).unwrap();
    s.env.retain(|(k, _)| k != "AWS_ENDPOINT_URL_S3");
    let (args, want) = uproot_histogram_with_cut("uproot-HZZ.root");
    for addressing in ["virtual", "default"] {
        let proxy = common::remote::FaultProxy::new(moto.port());
        let endpoint = format!("localhost:{}", proxy.port);
        let config = s.tmp.path().join(format!("{addressing}.toml"));
        let mut text = format!("[remote]\ns3_endpoint = \"http://{endpoint}\"\n");
        if addressing == "virtual" {
            text.push_str("s3_addressing = \"virtual\"\n");
        }
        std::fs::write(&config, text).unwrap();
        // A catalog of its own: everything is listed and read afresh.
        s.catalog = s.tmp.path().join(format!("catalog-{addressing}"));
        let client = s
            .mcp_with_args(&["--config", config.to_str().unwrap()])
            .await;
        wait_indexed(&client).await;
        let v = ok(
            &client,
            "list_files",
            json!({"kind": "root", "limit": 1000}),
        )
        .await;
        let path = "s3://quarry-test/data/root/uproot-HZZ.root";
        assert!(
            v["data"]["files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["path"] == path),
            "{v}"
        );
        let v = ok(&client, "compute_histogram", args.clone()).await;
        assert_eq!(v["data"]["bin_counts"], want, "{addressing}");
        client.cancel().await.unwrap();

        let requests = proxy.faults().requests.clone();
        assert!(requests.len() > 2, "{requests:?}");
        let (host, prefix) = if addressing == "virtual" {
            (format!("quarry-test.{endpoint}"), "/data/")
        } else {
            (endpoint.clone(), "/quarry-test/data/")
        };
        for (line, got_host) in &requests {
            assert_eq!(got_host, &host, "{line}");
            let target = line.split(' ').nth(1).unwrap();
            // The listing names the bucket's top; every other request a key.
            let listing = target.contains("list-type=2");
            assert!(
                listing || target.starts_with(prefix),
                "{addressing}: {line}"
            );
            if listing {
                let top = if addressing == "virtual" {
                    "/?"
                } else {
                    "/quarry-test?"
                };
                assert!(target.starts_with(top), "{addressing}: {line}");
            }
        }
        assert!(requests.iter().any(|(l, _)| l.contains("list-type=2")));
    }
}

/// An object replaced after it was indexed, with the next scheduled listing
/// minutes away: the first tool call that opens it sees another version than
/// the catalog's, and the catalog describes the new object seconds later
/// instead of the old one until that listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_a_tool_finds_replaced_is_indexed_again_at_once() {
    if moto_server().is_none() {
        return;
    }
    let mut s = Sandbox::new();
    let old = std::fs::read(common::repo_testdata().join("root/uproot-histograms.root")).unwrap();
    let new = std::fs::read(common::repo_testdata().join("root/uproot-HZZ.root")).unwrap();
    s.write("root/f.root", &old);
    // A moto of its own: its state is reset.
    let moto = s.serve_over_own_moto().unwrap();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let before = ok(&client, "inspect_file", json!({"path": "root/f.root"})).await;
    assert_eq!(before["data"]["size_bytes"], old.len());
    common::remote::replace_object(&moto, "data/root/f.root", &new);
    // A histogram the catalog lists: the call opens the object to read it.
    // Any answer will do (the new object has no such histogram).
    let _ = call(
        &client,
        "read_histogram",
        json!({"path": "root/f.root", "name": "one"}),
    )
    .await;
    let started = std::time::Instant::now();
    loop {
        let v = ok(&client, "inspect_file", json!({"path": "root/f.root"})).await;
        if v["data"]["size_bytes"] == new.len() {
            let trees = v["data"]["trees"].as_array().unwrap();
            assert!(trees.iter().any(|t| t["name"] == "events"), "{v}");
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "still the old object: {v}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    client.cancel().await.unwrap();
}
