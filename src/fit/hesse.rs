//! Hesse: the matrix of second derivatives by finite differences (steps
//! tuned to a fiftieth of each parameter's error, as the cost's own curvature
//! says), its inverse by Cholesky, and the covariance in external parameters.

use super::minimise::Internal;

/// A step's target fraction of the parameter's error.
const STEP_FRACTION: f64 = 0.02;

/// Second derivatives of `f` at internal `u`.
pub fn hessian(f: &Internal<'_>, u: &[f64]) -> Vec<Vec<f64>> {
    let n = u.len();
    let f0 = f.value(u);
    let mut x = u.to_vec();
    let mut steps: Vec<f64> = f.steps.borrow().iter().map(|s| 20.0 * s).collect();
    let mut h = vec![vec![0.0; n]; n];
    for k in 0..n {
        for _ in 0..3 {
            let s = steps[k];
            x[k] = u[k] + s;
            let up = f.value(&x);
            x[k] = u[k] - s;
            let down = f.value(&x);
            x[k] = u[k];
            let d = up + down - 2.0 * f0;
            h[k][k] = d / (s * s);
            // f ≈ f0 + (δ/σ)² near a minimum of −2 ln L: d = 2 (s/σ)².
            if !(d > 0.0 && d.is_finite()) {
                steps[k] = s * if d.is_finite() { 4.0 } else { 0.1 };
                continue;
            }
            let sigma = s * (2.0 / d).sqrt();
            let wanted = STEP_FRACTION * sigma;
            if (wanted / s - 1.0).abs() < 0.5 {
                break;
            }
            steps[k] = wanted;
        }
    }
    for i in 0..n {
        for j in 0..i {
            let (si, sj) = (steps[i], steps[j]);
            let mut at = |a: f64, b: f64| {
                x[i] = u[i] + a * si;
                x[j] = u[j] + b * sj;
                let v = f.value(&x);
                x[i] = u[i];
                x[j] = u[j];
                v
            };
            let v =
                (at(1.0, 1.0) - at(1.0, -1.0) - at(-1.0, 1.0) + at(-1.0, -1.0)) / (4.0 * si * sj);
            h[i][j] = v;
            h[j][i] = v;
        }
    }
    h
}

/// The inverse of a symmetric positive-definite matrix (None otherwise).
// Matrix arithmetic reads best with indices.
#[allow(clippy::needless_range_loop)]
pub fn invert_positive(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    if a.iter().flatten().any(|v| !v.is_finite()) {
        return None;
    }
    // Cholesky: a = L Lᵀ.
    let mut l = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = a[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
            if i == j {
                if s.is_nan() || s <= 0.0 {
                    return None;
                }
                l[i][i] = s.sqrt();
            } else {
                l[i][j] = s / l[j][j];
            }
        }
    }
    // a⁻¹ = L⁻ᵀ L⁻¹, column by column.
    let mut inv = vec![vec![0.0; n]; n];
    for c in 0..n {
        let mut y = vec![0.0; n];
        for i in 0..n {
            let e = if i == c { 1.0 } else { 0.0 };
            y[i] = (e - (0..i).map(|k| l[i][k] * y[k]).sum::<f64>()) / l[i][i];
        }
        let mut x = vec![0.0; n];
        for i in (0..n).rev() {
            x[i] = (y[i] - (i + 1..n).map(|k| l[k][i] * x[k]).sum::<f64>()) / l[i][i];
        }
        for i in 0..n {
            inv[i][c] = x[i];
        }
    }
    Some(inv)
}

/// The covariance of all parameters (zero rows for fixed ones) in external
/// coordinates: 2 H⁻¹ for a −2 ln L or χ² cost, through the transforms'
/// derivatives.
pub fn external_covariance(f: &Internal<'_>, u: &[f64], inverse: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = f.params.len();
    let mut cov = vec![vec![0.0; n]; n];
    let jac: Vec<f64> = f
        .free
        .iter()
        .enumerate()
        .map(|(k, &i)| f.params[i].derivative(u[k]))
        .collect();
    for (a, &i) in f.free.iter().enumerate() {
        for (b, &j) in f.free.iter().enumerate() {
            cov[i][j] = 2.0 * jac[a] * inverse[a][b] * jac[b];
        }
    }
    cov
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::needless_range_loop)]
    fn inverts_a_positive_matrix() {
        let a = vec![
            vec![4.0, 1.0, 0.5],
            vec![1.0, 3.0, 0.2],
            vec![0.5, 0.2, 2.0],
        ];
        let inv = invert_positive(&a).unwrap();
        for i in 0..3 {
            for j in 0..3 {
                let p: f64 = (0..3).map(|k| a[i][k] * inv[k][j]).sum();
                assert!((p - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
        assert!(invert_positive(&[vec![1.0, 2.0], vec![2.0, 1.0]]).is_none());
    }
}
