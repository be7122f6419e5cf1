//! The daemon's transport against misbehaving clients, over its real Unix socket:
//! malformed lines get JSON-RPC errors, a client that reads nothing cannot grow
//! the daemon's memory or threads, abandoned and cancelled calls stop using the
//! CPU, long calls report progress, idle connections cannot starve new clients
//! of descriptors, and binding the socket removes no other process's file.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::raw::{
    Raw, heavy_corpus, heavy_search, heavy_search_alone, serve_with, tool_call, wait_complete,
};
use common::{Daemon, Sandbox, quarry};
use serde_json::{Value, json};

fn proc_status(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn rss_mb(pid: u32) -> f64 {
    proc_status(pid, "VmRSS:") as f64 / 1024.0
}

fn threads(pid: u32) -> u64 {
    proc_status(pid, "Threads:")
}

/// User plus system CPU time the process has used, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) in parentheses.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

#[test]
fn malformed_lines_get_json_rpc_errors_on_the_socket_and_on_stdio() {
    let s = Sandbox::with_testdata();
    let daemon = serve_with(&s, "", None);
    let c = Raw::connect(&s.socket());
    check_malformed_lines(c.stream, c.reader, |w| {
        w.shutdown(std::net::Shutdown::Write).unwrap()
    });
    daemon.stop();

    // The same through `quarry mcp` (the stdio relay to an in-process server).
    let mut child = quarry()
        .args(["mcp", "--root", &s.root_arg(), "--catalog"])
        .arg(&s.catalog)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    check_malformed_lines(stdin, stdout, drop);
    assert!(child.wait().unwrap().success());
}

/// Inputs that end right after their last line, and the answers each must get,
/// in order: (id, the error code, or `None` for a result).
type EndCase = (&'static str, Vec<u8>, Vec<(Value, Option<i64>)>);

fn end_of_input_cases() -> Vec<EndCase> {
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let tools_list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    vec![
        (
            "an unparsable line",
            b"{bad}\n".to_vec(),
            vec![(Value::Null, Some(-32700))],
        ),
        (
            "an invalid request",
            b"{\"jsonrpc\":\"1.0\",\"id\":1}\n".to_vec(),
            vec![(json!(1), Some(-32600))],
        ),
        (
            "a request, an unparsable line, a request",
            format!("{initialize}\n{{bad}}\n{tools_list}\n").into_bytes(),
            vec![
                (json!(1), None),
                (Value::Null, Some(-32700)),
                (json!(2), None),
            ],
        ),
    ]
}

/// Checks that `output` holds exactly the expected answers, in order.
fn assert_answers(transport: &str, what: &str, output: &[u8], expected: &[(Value, Option<i64>)]) {
    let answers: Vec<Value> = String::from_utf8_lossy(output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &Value| v.get("method").is_none())
        .collect();
    let got: Vec<(Value, Option<i64>)> = answers
        .iter()
        .map(|v| (v["id"].clone(), v["error"]["code"].as_i64()))
        .collect();
    assert_eq!(
        got, expected,
        "{transport}, {what}: (id, error code) of each answer"
    );
    for v in answers.iter().filter(|v| v.get("error").is_none()) {
        assert!(v["result"].is_object(), "{transport}, {what}: {v}");
    }
}

/// Every line read before the input ends gets its answer (a result, an error or
/// a parse error) before the connection closes and `quarry mcp` exits with
/// status 0, in the order of the lines, on stdio and on the socket.
#[test]
fn every_line_before_the_end_of_input_is_answered_in_order() {
    let s = Sandbox::new();
    s.write("notes.md", b"# Notes\n");
    for (what, input, expected) in end_of_input_cases() {
        // The loss depended on timing: several runs.
        for _ in 0..3 {
            let mut child = quarry()
                .args(["mcp", "--root", &s.root_arg(), "--catalog"])
                .arg(&s.catalog)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            // Written, then stdin is closed at once.
            child.stdin.take().unwrap().write_all(&input).unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "stdio, {what}: {:?}", out.status);
            assert_answers("stdio", what, &out.stdout, &expected);
        }
    }
    let daemon = serve_with(&s, "", None);
    for (what, input, expected) in end_of_input_cases() {
        for _ in 0..3 {
            let mut stream = UnixStream::connect(s.socket()).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            stream.write_all(&input).unwrap();
            stream.shutdown(std::net::Shutdown::Write).unwrap();
            let mut out = Vec::new();
            stream.read_to_end(&mut out).unwrap();
            assert_answers("socket", what, &out, &expected);
        }
    }
    daemon.stop();
}

/// Sends malformed lines, each followed by a ping whose answer shows the
/// connection still works, and checks each error; ends with a request without
/// a newline before the input closes.
fn check_malformed_lines<W: Write>(
    mut out: W,
    mut input: impl BufRead,
    close_input: impl FnOnce(W),
) {
    let mut send = |bytes: &[u8]| out.write_all(bytes).unwrap();
    // The next answer; notifications (resources/list_changed when indexing
    // ends meanwhile) may come between answers at any time, as to any client.
    let mut recv = || loop {
        let mut line = String::new();
        assert!(
            input.read_line(&mut line).unwrap() > 0,
            "the server closed its output"
        );
        let v = serde_json::from_str::<Value>(&line).unwrap();
        if v.get("id").is_some() || v.get("method").is_none() {
            return v;
        }
    };
    send(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n");
    assert_eq!(recv()["id"], 0);
    send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    let mut ping_id = 100;
    let mut expect = |send: &mut dyn FnMut(&[u8]), line: &[u8], code: i64, id: Value| {
        send(line);
        send(b"\n");
        ping_id += 1;
        send(format!("{{\"jsonrpc\":\"2.0\",\"id\":{ping_id},\"method\":\"ping\"}}\n").as_bytes());
        let v = recv();
        let shown = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
        assert_eq!(v["error"]["code"], code, "{shown}: {v}");
        assert_eq!(v.get("id"), Some(&id), "{shown}: {v}");
        let pong = recv();
        assert_eq!(pong["id"], ping_id, "{shown}: then {pong}");
        assert!(pong.get("result").is_some(), "{pong}");
    };
    let send: &mut dyn FnMut(&[u8]) = &mut send;
    // Parse errors: id null.
    expect(send, b"{\"jsonrpc\":\"2.0\",", -32700, Value::Null);
    expect(
        send,
        b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"x\":\"\xff\xfe\"}",
        -32700,
        Value::Null,
    );
    expect(
        send,
        br#"{"jsonrpc":"2.0","id":6,"method":"ping","params":{"s":"\ud800"}}"#,
        -32700,
        Value::Null,
    );
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"s":"{}"}}}}"#,
        "x".repeat(5 << 20)
    );
    expect(send, long.as_bytes(), -32700, Value::Null);
    // Invalid requests: the request's id when it can be read.
    expect(
        send,
        br#"{"jsonrpc":"1.0","id":8,"method":"ping"}"#,
        -32600,
        json!(8),
    );
    expect(
        send,
        br#"{"jsonrpc":"2.0","id":"nine","method":9}"#,
        -32600,
        json!("nine"),
    );
    expect(send, br#"[1,2]"#, -32600, Value::Null);
    // tools/call with params that do not fit: invalid params.
    expect(
        send,
        br#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{}}"#,
        -32602,
        json!(10),
    );
    expect(
        send,
        br#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":7}}"#,
        -32602,
        json!(11),
    );
    expect(
        send,
        br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"list_files","arguments":[1]}}"#,
        -32602,
        json!(12),
    );
    // A last request with no newline before the input ends is still answered.
    send(br#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"list_files","arguments":{"kind":"hdf5"}}}"#);
    close_input(out);
    let v = recv();
    assert_eq!(v["id"], 13, "{v}");
    assert_eq!(v["result"]["isError"], false, "{v}");
}

/// A root of `n` small text files.
fn many_files(s: &Sandbox, n: usize) {
    for i in 0..n {
        s.write(&format!("f{}/file_{i:05}.txt", i % 20), b"x\n");
    }
}

#[test]
fn a_client_that_reads_nothing_cannot_grow_memory_or_threads() {
    let s = Sandbox::new();
    many_files(&s, 1500);
    let daemon = serve_with(&s, "", None);
    let pid = daemon.child.id();
    wait_complete(&s.socket());
    std::thread::sleep(Duration::from_millis(500));
    let (base_rss, base_threads) = (rss_mb(pid), threads(pid));

    let mut c = Raw::connect(&s.socket());
    c.initialize();
    let mut burst = Vec::new();
    for id in 0..1000 {
        burst.extend(
            format!(
                "{}\n",
                tool_call(id, "list_files", json!({"kind": "all", "limit": 1000}))
            )
            .into_bytes(),
        );
    }
    // Written from another thread: a daemon that stops reading (as it should)
    // would block this one.
    let mut writer = c.stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(&burst);
    });
    let (mut peak_rss, mut peak_threads) = (base_rss, base_threads);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(4) {
        peak_rss = peak_rss.max(rss_mb(pid));
        peak_threads = peak_threads.max(threads(pid));
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(c);
    let _ = sender.join();
    std::thread::sleep(Duration::from_secs(2));
    let after_rss = rss_mb(pid);
    eprintln!(
        "pipelining: RSS {base_rss:.1} MB before, {peak_rss:.1} MB peak, {after_rss:.1} MB after; threads {base_threads} before, {peak_threads} peak"
    );
    assert!(
        peak_rss < base_rss + 120.0,
        "RSS grew from {base_rss:.1} MB to {peak_rss:.1} MB"
    );
    assert!(
        peak_threads < 48,
        "threads grew from {base_threads} to {peak_threads}"
    );
    assert!(
        after_rss < base_rss + 40.0,
        "RSS stayed at {after_rss:.1} MB after the burst (from {base_rss:.1} MB)"
    );
    // The daemon still serves.
    let mut c = Raw::connect(&s.socket());
    c.initialize();
    let v = c.call(1, "list_files", json!({"kind": "all", "limit": 1}));
    assert_eq!(
        v["result"]["structuredContent"]["data"]["total_matched"], 1500,
        "{v}"
    );
    daemon.stop();
}

/// CPU seconds the daemon uses in `window`, starting `after` from now.
fn cpu_used(pid: u32, after: Duration, window: Duration) -> f64 {
    std::thread::sleep(after);
    let before = cpu_seconds(pid);
    std::thread::sleep(window);
    cpu_seconds(pid) - before
}

/// A daemon serving `heavy_corpus`, indexed, running two tool calls at once.
fn heavy_daemon() -> (Sandbox, Daemon) {
    let s = Sandbox::new();
    heavy_corpus(&s);
    // No RAG tree pass: its CPU would blur what these tests measure (the
    // search calls' own CPU once they are abandoned).
    let daemon = serve_with(
        &s,
        &format!("[toolsets]\nrag = false\n[server]\nmax_concurrent_calls = {SLOTS}\n"),
        None,
    );
    wait_complete(&s.socket());
    (s, daemon)
}

/// Tool calls the heavy daemon runs at once: the stopped-work tests fill them all.
const SLOTS: u64 = 2;

/// Whether abandoned work stopped: a call that needs one of the slots the
/// abandoned searches held is answered in a fraction of one search's time. A
/// slot comes back only when its work has ended, so were the searches not
/// stopped, the call would wait about `alone` for one.
fn assert_slots_freed(waited: Duration, alone: Duration, what: &str) {
    eprintln!(
        "after {what}: a call waited {waited:?} for a slot; one search alone takes {alone:?}"
    );
    assert!(
        alone >= Duration::from_millis(600),
        "one search takes {alone:?}: too quick to tell a stopped search from a finished one"
    );
    assert!(
        waited < alone / 3,
        "a call waited {waited:?} for a slot held by {what} searches (one takes {alone:?})"
    );
}

#[test]
fn long_calls_report_progress() {
    let (s, daemon) = heavy_daemon();
    let mut c = Raw::connect(&s.socket());
    c.initialize();
    // The heaviest search of this corpus outlasts the progress interval even on
    // a quiet machine.
    let mut call = heavy_search(1);
    call["params"]["_meta"] = json!({"progressToken": "p-1"});
    let started = Instant::now();
    c.send_json(&call);
    let (v, notes) = c.answer(&json!(1));
    let one = started.elapsed();
    assert!(
        v["result"]["structuredContent"]["data"]["total_matches"].as_u64() > Some(0),
        "{v}"
    );
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| {
            n["method"] == "notifications/progress" && n["params"]["progressToken"] == "p-1"
        })
        .collect();
    eprintln!(
        "one search: {one:?}, {} progress notifications",
        progress.len()
    );
    assert!(
        one > Duration::from_millis(400),
        "the search is too quick to test with: {one:?}"
    );
    assert!(
        !progress.is_empty(),
        "no progress for a {one:?} call: {notes:?}"
    );
    let total = progress[0]["params"]["total"].as_f64().unwrap();
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progress"].as_f64().unwrap() <= total)
    );
    daemon.stop();
}

#[test]
fn calls_whose_client_hangs_up_stop_using_the_cpu() {
    let (s, daemon) = heavy_daemon();
    let pid = daemon.child.id();
    let mut c = Raw::connect(&s.socket());
    c.initialize();
    let alone = heavy_search_alone(&mut c, 100);
    // Searches in every slot, then the client hangs up while they run.
    for id in 0..SLOTS {
        c.send_json(&heavy_search(id));
    }
    std::thread::sleep(Duration::from_millis(100));
    drop(c);
    let started = Instant::now();
    let mut other = Raw::connect(&s.socket());
    other.initialize();
    let v = other.call(1, "list_files", json!({"kind": "document", "limit": 1}));
    assert_eq!(v["result"]["isError"], false, "{v}");
    assert_slots_freed(started.elapsed(), alone, "hung-up");
    let used = cpu_used(pid, Duration::from_millis(400), Duration::from_secs(1));
    eprintln!("after a hang-up: {used:.2} s of CPU in 1 s");
    assert!(
        used < 0.3,
        "abandoned searches used {used:.2} s of CPU in 1 s"
    );
    daemon.stop();
}

#[test]
fn cancelled_calls_stop_using_the_cpu() {
    let (s, daemon) = heavy_daemon();
    let pid = daemon.child.id();
    let mut c = Raw::connect(&s.socket());
    c.initialize();
    let alone = heavy_search_alone(&mut c, 100);
    for id in 0..SLOTS {
        c.send_json(&heavy_search(id));
    }
    std::thread::sleep(Duration::from_millis(100));
    for id in 0..SLOTS {
        c.send_json(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": id, "reason": "test"}}),
        );
    }
    let started = Instant::now();
    let v = c.call(40, "list_files", json!({"kind": "document", "limit": 1}));
    assert_eq!(v["result"]["isError"], false, "{v}");
    assert_slots_freed(started.elapsed(), alone, "cancelled");
    let used = cpu_used(pid, Duration::from_millis(400), Duration::from_secs(1));
    eprintln!("after cancelling: {used:.2} s of CPU in 1 s");
    assert!(
        used < 0.3,
        "cancelled searches used {used:.2} s of CPU in 1 s"
    );
    // The session goes on.
    let v = c.call(50, "list_files", json!({"kind": "document", "limit": 1}));
    assert_eq!(
        v["result"]["structuredContent"]["data"]["total_matched"], 60,
        "{v}"
    );
    daemon.stop();
}

/// Whether the server closed `stream` (EOF, or an error such as a reset).
fn closed_by_server(stream: &mut UnixStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Ok(0) | Err(_) => return true,
            // A refusal may carry its reason first.
            Ok(_) => continue,
        }
    }
}

#[test]
fn idle_connections_cannot_starve_new_clients_of_descriptors() {
    let s = Sandbox::with_testdata();
    // The default idle timeout (10 s) applies.
    let daemon = serve_with(&s, "", Some(320));
    wait_complete(&s.socket());

    // More idle connections than the daemon has descriptors.
    let started = Instant::now();
    let mut idle: Vec<UnixStream> = (0..600)
        .filter_map(|_| UnixStream::connect(s.socket()).ok())
        .collect();
    for stream in &idle {
        stream
            .set_read_timeout(Some(Duration::from_secs(15)))
            .unwrap();
    }
    // The indexer can still open files meanwhile.
    s.write("arrived_during_flood.md", b"# new\n");

    // Every idle connection is closed: the excess at once, the rest after the
    // idle timeout.
    let all_closed = idle.iter_mut().all(closed_by_server);
    let took = started.elapsed();
    eprintln!("{} idle connections all closed after {took:?}", idle.len());
    assert!(all_closed, "an idle connection stayed open");
    assert!(
        took < Duration::from_secs(20),
        "closing idle connections took {took:?}"
    );

    // A new client is served, and sees the file written during the flood.
    let mut c = Raw::connect(&s.socket());
    c.initialize();
    let start = Instant::now();
    loop {
        let v = c.call(
            1,
            "list_files",
            json!({"kind": "document", "pattern": "arrived_*"}),
        );
        if v["result"]["structuredContent"]["data"]["total_matched"] == 1 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{v}");
        std::thread::sleep(Duration::from_millis(100));
    }
    daemon.stop();
}

#[test]
fn binding_the_socket_removes_no_file_quarry_did_not_create() {
    let s = Sandbox::with_testdata();
    std::fs::create_dir_all(&s.catalog).unwrap();
    // Another process's live socket, at the name quarry once bound through.
    let theirs: PathBuf = s.catalog.join("quarry.binding");
    let listener = UnixListener::bind(&theirs).unwrap();
    let daemon = serve_with(&s, "", None);
    wait_complete(&s.socket());
    assert!(theirs.exists(), "quarry removed another process's socket");
    let _client = UnixStream::connect(&theirs).expect("their socket still listens");
    listener.accept().unwrap();
    // And quarry leaves nothing of its own beside the socket.
    let extra: Vec<String> = std::fs::read_dir(&s.catalog)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bind"))
        .collect();
    assert!(extra.is_empty(), "{extra:?}");
    daemon.stop();
}
