//! Feeds arbitrary text to fit_histogram's model parser and fits what parses
//! to a small fixed histogram: a model string (shapes joined by `+`, or an
//! expression in x) and, for an expression, its evaluation with any start
//! values. Errors are expected; a panic, a hang or a runaway allocation is a
//! bug. The first byte picks extended or not and the cost.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry::fit::{self, CostKind, Histogram, MinosRequest, Request};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, text)) = data.split_first() else { return };
    let Ok(model) = std::str::from_utf8(text) else { return };
    if model.len() > 512 {
        return;
    }
    let h = Histogram {
        edges: (0..=12).map(|i| f64::from(i) * 0.5).collect(),
        counts: vec![0.0, 1.0, 4.0, 9.0, 15.0, 20.0, 14.0, 8.0, 3.0, 2.0, 0.0, 1.0],
        variances: None,
    };
    let request = Request {
        model,
        extended: flags & 1 == 1,
        cost: if flags & 2 == 2 { CostKind::Chi2 } else { CostKind::Poisson },
        overrides: Vec::new(),
        minos: if flags & 4 == 4 { MinosRequest::All } else { MinosRequest::None },
    };
    // The daemon's limit is 20 s of release time; under the sanitizers a
    // second is already several times the work a release fit gets.
    if let Ok(r) = fit::fit_within(&h, &request, std::time::Duration::from_secs(1)) {
        assert_eq!(r.expected.len(), 12);
        assert_eq!(r.params.len(), r.covariance.len());
    }
});
