//! The columns the analysis engine reads most, numbers one per entry, in
//! fixed arrays, or in one collection (`float32`, `int32[3]`,
//! `float32[]`), read straight into the `Column` a chunk is decoded into:
//! the values column's elements appended to the column's own buffer, the
//! collection's offsets turned into its counts, with no nested `FieldData`
//! built and taken apart, and the column's memory reused from chunk to
//! chunk as a TTree basket's is. Other shapes take the general path.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::bytes::corrupt;
use super::fields::{Reprs, Shape};
use super::pages::Decoded;
use super::read::Reading;
use crate::FormatError;
use crate::column::Column;
use crate::{Prim, Values};

/// How a column whose entries are plain numbers is read.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Flat {
    /// `per_entry` elements of the `values` column per entry.
    Numbers {
        values: Reprs,
        prim: Prim,
        per_entry: u64,
    },
    /// A collection (not an optional): its `index` column's offsets, and
    /// `inner` elements of the `values` column per item.
    Jagged {
        index: Reprs,
        values: Reprs,
        prim: Prim,
        inner: u64,
    },
}

/// The flat reading of a cut-down shape, if it has one.
pub(super) fn flat_plan(shape: &Shape) -> Option<Flat> {
    let mut per = 1u64;
    let mut index: Option<&Reprs> = None;
    let mut at = shape;
    loop {
        match at {
            Shape::Record { members, .. } if members.len() == 1 => at = &members[0].shape,
            Shape::Array { size, item } => {
                per = per.checked_mul(*size)?;
                at = item;
            }
            Shape::Collection {
                columns,
                item,
                optional: false,
            } if index.is_none() && per == 1 => {
                index = Some(columns);
                at = item;
            }
            Shape::Leaf { prim, columns } if per > 0 => {
                let values = columns.clone();
                return Some(match index {
                    None => Flat::Numbers {
                        values,
                        prim: *prim,
                        per_entry: per,
                    },
                    Some(index) => Flat::Jagged {
                        index: index.clone(),
                        values,
                        prim: *prim,
                        inner: per,
                    },
                });
            }
            _ => return None,
        }
    }
}

impl Reading<'_> {
    /// Appends `entries` (within the RNTuple) read as `flat` to `into`, a
    /// column of its layout. False, with `into` untouched, when a cluster
    /// holds the values in a column of another type than the field's (a
    /// conversion the general path makes).
    pub fn read_flat(
        &mut self,
        flat: &Flat,
        entries: Range<u64>,
        into: &mut Column,
    ) -> Result<bool, FormatError> {
        self.restart_budget();
        let nt = self.nt;
        if entries.end > nt.entries || entries.start > entries.end {
            return Err(corrupt(format!(
                "entries {}..{} of an RNTuple of {}",
                entries.start, entries.end, nt.entries
            )));
        }
        let first = nt
            .clusters
            .partition_point(|c| c.first_entry + c.entries <= entries.start);
        let mut parts = Vec::new();
        for (index, c) in nt.clusters.iter().enumerate().skip(first) {
            if c.first_entry >= entries.end {
                break;
            }
            let start = entries.start.max(c.first_entry) - c.first_entry;
            let end = entries.end.min(c.first_entry + c.entries) - c.first_entry;
            let (values, prim) = match flat {
                Flat::Numbers { values, prim, .. } | Flat::Jagged { values, prim, .. } => {
                    (values, *prim)
                }
            };
            let column = self.choose(values, index)?[0];
            if self.codec(column)?.kind.value_prim() != Some(prim) {
                return Ok(false);
            }
            parts.push((index, start..end, column));
        }
        for (cluster, range, column) in parts {
            match flat {
                Flat::Numbers { per_entry, .. } => {
                    let scaled = range.start * per_entry..range.end * per_entry;
                    self.values_into(column, cluster, scaled, into)?;
                }
                Flat::Jagged { index, inner, .. } => {
                    let (first, last) = self.counts_into(index, cluster, range.clone(), into)?;
                    let scaled = first
                        .checked_mul(*inner)
                        .zip(last.checked_mul(*inner))
                        .ok_or_else(|| corrupt("RNTuple collection too large"))?;
                    self.values_into(column, cluster, scaled.0..scaled.1, into)?;
                }
            }
            into.entries += (range.end - range.start) as usize;
        }
        Ok(true)
    }

    /// Appends elements `range` of `column` to the values of `into`.
    fn values_into(
        &mut self,
        column: usize,
        cluster: usize,
        range: Range<u64>,
        into: &mut Column,
    ) -> Result<(), FormatError> {
        let values = std::mem::replace(&mut into.values, Values::U8(Vec::new()));
        let mut out = Decoded::Values(values);
        let read = self.elements_into(column, cluster, range, &mut out);
        if let Decoded::Values(values) = out {
            into.values = values;
        }
        read
    }

    /// Appends the item counts of `entries` (cluster-relative) of a
    /// collection to the counts of `into`; returns the items they span.
    fn counts_into(
        &mut self,
        index: &Reprs,
        cluster: usize,
        entries: Range<u64>,
        into: &mut Column,
    ) -> Result<(u64, u64), FormatError> {
        if entries.is_empty() {
            return Ok((0, 0));
        }
        let column = self.choose(index, cluster)?[0];
        let counts = into.counts.get_or_insert_with(Vec::new);
        if let Some(items) = self.counts_of_whole_pages(column, cluster, entries.clone(), counts)? {
            return Ok(items);
        }
        // The offset before the first entry is where its items start.
        let from = entries.start.saturating_sub(1);
        let mut offsets = std::mem::replace(&mut self.offsets, Decoded::Index(Vec::new()));
        if let Decoded::Index(v) = &mut offsets {
            v.clear();
        }
        let read = self.elements_into(column, cluster, from..entries.end, &mut offsets);
        let counted = match (&offsets, read) {
            (Decoded::Index(ends), Ok(())) => {
                let counts = into.counts.get_or_insert_with(Vec::new);
                append_counts(ends, entries.start == 0, counts)
            }
            (_, Err(e)) => Err(e),
            _ => Err(corrupt("RNTuple collection without an index column")),
        };
        self.offsets = offsets;
        counted
    }
}

/// Appends each item's count to `counts` from a collection's offsets (the
/// end of each entry's items; the first is the end of the entry before,
/// unless `from_zero`); returns the first item and the end of the last.
fn append_counts(
    ends: &[u64],
    from_zero: bool,
    counts: &mut Vec<u32>,
) -> Result<(u64, u64), FormatError> {
    let (start, ends) = match (from_zero, ends.split_first()) {
        (true, _) => (0, ends),
        (false, Some((first, rest))) => (*first, rest),
        (false, None) => return Ok((0, 0)),
    };
    let Some(&last) = ends.last() else {
        return Ok((start, start));
    };
    // One pass without branches (`counts_between`), then, only when it
    // found damage, the pass that says which.
    let old = counts.len();
    counts.reserve(ends.len());
    let damaged = counts_between(start, ends, &mut counts.spare_capacity_mut()[..ends.len()]);
    // SAFETY: `counts_between` wrote each of the `ends.len()` elements after
    // the `old` ones (the reserve made room for them).
    unsafe { counts.set_len(old + ends.len()) };
    if damaged != 0 {
        counts.truncate(old);
        let mut last = start;
        for &end in ends {
            if end < last {
                return Err(corrupt(format!(
                    "RNTuple collection offsets go backwards ({end} after {last})"
                )));
            }
            last = end;
        }
        return Err(corrupt("a collection of over 2^32 items"));
    }
    Ok((start, last))
}

/// Writes the count between each offset of `ends` and the one before it (the
/// first's before it is `start`) to every element of `out`, as long as `ends`
/// (memory not yet written: the counts are the first writes); non-zero when an
/// offset goes backwards or a count passes 2^32. Or-ed, not branched on, and
/// compiled for AVX2 where the CPU has it (64-bit compares need SSE4.2 at
/// least, so the baseline build does it one count at a time).
fn counts_between(start: u64, ends: &[u64], out: &mut [MaybeUninit<u32>]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { counts_between_avx2(start, ends, out) };
    }
    counts_between_portable(start, ends, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn counts_between_avx2(start: u64, ends: &[u64], out: &mut [MaybeUninit<u32>]) -> u64 {
    counts_between_portable(start, ends, out)
}

#[inline(always)]
fn counts_between_portable(start: u64, ends: &[u64], out: &mut [MaybeUninit<u32>]) -> u64 {
    let count = |earlier: u64, end: u64| {
        let n = end.wrapping_sub(earlier);
        (n as u32, (n >> 32) | u64::from(end < earlier))
    };
    assert_eq!(out.len(), ends.len(), "a count for each offset");
    let (Some((first, rest)), Some(&end)) = (out.split_first_mut(), ends.first()) else {
        return 0;
    };
    let (n, mut damaged) = count(start, end);
    first.write(n);
    for (c, (&earlier, &end)) in rest.iter_mut().zip(ends.iter().zip(&ends[1..])) {
        let (n, damage) = count(earlier, end);
        c.write(n);
        damaged |= damage;
    }
    damaged
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts from offsets, worked out by hand: entries ending at 3, 3, 7
    /// after one ending at 2 hold 1, 0 and 4 items.
    #[test]
    fn counts_come_from_offsets_and_damage_is_refused() {
        let mut counts = vec![9];
        assert_eq!(
            append_counts(&[2, 3, 3, 7], false, &mut counts).unwrap(),
            (2, 7)
        );
        assert_eq!(counts, [9, 1, 0, 4]);
        counts.clear();
        assert_eq!(append_counts(&[2, 3], true, &mut counts).unwrap(), (0, 3));
        assert_eq!(counts, [2, 1]);
        let back = append_counts(&[5, 3], true, &mut counts).unwrap_err();
        assert!(back.to_string().contains("backwards"), "{back}");
        let huge = append_counts(&[0, 1 << 33], true, &mut counts).unwrap_err();
        assert!(huge.to_string().contains("2^32"), "{huge}");
        // The first count, from the entry before: backwards too.
        let first = append_counts(&[7, 3, 9], false, &mut counts).unwrap_err();
        assert!(first.to_string().contains("backwards"), "{first}");
        // Backwards by so much that the difference wraps to a small count.
        let wrapped = append_counts(&[u64::MAX, 5], false, &mut counts).unwrap_err();
        assert!(wrapped.to_string().contains("backwards"), "{wrapped}");
        // Nothing to count.
        counts.clear();
        assert_eq!(append_counts(&[], true, &mut counts).unwrap(), (0, 0));
        assert_eq!(append_counts(&[4], false, &mut counts).unwrap(), (4, 4));
        assert!(counts.is_empty());
        // Long enough for the vectorised pass: 0, 1, 2, ... items.
        let ends: Vec<u64> = (0..100u64).map(|i| i * (i + 1) / 2).collect();
        append_counts(&ends, false, &mut counts).unwrap();
        assert_eq!(counts, (1..100).collect::<Vec<u32>>());
    }
}
