//! Cluster skipping through MCP, on tests/data/root/clusters.root (40 clusters
//! of 1,500 entries): every cut selects what uproot + awkward say
//! (tests/fixtures/root/clusters.json, from scripts/fixtures/root_clusters.py)
//! whether or not the statistics allow skipping; a cluster is skipped only when
//! none of its entries passes, and a cut on one column against constants skips
//! every such cluster; the bytes read for a narrow cut are a small part of the
//! file; an export that skips clusters and stops at its limit mid-file writes
//! what uproot selects, and pages inside baskets hold what uproot reads there
//! (tests/fixtures/root/cluster_export.json, from
//! scripts/fixtures/root_cluster_export.py). A file rewritten in place (same
//! size, same inode, modification time put back) is never skipped on the
//! statistics of the version it replaced (tests/fixtures/root/rewrite.json,
//! from scripts/fixtures/root_rewrite.py).

use crate::common;

use std::path::Path;

use common::{Client, Form, Sandbox, call_ok as ok, wait_indexed};
use serde_json::{Value, json};

const FILE: &str = "root/clusters.root";

fn fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/clusters.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Cuts that compare one column with constants (through monotone functions):
/// the recorded ranges decide them exactly, so every cluster without a passing
/// entry must be skipped.
const DECIDED_EXACTLY: &[&str] = &[
    "event_number < 1000",
    "event_number >= 58500",
    "event_number > 5000 && event_number < 5200",
    "event_number == 12345",
    "event_number * 2 < 100",
    "event_number / 2 < 100",
    "event_number - 59000 > 0",
    "-event_number > -700",
    "met < 0",
    "min(met, 0) < -1",
    "run == 2",
    "run != 2",
    "!(run == 2)",
    "run == 1 && event_number < 16000",
    "muon_pt > 100",
    "muon_pt > 0",
    "!(muon_pt < 0)",
    "abs(muon_eta) > 2.45",
    "event_number < 31000 || muon_pt > 90",
    "Sum$(muon_pt > 0) == 0 && event_number > 29000",
];

/// A client of quarry serving a root that holds the clusters file, indexed.
async fn serving_clusters(s: &Sandbox) -> Client {
    serving_clusters_as(s, Form::TTree).await
}

/// The same, the file in `form` (its RNTuple copy has the same 40 clusters).
async fn serving_clusters_as(s: &Sandbox, form: Form) -> Client {
    let data = form.source("tests/data/root/clusters.root").unwrap();
    s.write(FILE, &std::fs::read(data).unwrap());
    let client = s.mcp().await;
    wait_indexed(&client).await;
    client
}

async fn select(client: &Client, cut: &str) -> Value {
    ok(
        client,
        "apply_selection",
        json!({"path": FILE, "tree": "events", "selection": cut}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cuts_skip_only_clusters_where_nothing_passes() {
    cuts_skip_only_clusters_where_nothing_passes_in(Form::TTree).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cuts_skip_only_clusters_where_nothing_passes_on_rntuple() {
    cuts_skip_only_clusters_where_nothing_passes_in(Form::RNTuple).await;
}

async fn cuts_skip_only_clusters_where_nothing_passes_in(form: Form) {
    let s = Sandbox::new();
    let client = serving_clusters_as(&s, form).await;
    let doc = fixture();
    let cuts = doc["cuts"].as_array().unwrap();

    // Before the statistics pass there is nothing to skip with: every entry
    // is read.
    let first = &cuts[0];
    let v = select(&client, first["cut"].as_str().unwrap()).await;
    assert_eq!(v["data"]["entries_selected"], first["selected"]);
    assert_eq!(v["metadata"]["clusters_skipped"], 0);
    assert_eq!(v["metadata"]["entries_scanned"], doc["entries"]);
    let cluster_size = doc["entries"].as_u64().unwrap() / doc["clusters"].as_u64().unwrap();

    // The statistics pass (lazy by default) records every basket's range.
    ok(
        &client,
        "list_branches",
        json!({"path": FILE, "tree": "events", "include_stats": true}),
    )
    .await;

    let mut skipped_total = 0;
    for c in cuts {
        let cut = c["cut"].as_str().unwrap();
        let v = select(&client, cut).await;
        assert_eq!(v["data"]["entries_selected"], c["selected"], "{cut}");
        assert_eq!(v["data"]["entries_total"], doc["entries"], "{cut}");
        let skipped = v["metadata"]["clusters_skipped"].as_u64().unwrap();
        let with_none = c["clusters_with_none"].as_u64().unwrap();
        assert!(
            skipped <= with_none,
            "{cut}: skipped {skipped} of {with_none} empty clusters"
        );
        // Only the clusters read count as scanned.
        let scanned = v["metadata"]["entries_scanned"].as_u64().unwrap();
        assert_eq!(
            scanned,
            doc["entries"].as_u64().unwrap() - skipped * cluster_size,
            "{cut}"
        );
        if DECIDED_EXACTLY.contains(&cut) {
            assert_eq!(skipped, with_none, "{cut}");
            // The clusters holding a passing entry, as uproot finds them.
            let clusters = doc["clusters"].as_u64().unwrap();
            assert_eq!(scanned, (clusters - with_none) * cluster_size, "{cut}");
        }
        skipped_total += skipped;
    }
    assert!(skipped_total > 400, "{skipped_total}");

    // A dry run says as much from the catalog (and an RNTuple's footer),
    // reading no data.
    let narrow = cuts
        .iter()
        .find(|c| c["cut"] == "event_number < 1000")
        .unwrap();
    let v = ok(
        &client,
        "apply_selection",
        json!({"path": FILE, "tree": "events", "selection": narrow["cut"], "dry_run": true}),
    )
    .await;
    let d = &v["data"];
    assert_eq!(d["dry_run"], true, "{v}");
    assert_eq!(d["entries"], doc["entries"], "{v}");
    assert_eq!(d["clusters"], doc["clusters"], "{v}");
    assert_eq!(d["clusters_skipped"], narrow["clusters_with_none"], "{v}");
    let to_read = d["bytes_to_read"].as_u64().unwrap();
    assert!(
        to_read > 0 && to_read * 20 <= doc["size_bytes"].as_u64().unwrap(),
        "{v}"
    );

    // A cut on the first clusters reads a few percent of the file.
    let v = select(&client, "event_number < 1000").await;
    let read = v["metadata"]["bytes_read"].as_u64().unwrap();
    let size = doc["size_bytes"].as_u64().unwrap();
    assert!(read * 20 <= size, "read {read} of {size} bytes");

    // A histogram with a skipping cut, bin by bin.
    let h = &doc["histogram"];
    let v = ok(
        &client,
        "compute_histogram",
        json!({"path": FILE, "tree": "events", "branch": h["branch"], "bins": h["bins"],
               "range": h["range"], "selection": h["selection"]}),
    )
    .await;
    assert_eq!(v["metadata"]["clusters_skipped"], 38);
    // Clusters are read in parallel and merged in entry order: the same
    // answer every time, to the last bit.
    let again = ok(
        &client,
        "compute_histogram",
        json!({"path": FILE, "tree": "events", "branch": "met", "bins": 50}),
    )
    .await;
    for _ in 0..3 {
        let v2 = ok(
            &client,
            "compute_histogram",
            json!({"path": FILE, "tree": "events", "branch": "met", "bins": 50}),
        )
        .await;
        assert_eq!(v2["data"], again["data"]);
    }
    let counts: Vec<f64> = v["data"]["bin_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let want: Vec<f64> = h["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(counts, want);
    assert_eq!(
        v["data"]["overflow"].as_f64().unwrap(),
        h["overflow"].as_f64().unwrap()
    );

    // A page of a selection that only the last cluster passes.
    let v = ok(
        &client,
        "read_branches",
        json!({"path": FILE, "tree": "events", "branches": ["event_number"],
               "selection": "event_number >= 58500", "offset": 10, "limit": 3}),
    )
    .await;
    assert_eq!(v["metadata"]["clusters_skipped"], 39);
    assert_eq!(v["metadata"]["entries_scanned"], 1500);
    assert_eq!(v["metadata"]["entries_selected"], 1500);
    let rows = v["data"]["records"].as_array().unwrap();
    let got: Vec<i64> = rows
        .iter()
        .map(|r| r["event_number"].as_i64().unwrap())
        .collect();
    assert_eq!(got, [58510, 58511, 58512]);
}

/// Everything an export wrote, as (event_number, met, muon_pt) rows.
type Exported = Vec<(i64, f64, Vec<f64>)>;

fn exported_json(path: &Path) -> Exported {
    let records: Vec<Value> = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    records
        .iter()
        .map(|r| {
            let pt = r["muon_pt"].as_array().unwrap();
            (
                r["event_number"].as_i64().unwrap(),
                r["met"].as_f64().unwrap(),
                pt.iter().map(|x| x.as_f64().unwrap()).collect(),
            )
        })
        .collect()
}

fn exported_parquet(path: &Path) -> Exported {
    use arrow_array::{Array, Float32Array, Int64Array, ListArray};
    let mut out = Vec::new();
    for batch in common::parquet_batches(path) {
        let column = |name: &str| batch.column_by_name(name).unwrap().clone();
        let (event, met, pt) = (column("event_number"), column("met"), column("muon_pt"));
        let event = event.as_any().downcast_ref::<Int64Array>().unwrap();
        let met = met.as_any().downcast_ref::<Float32Array>().unwrap();
        let pt = pt.as_any().downcast_ref::<ListArray>().unwrap();
        for i in 0..batch.num_rows() {
            let muons = pt.value(i);
            let muons = muons.as_any().downcast_ref::<Float32Array>().unwrap();
            out.push((
                event.value(i),
                f64::from(met.value(i)),
                muons.iter().map(|x| f64::from(x.unwrap())).collect(),
            ));
        }
    }
    out
}

fn export_fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/cluster_export.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Pages that start inside a basket, cross into the next one, or end at the
/// last entry hold what uproot reads there: the baskets are decompressed only
/// up to the page, the jagged branch's through the counts its counter gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_inside_baskets_read_what_uproot_reads() {
    let s = Sandbox::new();
    let client = serving_clusters(&s).await;
    let want = export_fixture();
    for page in want["pages"].as_array().unwrap() {
        let v = ok(
            &client,
            "read_branches",
            json!({"path": FILE, "tree": "events", "branches": want["branches"],
                   "offset": page["offset"], "limit": page["limit"]}),
        )
        .await;
        assert_eq!(v["data"]["records"], page["records"], "{page}");
    }
}

/// An export without a selection reads the entries up to its limit and no
/// further: not the next cluster (which a sequential scan decodes ahead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_of_the_first_entries_reads_no_further() {
    let s = Sandbox::new();
    let client = serving_clusters(&s).await;
    let size = fixture()["size_bytes"].as_u64().unwrap();
    let v = ok(
        &client,
        "export_branches",
        json!({"path": FILE, "tree": "events", "branches": ["event_number", "met", "muon_pt"],
               "limit": 1500, "output_format": "parquet", "output_path": "first.parquet"}),
    )
    .await;
    assert_eq!(v["data"]["entries_written"], 1500);
    assert_eq!(v["metadata"]["entries_scanned"], 1500);
    // The first of 40 clusters and the tree's own records: 34 kB of the
    // file's 1.49 MB; with the next cluster's baskets too, 51 kB.
    let read = v["metadata"]["bytes_read"].as_u64().unwrap();
    assert!(read * 35 <= size, "read {read} of {size} bytes");
}

/// An export that skips clusters and stops at its limit in the middle of the
/// file writes exactly the entries uproot selects (the scan decodes the next
/// cluster while the current one is written, and must neither lose, repeat
/// nor reorder an entry, nor hang when the writer stops early).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_across_clusters_stop_at_their_limit() {
    let s = Sandbox::new();
    let client = serving_clusters(&s).await;
    let want = export_fixture();
    ok(
        &client,
        "list_branches",
        json!({"path": FILE, "tree": "events", "include_stats": true}),
    )
    .await;
    for format in ["json", "parquet"] {
        let v = ok(
            &client,
            "export_branches",
            json!({"path": FILE, "tree": "events", "branches": want["branches"],
                   "selection": want["selection"], "limit": want["limit"],
                   "output_format": format, "output_path": format!("across.{format}")}),
        )
        .await;
        assert_eq!(v["data"]["entries_written"], want["entries"], "{format}");
        assert!(
            v["metadata"]["clusters_skipped"].as_u64().unwrap() >= 5,
            "{v}"
        );
        let written = Path::new(v["data"]["output_path"].as_str().unwrap());
        let rows = match format {
            "json" => exported_json(written),
            _ => exported_parquet(written),
        };
        assert_eq!(rows.len() as u64, want["entries"].as_u64().unwrap());
        assert!(
            rows.windows(2).all(|w| w[0].0 < w[1].0),
            "{format}: entries in order"
        );
        assert_eq!(rows[0].0, want["first_event"].as_i64().unwrap());
        assert_eq!(rows.last().unwrap().0, want["last_event"].as_i64().unwrap());
        let events: i64 = rows.iter().map(|r| r.0).sum();
        assert_eq!(
            events,
            want["event_number_sum"].as_i64().unwrap(),
            "{format}"
        );
        let close = |got: f64, key: &str| {
            let w = want[key].as_f64().unwrap();
            assert!(
                (got - w).abs() <= 1e-9 * w.abs(),
                "{format} {key}: {got} != {w}"
            );
        };
        close(rows.iter().map(|r| r.1).sum(), "met_sum");
        let muons: Vec<f64> = rows.iter().flat_map(|r| r.2.iter().copied()).collect();
        assert_eq!(
            muons.len() as u64,
            want["muons"].as_u64().unwrap(),
            "{format}"
        );
        close(muons.iter().sum(), "muon_pt_sum");
        assert!(rows.iter().all(|r| r.2.iter().any(|&pt| pt > 20.0)));
    }
}

fn rewrite_fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/rewrite.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn test_data(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/root")
            .join(name),
    )
    .unwrap()
}

/// Overwrites `path` in place with `bytes` (the same length: same inode, same
/// size) and puts its modification time back, as an in-place save can: only
/// the change time, which no process can set, tells the versions apart.
fn rewrite_in_place(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let before = std::fs::metadata(path).unwrap();
    assert_eq!(
        before.len(),
        bytes.len() as u64,
        "a rewrite of the same size"
    );
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
    f.set_modified(before.modified().unwrap()).unwrap();
    drop(f);
    let after = std::fs::metadata(path).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (after.len(), after.ino(), after.modified().unwrap()),
        (before.len(), before.ino(), before.modified().unwrap())
    );
}

/// Each cut of the fixture on `file`: selected as uproot says for `version`,
/// with the clusters skipped and the entries read that `skipping` implies
/// (every cluster without a passing entry skipped, or none).
async fn check_cuts(client: &Client, file: &str, want: &Value, version: &str, skipping: bool) {
    let entries = want["entries"].as_u64().unwrap();
    for (cut, c) in want["files"][version]["cuts"].as_object().unwrap() {
        let v = ok(
            client,
            "apply_selection",
            json!({"path": file, "tree": "events", "selection": cut}),
        )
        .await;
        let what = format!("{cut} on version {version} (skipping: {skipping}): {v}");
        assert_eq!(v["data"]["entries_selected"], c["selected"], "{what}");
        assert_eq!(v["data"]["entries_total"], want["entries"], "{what}");
        let (skipped, scanned) = if skipping {
            (
                c["clusters_with_none"].as_u64().unwrap(),
                c["entries_in_clusters_read"].as_u64().unwrap(),
            )
        } else {
            (0, entries)
        };
        assert_eq!(v["metadata"]["clusters_skipped"], skipped, "{what}");
        assert_eq!(v["metadata"]["entries_scanned"], scanned, "{what}");
    }
}

/// A daemon that re-indexes changed files only after ten minutes of quiet:
/// every call in these tests comes before the watcher acts on a rewrite.
fn slow_watcher(s: &Sandbox, stats: &str) -> common::Daemon {
    let config = format!("[index]\nsettle_ms = 600000\nstats = \"{stats}\"\n");
    common::raw::serve_with(s, &config, None)
}

/// A daemon whose watcher waits (see `slow_watcher`), with a client, once `file`'s
/// statistics are computed and stored (lazily, by `list_branches`).
async fn served_with_statistics(s: &Sandbox, file: &str) -> (common::Daemon, common::Client) {
    let daemon = slow_watcher(s, "lazy");
    let client = s.connect().await;
    wait_indexed(&client).await;
    ok(
        &client,
        "list_branches",
        json!({"path": file, "tree": "events", "include_stats": true}),
    )
    .await;
    (daemon, client)
}

fn stop(s: &Sandbox, daemon: common::Daemon) {
    daemon.stop();
    common::wait_until(std::time::Duration::from_secs(10), || !s.socket().exists());
}

/// Statistics recorded for one version of a file rule out none of the
/// clusters of the version that replaced it in place, though the size, inode
/// and modification time are the same, right after the rewrite (before any
/// re-index): counts are uproot's and every entry is read. A restart
/// re-indexes the new version (its change time moved), and its own
/// statistics skip again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_in_place_is_never_skipped_on_the_old_statistics() {
    const FILE: &str = "root/rewritten.root";
    let want = rewrite_fixture();
    let s = Sandbox::new();
    let path = s.write(FILE, &test_data("rewrite_a.root"));
    let (daemon, client) = served_with_statistics(&s, FILE).await;
    check_cuts(&client, FILE, &want, "a", true).await;

    rewrite_in_place(&path, &test_data("rewrite_b.root"));
    check_cuts(&client, FILE, &want, "b", false).await;
    client.cancel().await.unwrap();
    stop(&s, daemon);

    let (daemon, client) = served_with_statistics(&s, FILE).await;
    check_cuts(&client, FILE, &want, "b", true).await;
    client.cancel().await.unwrap();
    stop(&s, daemon);
}

/// Statistics computed on request from a file rewritten in place since it was
/// indexed describe the version read, so they are not stored against the
/// version the catalog knows: after a second rewrite back to that version's
/// bytes (same size, inode and modification time all along), a cut reads
/// every cluster and counts what uproot counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_of_a_rewritten_file_are_not_kept_for_the_old_version() {
    const FILE: &str = "root/rewritten.root";
    let want = rewrite_fixture();
    let s = Sandbox::new();
    let path = s.write(FILE, &test_data("rewrite_a.root"));
    let daemon = slow_watcher(&s, "lazy");
    let client = s.connect().await;
    wait_indexed(&client).await;

    rewrite_in_place(&path, &test_data("rewrite_b.root"));
    let v = ok(
        &client,
        "list_branches",
        json!({"path": FILE, "tree": "events", "pattern": "x", "include_stats": true}),
    )
    .await;
    // The statistics of what is on disk now (x runs over 0..1999 either way).
    let stats = &v["data"]["branches"][0]["stats"];
    assert_eq!(
        (stats["min"].as_f64(), stats["max"].as_f64()),
        (Some(0.0), Some(1999.0))
    );

    rewrite_in_place(&path, &test_data("rewrite_a.root"));
    check_cuts(&client, FILE, &want, "a", false).await;
    client.cancel().await.unwrap();
    stop(&s, daemon);
}
