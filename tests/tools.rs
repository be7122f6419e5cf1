//! The MCP surface of the real binary: tools/list, list_files against the files on
//! disk, index_status, errors and path attacks.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{Sandbox, assert_valid, call, listed, schema, wait_indexed};
use serde_json::{Value, json};

/// The kind DESIGN.md assigns to a file name, written out independently of quarry.
fn design_kind(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "root" => "root",
        "h5" | "hdf5" => "hdf5",
        "pdf" | "md" | "markdown" | "txt" => "document",
        "py" | "cpp" | "cc" | "cxx" | "hpp" | "hh" | "h" => "code",
        _ => return None,
    })
}

/// (relative path, kind) of every file under `dir`, found with std::fs.
fn files_on_disk(dir: &Path, base: &Path, out: &mut BTreeSet<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            files_on_disk(&e.path(), base, out);
        } else if let Some(kind) = design_kind(&e.file_name().to_string_lossy()) {
            let rel = e
                .path()
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.insert((rel, kind.to_string()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_serves_the_schema_files_with_read_only_hints() {
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    let tools = client.list_all_tools().await.unwrap();
    let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains("list_files") && names.contains("index_status"),
        "{names:?}"
    );
    for tool in &tools {
        let input = Value::Object((*tool.input_schema).clone());
        assert_eq!(
            input,
            schema(&format!("{}.input.json", tool.name)),
            "{}",
            tool.name
        );
        let output = Value::Object((*tool.output_schema.clone().expect("output schema")).clone());
        assert_eq!(output, schema(&format!("{}.output.json", tool.name)));
        let ann = tool.annotations.as_ref().expect("annotations");
        // Read-only unless the tool writes (ingest_document adds a file,
        // create_chat_session a session, export_branches a file under the
        // export folder).
        let writes = matches!(
            tool.name.as_ref(),
            "ingest_document" | "create_chat_session" | "export_branches"
        );
        assert_eq!(ann.read_only_hint, Some(!writes), "{}", tool.name);
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_files_equals_the_files_on_disk() {
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    wait_indexed(&client).await;

    let mut on_disk = BTreeSet::new();
    files_on_disk(&s.root, &s.root, &mut on_disk);
    for kind in ["root", "hdf5", "document", "code"] {
        let expected: Vec<String> = on_disk
            .iter()
            .filter(|(_, k)| k == kind)
            .map(|(p, _)| p.clone())
            .collect();
        assert!(!expected.is_empty(), "test data has {kind} files");
        let got = listed(&client, &s.root, json!({"kind": kind, "limit": 1000})).await;
        assert_eq!(got, expected, "kind {kind}");
    }
    let all = listed(&client, &s.root, json!({"kind": "all", "limit": 1000})).await;
    assert_eq!(all.len(), on_disk.len());

    // Default: ROOT files only, with the spec's fields, validating against the schema.
    let (v, is_error) = call(&client, "list_files", json!({})).await;
    assert!(!is_error);
    assert_valid("list_files.output.json", &v);
    assert_eq!(v["data"]["total_scanned"], 12);
    assert_eq!(v["data"]["total_matched"], 12);
    let hzz = v["data"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["path"]
                .as_str()
                .unwrap()
                .ends_with("root/uproot-HZZ.root")
        })
        .unwrap();
    let meta = std::fs::metadata(s.root.join("root/uproot-HZZ.root")).unwrap();
    assert_eq!(hzz["size_bytes"], 217945);
    assert_eq!(hzz["size_bytes"].as_u64(), Some(meta.len()));
    assert_eq!(hzz["resource"], "data");
    let modified: chrono::DateTime<chrono::Utc> =
        hzz["modified"].as_str().unwrap().parse().unwrap();
    let mtime: chrono::DateTime<chrono::Utc> = meta.modified().unwrap().into();
    assert!((modified - mtime).num_seconds().abs() <= 1);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_files_pattern_limit_and_resource() {
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    wait_indexed(&client).await;

    let hzz = listed(&client, &s.root, json!({"pattern": "uproot-HZZ*.root"})).await;
    assert_eq!(hzz.len(), 6, "{hzz:?}");
    assert!(hzz.iter().all(|p| p.starts_with("root/uproot-HZZ")));

    let (v, _) = call(
        &client,
        "list_files",
        json!({"pattern": "*HZZ*", "limit": 2}),
    )
    .await;
    assert_eq!(v["data"]["files"].as_array().unwrap().len(), 2);
    assert_eq!(v["data"]["total_matched"], 6);
    assert_eq!(v["metadata"]["truncated"], true);
    assert_valid("list_files.output.json", &v);

    // A path pattern: '*' stays in one folder, '**' crosses folders.
    let guides = listed(
        &client,
        &s.root,
        json!({"kind": "document", "pattern": "docs/guides/*.md"}),
    )
    .await;
    assert_eq!(guides, vec!["docs/guides/shift_onboarding.md"]);
    let deep = listed(
        &client,
        &s.root,
        json!({"kind": "document", "pattern": "docs/guides/**/*.md"}),
    )
    .await;
    assert_eq!(
        deep,
        vec![
            "docs/guides/shift_onboarding.md",
            "docs/guides/trigger/trigger_menu.md"
        ]
    );

    let py = listed(
        &client,
        &s.root,
        json!({"kind": "code", "pattern": "*.py", "resource": "data"}),
    )
    .await;
    // calo_tools has three modules, plus scripts/equalise_gains.py and scratch/half_written.py.
    assert_eq!(py.len(), 5, "{py:?}");

    let (v, _) = call(&client, "list_files", json!({"pattern": "HZZ"})).await;
    assert_eq!(v["data"]["total_matched"], 0);
    let hint = v["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s.as_str().unwrap().contains("'*HZZ*'"));
    assert!(hint, "{v}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_have_spec_codes_and_suggestions() {
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    wait_indexed(&client).await;

    let cases = [
        (json!({"resource": "elsewhere"}), "resource_not_found"),
        (json!({"limit": 5000}), "limit_exceeded"),
        (json!({"kind": "images"}), "invalid_arguments"),
        (json!({"colour": "blue"}), "invalid_arguments"),
        (json!({"limit": "ten"}), "invalid_arguments"),
        (json!({"pattern": "../*"}), "permission_denied"),
        (json!({"pattern": "/etc/*"}), "permission_denied"),
        (json!({"pattern": "x/../../*"}), "permission_denied"),
        (json!({"pattern": "[unclosed"}), "invalid_arguments"),
    ];
    for (arguments, code) in cases {
        let (v, is_error) = call(&client, "list_files", arguments.clone()).await;
        assert!(is_error, "{arguments} should fail");
        assert_eq!(v["error"], code, "{arguments}: {v}");
        assert!(!v["message"].as_str().unwrap().is_empty());
        assert!(!v["suggestion"].as_str().unwrap().is_empty());
    }
    let (v, _) = call(&client, "list_files", json!({"resource": "elsewhere"})).await;
    // The ingest folder is served as a root of its own (`ingest`).
    assert_eq!(
        v["details"]["available_resources"],
        json!(["data", "ingest"])
    );
    let (v, _) = call(&client, "list_files", json!({"limit": 5000})).await;
    assert_eq!(v["retry_with"]["limit"], 1000);

    // An unknown tool is a JSON-RPC error, not a tool result.
    let err = client
        .call_tool(rmcp::model::CallToolRequestParams::new("no_such_tool"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no_such_tool"), "{err}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_files_are_recorded_and_indexing_goes_on() {
    let s = Sandbox::with_testdata();
    // A ROOT file cut short, an HDF5 file that is text, a PDF without a header,
    // and a binary blob named like source.
    let hzz = std::fs::read(s.root.join("root/uproot-HZZ.root")).unwrap();
    s.write("bad/truncated.root", &hzz[..hzz.len() / 2]);
    s.write("bad/fake.h5", b"this is not an HDF5 file");
    s.write("bad/broken.pdf", b"garbage, no header");
    s.write("bad/blob.py", b"\x00\x01\x02binary");
    let client = s.mcp().await;
    wait_indexed(&client).await;

    let (v, _) = call(&client, "index_status", json!({})).await;
    assert_valid("index_status.output.json", &v);
    let root = &v["data"]["roots"][0];
    assert_eq!(root["kinds"]["root"]["indexed"], 12);
    assert_eq!(root["kinds"]["root"]["failed"], 1);
    assert_eq!(root["kinds"]["hdf5"]["failed"], 1);
    assert_eq!(root["kinds"]["document"]["failed"], 1);
    assert_eq!(root["kinds"]["code"]["failed"], 1);
    assert_eq!(root["failed_total"], 4);
    let errors: Vec<(String, String)> = root["failed_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["error"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let error_of = |name: &str| {
        errors
            .iter()
            .find(|(p, _)| p.ends_with(name))
            .unwrap()
            .1
            .clone()
    };
    assert!(
        error_of("truncated.root").contains("truncated ROOT file"),
        "{errors:?}"
    );
    assert!(error_of("fake.h5").contains("not an HDF5 file"));
    assert!(error_of("broken.pdf").contains("not a PDF"));
    assert!(error_of("blob.py").contains("binary"));

    // Failed files still exist, so they are listed, flagged.
    let (v, _) = call(&client, "list_files", json!({"pattern": "truncated.root"})).await;
    assert_eq!(v["data"]["files"][0]["index_failed"], true);
    client.cancel().await.unwrap();

    // `quarry status` shows the same failures once the catalog is free again.
    let text = common::run_ok(
        common::quarry()
            .args(["status", "--catalog"])
            .arg(&s.catalog),
    );
    assert!(text.contains("truncated ROOT file"), "{text}");
    assert!(text.contains("fake.h5 (hdf5): not an HDF5 file"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_leaving_the_root_are_not_indexed() {
    let s = Sandbox::new();
    let outside = s.tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.md"), b"# secret").unwrap();
    std::fs::write(outside.join("other.root"), b"x").unwrap();
    s.write("inside.md", b"# inside");
    std::os::unix::fs::symlink(outside.join("secret.md"), s.root.join("link.md")).unwrap();
    std::os::unix::fs::symlink(&outside, s.root.join("linked_dir")).unwrap();
    std::os::unix::fs::symlink(s.root.join("inside.md"), s.root.join("alias.md")).unwrap();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let all = listed(&client, &s.root, json!({"kind": "all"})).await;
    assert_eq!(all, vec!["alias.md", "inside.md"]);
    client.cancel().await.unwrap();
}
