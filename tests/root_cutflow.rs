//! `cutflow` (issue #30, part 2) through MCP, against uproot + awkward + numpy
//! on the same files (tests/fixtures/root/cutflows.json, from
//! scripts/fixtures/root_cutflows.py): each step's entries, sum of weights and
//! its error, efficiencies and n-1 counts on the HZZ sample (cuts on
//! collections, Sum$, a VecOps function and a named expression), the same over
//! a dataset of four copies with each file's share, in one pass over the data.

use crate::common;

use std::path::Path;

use common::{Client, Sandbox, assert_valid, call, wait_indexed};
use serde_json::{Value, json};

fn fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/cutflows.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A root holding the dataset's layout: copies of the HZZ files in folders.
fn sandbox(doc: &Value) -> Sandbox {
    let s = Sandbox::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (rel, source) in doc["dataset"]["layout"].as_object().unwrap() {
        s.write(
            rel,
            &std::fs::read(repo.join(source.as_str().unwrap())).unwrap(),
        );
    }
    s
}

async fn ok(client: &Client, args: Value) -> Value {
    let (v, is_error) = call(client, "cutflow", args.clone()).await;
    assert!(!is_error, "cutflow {args}: {v}");
    assert_valid("cutflow.output.json", &v);
    v
}

async fn err(client: &Client, args: Value) -> Value {
    let (v, is_error) = call(client, "cutflow", args.clone()).await;
    assert!(is_error, "cutflow {args} should fail: {v}");
    v
}

/// Numbers to 1e-9 of their size (sums in another order), the rest exactly,
/// on the keys `want` has.
fn assert_close(got: &Value, want: &Value, what: &str) {
    match (got, want) {
        (Value::Number(_), Value::Number(_)) => {
            let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
            assert!(
                (g - w).abs() <= 1e-9 * g.abs().max(w.abs()).max(1.0),
                "{what}: {g} != {w}"
            );
        }
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{what}: {got} vs {want}");
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                assert_close(a, b, &format!("{what}[{i}]"));
            }
        }
        (Value::Object(g), Value::Object(w)) => {
            for (k, b) in w {
                assert!(g.contains_key(k), "{what}: no {k} in {got}");
                assert_close(&g[k], b, &format!("{what}.{k}"));
            }
        }
        _ => assert_eq!(got, want, "{what}"),
    }
}

fn cuts_of(flow: &Value) -> Value {
    let steps = flow["steps"].as_array().unwrap();
    json!(
        steps
            .iter()
            .map(|s| json!({"name": s["name"], "cut": s["cut"]}))
            .collect::<Vec<_>>()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weighted_cutflow_with_n_minus_one_is_uproots() {
    let doc = fixture();
    let want = &doc["single"];
    let s = sandbox(&doc);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let v = ok(
        &client,
        json!({"path": "run2012/A/hzz.root", "tree": want["tree"], "cuts": cuts_of(want),
               "weights": want["weights"], "define": want["define"], "n_minus_one": true}),
    )
    .await;
    let data = &v["data"];
    assert_eq!(data["entries_total"], want["entries_total"]);
    let steps = data["steps"].as_array().unwrap();
    // Exactly one item per cut, in order, no leading "all" row.
    assert_eq!(steps.len(), want["steps"].as_array().unwrap().len());
    for (k, (got, w)) in steps
        .iter()
        .zip(want["steps"].as_array().unwrap())
        .enumerate()
    {
        assert_close(got, w, &format!("step {k}"));
        assert_close(
            &got["n_minus_one"],
            &want["n_minus_one"][k],
            &format!("step {k} n-1"),
        );
    }
    // One pass: every entry read once, not once per step.
    assert_eq!(
        v["metadata"]["entries_scanned"], want["entries_total"],
        "{v}"
    );

    // Unweighted, without n-1: the same entries, no weights or n-1 given.
    let v = ok(
        &client,
        json!({"path": "run2012/A/hzz.root", "tree": "events", "cuts": cuts_of(want),
               "define": want["define"]}),
    )
    .await;
    for (got, w) in v["data"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .zip(want["steps"].as_array().unwrap())
    {
        assert_eq!(got["entries"], w["entries"]);
        assert!(
            got.get("sum_weights").is_none() && got.get("n_minus_one").is_none(),
            "{got}"
        );
    }
    assert!(
        v["metadata"]["entries_scanned"].as_u64().unwrap()
            <= want["entries_total"].as_u64().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_cutflow_is_the_concatenations_with_each_files_share() {
    let doc = fixture();
    let want = &doc["dataset"];
    let s = sandbox(&doc);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let args = json!({"dataset": want["glob"], "tree": "events", "cuts": cuts_of(want),
                      "define": want["define"], "by_file": true});
    let v = ok(&client, args.clone()).await;
    assert_eq!(v["data"]["entries_total"], want["entries_total"]);
    assert_close(&v["data"]["steps"], &want["steps"], "steps");
    assert_close(&v["data"]["by_file"], &want["by_file"], "by_file");
    assert_eq!(v["metadata"]["files"], 4);

    // A dry run answers from the catalog: the four files and their entries.
    let mut dry = args.clone();
    dry["dry_run"] = json!(true);
    let v = ok(&client, dry).await;
    assert_eq!(v["data"]["dry_run"], true);
    assert_eq!(v["data"]["files"], 4);
    assert_eq!(v["data"]["entries"], want["entries_total"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_cutflows_are_refused_with_the_spec_codes() {
    let doc = fixture();
    let s = sandbox(&doc);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let file = "run2012/A/hzz.root";
    let e = err(&client, json!({"path": file, "tree": "events", "cuts": []})).await;
    assert_eq!(e["error"], "invalid_arguments", "{e}");
    let e = err(
        &client,
        json!({"path": file, "tree": "events", "cuts": [{"name": "a", "cut": "NMuon >="}]}),
    )
    .await;
    assert_eq!(e["error"], "invalid_selection", "{e}");
    let e = err(
        &client,
        json!({"path": file, "tree": "events", "cuts": [{"name": "a", "cut": "NMuonn > 1"}]}),
    )
    .await;
    assert_eq!(e["error"], "branch_not_found", "{e}");
    // A weight per element: an entry has no one weight.
    let e = err(
        &client,
        json!({"path": file, "tree": "events", "cuts": [{"name": "a", "cut": "NMuon > 1"}],
               "weights": "Muon_Px"}),
    )
    .await;
    assert_eq!(e["error"], "invalid_selection", "{e}");
    let many: Vec<Value> = (0..21)
        .map(|i| json!({"name": format!("c{i}"), "cut": "NMuon > 0"}))
        .collect();
    let e = err(
        &client,
        json!({"path": file, "tree": "events", "cuts": many}),
    )
    .await;
    assert_eq!(e["error"], "limit_exceeded", "{e}");
}

/// Clusters the first cut rules out are left unread, and only then: on
/// rewrite_a.root (2,000 entries in 4 clusters of 500, x = entry; see
/// tests/data/README.md) with its statistics recorded, `x < 500` admits only
/// the first cluster, so the steps read 500 entries; with n-1 every entry is
/// read, as the first cut's n-1 needs the entries it fails. Counts by hand:
/// x < 500 passes 500, then x >= 250 leaves 250; n-1 of the first cut is the
/// 1,750 entries with x >= 250, of the second the 500 with x < 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_are_skipped_only_where_no_step_can_pass() {
    let s = Sandbox::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    s.write(
        "a.root",
        &std::fs::read(repo.join("tests/data/root/rewrite_a.root")).unwrap(),
    );
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let (v, is_error) = call(
        &client,
        "list_branches",
        json!({"path": "a.root", "tree": "events", "include_stats": true}),
    )
    .await;
    assert!(!is_error, "{v}");
    let cuts =
        json!([{"name": "early", "cut": "x < 500"}, {"name": "late half", "cut": "x >= 250"}]);
    let v = ok(
        &client,
        json!({"path": "a.root", "tree": "events", "cuts": cuts}),
    )
    .await;
    let entries: Vec<&Value> = v["data"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["entries"])
        .collect();
    assert_eq!(entries, [&json!(500), &json!(250)], "{v}");
    assert_eq!(v["data"]["entries_total"], 2000);
    assert_eq!(v["metadata"]["entries_scanned"], 500, "{v}");
    assert_eq!(v["metadata"]["clusters_skipped"], 3, "{v}");
    let v = ok(
        &client,
        json!({"path": "a.root", "tree": "events", "cuts": cuts, "n_minus_one": true}),
    )
    .await;
    let steps = v["data"]["steps"].as_array().unwrap();
    assert_eq!(steps[0]["n_minus_one"]["entries"], 1750, "{v}");
    assert_eq!(steps[1]["n_minus_one"]["entries"], 500, "{v}");
    assert_eq!(steps[1]["entries"], 250);
    assert_eq!(v["metadata"]["entries_scanned"], 2000, "{v}");
}
