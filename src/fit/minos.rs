//! Minos: asymmetric errors from the profile of the cost. For each side, the
//! parameter is fixed at trial values and the others minimised again until the
//! profile rises by 1 (Δ(−2 ln L) = 1, or Δχ² = 1) above the minimum.

use super::minimise::{Cost, Internal, Param, call_limit, migrad};

/// Trials per side at most.
const TRIALS: usize = 12;
/// How close to 1 the rise must be.
const TOLERANCE: f64 = 1e-4;

/// One side of a Minos interval: the signed distance from the best value,
/// whether it stopped at a limit, whether the profile was found, and the cost
/// evaluations it took.
#[derive(Debug, Clone, Copy)]
pub struct Side {
    pub error: f64,
    pub at_limit: bool,
    pub valid: bool,
    pub calls: usize,
}

/// The minimum Minos profiles around: the cost, the parameters as fitted,
/// their best values and covariance, and the cost there.
pub struct Around<'a> {
    pub cost: Cost<'a>,
    pub params: &'a [Param],
    pub best: &'a [f64],
    pub cov: &'a [Vec<f64>],
    pub fmin: f64,
    /// When the whole fit must end.
    pub deadline: Option<std::time::Instant>,
}

/// The profile's minimum with parameter `i` fixed at `v`, and the cost
/// evaluations it took.
fn profile(at: &Around<'_>, i: usize, v: f64, budget: usize) -> (f64, usize) {
    let Around {
        cost,
        params,
        best,
        cov,
        ..
    } = *at;
    let shift = v - best[i];
    let trial: Vec<Param> = params
        .iter()
        .enumerate()
        .map(|(j, p)| {
            let mut q = *p;
            if j == i {
                q.value = v;
                q.fixed = true;
            } else if !p.fixed {
                // Start the others where the covariance says they go.
                let moved = best[j] + cov[j][i] / cov[i][i] * shift;
                q.value = q.internal(moved);
                q.value = q.external(q.value);
            }
            q
        })
        .collect();
    let mut f = Internal::new(cost, &trial);
    f.limit = f.limit.min(budget);
    f.deadline = at.deadline;
    let fval = migrad(&f, f.start()).fval;
    (fval, *f.calls.borrow())
}

/// The evaluations all Minos intervals of one fit may take together, for `n`
/// free parameters: Minuit's default for one parameter's interval,
/// 2(n + 1)(200 + 100n + 5n²) a side (our Migrad limit is five times Minuit's,
/// hence the division). A model with redundant parameters can pass Hesse by
/// rounding and then send every profile along a flat valley to its limit;
/// sharing one budget bounds that at a few times the fit's own cost, while
/// a well-behaved fit's intervals take a small part of it.
pub fn budget(n: usize) -> usize {
    4 * (n + 1) * call_limit(n) / 5
}

/// Minos for parameter `i` on side `sign` (−1 or +1), within `budget`
/// evaluations.
pub fn side(at: &Around<'_>, i: usize, sign: f64, budget: usize) -> Side {
    let Around {
        params,
        best,
        cov,
        fmin,
        ..
    } = *at;
    let sigma = cov[i][i].sqrt();
    if sigma.is_nan() || sigma <= 0.0 {
        return Side {
            error: 0.0,
            at_limit: false,
            valid: false,
            calls: 0,
        };
    }
    let limit = if sign > 0.0 {
        params[i].upper
    } else {
        params[i].lower
    };
    let mut delta = sigma;
    let mut spent = 0;
    for _ in 0..TRIALS {
        if spent >= budget || at.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            break;
        }
        let mut v = best[i] + sign * delta;
        let mut clamped = false;
        if let Some(l) = limit
            && sign * (v - l) >= 0.0
        {
            v = l;
            clamped = true;
        }
        let (fval, calls) = profile(at, i, v, budget - spent);
        spent += calls;
        if at.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            // The profile may have been cut short: its rise means nothing.
            break;
        }
        let rise = fval - fmin;
        if clamped && rise < 1.0 {
            return Side {
                error: v - best[i],
                at_limit: true,
                valid: true,
                calls: spent,
            };
        }
        if (rise - 1.0).abs() < TOLERANCE {
            return Side {
                error: v - best[i],
                at_limit: false,
                valid: true,
                calls: spent,
            };
        }
        let d = (v - best[i]).abs();
        // The profile is near a parabola: rise ≈ (d/σ')², so σ' = d/√rise.
        delta = if rise > 0.0 && rise.is_finite() {
            d / rise.sqrt()
        } else {
            0.5 * d
        };
    }
    Side {
        error: sign * delta,
        at_limit: false,
        valid: false,
        calls: spent,
    }
}
