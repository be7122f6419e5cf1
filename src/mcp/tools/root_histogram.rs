//! compute_histogram's arguments, plans and filling, shared with
//! compare_histograms, which makes each of its histograms the same way.

use serde::Deserialize;
use serde_json::Value;

use super::Context;
use super::root_analysis::{analysis_error, checked_range, covering, resolve_range};
use super::root_dataset::{DatasetArg, OpenTree, add_bounds, cached_range};
use super::root_dataset_answers::columns_read;
use super::root_executor::{Cluster, ClusterAnswer, cluster_for, run_on_cluster};
use super::root_quantities::{defines_of, expression_plan, quantity_plan, stored_branch};
use crate::analysis::dataset::Member;
use crate::analysis::ops::{Axis, Hist1, HistRequest, histogram};
use crate::analysis::{Defines, Plan, TreeColumns};
use crate::executor::partial::Partial;
use crate::executor::spec::{Fill, Op};
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
    pub(super) executor: Option<String>,
    pub(super) files_per_job: Option<i64>,
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
/// given, else found; with where the range came from, and what the cluster
/// did when the call ran there (`executor`).
pub(super) fn fill_histogram(
    ctx: &Context,
    job: &Job,
    read: (&OpenTree, &[TreeColumns<'_>], &[Member<'_>]),
    plans: &HistPlans,
    (args, bins): (&HistogramArgs, usize),
) -> Result<(Hist1, Axis, &'static str, Option<ClusterAnswer>), ToolError> {
    let req = HistRequest {
        value: &plans.value,
        cut: plans.cut.as_ref(),
        weight: plans.weight.as_ref(),
        flatten: args.flatten.unwrap_or(true),
    };
    let (t, columns, _) = read;
    let read_columns = columns_read(
        &[],
        &[
            Some(&plans.value),
            plans.cut.as_ref(),
            plans.weight.as_ref(),
        ],
    );
    let chosen = (args.executor.as_deref(), args.files_per_job);
    if let Some(cluster) = cluster_for(
        ctx,
        "compute_histogram",
        chosen,
        t,
        (columns, &read_columns),
    )? {
        return cluster_histogram(
            ctx,
            job,
            (read, &read_columns),
            plans,
            (args, bins),
            &cluster,
        );
    }
    let ((lo, hi), range_from) = resolve_range(ctx, read, &req, args.range, job)?;
    let axis = Axis { bins, lo, hi };
    let (t, _, members) = read;
    let h = histogram(members, &req, axis, job)
        .map_err(|e| analysis_error(e, t, args.selection.as_deref()))?;
    Ok((h, axis, range_from, None))
}

/// The files a histogram reads: the open tree, its members' columns, the members.
type Read<'a> = (&'a OpenTree, &'a [TreeColumns<'a>], &'a [Member<'a>]);

/// `fill_histogram` on the cluster: the range given, else the catalog's,
/// else a pass of its own (a job of its own), then the histogram's job.
fn cluster_histogram(
    ctx: &Context,
    job: &Job,
    (read, read_columns): (Read<'_>, &[usize]),
    plans: &HistPlans,
    (args, bins): (&HistogramArgs, usize),
    cluster: &Cluster,
) -> Result<(Hist1, Axis, &'static str, Option<ClusterAnswer>), ToolError> {
    let (t, columns, _) = read;
    let flatten = args.flatten.unwrap_or(true);
    let fill = Fill {
        value: plans.value.text.clone(),
        cut: plans.cut.as_ref().map(|c| c.text.clone()),
        weight: plans.weight.as_ref().map(|w| w.text.clone()),
        flatten,
    };
    let on_cluster = |op: Op| {
        run_on_cluster(
            cluster,
            job,
            (t, columns, &plans.defines),
            op,
            (read_columns, plans.cut.as_ref()),
        )
    };
    let multiplicity = plans.value.is_jagged() && !flatten;
    let cached = match (args.range, stored_branch(&columns[0], &plans.value)) {
        (None, Some(branch)) => cached_range(ctx, t, columns, branch, multiplicity)?,
        _ => None,
    };
    let ((lo, hi), range_from) = match (args.range, cached) {
        (Some(r), _) => (checked_range("range", r)?, "given"),
        (None, Some((lo, hi))) => (covering(lo, hi), "catalog statistics"),
        (None, None) => {
            let found = match on_cluster(Op::Range { fill: fill.clone() })?.partial {
                Some(Partial::Range(r)) => r,
                _ => None,
            };
            (
                found.map_or((0.0, 1.0), |(lo, hi)| covering(lo, hi)),
                "a pass over the data",
            )
        }
    };
    let axis = Axis { bins, lo, hi };
    let mut answer = on_cluster(Op::Histogram {
        fill,
        axis: axis.into(),
    })?;
    let h = match answer.partial.take() {
        Some(Partial::Histogram(h)) => h,
        _ => {
            let mut h = Hist1::empty(&axis);
            h.by_member = vec![Hist1::default(); t.parts.len()];
            h
        }
    };
    Ok((h, axis, range_from, Some(answer)))
}
