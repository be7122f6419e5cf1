//! `quarry worker --job FILE --task N`: one task of a job, run wherever the
//! cluster put it. It reads the job description (never the catalog), opens
//! its files by path, lines their columns up with the job's, re-parses the
//! expressions, computes its share with the same engine calls as the daemon
//! and writes the result atomically beside the job. A file it cannot read is
//! reported by name and left out; the task's other files still count.

use std::path::Path;

use super::partial::{Partial, TaskResult, export_part_path};
use super::spec::{JobSpec, Op, add_bounds};
use crate::analysis::cutflow::{FlowRequest, cutflow};
use crate::analysis::dataset::Member;
use crate::analysis::export::{ExportError, ExportFormat, export};
use crate::analysis::ops::{HistRequest, count_selected, histogram, histogram_2d, value_range};
use crate::analysis::quantiles::branch_moments;
use crate::analysis::quantities::Named;
use crate::analysis::{AnalysisError, Plan, TreeColumns, TreeObject, quantities};
use crate::formats::root::rntuple::ANCHOR_CLASS;
use crate::formats::root::{RootFile, latest};
use crate::job::Job;

/// Runs task `task` of the job at `job_file` and writes its result in the
/// job's folder.
pub fn run(job_file: &Path, task: usize) -> anyhow::Result<()> {
    let spec = JobSpec::read(job_file)?;
    if task >= spec.tasks.len() {
        anyhow::bail!("the job has {} tasks, not task {task}", spec.tasks.len());
    }
    let dir = job_file
        .parent()
        .ok_or_else(|| anyhow::anyhow!("a job file in a folder"))?;
    let result = run_task(&spec, task, dir);
    result.write(dir)?;
    Ok(())
}

/// One opened file of a task: its index in the job, the file and its tree.
struct Opened {
    index: usize,
    file: RootFile,
    tree: TreeObject,
}

/// Computes task `task` of `spec` in this process; an export's part is
/// written into `dir` (the job's folder).
pub fn run_task(spec: &JobSpec, task: usize, dir: &Path) -> TaskResult {
    let mut failed = Vec::new();
    let mut opened = Vec::new();
    for index in spec.tasks[task].files.clone() {
        let file = &spec.files[index];
        match crate::panics::catch_quietly(|| {
            open((&file.root, &file.rel), &spec.tree, file.ntuple)
        }) {
            Ok(Ok((f, tree))) => opened.push(Opened {
                index,
                file: f,
                tree,
            }),
            Ok(Err(why)) => failed.push((file.shown.clone(), why)),
            Err(panic) => failed.push((file.shown.clone(), format!("reader panicked: {panic}"))),
        }
    }
    // A file failing mid-scan is left out and the others scanned again:
    // each retry drops one file, so this ends.
    loop {
        let outcome = crate::panics::catch_quietly(|| compute(spec, (task, dir), &opened));
        let error = match outcome {
            Ok(Ok((partial, clusters_skipped))) => {
                return TaskResult {
                    task,
                    partial: Some(partial),
                    files_read: opened.iter().map(|o| o.index).collect(),
                    failed,
                    bytes_read: opened.iter().map(|o| o.file.bytes_read()).sum(),
                    clusters_skipped,
                };
            }
            Ok(Err(e)) => e.to_string(),
            Err(panic) => format!("reader panicked: {panic}"),
        };
        let culprit = opened
            .iter()
            .position(|o| error.contains(&format!("'{}': ", spec.files[o.index].shown)));
        match culprit {
            Some(k) => {
                let o = opened.remove(k);
                failed.push((spec.files[o.index].shown.clone(), error));
            }
            // Not one file's fault (the expression, say): every file fails.
            None => {
                failed.extend(
                    opened
                        .drain(..)
                        .map(|o| (spec.files[o.index].shown.clone(), error.clone())),
                );
            }
        }
        if opened.is_empty() {
            return TaskResult {
                task,
                partial: None,
                files_read: Vec::new(),
                failed,
                bytes_read: 0,
                clusters_skipped: 0,
            };
        }
    }
}

/// Opens a file beneath its root and reads its tree (or RNTuple) at `tree`.
fn open(
    (root, rel): (&Path, &str),
    tree: &str,
    ntuple: bool,
) -> Result<(RootFile, TreeObject), String> {
    let file = crate::roots::open_beneath(root, rel).map_err(|e| format!("cannot open: {e}"))?;
    let file = RootFile::open(file).map_err(|e| e.to_string())?;
    let keys = file.walk().map_err(|e| e.to_string())?;
    let class = if ntuple { ANCHOR_CLASS } else { "TTree" };
    let key = latest(&keys, tree, Some(class)).ok_or_else(|| format!("no '{tree}' in the file"))?;
    let object = if ntuple {
        TreeObject::RNTuple(Box::new(file.rntuple(&key.key).map_err(|e| e.to_string())?))
    } else {
        TreeObject::TTree(file.tree(&key.key).map_err(|e| e.to_string())?)
    };
    Ok((file, object))
}

/// A tree's columns in the job's order (`columns`), with its recorded bounds.
fn lined_up<'t>(
    spec: &JobSpec,
    index: usize,
    object: &'t TreeObject,
) -> Result<TreeColumns<'t>, AnalysisError> {
    let mut tree = TreeColumns::of(object);
    let differ = || {
        AnalysisError::Format(crate::formats::FormatError::Corrupt(format!(
            "'{}': its columns differ from the first file's",
            spec.files[index].shown
        )))
    };
    let order: Vec<usize> = spec
        .columns
        .iter()
        .map(|p| tree.find(p))
        .collect::<Option<_>>()
        .ok_or_else(differ)?;
    if order.len() != tree.columns.len() {
        return Err(differ());
    }
    if order.iter().enumerate().any(|(i, &o)| i != o) {
        crate::analysis::dataset::align(&mut tree, &order);
    }
    add_bounds(&mut tree, &spec.files[index].bounds);
    Ok(tree)
}

/// The operation over the opened files, as one chain numbered as the whole
/// dataset numbers it (so `Entry$` is the daemon's), with the clusters its
/// cut ruled out unread.
fn compute(
    spec: &JobSpec,
    (task, dir): (usize, &Path),
    opened: &[Opened],
) -> Result<(Partial, u64), AnalysisError> {
    let trees: Vec<TreeColumns<'_>> = opened
        .iter()
        .map(|o| lined_up(spec, o.index, &o.tree))
        .collect::<Result<_, _>>()?;
    let firsts = crate::analysis::dataset::first_entries(spec.files.iter().map(|f| f.entries));
    let members: Vec<Member<'_>> = opened
        .iter()
        .zip(&trees)
        .map(|(o, tree)| Member {
            file: &o.file,
            tree,
            first_entry: firsts[o.index],
            label: &spec.files[o.index].shown,
        })
        .collect();
    let columns = &trees[0];
    let defines = spec.defines()?;
    // A share of one big file: the same scans, over its clusters alone.
    let job = match (&spec.tasks[task].entries, opened.first()) {
        (Some(r), Some(o)) => {
            let first = firsts[o.index];
            Job::new(None).limited_to(first + r.start..first + r.end)
        }
        _ => Job::new(None),
    };
    let quantity = |text: &str| quantities::plan(text, columns, &defines);
    let expression = |text: &Option<String>| -> Result<Option<Plan>, AnalysisError> {
        text.as_deref()
            .map(|t| Plan::with_defines(t, columns, &defines))
            .transpose()
    };
    let fill_plans = |fill: &super::spec::Fill| -> Result<_, AnalysisError> {
        let value = quantity(&fill.value)?;
        let cut = expression(&fill.cut)?;
        let weight = fill.weight.as_deref().map(quantity).transpose()?;
        Ok((value, cut, weight))
    };
    let partial = match &spec.op {
        Op::Count { cut } => {
            let plan = Plan::with_defines(cut, columns, &defines)?;
            let (total, by_file) = count_selected(&members, &plan, &job)?;
            Partial::Count { total, by_file }
        }
        Op::Range { fill } => {
            let (value, cut, weight) = fill_plans(fill)?;
            let req = request(&value, &cut, &weight, fill.flatten);
            Partial::Range(value_range(&members, &req, &job)?)
        }
        Op::Histogram { fill, axis } => {
            let (value, cut, weight) = fill_plans(fill)?;
            let req = request(&value, &cut, &weight, fill.flatten);
            Partial::Histogram(histogram(&members, &req, (*axis).into(), &job)?)
        }
        Op::Histogram2d { fill, y, axes } => {
            let (value, cut, weight) = fill_plans(fill)?;
            let y = quantity(y)?;
            let req = request(&value, &cut, &weight, fill.flatten);
            let axes = (axes.0.into(), axes.1.into());
            Partial::Histogram2d(histogram_2d(&members, &req, &y, axes, &job)?)
        }
        Op::Moments { values, cut } => {
            let cut = expression(cut)?;
            let shares = values
                .iter()
                .map(|text| {
                    let value = quantity(text)?;
                    let req = request(&value, &cut, &None, true);
                    branch_moments(&members, &req, &job)
                })
                .collect::<Result<Vec<_>, AnalysisError>>()?;
            Partial::Moments(shares)
        }
        Op::Cutflow {
            cuts,
            weight,
            n_minus_one,
        } => {
            let plans = cuts
                .iter()
                .map(|c| Plan::with_defines(c, columns, &defines))
                .collect::<Result<Vec<Plan>, _>>()?;
            let weight = weight.as_deref().map(quantity).transpose()?;
            let req = FlowRequest {
                cuts: plans.iter().collect(),
                weight: weight.as_ref(),
                n_minus_one: *n_minus_one,
            };
            let (total, by_file) = cutflow(&members, &req, &job)?;
            Partial::Cutflow { total, by_file }
        }
        Op::Export {
            columns: named,
            cut,
            limit,
            format,
            provenance,
        } => {
            let named = named
                .iter()
                .map(|(name, text)| quantities::named(name.as_deref(), text, columns, &defines))
                .collect::<Result<Vec<_>, _>>()?;
            let cut = expression(cut)?;
            let shown: Vec<String> = opened
                .iter()
                .map(|o| spec.files[o.index].shown.clone())
                .collect();
            let provenance = provenance.then_some(shown.as_slice());
            let export = (named.as_slice(), provenance, cut.as_ref(), *limit, *format);
            export_part(&members, export, export_part_path(dir, task), &job)?
        }
    };
    let skipped = trees.iter().map(|t| t.bounds.clusters().1).sum();
    Ok((partial, skipped))
}

/// Exports the members' rows into the part file `path` (through a
/// temporary name: a part that exists is whole).
fn export_part(
    members: &[Member<'_>],
    (named, provenance, cut, limit, format): ExportCall<'_>,
    path: std::path::PathBuf,
    job: &Job,
) -> Result<Partial, AnalysisError> {
    let failed = |e: std::io::Error| {
        AnalysisError::Format(crate::formats::FormatError::Io(format!(
            "writing the export part: {e}"
        )))
    };
    let tmp = path.with_extension("export.tmp");
    let file = std::fs::File::create(&tmp).map_err(failed)?;
    let (done, file) =
        export(members, named, provenance, cut, limit, format, file, job).map_err(|e| match e {
            ExportError::Analysis(a) => a,
            ExportError::Write(w) => failed(std::io::Error::other(w)),
        })?;
    file.sync_all().map_err(failed)?;
    drop(file);
    std::fs::rename(&tmp, &path).map_err(failed)?;
    Ok(Partial::Export {
        entries_scanned: done.entries_scanned,
        entries_written: done.entries_written,
        by_file: done.by_member,
    })
}

/// What an export task writes: the columns, the rows' provenance (each
/// member's file), the cut, the limit and the format.
type ExportCall<'a> = (
    &'a [Named],
    Option<&'a [String]>,
    Option<&'a Plan>,
    u64,
    ExportFormat,
);

fn request<'p>(
    value: &'p Plan,
    cut: &'p Option<Plan>,
    weight: &'p Option<Plan>,
    flatten: bool,
) -> HistRequest<'p> {
    HistRequest {
        value,
        cut: cut.as_ref(),
        weight: weight.as_ref(),
        flatten,
    }
}
