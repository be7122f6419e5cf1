//! Reading a remote file's clusters ahead of a parallel scan's decoding, so
//! that round trips and transfer overlap the decoding instead of alternating
//! with it (issue #32's latency target: a scan over `root://` with 20 ms a
//! round trip).
//!
//! Three things keep the decoders from waiting on the network:
//! - the clusters are fetched in the order the workers will begin them (the
//!   first cluster of each worker's run first), not in file order, so that
//!   no worker starts on a cluster the read-ahead reaches only later;
//! - several fetches are in flight at once (`FETCHERS`, each on its own
//!   connection), so one round trip's wait overlaps another's transfer;
//! - past the clusters the workers begin with, a fetch may ask for the
//!   baskets of `BATCH` clusters in one vectored read (one round trip for
//!   several). It is 1: through the benchmark's 20 ms proxy, batches of three
//!   halved the round trips (36 to 18) but made the call slower (median
//!   3.5 s against 2.3 s), as a worker waits for the whole batch to arrive
//!   before any of its blocks is settled; parallel fetches hide the latency
//!   instead (docs/benchmarks.md, "Remote roots");
//! - the distance ahead is set by bytes (a share of the block cache), not
//!   by a count of clusters: small clusters are fetched many ahead, where
//!   each round trip costs most, large ones fewer.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::{Item, Stream, open_streams, remote_ranges};
use crate::analysis::dataset::Member;
use crate::job::Job;

/// Fetches in flight at once.
const FETCHERS: usize = 3;
/// Clusters asked for in one vectored read, past the first of each worker.
const BATCH: usize = 1;
/// Clusters fetched ahead at least, and at most, whatever their size.
const MIN_AHEAD: usize = 4;
const MAX_AHEAD: usize = 32;

/// The clusters of `runs` in the order `workers` workers, taking runs in
/// order one at a time, begin them when every cluster takes as long: the
/// runs in groups of `workers`, a cluster of each run of the group in turn.
pub(super) fn need_order(runs: &[Vec<Item>], workers: usize) -> Vec<&Item> {
    let mut order = Vec::with_capacity(runs.iter().map(Vec::len).sum());
    for group in runs.chunks(workers.max(1)) {
        let longest = group.iter().map(Vec::len).max().unwrap_or(0);
        for k in 0..longest {
            order.extend(group.iter().filter_map(|run| run.get(k)));
        }
    }
    order
}

/// How many clusters to keep fetched beyond those begun: what fits in a
/// quarter of the block cache (the rest holds what is being decoded and
/// what other calls read), within `MIN_AHEAD..=MAX_AHEAD`.
pub(super) fn clusters_ahead(order: &[&Item], cache_bytes: usize) -> usize {
    let remote: Vec<u64> = order.iter().map(|item| item.weight).collect();
    let mean = remote.iter().sum::<u64>() / (remote.len() as u64).max(1);
    let budget = cache_bytes as u64 / 4;
    ((budget / mean.max(1)) as usize).clamp(MIN_AHEAD, MAX_AHEAD)
}

/// Fetches the remote members' clusters of `runs` in the background, in
/// need order, while fewer than `clusters_ahead` beyond the `begun` ones;
/// local members are passed over. Ends when the scan is `over` or the job
/// stops. A failed fetch is left to the scan's own read to meet and report.
pub(super) fn read_ahead(
    members: &[Member<'_>],
    columns: &[usize],
    (runs, workers): (&[Vec<Item>], usize),
    (begun, over): (&AtomicUsize, &AtomicBool),
    job: &Job,
) {
    let order = need_order(runs, workers);
    let ahead = clusters_ahead(&order, crate::remote::cache::shared_limit());
    let batches = batches(&order, workers, ahead.min(BATCH));
    let next = AtomicUsize::new(0);
    let stopped = || over.load(Ordering::Relaxed) || job.is_stopped();
    std::thread::scope(|fetchers| {
        for _ in 0..FETCHERS.min(batches.len()) {
            fetchers.spawn(|| {
                let mut streams: Option<(usize, Vec<Stream<'_>>)> = None;
                loop {
                    let b = next.fetch_add(1, Ordering::Relaxed);
                    let Some(batch) = batches.get(b) else { return };
                    let member = &members[order[batch.start].member];
                    if member.file.fetched().is_none() {
                        continue;
                    }
                    while batch.end > begun.load(Ordering::Relaxed) + ahead {
                        if stopped() {
                            return;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    if stopped() {
                        return;
                    }
                    let m = order[batch.start].member;
                    if streams.as_ref().is_none_or(|(owner, _)| *owner != m) {
                        let Ok(opened) = open_streams(member.file, member.tree, columns, true)
                        else {
                            return;
                        };
                        streams = Some((m, opened));
                    }
                    let (_, opened) = streams.as_ref().expect("streams of the member");
                    let mut all = Vec::new();
                    let mut file = None;
                    for item in &order[batch.clone()] {
                        if let Some((f, ranges)) = remote_ranges(opened, &item.entries) {
                            file = Some(f);
                            all.extend(ranges);
                        }
                    }
                    if let Some(file) = file {
                        let _ = file.prefetch(&all, &stopped);
                    }
                }
            });
        }
    });
}

/// The need order cut into the fetches that read it: the first cluster of
/// each worker alone (so that every worker can start at once), then up to
/// `most` clusters of one member at a time (the caller keeps `most` within
/// the distance ahead, which a batch could otherwise never be allowed to
/// fetch).
pub(super) fn batches(order: &[&Item], workers: usize, most: usize) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let most = most.max(1);
    for (i, item) in order.iter().enumerate() {
        match out.last_mut() {
            Some(last)
                if i >= workers
                    && last.start >= workers
                    && last.len() < most
                    && order[last.start].member == item.member =>
            {
                last.end = i + 1;
            }
            _ => out.push(i..i + 1),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(cluster: u64, weight: u64) -> Item {
        Item {
            member: 0,
            entries: cluster * 10..cluster * 10 + 10,
            weight,
        }
    }

    #[test]
    fn clusters_come_in_the_order_the_workers_begin_them() {
        // Two workers, runs of two clusters (0-1, 2-3, 4-5) and a last of one:
        // worker A begins 0 while B begins 2; then 1 and 3; then 4 and 6, 5.
        let runs: Vec<Vec<Item>> = vec![
            vec![item(0, 1), item(1, 1)],
            vec![item(2, 1), item(3, 1)],
            vec![item(4, 1), item(5, 1)],
            vec![item(6, 1)],
        ];
        let order: Vec<u64> = need_order(&runs, 2)
            .iter()
            .map(|i| i.entries.start / 10)
            .collect();
        assert_eq!(order, vec![0, 2, 1, 3, 4, 6, 5]);
        // One worker reads in file order.
        let order: Vec<u64> = need_order(&runs, 1)
            .iter()
            .map(|i| i.entries.start / 10)
            .collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn past_each_workers_first_cluster_a_fetch_reads_several_of_one_member() {
        let mut items: Vec<Item> = (0..9).map(|c| item(c, 1)).collect();
        items[7].member = 1;
        items[8].member = 1;
        let order: Vec<&Item> = items.iter().collect();
        // Two workers: clusters 0 and 1 alone; then three at a time, a new
        // fetch where the member changes.
        assert_eq!(batches(&order, 2, 3), vec![0..1, 1..2, 2..5, 5..7, 7..9]);
        assert_eq!(
            batches(&order, 2, 2),
            vec![0..1, 1..2, 2..4, 4..6, 6..7, 7..9]
        );
        // One at a time (what the scan uses now).
        assert_eq!(batches(&order, 2, 1).len(), 9);
    }

    #[test]
    fn the_distance_ahead_is_a_quarter_of_the_cache_in_bytes() {
        let six_mb: Vec<Item> = (0..29).map(|c| item(c, 6 << 20)).collect();
        let order: Vec<&Item> = six_mb.iter().collect();
        // 1 GiB: 256 MiB ahead, 42 clusters of 6 MiB, capped at 32.
        assert_eq!(clusters_ahead(&order, 1 << 30), 32);
        // 256 MiB: 64 MiB ahead, 10 clusters.
        assert_eq!(clusters_ahead(&order, 256 << 20), 10);
        // 32 MiB: 8 MiB ahead is one cluster, raised to four.
        assert_eq!(clusters_ahead(&order, 32 << 20), 4);
    }
}
