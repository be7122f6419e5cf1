//! `compare_histograms` (issue #30, part 3) through MCP, against ROOT itself
//! (tests/fixtures/root/compare.json, from scripts/fixtures/root_compare.py,
//! which fills TH1Ds with the values uproot reads and runs TH1::Chi2Test and
//! TH1::KolmogorovTest): the bins compute_histogram's arguments give, the χ²
//! (UU, UW and WW, as ROOT chooses), ndf and p-values, the KS distance and
//! p-value, for computed and stored histograms; normalised shapes and ratios;
//! a picture on request; bins that differ refused.

use crate::common;

use std::path::Path;

use common::{Client, Sandbox, assert_valid, call, wait_indexed};
use serde_json::{Value, json};

fn fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/compare.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

async fn ok(client: &Client, args: Value) -> Value {
    let (v, is_error) = call(client, "compare_histograms", args.clone()).await;
    assert!(!is_error, "compare_histograms {args}: {v}");
    assert_valid("compare_histograms.output.json", &v);
    v
}

fn close(got: &Value, want: &Value, tolerance: f64, what: &str) {
    let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
    assert!(
        (g - w).abs() <= tolerance * g.abs().max(w.abs()).max(1e-300),
        "{what}: {g} != {w}"
    );
}

fn all_close(got: &Value, want: &Value, tolerance: f64, what: &str) {
    let (g, w) = (got.as_array().unwrap(), want.as_array().unwrap());
    assert_eq!(g.len(), w.len(), "{what}");
    for (i, (a, b)) in g.iter().zip(w).enumerate() {
        close(a, b, tolerance, &format!("{what}[{i}]"));
    }
}

/// The χ² and KS results of a comparison against ROOT's.
fn assert_tests(c: &Value, want: &Value, what: &str) {
    close(
        &c["chi2"]["chi2"],
        &want["chi2"]["chi2"],
        1e-9,
        &format!("{what} chi2"),
    );
    assert_eq!(c["chi2"]["ndf"], want["chi2"]["ndf"], "{what} ndf");
    close(
        &c["chi2"]["p_value"],
        &want["chi2"]["p_value"],
        1e-9,
        &format!("{what} chi2 p"),
    );
    close(
        &c["ks"]["distance"],
        &want["ks"]["distance"],
        1e-9,
        &format!("{what} KS distance"),
    );
    close(
        &c["ks"]["p_value"],
        &want["ks"]["p_value"],
        1e-7,
        &format!("{what} KS p"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computed_and_stored_histograms_test_as_root_tests_them() {
    let doc = fixture();
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    for case in doc["computed"].as_array().unwrap() {
        let what = case["name"].as_str().unwrap();
        let v = ok(&client, json!({"histograms": case["histograms"]})).await;
        let d = &v["data"];
        for k in 0..2 {
            let h = &d["histograms"][k];
            all_close(&h["bin_counts"], &case["bin_counts"][k], 1e-12, what);
            all_close(&h["bin_errors"], &case["bin_errors"][k], 1e-12, what);
            // The shape is the counts over their sum.
            let sum: f64 = h["bin_counts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .sum();
            for (s, c) in h["shape"]
                .as_array()
                .unwrap()
                .iter()
                .zip(h["bin_counts"].as_array().unwrap())
            {
                close(s, &json!(c.as_f64().unwrap() / sum), 1e-12, "shape");
            }
            // Its errors: ROOT's bin errors over the same sum.
            for (e, want) in h["shape_errors"]
                .as_array()
                .unwrap()
                .iter()
                .zip(case["bin_errors"][k].as_array().unwrap())
            {
                close(
                    e,
                    &json!(want.as_f64().unwrap() / sum),
                    1e-12,
                    "shape error",
                );
            }
        }
        let c = &d["comparisons"][0];
        assert_eq!(c["chi2"]["mode"], case["chi2"]["mode"], "{what}");
        assert_tests(c, case, what);
        // The ratio of the shapes, bin by bin.
        let (a, b) = (&d["histograms"][1]["shape"], &d["histograms"][0]["shape"]);
        let (ea, eb) = (
            &d["histograms"][1]["shape_errors"],
            &d["histograms"][0]["shape_errors"],
        );
        for (i, r) in c["ratio"].as_array().unwrap().iter().enumerate() {
            let (x, y) = (a[i].as_f64().unwrap(), b[i].as_f64().unwrap());
            if y == 0.0 {
                assert!(r.is_null());
            } else {
                close(r, &json!(x / y), 1e-12, "ratio");
                // Uncorrelated shapes: relative errors added in quadrature.
                let (sx, sy) = (ea[i].as_f64().unwrap(), eb[i].as_f64().unwrap());
                let want = x / y * ((sx / x).powi(2) + (sy / y).powi(2)).sqrt();
                close(&c["ratio_errors"][i], &json!(want), 1e-12, "ratio error");
            }
        }
    }
    let file = s.root.join("root/uproot-histograms.root");
    for case in doc["stored"].as_array().unwrap() {
        let items: Vec<Value> = case["names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| json!({"path": file, "name": n}))
            .collect();
        let v = ok(&client, json!({"histograms": items})).await;
        assert_eq!(v["data"]["histograms"][0]["source"], "stored");
        assert_tests(
            &v["data"]["comparisons"][0],
            case,
            &case["names"].to_string(),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_histograms_bins_serve_the_rest_and_a_plot_is_drawn() {
    let doc = fixture();
    let s = Sandbox::with_testdata();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let case = &doc["computed"][0];
    // The second histogram gives no range: it takes the first's.
    let v = ok(
        &client,
        json!({"histograms": case["histograms"], "plot": true, "tests": ["ks"]}),
    )
    .await;
    let d = &v["data"];
    assert!(d["comparisons"][0].get("chi2").is_none(), "{d}");
    assert!(d["plot"]["text"].as_str().unwrap().contains("h0"), "{d}");
    let png = d["plot"]["png"].as_str().unwrap();
    assert!(std::fs::read(png).unwrap().starts_with(b"\x89PNG"));

    // Other bins are refused, naming both.
    let mut other = case["histograms"].clone();
    other[1]["range"] = json!([-50.0, 50.0]);
    let (e, is_error) = call(&client, "compare_histograms", json!({"histograms": other})).await;
    assert!(is_error, "{e}");
    assert_eq!(e["error"], "invalid_arguments", "{e}");
    let (e, is_error) = call(
        &client,
        "compare_histograms",
        json!({"histograms": [case["histograms"][0]]}),
    )
    .await;
    assert!(is_error && e["error"] == "invalid_arguments", "{e}");
}
