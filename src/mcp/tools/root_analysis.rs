//! The ROOT analysis tools: `apply_selection`, `compute_histogram` and
//! `compute_histogram_2d`, on the analysis engine (`crate::analysis`). They
//! read the file, streaming only the branches their cut and values name.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::root::corrupted;
use super::root_dataset::{
    DatasetArg, OpenTree, Reading, add_bounds, cached_range, open_tree, plan_tree, reading,
};
use super::root_dataset_answers::{
    columns_read, dry_run_answer, fit_by_file, per_file, scan_metadata,
};
use super::root_executor::{
    ClusterAnswer, cluster_count, cluster_for, cluster_histogram_2d, cluster_metadata,
};
use super::root_histogram::{HistPlans, HistogramArgs, fill_histogram, histogram_plans};
use super::root_plot::with_plot;
use super::root_quantities::{
    defines_key, defines_of, expression_plan, quantity_plan, stored_branch,
};
use super::{Context, Effects, ToolDef, Toolset, bins as pages, checked_offset, parse_args};
use crate::analysis::dataset::Member;
use crate::analysis::ops::{Axis, HistRequest, count_selected, histogram_2d, value_range};
use crate::analysis::plot::{Hist1Picture, Hist2Picture, png_1d, png_2d, text_1d, text_2d};
use crate::analysis::{AnalysisError, TreeColumns};
use crate::job::{Job, Stop};
use crate::mcp::response::{ToolError, ToolOutput};

pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "apply_selection",
        title: "Count entries passing a cut",
        toolset: Toolset::Root,
        description: "Counts the entries passing a ROOT TTree::Draw-style cut (e.g. `Muon_pt > 25 && abs(Muon_eta) < 2.4`), \
reading only its branches. A collection passes when any element does; Length$ Sum$ Min$ Max$ MinIf$ MaxIf$ \
Alt$, x[i], ROOT::VecOps (Sum Max Min ArgMax ArgMin Any All Take Sort Reverse Where InvariantMass \
InvariantMasses DeltaR DeltaPhi) and PairFirst/PairSecond work.",
        input_schema: include_str!("../../../schema/tools/apply_selection.input.json"),
        output_schema: include_str!("../../../schema/tools/apply_selection.output.json"),
        effects: Effects::READS,
        handler: apply_selection,
    },
    ToolDef {
        name: "compute_histogram",
        title: "Histogram a branch",
        toolset: Toolset::Root,
        description: "1-D histogram of a branch or expression (cut language: apply_selection), optional cut and weights: bins [lo, \
hi), under/overflow, errors sqrt(N) (sqrt(sum w^2) weighted), entries, mean, std. Collections are flattened \
unless flatten=false (count per entry).",
        input_schema: include_str!("../../../schema/tools/compute_histogram.input.json"),
        output_schema: include_str!("../../../schema/tools/compute_histogram.output.json"),
        effects: PLOTS,
        handler: compute_histogram,
    },
    ToolDef {
        name: "compute_histogram_2d",
        title: "Histogram two branches against each other",
        toolset: Toolset::Root,
        description: "2-D histogram of two branches or expressions (per entry, or of one collection), optional cut: counts [y][x], \
bins [lo, hi); ranges default to min, max.",
        input_schema: include_str!("../../../schema/tools/compute_histogram_2d.input.json"),
        output_schema: include_str!("../../../schema/tools/compute_histogram_2d.output.json"),
        effects: PLOTS,
        handler: compute_histogram_2d,
    },
    ToolDef {
        name: "get_branch_stats",
        title: "Branch statistics with exact quantiles",
        toolset: Toolset::Root,
        description: "count, mean, std, min, max and exact quantiles (numpy's linear) of branches or expressions, optional cut; \
collection elements pooled; non-finite values left out.",
        input_schema: include_str!("../../../schema/tools/get_branch_stats.input.json"),
        output_schema: include_str!("../../../schema/tools/get_branch_stats.output.json"),
        effects: Effects::READS,
        handler: super::root_stats::get_branch_stats,
    },
];

/// The histogram tools with `plot: true` write a PNG under the export folder,
/// named after the request: the same request writes the same file again.
pub(super) const PLOTS: Effects = Effects {
    read_only: false,
    destructive: false,
    idempotent: true,
    asks_llm: false,
};

pub(super) const MAX_BINS: i64 = 10_000;
pub(super) const MAX_STATS_BRANCHES: usize = 100;
pub(super) const MAX_QUANTILES: usize = 100;
const MAX_BINS_2D: i64 = 1_000;

/// Opens the file or dataset that a ROOT analysis tool's arguments name, for a
/// dry run from the catalog alone when they ask for one: every such tool has the
/// same `path`, `dataset`, `tree`, `skip_mismatched`, `dry_run` and `by_file`
/// fields. Gives the tree and the `dry_run` and `by_file` flags.
macro_rules! open_named {
    ($ctx:expr, $job:expr, $tool:expr, $args:expr) => {{
        let dry_run = $args.dry_run == Some(true);
        let by_file = $args.by_file == Some(true);
        let r = reading(
            $tool,
            $job,
            &$args.path,
            &$args.dataset,
            &$args.tree,
            $args.skip_mismatched,
        );
        open_for($ctx, &r, dry_run).map(|t| (t, dry_run, by_file))
    }};
}
pub(super) use open_named;

/// What a call reads, opened: the files, or for a dry run their layouts in
/// the catalog (nothing opened).
pub(super) fn open_for(
    ctx: &Context,
    r: &Reading<'_>,
    dry_run: bool,
) -> Result<OpenTree, ToolError> {
    if dry_run {
        plan_tree(ctx, r)
    } else {
        open_tree(ctx, r)
    }
}

/// An engine error as the spec's error object; `tool` and the open tree give
/// the suggestions something concrete to name.
pub(super) fn analysis_error(e: AnalysisError, t: &OpenTree, selection: Option<&str>) -> ToolError {
    let first = t.first();
    let list = format!(
        "list_branches(path='{}', tree='{}')",
        first.known.abs().display(),
        first.row.path
    );
    match e {
        AnalysisError::InvalidSelection { column, expected, message } => ToolError::new(
            "invalid_selection",
            message,
            format!(
                "Fix the cut (ROOT TTree::Draw syntax: && || ! < <= == + - * / abs() sqrt() TMath::...); branch names from {list}"
            ),
        )
        .details(json!({ "selection": selection, "column": column, "expected": expected })),
        AnalysisError::BranchNotFound { name, closest } => {
            let hint = match closest.first() {
                Some(best) => format!("Did you mean '{best}'? See the branches with {list}"),
                None => format!("See the branches with {list}"),
            };
            ToolError::new("branch_not_found", format!("no branch '{name}' in tree '{}'", first.row.path), hint)
                .details(json!({ "branch": name, "closest": closest }))
        }
        AnalysisError::UnsupportedType { name, why } => ToolError::new(
            "unsupported_type",
            format!("'{name}': {why}"),
            format!("Use a numeric branch instead (types in {list}); read strings with read_branches"),
        )
        .details(json!({ "branch": name })),
        // A dataset's error names its file already (`dataset::in_member`).
        AnalysisError::Format(f) if t.is_dataset() => match f {
            crate::formats::FormatError::Unsupported(why) => {
                ToolError::new("unsupported_type", why, "Skip this branch; quarry cannot decode it yet")
            }
            other => ToolError::new(
                "corrupted_file",
                other.to_string(),
                "Verify that file's integrity, or leave it out of the dataset",
            ),
        },
        AnalysisError::Format(f) => corrupted(&first.known.abs(), &f),
        AnalysisError::Stopped { stop, entries_done } => {
            let (code, why) = match stop {
                Stop::TimedOut => ("timeout", "took longer than the call's time limit"),
                Stop::Cancelled => ("cancelled", "was cancelled"),
            };
            let total = t.entries();
            ToolError::new(
                code,
                format!("the scan {why} after {entries_done} of {total} entries"),
                "Reduce the scope: a tighter selection, or fewer or smaller files",
            )
            .details(json!({ "entries_done": entries_done, "entries_total": total }))
        }
        AnalysisError::TooLarge { message } => ToolError::new(
            "limit_exceeded",
            message,
            "Pair fewer elements: cut the collection's entries first (a selection on its size, e.g. nJet < 50), \
or reduce it with Sum/Max/Any before pairing",
        )
        .details(json!({ "selection": selection })),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SelectionArgs {
    path: Option<String>,
    dataset: Option<DatasetArg>,
    tree: Option<String>,
    selection: String,
    define: Option<Value>,
    skip_mismatched: Option<bool>,
    by_file: Option<bool>,
    dry_run: Option<bool>,
    executor: Option<String>,
    files_per_job: Option<i64>,
}

fn apply_selection(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "apply_selection";
    let args: SelectionArgs = parse_args(tool, args)?;
    let (t, dry_run, by_file) = open_named!(ctx, job, tool, args)?;
    let mut columns = t.columns();
    let defines = defines_of(tool, args.define.as_ref(), &columns[0], &t)?;
    let plan = expression_plan(Some(&args.selection), &columns[0], &defines, &t)?
        .expect("a cut was given");
    add_bounds(ctx, &t, &mut columns, Some(&plan))?;
    if dry_run {
        return dry_run_answer(
            ctx,
            tool,
            &t,
            &columns,
            (&plan.columns, Some(&plan)),
            by_file,
        );
    }
    let chosen = (args.executor.as_deref(), args.files_per_job);
    let cluster = cluster_for(ctx, tool, chosen, &t, (&columns, &plan.columns))?;
    let (counted, by_member, cluster) = match cluster {
        Some(cluster) => {
            let (total, by_file, answer) =
                cluster_count(&cluster, job, (&t, &columns, &defines), &plan)?;
            (total, by_file, Some(answer))
        }
        None => {
            let members = t.members(&columns);
            let (counted, by_member) = count_selected(&members, &plan, job)
                .map_err(|e| analysis_error(e, &t, Some(&args.selection)))?;
            (counted, by_member, None)
        }
    };
    // The fraction of the whole tree: the clusters the cut ruled out unread
    // hold no passing entry, but their entries count.
    let total = t.entries();
    let fraction = |selected: u64, total: u64| {
        if total == 0 {
            0.0
        } else {
            selected as f64 / total as f64
        }
    };
    let efficiency = fraction(counted.selected, total);
    let mut data = json!({
        "entries_total": total,
        "entries_selected": counted.selected,
        "efficiency": efficiency,
        "selection": args.selection,
    });
    if by_file {
        data["by_file"] = per_file(&t, |k| {
            let (entries, c) = (columns[k].entries, by_member[k]);
            json!({
                "entries_total": entries,
                "entries_selected": c.selected,
                "efficiency": fraction(c.selected, entries),
                "entries_scanned": c.scanned,
            })
        });
    }
    let out = ToolOutput::new(data)
        .meta("entries_scanned", counted.scanned)
        .suggest(format!(
            "{:.3}% of entries pass ({}/{total})",
            efficiency * 100.0,
            counted.selected,
        ))
        .suggest(format!(
            "Histogram with compute_histogram({}, tree='{}', branch=..., bins=50, selection='{}')",
            t.source_args(),
            t.first().row.path,
            args.selection
        ));
    let mut out = scanned_by(out, (&t, &columns), cluster.as_ref());
    fit_by_file(ctx, tool, &mut out);
    Ok(out)
}

/// The scan's metadata: this process's, or the cluster's.
pub(super) fn scanned_by(
    out: ToolOutput,
    (t, columns): (&OpenTree, &[TreeColumns<'_>]),
    cluster: Option<&ClusterAnswer>,
) -> ToolOutput {
    let out = scan_metadata(out, t, columns);
    match cluster {
        Some(c) => cluster_metadata(out, c),
        None => out,
    }
}

/// `bins` checked against its maximum (`limit_exceeded` with the value to retry with).
pub(super) fn checked_bins(name: &str, bins: i64, max: i64) -> Result<usize, ToolError> {
    if bins < 1 {
        return Err(ToolError::new(
            "invalid_arguments",
            format!("{name} must be at least 1, got {bins}"),
            format!("Give {name} between 1 and {max}"),
        ));
    }
    if bins > max {
        return Err(ToolError::new(
            "limit_exceeded",
            format!("{name} = {bins} is more than the {max} allowed"),
            format!("Use at most {max} bins, or narrow the range"),
        )
        .retry_with(json!({ name: max })));
    }
    Ok(bins as usize)
}

pub(super) fn checked_range(name: &str, range: [f64; 2]) -> Result<(f64, f64), ToolError> {
    let [lo, hi] = range;
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(ToolError::new(
            "invalid_arguments",
            format!("{name} must be two finite numbers [lo, hi] with lo < hi, got [{lo}, {hi}]"),
            format!(
                "Give {name} as [lo, hi], or leave it out to use the branch's minimum and maximum"
            ),
        ));
    }
    Ok((lo, hi))
}

/// An axis title: the branch's name and its title when it says more than the
/// leaf's type (`Jet_pt: pt of jets`, not `Jet_pt[nJet]/F`), or its number
/// per entry.
pub(super) fn axis_title(columns: &TreeColumns<'_>, branch: &str, multiplicity: bool) -> String {
    let title = columns
        .find(branch)
        .map(|c| columns.columns[c].origin.title().trim())
        .filter(|t| !t.is_empty() && !t.starts_with(branch))
        .map_or(branch.to_string(), |t| format!("{branch}: {t}"));
    if multiplicity {
        format!("number of {title} per entry")
    } else {
        title
    }
}

/// The picture's title: what was histogrammed, and the cut.
fn picture_title(what: &str, selection: Option<&str>) -> String {
    match selection {
        Some(cut) => format!("{what}  [{cut}]"),
        None => what.to_string(),
    }
}

/// A range that holds `min` and `max` in `[lo, hi)`.
pub(super) fn covering(min: f64, max: f64) -> (f64, f64) {
    if min < max {
        (min, max.next_up())
    } else {
        (min - 0.5, max + 0.5)
    }
}

/// The histogram range: given, else from the catalog's statistics (only
/// without a cut on a plain branch), else from a pass over the values.
pub(super) fn resolve_range(
    ctx: &Context,
    (t, columns, members): (&OpenTree, &[TreeColumns<'_>], &[Member<'_>]),
    req: &HistRequest<'_>,
    given: Option<[f64; 2]>,
    job: &Job,
) -> Result<((f64, f64), &'static str), ToolError> {
    if let Some(r) = given {
        return Ok((checked_range("range", r)?, "given"));
    }
    let multiplicity = req.value.is_jagged() && !req.flatten;
    if let Some(branch) = stored_branch(&columns[0], req.value)
        && let Some((lo, hi)) = cached_range(ctx, t, columns, branch, multiplicity)?
    {
        return Ok((covering(lo, hi), "catalog statistics"));
    }
    let found = value_range(members, req, job).map_err(|e| analysis_error(e, t, None))?;
    Ok((
        found.map_or((0.0, 1.0), |(lo, hi)| covering(lo, hi)),
        "a pass over the data",
    ))
}

pub(super) fn compute_histogram(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "compute_histogram";
    let args: HistogramArgs = parse_args(tool, args)?;
    let bins = checked_bins("bins", args.bins, MAX_BINS)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let (t, dry_run, by_file) = open_named!(ctx, job, tool, args)?;
    let mut columns = t.columns();
    let plans = histogram_plans(ctx, tool, &args, &t, &mut columns)?;
    let HistPlans {
        defines,
        value,
        cut,
        weight,
    } = &plans;
    if dry_run {
        let read = columns_read(&[], &[Some(value), cut.as_ref(), weight.as_ref()]);
        return dry_run_answer(ctx, tool, &t, &columns, (&read, cut.as_ref()), by_file);
    }
    let members = t.members(&columns);
    let flatten = args.flatten.unwrap_or(true);
    let ((h, axis, range_from, cluster), req) = (
        fill_histogram(ctx, job, (&t, &columns, &members), &plans, (&args, bins))?,
        HistRequest {
            value,
            cut: cut.as_ref(),
            weight: weight.as_ref(),
            flatten,
        },
    );
    let Axis { lo, hi, .. } = axis;
    let errors: Vec<f64> = h.sumw2.iter().map(|s| s.sqrt()).collect();
    let mut data = json!({
        "bin_edges": pages::from(&axis.edges(), offset),
        "bin_counts": pages::from(&h.counts, offset),
        "bin_errors": pages::from(&errors, offset),
        "underflow": h.underflow,
        "overflow": h.overflow,
        "entries": h.entries,
        "mean": h.mean(),
        "std": h.std(),
    });
    if weight.is_some() {
        data["sum_weights"] = json!(h.sum_w);
    }
    if by_file {
        data["by_file"] = per_file(&t, |k| {
            let m = &h.by_member[k];
            let mut item = json!({
                "entries_scanned": m.scanned,
                "entries_selected": m.selected,
                "entries": m.entries,
                "underflow": m.underflow,
                "overflow": m.overflow,
                "mean": m.mean(),
                "std": m.std(),
            });
            if weight.is_some() {
                item["sum_weights"] = json!(m.sum_w);
            }
            item
        });
    }
    let mut out = scanned_by(ToolOutput::new(data), (&t, &columns), cluster.as_ref())
        .meta("entries_scanned", h.scanned)
        .meta("entries_selected", h.selected)
        .meta("range_from", range_from);
    if h.underflow + h.overflow > 0.0 {
        out = out.suggest(format!(
            "{} below and {} at or above the range [{lo}, {hi}): widen range to include them",
            h.underflow, h.overflow
        ));
    }
    if value.is_jagged() && req.flatten {
        out = out.suggest("A collection: every passing element counts; flatten=false histograms the number per entry");
    }
    if args.plot == Some(true) {
        let edges = axis.edges();
        let multiplicity = value.is_jagged() && !req.flatten;
        let x_title = axis_title(&columns[0], &args.branch, multiplicity);
        let picture = Hist1Picture {
            title: &picture_title(&args.branch, args.selection.as_deref()),
            x_title: &x_title,
            y_title: if weight.is_some() {
                "sum of weights"
            } else {
                "entries"
            },
            edges: &edges,
            counts: &h.counts,
            underflow: h.underflow,
            overflow: h.overflow,
        };
        let key = format!(
            "histogram|{}|{}|{}|{bins}|{lo}|{hi}|{:?}|{:?}|{}{}",
            t.source_args(),
            t.first().row.path,
            args.branch,
            args.selection,
            args.weights,
            req.flatten,
            defines_key(defines)
        );
        out = with_plot(ctx, out, &key, png_1d(&picture), text_1d(&picture));
    }
    let mut out = out.suggest("bin_edges has one more element than bin_counts; bins are [lo, hi)");
    fit_by_file(ctx, tool, &mut out);
    let budget = ctx.budget(tool);
    pages::page_1d(
        &budget,
        &mut out,
        "/bin_edges",
        &["/bin_counts", "/bin_errors"],
        offset,
        bins,
    );
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Histogram2dArgs {
    path: Option<String>,
    dataset: Option<DatasetArg>,
    tree: Option<String>,
    x_branch: String,
    y_branch: String,
    x_bins: i64,
    y_bins: i64,
    x_range: Option<[f64; 2]>,
    y_range: Option<[f64; 2]>,
    selection: Option<String>,
    flatten: Option<bool>,
    plot: Option<bool>,
    x_offset: Option<i64>,
    y_offset: Option<i64>,
    define: Option<Value>,
    skip_mismatched: Option<bool>,
    by_file: Option<bool>,
    dry_run: Option<bool>,
    executor: Option<String>,
    files_per_job: Option<i64>,
}

fn compute_histogram_2d(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: Histogram2dArgs = parse_args("compute_histogram_2d", args)?;
    let x_bins = checked_bins("x_bins", args.x_bins, MAX_BINS_2D)?;
    let y_bins = checked_bins("y_bins", args.y_bins, MAX_BINS_2D)?;
    let tool = "compute_histogram_2d";
    let at = pages::Window {
        x_offset: checked_offset(tool, "x_offset", args.x_offset)?,
        y_offset: checked_offset(tool, "y_offset", args.y_offset)?,
        x_bins,
        y_bins,
    };
    if args.flatten == Some(false) {
        return Err(ToolError::new(
            "invalid_arguments",
            "compute_histogram_2d pairs elements: flatten=false is not supported",
            "Leave flatten out, or histogram Length$ counts with compute_histogram(flatten=false)",
        ));
    }
    let (t, dry_run, by_file) = open_named!(ctx, job, tool, args)?;
    let mut columns = t.columns();
    let defines = defines_of(tool, args.define.as_ref(), &columns[0], &t)?;
    let x = quantity_plan(&args.x_branch, &columns[0], &defines, &t)?;
    let y = quantity_plan(&args.y_branch, &columns[0], &defines, &t)?;
    let cut = expression_plan(args.selection.as_deref(), &columns[0], &defines, &t)?;
    add_bounds(ctx, &t, &mut columns, cut.as_ref())?;
    if dry_run {
        let read = columns_read(&[], &[Some(&x), Some(&y), cut.as_ref()]);
        return dry_run_answer(ctx, tool, &t, &columns, (&read, cut.as_ref()), by_file);
    }
    let members = t.members(&columns);
    let x_req = HistRequest {
        value: &x,
        cut: cut.as_ref(),
        weight: None,
        flatten: true,
    };
    let y_req = HistRequest {
        value: &y,
        cut: cut.as_ref(),
        weight: None,
        flatten: true,
    };
    let read = (&t, columns.as_slice(), members.as_slice());
    let ((xlo, xhi), _) = resolve_range(ctx, read, &x_req, args.x_range, job)?;
    let ((ylo, yhi), _) = resolve_range(ctx, read, &y_req, args.y_range, job)?;
    let axes = (
        Axis {
            bins: x_bins,
            lo: xlo,
            hi: xhi,
        },
        Axis {
            bins: y_bins,
            lo: ylo,
            hi: yhi,
        },
    );
    let read_columns = columns_read(&[], &[Some(&x), Some(&y), cut.as_ref()]);
    let chosen = (args.executor.as_deref(), args.files_per_job);
    let (h, cluster) = match cluster_for(ctx, tool, chosen, &t, (&columns, &read_columns))? {
        Some(cluster) => {
            let on = (&t, columns.as_slice(), &defines);
            let plans = (&x, &y, cut.as_ref());
            let (h, answer) = cluster_histogram_2d(&cluster, job, on, plans, axes, &read_columns)?;
            (h, Some(answer))
        }
        None => {
            let h = histogram_2d(&members, &x_req, &y, axes, job)
                .map_err(|e| analysis_error(e, &t, args.selection.as_deref()))?;
            (h, None)
        }
    };
    let (x_edges, y_edges) = (axes.0.edges(), axes.1.edges());
    let mut data = json!({
        "x_edges": pages::from(&x_edges, at.x_offset),
        "y_edges": pages::from(&y_edges, at.y_offset),
        "counts": pages::window(&h.counts, at.x_offset, at.y_offset),
        "entries": h.entries,
        "outside": h.outside,
    });
    if by_file {
        data["by_file"] = per_file(&t, |k| {
            let m = &h.by_member[k];
            json!({
                "entries_scanned": m.scanned,
                "entries_selected": m.selected,
                "entries": m.entries,
                "outside": m.outside,
            })
        });
    }
    let mut out = ToolOutput::new(data);
    if args.plot == Some(true) {
        let (x_title, y_title) = (
            axis_title(&columns[0], &args.x_branch, false),
            axis_title(&columns[0], &args.y_branch, false),
        );
        let picture = Hist2Picture {
            title: &picture_title(
                &format!("{} vs {}", args.y_branch, args.x_branch),
                args.selection.as_deref(),
            ),
            x_title: &x_title,
            y_title: &y_title,
            x_edges: &x_edges,
            y_edges: &y_edges,
            counts: &h.counts,
            outside: h.outside,
        };
        let key = format!(
            "histogram_2d|{}|{}|{}|{}|{x_bins}|{y_bins}|{xlo}|{xhi}|{ylo}|{yhi}|{:?}{}",
            t.source_args(),
            t.first().row.path,
            args.x_branch,
            args.y_branch,
            args.selection,
            defines_key(&defines)
        );
        out = with_plot(ctx, out, &key, png_2d(&picture), text_2d(&picture));
    }
    let mut out = scanned_by(out, (&t, &columns), cluster.as_ref())
        .meta("entries_scanned", h.scanned)
        .meta("entries_selected", h.selected)
        .suggest("counts are [y][x]; `outside` counts the pairs beyond either range");
    fit_by_file(ctx, tool, &mut out);
    pages::page_2d(&ctx.budget(tool), &mut out, &["/counts"], at);
    Ok(out)
}
