//! The command line for people: `quarry tools`, `quarry call` (in-process and
//! through a running daemon, readable and `--json`), exit statuses, completions.
//! Expected values come from the files themselves and from uproot's fixtures.

use crate::common;

use std::process::Output;

use common::*;
use serde_json::Value;

fn call(sandbox: &Sandbox, args: &[&str]) -> Output {
    quarry()
        .arg("call")
        .args(args)
        .args(["--root", &sandbox.root_arg(), "--catalog"])
        .arg(&sandbox.catalog)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The ROOT files under the sandbox's root, found by walking it here.
fn root_files(sandbox: &Sandbox) -> usize {
    fn walk(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| {
                let p = e.path();
                if p.is_dir() {
                    walk(&p)
                } else {
                    usize::from(p.extension().is_some_and(|x| x == "root"))
                }
            })
            .sum()
    }
    walk(&sandbox.root)
}

#[test]
fn tools_lists_every_tool_with_its_access() {
    let table = run_ok(quarry().arg("tools"));
    let names: Vec<&str> = quarry::mcp::tools::all().map(|d| d.name).collect();
    assert_eq!(table.lines().count(), names.len() + 1, "{table}");
    for name in &names {
        assert!(
            table.lines().any(|l| l.starts_with(name)),
            "{name}: {table}"
        );
    }
    let json: Value = serde_json::from_str(&run_ok(quarry().args(["tools", "--json"]))).unwrap();
    assert_eq!(json.as_array().unwrap().len(), names.len());
    // A config that switches the document tools off hides them.
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("q.toml");
    std::fs::write(&config, "[toolsets]\ndocs = false\n").unwrap();
    let table = run_ok(quarry().args(["tools", "--config"]).arg(&config));
    assert!(!table.contains("search_documents"), "{table}");
    assert!(table.contains("list_files"), "{table}");
}

#[test]
fn call_in_process_prints_tables_and_json() {
    let sandbox = Sandbox::with_testdata();
    let wanted = root_files(&sandbox);
    let out = stdout(&call(&sandbox, &["list_files", "kind=root", "--json"]));
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["data"]["files"].as_array().unwrap().len(), wanted);

    let out = stdout(&call(&sandbox, &["list_files", "kind=root", "limit=1000"]));
    // A path longer than a cell (the RNTuple files' long names) ends in '…'.
    let rows = out
        .lines()
        .filter(|l| l.starts_with("  /") && (l.contains(".root ") || l.contains('…')))
        .count();
    assert_eq!(rows, wanted, "{out}");
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("path")),
        "{out}"
    );
}

#[test]
fn a_histogram_prints_as_bars_with_uprootss_counts() {
    let sandbox = Sandbox::with_testdata();
    let out = stdout(&call(
        &sandbox,
        &[
            "read_histogram",
            "path=root/uproot-histograms.root",
            "name=one",
        ],
    ));
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/root/uproot-histograms.root.hists.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let values = fixture["histograms"][0]["values"].as_array().unwrap();
    let bins: Vec<f64> = values[1..values.len() - 1]
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let bars: Vec<&str> = out.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(bars.len(), bins.len(), "{out}");
    for (bar, want) in bars.iter().zip(&bins) {
        let count: f64 = bar.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert_eq!(count, *want, "{bar}");
    }
}

#[test]
fn call_goes_through_a_running_daemon() {
    let sandbox = Sandbox::with_testdata();
    let _daemon = sandbox.serve();
    wait_until(std::time::Duration::from_secs(30), || {
        let out = quarry()
            .args(["call", "index_status", "--json", "--socket"])
            .arg(sandbox.socket())
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout)
            .is_ok_and(|v| v["data"]["complete"] == Value::Bool(true))
    });
    // The daemon holds the catalog: only its socket can answer. No roots needed.
    let out = quarry()
        .args(["call", "list_files", "kind=root", "--json", "--catalog"])
        .arg(&sandbox.catalog)
        .output()
        .unwrap();
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        json["data"]["files"].as_array().unwrap().len(),
        root_files(&sandbox)
    );
    let out = quarry()
        .args(["call", "search_documents", "query=calibration"])
        .args(["--args", r#"{"scope": {"type": "global"}}"#, "--socket"])
        .arg(sandbox.socket())
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with("docs/detector_calibration.pdf:")),
        "{text}"
    );
}

#[test]
fn errors_exit_one_and_usage_mistakes_exit_two() {
    let sandbox = Sandbox::with_testdata();
    let out = call(&sandbox, &["inspect_file", "path=missing.root"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("file_not_found"), "{stderr}");
    assert!(stderr.contains("suggestion: Use list_files()"), "{stderr}");
    // A limit error says what to retry with.
    let out = call(
        &sandbox,
        &[
            "compute_histogram",
            "path=root/uproot-HZZ.root",
            "tree=events",
            "branch=MET_px",
            "bins=20000",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("limit_exceeded"), "{stderr}");
    assert!(stderr.contains(r#"retry with: {"bins":10000}"#), "{stderr}");

    for bad in [
        &["no_such_tool"][..],
        &["list_files", "limit"][..],
        &["list_files", "--args", "[1]"][..],
    ] {
        let out = call(&sandbox, bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
    // Nothing serves the catalog and no roots are given: a clear error.
    let out = quarry()
        .args(["call", "list_files", "--catalog"])
        .arg(sandbox.tmp.path().join("none"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("quarry serve"));
    // `quarry call --help` lists the tools.
    let help = run_ok(quarry().args(["call", "--help"]));
    assert!(
        help.contains("read_histogram") && help.contains("search_documents"),
        "{help}"
    );
}

/// A reader that has gone away (`quarry tools --json | grep -q call`) ends
/// the output quietly: exit status 0 and no panic, for each command that
/// prints. The pipe's reader is closed before quarry starts, so its first
/// write fails.
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let sandbox = Sandbox::with_testdata();
    let catalog = sandbox.catalog.to_string_lossy().into_owned();
    let root = sandbox.root_arg();
    let commands: [&[&str]; 4] = [
        &["tools", "--json"],
        &["tools"],
        &["completions", "bash"],
        &["call", "list_files", "--root", &root, "--catalog", &catalog],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = quarry().args(args).stdout(writer).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn completions_are_printed_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let script = run_ok(quarry().args(["completions", shell]));
        assert!(
            script.contains("quarry") && script.contains("call"),
            "{shell}"
        );
    }
}
