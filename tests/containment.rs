//! Nothing outside a root is read: not through a folder link the watcher could
//! follow, not through a folder moved in with a link inside, and not through a
//! link swapped in after a file was indexed (the tools open files beneath their
//! root). Each case runs a real daemon on real files.

use crate::common;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const SECRET: &str = "TOPSECRET";

/// A root (`data`) with one document, beside a folder outside it.
struct Escape {
    sandbox: Sandbox,
    outside: PathBuf,
}

impl Escape {
    fn new() -> Escape {
        let sandbox = Sandbox::new();
        let outside = sandbox.root.parent().unwrap().join("outside");
        std::fs::create_dir(&outside).unwrap();
        sandbox.write("a.md", b"# a\ninside\n");
        Escape { sandbox, outside }
    }

    fn histograms_file() -> PathBuf {
        repo_testdata().join("root/uproot-histograms.root")
    }

    fn tree_file() -> PathBuf {
        repo_testdata().join("root/uproot-HZZ.root")
    }

    /// Puts a secret document and a ROOT file into `dir` (outside the root).
    fn plant_secrets(dir: &Path) {
        std::fs::write(dir.join("secret.md"), format!("# s\n{SECRET}\n")).unwrap();
        std::fs::copy(Self::histograms_file(), dir.join("h.root")).unwrap();
    }
}

/// Writes a file inside the root and waits until the daemon lists it: every
/// event before it has been handled by then.
async fn settle_with_marker(client: &Client, sandbox: &Sandbox, name: &str) {
    sandbox.write(name, b"# marker\n");
    wait_listed(client, sandbox, name).await;
}

async fn assert_nothing_leaked(client: &Client, sandbox: &Sandbox, prefix: &str) {
    let files = listed(client, &sandbox.root, json!({"kind": "all", "limit": 1000})).await;
    assert!(
        files.iter().all(|f| !f.starts_with(prefix)),
        "files behind the link were indexed: {files:?}"
    );
    let (v, _) = call(
        client,
        "search_documents",
        json!({"query": SECRET, "scope": {"type": "global"}}),
    )
    .await;
    assert_eq!(v["data"]["total_matches"], json!(0), "{v}");
    let (v, is_error) = call(
        client,
        "read_document",
        json!({"path": format!("{prefix}secret.md")}),
    )
    .await;
    assert!(is_error && !v.to_string().contains(SECRET), "{v}");
    let (v, is_error) = call(
        client,
        "read_histogram",
        json!({"path": format!("{prefix}h.root"), "name": "one"}),
    )
    .await;
    assert!(is_error, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_never_follows_a_folder_link_out_of_the_root() {
    let e = Escape::new();
    symlink("../outside", e.sandbox.root.join("link")).unwrap();
    let _daemon = e.sandbox.serve();
    let client = e.sandbox.connect().await;
    wait_indexed(&client).await;
    // Written after the daemon watches: only a watcher that followed the link
    // would see these.
    Escape::plant_secrets(&e.outside);
    // Time for a watcher that followed the link to see the secrets.
    tokio::time::sleep(Duration::from_secs(1)).await;
    settle_with_marker(&client, &e.sandbox, "marker.md").await;
    assert_nothing_leaked(&client, &e.sandbox, "link/").await;
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_moved_in_with_a_link_out_is_watched_but_its_link_is_not() {
    let e = Escape::new();
    let _daemon = e.sandbox.serve();
    let client = e.sandbox.connect().await;
    wait_indexed(&client).await;
    let staging = e.sandbox.root.parent().unwrap().join("staging/moved");
    std::fs::create_dir_all(&staging).unwrap();
    symlink("../../outside", staging.join("out")).unwrap();
    std::fs::rename(&staging, e.sandbox.root.join("moved")).unwrap();
    settle_with_marker(&client, &e.sandbox, "marker1.md").await;
    Escape::plant_secrets(&e.outside);
    // Time for a watcher that followed the link to see the secrets.
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The moved-in folder itself is watched: a file written in it appears.
    settle_with_marker(&client, &e.sandbox, "moved/inside.md").await;
    assert_nothing_leaked(&client, &e.sandbox, "moved/out/").await;
    client.cancel().await.unwrap();
}

/// The inotify watches a process holds, read from /proc.
fn inotify_watches(pid: u32) -> usize {
    let mut watches = 0;
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        let is_inotify = std::fs::read_link(fd.path())
            .is_ok_and(|target| target.to_string_lossy().contains("inotify"));
        if is_inotify {
            let info = std::fs::read_to_string(format!(
                "/proc/{pid}/fdinfo/{}",
                fd.file_name().to_string_lossy()
            ))
            .unwrap();
            watches += info
                .lines()
                .filter(|l| l.starts_with("inotify wd:"))
                .count();
        }
    }
    watches
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_to_a_large_folder_costs_no_watches() {
    let e = Escape::new();
    std::fs::create_dir_all(e.sandbox.root.join("sub/deeper")).unwrap();
    symlink("/usr", e.sandbox.root.join("usr")).unwrap();
    let daemon = e.sandbox.serve();
    let client = e.sandbox.connect().await;
    wait_indexed(&client).await;
    // The root, sub and sub/deeper: one watch per real folder; and the (empty) ingest
    // folder, served as a root of its own.
    assert_eq!(inotify_watches(daemon.child.id()), 4);
    client.cancel().await.unwrap();
}

/// Keeps replacing `target` by a link to `to` every 100 ms until stopped.
fn keep_swapping(
    target: PathBuf,
    to: PathBuf,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let swap = move || {
        let temp = target.with_extension("swap");
        let _ = std::fs::remove_file(&temp);
        symlink(&to, &temp).unwrap();
        std::fs::rename(&temp, &target).unwrap();
    };
    // The first swap happens before this returns, so every call after it sees a link.
    swap();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
            swap();
        }
    })
}

fn error_code(v: &Value) -> &str {
    v["error"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_swapped_in_after_indexing_is_never_followed() {
    let e = Escape::new();
    std::fs::copy(Escape::histograms_file(), e.sandbox.root.join("h.root")).unwrap();
    std::fs::copy(Escape::tree_file(), e.sandbox.root.join("t.root")).unwrap();
    std::fs::create_dir(e.sandbox.root.join("sub")).unwrap();
    std::fs::copy(Escape::histograms_file(), e.sandbox.root.join("sub/h.root")).unwrap();
    std::fs::copy(Escape::tree_file(), e.outside.join("t.root")).unwrap();
    // The canary outside is a ROOT file with the same histogram: reading it would
    // succeed, so any success below is a leak.
    Escape::plant_secrets(&e.outside);
    let _daemon = e.sandbox.serve();
    let client = e.sandbox.connect().await;
    wait_indexed(&client).await;
    let (v, is_error) = call(
        &client,
        "read_histogram",
        json!({"path": "h.root", "name": "one"}),
    )
    .await;
    assert!(!is_error, "{v}");

    // The file becomes a link out, re-created every 100 ms so that the watcher
    // never settles it out of the catalog.
    let stop = Arc::new(AtomicBool::new(false));
    let swappers = ["h.root", "t.root"].map(|name| {
        keep_swapping(
            e.sandbox.root.join(name),
            e.outside.join(name),
            stop.clone(),
        )
    });
    // A folder on the path becomes a link out too.
    std::fs::rename(e.sandbox.root.join("sub"), e.sandbox.root.join("sub.old")).unwrap();
    symlink(&e.outside, e.sandbox.root.join("sub")).unwrap();

    let start = Instant::now();
    let mut calls = 0;
    while start.elapsed() < Duration::from_secs(2) {
        for path in ["h.root", "sub/h.root"] {
            let (v, is_error) = call(
                &client,
                "read_histogram",
                json!({"path": path, "name": "one"}),
            )
            .await;
            assert!(
                is_error,
                "{path} was read through a link out of the root: {v}"
            );
            // permission_denied from the open beneath the root; file_not_found, or
            // histogram_not_found when the watcher drops the entry between the
            // call's two catalog reads (sub/ became a link out).
            assert!(
                ["permission_denied", "file_not_found", "histogram_not_found"]
                    .contains(&error_code(&v)),
                "{v}"
            );
            calls += 1;
        }
        // Statistics not cached yet are computed from the file: never from the
        // file behind the link.
        let (v, is_error) = call(
            &client,
            "list_branches",
            json!({"path": "t.root", "tree": "events", "include_stats": true}),
        )
        .await;
        assert!(
            is_error,
            "t.root was read through a link out of the root: {v}"
        );
        assert_eq!(error_code(&v), "permission_denied", "{v}");
    }
    stop.store(true, Ordering::Relaxed);
    for s in swappers {
        s.join().unwrap();
    }
    assert!(calls > 10);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hdf5_file_swapped_for_a_link_is_never_read() {
    let e = Escape::new();
    let kinds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdf5/kinds.h5");
    std::fs::copy(&kinds, e.sandbox.root.join("k.h5")).unwrap();
    std::fs::create_dir(e.sandbox.root.join("sub")).unwrap();
    std::fs::copy(&kinds, e.sandbox.root.join("sub/k.h5")).unwrap();
    // The same file outside: reading it would succeed, so any success is a leak.
    std::fs::copy(&kinds, e.outside.join("k.h5")).unwrap();
    let _daemon = e.sandbox.serve();
    let client = e.sandbox.connect().await;
    wait_indexed(&client).await;
    let root = e.sandbox.root.canonicalize().unwrap();
    let uri = |rel: &str| format!("h5://{}/{rel}?path=/numbers/chunked", root.display());
    let read = json!({"uri": uri("k.h5"), "slice_str": ":3"});
    let (v, is_error) = call(&client, "read_dataset_slice", read.clone()).await;
    assert!(!is_error, "{v}");

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = keep_swapping(
        e.sandbox.root.join("k.h5"),
        e.outside.join("k.h5"),
        stop.clone(),
    );
    std::fs::rename(e.sandbox.root.join("sub"), e.sandbox.root.join("sub.old")).unwrap();
    symlink(&e.outside, e.sandbox.root.join("sub")).unwrap();

    let start = Instant::now();
    let mut calls = 0;
    while start.elapsed() < Duration::from_secs(2) {
        for rel in ["k.h5", "sub/k.h5"] {
            for tool in ["read_dataset_slice", "get_dataset_stats"] {
                let (v, is_error) =
                    call(&client, tool, json!({"uri": uri(rel), "slice_str": ":3"})).await;
                assert!(
                    is_error,
                    "{tool} read {rel} through a link out of the root: {v}"
                );
                // permission_denied from the open beneath the root, or
                // resource_not_found once the watcher dropped the entry.
                assert!(
                    ["permission_denied", "resource_not_found"].contains(&error_code(&v)),
                    "{tool} {rel}: {v}"
                );
                calls += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(calls > 8);
    client.cancel().await.unwrap();
}
