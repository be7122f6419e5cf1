//! Executors: where a dataset call's work runs. `Local` is the one-process
//! scan the tools always did (they call `analysis` directly). The others run
//! the work as tasks of a job: the daemon describes the job (`spec`), each
//! task's worker (`worker`, `quarry worker`) reads its run of files and
//! writes a partial result (`partial`), and the daemon merges the results in
//! task order, so the answer is the one-process scan's. A `Runner` gets the
//! tasks run: `InProcess` here (the tests' reference, and a fallback), and
//! `slurm::Slurm`, a job array on a Slurm cluster. An HTCondor runner would be
//! one more `Runner` (see docs/guide/cluster.md).
//!
//! Engine layer: uses `analysis` and `formats`, knows nothing of MCP or the
//! catalog (the tools hand it the files, their bounds and the expressions).

pub mod partial;
pub mod slurm;
pub mod spec;
pub mod worker;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use partial::{Merged, TaskResult, merge};
use spec::JobSpec;

use crate::job::{Job, Stop};

/// Which executor a call runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    #[default]
    Local,
    Slurm,
}

/// How dataset calls choose their executor (`[executor]` in the config).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecutorSettings {
    /// The executor of a call that names none.
    pub kind: ExecutorKind,
    pub slurm: slurm::SlurmSettings,
    /// A dataset call whose `dry_run` estimate reads more bytes than this
    /// runs on Slurm without being asked (none: never).
    pub auto_above_bytes: Option<u64>,
    /// A file whose columns read take more than this is cut into shares of
    /// clusters, a task each (none: `spec::TASK_BYTES`).
    pub split_above_bytes: Option<u64>,
    /// Where job folders are made (`jobs/` in the catalog folder); none
    /// keeps cluster calls from running (a context without a catalog folder).
    pub jobs_dir: Option<PathBuf>,
    /// The quarry binary the nodes run (default: this process's own).
    pub quarry: Option<PathBuf>,
}

/// Why a job's tasks could not be run.
#[derive(Debug)]
pub enum ExecError {
    /// The call was cancelled or ran out of time (its jobs were cancelled).
    Stopped(Stop),
    /// The cluster refused or is unreachable (`sbatch` missing, failing).
    Cluster(String),
    Io(std::io::Error),
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecError::Stopped(s) => write!(f, "stopped: {s:?}"),
            ExecError::Cluster(why) => f.write_str(why),
            ExecError::Io(e) => write!(f, "job folder: {e}"),
        }
    }
}

impl From<std::io::Error> for ExecError {
    fn from(e: std::io::Error) -> ExecError {
        ExecError::Io(e)
    }
}

/// A job written to its folder, ready to run.
pub struct Staged {
    pub dir: PathBuf,
    pub job_file: PathBuf,
    pub spec: JobSpec,
}

/// Runs every task of a staged job; gives each task's result, in task order.
pub trait Runner: Sync {
    fn run(&self, staged: &Staged, job: &Job) -> Result<Vec<TaskResult>, ExecError>;
}

/// Where jobs live: `jobs/` in the catalog folder.
pub fn jobs_dir(catalog_dir: &Path) -> PathBuf {
    catalog_dir.join("jobs")
}

/// Writes `spec` into a fresh folder under `jobs`.
pub fn stage(jobs: &Path, spec: JobSpec) -> std::io::Result<Staged> {
    std::fs::create_dir_all(jobs)?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = jobs.join(format!("job-{}-{stamp:x}", std::process::id()));
    std::fs::create_dir(&dir)?;
    let job_file = spec.write(&dir)?;
    Ok(Staged {
        dir,
        job_file,
        spec,
    })
}

/// Stages `spec`, runs its tasks on `runner`, merges their results in task
/// order and removes the job's folder (kept when `keep` is set, for a look
/// at the workers' logs).
pub fn execute(
    runner: &dyn Runner,
    jobs: &Path,
    spec: JobSpec,
    job: &Job,
) -> Result<Merged, ExecError> {
    execute_then(runner, jobs, spec, job, |_, _| ()).map(|(merged, ())| merged)
}

/// `execute`, with `finish` called on the job's folder and the task results
/// (sorted by task) before they are merged and the folder removed: what the
/// workers wrote beside their results (export parts) is read there.
pub fn execute_then<R>(
    runner: &dyn Runner,
    jobs: &Path,
    spec: JobSpec,
    job: &Job,
    finish: impl FnOnce(&Path, &mut Vec<TaskResult>) -> R,
) -> Result<(Merged, R), ExecError> {
    let staged = stage(jobs, spec)?;
    let outcome = runner.run(&staged, job).map(|mut results| {
        results.sort_by_key(|r| r.task);
        let finished = finish(&staged.dir, &mut results);
        (results, finished)
    });
    let keep = std::env::var_os("QUARRY_KEEP_JOBS").is_some();
    if !keep {
        let _ = std::fs::remove_dir_all(&staged.dir);
    }
    let (results, finished) = outcome?;
    Ok((merge(results), finished))
}

/// Runs the tasks one after another in this process (each scan parallel
/// within), through the same result files a cluster's workers write.
pub struct InProcess;

impl Runner for InProcess {
    fn run(&self, staged: &Staged, job: &Job) -> Result<Vec<TaskResult>, ExecError> {
        let bytes = staged.spec.task_bytes();
        let total: u64 = bytes.iter().sum();
        let mut done = 0;
        let mut results = Vec::with_capacity(staged.spec.tasks.len());
        for (task, task_bytes) in bytes.iter().enumerate() {
            if let Some(stop) = job.stopped() {
                return Err(ExecError::Stopped(stop));
            }
            worker::run_task(&staged.spec, task, &staged.dir).write(&staged.dir)?;
            let read = TaskResult::read(&staged.dir, task)
                .map_err(|e| ExecError::Io(std::io::Error::other(e.to_string())))?;
            results.push(read);
            done += task_bytes;
            job.progress(done, Some(total));
        }
        Ok(results)
    }
}
