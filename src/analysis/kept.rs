//! The values the statistics' first pass keeps for exact quantiles, and the
//! selection of ranks among them.
//!
//! Floats are kept as floats (half the memory of doubles) in blocks of a
//! fixed size drawn from a small process-wide pool: a 10M-value branch fills
//! 40 MB, which fresh from the system cost a page fault and a zeroed page
//! every 4 kB (a sixth of the call's CPU) and, grown as one vector, a copy
//! at each doubling. Blocks given back after a call are reused by the next.

use std::sync::Mutex;

use rayon::prelude::*;

/// Floats per block: 1 MB.
const BLOCK: usize = 1 << 18;
/// Blocks the pool keeps between calls: 48 MB, the first pass's default
/// budget (`quantiles::DEFAULT_CAP` doubles) in floats.
const SPARE_BLOCKS: usize = 48;

static SPARE: Mutex<Vec<Vec<f32>>> = Mutex::new(Vec::new());

/// An empty block, from the pool when it has one.
fn take_block() -> Vec<f32> {
    let spare = SPARE.lock().ok().and_then(|mut pool| pool.pop());
    spare.unwrap_or_else(|| {
        let mut block = Vec::with_capacity(BLOCK);
        populate(block.spare_capacity_mut());
        block
    })
}

/// Asks Linux to back fresh memory with pages now, in one call, instead of
/// one fault per 4 kB page as the streaming stores first touch it (a fault
/// each costs more than the page's zeroing). Best effort: an older kernel
/// refuses, and the pages then come by faults as before.
fn populate<T>(memory: &mut [std::mem::MaybeUninit<T>]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = memory.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(memory);
        let (first, last) = (start.next_multiple_of(PAGE), end / PAGE * PAGE);
        if first < last {
            // SAFETY: the range lies within `memory`, owned by the caller and
            // not yet read; populating writes nothing the caller sees.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_POPULATE_WRITE,
                );
            }
        }
    }
}

/// Gives blocks back to the pool, as far as it keeps them.
fn give_blocks(blocks: Vec<Vec<f32>>) {
    let Ok(mut pool) = SPARE.lock() else {
        return;
    };
    for mut block in blocks {
        if pool.len() < SPARE_BLOCKS && block.capacity() == BLOCK {
            block.clear();
            pool.push(block);
        }
    }
}

/// The values kept by the first pass: as f32 while every one of them is
/// exactly an f32 (the usual branch type: twice as many fit), else as f64.
/// The budget counts halves of an f64: 1 per f32, 2 per f64.
pub(super) enum Kept {
    F32(Floats),
    F64(Vec<f64>),
}

/// Kept floats: full blocks, then the block being filled (merging parts
/// moves blocks, never copies the values), and how many fall in each bucket
/// of the top 16 bits of their key, counted as each batch is kept, while it
/// is in the first-level cache. u32 counts: the values kept are bounded by
/// the budget, far below 2^32.
pub(super) struct Floats {
    blocks: Vec<Vec<f32>>,
    counts: Vec<u32>,
    /// The bucket of each value of the batch being kept, taken from the
    /// float in a register as it is converted (the float itself goes
    /// straight to memory), counted once the whole batch proved exact.
    buckets: Vec<u16>,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept::F32(Floats {
            blocks: Vec::new(),
            counts: Vec::new(),
            buckets: Vec::new(),
        })
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        if let Kept::F32(floats) = self {
            give_blocks(std::mem::take(&mut floats.blocks));
        }
    }
}

impl Kept {
    /// Adds `xs`; returns the budget units they took (with those of values
    /// widened to f64 on the way).
    pub(super) fn extend(&mut self, xs: &[f64]) -> usize {
        if let Kept::F32(floats) = self {
            floats.buckets.clear();
            if push_floats(&mut floats.blocks, xs, &mut floats.buckets) {
                if floats.counts.is_empty() {
                    floats.counts = vec![0; 1 << 16];
                }
                for &b in &floats.buckets {
                    floats.counts[usize::from(b)] += 1;
                }
                return xs.len();
            }
            let blocks = &floats.blocks;
            let widened: Vec<f64> = blocks.iter().flatten().map(|&x| f64::from(x)).collect();
            let units = widened.len();
            *self = Kept::F64(widened);
            return self.extend(xs) + units;
        }
        let Kept::F64(v) = self else { unreachable!() };
        v.extend_from_slice(xs);
        2 * xs.len()
    }

    pub(super) fn append(&mut self, mut other: Kept) {
        match (&mut *self, &mut other) {
            (Kept::F32(a), Kept::F32(b)) => {
                a.blocks.append(&mut b.blocks);
                if a.counts.is_empty() {
                    a.counts = std::mem::take(&mut b.counts);
                } else {
                    a.counts
                        .iter_mut()
                        .zip(&b.counts)
                        .for_each(|(x, y)| *x += y);
                }
            }
            (Kept::F64(a), Kept::F32(b)) => {
                a.extend(b.blocks.iter().flatten().map(|&x| f64::from(x)))
            }
            (_, Kept::F64(b)) => {
                self.extend(b);
            }
        }
    }

    /// Every value, as a double (for bins once the values no longer fit).
    pub(super) fn values(&self) -> Box<dyn Iterator<Item = f64> + '_> {
        match self {
            Kept::F32(f) => Box::new(f.blocks.iter().flatten().map(|&x| f64::from(x))),
            Kept::F64(v) => Box::new(v.iter().copied()),
        }
    }

    /// The values at the wanted ranks (ascending, at least one).
    pub(super) fn select(mut self, wanted: &[u64]) -> Vec<(u64, f64)> {
        match &mut self {
            Kept::F32(floats) => select_f32(floats, wanted),
            Kept::F64(v) => {
                // Each rank by selection in what lies above the previous one:
                // linear time instead of a sort.
                let mut from = 0;
                wanted
                    .iter()
                    .map(|&k| {
                        let k = k as usize;
                        let x = *v[from..].select_nth_unstable_by(k - from, f64::total_cmp).1;
                        from = k + 1;
                        (k as u64, x)
                    })
                    .collect()
            }
        }
    }
}

/// A float's bits, flipped so that they order as the floats do (the sign
/// bit of positives, every bit of negatives; finite values only).
#[inline(always)]
fn key(x: f32) -> u32 {
    let bits = x.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 1 << 31
    }
}

/// The bucket of a float's key: its top 16 bits.
#[inline(always)]
fn bucket(x: f32) -> u16 {
    (key(x) >> 16) as u16
}

/// Appends `xs` as floats, block by block, and their buckets to `buckets`;
/// false (and no float appended) when one of them is not exactly a float.
/// The check rides along with the conversion, in one pass.
fn push_floats(blocks: &mut Vec<Vec<f32>>, xs: &[f64], buckets: &mut Vec<u16>) -> bool {
    let (before, last_len) = (blocks.len(), blocks.last().map(Vec::len));
    let mut rest = xs;
    let mut exact = true;
    while !rest.is_empty() {
        if blocks.last().is_none_or(|b| b.len() == b.capacity()) {
            blocks.push(take_block());
        }
        let block = blocks.last_mut().expect("a block");
        let (now, later) = rest.split_at(rest.len().min(block.capacity() - block.len()));
        exact &= append_floats(block, now, buckets);
        rest = later;
    }
    if !exact {
        // Back to what it held: the caller widens to doubles.
        give_blocks(blocks.split_off(before));
        if let (Some(block), Some(len)) = (blocks.last_mut(), last_len) {
            block.truncate(len);
        }
    }
    exact
}

/// Appends `xs` to `block` (which has room for them) as floats, and their
/// buckets to `buckets`; whether each was exactly a float.
fn append_floats(block: &mut Vec<f32>, xs: &[f64], buckets: &mut Vec<u16>) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX, checked just above.
        return unsafe { append_floats_streaming(block, xs, buckets) };
    }
    let mut exact = true;
    block.extend(xs.iter().map(|&x| {
        let f = x as f32;
        exact &= f64::from(f) == x;
        buckets.push(bucket(f));
        f
    }));
    exact
}

/// `append_floats` with non-temporal stores: the kept floats (40 MB for
/// the 10M benchmark) are read again only once the pass is over, so they go
/// to memory without first reading each line into the cache.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn append_floats_streaming(block: &mut Vec<f32>, xs: &[f64], buckets: &mut Vec<u16>) -> bool {
    use std::arch::x86_64::*;
    let start = block.len();
    assert!(block.capacity() - start >= xs.len(), "room reserved");
    let dst = block.spare_capacity_mut().as_mut_ptr().cast::<f32>();
    let buckets_start = buckets.len();
    buckets.reserve(xs.len());
    let bucket_dst = buckets.spare_capacity_mut().as_mut_ptr().cast::<u16>();
    let mut exact = true;
    let mut scalar = |i: usize| {
        let f = xs[i] as f32;
        exact &= f64::from(f) == xs[i];
        // SAFETY: i < xs.len(), within the room checked and reserved above.
        unsafe {
            dst.add(i).write(f);
            bucket_dst.add(i).write(bucket(f));
        }
    };
    // Up to a 16-byte boundary one by one (the streaming store needs it).
    let head = dst.align_offset(16).min(xs.len());
    (0..head).for_each(&mut scalar);
    let mut i = head;
    // SAFETY (the intrinsics): AVX is enabled for this function; every load
    // reads four values within `xs`, every store writes four floats within
    // the room checked above, at a 16-byte aligned address, and four
    // buckets within the room reserved.
    let all_alike = unsafe {
        let mut differs = _mm256_setzero_pd();
        while i + 4 <= xs.len() {
            let x = _mm256_loadu_pd(xs.as_ptr().add(i));
            let f = _mm256_cvtpd_ps(x);
            differs = _mm256_or_pd(differs, _mm256_cmp_pd::<_CMP_NEQ_UQ>(_mm256_cvtps_pd(f), x));
            _mm_stream_ps(dst.add(i), f);
            // `key`, four at a time: negatives flip every bit, positives
            // their sign bit.
            let bits = _mm_castps_si128(f);
            let flip = _mm_or_si128(_mm_srai_epi32::<31>(bits), _mm_set1_epi32(i32::MIN));
            let top = _mm_srli_epi32::<16>(_mm_xor_si128(bits, flip));
            _mm_storel_epi64(bucket_dst.add(i).cast(), _mm_packus_epi32(top, top));
            i += 4;
        }
        // The stores are weakly ordered: fenced before the values are read,
        // perhaps by another thread.
        _mm_sfence();
        _mm256_testz_pd(differs, differs) == 1
    };
    (i..xs.len()).for_each(&mut scalar);
    // SAFETY: every float up to start + xs.len(), and every bucket up to
    // buckets_start + xs.len(), was written above.
    unsafe {
        block.set_len(start + xs.len());
        buckets.set_len(buckets_start + xs.len());
    }
    exact && all_alike
}

/// The f32 at each wanted rank (ascending) by radix: the first pass counted
/// every value's key by its top 16 bits, the counts say which bucket holds
/// each rank, and only those buckets' values are gathered and searched: one
/// linear pass over the blocks (in parallel) instead of a selection per
/// rank.
fn select_f32(floats: &Floats, wanted: &[u64]) -> Vec<(u64, f64)> {
    let blocks = &floats.blocks;
    let counts: Vec<u64> = floats.counts.iter().map(|&n| u64::from(n)).collect();
    // For each wanted rank: its bucket and its rank among the bucket's values.
    let mut targets = Vec::with_capacity(wanted.len());
    let (mut bucket, mut below) = (0usize, 0u64);
    for &k in wanted {
        while below + counts[bucket] <= k {
            below += counts[bucket];
            bucket += 1;
        }
        targets.push((bucket as u16, k - below));
    }
    let mut chosen: Vec<u16> = targets.iter().map(|t| t.0).collect();
    chosen.dedup();
    let gather = Gather::new(&chosen);
    let mut held: Vec<Vec<f32>> = blocks
        .par_iter()
        .fold(
            || vec![Vec::new(); chosen.len()],
            |mut held: Vec<Vec<f32>>, block| {
                gather.block(block, &mut held);
                held
            },
        )
        .reduce(
            || vec![Vec::new(); chosen.len()],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| x.extend(y));
                a
            },
        );
    wanted
        .iter()
        .zip(targets)
        .map(|(&k, (b, r))| {
            let group = &mut held[chosen.binary_search(&b).expect("a chosen bucket")];
            let (_, x, _) = group.select_nth_unstable_by(r as usize, f32::total_cmp);
            (k, f64::from(*x))
        })
        .collect()
}

/// Picks out of blocks of floats those in the chosen buckets (ascending),
/// each into its bucket's vector.
struct Gather<'c> {
    chosen: &'c [u16],
    /// Each bucket's place among the chosen, plus one (0: not chosen). A
    /// lookup instead of a range test: values between the lowest and
    /// highest chosen bucket are most of them, and would mispredict a branch.
    place: Vec<u16>,
}

/// Chosen buckets up to which `Gather` compares eight values at a time with
/// each bucket instead of looking each value up (a few quantiles, the usual
/// request, choose a bucket or two apiece).
const COMPARED_BUCKETS: usize = 8;

impl<'c> Gather<'c> {
    fn new(chosen: &'c [u16]) -> Gather<'c> {
        let mut place = vec![0u16; 1 << 16];
        for (i, &b) in chosen.iter().enumerate() {
            place[usize::from(b)] = i as u16 + 1;
        }
        Gather { chosen, place }
    }

    fn block(&self, block: &[f32], held: &mut [Vec<f32>]) {
        #[cfg(target_arch = "x86_64")]
        if self.chosen.len() <= COMPARED_BUCKETS && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { self.block_compared(block, held) };
        }
        self.looked_up(block, held);
    }

    fn looked_up(&self, xs: &[f32], held: &mut [Vec<f32>]) {
        for &x in xs {
            let p = self.place[usize::from(bucket(x))];
            if p != 0 {
                held[usize::from(p) - 1].push(x);
            }
        }
    }

    /// `block`, eight values at a time: their buckets are compared with
    /// every chosen one in registers, and only a group holding a chosen
    /// value (about one in ten for three quantiles) is looked at one by one.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn block_compared(&self, block: &[f32], held: &mut [Vec<f32>]) {
        use std::arch::x86_64::*;
        let mut wanted = [_mm256_set1_epi32(-1); COMPARED_BUCKETS];
        for (w, &b) in wanted.iter_mut().zip(self.chosen) {
            *w = _mm256_set1_epi32(i32::from(b));
        }
        let wanted = &wanted[..self.chosen.len()];
        let mut groups = block.chunks_exact(8);
        for group in &mut groups {
            // SAFETY: the load reads the group's eight floats.
            let bits = unsafe { _mm256_loadu_si256(group.as_ptr().cast()) };
            let flip = _mm256_or_si256(_mm256_srai_epi32::<31>(bits), _mm256_set1_epi32(i32::MIN));
            let top = _mm256_srli_epi32::<16>(_mm256_xor_si256(bits, flip));
            let hit = wanted.iter().fold(_mm256_setzero_si256(), |hit, w| {
                _mm256_or_si256(hit, _mm256_cmpeq_epi32(top, *w))
            });
            if _mm256_testz_si256(hit, hit) == 0 {
                self.looked_up(group, held);
            }
        }
        self.looked_up(groups.remainder(), held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranks picked by selection agree with a full sort, floats stay floats
    /// until a value needs a double (the floats of the batch that brings it,
    /// over a block boundary, are taken back first), and the budget counts
    /// the widening.
    #[test]
    fn kept_values_widen_when_needed_and_select_like_a_sort() {
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            ((state >> 40) % 1000) as f64 / 8.0 // exact as f32, with repeats
        };
        let first: Vec<f64> = (0..BLOCK - 2).map(|_| next()).collect();
        let mut kept = Kept::default();
        assert_eq!(kept.extend(&first), BLOCK - 2);
        assert!(matches!(kept, Kept::F32(_)));
        let second = [next(), next(), next(), 0.1, -3.0];
        assert_eq!(kept.extend(&second), BLOCK - 2 + 2 * 5);
        assert!(matches!(kept, Kept::F64(_)));
        let mut other = Kept::default();
        other.extend(&[next(), next()]);
        kept.append(other);
        let Kept::F64(all) = &kept else { panic!() };
        assert_eq!(all.len(), BLOCK + 5);
        let mut sorted = all.clone();
        sorted.sort_by(f64::total_cmp);
        let wanted = [0, 1, 2500, 2501, BLOCK as u64 + 4];
        let expected: Vec<(u64, f64)> = wanted.iter().map(|&k| (k, sorted[k as usize])).collect();
        assert_eq!(kept.select(&wanted), expected);
    }

    /// The radix selection of floats agrees with a sort: negatives, zeros of
    /// both signs, subnormals, huge values and long runs of one value.
    #[test]
    fn float_ranks_by_radix_match_a_sort() {
        let mut state = 11u64;
        // More than one block, over which the passes run in parallel.
        let mut values: Vec<f64> = (0..1_100_000)
            .map(|i| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                let r = (state >> 33) as f32 / (1u64 << 31) as f32;
                f64::from(match i % 7 {
                    0 => -r * 1e30,
                    1 => r * 1e-40,
                    2 => 3.5,
                    3 => -0.0,
                    4 => 0.0,
                    _ => r - 0.5,
                })
            })
            .collect();
        // Two parts of a pass, merged as the pass merges them: 3 + 2 blocks,
        // the third only partly filled.
        let (mut kept, mut other) = (Kept::default(), Kept::default());
        for batch in values[..700_000].chunks(4096) {
            kept.extend(batch);
        }
        other.extend(&values[700_000..]);
        kept.append(other);
        assert!(matches!(&kept, Kept::F32(f) if f.blocks.len() == 5));
        assert_eq!(kept.values().count(), values.len());
        values.sort_by(f64::total_cmp);
        let wanted = [
            0, 1, 2856, 500_000, 549_999, 550_000, 1_000_000, 1_099_998, 1_099_999,
        ];
        let got = kept.select(&wanted);
        for (&k, (rank, x)) in wanted.iter().zip(got) {
            assert_eq!((rank, x.to_bits()), (k, values[k as usize].to_bits()));
        }
    }

    /// Picking out the chosen buckets' values by comparing eight at a time
    /// finds what looking each value up finds, for one to eight buckets,
    /// negative ones among them, in blocks whose length is not a multiple
    /// of eight.
    #[test]
    fn compared_buckets_gather_what_a_lookup_gathers() {
        let mut state = 5u64;
        let values: Vec<f32> = (0..10_003)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                ((state >> 40) as f32 / 65536.0 - 128.0) * 3.0
            })
            .collect();
        let mut seen: Vec<u16> = values.iter().map(|&x| bucket(x)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert!(seen.len() > 100);
        for n in 1..=COMPARED_BUCKETS {
            let chosen: Vec<u16> = seen
                .iter()
                .step_by(seen.len() / n)
                .take(n)
                .copied()
                .collect();
            assert!(
                chosen[0] < 1 << 15 && chosen.len() == n,
                "a negative bucket among them"
            );
            let gather = Gather::new(&chosen);
            let (mut compared, mut looked_up) = (vec![Vec::new(); n], vec![Vec::new(); n]);
            gather.block(&values, &mut compared);
            gather.looked_up(&values, &mut looked_up);
            assert!(looked_up.iter().all(|held| !held.is_empty()));
            assert_eq!(compared, looked_up, "{n} buckets");
        }
    }

    /// A value that is not exactly a float is noticed wherever it falls in
    /// a batch (one by one before an aligned address, four at a time, or in
    /// the tail), and every float kept is the value converted.
    #[test]
    fn every_place_in_a_batch_is_checked_for_exactness() {
        let batch: Vec<f64> = (0..103).map(|i| f64::from(i as f32 * 0.75)).collect();
        for skew in 0..4 {
            let mut kept = Kept::default();
            kept.extend(&batch[..skew]);
            kept.extend(&batch);
            let Kept::F32(floats) = &kept else { panic!() };
            let floats: Vec<f64> = floats
                .blocks
                .iter()
                .flatten()
                .map(|&x| f64::from(x))
                .collect();
            assert_eq!(floats[skew..], batch[..]);
            for at in 0..batch.len() {
                let mut kept = Kept::default();
                kept.extend(&batch[..skew]);
                let mut inexact = batch.clone();
                inexact[at] = 0.1;
                assert_eq!(
                    kept.extend(&inexact),
                    2 * batch.len() + skew,
                    "skew {skew}, at {at}"
                );
                assert!(matches!(kept, Kept::F64(_)));
            }
        }
    }
}
