//! Remote roots over XRootD (issue #32): Debian's xrootd on loopback exporting
//! a copy of the test data, read with quarry's own XRootD client. Paths are
//! `root://host:port//path` URLs and nothing else is reached; indexing a ROOT
//! file reads its metadata only, a cluster's baskets come in one readv, and
//! documents are read. (The ROOT tools' answers over XRootD are checked by the
//! `*_over_xrootd` tests of root_tools.rs and root_analysis_tools.rs.)

use crate::common;

use std::path::Path;

use common::remote::{Over, free_port, uproot_histogram, uproot_histogram_with_cut};
use common::{Client, Sandbox, call, call_ok as ok, listed, wait_indexed};
use serde_json::{Value, json};

async fn error_code(client: &Client, tool: &str, args: Value) -> String {
    let (v, is_error) = call(client, tool, args).await;
    assert!(is_error, "{tool} should fail: {v}");
    v["error"].as_str().unwrap().to_string()
}

fn remote(status: &Value) -> Value {
    status["data"]["roots"][0]["remote"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xrootd_paths_are_urls_beneath_the_export_and_files_are_read() {
    let mut s = Sandbox::with_testdata();
    let server = s.serve_over(Over::Xrootd).unwrap();
    let url = s.url.clone().unwrap();
    let client = s.mcp().await;
    wait_indexed(&client).await;

    let v = ok(
        &client,
        "list_files",
        json!({"kind": "root", "limit": 1000}),
    )
    .await;
    let histograms = format!("{url}root/uproot-histograms.root");
    assert!(
        v["data"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == histograms),
        "{v}"
    );
    let by_url = ok(&client, "inspect_file", json!({"path": histograms})).await;
    assert_eq!(by_url["data"]["path"], histograms);

    let port = url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let path = url.split_once("//").unwrap().1.split_once('/').unwrap().1;
    for outside in [
        format!(
            "root://127.0.0.1:{}/{path}root/uproot-histograms.root",
            free_port()
        ),
        format!("root://localhost:{port}/{path}root/uproot-histograms.root"),
        format!("root://127.0.0.1:{port}//etc/passwd"),
    ] {
        let code = error_code(&client, "inspect_file", json!({"path": outside})).await;
        assert_eq!(code, "permission_denied", "{outside}");
    }

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
    assert!(remote(&status)["last_listing"].is_string(), "{status}");
    server.assert_read_by_ranges();
    client.cancel().await.unwrap();
}

/// tests/data/root/clusters.root (1.49 MB): indexing fetches its metadata
/// blocks only; a histogram reads each cluster's baskets in one readv.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexing_over_xrootd_reads_metadata_not_baskets() {
    let mut s = Sandbox::new();
    let bytes =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/root/clusters.root"))
            .unwrap();
    s.write("root/clusters.root", &bytes);
    let _server = s.serve_over(Over::Xrootd).unwrap();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let indexed = remote(&ok(&client, "index_status", json!({})).await);
    let fetched = indexed["bytes_fetched"].as_u64().unwrap();
    let requests = indexed["requests"].as_u64().unwrap();
    eprintln!("indexing over xrootd fetched {fetched} bytes in {requests} ranges");
    assert!(fetched * 5 <= bytes.len() as u64, "{indexed}");
    let v = ok(
        &client,
        "compute_histogram",
        json!({"path": "root/clusters.root", "tree": "events", "branch": "muon_pt", "bins": 20}),
    )
    .await;
    assert!(v["data"]["entries"].as_u64().unwrap() > 0, "{v}");
    client.cancel().await.unwrap();
}

/// The server stopped under a daemon holding pooled connections to it: a
/// call fails with io_error in bounded time, the daemon stays up, and once
/// the server is back (same port) the same call gives uproot's counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stopped_and_started_again_is_reported_then_read() {
    // A server of its own: it is stopped.
    let mut s = Sandbox::with_testdata();
    let xrootd = common::remote::Xrootd::serve(&s.root);
    s.url = Some(xrootd.url.clone());
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let port = xrootd.port;
    drop(xrootd);
    let (args, want) = uproot_histogram("uproot-HZZ-lz4.root");
    let started = std::time::Instant::now();
    let (v, is_error) = call(&client, "compute_histogram", args.clone()).await;
    assert!(is_error, "{v}");
    assert_eq!(v["error"], "io_error", "{v}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    let status = ok(&client, "index_status", json!({})).await;
    assert!(remote(&status)["last_error"].is_string(), "{status}");
    let _again = common::remote::Xrootd::serve_on(&s.root, port);
    let v = ok(&client, "compute_histogram", args).await;
    assert_eq!(v["data"]["bin_counts"], want);
    client.cancel().await.unwrap();
}

/// Bytes the remote root has fetched so far (index_status).
async fn fetched(client: &Client) -> u64 {
    remote(&ok(client, "index_status", json!({})).await)["bytes_fetched"]
        .as_u64()
        .unwrap()
}

/// Waits until the disk cache's folder stops growing (its writer is behind
/// the reads by a queue), so that stopping the daemon loses no block.
fn settled_disk_cache(catalog: &Path) {
    let size = || -> u64 {
        std::fs::read_dir(catalog.join("remote-blocks"))
            .map(|d| d.map(|e| e.unwrap().metadata().unwrap().len()).sum())
            .unwrap_or(0)
    };
    let mut last = u64::MAX;
    while size() != last {
        last = size();
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

/// One daemon run (indexing, then the histogram): the histogram's counts
/// and the bytes the run fetched.
async fn histogram_run(s: &Sandbox, args: &Value) -> (Value, u64) {
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let v = ok(&client, "compute_histogram", args.clone()).await;
    let bytes = fetched(&client).await;
    settled_disk_cache(&s.catalog);
    client.cancel().await.unwrap();
    (v["data"]["bin_counts"].clone(), bytes)
}

/// The disk cache (`[remote] disk_cache_mb`, on by default): the daemon
/// started again on the same catalog (a root of one ROOT file) reads the
/// blocks of its histogram from disk, fetching at most a tenth of the first
/// run's bytes again; once the file changes on the server (its modification
/// time), it is indexed and read anew. The counts are uproot's each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_started_again_reads_from_its_disk_cache_until_the_file_changes() {
    let mut s = Sandbox::new();
    let name = "uproot-HZZ-lz4.root";
    s.write(
        &format!("root/{name}"),
        &std::fs::read(common::repo_testdata().join("root").join(name)).unwrap(),
    );
    let _server = s.serve_over(Over::Xrootd).unwrap();
    let (args, want) = uproot_histogram("uproot-HZZ-lz4.root");

    let (counts, first) = histogram_run(&s, &args).await;
    assert_eq!(counts, want);
    assert!(first > 0);
    let (counts, again) = histogram_run(&s, &args).await;
    assert_eq!(counts, want);
    eprintln!("the first run fetched {first} bytes, the run after a restart {again}");
    assert!(
        again * 10 <= first,
        "{again} of {first} bytes fetched again"
    );

    let file = s.root.join("root/uproot-HZZ-lz4.root");
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    let (counts, changed) = histogram_run(&s, &args).await;
    assert_eq!(counts, want);
    assert!(
        changed * 10 >= first * 9,
        "{changed} bytes fetched for the changed file, first {first}"
    );
}

/// A root served by the shared xrootd through an `XrdRelay` of its own.
fn relayed(s: &mut Sandbox) -> (common::remote::Server, common::remote::XrdRelay) {
    let server = s.serve_over(Over::Xrootd).unwrap();
    let relay = common::remote::XrdRelay::new(server.port());
    s.url = Some(server.url_through(relay.port));
    (server, relay)
}

/// The XRootD faults of issue #32, put between quarry and a real xrootd by a
/// relay that reads the protocol's framing: reads answered kXR_wait (a busy
/// server), a connection dropped before the read reached the server, answers
/// cut short, then the server going away in the middle of a read. Waits are
/// waited out and the rest retried, to uproot's counts; the server gone
/// fails the call with io_error in bounded time while the daemon answers
/// and reads again once it is back; the catalog keeps every file indexed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xrootd_faults_are_waited_out_retried_or_reported_and_the_daemon_stays_up() {
    let mut s = Sandbox::with_testdata();
    let (_xrootd, relay) = relayed(&mut s);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let indexed = ok(&client, "list_files", json!({"kind": "all", "limit": 1000})).await;

    relay.set(|f| f.wait = 2);
    let (args, want) = uproot_histogram("uproot-HZZ.root");
    let started = std::time::Instant::now();
    let v = ok(&client, "compute_histogram", args).await;
    assert_eq!(v["data"]["bin_counts"], want);
    assert_eq!(relay.faults().served_wait, 2);
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "the waits were kept"
    );

    relay.set(|f| {
        f.drop = 1;
        f.truncate = 2;
    });
    let (args, want) = uproot_histogram("uproot-HZZ-lz4.root");
    let v = ok(&client, "compute_histogram", args).await;
    assert_eq!(v["data"]["bin_counts"], want);
    {
        let f = relay.faults();
        assert_eq!((f.served_drop, f.served_truncated), (1, 2));
    }

    // The server dies while sending a read's answer: cut short, then every
    // connection closed and none accepted.
    relay.set(|f| {
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
    assert!(relay.faults().down);
    let status = ok(&client, "index_status", json!({})).await;
    assert!(remote(&status)["last_error"].is_string(), "{status}");
    relay.set(|f| f.down = false);
    let v = ok(&client, "compute_histogram", args).await;
    assert_eq!(v["data"]["bin_counts"], want);
    common::remote::assert_catalog_kept(&client, &indexed).await;
    client.cancel().await.unwrap();
}

/// A file replaced on the server (a new file renamed over it) after the
/// listing saw it, just before the index opens it: the index never stores
/// the new file's rows under the listed version (its size), nor the old
/// one's; it states the file again and indexes what is there now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_replaced_between_listing_and_reading_is_indexed_as_it_is_now() {
    let mut s = Sandbox::new();
    let new = std::fs::read(common::repo_testdata().join("root/uproot-nesteddirs.root")).unwrap();
    s.write(
        "root/f.root",
        &std::fs::read(common::repo_testdata().join("root/uproot-histograms.root")).unwrap(),
    );
    let (_xrootd, relay) = relayed(&mut s);
    let file = s.root.join("root/f.root");
    let aside = s.tmp.path().join("f.root.new");
    std::fs::write(&aside, &new).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&aside, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    relay.set(|f| f.before_open = Some(Box::new(move || std::fs::rename(&aside, &file).unwrap())));
    let client = s.mcp().await;
    common::remote::wait_indexed_as_replaced(&client, new.len()).await;
    assert!(
        relay.faults().before_open.is_none(),
        "the file was never replaced"
    );
    client.cancel().await.unwrap();
}

/// A real redirector and data server pair (Debian's xrootd and cmsd, one
/// `all.role manager`, one `all.role server`) on loopback: the root is
/// given by the redirector's URL; listing, indexing and a histogram with a
/// cut go through it (it redirects each file to the data server), and the
/// counts are uproot's, as the same call on the local folder gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_acceptance_passes_through_a_real_redirector_and_its_data_server() {
    let mut s = Sandbox::with_testdata();
    let (args, want) = uproot_histogram_with_cut("uproot-HZZ.root");
    let local = s.mcp().await;
    wait_indexed(&local).await;
    let v = ok(&local, "compute_histogram", args.clone()).await;
    assert_eq!(v["data"]["bin_counts"], want, "the local answer");
    local.cancel().await.unwrap();

    let cluster = common::remote::XrootdCluster::serve(&s.root);
    s.url = Some(cluster.url.clone());
    s.catalog = s.tmp.path().join("catalog-remote");
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let v = ok(&client, "list_files", json!({"kind": "all", "limit": 1000})).await;
    let paths: Vec<&str> = v["data"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    let hzz = format!("{}root/uproot-HZZ.root", cluster.url);
    assert!(paths.contains(&hzz.as_str()), "{paths:?}");
    assert!(
        paths.iter().all(|p| p.starts_with(&cluster.url)),
        "{paths:?}"
    );
    let status = ok(&client, "index_status", json!({})).await;
    common::remote::assert_no_failed_kinds(&status);
    assert!(remote(&status)["last_error"].is_null(), "{status}");
    let v = ok(&client, "compute_histogram", args).await;
    assert_eq!(v["data"]["bin_counts"], want);
    // quarry reached the data server only by the manager's redirects.
    let served = cluster.log("xrootd", "server");
    assert!(
        served.contains("login"),
        "no login at the data server: {served}"
    );
    client.cancel().await.unwrap();
}

/// XRootD's HTTP plugin as many sites run it, with HTML listings denied
/// (`http.listingdeny`): folders are listed by WebDAV (`PROPFIND`, whose
/// `Depth` header it reads only when capitalised), every ROOT file is found
/// and a histogram with a cut equals uproot's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xrootd_over_http_without_html_listings_is_listed_by_webdav() {
    let mut s = Sandbox::with_testdata();
    let server = common::remote::Xrootd::serve_without_html_listings(&s.root);
    let url = format!("http://127.0.0.1:{}{}/", server.http_port, s.root.display());
    // The page itself is refused: the listing cannot have come from it.
    assert!(
        ureq::get(&url).call().is_err(),
        "XrdHttp served an HTML listing"
    );
    s.url = Some(url.clone());
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let files = listed(
        &client,
        Path::new(&url),
        json!({"kind": "root", "limit": 1000}),
    )
    .await;
    assert_eq!(files, root_files(&s.root, ""));
    let status = ok(&client, "index_status", json!({})).await;
    common::remote::assert_no_failed_kinds(&status);
    let (args, want) = uproot_histogram_with_cut("uproot-HZZ.root");
    let v = ok(&client, "compute_histogram", args).await;
    assert_eq!(v["data"]["bin_counts"], want, "{v}");
    server.assert_logged_in_over_http();
    client.cancel().await.unwrap();
}

/// The `.root` files below `dir`, by their paths relative to the root
/// (`rel` is `dir`'s), sorted.
fn root_files(dir: &Path, rel: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        let path = format!("{rel}{name}");
        if entry.file_type().unwrap().is_dir() {
            out.extend(root_files(&entry.path(), &format!("{path}/")));
        } else if name.ends_with(".root") {
            out.push(path);
        }
    }
    out.sort();
    out
}
