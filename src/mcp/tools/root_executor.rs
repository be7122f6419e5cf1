//! Running a ROOT dataset call on a cluster: the `executor` and
//! `files_per_job` arguments (or `[executor]` in the config, or the size of
//! the read), the job description made from the opened files and the call's
//! plans, and the merged answer handed back to the tool in the shape the
//! one-process engine gives. The work itself is `crate::executor`'s.

use std::path::PathBuf;

use serde_json::json;

use super::Context;
use super::root_dataset::OpenTree;
use crate::analysis::cutflow::Flow;
use crate::analysis::ops::{Axis, Counted, Hist1, Hist2};
use crate::analysis::quantiles::Moments;
use crate::analysis::{Defines, Plan, TreeColumns};
use crate::catalog::root::TREE_KIND_RNTUPLE;
use crate::executor::partial::{Merged, Partial, TaskResult};
use crate::executor::slurm::Slurm;
use crate::executor::spec::{self, Fill, JOB_FORMAT, JobSpec, Op};
use crate::executor::{ExecError, ExecutorKind, execute_then};
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};

/// A call bound for the cluster: the runner, where its job goes, and files
/// per task.
pub(super) struct Cluster {
    runner: Slurm,
    jobs: PathBuf,
    files_per_job: Option<usize>,
    /// A file reading more bytes than this is cut into shares of clusters.
    split_above: u64,
}

/// The executor the call runs on: the `executor` argument, else the
/// configured one; a local dataset call reading more than the configured
/// threshold goes to Slurm. None: this process.
pub(super) fn cluster_for(
    ctx: &Context,
    tool: &str,
    (executor, files_per_job): (Option<&str>, Option<i64>),
    t: &OpenTree,
    (columns, read): (&[TreeColumns<'_>], &[usize]),
) -> Result<Option<Cluster>, ToolError> {
    let settings = &ctx.settings.executor;
    let kind = match executor {
        None => settings.kind,
        Some("local") => ExecutorKind::Local,
        Some("slurm") => ExecutorKind::Slurm,
        Some(other) => {
            return Err(ToolError::invalid_arguments(
                tool,
                format!("executor must be 'local' or 'slurm', not '{other}'"),
            ));
        }
    };
    let files_per_job = match files_per_job {
        Some(n) if n < 1 => {
            return Err(ToolError::invalid_arguments(
                tool,
                format!("files_per_job must be at least 1, not {n}"),
            ));
        }
        n => n.map(|n| n as usize).or(settings.slurm.files_per_job),
    };
    let automatic = executor.is_none()
        && kind == ExecutorKind::Local
        && t.is_dataset()
        && settings
            .auto_above_bytes
            .is_some_and(|limit| bytes_to_read(t, columns, read) > limit);
    if kind == ExecutorKind::Local && !automatic {
        return Ok(None);
    }
    let Some(jobs) = settings.jobs_dir.clone() else {
        return Err(ToolError::new(
            "internal_error",
            "this quarry has no catalog folder to write cluster jobs in",
            "Call again with executor='local'",
        ));
    };
    let quarry = match &settings.quarry {
        Some(q) => q.clone(),
        None => std::env::current_exe().map_err(ToolError::internal)?,
    };
    Ok(Some(Cluster {
        runner: Slurm::new(settings.slurm.clone(), quarry),
        jobs,
        files_per_job,
        split_above: settings.split_above_bytes.unwrap_or(spec::TASK_BYTES),
    }))
}

/// The stored bytes the call's columns take in every file (before skipping).
fn bytes_to_read(t: &OpenTree, columns: &[TreeColumns<'_>], read: &[usize]) -> u64 {
    t.parts
        .iter()
        .zip(columns)
        .map(|(_, tree)| {
            let clusters = crate::analysis::dataset::clusters_of(tree, read, 0..tree.entries)
                .unwrap_or_default();
            crate::analysis::dataset::cluster_bytes(tree, read, &clusters)
                .iter()
                .sum::<u64>()
        })
        .sum()
}

/// What the cluster gave: the merged partial (each file's share in file
/// order, a default share for a file that failed) and the files it could
/// not read.
pub(super) struct ClusterAnswer {
    pub(super) partial: Option<Partial>,
    pub(super) failed: Vec<(String, String)>,
    pub(super) bytes_read: u64,
    pub(super) tasks: usize,
    pub(super) clusters_skipped: u64,
}

/// Runs `op` over the call's files on the cluster.
pub(super) fn run_on_cluster(
    cluster: &Cluster,
    job: &Job,
    on: (&OpenTree, &[TreeColumns<'_>], &Defines),
    op: Op,
    read: (&[usize], Option<&Plan>),
) -> Result<ClusterAnswer, ToolError> {
    run_on_cluster_then(cluster, job, on, op, read, |_, _| ()).map(|(answer, ())| answer)
}

/// `run_on_cluster`, with `finish` given the job's folder and the task
/// results (in task order) before they are merged: what the workers wrote
/// beside them (export parts) is read there.
pub(super) fn run_on_cluster_then<R>(
    cluster: &Cluster,
    job: &Job,
    (t, columns, defines): (&OpenTree, &[TreeColumns<'_>], &Defines),
    op: Op,
    (read, cut): (&[usize], Option<&Plan>),
    finish: impl FnOnce(&std::path::Path, &mut Vec<TaskResult>) -> R,
) -> Result<(ClusterAnswer, R), ToolError> {
    let cut_columns: &[usize] = cut.map_or(&[], |c| &c.columns);
    let members = t.members(columns);
    let files: Vec<spec::FileSpec> = t
        .parts
        .iter()
        .zip(&members)
        .map(|(p, m)| {
            let mut f = spec::file_spec(
                m,
                (&p.known.root_dir, &p.known.rel, &p.shown),
                (read, cut_columns),
            );
            f.ntuple = p.row.kind == TREE_KIND_RNTUPLE;
            f
        })
        .collect();
    let bytes: Vec<u64> = files.iter().map(|f| f.bytes).collect();
    let per = spec::files_per_task(cluster.files_per_job, &bytes);
    let clusters: Vec<_> = members
        .iter()
        .map(|m| spec::clusters_with_bytes(m, read))
        .collect();
    let job_spec = JobSpec {
        format: JOB_FORMAT,
        tree: t.first().row.path.clone(),
        columns: columns[0].columns.iter().map(|c| c.path.clone()).collect(),
        defines: defines
            .iter()
            .map(|(n, e)| (n.to_string(), e.to_string()))
            .collect(),
        op,
        tasks: spec::plan_tasks(&clusters, per, cluster.split_above),
        files,
    };
    let tasks = job_spec.tasks.len();
    let executed = execute_then(&cluster.runner, &cluster.jobs, job_spec, job, finish);
    let (merged, finished) = executed.map_err(|e| match e {
        ExecError::Stopped(_) => ToolError::stopped(job),
        ExecError::Cluster(why) => ToolError::new(
            "internal_error",
            format!("the Slurm cluster did not run the job: {why}"),
            "Check that sbatch and squeue work on this machine, or call again with executor='local'",
        )
        .details(json!({ "reason": "cluster" })),
        ExecError::Io(e) => ToolError::internal(e),
    })?;
    Ok((answer(merged, t.parts.len(), tasks), finished))
}

/// The merged partial with a share for every file (an empty one for those
/// not read), in file order.
fn answer(merged: Merged, files: usize, tasks: usize) -> ClusterAnswer {
    let Merged {
        partial,
        files_read,
        failed,
        bytes_read,
        clusters_skipped,
    } = merged;
    let partial = partial.map(|mut p| {
        match &mut p {
            Partial::Count { by_file, .. } => spread_all(by_file, &files_read, files),
            Partial::Histogram(h) => spread_all(&mut h.by_member, &files_read, files),
            Partial::Histogram2d(h) => spread_all(&mut h.by_member, &files_read, files),
            Partial::Cutflow { by_file, .. } => spread_all(by_file, &files_read, files),
            Partial::Export { by_file, .. } => spread_all(by_file, &files_read, files),
            Partial::Moments(shares) => {
                for share in shares {
                    spread_all(&mut share.by_member, &files_read, files);
                }
            }
            Partial::Range(_) => {}
        }
        p
    });
    ClusterAnswer {
        partial,
        failed,
        bytes_read,
        tasks,
        clusters_skipped,
    }
}

/// `shares` (one per file read, in `files_read` order) placed at their files'
/// indices among `files`, a default share for the others. A big file read
/// in shares by several tasks appears once per task: its shares add up, in
/// task order.
fn spread_all<T: Share>(shares: &mut Vec<T>, files_read: &[usize], files: usize) {
    let mut all: Vec<Option<T>> = vec![None; files];
    for (share, &k) in std::mem::take(shares).into_iter().zip(files_read) {
        match &mut all[k] {
            Some(earlier) => earlier.add(share),
            slot => *slot = Some(share),
        }
    }
    *shares = all.into_iter().map(Option::unwrap_or_default).collect();
}

/// One file's share of an answer, added to another share of the same file.
trait Share: Default + Clone {
    fn add(&mut self, next: Self);
}

impl Share for Counted {
    fn add(&mut self, next: Counted) {
        self.scanned += next.scanned;
        self.selected += next.selected;
    }
}

impl Share for Hist1 {
    fn add(&mut self, next: Hist1) {
        self.merge(next);
    }
}

impl Share for Hist2 {
    fn add(&mut self, next: Hist2) {
        self.merge(next);
    }
}

impl Share for Flow {
    fn add(&mut self, next: Flow) {
        self.merge(&next);
    }
}

impl Share for (Moments, Counted) {
    fn add(&mut self, next: (Moments, Counted)) {
        self.0.merge(next.0);
        self.1.add(next.1);
    }
}

/// Says in the answer's metadata that the cluster computed it, and which
/// files it could not read (their entries are left out of the answer).
pub(super) fn cluster_metadata(out: ToolOutput, a: &ClusterAnswer) -> ToolOutput {
    let mut out = out
        .meta("executor", "slurm")
        .meta("jobs", a.tasks)
        .meta("bytes_read", a.bytes_read)
        .meta("clusters_skipped", a.clusters_skipped);
    if !a.failed.is_empty() {
        let listed: Vec<serde_json::Value> = a
            .failed
            .iter()
            .take(20)
            .map(|(file, why)| json!({ "file": file, "reason": why }))
            .collect();
        out = out
            .meta("files_failed", listed)
            .meta("files_failed_count", a.failed.len())
            .suggest(format!(
                "{} file(s) could not be read on the cluster and are left out of the answer: see metadata.files_failed",
                a.failed.len()
            ));
    }
    out
}

/// apply_selection's count on the cluster: the total and each file's.
pub(super) fn cluster_count(
    cluster: &Cluster,
    job: &Job,
    on: (&OpenTree, &[TreeColumns<'_>], &Defines),
    plan: &Plan,
) -> Result<(Counted, Vec<Counted>, ClusterAnswer), ToolError> {
    let op = Op::Count {
        cut: plan.text.clone(),
    };
    let mut answer = run_on_cluster(cluster, job, on, op, (&plan.columns, Some(plan)))?;
    let (total, by_file) = match answer.partial.take() {
        Some(Partial::Count { total, by_file }) => (total, by_file),
        _ => (
            Counted::default(),
            vec![Counted::default(); on.0.parts.len()],
        ),
    };
    Ok((total, by_file, answer))
}

/// compute_histogram_2d's histogram of x against y on the cluster.
pub(super) fn cluster_histogram_2d(
    cluster: &Cluster,
    job: &Job,
    on: (&OpenTree, &[TreeColumns<'_>], &Defines),
    (x, y, cut): (&Plan, &Plan, Option<&Plan>),
    axes: (Axis, Axis),
    read: &[usize],
) -> Result<(Hist2, ClusterAnswer), ToolError> {
    let op = Op::Histogram2d {
        fill: Fill {
            value: x.text.clone(),
            cut: cut.map(|c| c.text.clone()),
            weight: None,
            flatten: true,
        },
        y: y.text.clone(),
        axes: (axes.0.into(), axes.1.into()),
    };
    let mut answer = run_on_cluster(cluster, job, on, op, (read, cut))?;
    let h = match answer.partial.take() {
        Some(Partial::Histogram2d(h)) => h,
        _ => {
            let mut h = Hist2::empty(&axes);
            h.by_member = vec![Hist2::default(); on.0.parts.len()];
            h
        }
    };
    Ok((h, answer))
}
