//! The MCP surface of the real binary: tools/list, list_files against the files on
//! disk, index_status, errors and path attacks.

use crate::common;

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

/// MCP's four tool hints: (readOnly, destructive, idempotent, openWorld).
type Hints = (bool, bool, bool, bool);

/// Reads the roots and the catalog, writes nothing: nothing to destroy, a
/// repeat changes nothing, and nothing outside the roots is reached.
const READS: Hints = (true, false, true, false);

/// What each tool does, reasoned from its spec and description, and the hints
/// that follow; `llm` is whether an `[llm]` model is configured.
fn expected_hints(tool: &str, llm: bool) -> Option<Hints> {
    Some(match tool {
        // The catalog tools, the ROOT readers and analysis (statistics computed
        // on request go to quarry's own catalog, a cache), HDF5, documents,
        // code, resources and RAG retrieval and navigation only read.
        "list_files"
        | "index_status"
        | "inspect_file"
        | "list_branches"
        | "read_histogram"
        | "read_branches"
        | "sample_tree"
        | "apply_selection"
        | "cutflow"
        | "get_branch_stats"
        | "list_root_datasets"
        | "read_dataset_slice"
        | "find_datasets"
        | "get_dataset_stats"
        | "list_collections"
        | "find_document"
        | "search_documents"
        | "search_multiple"
        | "read_document"
        | "get_document_info"
        | "parse_file"
        | "find_classes"
        | "find_functions"
        | "execute_query"
        | "find_symbol"
        | "get_outline"
        | "find_references"
        | "get_file_summary"
        | "extract_interface"
        | "get_class_hierarchy"
        | "get_include_graph"
        | "get_call_graph"
        | "read_resource"
        | "list_datasets"
        | "rag_retrieve"
        | "retrieve_documents"
        | "rag_node_get"
        | "rag_node_children"
        | "rag_node_navigation"
        | "rag_path_to_root" => READS,
        // plot: true writes a PNG under the export folder, named after the
        // request: the same request writes the same file again.
        "compute_histogram" | "compute_histogram_2d" | "compare_histograms" | "fit_histogram" => {
            (false, false, true, false)
        }
        // Writes output_path under the export folder, replacing a file already
        // there; the same request writes the same file again.
        "export_branches" | "export_dataset" => (false, true, true, false),
        // Saves a dataset definition in quarry's catalog, which the user sees
        // again, replacing one of the same name; the same call again changes
        // nothing more.
        "define_dataset" => (false, true, true, false),
        // Each call adds a new file (a session; a document named by time and
        // content), replacing nothing.
        "create_chat_session" | "ingest_document" => (false, false, false, false),
        // With session_id it appends the question to the session's file; with an
        // [llm] model the question and its sources go to that service.
        "answer_question" => (false, false, false, llm),
        // Writes nothing; with an [llm] model the nodes go to that service.
        "rag_summarize" => (true, false, true, llm),
        _ => return None,
    })
}

/// tools/list as a client sees it: each tool's schemas from schema/tools/ and
/// all four hints with the values above, without and with an [llm] model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_serves_the_schema_files_and_all_four_hints() {
    let s = Sandbox::with_testdata();
    let config = s.tmp.path().join("llm.toml");
    // Never asked here: listing the tools does not reach the model.
    std::fs::write(
        &config,
        "[llm]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
    )
    .unwrap();
    for llm in [false, true] {
        let client = if llm {
            s.mcp_with_args(&["--config", config.to_str().unwrap()])
                .await
        } else {
            s.mcp().await
        };
        let tools = client.list_all_tools().await.unwrap();
        let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert!(
            names.contains("list_files") && names.contains("answer_question"),
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
            let output =
                Value::Object((*tool.output_schema.clone().expect("output schema")).clone());
            assert_eq!(output, schema(&format!("{}.output.json", tool.name)));
            let ann = tool.annotations.as_ref().expect("annotations");
            let served = (
                ann.read_only_hint,
                ann.destructive_hint,
                ann.idempotent_hint,
                ann.open_world_hint,
            );
            let (read_only, destructive, idempotent, open_world) = expected_hints(&tool.name, llm)
                .unwrap_or_else(|| panic!("{}: add the tool to expected_hints", tool.name));
            assert_eq!(
                served,
                (
                    Some(read_only),
                    Some(destructive),
                    Some(idempotent),
                    Some(open_world)
                ),
                "{} with llm={llm}",
                tool.name
            );
        }
        client.cancel().await.unwrap();
    }
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
    // 12 in root/, 22 RNTuple files in rntuple/.
    assert_eq!(v["data"]["total_scanned"], 34);
    assert_eq!(v["data"]["total_matched"], 34);
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
    assert_eq!(root["kinds"]["root"]["indexed"], 34);
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
