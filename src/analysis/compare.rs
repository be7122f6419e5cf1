//! Two binned histograms compared as ROOT compares them: the χ² test of
//! `TH1::Chi2Test` (Gagunashvili's tests for unweighted-unweighted,
//! unweighted-weighted and weighted-weighted histograms, the mode chosen from
//! the histograms as ROOT chooses it) and the Kolmogorov–Smirnov test of
//! `TH1::KolmogorovTest` on the bins, each with its p-value. Under- and
//! overflow are left out, as both tests do by default.

use crate::special::chi2_p_value;

/// One histogram's in-range bins: sums of weights and of squared weights.
pub struct Binned<'a> {
    pub counts: &'a [f64],
    pub sumw2: &'a [f64],
}

impl Binned<'_> {
    fn sum(&self) -> f64 {
        self.counts.iter().sum()
    }

    fn sum_w2(&self) -> f64 {
        self.sumw2.iter().sum()
    }

    /// ROOT's test for an unweighted histogram: its sum of weights within 1
    /// of its effective entries (sum w)² / sum w².
    pub fn is_unweighted(&self) -> bool {
        let (s, s2) = (self.sum(), self.sum_w2());
        let effective = if s2 > 0.0 { s * s / s2 } else { 0.0 };
        (s - effective).abs() < 1.0
    }
}

/// Which χ² test applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    UU,
    UW,
    WW,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::UU => "UU",
            Mode::UW => "UW",
            Mode::WW => "WW",
        }
    }

    /// As TH1::Chi2Test without a mode option: UU when both are
    /// unweighted, UW when only the second is weighted, else WW.
    pub fn of(h1: &Binned<'_>, h2: &Binned<'_>) -> Mode {
        match (h1.is_unweighted(), h2.is_unweighted()) {
            (true, true) => Mode::UU,
            (true, false) => Mode::UW,
            (false, _) => Mode::WW,
        }
    }
}

/// A χ² test's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chi2 {
    pub mode: Mode,
    pub chi2: f64,
    pub ndf: i64,
    pub p_value: f64,
}

/// The χ² homogeneity test of two histograms with the same bins. Err says
/// why it cannot be made (an empty histogram, a bin whose errors are all
/// zero), as ROOT refuses the same cases.
pub fn chi2_test(h1: &Binned<'_>, h2: &Binned<'_>) -> Result<Chi2, String> {
    let mode = Mode::of(h1, h2);
    let (sum1, sum2) = (h1.sum(), h2.sum());
    if sum1 == 0.0 || sum2 == 0.0 {
        return Err("one histogram is empty".into());
    }
    let mut ndf = h1.counts.len() as i64 - 1;
    let mut chi2 = 0.0;
    let bins = h1
        .counts
        .iter()
        .zip(h2.counts)
        .zip(h1.sumw2.iter().zip(h2.sumw2));
    match mode {
        Mode::UU => {
            for ((&n1, &n2), _) in bins {
                // Bins empty in both carry no information: a degree less.
                if n1 as i64 == 0 && n2 as i64 == 0 {
                    ndf -= 1;
                    continue;
                }
                let d = sum2 * n1 - sum1 * n2;
                chi2 += d * d / (n1 + n2);
            }
            chi2 /= sum1 * sum2;
        }
        Mode::UW => {
            let total_w2 = h2.sum_w2();
            let mut sum1 = sum1;
            for ((&n, &w), (_, &s2)) in bins {
                if n * n == 0.0 && w * w == 0.0 {
                    ndf -= 1;
                    continue;
                }
                let mut s2 = s2;
                if w * w == 0.0 && s2 == 0.0 {
                    if total_w2 <= 0.0 {
                        return Err(
                            "the weighted histogram has a bin with no content and no error".into(),
                        );
                    }
                    // An empty weighted bin: the error of a unit of the
                    // histogram's average weight.
                    s2 = total_w2 / sum2;
                }
                let mut n = n;
                let (mut a, mut disc) = uw_terms(sum1, sum2, n, w, s2);
                // A zero estimate (no event in the unweighted bin and a
                // weighted bin exactly as expected): ROOT moves one event in.
                while a * a + n == 0.0 || a + disc.sqrt() == 0.0 {
                    sum1 += 1.0;
                    n += 1.0;
                    (a, disc) = uw_terms(sum1, sum2, n, w, s2);
                }
                let p = (a + disc.sqrt()) / (2.0 * sum2 * sum2);
                let (e1, e2) = (p * sum1, p * sum2);
                chi2 += (n - e1) * (n - e1) / e1;
                if s2 > 0.0 {
                    chi2 += (w - e2) * (w - e2) / s2;
                }
            }
        }
        Mode::WW => {
            if h1.sum_w2() <= 0.0 && h2.sum_w2() <= 0.0 {
                return Err("both histograms have all errors zero".into());
            }
            for ((&w1, &w2), (&s1, &s2)) in bins {
                if w1 * w1 == 0.0 && w2 * w2 == 0.0 {
                    ndf -= 1;
                    continue;
                }
                if s1 == 0.0 && s2 == 0.0 {
                    return Err("both histograms have a bin with zero errors".into());
                }
                let sigma = sum1 * sum1 * s2 + sum2 * sum2 * s1;
                let d = sum2 * w1 - sum1 * w2;
                chi2 += d * d / sigma;
            }
        }
    }
    Ok(Chi2 {
        mode,
        chi2,
        ndf,
        p_value: chi2_prob(chi2, ndf),
    })
}

/// The UW estimate's terms: W·w − N·s² and its discriminant.
fn uw_terms(sum1: f64, sum2: f64, n: f64, w: f64, s2: f64) -> (f64, f64) {
    let a = sum2 * w - sum1 * s2;
    (a, a * a + 4.0 * sum2 * sum2 * n * s2)
}

/// A Kolmogorov–Smirnov test's outcome: the largest distance between the
/// normalised cumulative sums, and the p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ks {
    pub distance: f64,
    pub p_value: f64,
}

/// TH1::KolmogorovTest (no options): the distance of the cumulative
/// normalised bin contents, scaled by the effective entries of each
/// histogram ((sum w)² / sum w²; a histogram without errors counts as a
/// function), the p-value Kolmogorov's distribution gives.
pub fn ks_test(h1: &Binned<'_>, h2: &Binned<'_>) -> Result<Ks, String> {
    let (sum1, sum2) = (h1.sum(), h2.sum());
    if sum1 == 0.0 || sum2 == 0.0 {
        return Err("one histogram is empty".into());
    }
    let (w1, w2) = (h1.sum_w2(), h2.sum_w2());
    if w1 <= 0.0 && w2 <= 0.0 {
        return Err("both histograms have all errors zero".into());
    }
    let (mut c1, mut c2, mut distance) = (0.0, 0.0, 0.0f64);
    for (a, b) in h1.counts.iter().zip(h2.counts) {
        c1 += a / sum1;
        c2 += b / sum2;
        distance = distance.max((c1 - c2).abs());
    }
    let (e1, e2) = (sum1 * sum1 / w1, sum2 * sum2 / w2);
    let z = if w1 <= 0.0 {
        distance * e2.sqrt()
    } else if w2 <= 0.0 {
        distance * e1.sqrt()
    } else {
        distance * (e1 * e2 / (e1 + e2)).sqrt()
    };
    Ok(Ks {
        distance,
        p_value: kolmogorov_prob(z),
    })
}

/// TMath::KolmogorovProb: P(K > z) of Kolmogorov's distribution, by its
/// series in exp(−2 j² z²) for large z and its dual series in
/// exp(−(2j−1)² π² / 8z²) for small z.
pub fn kolmogorov_prob(z: f64) -> f64 {
    let u = z.abs();
    if u < 0.2 {
        1.0
    } else if u < 0.755 {
        let v = 1.0 / (u * u);
        let c = -std::f64::consts::PI * std::f64::consts::PI / 8.0;
        let sum: f64 = [1.0, 9.0, 25.0].iter().map(|k| (k * c * v).exp()).sum();
        // ROOT's sqrt(2π) to the nine digits TMath::KolmogorovProb uses.
        1.0 - 2.506_628_27 * sum / u
    } else if u < 6.8116 {
        let v = u * u;
        let terms = ((3.0 / u).round() as usize).clamp(1, 4);
        let mut p = 0.0;
        for j in 0..terms {
            let k = (j + 1) as f64;
            let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
            p += sign * (-2.0 * k * k * v).exp();
        }
        2.0 * p
    } else {
        0.0
    }
}

/// TMath::Prob: the probability that χ² with `ndf` degrees of freedom
/// exceeds `chi2`, Q(ndf/2, chi2/2) (1 when there is no degree of freedom).
pub fn chi2_prob(chi2: f64, ndf: i64) -> f64 {
    if ndf <= 0 || chi2 <= 0.0 {
        return if ndf <= 0 { 0.0 } else { 1.0 };
    }
    chi2_p_value(chi2, ndf as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Q(a, x) against closed forms: Q(1, x) = e^−x, and χ² with 2 degrees
    /// of freedom exceeds c with probability e^(−c/2).
    #[test]
    fn chi2_probabilities_match_closed_forms() {
        for x in [0.1, 0.5, 1.0, 2.5, 7.0, 30.0] {
            assert!(
                (crate::special::gamma_q(1.0, x) - (-x).exp()).abs() < 1e-13,
                "{x}"
            );
            assert!((chi2_prob(x, 2) - (-x / 2.0).exp()).abs() < 1e-13, "{x}");
        }
        // 1 degree of freedom: P(χ² > 3.841459) = 0.05 (the 95 % quantile).
        assert!((chi2_prob(3.841_458_820_694_124, 1) - 0.05).abs() < 1e-12);
    }

    /// A UU test worked by hand: n1 = [10, 20, 30], n2 = [15, 15, 30], so
    /// N1 = N2 = 60 and χ² = Σ (60 n1 − 60 n2)² / (n1 + n2) / 3600
    /// = 25/25 + 25/35 + 0 = 1.714285714..., ndf = 2, p = e^(−χ²/2).
    #[test]
    fn an_unweighted_pair_by_hand() {
        let (a, b) = ([10.0, 20.0, 30.0], [15.0, 15.0, 30.0]);
        let t = chi2_test(
            &Binned {
                counts: &a,
                sumw2: &a,
            },
            &Binned {
                counts: &b,
                sumw2: &b,
            },
        )
        .unwrap();
        assert_eq!(t.mode, Mode::UU);
        assert_eq!(t.ndf, 2);
        assert!((t.chi2 - (1.0 + 25.0 / 35.0)).abs() < 1e-12, "{t:?}");
        assert!((t.p_value - (-t.chi2 / 2.0).exp()).abs() < 1e-12);
        // KS: cumulative 1/6, 1/2, 1 against 1/4, 1/2, 1: distance 1/12,
        // z = (1/12)·sqrt(60·60/120).
        let ks = ks_test(
            &Binned {
                counts: &a,
                sumw2: &a,
            },
            &Binned {
                counts: &b,
                sumw2: &b,
            },
        )
        .unwrap();
        assert!((ks.distance - 1.0 / 12.0).abs() < 1e-12);
        assert!((ks.p_value - kolmogorov_prob(30f64.sqrt() / 12.0)).abs() < 1e-15);
    }
}
