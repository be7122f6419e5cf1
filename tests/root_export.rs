//! export_branches through MCP: every format read back and compared with what
//! uproot reads for the same entries (tests/fixtures/root/exports.json, from
//! scripts/fixtures/root_exports.py), the Parquet files also read by pyarrow and
//! pandas when python3 has them; writes outside the export folder refused.

use crate::common;

use std::path::{Path, PathBuf};

use arrow_array::{Array, ArrayRef, BooleanArray, Float32Array, Int32Array, ListArray};
use common::{Client, Form, Sandbox, assert_valid, call, parquet_batches, wait_indexed};
use serde_json::{Value, json};

fn fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/exports.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Values equal as the file stores them: floats compared in single precision.
fn same(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Number(a), Value::Number(b)) if a.is_f64() || b.is_f64() => {
            a.as_f64().unwrap() as f32 == b.as_f64().unwrap() as f32
        }
        _ => got == want,
    }
}

fn compare(what: &str, got: &[Value], want: &Value) {
    let want = want.as_array().unwrap();
    assert_eq!(got.len(), want.len(), "{what}: number of entries");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(same(g, w), "{what}: entry {i}: {g} != {w}");
    }
}

fn arrow_value(a: &ArrayRef, i: usize) -> Value {
    if let Some(l) = a.as_any().downcast_ref::<ListArray>() {
        let inner = l.value(i);
        return Value::Array((0..inner.len()).map(|j| arrow_value(&inner, j)).collect());
    }
    if let Some(v) = a.as_any().downcast_ref::<Int32Array>() {
        return json!(v.value(i));
    }
    if let Some(v) = a.as_any().downcast_ref::<Float32Array>() {
        return json!(f64::from(v.value(i)));
    }
    if let Some(v) = a.as_any().downcast_ref::<BooleanArray>() {
        return json!(v.value(i));
    }
    panic!("unexpected Arrow type {:?}", a.data_type());
}

fn read_parquet(path: &Path, branch: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for batch in parquet_batches(path) {
        let col = batch.column_by_name(branch).unwrap();
        out.extend((0..batch.num_rows()).map(|i| arrow_value(col, i)));
    }
    out
}

/// CSV fields of one line (quotes doubled inside quoted fields).
fn csv_fields(line: &str) -> Vec<String> {
    let (mut fields, mut cur, mut quoted, mut chars) =
        (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    fields.push(cur);
    fields
}

async fn export(client: &Client, args: Value) -> (Value, bool) {
    let (v, is_error) = call(client, "export_branches", args).await;
    if !is_error {
        assert_valid("export_branches.output.json", &v);
    }
    (v, is_error)
}

fn python_has_pyarrow() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import pyarrow, pandas, uproot, awkward"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_read_back_as_uproot_reads_the_tree() {
    exports_read_back_in(Form::TTree).await;
}

/// The cases on files with an RNTuple copy, read from the copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_read_back_as_uproot_reads_the_tree_on_rntuple() {
    exports_read_back_in(Form::RNTuple).await;
}

async fn exports_read_back_in(form: Form) {
    let s = Sandbox::with_testdata_as(form);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let doc = fixture();
    let pyarrow = python_has_pyarrow();
    if !pyarrow {
        eprintln!("python3 lacks pyarrow/pandas/uproot: the pyarrow read-back is skipped");
    }
    let cases = doc["cases"].as_array().unwrap();
    let cases: Vec<&Value> = cases
        .iter()
        .filter(|c| form.source(c["file"].as_str().unwrap()).is_some())
        .collect();
    assert!(!cases.is_empty());
    for c in cases {
        let case = c["case"].as_str().unwrap();
        let path = c["file"]
            .as_str()
            .unwrap()
            .strip_prefix("testdata/")
            .unwrap();
        for format in ["parquet", "csv", "json"] {
            let mut args = json!({
                "path": path, "tree": "events", "branches": c["branches"],
                "output_format": format, "output_path": format!("{case}/out.{format}"),
            });
            if !c["selection"].is_null() {
                args["selection"] = c["selection"].clone();
            }
            if !c["limit"].is_null() {
                args["limit"] = c["limit"].clone();
            }
            let (v, is_error) = export(&client, args).await;
            assert!(!is_error, "{case} {format}: {v}");
            let d = &v["data"];
            assert_eq!(d["entries_written"], c["entries"], "{case} {format}");
            assert_eq!(d["format"], format);
            let written = PathBuf::from(d["output_path"].as_str().unwrap());
            let exports = s.catalog.join("exports").canonicalize().unwrap();
            assert!(written.starts_with(&exports), "{}", written.display());
            let bytes = std::fs::read(&written).unwrap();
            assert_eq!(d["size_bytes"], bytes.len() as u64);
            let branches: Vec<&str> = c["branches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_str().unwrap())
                .collect();
            for (k, b) in branches.iter().enumerate() {
                let want = &c["values"][*b];
                let got: Vec<Value> = match format {
                    "parquet" => read_parquet(&written, b),
                    "json" => {
                        let records: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
                        records.iter().map(|r| r[*b].clone()).collect()
                    }
                    _ => {
                        let text = String::from_utf8(bytes.clone()).unwrap();
                        let mut lines = text.lines();
                        assert_eq!(csv_fields(lines.next().unwrap()), branches);
                        lines
                            .map(|l| serde_json::from_str(&csv_fields(l)[k]).unwrap())
                            .collect()
                    }
                };
                compare(&format!("{case} {format} {b}"), &got, want);
            }
            if format == "parquet" && pyarrow {
                let script =
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fixtures/root_exports.py");
                let out = std::process::Command::new("python3")
                    .arg(&script)
                    .args(["--check", case])
                    .arg(&written)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "pyarrow/pandas read-back of {case}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    // No temporary file is left behind.
    let mut stack = vec![s.catalog.join("exports")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(!name.ends_with(".tmp"), "left behind: {name}");
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_outside_the_export_folder_are_refused() {
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let outside = tempfile::tempdir().unwrap();
    let exports = s.catalog.join("exports");
    std::fs::create_dir_all(&exports).unwrap();
    std::os::unix::fs::symlink(outside.path(), exports.join("leak")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("x.csv"), exports.join("x.csv")).unwrap();
    let attempts = [
        "../escape.csv".to_string(),
        "a/../../escape.csv".to_string(),
        outside.path().join("abs.csv").display().to_string(),
        "leak/through-link.csv".to_string(),
        "x.csv".to_string(),
        "/etc/quarry-export.csv".to_string(),
    ];
    for p in &attempts {
        let (v, is_error) = export(
            &client,
            json!({"path": "root/uproot-HZZ.root", "tree": "events", "branches": ["NMuon"],
                   "output_format": "csv", "output_path": p}),
        )
        .await;
        assert!(is_error, "{p}: {v}");
        assert_eq!(v["error"], "permission_denied", "{p}: {v}");
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(!s.catalog.join("escape.csv").exists());
    // An absolute path inside the export folder is accepted.
    let inside = exports.canonicalize().unwrap().join("inside.csv");
    let (v, is_error) = export(
        &client,
        json!({"path": "root/uproot-HZZ.root", "tree": "events", "branches": ["NMuon"],
               "output_format": "csv", "output_path": inside.display().to_string(), "limit": 5}),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["data"]["entries_written"], 5);
    assert_eq!(std::fs::read_to_string(&inside).unwrap().lines().count(), 6);
    // Bad arguments name the spec's codes.
    let bad = [
        (json!({"limit": 10_000_001}), "limit_exceeded"),
        (json!({"branches": ["NoSuchBranch"]}), "branch_not_found"),
        (json!({"selection": "NMuon >"}), "invalid_selection"),
        (json!({"output_format": "xlsx"}), "invalid_arguments"),
    ];
    for (extra, code) in bad {
        let mut args = json!({"path": "root/uproot-HZZ.root", "tree": "events", "branches": ["NMuon"],
                              "output_format": "csv", "output_path": "bad.csv"});
        for (k, val) in extra.as_object().unwrap() {
            args[k] = val.clone();
        }
        let (v, is_error) = export(&client, args).await;
        assert!(is_error, "{extra}: {v}");
        assert_eq!(v["error"], code, "{extra}: {v}");
    }
    assert!(!exports.join("bad.csv").exists());
}
