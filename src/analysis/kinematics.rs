//! Kinematics as ROOT::VecOps computes it, in double precision: particles
//! given by (pt, eta, phi, mass) become four-vectors `x = pt cos(phi)`,
//! `y = pt sin(phi)`, `z = pt sinh(eta)`, `e = sqrt(x² + y² + z² + m²)`, and a
//! sum's mass is `sqrt(e² - x² - y² - z²)` (NaN where rounding makes that
//! negative, as in VecOps). Angles are in radians. The sines and `sinh` are
//! `elementary`'s, within a few units in the last place of libm's (12 at
//! most).

use super::elementary::{sin_cos, sinh};
use super::eval::Val;
use super::vecops::Aligned;

/// A particle's (x, y, z, e).
#[inline(always)]
pub(super) fn four_vector(pt: f64, eta: f64, phi: f64, mass: f64) -> [f64; 4] {
    let (sin, cos) = sin_cos(phi);
    let (x, y, z) = (pt * cos, pt * sin, pt * sinh(eta));
    [x, y, z, (x * x + y * y + z * z + mass * mass).sqrt()]
}

/// The mass of a four-vector (of a sum of particles).
#[inline(always)]
pub(super) fn mass_of([x, y, z, e]: [f64; 4]) -> f64 {
    (e * e - x * x - y * y - z * z).sqrt()
}

/// `InvariantMasses(pt1, eta1, phi1, mass1, pt2, eta2, phi2, mass2)`: the
/// mass of each pair of particles, element by element.
pub(super) fn invariant_masses(args: Aligned) -> Val {
    args.map(pair_mass)
}

/// The mass of two particles `[pt1, eta1, phi1, m1, pt2, eta2, phi2, m2]`:
/// one pair of `InvariantMasses` (shared with the fused pair histogram, so
/// both give the same bits).
#[inline(always)]
pub(super) fn pair_mass([pt1, eta1, phi1, m1, pt2, eta2, phi2, m2]: [f64; 8]) -> f64 {
    let a = four_vector(pt1, eta1, phi1, m1);
    let b = four_vector(pt2, eta2, phi2, m2);
    mass_of(std::array::from_fn(|k| a[k] + b[k]))
}

/// `InvariantMass(pt, eta, phi, mass)`: for each entry, the mass of the sum
/// of its collection's particles (0 for none: the sum of none is zero).
pub(super) fn invariant_mass(args: Aligned, entries: usize) -> Val {
    args.reduce_entries::<4>(entries, |rows, at| {
        let mut sum = [0.0; 4];
        for i in rows {
            let p = four_vector(at(0, i), at(1, i), at(2, i), at(3, i));
            for k in 0..4 {
                sum[k] += p[k];
            }
        }
        mass_of(sum)
    })
}

/// `DeltaPhi(phi1, phi2)`: the angle from `phi1` to `phi2` with its sign,
/// in [-π, π] (VecOps: `fmod(phi2 - phi1, 2π)` brought into that range).
#[inline(always)]
pub(super) fn delta_phi(phi1: f64, phi2: f64) -> f64 {
    use std::f64::consts::PI;
    let r = (phi2 - phi1) % (2.0 * PI);
    if r < -PI {
        r + 2.0 * PI
    } else if r > PI {
        r - 2.0 * PI
    } else {
        r
    }
}

/// `DeltaR(eta1, eta2, phi1, phi2)`: the distance in the (eta, phi) plane.
#[inline(always)]
pub(super) fn delta_r(eta1: f64, eta2: f64, phi1: f64, phi2: f64) -> f64 {
    let (deta, dphi) = (eta1 - eta2, delta_phi(phi1, phi2));
    (deta * deta + dphi * dphi).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    /// Worked by hand: two back-to-back massless particles of pt 45 at eta 0
    /// make a mass of 90; phi differences wrap into [-π, π].
    #[test]
    fn hand_worked_values() {
        let a = four_vector(45.0, 0.0, 0.0, 0.0);
        let b = four_vector(45.0, 0.0, PI, 0.0);
        let m = mass_of(std::array::from_fn(|k| a[k] + b[k]));
        assert!((m - 90.0).abs() < 1e-9, "{m}");
        assert!((delta_phi(0.1, -0.1) + 0.2).abs() < 1e-12);
        assert!((delta_phi(3.0, -3.0) - (2.0 * PI - 6.0)).abs() < 1e-12);
        assert!((delta_phi(-3.0, 3.0) + (2.0 * PI - 6.0)).abs() < 1e-12);
        assert!(
            (delta_r(1.0, 4.0, 0.0, 4.0) - (9.0 + (2.0 * PI - 4.0f64).powi(2)).sqrt()).abs()
                < 1e-12
        );
    }
}
