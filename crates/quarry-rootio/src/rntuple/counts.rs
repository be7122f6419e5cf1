//! A collection's item counts straight from its offsets pages. A scan reads
//! a collection chunk by chunk, and a chunk is whole pages of its index
//! column: the counts are then each offset less the one before, taken from
//! the page's bytes in one pass, with no table of offsets built and read
//! again (for a split, delta-encoded page the counts are the deltas
//! themselves). The offset a chunk starts from is the cluster's start or
//! the end the chunk before left; any other read, and any page that looks
//! damaged, takes the general path (`Reading::elements_into`), which says
//! what is wrong.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::pages::{ColumnType, with_offsets_page};
use super::read::{MAX_PAGE_ELEMENTS, Reading};
use crate::FormatError;

use ColumnType as T;

/// Where the last chunk read this way ended: the index column, the cluster,
/// the element after its last, and that last offset.
pub(super) type ChunkEnd = (usize, usize, u64, u64);

impl Reading<'_> {
    /// Appends the item counts of `entries` (cluster-relative) of index
    /// column `column` to `counts` when the entries are whole pages of it
    /// and their offsets are sound; returns the first item and the end of
    /// the last. None, with `counts` as it was, when the general path must
    /// read them.
    pub(super) fn counts_of_whole_pages(
        &mut self,
        column: usize,
        cluster: usize,
        entries: Range<u64>,
        counts: &mut Vec<u32>,
    ) -> Result<Option<(u64, u64)>, FormatError> {
        let codec = self.codec(column)?;
        let nt = self.nt;
        let Some(stored) = nt.clusters[cluster].columns.get(column) else {
            return Ok(None);
        };
        let pages = (
            stored.starts.binary_search(&entries.start),
            stored.starts.binary_search(&entries.end),
        );
        let (Ok(first_page), Ok(end_page)) = pages else {
            return Ok(None);
        };
        let first = match (entries.start, self.chunk_end) {
            (0, _) => 0,
            (at, Some((c, k, end_at, end))) if (c, k, end_at) == (column, cluster, at) => end,
            _ => return Ok(None),
        };
        if !codec.kind.is_index()
            || stored.first_element.is_none()
            || end_page >= stored.starts.len()
            || nt.lead_zeros(column, cluster)? != 0
        {
            return Ok(None);
        }
        let old = counts.len();
        let mut last = first;
        for info in &stored.pages[first_page..end_page] {
            if info.elements > MAX_PAGE_ELEMENTS {
                counts.truncate(old);
                return Ok(None);
            }
            let n = info.elements as usize;
            self.charge(u64::from(info.elements) * codec.kind.decoded_size())?;
            let (file, max_key) = (self.file, nt.anchor.max_key_size);
            let ended = with_offsets_page(file, &codec, info, max_key, &mut self.buffers, |b| {
                page_counts(codec.kind, b, n, last, counts)
            })?;
            match ended {
                Some(end) => last = end,
                None => {
                    counts.truncate(old);
                    return Ok(None);
                }
            }
        }
        self.chunk_end = Some((column, cluster, entries.end, last));
        Ok(Some((first, last)))
    }
}

/// Appends the counts of a page of `n` offsets (`bytes`, decompressed) of
/// index type `kind` to `counts`, the first counted from `start`; returns
/// the page's last offset, or None (and `counts` as it was) when an offset
/// goes backwards or a count passes 2^32.
fn page_counts(
    kind: ColumnType,
    bytes: &[u8],
    n: usize,
    start: u64,
    counts: &mut Vec<u32>,
) -> Option<u64> {
    let width = if matches!(kind, T::Index32 | T::SplitIndex32) {
        4
    } else {
        8
    };
    if n == 0 || bytes.len() != n * width {
        return (n == 0).then_some(start);
    }
    let old = counts.len();
    counts.reserve(n);
    let out = &mut counts.spare_capacity_mut()[..n];
    let (last, damaged) = match kind {
        T::Index32 => offsets_counts::<4, false>(bytes, n, start, out),
        T::Index64 => offsets_counts::<8, false>(bytes, n, start, out),
        T::SplitIndex32 => offsets_counts::<4, true>(bytes, n, start, out),
        T::SplitIndex64 => offsets_counts::<8, true>(bytes, n, start, out),
        _ => return None,
    };
    // SAFETY: each counter wrote all `n` elements after the `old` ones (the
    // reserve made room for them).
    unsafe { counts.set_len(old + n) };
    if damaged != 0 {
        counts.truncate(old);
        return None;
    }
    Some(last)
}

/// The offset of `N` little-endian bytes.
#[inline(always)]
fn offset<const N: usize>(b: &[u8]) -> u64 {
    let mut le = [0u8; 8];
    le[..N].copy_from_slice(&b[..N]);
    u64::from_le_bytes(le)
}

/// The counts of a page of `n` offsets of `N` bytes, plain or (`SPLIT`)
/// byte-split and delta-encoded (`plain_counts`, `split_counts`); returns
/// the last offset and non-zero when one went backwards or a count passed
/// 2^32 (or-ed, not branched on, so the pass vectorises). Compiled for AVX2
/// too, and that chosen when the CPU has it: 64-bit compares need SSE4.2 at
/// least, so the baseline build does it one count at a time.
fn offsets_counts<const N: usize, const SPLIT: bool>(
    bytes: &[u8],
    n: usize,
    start: u64,
    out: &mut [MaybeUninit<u32>],
) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { offsets_counts_avx2::<N, SPLIT>(bytes, n, start, out) };
    }
    offsets_counts_portable::<N, SPLIT>(bytes, n, start, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn offsets_counts_avx2<const N: usize, const SPLIT: bool>(
    bytes: &[u8],
    n: usize,
    start: u64,
    out: &mut [MaybeUninit<u32>],
) -> (u64, u64) {
    offsets_counts_portable::<N, SPLIT>(bytes, n, start, out)
}

#[inline(always)]
fn offsets_counts_portable<const N: usize, const SPLIT: bool>(
    bytes: &[u8],
    n: usize,
    start: u64,
    out: &mut [MaybeUninit<u32>],
) -> (u64, u64) {
    if SPLIT {
        split_counts::<N>(bytes, n, start, out)
    } else {
        plain_counts::<N>(bytes, start, out)
    }
}

/// Counts of a page of plain offsets (each the end of its entry's items):
/// each less the one before, the first less `start`. Returns the last offset
/// and the damage found (`offsets_counts`).
#[inline(always)]
fn plain_counts<const N: usize>(
    bytes: &[u8],
    start: u64,
    out: &mut [MaybeUninit<u32>],
) -> (u64, u64) {
    let count = |earlier: u64, end: u64| {
        let n = end.wrapping_sub(earlier);
        (n as u32, (n >> 32) | u64::from(end < earlier))
    };
    let ends = bytes.chunks_exact(N);
    let (Some(first), Some(end)) = (out.first_mut(), ends.clone().next()) else {
        return (start, 0);
    };
    let (n, mut damaged) = count(start, offset::<N>(end));
    first.write(n);
    for (c, (earlier, end)) in out[1..].iter_mut().zip(ends.clone().zip(ends.skip(1))) {
        let (n, damage) = count(offset::<N>(earlier), offset::<N>(end));
        c.write(n);
        damaged |= damage;
    }
    let last = offset::<N>(&bytes[bytes.len() - N..]);
    (last, damaged)
}

/// Counts of a byte-split, delta-encoded page of `n` offsets (the page's
/// first offset as stored, each next one the difference from the one
/// before): the first is that offset less `start`, the others the deltas.
/// Returns the last offset (the first plus the other deltas) and non-zero
/// when the first went backwards or any count passed 2^32.
#[inline(always)]
fn split_counts<const N: usize>(
    bytes: &[u8],
    n: usize,
    start: u64,
    out: &mut [MaybeUninit<u32>],
) -> (u64, u64) {
    let planes: [&[u8]; N] = std::array::from_fn(|k| &bytes[k * n..(k + 1) * n]);
    let delta =
        |i: usize| -> u64 { (0..N).fold(0u64, |v, k| v | u64::from(planes[k][i]) << (8 * k)) };
    let Some((first, rest)) = out.split_first_mut() else {
        return (start, 0);
    };
    let head = delta(0);
    let n0 = head.wrapping_sub(start);
    first.write(n0 as u32);
    let mut damaged = (n0 >> 32) | u64::from(head < start);
    let mut sum = head;
    for (i, c) in rest.iter_mut().enumerate() {
        let d = delta(i + 1);
        c.write(d as u32);
        damaged |= d >> 32;
        sum = sum.wrapping_add(d);
    }
    (sum, damaged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(ends: &[u64], width: usize) -> Vec<u8> {
        ends.iter()
            .flat_map(|e| e.to_le_bytes()[..width].to_vec())
            .collect()
    }

    fn split(ends: &[u64], width: usize) -> Vec<u8> {
        let deltas: Vec<u64> = std::iter::once(ends[0])
            .chain(ends.windows(2).map(|w| w[1].wrapping_sub(w[0])))
            .collect();
        (0..width)
            .flat_map(|k| deltas.iter().map(move |d| (d >> (8 * k)) as u8))
            .collect()
    }

    /// Counts worked out by hand from offsets 5, 5, 9, 12 after an entry
    /// ending at 3: 2, 0, 4, 3, in every index encoding.
    #[test]
    fn counts_come_from_each_index_encoding() {
        let ends = [5u64, 5, 9, 12];
        for (kind, bytes) in [
            (T::Index64, plain(&ends, 8)),
            (T::Index32, plain(&ends, 4)),
            (T::SplitIndex64, split(&ends, 8)),
            (T::SplitIndex32, split(&ends, 4)),
        ] {
            let mut counts = vec![7];
            assert_eq!(
                page_counts(kind, &bytes, 4, 3, &mut counts),
                Some(12),
                "{kind:?}"
            );
            assert_eq!(counts, [7, 2, 0, 4, 3], "{kind:?}");
        }
    }

    /// Damage gives None and leaves the counts as they were: an offset
    /// before the one it follows (in the page or the chunk's start), a
    /// count past 2^32, bytes of another length than the page's.
    #[test]
    fn damaged_offsets_are_left_to_the_general_path() {
        let cases: [(&[u64], u64); 3] = [(&[5, 4, 9], 0), (&[5, 9], 6), (&[1, 1 << 33], 0)];
        for (ends, start) in cases {
            for (kind, bytes) in [
                (T::Index64, plain(ends, 8)),
                (T::SplitIndex64, split(ends, 8)),
            ] {
                let mut counts = vec![1, 2];
                let n = ends.len();
                assert_eq!(
                    page_counts(kind, &bytes, n, start, &mut counts),
                    None,
                    "{kind:?} {ends:?}"
                );
                assert_eq!(counts, [1, 2]);
            }
        }
        let mut counts = Vec::new();
        assert_eq!(page_counts(T::Index64, &[0; 12], 2, 0, &mut counts), None);
        assert!(counts.is_empty());
    }

    /// Long enough for the vectorised passes: entry i holds i items.
    #[test]
    fn long_pages_count_as_short_ones() {
        let ends: Vec<u64> = (1..=1000u64).map(|i| i * (i + 1) / 2).collect();
        let want: Vec<u32> = (1..=1000).collect();
        for (kind, bytes) in [
            (T::Index64, plain(&ends, 8)),
            (T::SplitIndex32, split(&ends, 4)),
        ] {
            let mut counts = Vec::new();
            let last = page_counts(kind, &bytes, ends.len(), 0, &mut counts);
            assert_eq!(last, Some(500_500), "{kind:?}");
            assert_eq!(counts, want, "{kind:?}");
        }
    }
}
