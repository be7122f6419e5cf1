//! The code tools over MCP, on the real binary. Every class and function of the
//! test sources is compared with what the py-tree-sitter bindings read
//! (tests/fixtures/code/symbols.json, written by scripts/fixtures/code_symbols.py);
//! the spec's execute_query examples run on small files written here; list and
//! directory forms, syntax errors, invalid queries, path attacks, the watcher,
//! find_symbol and get_outline.

use crate::common;

use std::time::{Duration, Instant};

use common::{Client, Sandbox, assert_valid, call, wait_indexed};
use serde_json::{Value, json};

fn fixtures() -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code/symbols.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// (name, kind, line, column, end_line) with methods counted as functions, as
/// the fixture script does not tell them apart.
fn summary(symbols: &Value) -> Vec<(String, String, u64, u64, u64)> {
    symbols
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let kind = s["kind"]
                .as_str()
                .unwrap_or("function")
                .replace("method", "function");
            (
                s["name"].as_str().unwrap().to_string(),
                kind,
                s["line"].as_u64().unwrap(),
                s["column"].as_u64().unwrap(),
                s["end_line"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_symbol_matches_py_tree_sitter() {
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let fixtures = fixtures();
    let files = fixtures["files"].as_object().unwrap();
    assert!(files.len() >= 10);
    for (rel, expected) in files {
        let path = format!("code/{rel}");
        let (v, is_error) = call(&client, "find_classes", json!({"filepath": path})).await;
        assert!(!is_error, "{v}");
        assert_valid("find_classes.output.json", &v);
        assert_eq!(
            summary(&v["data"]["classes"]),
            summary(&expected["classes"]),
            "{rel}"
        );
        let (v, is_error) = call(&client, "find_functions", json!({"filepath": path})).await;
        assert!(!is_error, "{v}");
        assert_valid("find_functions.output.json", &v);
        assert_eq!(
            summary(&v["data"]["functions"]),
            summary(&expected["functions"]),
            "{rel}"
        );
        let (v, _) = call(&client, "parse_file", json!({"filepath": path})).await;
        assert_valid("parse_file.output.json", &v);
        assert_eq!(v["data"]["has_errors"], expected["has_errors"], "{rel}");
        assert_eq!(
            v["data"]["class_count"],
            expected["classes"].as_array().unwrap().len(),
            "{rel}"
        );
        assert_eq!(
            v["data"]["function_count"],
            expected["functions"].as_array().unwrap().len(),
            "{rel}"
        );
    }
    client.cancel().await.unwrap();
}

const DECORATORS: &str = "import functools\n\n\n@timer\ndef slow():\n    pass\n\n\nclass MyClass:\n    @staticmethod\n    def s():\n        pass\n\n    @property\n    def p(self):\n        return 1\n";
const ASYNC: &str = "import asyncio\n\n\nasync def fetch_data(url):\n    pass\n\n\nclass AsyncDataFetcher:\n    def __init__(self):\n        pass\n\n    async def get(self, key):\n        pass\n";
const TEMPLATES: &str = "#include <vector>\n\ntemplate <typename T>\nclass Container {\n  T value;\n};\n\ntemplate <typename T>\nclass Stack : public Container<T> {};\n\nclass Plain {};\n";
const VIRTUALS: &str = "#include \"shape.hpp\"\n#include <cmath>\n#include <string>\n\nclass Shape {\n public:\n  virtual void draw() {}\n  virtual double area() const { return 0; }\n  void plain() {}\n};\n";
const IMPORTS: &str =
    "\"\"\"Imports.\"\"\"\n\nimport os\nimport sys\nfrom pathlib import Path\nimport json as js\n";

fn code_sandbox() -> Sandbox {
    let s = Sandbox::new();
    s.write("fixtures/with_decorators.py", DECORATORS.as_bytes());
    s.write("fixtures/async_example.py", ASYNC.as_bytes());
    s.write("fixtures/template_class.cpp", TEMPLATES.as_bytes());
    s.write("fixtures/virtual_functions.cpp", VIRTUALS.as_bytes());
    s.write("fixtures/with_imports.py", IMPORTS.as_bytes());
    s.write("fixtures/notes.txt", b"not code\n");
    s.write(
        "fixtures/deeper/broken.py",
        b"def ok():\n    pass\n\ndef broken(:\n    pass\n",
    );
    s
}

fn captures(v: &Value) -> Vec<(String, String, u64, u64)> {
    v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["capture_name"].as_str().unwrap().to_string(),
                m["text"].as_str().unwrap().to_string(),
                m["line"].as_u64().unwrap(),
                m["column"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn owned(v: &[(&str, &str, u64, u64)]) -> Vec<(String, String, u64, u64)> {
    v.iter()
        .map(|(a, b, l, c)| (a.to_string(), b.to_string(), *l, *c))
        .collect()
}

async fn query(client: &Client, file: &str, q: &str) -> Value {
    let (v, is_error) = call(
        client,
        "execute_query",
        json!({"filepath": file, "query": q}),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_valid("execute_query.output.json", &v);
    assert_eq!(v["data"]["success"], true);
    v["data"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_specs_query_examples() {
    let s = code_sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let v = query(&client, "fixtures/virtual_functions.cpp",
        "(function_definition \"virtual\" declarator: (function_declarator declarator: (field_identifier) @virtual_func))").await;
    assert_eq!(
        captures(&v),
        owned(&[
            ("virtual_func", "draw", 7, 15),
            ("virtual_func", "area", 8, 17)
        ])
    );
    let v = query(
        &client,
        "fixtures/template_class.cpp",
        "(template_declaration (class_specifier name: (type_identifier) @template_class))",
    )
    .await;
    assert_eq!(
        captures(&v),
        owned(&[
            ("template_class", "Container", 4, 6),
            ("template_class", "Stack", 9, 6)
        ])
    );
    let v = query(
        &client,
        "fixtures/virtual_functions.cpp",
        "(preproc_include path: (_) @include_path)",
    )
    .await;
    assert_eq!(
        captures(&v),
        owned(&[
            ("include_path", "\"shape.hpp\"", 1, 9),
            ("include_path", "<cmath>", 2, 9),
            ("include_path", "<string>", 3, 9),
        ])
    );
    let v = query(
        &client,
        "fixtures/with_decorators.py",
        "(decorator) @decorator",
    )
    .await;
    assert_eq!(
        captures(&v),
        owned(&[
            ("decorator", "@timer", 4, 0),
            ("decorator", "@staticmethod", 10, 4),
            ("decorator", "@property", 14, 4),
        ])
    );
    let v = query(
        &client,
        "fixtures/async_example.py",
        "(function_definition \"async\" @async_keyword name: (identifier) @async_func_name)",
    )
    .await;
    assert_eq!(
        captures(&v),
        owned(&[
            ("async_keyword", "async", 4, 0),
            ("async_func_name", "fetch_data", 4, 10),
            ("async_keyword", "async", 12, 4),
            ("async_func_name", "get", 12, 14),
        ])
    );
    let v = query(
        &client,
        "fixtures/with_imports.py",
        "[(import_statement) @import (import_from_statement) @import_from]",
    )
    .await;
    assert_eq!(
        captures(&v),
        owned(&[
            ("import", "import os", 3, 0),
            ("import", "import sys", 4, 0),
            ("import_from", "from pathlib import Path", 5, 0),
            ("import", "import json as js", 6, 0),
        ])
    );
    // Several files: the spec's list shape.
    let (v, _) = call(
        &client,
        "execute_query",
        json!({
            "filepath": ["fixtures/with_decorators.py", "fixtures/async_example.py"],
            "query": "(class_definition name: (identifier) @class_name)",
        }),
    )
    .await;
    assert_valid("execute_query.output.json", &v);
    let d = &v["data"];
    assert_eq!(
        (
            d["total_files"].as_u64(),
            d["processed_files"].as_u64(),
            d["failed_files"].as_u64()
        ),
        (Some(2), Some(2), Some(0))
    );
    assert_eq!(
        captures(&d["results"][0]),
        owned(&[("class_name", "MyClass", 9, 6)])
    );
    assert_eq!(
        captures(&d["results"][1]),
        owned(&[("class_name", "AsyncDataFetcher", 8, 6)])
    );
    // The match limit.
    let (v, _) = call(&client, "execute_query", json!({"filepath": "fixtures/with_imports.py", "query": "(identifier) @id", "max_matches": 2})).await;
    assert_eq!(v["data"]["matches"].as_array().unwrap().len(), 2);
    assert_eq!(v["data"]["truncated"], true);
    client.cancel().await.unwrap();
}

async fn error_of(client: &Client, tool: &str, args: Value) -> Value {
    let (v, is_error) = call(client, tool, args).await;
    assert!(is_error, "{v}");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_invalid_queries_and_path_attacks() {
    let s = code_sandbox();
    std::os::unix::fs::symlink("/etc", s.root.join("fixtures/escape")).unwrap();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let e = error_of(
        &client,
        "execute_query",
        json!({"filepath": "fixtures/template_class.cpp", "query": "(class_specifier (foo) @x)"}),
    )
    .await;
    assert_eq!(e["error"], "invalid_query");
    assert_eq!(
        e["message"],
        "Failed to compile query: invalid node type 'foo' at offset 18"
    );
    assert_eq!(e["details"]["kind"], "node_type");
    let e = error_of(
        &client,
        "execute_query",
        json!({"filepath": "fixtures/template_class.cpp", "query": "(class_specifier name: (type_identifier) @n"}),
    )
    .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("Failed to compile query: invalid syntax at offset"),
        "{e}"
    );
    // The spec's own invalid query: tree-sitter reads `invalid` as a node type.
    let e = error_of(
        &client,
        "execute_query",
        json!({"filepath": "fixtures/template_class.cpp", "query": "(invalid query syntax"}),
    )
    .await;
    assert_eq!(
        e["message"],
        "Failed to compile query: invalid node type 'invalid' at offset 1"
    );
    let e = error_of(&client, "execute_query", json!({"filepath": "fixtures/with_imports.py", "query": "(identifier) @x", "max_matches": 100000})).await;
    assert_eq!(e["error"], "limit_exceeded");
    let e = error_of(
        &client,
        "parse_file",
        json!({"filepath": "nonexistent.cpp"}),
    )
    .await;
    assert_eq!(e["error"], "file_not_found");
    assert_eq!(e["message"], "Failed to open file: nonexistent.cpp");
    for attack in [
        "../../etc/passwd",
        "/etc/passwd",
        "fixtures/escape/passwd",
        "fixtures/../../x.py",
    ] {
        let e = error_of(&client, "find_functions", json!({"filepath": attack})).await;
        assert_eq!(e["error"], "permission_denied", "{attack}: {e}");
    }
    let e = error_of(&client, "find_classes", json!({"filepath": 7})).await;
    assert_eq!(e["error"], "invalid_arguments");
    let e = error_of(
        &client,
        "find_symbol",
        json!({"name": "x", "kind": "module"}),
    )
    .await;
    assert_eq!(e["error"], "invalid_arguments");
    let e = error_of(&client, "get_outline", json!({"filepath": "fixtures"})).await;
    assert_eq!(e["error"], "invalid_arguments");
    // A list with a missing file and a refused one: failures per file.
    let (v, _) = call(
        &client,
        "parse_file",
        json!({"filepath": ["fixtures/with_imports.py", "gone.py", "/etc/passwd"]}),
    )
    .await;
    assert_valid("parse_file.output.json", &v);
    let d = &v["data"];
    assert_eq!(
        (
            d["total_files"].as_u64(),
            d["processed_files"].as_u64(),
            d["failed_files"].as_u64()
        ),
        (Some(3), Some(1), Some(2))
    );
    assert_eq!(d["results"][1]["error"], "Failed to open file: gone.py");
    assert_eq!(d["results"][2]["success"], false);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directories_patterns_syntax_errors_and_outline() {
    let s = code_sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let files = |v: &Value| -> Vec<String> {
        v["data"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["filepath"].as_str().unwrap().to_string())
            .collect()
    };
    let (v, _) = call(&client, "parse_file", json!({"filepath": "fixtures"})).await;
    assert_valid("parse_file.output.json", &v);
    assert_eq!(
        files(&v),
        vec![
            "fixtures/async_example.py",
            "fixtures/deeper/broken.py",
            "fixtures/template_class.cpp",
            "fixtures/virtual_functions.cpp",
            "fixtures/with_decorators.py",
            "fixtures/with_imports.py",
        ]
    );
    let broken = &v["data"]["results"][1];
    assert_eq!(broken["has_errors"], true);
    assert_eq!(broken["errors"][0]["start_line"], 4);
    assert_eq!(broken["function_count"], 2);
    let (v, _) = call(
        &client,
        "find_classes",
        json!({"filepath": "fixtures/", "recursive": false, "file_patterns": ["*.py"]}),
    )
    .await;
    assert_valid("find_classes.output.json", &v);
    assert_eq!(
        files(&v),
        vec![
            "fixtures/async_example.py",
            "fixtures/with_decorators.py",
            "fixtures/with_imports.py"
        ]
    );
    assert_eq!(v["data"]["results"][1]["classes"][0]["name"], "MyClass");
    let (v, _) = call(
        &client,
        "find_functions",
        json!({"filepath": "fixtures", "file_patterns": ["*.cpp"]}),
    )
    .await;
    assert_eq!(v["data"]["total_files"], 2);
    assert_eq!(
        v["data"]["results"][1]["functions"][0]["qualified_name"],
        "Shape::draw"
    );

    let (v, _) = call(
        &client,
        "get_outline",
        json!({"filepath": "fixtures/async_example.py"}),
    )
    .await;
    assert_valid("get_outline.output.json", &v);
    let outline = &v["data"]["outline"];
    assert_eq!(outline[0]["name"], "fetch_data");
    assert_eq!(outline[1]["name"], "AsyncDataFetcher");
    let methods: Vec<&str> = outline[1]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(methods, vec!["__init__", "get"]);

    let (v, _) = call(
        &client,
        "find_symbol",
        json!({"name": "asyncdatafetcher.GET"}),
    )
    .await;
    assert_valid("find_symbol.output.json", &v);
    let hit = &v["data"]["symbols"][0];
    assert_eq!(
        (
            hit["qualified_name"].as_str(),
            hit["line"].as_u64(),
            hit["column"].as_u64(),
            hit["kind"].as_str(),
            hit["match"].as_str()
        ),
        (
            Some("AsyncDataFetcher.get"),
            Some(12),
            Some(14),
            Some("method"),
            Some("exact")
        )
    );
    assert!(
        hit["filepath"]
            .as_str()
            .unwrap()
            .ends_with("fixtures/async_example.py")
    );
    let (v, _) = call(
        &client,
        "find_symbol",
        json!({"name": "a", "kind": "class", "limit": 1}),
    )
    .await;
    assert_eq!(v["data"]["symbols"].as_array().unwrap().len(), 1);
    assert_eq!(v["data"]["truncated"], true);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_updates_symbols_within_two_seconds() {
    let s = code_sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let found = |v: &Value| v["data"]["symbols"].as_array().unwrap().len();
    let (v, _) = call(&client, "find_symbol", json!({"name": "freshly_written"})).await;
    assert_eq!(found(&v), 0);
    s.write(
        "fixtures/new_module.py",
        b"def freshly_written():\n    pass\n",
    );
    let start = Instant::now();
    loop {
        let (v, _) = call(&client, "find_symbol", json!({"name": "freshly_written"})).await;
        if found(&v) == 1 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "not found after 2 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.write("fixtures/new_module.py", b"def renamed():\n    pass\n");
    let start = Instant::now();
    loop {
        let (v, _) = call(&client, "find_symbol", json!({"name": "freshly_written"})).await;
        let (f, _) = call(
            &client,
            "find_functions",
            json!({"filepath": "fixtures/new_module.py"}),
        )
        .await;
        if found(&v) == 0 && f["data"]["functions"][0]["name"] == "renamed" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "change not seen after 2 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.cancel().await.unwrap();
}

/// A file with more functions than fit in a result, and a folder of more files
/// than fit: the per-file list and the folder's results are cut at the byte cap
/// (12,000 bytes by default), say so, still count everything, and go on with
/// offset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_are_cut_at_the_byte_cap() {
    let s = Sandbox::new();
    let many: String = (0..600)
        .map(|i| format!("def function_number_{i}(x):\n    return x\n\n"))
        .collect();
    s.write("big/many.py", many.as_bytes());
    for i in 0..80 {
        let body: String = (0..12)
            .map(|j| format!("def f{i}_{j}():\n    pass\n"))
            .collect();
        s.write(&format!("big/folder/file_{i:02}.py"), body.as_bytes());
    }
    let client = s.mcp().await;
    wait_indexed(&client).await;

    let (v, is_error) = call(
        &client,
        "find_functions",
        json!({"filepath": "big/many.py"}),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_valid("find_functions.output.json", &v);
    let data = &v["data"];
    assert_eq!(data["truncated"], true);
    assert_eq!(data["functions_total"], 600);
    let kept = data["functions"].as_array().unwrap();
    assert!(kept.len() > 10 && kept.len() < 600, "{}", kept.len());
    assert_eq!(kept[0]["name"], "function_number_0");
    assert!(serde_json::to_vec(&v).unwrap().len() <= 12_000);
    // The rest is reached with offset: the next page starts where this one
    // stopped, and the pages together hold every function once, in order.
    assert_eq!(v["metadata"]["next_offset"], kept.len());
    let mut names: Vec<String> = Vec::new();
    let mut page = v.clone();
    loop {
        names.extend(
            page["data"]["functions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["name"].as_str().unwrap().to_string()),
        );
        let Some(next) = page["metadata"].get("next_offset").cloned() else {
            break;
        };
        let (p, is_error) = call(
            &client,
            "find_functions",
            json!({"filepath": "big/many.py", "offset": next}),
        )
        .await;
        assert!(
            !is_error && serde_json::to_vec(&p).unwrap().len() <= 12_000,
            "{p}"
        );
        page = p;
    }
    let expected: Vec<String> = (0..600).map(|i| format!("function_number_{i}")).collect();
    assert_eq!(names, expected);

    let (v, is_error) = call(&client, "find_functions", json!({"filepath": "big/folder"})).await;
    assert!(!is_error, "{v}");
    assert_valid("find_functions.output.json", &v);
    let data = &v["data"];
    assert_eq!(data["truncated"], true);
    assert_eq!(data["total_files"], 80);
    assert_eq!(data["processed_files"], 80);
    let results = data["results"].as_array().unwrap();
    assert!(
        !results.is_empty() && results.len() < 80,
        "{}",
        results.len()
    );
    assert_eq!(results[0]["filepath"], "big/folder/file_00.py");
    assert!(serde_json::to_vec(&v).unwrap().len() <= 12_000);
    // The next files come with offset.
    let next = v["metadata"]["next_offset"].as_u64().unwrap();
    assert_eq!(next as usize, results.len());
    let (p, _) = call(
        &client,
        "find_functions",
        json!({"filepath": "big/folder", "offset": next}),
    )
    .await;
    assert_eq!(
        p["data"]["results"][0]["filepath"],
        format!("big/folder/file_{next:02}.py")
    );
}
