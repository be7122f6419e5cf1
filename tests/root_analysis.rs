//! The analysis engine (cuts, histograms) against uproot + awkward + numpy: the
//! expected values in tests/fixtures/root/selections.json are written by
//! scripts/fixtures/root_selections.py, which computes each cut and histogram
//! with awkward arrays, independently of quarry.

use std::path::Path;

use quarry::analysis::dataset::Member;
use quarry::analysis::ops::{Axis, HistRequest, count_selected, histogram, histogram_2d};
use quarry::analysis::{AnalysisError, Plan, TreeColumns};
use quarry::formats::root::{RootFile, Tree, latest};
use quarry::job::Job;
use serde_json::Value;

fn fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/selections.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn open(rel: &str, tree: &str) -> (RootFile, Tree) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    let file = RootFile::open(std::fs::File::open(p).unwrap()).unwrap();
    let keys = file.walk().unwrap();
    let key = latest(&keys, tree, Some("TTree")).unwrap().key.clone();
    let t = file.tree(&key).unwrap();
    (file, t)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn assert_close(got: &[f64], want: &Value, what: &str) {
    let want: Vec<f64> = want
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(close(*g, *w), "{what}: bin {i}: {g} != {w}");
    }
}

fn error_code(e: &AnalysisError) -> &'static str {
    match e {
        AnalysisError::InvalidSelection { .. } => "invalid_selection",
        AnalysisError::BranchNotFound { .. } => "branch_not_found",
        AnalysisError::UnsupportedType { .. } => "unsupported_type",
        AnalysisError::Format(_) => "corrupted_file",
        AnalysisError::Stopped { .. } => "timeout",
        AnalysisError::TooLarge { .. } => "limit_exceeded",
    }
}

#[test]
fn cuts_select_what_awkward_selects() {
    let job = Job::default();
    let mut checked = 0;
    for f in fixture()["files"].as_array().unwrap() {
        let (file, tree) = open(f["file"].as_str().unwrap(), f["tree"].as_str().unwrap());
        let columns = TreeColumns::new(&tree);
        for c in f["cuts"].as_array().unwrap() {
            let cut = c["cut"].as_str().unwrap();
            let plan =
                Plan::new(cut, &columns).unwrap_or_else(|e| panic!("{}: {cut}: {e}", f["file"]));
            let n = count_selected(&Member::single(&file, &columns), &plan, &job)
                .unwrap_or_else(|e| panic!("{}: {cut}: {e}", f["file"]))
                .0;
            assert_eq!(n.scanned, f["entries"].as_u64().unwrap());
            assert_eq!(
                n.selected,
                c["selected"].as_u64().unwrap(),
                "{}: {cut}",
                f["file"]
            );
            checked += 1;
        }
        for e in f["errors"].as_array().unwrap() {
            let cut = e["cut"].as_str().unwrap();
            let got = Plan::new(cut, &columns)
                .and_then(|p| {
                    count_selected(&Member::single(&file, &columns), &p, &job).map(|_| ())
                })
                .expect_err(cut);
            assert_eq!(
                error_code(&got),
                e["error"].as_str().unwrap(),
                "{cut}: {got}"
            );
        }
    }
    assert!(checked >= 100, "{checked} cuts");
}

#[test]
fn histograms_match_numpy_bin_by_bin() {
    let job = Job::default();
    for f in fixture()["files"].as_array().unwrap() {
        let (file, tree) = open(f["file"].as_str().unwrap(), f["tree"].as_str().unwrap());
        let columns = TreeColumns::new(&tree);
        for h in f["histograms"].as_array().unwrap() {
            let what = format!("{}: {h}", f["file"]);
            let value = Plan::column(h["value"].as_str().unwrap(), &columns).unwrap();
            let cut = h
                .get("cut")
                .map(|c| Plan::new(c.as_str().unwrap(), &columns).unwrap());
            let weight = h
                .get("weights")
                .map(|w| Plan::new(w.as_str().unwrap(), &columns).unwrap());
            let req = HistRequest {
                value: &value,
                cut: cut.as_ref(),
                weight: weight.as_ref(),
                flatten: h.get("flatten").is_none_or(|f| f.as_bool().unwrap()),
            };
            let axis = Axis {
                bins: h["bins"].as_u64().unwrap() as usize,
                lo: h["range"][0].as_f64().unwrap(),
                hi: h["range"][1].as_f64().unwrap(),
            };
            let got = histogram(&Member::single(&file, &columns), &req, axis, &job).unwrap();
            assert_close(&axis.edges(), &h["bin_edges"], &what);
            assert_close(&got.counts, &h["bin_counts"], &what);
            let errors: Vec<f64> = got.sumw2.iter().map(|s| s.sqrt()).collect();
            assert_close(&errors, &h["bin_errors"], &what);
            assert!(
                close(got.underflow, h["underflow"].as_f64().unwrap()),
                "{what}"
            );
            assert!(
                close(got.overflow, h["overflow"].as_f64().unwrap()),
                "{what}"
            );
            assert_eq!(got.entries, h["entries"].as_u64().unwrap(), "{what}");
            assert!(
                close(got.sum_w, h["sum_weights"].as_f64().unwrap()),
                "{what}"
            );
            assert!(
                close(got.mean().unwrap(), h["mean"].as_f64().unwrap()),
                "{what}"
            );
            assert!(
                close(got.std().unwrap(), h["std"].as_f64().unwrap()),
                "{what}"
            );
        }
        for h in f["histograms_2d"].as_array().unwrap() {
            let what = format!("{}: {h}", f["file"]);
            let x = Plan::column(h["x"].as_str().unwrap(), &columns).unwrap();
            let y = Plan::column(h["y"].as_str().unwrap(), &columns).unwrap();
            let cut = h
                .get("cut")
                .map(|c| Plan::new(c.as_str().unwrap(), &columns).unwrap());
            let req = HistRequest {
                value: &x,
                cut: cut.as_ref(),
                weight: None,
                flatten: true,
            };
            let axis = |bins: &Value, range: &Value| Axis {
                bins: bins.as_u64().unwrap() as usize,
                lo: range[0].as_f64().unwrap(),
                hi: range[1].as_f64().unwrap(),
            };
            let axes = (
                axis(&h["bins"][0], &h["x_range"]),
                axis(&h["bins"][1], &h["y_range"]),
            );
            let got = histogram_2d(&Member::single(&file, &columns), &req, &y, axes, &job).unwrap();
            assert_eq!(got.entries, h["entries"].as_u64().unwrap(), "{what}");
            let want = h["counts"].as_array().unwrap();
            assert_eq!(got.counts.len(), want.len(), "{what}");
            for (row, w) in got.counts.iter().zip(want) {
                assert_close(row, w, &what);
            }
        }
    }
}

#[test]
fn a_stopped_job_stops_the_scan() {
    let (file, tree) = open("testdata/root/uproot-HZZ.root", "events");
    let columns = TreeColumns::new(&tree);
    let plan = Plan::new("NMuon > 0", &columns).unwrap();
    let job = Job::default();
    job.cancel();
    let e = count_selected(&Member::single(&file, &columns), &plan, &job).unwrap_err();
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
}

#[test]
fn unknown_names_come_with_the_closest_branches() {
    let (_, tree) = open("testdata/root/uproot-HZZ.root", "events");
    let columns = TreeColumns::new(&tree);
    let AnalysisError::BranchNotFound { closest, .. } =
        Plan::new("Muon_px > 1", &columns).unwrap_err()
    else {
        panic!()
    };
    assert_eq!(
        closest.first().map(String::as_str),
        Some("Muon_Px"),
        "{closest:?}"
    );
    let AnalysisError::InvalidSelection { message, .. } =
        Plan::new("Muon_Px > 0 && Jet_Px > 0", &columns).unwrap_err()
    else {
        panic!()
    };
    assert!(
        message.contains("Muon_Px") && message.contains("Jet_Px") && message.contains("Sum$"),
        "{message}"
    );
}

/// Random token soups (a fixed generator, so failures reproduce): the parser,
/// checker and evaluator answer each with a result or an error, never a panic.
/// `scripts/fuzz.sh 600 selection` runs the same over libFuzzer's inputs.
#[test]
fn random_cuts_never_panic() {
    const TOKENS: [&str; 34] = [
        "NMuon",
        "Muon_Px",
        "Jet_Px",
        "MET_px",
        "Muon_Px[1]",
        "(",
        ")",
        "&&",
        "||",
        "!",
        "+",
        "-",
        "*",
        "/",
        "%",
        "<",
        ">=",
        "==",
        "1",
        "2.5e1",
        ".5",
        "abs(",
        "TMath::Power(",
        ",",
        "Sum$(",
        "Length$(",
        "Alt$(",
        "MinIf$(",
        "[",
        "]",
        "$",
        "&",
        "\u{e9}",
        "nosuch",
    ];
    let (file, tree) = open("testdata/root/uproot-HZZ.root", "events");
    let columns = TreeColumns::new(&tree);
    let job = Job::default();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut evaluated = 0;
    for _ in 0..3000 {
        let len = 1 + next() % 12;
        let cut: Vec<&str> = (0..len)
            .map(|_| TOKENS[(next() % TOKENS.len() as u64) as usize])
            .collect();
        let cut = cut.join(if next() % 2 == 0 { " " } else { "" });
        if let Ok(plan) = Plan::new(&cut, &columns) {
            let _ = count_selected(&Member::single(&file, &columns), &plan, &job);
            evaluated += 1;
        }
    }
    assert!(evaluated > 50, "{evaluated} of the random cuts checked");
}

/// count, mean, std, min, max and exact quantiles (numpy's linear rule) match
/// numpy, in one pass when the values fit the buffer and by narrowing passes
/// when they do not (a buffer of 20 doubles, 40 floats, forces those).
#[test]
fn stats_and_exact_quantiles_match_numpy() {
    use quarry::analysis::quantiles::{DEFAULT_CAP, branch_stats};
    let job = Job::default();
    for f in fixture()["files"].as_array().unwrap() {
        let (file, tree) = open(f["file"].as_str().unwrap(), f["tree"].as_str().unwrap());
        let columns = TreeColumns::new(&tree);
        for s in f["stats"].as_array().unwrap() {
            let value = Plan::column(s["branch"].as_str().unwrap(), &columns).unwrap();
            let cut = s
                .get("cut")
                .map(|c| Plan::new(c.as_str().unwrap(), &columns).unwrap());
            let req = HistRequest {
                value: &value,
                cut: cut.as_ref(),
                weight: None,
                flatten: true,
            };
            let qs: Vec<f64> = s["quantiles"]
                .as_array()
                .unwrap()
                .iter()
                .map(|q| q.as_f64().unwrap())
                .collect();
            // The range numpy found (as the catalog's statistics would give it),
            // and one that does not hold every value (it must not be trusted).
            let exact = (s["min"].as_f64().unwrap(), s["max"].as_f64().unwrap());
            let short = (exact.0, (exact.0 + exact.1) / 2.0);
            let mut passes = Vec::new();
            for (cap, range) in [
                (DEFAULT_CAP, None),
                (DEFAULT_CAP, Some(exact)),
                (20, None),
                (20, Some(exact)),
                (20, Some(short)),
            ] {
                let what = format!("{}: {s} (buffer of {cap}, range {range:?})", f["file"]);
                let got = branch_stats(
                    &Member::single(&file, &columns),
                    &req,
                    &qs,
                    cap,
                    range,
                    &job,
                )
                .unwrap();
                passes.push(got.passes);
                assert_eq!(got.count, s["count"].as_u64().unwrap(), "{what}");
                if cap == 20 && range.is_none() {
                    assert!(got.passes > 1, "{what}");
                }
                if cap == DEFAULT_CAP {
                    assert_eq!(got.passes, 1, "{what}: the values fit, one pass");
                }
                for (g, k) in [
                    (got.mean, "mean"),
                    (got.std, "std"),
                    (got.min, "min"),
                    (got.max, "max"),
                ] {
                    assert!(close(g.unwrap(), s[k].as_f64().unwrap()), "{what}: {k}");
                }
                let quantiles: Vec<f64> = got.quantiles.iter().map(|q| q.unwrap()).collect();
                assert_close(&quantiles, &s["quantile_values"], &what);
            }
            // Values that do not fit are binned over a known range in the
            // first pass, which spares the narrowing one pass.
            assert!(
                passes[3] < passes[2],
                "{}: {s}: passes {passes:?}",
                f["file"]
            );
        }
    }
}
