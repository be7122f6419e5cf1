//! `fit_histogram`: a binned likelihood or χ² fit of a model to a histogram
//! made by `compute_histogram` in the same call, read from a file (a stored
//! TH1, as `read_histogram`), or given as numbers. The fit itself is the fit
//! engine's (`crate::fit`); this file turns arguments into a histogram and a
//! request, and the report into the answer.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::root::stored_histogram;
use super::root_analysis::{MAX_BINS, checked_bins, open_for, open_named};
use super::root_dataset::reading;
use super::root_histogram::{HistogramArgs, fill_histogram, histogram_plans};
use super::root_plot::with_plot;
use super::{Context, ToolDef, Toolset, bins as pages, checked_offset, parse_args};
use crate::fit::{self, CostKind, FitError, Histogram, MinosRequest, Override, Report, Request};
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};

const TOOL: &str = "fit_histogram";

pub static TOOLS: &[ToolDef] = &[ToolDef {
    name: TOOL,
    title: "Fit a model to a histogram",
    toolset: Toolset::Root,
    description: "Binned Poisson-likelihood (or chi2) fit, Migrad-like with Hesse and optional Minos errors, of a \
model such as 'gaussian + exponential' (or an expression in x) to a histogram: compute_histogram's arguments, a \
stored TH1 (path + name) or bin_edges + counts. Gives values, errors, covariance, chi2/ndf, p-values, pulls.",
    input_schema: include_str!("../../../schema/tools/fit_histogram.input.json"),
    output_schema: include_str!("../../../schema/tools/fit_histogram.output.json"),
    effects: super::root_analysis::PLOTS,
    handler: fit_histogram,
}];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FitArgs {
    model: String,
    extended: Option<bool>,
    cost: Option<String>,
    parameters: Option<Map<String, Value>>,
    minos: Option<Value>,
    plot: Option<bool>,
    offset: Option<i64>,
    // A histogram from compute_histogram's arguments...
    path: Option<String>,
    dataset: Option<Value>,
    tree: Option<String>,
    branch: Option<String>,
    bins: Option<i64>,
    range: Option<[f64; 2]>,
    selection: Option<String>,
    weights: Option<String>,
    flatten: Option<bool>,
    define: Option<Value>,
    skip_mismatched: Option<bool>,
    executor: Option<String>,
    files_per_job: Option<i64>,
    // ... or a stored TH1 (path + name) ...
    name: Option<String>,
    // ... or given numbers.
    bin_edges: Option<Vec<f64>>,
    #[serde(alias = "bin_counts")]
    counts: Option<Vec<f64>>,
    #[serde(alias = "bin_errors")]
    errors: Option<Vec<f64>>,
}

fn invalid(why: impl Into<String>, suggestion: &str) -> ToolError {
    ToolError::new("invalid_arguments", why, suggestion)
}

/// The histogram the arguments name and a title for its axis.
fn histogram(ctx: &Context, job: &Job, args: &FitArgs) -> Result<(Histogram, String), ToolError> {
    let given = args.bin_edges.is_some() || args.counts.is_some();
    let stored = args.name.is_some();
    let computed = args.branch.is_some();
    if usize::from(given) + usize::from(stored) + usize::from(computed) != 1 {
        return Err(invalid(
            "give one histogram: compute_histogram's arguments (branch, bins, ...), a stored TH1 (path + name), or bin_edges + counts",
            "e.g. fit_histogram(model='gaussian', path=..., tree=..., branch=..., bins=50, range=[lo, hi])",
        ));
    }
    if given {
        let (Some(edges), Some(counts)) = (&args.bin_edges, &args.counts) else {
            return Err(invalid(
                "bin_edges and counts go together",
                "Give both, as compute_histogram returns them",
            ));
        };
        let variances = args
            .errors
            .as_ref()
            .map(|e| e.iter().map(|v| v * v).collect());
        return Ok((
            Histogram {
                edges: edges.clone(),
                counts: counts.clone(),
                variances,
            },
            "x".into(),
        ));
    }
    if stored {
        let Some(path) = &args.path else {
            return Err(invalid(
                "a stored histogram needs path with name",
                "Use inspect_file() to list the histograms",
            ));
        };
        let name = args.name.as_deref().unwrap_or_default();
        let (h, _) = stored_histogram(ctx, job, path, name)?;
        if h.y.is_some() || h.profile.is_some() {
            return Err(invalid(
                format!(
                    "'{name}' is not a 1-D histogram (a {}): fit_histogram fits TH1s",
                    h.class_name
                ),
                "Histogram a projection with compute_histogram, or pick a TH1 from inspect_file()",
            ));
        }
        let (values, errors) = (h.values(), h.errors());
        let n = h.x.nbins;
        let hist = Histogram {
            edges: h.x.edges.clone(),
            counts: values[1..=n].to_vec(),
            variances: Some(errors[1..=n].iter().map(|e| e * e).collect()),
        };
        let title = if h.x.title.is_empty() {
            name.to_string()
        } else {
            h.x.title.clone()
        };
        return Ok((within(hist, args.range)?, title));
    }
    computed_histogram(ctx, job, args)
}

/// The bins of a histogram inside `range` (all without one).
fn within(h: Histogram, range: Option<[f64; 2]>) -> Result<Histogram, ToolError> {
    let Some([lo, hi]) = range else { return Ok(h) };
    let keep: Vec<usize> = (0..h.counts.len())
        .filter(|&i| h.edges[i] >= lo && h.edges[i + 1] <= hi)
        .collect();
    if keep.is_empty() {
        return Err(invalid(
            format!("no bin lies inside range [{lo}, {hi}]"),
            "Widen range, or read the bins with read_histogram",
        ));
    }
    let (a, b) = (keep[0], keep[keep.len() - 1]);
    Ok(Histogram {
        edges: h.edges[a..=b + 1].to_vec(),
        counts: h.counts[a..=b].to_vec(),
        variances: h.variances.map(|v| v[a..=b].to_vec()),
    })
}

/// A histogram made from compute_histogram's arguments, filled as
/// compute_histogram fills it (`root_histogram::fill_histogram`), in one pass
/// over the data.
fn computed_histogram(
    ctx: &Context,
    job: &Job,
    args: &FitArgs,
) -> Result<(Histogram, String), ToolError> {
    let Some(bins) = args.bins else {
        return Err(invalid(
            "bins is needed with branch",
            "e.g. bins=50, as for compute_histogram",
        ));
    };
    let bins = checked_bins("bins", bins, MAX_BINS)?;
    let mut request = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            request.insert(k.to_string(), v);
        }
    };
    put("path", args.path.clone().map(Value::from));
    put("dataset", args.dataset.clone());
    put("tree", args.tree.clone().map(Value::from));
    put("branch", args.branch.clone().map(Value::from));
    put("bins", Some(json!(bins)));
    put("range", args.range.map(|r| json!(r)));
    put("selection", args.selection.clone().map(Value::from));
    put("weights", args.weights.clone().map(Value::from));
    put("flatten", args.flatten.map(Value::from));
    put("define", args.define.clone());
    put("skip_mismatched", args.skip_mismatched.map(Value::from));
    put("executor", args.executor.clone().map(Value::from));
    put("files_per_job", args.files_per_job.map(Value::from));
    let hargs: HistogramArgs = parse_args(TOOL, request)?;
    let (t, _, _) = open_named!(ctx, job, TOOL, hargs)?;
    let mut columns = t.columns();
    let plans = histogram_plans(ctx, TOOL, &hargs, &t, &mut columns)?;
    let members = t.members(&columns);
    let read = (&t, columns.as_slice(), members.as_slice());
    let (h, axis, _, _) = fill_histogram(ctx, job, read, &plans, (&hargs, bins))?;
    let variances = args.weights.is_some().then(|| h.sumw2.clone());
    Ok((
        Histogram {
            edges: axis.edges(),
            counts: h.counts,
            variances,
        },
        hargs.branch,
    ))
}

/// The `parameters` overrides: `{name: {value, limits, fixed}}`.
fn overrides(given: Option<&Map<String, Value>>) -> Result<Vec<(String, Override)>, ToolError> {
    let bad = |name: &str| {
        invalid(
            format!(
                "parameters.{name} must be an object {{value?: number, limits?: [lo|null, hi|null], fixed?: bool}}"
            ),
            "e.g. parameters={\"gaussian_mu\": {\"value\": 91, \"limits\": [85, 95]}}",
        )
    };
    let mut out = Vec::new();
    for (name, v) in given.into_iter().flatten() {
        let Some(o) = v.as_object() else {
            return Err(bad(name));
        };
        let mut item = Override::default();
        for (k, v) in o {
            match k.as_str() {
                "value" => item.value = Some(v.as_f64().ok_or_else(|| bad(name))?),
                "fixed" => item.fixed = Some(v.as_bool().ok_or_else(|| bad(name))?),
                "limits" => {
                    let pair = v
                        .as_array()
                        .filter(|a| a.len() == 2)
                        .ok_or_else(|| bad(name))?;
                    let side = |x: &Value| {
                        if x.is_null() {
                            Ok(None)
                        } else {
                            x.as_f64().map(Some).ok_or_else(|| bad(name))
                        }
                    };
                    item.limits = Some((side(&pair[0])?, side(&pair[1])?));
                }
                _ => return Err(bad(name)),
            }
        }
        out.push((name.clone(), item));
    }
    Ok(out)
}

fn minos_request(v: Option<&Value>) -> Result<MinosRequest, ToolError> {
    Ok(match v {
        None | Some(Value::Bool(false)) | Some(Value::Null) => MinosRequest::None,
        Some(Value::Bool(true)) => MinosRequest::All,
        Some(Value::Array(a)) => MinosRequest::Names(
            a.iter()
                .map(|n| n.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    invalid(
                        "minos must be true or a list of parameter names",
                        "e.g. minos=[\"gaussian_mu\"]",
                    )
                })?,
        ),
        Some(_) => {
            return Err(invalid(
                "minos must be true or a list of parameter names",
                "e.g. minos=[\"gaussian_mu\"]",
            ));
        }
    })
}

pub(super) fn fit_histogram(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: FitArgs = parse_args(TOOL, args)?;
    let offset = checked_offset(TOOL, "offset", args.offset)?;
    let cost = match args.cost.as_deref() {
        None | Some("poisson") => CostKind::Poisson,
        Some("chi2") => CostKind::Chi2,
        Some(other) => {
            return Err(invalid(
                format!("cost must be 'poisson' or 'chi2', got '{other}'"),
                "Leave cost out for the Poisson likelihood",
            ));
        }
    };
    let request = Request {
        model: &args.model,
        extended: args.extended == Some(true),
        cost,
        overrides: overrides(args.parameters.as_ref())?,
        minos: minos_request(args.minos.as_ref())?,
    };
    let (h, x_title) = histogram(ctx, job, &args)?;
    if h.counts.len() > MAX_BINS as usize {
        return Err(invalid(
            format!(
                "{} bins is more than the {MAX_BINS} a fit takes",
                h.counts.len()
            ),
            "Rebin with compute_histogram",
        ));
    }
    let report = fit::fit(&h, &request).map_err(|FitError(why)| {
        invalid(
            why,
            "Check the model ('gaussian + exponential', names as the error says) and the histogram with compute_histogram",
        )
    })?;
    let mut out = answer(&args, &h, &report, offset);
    if args.plot == Some(true) {
        out = with_fit_plot(ctx, out, &args, &h, &report, &x_title);
    }
    let budget = ctx.budget(TOOL);
    let mut per_bin = vec![
        "/bin_counts".to_string(),
        "/fitted".to_string(),
        "/pulls".to_string(),
    ];
    per_bin.extend(
        report
            .components
            .iter()
            .filter(|_| report.components.len() > 1)
            .map(|(l, _)| format!("/components/{l}")),
    );
    let per_bin: Vec<&str> = per_bin.iter().map(String::as_str).collect();
    pages::page_1d(
        &budget,
        &mut out,
        "/bin_edges",
        &per_bin,
        offset,
        h.counts.len(),
    );
    Ok(out)
}

fn finite(v: f64) -> Value {
    if v.is_finite() { json!(v) } else { Value::Null }
}

fn answer(args: &FitArgs, h: &Histogram, r: &Report, offset: usize) -> ToolOutput {
    let params: Vec<Value> = r
        .params
        .iter()
        .map(|p| {
            json!({
                "name": p.name, "value": finite(p.value), "error": p.error.map_or(Value::Null, finite),
                "minos_lower": p.minos_lower, "minos_upper": p.minos_upper, "at_limit": p.at_limit, "fixed": p.fixed,
            })
        })
        .collect();
    let matrix = |m: &Vec<Vec<f64>>| -> Value {
        m.iter()
            .map(|row| row.iter().map(|v| finite(*v)).collect::<Vec<_>>())
            .collect()
    };
    let from = |v: &[f64]| {
        pages::from(
            &v.iter()
                .map(|x| if x.is_finite() { *x } else { 0.0 })
                .collect::<Vec<_>>(),
            offset,
        )
    };
    let pulls: Vec<Value> = r
        .pulls
        .iter()
        .skip(offset)
        .map(|p| p.map_or(Value::Null, finite))
        .collect();
    let mut data = json!({
        "model": args.model,
        "extended": args.extended == Some(true),
        "cost": if args.cost.as_deref() == Some("chi2") { "chi2" } else { "poisson" },
        "cost_form": r.cost_form,
        "parameters": params,
        "covariance": matrix(&r.covariance),
        "correlation": matrix(&r.correlation),
        "fval": finite(r.fval),
        "edm": finite(r.edm),
        "converged": r.converged,
        "ndf": r.ndf,
        "chi2": finite(r.chi2),
        "chi2_ndf": if r.ndf > 0 { finite(r.chi2 / r.ndf as f64) } else { Value::Null },
        "p_value": r.p_value,
        "likelihood_ratio": finite(r.likelihood_ratio),
        "likelihood_ratio_p_value": r.likelihood_ratio_p_value,
        "bin_edges": pages::from(&h.edges, offset),
        "bin_counts": from(&h.counts),
        "fitted": from(&r.expected),
        "pulls": pulls,
    });
    if let Some(why) = &r.reason {
        data["reason"] = json!(why);
    }
    if r.components.len() > 1 {
        data["components"] = r
            .components
            .iter()
            .map(|(l, v)| (l.clone(), from(v)))
            .collect::<Map<_, _>>()
            .into();
    }
    let mut out = ToolOutput::new(data).meta("cost_calls", r.calls + r.minos_calls);
    if let Some(note) = &r.minos_note {
        out = out.suggest(note);
    }
    if !r.converged {
        out = out.suggest("Not converged (see reason): give start values or limits in parameters, fix a parameter, or narrow range");
    }
    out.suggest("fval is -2 ln L relative to the saturated model (or chi2); errors are 1 sigma (Hesse), minos_lower/upper the Minos interval")
}

/// `plot: true`: the histogram with the fit and its components, and the pulls.
fn with_fit_plot(
    ctx: &Context,
    out: ToolOutput,
    args: &FitArgs,
    h: &Histogram,
    r: &Report,
    x_title: &str,
) -> ToolOutput {
    let components: Vec<(&str, &[f64])> = if r.components.len() > 1 {
        r.components
            .iter()
            .map(|(l, v)| (l.as_str(), v.as_slice()))
            .collect()
    } else {
        Vec::new()
    };
    let pulls: Vec<f64> = r.pulls.iter().map(|p| p.unwrap_or(0.0)).collect();
    let title = format!(
        "{}  [{}]",
        args.model,
        if r.converged {
            "converged"
        } else {
            "NOT converged"
        }
    );
    let picture = crate::analysis::plot::fit::FitPicture {
        title: &title,
        x_title,
        edges: &h.edges,
        counts: &h.counts,
        fitted: &r.expected,
        components: &components,
        pulls: &pulls,
    };
    let key = format!(
        "fit_histogram|{}",
        serde_json::to_string(&ordered_args(args)).unwrap_or_default()
    );
    with_plot(
        ctx,
        out,
        &key,
        crate::analysis::plot::fit::png_fit(&picture),
        crate::analysis::plot::fit::text_fit(&picture),
    )
}

/// The request's arguments that decide the picture, in a fixed order.
fn ordered_args(a: &FitArgs) -> Value {
    json!([
        a.model,
        a.extended,
        a.cost,
        a.parameters,
        a.minos,
        a.path,
        a.dataset,
        a.tree,
        a.branch,
        a.bins,
        a.range,
        a.selection,
        a.weights,
        a.flatten,
        a.define,
        a.name,
        a.bin_edges,
        a.counts,
        a.errors
    ])
}
