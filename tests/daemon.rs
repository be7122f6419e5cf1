//! The daemon as a process: the watcher keeps the catalog fresh, the socket serves
//! several clients, `quarry mcp` instances share a catalog, and a killed rebuild
//! leaves a catalog that converges to a clean one.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Client, Sandbox, call, listed, wait_indexed};
use quarry::catalog::Catalog;
use serde_json::json;

/// Waits (at most `limit`) until list_files(kind=all) equals `expected`.
async fn wait_listing(
    client: &Client,
    s: &Sandbox,
    expected: &[&str],
    limit: Duration,
) -> Duration {
    let start = Instant::now();
    loop {
        let got = listed(client, &s.root, json!({"kind": "all"})).await;
        if got == expected {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "after {limit:?} the catalog lists {got:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Waits (at most `limit`) until list_files reports `name` with `size` bytes.
async fn wait_size(client: &Client, name: &str, size: u64, limit: Duration, what: &str) {
    let start = Instant::now();
    while size_listed(client, name).await != size {
        assert!(start.elapsed() < limit, "{what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn size_listed(client: &Client, name: &str) -> u64 {
    let (v, _) = call(
        client,
        "list_files",
        json!({"kind": "all", "pattern": name}),
    )
    .await;
    v["data"]["files"][0]["size_bytes"].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_follows_create_modify_rename_delete_within_two_seconds() {
    let s = Sandbox::new();
    s.write("keep.md", b"# keep");
    let daemon = s.serve();
    let client = s.connect().await;
    wait_indexed(&client).await;
    let limit = Duration::from_secs(2);

    s.write(
        "runs/run_1.root",
        &std::fs::read(common::repo_testdata().join("root/uproot-Zmumu.root")).unwrap(),
    );
    wait_listing(&client, &s, &["keep.md", "runs/run_1.root"], limit).await;

    s.write("keep.md", b"# keep\n\nmore text, so the size changes");
    wait_size(&client, "keep.md", 38, limit, "modification not seen").await;

    std::fs::rename(
        s.root.join("runs/run_1.root"),
        s.root.join("runs/run_2.root"),
    )
    .unwrap();
    wait_listing(&client, &s, &["keep.md", "runs/run_2.root"], limit).await;

    // An editor's save: write a hidden temporary file, rename it over the original.
    s.write(".keep.md.swp", b"# rewritten by an editor");
    std::fs::rename(s.root.join(".keep.md.swp"), s.root.join("keep.md")).unwrap();
    wait_size(&client, "keep.md", 24, limit, "write-then-rename not seen").await;

    std::fs::remove_file(s.root.join("keep.md")).unwrap();
    wait_listing(&client, &s, &["runs/run_2.root"], limit).await;

    // A whole folder: created with files, moved, deleted.
    s.write("batch/a.txt", b"a");
    s.write("batch/deeper/b.py", b"print(1)");
    wait_listing(
        &client,
        &s,
        &["batch/a.txt", "batch/deeper/b.py", "runs/run_2.root"],
        limit,
    )
    .await;
    std::fs::rename(s.root.join("batch"), s.root.join("moved")).unwrap();
    wait_listing(
        &client,
        &s,
        &["moved/a.txt", "moved/deeper/b.py", "runs/run_2.root"],
        limit,
    )
    .await;
    std::fs::remove_dir_all(s.root.join("moved")).unwrap();
    wait_listing(&client, &s, &["runs/run_2.root"], limit).await;

    // A corrupt file arriving while serving is recorded; the rest goes on.
    s.write("runs/cut.root", b"root\0\0\0\x01");
    s.write("notes.md", b"# fine");
    wait_listing(
        &client,
        &s,
        &["notes.md", "runs/cut.root", "runs/run_2.root"],
        limit,
    )
    .await;
    let (v, _) = call(&client, "index_status", json!({})).await;
    assert_eq!(v["data"]["roots"][0]["kinds"]["root"]["failed"], 1, "{v}");
    assert_eq!(v["data"]["watching"], true);
    client.cancel().await.unwrap();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_is_private_and_serves_clients_at_once() {
    let s = Sandbox::with_testdata();
    let daemon = s.serve();
    let mode = std::fs::metadata(s.socket()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "socket mode {mode:o}");

    let (a, b) = tokio::join!(s.connect(), s.connect());
    wait_indexed(&a).await;
    let (ra, rb) = tokio::join!(
        call(&a, "list_files", json!({"pattern": "*HZZ*"})),
        call(&b, "list_files", json!({"kind": "hdf5"}))
    );
    assert_eq!(ra.0["data"]["total_matched"], 6);
    assert_eq!(rb.0["data"]["total_matched"], 3);
    a.cancel().await.unwrap();
    // One client leaving does not disturb the other.
    let (v, _) = call(&b, "list_files", json!({})).await;
    // 12 in root/, 22 RNTuple files in rntuple/.
    assert_eq!(v["data"]["total_matched"], 34);

    // `status` asks the running daemon; `rebuild` refuses a catalog in use.
    let out = common::run_ok(
        common::quarry()
            .args(["status", "--json", "--catalog"])
            .arg(&s.catalog),
    );
    let status: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["data"]["roots"][0]["kinds"]["root"]["indexed"], 34);
    let out = common::quarry()
        .args(["rebuild", "--root", &s.root_arg(), "--catalog"])
        .arg(&s.catalog)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use"));
    b.cancel().await.unwrap();
    daemon.stop();
    assert!(
        !s.socket().exists(),
        "the daemon removes its socket on SIGTERM"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_mcp_clients_share_one_catalog() {
    let s = Sandbox::with_testdata();
    let (first, second) = tokio::join!(s.mcp(), s.mcp());
    wait_indexed(&first).await;
    wait_indexed(&second).await;
    let (a, _) = call(&first, "list_files", json!({"kind": "all", "limit": 1000})).await;
    let (b, _) = call(&second, "list_files", json!({"kind": "all", "limit": 1000})).await;
    assert_eq!(a["data"], b["data"]);
    assert_eq!(a["data"]["total_matched"], 53);

    // The first client leaves; the second keeps working (the owner lingers for it).
    first.cancel().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (v, is_error) = call(&second, "list_files", json!({"kind": "code"})).await;
    assert!(!is_error);
    assert_eq!(v["data"]["total_matched"], 10);
    second.cancel().await.unwrap();

    // And a third, later client becomes the owner in turn.
    let third = s.mcp().await;
    let (v, _) = call(&third, "list_files", json!({})).await;
    assert_eq!(v["data"]["total_matched"], 34);
    third.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_survives_the_owner_being_killed() {
    let s = Sandbox::with_testdata();
    let (owner, owner_pid) = s.mcp_with_pid().await;
    wait_indexed(&owner).await;
    let (relayed, relayed_pid) = s.mcp_with_pid().await;
    let (v, _) = call(&relayed, "list_files", json!({})).await;
    assert_eq!(v["data"]["total_matched"], 34);

    // SAFETY: kill(2) on a child process id.
    unsafe { libc::kill(owner_pid as i32, libc::SIGKILL) };
    // The relay elects itself, replays the handshake, and the session goes on.
    let (v, is_error) = call(&relayed, "list_files", json!({"kind": "hdf5"})).await;
    assert!(!is_error, "{v}");
    assert_eq!(v["data"]["total_matched"], 3);
    wait_indexed(&relayed).await;
    drop(owner);
    relayed.cancel().await.unwrap();
    // SAFETY: as above; the process is already gone or leaving.
    unsafe { libc::kill(relayed_pid as i32, 0) };
}

/// Every file of the first root as (path, kind, size, fingerprint, failed).
fn catalog_contents(dir: &std::path::Path) -> Vec<(String, String, u64, u64, bool)> {
    let catalog = Catalog::open_existing(dir).unwrap();
    let mut out: Vec<_> = catalog
        .files()
        .under(0, "")
        .into_iter()
        .map(|(rel, e)| (rel, e.kind.to_string(), e.size, e.fingerprint, e.failed))
        .collect();
    out.sort();
    out
}

#[test]
fn killed_rebuild_restarts_onto_a_catalog_equal_to_a_clean_rebuild() {
    let s = Sandbox::new();
    for i in 0..6000 {
        s.write(
            &format!("d{}/f{i}.txt", i % 40),
            format!("line {i}\n").as_bytes(),
        );
    }
    s.write("bad.root", b"not root");
    // Small batches: many transactions, so the kill lands between and inside them.
    let config = s.tmp.path().join("q.toml");
    std::fs::write(&config, "[index]\nbatch = 10\nthreads = 1\n").unwrap();
    let rebuild = |catalog: &std::path::Path| {
        let mut cmd = common::quarry();
        cmd.args(["rebuild", "--root", &s.root_arg(), "--config"])
            .arg(&config)
            .arg("--catalog")
            .arg(catalog);
        cmd
    };

    for delay_ms in [150, 400] {
        let mut child = rebuild(&s.catalog)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Kill inside the batches, whatever the machine's load: counted from the
        // moment the rebuild says how many files it will index (its schema is
        // committed by then).
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        while !line.contains("files to index") {
            line.clear();
            assert!(std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() > 0);
        }
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(
            !status.success(),
            "the rebuild finished before the kill; make it longer"
        );
        // Whatever was committed is readable.
        Catalog::open_existing(&s.catalog).expect("a consistent catalog after kill -9");
    }

    // Restart the daemon on the killed catalog and let it converge.
    let daemon = s.serve();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = s.connect().await;
        wait_indexed(&client).await;
        client.cancel().await.unwrap();
    });
    daemon.stop();

    let clean = s.tmp.path().join("clean");
    assert!(rebuild(&clean).output().unwrap().status.success());
    let recovered = catalog_contents(&s.catalog);
    assert_eq!(recovered.len(), 6001);
    assert_eq!(recovered, catalog_contents(&clean));
}

#[test]
fn default_catalogs_are_per_root_set_and_found_by_status() {
    let s = Sandbox::with_testdata();
    let other = s.tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("a.md"), b"# a").unwrap();
    let xdg = s.tmp.path().join("xdg");
    let run =
        |args: &[&str]| common::run_ok(common::quarry().args(args).env("XDG_DATA_HOME", &xdg));
    run(&["rebuild", "--root", &s.root_arg()]);
    run(&["rebuild", "--root", &format!("notes={}", other.display())]);
    let catalogs: Vec<String> = std::fs::read_dir(xdg.join("quarry/catalogs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(catalogs.len(), 2, "{catalogs:?}");
    let report = run(&["status"]);
    assert!(
        report.contains("root 'data'") && report.contains("root 'notes'"),
        "{report}"
    );
    let json: serde_json::Value = serde_json::from_str(&run(&["status", "--json"])).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2);
}
