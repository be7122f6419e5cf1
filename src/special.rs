//! Special functions the engines share: the Gaussian CDF (libm's erfc), the
//! Faddeeva function w(z) (for the fits' Voigt profile), the regularised upper
//! incomplete gamma function (the χ² p-values of fits and of
//! `compare_histograms`' χ² test) and Gauss–Legendre nodes (bin integrals of
//! shapes without a closed-form CDF). A leaf: it uses nothing of quarry.

use std::f64::consts::{PI, SQRT_2};
use std::sync::OnceLock;

/// Φ(z): the standard normal CDF, accurate in both tails.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / SQRT_2)
}

/// A complex number, as much arithmetic as w(z) needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C {
    pub re: f64,
    pub im: f64,
}

impl C {
    pub fn new(re: f64, im: f64) -> C {
        C { re, im }
    }
    fn mul(self, o: C) -> C {
        C::new(
            self.re * o.re - self.im * o.im,
            self.re * o.im + self.im * o.re,
        )
    }
    fn add(self, o: C) -> C {
        C::new(self.re + o.re, self.im + o.im)
    }
    fn scale(self, s: f64) -> C {
        C::new(self.re * s, self.im * s)
    }
    fn div(self, o: C) -> C {
        let d = o.re * o.re + o.im * o.im;
        C::new(
            (self.re * o.re + self.im * o.im) / d,
            (self.im * o.re - self.re * o.im) / d,
        )
    }
}

/// Terms of Weideman's rational expansion of w(z) (SIAM J. Numer. Anal. 31,
/// 1994): 40 give about 1e-14 relative accuracy in the upper half-plane.
const WEIDEMAN_N: usize = 40;

/// Weideman's L = sqrt(N / sqrt 2) and his coefficients a_1..a_N, computed once
/// from their defining cosine sums (a direct sum: N is small).
fn weideman() -> &'static (f64, Vec<f64>) {
    static COEFFICIENTS: OnceLock<(f64, Vec<f64>)> = OnceLock::new();
    COEFFICIENTS.get_or_init(|| {
        let n = WEIDEMAN_N;
        let m = 2 * n;
        let l = (n as f64 / SQRT_2).sqrt();
        let samples: Vec<(f64, f64)> = (1 - m as i64..m as i64)
            .map(|k| {
                let t = l * (k as f64 * PI / (2 * m) as f64).tan();
                (k as f64, (-t * t).exp() * (l * l + t * t))
            })
            .collect();
        let a = (1..=n)
            .map(|j| {
                samples
                    .iter()
                    .map(|(k, f)| f * (PI * k * j as f64 / m as f64).cos())
                    .sum::<f64>()
                    / (2 * m) as f64
            })
            .collect();
        (l, a)
    })
}

/// The Faddeeva function w(z) = exp(−z²) erfc(−iz) for Im z ≥ 0.
pub fn faddeeva(z: C) -> C {
    let (l, a) = weideman();
    // L − iz and Z = (L + iz) / (L − iz).
    let iz = C::new(-z.im, z.re);
    let denominator = C::new(*l - iz.re, -iz.im);
    let big_z = C::new(*l + iz.re, iz.im).div(denominator);
    let mut p = C::new(0.0, 0.0);
    for coefficient in a.iter().rev() {
        p = p.mul(big_z).add(C::new(*coefficient, 0.0));
    }
    let d2 = denominator.mul(denominator);
    p.scale(2.0)
        .div(d2)
        .add(C::new(1.0 / PI.sqrt(), 0.0).div(denominator))
}

/// The Voigt profile: a Gaussian (standard deviation `sigma`) convolved with a
/// Cauchy distribution of half width at half maximum `gamma`, as
/// `scipy.special.voigt_profile(x, sigma, gamma)`.
pub fn voigt_profile(x: f64, sigma: f64, gamma: f64) -> f64 {
    if sigma <= 0.0 {
        return gamma / PI / (x * x + gamma * gamma);
    }
    if gamma <= 0.0 {
        return (-0.5 * (x / sigma).powi(2)).exp() / (sigma * (2.0 * PI).sqrt());
    }
    let s = sigma * SQRT_2;
    faddeeva(C::new(x / s, gamma / s)).re / (sigma * (2.0 * PI).sqrt())
}

/// Q(a, x) = Γ(a, x) / Γ(a): the probability that a χ² with 2a degrees of
/// freedom exceeds 2x. Series below a + 1, Lentz's continued fraction above.
pub fn gamma_q(a: f64, x: f64) -> f64 {
    match incomplete_gamma(a, x) {
        Some(Tail::Lower(p)) => (1.0 - p).max(0.0),
        Some(Tail::Upper(q)) => q,
        None if x <= 0.0 && a > 0.0 => 1.0,
        None => f64::NAN,
    }
}

/// P(a, x) = γ(a, x) / Γ(a) = 1 − Q(a, x), accurate where it is small.
pub fn gamma_p(a: f64, x: f64) -> f64 {
    match incomplete_gamma(a, x) {
        Some(Tail::Lower(p)) => p,
        Some(Tail::Upper(q)) => (1.0 - q).max(0.0),
        None if x <= 0.0 && a > 0.0 => 0.0,
        None => f64::NAN,
    }
}

/// Which regularised incomplete gamma function was computed directly.
enum Tail {
    Lower(f64),
    Upper(f64),
}

/// P by its series below a + 1, Q by Lentz's continued fraction above (each
/// where it converges fast and keeps its precision); None for a ≤ 0, x ≤ 0
/// or NaN.
fn incomplete_gamma(a: f64, x: f64) -> Option<Tail> {
    if a.is_nan() || a <= 0.0 || x.is_nan() || x <= 0.0 {
        return None;
    }
    let log_prefactor = a * x.ln() - x - libm::lgamma(a);
    if x < a + 1.0 {
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        Some(Tail::Lower((sum * log_prefactor.exp()).min(1.0)))
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        Some(Tail::Upper((log_prefactor.exp() * h).clamp(0.0, 1.0)))
    }
}

/// The p-value of a χ² statistic with `ndf` degrees of freedom.
pub fn chi2_p_value(chi2: f64, ndf: f64) -> f64 {
    if ndf <= 0.0 {
        return f64::NAN;
    }
    gamma_q(ndf / 2.0, chi2 / 2.0)
}

/// Points of the Gauss–Legendre rule per bin for shapes without a CDF.
pub const GL_ORDER: usize = 12;

/// Gauss–Legendre nodes and weights on [−1, 1] (Newton's method on P_n).
pub fn gauss_legendre() -> &'static [(f64, f64)] {
    static RULE: OnceLock<Vec<(f64, f64)>> = OnceLock::new();
    RULE.get_or_init(|| {
        let n = GL_ORDER;
        (0..n)
            .map(|i| {
                let mut x = (PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
                let mut derivative = 0.0;
                for _ in 0..100 {
                    let (mut p0, mut p1) = (1.0, x);
                    for k in 2..=n {
                        let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                        p0 = p1;
                        p1 = p2;
                    }
                    derivative = n as f64 * (x * p1 - p0) / (x * x - 1.0);
                    let step = p1 / derivative;
                    x -= step;
                    if step.abs() < 1e-16 {
                        break;
                    }
                }
                (x, 2.0 / ((1.0 - x * x) * derivative * derivative))
            })
            .collect()
    })
}

/// ∫ f over [a, b] with the Gauss–Legendre rule.
pub fn integrate(a: f64, b: f64, f: impl Fn(f64) -> f64) -> f64 {
    let (mid, half) = (0.5 * (a + b), 0.5 * (b - a));
    half * gauss_legendre()
        .iter()
        .map(|(x, w)| w * f(mid + half * x))
        .sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faddeeva_matches_known_values() {
        // w(i) = e erfc(1) = 0.42758357615580700442 (by hand from erfc).
        let w = faddeeva(C::new(0.0, 1.0));
        assert!((w.re - std::f64::consts::E * libm::erfc(1.0)).abs() < 1e-14);
        assert!(w.im.abs() < 1e-14);
        // On the real axis Re w(x) = exp(−x²).
        let w = faddeeva(C::new(1.3, 0.0));
        assert!((w.re - (-1.69f64).exp()).abs() < 1e-13, "{w:?}");
    }

    #[test]
    fn gauss_legendre_is_exact_for_polynomials() {
        let s = integrate(-1.0, 2.0, |x| x.powi(7) - 3.0 * x * x + 1.0);
        let exact = (2f64.powi(8) - 1.0) / 8.0 - (8.0 + 1.0) + 3.0;
        assert!((s - exact).abs() < 1e-12, "{s} vs {exact}");
    }

    #[test]
    fn chi2_p_values() {
        // χ² with 2 dof: Q = exp(−x/2).
        assert!((chi2_p_value(3.0, 2.0) - (-1.5f64).exp()).abs() < 1e-14);
        // 1 dof: Q = erfc(sqrt(x/2)).
        assert!((chi2_p_value(4.0, 1.0) - libm::erfc(2f64.sqrt())).abs() < 1e-13);
        assert!((chi2_p_value(40.0, 30.0) - 0.10486).abs() < 1e-4);
    }
}
