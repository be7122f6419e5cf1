//! Migrad-like minimisation: argmin's BFGS with the Moré–Thuente line search
//! on internal parameters (Minuit's transforms map a bounded parameter to an
//! unbounded one), numerical gradients, and restarts from the Hessian at the
//! best point until the estimated distance to minimum (EDM) is small. A
//! binned fit goes by Fisher scoring first (`scoring`), which usually ends at
//! the minimum; the rounds take over when it does not.

use std::cell::RefCell;
use std::time::Instant;

use argmin::core::{CostFunction, Error, Executor, Gradient};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::BFGS;

use super::hesse::{hessian, invert_positive};
use super::scoring::{Binned, half_quadratic, score};

/// A parameter as the minimiser sees it.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub value: f64,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
    pub fixed: bool,
}

impl Param {
    /// External value of internal `u` (Minuit's transforms).
    pub fn external(&self, u: f64) -> f64 {
        match (self.lower, self.upper) {
            (Some(a), Some(b)) => a + 0.5 * (b - a) * (u.sin() + 1.0),
            (Some(a), None) => a - 1.0 + (u * u + 1.0).sqrt(),
            (None, Some(b)) => b + 1.0 - (u * u + 1.0).sqrt(),
            (None, None) => u,
        }
    }

    /// Internal value of external `x` (clamped inside the limits).
    pub fn internal(&self, x: f64) -> f64 {
        match (self.lower, self.upper) {
            (Some(a), Some(b)) => (2.0 * (x - a) / (b - a) - 1.0).clamp(-1.0, 1.0).asin(),
            (Some(a), None) => ((x - a + 1.0).max(1.0).powi(2) - 1.0).sqrt(),
            (None, Some(b)) => ((b - x + 1.0).max(1.0).powi(2) - 1.0).sqrt(),
            (None, None) => x,
        }
    }

    /// d external / d internal at internal `u`.
    pub fn derivative(&self, u: f64) -> f64 {
        match (self.lower, self.upper) {
            (Some(a), Some(b)) => 0.5 * (b - a) * u.cos(),
            (Some(_), None) => u / (u * u + 1.0).sqrt(),
            (None, Some(_)) => -u / (u * u + 1.0).sqrt(),
            (None, None) => 1.0,
        }
    }

    /// Whether `x` is within a thousandth of the range of a limit (or of one
    /// unit of a one-sided limit's scale).
    pub fn at_limit(&self, x: f64, error: f64) -> bool {
        let near = |l: f64| {
            (x - l).abs() <= 1e-3 * error.max(1e-12) || (x - l).abs() < 1e-9 * (1.0 + l.abs())
        };
        self.lower.is_some_and(near) || self.upper.is_some_and(near)
    }
}

/// The cost of a full external parameter vector.
pub type Cost<'a> = &'a dyn Fn(&[f64]) -> f64;

/// The cost in the internal coordinates of the free parameters.
pub struct Internal<'a> {
    pub cost: Cost<'a>,
    pub params: &'a [Param],
    pub free: Vec<usize>,
    /// Numerical-derivative steps, per free parameter.
    pub steps: RefCell<Vec<f64>>,
    best: RefCell<(Vec<f64>, f64)>,
    pub calls: RefCell<usize>,
    /// Evaluations after which the minimiser stops (`call_limit`).
    pub limit: usize,
    /// When the whole fit must end, whatever the count (the evaluations'
    /// cost grows with the bins and the model's size).
    pub deadline: Option<Instant>,
}

/// Minuit's default call limit for Migrad with `n` free parameters,
/// 200 + 100n + 5n², times the five attempts iminuit's `migrad` makes: a
/// bound on the work a model the data cannot constrain (redundant or
/// degenerate parameters, a flat cost) can cause. Real fits stay far below
/// it (the Z-peak benchmark takes 129 evaluations).
pub fn call_limit(n: usize) -> usize {
    5 * (200 + 100 * n + 5 * n * n)
}

/// A cost above any real one, for points where the model cannot be computed.
pub const PENALTY: f64 = 1e30;

impl<'a> Internal<'a> {
    pub fn new(cost: Cost<'a>, params: &'a [Param]) -> Internal<'a> {
        let free: Vec<usize> = (0..params.len()).filter(|&i| !params[i].fixed).collect();
        let limit = call_limit(free.len());
        let steps = free
            .iter()
            .map(|&i| 1e-3 * params[i].internal(params[i].value).abs().max(0.1))
            .collect();
        Internal {
            cost,
            params,
            free,
            steps: RefCell::new(steps),
            best: RefCell::new((Vec::new(), f64::INFINITY)),
            calls: RefCell::new(0),
            limit,
            deadline: None,
        }
    }

    pub fn start(&self) -> Vec<f64> {
        self.free
            .iter()
            .map(|&i| self.params[i].internal(self.params[i].value))
            .collect()
    }

    /// The full external vector for internal `u`.
    pub fn external(&self, u: &[f64]) -> Vec<f64> {
        let mut x: Vec<f64> = self.params.iter().map(|p| p.value).collect();
        for (k, &i) in self.free.iter().enumerate() {
            x[i] = self.params[i].external(u[k]);
        }
        x
    }

    pub fn value(&self, u: &[f64]) -> f64 {
        self.count(1);
        self.offer(u, (self.cost)(&self.external(u)))
    }

    /// Counts `k` evaluations of the cost (or of the model behind it).
    pub fn count(&self, k: usize) {
        *self.calls.borrow_mut() += k;
    }

    /// Whether the call limit is reached: the minimiser starts no new round
    /// and argmin's run is stopped.
    pub fn exhausted(&self) -> bool {
        *self.calls.borrow() >= self.limit || self.past_deadline()
    }

    pub fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Keeps `u` as the best point if its cost `f` is the lowest yet; returns
    /// `f`, or the penalty when it is not finite.
    pub fn offer(&self, u: &[f64], f: f64) -> f64 {
        let f = if f.is_finite() { f } else { PENALTY };
        let mut best = self.best.borrow_mut();
        if f < best.1 {
            *best = (u.to_vec(), f);
        }
        f
    }

    pub fn gradient_at(&self, u: &[f64]) -> Vec<f64> {
        let steps = self.steps.borrow().clone();
        let mut x = u.to_vec();
        (0..u.len())
            .map(|k| {
                let h = steps[k];
                x[k] = u[k] + h;
                let up = self.value(&x);
                x[k] = u[k] - h;
                let down = self.value(&x);
                x[k] = u[k];
                (up - down) / (2.0 * h)
            })
            .collect()
    }

    pub fn best(&self) -> (Vec<f64>, f64) {
        self.best.borrow().clone()
    }

    fn check_limit(&self) -> Result<(), Error> {
        if self.exhausted() {
            return Err(Error::msg("the call or time limit was reached"));
        }
        Ok(())
    }
}

/// argmin's view of the internal cost.
struct Problem<'p, 'a>(&'p Internal<'a>);

impl CostFunction for Problem<'_, '_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, u: &Vec<f64>) -> Result<f64, Error> {
        self.0.check_limit()?;
        Ok(self.0.value(u))
    }
}

impl Gradient for Problem<'_, '_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, u: &Vec<f64>) -> Result<Vec<f64>, Error> {
        self.0.check_limit()?;
        Ok(self.0.gradient_at(u))
    }
}

/// Where the minimisation ended.
pub struct Minimum {
    /// Internal coordinates of the free parameters.
    pub u: Vec<f64>,
    pub fval: f64,
    pub edm: f64,
    /// Inverse of the Hessian in internal coordinates (None when it is not
    /// positive definite).
    pub inverse: Option<Vec<Vec<f64>>>,
    pub converged: bool,
    pub reason: Option<String>,
}

/// EDM below which a minimum is accepted: Minuit's 0.002 × tol × errordef with
/// its default tol = 0.1 and errordef = 1 (the cost is −2 ln L or χ²).
pub const EDM_MAX: f64 = 2e-4;
/// EDM the minimiser goes on towards when it can (for tight agreement).
const EDM_GOAL: f64 = 1e-9;
const ROUNDS: usize = 6;
const ITERATIONS: u64 = 400;

/// Minimises a binned cost from `u0`: Fisher scoring first, then the
/// Migrad-like rounds only when scoring did not reach the minimum.
pub fn migrad_binned(f: &Internal<'_>, binned: &dyn Binned, u0: Vec<f64>) -> Minimum {
    if u0.is_empty() {
        return migrad(f, u0);
    }
    let scored = score(f, binned, u0);
    let Some(inverse) = scored.inverse else {
        return migrad(f, f.best().0);
    };
    if let Some(g) = scored.gradient {
        // Scoring's gradient is the cost's at its last point, which is
        // where it stopped converged: only the Hessian is still needed.
        let (edm, inv) = estimate_with(f, &scored.u, &g);
        if let Some(inv) = inv.filter(|_| edm < EDM_MAX) {
            return finish(f, scored.u, edm, Some(inv), None);
        }
    }
    rounds(f, f.best().0, inverse)
}

/// Minimises `f` from `u0` (internal coordinates).
pub fn migrad(f: &Internal<'_>, u0: Vec<f64>) -> Minimum {
    let n = u0.len();
    if n == 0 {
        let fval = f.value(&u0);
        return Minimum {
            u: u0,
            fval,
            edm: 0.0,
            inverse: Some(Vec::new()),
            converged: fval < PENALTY,
            reason: None,
        };
    }
    let inverse = seed(f, &u0);
    rounds(f, u0, inverse)
}

/// BFGS rounds from `u` with the inverse Hessian `inverse`, each ended by a
/// numerical Hessian and the EDM, until the EDM is small.
fn rounds(f: &Internal<'_>, mut u: Vec<f64>, mut inverse: Vec<Vec<f64>>) -> Minimum {
    let n = u.len();
    let mut failure = None;
    let mut last = (f64::INFINITY, None);
    for _ in 0..ROUNDS {
        if f.exhausted() {
            break;
        }
        if let Err(e) = bfgs(f, u.clone(), inverse.clone()) {
            failure = Some(e.to_string());
        }
        u = f.best().0;
        let before = f.best().1;
        let (mut edm, mut inv, g) = estimate(f, &u);
        // Near the minimum the cost is close to its quadratic form: one Newton
        // step from the Hessian just computed usually lands within the goal,
        // for the price of one more Hessian rather than another BFGS round.
        if let Some(h) = inv.as_ref().filter(|_| (EDM_GOAL..EDM_MAX).contains(&edm)) {
            let step: Vec<f64> = (0..n)
                .map(|i| u[i] - (0..n).map(|j| h[i][j] * g[j]).sum::<f64>())
                .collect();
            if f.value(&step) < before {
                u = step;
                (edm, inv, _) = estimate(f, &u);
            }
        }
        match inv {
            Some(inv) => {
                set_steps(f, &inv);
                inverse = inv.clone();
                // Done at the goal, or within Minuit's bound when a round no
                // longer lowers the cost (the numerical gradient's floor).
                let stalled = (last.0 - f.best().1).abs() < 1e-9;
                if edm < EDM_GOAL || (edm < EDM_MAX && stalled) {
                    return finish(f, u, edm, Some(inv), None);
                }
                last = (f.best().1, Some((edm, inv)));
            }
            None => {
                inverse = identity_scaled(f);
                last = (f.best().1, None);
            }
        }
    }
    let (edm, inv) = match last.1 {
        Some((edm, inv)) => (edm, Some(inv)),
        None => (f64::INFINITY, None),
    };
    let reason = if f.past_deadline() && (inv.is_none() || edm >= EDM_MAX) {
        Some("the fit's time limit was reached before the minimum was found (a model the data do not constrain, or very many parameters or bins): simplify the model, fix a parameter or rebin".to_string())
    } else if f.exhausted() && (inv.is_none() || edm >= EDM_MAX) {
        Some(format!(
            "the call limit of {} cost evaluations was reached before the minimum was found (a parameter the data do not constrain, or parameters that do the same thing, make the cost flat): simplify the model or fix a parameter",
            f.limit
        ))
    } else if inv.is_none() {
        Some("the Hessian at the minimum is not positive definite (a parameter is not constrained by the data, or the model is degenerate)".to_string())
    } else if edm >= EDM_MAX {
        Some(format!(
            "the estimated distance to minimum is {edm:.3e}, above {EDM_MAX}{}",
            failure
                .map(|f| format!(" (the line search stopped: {f})"))
                .unwrap_or_default()
        ))
    } else {
        None
    };
    finish(f, u, edm, inv, reason)
}

fn finish(
    f: &Internal<'_>,
    u: Vec<f64>,
    edm: f64,
    inverse: Option<Vec<Vec<f64>>>,
    reason: Option<String>,
) -> Minimum {
    let fval = f.value(&u);
    let reason = if fval >= PENALTY {
        Some("the model could not be computed at any point tried (NaN, infinite or not positive where there are counts)".to_string())
    } else {
        reason
    };
    Minimum {
        converged: reason.is_none(),
        u,
        fval,
        edm,
        inverse,
        reason,
    }
}

/// One BFGS run from `u` with the inverse Hessian `inverse`.
fn bfgs(f: &Internal<'_>, u: Vec<f64>, inverse: Vec<Vec<f64>>) -> Result<(), Error> {
    let solver = BFGS::new(MoreThuenteLineSearch::new())
        .with_tolerance_grad(1e-9)?
        .with_tolerance_cost(1e-11)?;
    Executor::new(Problem(f), solver)
        .configure(|s| s.param(u).inv_hessian(inverse).max_iters(ITERATIONS))
        .run()?;
    Ok(())
}

/// The first inverse Hessian: from numerical second derivatives when they are
/// positive definite, else a diagonal of the steps' scale.
fn seed(f: &Internal<'_>, u: &[f64]) -> Vec<Vec<f64>> {
    let h = hessian(f, u);
    match invert_positive(&h) {
        Some(inv) => {
            set_steps(f, &inv);
            inv
        }
        None => identity_scaled(f),
    }
}

fn identity_scaled(f: &Internal<'_>) -> Vec<Vec<f64>> {
    let steps = f.steps.borrow();
    let n = steps.len();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if i == j {
                        (100.0 * steps[i]).powi(2)
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect()
}

/// Derivative steps from the current inverse Hessian: a small fraction of each
/// parameter's estimated error (σ² = 2 H⁻¹ for a −2 ln L cost).
pub(super) fn set_steps(f: &Internal<'_>, inverse: &[Vec<f64>]) {
    let mut steps = f.steps.borrow_mut();
    for (k, s) in steps.iter_mut().enumerate() {
        let sigma = (2.0 * inverse[k][k]).sqrt();
        if sigma.is_finite() && sigma > 0.0 {
            *s = 1e-3 * sigma;
        }
    }
}

/// The EDM (½ gᵀ H⁻¹ g) at `u`, the inverse Hessian there and the gradient.
pub fn estimate(f: &Internal<'_>, u: &[f64]) -> (f64, Option<Vec<Vec<f64>>>, Vec<f64>) {
    let g = f.gradient_at(u);
    let (edm, inv) = estimate_with(f, u, &g);
    (edm, inv, g)
}

/// The EDM and the inverse Hessian at `u`, given the gradient there.
fn estimate_with(f: &Internal<'_>, u: &[f64], g: &[f64]) -> (f64, Option<Vec<Vec<f64>>>) {
    let inv = invert_positive(&hessian(f, u));
    let edm = match &inv {
        Some(inv) => half_quadratic(g, inv).abs(),
        None => f64::INFINITY,
    };
    (edm, inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transforms_round_trip() {
        for p in [
            Param {
                value: 0.0,
                lower: Some(0.0),
                upper: Some(2.0),
                fixed: false,
            },
            Param {
                value: 0.0,
                lower: Some(1.0),
                upper: None,
                fixed: false,
            },
            Param {
                value: 0.0,
                lower: None,
                upper: Some(-1.0),
                fixed: false,
            },
        ] {
            let x = if p.lower == Some(1.0) {
                3.5
            } else if p.upper == Some(-1.0) {
                -4.0
            } else {
                0.7
            };
            assert!((p.external(p.internal(x)) - x).abs() < 1e-12);
            let u = p.internal(x);
            let numeric = (p.external(u + 1e-6) - p.external(u - 1e-6)) / 2e-6;
            assert!((numeric - p.derivative(u)).abs() < 1e-6);
        }
    }

    #[test]
    fn finds_a_bounded_quadratic_minimum() {
        let cost = |x: &[f64]| {
            (x[0] - 1.0).powi(2) / 0.04 + (x[1] + 2.0).powi(2) + 0.5 * (x[0] - 1.0) * (x[1] + 2.0)
        };
        let params = [
            Param {
                value: 0.5,
                lower: Some(0.0),
                upper: Some(3.0),
                fixed: false,
            },
            Param {
                value: 0.0,
                lower: None,
                upper: None,
                fixed: false,
            },
        ];
        let f = Internal::new(&cost, &params);
        let m = migrad(&f, f.start());
        let x = f.external(&m.u);
        assert!(m.converged, "{:?}", m.reason);
        assert!(
            (x[0] - 1.0).abs() < 1e-6 && (x[1] + 2.0).abs() < 1e-6,
            "{x:?}"
        );
    }

    /// A rugged cost (a Rosenbrock valley with a ripple finer than the
    /// numerical steps) keeps the rounds going: a limit of 500 stops them
    /// within one gradient and one Hessian (3 parameters: 2·3 + 3·4·2 + 3·4
    /// evaluations at most) of it, and the reason names the limit.
    #[test]
    fn the_call_limit_stops_the_rounds() {
        let cost = |x: &[f64]| {
            100.0 * (x[1] - x[0] * x[0]).powi(2)
                + (1.0 - x[0]).powi(2)
                + 1e-4 * (1e4 * x[0] * x[1]).sin()
        };
        let param = Param {
            value: 0.3,
            lower: None,
            upper: None,
            fixed: false,
        };
        let params = [param; 3];
        let mut f = Internal::new(&cost, &params);
        f.limit = 500;
        let m = migrad(&f, f.start());
        let calls = *f.calls.borrow();
        assert!((500..=560).contains(&calls), "{calls} evaluations");
        assert!(!m.converged);
        assert!(m.reason.unwrap().contains("call limit of 500"));
    }
}
