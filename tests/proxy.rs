//! `quarry mcp` and `quarry status` with no roots (issue #14, part 2): they relay
//! to the daemon serving the catalog or socket they are given, and say clearly
//! when none does. A socket left by a killed daemon is replaced at the next start.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{Client, Sandbox, call, quarry, run_ok, status_indexed, wait_until};
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

/// `quarry mcp ARGS` (no --root) as a child process, with an MCP client on it.
async fn mcp_without_roots(args: &[&std::ffi::OsStr]) -> Client {
    let mut cmd = common::quarry_tokio();
    cmd.arg("mcp").args(args);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ().serve(transport).await.unwrap()
}

async fn file_count(client: &Client) -> usize {
    let (v, is_error) = call(client, "list_files", json!({"kind": "all", "limit": 1000})).await;
    assert!(!is_error, "{v}");
    v["data"]["files"].as_array().unwrap().len()
}

async fn wait_complete(client: &Client) {
    for _ in 0..600 {
        let (v, _) = call(client, "index_status", json!({})).await;
        if v["data"]["complete"] == Value::Bool(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the daemon never completed its scan");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_and_status_relay_to_the_daemon_without_roots() {
    let s = Sandbox::with_testdata();
    let daemon = s.serve();
    let by_socket = mcp_without_roots(&["--socket".as_ref(), s.socket().as_os_str()]).await;
    wait_complete(&by_socket).await;
    let files = file_count(&by_socket).await;
    assert!(files >= 30, "{files}");
    let tools = by_socket.list_all_tools().await.unwrap();
    assert!(tools.len() >= 30, "{}", tools.len());

    let by_catalog = mcp_without_roots(&["--catalog".as_ref(), s.catalog.as_os_str()]).await;
    assert_eq!(file_count(&by_catalog).await, files);

    // status asks the daemon: the catalog is in use, and the counts are its.
    let indexed = status_indexed(&s.catalog);
    assert_eq!(indexed, files);
    by_socket.cancel().await.unwrap();
    by_catalog.cancel().await.unwrap();
    daemon.stop();
}

/// What a rootless command prints when nothing serves: the socket and `quarry serve`.
fn assert_clear_refusal(out: &std::process::Output, socket: &std::path::Path) {
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&socket.display().to_string()) && stderr.contains("quarry serve"),
        "{stderr}"
    );
}

#[test]
fn nothing_serving_is_a_clear_error_and_a_stale_socket_is_replaced() {
    let s = Sandbox::with_testdata();
    let rootless = |cmd: &str, flag: &str, value: &std::path::Path| {
        quarry()
            .args([cmd, flag])
            .arg(value)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // No daemon, no catalog yet.
    assert_clear_refusal(&rootless("mcp", "--catalog", &s.catalog), &s.socket());
    assert_clear_refusal(&rootless("mcp", "--socket", &s.socket()), &s.socket());
    assert_clear_refusal(&rootless("status", "--catalog", &s.catalog), &s.socket());

    // A daemon killed with SIGKILL leaves its socket file behind.
    let mut daemon = s.serve();
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    assert!(
        s.socket().exists(),
        "the killed daemon's socket should remain"
    );
    // Nothing answers on it: still a clear error, not a hang.
    assert_clear_refusal(&rootless("mcp", "--socket", &s.socket()), &s.socket());

    // The next daemon replaces the stale socket and serves on it.
    let daemon = s.serve();
    wait_until(Duration::from_secs(30), || {
        std::os::unix::net::UnixStream::connect(s.socket()).is_ok()
    });
    let out = run_ok(
        quarry()
            .args(["call", "index_status", "--json", "--socket"])
            .arg(s.socket()),
    );
    assert!(out.contains("\"roots\""), "{out}");
    daemon.stop();
    assert!(!s.socket().exists(), "a stopped daemon removes its socket");
}
