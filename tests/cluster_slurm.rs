//! Dataset calls run on a real Slurm cluster (issue #33): the single-node
//! cluster `scripts/slurm-local.sh` starts, which `scripts/test.sh` brings up
//! for these tests alone (`QUARRY_SLURM_TESTS=1`, `SLURM_CONF` set). Outside
//! that block they skip, saying so; inside it a cluster that does not answer
//! fails them.
//!
//! The dataset is 40 copies of the HZZ sample (the same 2,421 events in six
//! compressions, `testdata/root`); the reference is the same call on the
//! local executor (itself checked against uproot in tests/root_datasets.rs).

use crate::common;

use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::raw::{Raw, serve_with, tool_call, wait_complete};
use common::{Daemon, Sandbox};
use serde_json::{Value, json};

/// The tests share one cluster and look at its whole queue: one at a time.
static CLUSTER: Mutex<()> = Mutex::new(());

const COMPRESSIONS: [&str; 6] = [
    "uproot-HZZ.root",
    "uproot-HZZ-zlib.root",
    "uproot-HZZ-lz4.root",
    "uproot-HZZ-zstd.root",
    "uproot-HZZ-lzma.root",
    "uproot-HZZ-uncompressed.root",
];

/// Whether the Slurm tests run here; panics when they should and the
/// cluster does not answer.
fn cluster_up() -> bool {
    if std::env::var_os("QUARRY_SLURM_TESTS").is_none() {
        eprintln!(
            "skipped: no test cluster (scripts/test.sh runs these in its Slurm block, with scripts/slurm-local.sh)"
        );
        return false;
    }
    let out = Command::new("sinfo").args(["-h", "-o", "%T"]).output();
    match out {
        Ok(o) if o.status.success() => true,
        other => panic!("QUARRY_SLURM_TESTS is set but sinfo fails: {other:?}"),
    }
}

/// A root of `n` files `hzz/fNN.root`, copies of the sample in turn.
fn sandbox(n: usize) -> Sandbox {
    let s = Sandbox::new();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/root");
    for k in 0..n {
        let bytes = std::fs::read(repo.join(COMPRESSIONS[k % COMPRESSIONS.len()])).unwrap();
        s.write(&format!("hzz/f{k:02}.root"), &bytes);
    }
    s
}

fn daemon(s: &Sandbox) -> Daemon {
    let d = serve_with(s, "[toolsets]\nrag = false\n", None);
    wait_complete(&s.socket());
    d
}

fn client(s: &Sandbox) -> Raw {
    let mut c = Raw::connect(&s.socket());
    c.stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .unwrap();
    c.initialize();
    c
}

/// A call's structured content; panics on an error answer.
fn ok(c: &mut Raw, id: u64, tool: &str, args: Value) -> Value {
    let v = c.call(id, tool, args);
    assert_eq!(v["result"]["isError"], false, "{tool}: {v}");
    v["result"]["structuredContent"].clone()
}

fn histogram_args(extra: Value) -> Value {
    let mut a = json!({
        "dataset": "hzz/*.root", "tree": "events", "branch": "Muon_Px", "bins": 40,
        "selection": "Muon_Py > -10 && NMuon >= 1", "weights": "Muon_E", "by_file": true,
    });
    a.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    a
}

/// Quarry's array tasks in the queue (`JOB_TASK`, pending blocks expanded
/// by squeue's own `-r`).
fn queued() -> Vec<String> {
    let out = Command::new("squeue")
        .args(["-h", "-r", "-n", "quarry", "-o", "%i %t"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Nothing of quarry's is left in the queue once the call has answered. A task whose
/// worker has written its result may still be listed for a moment, completing (its
/// epilogue and Slurm's bookkeeping), so this waits a little for the listing to empty.
fn assert_queue_drains() {
    let until = Instant::now() + Duration::from_secs(15);
    let mut left = queued();
    while !left.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(200));
        left = queued();
    }
    assert!(left.is_empty(), "still queued: {left:?}");
}

/// Numbers equal to 1e-12 of their size; everything else exactly.
fn assert_same(got: &Value, want: &Value, what: &str) {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) if !(a.is_u64() && b.is_u64()) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!(
                (a - b).abs() <= 1e-12 * a.abs().max(b.abs()),
                "{what}: {a} != {b}"
            );
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{what}");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert_same(x, y, &format!("{what}[{i}]"));
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            assert_eq!(
                a.keys().collect::<Vec<_>>(),
                b.keys().collect::<Vec<_>>(),
                "{what}"
            );
            for (k, y) in b {
                assert_same(&a[k], y, &format!("{what}.{k}"));
            }
        }
        _ => assert_eq!(got, want, "{what}"),
    }
}

/// The bins must be equal bit for bit, not merely close.
fn assert_bins_exact(got: &Value, want: &Value) {
    assert_eq!(got["data"]["bin_counts"], want["data"]["bin_counts"]);
    for key in ["entries", "underflow", "overflow"] {
        assert_eq!(got["data"][key], want["data"][key], "{key}");
    }
    for key in ["entries_scanned", "entries_selected"] {
        assert_eq!(got["metadata"][key], want["metadata"][key], "{key}");
    }
}

#[test]
fn forty_files_in_tasks_of_three_give_the_local_answer() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = sandbox(40);
    let d = daemon(&s);
    let mut c = client(&s);
    // With a range given, and without (a pass of its own for the range).
    for (n, range) in [(1, json!([-80.0, 80.0])), (3, Value::Null)] {
        let mut extra = json!({});
        if !range.is_null() {
            extra["range"] = range;
        }
        let local = ok(
            &mut c,
            n,
            "compute_histogram",
            histogram_args(extra.clone()),
        );
        extra["executor"] = json!("slurm");
        extra["files_per_job"] = json!(3);
        let slurm = ok(&mut c, n + 1, "compute_histogram", histogram_args(extra));
        assert_eq!(slurm["metadata"]["executor"], "slurm", "{slurm}");
        assert_eq!(slurm["metadata"]["jobs"], 14);
        assert_bins_exact(&slurm, &local);
        assert_same(&slurm["data"], &local["data"], "data");
    }
    let count = json!({"dataset": "hzz/*.root", "tree": "events",
                       "selection": "Sum$(Muon_Px > 20) >= 1", "by_file": true});
    let local = ok(&mut c, 5, "apply_selection", count.clone());
    let mut on_slurm = count;
    on_slurm["executor"] = json!("slurm");
    on_slurm["files_per_job"] = json!(3);
    let slurm = ok(&mut c, 6, "apply_selection", on_slurm);
    assert_eq!(slurm["data"], local["data"]);
    let flow = json!({"dataset": "hzz/*.root", "tree": "events", "weights": "MET_px",
                      "n_minus_one": true, "by_file": true,
                      "cuts": [{"name": "one", "cut": "NMuon >= 1"},
                               {"name": "px", "cut": "Sum$(Muon_Px > 20) >= 1"}]});
    let local = ok(&mut c, 7, "cutflow", flow.clone());
    let mut on_slurm = flow;
    on_slurm["executor"] = json!("slurm");
    on_slurm["files_per_job"] = json!(7);
    let slurm = ok(&mut c, 8, "cutflow", on_slurm);
    assert_same(&slurm["data"], &local["data"], "cutflow");
    assert_queue_drains();
    d.stop();
}

#[test]
fn a_task_cancelled_mid_run_is_submitted_again_and_the_answer_stays_exact() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = sandbox(40);
    let d = daemon(&s);
    let mut c = client(&s);
    let extra = json!({"range": [-80.0, 80.0]});
    let local = ok(
        &mut c,
        1,
        "compute_histogram",
        histogram_args(extra.clone()),
    );
    let socket = s.socket();
    let on_slurm = std::thread::spawn(move || {
        let mut c = client_at(&socket);
        let mut extra = extra;
        extra["executor"] = json!("slurm");
        extra["files_per_job"] = json!(2);
        ok(&mut c, 2, "compute_histogram", histogram_args(extra))
    });
    // The last of the 20 array tasks, while it waits for a core.
    let started = Instant::now();
    let victim = loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no task queued"
        );
        let pending: Vec<String> = queued()
            .into_iter()
            .filter(|l| l.ends_with(" PD"))
            .collect();
        if let Some(last) = pending.iter().find(|l| l.contains("_19 ")) {
            break last.split(' ').next().unwrap().to_string();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let cancelled = Command::new("scancel").arg(&victim).status().unwrap();
    assert!(cancelled.success());
    let slurm = on_slurm.join().unwrap();
    assert_eq!(slurm["metadata"]["jobs"], 20);
    assert!(slurm["metadata"].get("files_failed").is_none(), "{slurm}");
    assert_bins_exact(&slurm, &local);
    assert_same(&slurm["data"], &local["data"], "data");
    d.stop();
}

fn client_at(socket: &std::path::Path) -> Raw {
    let mut c = Raw::connect(socket);
    c.stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .unwrap();
    c.initialize();
    c
}

#[test]
fn cancelling_the_call_leaves_nothing_in_the_queue() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = sandbox(40);
    let d = daemon(&s);
    let mut c = client(&s);
    let mut call = tool_call(
        1,
        "compute_histogram",
        histogram_args(json!({"range": [-80.0, 80.0], "executor": "slurm", "files_per_job": 1})),
    );
    call["params"]["task"] = json!({ "ttl": 60_000 });
    c.send_json(&call);
    let created = c.answer(&json!(1)).0;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    let started = Instant::now();
    while queued().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(60), "never queued");
        std::thread::sleep(Duration::from_millis(50));
    }
    // tasks/get tells the array tasks by state.
    let started = Instant::now();
    loop {
        c.send_json(&json!({"jsonrpc": "2.0", "id": 10, "method": "tasks/get",
                            "params": {"taskId": id}}));
        let got = c.answer(&json!(10)).0;
        let status = got["result"]["statusMessage"].as_str().unwrap_or_default();
        if status.contains("40 array tasks") && status.contains("pending") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{got}");
        std::thread::sleep(Duration::from_millis(100));
    }
    c.send_json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/cancel",
                        "params": {"taskId": id}}));
    let cancelled = c.answer(&json!(2)).0;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let started = Instant::now();
    while !queued().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "still queued after the cancel: {:?}",
            queued()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The job's folder goes with it.
    let jobs = s.catalog.join("jobs");
    let started = Instant::now();
    while std::fs::read_dir(&jobs).map_or(0, |d| d.count()) > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "job folder kept"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    d.stop();
}

/// f07 (the zlib copy): its header and tree left intact (it indexes), its
/// first baskets overwritten, so reading them fails.
fn damage_f07(s: &Sandbox) {
    let damaged = s.root.join("hzz/f07.root");
    let mut bytes = std::fs::read(&damaged).unwrap();
    let half = bytes.len() / 2;
    bytes[400..half].fill(0x5a);
    std::fs::write(&damaged, &bytes).unwrap();
}

#[test]
fn a_damaged_file_is_named_and_the_others_merge() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = sandbox(12);
    damage_f07(&s);
    let d = daemon(&s);
    let mut c = client(&s);
    let cut = "Muon_Px > 10";
    let local = c.call(
        1,
        "apply_selection",
        json!({"dataset": "hzz/*.root", "tree": "events", "selection": cut}),
    );
    assert_eq!(
        local["result"]["isError"], true,
        "the local scan fails: {local}"
    );
    let slurm = ok(
        &mut c,
        2,
        "apply_selection",
        json!({"dataset": "hzz/*.root", "tree": "events", "selection": cut,
               "executor": "slurm", "files_per_job": 3, "by_file": true}),
    );
    let failed = &slurm["metadata"]["files_failed"];
    assert_eq!(failed.as_array().unwrap().len(), 1, "{slurm}");
    assert_eq!(failed[0]["file"], "hzz/f07.root");
    let others: Vec<String> = (0..12)
        .filter(|&k| k != 7)
        .map(|k| format!("hzz/f{k:02}.root"))
        .collect();
    let without = ok(
        &mut c,
        3,
        "apply_selection",
        json!({"dataset": others, "tree": "events", "selection": cut}),
    );
    assert_eq!(
        slurm["data"]["entries_selected"],
        without["data"]["entries_selected"]
    );
    d.stop();
}

/// A daemon starting again cancels the jobs an earlier one left queued (it
/// does not pick them up: the calls that wanted them are gone) and removes
/// their folders.
#[test]
fn a_restarted_daemon_cancels_the_jobs_left_behind() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = sandbox(2);
    let left = s.catalog.join("jobs/job-1-0");
    std::fs::create_dir_all(&left).unwrap();
    let out = Command::new("sbatch")
        .args([
            "--parsable",
            "--job-name=quarry",
            "--array=0-3",
            "--output=/dev/null",
            "--wrap",
            "sleep 300",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    std::fs::write(left.join("submitted"), format!("{id}\n")).unwrap();
    assert!(!queued().is_empty());
    let d = daemon(&s);
    let started = Instant::now();
    while !queued().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the old jobs still run: {:?}",
            queued()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!left.exists());
    d.stop();
}

/// get_branch_stats' count, mean, std, min and max on the cluster equal the
/// local executor's (counts, minima and maxima exactly, means and standard
/// deviations to 1e-12), each file's too; quantiles asked of the cluster
/// are refused, saying they run locally.
#[test]
fn branch_statistics_on_the_cluster_equal_the_local_ones() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = sandbox(12);
    let d = daemon(&s);
    let mut c = client(&s);
    let args = json!({"dataset": "hzz/*.root", "tree": "events", "by_file": true,
                      "branches": ["Muon_Px", "MET_px", "pt=hypot(Muon_Px, Muon_Py)"],
                      "selection": "NMuon >= 1 && MET_py > -30"});
    let local = ok(&mut c, 1, "get_branch_stats", args.clone());
    let mut on_slurm = args.clone();
    on_slurm["executor"] = json!("slurm");
    on_slurm["files_per_job"] = json!(5);
    let slurm = ok(&mut c, 2, "get_branch_stats", on_slurm.clone());
    assert_eq!(slurm["metadata"]["executor"], "slurm", "{slurm}");
    assert_eq!(slurm["metadata"]["jobs"], 3);
    let exact = |v: &Value| -> Vec<Value> {
        ["count", "min", "max"]
            .iter()
            .map(|k| v[k].clone())
            .collect()
    };
    for name in ["Muon_Px", "MET_px", "pt"] {
        let (got, want) = (
            &slurm["data"]["statistics"][name],
            &local["data"]["statistics"][name],
        );
        assert!(want["count"].as_u64().unwrap() > 0, "{name}: {want}");
        assert_eq!(exact(got), exact(want), "{name}");
        for k in 0..12 {
            let at = |v: &Value| v["data"]["by_file"][k]["statistics"][name].clone();
            assert_eq!(exact(&at(&slurm)), exact(&at(&local)), "{name} file {k}");
        }
    }
    assert_same(&slurm["data"], &local["data"], "data");
    for key in ["entries_scanned", "entries_selected"] {
        assert_eq!(slurm["metadata"][key], local["metadata"][key], "{key}");
    }
    // Quantiles take several passes: asked of the cluster, refused.
    on_slurm["quantiles"] = json!([0.5]);
    let refused = c.call(3, "get_branch_stats", on_slurm);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let e: Value =
        serde_json::from_str(refused["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(e["error"], "invalid_arguments", "{refused}");
    assert!(
        e["suggestion"]
            .as_str()
            .unwrap()
            .contains("executor='local'")
    );
    assert_queue_drains();
    d.stop();
}

/// `[executor] auto_above_gb`: a dataset call whose dry_run reads more bytes
/// than the threshold runs on Slurm without being asked, one below it runs
/// locally, and both answers equal the local executor's. Quantiles, which
/// the cluster does not compute, run locally with a note.
#[test]
fn calls_above_the_configured_size_go_to_the_cluster() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = sandbox(12);
    let two = json!(["hzz/f00.root", "hzz/f01.root"]);
    let hist = |dataset: Value, extra: Value| {
        let mut a = histogram_args(json!({"range": [-80.0, 80.0]}));
        a["dataset"] = dataset;
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    // The bytes dry_run says each call reads, and the local answers.
    let d = daemon(&s);
    let mut c = client(&s);
    let bytes = |c: &mut Raw, id, dataset: Value| {
        let v = ok(
            c,
            id,
            "compute_histogram",
            hist(dataset, json!({"dry_run": true})),
        );
        v["data"]["bytes_to_read"].as_u64().unwrap()
    };
    let (small, big) = (
        bytes(&mut c, 1, two.clone()),
        bytes(&mut c, 2, json!("hzz/*.root")),
    );
    assert!(small * 3 < big, "{small} {big}");
    let local_all = ok(
        &mut c,
        3,
        "compute_histogram",
        hist(json!("hzz/*.root"), json!({})),
    );
    let local_two = ok(&mut c, 4, "compute_histogram", hist(two.clone(), json!({})));
    // The histogram's columns: the same bytes, above the threshold.
    let stats = json!({"dataset": "hzz/*.root", "tree": "events", "selection": "NMuon >= 1",
                       "branches": ["Muon_Px", "Muon_Py", "Muon_E"], "quantiles": [0.25, 0.5]});
    let local_stats = ok(&mut c, 5, "get_branch_stats", stats.clone());
    d.stop();

    // A threshold between the two: the big call goes to Slurm by itself.
    let threshold_gb = (small + big) as f64 / 2.0 / 1e9;
    let config = format!("[toolsets]\nrag = false\n[executor]\nauto_above_gb = {threshold_gb}\n");
    let d = serve_with(&s, &config, None);
    wait_complete(&s.socket());
    let mut c = client(&s);
    let auto = ok(
        &mut c,
        1,
        "compute_histogram",
        hist(json!("hzz/*.root"), json!({})),
    );
    assert_eq!(auto["metadata"]["executor"], "slurm", "{auto}");
    assert_bins_exact(&auto, &local_all);
    assert_same(&auto["data"], &local_all["data"], "data");
    let below = ok(&mut c, 2, "compute_histogram", hist(two.clone(), json!({})));
    assert!(below["metadata"].get("executor").is_none(), "{below}");
    assert_same(&below["data"], &local_two["data"], "below");
    // Asked for by name, the local executor runs above the threshold too.
    let asked = ok(
        &mut c,
        3,
        "compute_histogram",
        hist(json!("hzz/*.root"), json!({"executor": "local"})),
    );
    assert!(asked["metadata"].get("executor").is_none(), "{asked}");
    assert_same(&asked["data"], &local_all["data"], "asked");
    let quantiles = ok(&mut c, 4, "get_branch_stats", stats);
    assert!(
        quantiles["metadata"].get("executor").is_none(),
        "{quantiles}"
    );
    assert_eq!(quantiles["data"], local_stats["data"]);
    let notes = quantiles["suggestions"].to_string();
    assert!(notes.contains("ran on this machine"), "{notes}");
    d.stop();
}

/// Files above `[executor] split_above_mb` are cut at cluster edges into
/// shares, a task each: two copies of `tests/data/root/dimuon.root` (3
/// clusters each) make 6 array tasks, and the histogram, the statistics and
/// each file's share equal the local executor's.
#[test]
fn big_files_cut_into_cluster_shares_give_the_local_answer() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = Sandbox::new();
    let source =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/root/dimuon.root");
    let bytes = std::fs::read(source).unwrap();
    for k in 0..2 {
        s.write(&format!("mu/d{k}.root"), &bytes);
    }
    // 1 kB: every cluster of every file a share of its own.
    let d = serve_with(
        &s,
        "[toolsets]\nrag = false\n[executor]\nsplit_above_mb = 0.001\n",
        None,
    );
    wait_complete(&s.socket());
    let mut c = client(&s);
    let hist = json!({"dataset": "mu/*.root", "tree": "Events", "branch": "Muon_pt", "bins": 50,
                      "range": [0.0, 100.0], "selection": "nMuon >= 1 && met > 10",
                      "weights": "met", "by_file": true});
    let stats = json!({"dataset": "mu/*.root", "tree": "Events", "by_file": true,
                       "branches": ["Muon_pt", "met"], "selection": "nMuon >= 1 && met > 10"});
    for (n, (tool, args)) in [("compute_histogram", hist), ("get_branch_stats", stats)]
        .into_iter()
        .enumerate()
    {
        let id = 2 * n as u64;
        let local = ok(&mut c, id + 1, tool, args.clone());
        let mut on_slurm = args;
        on_slurm["executor"] = json!("slurm");
        let slurm = ok(&mut c, id + 2, tool, on_slurm);
        assert_eq!(slurm["metadata"]["jobs"], 6, "{tool}: {slurm}");
        assert_same(&slurm["data"], &local["data"], tool);
        for key in ["entries_scanned", "entries_selected"] {
            assert_eq!(
                slurm["metadata"][key], local["metadata"][key],
                "{tool} {key}"
            );
        }
        if tool == "compute_histogram" {
            assert_bins_exact(&slurm, &local);
        } else {
            for name in ["Muon_pt", "met"] {
                let at = |v: &Value| v["data"]["statistics"][name].clone();
                let (got, want) = (at(&slurm), at(&local));
                for k in ["count", "min", "max"] {
                    assert_eq!(got[k], want[k], "{name} {k}");
                }
            }
        }
    }
    assert_queue_drains();
    d.stop();
}

/// A cluster call made as an MCP task: its merged answer is kept (in the
/// daemon) after the job's folder is gone, fetched as often as asked until
/// the task's ttl has passed after its end, and equals the local answer;
/// then the task is gone.
#[test]
fn a_cluster_task_result_is_kept_for_its_ttl() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = sandbox(6);
    let d = daemon(&s);
    let mut c = client(&s);
    let local = ok(
        &mut c,
        1,
        "compute_histogram",
        histogram_args(json!({"range": [-80.0, 80.0]})),
    );
    let mut call = tool_call(
        2,
        "compute_histogram",
        histogram_args(json!({"range": [-80.0, 80.0], "executor": "slurm", "files_per_job": 2})),
    );
    let ttl_ms = 4_000;
    call["params"]["task"] = json!({ "ttl": ttl_ms });
    c.send_json(&call);
    let created = c.answer(&json!(2)).0;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    let get = |c: &mut Raw, n: u64| {
        c.send_json(&json!({"jsonrpc": "2.0", "id": n, "method": "tasks/get",
                            "params": {"taskId": id}}));
        c.answer(&json!(n)).0
    };
    let started = Instant::now();
    let mut n = 10;
    while get(&mut c, n)["result"]["status"] != "completed" {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "never completed"
        );
        std::thread::sleep(Duration::from_millis(100));
        n += 1;
    }
    let ended = Instant::now();
    // The partial results went with the job's folder; the answer stays.
    assert_eq!(
        std::fs::read_dir(s.catalog.join("jobs")).map_or(0, |d| d.count()),
        0
    );
    for k in 0..2 {
        c.send_json(
            &json!({"jsonrpc": "2.0", "id": 100 + k, "method": "tasks/result",
                            "params": {"taskId": id}}),
        );
        let result = c.answer(&json!(100 + k)).0;
        let got = &result["result"]["structuredContent"];
        assert_eq!(got["metadata"]["executor"], "slurm", "{result}");
        assert_bins_exact(got, &local);
        assert_same(&got["data"], &local["data"], "data");
    }
    // Past the ttl after its end, the task and its answer are gone.
    std::thread::sleep(Duration::from_millis(ttl_ms + 500).saturating_sub(ended.elapsed()));
    let gone = get(&mut c, 200);
    assert!(gone.get("error").is_some(), "{gone}");
    d.stop();
}

/// A Parquet file's rows, read by the parquet crate (not quarry's code) in
/// one batch: files written in different row groups compare by value.
fn parquet_rows(path: &str) -> Vec<arrow_array::RecordBatch> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = std::fs::File::open(path).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .with_batch_size(1 << 30)
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// export_branches on the cluster: each task writes its files' rows to a
/// part, the daemon joins them in task order into the export folder. The
/// file equals the local executor's: byte for byte as CSV and JSON, value
/// for value as Parquet (read back by the parquet crate); with a limit
/// that falls inside the second task, the rows stop where the local
/// export's do.
#[test]
fn exports_on_the_cluster_equal_the_local_ones() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = sandbox(40);
    let d = daemon(&s);
    let mut c = client(&s);
    let mut id = 0;
    for format in ["csv", "json", "parquet"] {
        for limit in [None, Some(10_000)] {
            let mut args = json!({"dataset": "hzz/*.root", "tree": "events",
                "branches": ["Muon_Px", "MET_px", "NMuon", "e2=Muon_E*2", "Jet_Px"],
                "selection": "NMuon >= 1 && MET_px > -20", "by_file": true,
                "output_format": format, "output_path": format!("local.{format}")});
            if let Some(limit) = limit {
                args["limit"] = json!(limit);
            }
            id += 2;
            let local = ok(&mut c, id, "export_branches", args.clone());
            args["executor"] = json!("slurm");
            args["files_per_job"] = json!(3);
            args["output_path"] = json!(format!("slurm.{format}"));
            let slurm = ok(&mut c, id + 1, "export_branches", args);
            let what = format!("{format} limit {limit:?}");
            assert_eq!(slurm["metadata"]["executor"], "slurm", "{what}: {slurm}");
            assert_eq!(slurm["metadata"]["jobs"], 14, "{what}");
            assert_eq!(
                slurm["data"]["entries_written"], local["data"]["entries_written"],
                "{what}"
            );
            let per_file = |v: &Value| -> Vec<Value> {
                v["data"]["by_file"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["entries_written"].clone())
                    .collect()
            };
            assert_eq!(per_file(&slurm), per_file(&local), "{what}");
            assert_eq!(
                slurm["metadata"]["truncated"], local["metadata"]["truncated"],
                "{what}"
            );
            if let Some(limit) = limit {
                assert_eq!(local["data"]["entries_written"], limit, "{what}");
                assert_eq!(local["metadata"]["truncated"], true, "{what}");
            }
            let (got, want) = (
                slurm["data"]["output_path"].as_str().unwrap(),
                local["data"]["output_path"].as_str().unwrap(),
            );
            if format == "parquet" {
                let (got, want) = (parquet_rows(got), parquet_rows(want));
                assert_eq!(want.len(), 1, "{what}: one batch");
                assert!(want[0].num_rows() > 0, "{what}");
                assert_eq!(got, want, "{what}");
            } else {
                let (got, want) = (std::fs::read(got).unwrap(), std::fs::read(want).unwrap());
                assert!(want.len() > 1000, "{what}");
                assert!(got == want, "{what}: the files differ");
            }
        }
    }
    // The parts went with the job's folder.
    assert_eq!(
        std::fs::read_dir(s.catalog.join("jobs")).map_or(0, |d| d.count()),
        0
    );
    assert_queue_drains();
    d.stop();
}

/// Starts a cluster call as a task with `ttl_ms`; gives the task's id once
/// it has completed.
fn finished_cluster_task(c: &mut Raw, id: u64, ttl_ms: u64) -> String {
    let mut call = tool_call(
        id,
        "compute_histogram",
        histogram_args(json!({"range": [-80.0, 80.0], "executor": "slurm", "files_per_job": 2})),
    );
    call["params"]["task"] = json!({ "ttl": ttl_ms });
    c.send_json(&call);
    let created = c.answer(&json!(id)).0;
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    let started = Instant::now();
    for n in 0.. {
        let status = task_get(c, 1000 * id + n, &task);
        if status["result"]["status"] == "completed" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "never completed: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    task
}

fn task_get(c: &mut Raw, n: u64, task: &str) -> Value {
    c.send_json(&json!({"jsonrpc": "2.0", "id": n, "method": "tasks/get",
                        "params": {"taskId": task}}));
    c.answer(&json!(n)).0
}

/// A finished cluster task's answer is kept in the catalog folder: after the
/// daemon is stopped and started again, `tasks/get` says completed and
/// `tasks/result` gives the answer, equal to the local executor's. A task
/// whose ttl has passed while no daemon ran is gone at the start (its file
/// removed), and one expiring while the daemon runs is removed without any
/// request asking for it.
#[test]
fn finished_cluster_tasks_outlive_a_daemon_restart_within_their_ttl() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = sandbox(6);
    let stored = |task: &str| s.catalog.join(format!("tasks/{task}.json"));
    let d = daemon(&s);
    let mut c = client(&s);
    let local = ok(
        &mut c,
        1,
        "compute_histogram",
        histogram_args(json!({"range": [-80.0, 80.0]})),
    );
    let kept = finished_cluster_task(&mut c, 2, 3_600_000);
    let short = finished_cluster_task(&mut c, 3, 3_000);
    let short_ended = Instant::now();
    assert!(stored(&kept).exists() && stored(&short).exists());
    drop(c);
    d.stop();
    // The short one's ttl passes while no daemon runs.
    std::thread::sleep(Duration::from_millis(3_500).saturating_sub(short_ended.elapsed()));

    let d = daemon(&s);
    assert!(
        !stored(&short).exists(),
        "an expired result is removed at start"
    );
    let mut c = client(&s);
    let status = task_get(&mut c, 10, &kept);
    assert_eq!(status["result"]["status"], "completed", "{status}");
    c.send_json(
        &json!({"jsonrpc": "2.0", "id": 11, "method": "tasks/result",
                        "params": {"taskId": kept}}),
    );
    let result = c.answer(&json!(11)).0;
    let got = &result["result"]["structuredContent"];
    assert_eq!(got["metadata"]["executor"], "slurm", "{result}");
    assert_bins_exact(got, &local);
    assert_same(&got["data"], &local["data"], "data");
    let gone = task_get(&mut c, 12, &short);
    assert!(gone.get("error").is_some(), "{gone}");

    // Expiring while this daemon runs, with no request to notice: the
    // periodic sweep (every 30 s) removes its file.
    let brief = finished_cluster_task(&mut c, 4, 1_000);
    assert!(stored(&brief).exists());
    drop(c);
    let started = Instant::now();
    while stored(&brief).exists() {
        assert!(
            started.elapsed() < Duration::from_secs(45),
            "an expired result stays on disk"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(stored(&kept).exists());
    d.stop();
}

/// An export on the cluster with a damaged file (f07, as in
/// `a_damaged_file_is_named_and_the_others_merge`): the file is named in
/// `metadata.files_failed` and the export holds the other files' rows, as
/// the local export of those files writes them; a dataset of the damaged
/// file alone is a `corrupted_file` error naming it, and nothing is written.
#[test]
fn an_export_with_a_damaged_file_names_it_and_writes_the_others() {
    if !cluster_up() {
        return;
    }
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let s = sandbox(12);
    damage_f07(&s);
    let d = daemon(&s);
    let mut c = client(&s);
    let export = |dataset: Value, out: &str| {
        json!({"dataset": dataset, "tree": "events", "branches": ["Muon_Px", "NMuon"],
               "selection": "Muon_Px > 10", "output_format": "csv", "output_path": out})
    };
    let mut on_slurm = export(json!("hzz/*.root"), "slurm.csv");
    on_slurm["executor"] = json!("slurm");
    on_slurm["files_per_job"] = json!(3);
    let slurm = ok(&mut c, 1, "export_branches", on_slurm);
    let failed = &slurm["metadata"]["files_failed"];
    assert_eq!(failed.as_array().unwrap().len(), 1, "{slurm}");
    assert_eq!(failed[0]["file"], "hzz/f07.root");
    let others: Vec<String> = (0..12)
        .filter(|&k| k != 7)
        .map(|k| format!("hzz/f{k:02}.root"))
        .collect();
    let local = ok(
        &mut c,
        2,
        "export_branches",
        export(json!(others), "local.csv"),
    );
    assert_eq!(
        slurm["data"]["entries_written"],
        local["data"]["entries_written"]
    );
    // Rows without `_global_entry`, the last column: the cluster numbers the
    // entries in the whole dataset (f07's included), the local call in the
    // eleven files it was given.
    let rows = |v: &Value| -> Vec<String> {
        std::fs::read_to_string(v["data"]["output_path"].as_str().unwrap())
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(',').unwrap().0.to_string())
            .collect()
    };
    let (got, want) = (rows(&slurm), rows(&local));
    assert!(want.len() > 1000, "{}", want.len());
    assert!(got == want, "the rows differ");

    let mut alone = export(json!(["hzz/f07.root"]), "alone.csv");
    alone["executor"] = json!("slurm");
    let v = c.call(3, "export_branches", alone);
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("corrupted_file") && text.contains("f07.root"),
        "{text}"
    );
    let written = std::path::Path::new(slurm["data"]["output_path"].as_str().unwrap())
        .with_file_name("alone.csv");
    assert!(!written.exists());
    d.stop();
}
