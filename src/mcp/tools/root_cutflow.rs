//! `cutflow`: named cuts applied in order over a file or a dataset, each
//! step's entries and sum of weights, counted in one pass of the analysis
//! engine (`crate::analysis::cutflow`).

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::root_analysis::{analysis_error, open_for, open_named, scanned_by};
use super::root_dataset::{DatasetArg, add_bounds, reading};
use super::root_dataset_answers::{columns_read, dry_run_answer, fit_by_file, per_file};
use super::root_executor::{cluster_for, run_on_cluster};
use super::root_quantities::{defines_of, expression_plan, quantity_plan};
use super::{Context, Effects, ToolDef, Toolset, checked_offset, parse_args};
use crate::analysis::Plan;
use crate::analysis::cutflow::{Flow, FlowRequest, Tally, cutflow as count_flow};
use crate::executor::partial::Partial;
use crate::executor::spec::Op;
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};

pub static TOOLS: &[ToolDef] = &[ToolDef {
    name: "cutflow",
    title: "Cutflow table",
    toolset: Toolset::Root,
    description: "Named cuts applied in order (cut language: apply_selection) in one pass: each step's entries \
(with weights, sum and error), efficiency over the previous step and cumulative over all entries; n_minus_one: \
each cut's count with all others applied.",
    input_schema: include_str!("../../../schema/tools/cutflow.input.json"),
    output_schema: include_str!("../../../schema/tools/cutflow.output.json"),
    effects: Effects::READS,
    handler: cutflow,
}];

/// Most cuts in one cutflow: the answer holds a step per cut.
const MAX_CUTS: usize = 20;
/// Longest step name, in characters.
const MAX_NAME: usize = 64;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    name: String,
    cut: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CutflowArgs {
    path: Option<String>,
    dataset: Option<DatasetArg>,
    tree: Option<String>,
    cuts: Vec<Step>,
    weights: Option<String>,
    n_minus_one: Option<bool>,
    define: Option<Value>,
    skip_mismatched: Option<bool>,
    by_file: Option<bool>,
    dry_run: Option<bool>,
    executor: Option<String>,
    files_per_job: Option<i64>,
    offset: Option<i64>,
}

fn checked_steps(tool: &str, cuts: &[Step]) -> Result<(), ToolError> {
    if cuts.is_empty() {
        return Err(ToolError::invalid_arguments(
            tool,
            "cuts is empty: give at least one {name, cut}",
        ));
    }
    if cuts.len() > MAX_CUTS {
        return Err(ToolError::new(
            "limit_exceeded",
            format!("{} cuts; a cutflow takes at most {MAX_CUTS}", cuts.len()),
            format!("Give at most {MAX_CUTS} cuts, or combine neighbouring ones with &&"),
        ));
    }
    if let Some(long) = cuts.iter().find(|s| s.name.chars().count() > MAX_NAME) {
        return Err(ToolError::invalid_arguments(
            tool,
            format!(
                "the step name '{}...' is longer than {MAX_NAME} characters",
                long.name.chars().take(20).collect::<String>()
            ),
        ));
    }
    Ok(())
}

/// `a / b`, 0 when there is nothing to divide (as apply_selection's efficiency).
fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { a / b }
}

/// A tally as the answer shows it: entries, and when weighted the sum of
/// weights with its error sqrt(sum of w²).
fn tally_json(t: &Tally, weighted: bool) -> Value {
    let mut v = json!({ "entries": t.entries });
    if weighted {
        v["sum_weights"] = json!(t.sum_w);
        v["sum_weights_error"] = json!(t.sum_w2.sqrt());
    }
    v
}

fn cutflow(ctx: &Context, job: &Job, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let tool = "cutflow";
    let args: CutflowArgs = parse_args(tool, args)?;
    checked_steps(tool, &args.cuts)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let n_minus_one = args.n_minus_one == Some(true);
    let (t, dry_run, by_file) = open_named!(ctx, job, tool, args)?;
    let mut columns = t.columns();
    let defines = defines_of(tool, args.define.as_ref(), &columns[0], &t)?;
    let plans = args
        .cuts
        .iter()
        .map(|s| {
            expression_plan(Some(&s.cut), &columns[0], &defines, &t)
                .map(|p| p.expect("a cut was given"))
        })
        .collect::<Result<Vec<Plan>, _>>()?;
    let weight = args
        .weights
        .as_deref()
        .map(|w| quantity_plan(w, &columns[0], &defines, &t))
        .transpose()?;
    // Clusters are left out by the first cut alone (every step needs each
    // entry it admits), and not at all with n-1 (a cut's n-1 needs the
    // entries it fails).
    let prune = (!n_minus_one).then(|| &plans[0]);
    add_bounds(ctx, &t, &mut columns, prune)?;
    if dry_run {
        let mut all: Vec<Option<&Plan>> = plans.iter().map(Some).collect();
        all.push(weight.as_ref());
        let read = columns_read(&[], &all);
        return dry_run_answer(ctx, tool, &t, &columns, (&read, prune), by_file);
    }
    let mut all: Vec<Option<&Plan>> = plans.iter().map(Some).collect();
    all.push(weight.as_ref());
    let read = columns_read(&[], &all);
    let chosen = (args.executor.as_deref(), args.files_per_job);
    let (flow, by_member, cluster) = match cluster_for(ctx, tool, chosen, &t, (&columns, &read))? {
        Some(cluster) => {
            let op = Op::Cutflow {
                cuts: plans.iter().map(|p| p.text.clone()).collect(),
                weight: weight.as_ref().map(|w| w.text.clone()),
                n_minus_one,
            };
            let on = (&t, columns.as_slice(), &defines);
            let mut answer = run_on_cluster(&cluster, job, on, op, (&read, prune))?;
            let empty = || Flow {
                steps: vec![Default::default(); plans.len()],
                n_minus_one: vec![Default::default(); if n_minus_one { plans.len() } else { 0 }],
                scanned: 0,
            };
            let (flow, by_file) = match answer.partial.take() {
                Some(Partial::Cutflow { total, mut by_file }) => {
                    for f in by_file.iter_mut().filter(|f| f.steps.is_empty()) {
                        *f = empty();
                    }
                    (total, by_file)
                }
                _ => (empty(), vec![empty(); t.parts.len()]),
            };
            (flow, by_file, Some(answer))
        }
        None => {
            let members = t.members(&columns);
            let req = FlowRequest {
                cuts: plans.iter().collect(),
                weight: weight.as_ref(),
                n_minus_one,
            };
            let (flow, by_member) =
                count_flow(&members, &req, job).map_err(|e| analysis_error(e, &t, None))?;
            (flow, by_member, None)
        }
    };
    let total = t.entries();
    let weighted = weight.is_some();
    let steps_json = || -> Vec<Value> {
        let mut previous = total as f64;
        args.cuts
            .iter()
            .zip(&flow.steps)
            .enumerate()
            .map(|(k, (step, tally))| {
                let mut v = json!({ "name": step.name, "cut": step.cut });
                if let (Value::Object(o), Value::Object(more)) =
                    (&mut v, tally_json(tally, weighted))
                {
                    o.extend(more);
                }
                let entries = tally.entries as f64;
                v["efficiency"] = json!(ratio(entries, previous));
                v["cumulative_efficiency"] = json!(ratio(entries, total as f64));
                if let Some(n1) = flow.n_minus_one.get(k) {
                    v["n_minus_one"] = tally_json(n1, weighted);
                }
                previous = entries;
                v
            })
            .skip(offset)
            .collect()
    };
    let mut data = json!({ "entries_total": total, "steps": steps_json() });
    if by_file {
        data["by_file"] = per_file(&t, |k| {
            let f = &by_member[k];
            let mut item = json!({
                "entries_total": columns[k].entries,
                "entries": f.steps.iter().map(|s| s.entries).collect::<Vec<_>>(),
            });
            if weighted {
                item["sum_weights"] = json!(f.steps.iter().map(|s| s.sum_w).collect::<Vec<_>>());
            }
            item
        });
    }
    let last = flow.steps.last().map_or(0, |s| s.entries);
    let out = ToolOutput::new(data)
        .meta("entries_scanned", flow.scanned)
        .suggest(format!(
            "{last} of {total} entries pass all {} cuts",
            args.cuts.len()
        ));
    let selection = all_cuts(&args.cuts);
    // A long selection would crowd the answer out: the caller has the cuts.
    let out = if selection.len() <= 300 {
        out.suggest(format!(
            "Histogram the survivors with compute_histogram({}, tree='{}', branch=..., bins=50, selection='{selection}')",
            t.source_args(),
            t.first().row.path,
        ))
    } else {
        out
    };
    let mut out = scanned_by(out, (&t, &columns), cluster.as_ref());
    fit_by_file(ctx, tool, &mut out);
    let remaining = args.cuts.len().saturating_sub(offset);
    ctx.budget(tool)
        .page(&mut out, "/steps", offset, remaining, "steps");
    Ok(out)
}

/// The cuts of every step as one selection.
fn all_cuts(steps: &[Step]) -> String {
    match steps {
        [one] => one.cut.clone(),
        many => many
            .iter()
            .map(|s| format!("({})", s.cut))
            .collect::<Vec<_>>()
            .join(" && "),
    }
}
