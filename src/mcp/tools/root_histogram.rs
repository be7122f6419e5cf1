//! compute_histogram's arguments, plans and filling, shared with
//! compare_histograms, which makes each of its histograms the same way.

use serde::Deserialize;
use serde_json::Value;

use super::Context;
use super::root_analysis::{analysis_error, resolve_range};
use super::root_dataset::{DatasetArg, OpenTree, add_bounds};
use super::root_quantities::{defines_of, expression_plan, quantity_plan};
use crate::analysis::dataset::Member;
use crate::analysis::ops::{Axis, Hist1, HistRequest, histogram};
use crate::analysis::{Defines, Plan, TreeColumns};
use crate::job::Job;
use crate::mcp::response::ToolError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HistogramArgs {
    pub(super) path: Option<String>,
    pub(super) dataset: Option<DatasetArg>,
    pub(super) tree: Option<String>,
    pub(super) branch: String,
    pub(super) bins: i64,
    pub(super) range: Option<[f64; 2]>,
    pub(super) selection: Option<String>,
    pub(super) weights: Option<String>,
    pub(super) flatten: Option<bool>,
    pub(super) plot: Option<bool>,
    pub(super) offset: Option<i64>,
    pub(super) define: Option<Value>,
    pub(super) skip_mismatched: Option<bool>,
    pub(super) by_file: Option<bool>,
    pub(super) dry_run: Option<bool>,
}

/// The plans of a histogram's `branch`, `selection` and `weights`, with the
/// call's named expressions; the cut's recorded bounds added to `columns`.
pub(super) struct HistPlans {
    pub(super) defines: Defines,
    pub(super) value: Plan,
    pub(super) cut: Option<Plan>,
    pub(super) weight: Option<Plan>,
}

pub(super) fn histogram_plans(
    ctx: &Context,
    tool: &str,
    args: &HistogramArgs,
    t: &OpenTree,
    columns: &mut [TreeColumns<'_>],
) -> Result<HistPlans, ToolError> {
    let defines = defines_of(tool, args.define.as_ref(), &columns[0], t)?;
    let value = quantity_plan(&args.branch, &columns[0], &defines, t)?;
    let cut = expression_plan(args.selection.as_deref(), &columns[0], &defines, t)?;
    let weight = args
        .weights
        .as_deref()
        .map(|w| quantity_plan(w, &columns[0], &defines, t))
        .transpose()?;
    add_bounds(ctx, t, columns, cut.as_ref())?;
    Ok(HistPlans {
        defines,
        value,
        cut,
        weight,
    })
}

/// Fills compute_histogram's histogram (compare_histograms' too): the range
/// given, else found; with where the range came from.
pub(super) fn fill_histogram(
    ctx: &Context,
    job: &Job,
    read: (&OpenTree, &[TreeColumns<'_>], &[Member<'_>]),
    plans: &HistPlans,
    (args, bins): (&HistogramArgs, usize),
) -> Result<(Hist1, Axis, &'static str), ToolError> {
    let req = HistRequest {
        value: &plans.value,
        cut: plans.cut.as_ref(),
        weight: plans.weight.as_ref(),
        flatten: args.flatten.unwrap_or(true),
    };
    let ((lo, hi), range_from) = resolve_range(ctx, read, &req, args.range, job)?;
    let axis = Axis { bins, lo, hi };
    let (t, _, members) = read;
    let h = histogram(members, &req, axis, job)
        .map_err(|e| analysis_error(e, t, args.selection.as_deref()))?;
    Ok((h, axis, range_from))
}
