//! Buffers of reads done, kept for the next reads: a read that starts with
//! fresh memory pays a fault and a zeroed page every 4 kB, a quarter to a
//! third of the time of reading baskets or pages. Readers hand their buffers
//! to a process-wide pool when they are dropped (one pool for baskets, one
//! for RNTuple pages) and the next readers draw from it.

use std::sync::Mutex;

/// A pool keeps at most this many bytes, none in a buffer larger than
/// `LARGEST` (an odd file's huge basket or page is given back to the system).
const KEPT_BYTES: usize = 64 << 20;
const LARGEST: usize = 16 << 20;

pub(super) struct SparePool(Mutex<Vec<Vec<u8>>>);

impl SparePool {
    pub(super) const fn new() -> SparePool {
        SparePool(Mutex::new(Vec::new()))
    }

    /// The shortest buffer at least `want` bytes long, else the longest.
    pub(super) fn take_fitting(&self, want: usize) -> Option<Vec<u8>> {
        self.0.lock().ok().and_then(|mut v| fitting(&mut v, want))
    }

    /// Up to `n` buffers, the last given first.
    pub(super) fn take_last(&self, n: usize) -> Vec<Vec<u8>> {
        self.0
            .lock()
            .map(|mut pool| {
                let len = pool.len();
                pool.split_off(len.saturating_sub(n))
            })
            .unwrap_or_default()
    }

    /// Keeps what fits within the pool's limits; the rest is freed.
    pub(super) fn keep(&self, buffers: impl IntoIterator<Item = Vec<u8>>) {
        let Ok(mut pool) = self.0.lock() else {
            return;
        };
        let mut kept: usize = pool.iter().map(Vec::capacity).sum();
        for buf in buffers {
            let size = buf.capacity();
            if size > 0 && size <= LARGEST && kept + size <= KEPT_BYTES {
                kept += size;
                pool.push(buf);
            }
        }
    }
}

/// Takes from `pool` the shortest buffer of at least `want` bytes, else the
/// longest. Growing a buffer zeroes its new bytes, so a buffer that held a
/// small compressed basket and is handed out for a large decoded one costs
/// a pass over memory.
pub(super) fn fitting(pool: &mut Vec<Vec<u8>>, want: usize) -> Option<Vec<u8>> {
    let long_enough = pool
        .iter()
        .enumerate()
        .filter(|(_, b)| b.len() >= want)
        .min_by_key(|(_, b)| b.len());
    let longest = || pool.iter().enumerate().max_by_key(|(_, b)| b.len());
    let (at, _) = long_enough.or_else(longest)?;
    Some(pool.swap_remove(at))
}
