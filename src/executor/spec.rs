//! The job description: everything a worker needs to compute its share of a
//! dataset call without the catalog (which redb locks for one process) and
//! without the daemon. Written as JSON (no secrets: file paths, tree and
//! column names, expressions as text, binning), atomically, in the job's
//! folder under the catalog folder.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::analysis::dataset::Member;
use crate::analysis::prune::BasketSpan;
use crate::analysis::{Defines, TreeColumns};

/// Bumped when a field's meaning changes: a worker of another version refuses
/// the job instead of computing something else.
pub const JOB_FORMAT: u32 = 4;

/// What a whole dataset call asks of its workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    pub format: u32,
    /// The tree's (or RNTuple's) path within each file.
    pub tree: String,
    /// The first file's column paths, in its order: each worker lines its
    /// files' columns up with these, so that plans parsed by the worker use
    /// the column numbers the daemon's did.
    pub columns: Vec<String>,
    /// Named expressions (`define`), in the call's order.
    pub defines: Vec<(String, String)>,
    pub op: Op,
    pub files: Vec<FileSpec>,
    /// Each task's share, in chain order.
    pub tasks: Vec<TaskSpec>,
}

/// One task's share of the dataset: a run of whole files, or a run of the
/// clusters of one big file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// Indices into the job's files.
    pub files: Range<usize>,
    /// For a share of one file: its entries to read (cluster edges of the
    /// columns read, in the file's own numbering); none: the whole files.
    pub entries: Option<Range<u64>>,
    /// Stored bytes of the columns read: the progress measure.
    pub bytes: u64,
}

/// One file of the dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileSpec {
    /// Where workers open it: `rel` beneath the root's folder `root` (a
    /// shared filesystem's path), through the same beneath-the-root opener
    /// as the daemon, so a link swapped in since indexing cannot lead out.
    pub root: PathBuf,
    pub rel: String,
    /// The file as the tools name it (messages, `by_file`).
    pub shown: String,
    pub ntuple: bool,
    pub entries: u64,
    /// Stored bytes of the columns read: the progress measure.
    pub bytes: u64,
    /// Value ranges of the cut's columns' baskets, as the statistics pass
    /// recorded them: the worker skips the same clusters the daemon would.
    pub bounds: Vec<ColumnBounds>,
}

/// A column's recorded baskets: (entries, values, finite, min, max) each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnBounds {
    pub column: String,
    pub baskets: Vec<(Range<u64>, u64, u64, f64, f64)>,
}

/// The operation, its expressions as the call gave them (re-parsed by each
/// worker against the same columns, so the plans are the daemon's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// Entries passing `cut` (apply_selection).
    Count { cut: String },
    /// The smallest and largest finite value filled (a histogram's range
    /// when none was given: a pass of its own).
    Range { fill: Fill },
    /// A 1-D histogram (compute_histogram, fit_histogram).
    Histogram { fill: Fill, axis: AxisSpec },
    /// A 2-D histogram of `fill.value` (x) against `y`.
    Histogram2d {
        fill: Fill,
        y: String,
        axes: (AxisSpec, AxisSpec),
    },
    /// The moments of each of `values` (get_branch_stats without quantiles:
    /// count, mean, std, min, max), each a scan of its own as locally.
    Moments {
        values: Vec<String>,
        cut: Option<String>,
    },
    /// Cuts applied in order (cutflow), with n-1 counts when asked.
    Cutflow {
        cuts: Vec<String>,
        weight: Option<String>,
        n_minus_one: bool,
    },
    /// The entries passing `cut` written to a part file in the call's format
    /// (export_branches), at most `limit` a task: the daemon joins the parts
    /// in task order and stops at the call's `limit`.
    Export {
        /// (name given, branch or expression) of each column, in order.
        columns: Vec<(Option<String>, String)>,
        cut: Option<String>,
        limit: u64,
        format: crate::analysis::export::ExportFormat,
        /// Rows carry their file and entries (a dataset's export).
        provenance: bool,
    },
}

/// What a histogram fills: `HistRequest` as text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fill {
    pub value: String,
    pub cut: Option<String>,
    pub weight: Option<String>,
    pub flatten: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AxisSpec {
    pub bins: usize,
    pub lo: f64,
    pub hi: f64,
}

impl From<crate::analysis::ops::Axis> for AxisSpec {
    fn from(a: crate::analysis::ops::Axis) -> AxisSpec {
        AxisSpec {
            bins: a.bins,
            lo: a.lo,
            hi: a.hi,
        }
    }
}

impl From<AxisSpec> for crate::analysis::ops::Axis {
    fn from(a: AxisSpec) -> crate::analysis::ops::Axis {
        crate::analysis::ops::Axis {
            bins: a.bins,
            lo: a.lo,
            hi: a.hi,
        }
    }
}

impl Op {
    /// The cut whose columns' bounds the files carry.
    pub fn cut(&self) -> Option<&str> {
        match self {
            Op::Count { cut } => Some(cut),
            Op::Range { fill } | Op::Histogram { fill, .. } | Op::Histogram2d { fill, .. } => {
                fill.cut.as_deref()
            }
            Op::Moments { cut, .. } => cut.as_deref(),
            Op::Cutflow { cuts, .. } => cuts.first().map(String::as_str),
            Op::Export { cut, .. } => cut.as_deref(),
        }
    }
}

/// Most files one task takes when the call names no `files_per_job` and the
/// configuration none: a task then reads about `TASK_BYTES`.
pub const TASK_BYTES: u64 = 2 << 30;
/// Fewest tasks worth an array (a dataset of a few files is one or two).
const MAX_DEFAULT_FILES: usize = 50;

/// Files per task for a dataset of these files' bytes: `given` when set, else
/// enough files for about `TASK_BYTES` each (at least one, at most
/// `MAX_DEFAULT_FILES`).
pub fn files_per_task(given: Option<usize>, bytes: &[u64]) -> usize {
    if let Some(n) = given {
        return n.max(1);
    }
    let total: u64 = bytes.iter().sum();
    let mean = total / bytes.len().max(1) as u64;
    ((TASK_BYTES / mean.max(1)) as usize).clamp(1, MAX_DEFAULT_FILES)
}

/// `n` files cut into runs of `per` (the last shorter).
pub fn chunks(n: usize, per: usize) -> Vec<Range<usize>> {
    let per = per.max(1);
    (0..n).step_by(per).map(|s| s..(s + per).min(n)).collect()
}

/// The tasks for files whose columns read take `clusters` (each file's
/// clusters with their stored bytes): runs of `per` whole files, except that
/// a file of more than `split_above` bytes is cut at cluster edges into
/// shares of at most `split_above` bytes each (one cluster at least), a task
/// each, so one big file spreads over several nodes. Runs of whole files
/// start again after a big file: the tasks stay in chain order.
pub fn plan_tasks(
    clusters: &[Vec<(Range<u64>, u64)>],
    per: usize,
    split_above: u64,
) -> Vec<TaskSpec> {
    let bytes_of = |f: usize| clusters[f].iter().map(|(_, b)| b).sum::<u64>();
    let mut tasks = Vec::new();
    let mut run = 0..0;
    let flush = |run: &mut Range<usize>, tasks: &mut Vec<TaskSpec>| {
        for files in chunks(run.len(), per) {
            let files = files.start + run.start..files.end + run.start;
            let bytes = files.clone().map(bytes_of).sum();
            tasks.push(TaskSpec {
                files,
                entries: None,
                bytes,
            });
        }
        *run = run.end..run.end;
    };
    for (f, cs) in clusters.iter().enumerate() {
        if bytes_of(f) <= split_above || cs.len() < 2 {
            run.end = f + 1;
            continue;
        }
        flush(&mut run, &mut tasks);
        let mut share: Option<(Range<u64>, u64)> = None;
        for (entries, bytes) in cs {
            share = match share {
                Some((r, b)) if b + bytes <= split_above => Some((r.start..entries.end, b + bytes)),
                Some((r, b)) => {
                    tasks.push(TaskSpec {
                        files: f..f + 1,
                        entries: Some(r),
                        bytes: b,
                    });
                    Some((entries.clone(), *bytes))
                }
                None => Some((entries.clone(), *bytes)),
            };
        }
        if let Some((r, b)) = share {
            tasks.push(TaskSpec {
                files: f..f + 1,
                entries: Some(r),
                bytes: b,
            });
        }
        run = f + 1..f + 1;
    }
    flush(&mut run, &mut tasks);
    tasks
}

/// A member's clusters over the columns `read`, with their stored bytes.
pub fn clusters_with_bytes(member: &Member<'_>, read: &[usize]) -> Vec<(Range<u64>, u64)> {
    let tree = member.tree;
    let clusters =
        crate::analysis::dataset::clusters_of(tree, read, 0..tree.entries).unwrap_or_default();
    let bytes = crate::analysis::dataset::cluster_bytes(tree, read, &clusters);
    clusters.into_iter().zip(bytes).collect()
}

/// A member's recorded bounds for the `cut_columns` (indices into its
/// columns), by column path, as `ColumnBounds`.
pub fn bounds_of(tree: &TreeColumns<'_>, cut_columns: &[usize]) -> Vec<ColumnBounds> {
    cut_columns
        .iter()
        .filter_map(|&c| {
            let spans = tree.bounds.spans(c)?;
            Some(ColumnBounds {
                column: tree.columns[c].path.clone(),
                baskets: spans
                    .iter()
                    .map(|b| (b.entries.clone(), b.values, b.finite, b.min, b.max))
                    .collect(),
            })
        })
        .collect()
}

/// Gives `tree` the recorded bounds of `bounds` (by column path).
pub fn add_bounds(tree: &mut TreeColumns<'_>, bounds: &[ColumnBounds]) {
    for b in bounds {
        let Some(c) = tree.find(&b.column) else {
            continue;
        };
        let spans = b
            .baskets
            .iter()
            .map(|(entries, values, finite, min, max)| BasketSpan {
                entries: entries.clone(),
                values: *values,
                finite: *finite,
                min: *min,
                max: *max,
            })
            .collect();
        let entries = tree.entries;
        tree.bounds.add_column(c, spans, entries);
    }
}

/// A file's entry for the job: where it is and what it holds, from the member
/// the daemon opened.
pub fn file_spec(
    member: &Member<'_>,
    (root, rel, shown): (&Path, &str, &str),
    (read, cut_columns): (&[usize], &[usize]),
) -> FileSpec {
    let bytes = clusters_with_bytes(member, read)
        .iter()
        .map(|(_, b)| b)
        .sum();
    FileSpec {
        root: root.to_path_buf(),
        rel: rel.to_string(),
        shown: shown.to_string(),
        ntuple: member
            .tree
            .columns
            .first()
            .is_some_and(|c| c.origin.is_ntuple()),
        entries: member.tree.entries,
        bytes,
        bounds: bounds_of(member.tree, cut_columns),
    }
}

impl JobSpec {
    /// The defines as the engine takes them.
    pub fn defines(&self) -> Result<Defines, crate::analysis::AnalysisError> {
        Defines::new(self.defines.clone())
    }

    /// Bytes the tasks read, each.
    pub fn task_bytes(&self) -> Vec<u64> {
        self.tasks.iter().map(|t| t.bytes).collect()
    }

    /// Writes the description into `dir` as `job.json`, atomically (a worker
    /// starting early never reads half of it).
    pub fn write(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join(JOB_FILE);
        let text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        write_atomically(&path, &text)?;
        Ok(path)
    }

    pub fn read(path: &Path) -> anyhow::Result<JobSpec> {
        let text = std::fs::read(path)?;
        let spec: JobSpec = serde_json::from_slice(&text)?;
        if spec.format != JOB_FORMAT {
            anyhow::bail!(
                "job format {} is not this quarry's ({JOB_FORMAT}): run the same quarry on the nodes",
                spec.format
            );
        }
        Ok(spec)
    }
}

pub const JOB_FILE: &str = "job.json";

/// Writes `bytes` to `path` through a temporary file beside it and a rename:
/// readers see the old file or the whole new one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_files_are_cut_at_cluster_edges() {
        let c = |r: Range<u64>, b: u64| (r, b);
        let clusters = vec![
            vec![c(0..10, 5)],
            vec![c(0..10, 5)],
            // 30 bytes in four clusters: shares of at most 12.
            vec![c(0..4, 6), c(4..8, 6), c(8..9, 10), c(9..20, 8)],
            vec![c(0..10, 5)],
            // One cluster bigger than the threshold: not cut.
            vec![c(0..10, 50)],
        ];
        let t = |files: Range<usize>, entries: Option<Range<u64>>, bytes: u64| TaskSpec {
            files,
            entries,
            bytes,
        };
        assert_eq!(
            plan_tasks(&clusters, 5, 12),
            vec![
                t(0..2, None, 10),
                t(2..3, Some(0..8), 12),
                t(2..3, Some(8..9), 10),
                t(2..3, Some(9..20), 8),
                t(3..5, None, 55),
            ]
        );
        // Nothing above the threshold: runs of whole files.
        let runs: Vec<_> = plan_tasks(&clusters, 2, 100)
            .into_iter()
            .map(|t| (t.files, t.entries))
            .collect();
        assert_eq!(runs, vec![(0..2, None), (2..4, None), (4..5, None)]);
    }

    #[test]
    fn files_are_cut_into_runs_in_order() {
        assert_eq!(chunks(7, 3), vec![0..3, 3..6, 6..7]);
        assert_eq!(chunks(40, 3).len(), 14);
        assert!(chunks(0, 3).is_empty());
        // 200 files of 100 MB: 20 a task reads 2 GiB (2147 MB / 100 MB).
        assert_eq!(files_per_task(None, &[100_000_000; 200]), 21);
        assert_eq!(files_per_task(None, &[10 << 30; 3]), 1);
        assert_eq!(files_per_task(Some(3), &[1; 40]), 3);
    }
}
