//! `PairFirst(x)` and `PairSecond(x)`: for every unordered pair i < j of the
//! elements of each entry's collection `x`, in the order (0,1), (0,2), ...,
//! (1,2), ... (ROOT::VecOps' `Combinations(x, 2)`), its first and its second
//! element. The pairs of a collection are a collection of their own (n
//! elements make n(n-1)/2 pairs), aligned with the pairs of any collection
//! of the same length, so element-wise expressions combine them.
//!
//! The pairs grow as the square of a collection's size, so what one window
//! may make is bounded: past `MAX_PAIRS` the evaluation stops with
//! `TooLarge`, the scan retries the window in smaller parts, and only a
//! single entry making more than `MAX_PAIRS` pairs (more than 1,448
//! elements) is an error.

use std::sync::Arc;

use super::AnalysisError;
use super::eval::{Inputs, Val};
use super::plan::Collection;
use super::vecops::Coll;

/// Pairs one evaluation of `PairFirst`/`PairSecond` may make: 8 MB of doubles.
pub const MAX_PAIRS: u64 = 1 << 20;

/// The collection the pairs of `x` make.
pub(super) fn family(x: &Collection) -> Collection {
    Collection {
        key: format!("pairs:{}", x.key),
        certain: x.certain,
        branch: format!("pairs of {}", x.branch),
        pairs: true,
    }
}

/// Pairs of `n` elements.
fn pairs_of(n: usize) -> u64 {
    let n = n as u64;
    n * n.saturating_sub(1) / 2
}

/// The first (or, with `second`, the second) element of each pair of each
/// entry's elements.
pub(super) fn pairs(x: Coll, second: bool, inputs: &Inputs<'_>) -> Result<Val, AnalysisError> {
    let entries = x.offsets.len() - 1;
    let counts = x.offsets.windows(2).map(|w| w[1] - w[0]);
    let total: u64 = counts.clone().map(pairs_of).sum();
    if total > MAX_PAIRS {
        let (largest, n) = counts
            .enumerate()
            .max_by_key(|&(_, n)| n)
            .expect("pairs need an entry");
        // A window of several entries is retried in parts by the scan; the
        // message is for the one entry that alone makes too many.
        let message = if pairs_of(n) > MAX_PAIRS {
            format!(
                "entry {} has {n} elements of '{}', whose {} pairs are more than the {MAX_PAIRS} one \
entry may make (collections of at most 1448 elements are paired)",
                inputs.first_entry + largest as u64,
                x.name,
                pairs_of(n)
            )
        } else {
            format!(
                "entries {} to {} make {total} pairs of '{}', more than the {MAX_PAIRS} one evaluation may make",
                inputs.first_entry,
                inputs.first_entry + entries as u64 - 1,
                x.name
            )
        };
        return Err(AnalysisError::TooLarge { message });
    }
    let mut v = Vec::with_capacity(total as usize);
    let mut offsets = Vec::with_capacity(entries + 1);
    offsets.push(0);
    for w in x.offsets.windows(2) {
        let elements = &x.v[w[0]..w[1]];
        for (i, &first) in elements.iter().enumerate() {
            let later = &elements[i + 1..];
            if second {
                v.extend_from_slice(later);
            } else {
                v.extend(std::iter::repeat_n(first, later.len()));
            }
        }
        offsets.push(v.len());
    }
    Ok(Val::Jagged {
        v,
        offsets: Arc::new(offsets),
        valid: x.valid,
        name: format!("pairs of {}", x.name).into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(entries: usize) -> Inputs<'static> {
        Inputs {
            entries,
            first_entry: 100,
            slots: &[],
            map: &[],
        }
    }

    fn coll(v: Vec<f64>, offsets: Vec<usize>) -> Coll {
        Coll {
            v,
            offsets: Arc::new(offsets),
            valid: None,
            name: "x".into(),
        }
    }

    /// Worked by hand: entries [a b c], [], [d], [e f] make the pairs
    /// (a,b) (a,c) (b,c), none, none, (e,f).
    #[test]
    fn pairs_come_in_combinations_order() {
        let x = || coll(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], vec![0, 3, 3, 4, 6]);
        let Val::Jagged { v, offsets, .. } = pairs(x(), false, &inputs(4)).unwrap() else {
            panic!()
        };
        assert_eq!(
            (v, offsets.to_vec()),
            (vec![1.0, 1.0, 2.0, 5.0], vec![0, 3, 3, 3, 4])
        );
        let Val::Jagged { v, .. } = pairs(x(), true, &inputs(4)).unwrap() else {
            panic!()
        };
        assert_eq!(v, vec![2.0, 3.0, 3.0, 6.0]);
    }

    /// An entry of 2,000 elements would make 1,999,000 pairs: refused with
    /// the entry named, before anything is allocated for them.
    #[test]
    fn a_huge_collection_is_refused() {
        let x = coll(vec![0.0; 2001], vec![0, 1, 2001]);
        let Err(AnalysisError::TooLarge { message }) = pairs(x, false, &inputs(2)) else {
            panic!()
        };
        assert!(message.contains("entry 101 has 2000 elements"), "{message}");
        assert_eq!(pairs_of(1448), 1_047_628);
        assert!(pairs_of(1448) <= MAX_PAIRS && pairs_of(1449) > MAX_PAIRS);
    }
}
