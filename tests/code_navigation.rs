//! Code navigation over MCP, on the real binary, over tests/data/codenav (a
//! small C++ project with inheritance, a template base, an include cycle and
//! two headers of one name; a Python package with relative and aliased
//! imports). Expected values come from tests/fixtures/code/navigation.json,
//! written by scripts/fixtures/code_navigation.py with py-tree-sitter (every
//! use of every name, line counts, public members) and universal-ctags
//! (includes, imports, class bases), and from hand-checked cases explained
//! where they are asserted.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::{Client, Sandbox, call, call_err, call_ok, copy_tree, wait_indexed};
use serde_json::{Value, json};

fn fixture() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/code/navigation.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn data_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/codenav")
}

/// The project in a root, served with `[code] include_dirs` when given.
async fn project(include_dirs: Option<&str>) -> (Sandbox, Client) {
    let s = Sandbox::new();
    copy_tree(&data_dir(), &s.root);
    let client = match include_dirs {
        Some(dirs) => {
            let config = s.tmp.path().join("quarry.toml");
            std::fs::write(&config, format!("[code]\ninclude_dirs = {dirs}\n")).unwrap();
            s.mcp_with_args(&["--config", config.to_str().unwrap()])
                .await
        }
        None => s.mcp().await,
    };
    wait_indexed(&client).await;
    (s, client)
}

/// Every page of find_references, followed through next_offset.
async fn all_references(client: &Client, args: Value) -> Vec<Value> {
    let mut out = Vec::new();
    let mut args = args;
    loop {
        let v = call_ok(client, "find_references", args.clone()).await;
        out.extend(v["data"]["references"].as_array().unwrap().iter().cloned());
        match v["metadata"]["next_offset"].as_u64() {
            Some(next) => args["offset"] = next.into(),
            None => return out,
        }
    }
}

/// A reference as (path in the root, line, column, role).
fn place(root: &std::path::Path, r: &Value) -> Place {
    let path = r["filepath"].as_str().unwrap();
    let rel = path
        .strip_prefix(root.to_str().unwrap())
        .unwrap()
        .trim_start_matches('/');
    (
        rel.to_string(),
        r["line"].as_u64().unwrap(),
        r["column"].as_u64().unwrap(),
        r["role"].as_str().unwrap().to_string(),
    )
}

/// A use: (path in the root, line, column, role).
type Place = (String, u64, u64, String);
/// Name -> its uses -> (line text, enclosing function as written).
type Expected = BTreeMap<String, BTreeMap<Place, (String, Value)>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_use_of_every_name_matches_py_tree_sitter() {
    let (s, client) = project(Some("[\"include\", \"extra\"]")).await;
    let fixture = fixture();
    // name -> expected uses (file, line, column, role) -> (line text, function).
    let mut expected: Expected = BTreeMap::new();
    for (rel, file) in fixture["files"].as_object().unwrap() {
        for (name, uses) in file["uses"].as_object().unwrap() {
            for u in uses.as_array().unwrap() {
                let key = (
                    rel.clone(),
                    u["line"].as_u64().unwrap(),
                    u["column"].as_u64().unwrap(),
                    u["role"].as_str().unwrap().to_string(),
                );
                let text = u["line_text"].as_str().unwrap().to_string();
                expected
                    .entry(name.clone())
                    .or_default()
                    .insert(key, (text, u["function"].clone()));
            }
        }
    }
    assert!(expected.len() > 50, "{} names", expected.len());
    for (name, uses) in &expected {
        let found = all_references(&client, json!({"name": name, "limit": 1000})).await;
        let got: BTreeMap<_, _> = found.iter().map(|r| (place(&s.root, r), r)).collect();
        assert_eq!(
            got.keys().collect::<BTreeSet<_>>(),
            uses.keys().collect::<BTreeSet<_>>(),
            "uses of {name}"
        );
        for (key, (text, function)) in uses {
            let r = got[key];
            assert_eq!(r["line_text"], text.as_str(), "{name} at {key:?}");
            // py-tree-sitter gives the function's name as written (`A::f`);
            // quarry the qualified name, which ends with it.
            match function.as_str() {
                Some(f) => {
                    let q = r["function"].as_str().unwrap_or_default();
                    assert!(
                        q == f || q.ends_with(&format!("::{f}")) || q.ends_with(&format!(".{f}")),
                        "{name} at {key:?}: function {q} for {f}"
                    );
                }
                None => assert!(r.get("function").is_none(), "{name} at {key:?}: {r}"),
            }
        }
    }
    // A name used nowhere is an empty answer with a suggestion, not an error.
    let v = call_ok(&client, "find_references", json!({"name": "nowhere_used"})).await;
    assert_eq!(v["data"]["total"], 0);
    assert!(
        v["suggestions"][0]
            .as_str()
            .unwrap()
            .contains("find_symbol")
    );
    client.cancel().await.unwrap();
}

/// (file, line) of each reference, sorted.
fn lines_of(root: &std::path::Path, refs: &[Value]) -> Vec<(String, u64, String)> {
    let mut v: Vec<_> = refs
        .iter()
        .map(|r| {
            let (f, l, _, _) = place(root, r);
            (f, l, r["match"].as_str().unwrap_or("").to_string())
        })
        .collect();
    v.sort();
    v
}

fn owned(v: &[(&str, u64, &str)]) -> Vec<(String, u64, String)> {
    v.iter()
        .map(|(f, l, m)| (f.to_string(), *l, m.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_resolve_by_qualifier_scope_and_import() {
    let (s, client) = project(Some("[\"include\", \"extra\"]")).await;
    // Hand-checked: `area` in scope Square is its declaration in Square's
    // body (Polygon.hpp:21, sits in the scope), the out-of-line definition
    // `Square::area` and the call `Square::area()` (Polygon.cpp:7 and 16,
    // qualified), and the two member calls on objects of unknown type
    // (`shape.area()`, `s->area()`: only the name matches). Shape's pure
    // virtual (Shape.hpp:16) and LabelledSquare's are other scopes.
    let expected = owned(&[
        ("include/shapes/Polygon.hpp", 21, "scope"),
        ("src/Polygon.cpp", 7, "qualifier"),
        ("src/Polygon.cpp", 16, "qualifier"),
        ("src/Polygon.cpp", 20, "name"),
        ("src/Registry.cpp", 12, "name"),
    ]);
    let scoped = all_references(&client, json!({"name": "area", "scope": "Square"})).await;
    assert_eq!(lines_of(&s.root, &scoped), expected);
    let qualified = all_references(&client, json!({"name": "geo::Square::area"})).await;
    assert_eq!(lines_of(&s.root, &qualified), expected);
    // Definitions only: the two with bodies (Shape's is a declaration).
    let defs = all_references(&client, json!({"name": "area", "kind": "definition"})).await;
    assert_eq!(
        lines_of(&s.root, &defs),
        owned(&[("src/Polygon.cpp", 7, ""), ("src/Polygon.cpp", 15, "")])
    );
    // Python: every use of Reader is pkg.base's, reached through `from .base
    // import`, `from pkg.base import`, the alias `base` of `from . import
    // base`, and `pkg.base.Reader` after `import pkg.base`; the class
    // statement sits in module pkg.base.
    let reader = all_references(&client, json!({"name": "Reader", "scope": "pkg.base"})).await;
    assert_eq!(
        lines_of(&s.root, &reader),
        owned(&[
            ("py/app.py", 12, "qualifier"),
            ("py/pkg/__init__.py", 2, "qualifier"),
            ("py/pkg/base.py", 5, "scope"),
            ("py/pkg/formats.py", 4, "qualifier"),
            ("py/pkg/formats.py", 8, "qualifier"),
            ("py/pkg/formats.py", 14, "qualifier"),
        ])
    );
    // `self.check` in StrictJsonReader.read is StrictJsonReader's.
    let check = all_references(
        &client,
        json!({"name": "check", "scope": "StrictJsonReader", "kind": "call"}),
    )
    .await;
    assert_eq!(
        lines_of(&s.root, &check),
        owned(&[("py/pkg/formats.py", 17, "qualifier")])
    );
    assert_eq!(check[0]["function"], "StrictJsonReader.read");
    assert_eq!(check[0]["qualifier"], "StrictJsonReader");
    // Bad input: the spec's codes, with the tool that helps.
    let e = call_err(
        &client,
        "find_references",
        json!({"name": "area", "kind": "caller"}),
    )
    .await;
    assert_eq!(e["error"], "invalid_arguments");
    assert_eq!(e["retry_with"]["kind"], "call");
    let e = call_err(&client, "find_references", json!({"name": " "})).await;
    assert_eq!(e["error"], "invalid_arguments");
    let e = call_err(
        &client,
        "find_references",
        json!({"name": "a", "limit": 5000}),
    )
    .await;
    assert_eq!(e["error"], "limit_exceeded");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_summaries_match_ctags_and_py_tree_sitter() {
    let (_s, client) = project(Some("[\"include\", \"extra\"]")).await;
    let fixture = fixture();
    let ctags = &fixture["ctags"];
    for (rel, file) in fixture["files"].as_object().unwrap() {
        let v = call_ok(&client, "get_file_summary", json!({"filepath": rel})).await;
        let d = &v["data"];
        assert_eq!(d["lines"], file["lines"], "{rel}");
        // ctags lists one module per `import`/`from` and one header per
        // #include, with its line; Python `from M import a` is the module M.
        if !ctags.is_null() {
            let mut got: Vec<(String, u64)> = d["includes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    (
                        i["path"].as_str().unwrap().to_string(),
                        i["line"].as_u64().unwrap(),
                    )
                })
                .collect();
            got.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
            let want: Vec<(String, u64)> = ctags["includes"][rel]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|i| {
                            (
                                i["path"].as_str().unwrap().to_string(),
                                i["line"].as_u64().unwrap(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(got, want, "{rel}");
        }
    }
    // Hand-checked resolution: "config.hpp" from src/main.cpp is extra/ (an
    // include dir); <iostream> is no project file; shapes/... from a header
    // is found through the include dir `include`.
    let v = call_ok(
        &client,
        "get_file_summary",
        json!({"filepath": "src/main.cpp"}),
    )
    .await;
    let includes = v["data"]["includes"].as_array().unwrap();
    assert_eq!(includes[0]["system"], true);
    assert!(includes[0].get("resolved").is_none());
    assert_eq!(includes[1]["resolved"], json!(["extra/config.hpp"]));
    assert_eq!(
        includes[2]["resolved"],
        json!(["include/shapes/Polygon.hpp"])
    );
    assert_eq!(v["data"]["function_count"], 1);
    let v = call_ok(
        &client,
        "get_file_summary",
        json!({"filepath": "py/pkg/formats.py"}),
    )
    .await;
    let includes = v["data"]["includes"].as_array().unwrap();
    assert!(
        includes[0].get("resolved").is_none(),
        "json is not a project module"
    );
    assert_eq!(includes[1]["resolved"], json!(["py/pkg/base.py"]));
    assert_eq!(
        includes[2]["resolved"],
        json!(["py/pkg/__init__.py", "py/pkg/base.py"]),
        "`from . import base` imports the package and its module"
    );
    let e = call_err(&client, "get_file_summary", json!({"filepath": "src"})).await;
    assert_eq!(e["error"], "invalid_arguments");
    let e = call_err(
        &client,
        "get_file_summary",
        json!({"filepath": "src/none.cpp"}),
    )
    .await;
    assert_eq!(e["error"], "file_not_found");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_include_dirs_a_header_name_two_files_share_is_ambiguous() {
    let (_s, client) = project(None).await;
    let v = call_ok(
        &client,
        "get_file_summary",
        json!({"filepath": "src/main.cpp"}),
    )
    .await;
    // extra/config.hpp and other/config.hpp both end in "config.hpp".
    assert_eq!(v["data"]["includes"][1]["ambiguous"], 2);
    // A unique file whose path ends in the include is found without settings.
    assert_eq!(
        v["data"]["includes"][2]["resolved"],
        json!(["include/shapes/Polygon.hpp"])
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interfaces_list_public_members_without_bodies() {
    let (_s, client) = project(None).await;
    let fixture = fixture();
    for (rel, class) in [
        ("include/shapes/Polygon.hpp", "Square"),
        ("include/shapes/Polygon.hpp", "Polygon"),
        ("include/shapes/Polygon.hpp", "LabelledSquare"),
        ("include/shapes/Shape.hpp", "Shape"),
        ("include/shapes/Registry.hpp", "Registry"),
        ("py/pkg/base.py", "Reader"),
        ("py/pkg/formats.py", "StrictJsonReader"),
    ] {
        let v = call_ok(
            &client,
            "extract_interface",
            json!({"filepath": rel, "name": class}),
        )
        .await;
        let got: Vec<Value> = v["data"]["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| json!([m["name"], m["kind"]]))
            .collect();
        assert_eq!(
            Value::Array(got),
            fixture["files"][rel]["public_members"][class],
            "{rel} {class}"
        );
        // ctags' `inherits` names the same bases, as written.
        let written: Vec<&str> = v["data"]["bases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["written"].as_str().unwrap())
            .collect();
        if !fixture["ctags"].is_null() {
            let want: Vec<&str> = fixture["ctags"]["bases"][class]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_str().unwrap())
                .collect();
            assert_eq!(written, want, "{class}");
        }
    }
    // Hand-checked signatures: the declaration's text on one line, without
    // `;` or a body; an inline definition stops before its initializers.
    let v = call_ok(
        &client,
        "extract_interface",
        json!({"filepath": "include/shapes/Polygon.hpp", "name": "geo::Polygon"}),
    )
    .await;
    let sigs: Vec<&str> = v["data"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["signature"].as_str().unwrap())
        .collect();
    assert_eq!(
        sigs,
        [
            "explicit Polygon(int sides)",
            "int sides() const",
            "T perimeter(T side) const"
        ]
    );
    assert_eq!(v["data"]["non_public_members"], 1);
    assert_eq!(v["data"]["bases"][0]["access"], "public");
    let v = call_ok(
        &client,
        "extract_interface",
        json!({"filepath": "py/pkg/base.py", "name": "Reader"}),
    )
    .await;
    let sigs: Vec<&str> = v["data"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["signature"].as_str().unwrap())
        .collect();
    assert_eq!(
        sigs,
        [
            "kind = \"plain\"",
            "def __init__(self, path)",
            "def read(self)"
        ]
    );
    assert_eq!(v["data"]["non_public_members"], 1, "_load is private");
    let e = call_err(
        &client,
        "extract_interface",
        json!({"filepath": "py/pkg/base.py", "name": "Writer"}),
    )
    .await;
    assert_eq!(e["error"], "symbol_not_found");
    assert!(e["suggestion"].as_str().unwrap().contains("find_symbol"));
    assert_eq!(e["details"]["classes_in_file"], json!(["Reader"]));
    client.cancel().await.unwrap();
}

fn edges(v: &Value, a: &str, b: &str) -> Vec<(String, String)> {
    let mut out: Vec<_> = v["data"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e[a].as_str().unwrap().to_string(),
                e[b].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out: Vec<_> = v
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class_hierarchy_across_files() {
    let (_s, client) = project(None).await;
    // Hand-checked from the base clauses (the same as ctags' `inherits`):
    // LabelledSquare : public Square, private Tagged; Square : public
    // Polygon<double> (the template by its name); Polygon<T> : public Shape.
    let v = call_ok(
        &client,
        "get_class_hierarchy",
        json!({"name": "LabelledSquare", "direction": "up", "depth": 5}),
    )
    .await;
    assert_eq!(
        edges(&v, "derived", "base"),
        pairs(&[
            ("geo::LabelledSquare", "geo::Square"),
            ("geo::LabelledSquare", "geo::Tagged"),
            ("geo::Square", "geo::Polygon"),
            ("geo::Polygon", "geo::Shape"),
        ])
    );
    let tagged = v["data"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["base"] == "geo::Tagged")
        .unwrap();
    assert_eq!(tagged["access"], "private");
    let down = call_ok(
        &client,
        "get_class_hierarchy",
        json!({"name": "Shape", "direction": "down"}),
    )
    .await;
    let depth: BTreeMap<String, u64> = down["data"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["derived"].as_str().unwrap().to_string(),
                e["depth"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        depth,
        BTreeMap::from([
            ("geo::Polygon".to_string(), 1),
            ("geo::Square".to_string(), 2),
            ("geo::LabelledSquare".to_string(), 3),
        ])
    );
    // Python: StrictJsonReader(JsonReader, base.Reader); JsonReader(Reader).
    let v = call_ok(
        &client,
        "get_class_hierarchy",
        json!({"name": "StrictJsonReader", "direction": "up"}),
    )
    .await;
    assert_eq!(
        edges(&v, "derived", "base"),
        pairs(&[
            ("StrictJsonReader", "JsonReader"),
            ("StrictJsonReader", "Reader"),
            ("JsonReader", "Reader"),
        ])
    );
    let e = call_err(&client, "get_class_hierarchy", json!({"name": "Nope"})).await;
    assert_eq!(e["error"], "symbol_not_found");
    let e = call_err(
        &client,
        "get_class_hierarchy",
        json!({"name": "Shape", "direction": "sideways"}),
    )
    .await;
    assert_eq!(e["error"], "invalid_arguments");
    let e = call_err(
        &client,
        "get_class_hierarchy",
        json!({"name": "Shape", "depth": 99}),
    )
    .await;
    assert_eq!(e["error"], "limit_exceeded");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn include_graph_edges_cycles_and_includers() {
    let (_s, client) = project(Some("[\"include\", \"extra\"]")).await;
    let v = call_ok(&client, "get_include_graph", json!({})).await;
    // Hand-checked: every quoted include and project import, resolved.
    assert_eq!(
        edges(&v, "from", "to"),
        pairs(&[
            ("include/shapes/Polygon.hpp", "include/shapes/Shape.hpp"),
            ("include/shapes/Registry.hpp", "include/shapes/Shape.hpp"),
            ("include/shapes/Shape.hpp", "include/shapes/Registry.hpp"),
            ("py/app.py", "py/pkg/base.py"),
            ("py/app.py", "py/pkg/formats.py"),
            ("py/pkg/__init__.py", "py/pkg/base.py"),
            ("py/pkg/formats.py", "py/pkg/__init__.py"),
            ("py/pkg/formats.py", "py/pkg/base.py"),
            ("py/pkg/formats.py", "py/pkg/base.py"),
            ("src/Polygon.cpp", "include/shapes/Polygon.hpp"),
            ("src/Registry.cpp", "include/shapes/Registry.hpp"),
            ("src/Shape.cpp", "include/shapes/Shape.hpp"),
            ("src/main.cpp", "extra/config.hpp"),
            ("src/main.cpp", "include/shapes/Polygon.hpp"),
            ("src/main.cpp", "include/shapes/Registry.hpp"),
        ])
    );
    assert_eq!(
        v["data"]["cycles"],
        json!([["include/shapes/Registry.hpp", "include/shapes/Shape.hpp"]])
    );
    // Who includes Shape.hpp, directly (depth 1).
    let v = call_ok(
        &client,
        "get_include_graph",
        json!({"filepath": "include/shapes/Shape.hpp", "depth": 1}),
    )
    .await;
    let mut by: Vec<&str> = v["data"]["included_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["from"].as_str().unwrap())
        .collect();
    by.sort();
    assert_eq!(
        by,
        [
            "include/shapes/Polygon.hpp",
            "include/shapes/Registry.hpp",
            "src/Shape.cpp"
        ]
    );
    assert_eq!(
        edges(&v, "from", "to"),
        pairs(&[("include/shapes/Shape.hpp", "include/shapes/Registry.hpp")])
    );
    assert_eq!(v["data"]["cycles"].as_array().unwrap().len(), 1);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_graph_by_name() {
    let (_s, client) = project(None).await;
    // Hand-checked call sites of `area`: Square::area() in
    // LabelledSquare::area, shape.area() in describe, s->area() in
    // Registry::totalArea.
    let v = call_ok(
        &client,
        "get_call_graph",
        json!({"name": "area", "depth": 1}),
    )
    .await;
    assert_eq!(v["data"]["syntactic"], true);
    assert_eq!(
        edges(&v, "caller", "filepath"),
        pairs(&[
            ("geo::LabelledSquare::area", "src/Polygon.cpp"),
            ("geo::describe", "src/Polygon.cpp"),
            ("geo::Registry::totalArea", "src/Registry.cpp"),
        ])
    );
    // One step further: main calls describe and totalArea.
    let v = call_ok(
        &client,
        "get_call_graph",
        json!({"name": "area", "depth": 2}),
    )
    .await;
    assert!(
        v["data"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["caller"] == "main" && e["depth"] == 2)
    );
    // What main calls, in order: Square::unit, add twice, describe, totalArea.
    let v = call_ok(
        &client,
        "get_call_graph",
        json!({"name": "main", "direction": "callees", "depth": 1}),
    )
    .await;
    let callees: Vec<(&str, u64)> = v["data"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["callee"].as_str().unwrap(), e["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        callees,
        [
            ("unit", 12),
            ("add", 13),
            ("add", 14),
            ("describe", 15),
            ("totalArea", 15)
        ]
    );
    // Python: read is called by JsonReader.read (super().read()),
    // StrictJsonReader.read (JsonReader.read(self)), run and legacy.
    let v = call_ok(
        &client,
        "get_call_graph",
        json!({"name": "read", "depth": 1}),
    )
    .await;
    assert_eq!(
        edges(&v, "caller", "filepath"),
        pairs(&[
            ("JsonReader.read", "py/pkg/formats.py"),
            ("StrictJsonReader.read", "py/pkg/formats.py"),
            ("legacy", "py/app.py"),
            ("run", "py/app.py"),
        ])
    );
    let e = call_err(
        &client,
        "get_call_graph",
        json!({"name": "area", "direction": "up"}),
    )
    .await;
    assert_eq!(e["error"], "invalid_arguments");
    let e = call_err(
        &client,
        "get_call_graph",
        json!({"name": "no_such_function", "direction": "callees"}),
    )
    .await;
    assert_eq!(e["error"], "symbol_not_found");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_file_replaces_its_references() {
    let (s, client) = project(None).await;
    let count = |v: &Value| v["data"]["total"].as_u64().unwrap();
    let v = call_ok(&client, "find_references", json!({"name": "fresh_name"})).await;
    assert_eq!(count(&v), 0);
    s.write(
        "py/extra_mod.py",
        b"def fresh_name():\n    return 1\n\n\nfresh_name()\n",
    );
    let start = Instant::now();
    while count(&call_ok(&client, "find_references", json!({"name": "fresh_name"})).await) != 2 {
        assert!(start.elapsed() < Duration::from_secs(5), "not indexed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.write("py/extra_mod.py", b"def other_name():\n    return 1\n");
    let start = Instant::now();
    loop {
        let old = count(&call_ok(&client, "find_references", json!({"name": "fresh_name"})).await);
        let new = count(&call_ok(&client, "find_references", json!({"name": "other_name"})).await);
        if old == 0 && new == 1 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "old {old} new {new}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (v, _) = call(&client, "find_references", json!({"name": "other_name"})).await;
    assert_eq!(v["data"]["references"][0]["role"], "definition");
    assert_eq!(v["data"]["references"][0]["line_text"], "def other_name():");
    client.cancel().await.unwrap();
}
