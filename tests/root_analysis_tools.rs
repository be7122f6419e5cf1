//! apply_selection, compute_histogram and compute_histogram_2d through MCP, on
//! the test data root, against what uproot + awkward + numpy compute
//! (tests/fixtures/root/selections.json, from scripts/fixtures/root_selections.py).

use crate::common;

use std::path::Path;

use common::remote::{Over, moto_server};
use common::{Form, Sandbox, call_err as err, call_ok as ok, wait_indexed};
use serde_json::{Value, json};

fn fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/selections.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The fixture's files that are in the test data root, as tool paths; for
/// the RNTuple form, those with an RNTuple copy.
fn served_files(doc: &Value, form: Form) -> Vec<(String, &Value)> {
    doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| form.source(f["file"].as_str().unwrap()).is_some())
        .filter_map(|f| {
            let rel = f["file"].as_str().unwrap().strip_prefix("testdata/")?;
            Some((rel.to_string(), f))
        })
        .collect()
}

fn assert_close(got: &Value, want: &Value, what: &str) {
    let (g, w) = (got.as_array().unwrap(), want.as_array().unwrap());
    assert_eq!(g.len(), w.len(), "{what}");
    for (a, b) in g.iter().zip(w) {
        let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
        assert!(
            (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
            "{what}: {a} != {b}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysis_tools_agree_with_uproot() {
    analysis_tools_agree_with_uproot_in(Form::TTree, Over::Local).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysis_tools_agree_with_uproot_on_rntuple() {
    analysis_tools_agree_with_uproot_in(Form::RNTuple, Over::Local).await;
}

/// The same files served by nginx, indexed and read over HTTP by ranges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysis_tools_agree_with_uproot_over_http() {
    analysis_tools_agree_with_uproot_in(Form::TTree, Over::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysis_tools_agree_with_uproot_on_rntuple_over_http() {
    analysis_tools_agree_with_uproot_in(Form::RNTuple, Over::Http).await;
}

/// The same files as objects of an S3 bucket (moto on loopback).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysis_tools_agree_with_uproot_over_s3() {
    if moto_server().is_none() {
        return;
    }
    analysis_tools_agree_with_uproot_in(Form::TTree, Over::S3).await;
    analysis_tools_agree_with_uproot_in(Form::RNTuple, Over::S3).await;
}

/// The same files exported by xrootd, read with quarry's XRootD client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysis_tools_agree_with_uproot_over_xrootd() {
    analysis_tools_agree_with_uproot_in(Form::TTree, Over::Xrootd).await;
    analysis_tools_agree_with_uproot_in(Form::RNTuple, Over::Xrootd).await;
}

/// The same xrootd over its HTTP plugin (XrdHttp), listed from its HTML pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysis_tools_agree_with_uproot_over_xrootd_http() {
    analysis_tools_agree_with_uproot_in(Form::TTree, Over::XrootdHttp).await;
    analysis_tools_agree_with_uproot_in(Form::RNTuple, Over::XrootdHttp).await;
}

async fn analysis_tools_agree_with_uproot_in(form: Form, over: Over) {
    let mut s = Sandbox::with_testdata_as(form);
    let _server = s.serve_over(over);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let doc = fixture();
    let files = served_files(&doc, form);
    // The RNTuple form has copies of uproot-HZZ.root and uproot-Zmumu.root.
    let least = if form == Form::TTree { 5 } else { 2 };
    assert!(files.len() >= least);
    for (path, f) in &files {
        let tree = f["tree"].as_str().unwrap();
        for c in f["cuts"].as_array().unwrap() {
            let cut = c["cut"].as_str().unwrap();
            let v = ok(
                &client,
                "apply_selection",
                json!({"path": path, "tree": tree, "selection": cut}),
            )
            .await;
            let d = &v["data"];
            assert_eq!(d["entries_selected"], c["selected"], "{path}: {cut}");
            assert_eq!(d["entries_total"], f["entries"], "{path}: {cut}");
            assert_eq!(d["selection"], cut);
        }
        for e in f["errors"].as_array().unwrap() {
            let cut = e["cut"].as_str().unwrap();
            let v = err(
                &client,
                "apply_selection",
                json!({"path": path, "tree": tree, "selection": cut}),
            )
            .await;
            assert_eq!(v["error"], e["error"], "{path}: {cut}: {v}");
            assert!(
                v["suggestion"].as_str().unwrap().contains("list_branches"),
                "{v}"
            );
        }
        for h in f["histograms"].as_array().unwrap() {
            let mut args = json!({"path": path, "tree": tree, "branch": h["value"], "bins": h["bins"], "range": h["range"]});
            for k in ["selection", "weights", "flatten"] {
                let from = if k == "selection" { "cut" } else { k };
                if let Some(x) = h.get(from) {
                    args[k] = x.clone();
                }
            }
            let v = ok(&client, "compute_histogram", args).await;
            let d = &v["data"];
            let what = format!("{path}: {h}");
            for k in ["bin_edges", "bin_counts", "bin_errors"] {
                assert_close(&d[k], &h[k], &what);
            }
            for k in ["underflow", "overflow", "mean", "std"] {
                assert_close(&json!([d[k]]), &json!([h[k]]), &what);
            }
            assert_eq!(d["entries"], h["entries"], "{what}");
            if h.get("weights").is_some() {
                assert_close(
                    &json!([d["sum_weights"]]),
                    &json!([h["sum_weights"]]),
                    &what,
                );
            }
        }
        for st in f["stats"].as_array().unwrap() {
            let mut args = json!({"path": path, "tree": tree, "branches": [st["branch"]], "quantiles": st["quantiles"]});
            if let Some(c) = st.get("cut") {
                args["selection"] = c.clone();
            }
            let v = ok(&client, "get_branch_stats", args).await;
            let got = &v["data"]["statistics"][st["branch"].as_str().unwrap()];
            let what = format!("{path}: {st}");
            assert_eq!(got["count"], st["count"], "{what}");
            for k in ["mean", "std", "min", "max"] {
                assert_close(&json!([got[k]]), &json!([st[k]]), &what);
            }
            let qs: Vec<Value> = st["quantiles"]
                .as_array()
                .unwrap()
                .iter()
                .map(|q| got["quantiles"][q.as_f64().unwrap().to_string()].clone())
                .collect();
            assert_close(&json!(qs), &st["quantile_values"], &what);
        }
        for h in f["histograms_2d"].as_array().unwrap() {
            let mut args = json!({"path": path, "tree": tree, "x_branch": h["x"], "y_branch": h["y"],
                "x_bins": h["bins"][0], "y_bins": h["bins"][1], "x_range": h["x_range"], "y_range": h["y_range"]});
            if let Some(c) = h.get("cut") {
                args["selection"] = c.clone();
            }
            let v = ok(&client, "compute_histogram_2d", args).await;
            let d = &v["data"];
            assert_eq!(d["entries"], h["entries"]);
            assert_close(&d["x_edges"], &h["x_edges"], "x edges");
            for (row, want) in d["counts"]
                .as_array()
                .unwrap()
                .iter()
                .zip(h["counts"].as_array().unwrap())
            {
                assert_close(row, want, &format!("{path}: {h}"));
            }
        }
    }
    if let Some(server) = &_server {
        server.assert_read_by_ranges();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histogram_ranges_limits_and_errors() {
    histogram_ranges_limits_and_errors_in(Form::TTree).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histogram_ranges_limits_and_errors_on_rntuple() {
    histogram_ranges_limits_and_errors_in(Form::RNTuple).await;
}

async fn histogram_ranges_limits_and_errors_in(form: Form) {
    let s = Sandbox::with_testdata_as(form);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let hzz = json!({"path": "root/uproot-HZZ.root", "tree": "events"});
    let with = |extra: Value| {
        let mut a = hzz.clone();
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    // Without a range, every value falls inside: none under or over.
    let v = ok(
        &client,
        "compute_histogram",
        with(json!({"branch": "Muon_Px", "bins": 7})),
    )
    .await;
    let d = &v["data"];
    assert_eq!(
        (d["underflow"].as_f64(), d["overflow"].as_f64()),
        (Some(0.0), Some(0.0))
    );
    let total: f64 = d["bin_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert_eq!(total, d["entries"].as_f64().unwrap());
    assert!(total > 3000.0);
    // flatten=false without a range: the multiplicities 0..=max.
    let v = ok(
        &client,
        "compute_histogram",
        with(json!({"branch": "Muon_Px", "bins": 5, "flatten": false})),
    )
    .await;
    assert_eq!(v["data"]["entries"], 2421);
    assert_eq!(v["data"]["overflow"].as_f64(), Some(0.0));

    // bins above the maximum: limit_exceeded, with the value to retry with.
    let e = err(
        &client,
        "compute_histogram",
        with(json!({"branch": "Muon_Px", "bins": 20_000})),
    )
    .await;
    assert_eq!(e["error"], "limit_exceeded");
    assert_eq!(e["retry_with"], json!({"bins": 10_000}));
    let e = err(
        &client,
        "compute_histogram_2d",
        with(json!({"x_branch": "MET_px", "y_branch": "MET_py", "x_bins": 10, "y_bins": 1001})),
    )
    .await;
    assert_eq!(e["error"], "limit_exceeded");
    assert_eq!(e["retry_with"], json!({"y_bins": 1000}));
    let e = err(
        &client,
        "compute_histogram",
        with(json!({"branch": "Muon_Px", "bins": 10, "range": [5, 5]})),
    )
    .await;
    assert_eq!(e["error"], "invalid_arguments");

    // A syntax error says where and what was expected.
    let e = err(
        &client,
        "apply_selection",
        with(json!({"selection": "NMuon >= "})),
    )
    .await;
    assert_eq!(e["error"], "invalid_selection");
    assert_eq!(e["details"]["column"], 10);
    assert!(
        e["details"]["expected"]
            .as_str()
            .unwrap()
            .contains("a number"),
        "{e}"
    );
    // Unknown names: branch_not_found with the closest names.
    let e = err(
        &client,
        "compute_histogram",
        with(json!({"branch": "muon_px", "bins": 10})),
    )
    .await;
    assert_eq!(e["error"], "branch_not_found");
    assert_eq!(e["details"]["closest"][0], "Muon_Px");
    let e = err(
        &client,
        "compute_histogram",
        with(json!({"branch": "Muon_Px", "bins": 10, "weights": "Weight"})),
    )
    .await;
    assert_eq!(e["error"], "branch_not_found");
    // Two collections of different lengths: invalid_selection naming both.
    let e = err(
        &client,
        "compute_histogram",
        with(json!({"branch": "Muon_Px", "bins": 10, "selection": "Jet_Px > 0"})),
    )
    .await;
    assert_eq!(e["error"], "invalid_selection");
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("Muon_Px") && m.contains("Jet_Px") && m.contains("Sum$"),
        "{m}"
    );
    // A string branch in a cut: unsupported_type.
    let e = err(
        &client,
        "apply_selection",
        json!({"path": "root/uproot-small-evnt-tree-fullsplit.root",
        "tree": "tree", "selection": "Str > 1"}),
    )
    .await;
    assert_eq!(e["error"], "unsupported_type");
    let e = err(
        &client,
        "apply_selection",
        json!({"path": "root/uproot-HZZ.root", "tree": "nope", "selection": "1"}),
    )
    .await;
    assert_eq!(e["error"], "tree_not_found");
}

/// Every page of a paginated read, concatenated, equals what uproot reads at
/// the entries passing the cut (flattened too); strings, vectors, fixed arrays
/// and uint64 come out as uproot gives them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_branches_pages_through_the_selection() {
    read_branches_pages_through_the_selection_in(Form::TTree).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_branches_pages_through_the_selection_on_rntuple() {
    read_branches_pages_through_the_selection_in(Form::RNTuple).await;
}

async fn read_branches_pages_through_the_selection_in(form: Form) {
    let s = Sandbox::with_testdata_as(form);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let doc = fixture();
    let mut checked = 0;
    for (path, f) in &served_files(&doc, form) {
        for r in f["reads"].as_array().unwrap() {
            let want_entries = r["entries"].as_array().unwrap().len() as u64;
            let page = r["page"].as_u64().unwrap();
            let flatten = r["flatten"].as_bool().unwrap();
            let mut got: Vec<Value> = Vec::new();
            let mut offset = 0;
            while offset < want_entries {
                let mut args = json!({"path": path, "tree": f["tree"], "branches": r["branches"],
                    "offset": offset, "limit": page.min(want_entries - offset), "flatten": flatten});
                if !r["selection"].is_null() {
                    args["selection"] = r["selection"].clone();
                }
                let v = ok(&client, "read_branches", args).await;
                let m = &v["metadata"];
                assert_eq!(
                    m["entries_returned"].as_u64(),
                    Some(page.min(want_entries - offset)),
                    "{v}"
                );
                if !flatten && !r["selection"].is_null() {
                    assert_eq!(m["entries_selected"].as_u64(), Some(want_entries));
                    assert_eq!(
                        m["truncated"].as_bool(),
                        Some(offset + page < want_entries),
                        "{m}"
                    );
                }
                got.extend(v["data"]["records"].as_array().unwrap().iter().cloned());
                offset += page;
            }
            assert_eq!(Value::Array(got), r["records"], "{path}: {r}");
            checked += 1;
        }
    }
    assert!(checked >= if form == Form::TTree { 9 } else { 2 });

    // The other output formats carry the same values.
    let hzz = json!({"path": "root/uproot-HZZ.root", "tree": "events", "branches": ["NMuon", "Muon_Px"], "limit": 3});
    let records = ok(&client, "read_branches", hzz.clone()).await["data"]["records"].clone();
    let mut args = hzz.clone();
    args["output_format"] = json!("json");
    let columns = ok(&client, "read_branches", args).await["data"]["columns"].clone();
    for (i, r) in records.as_array().unwrap().iter().enumerate() {
        assert_eq!(columns["NMuon"][i], r["NMuon"]);
        assert_eq!(columns["Muon_Px"][i], r["Muon_Px"]);
    }
    let mut args = hzz.clone();
    args["output_format"] = json!("csv");
    let csv = ok(&client, "read_branches", args).await["data"]["csv"]
        .as_str()
        .unwrap()
        .to_string();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "NMuon,Muon_Px");
    assert_eq!(lines.len(), 4);
    assert_eq!(
        lines[1],
        format!("{},\"{}\"", records[0]["NMuon"], records[0]["Muon_Px"])
    );

    // A page beyond the selection is empty, not an error.
    let v = ok(
        &client,
        "read_branches",
        json!({"path": "root/uproot-HZZ.root", "tree": "events",
        "branches": ["NMuon"], "selection": "NMuon > 3", "offset": 1000}),
    )
    .await;
    assert_eq!(v["data"]["entries"], 0);
    assert_eq!(v["metadata"]["truncated"], false);
    let e = err(
        &client,
        "read_branches",
        json!({"path": "root/uproot-HZZ.root", "tree": "events",
        "branches": ["NMuon"], "limit": 2_000_000}),
    )
    .await;
    assert_eq!(
        (e["error"].as_str(), &e["retry_with"]),
        (Some("limit_exceeded"), &json!({"limit": 1_000_000}))
    );
    let e = err(
        &client,
        "read_branches",
        json!({"path": "root/uproot-HZZ.root", "tree": "events",
        "branches": ["Muon_Px", "Jet_Px"], "flatten": true, "limit": 50}),
    )
    .await;
    assert_eq!(e["error"], "invalid_arguments");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn samples_are_reproducible_and_answers_capped() {
    samples_are_reproducible_and_answers_capped_in(Form::TTree).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn samples_are_reproducible_and_answers_capped_on_rntuple() {
    samples_are_reproducible_and_answers_capped_in(Form::RNTuple).await;
}

async fn samples_are_reproducible_and_answers_capped_in(form: Form) {
    let s = Sandbox::with_testdata_as(form);
    std::fs::write(
        s.tmp.path().join("quarry.toml"),
        "[limits]\nmax_result_bytes = 4000\n",
    )
    .unwrap();
    let config = s.tmp.path().join("quarry.toml");
    let client = s
        .mcp_with_args(&["--config", config.to_str().unwrap()])
        .await;
    wait_indexed(&client).await;
    let hzz = json!({"path": "root/uproot-HZZ.root", "tree": "events"});
    let with = |extra: Value| {
        let mut a = hzz.clone();
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    let random = |seed: u64| {
        with(json!({"method": "random", "seed": seed, "size": 5, "branches": ["NMuon", "MET_px"]}))
    };
    let a = ok(&client, "sample_tree", random(42)).await;
    let b = ok(&client, "sample_tree", random(42)).await;
    let c = ok(&client, "sample_tree", random(43)).await;
    assert_eq!(a["data"]["records"], b["data"]["records"]);
    assert_ne!(a["data"]["records"], c["data"]["records"]);
    assert_eq!(a["data"]["entries"], 5);
    // The first entries equal read_branches' first page.
    let first = ok(
        &client,
        "sample_tree",
        with(json!({"size": 4, "branches": ["NMuon", "MET_px"]})),
    )
    .await;
    let read = ok(
        &client,
        "read_branches",
        with(json!({"limit": 4, "branches": ["NMuon", "MET_px"]})),
    )
    .await;
    assert_eq!(first["data"]["records"], read["data"]["records"]);
    // Every branch by default.
    let all = ok(&client, "sample_tree", with(json!({"size": 1}))).await;
    assert_eq!(all["data"]["branches"].as_array().unwrap().len(), 51);
    let e = err(&client, "sample_tree", with(json!({"size": 10_001}))).await;
    assert_eq!(e["error"], "limit_exceeded");

    // Over the cap: cut at an entry boundary, truncated, and told how to go on.
    let v = ok(
        &client,
        "read_branches",
        with(json!({"branches": ["Muon_Px", "Muon_Py"], "limit": 500})),
    )
    .await;
    let returned = v["metadata"]["entries_returned"].as_u64().unwrap();
    assert!(returned > 0 && returned < 500, "{returned}");
    assert_eq!(v["metadata"]["truncated"], true);
    assert!(serde_json::to_string(&v["data"]).unwrap().len() < 4000 + 200);
    let hint = v["suggestions"][0].as_str().unwrap();
    assert!(
        hint.contains(&format!("offset={returned}")) && hint.contains("get_branch_stats"),
        "{hint}"
    );
}
