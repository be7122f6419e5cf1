//! Arguments as models send them (DESIGN.md, Results; issue #27, part 10): an
//! object, array, number or boolean sent as a JSON string is taken as that
//! value when the tool's input schema wants that type, with the same answer as
//! the native form and the coercion named in `metadata.coerced_arguments`; a
//! string of another type stays `invalid_arguments`, naming the argument and
//! the type wanted.

use crate::common;

use common::{Client, Sandbox, call, wait_indexed};
use serde_json::{Value, json};

/// An answer without what differs between two calls of the same question.
fn comparable(mut v: Value) -> Value {
    if let Some(m) = v["metadata"].as_object_mut() {
        for volatile in [
            "execution_time_ms",
            "coerced_arguments",
            "bytes_read",
            "clusters_skipped",
        ] {
            m.remove(volatile);
        }
    }
    if let Some(d) = v["data"].as_object_mut() {
        d.remove("search_duration_ms");
    }
    v
}

/// Calls `tool` with the native arguments and with `sent` (some of them as
/// strings): both succeed with the same answer, and the second names the
/// `coerced` arguments.
async fn same_answer(client: &Client, tool: &str, native: Value, sent: Value, coerced: &[&str]) {
    let (a, a_error) = call(client, tool, native.clone()).await;
    let (b, b_error) = call(client, tool, sent.clone()).await;
    assert!(!a_error, "{tool} {native}: {a}");
    assert!(!b_error, "{tool} {sent}: {b}");
    assert_eq!(
        b["metadata"]["coerced_arguments"],
        json!(coerced),
        "{tool}: {}",
        b["metadata"]
    );
    assert!(a["metadata"].get("coerced_arguments").is_none(), "{a}");
    assert_eq!(comparable(a), comparable(b), "{tool}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stringified_arguments_of_the_schema_type_are_taken_as_that_type() {
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let hzz = s.root.join("root/uproot-HZZ.root").display().to_string();

    // An object and an integer and a boolean (search_documents).
    same_answer(
        &client,
        "search_documents",
        json!({"query": "pedestal", "scope": {"type": "global"}, "max_results": 3, "fuzzy": false}),
        json!({"query": "pedestal", "scope": "{\"type\": \"global\"}", "max_results": "3", "fuzzy": "false"}),
        &["fuzzy", "max_results", "scope"],
    )
    .await;
    // An array of numbers, an integer and a boolean (compute_histogram).
    same_answer(
        &client,
        "compute_histogram",
        json!({"path": hzz, "tree": "events", "branch": "MET_px", "bins": 10, "range": [-50, 50], "flatten": true}),
        json!({"path": hzz, "tree": "events", "branch": "MET_px", "bins": "10", "range": "[-50, 50]", "flatten": "true"}),
        &["bins", "flatten", "range"],
    )
    .await;
    // An array of strings and an array of numbers (get_branch_stats).
    same_answer(
        &client,
        "get_branch_stats",
        json!({"path": hzz, "tree": "events", "branches": ["MET_px", "MET_py"], "quantiles": [0.5]}),
        json!({"path": hzz, "tree": "events", "branches": "[\"MET_px\", \"MET_py\"]", "quantiles": "[0.5]"}),
        &["branches", "quantiles"],
    )
    .await;
    // An integer among strings that stay strings (list_files: kind is a string).
    same_answer(
        &client,
        "list_files",
        json!({"kind": "all", "limit": 2}),
        json!({"kind": "all", "limit": "2"}),
        &["limit"],
    )
    .await;
    // Integers with blanks around them (read_branches).
    same_answer(
        &client,
        "read_branches",
        json!({"path": hzz, "tree": "events", "branches": ["NMuon"], "limit": 4, "offset": 2}),
        json!({"path": hzz, "tree": "events", "branches": ["NMuon"], "limit": " 4 ", "offset": "2"}),
        &["limit", "offset"],
    )
    .await;
    // A number (answer_question's temperature), once the trees are built.
    let start = std::time::Instant::now();
    loop {
        let (v, _) = call(&client, "list_datasets", json!({})).await;
        let d = &v["data"]["datasets"][0];
        if d["documents"].as_u64() > Some(0) && d["trees_built"].as_u64() >= d["documents"].as_u64()
        {
            break;
        }
        assert!(start.elapsed().as_secs() < 60, "trees never built: {v}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    same_answer(
        &client,
        "answer_question",
        json!({"dataset_id": "data", "query": "How are pedestals checked?", "temperature": 0.3, "top_k": 3}),
        json!({"dataset_id": "data", "query": "How are pedestals checked?", "temperature": "0.3", "top_k": "3"}),
        &["temperature", "top_k"],
    )
    .await;
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_of_another_type_are_invalid_arguments_naming_the_argument() {
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let hzz = s.root.join("root/uproot-HZZ.root").display().to_string();
    for (bins, why) in [
        ("[1]", "an array"),
        ("ten", "not JSON"),
        ("10.5", "a fraction"),
    ] {
        let (e, is_error) = call(
            &client,
            "compute_histogram",
            json!({"path": hzz, "tree": "events", "branch": "MET_px", "bins": bins}),
        )
        .await;
        assert!(is_error, "bins {bins} ({why}) was accepted: {e}");
        assert_eq!(e["error"], "invalid_arguments", "{e}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("'bins'") && message.contains("an integer"),
            "{message}"
        );
    }
    // An object wanted, an array given as text.
    let (e, is_error) = call(
        &client,
        "search_documents",
        json!({"query": "pedestal", "scope": "[\"global\"]"}),
    )
    .await;
    assert!(is_error && e["error"] == "invalid_arguments", "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("'scope'") && message.contains("an object"),
        "{message}"
    );
    client.cancel().await.unwrap();
}
