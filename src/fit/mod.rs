//! The fit engine behind `fit_histogram`: binned maximum-likelihood and χ²
//! fits of a model (`models`) to a histogram, minimised Migrad-style
//! (`minimise`), with Hesse errors (`hesse`), Minos intervals (`minos`) and
//! goodness of fit. It knows histograms and models only, nothing of MCP.

pub mod expr;
pub mod hesse;
pub mod minimise;
pub mod minos;
pub mod models;
pub mod scoring;

use crate::special::chi2_p_value;
use hesse::external_covariance;
use minimise::{Internal, Param, migrad_binned};
use models::{Model, Summary};
use scoring::Binned;

/// A histogram to fit: bins `[edges[i], edges[i + 1])`, their contents and,
/// for weighted contents, their variances (None: Poisson counts).
pub struct Histogram {
    pub edges: Vec<f64>,
    pub counts: Vec<f64>,
    pub variances: Option<Vec<f64>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostKind {
    Poisson,
    Chi2,
}

/// A user's change to a parameter's start, limits or fixed flag.
#[derive(Debug, Clone, Default)]
pub struct Override {
    pub value: Option<f64>,
    pub limits: Option<(Option<f64>, Option<f64>)>,
    pub fixed: Option<bool>,
}

pub enum MinosRequest {
    None,
    All,
    Names(Vec<String>),
}

pub struct Request<'a> {
    pub model: &'a str,
    pub extended: bool,
    pub cost: CostKind,
    pub overrides: Vec<(String, Override)>,
    pub minos: MinosRequest,
}

/// Why a fit could not be made: the user's input is wrong.
#[derive(Debug)]
pub struct FitError(pub String);

pub struct ParamResult {
    pub name: String,
    pub value: f64,
    pub error: Option<f64>,
    pub minos_lower: Option<f64>,
    pub minos_upper: Option<f64>,
    pub at_limit: bool,
    pub fixed: bool,
}

pub struct Report {
    pub params: Vec<ParamResult>,
    pub covariance: Vec<Vec<f64>>,
    pub correlation: Vec<Vec<f64>>,
    pub fval: f64,
    pub edm: f64,
    pub converged: bool,
    pub reason: Option<String>,
    pub ndf: i64,
    pub chi2: f64,
    pub p_value: Option<f64>,
    pub likelihood_ratio: f64,
    pub likelihood_ratio_p_value: Option<f64>,
    /// How the cost was formed (said in the answer).
    pub cost_form: &'static str,
    pub expected: Vec<f64>,
    pub components: Vec<(String, Vec<f64>)>,
    pub pulls: Vec<Option<f64>>,
    /// Cost evaluations of Migrad and Hesse.
    pub calls: usize,
    /// Cost evaluations of the Minos profiles.
    pub minos_calls: usize,
    /// Why some Minos intervals asked for are missing, if they are.
    pub minos_note: Option<String>,
}

/// The data as the cost sees it: per bin the count, its variance and the
/// scale that turns a weighted count into an equivalent Poisson one.
struct Data<'h> {
    h: &'h Histogram,
    total: f64,
    variance: Vec<f64>,
    scale: Vec<f64>,
    weighted: bool,
}

impl<'h> Data<'h> {
    fn new(h: &'h Histogram) -> Data<'h> {
        let variance: Vec<f64> = match &h.variances {
            Some(v) => v.clone(),
            None => h.counts.clone(),
        };
        let weighted = h.variances.as_ref().is_some_and(|v| {
            v.iter()
                .zip(&h.counts)
                .any(|(v, n)| (v - n).abs() > 1e-9 * n.abs().max(1.0))
        });
        let scale = h
            .counts
            .iter()
            .zip(&variance)
            .map(|(n, v)| if weighted && *v > 0.0 { n / v } else { 1.0 })
            .collect();
        Data {
            h,
            total: h.counts.iter().sum(),
            variance,
            scale,
            weighted,
        }
    }

    /// 2 Σ [μ − n + n ln(n/μ)] on the (scaled) counts: −2 ln L relative to the
    /// saturated model. NaN when the model is negative or not finite.
    fn deviance(&self, mu: &[f64]) -> f64 {
        let mut sum = 0.0;
        for ((&n, &m), &s) in self.h.counts.iter().zip(mu).zip(&self.scale) {
            let (n, m) = (n * s, m * s);
            if !m.is_finite() || m < 0.0 || (m == 0.0 && n > 0.0) {
                return f64::NAN;
            }
            sum += if n > 0.0 { m - n + n * (n / m).ln() } else { m };
        }
        2.0 * sum
    }

    /// Neyman's χ²: Σ (n − μ)²/σ² over the bins with σ > 0.
    fn chi2(&self, mu: &[f64]) -> f64 {
        let mut sum = 0.0;
        for ((&n, &m), &v) in self.h.counts.iter().zip(mu).zip(&self.variance) {
            if !m.is_finite() {
                return f64::NAN;
            }
            if v > 0.0 {
                sum += (n - m) * (n - m) / v;
            }
        }
        sum
    }

    /// Per bin, d cost / d μ and the expected second derivative (for Fisher
    /// scoring): for the deviance 2s(1 − n/μ) and 2s/μ (s the bin's scale),
    /// for χ² −2(n − μ)/σ² and 2/σ².
    fn derivatives(&self, kind: CostKind, mu: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let bins = self.h.counts.iter().zip(mu);
        match kind {
            CostKind::Poisson => bins
                .zip(&self.scale)
                .map(|((&n, &m), &s)| (2.0 * s * (1.0 - n / m), 2.0 * s / m))
                .unzip(),
            CostKind::Chi2 => bins
                .zip(&self.variance)
                .map(|((&n, &m), &v)| {
                    if v > 0.0 {
                        (-2.0 * (n - m) / v, 2.0 / v)
                    } else {
                        (0.0, 0.0)
                    }
                })
                .unzip(),
        }
    }

    /// The model's variance in each bin (for Pearson's χ² and the pulls).
    fn expected_variance(&self, kind: CostKind, mu: &[f64]) -> Vec<f64> {
        match kind {
            CostKind::Chi2 => self.variance.clone(),
            CostKind::Poisson => mu.iter().zip(&self.scale).map(|(m, s)| m / s).collect(),
        }
    }
}

fn check_histogram(h: &Histogram, kind: CostKind) -> Result<(), FitError> {
    let n = h.counts.len();
    if n == 0 || h.edges.len() != n + 1 {
        return Err(FitError(format!(
            "bin_edges must have one more element than counts (got {} edges, {} counts)",
            h.edges.len(),
            n
        )));
    }
    if h.edges.iter().any(|e| !e.is_finite()) || h.edges.windows(2).any(|w| w[0] >= w[1]) {
        return Err(FitError("bin_edges must be finite and increasing".into()));
    }
    if h.counts.iter().any(|c| !c.is_finite()) {
        return Err(FitError("counts must be finite numbers".into()));
    }
    if let Some(v) = &h.variances
        && (v.len() != n || v.iter().any(|e| !(e.is_finite() && *e >= 0.0)))
    {
        return Err(FitError(format!(
            "errors must be {n} finite numbers at or above 0"
        )));
    }
    if kind == CostKind::Poisson && h.counts.iter().any(|c| *c < 0.0) {
        return Err(FitError(
            "a bin has negative contents, which a Poisson likelihood cannot fit: use cost='chi2'"
                .into(),
        ));
    }
    if h.counts.iter().sum::<f64>() <= 0.0 {
        return Err(FitError(
            "the histogram is empty: there is nothing to fit".into(),
        ));
    }
    Ok(())
}

/// The parameters with their start values, limits and fixed flags after the
/// user's overrides.
fn parameters(
    model: &Model,
    h: &Histogram,
    overrides: &[(String, Override)],
) -> Result<Vec<Param>, FitError> {
    let starts = model.starts(&Summary::of(
        &h.edges,
        &h.counts,
        model.components.len() > 1,
    ));
    let mut params: Vec<Param> = starts
        .iter()
        .map(|s| Param {
            value: s.value,
            lower: s.lower,
            upper: s.upper,
            fixed: s.fixed,
        })
        .collect();
    for (name, o) in overrides {
        let Some(i) = model.names.iter().position(|n| n == name) else {
            return Err(FitError(format!(
                "parameters names '{name}', which the model does not have; its parameters are {}",
                model.names.join(", ")
            )));
        };
        let p = &mut params[i];
        if let Some((lo, hi)) = o.limits {
            if lo.zip(hi).is_some_and(|(a, b)| a >= b)
                || lo.is_some_and(|v| !v.is_finite())
                || hi.is_some_and(|v| !v.is_finite())
            {
                return Err(FitError(format!(
                    "limits of '{name}' must be [lo, hi] with lo < hi (null for none)"
                )));
            }
            p.lower = lo;
            p.upper = hi;
        }
        if let Some(v) = o.value {
            if !v.is_finite() {
                return Err(FitError(format!(
                    "the value of '{name}' must be a finite number"
                )));
            }
            p.value = v;
        }
        if let Some(f) = o.fixed {
            p.fixed = f;
        }
        if p.lower.is_some_and(|l| p.value < l) || p.upper.is_some_and(|u| p.value > u) {
            if o.value.is_some() {
                return Err(FitError(format!(
                    "the value of '{name}' ({}) is outside its limits",
                    p.value
                )));
            }
            // A guessed start outside the user's limits: start inside them.
            p.value = match (p.lower, p.upper) {
                (Some(a), Some(b)) => 0.5 * (a + b),
                (Some(a), None) => a + 1.0,
                (None, Some(b)) => b - 1.0,
                (None, None) => p.value,
            };
        }
    }
    Ok(params)
}

/// Fits `request.model` to `h`.
/// The fit's cost as Fisher scoring sees it: the model's expected counts and
/// the cost of them.
struct BinnedCost<'a> {
    model: &'a Model,
    edges: &'a [f64],
    data: &'a Data<'a>,
    kind: CostKind,
}

impl Binned for BinnedCost<'_> {
    fn expected(&self, x: &[f64]) -> Vec<f64> {
        self.model.expected(x, self.edges, self.data.total)
    }

    fn cost(&self, mu: &[f64]) -> f64 {
        match self.kind {
            CostKind::Poisson => self.data.deviance(mu),
            CostKind::Chi2 => self.data.chi2(mu),
        }
    }

    fn derivatives(&self, mu: &[f64]) -> (Vec<f64>, Vec<f64>) {
        self.data.derivatives(self.kind, mu)
    }
}

/// How long a fit may take in all: real fits take milliseconds, a model the
/// data cannot constrain stops at Minuit's call limits within a second or two,
/// and this bounds what those limits cannot (many bins, a large expression).
pub const TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

pub fn fit(h: &Histogram, request: &Request<'_>) -> Result<Report, FitError> {
    fit_within(h, request, TIME_LIMIT)
}

/// `fit`, ended at `time_limit` with the best point found and a reason.
pub fn fit_within(
    h: &Histogram,
    request: &Request<'_>,
    time_limit: std::time::Duration,
) -> Result<Report, FitError> {
    let deadline = std::time::Instant::now() + time_limit;
    check_histogram(h, request.cost)?;
    let model = models::parse(request.model, request.extended).map_err(FitError)?;
    let params = parameters(&model, h, &request.overrides)?;
    let free = params.iter().filter(|p| !p.fixed).count();
    let data = Data::new(h);
    let kind = request.cost;
    let edges = &h.edges;
    let binned = BinnedCost {
        model: &model,
        edges,
        data: &data,
        kind,
    };
    let cost = |p: &[f64]| binned.cost(&binned.expected(p));
    let start_cost = cost(&params.iter().map(|p| p.value).collect::<Vec<_>>());
    if !start_cost.is_finite() {
        return Err(FitError(format!(
            "the model cannot be computed at the start values (it is NaN, infinite or not positive where there are counts; cost {start_cost}): give start values in parameters"
        )));
    }
    let mut internal = Internal::new(&cost, &params);
    internal.deadline = Some(deadline);
    let m = migrad_binned(&internal, &binned, internal.start());
    let best = internal.external(&m.u);
    let covariance = match &m.inverse {
        Some(inv) => external_covariance(&internal, &m.u, inv),
        None => vec![vec![0.0; params.len()]; params.len()],
    };
    let minos_for: Vec<usize> = match &request.minos {
        MinosRequest::None => Vec::new(),
        MinosRequest::All => (0..params.len()).filter(|&i| !params[i].fixed).collect(),
        MinosRequest::Names(names) => names
            .iter()
            .map(|n| {
                model.names.iter().position(|m| m == n).ok_or_else(|| {
                    FitError(format!(
                        "minos names '{n}', which the model does not have; its parameters are {}",
                        model.names.join(", ")
                    ))
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let mut fitted: Vec<Param> = params.clone();
    for (p, v) in fitted.iter_mut().zip(&best) {
        p.value = *v;
    }
    let mut results: Vec<ParamResult> = model
        .names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let error = (!params[i].fixed && m.inverse.is_some()).then(|| covariance[i][i].sqrt());
            ParamResult {
                name: name.clone(),
                value: best[i],
                error,
                minos_lower: None,
                minos_upper: None,
                at_limit: !params[i].fixed && params[i].at_limit(best[i], error.unwrap_or(0.0)),
                fixed: params[i].fixed,
            }
        })
        .collect();
    let mut minos_calls = 0;
    // As Minuit, Minos only from a valid minimum: a profile around a point
    // that is not the minimum (or along a flat direction) means nothing and
    // can take the whole call budget.
    let mut reason = m.reason.clone();
    if !minos_for.is_empty() && !m.converged {
        reason = reason
            .map(|r| format!("{r}; Minos intervals were not computed (they need a valid minimum)"));
    }
    let mut minos_note = None;
    if m.inverse.is_some() && m.converged {
        let budget = minos::budget(free);
        let around = minos::Around {
            cost: &cost,
            params: &fitted,
            best: &best,
            cov: &covariance,
            fmin: m.fval,
            deadline: Some(deadline),
        };
        for &i in &minos_for {
            if params[i].fixed {
                continue;
            }
            if std::time::Instant::now() >= deadline {
                minos_note = Some("Minos stopped at the fit's time limit before every interval was found: the intervals missing are null; ask minos for fewer parameters".to_string());
                break;
            }
            if minos_calls >= budget {
                minos_note = Some(format!(
                    "Minos stopped at its limit of {budget} cost evaluations before every interval was found (strongly correlated or redundant parameters): the intervals missing are null; ask minos for fewer parameters, or fix one"
                ));
                break;
            }
            let lower = minos::side(&around, i, -1.0, budget - minos_calls);
            minos_calls += lower.calls;
            let left = budget.saturating_sub(minos_calls);
            let upper = minos::side(&around, i, 1.0, left);
            minos_calls += upper.calls;
            results[i].minos_lower = lower.valid.then_some(lower.error);
            results[i].minos_upper = upper.valid.then_some(upper.error);
        }
    }
    let expected = model.expected(&best, edges, data.total);
    let components = model
        .components
        .iter()
        .map(|c| c.label.clone())
        .zip(model.components_expected(&best, edges, data.total))
        .collect();
    let variance = data.expected_variance(kind, &expected);
    let pulls: Vec<Option<f64>> = h
        .counts
        .iter()
        .zip(&expected)
        .zip(&variance)
        .map(|((n, m), v)| (*v > 0.0).then(|| (n - m) / v.sqrt()))
        .collect();
    let chi2 = match kind {
        CostKind::Chi2 => m.fval,
        CostKind::Poisson => pulls.iter().flatten().map(|p| p * p).sum(),
    };
    let used = match kind {
        CostKind::Chi2 => data.variance.iter().filter(|v| **v > 0.0).count(),
        CostKind::Poisson => h.counts.len(),
    };
    let ndf = used as i64 - free as i64 - i64::from(!request.extended);
    let likelihood_ratio = data.deviance(&expected);
    let p = |stat: f64| (ndf > 0 && stat.is_finite()).then(|| chi2_p_value(stat, ndf as f64));
    let correlation = correlation(&covariance);
    Ok(Report {
        params: results,
        covariance,
        correlation,
        fval: m.fval,
        edm: m.edm,
        converged: m.converged,
        reason,
        ndf,
        chi2,
        p_value: p(chi2),
        likelihood_ratio,
        likelihood_ratio_p_value: p(likelihood_ratio),
        cost_form: match (kind, data.weighted) {
            (CostKind::Chi2, _) => {
                "Neyman chi2: sum of (n - mu)^2 / error^2 over bins with error > 0"
            }
            (CostKind::Poisson, false) => {
                "binned Poisson likelihood: fval = 2 sum(mu - n + n ln(n/mu)), -2 ln L relative to the saturated model"
            }
            (CostKind::Poisson, true) => {
                "scaled Poisson likelihood for weighted counts (each bin scaled by n/error^2): fval = 2 sum(mu - n + n ln(n/mu)) on the scaled counts"
            }
        },
        expected,
        components,
        pulls,
        calls: *internal.calls.borrow(),
        minos_calls,
        minos_note,
    })
}

fn correlation(cov: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = cov.len();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    let d = (cov[i][i] * cov[j][j]).sqrt();
                    if d > 0.0 { cov[i][j] / d } else { 0.0 }
                })
                .collect()
        })
        .collect()
}
