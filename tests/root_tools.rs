//! The ROOT tools through MCP, on the real test files, against what uproot reads
//! (fixtures in tests/fixtures/root) and values checked by hand.

use crate::common;

use std::path::Path;

use common::remote::{Over, moto_server};
use common::{Client, Form, Sandbox, assert_valid, call, wait_indexed};
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/root")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// uproot's C++ type names in numpy spelling, as list_branches reports types.
fn numpy_type(cpp: &str) -> String {
    if let Some(inner) = cpp
        .strip_prefix("std::vector<")
        .and_then(|t| t.strip_suffix('>'))
    {
        return format!("{}[]", numpy_type(inner));
    }
    let (base, dims) = cpp.split_at(cpp.find('[').unwrap_or(cpp.len()));
    let base = match base {
        "float" => "float32",
        "double" => "float64",
        "bool" => "bool",
        "char*" | "TString" | "std::string" => "string",
        "int" => "int32",
        "int8_t" | "uint8_t" | "int16_t" | "uint16_t" | "int32_t" | "uint32_t" | "int64_t"
        | "uint64_t" => base.trim_end_matches("_t"),
        other => panic!("unexpected type {other}"),
    };
    format!("{base}{dims}")
}

async fn ok(client: &Client, tool: &str, args: Value) -> Value {
    let (v, is_error) = call(client, tool, args).await;
    assert!(!is_error, "{tool}: {v}");
    v
}

/// An RNTuple is one of its file's trees, of kind `rntuple`, with its
/// entries, fields, clusters and format version as uproot reads them
/// (tests/fixtures/rntuple/copies.json, from scripts/fixtures/rntuple_copies.py);
/// its leaf fields are its branches, typed as the TTree's of the same data.
/// A TTree is of kind `ttree`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_file_lists_rntuples_as_trees_of_their_kind() {
    let s = Sandbox::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.join("tests/fixtures/rntuple/copies.json")).unwrap(),
    )
    .unwrap();
    for name in doc["files"].as_object().unwrap().keys() {
        let copy = std::fs::read(repo.join("tests/data/rntuple/copies").join(name)).unwrap();
        s.write(&format!("rntuple/{name}"), &copy);
    }
    let hzz = std::fs::read(repo.join("testdata/root/uproot-HZZ.root")).unwrap();
    s.write("ttree/uproot-HZZ.root", &hzz);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    for (name, ntuples) in doc["files"].as_object().unwrap() {
        let v = ok(
            &client,
            "inspect_file",
            json!({"path": format!("rntuple/{name}")}),
        )
        .await;
        assert_valid("inspect_file.output.json", &v);
        let trees = v["data"]["trees"].as_array().unwrap();
        assert_eq!(trees.len(), ntuples.as_object().unwrap().len(), "{v}");
        assert!(
            v["data"]["other_objects"].as_array().unwrap().is_empty(),
            "{v}"
        );
        for t in trees {
            let tree = t["path"].as_str().unwrap();
            let want = &ntuples[tree];
            assert_eq!(t["kind"], "rntuple", "{name}");
            for k in ["entries", "fields", "clusters", "format_version"] {
                assert_eq!(t[k], want[k], "{name} {tree} {k}");
            }
            assert_eq!(t["compression"], "ZLIB:1", "{name}");
            assert!(t["size_bytes"].as_u64().unwrap() > 0);
        }
    }
    let v = ok(
        &client,
        "inspect_file",
        json!({"path": "ttree/uproot-HZZ.root"}),
    )
    .await;
    assert_eq!(v["data"]["trees"][0]["kind"], "ttree");
    assert!(v["data"]["trees"][0].get("clusters").is_none());
    // The same branches, in the same order, of the same types.
    let list = |path: &str| json!({"path": path, "tree": "events", "limit": 1000});
    let a = ok(&client, "list_branches", list("ttree/uproot-HZZ.root")).await;
    let b = ok(&client, "list_branches", list("rntuple/uproot-HZZ.root")).await;
    assert_valid("list_branches.output.json", &b);
    let shape = |v: &Value| -> Vec<(Value, Value, Value)> {
        v["data"]["branches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b["name"].clone(), b["type"].clone(), b["is_jagged"].clone()))
            .collect()
    };
    assert_eq!(shape(&a), shape(&b));
    assert_eq!(b["data"]["total_entries"], 2421);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_file_describes_trees_histograms_and_directories() {
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    wait_indexed(&client).await;

    let v = ok(
        &client,
        "inspect_file",
        json!({"path": "root/uproot-nesteddirs.root"}),
    )
    .await;
    assert_valid("inspect_file.output.json", &v);
    let d = &v["data"];
    assert_eq!(d["directories"], json!(["one", "one/two", "three"]));
    // Trees and branch counts as uproot reads them (nested branches counted).
    let trees = fixture("uproot-nesteddirs.root.trees.json");
    fn count(branches: &Value) -> u64 {
        branches
            .as_array()
            .unwrap()
            .iter()
            .map(|b| 1 + count(&b["branches"]))
            .sum()
    }
    for (got, want) in d["trees"]
        .as_array()
        .unwrap()
        .iter()
        .zip(trees["trees"].as_array().unwrap())
    {
        assert_eq!(got["path"], want["path"]);
        assert_eq!(got["entries"], want["entries"]);
        assert_eq!(got["branches"].as_u64().unwrap(), count(&want["branches"]));
    }
    assert_eq!(d["trees"].as_array().unwrap().len(), 3);

    // Header facts read with Python's struct module from the file's first bytes.
    let v = ok(
        &client,
        "inspect_file",
        json!({"path": "root/uproot-HZZ-lz4.root"}),
    )
    .await;
    assert_eq!(v["data"]["compression"], "LZ4:4");
    assert_eq!(v["data"]["root_version"], "6.10/05");
    assert_eq!(v["data"]["size_bytes"], 286260);
    // Each HZZ file's tree is compressed as its name says (the algorithm; uproot
    // wrote the files with these settings).
    for (file, algorithm) in [
        ("uproot-HZZ-lz4.root", "LZ4:"),
        ("uproot-HZZ-lzma.root", "LZMA:"),
        ("uproot-HZZ-zstd.root", "ZSTD:"),
        ("uproot-HZZ-zlib.root", "ZLIB:"),
        ("uproot-HZZ-uncompressed.root", "none"),
    ] {
        let v = ok(
            &client,
            "inspect_file",
            json!({"path": format!("root/{file}")}),
        )
        .await;
        assert_valid("inspect_file.output.json", &v);
        let tree = &v["data"]["trees"][0];
        let setting = tree["compression"].as_str().unwrap();
        assert!(setting.starts_with(algorithm), "{file}: {setting}");
        assert!(
            tree["uncompressed_bytes"].as_i64() >= tree["size_bytes"].as_i64()
                || algorithm == "none"
        );
    }
    assert_eq!(v["data"]["trees"][0]["entries"], 2421);
    assert_eq!(v["data"]["trees"][0]["branches"], 51);

    let v = ok(
        &client,
        "inspect_file",
        json!({"path": "root/uproot-histograms.root"}),
    )
    .await;
    assert_valid("inspect_file.output.json", &v);
    let hists = fixture("uproot-histograms.root.hists.json");
    let got = v["data"]["histograms"].as_array().unwrap();
    assert_eq!(got.len(), 3);
    for (g, w) in got.iter().zip(hists["histograms"].as_array().unwrap()) {
        assert_eq!(g["path"], w["path"]);
        assert_eq!(g["type"], w["class"]);
        assert_eq!(
            g["bins"].as_u64().unwrap() as usize,
            w["x"]["edges"].as_array().unwrap().len() - 1
        );
        assert_eq!(g["entries"], w["entries"]);
    }
    assert!(v["data"]["trees"].as_array().unwrap().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_branches_gives_uproots_types_for_every_basic_branch() {
    list_branches_gives_uproots_types_for_every_basic_branch_in(Form::TTree, Over::Local).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_branches_gives_uproots_types_for_every_basic_branch_on_rntuple() {
    list_branches_gives_uproots_types_for_every_basic_branch_in(Form::RNTuple, Over::Local).await;
}

/// The same files served by nginx and indexed over HTTP: the same answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_branches_gives_uproots_types_for_every_basic_branch_over_http() {
    list_branches_gives_uproots_types_for_every_basic_branch_in(Form::TTree, Over::Http).await;
    list_branches_gives_uproots_types_for_every_basic_branch_in(Form::RNTuple, Over::Http).await;
}

/// The same files as objects of an S3 bucket (moto on loopback).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_branches_gives_uproots_types_for_every_basic_branch_over_s3() {
    if moto_server().is_none() {
        return;
    }
    list_branches_gives_uproots_types_for_every_basic_branch_in(Form::TTree, Over::S3).await;
    list_branches_gives_uproots_types_for_every_basic_branch_in(Form::RNTuple, Over::S3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_branches_gives_uproots_types_for_every_basic_branch_over_xrootd() {
    list_branches_gives_uproots_types_for_every_basic_branch_in(Form::TTree, Over::Xrootd).await;
    list_branches_gives_uproots_types_for_every_basic_branch_in(Form::RNTuple, Over::Xrootd).await;
}

/// The same xrootd over its HTTP plugin: `http://` URLs on the same server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_branches_gives_uproots_types_for_every_basic_branch_over_xrootd_http() {
    list_branches_gives_uproots_types_for_every_basic_branch_in(Form::TTree, Over::XrootdHttp)
        .await;
    list_branches_gives_uproots_types_for_every_basic_branch_in(Form::RNTuple, Over::XrootdHttp)
        .await;
}

async fn list_branches_gives_uproots_types_for_every_basic_branch_in(form: Form, over: Over) {
    let mut s = Sandbox::with_testdata_as(form);
    let _server = s.serve_over(over);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    for (file, tree) in [
        ("nanoAOD_2015_CMS_Open_Data_ttbar.root", "Events"),
        ("uproot-HZZ-zstd.root", "events"),
        ("uproot-sample-6.20.04-uncompressed.root", "sample"),
        ("uproot-Zmumu.root", "events"),
        ("uproot-small-evnt-tree-fullsplit.root", "tree"),
    ] {
        if form.source(&format!("testdata/root/{file}")).is_none() {
            continue;
        }
        // Every branch, page after page (a wide tree's list passes the result
        // budget in one answer).
        let args = json!({"path": format!("root/{file}"), "tree": tree, "limit": 1000});
        let mut v = ok(&client, "list_branches", args.clone()).await;
        assert_valid("list_branches.output.json", &v);
        let mut all = v["data"]["branches"].as_array().unwrap().clone();
        while let Some(next) = v["metadata"].get("next_offset").cloned() {
            let mut more = args.clone();
            more["offset"] = next;
            v = ok(&client, "list_branches", more).await;
            assert_valid("list_branches.output.json", &v);
            all.extend(v["data"]["branches"].as_array().unwrap().iter().cloned());
        }
        let listed: std::collections::HashMap<&str, &Value> = all
            .iter()
            // Nested branches are listed by path ("evt/I16"); the fixture names them "I16".
            .map(|b| (b["name"].as_str().unwrap().rsplit('/').next().unwrap(), b))
            .collect();
        let columns = fixture(&format!("{file}.columns.json"));
        let wanted = columns["trees"][0]["columns"].as_array().unwrap();
        assert_eq!(
            v["data"]["total_branches"].as_u64().unwrap() as usize,
            all.len()
        );
        for c in wanted {
            let b = listed[c["branch"].as_str().unwrap()];
            let typename = c["typename"].as_str().unwrap();
            // The file's streamer info declares this counter `int`; uproot reads
            // every counter (streamer type 6) as uint32.
            if file.contains("fullsplit") && c["branch"] == "N" {
                assert_eq!(listed["N"]["type"], "int32");
                continue;
            }
            assert_eq!(b["type"], numpy_type(typename), "{file} {}", c["branch"]);
            assert_eq!(
                b["is_jagged"],
                json!(c.get("counts_sha256").is_some()),
                "{file} {}",
                c["branch"]
            );
        }
    }
    let v = ok(
        &client,
        "list_branches",
        json!({"path": "root/uproot-HZZ.root", "tree": "events", "pattern": "Muon_P*"}),
    )
    .await;
    let names: Vec<&str> = v["data"]["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Muon_Px", "Muon_Py", "Muon_Pz"]);
    assert_eq!(v["data"]["matched"], 3);
    assert_eq!(v["data"]["total_branches"], 51);
    client.cancel().await.unwrap();
    if let Some(server) = &_server {
        server.assert_read_by_ranges();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_histograms_read_the_data() {
    stats_and_histograms_read_the_data_over(Over::Local).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_histograms_read_the_data_over_http() {
    stats_and_histograms_read_the_data_over(Over::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_histograms_read_the_data_over_s3() {
    if moto_server().is_none() {
        return;
    }
    stats_and_histograms_read_the_data_over(Over::S3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_histograms_read_the_data_over_xrootd() {
    stats_and_histograms_read_the_data_over(Over::Xrootd).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_histograms_read_the_data_over_xrootd_http() {
    stats_and_histograms_read_the_data_over(Over::XrootdHttp).await;
}

async fn stats_and_histograms_read_the_data_over(over: Over) {
    let mut s = Sandbox::with_testdata();
    let _server = s.serve_over(over);
    let client = s.mcp().await;
    wait_indexed(&client).await;

    // i4 holds -15..14 (30 entries): min -15, max 14, mean -0.5, std sqrt((30^2-1)/12).
    let v = ok(
        &client,
        "list_branches",
        json!({"path": "root/uproot-sample-6.20.04-uncompressed.root", "tree": "sample", "pattern": "i4", "include_stats": true}),
    )
    .await;
    assert_valid("list_branches.output.json", &v);
    let st = &v["data"]["branches"][0]["stats"];
    assert_eq!(
        (st["count"].as_u64(), st["min"].as_f64(), st["max"].as_f64()),
        (Some(30), Some(-15.0), Some(14.0))
    );
    assert!((st["mean"].as_f64().unwrap() + 0.5).abs() < 1e-12);
    assert!((st["std"].as_f64().unwrap() - ((900.0_f64 - 1.0) / 12.0).sqrt()).abs() < 1e-12);

    // Histogram "one" bin by bin against uproot (flow excluded; errors are sqrt of variances).
    let v = ok(
        &client,
        "read_histogram",
        json!({"path": "root/uproot-histograms.root", "name": "one"}),
    )
    .await;
    assert_valid("read_histogram.output.json", &v);
    let want = &fixture("uproot-histograms.root.hists.json")["histograms"][0];
    let values = want["values"].as_array().unwrap();
    let n = values.len();
    assert_eq!(v["data"]["bin_counts"], json!(values[1..n - 1]));
    assert_eq!(v["data"]["underflow"], values[0]);
    assert_eq!(v["data"]["overflow"], values[n - 1]);
    assert_eq!(v["data"]["bin_edges"], want["x"]["edges"]);
    let errors: Vec<f64> = want["variances"].as_array().unwrap()[1..n - 1]
        .iter()
        .map(|x| x.as_f64().unwrap().sqrt())
        .collect();
    assert_eq!(v["data"]["bin_errors"], json!(errors));
    client.cancel().await.unwrap();
    if let Some(server) = &_server {
        server.assert_read_by_ranges();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_tool_errors_use_the_spec_codes() {
    let s = Sandbox::with_testdata();
    let hzz = std::fs::read(s.root.join("root/uproot-HZZ.root")).unwrap();
    s.write("bad/cut.root", &hzz[..hzz.len() / 3]);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let cases = [
        (
            "inspect_file",
            json!({"path": "bad/cut.root"}),
            "corrupted_file",
        ),
        (
            "inspect_file",
            json!({"path": "root/none.root"}),
            "file_not_found",
        ),
        (
            "inspect_file",
            json!({"path": "docs/run_log_2024.txt"}),
            "file_not_found",
        ),
        (
            "inspect_file",
            json!({"path": "../outside.root"}),
            "permission_denied",
        ),
        (
            "list_branches",
            json!({"path": "root/uproot-HZZ.root", "tree": "nope"}),
            "tree_not_found",
        ),
        (
            "list_branches",
            json!({"path": "root/uproot-HZZ.root", "tree": "events", "limit": 5000}),
            "limit_exceeded",
        ),
        (
            "read_histogram",
            json!({"path": "root/uproot-histograms.root", "name": "four"}),
            "histogram_not_found",
        ),
    ];
    for (tool, args, code) in cases {
        let (v, is_error) = call(&client, tool, args.clone()).await;
        assert!(is_error, "{tool} {args}");
        assert_eq!(v["error"], code, "{tool} {args}: {v}");
        assert!(!v["suggestion"].as_str().unwrap().is_empty());
    }
    let (v, _) = call(
        &client,
        "list_branches",
        json!({"path": "root/uproot-HZZ.root", "tree": "nope"}),
    )
    .await;
    assert_eq!(v["details"]["available_trees"], json!(["events"]));
    client.cancel().await.unwrap();
}

/// The statistics rows cached for a file (all trees).
fn cached_stats(s: &Sandbox, rel: &str) -> usize {
    let catalog = quarry::catalog::Catalog::open_existing(&s.catalog).unwrap();
    let id = catalog.record(0, rel).unwrap().unwrap().id;
    catalog
        .kind_rows::<quarry::catalog::root::StatsRow>(quarry::catalog::root::ROOT_STATS, id, b"")
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jagged_statistics_cover_elements_and_multiplicity_and_are_cached() {
    jagged_statistics_cover_elements_and_multiplicity_and_are_cached_in(Form::TTree).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jagged_statistics_cover_elements_and_multiplicity_and_are_cached_on_rntuple() {
    jagged_statistics_cover_elements_and_multiplicity_and_are_cached_in(Form::RNTuple).await;
}

async fn jagged_statistics_cover_elements_and_multiplicity_and_are_cached_in(form: Form) {
    let s = Sandbox::with_testdata_as(form);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let args = json!({"path": "root/uproot-HZZ.root", "tree": "events", "pattern": "Jet_Px", "include_stats": true});
    let v = ok(&client, "list_branches", args.clone()).await;
    assert_valid("list_branches.output.json", &v);
    let st = &v["data"]["branches"][0]["stats"];
    // Expected values read with uproot + numpy (float64 arithmetic over the float32 values).
    let close = |got: &Value, want: f64| {
        assert!(
            (got.as_f64().unwrap() - want).abs() < 1e-9 * want.abs().max(1.0),
            "{got} vs {want}"
        )
    };
    assert_eq!(st["count"], 2773);
    close(&st["min"], -440.318_664_550_781_25);
    close(&st["max"], 503.405_548_095_703_1);
    close(&st["mean"], 1.238_701_014_149_110_6);
    close(&st["std"], 50.075_629_013_563_27);
    let m = &st["multiplicity"];
    assert_eq!(
        (m["count"].as_u64(), m["min"].as_f64(), m["max"].as_f64()),
        (Some(2421), Some(0.0), Some(5.0))
    );
    close(&m["mean"], 1.145_394_465_097_067_3);
    close(&m["std"], 0.976_557_345_782_493_3);
    // The second request is answered from the cache, identically.
    let again = ok(&client, "list_branches", args).await;
    assert_eq!(again["data"], v["data"]);
    client.cancel().await.unwrap();
    // Lazy (the default): the whole tree's statistics were stored on the first request.
    assert_eq!(cached_stats(&s, "root/uproot-HZZ.root"), 51);
    assert_eq!(cached_stats(&s, "root/uproot-Zmumu.root"), 0);
}

#[test]
fn eager_statistics_are_computed_in_the_background_and_off_caches_nothing() {
    for (mode, expect_cached) in [("eager", true), ("off", false)] {
        let s = Sandbox::with_testdata();
        // The RNTuple corpus holds a column of 10^8 entries in pages that
        // repeat one page (test_int_multicluster), whose statistics keep the
        // pass (in a debug build) past the seconds this test gives it to
        // reach the small Zmumu file.
        std::fs::remove_dir_all(s.root.join("rntuple")).unwrap();
        let config = s.tmp.path().join("q.toml");
        std::fs::write(&config, format!("[index]\nstats = \"{mode}\"\n")).unwrap();
        // The files are indexed first without statistics (rebuild, default lazy mode):
        // an eager daemon must also cover files that are unchanged when it starts.
        common::run_ok(
            common::quarry()
                .args(["rebuild", "--root", &s.root_arg(), "--catalog"])
                .arg(&s.catalog),
        );
        let mut daemon = common::quarry()
            .args(["serve", "--root", &s.root_arg(), "--config"])
            .arg(&config)
            .arg("--catalog")
            .arg(&s.catalog)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        common::wait_until(std::time::Duration::from_secs(20), || s.socket().exists());
        rt.block_on(async {
            let client = s.connect().await;
            wait_indexed(&client).await;
            if mode == "off" {
                let v = ok(&client, "list_branches", json!({"path": "root/uproot-Zmumu.root", "tree": "events", "pattern": "E1", "include_stats": true})).await;
                assert!(v["data"]["branches"][0]["stats"]["count"].as_u64().unwrap() > 0);
            } else {
                // Give the background pass time to reach the small Zmumu file.
                tokio::time::sleep(std::time::Duration::from_secs(3)).await;
            }
            client.cancel().await.unwrap();
        });
        // SAFETY: kill(2) on our child.
        unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
        daemon.wait().unwrap();
        let cached = cached_stats(&s, "root/uproot-Zmumu.root");
        assert_eq!(cached > 0, expect_cached, "mode {mode}: {cached} rows");
    }
}

/// The ROOT-written file (tests/data/root): list_branches types for leaf lists,
/// vectors and strings, and read_histogram on a TProfile (means of y = i % 7 per
/// bin of 50 entries, computed here) and a TProfile2D.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_and_written_branch_kinds_through_the_tools() {
    let s = Sandbox::new();
    let written = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/root/root-written-types.root"),
    )
    .unwrap();
    s.write("kinds/types.root", &written);
    let client = s.mcp().await;
    wait_indexed(&client).await;

    // inspect_file lists the profiles with the other histograms, valid per its schema.
    let v = ok(&client, "inspect_file", json!({"path": "kinds/types.root"})).await;
    assert_valid("inspect_file.output.json", &v);
    let classes: Vec<&str> = v["data"]["histograms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["type"].as_str().unwrap())
        .collect();
    assert_eq!(classes, ["TProfile", "TProfile", "TProfile2D", "TH1I"]);

    let v = ok(
        &client,
        "list_branches",
        json!({"path": "kinds/types.root", "tree": "types"}),
    )
    .await;
    assert_valid("list_branches.output.json", &v);
    let types: std::collections::HashMap<&str, &str> = v["data"]["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["name"].as_str().unwrap(), b["type"].as_str().unwrap()))
        .collect();
    for (name, want) in [
        ("point", "{y: float64, x: float32, n: int32}"),
        ("pair", "{a: int32[2], b: uint16}"),
        ("vf", "float32[]"),
        ("vi", "int32[]"),
        ("vd", "float64[]"),
        ("s", "string"),
        ("vs", "string[]"),
        ("vvf", "unsupported"),
        ("flag", "bool"),
        ("label", "string"),
        ("ev", "int64"),
    ] {
        assert_eq!(types[name], want, "{name}");
    }

    let v = ok(
        &client,
        "read_histogram",
        json!({"path": "kinds/types.root", "name": "prof"}),
    )
    .await;
    assert_valid("read_histogram.output.json", &v);
    let d = &v["data"];
    assert_eq!(
        (d["type"].as_str(), d["error_option"].as_str()),
        (Some("TProfile"), Some(""))
    );
    for bin in 0..10 {
        let mean = (bin * 50..bin * 50 + 50)
            .map(|i| f64::from(i % 7))
            .sum::<f64>()
            / 50.0;
        let got = d["bin_counts"][bin as usize].as_f64().unwrap();
        assert!((got - mean).abs() < 1e-12, "bin {bin}: {got} vs {mean}");
        assert_eq!(d["bin_entries"][bin as usize], 50.0);
    }
    let v = ok(
        &client,
        "read_histogram",
        json!({"path": "kinds/types.root", "name": "prof2d"}),
    )
    .await;
    assert_valid("read_histogram.output.json", &v);
    // z = i % 11 at x = i (4 bins of 125), y = i % 3: the mean of bin (x 0, y 0).
    let zs: Vec<f64> = (0..125)
        .filter(|i| i % 3 == 0)
        .map(|i| f64::from(i % 11))
        .collect();
    let mean = zs.iter().sum::<f64>() / zs.len() as f64;
    let got = v["data"]["counts"][0][0].as_f64().unwrap();
    assert!((got - mean).abs() < 1e-12, "{got} vs {mean}");
    assert_eq!(v["data"]["bin_entries"][0][0], zs.len() as f64);

    // `hi` was written twice: cycle 1 filled with i % 6 for 500 entries, cycle 2
    // with one more fill at 4.5 (the last bin). The name alone reads the highest.
    let last_bin = |v: &Value| v["data"]["bin_counts"][4].as_f64().unwrap();
    let by_name = ok(
        &client,
        "read_histogram",
        json!({"path": "kinds/types.root", "name": "hi"}),
    )
    .await;
    let first = ok(
        &client,
        "read_histogram",
        json!({"path": "kinds/types.root", "name": "hi;1"}),
    )
    .await;
    let second = ok(
        &client,
        "read_histogram",
        json!({"path": "kinds/types.root", "name": "hi;2"}),
    )
    .await;
    let fours = (0..500).filter(|i| i % 6 == 4).count() as f64;
    assert_eq!(last_bin(&first), fours);
    assert_eq!(last_bin(&second), fours + 1.0);
    assert_eq!(by_name["data"], second["data"]);
    let (v, is_error) = call(
        &client,
        "read_histogram",
        json!({"path": "kinds/types.root", "name": "hi;3"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(v["error"], "histogram_not_found");
    assert_eq!(v["details"]["available_cycles"], json!([2, 1]));
    client.cancel().await.unwrap();
}
