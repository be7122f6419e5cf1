//! Fit benchmark (issue #30 part 4): a 100-bin gaussian + exponential extended
//! binned likelihood fit (5 parameters) with Hesse, timed in-process (the
//! server's time for fit_histogram on given bins is this fit): target ≤ 5 ms,
//! and ≥ 5× iminuit on the same cost (scripts/bench-fits.sh runs both,
//! interleaved). With `--coverage N` it fits N Poisson toys of the same truth
//! and prints how often the Hesse intervals cover it (target 68.3 % ± 3).
//!
//! `cargo bench --bench fits` times 200 fits; without `--bench` (as
//! `cargo test --all-targets` runs it) it checks itself on 3.

use std::time::Instant;

use quarry::fit::{self, CostKind, Histogram, MinosRequest, Request};
use serde_json::Value;

fn signal_background() -> (Vec<f64>, Vec<f64>) {
    let text = include_str!("../tests/fixtures/fit/fits.json");
    let doc: Value = serde_json::from_str(text).unwrap();
    let case = doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "signal_background")
        .unwrap();
    let numbers = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect::<Vec<_>>()
    };
    (numbers(&case["bin_edges"]), numbers(&case["counts"]))
}

fn request() -> Request<'static> {
    Request {
        model: "gaussian + exponential",
        extended: true,
        cost: CostKind::Poisson,
        overrides: Vec::new(),
        minos: MinosRequest::None,
    }
}

/// A small, seeded generator (xorshift64*), for the toys.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A Poisson variate by inversion of the CDF (means here are at most a few hundred).
    fn poisson(&mut self, mean: f64) -> f64 {
        let u = self.uniform();
        let (mut k, mut p) = (0u64, (-mean).exp());
        let mut cdf = p;
        while cdf < u && k < 100_000 {
            k += 1;
            p *= mean / k as f64;
            cdf += p;
        }
        k as f64
    }
}

fn coverage(toys: usize) {
    let (edges, counts) = signal_background();
    let truth_h = Histogram {
        edges: edges.clone(),
        counts,
        variances: None,
    };
    // The truth: the fit to the fixture's histogram, whose expected counts the toys sample.
    let truth = fit::fit(&truth_h, &request()).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let n = truth.params.len();
    let (mut covered, mut fitted) = (vec![0usize; n], 0usize);
    for _ in 0..toys {
        let counts: Vec<f64> = truth.expected.iter().map(|m| rng.poisson(*m)).collect();
        let h = Histogram {
            edges: edges.clone(),
            counts,
            variances: None,
        };
        let Ok(r) = fit::fit(&h, &request()) else {
            continue;
        };
        if !r.converged {
            println!(
                "not converged: {} at {:?}",
                r.reason.as_deref().unwrap_or("?"),
                r.params.iter().map(|p| p.value).collect::<Vec<_>>()
            );
            continue;
        }
        fitted += 1;
        for (k, p) in r.params.iter().enumerate() {
            if (p.value - truth.params[k].value).abs() <= p.error.unwrap_or(0.0) {
                covered[k] += 1;
            }
        }
    }
    println!("coverage_toys {toys} converged {fitted}");
    for (k, p) in truth.params.iter().enumerate() {
        let f = 100.0 * covered[k] as f64 / fitted.max(1) as f64;
        let ok = (f - 68.27).abs() <= 3.0;
        println!(
            "coverage {} {f:.1} % (target 68.3 +- 3: {})",
            p.name,
            if ok { "ok" } else { "MISSED" }
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--coverage") {
        let toys = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(1000);
        coverage(toys);
        return;
    }
    let full = args.iter().any(|a| a == "--bench");
    let rounds = if full { 200 } else { 3 };
    let (edges, counts) = signal_background();
    let h = Histogram {
        edges,
        counts,
        variances: None,
    };
    let mut times = Vec::with_capacity(rounds);
    let mut calls = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        let r = fit::fit(&h, &request()).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(r.converged, "{:?}", r.reason);
        calls = r.calls;
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!("quarry_fit_ms {median:.4}");
    println!("quarry_cost_calls {calls}");
    if full {
        println!(
            "target: <= 5 ms ({})",
            if median <= 5.0 { "met" } else { "MISSED" }
        );
    }
}
