//! Lexical vectors: TF-IDF over a set of texts, reduced to a few dense
//! dimensions by a randomized truncated SVD (Halko et al.: a seeded random
//! projection, one power iteration, then the exact SVD of the small projected
//! matrix by Jacobi rotations). Our own ~150 lines rather than linfa-reduction:
//! the matrix is sparse (linfa wants dense ndarray input, which for a document
//! of 2,000 chunks and 20,000 terms is 320 MB), and this keeps the build free
//! of the ndarray/linfa stack.

// Index loops read as the matrix formulas they implement.
#![allow(clippy::needless_range_loop)]

use std::collections::HashMap;

/// A sparse vector: (term id, weight), ids ascending.
pub type Sparse = Vec<(u32, f32)>;

/// TF-IDF vectors (sublinear tf, smoothed idf, L2-normalised) of `texts`.
pub struct TfIdf {
    vocabulary: HashMap<String, u32>,
    idf: Vec<f32>,
}

impl TfIdf {
    pub fn fit<'a>(texts: impl Iterator<Item = &'a str> + Clone) -> TfIdf {
        let mut vocabulary: HashMap<String, u32> = HashMap::new();
        let mut df: Vec<u32> = Vec::new();
        let mut n = 0usize;
        for text in texts {
            n += 1;
            let mut seen = std::collections::HashSet::new();
            for term in super::text::terms(text) {
                let next = vocabulary.len() as u32;
                let id = *vocabulary.entry(term).or_insert(next);
                if id as usize == df.len() {
                    df.push(0);
                }
                if seen.insert(id) {
                    df[id as usize] += 1;
                }
            }
        }
        let idf = df
            .iter()
            .map(|&d| ((1.0 + n as f32) / (1.0 + d as f32)).ln() + 1.0)
            .collect();
        TfIdf { vocabulary, idf }
    }

    pub fn vector(&self, text: &str) -> Sparse {
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for term in super::text::terms(text) {
            if let Some(&id) = self.vocabulary.get(&term) {
                *counts.entry(id).or_default() += 1;
            }
        }
        let mut v: Sparse = counts
            .into_iter()
            .map(|(id, c)| (id, (1.0 + (c as f32).ln()) * self.idf[id as usize]))
            .collect();
        v.sort_unstable_by_key(|&(id, _)| id);
        normalise_sparse(&mut v);
        v
    }
}

fn normalise_sparse(v: &mut Sparse) {
    let norm = v.iter().map(|(_, w)| w * w).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|(_, w)| *w /= norm);
    }
}

pub fn sparse_dot(a: &Sparse, b: &Sparse) -> f32 {
    let (mut i, mut j, mut sum) = (0, 0, 0.0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                sum += a[i].1 * b[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    sum
}

/// The mean of sparse vectors, L2-normalised (a cluster's centre).
pub fn centre<'a>(vectors: impl Iterator<Item = &'a Sparse>) -> Sparse {
    let mut sum: HashMap<u32, f32> = HashMap::new();
    for v in vectors {
        for &(id, w) in v {
            *sum.entry(id).or_default() += w;
        }
    }
    let mut out: Sparse = sum.into_iter().collect();
    out.sort_unstable_by_key(|&(id, _)| id);
    normalise_sparse(&mut out);
    out
}

/// A deterministic pseudo-random number in [-1, 1) for (seed, a, b).
fn noise(seed: u64, a: u64, b: u64) -> f32 {
    let mut x =
        seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

/// The rows of `rows` reduced to at most `dims` dense dimensions (rows · V_k,
/// the scores on the top right-singular vectors), deterministic for a seed.
pub fn reduce(rows: &[Sparse], dims: usize, seed: u64) -> Vec<Vec<f32>> {
    let n = rows.len();
    let width = (dims + 5).min(n);
    if n == 0 || width == 0 {
        return vec![Vec::new(); n];
    }
    let columns = rows
        .iter()
        .flatten()
        .map(|&(id, _)| id as usize + 1)
        .max()
        .unwrap_or(0);
    // Y = X Ω with Ω drawn on the fly, one value per (term, column).
    let mut y: Vec<Vec<f32>> = rows
        .iter()
        .map(|r| {
            (0..width)
                .map(|c| {
                    r.iter()
                        .map(|&(id, w)| w * noise(seed, id as u64, c as u64))
                        .sum()
                })
                .collect()
        })
        .collect();
    orthonormalise_columns(&mut y, width);
    // One power iteration, Y = X (Xᵀ Q), sharpens the captured subspace.
    let z = transpose_times(rows, &y, columns, width);
    y = rows
        .iter()
        .map(|r| sparse_times_dense(r, &z, width))
        .collect();
    orthonormalise_columns(&mut y, width);
    // B = Qᵀ X (width × terms); the eigenvectors of B Bᵀ are B's left singular vectors.
    let b = transpose_times(rows, &y, columns, width); // terms × width, i.e. Bᵀ
    let mut gram = vec![vec![0f64; width]; width];
    for row in &b {
        for i in 0..width {
            for j in i..width {
                gram[i][j] += (row[i] * row[j]) as f64;
            }
        }
    }
    for i in 0..width {
        for j in 0..i {
            gram[i][j] = gram[j][i];
        }
    }
    let (values, vectors) = jacobi_eigen(gram);
    let mut order: Vec<usize> = (0..width).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    let keep = dims.min(width);
    // rows · V_k = Q U_b Σ.
    y.iter()
        .map(|q| {
            order[..keep]
                .iter()
                .map(|&k| {
                    let sigma = values[k].max(0.0).sqrt();
                    let u: f64 = (0..width).map(|i| q[i] as f64 * vectors[i][k]).sum();
                    (u * sigma) as f32
                })
                .collect()
        })
        .collect()
}

/// Xᵀ D for sparse rows X (n × columns) and dense D (n × width).
fn transpose_times(rows: &[Sparse], d: &[Vec<f32>], columns: usize, width: usize) -> Vec<Vec<f32>> {
    let mut out = vec![vec![0f32; width]; columns];
    for (r, drow) in rows.iter().zip(d) {
        for &(id, w) in r {
            let o = &mut out[id as usize];
            for c in 0..width {
                o[c] += w * drow[c];
            }
        }
    }
    out
}

fn sparse_times_dense(r: &Sparse, z: &[Vec<f32>], width: usize) -> Vec<f32> {
    let mut out = vec![0f32; width];
    for &(id, w) in r {
        for c in 0..width {
            out[c] += w * z[id as usize][c];
        }
    }
    out
}

/// Modified Gram-Schmidt over the columns of a row-major matrix; a column that
/// vanishes stays zero.
fn orthonormalise_columns(m: &mut [Vec<f32>], width: usize) {
    for c in 0..width {
        for p in 0..c {
            let dot: f32 = m.iter().map(|r| r[c] * r[p]).sum();
            m.iter_mut().for_each(|r| r[c] -= dot * r[p]);
        }
        let norm = m.iter().map(|r| r[c] * r[c]).sum::<f32>().sqrt();
        m.iter_mut()
            .for_each(|r| r[c] = if norm > 1e-6 { r[c] / norm } else { 0.0 });
    }
}

/// Eigenvalues and eigenvectors (as columns) of a small symmetric matrix by
/// cyclic Jacobi rotations.
fn jacobi_eigen(mut a: Vec<Vec<f64>>) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = a.len();
    let mut v: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect())
        .collect();
    for _sweep in 0..50 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off < 1e-18 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if a[p][q].abs() < 1e-30 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k][p], a[k][q]);
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p][k], a[q][k]);
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let (vkp, vkq) = (row[p], row[q]);
                    row[p] = c * vkp - s * vkq;
                    row[q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i][i]).collect(), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_finds_eigenvalues() {
        let (values, _) = jacobi_eigen(vec![vec![2.0, 1.0], vec![1.0, 2.0]]);
        let mut v = values;
        v.sort_by(f64::total_cmp);
        assert!((v[0] - 1.0).abs() < 1e-9 && (v[1] - 3.0).abs() < 1e-9);
    }

    #[test]
    fn reduction_separates_two_topics_and_is_deterministic() {
        let texts = [
            "muon trigger efficiency muon chamber",
            "muon chamber trigger alignment",
            "calorimeter energy scale calibration",
            "energy calibration of the calorimeter",
        ];
        let tfidf = TfIdf::fit(texts.iter().copied());
        let rows: Vec<Sparse> = texts.iter().map(|t| tfidf.vector(t)).collect();
        let a = reduce(&rows, 2, 7);
        assert_eq!(a, reduce(&rows, 2, 7));
        let d =
            |x: &Vec<f32>, y: &Vec<f32>| x.iter().zip(y).map(|(p, q)| (p - q).powi(2)).sum::<f32>();
        assert!(d(&a[0], &a[1]) < d(&a[0], &a[2]));
        assert!(d(&a[2], &a[3]) < d(&a[1], &a[3]));
    }
}
