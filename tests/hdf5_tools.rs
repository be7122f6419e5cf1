//! The HDF5 resources and tools through MCP, on the real test files and on
//! tests/data/hdf5/kinds.h5, against what h5py and NumPy read of them
//! (tests/fixtures/hdf5, written by scripts/fixtures/hdf5_files.py).

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Client, Sandbox, assert_valid, call, call_ok as ok, wait_indexed};
use rmcp::model::{ErrorCode, PaginatedRequestParams, ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hdf5")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn kinds_h5() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdf5/kinds.h5")
}

/// A sandbox with the repository's test data plus kinds.h5 at `hdf5/kinds.h5`.
fn sandbox() -> Sandbox {
    let s = Sandbox::with_testdata();
    std::fs::copy(kinds_h5(), s.root.join("hdf5/kinds.h5")).unwrap();
    std::fs::copy(
        kinds_h5().with_file_name("tiny.h5"),
        s.root.join("hdf5/tiny.h5"),
    )
    .unwrap();
    s
}

fn uri(s: &Sandbox, file: &str, path: &str) -> String {
    format!("h5://{}?path={path}", s.root.join(file).display())
}

async fn read(client: &Client, uri: &str) -> Result<Value, rmcp::ServiceError> {
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await?;
    let ResourceContents::TextResourceContents { text, .. } = &result.contents[0] else {
        panic!("a text resource");
    };
    Ok(serde_json::from_str(text).unwrap())
}

fn error_code(e: &rmcp::ServiceError) -> Option<ErrorCode> {
    match e {
        rmcp::ServiceError::McpError(data) => Some(data.code),
        _ => None,
    }
}

/// Compares one object of quarry's view with h5py's.
fn check_object(path: &str, ours: &Value, theirs: &Value) {
    assert_eq!(ours["kind"], theirs["kind"], "{path}: {ours}");
    match theirs["kind"].as_str().unwrap() {
        "soft_link" => {
            assert_eq!(ours["target"], theirs["target"], "{path}");
            assert_eq!(ours["dangling"], theirs["dangling"], "{path}");
        }
        "external_link" => {
            assert_eq!(ours["target"]["file"], theirs["file"], "{path}");
            assert_eq!(ours["target"]["path"], theirs["path"], "{path}");
        }
        kind => {
            let aliases = theirs["aliases"].as_array().unwrap();
            assert_eq!(
                ours.get("other_paths").unwrap_or(&json!([])),
                &json!(aliases),
                "{path}"
            );
            for (name, a) in theirs["attributes"].as_object().unwrap() {
                let got = &ours["attributes"][name];
                let details = ours["attribute_details"].as_array().unwrap();
                let truncated = details
                    .iter()
                    .any(|d| d["name"] == *name && d["truncated"] == true);
                if truncated {
                    continue;
                }
                assert_eq!(got, &a["value"], "{path} attribute {name}");
            }
            assert_eq!(
                ours["attributes"].as_object().unwrap().len(),
                theirs["attributes"].as_object().unwrap().len(),
                "{path}"
            );
            if kind == "group" {
                let members: Vec<Value> = ours["members"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| json!([m["name"], m["kind"]]))
                    .collect();
                assert_eq!(json!(members), theirs["members"], "{path}");
            } else {
                for key in [
                    "shape",
                    "maxshape",
                    "dtype",
                    "chunks",
                    "compression",
                    "compression_opts",
                    "size",
                ] {
                    assert_eq!(ours[key], theirs[key], "{path} {key}");
                }
                let shuffle = ours["filters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["name"] == "shuffle");
                assert_eq!(json!(shuffle), theirs["shuffle"], "{path}");
                if theirs["shape"].is_array() && theirs["dtype"] != "|O" {
                    assert_eq!(ours["fill_value"], theirs["fillvalue"], "{path} fill value");
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_of_every_file_matches_h5py() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    for (file, fixture_name) in [
        ("hdf5/kinds.h5", "kinds.tree.json"),
        ("hdf5/tiny.h5", "tiny.tree.json"),
        (
            "hdf5/detector_conditions.h5",
            "detector_conditions.h5.tree.json",
        ),
        (
            "hdf5/detector_geometry.h5",
            "detector_geometry.h5.tree.json",
        ),
        (
            "hdf5/pylhe-testfile-hpcgen.hdf5",
            "pylhe-testfile-hpcgen.hdf5.tree.json",
        ),
    ] {
        let expected = fixture(fixture_name);
        for (path, theirs) in expected.as_object().unwrap() {
            let ours = read(&client, &uri(&s, file, path)).await.unwrap();
            check_object(&format!("{file}:{path}"), &ours, theirs);
            // The tool returns the same as the resource.
            let tool = ok(
                &client,
                "read_resource",
                json!({"uri": uri(&s, file, path)}),
            )
            .await;
            assert_eq!(tool["data"], ours);
        }
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_match_numpy_and_bad_ones_fail_with_the_axis() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let cases = fixture("slices.json");
    let cases = cases.as_array().unwrap();
    assert!(cases.iter().filter(|c| c.get("error").is_none()).count() >= 30);
    for case in cases {
        let args = json!({
            "uri": uri(&s, "hdf5/kinds.h5", case["dataset"].as_str().unwrap()),
            "slice_str": case["slice"],
        });
        let (v, is_error) = call(&client, "read_dataset_slice", args).await;
        let what = format!("{} [{}]", case["dataset"], case["slice"]);
        if let Some(code) = case.get("error") {
            assert!(is_error, "{what} should fail: {v}");
            assert_eq!(v["error"], *code, "{what}: {v}");
            if code == "index_out_of_range" {
                let msg = v["message"].as_str().unwrap();
                assert!(msg.contains("axis") || msg.contains("dimension"), "{msg}");
            }
            continue;
        }
        assert!(!is_error, "{what}: {v}");
        assert_valid("read_dataset_slice.output.json", &v);
        assert_eq!(v["data"]["shape"], case["shape"], "{what}");
        assert_eq!(v["data"]["data"], case["data"], "{what}");
    }
    // NaN and infinities are null, with a note.
    let v = ok(
        &client,
        "read_dataset_slice",
        json!({"uri": uri(&s, "hdf5/kinds.h5", "/numbers/special"), "slice_str": ":"}),
    )
    .await;
    assert!(
        v["data"]["notes"][0].as_str().unwrap().contains("3 NaN"),
        "{v}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_slice_string_is_ever_evaluated() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let marker = s.tmp.path().join("PWNED");
    let marker_text = marker.display().to_string();
    let attempts = [
        format!("__import__('os').system('touch {marker_text}')"),
        format!("eval(\"open('{marker_text}','w')\")"),
        format!("0; import os; os.system('touch {marker_text}')"),
        format!("$(touch {marker_text})"),
        format!("`touch {marker_text}`"),
        format!("0:{{open('{marker_text}','w')}}"),
        "1 if True else 0".into(),
        "len([1,2])".into(),
        "0x10".into(),
        "1_000".into(),
        "2**3".into(),
        "-(1)".into(),
    ];
    for text in attempts {
        let (v, is_error) = call(
            &client,
            "read_dataset_slice",
            json!({"uri": uri(&s, "hdf5/kinds.h5", "/numbers/i1"), "slice_str": text}),
        )
        .await;
        assert!(is_error, "{text}: {v}");
        assert_eq!(v["error"], "invalid_slice", "{text}: {v}");
    }
    assert!(!marker.exists(), "a slice string was evaluated");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_slices_are_refused_with_a_stepped_retry() {
    let s = sandbox();
    let client = s
        .mcp_with_args(&[
            "--config",
            &write_config(&s, "[limits]\nmax_slice_elements = 50\n"),
        ])
        .await;
    wait_indexed(&client).await;
    let dataset = uri(&s, "hdf5/kinds.h5", "/numbers/chunked");
    let (v, is_error) = call(
        &client,
        "read_dataset_slice",
        json!({"uri": dataset, "slice_str": ":"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(v["error"], "limit_exceeded", "{v}");
    let retry = v["retry_with"].clone();
    assert!(
        retry["slice_str"].as_str().unwrap().contains(':'),
        "{retry}"
    );
    let again = ok(&client, "read_dataset_slice", retry).await;
    let shape: Vec<u64> = serde_json::from_value(again["data"]["shape"].clone()).unwrap();
    assert!(shape.iter().product::<u64>() <= 50, "{shape:?}");
    client.cancel().await.unwrap();
}

fn write_config(s: &Sandbox, text: &str) -> String {
    let p = s.tmp.path().join("quarry.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_find_and_resource_listing() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;

    // Statistics by hand: chunked holds 0..999; special holds 1.5, NaN, inf, -inf, -2.25, 0.
    let v = ok(
        &client,
        "get_dataset_stats",
        json!({"uri": uri(&s, "hdf5/kinds.h5", "/numbers/chunked")}),
    )
    .await;
    let d = &v["data"];
    assert_eq!(
        (d["count"].clone(), d["min"].clone(), d["max"].clone()),
        (json!(1000), json!(0.0), json!(999.0))
    );
    assert!((d["mean"].as_f64().unwrap() - 499.5).abs() < 1e-9);
    let std = ((1000.0f64 * 1000.0 - 1.0) / 12.0).sqrt();
    assert!((d["std"].as_f64().unwrap() - std).abs() < 1e-6, "{d}");
    let v = ok(
        &client,
        "get_dataset_stats",
        json!({"uri": uri(&s, "hdf5/kinds.h5", "/numbers/special")}),
    )
    .await;
    let d = &v["data"];
    assert_eq!(
        (
            d["nan_count"].clone(),
            d["inf_count"].clone(),
            d["finite_count"].clone()
        ),
        (json!(1), json!(2), json!(3))
    );
    assert_eq!(
        (d["min"].clone(), d["max"].clone()),
        (json!(-2.25), json!(1.5))
    );
    let v = ok(
        &client,
        "get_dataset_stats",
        json!({"uri": uri(&s, "hdf5/kinds.h5", "/numbers/chunked"), "slice_str": "-1, ::5"}),
    )
    .await;
    assert_eq!(
        (v["data"]["count"].clone(), v["data"]["min"].clone()),
        (json!(2), json!(990.0))
    );
    let (v, is_error) = call(
        &client,
        "get_dataset_stats",
        json!({"uri": uri(&s, "hdf5/kinds.h5", "/text/vlen")}),
    )
    .await;
    assert!(is_error && v["error"] == "unsupported_type", "{v}");

    // find_datasets from the catalog.
    let v = ok(
        &client,
        "find_datasets",
        json!({"name": "layer*", "limit": 1000}),
    )
    .await;
    assert_eq!(v["data"]["total_matched"], 3, "{v}");
    // A pattern with a `/` matches the whole path, written with its leading `/` (as the
    // answers show paths) or without: the fixture script makes layer0..2 in that group.
    for pattern in ["detector/layers/*", "/detector/layers/*"] {
        let v = ok(&client, "find_datasets", json!({"name": pattern})).await;
        assert_eq!(v["data"]["total_matched"], 3, "{pattern}: {v}");
    }
    let v = ok(
        &client,
        "find_datasets",
        json!({"dtype": "<f4", "rank": 2, "limit": 1000}),
    )
    .await;
    let paths: Vec<&str> = v["data"]["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"/numbers/chunked") && paths.contains(&"/detector/layers/layer0"),
        "{paths:?}"
    );
    assert!(
        paths.iter().all(|p| !p.starts_with("/numbers/i")),
        "{paths:?}"
    );
    let v = ok(
        &client,
        "find_datasets",
        json!({"attribute": "units", "attribute_value": "CM"}),
    )
    .await;
    assert_eq!(v["data"]["total_matched"], 3, "{v}");
    let v = ok(&client, "find_datasets", json!({"dtype": "compound"})).await;
    let compound: Vec<&str> = v["data"]["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert_eq!(compound, ["/runs/run_table", "/records"], "{v}");

    // resources/list: one per HDF5 file, named by the file; the template.
    let listed = client.list_resources(None).await.unwrap();
    let mut names: Vec<&str> = listed.resources.iter().map(|r| r.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "detector_conditions.h5",
            "detector_geometry.h5",
            "kinds.h5",
            "pylhe-testfile-hpcgen.hdf5",
            "tiny.h5",
        ]
    );
    assert!(
        listed
            .resources
            .iter()
            .all(|r| r.uri.starts_with("h5:///") && r.uri.ends_with("?path=/"))
    );
    // Both schemes' templates (the RAG toolset is on by default).
    let templates = client.list_resource_templates(None).await.unwrap();
    let templates: Vec<&str> = templates
        .resource_templates
        .iter()
        .map(|t| t.uri_template.as_str())
        .collect();
    assert_eq!(
        templates,
        [
            "h5://{+file}{?path}",
            "raptor://{dataset_id}/nodes/{node_id}"
        ]
    );
    // A scheme quarry does not serve is a protocol error naming both.
    let e = read(&client, "ftp://host/x.h5").await.unwrap_err();
    assert_eq!(error_code(&e), Some(ErrorCode::INVALID_PARAMS), "{e}");
    assert!(e.to_string().contains("raptor://"), "{e}");
    let (v, is_error) = call(&client, "read_resource", json!({"uri": "ftp://host/x.h5"})).await;
    assert!(is_error && v["error"] == "invalid_uri", "{v}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_listing_pages_with_a_cursor() {
    let s = Sandbox::new();
    for i in 0..130 {
        std::fs::copy(kinds_h5(), s.root.join(format!("f{i:03}.h5"))).unwrap();
    }
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = client
            .list_resources(Some(
                PaginatedRequestParams::default().with_cursor(cursor.clone()),
            ))
            .await
            .unwrap();
        all.extend(page.resources.into_iter().map(|r| r.name.clone()));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(all.len(), 130);
    all.dedup();
    assert_eq!(all.len(), 130);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_uris_missing_objects_and_path_attacks_are_refused() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    // Does not parse: a protocol error that says why.
    for bad in [
        "file:///x.h5",
        "h5://relative.h5?path=/",
        "h5:///x.h5?mode=w",
    ] {
        let e = read(&client, bad).await.unwrap_err();
        assert_eq!(
            error_code(&e),
            Some(ErrorCode::INVALID_PARAMS),
            "{bad}: {e}"
        );
    }
    // Missing file or object: -32002 with the URI.
    for missing in [
        uri(&s, "hdf5/none.h5", "/"),
        uri(&s, "hdf5/kinds.h5", "/no/such"),
    ] {
        let e = read(&client, &missing).await.unwrap_err();
        assert_eq!(
            error_code(&e),
            Some(ErrorCode::RESOURCE_NOT_FOUND),
            "{missing}: {e}"
        );
        assert!(e.to_string().contains("resource not found"), "{e}");
    }
    // Outside the roots, traversal, and a link leading out: refused.
    let outside = s.tmp.path().join("outside.h5");
    std::fs::copy(kinds_h5(), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, s.root.join("escape.h5")).unwrap();
    for attack in [
        format!("h5://{}?path=/", outside.display()),
        format!("h5://{}/../outside.h5?path=/", s.root.display()),
        "h5:///etc/passwd?path=/".to_string(),
    ] {
        let e = read(&client, &attack).await.unwrap_err();
        assert_eq!(
            error_code(&e),
            Some(ErrorCode::INVALID_PARAMS),
            "{attack}: {e}"
        );
        let (v, is_error) = call(
            &client,
            "read_dataset_slice",
            json!({"uri": attack, "slice_str": "0"}),
        )
        .await;
        assert!(is_error && v["error"] == "permission_denied", "{v}");
    }
    let escape = uri(&s, "escape.h5", "/numbers/i1");
    let (v, is_error) = call(
        &client,
        "read_dataset_slice",
        json!({"uri": escape, "slice_str": "0"}),
    )
    .await;
    assert!(is_error, "a link leading out of the root was read: {v}");
    // A group is not a dataset; an external link is not followed.
    let (v, is_error) = call(
        &client,
        "read_dataset_slice",
        json!({"uri": uri(&s, "hdf5/kinds.h5", "/detector"), "slice_str": "0"}),
    )
    .await;
    assert!(is_error && v["error"] == "not_a_dataset", "{v}");
    let (v, is_error) = call(
        &client,
        "read_dataset_slice",
        json!({"uri": uri(&s, "hdf5/kinds.h5", "/links/external"), "slice_str": "0"}),
    )
    .await;
    assert!(is_error && v["error"] == "not_a_dataset", "{v}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_truncated_and_empty_files_fail_alone() {
    let s = Sandbox::new();
    let bytes = std::fs::read(kinds_h5()).unwrap();
    s.write("good.h5", &bytes);
    s.write("empty.h5", b"");
    s.write("truncated.h5", &bytes[..bytes.len() / 3]);
    s.write("header_only.h5", &bytes[..600]);
    let mut garbled = bytes.clone();
    for b in garbled.iter_mut().skip(2048).step_by(7) {
        *b ^= 0x5a;
    }
    s.write("garbled.h5", &garbled);
    s.write("text.h5", b"not hdf5 at all, just text");
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let (v, _) = call(&client, "index_status", json!({})).await;
    let failed: Vec<String> = v["data"]["roots"][0]["failed_files"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| f["path"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default();
    for name in ["empty.h5", "truncated.h5", "header_only.h5", "text.h5"] {
        assert!(
            failed.iter().any(|f| f.ends_with(name)),
            "{name} not failed: {v}"
        );
    }
    // The good file is served; the failed ones are not listed as resources.
    let listed = client.list_resources(None).await.unwrap();
    let names: Vec<&str> = listed.resources.iter().map(|r| r.name.as_str()).collect();
    assert!(names.contains(&"good.h5"), "{names:?}");
    for name in ["empty.h5", "truncated.h5", "text.h5"] {
        assert!(!names.contains(&name), "{names:?}");
    }
    // A failed file read as a resource or sliced is an error, not a crash.
    let (v, is_error) = call(
        &client,
        "read_resource",
        json!({"uri": uri(&s, "truncated.h5", "/")}),
    )
    .await;
    assert!(is_error && v["error"] == "corrupted_file", "{v}");
    // Garbled data reads (whatever they give) never take the server down.
    let _ = call(
        &client,
        "read_dataset_slice",
        json!({"uri": uri(&s, "garbled.h5", "/numbers/chunked"), "slice_str": ":5"}),
    )
    .await;
    let (v, is_error) = call(
        &client,
        "read_dataset_slice",
        json!({"uri": uri(&s, "good.h5", "/numbers/i1"), "slice_str": "0"}),
    )
    .await;
    assert!(!is_error && v["data"]["data"] == -5, "{v}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_adds_and_removes_resources_within_two_seconds() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Clone)]
    struct Counter(Arc<AtomicUsize>);
    impl rmcp::ClientHandler for Counter {
        async fn on_resource_list_changed(
            &self,
            _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
        ) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    let s = Sandbox::new();
    let mut cmd = common::quarry_tokio();
    cmd.args(["mcp", "--root", &s.root_arg(), "--catalog"])
        .arg(&s.catalog);
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let notified = Arc::new(AtomicUsize::new(0));
    let client = rmcp::ServiceExt::serve(Counter(notified.clone()), transport)
        .await
        .unwrap();
    common_wait_indexed(&client).await;
    assert!(
        client
            .list_resources(None)
            .await
            .unwrap()
            .resources
            .is_empty()
    );

    let before = notified.load(Ordering::SeqCst);
    let started = Instant::now();
    std::fs::copy(kinds_h5(), s.root.join("new.h5")).unwrap();
    loop {
        let listed = client.list_resources(None).await.unwrap();
        if listed.resources.iter().any(|r| r.name == "new.h5")
            && notified.load(Ordering::SeqCst) > before
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "new.h5 not listed and notified within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = notified.load(Ordering::SeqCst);
    let started = Instant::now();
    std::fs::remove_file(s.root.join("new.h5")).unwrap();
    loop {
        let listed = client.list_resources(None).await.unwrap();
        if listed.resources.is_empty() && notified.load(Ordering::SeqCst) > before {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "new.h5 still listed 2 s after removal"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client.cancel().await.unwrap();
}

/// `wait_indexed` for a client with its own handler.
async fn common_wait_indexed<S: rmcp::service::Service<rmcp::RoleClient>>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, S>,
) {
    let started = Instant::now();
    loop {
        let result = client
            .call_tool(
                rmcp::model::CallToolRequestParams::new("index_status")
                    .with_arguments(Default::default()),
            )
            .await
            .unwrap();
        if result
            .structured_content
            .as_ref()
            .is_some_and(|v| v["data"]["complete"] == true)
        {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
