//! ROOT files read as one (issue #28, part 1), through MCP, against uproot +
//! awkward + numpy reading the same files in the same order
//! (tests/fixtures/root/datasets.json, from scripts/fixtures/root_datasets.py):
//! the analysis tools over a glob, a list of paths and a saved dataset give
//! the concatenation's counts, histograms, statistics with exact quantiles,
//! rows (each with its file, its entry there and its entry in the dataset),
//! seeded samples and exports, and each file's share on request; entries are
//! numbered in path order whatever order a list gives; files without the tree
//! or with other branches are named, or skipped and listed; a dry run reports
//! the files, entries, clusters, clusters the cut rules out and bytes to read
//! as uproot's metadata of the files has them, from the catalog alone (it
//! answers while the files themselves are unreadable); a saved glob follows
//! the files the watcher indexes and drops; a stopped job stops a dataset's
//! scan; a saved dataset's named expressions serve the calls that name it.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Client, Form, Sandbox, call_err as err, call_ok as ok, wait_indexed};
use serde_json::{Value, json};

fn fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/datasets.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A root holding the fixture's layout: copies of the test files in folders.
fn sandbox(doc: &Value) -> Sandbox {
    sandbox_with_rntuples(doc, &[])
}

/// The fixture's layout with the files at `rntuples` holding the RNTuple copy
/// of the HZZ sample (scripts/fixtures/rntuple_copies.py) instead: every HZZ
/// file of the layout holds the same events (compressed otherwise), so the
/// expected values stay those of the TTree files.
fn sandbox_with_rntuples(doc: &Value, rntuples: &[&str]) -> Sandbox {
    let s = Sandbox::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (rel, source) in doc["layout"].as_object().unwrap() {
        let source = if rntuples.contains(&rel.as_str()) {
            Form::RNTuple
                .source("testdata/root/uproot-HZZ.root")
                .unwrap()
        } else {
            repo.join(source.as_str().unwrap())
        };
        s.write(rel, &std::fs::read(source).unwrap());
    }
    s
}

/// Numbers equal to `tolerance` of their size, the rest exactly (objects on
/// the keys `want` has).
fn assert_within(got: &Value, want: &Value, tolerance: f64, what: &str) {
    match (got, want) {
        (Value::Number(_), Value::Number(_)) => {
            let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
            let close = (g - w).abs() <= tolerance * g.abs().max(w.abs()).max(1.0);
            assert!(close, "{what}: {g} != {w}");
        }
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{what}");
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                assert_within(a, b, tolerance, &format!("{what}[{i}]"));
            }
        }
        (Value::Object(g), Value::Object(w)) => {
            for (k, b) in w {
                assert_within(&g[k], b, tolerance, &format!("{what}.{k}"));
            }
        }
        _ => assert_eq!(got, want, "{what}"),
    }
}

/// Doubles summed in another order agree to about 1e-9 of their size.
fn assert_close(got: &Value, want: &Value, what: &str) {
    assert_within(got, want, 1e-9, what);
}

/// `args` with the dataset named as `source`.
fn with(source: &Value, args: Value) -> Value {
    let mut args = args;
    args["dataset"] = source.clone();
    args
}

/// Every analysis tool over the HZZ dataset named as `source` (a glob, a list
/// of its paths, or a saved name) gives what uproot gives of the concatenation.
async fn check_hzz(client: &Client, h: &Value, source: &Value) {
    let what = source.to_string();
    let sel = &h["selection"];
    let v = ok(
        client,
        "apply_selection",
        with(
            source,
            json!({"tree": "events", "selection": sel["cut"], "by_file": true}),
        ),
    )
    .await;
    assert_eq!(v["data"]["entries_selected"], sel["selected"], "{what}");
    assert_eq!(v["data"]["entries_total"], h["entries"], "{what}");
    assert_eq!(v["metadata"]["files"], 4, "{what}");
    let by_file = v["data"]["by_file"].as_array().unwrap();
    let files: Vec<&Value> = by_file.iter().map(|f| &f["file"]).collect();
    assert_eq!(json!(files), h["files"], "{what}: files in path order");
    for (f, want) in by_file.iter().zip(sel["by_file"].as_array().unwrap()) {
        assert_eq!(&f["entries_selected"], want, "{what}");
    }

    let hist = &h["histogram"];
    let v = ok(
        client,
        "compute_histogram",
        with(
            source,
            json!({"tree": "events", "branch": hist["branch"], "bins": hist["bins"],
                   "range": hist["range"], "selection": hist["selection"], "by_file": true}),
        ),
    )
    .await;
    let d = &v["data"];
    assert_close(&d["bin_counts"], &hist["counts"], &format!("{what} counts"));
    for k in ["underflow", "overflow", "entries", "mean", "std"] {
        assert_close(&d[k], &hist[k], &format!("{what} {k}"));
    }
    assert_eq!(
        v["metadata"]["entries_selected"], hist["selected"],
        "{what}"
    );
    for (f, want) in d["by_file"]
        .as_array()
        .unwrap()
        .iter()
        .zip(hist["by_file"].as_array().unwrap())
    {
        assert_close(f, want, &format!("{what} by_file"));
    }

    let h2 = &h["histogram_2d"];
    let v = ok(
        client,
        "compute_histogram_2d",
        with(
            source,
            json!({"tree": "events", "x_branch": h2["x"], "y_branch": h2["y"],
                   "x_bins": h2["bins"][0], "y_bins": h2["bins"][1], "x_range": h2["x_range"],
                   "y_range": h2["y_range"], "selection": h2["selection"]}),
        ),
    )
    .await;
    assert_close(&v["data"]["counts"], &h2["counts"], &format!("{what} 2-D"));
    assert_eq!(v["data"]["entries"], h2["entries"], "{what}");
    assert_close(&v["data"]["outside"], &h2["outside"], &what);

    let st = &h["stats"];
    let v = ok(
        client,
        "get_branch_stats",
        with(
            source,
            json!({"tree": "events", "branches": st["branches"], "quantiles": st["quantiles"],
                   "by_file": true}),
        ),
    )
    .await;
    assert_close(
        &v["data"]["statistics"],
        &st["statistics"],
        &format!("{what} stats"),
    );
    for (f, want) in v["data"]["by_file"]
        .as_array()
        .unwrap()
        .iter()
        .zip(st["by_file"].as_array().unwrap())
    {
        assert_close(&f["statistics"], want, &format!("{what} stats by_file"));
    }

    for page in [&h["page"], &h["cut_page"]] {
        let mut args = json!({"tree": "events", "branches": page["branches"],
                              "offset": page["offset"], "limit": page["limit"]});
        if let Some(cut) = page.get("selection") {
            args["selection"] = cut.clone();
        }
        let v = ok(client, "read_branches", with(source, args)).await;
        assert_close(
            &v["data"]["records"],
            &page["rows"],
            &format!("{what} page"),
        );
        assert_eq!(v["data"]["branches"], page["branches"], "{what}");
        if let Some(n) = page.get("selected") {
            assert_eq!(&v["metadata"]["entries_selected"], n, "{what}");
        }
    }

    let sample = &h["sample"];
    let v = ok(
        client,
        "sample_tree",
        with(
            source,
            json!({"tree": "events", "method": "random", "seed": sample["seed"],
                   "size": sample["size"], "branches": sample["branches"]}),
        ),
    )
    .await;
    assert_close(
        &v["data"]["records"],
        &sample["rows"],
        &format!("{what} sample"),
    );

    let ex = &h["export"];
    let name = format!("hzz-{}.json", what.len());
    let v = ok(
        client,
        "export_branches",
        with(
            source,
            json!({"tree": "events", "branches": ex["branches"], "selection": ex["selection"],
                   "output_format": "json", "output_path": name, "by_file": true}),
        ),
    )
    .await;
    assert_eq!(
        v["data"]["entries_written"], ex["entries_written"],
        "{what}"
    );
    let written: Value =
        serde_json::from_slice(&std::fs::read(v["data"]["output_path"].as_str().unwrap()).unwrap())
            .unwrap();
    // A float32 branch is written with the shortest text of its float32 value.
    assert_within(&written, &ex["records"], 1e-6, &format!("{what} export"));
    let per_file: u64 = v["data"]["by_file"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["entries_written"].as_u64().unwrap())
        .sum();
    assert_eq!(json!(per_file), ex["entries_written"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_glob_a_list_and_a_saved_dataset_read_as_uproot_concatenates() {
    let doc = fixture();
    let h = &doc["hzz"];
    let s = sandbox(&doc);
    let client = s.mcp().await;
    wait_indexed(&client).await;

    check_hzz(&client, h, &h["glob"]).await;
    // A list in another order: entries are still numbered in path order.
    let mut files: Vec<Value> = h["files"].as_array().unwrap().clone();
    files.reverse();
    check_hzz(&client, h, &json!(files)).await;
    let v = ok(
        &client,
        "define_dataset",
        json!({"name": "hzz2012", "files": h["glob"], "tree": "events",
               "description": "four copies of the HZZ sample", "define": {"pt2": "Muon_Px*Muon_Px"}}),
    )
    .await;
    assert_eq!(v["data"]["member_count"], 4);
    assert_eq!(v["data"]["entries"], h["entries"]);
    assert_eq!(v["data"]["replaced"], false);
    // The saved dataset names its tree: calls need not.
    let v = ok(
        &client,
        "apply_selection",
        json!({"dataset": "hzz2012", "selection": h["selection"]["cut"]}),
    )
    .await;
    assert_eq!(v["data"]["entries_selected"], h["selection"]["selected"]);
    assert_eq!(v["metadata"]["dataset"], json!({"saved": "hzz2012"}));
    assert_eq!(v["metadata"]["define"], json!({"pt2": "Muon_Px*Muon_Px"}));
    check_hzz(&client, h, &json!("hzz2012")).await;

    // A saved dataset's named expressions serve its calls' cuts and values,
    // and the call's own `define` wins for a name it gives too.
    let d = &h["saved_define"];
    ok(
        &client,
        "define_dataset",
        json!({"name": "hzz_px2", "files": h["glob"], "tree": "events", "define": d["define"]}),
    )
    .await;
    let v = ok(
        &client,
        "apply_selection",
        json!({"dataset": "hzz_px2", "selection": d["cut"]}),
    )
    .await;
    assert_eq!(v["data"]["entries_selected"], d["selected"], "{v}");
    let v = ok(
        &client,
        "apply_selection",
        json!({"dataset": "hzz_px2", "selection": d["cut"], "define": {"px2": "0"}}),
    )
    .await;
    assert_eq!(v["data"]["entries_selected"], 0, "{v}");
    client.cancel().await.unwrap();
}

/// A dataset may mix TTree and RNTuple files of the same schema: read as one,
/// with the RNTuple first (its columns then lead) or among the TTrees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_mixing_ttree_and_rntuple_files_reads_as_one() {
    let doc = fixture();
    let h = &doc["hzz"];
    for rntuples in [
        &["run2012/A/hzz.root"][..],
        &["run2012/B/hzz_lz4.root", "run2012/C/hzz_lzma.root"][..],
    ] {
        let s = sandbox_with_rntuples(&doc, rntuples);
        let client = s.mcp().await;
        wait_indexed(&client).await;
        check_hzz(&client, h, &h["glob"]).await;
        let mut files: Vec<Value> = h["files"].as_array().unwrap().clone();
        files.reverse();
        check_hzz(&client, h, &json!(files)).await;
        let v = ok(
            &client,
            "define_dataset",
            json!({"name": "mixed_hzz", "files": h["glob"], "tree": "events"}),
        )
        .await;
        assert_eq!(v["data"]["member_count"], 4);
        assert_eq!(v["data"]["entries"], h["entries"]);
        check_hzz(&client, h, &json!("mixed_hzz")).await;
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_is_numbered_in_path_order() {
    let doc = fixture();
    let l = &doc["list"];
    let s = sandbox(&doc);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let page = &l["page"];
    let v = ok(
        &client,
        "read_branches",
        json!({"dataset": l["given"], "tree": "events", "branches": page["branches"],
               "offset": page["offset"], "limit": page["limit"]}),
    )
    .await;
    assert_close(&v["data"]["records"], &page["rows"], "list page");
    // The same list saved, then shown with its members in that order.
    ok(
        &client,
        "define_dataset",
        json!({"name": "pairs", "files": l["given"], "tree": "events"}),
    )
    .await;
    let v = ok(&client, "list_root_datasets", json!({"name": "pairs"})).await;
    let d = &v["data"]["datasets"][0];
    assert_eq!(d["files"], l["given"]);
    let members: Vec<&Value> = d["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["file"])
        .collect();
    assert_eq!(json!(members), l["files"]);
    assert_eq!(d["entries"], 4000);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mismatched_files_are_named_or_skipped_and_listed() {
    mismatched_files_in(&[]).await;
}

/// The same with the first file an RNTuple: the others' branches are
/// compared with its fields.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mismatched_files_are_named_or_skipped_and_listed_after_an_rntuple() {
    mismatched_files_in(&["mixed/1_hzz.root"]).await;
}

async fn mismatched_files_in(rntuples: &[&str]) {
    let doc = fixture();
    let m = &doc["mixed"];
    let s = sandbox_with_rntuples(&doc, rntuples);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let cut = &m["skip_selection"]["cut"];
    let args = json!({"dataset": m["glob"], "tree": "events", "selection": cut});
    let e = err(&client, "apply_selection", args.clone()).await;
    assert_eq!(e["error"], "dataset_mismatch", "{e}");
    let named: Vec<&Value> = e["details"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["file"])
        .collect();
    assert_eq!(json!(named), m["mismatched"], "{e}");
    assert!(
        e["suggestion"]
            .as_str()
            .unwrap()
            .contains("skip_mismatched")
    );
    let mut skip = args;
    skip["skip_mismatched"] = json!(true);
    let v = ok(&client, "apply_selection", skip).await;
    assert_eq!(
        v["data"]["entries_selected"],
        m["skip_selection"]["selected"]
    );
    assert_eq!(v["metadata"]["files"], 1);
    let skipped: Vec<&Value> = v["metadata"]["files_skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["file"])
        .collect();
    assert_eq!(json!(skipped), m["mismatched"]);
    let reasons = v["metadata"]["files_skipped"].to_string();
    assert!(
        reasons.contains("tree") && reasons.contains("branches differ"),
        "{reasons}"
    );
    client.cancel().await.unwrap();
}

/// The dry run's figures against uproot's reading of the files' metadata:
/// before the statistics pass nothing can be ruled out; after it, every
/// cluster without a passing entry is (the cuts compare one branch with a
/// constant). With the files made unreadable (a watcher that waits keeps the
/// catalog as it was), the dry run answers the same, from the catalog alone,
/// while a real call fails on them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_runs_estimate_from_the_catalog_alone() {
    let doc = fixture();
    let p = &doc["pairs"];
    let s = sandbox(&doc);
    let _daemon = common::raw::serve_with(&s, "[index]\nsettle_ms = 600000\n", None);
    let client = s.connect().await;
    wait_indexed(&client).await;
    let cut = &p["selection"]["cut"];
    let selection = json!({"dataset": p["glob"], "tree": "events", "selection": cut,
                           "dry_run": true, "by_file": true});
    let estimate = |v: &Value, want: &Value, what: &str| {
        let d = &v["data"];
        assert_eq!(d["dry_run"], true);
        for k in [
            "files",
            "entries",
            "clusters",
            "clusters_skipped",
            "bytes_to_read",
        ] {
            assert_eq!(d[k], want[k], "{what}: {k}");
        }
        for (got, want) in d["by_file"]
            .as_array()
            .unwrap()
            .iter()
            .zip(want["by_file"].as_array().unwrap())
        {
            assert_eq!(got, want, "{what}: by file");
        }
    };
    let v = ok(&client, "apply_selection", selection.clone()).await;
    estimate(
        &v,
        &p["dry_run"]["selection_without_statistics"],
        "no statistics",
    );

    for file in p["files"].as_array().unwrap() {
        ok(
            &client,
            "list_branches",
            json!({"path": file, "tree": "events", "include_stats": true}),
        )
        .await;
    }
    let v = ok(&client, "apply_selection", selection.clone()).await;
    estimate(&v, &p["dry_run"]["selection"], "with statistics");
    let hist = &p["histogram"];
    let hist_args = json!({"dataset": p["glob"], "tree": "events", "branch": hist["branch"],
                           "bins": hist["bins"], "range": hist["range"], "selection": hist["selection"]});
    let mut dry = hist_args.clone();
    dry["dry_run"] = json!(true);
    dry["by_file"] = json!(true);
    let v = ok(&client, "compute_histogram", dry.clone()).await;
    estimate(&v, &p["dry_run"]["histogram"], "histogram");

    // The real calls skip what the dry run said they would.
    let mut real = selection.clone();
    real["dry_run"] = json!(false);
    let v = ok(&client, "apply_selection", real.clone()).await;
    assert_eq!(v["data"]["entries_selected"], p["selection"]["selected"]);
    assert_eq!(
        v["metadata"]["clusters_skipped"],
        p["dry_run"]["selection"]["clusters_skipped"]
    );
    let per_file: Vec<&Value> = v["data"]["by_file"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["entries_selected"])
        .collect();
    assert_eq!(json!(per_file), p["selection"]["by_file"]);
    let v = ok(&client, "compute_histogram", hist_args).await;
    for k in ["counts", "underflow", "overflow", "entries", "mean", "std"] {
        let got = if k == "counts" {
            &v["data"]["bin_counts"]
        } else {
            &v["data"][k]
        };
        assert_close(got, &hist[k], k);
    }
    let st = &p["stats"];
    let v = ok(
        &client,
        "get_branch_stats",
        json!({"dataset": p["glob"], "tree": "events", "branches": st["branches"],
               "quantiles": st["quantiles"]}),
    )
    .await;
    assert_close(&v["data"]["statistics"], &st["statistics"], "pairs stats");

    // Unreadable files (their catalog entries kept by the waiting watcher).
    for file in p["files"].as_array().unwrap() {
        let path = s.root.join(file.as_str().unwrap());
        let len = std::fs::metadata(&path).unwrap().len() as usize;
        std::fs::write(&path, vec![0u8; len]).unwrap();
    }
    let v = ok(&client, "compute_histogram", dry).await;
    estimate(&v, &p["dry_run"]["histogram"], "files unreadable");
    let e = err(&client, "apply_selection", real).await;
    assert_eq!(e["error"], "dataset_mismatch", "{e}");
    client.cancel().await.unwrap();
}

/// A saved glob holds the files indexed now: one copied in joins it, one
/// removed leaves it, each as soon as the watcher has indexed the change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_glob_follows_the_watcher() {
    let s = Sandbox::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let a = std::fs::read(repo.join("tests/data/root/rewrite_a.root")).unwrap();
    let b = std::fs::read(repo.join("tests/data/root/rewrite_b.root")).unwrap();
    s.write("grow/a.root", &a);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let v = ok(
        &client,
        "define_dataset",
        json!({"name": "grow", "files": "grow/*.root", "tree": "events"}),
    )
    .await;
    assert_eq!(v["data"]["member_count"], 1);
    let members = |v: &Value| {
        let d = &v["data"]["datasets"][0];
        (
            d["member_count"].as_u64().unwrap(),
            d["entries"].as_u64().unwrap(),
        )
    };
    let shown = ok(&client, "list_root_datasets", json!({})).await;
    assert_eq!(members(&shown), (1, 2000));
    assert_eq!(shown["data"]["datasets"][0]["files"], "grow/*.root");

    s.write("grow/b.root", &b);
    let started = Instant::now();
    loop {
        let v = ok(&client, "list_root_datasets", json!({"name": "grow"})).await;
        if members(&v) == (2, 4000) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // x < 100: the first 100 entries of a, the last 100 of b.
    let v = ok(
        &client,
        "apply_selection",
        json!({"dataset": "grow", "selection": "x < 100", "by_file": true}),
    )
    .await;
    assert_eq!(v["data"]["entries_selected"], 200);
    assert_eq!(v["data"]["entries_total"], 4000);

    std::fs::remove_file(s.root.join("grow/a.root")).unwrap();
    let started = Instant::now();
    loop {
        let v = ok(&client, "list_root_datasets", json!({"name": "grow"})).await;
        if members(&v) == (1, 2000) {
            assert_eq!(
                v["data"]["datasets"][0]["members"][0]["file"],
                "grow/b.root"
            );
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_name_one_file_or_one_dataset() {
    let doc = fixture();
    let s = sandbox(&doc);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let cut = json!("x < 100");
    let both = json!({"path": "pairs/a.root", "dataset": "pairs/*.root", "tree": "events", "selection": cut});
    let e = err(&client, "apply_selection", both).await;
    assert_eq!(e["error"], "invalid_arguments");
    assert!(e["message"].as_str().unwrap().contains("not both"), "{e}");
    let e = err(
        &client,
        "apply_selection",
        json!({"tree": "events", "selection": cut}),
    )
    .await;
    assert_eq!(e["error"], "invalid_arguments");
    assert!(e["message"].as_str().unwrap().contains("dataset"), "{e}");
    let e = err(
        &client,
        "apply_selection",
        json!({"dataset": "pairs/*.root", "selection": cut}),
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().contains("tree is required"),
        "{e}"
    );
    let e = err(
        &client,
        "compute_histogram",
        json!({"dataset": "nosuchdataset", "tree": "events", "branch": "x", "bins": 10}),
    )
    .await;
    assert_eq!(e["error"], "file_not_found", "{e}");
    assert!(
        e["suggestion"]
            .as_str()
            .unwrap()
            .contains("list_root_datasets"),
        "{e}"
    );
    let e = err(
        &client,
        "apply_selection",
        json!({"dataset": "../elsewhere/*.root", "tree": "events", "selection": cut}),
    )
    .await;
    assert_eq!(e["error"], "permission_denied", "{e}");
    let e = err(
        &client,
        "apply_selection",
        json!({"dataset": ["pairs/a.root", "pairs/nothere.root"], "tree": "events", "selection": cut}),
    )
    .await;
    assert_eq!(e["error"], "file_not_found", "{e}");
    let e = err(
        &client,
        "define_dataset",
        json!({"name": "run/*", "files": "pairs/*.root", "tree": "events"}),
    )
    .await;
    assert_eq!(e["error"], "invalid_arguments", "{e}");
    // A list sent as JSON text is a list.
    let v = ok(
        &client,
        "apply_selection",
        json!({"dataset": "[\"pairs/b.root\", \"pairs/a.root\"]", "tree": "events", "selection": cut}),
    )
    .await;
    assert_eq!(v["data"]["entries_selected"], 200);
    // path keeps working alone, with no dataset metadata.
    let v = ok(
        &client,
        "apply_selection",
        json!({"path": "pairs/a.root", "tree": "events", "selection": cut}),
    )
    .await;
    assert_eq!(v["data"]["entries_selected"], 100);
    assert!(v["metadata"].get("files").is_none());
    client.cancel().await.unwrap();
}

/// A stopped job stops a dataset's scan between baskets, whichever file it is
/// in: 40 files of 60,000 entries, cut off after a few milliseconds.
#[test]
fn a_stopped_job_stops_the_scan_of_a_dataset() {
    use quarry::analysis::dataset::{Member, first_entries};
    use quarry::analysis::ops::{Axis, HistRequest, count_selected, histogram};
    use quarry::analysis::{AnalysisError, Plan, TreeColumns};
    use quarry::formats::root::{RootFile, latest};
    use quarry::job::Job;

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/root/clusters.root");
    let files: Vec<RootFile> = (0..40)
        .map(|_| RootFile::open(std::fs::File::open(&path).unwrap()).unwrap())
        .collect();
    let trees: Vec<_> = files
        .iter()
        .map(|f| {
            let keys = f.walk().unwrap();
            f.tree(&latest(&keys, "events", Some("TTree")).unwrap().key)
                .unwrap()
        })
        .collect();
    let columns: Vec<TreeColumns> = trees.iter().map(TreeColumns::new).collect();
    let firsts = first_entries(columns.iter().map(|c| c.entries));
    let members: Vec<Member> = files
        .iter()
        .zip(&columns)
        .zip(firsts)
        .map(|((file, tree), first_entry)| Member {
            file,
            tree,
            first_entry,
            label: "",
        })
        .collect();
    let total = 40 * 60_000;
    let cut = Plan::new("muon_pt > 20 && met > 10", &columns[0]).unwrap();
    let value = Plan::new("muon_pt", &columns[0]).unwrap();

    // Already stopped: nothing is read.
    let job = Job::default();
    job.cancel();
    let e = count_selected(&members, &cut, &job).unwrap_err();
    assert!(
        matches!(
            e,
            AnalysisError::Stopped {
                entries_done: 0,
                ..
            }
        ),
        "{e}"
    );

    // Stopped mid-way: the scan ends early, with the entries done so far.
    let full = count_selected(&members, &cut, &Job::default()).unwrap().0;
    assert_eq!(full.scanned, total);
    let job = Job::new(Some(Duration::from_millis(20)));
    let req = HistRequest {
        value: &value,
        cut: Some(&cut),
        weight: None,
        flatten: true,
    };
    let axis = Axis {
        bins: 10,
        lo: 0.0,
        hi: 100.0,
    };
    match histogram(&members, &req, axis, &job) {
        Err(AnalysisError::Stopped { entries_done, .. }) => assert!(entries_done < total),
        other => panic!("the histogram of 2.4M entries outlived 20 ms: {other:?}"),
    }
}
