//! The index under faults that are not the files' own: an unreadable folder, names
//! tools cannot carry, descriptors running out for a moment, and a catalog folder
//! made by someone else. Nothing is skipped silently, nothing transient is
//! recorded as a file's failure, and what quarry writes stays private.

use crate::common;

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// An unprivileged user for the daemon when the tests run as root (root reads
/// every folder, so an unreadable folder needs someone else to be unreadable to).
const NOBODY: u32 = 65534;

fn running_as_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Starts `quarry serve` with `prepare` run in the child before exec.
fn serve_with(
    sandbox: &Sandbox,
    prepare: impl FnMut() -> std::io::Result<()> + Send + Sync + 'static,
) -> Daemon {
    let mut cmd = quarry();
    cmd.args(["serve", "--root", &sandbox.root_arg(), "--catalog"])
        .arg(&sandbox.catalog)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: `prepare` only makes async-signal-safe system calls.
    unsafe { cmd.pre_exec(prepare) };
    let child = cmd.spawn().unwrap();
    let socket = sandbox.socket();
    wait_until(Duration::from_secs(20), || socket.exists());
    Daemon { child }
}

/// The daemon runs as `nobody` when the tests run as root: the sandbox is opened
/// up to it, and its catalog folder is made its own.
fn serve_unprivileged(sandbox: &Sandbox) -> Daemon {
    if !running_as_root() {
        return sandbox.serve();
    }
    let base = sandbox.root.parent().unwrap();
    std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(&sandbox.catalog).unwrap();
    std::os::unix::fs::chown(&sandbox.catalog, Some(NOBODY), Some(NOBODY)).unwrap();
    serve_with(sandbox, || {
        // SAFETY: setgid/setuid are async-signal-safe.
        unsafe {
            if libc::setgid(NOBODY) != 0 || libc::setuid(NOBODY) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    })
}

async fn status_of_root(client: &Client) -> Value {
    let (v, is_error) = call(client, "index_status", json!({"max_errors": 100})).await;
    assert!(!is_error, "{v}");
    v["data"]["roots"][0].clone()
}

fn skipped_reason<'a>(root: &'a Value, path_end: &str) -> Option<&'a str> {
    root["skipped_paths"]
        .as_array()?
        .iter()
        .find(|s| s["path"].as_str().is_some_and(|p| p.ends_with(path_end)))
        .and_then(|s| s["reason"].as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_folder_is_recorded_and_the_rest_stays_watched() {
    let sandbox = Sandbox::new();
    sandbox.write("a.md", b"# a\n");
    sandbox.write("locked/inside.md", b"# hidden from quarry\n");
    let locked = sandbox.root.join("locked");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
    if !running_as_root() {
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    }
    let _daemon = serve_unprivileged(&sandbox);
    let client = sandbox.connect().await;
    wait_indexed(&client).await;

    let root = status_of_root(&client).await;
    let reason = skipped_reason(&root, "/locked").unwrap_or_else(|| panic!("{root}"));
    assert!(reason.contains("Permission denied"), "{reason}");
    let (v, _) = call(&client, "index_status", json!({})).await;
    assert_eq!(v["data"]["watching"], json!(true), "{v}");
    // Live updates still work everywhere else.
    sandbox.write("new.md", b"# new\n");
    sandbox.write("sub/deeper.md", b"# deeper\n");
    wait_listed(&client, &sandbox, "new.md").await;
    wait_listed(&client, &sandbox, "sub/deeper.md").await;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    client.cancel().await.unwrap();
}

/// Creates `depth` nested folders of `name` below `dir`, then `file` in the last,
/// through descriptors (the whole path is longer than a path the system takes).
fn make_deep_path(dir: &Path, name: &str, depth: usize, file: &str) {
    let c = |s: &str| std::ffi::CString::new(s).unwrap();
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: plain system calls on valid NUL-terminated strings and descriptors
    // this function opens and closes.
    unsafe {
        let mut fd = libc::open(path.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
        assert!(fd >= 0);
        for _ in 0..depth {
            assert_eq!(libc::mkdirat(fd, c(name).as_ptr(), 0o755), 0);
            let next = libc::openat(fd, c(name).as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
            assert!(next >= 0);
            libc::close(fd);
            fd = next;
        }
        let f = libc::openat(fd, c(file).as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o644);
        assert!(f >= 0);
        libc::close(f);
        libc::close(fd);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_tools_cannot_carry_are_recorded_as_skipped() {
    let sandbox = Sandbox::new();
    sandbox.write("ok.md", b"# ok\n");
    let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9.md");
    std::fs::write(sandbox.root.join(latin1), b"# cafe\n").unwrap();
    // 21 folders of 200 bytes: over the 4,096 bytes a tool path may have.
    make_deep_path(&sandbox.root, &"d".repeat(200), 21, "deep.md");
    let _daemon = sandbox.serve();
    let client = sandbox.connect().await;
    wait_indexed(&client).await;

    let root = status_of_root(&client).await;
    let reason = skipped_reason(&root, "caf\\xE9.md").unwrap_or_else(|| panic!("{root}"));
    assert!(reason.contains("not valid UTF-8"), "{reason}");
    let deep = root["skipped_paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["path"].as_str().unwrap().contains("dddd"))
        .unwrap_or_else(|| panic!("{root}"));
    let reason = deep["reason"].as_str().unwrap();
    assert!(
        reason.contains("longer than tools accept") || reason.contains("too long"),
        "{reason}"
    );
    assert_eq!(root["skipped_total"], json!(2), "{root}");
    assert_eq!(
        listed(&client, &sandbox.root, json!({"kind": "all"})).await,
        vec!["ok.md"]
    );

    // `quarry status` shows them too.
    client.cancel().await.unwrap();
    drop(_daemon);
    let out = run_ok(quarry().args(["status", "--catalog"]).arg(&sandbox.catalog));
    assert!(out.contains("caf\\xE9.md"), "{out}");
    assert!(out.contains("skipped (2 in all)"), "{out}");
}

/// Sets another process's open-file limits (prlimit(2); same user).
fn set_open_file_limit(pid: u32, soft: u64, hard: u64) {
    let limit = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: prlimit(2) with a valid new limit and no old-limit output.
    let done = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_NOFILE,
            &limit,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(done, 0, "{}", std::io::Error::last_os_error());
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_out_of_descriptors_never_fails_a_file() {
    const LIMIT: u64 = 96;
    let sandbox = Sandbox::new();
    sandbox.write("a.py", b"print('a')\n");
    let daemon = serve_with(&sandbox, || {
        let limit = libc::rlimit {
            rlim_cur: LIMIT,
            rlim_max: LIMIT,
        };
        // SAFETY: setrlimit(2) with a valid struct.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    });
    let pid = daemon.child.id();
    let client = sandbox.connect().await;
    wait_indexed(&client).await;

    // Take every descriptor the daemon has left. Idle connections cannot do it
    // any more (the daemon caps connections below its limit and closes idle
    // ones), so its soft limit is lowered to what it has open.
    let open = open_fds(pid) as u64;
    assert!(open < LIMIT, "{open} descriptors open");
    set_open_file_limit(pid, open, LIMIT);
    // A file written now cannot be opened by the indexer until the limit rises.
    sandbox.write("b.py", b"print('b')\n");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let root = status_of_root(&client).await;
    assert_eq!(
        root["failed_total"],
        json!(0),
        "a transient error was recorded: {root}"
    );

    set_open_file_limit(pid, LIMIT, LIMIT);
    wait_listed(&client, &sandbox, "b.py").await;
    let root = status_of_root(&client).await;
    assert_eq!(root["failed_total"], json!(0), "{root}");
    assert_eq!(root["kinds"]["code"]["indexed"], json!(2), "{root}");
    client.cancel().await.unwrap();
}

/// Every file below `dir` with its mode, and every folder (but `dir` itself).
fn modes_below(dir: &Path, out: &mut Vec<(String, u32, bool)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        let name = entry.path().display().to_string();
        if meta.is_dir() {
            out.push((name, meta.permissions().mode() & 0o777, true));
            modes_below(&entry.path(), out);
        } else if meta.is_file() {
            out.push((name, meta.permissions().mode() & 0o777, false));
        }
    }
}

#[test]
fn the_catalog_is_private_even_in_a_folder_open_to_others() {
    let sandbox = Sandbox::with_testdata();
    std::fs::create_dir(&sandbox.catalog).unwrap();
    std::fs::set_permissions(&sandbox.catalog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let rebuild = || {
        quarry()
            .args(["rebuild", "--root", &sandbox.root_arg(), "--catalog"])
            .arg(&sandbox.catalog)
            .output()
            .unwrap()
    };
    let out = rebuild();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("open to other users"), "{stderr}");

    let check = || {
        let mut modes = Vec::new();
        modes_below(&sandbox.catalog, &mut modes);
        assert!(modes.iter().any(|(n, _, _)| n.ends_with("catalog.redb")));
        assert!(
            modes
                .iter()
                .any(|(n, _, d)| *d && n.ends_with("text-index"))
        );
        for (name, mode, is_dir) in &modes {
            let wanted = if *is_dir { 0o700 } else { 0o600 };
            assert_eq!(*mode, wanted, "{name} has mode {mode:o}");
        }
    };
    check();
    // A catalog an older quarry left readable is made private when opened.
    let db = sandbox.catalog.join("catalog.redb");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(rebuild().status.success());
    check();
}

/// `apply_selection` of a cut on tests/data/root/clusters.root that its
/// statistics decide exactly: `event_number < 1000` passes 1,000 entries, all
/// in the first of 40 clusters (tests/fixtures/root/clusters.json, from
/// scripts/fixtures/root_clusters.py), so with statistics 39 clusters are
/// skipped and without them none.
async fn clusters_skipped(client: &Client, file: &str) -> u64 {
    let args = json!({"path": file, "tree": "events", "selection": "event_number < 1000"});
    let (v, is_error) = call(client, "apply_selection", args).await;
    assert!(!is_error, "{file}: {v}");
    assert_eq!(v["data"]["entries_selected"], 1000, "{file}: {v}");
    v["metadata"]["clusters_skipped"].as_u64().unwrap()
}

/// Waits (up to 60 s) until the background statistics of `file` let a cut
/// skip clusters.
async fn wait_for_statistics(client: &Client, file: &str) {
    let start = std::time::Instant::now();
    while clusters_skipped(client, file).await != 39 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{file} never got its statistics"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A panic while computing one file's statistics in the background pass
/// (injected by `QUARRY_TEST_STATS_PANIC`, a hook of debug builds only) costs
/// that file alone: index_status lists it with the reason, the other files
/// get their statistics, and so does a file indexed after the panic.
#[cfg(debug_assertions)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_the_statistics_pass_costs_only_that_file() {
    let clusters =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/root/clusters.root"))
            .unwrap();
    let s = Sandbox::new();
    for name in ["a.root", "b.root", "c.root"] {
        s.write(name, &clusters);
    }
    let config = s.tmp.path().join("q.toml");
    std::fs::write(&config, "[index]\nstats = \"eager\"\nsettle_ms = 100\n").unwrap();
    let client = s
        .mcp_with_env(
            &["--config", config.to_str().unwrap()],
            &[("QUARRY_TEST_STATS_PANIC", "b.root")],
        )
        .await;
    wait_indexed(&client).await;

    // index_status names the file and the reason.
    let start = std::time::Instant::now();
    let root = loop {
        let root = status_of_root(&client).await;
        if root["stats_failed_total"] == json!(1) {
            break root;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{root}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let (v, _) = call(&client, "index_status", json!({})).await;
    assert_valid("index_status.output.json", &v);
    let failed = &root["stats_failed_files"][0];
    assert!(
        failed["path"].as_str().unwrap().ends_with("/b.root"),
        "{root}"
    );
    let reason = failed["reason"].as_str().unwrap();
    assert!(
        reason.contains("panicked") && reason.contains("QUARRY_TEST_STATS_PANIC"),
        "{reason}"
    );

    // The pass went on: the other files have statistics, and a file indexed
    // after the panic gets them too. The failed one is still counted right.
    wait_for_statistics(&client, "a.root").await;
    wait_for_statistics(&client, "c.root").await;
    s.write("d.root", &clusters);
    wait_listed(&client, &s, "d.root").await;
    wait_for_statistics(&client, "d.root").await;
    assert_eq!(clusters_skipped(&client, "b.root").await, 0);
    client.cancel().await.unwrap();
}
