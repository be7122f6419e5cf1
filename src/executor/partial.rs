//! What one task computes, written by its worker and merged by the daemon:
//! partial results that add exactly (counts are integers; sums of floats are
//! added task after task in task order, so the answer does not depend on
//! which task finished first, and equals the one-machine answer to the
//! rounding of a few additions, well within 1e-12 relative).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::analysis::cutflow::Flow;
use crate::analysis::ops::{Counted, Hist1, Hist2};
use crate::analysis::quantiles::MomentsShare;

/// Bumped with any change to `TaskResult`'s encoding.
const PARTIAL_MAGIC: &[u8; 8] = b"QPART03\n";

/// A task's share of the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Partial {
    Count {
        total: Counted,
        by_file: Vec<Counted>,
    },
    Range(Option<(f64, f64)>),
    Histogram(Hist1),
    Histogram2d(Hist2),
    /// One share per value asked, in order.
    Moments(Vec<MomentsShare>),
    Cutflow {
        total: Flow,
        by_file: Vec<Flow>,
    },
    /// An export's rows are in the task's part file (`export_part_path`);
    /// this says how many, and each file's entries read and written.
    Export {
        entries_scanned: u64,
        entries_written: u64,
        by_file: Vec<Counted>,
    },
}

/// What a worker wrote for its task: its share of the files it could read
/// (none when it read none), the files it could not (shown name, why), and
/// the bytes it read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub task: usize,
    pub partial: Option<Partial>,
    /// Index into the job's files of each file whose result is in
    /// `partial` (its `by_file` entries are in this order).
    pub files_read: Vec<usize>,
    pub failed: Vec<(String, String)>,
    pub bytes_read: u64,
    /// Clusters the cut ruled out unread (by the recorded bounds).
    pub clusters_skipped: u64,
}

/// Where task `task`'s export part is written in the job folder.
pub fn export_part_path(dir: &Path, task: usize) -> PathBuf {
    dir.join(format!("task-{task}.export"))
}

/// Where task `task`'s result is written in the job folder.
pub fn result_path(dir: &Path, task: usize) -> PathBuf {
    dir.join(format!("task-{task}.part"))
}

impl TaskResult {
    /// The result as bytes: a magic line, then bincode (f64s as their bits:
    /// read back exactly).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = PARTIAL_MAGIC.to_vec();
        let body = bincode::serde::encode_to_vec(self, bincode::config::standard())
            .expect("a task result encodes");
        out.extend(body);
        out
    }

    pub fn decode(bytes: &[u8]) -> anyhow::Result<TaskResult> {
        let body = bytes
            .strip_prefix(PARTIAL_MAGIC.as_slice())
            .ok_or_else(|| anyhow::anyhow!("not a partial result of this quarry"))?;
        let (r, _) = bincode::serde::decode_from_slice(body, bincode::config::standard())?;
        Ok(r)
    }

    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        super::spec::write_atomically(&result_path(dir, self.task), &self.encode())
    }

    pub fn read(dir: &Path, task: usize) -> anyhow::Result<TaskResult> {
        TaskResult::decode(&std::fs::read(result_path(dir, task))?)
    }
}

/// The tasks' partials merged in task order (`results` sorted by task): one
/// partial as the one-machine scan of the files read would give, with each
/// file's share in file order, and the files that could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    pub partial: Option<Partial>,
    pub files_read: Vec<usize>,
    pub failed: Vec<(String, String)>,
    pub bytes_read: u64,
    pub clusters_skipped: u64,
}

/// An export's rows cut to the call's `limit`: each task wrote at most
/// `limit` rows of its own, and the rows count in task order, so the tasks
/// after the limit is reached give none and the one reaching it gives only
/// what is left (its files' counts of rows written cut alike, file by file).
/// Gives the rows to take from each task's part, in the order of `results`
/// (sorted by task), and whether the limit cut rows off.
pub fn cut_exports_to(results: &mut [TaskResult], limit: u64) -> (Vec<u64>, bool) {
    let mut left = limit;
    let mut cut = false;
    let mut rows = Vec::with_capacity(results.len());
    for r in results.iter_mut() {
        let Some(Partial::Export {
            entries_written,
            by_file,
            ..
        }) = &mut r.partial
        else {
            rows.push(0);
            continue;
        };
        // A task that stopped at the limit may have had more rows to give.
        cut |= *entries_written >= limit || *entries_written > left;
        *entries_written = (*entries_written).min(left);
        rows.push(*entries_written);
        let mut file_left = left;
        for f in by_file.iter_mut() {
            f.selected = f.selected.min(file_left);
            file_left -= f.selected;
        }
        left -= *entries_written;
    }
    (rows, cut && left == 0)
}

/// Merges task results in the order given (the caller sorts them by task).
pub fn merge(results: Vec<TaskResult>) -> Merged {
    let mut merged = Merged {
        partial: None,
        files_read: Vec::new(),
        failed: Vec::new(),
        bytes_read: 0,
        clusters_skipped: 0,
    };
    for r in results {
        merged.clusters_skipped += r.clusters_skipped;
        merged.files_read.extend(&r.files_read);
        merged.failed.extend(r.failed);
        merged.bytes_read += r.bytes_read;
        let Some(p) = r.partial else {
            continue;
        };
        merged.partial = Some(match merged.partial.take() {
            None => p,
            Some(acc) => add(acc, p),
        });
    }
    merged
}

/// `acc` with `next` added after it.
fn add(acc: Partial, next: Partial) -> Partial {
    match (acc, next) {
        (
            Partial::Count {
                total: mut t,
                by_file: mut b,
            },
            Partial::Count { total, by_file },
        ) => {
            t.scanned += total.scanned;
            t.selected += total.selected;
            b.extend(by_file);
            Partial::Count {
                total: t,
                by_file: b,
            }
        }
        (Partial::Range(a), Partial::Range(b)) => Partial::Range(match (a, b) {
            (Some((lo, hi)), Some((l, h))) => Some((lo.min(l), hi.max(h))),
            (a, b) => a.or(b),
        }),
        (Partial::Histogram(mut a), Partial::Histogram(mut b)) => {
            let files = std::mem::take(&mut b.by_member);
            a.merge(b);
            a.by_member.extend(files);
            Partial::Histogram(a)
        }
        (Partial::Histogram2d(mut a), Partial::Histogram2d(mut b)) => {
            let files = std::mem::take(&mut b.by_member);
            a.merge(b);
            a.by_member.extend(files);
            Partial::Histogram2d(a)
        }
        (Partial::Moments(mut a), Partial::Moments(b)) => {
            for (share, next) in a.iter_mut().zip(b) {
                share.add(next);
            }
            Partial::Moments(a)
        }
        (
            Partial::Cutflow {
                total: mut t,
                by_file: mut b,
            },
            Partial::Cutflow { total, by_file },
        ) => {
            t.merge(&total);
            b.extend(by_file);
            Partial::Cutflow {
                total: t,
                by_file: b,
            }
        }
        (
            Partial::Export {
                entries_scanned: s,
                entries_written: w,
                by_file: mut b,
            },
            Partial::Export {
                entries_scanned,
                entries_written,
                by_file,
            },
        ) => {
            b.extend(by_file);
            Partial::Export {
                entries_scanned: s + entries_scanned,
                entries_written: w + entries_written,
                by_file: b,
            }
        }
        (acc, _) => acc,
    }
}
