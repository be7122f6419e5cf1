//! The Slurm runner: a job's tasks as one job array (`sbatch --array`), each
//! array task running `quarry worker --job FILE --task $SLURM_ARRAY_TASK_ID`.
//! The daemon follows the array by the result files the workers write and by
//! `squeue` (a task neither queued, running nor done has failed: it is
//! submitted again, a bounded number of times, under the same task number),
//! reports the bytes of the finished tasks as progress, and cancels every
//! job it submitted (`scancel`) when the call stops. The Slurm job ids are
//! written to the job's folder (`submitted`) as they come, so that a daemon
//! starting again cancels what an earlier one left running (`clean_up`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::partial::{TaskResult, result_path};
use super::{ExecError, Runner, Staged};
use crate::job::Job;

/// `[executor]` settings for Slurm; every one optional (the cluster's
/// default partition and limits).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmSettings {
    pub partition: Option<String>,
    /// Array tasks running at once (`--array=...%N`).
    pub max_jobs: Option<usize>,
    pub files_per_job: Option<usize>,
    /// `--time`, as Slurm spells it (`30:00`, `1-00:00:00`).
    pub time_limit: Option<String>,
    /// More `sbatch` arguments (`--account=...`, `--mem=4G`).
    #[serde(default)]
    pub extra_args: Vec<String>,
}

/// The `sbatch` options quarry sets itself: given again in `extra_args`
/// they would change what the daemon follows (the array, the job's name it
/// cleans up by, where the logs and results go).
const OWN_OPTIONS: &[&str] = &[
    "--array",
    "-a",
    "--job-name",
    "-J",
    "--output",
    "-o",
    "--error",
    "-e",
    "--chdir",
    "-D",
    "--parsable",
    "--wrap",
];

impl SlurmSettings {
    /// Checks the settings before any job is submitted, so a mistake in the
    /// config stops the daemon at start with the key to mend, not a
    /// dataset call later with sbatch's message.
    pub fn check(&self) -> Result<(), String> {
        if self.max_jobs == Some(0) {
            return Err("[executor] max_jobs must be at least 1 (array tasks at once)".into());
        }
        if self.files_per_job == Some(0) {
            return Err("[executor] files_per_job must be at least 1".into());
        }
        if let Some(p) = &self.partition
            && (p.trim().is_empty() || p.contains(char::is_whitespace))
        {
            return Err(format!(
                "[executor] partition must be a Slurm partition name (sinfo lists them), not '{p}'"
            ));
        }
        if let Some(t) = &self.time_limit
            && !is_time_limit(t)
        {
            return Err(format!(
                "[executor] time_limit '{t}' is not a Slurm time: minutes, 'MM:SS', 'HH:MM:SS', 'D-HH', 'D-HH:MM', 'D-HH:MM:SS' or 'UNLIMITED'"
            ));
        }
        for arg in &self.extra_args {
            let name = arg.split('=').next().unwrap_or_default();
            if !arg.starts_with('-') {
                return Err(format!(
                    "[executor] extra_args holds sbatch options, each starting with '-' (e.g. \"--mem=4G\"), not '{arg}'"
                ));
            }
            let short = name.len() > 2 && !name.starts_with("--");
            if OWN_OPTIONS.contains(&name) || (short && OWN_OPTIONS.contains(&&name[..2])) {
                return Err(format!(
                    "[executor] extra_args cannot set '{name}': quarry sets it for the job array it follows"
                ));
            }
        }
        Ok(())
    }
}

/// Whether `t` is a time as `sbatch --time` reads it: minutes, MM:SS,
/// HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or unlimited.
fn is_time_limit(t: &str) -> bool {
    if ["UNLIMITED", "INFINITE"].contains(&t.to_ascii_uppercase().as_str()) {
        return true;
    }
    let numbers = |s: &str, most: usize| {
        let parts: Vec<&str> = s.split(':').collect();
        parts.len() <= most
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit()))
    };
    match t.split_once('-') {
        Some((days, rest)) => numbers(days, 1) && numbers(rest, 3),
        None => numbers(t, 3),
    }
}

/// Submissions of one task past its first before it counts as failed.
pub const MAX_RESUBMITS: u32 = 2;
/// The folder file listing the Slurm job ids submitted, one a line.
const SUBMITTED: &str = "submitted";
/// Consecutive `squeue` failures tolerated (the controller restarting).
const SQUEUE_FAILURES: u32 = 30;

pub struct Slurm {
    pub settings: SlurmSettings,
    /// The quarry binary the nodes run (the daemon's own, on a shared
    /// filesystem).
    pub quarry: PathBuf,
    /// How often the result files are looked for: a stat each, cheap, so a
    /// finished job is merged within this of its last task's end.
    pub poll: Duration,
    /// How often `squeue` is asked which tasks still live: only a task gone
    /// without a result needs it (to be resubmitted), and every call costs
    /// the controller an RPC, so far less often than `poll`.
    pub queue_poll: Duration,
}

impl Slurm {
    pub fn new(settings: SlurmSettings, quarry: PathBuf) -> Slurm {
        Slurm {
            settings,
            quarry,
            poll: Duration::from_millis(50),
            queue_poll: Duration::from_secs(1),
        }
    }
}

/// Single-quoted for `sh`.
fn quoted(p: &Path) -> String {
    format!("'{}'", p.to_string_lossy().replace('\'', r"'\''"))
}

/// The array's batch script: no secrets, nothing but the worker's command.
fn write_script(staged: &Staged, quarry: &Path) -> std::io::Result<PathBuf> {
    let script = staged.dir.join("run.sh");
    let text = format!(
        "#!/bin/sh\n# A quarry dataset job: one task of {} per array task.\nexec {} worker --job {} --task \"$SLURM_ARRAY_TASK_ID\"\n",
        staged.spec.tasks.len(),
        quoted(quarry),
        quoted(&staged.job_file)
    );
    super::spec::write_atomically(&script, text.as_bytes())?;
    Ok(script)
}

/// `1,2,5-9` for tasks (sorted).
fn array_list(tasks: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < tasks.len() {
        let mut j = i;
        while j + 1 < tasks.len() && tasks[j + 1] == tasks[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            tasks[i].to_string()
        } else {
            format!("{}-{}", tasks[i], tasks[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The array tasks of `squeue -r -o "%i %t"` lines (`123_4 R`, or a
/// pending block `123_[4-6,9%2] PD`), as (job id, task), with whether each
/// runs.
fn parse_squeue(out: &str) -> BTreeMap<(String, usize), bool> {
    let mut live = BTreeMap::new();
    for line in out.lines() {
        let mut words = line.split_whitespace();
        let (Some(id), state) = (words.next(), words.next()) else {
            continue;
        };
        let running = state.is_some_and(|s| s != "PD");
        let Some((job, tasks)) = id.split_once('_') else {
            continue;
        };
        let tasks = tasks.trim_start_matches('[').trim_end_matches(']');
        let tasks = tasks.split('%').next().unwrap_or_default();
        for part in tasks.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                for t in a..=b {
                    live.insert((job.to_string(), t), running);
                }
            }
        }
    }
    live
}

fn run_command(cmd: &mut Command) -> Result<String, String> {
    let name = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {name}: {e} (is Slurm installed on this machine?)"))?;
    if !out.status.success() {
        return Err(format!(
            "{name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Cancels Slurm jobs (all their array tasks).
pub fn scancel(ids: &[String]) -> Result<(), String> {
    if ids.is_empty() {
        return Ok(());
    }
    run_command(Command::new("scancel").args(ids)).map(|_| ())
}

/// The live array tasks of the jobs `ids`, with whether each runs.
fn squeue(ids: &[String]) -> Result<BTreeMap<(String, usize), bool>, String> {
    let out = run_command(
        Command::new("squeue")
            .args(["-h", "-r", "-o", "%i %t", "-j"])
            .arg(ids.join(",")),
    );
    match out {
        Ok(out) => Ok(parse_squeue(&out)),
        // A job that finished long ago is unknown to the controller: so are
        // its tasks, which then are not live.
        Err(e) if e.contains("Invalid job id") => Ok(BTreeMap::new()),
        Err(e) => Err(e),
    }
}

impl Slurm {
    /// Submits `tasks` of the staged job as one array; gives its job id.
    fn submit(&self, staged: &Staged, script: &Path, tasks: &[usize]) -> Result<String, ExecError> {
        let s = &self.settings;
        let mut array = array_list(tasks);
        if let Some(n) = s.max_jobs {
            array = format!("{array}%{}", n.max(1));
        }
        let mut cmd = Command::new("sbatch");
        cmd.arg("--parsable")
            .arg("--job-name=quarry")
            .arg(format!("--array={array}"))
            .arg(format!(
                "--output={}",
                staged.dir.join("slurm-%A_%a.out").display()
            ))
            .arg(format!("--chdir={}", staged.dir.display()));
        if let Some(p) = &s.partition {
            cmd.arg(format!("--partition={p}"));
        }
        if let Some(t) = &s.time_limit {
            cmd.arg(format!("--time={t}"));
        }
        cmd.args(&s.extra_args).arg(script);
        let out = run_command(&mut cmd).map_err(ExecError::Cluster)?;
        let id = out.trim().split(';').next().unwrap_or_default().to_string();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
            return Err(ExecError::Cluster(format!(
                "sbatch gave no job id: '{}'",
                out.trim()
            )));
        }
        // Recorded before anything else can fail: a later daemon cancels it.
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(staged.dir.join(SUBMITTED))?;
        writeln!(f, "{id}")?;
        Ok(id)
    }
}

/// How far a job's tasks are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub pending_or_running: usize,
    pub running: usize,
    pub done: usize,
    pub failed: usize,
    pub resubmitted: usize,
}

impl Tally {
    /// The tasks by state, for the call's task status (progress counts bytes).
    fn describe(&self, tasks: usize, job: &str) -> String {
        format!(
            "Slurm job {job}: {tasks} array tasks, {} pending, {} running, {} done, {} failed, {} resubmitted",
            self.pending_or_running - self.running.min(self.pending_or_running),
            self.running,
            self.done,
            self.failed,
            self.resubmitted
        )
    }
}

/// The last line of a task's log, to say why it failed.
fn log_tail(dir: &Path, job: &str, task: usize) -> String {
    let text =
        std::fs::read_to_string(dir.join(format!("slurm-{job}_{task}.out"))).unwrap_or_default();
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output")
        .chars()
        .take(300)
        .collect()
}

impl Runner for Slurm {
    fn run(&self, staged: &Staged, job: &Job) -> Result<Vec<TaskResult>, ExecError> {
        let n = staged.spec.tasks.len();
        let bytes = staged.spec.task_bytes();
        let total: u64 = bytes.iter().sum();
        let script = write_script(staged, &self.quarry)?;
        let all: Vec<usize> = (0..n).collect();
        let first = self.submit(staged, &script, &all)?;
        let mut submitted = vec![first.clone()];
        // Each unfinished task's current job id and submissions so far.
        let mut running: BTreeMap<usize, (String, u32)> =
            all.iter().map(|&t| (t, (first.clone(), 1))).collect();
        let mut results: BTreeMap<usize, TaskResult> = BTreeMap::new();
        let mut squeue_failures = 0;
        let mut tally = Tally {
            pending_or_running: n,
            ..Tally::default()
        };
        let started = Instant::now();
        let mut queue_asked = Instant::now();
        loop {
            if let Some(stop) = job.stopped() {
                cancel_all(&submitted);
                return Err(ExecError::Stopped(stop));
            }
            collect(staged, &mut running, &mut results);
            let done: u64 = results.keys().map(|&t| bytes[t]).sum();
            tally.done = results.values().filter(|r| r.partial.is_some()).count();
            tally.failed = results.len() - tally.done;
            tally.pending_or_running = running.len();
            job.set_note(tally.describe(n, &first));
            job.progress(done, Some(total));
            if running.is_empty() {
                break;
            }
            std::thread::sleep(self.poll);
            if queue_asked.elapsed() < self.queue_poll {
                continue;
            }
            queue_asked = Instant::now();
            let live = match squeue(&submitted) {
                Ok(live) => {
                    squeue_failures = 0;
                    live
                }
                Err(e) => {
                    squeue_failures += 1;
                    if squeue_failures > SQUEUE_FAILURES {
                        cancel_all(&submitted);
                        return Err(ExecError::Cluster(e));
                    }
                    continue;
                }
            };
            // Results written while squeue ran count before the gone tasks.
            collect(staged, &mut running, &mut results);
            tally.running = running
                .iter()
                .filter(|(t, (id, _))| live.get(&(id.clone(), **t)) == Some(&true))
                .count();
            let gone: Vec<usize> = running
                .iter()
                .filter(|(t, (id, _))| !live.contains_key(&(id.clone(), **t)))
                .map(|(t, _)| *t)
                .collect();
            let mut again = Vec::new();
            for t in gone {
                let (id, tries) = running[&t].clone();
                if tries <= MAX_RESUBMITS {
                    again.push(t);
                    tally.resubmitted += 1;
                    continue;
                }
                running.remove(&t);
                let why = format!(
                    "its Slurm task failed {tries} times (job {id}_{t}: {})",
                    log_tail(&staged.dir, &id, t)
                );
                let failed = staged.spec.files[staged.spec.tasks[t].files.clone()]
                    .iter()
                    .map(|f| (f.shown.clone(), why.clone()))
                    .collect();
                results.insert(
                    t,
                    TaskResult {
                        task: t,
                        partial: None,
                        files_read: Vec::new(),
                        failed,
                        bytes_read: 0,
                        clusters_skipped: 0,
                    },
                );
            }
            if !again.is_empty() {
                tracing::info!(tasks = ?again, "resubmitting failed Slurm array tasks");
                let id = self.submit(staged, &script, &again)?;
                submitted.push(id.clone());
                for t in again {
                    if let Some(entry) = running.get_mut(&t) {
                        *entry = (id.clone(), entry.1 + 1);
                    }
                }
            }
        }
        tracing::debug!(?tally, elapsed = ?started.elapsed(), "Slurm job finished");
        Ok(results.into_values().collect())
    }
}

/// Moves the tasks whose result file is written from `running` to `results`.
fn collect(
    staged: &Staged,
    running: &mut BTreeMap<usize, (String, u32)>,
    results: &mut BTreeMap<usize, TaskResult>,
) {
    let finished: Vec<usize> = running
        .keys()
        .copied()
        .filter(|&t| result_path(&staged.dir, t).exists())
        .collect();
    for t in finished {
        // Written atomically: a result file that exists is whole. One that
        // does not decode is from another quarry: the task failed.
        match TaskResult::read(&staged.dir, t) {
            Ok(r) => {
                running.remove(&t);
                results.insert(t, r);
            }
            Err(e) => tracing::warn!(task = t, "unreadable task result: {e}"),
        }
    }
}

/// Cancels every job submitted and waits (briefly) until none is queued.
fn cancel_all(ids: &[String]) {
    if let Err(e) = scancel(ids) {
        tracing::warn!("scancel: {e}");
    }
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        match squeue(ids) {
            Ok(live) if live.is_empty() => return,
            Err(_) => return,
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Cancels the Slurm jobs an earlier daemon left running and removes their
/// folders: a restarted daemon does not pick old jobs up (the calls that
/// asked for them are gone with the old process), it cleans them up.
pub fn clean_up(jobs: &Path) {
    let Ok(entries) = std::fs::read_dir(jobs) else {
        return;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        if let Ok(text) = std::fs::read_to_string(dir.join(SUBMITTED)) {
            let ids: Vec<String> = text.lines().map(str::to_string).collect();
            if let Err(e) = scancel(&ids) {
                tracing::warn!("cancelling an earlier daemon's Slurm jobs: {e}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_limits_are_slurms() {
        for good in [
            "30",
            "30:00",
            "1:00:00",
            "2-0",
            "2-12:00",
            "1-00:00:00",
            "unlimited",
        ] {
            assert!(is_time_limit(good), "{good}");
        }
        for bad in ["", "1h", "1:2:3:4", "-5", "1-", "1-2-3", "one", "1:00 "] {
            assert!(!is_time_limit(bad), "{bad:?}");
        }
    }

    #[test]
    fn array_lists_and_squeue_lines_read_back() {
        assert_eq!(array_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(array_list(&[3]), "3");
        let live = parse_squeue("12_3 R\n12_[5-7,9%2] PD\n13_0 CG\n");
        let want: BTreeMap<(String, usize), bool> = [
            ("12", 3, true),
            ("12", 5, false),
            ("12", 6, false),
            ("12", 7, false),
            ("12", 9, false),
            ("13", 0, true),
        ]
        .into_iter()
        .map(|(j, t, r)| ((j.to_string(), t), r))
        .collect();
        assert_eq!(live, want);
    }
}
