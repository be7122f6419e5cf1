//! `sinh` and `sin_cos` for the four-vectors of the kinematics functions,
//! within a few units in the last place of libm's (`sin_cos` 2, `sinh` 2 near
//! zero and up to 12 above 1/16) and at a fraction of its cost. A pair
//! histogram over a dataset makes one four-vector per muon: with libm's
//! functions they were a fifth of the call's time, the rest of which is
//! inflating baskets (docs/benchmarks.md, "Datasets"). Arguments outside the
//! range these are made for (rapidities far past any detector's, angles of
//! many turns) go to libm, so every double gets an answer as good as libm's
//! or within the bound the tests hold these to.

/// `x.sinh()`. Near zero, where `(e^x - e^-x) / 2` would lose digits to
/// cancellation, a Taylor series that is exact to double precision there;
/// just above it that difference still loses about three bits (10 units in
/// the last place at most, harmless beside a float32 rapidity's 2^-24); far
/// out, where `e^x` overflows before `sinh` does, libm's own.
#[inline(always)]
pub(super) fn sinh(x: f64) -> f64 {
    let a = x.abs();
    if a < 0.0625 {
        // The first term left out, x^11/11!, is below 2^-64 of x here.
        let x2 = x * x;
        x * (1.0 + x2 / 6.0 * (1.0 + x2 / 20.0 * (1.0 + x2 / 42.0 * (1.0 + x2 / 72.0))))
    } else if a < 700.0 {
        let t = a.exp();
        (0.5 * (t - 1.0 / t)).copysign(x)
    } else {
        x.sinh()
    }
}

/// π/2 in three parts (Cody and Waite's reduction, with fdlibm's constants):
/// the first two hold 31 and 32 significant bits, so their products with a
/// quadrant number below 2^20 are exact, and the three add up to π/2 within
/// 1.01e-37. Near a root of sine or cosine (a multiple of π/2), where the
/// reduced argument is tiny, it is then still right to the last bit.
const HALF_PI_1: f64 = 1.5707963267341256;
const HALF_PI_2: f64 = 6.077100506303966e-11;
const HALF_PI_3: f64 = 2.0222662487959506e-21;

/// Beyond this, the reduction above loses bits: libm reduces instead.
const REDUCED_UP_TO: f64 = 1e5;

/// `x.sin_cos()`, each within 2 units in the last place of libm's: `x`
/// brought into [-π/4, π/4] by the nearest multiple of π/2, then sine and
/// cosine polynomials on that interval (the minimax coefficients of Sun's
/// fdlibm, `__kernel_sin` and `__kernel_cos`), the quadrant choosing which is
/// which and their signs.
#[inline(always)]
pub(super) fn sin_cos(x: f64) -> (f64, f64) {
    // NaN and the infinities, which libm answers with NaN, go there too.
    if !x.is_finite() || x.abs() > REDUCED_UP_TO {
        return x.sin_cos();
    }
    // The polynomial would give -0 a positive sine.
    if x == 0.0 {
        return (x, 1.0);
    }
    // Rounded to the nearest whole number by adding and taking away 1.5 *
    // 2^52 (`f64::round` is a libm call on x86-64 without SSE4.1).
    const ROUND: f64 = 6_755_399_441_055_744.0;
    let n = (x * std::f64::consts::FRAC_2_PI + ROUND) - ROUND;
    // The first subtraction is exact (x and n·HALF_PI_1 are within a factor
    // of two of each other), and so is the second wherever the result is
    // small enough for its rounding to matter.
    let r = ((x - n * HALF_PI_1) - n * HALF_PI_2) - n * HALF_PI_3;
    let (s, c) = (sin_kernel(r), cos_kernel(r));
    // `n` is a whole number below 2^17 in magnitude: its quadrant is exact.
    match (n as i64).rem_euclid(4) {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// sin(r) for |r| <= π/4.
#[inline(always)]
fn sin_kernel(r: f64) -> f64 {
    const S: [f64; 6] = [
        -0.16666666666666632,
        0.00833333333332249,
        -0.0001984126982985795,
        2.7557313707070068e-06,
        -2.5050760253406863e-08,
        1.58969099521155e-10,
    ];
    let z = r * r;
    let tail = S[1] + z * (S[2] + z * (S[3] + z * (S[4] + z * S[5])));
    r + z * r * (S[0] + z * tail)
}

/// cos(r) for |r| <= π/4, with 1 - r²/2 summed so that its rounding error
/// is kept (fdlibm's way).
#[inline(always)]
fn cos_kernel(r: f64) -> f64 {
    const C: [f64; 6] = [
        0.0416666666666666,
        -0.001388888888887411,
        2.480158728947673e-05,
        -2.7557314351390663e-07,
        2.087572321298175e-09,
        -1.1359647557788195e-11,
    ];
    let z = r * r;
    let tail = z * z * (C[0] + z * (C[1] + z * (C[2] + z * (C[3] + z * (C[4] + z * C[5])))));
    let half = 0.5 * z;
    let w = 1.0 - half;
    w + (((1.0 - w) - half) + tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many units in the last place `got` is from `want` (0 when equal,
    /// infinities and NaNs included).
    fn ulps(got: f64, want: f64) -> f64 {
        if got == want || (got.is_nan() && want.is_nan()) {
            return 0.0;
        }
        (got - want).abs() / (want.abs() * f64::EPSILON).max(f64::MIN_POSITIVE)
    }

    /// Doubles from 1e-12 to 720 in steps of 0.04 %, both signs, both sides
    /// of the series' edge, the overflow, and the special values: the series
    /// within 2 units in the last place, the rest within 12.
    #[test]
    fn sinh_is_libms_to_a_few_units_in_the_last_place() {
        let mut xs = vec![0.0, 1e-300, 5e-324, 0.0625, 0.0624999, 0.0625001];
        xs.extend([1.0, 699.9, 700.0, 700.1, 710.0, 710.5, 711.0, f64::INFINITY]);
        let mut x = 1e-12_f64;
        while x < 720.0 {
            xs.push(x);
            x *= 1.00037;
        }
        for &x in &xs {
            for x in [x, -x] {
                let (got, want) = (sinh(x), x.sinh());
                // The series is as good as libm; the difference of
                // exponentials loses a few bits near the series' edge.
                let bound = if x.abs() < 0.0625 { 2.0 } else { 12.0 };
                assert!(ulps(got, want) <= bound, "sinh({x}) = {got}, libm {want}");
                assert_eq!(got.is_sign_negative(), want.is_sign_negative(), "sinh({x})");
            }
        }
        assert!(sinh(f64::NAN).is_nan());
    }

    /// Sine and cosine within 2 units in the last place of libm's, near
    /// their roots too (where the reduction's last bits show), over four
    /// turns in fine steps, at the octants' edges, at float32 angles as files
    /// store them, out to the edge of the reduction and past it.
    #[test]
    fn sin_cos_is_libms_to_a_few_units_in_the_last_place() {
        use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};
        let mut xs = vec![0.0, -0.0, 1e-300, FRAC_PI_4, FRAC_PI_2, PI, 2.0 * PI];
        xs.extend([REDUCED_UP_TO, REDUCED_UP_TO * 1.5, 1e300]);
        for k in -8..=8 {
            let edge = f64::from(k) * FRAC_PI_4;
            xs.extend([
                edge,
                edge.next_up(),
                edge.next_down(),
                f64::from(edge as f32),
            ]);
        }
        let mut x = -4.0 * PI;
        while x < 4.0 * PI {
            xs.extend([x, f64::from(x as f32)]);
            x += 1.3e-5;
        }
        let mut x = 1.0;
        while x < REDUCED_UP_TO {
            xs.extend([x, -x]);
            x *= 1.001;
        }
        for &x in &xs {
            let ((s, c), (ws, wc)) = (sin_cos(x), x.sin_cos());
            for (got, want, what) in [(s, ws, "sin"), (c, wc, "cos")] {
                assert!(ulps(got, want) <= 2.0, "{what}({x}) = {got}, libm {want}");
            }
        }
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let (s, c) = sin_cos(x);
            assert!(s.is_nan() && c.is_nan(), "{x}");
        }
        assert!(sin_cos(-0.0).0.is_sign_negative());
    }
}
