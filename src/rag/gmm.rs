//! Gaussian mixtures with diagonal covariances, fitted by EM from a seeded
//! k-means++ start, the number of components chosen by BIC, and soft
//! membership: a point joins every component whose posterior passes a
//! threshold (RAPTOR's 0.1), so a node may get several parents. Our own small
//! implementation (the vectors have at most a dozen dimensions) instead of
//! linfa-clustering, which pulls in the ndarray/linfa stack for this one use.

/// A point joins a cluster whose posterior probability reaches this.
pub const SOFT_THRESHOLD: f64 = 0.1;
const EM_ROUNDS: usize = 40;
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
    for k in 1..=max_k.min(n - 1).max(1) {
        let m = Mixture::fit(&data, k, seed);
        let bic = m.bic(&data);
        if best.as_ref().is_none_or(|(b, _)| bic < *b) {
            best = Some((bic, m));
        }
    }
    let (_, mixture) = best.expect("k = 1 is always tried");
    let mut clusters = vec![Vec::new(); mixture.weights.len()];
    for (i, x) in data.iter().enumerate() {
        let post = mixture.posteriors(x);
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
}

impl Mixture {
    fn fit(data: &[Vec<f64>], k: usize, seed: u64) -> Mixture {
        let d = data[0].len();
        let means = kmeans_pp(data, k, seed);
        let global = column_variance(data);
        let mut m = Mixture {
            weights: vec![1.0 / k as f64; k],
            means,
            variances: vec![global; k],
        };
        let mut resp = vec![vec![0.0; k]; data.len()];
        for _ in 0..EM_ROUNDS {
            for (x, r) in data.iter().zip(resp.iter_mut()) {
                *r = m.posteriors(x);
            }
            for c in 0..k {
                let total: f64 = resp.iter().map(|r| r[c]).sum::<f64>().max(1e-12);
                m.weights[c] = total / data.len() as f64;
                for j in 0..d {
                    let mean = data
                        .iter()
                        .zip(&resp)
                        .map(|(x, r)| r[c] * x[j])
                        .sum::<f64>()
                        / total;
                    let var = data
                        .iter()
                        .zip(&resp)
                        .map(|(x, r)| r[c] * (x[j] - mean).powi(2))
                        .sum::<f64>()
                        / total;
                    m.means[c][j] = mean;
                    m.variances[c][j] = var.max(VARIANCE_FLOOR);
                }
            }
        }
        m
    }

    fn log_densities(&self, x: &[f64]) -> Vec<f64> {
        (0..self.weights.len())
            .map(|c| {
                let mut l = self.weights[c].max(1e-300).ln();
                for (j, &xj) in x.iter().enumerate() {
                    let v = self.variances[c][j];
                    l -= 0.5
                        * ((2.0 * std::f64::consts::PI * v).ln()
                            + (xj - self.means[c][j]).powi(2) / v);
                }
                l
            })
            .collect()
    }

    fn log_likelihood_of(&self, x: &[f64]) -> (f64, Vec<f64>) {
        let l = self.log_densities(x);
        let top = l.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum = top + l.iter().map(|v| (v - top).exp()).sum::<f64>().ln();
        (sum, l)
    }

    fn posteriors(&self, x: &[f64]) -> Vec<f64> {
        let (total, l) = self.log_likelihood_of(x);
        l.iter().map(|v| (v - total).exp()).collect()
    }

    fn bic(&self, data: &[Vec<f64>]) -> f64 {
        let k = self.weights.len() as f64;
        let d = data[0].len() as f64;
        let log_likelihood: f64 = data.iter().map(|x| self.log_likelihood_of(x).0).sum();
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
