//! Quantities that are expressions (issue #28 part 2) through MCP: histograms,
//! counts, statistics, rows and exports of expressions, defines, ROOT::VecOps'
//! functions and pairs, against uproot + awkward + vector
//! (tests/fixtures/root/quantities.json, from scripts/fixtures/root_quantities.py,
//! which computes each quantity with awkward arrays and `vector`'s four-vectors,
//! independently of quarry).

use crate::common;

use std::path::Path;

use common::{Client, Form, Sandbox, call_err as err, call_ok as ok, wait_indexed};
use quarry::analysis::dataset::Member;
use quarry::analysis::ops::count_selected;
use quarry::analysis::prune::BasketSpan;
use quarry::analysis::scan::to_f64;
use quarry::analysis::{Plan, TreeColumns};
use quarry::formats::root::{RootFile, Tree, latest};
use quarry::job::Job;
use serde_json::{Value, json};

fn fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/quantities.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A sandbox whose root holds the files the fixture names, under `root/`,
/// in `form` (a file without an RNTuple copy is left out of that form).
fn sandbox(doc: &Value, form: Form) -> Sandbox {
    let s = Sandbox::new();
    for f in doc["files"].as_array().unwrap() {
        let rel = f["file"].as_str().unwrap();
        if let Some(source) = form.source(rel) {
            s.write(&tool_path(rel), &std::fs::read(source).unwrap());
        }
    }
    s
}

/// The fixture's files present in `form`.
fn files_in(doc: &Value, form: Form) -> Vec<&Value> {
    doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| form.source(f["file"].as_str().unwrap()).is_some())
        .collect()
}

/// The path a tool is given for a fixture's file.
fn tool_path(rel: &str) -> String {
    format!(
        "root/{}",
        Path::new(rel).file_name().unwrap().to_str().unwrap()
    )
}

/// Numbers equal to 1e-9 relative (or both null), lists and objects alike.
fn assert_close(got: &Value, want: &Value, what: &str) {
    match (got, want) {
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{what}: {got} != {want}");
            for (a, b) in g.iter().zip(w) {
                assert_close(a, b, what);
            }
        }
        (Value::Object(g), Value::Object(w)) => {
            assert_eq!(
                g.keys().collect::<Vec<_>>(),
                w.keys().collect::<Vec<_>>(),
                "{what}"
            );
            for (k, b) in w {
                assert_close(&g[k], b, &format!("{what}: {k}"));
            }
        }
        (Value::Number(_), Value::Number(_)) => {
            let (a, b) = (got.as_f64().unwrap(), want.as_f64().unwrap());
            assert!(
                (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
                "{what}: {a} != {b}"
            );
        }
        _ => assert_eq!(got, want, "{what}"),
    }
}

/// Copies the optional arguments the fixture gives (as it names them) into `args`.
fn with_optional(mut args: Value, doc: &Value, names: &[(&str, &str)]) -> Value {
    for (from, to) in names {
        if let Some(x) = doc.get(*from).filter(|x| !x.is_null()) {
            args[*to] = x.clone();
        }
    }
    args
}

async fn histograms(client: &Client, path: &str, f: &Value) -> usize {
    let tree = &f["tree"];
    let mut checked = 0;
    for h in f["histograms"].as_array().unwrap() {
        let args = json!({"path": path, "tree": tree, "branch": h["value"], "bins": h["bins"], "range": h["range"]});
        let args = with_optional(
            args,
            h,
            &[
                ("cut", "selection"),
                ("weights", "weights"),
                ("define", "define"),
            ],
        );
        let v = ok(client, "compute_histogram", args).await;
        let d = &v["data"];
        let what = format!("{path}: {}", h["value"]);
        for k in ["bin_edges", "bin_counts", "bin_errors"] {
            assert_close(&d[k], &h[k], &what);
        }
        for k in ["underflow", "overflow", "mean", "std"] {
            assert_close(&d[k], &h[k], &format!("{what}: {k}"));
        }
        assert_eq!(d["entries"], h["entries"], "{what}");
        if h.get("weights").is_some() {
            assert_close(&d["sum_weights"], &h["sum_weights"], &what);
        }
        checked += 1;
    }
    for h in f["histograms_2d"].as_array().unwrap() {
        let args = json!({"path": path, "tree": tree, "x_branch": h["x"], "y_branch": h["y"],
            "x_bins": h["bins"][0], "y_bins": h["bins"][1], "x_range": h["x_range"], "y_range": h["y_range"]});
        let v = ok(client, "compute_histogram_2d", args).await;
        assert_close(&v["data"]["counts"], &h["counts"], &format!("{path}: {h}"));
        assert_eq!(v["data"]["entries"], h["entries"]);
        checked += 1;
    }
    checked
}

async fn selections(client: &Client, path: &str, f: &Value) -> usize {
    for s in f["selections"].as_array().unwrap() {
        let args = json!({"path": path, "tree": f["tree"], "selection": s["selection"]});
        let v = ok(
            client,
            "apply_selection",
            with_optional(args, s, &[("define", "define")]),
        )
        .await;
        assert_eq!(
            v["data"]["entries_selected"], s["selected"],
            "{path}: {}",
            s["selection"]
        );
    }
    f["selections"].as_array().unwrap().len()
}

async fn stats(client: &Client, path: &str, f: &Value) -> usize {
    for st in f["stats"].as_array().unwrap() {
        let (name, text) = (st["name"].as_str().unwrap(), st["text"].as_str().unwrap());
        // A name differing from the text is given as `name=text`.
        let branch = if name == text {
            text.to_string()
        } else {
            format!("{name}={text}")
        };
        let args = json!({"path": path, "tree": f["tree"], "branches": [branch], "quantiles": st["quantiles"]});
        let args = with_optional(
            args,
            st,
            &[("selection", "selection"), ("define", "define")],
        );
        let v = ok(client, "get_branch_stats", args).await;
        let got = &v["data"]["statistics"][name];
        let what = format!("{path}: {name}");
        assert_eq!(got["count"], st["count"], "{what}");
        for k in ["mean", "std", "min", "max"] {
            assert_close(&got[k], &st[k], &format!("{what}: {k}"));
        }
        let qs: Vec<Value> = st["quantiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| got["quantiles"][q.as_f64().unwrap().to_string()].clone())
            .collect();
        assert_close(&json!(qs), &st["quantile_values"], &what);
    }
    f["stats"].as_array().unwrap().len()
}

async fn reads(client: &Client, path: &str, f: &Value) -> usize {
    for r in f["reads"].as_array().unwrap() {
        let args = json!({"path": path, "tree": f["tree"], "branches": r["branches"],
            "offset": r["offset"], "limit": r["limit"]});
        let args = with_optional(args, r, &[("selection", "selection"), ("define", "define")]);
        let v = ok(client, "read_branches", args).await;
        let what = format!("{path}: {}", r["branches"]);
        assert_close(&v["data"]["records"], &r["records"], &what);
        // Columns are named by their text, or by the name given.
        let names: Vec<String> = match &r["branches"] {
            Value::Array(items) => items
                .iter()
                .map(|b| {
                    let b = b.as_str().unwrap();
                    b.split_once('=').map_or(b, |(n, _)| n).to_string()
                })
                .collect(),
            Value::Object(map) => map.keys().cloned().collect(),
            _ => unreachable!(),
        };
        assert_eq!(v["data"]["branches"], json!(names), "{what}");
    }
    f["reads"].as_array().unwrap().len()
}

async fn exports(client: &Client, path: &str, f: &Value) -> usize {
    for (k, e) in f["exports"].as_array().unwrap().iter().enumerate() {
        let args = json!({"path": path, "tree": f["tree"], "branches": e["branches"],
            "output_format": "json", "output_path": format!("quantities-{k}.json")});
        let args = with_optional(
            args,
            e,
            &[
                ("selection", "selection"),
                ("define", "define"),
                ("limit", "limit"),
            ],
        );
        let v = ok(client, "export_branches", args).await;
        let written = v["data"]["output_path"].as_str().unwrap();
        let records: Value =
            serde_json::from_str(&std::fs::read_to_string(written).unwrap()).unwrap();
        assert_close(&records, &e["records"], &format!("{path}: export {k}"));
    }
    f["exports"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expressions_agree_with_uproot_awkward_and_vector() {
    let checked = check_expressions(Form::TTree).await;
    assert!(checked >= 50, "{checked} checks");
}

/// The same expectations over the RNTuple copies of the files (all but the
/// NanoAOD sample, which has none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expressions_agree_with_uproot_awkward_and_vector_on_rntuple() {
    let checked = check_expressions(Form::RNTuple).await;
    assert!(checked >= 40, "{checked} checks");
}

async fn check_expressions(form: Form) -> usize {
    let doc = fixture();
    let s = sandbox(&doc, form);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let mut checked = 0;
    for f in files_in(&doc, form) {
        let path = tool_path(f["file"].as_str().unwrap());
        checked += histograms(&client, &path, f).await;
        checked += selections(&client, &path, f).await;
        checked += stats(&client, &path, f).await;
        checked += reads(&client, &path, f).await;
        checked += exports(&client, &path, f).await;
    }
    client.cancel().await.unwrap();
    checked
}

/// Bad expressions answer the spec's codes: an unknown name is
/// `branch_not_found` with the closest names, a type or shape error
/// `invalid_selection` pointing at list_branches, too many pairs
/// `limit_exceeded`; bad defines say what is wrong with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expression_errors_are_clear() {
    expression_errors_in(Form::TTree).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expression_errors_are_clear_on_rntuple() {
    expression_errors_in(Form::RNTuple).await;
}

async fn expression_errors_in(form: Form) {
    let doc = fixture();
    let s = sandbox(&doc, form);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let hzz = "root/uproot-HZZ.root";
    let histogram = |branch: &str, extra: Value| {
        let mut args =
            json!({"path": hzz, "tree": "events", "branch": branch, "bins": 10, "range": [0, 10]});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    };
    for (branch, missing) in [
        ("hypot(Muon_Pxx, Muon_Py)", "Muon_Pxx"),
        ("Muon_Pxx", "Muon_Pxx"),
        ("Muon-Px", "Muon-Px"),
    ] {
        let v = err(&client, "compute_histogram", histogram(branch, json!({}))).await;
        assert_eq!(v["error"], "branch_not_found", "{v}");
        assert_eq!(v["details"]["branch"], missing, "{v}");
        assert!(
            v["details"]["closest"]
                .as_array()
                .unwrap()
                .contains(&json!("Muon_Px")),
            "{v}"
        );
    }
    let cases = [
        (histogram("Sum(NMuon)", json!({})), "takes a collection"),
        (
            histogram(
                "Muon_Px",
                json!({"selection": "PairFirst(Muon_Px) > Muon_Px"}),
            ),
            "one value per pair",
        ),
        (histogram("Max(Muon_Px, Muon_Py)", json!({})), "max(a, b)"),
        (
            histogram("a", json!({"define": {"a": "b + 1", "b": "a * 2"}})),
            "refers to itself (a -> b -> a)",
        ),
        (
            histogram("x", json!({"define": {"Muon_Px": "1", "x": "2"}})),
            "has the name of the branch 'Muon_Px'",
        ),
        (
            histogram("a", json!({"define": {"a": "Muon_Px +"}})),
            "in define 'a'",
        ),
    ];
    for (args, says) in cases {
        let v = err(&client, "compute_histogram", args.clone()).await;
        assert_eq!(v["error"], "invalid_selection", "{args}: {v}");
        assert!(v["message"].as_str().unwrap().contains(says), "{v}");
        assert!(
            v["suggestion"].as_str().unwrap().contains("list_branches"),
            "{v}"
        );
    }
    let v = err(
        &client,
        "compute_histogram",
        histogram("a", json!({"define": {"1a": "2"}})),
    )
    .await;
    assert_eq!(v["error"], "invalid_arguments", "{v}");
    let v = err(
        &client,
        "read_branches",
        json!({"path": hzz, "tree": "events", "branches": ["pt=hypot(Muon_Pxx, Muon_Py)"]}),
    )
    .await;
    assert_eq!(v["error"], "branch_not_found", "{v}");
    // One entry of 2,000 elements would make 1,999,000 pairs.
    let v = err(
        &client,
        "compute_histogram",
        json!({"path": "root/pairs.root", "tree": "huge", "branch": "PairFirst(X)", "bins": 10, "range": [0, 10]}),
    )
    .await;
    assert_eq!(v["error"], "limit_exceeded", "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("entry 1 has 2000 elements"),
        "{v}"
    );
}

/// Each column's baskets with the range of their values, as the statistics
/// pass records them (what cluster skipping consults).
fn bounded<'t>(file: &RootFile, tree: &'t Tree) -> TreeColumns<'t> {
    let mut columns = TreeColumns::new(tree);
    for i in 0..columns.columns.len() {
        let c = &columns.columns[i];
        if c.origin.leaf().is_some() {
            continue;
        }
        let mut spans = Vec::new();
        let mut at = 0u64;
        file.for_each_chunk(c.origin.branch().unwrap(), |chunk| {
            let values = to_f64(&chunk.values, 0..chunk.values.len());
            let start = at;
            at += chunk.entries as u64;
            spans.push(BasketSpan {
                entries: start..at,
                values: values.len() as u64,
                finite: values.len() as u64,
                min: values.iter().copied().fold(f64::INFINITY, f64::min),
                max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            });
            Ok(())
        })
        .unwrap();
        let entries = columns.entries;
        columns.bounds.add_column(i, spans, entries);
    }
    columns
}

/// A tree whose first cluster has no element of `X` at all: a VecOps
/// reduction is a value there (the sum of none is 0, All of none true), so
/// cluster skipping must read the cluster, while an element-wise cut on the
/// pairs of nothing may skip it. Counts with and without the recorded ranges
/// agree with awkward's.
#[test]
fn cluster_skipping_never_drops_what_vecops_cuts_select() {
    let doc = fixture();
    let f = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["tree"] == "sparse")
        .unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(f["file"].as_str().unwrap());
    let file = RootFile::open(std::fs::File::open(path).unwrap()).unwrap();
    let keys = file.walk().unwrap();
    let tree = file
        .tree(&latest(&keys, "sparse", Some("TTree")).unwrap().key)
        .unwrap();
    let job = Job::default();
    let plain = TreeColumns::new(&tree);
    for s in f["selections"].as_array().unwrap() {
        let cut = s["selection"].as_str().unwrap();
        let with_bounds = bounded(&file, &tree);
        let plan = Plan::new(cut, &plain).unwrap();
        let (all, _) = count_selected(&Member::single(&file, &plain), &plan, &job).unwrap();
        let (pruned, _) =
            count_selected(&Member::single(&file, &with_bounds), &plan, &job).unwrap();
        assert_eq!(all.selected, s["selected"].as_u64().unwrap(), "{cut}");
        assert_eq!(
            pruned.selected, all.selected,
            "{cut}: skipping dropped entries"
        );
        let skipped = with_bounds.bounds.clusters().1;
        let expected_skips = u64::from(cut == "PairFirst(X) >= 0" || cut.starts_with("Sort"));
        assert_eq!(skipped, expected_skips, "{cut}");
    }
}

/// Defines never nest calls deeper than one cut string can (64), nor chain
/// more than 256 operations deep: written out in place, 16 defines of 60
/// nested calls each would nest 960 deep, past what the recursive checking
/// and evaluation were made for. Within the bounds they plan and count.
#[test]
fn defines_nest_no_deeper_than_one_cut() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/root/uproot-HZZ.root");
    let file = RootFile::open(std::fs::File::open(path).unwrap()).unwrap();
    let keys = file.walk().unwrap();
    let tree = file
        .tree(&latest(&keys, "events", Some("TTree")).unwrap().key)
        .unwrap();
    let columns = TreeColumns::new(&tree);
    let wrapped =
        |calls: usize, inner: &str| format!("{}{inner}{}", "abs(".repeat(calls), ")".repeat(calls));
    let chain = |calls: usize, levels: usize| {
        let mut entries = vec![("d0".to_string(), wrapped(calls, "Muon_Px"))];
        for k in 1..levels {
            entries.push((format!("d{k}"), wrapped(calls, &format!("d{}", k - 1))));
        }
        quarry::analysis::Defines::new(entries).unwrap()
    };
    let plan = Plan::with_defines("d3 > 10", &columns, &chain(5, 4)).unwrap();
    let (n, _) = count_selected(&Member::single(&file, &columns), &plan, &Job::default()).unwrap();
    assert!(n.selected > 0);
    for (calls, levels) in [(60, 16), (33, 2)] {
        let last = format!("d{} > 10", levels - 1);
        let e = Plan::with_defines(&last, &columns, &chain(calls, levels)).unwrap_err();
        assert!(e.to_string().contains("nests more than 64 calls"), "{e}");
    }
    // Defines of long sums of defines: at most 256 operations deep.
    let mut entries = vec![("s0".to_string(), vec!["Muon_Px"; 100].join(" + "))];
    for k in 1..16 {
        entries.push((
            format!("s{k}"),
            format!("s{} + {}", k - 1, vec!["1"; 100].join(" + ")),
        ));
    }
    let sums = quarry::analysis::Defines::new(entries).unwrap();
    let e = Plan::with_defines("s15 > 0", &columns, &sums).unwrap_err();
    assert!(e.to_string().contains("operations"), "{e}");
}
