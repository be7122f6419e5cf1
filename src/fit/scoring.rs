//! Fisher scoring: the first descent of a binned fit. A binned cost is a sum
//! over bins of a function of the expected count μᵢ(θ) alone, so its gradient
//! is Σ cᵢ′ ∂μᵢ/∂θ and, near the minimum, its Hessian is close to the Fisher
//! information Σ cᵢ″ ∂μᵢ/∂θ ∂μᵢ/∂θᵀ: both from the model's Jacobian, 2n
//! evaluations of the model for n free parameters. A quasi-Newton method
//! instead learns the curvature one gradient at a time and needs several
//! times as many evaluations (issue #30's benchmark: 386 against Migrad's
//! 157). Steps are damped Levenberg–Marquardt fashion so a start far from the
//! minimum still descends; the minimiser's BFGS rounds take over when scoring
//! cannot finish (a model the data do not constrain, a minimum at a limit).

use super::hesse::invert_positive;
use super::minimise::{Internal, PENALTY, set_steps};

/// A cost that is a sum over bins of a function of each bin's expected count.
pub trait Binned {
    /// The expected count in each bin for the full external parameter vector.
    fn expected(&self, x: &[f64]) -> Vec<f64>;
    /// The cost of expected counts (NaN where the model cannot be used).
    fn cost(&self, mu: &[f64]) -> f64;
    /// Per bin, d cost / d μ and the expected d² cost / d μ² (the Fisher weight).
    fn derivatives(&self, mu: &[f64]) -> (Vec<f64>, Vec<f64>);
}

/// Scoring stops when ½ gᵀ F⁻¹ g is below this (well under Migrad's EDM goal,
/// so the check with the numerical Hessian afterwards passes).
const EDM_DONE: f64 = 1e-11;
/// Below this EDM a step that does not lower the cost means the minimum.
const EDM_FLOOR: f64 = 1e-6;
const ITERATIONS: usize = 50;
/// An iteration is slow when the EDM falls by less than this factor; this
/// many slow ones in a row hand over to the quasi-Newton rounds.
const SLOW: f64 = 0.3;
const SLOW_RUNS: usize = 3;
const DAMPING_START: f64 = 1e-3;
const DAMPING_MIN: f64 = 1e-12;
const DAMPING_MAX: f64 = 1e8;

/// Where scoring stopped: internal coordinates and the inverse of the Fisher
/// information there (a seed for the minimiser when it has to go on).
pub struct Scored {
    pub u: Vec<f64>,
    pub inverse: Option<Vec<Vec<f64>>>,
    /// The cost's gradient at `u` when scoring converged there (None when
    /// it stopped short of the minimum).
    pub gradient: Option<Vec<f64>>,
}

/// Descends from `u0` by damped Fisher scoring.
pub fn score(f: &Internal<'_>, binned: &dyn Binned, u0: Vec<f64>) -> Scored {
    let mut u = u0;
    let mut mu = binned.expected(&f.external(&u));
    let mut cost = record(f, &u, binned.cost(&mu));
    let mut damping = DAMPING_START;
    let mut inverse = None;
    let mut slow = 0;
    let mut last_edm = f64::INFINITY;
    for _ in 0..ITERATIONS {
        if cost >= PENALTY {
            break;
        }
        let Some((gradient, fisher)) = gradient_and_fisher(f, binned, &u, &mu) else {
            break;
        };
        inverse = invert_positive(&fisher);
        let Some(inv) = &inverse else { break };
        set_steps(f, inv);
        let edm = half_quadratic(&gradient, inv);
        if edm < EDM_DONE {
            return Scored {
                u,
                inverse,
                gradient: Some(gradient),
            };
        }
        // Near a minimum Fisher scoring converges quadratically; a run of
        // iterations that each barely lower the EDM means the Fisher matrix is
        // a poor guide here (a minimum near a limit, a model the data hardly
        // constrain), where the quasi-Newton rounds do better.
        slow = if edm > SLOW * last_edm { slow + 1 } else { 0 };
        if slow >= SLOW_RUNS {
            break;
        }
        last_edm = edm;
        let near = edm < EDM_FLOOR;
        match descend(
            f,
            binned,
            (&u, cost),
            (&fisher, &gradient),
            near,
            &mut damping,
        ) {
            Some(step) => (u, mu, cost) = step,
            // No step lowers the cost: at the minimum when the EDM is already
            // small (the numerical gradient's floor), else stuck.
            None => {
                return Scored {
                    u,
                    inverse,
                    gradient: near.then_some(gradient),
                };
            }
        }
    }
    Scored {
        u,
        inverse,
        gradient: None,
    }
}

/// The step that lowers the cost: the damping raised until one does (a step
/// on the Fisher metric is the Newton step near the minimum; far from it the
/// damping turns it towards the gradient and shortens it). Near the minimum
/// one failed step is enough to stop: the cost is at its rounding floor.
fn descend(
    f: &Internal<'_>,
    binned: &dyn Binned,
    (u, cost): (&[f64], f64),
    (fisher, gradient): (&[Vec<f64>], &[f64]),
    near: bool,
    damping: &mut f64,
) -> Option<(Vec<f64>, Vec<f64>, f64)> {
    while *damping <= DAMPING_MAX {
        let Some(step) = damped_step(fisher, gradient, *damping) else {
            *damping *= 10.0;
            continue;
        };
        let trial: Vec<f64> = u.iter().zip(&step).map(|(a, d)| a + d).collect();
        let trial_mu = binned.expected(&f.external(&trial));
        let trial_cost = record(f, &trial, binned.cost(&trial_mu));
        if trial_cost < cost {
            *damping = (*damping / 10.0).max(DAMPING_MIN);
            return Some((trial, trial_mu, trial_cost));
        }
        if near {
            return None;
        }
        *damping *= 10.0;
    }
    None
}

/// The cost's gradient and Fisher information in internal coordinates, from
/// the model's Jacobian by central differences.
fn gradient_and_fisher(
    f: &Internal<'_>,
    binned: &dyn Binned,
    u: &[f64],
    mu: &[f64],
) -> Option<(Vec<f64>, Vec<Vec<f64>>)> {
    let n = u.len();
    let steps = f.steps.borrow().clone();
    let mut columns: Vec<Vec<f64>> = Vec::with_capacity(n);
    let mut x = u.to_vec();
    for k in 0..n {
        let h = steps[k];
        x[k] = u[k] + h;
        let up = binned.expected(&f.external(&x));
        x[k] = u[k] - h;
        let down = binned.expected(&f.external(&x));
        x[k] = u[k];
        f.count(2);
        let column: Vec<f64> = up
            .iter()
            .zip(&down)
            .map(|(a, b)| (a - b) / (2.0 * h))
            .collect();
        if column.iter().any(|v| !v.is_finite()) {
            return None;
        }
        columns.push(column);
    }
    let (slope, weight) = binned.derivatives(mu);
    if slope.iter().chain(&weight).any(|v| !v.is_finite()) {
        return None;
    }
    let gradient = columns
        .iter()
        .map(|c| c.iter().zip(&slope).map(|(j, s)| j * s).sum())
        .collect();
    let mut fisher = vec![vec![0.0; n]; n];
    for a in 0..n {
        for b in 0..=a {
            let v: f64 = columns[a]
                .iter()
                .zip(&columns[b])
                .zip(&weight)
                .map(|((p, q), w)| p * q * w)
                .sum();
            fisher[a][b] = v;
            fisher[b][a] = v;
        }
    }
    Some((gradient, fisher))
}

/// −(F + λ diag F)⁻¹ g.
fn damped_step(fisher: &[Vec<f64>], gradient: &[f64], damping: f64) -> Option<Vec<f64>> {
    let damped: Vec<Vec<f64>> = fisher
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut row = row.clone();
            row[i] *= 1.0 + damping;
            row
        })
        .collect();
    let inv = invert_positive(&damped)?;
    Some(
        inv.iter()
            .map(|row| -row.iter().zip(gradient).map(|(a, g)| a * g).sum::<f64>())
            .collect(),
    )
}

/// ½ gᵀ A g.
pub fn half_quadratic(g: &[f64], a: &[Vec<f64>]) -> f64 {
    0.5 * a
        .iter()
        .zip(g)
        .map(|(row, gi)| gi * row.iter().zip(g).map(|(x, gj)| x * gj).sum::<f64>())
        .sum::<f64>()
}

fn record(f: &Internal<'_>, u: &[f64], cost: f64) -> f64 {
    f.count(1);
    f.offer(u, cost)
}
