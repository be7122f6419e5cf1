//! Long tool calls as MCP tasks, over the daemon's socket with raw JSON-RPC, in
//! both generations of the protocol: the 2025-11-25 tasks (`task` in the
//! `tools/call` params, `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`)
//! and the 2026-07-28 Tasks extension (declared in a request's `_meta`, the
//! result inlined in `tasks/get`).
//!
//! The long call is `heavy_search`: a search matching every line of
//! `heavy_corpus`, whose time (a second or more here) is measured by each test
//! that needs it to be long.

use crate::common;

use std::time::{Duration, Instant};

use common::raw::{Raw, heavy_corpus, heavy_search, serve_with, tool_call, wait_complete};
use common::{Daemon, Sandbox};
use serde_json::{Value, json};

const INVALID_PARAMS: i64 = -32602;
const METHOD_NOT_FOUND: i64 = -32601;
const MISSING_CAPABILITY: i64 = -32021;

/// A daemon over `heavy_corpus`, with `extra` lines in its `[server]` section.
fn heavy_daemon(extra: &str) -> (Sandbox, Daemon) {
    let s = Sandbox::new();
    heavy_corpus(&s);
    let daemon = serve_with(
        &s,
        &format!("[toolsets]\nrag = false\n[server]\n{extra}\n"),
        None,
    );
    wait_complete(&s.socket());
    (s, daemon)
}

fn legacy_client(s: &Sandbox) -> Raw {
    let mut c = Raw::connect(&s.socket());
    c.initialize();
    c
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The heavy search as a 2025-11-25 task-augmented call.
fn heavy_task(id: u64, ttl_ms: u64) -> Value {
    let mut call = heavy_search(id);
    call["params"]["task"] = json!({ "ttl": ttl_ms });
    call
}

fn ask(c: &mut Raw, id: u64, method: &str, params: Value) -> Value {
    c.send_json(&request(id, method, params));
    c.answer(&json!(id)).0
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

/// A result without what differs between two runs of the same call.
fn comparable(result: &Value) -> Value {
    let mut result = result.clone();
    if let Some(o) = result.as_object_mut() {
        o.remove("_meta");
    }
    let text = result["content"][0]["text"].as_str().unwrap().to_string();
    let mut parsed: Value = serde_json::from_str(&text).unwrap();
    for json in [&mut parsed, &mut result["structuredContent"]] {
        if let Some(m) = json["metadata"].as_object_mut() {
            m.remove("execution_time_ms");
        }
    }
    result["content"][0]["text"] = parsed;
    result
}

/// Polls 2025-11-25 `tasks/get` until the task ends; returns every answer.
fn poll_until_ended(c: &mut Raw, first_id: u64, task: &str) -> Vec<Value> {
    let started = Instant::now();
    let mut seen = Vec::new();
    for id in first_id.. {
        let v = ask(c, id, "tasks/get", json!({ "taskId": task }));
        let status = v["result"]["status"]
            .as_str()
            .unwrap_or_else(|| panic!("{v}"));
        let ended = status != "working";
        seen.push(v);
        if ended {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    seen
}

#[test]
fn a_legacy_task_reports_progress_and_answers_what_the_plain_call_answers() {
    let (s, daemon) = heavy_daemon("");
    let mut c = Raw::connect(&s.socket());
    c.send_json(
        &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "tasks-test", "version": "1"}}}),
    );
    let (init, _) = c.answer(&json!("init"));
    assert_eq!(
        init["result"]["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{init}"
    );
    c.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let tools = ask(&mut c, 1, "tools/list", json!({}));
    let support = |name: &str| {
        tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["execution"]["taskSupport"].clone())
    };
    assert_eq!(support("search_documents"), Some(json!("optional")));
    assert_eq!(support("list_files"), Some(json!("forbidden")));

    // The plain call, as every client without tasks makes it.
    let started = Instant::now();
    c.send_json(&heavy_search(2));
    let plain = c.answer(&json!(2)).0;
    let alone = started.elapsed();
    assert_eq!(plain["result"]["isError"], false, "{plain}");
    assert!(
        alone > Duration::from_millis(600),
        "the search is too quick to test with: {alone:?}"
    );

    // The same call as a task answers at once.
    let started = Instant::now();
    c.send_json(&heavy_task(3, 60_000));
    let created = c.answer(&json!(3)).0;
    let answered_in = started.elapsed();
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60_000);
    assert!(task["pollInterval"].as_u64() > Some(0));
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(
        answered_in < alone / 3,
        "creating the task took {answered_in:?}; the call takes {alone:?}"
    );
    let id = task["taskId"].as_str().unwrap().to_string();

    // tasks/result waits for the end; another connection polls meanwhile.
    c.send_json(&request(4, "tasks/result", json!({ "taskId": id })));
    let mut poller = legacy_client(&s);
    let polls = poll_until_ended(&mut poller, 10, &id);
    let (result, _) = c.answer(&json!(4));
    let last = polls.last().unwrap();
    assert_eq!(last["result"]["status"], "completed", "{last}");
    let progressed: Vec<&Value> = polls
        .iter()
        .filter(|p| {
            p["result"]["status"] == "working"
                && p["result"]["_meta"]["quarry/progress"].is_object()
        })
        .collect();
    assert!(
        !progressed.is_empty(),
        "no progress in {} polls of a {alone:?} call: {polls:?}",
        polls.len()
    );
    let p = &progressed[progressed.len() - 1]["result"];
    let (done, total) = (
        p["_meta"]["quarry/progress"]["progress"].as_u64().unwrap(),
        p["_meta"]["quarry/progress"]["total"].as_u64().unwrap(),
    );
    assert!(done <= total, "{p}");
    assert!(
        p["statusMessage"]
            .as_str()
            .unwrap()
            .contains(&format!("{done} of {total} done")),
        "{p}"
    );

    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(id),
        "{result}"
    );
    assert_eq!(comparable(&result["result"]), comparable(&plain["result"]));
    daemon.stop();
}

#[test]
fn a_cancelled_task_stops_its_work_and_says_so() {
    // One call slot: the cancelled search must give it back for the next call.
    let (s, daemon) = heavy_daemon("max_concurrent_calls = 1");
    let mut c = legacy_client(&s);
    let started = Instant::now();
    c.send_json(&heavy_search(1));
    assert_eq!(c.answer(&json!(1)).0["result"]["isError"], false);
    let alone = started.elapsed();

    c.send_json(&heavy_task(2, 60_000));
    let created = c.answer(&json!(2)).0;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    std::thread::sleep(Duration::from_millis(100));
    let cancelled = ask(&mut c, 3, "tasks/cancel", json!({ "taskId": id }));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["result"]["taskId"], json!(id));

    // The slot comes back only when the search has stopped.
    let started = Instant::now();
    let v = c.call(4, "list_files", json!({"kind": "document", "limit": 1}));
    let waited = started.elapsed();
    assert_eq!(v["result"]["isError"], false, "{v}");
    assert!(
        waited < alone / 3,
        "a call waited {waited:?} for the slot of a cancelled task (one search takes {alone:?})"
    );

    let got = ask(&mut c, 5, "tasks/get", json!({ "taskId": id }));
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    let result = ask(&mut c, 6, "tasks/result", json!({ "taskId": id }));
    assert_eq!(result["result"]["isError"], true, "{result}");
    let error: Value =
        serde_json::from_str(result["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"], "cancelled", "{error}");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(id)
    );
    // 2025-11-25: cancelling a task that has ended is invalid params.
    let again = ask(&mut c, 7, "tasks/cancel", json!({ "taskId": id }));
    assert_eq!(error_code(&again), INVALID_PARAMS, "{again}");
    daemon.stop();
}

#[test]
fn tasks_are_listed_and_unknown_ids_are_invalid_params() {
    let (s, daemon) = heavy_daemon("");
    let mut c = legacy_client(&s);
    let quick = |id: u64| {
        let mut call = tool_call(
            id,
            "search_documents",
            json!({"query": "qqqqqqqq", "scope": {"type": "global"}}),
        );
        call["params"]["task"] = json!({});
        call
    };
    let mut ids = Vec::new();
    for n in 0..3 {
        c.send_json(&quick(n));
        let created = c.answer(&json!(n)).0;
        ids.push(
            created["result"]["task"]["taskId"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let listed = ask(&mut c, 10, "tasks/list", json!({}));
    let listed: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|t| t["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ids);

    for (n, method) in ["tasks/get", "tasks/result", "tasks/cancel"]
        .iter()
        .enumerate()
    {
        let v = ask(
            &mut c,
            20 + n as u64,
            method,
            json!({"taskId": "no-such-task"}),
        );
        assert_eq!(error_code(&v), INVALID_PARAMS, "{method}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Task not found"),
            "{v}"
        );
    }
    let v = ask(&mut c, 30, "tasks/get", json!({}));
    assert_eq!(error_code(&v), INVALID_PARAMS, "{v}");
    let v = ask(&mut c, 31, "tasks/list", json!({"cursor": "not-a-cursor"}));
    assert_eq!(error_code(&v), INVALID_PARAMS, "{v}");
    // A tool that answers at once does not run as a task.
    let mut call = tool_call(32, "list_files", json!({"kind": "all"}));
    call["params"]["task"] = json!({});
    c.send_json(&call);
    let v = c.answer(&json!(32)).0;
    assert_eq!(error_code(&v), METHOD_NOT_FOUND, "{v}");
    // `task` must be an object.
    let mut call = tool_call(33, "search_documents", json!({"query": "a"}));
    call["params"]["task"] = json!(5);
    c.send_json(&call);
    let v = c.answer(&json!(33)).0;
    assert_eq!(error_code(&v), INVALID_PARAMS, "{v}");
    daemon.stop();
}

#[test]
fn a_finished_task_is_dropped_after_its_ttl() {
    let (s, daemon) = heavy_daemon("");
    let mut c = legacy_client(&s);
    let mut call = tool_call(
        1,
        "search_documents",
        json!({"query": "qqqqqqqq", "scope": {"type": "global"}}),
    );
    call["params"]["task"] = json!({ "ttl": 1000 });
    c.send_json(&call);
    let created = c.answer(&json!(1)).0;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    let result = ask(&mut c, 2, "tasks/result", json!({ "taskId": id }));
    assert_eq!(result["result"]["isError"], false, "{result}");
    let finished = Instant::now();
    // Still there right after it finished ...
    let got = ask(&mut c, 3, "tasks/get", json!({ "taskId": id }));
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert!(got["result"]["ttl"].as_u64() >= Some(1000), "{got}");
    // ... and gone once its ttl has passed since.
    let mut asked = 4;
    let gone = loop {
        let v = ask(&mut c, asked, "tasks/get", json!({ "taskId": id }));
        asked += 1;
        if v.get("error").is_some() {
            break v;
        }
        assert!(
            finished.elapsed() < Duration::from_secs(10),
            "still kept {:?} after finishing with a 1 s ttl: {v}",
            finished.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(finished.elapsed() >= Duration::from_millis(900));
    assert_eq!(error_code(&gone), INVALID_PARAMS, "{gone}");
    daemon.stop();
}

#[test]
fn a_task_survives_its_client_hanging_up() {
    let (s, daemon) = heavy_daemon("");
    let mut c = legacy_client(&s);
    c.send_json(&heavy_task(1, 60_000));
    let created = c.answer(&json!(1)).0;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    // A plain call's work stops when its client hangs up (tests/transport.rs);
    // a task's goes on.
    drop(c);
    let mut other = legacy_client(&s);
    let polls = poll_until_ended(&mut other, 1, &id);
    assert_eq!(polls.last().unwrap()["result"]["status"], "completed");
    let result = ask(&mut other, 1000, "tasks/result", json!({ "taskId": id }));
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert!(
        result["result"]["structuredContent"]["data"]["total_matches"].as_u64() > Some(0),
        "{result}"
    );
    daemon.stop();
}

#[test]
fn live_tasks_are_capped() {
    let (s, daemon) = heavy_daemon("max_tasks = 1");
    let mut c = legacy_client(&s);
    c.send_json(&heavy_task(1, 60_000));
    let first = c.answer(&json!(1)).0;
    let id = first["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    c.send_json(&heavy_task(2, 60_000));
    let refused = c.answer(&json!(2)).0;
    assert_eq!(
        refused["error"]["data"]["reason"], "too_many_tasks",
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_tasks"),
        "{refused}"
    );
    // Plain calls are not tasks: they still run.
    let v = c.call(3, "list_files", json!({"kind": "document", "limit": 1}));
    assert_eq!(v["result"]["isError"], false, "{v}");
    // Once the first task has ended, a new one is taken.
    ask(&mut c, 4, "tasks/result", json!({ "taskId": id }));
    c.send_json(&heavy_task(5, 60_000));
    let second = c.answer(&json!(5)).0;
    assert_eq!(second["result"]["task"]["status"], "working", "{second}");
    daemon.stop();
}

// ---- 2026-07-28: the Tasks extension ---------------------------------------

const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A 2026-07-28 request: everything the session would have said is in `_meta`,
/// the Tasks extension among its capabilities when `tasks`.
fn modern(id: u64, method: &str, mut params: Value, tasks: bool) -> Value {
    let capabilities = if tasks {
        json!({"extensions": {TASKS_EXTENSION: {}}})
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    request(id, method, params)
}

fn ask_modern(c: &mut Raw, id: u64, method: &str, params: Value, tasks: bool) -> Value {
    c.send_json(&modern(id, method, params, tasks));
    c.answer(&json!(id)).0
}

fn heavy_params() -> Value {
    heavy_search(0)["params"].clone()
}

#[test]
fn extension_tasks_inline_their_result_and_need_the_extension() {
    let (s, daemon) = heavy_daemon("");
    let mut c = Raw::connect(&s.socket());
    // Without the extension declared, a call is answered as it always was.
    let started = Instant::now();
    let plain = ask_modern(&mut c, 1, "tools/call", heavy_params(), false);
    let alone = started.elapsed();
    assert_eq!(plain["result"]["isError"], false, "{plain}");
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    let v = ask_modern(&mut c, 2, "tasks/get", json!({"taskId": "x"}), false);
    assert_eq!(error_code(&v), MISSING_CAPABILITY, "{v}");
    assert!(v["error"]["data"]["requiredCapabilities"]["extensions"][TASKS_EXTENSION].is_object());

    // Declared: the server answers a long call with a task, at once.
    let started = Instant::now();
    let created = ask_modern(&mut c, 3, "tools/call", heavy_params(), true);
    assert!(
        started.elapsed() < alone / 3,
        "{:?} vs {alone:?}",
        started.elapsed()
    );
    let r = &created["result"];
    assert_eq!(r["resultType"], "task", "{created}");
    assert_eq!(r["status"], "working");
    assert!(r["ttlMs"].as_u64() > Some(0) && r["pollIntervalMs"].as_u64() > Some(0));
    let id = r["taskId"].as_str().unwrap().to_string();
    // A quick tool is answered plainly even so.
    let quick = ask_modern(
        &mut c,
        4,
        "tools/call",
        json!({"name": "list_files", "arguments": {"kind": "all", "limit": 1}}),
        true,
    );
    assert_eq!(quick["result"]["resultType"], "complete", "{quick}");
    // 2025-11-25's methods are not the extension's.
    let v = ask_modern(&mut c, 5, "tasks/result", json!({"taskId": id}), true);
    assert_eq!(error_code(&v), METHOD_NOT_FOUND, "{v}");

    let started = Instant::now();
    let done = loop {
        let v = ask_modern(&mut c, 6, "tasks/get", json!({"taskId": id}), true);
        assert_eq!(v["result"]["resultType"], "complete", "{v}");
        if v["result"]["status"] != "working" {
            break v;
        }
        assert!(started.elapsed() < Duration::from_secs(120));
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let mut inlined = done["result"]["result"].clone();
    let mut plain_result = plain["result"].clone();
    for r in [&mut inlined, &mut plain_result] {
        r.as_object_mut().unwrap().remove("resultType");
    }
    assert_eq!(comparable(&inlined), comparable(&plain_result));

    // Cancelling: an acknowledgement, and the task is cancelled.
    let created = ask_modern(&mut c, 7, "tools/call", heavy_params(), true);
    let id = created["result"]["taskId"].as_str().unwrap().to_string();
    let ack = ask_modern(&mut c, 8, "tasks/cancel", json!({"taskId": id}), true);
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let v = ask_modern(&mut c, 9, "tasks/get", json!({"taskId": id}), true);
    assert_eq!(v["result"]["status"], "cancelled", "{v}");
    let v = ask_modern(
        &mut c,
        10,
        "tasks/update",
        json!({"taskId": "nope", "inputResponses": {}}),
        true,
    );
    assert_eq!(error_code(&v), INVALID_PARAMS, "{v}");
    daemon.stop();
}
