//! `get_branch_stats`: count, mean, std, min, max and exact quantiles of
//! branches or expressions, on the analysis engine (`analysis::quantiles`),
//! or, for count to max, on a cluster (`executor`): each task's moments
//! merged in task order. Exact quantiles narrow in several passes, each
//! needing the last one's answer, so they stay on this machine.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::root_analysis::{
    MAX_QUANTILES, MAX_STATS_BRANCHES, analysis_error, open_for, open_named,
};
use super::root_dataset::{DatasetArg, add_bounds, cached_range, reading};
use super::root_dataset_answers::{
    columns_read, dry_run_answer, fit_by_file, per_file, scan_metadata,
};
use super::root_executor::{cluster_for, cluster_metadata, run_on_cluster};
use super::root_quantities::{
    column_specs, defines_of, expression_plan, quantity_plan, stored_branch,
};
use super::{Context, checked_offset, parse_args};
use crate::analysis::Plan;
use crate::analysis::ops::HistRequest;
use crate::analysis::quantiles::{DEFAULT_CAP, Stats, branch_stats};
use crate::executor::partial::Partial;
use crate::executor::spec::Op;
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatsArgs {
    path: Option<String>,
    dataset: Option<DatasetArg>,
    tree: Option<String>,
    branches: Value,
    selection: Option<String>,
    quantiles: Option<Vec<f64>>,
    offset: Option<i64>,
    define: Option<Value>,
    skip_mismatched: Option<bool>,
    by_file: Option<bool>,
    dry_run: Option<bool>,
    executor: Option<String>,
    files_per_job: Option<i64>,
}

pub(super) fn get_branch_stats(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: StatsArgs = parse_args("get_branch_stats", args)?;
    let specs = column_specs("get_branch_stats", &args.branches)?;
    if specs.is_empty() || specs.len() > MAX_STATS_BRANCHES {
        let first: Value = match &args.branches {
            Value::Array(items) => items.iter().take(MAX_STATS_BRANCHES).cloned().collect(),
            Value::Object(map) => Value::Object(
                map.iter()
                    .take(MAX_STATS_BRANCHES)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            other => other.clone(),
        };
        return Err(ToolError::new(
            "limit_exceeded",
            format!(
                "branches must name 1 to {MAX_STATS_BRANCHES} branches, got {}",
                specs.len()
            ),
            "Ask for fewer branches per call",
        )
        .retry_with(json!({ "branches": first })));
    }
    let names: Vec<String> = specs
        .iter()
        .map(|(name, text)| name.clone().unwrap_or_else(|| text.clone()))
        .collect();
    let quantiles = args.quantiles.clone().unwrap_or_default();
    if quantiles.len() > MAX_QUANTILES || quantiles.iter().any(|q| !(0.0..=1.0).contains(q)) {
        return Err(ToolError::new(
            "invalid_arguments",
            format!("quantiles must be at most {MAX_QUANTILES} numbers between 0 and 1"),
            "Give quantiles as fractions, e.g. [0.25, 0.5, 0.75]",
        ));
    }
    let tool = "get_branch_stats";
    let (t, dry_run, by_file) = open_named!(ctx, job, tool, args)?;
    let mut columns = t.columns();
    let defines = defines_of(tool, args.define.as_ref(), &columns[0], &t)?;
    let cut = expression_plan(args.selection.as_deref(), &columns[0], &defines, &t)?;
    add_bounds(ctx, &t, &mut columns, cut.as_ref())?;
    let plans = specs
        .iter()
        .map(|(_, text)| quantity_plan(text, &columns[0], &defines, &t))
        .collect::<Result<Vec<_>, _>>()?;
    if dry_run {
        let mut all: Vec<Option<&Plan>> = plans.iter().map(Some).collect();
        all.push(cut.as_ref());
        let read = columns_read(&[], &all);
        return dry_run_answer(ctx, tool, &t, &columns, (&read, cut.as_ref()), by_file);
    }
    let members = t.members(&columns);
    let offset = checked_offset(tool, "offset", args.offset)?;
    let mut all: Vec<Option<&Plan>> = plans.iter().skip(offset).map(Some).collect();
    all.push(cut.as_ref());
    let read = columns_read(&[], &all);
    let chosen = (args.executor.as_deref(), args.files_per_job);
    let mut cluster = cluster_for(ctx, tool, chosen, &t, (&columns, &read))?;
    let mut notes = Vec::new();
    if cluster.is_some() && !quantiles.is_empty() {
        if args.executor.as_deref() == Some("slurm") {
            return Err(quantiles_stay_local());
        }
        // Sent to the cluster by the config, not by the call: the call
        // still gets its quantiles, from this machine.
        cluster = None;
        notes.push(QUANTILES_LOCAL);
    }
    let on_cluster = match &cluster {
        Some(cluster) => {
            let op = Op::Moments {
                values: plans.iter().skip(offset).map(|p| p.text.clone()).collect(),
                cut: cut.as_ref().map(|c| c.text.clone()),
            };
            let on = (&t, columns.as_slice(), &defines);
            let mut answer = run_on_cluster(cluster, job, on, op, (&read, cut.as_ref()))?;
            let stats: Vec<Stats> = match answer.partial.take() {
                Some(Partial::Moments(shares)) => shares.iter().map(|s| s.stats()).collect(),
                _ => (offset..plans.len())
                    .map(|_| Stats {
                        by_member: vec![Stats::default(); t.parts.len()],
                        ..Stats::default()
                    })
                    .collect(),
            };
            Some((stats, answer))
        }
        None => None,
    };
    // Branches are computed in the order given, from `offset`, while their
    // answer fits the budget; the rest wait for the next call.
    let offset = checked_offset(tool, "offset", args.offset)?;
    let budget = ctx.budget(tool);
    let remaining = names.len().saturating_sub(offset);
    // Each file's statistics of the branches kept so far (`by_file`).
    let mut files: Vec<Map<String, Value>> = vec![Map::new(); t.parts.len()];
    let answer = |statistics: &Map<String, Value>,
                  files: &[Map<String, Value>],
                  kept: usize,
                  counts: (u64, u64, u64)| {
        let (scanned, selected, bytes_read) = counts;
        let mut data = json!({ "statistics": statistics });
        if by_file {
            data["by_file"] = per_file(&t, |k| json!({ "statistics": files[k] }));
        }
        let out = ToolOutput::new(data)
            .meta("entries_scanned", scanned)
            .meta("entries_selected", selected)
            .suggest("std is the population standard deviation; quantiles interpolate linearly between order statistics (numpy's default)");
        let mut out = scan_metadata(out, &t, &columns).meta("bytes_read", bytes_read);
        if let Some((_, a)) = &on_cluster {
            out = cluster_metadata(out, a);
        }
        for note in &notes {
            out = out.suggest(*note);
        }
        let cut = crate::mcp::budget::Cut {
            kept,
            total: remaining,
            shortened: false,
        };
        crate::mcp::budget::mark_offset(&mut out, cut, offset, tool, "branches");
        fit_by_file(ctx, tool, &mut out);
        out
    };
    let mut statistics = Map::new();
    let (mut scanned, mut selected, mut kept) = (0, 0, 0);
    for (k, (name, plan)) in names.iter().zip(&plans).enumerate().skip(offset) {
        let req = HistRequest {
            value: plan,
            cut: cut.as_ref(),
            weight: None,
            flatten: true,
        };
        // Without a cut every value of the branch counts: the catalog's range
        // of it (when cached) holds them all.
        let range = match (&cut, &plan.root) {
            (None, _) => match stored_branch(&columns[0], plan) {
                Some(branch) => cached_range(ctx, &t, &columns, branch, false)?,
                None => None,
            },
            _ => None,
        };
        let s = match &on_cluster {
            Some((stats, _)) => stats[k - offset].clone(),
            None => branch_stats(&members, &req, &quantiles, DEFAULT_CAP, range, job)
                .map_err(|e| analysis_error(e, &t, args.selection.as_deref()))?,
        };
        let mut entry =
            json!({ "count": s.count, "mean": s.mean, "std": s.std, "min": s.min, "max": s.max });
        if !quantiles.is_empty() {
            let q: Map<String, Value> = quantiles
                .iter()
                .zip(&s.quantiles)
                .map(|(q, v)| (q.to_string(), json!(v)))
                .collect();
            entry["quantiles"] = Value::Object(q);
        }
        let before = statistics.insert(name.clone(), entry);
        let files_before = files.clone();
        if by_file {
            for (file, m) in files.iter_mut().zip(&s.by_member) {
                let moments = json!({ "count": m.count, "mean": m.mean, "std": m.std, "min": m.min, "max": m.max });
                file.insert(name.clone(), moments);
            }
        }
        // Counted with the widest counts the answer can end with.
        let widest = (u64::MAX, u64::MAX, u64::MAX);
        if !budget.fits(&answer(&statistics, &files, kept + 1, widest)) {
            match before {
                Some(earlier) => statistics.insert(name.clone(), earlier),
                None => statistics.remove(name),
            };
            files = files_before;
            if kept == 0 {
                return Err(ToolError::new(
                    "limit_exceeded",
                    format!("the statistics of '{name}' alone are longer than max_result_bytes"),
                    "Ask for fewer quantiles",
                ));
            }
            break;
        }
        (scanned, selected) = (s.scanned, selected.max(s.selected));
        kept += 1;
    }
    let bytes_read = on_cluster
        .as_ref()
        .map_or_else(|| t.bytes_read(), |(_, a)| a.bytes_read);
    Ok(answer(
        &statistics,
        &files,
        kept,
        (scanned, selected, bytes_read),
    ))
}

const QUANTILES_LOCAL: &str = "Quantiles take several passes over the data, each needing the last one's answer: this call ran on this machine, not the cluster";

/// A call asking the cluster for quantiles: refused, saying what runs where.
fn quantiles_stay_local() -> ToolError {
    ToolError::new(
        "invalid_arguments",
        "executor 'slurm' computes count, mean, std, min and max; exact quantiles take several passes over the data and run on this machine only",
        "Call get_branch_stats again without quantiles on executor='slurm', or with executor='local' for the quantiles",
    )
}
