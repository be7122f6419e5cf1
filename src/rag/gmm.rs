//! Gaussian mixtures with diagonal covariances, fitted by EM from a seeded
//! k-means++ start, the number of components chosen by BIC, and soft
//! membership: a point joins every component whose posterior passes a
//! threshold (RAPTOR's 0.1), so a node may get several parents. Our own small
//! implementation (the vectors have at most a dozen dimensions) instead of
//! linfa-clustering, which pulls in the ndarray/linfa stack for this one use.

// Index loops read as the formulas they implement.
#![allow(clippy::needless_range_loop)]

/// A point joins a cluster whose posterior probability reaches this.
pub const SOFT_THRESHOLD: f64 = 0.1;
/// EM stops after this many rounds at most...
const EM_ROUNDS: usize = 40;
/// ...or once the mean log-likelihood per point gains less than this in a
/// round (scikit-learn's default tolerance): later rounds barely move it.
const EM_TOLERANCE: f64 = 1e-3;
/// The search over the number of components stops once BIC has failed to
/// improve on the best this many times in a row: BIC over k usually has one
/// minimum, and the larger mixtures are the costly ones to fit.
const BIC_PATIENCE: usize = 2;
const VARIANCE_FLOOR: f64 = 1e-4;

/// Clusters of `points` (indices; every point is in at least one), the number
/// of components chosen by BIC among 1..=max_k. Deterministic for a seed.
pub fn soft_clusters(points: &[Vec<f32>], max_k: usize, seed: u64) -> Vec<Vec<usize>> {
    let n = points.len();
    if n <= 2 {
        return vec![(0..n).collect()];
    }
    let data: Vec<Vec<f64>> = points
        .iter()
        .map(|p| p.iter().map(|&x| x as f64).collect())
        .collect();
    let mut best: Option<(f64, Mixture)> = None;
    let mut worse_in_a_row = 0;
    for k in 1..=max_k.min(n - 1).max(1) {
        let (m, log_likelihood) = Mixture::fit(&data, k, seed);
        let bic = m.bic(log_likelihood, &data);
        if best.as_ref().is_none_or(|(b, _)| bic < *b) {
            best = Some((bic, m));
            worse_in_a_row = 0;
        } else {
            worse_in_a_row += 1;
            if worse_in_a_row >= BIC_PATIENCE {
                break;
            }
        }
    }
    let (_, mixture) = best.expect("k = 1 is always tried");
    let mut clusters = vec![Vec::new(); mixture.weights.len()];
    let mut post = Vec::new();
    for (i, x) in data.iter().enumerate() {
        mixture.posteriors_into(x, &mut post);
        let top = argmax(&post);
        for (c, &p) in post.iter().enumerate() {
            if c == top || p >= SOFT_THRESHOLD {
                clusters[c].push(i);
            }
        }
    }
    clusters.retain(|c| !c.is_empty());
    clusters
}

fn argmax(v: &[f64]) -> usize {
    v.iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i)
}

struct Mixture {
    weights: Vec<f64>,
    means: Vec<Vec<f64>>,
    variances: Vec<Vec<f64>>,
    /// Per component: ln(weight) - 0.5 * sum_j ln(2 pi var_j), refreshed with
    /// the parameters so a density costs one pass over the dimensions.
    offsets: Vec<f64>,
}

impl Mixture {
    /// EM from a k-means++ start; returns the mixture and the total
    /// log-likelihood of `data` under it.
    fn fit(data: &[Vec<f64>], k: usize, seed: u64) -> (Mixture, f64) {
        let (n, d) = (data.len(), data[0].len());
        let global = column_variance(data);
        let mut m = Mixture {
            weights: vec![1.0 / k as f64; k],
            means: kmeans_pp(data, k, seed),
            variances: vec![global; k],
            offsets: vec![0.0; k],
        };
        m.refresh_offsets();
        // Responsibilities, row-major n x k.
        let mut resp = vec![0.0; n * k];
        let mut post = Vec::with_capacity(k);
        let mut previous = f64::NEG_INFINITY;
        let mut log_likelihood = 0.0;
        for round in 0..=EM_ROUNDS {
            log_likelihood = 0.0;
            for (x, r) in data.iter().zip(resp.chunks_exact_mut(k)) {
                log_likelihood += m.posteriors_into(x, &mut post);
                r.copy_from_slice(&post);
            }
            let gain = (log_likelihood - previous) / n as f64;
            if round == EM_ROUNDS || gain < EM_TOLERANCE {
                break;
            }
            previous = log_likelihood;
            m.maximise(data, &resp, d);
        }
        (m, log_likelihood)
    }

    /// The M step: weights, means and variances from the responsibilities.
    fn maximise(&mut self, data: &[Vec<f64>], resp: &[f64], d: usize) {
        let k = self.weights.len();
        for c in 0..k {
            let mut total = 0.0;
            let (mut sum, mut squares) = (vec![0.0; d], vec![0.0; d]);
            for (x, r) in data.iter().zip(resp.chunks_exact(k)) {
                let w = r[c];
                total += w;
                for j in 0..d {
                    sum[j] += w * x[j];
                    squares[j] += w * x[j] * x[j];
                }
            }
            let total = total.max(1e-12);
            self.weights[c] = total / data.len() as f64;
            for j in 0..d {
                let mean = sum[j] / total;
                // E[x^2] - mean^2 can dip below zero by rounding: the floor holds.
                let var = squares[j] / total - mean * mean;
                self.means[c][j] = mean;
                self.variances[c][j] = var.max(VARIANCE_FLOOR);
            }
        }
        self.refresh_offsets();
    }

    fn refresh_offsets(&mut self) {
        for c in 0..self.weights.len() {
            let log_det: f64 = self.variances[c]
                .iter()
                .map(|v| (2.0 * std::f64::consts::PI * v).ln())
                .sum();
            self.offsets[c] = self.weights[c].max(1e-300).ln() - 0.5 * log_det;
        }
    }

    /// Fills `post` with the posterior of every component for `x` and returns
    /// ln p(x).
    fn posteriors_into(&self, x: &[f64], post: &mut Vec<f64>) -> f64 {
        post.clear();
        for c in 0..self.weights.len() {
            let (means, vars) = (&self.means[c], &self.variances[c]);
            let mut distance = 0.0;
            for j in 0..x.len() {
                let diff = x[j] - means[j];
                distance += diff * diff / vars[j];
            }
            post.push(self.offsets[c] - 0.5 * distance);
        }
        let top = post.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let total = top + post.iter().map(|v| (v - top).exp()).sum::<f64>().ln();
        post.iter_mut().for_each(|v| *v = (*v - total).exp());
        total
    }

    fn bic(&self, log_likelihood: f64, data: &[Vec<f64>]) -> f64 {
        let k = self.weights.len() as f64;
        let d = data[0].len() as f64;
        let parameters = k * 2.0 * d + k - 1.0;
        -2.0 * log_likelihood + parameters * (data.len() as f64).ln()
    }
}

fn column_variance(data: &[Vec<f64>]) -> Vec<f64> {
    let n = data.len() as f64;
    (0..data[0].len())
        .map(|j| {
            let mean = data.iter().map(|x| x[j]).sum::<f64>() / n;
            (data.iter().map(|x| (x[j] - mean).powi(2)).sum::<f64>() / n).max(VARIANCE_FLOOR)
        })
        .collect()
}

/// k-means++ seeding with a seeded generator: the first centre is the point a
/// seeded draw picks, each next one drawn in proportion to squared distance.
fn kmeans_pp(data: &[Vec<f64>], k: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut state = seed ^ 0x5DEE_CE66_D1CE_4E5B;
    let mut uniform = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let dist = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>();
    let mut centres = vec![data[(uniform() * data.len() as f64) as usize % data.len()].clone()];
    while centres.len() < k {
        let d: Vec<f64> = data
            .iter()
            .map(|x| {
                centres
                    .iter()
                    .map(|c| dist(x, c))
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        let total: f64 = d.iter().sum();
        let pick = if total <= 0.0 {
            centres.len() % data.len()
        } else {
            let mut target = uniform() * total;
            d.iter()
                .position(|&v| {
                    target -= v;
                    target <= 0.0
                })
                .unwrap_or(data.len() - 1)
        };
        centres.push(data[pick].clone());
    }
    centres
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bic_finds_two_separated_groups() {
        let mut points = Vec::new();
        for i in 0..40 {
            let (a, b) = ((i as f32 * 1.7).sin() * 0.3, (i as f32 * 2.3).cos() * 0.3);
            points.push(vec![a, b]);
            points.push(vec![5.0 + b, 5.0 + a]);
        }
        let c = soft_clusters(&points, 6, 1);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(c, soft_clusters(&points, 6, 1));
    }
}
