//! The ROOT tools on RNTuples beyond the copies of the TTree test files
//! (which the ROOT tool tests read in both forms): a field quarry cannot
//! read as a column (a streamer field of tests/data/rntuple/root-written-kinds.root,
//! written by ROOT 6.40 with values that are formulas of the entry number)
//! is refused as `unsupported_type` naming it, never misread; a record's
//! members are columns named with a dot; a NanoAOD looks the same as TTree
//! and as RNTuple; a stopped job stops an RNTuple scan.

use crate::common;

use std::path::Path;

use common::{Client, Sandbox, call, wait_indexed};
use serde_json::{Value, json};

const FILE: &str = "rntuple/kinds.root";

async fn serving_kinds() -> (Sandbox, Client) {
    let s = Sandbox::new();
    let data =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/rntuple/root-written-kinds.root");
    s.write(FILE, &std::fs::read(data).unwrap());
    let client = s.mcp().await;
    wait_indexed(&client).await;
    (s, client)
}

async fn answer(client: &Client, tool: &str, args: Value) -> (Value, bool) {
    let (v, is_error) = call(client, tool, args.clone()).await;
    common::assert_valid(&format!("{tool}.output.json"), &v);
    (v, is_error)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_fields_are_refused_by_name_and_the_others_read() {
    let (_s, client) = serving_kinds().await;
    let base = json!({"path": FILE, "tree": "kinds"});
    let with = |extra: Value| {
        let mut a = base.clone();
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    let (v, is_error) = answer(&client, "list_branches", with(json!({"limit": 100}))).await;
    assert!(!is_error, "{v}");
    let names: Vec<&str> = v["data"]["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"note") && names.contains(&"u16"), "{v}");
    assert_eq!(v["data"]["total_entries"], 50);

    // The streamer field, in a cut, as a value, read or summarised.
    for (tool, args) in [
        ("apply_selection", json!({"selection": "note > 0"})),
        ("compute_histogram", json!({"branch": "note", "bins": 4})),
        ("get_branch_stats", json!({"branches": ["note"]})),
        ("read_branches", json!({"branches": ["note"], "limit": 3})),
        ("sample_tree", json!({"branches": ["note"], "size": 3})),
        (
            "export_branches",
            json!({"branches": ["note"], "output_format": "json", "output_path": "note.json"}),
        ),
    ] {
        let (e, is_error) = call(&client, tool, with(args.clone())).await;
        assert!(is_error, "{tool} {args}: {e}");
        assert_eq!(e["error"], "unsupported_type", "{tool} {args}: {e}");
        assert!(
            e["message"].as_str().unwrap().contains("note"),
            "{tool}: {e}"
        );
    }

    // The uint16 field (SplitUInt16 pages): u16 = entry * 1000 % 65536 (the
    // script's formula), 0 to 49,000 over the 50 entries: 21 under 21,000.
    let (v, is_error) = answer(
        &client,
        "apply_selection",
        with(json!({"selection": "u16 < 21000"})),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["data"]["entries_selected"], 21, "{v}");
    let (v, is_error) = answer(
        &client,
        "read_branches",
        with(json!({"branches": ["u16"], "offset": 10, "limit": 2})),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_eq!(
        v["data"]["records"],
        json!([{"u16": 10000}, {"u16": 11000}]),
        "{v}"
    );
    client.cancel().await.unwrap();
}

/// A stopped job stops a scan of an RNTuple before it reads anything, as of
/// a TTree (tests/data/rntuple/copies/dimuon.root, three clusters).
#[test]
fn a_stopped_job_stops_the_scan_of_an_rntuple() {
    use quarry::analysis::dataset::Member;
    use quarry::analysis::ops::count_selected;
    use quarry::analysis::{AnalysisError, Plan, TreeColumns};
    use quarry::formats::root::rntuple::ANCHOR_CLASS;
    use quarry::formats::root::{RootFile, latest};
    use quarry::job::Job;

    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/rntuple/copies/dimuon.root");
    let file = RootFile::open(std::fs::File::open(p).unwrap()).unwrap();
    let keys = file.walk().unwrap();
    let key = latest(&keys, "Events", Some(ANCHOR_CLASS))
        .unwrap()
        .key
        .clone();
    let nt = file.rntuple(&key).unwrap();
    let columns = TreeColumns::of_ntuple(&nt);
    let plan = Plan::new("nMuon >= 2 && Sum$(Muon_pt > 20) > 0", &columns).unwrap();
    let member = Member::single(&file, &columns);
    // Unstopped, it reads every entry.
    let (counted, _) = count_selected(&member, &plan, &Job::default()).unwrap();
    assert_eq!(counted.scanned, 3000);
    let job = Job::default();
    job.cancel();
    let before = file.bytes_read();
    let e = count_selected(&member, &plan, &job).unwrap_err();
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
    assert_eq!(file.bytes_read(), before);
}

/// A record's members are columns named with a dot, as uproot names them:
/// tests/data/rntuple/uproot-written-zlib.root (scripts/fixtures/rntuple_values.py)
/// has `rec = {a: entry, b: entry / 8, missing where entry % 5 == 2}` over 65
/// entries in two clusters; the values below follow from that formula.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_members_are_columns_named_with_a_dot() {
    let s = Sandbox::new();
    let data =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/rntuple/uproot-written-zlib.root");
    s.write("rntuple/written.root", &std::fs::read(data).unwrap());
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let base = json!({"path": "rntuple/written.root", "tree": "ntuple"});
    let with = |extra: Value| {
        let mut a = base.clone();
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    let (v, is_error) = answer(&client, "list_branches", with(json!({"pattern": "rec.*"}))).await;
    assert!(!is_error, "{v}");
    let listed: Vec<(&str, &str)> = v["data"]["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["name"].as_str().unwrap(), b["type"].as_str().unwrap()))
        .collect();
    assert_eq!(listed, [("rec.a", "int64"), ("rec.b", "?float64")], "{v}");

    let (v, is_error) = answer(
        &client,
        "apply_selection",
        with(json!({"selection": "rec.a >= 60"})),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_eq!(
        (
            v["data"]["entries_selected"].as_u64(),
            v["data"]["entries_total"].as_u64()
        ),
        (Some(5), Some(65))
    );
    // rec.b is present in 52 entries (13 of the 65 have entry % 5 == 2).
    let (v, is_error) = answer(
        &client,
        "compute_histogram",
        with(json!({"branch": "rec.b", "bins": 2, "range": [0, 8]})),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["data"]["entries"], 52, "{v}");
    let (v, is_error) = answer(
        &client,
        "read_branches",
        with(json!({"branches": ["rec.a", "rec.b"], "offset": 2, "limit": 2})),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_eq!(
        v["data"]["records"],
        json!([{"rec.a": 2, "rec.b": []}, {"rec.a": 3, "rec.b": [0.375]}]),
        "{v}"
    );
    client.cancel().await.unwrap();
}

/// A NanoAOD as TTree (testdata/root/nanoAOD_2015_CMS_Open_Data_ttbar.root)
/// and as RNTuple (ROOT's RNTupleImporter, testdata/rntuple/cmsopendata2015_...)
/// list the branches they share (by name) with the same types, jaggedness
/// included: the two formats look the same to the tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nanoaod_lists_the_same_types_as_ttree_and_as_rntuple() {
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let mut listed = Vec::new();
    for path in [
        "root/nanoAOD_2015_CMS_Open_Data_ttbar.root",
        "rntuple/cmsopendata2015_ttbar_19980_NANOAOD_RNTupleImporter_rntuple_v1-0-0-1.root",
    ] {
        let mut all = std::collections::BTreeMap::new();
        let mut offset = 0;
        loop {
            let (v, is_error) = answer(
                &client,
                "list_branches",
                json!({"path": path, "tree": "Events", "limit": 1000, "offset": offset}),
            )
            .await;
            assert!(!is_error, "{v}");
            for b in v["data"]["branches"].as_array().unwrap() {
                let name = b["name"].as_str().unwrap().to_string();
                all.insert(name, (b["type"].clone(), b["is_jagged"].clone()));
            }
            match v["metadata"].get("next_offset") {
                Some(next) => offset = next.as_u64().unwrap(),
                None => break,
            }
        }
        listed.push(all);
    }
    let (ttree, rntuple) = (&listed[0], &listed[1]);
    let shared: Vec<&String> = ttree.keys().filter(|k| rntuple.contains_key(*k)).collect();
    assert!(shared.len() > 500, "{} shared", shared.len());
    for name in shared {
        assert_eq!(ttree[name], rntuple[name], "{name}");
    }

    // A cut over the counter and its collection, against uproot's values of
    // the RNTuple (tests/fixtures/rntuple/values.json, rntuple_values.py).
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rntuple/values.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let nano = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"].as_str().unwrap().contains("NANOAOD"))
        .unwrap();
    let field = |name: &str| {
        nano["ntuples"][0]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap()["values"]
            .as_array()
            .unwrap()
            .clone()
    };
    let (pts, counts) = (field("Muon_pt"), field("nMuon"));
    let want = pts
        .iter()
        .zip(&counts)
        .filter(|(pt, n)| {
            n.as_u64().unwrap() >= 1
                && pt
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p.as_f64().unwrap() > 20.0)
        })
        .count();
    let (v, is_error) = answer(
        &client,
        "apply_selection",
        json!({"path": "rntuple/cmsopendata2015_ttbar_19980_NANOAOD_RNTupleImporter_rntuple_v1-0-0-1.root",
               "tree": "Events", "selection": "nMuon >= 1 && Sum$(Muon_pt > 20) > 0"}),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["data"]["entries_selected"], json!(want), "{v}");
    assert_eq!(v["data"]["entries_total"], json!(counts.len()), "{v}");
    client.cancel().await.unwrap();
}
