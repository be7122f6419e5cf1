//! `quarry mcp` and `quarry status` with no roots (issue #14, part 2): they relay
//! to the daemon serving the catalog or socket they are given, and say clearly
//! when none does. A socket left by a killed daemon is replaced at the next start.
//! When the daemon dies with calls in flight, the relay sends only the read-only
//! ones to its successor.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::raw::{Raw, heavy_corpus, heavy_search, heavy_search_alone, serve_with};
use common::{Client, Sandbox, call, quarry, repo_testdata, run_ok, status_indexed, wait_until};
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

/// A `quarry mcp` child spoken to in raw lines; its output lines arrive on a channel.
struct RawRelay {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: mpsc::Receiver<Value>,
}

impl RawRelay {
    fn start(args: &[&std::ffi::OsStr]) -> RawRelay {
        let mut child = quarry()
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, output) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                    break;
                }
            }
        });
        RawRelay {
            child,
            input,
            output,
        }
    }

    fn send(&mut self, v: &Value) {
        self.input.write_all(format!("{v}\n").as_bytes()).unwrap();
    }

    /// Answers (lines with an id) until the one to `id`, within 60 s.
    fn answers_until(&mut self, id: u64) -> Vec<Value> {
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.output.recv_timeout(left).expect("an answer in time");
            if v.get("method").is_some() {
                continue;
            }
            let done = v["id"] == id;
            seen.push(v);
            if done {
                return seen;
            }
        }
    }
}

/// The daemon is killed with a search running in its only call slot and three
/// calls queued behind it: export_branches (it writes), list_files (read-only)
/// and a search the client then cancelled. The relay answers the export with an
/// error saying it may have run and was not sent again, sends the two read-only
/// calls to the next daemon, and forgets the cancelled one; the export folder
/// stays empty (the first daemon never reached the export, the second never got it).
#[test]
fn after_the_daemon_restarts_only_read_only_calls_are_sent_again() {
    let s = Sandbox::new();
    heavy_corpus(&s);
    std::fs::create_dir_all(s.root.join("root")).unwrap();
    std::fs::copy(
        repo_testdata().join("root/uproot-HZZ.root"),
        s.root.join("root/uproot-HZZ.root"),
    )
    .unwrap();
    let config = "[toolsets]\nrag = false\n[server]\nmax_concurrent_calls = 1\n";
    let mut daemon = serve_with(&s, config, None);
    common::raw::wait_complete(&s.socket());
    let mut c = Raw::connect(&s.socket());
    c.initialize();
    let alone = heavy_search_alone(&mut c, 1);
    drop(c);
    assert!(
        alone >= Duration::from_millis(600),
        "one search takes {alone:?}: too quick to keep calls queued behind it"
    );

    let mut relay = RawRelay::start(&["--socket".as_ref(), s.socket().as_os_str()]);
    relay.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "relay-test", "version": "1"}}}),
    );
    relay.answers_until(0);
    relay.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    relay.send(&heavy_search(1));
    relay.send(&common::raw::tool_call(
        2,
        "export_branches",
        json!({"path": "root/uproot-HZZ.root", "tree": "events", "branches": ["NMuon"],
               "output_format": "json", "output_path": "relay.json"}),
    ));
    relay.send(&common::raw::tool_call(
        3,
        "list_files",
        json!({"kind": "root"}),
    ));
    relay.send(&heavy_search(4));
    relay.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 4, "reason": "test"}}),
    );
    // The search holds the slot for about `alone`; the rest wait behind it.
    std::thread::sleep(Duration::from_millis(300));
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    std::fs::remove_file(s.socket()).unwrap();
    let daemon = serve_with(&s, config, None);

    // The export is answered as soon as the daemon is lost: not sent again.
    let first = relay.answers_until(2);
    let first_ids: Vec<&Value> = first.iter().map(|v| &v["id"]).collect();
    assert_eq!(first_ids, [&json!(2)], "answered before the export's error");
    let refused = &first[0]["error"];
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.contains("export_branches") && message.contains("may have run"),
        "{refused}"
    );
    assert_eq!(refused["data"]["resent"], false, "{refused}");
    // The read-only calls are answered by the new daemon.
    let mut answered = relay.answers_until(3);
    if answered.iter().all(|v| v["id"] != 1) {
        answered.extend(relay.answers_until(1));
    }
    for v in &answered {
        assert_eq!(v["result"]["isError"], false, "{v}");
    }
    // A call queued after them (one slot, in turn) comes back with no answer to
    // the cancelled search before it.
    relay.send(&common::raw::tool_call(5, "list_files", json!({})));
    let rest = relay.answers_until(5);
    let ids: Vec<&Value> = answered.iter().chain(&rest).map(|v| &v["id"]).collect();
    assert!(
        !ids.contains(&&json!(4)),
        "the cancelled search was sent again: {ids:?}"
    );
    assert_eq!(ids.len(), 3, "{ids:?}");
    let exported = s.catalog.join("exports/relay.json");
    assert!(!exported.exists(), "the export ran");

    drop(relay.input);
    assert!(relay.child.wait().unwrap().success());
    daemon.stop();
}
