//! `compare_histograms`: two or more histograms with the same bins, each made
//! as compute_histogram makes it (`root_analysis::fill_histogram`) or read as
//! read_histogram reads it, compared with the first: normalised shapes, their
//! ratio with errors, ROOT's χ² and Kolmogorov–Smirnov tests
//! (`crate::analysis::compare`), and on request a picture of them.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::root::stored_histogram;
use super::root_analysis::{MAX_BINS, axis_title, checked_bins, open_for, open_named};
use super::root_dataset::reading;
use super::root_histogram::{HistogramArgs, fill_histogram, histogram_plans};
use super::root_plot::with_plot;
use super::{Context, ToolDef, Toolset, bins as pages, checked_offset, parse_args};
use crate::analysis::compare::{Binned, chi2_test, ks_test};
use crate::analysis::plot_compare::{ComparePicture, png_compare, ratio_error, text_compare};
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};

pub static TOOLS: &[ToolDef] = &[ToolDef {
    name: "compare_histograms",
    title: "Compare histograms",
    toolset: Toolset::Root,
    description: "Compares 2-8 histograms with the same bins, each compute_histogram's arguments (plus label) or a \
stored TH1 (path, name): normalised shapes, ratios to the first with errors, ROOT's Chi2Test (UU/UW/WW as its \
weights say) and KolmogorovTest p-values.",
    input_schema: include_str!("../../../schema/tools/compare_histograms.input.json"),
    output_schema: include_str!("../../../schema/tools/compare_histograms.output.json"),
    effects: super::root_analysis::PLOTS,
    handler: compare_histograms,
}];

const MAX_HISTOGRAMS: usize = 8;
const TOOL: &str = "compare_histograms";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompareArgs {
    histograms: Vec<Map<String, Value>>,
    tests: Option<Vec<String>>,
    plot: Option<bool>,
    offset: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredArgs {
    path: String,
    name: String,
}

/// One histogram to compare: its in-range bins, flows and what it is.
struct Made {
    label: String,
    source: &'static str,
    edges: Vec<f64>,
    counts: Vec<f64>,
    sumw2: Vec<f64>,
    underflow: f64,
    overflow: f64,
    entries: f64,
    x_title: String,
}

fn invalid(message: impl Into<String>, suggestion: &str) -> ToolError {
    ToolError::new("invalid_arguments", message, suggestion)
}

/// The `k`th histogram: a stored one (`path` and `name` alone), else made
/// from compute_histogram's arguments, over the reference's range when it
/// gives none.
fn make(
    ctx: &Context,
    job: &Job,
    k: usize,
    mut item: Map<String, Value>,
    reference: Option<&Made>,
) -> Result<Made, ToolError> {
    let label = match item.remove("label") {
        Some(Value::String(s)) => s,
        Some(_) => return Err(invalid("label must be a string", "Give label as text")),
        None => format!("h{k}"),
    };
    let stored = item.len() == 2 && item.contains_key("path") && item.contains_key("name");
    if stored {
        let a: StoredArgs = parse_args(TOOL, item)?;
        return stored_made(ctx, job, label, &a);
    }
    for own in ["plot", "offset", "by_file", "dry_run"] {
        if item.contains_key(own) {
            return Err(invalid(
                format!("histograms[{k}] has '{own}', which compare_histograms' items do not take"),
                "Leave it out of the item (plot is an argument of compare_histograms itself)",
            ));
        }
    }
    let mut args: HistogramArgs = parse_args(TOOL, item)?;
    let bins = checked_bins("bins", args.bins, MAX_BINS)?;
    if let (None, Some(r)) = (args.range, reference) {
        args.range = Some([r.edges[0], r.edges[r.edges.len() - 1]]);
    }
    let (t, _, _) = open_named!(ctx, job, TOOL, args)?;
    let mut columns = t.columns();
    let plans = histogram_plans(ctx, TOOL, &args, &t, &mut columns)?;
    let members = t.members(&columns);
    let (h, axis, _, _) =
        fill_histogram(ctx, job, (&t, &columns, &members), &plans, (&args, bins))?;
    let multiplicity = plans.value.is_jagged() && !args.flatten.unwrap_or(true);
    Ok(Made {
        label,
        source: "computed",
        edges: axis.edges(),
        counts: h.counts.clone(),
        sumw2: h.sumw2.clone(),
        underflow: h.underflow,
        overflow: h.overflow,
        entries: h.entries as f64,
        x_title: axis_title(&columns[0], &args.branch, multiplicity),
    })
}

fn stored_made(ctx: &Context, job: &Job, label: String, a: &StoredArgs) -> Result<Made, ToolError> {
    let (h, row) = stored_histogram(ctx, job, &a.path, &a.name)?;
    if h.y.is_some() || h.profile.is_some() {
        return Err(ToolError::new(
            "unsupported_type",
            format!(
                "'{}' is a {}: only 1-D histograms are compared",
                row.path, h.class_name
            ),
            "Compare TH1s, or make 1-D histograms with compute_histogram's arguments",
        ));
    }
    let n = h.x.nbins;
    let variances = h.variances();
    Ok(Made {
        label,
        source: "stored",
        edges: h.x.edges.clone(),
        counts: h.contents[1..=n].to_vec(),
        sumw2: variances[1..=n].to_vec(),
        underflow: h.contents[0],
        overflow: h.contents[n + 1],
        entries: h.entries,
        x_title: h.x.title.clone(),
    })
}

/// Whether two sets of edges are the same bins (to a part in 10^9 of the range).
fn same_bins(a: &[f64], b: &[f64]) -> bool {
    let span = (a[a.len() - 1] - a[0]).abs().max(f64::MIN_POSITIVE);
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-9 * span)
}

fn binned(m: &Made) -> Binned<'_> {
    Binned {
        counts: &m.counts,
        sumw2: &m.sumw2,
    }
}

/// `counts / sum` with errors `sqrt(sumw2) / sum`.
fn shape(m: &Made) -> (Vec<f64>, Vec<f64>) {
    let sum: f64 = m.counts.iter().sum();
    let scale = if sum == 0.0 { 0.0 } else { 1.0 / sum };
    (
        m.counts.iter().map(|c| c * scale).collect(),
        m.sumw2.iter().map(|s| s.sqrt() * scale).collect(),
    )
}

/// The ratio of two shapes per bin with its error (their relative errors
/// added in quadrature); None where the reference is empty.
fn ratio(
    s: &(Vec<f64>, Vec<f64>),
    r: &(Vec<f64>, Vec<f64>),
) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
    s.0.iter()
        .zip(&s.1)
        .zip(r.0.iter().zip(&r.1))
        .map(|((&a, &ea), (&b, &eb))| {
            if b == 0.0 {
                return (None, None);
            }
            (Some(a / b), Some(ratio_error((a, ea), (b, eb))))
        })
        .unzip()
}

fn compare_histograms(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: CompareArgs = parse_args(TOOL, args)?;
    let offset = checked_offset(TOOL, "offset", args.offset)?;
    let n = args.histograms.len();
    if !(2..=MAX_HISTOGRAMS).contains(&n) {
        return Err(invalid(
            format!("{n} histograms given; compare 2 to {MAX_HISTOGRAMS}"),
            "Give histograms as a list of 2 to 8 items, each compute_histogram's arguments or {path, name}",
        ));
    }
    let tests = args
        .tests
        .clone()
        .unwrap_or_else(|| vec!["chi2".into(), "ks".into()]);
    if let Some(bad) = tests.iter().find(|t| !["chi2", "ks"].contains(&t.as_str())) {
        return Err(invalid(
            format!("unknown test '{bad}'"),
            "tests takes \"chi2\" and \"ks\"",
        ));
    }
    let mut made: Vec<Made> = Vec::with_capacity(n);
    for (k, item) in args.histograms.into_iter().enumerate() {
        let m = make(ctx, job, k, item, made.first())?;
        if let Some(first) = made.first()
            && !same_bins(&first.edges, &m.edges)
        {
            return Err(invalid(
                format!(
                    "histograms[{k}] has {} bins over [{}, {}], histograms[0] {} over [{}, {}]",
                    m.counts.len(),
                    m.edges[0],
                    m.edges[m.edges.len() - 1],
                    first.counts.len(),
                    first.edges[0],
                    first.edges[first.edges.len() - 1]
                ),
                "Give every histogram the same bins and range (a computed one without range takes the first's)",
            ));
        }
        made.push(m);
    }
    let shapes: Vec<(Vec<f64>, Vec<f64>)> = made.iter().map(shape).collect();
    let mut histograms = Vec::new();
    for (m, s) in made.iter().zip(&shapes) {
        let errors: Vec<f64> = m.sumw2.iter().map(|v| v.sqrt()).collect();
        histograms.push(json!({
            "label": m.label,
            "source": m.source,
            "entries": m.entries,
            "sum_weights": m.counts.iter().sum::<f64>(),
            "weighted": !binned(m).is_unweighted(),
            "underflow": m.underflow,
            "overflow": m.overflow,
            "bin_counts": pages::from(&m.counts, offset),
            "bin_errors": pages::from(&errors, offset),
            "shape": pages::from(&s.0, offset),
            "shape_errors": pages::from(&s.1, offset),
        }));
    }
    let mut comparisons = Vec::new();
    let mut notes = Vec::new();
    for k in 1..n {
        let (r, e) = ratio(&shapes[k], &shapes[0]);
        let mut c = json!({
            "label": made[k].label,
            "reference": made[0].label,
            "ratio": pages::from(&r, offset),
            "ratio_errors": pages::from(&e, offset),
        });
        let (h1, h2) = (binned(&made[0]), binned(&made[k]));
        if tests.iter().any(|t| t == "chi2") {
            match chi2_test(&h1, &h2) {
                Ok(t) => {
                    c["chi2"] = json!({"mode": t.mode.as_str(), "chi2": t.chi2, "ndf": t.ndf, "p_value": t.p_value})
                }
                Err(why) => notes.push(format!("χ² test of '{}': {why}", made[k].label)),
            }
        }
        if tests.iter().any(|t| t == "ks") {
            match ks_test(&h1, &h2) {
                Ok(t) => c["ks"] = json!({"distance": t.distance, "p_value": t.p_value}),
                Err(why) => notes.push(format!("KS test of '{}': {why}", made[k].label)),
            }
        }
        comparisons.push(c);
    }
    let edges = made[0].edges.clone();
    let mut out = ToolOutput::new(json!({
        "bin_edges": pages::from(&edges, offset),
        "histograms": histograms,
        "comparisons": comparisons,
    }))
    .suggest("shape is bin_counts / their sum; ratio is each shape over the first's, its error their relative errors in quadrature (null where the first is empty)")
    .suggest("χ² and KS as ROOT's TH1::Chi2Test and TH1::KolmogorovTest without options: in-range bins, the χ² mode UU/UW/WW from whether each histogram is weighted");
    for note in notes {
        out = out.suggest(note);
    }
    if args.plot == Some(true) {
        let labels: Vec<&str> = made.iter().map(|m| m.label.as_str()).collect();
        let shape_values: Vec<&[f64]> = shapes.iter().map(|s| s.0.as_slice()).collect();
        let shape_errors: Vec<&[f64]> = shapes.iter().map(|s| s.1.as_slice()).collect();
        let picture = ComparePicture {
            title: "compare_histograms",
            x_title: &made[0].x_title,
            edges: &edges,
            labels: &labels,
            shapes: &shape_values,
            errors: &shape_errors,
        };
        let key = format!(
            "compare|{}",
            serde_json::to_string(
                &json!({"labels": labels, "edges": edges, "shapes": shape_values})
            )
            .unwrap_or_default()
        );
        out = with_plot(
            ctx,
            out,
            &key,
            png_compare(&picture),
            text_compare(&picture),
        );
    }
    let mut per_bin: Vec<String> = Vec::new();
    for k in 0..n {
        for a in ["bin_counts", "bin_errors", "shape", "shape_errors"] {
            per_bin.push(format!("/histograms/{k}/{a}"));
        }
    }
    for k in 0..n - 1 {
        for a in ["ratio", "ratio_errors"] {
            per_bin.push(format!("/comparisons/{k}/{a}"));
        }
    }
    let per_bin: Vec<&str> = per_bin.iter().map(String::as_str).collect();
    let bins = made[0].counts.len();
    pages::page_1d(
        &ctx.budget(TOOL),
        &mut out,
        "/bin_edges",
        &per_bin,
        offset,
        bins,
    );
    Ok(out)
}
