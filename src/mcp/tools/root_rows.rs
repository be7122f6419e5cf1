//! The ROOT row tools: `read_branches` (a page of the entries passing a cut)
//! and `sample_tree` (the first entries, or a seeded random sample). Both read
//! only the baskets holding the entries they return, and cut their answer at a
//! row boundary when its JSON would pass the configured cap.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::root_analysis::{analysis_error, open_for, open_named};
use super::root_dataset::{DatasetArg, OpenTree, add_bounds, reading};
use super::root_dataset_answers::{
    columns_read, dry_run_answer, fit_by_file, per_file, scan_metadata, with_files,
};
use super::root_quantities::{column_specs, defines_of, expression_plan, named_columns};
use super::{Context, Effects, ToolDef, Toolset, checked_offset, parse_args};
use crate::analysis::dataset::{Member, locate};
use crate::analysis::quantities::{Named, Quantity};
use crate::analysis::rows::{Cell, page_entries, read_chain_rows, read_computed};
use crate::analysis::{Plan, TreeColumns};
use crate::job::Job;
use crate::mcp::budget::Budget;
use crate::mcp::response::{ToolError, ToolOutput};

pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "read_branches",
        title: "Read entries of a tree",
        toolset: Toolset::Root,
        description: "Values of branches or expressions for the entries passing an optional cut, a page at a time (offset, limit). \
Integers exact; NaN and infinities null.",
        input_schema: include_str!("../../../schema/tools/read_branches.input.json"),
        output_schema: include_str!("../../../schema/tools/read_branches.output.json"),
        effects: Effects::READS,
        handler: read_branches,
    },
    ToolDef {
        name: "sample_tree",
        title: "Sample entries of a tree",
        toolset: Toolset::Root,
        description: "The first or `size` random (seeded) entries of all branches (the first 64 of a wider tree), as \
read_branches' records.",
        input_schema: include_str!("../../../schema/tools/sample_tree.input.json"),
        output_schema: include_str!("../../../schema/tools/sample_tree.output.json"),
        effects: Effects::READS,
        handler: sample_tree,
    },
];

const READ_LIMIT_DEFAULT: i64 = 1000;
const READ_LIMIT_MAX: i64 = 1_000_000;
const SAMPLE_DEFAULT: i64 = 100;
const SAMPLE_MAX: i64 = 10_000;
/// Branches sample_tree shows when none are named: a wide tree (a NanoAOD has
/// over a thousand) would not fit one entry in an answer.
const SAMPLE_DEFAULT_BRANCHES: usize = 64;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: Option<String>,
    dataset: Option<DatasetArg>,
    tree: Option<String>,
    branches: Value,
    define: Option<Value>,
    selection: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
    flatten: Option<bool>,
    output_format: Option<String>,
    skip_mismatched: Option<bool>,
    by_file: Option<bool>,
    dry_run: Option<bool>,
}

fn checked_count(name: &str, value: Option<i64>, default: i64, max: i64) -> Result<u64, ToolError> {
    let v = value.unwrap_or(default);
    if !(0..=max).contains(&v) {
        return Err(ToolError::new(
            "limit_exceeded",
            format!("{name} {v} is outside 0..={max}"),
            format!("Use a {name} of at most {max}; page with offset, or summarise with compute_histogram"),
        )
        .retry_with(json!({ name: max })));
    }
    Ok(v as u64)
}

/// The columns named by a tool's `branches` (all columns when `None`).
pub(super) fn columns_of(
    t: &OpenTree,
    columns: &TreeColumns<'_>,
    names: Option<&[String]>,
) -> Result<Vec<Named>, ToolError> {
    let stored = |name: String, c: usize| Named {
        name,
        quantity: Quantity::Branch(c),
    };
    match names {
        Some(names) => names
            .iter()
            .map(|n| {
                columns
                    .require(n)
                    .map(|c| stored(n.clone(), c))
                    .map_err(|e| analysis_error(e, t, None))
            })
            .collect(),
        None => Ok(columns
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                // A leaf list's branch is read as its leaves; a branch with
                // branches inside as those (an RNTuple column is always a leaf).
                let whole_list = c.origin.branch().is_some_and(|b| {
                    c.origin.leaf().is_none() && b.leaves.len() > 1 && b.element.is_none()
                });
                let parent = c.origin.branch().is_some_and(|b| !b.branches.is_empty());
                c.layout.is_ok() && !whole_list && !parent
            })
            .map(|(i, c)| stored(c.path.clone(), i))
            .collect()),
    }
}

/// Rows turned into JSON records (flattened when asked), counting the
/// non-finite numbers shown as null.
struct Shaped {
    records: Vec<Map<String, Value>>,
    non_finite: u64,
}

fn cell_json(c: &Cell, non_finite: &mut u64) -> Value {
    match c {
        Cell::Bool(b) => json!(b),
        Cell::Int(i) => json!(i),
        Cell::UInt(u) => json!(u),
        Cell::Float(f) if f.is_finite() => json!(f),
        Cell::Float(_) => {
            *non_finite += 1;
            Value::Null
        }
        Cell::Str(s) => json!(s),
        Cell::List(items) => Value::Array(items.iter().map(|i| cell_json(i, non_finite)).collect()),
    }
}

/// Appends the records of one row (one per element when flattening).
fn shape_row(
    names: &[String],
    row: &[Cell],
    flatten: bool,
    out: &mut Shaped,
) -> Result<(), ToolError> {
    let lengths: Vec<usize> = row
        .iter()
        .filter_map(|c| {
            if let Cell::List(l) = c {
                Some(l.len())
            } else {
                None
            }
        })
        .collect();
    if !flatten || lengths.is_empty() {
        out.records.push(
            names
                .iter()
                .cloned()
                .zip(row.iter().map(|c| cell_json(c, &mut out.non_finite)))
                .collect(),
        );
        return Ok(());
    }
    if lengths.iter().any(|&n| n != lengths[0]) {
        return Err(ToolError::new(
            "invalid_arguments",
            "flatten=true pairs the elements of the collections read, but they have different lengths",
            "Read branches of one collection with flatten=true (e.g. Muon_pt with Muon_eta), or use flatten=false",
        ));
    }
    for i in 0..lengths[0] {
        let record = names
            .iter()
            .cloned()
            .zip(row.iter().map(|c| match c {
                Cell::List(l) => cell_json(&l[i], &mut out.non_finite),
                other => cell_json(other, &mut out.non_finite),
            }))
            .collect();
        out.records.push(record);
    }
    Ok(())
}

/// The records of the first rows whose JSON (a line per record) stays within
/// `cap` bytes, with how many rows that is: rows are cut whole, before
/// flattening, so a page never ends inside an entry.
fn shape_within(
    names: &[String],
    rows: &[Vec<Cell>],
    flatten: bool,
    cap: usize,
) -> Result<(Shaped, usize), ToolError> {
    let mut out = Shaped {
        records: Vec::new(),
        non_finite: 0,
    };
    // Sizes are bounded from above cheaply while the bound stays under the
    // cap (a page far from it formats no number twice); past that, measured.
    let mut bound = 0;
    let mut measured: Option<usize> = None;
    for (kept, row) in rows.iter().enumerate() {
        let (records_before, non_finite_before) = (out.records.len(), out.non_finite);
        shape_row(names, row, flatten, &mut out)?;
        let added = &out.records[records_before..];
        let bytes = match &mut measured {
            Some(bytes) => {
                *bytes += added.iter().map(|r| json_len(r) + 1).sum::<usize>();
                *bytes
            }
            None => {
                bound += added.iter().map(|r| record_bound(r) + 1).sum::<usize>();
                if bound <= cap {
                    continue;
                }
                *measured.insert(out.records.iter().map(|r| json_len(r) + 1).sum())
            }
        };
        if bytes > cap {
            out.records.truncate(records_before);
            out.non_finite = non_finite_before;
            return Ok((out, kept));
        }
    }
    Ok((out, rows.len()))
}

/// At least the length of a record's JSON: numbers at their longest (24
/// characters for a double, 20 for a 64-bit integer), every character of a
/// string escaped.
fn record_bound(record: &Map<String, Value>) -> usize {
    fn bound(v: &Value) -> usize {
        match v {
            Value::Null => 4,
            Value::Bool(_) => 5,
            Value::Number(n) if n.is_f64() => 24,
            Value::Number(_) => 20,
            Value::String(s) => 2 + 6 * s.len(),
            Value::Array(items) => 2 + items.iter().map(|i| bound(i) + 1).sum::<usize>(),
            Value::Object(m) => record_bound(m),
        }
    }
    2 + record
        .iter()
        .map(|(k, v)| 2 + 6 * k.len() + 1 + bound(v) + 1)
        .sum::<usize>()
}

/// The length of a record's JSON, without keeping the text.
fn json_len(record: &Map<String, Value>) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, record).map_or(0, |()| count.0)
}

fn csv_cell(v: &Value) -> String {
    let text = match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// `data` in the output format asked for.
/// `data` in the output format asked for (the records moved, not copied: a
/// page of 10,000 rows is tens of thousands of values).
fn formatted(names: &[String], records: Vec<Map<String, Value>>, format: &str) -> Value {
    match format {
        "json" => {
            let mut columns: Vec<Vec<Value>> = names
                .iter()
                .map(|_| Vec::with_capacity(records.len()))
                .collect();
            // A branch named twice is one key of the records: copied then.
            let unique =
                names.iter().collect::<std::collections::HashSet<_>>().len() == names.len();
            for mut r in records {
                for (n, column) in names.iter().zip(&mut columns) {
                    let value = if unique {
                        r.remove(n)
                    } else {
                        r.get(n).cloned()
                    };
                    column.push(value.unwrap_or(Value::Null));
                }
            }
            let columns: Map<String, Value> = names
                .iter()
                .cloned()
                .zip(columns.into_iter().map(Value::Array))
                .collect();
            object_of("columns", Value::Object(columns))
        }
        "csv" => {
            let mut text = names
                .iter()
                .map(|n| csv_cell(&json!(n)))
                .collect::<Vec<_>>()
                .join(",");
            for r in &records {
                text.push('\n');
                text.push_str(
                    &names
                        .iter()
                        .map(|n| csv_cell(&r[n]))
                        .collect::<Vec<_>>()
                        .join(","),
                );
            }
            object_of("csv", Value::String(text))
        }
        _ => object_of(
            "records",
            Value::Array(records.into_iter().map(Value::Object).collect()),
        ),
    }
}

/// `{key: value}`, the value moved in (`json!` would serialise a copy).
fn object_of(key: &str, value: Value) -> Value {
    Value::Object(Map::from_iter([(key.to_string(), value)]))
}

fn read_branches(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: ReadArgs = parse_args("read_branches", args)?;
    let format = args.output_format.as_deref().unwrap_or("records");
    if !["records", "json", "csv"].contains(&format) {
        return Err(ToolError::invalid_arguments(
            "read_branches",
            "output_format must be 'records', 'json' or 'csv'",
        ));
    }
    let limit = checked_count("limit", args.limit, READ_LIMIT_DEFAULT, READ_LIMIT_MAX)?;
    let offset = checked_count("offset", args.offset, 0, i64::MAX)?;
    let specs = column_specs("read_branches", &args.branches)?;
    if specs.is_empty() {
        return Err(ToolError::invalid_arguments(
            "read_branches",
            "branches must name at least one branch or expression (see list_branches)",
        ));
    }
    let tool = "read_branches";
    let (t, dry_run, by_file) = open_named!(ctx, job, tool, args)?;
    let mut columns = t.columns();
    let defines = defines_of(tool, args.define.as_ref(), &columns[0], &t)?;
    let named = named_columns(&specs, &columns[0], &defines, &t)?;
    let cut = expression_plan(args.selection.as_deref(), &columns[0], &defines, &t)?;
    add_bounds(ctx, &t, &mut columns, cut.as_ref())?;
    if dry_run {
        let (stored, plans) = split_named(&named);
        let mut all: Vec<Option<&Plan>> = plans.into_iter().map(Some).collect();
        all.push(cut.as_ref());
        let read = columns_read(&stored, &all);
        return dry_run_answer(ctx, tool, &t, &columns, (&read, cut.as_ref()), by_file);
    }
    let members = t.members(&columns);
    let (page, counted, by_member) = page_entries(&members, cut.as_ref(), offset, limit, job)
        .map_err(|e| analysis_error(e, &t, args.selection.as_deref()))?;
    let (names, rows) = read_page(&t, &members, &named, &page, job)?;
    let flatten = args.flatten.unwrap_or(false);
    let budget = ctx.budget(tool);
    let column_names = names_of(&named);
    let out = fit_rows(&budget, page.len(), |cap| {
        let mut answer = rows_answer(&names, &rows, flatten, format, cap)?;
        answer.output.data["branches"] = json!(column_names);
        if by_file {
            answer.output.data["by_file"] = per_file(&t, |k| {
                json!({
                    "entries_total": columns[k].entries,
                    "entries_selected": by_member[k].selected,
                    "entries_scanned": by_member[k].scanned,
                })
            });
            fit_by_file(ctx, tool, &mut answer.output);
        }
        let more_selected = offset + (page.len() as u64) < counted.selected;
        let mut out = scan_metadata(answer.output, &t, &columns)
            .meta("entries_scanned", counted.scanned)
            .meta("entries_selected", counted.selected)
            .meta("entries_returned", answer.entries_returned)
            .meta("truncated", answer.cut_short || more_selected);
        let next = offset + answer.entries_returned;
        if answer.cut_short || more_selected {
            out = out.meta("next_offset", next);
        }
        if answer.cut_short {
            out = out.suggest(format!(
                "The answer was cut at {} of {} entries to fit max_result_bytes: continue with offset={next}, read fewer branches, \
or summarise everything with compute_histogram or get_branch_stats",
                answer.entries_returned,
                page.len(),
            ));
        } else if more_selected {
            out = out.suggest(format!(
                "{} entries pass; continue with offset={next}",
                counted.selected,
            ));
        }
        Ok(out.suggest("For the whole selection, compute_histogram and get_branch_stats summarise without reading rows"))
    })?;
    Ok(out)
}

fn names_of(named: &[Named]) -> Vec<String> {
    named.iter().map(|n| n.name.clone()).collect()
}

/// The answer `build(rows_cap)` makes, with the rows held to the most bytes
/// that let the whole answer fit the budget (the rows' cap is lowered by what
/// the rest of the answer takes, and again if the rows' format is longer than
/// their records). An entry that alone does not fit is an error: its numbers
/// cannot be shortened, and paging past it would skip it.
fn fit_rows(
    budget: &Budget,
    entries: usize,
    mut build: impl FnMut(usize) -> Result<ToolOutput, ToolError>,
) -> Result<ToolOutput, ToolError> {
    let mut rows_cap = budget.cap;
    loop {
        let out = build(rows_cap)?;
        let len = budget.len(&out);
        if len <= budget.cap {
            let returned = out.metadata.get("entries_returned").and_then(Value::as_u64);
            if entries > 0 && returned == Some(0) {
                return Err(ToolError::new(
                    "limit_exceeded",
                    format!(
                        "one entry of these branches is longer than max_result_bytes ({} bytes)",
                        budget.cap
                    ),
                    "Read fewer branches at a time, or summarise them with get_branch_stats or compute_histogram",
                ));
            }
            return Ok(out);
        }
        if rows_cap == 0 {
            return Ok(out); // nothing left to cut: the server's guard reports it
        }
        rows_cap = rows_cap.saturating_sub(len - budget.cap + 16);
    }
}

/// Keys a dataset's rows carry besides their columns: the file, the entry in
/// it, and the entry in the dataset (numbered across the files in order).
const PROVENANCE: [&str; 3] = ["_file", "_entry", "_global_entry"];

/// The branches read as stored and the expressions among named columns.
fn split_named(named: &[Named]) -> (Vec<usize>, Vec<&Plan>) {
    let mut stored = Vec::new();
    let mut computed = Vec::new();
    for n in named {
        match &n.quantity {
            Quantity::Branch(c) => stored.push(*c),
            Quantity::Expression(plan) => computed.push(plan),
        }
    }
    (stored, computed)
}

/// The values of the page's entries (numbered across the files), for the
/// named branches and expressions (branches read as stored, expressions
/// computed), in the order named; a dataset's rows also say where each entry
/// is (`PROVENANCE`). Returns the keys of the rows with them.
fn read_page(
    t: &OpenTree,
    members: &[Member<'_>],
    named: &[Named],
    page: &[u64],
    job: &Job,
) -> Result<(Vec<String>, Vec<Vec<Cell>>), ToolError> {
    let (stored, computed) = split_named(named);
    let failed = |e| analysis_error(e, t, None);
    let stored_rows = read_chain_rows(members, &stored, page, job).map_err(failed)?;
    let mut rows = if computed.is_empty() {
        stored_rows
    } else {
        let computed_rows = read_computed(members, &computed, page, job).map_err(failed)?;
        stored_rows
            .into_iter()
            .zip(computed_rows)
            .map(|(stored, computed)| {
                let (mut stored, mut computed) = (stored.into_iter(), computed.into_iter());
                named
                    .iter()
                    .map(|n| match n.quantity {
                        Quantity::Branch(_) => stored.next(),
                        Quantity::Expression(_) => computed.next(),
                    })
                    .map(|cell| cell.expect("a cell per column"))
                    .collect()
            })
            .collect()
    };
    let mut names = names_of(named);
    if t.is_dataset() {
        names.extend(PROVENANCE.map(String::from));
        for (row, &global) in rows.iter_mut().zip(page) {
            let (m, entry) = locate(members, global).expect("a page's entry is in a file");
            row.push(Cell::Str(t.parts[m].shown.clone()));
            row.push(Cell::UInt(entry));
            row.push(Cell::UInt(global));
        }
    }
    Ok((names, rows))
}

/// What a page of rows becomes: the output, how many entries it holds, and
/// whether the size cap cut it short.
struct RowsAnswer {
    output: ToolOutput,
    entries_returned: u64,
    cut_short: bool,
}

/// The rows as an answer, their JSON held to `cap` bytes.
fn rows_answer(
    names: &[String],
    rows: &[Vec<Cell>],
    flatten: bool,
    format: &str,
    cap: usize,
) -> Result<RowsAnswer, ToolError> {
    let is_jagged = rows
        .first()
        .is_some_and(|r| r.iter().any(|c| matches!(c, Cell::List(_))));
    let (shaped, kept_rows) = shape_within(names, rows, flatten, cap)?;
    let entries = shaped.records.len();
    let mut data = formatted(names, shaped.records, format);
    data["branches"] = json!(names);
    data["entries"] = json!(entries);
    data["is_jagged"] = json!(is_jagged && !flatten);
    let mut output = ToolOutput::new(data);
    if shaped.non_finite > 0 {
        output = output.suggest(format!(
            "{} values were NaN or infinite and are shown as null (JSON has no such numbers)",
            shaped.non_finite
        ));
    }
    Ok(RowsAnswer {
        output,
        entries_returned: kept_rows as u64,
        cut_short: kept_rows < rows.len(),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SampleArgs {
    path: Option<String>,
    dataset: Option<DatasetArg>,
    tree: Option<String>,
    size: Option<i64>,
    method: Option<String>,
    branches: Option<Vec<String>>,
    seed: Option<u64>,
    offset: Option<i64>,
    skip_mismatched: Option<bool>,
    by_file: Option<bool>,
    dry_run: Option<bool>,
}

/// SplitMix64 (Steele, Lea and Flood 2014): a fixed generator, so a seed gives
/// the same sample in every version of quarry.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), without modulo bias (rejection sampling).
    fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next();
            if x < zone {
                return x % n;
            }
        }
    }
}

/// `size` distinct entries of `0..entries`, ascending (Floyd's algorithm: one
/// draw per entry chosen, whatever the tree's size).
pub fn random_entries(entries: u64, size: u64, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64(seed);
    let size = size.min(entries);
    let mut chosen = std::collections::BTreeSet::new();
    for j in entries - size..entries {
        let t = rng.below(j + 1);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    chosen.into_iter().collect()
}

fn sample_tree(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: SampleArgs = parse_args("sample_tree", args)?;
    let size = checked_count("size", args.size, SAMPLE_DEFAULT, SAMPLE_MAX)?;
    let method = args.method.as_deref().unwrap_or("first");
    if !["first", "random"].contains(&method) {
        return Err(ToolError::invalid_arguments(
            "sample_tree",
            "method must be 'first' or 'random'",
        ));
    }
    let tool = "sample_tree";
    let (t, dry_run, by_file) = open_named!(ctx, job, tool, args)?;
    let columns = t.columns();
    let mut named = columns_of(&t, &columns[0], args.branches.as_deref())?;
    let branches_total = named.len();
    let branches_cut = args.branches.is_none() && branches_total > SAMPLE_DEFAULT_BRANCHES;
    named.truncate(if branches_cut {
        SAMPLE_DEFAULT_BRANCHES
    } else {
        branches_total
    });
    if dry_run {
        let (stored, _) = split_named(&named);
        return dry_run_answer(ctx, tool, &t, &columns, (&stored, None), by_file);
    }
    let members = t.members(&columns);
    let seed = args.seed.unwrap_or(0);
    let entries = t.entries();
    let sample: Vec<u64> = match method {
        "random" => random_entries(entries, size, seed),
        _ => (0..size.min(entries)).collect(),
    };
    // `offset` skips the sample's first entries (a cut answer's next_offset).
    let offset = checked_offset(tool, "offset", args.offset)?;
    let page = &sample[offset.min(sample.len())..];
    let (names, rows) = read_page(&t, &members, &named, page, job)?;
    let column_names = names_of(&named);
    let budget = ctx.budget(tool);
    fit_rows(&budget, page.len(), |cap| {
        let mut answer = rows_answer(&names, &rows, false, "records", cap)?;
        answer.output.data["branches"] = json!(column_names);
        if by_file {
            answer.output.data["by_file"] = per_file(&t, |k| {
                let m = &members[k];
                let mine = m.first_entry..m.first_entry + m.tree.entries;
                json!({
                    "entries_total": m.tree.entries,
                    "entries_sampled": sample.iter().filter(|e| mine.contains(e)).count(),
                })
            });
            fit_by_file(ctx, tool, &mut answer.output);
        }
        let mut out = with_files(answer.output, &t)
            .meta("entries_scanned", page.len())
            .meta("entries_returned", answer.entries_returned)
            .meta("truncated", answer.cut_short || branches_cut)
            .meta("method", method);
        if branches_cut {
            out = out.meta("branches_total", branches_total).suggest(format!(
                "Showing the first {SAMPLE_DEFAULT_BRANCHES} of {branches_total} branches: name the ones \
wanted with branches=[...] (list_branches(path, tree, pattern=...) finds them)"
            ));
        }
        if method == "random" {
            out = out.meta("seed", seed).suggest(format!(
                "Entries drawn with SplitMix64 seeded {seed} (Floyd's sampling): the same seed gives the same entries"
            ));
        }
        if answer.cut_short {
            let next = offset + answer.entries_returned as usize;
            out = out.meta("next_offset", next).suggest(format!(
                "The sample was cut to fit max_result_bytes: continue with offset={next}, or ask for fewer branches"
            ));
        }
        Ok(out.suggest(
            "Read chosen branches with read_branches(path, tree, branches=[...], selection=...)",
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::{Cell, random_entries, shape_within};
    use serde_json::json;

    #[test]
    fn integers_stay_exact_and_non_finite_numbers_become_null() {
        let big = (1u64 << 53) + 1;
        let rows = vec![vec![
            Cell::UInt(big),
            Cell::UInt(u64::MAX),
            Cell::Int(i64::MIN),
            Cell::List(vec![
                Cell::Float(f64::NAN),
                Cell::Float(1.5),
                Cell::Float(f64::INFINITY),
            ]),
        ]];
        let names: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let (shaped, _) = shape_within(&names, &rows, false, usize::MAX).unwrap();
        let text = serde_json::to_string(&shaped.records[0]).unwrap();
        assert!(
            text.contains("9007199254740993") && text.contains("18446744073709551615"),
            "{text}"
        );
        assert_eq!(shaped.records[0]["c"], json!(i64::MIN));
        assert_eq!(shaped.records[0]["d"], json!([null, 1.5, null]));
        assert_eq!(shaped.non_finite, 2);
        // Flattened: one record per element, the other values repeated.
        let (flat, _) = shape_within(&names, &rows, true, usize::MAX).unwrap();
        assert_eq!(flat.records.len(), 3);
        assert_eq!(flat.records[2]["a"], json!(big));
    }

    #[test]
    fn a_capped_page_ends_at_a_whole_entry() {
        // `{"a":1}` and a newline: 8 bytes a record.
        let names = vec!["a".to_string()];
        let rows: Vec<Vec<Cell>> = (0..3).map(|_| vec![Cell::Int(1)]).collect();
        let (shaped, kept) = shape_within(&names, &rows, false, 20).unwrap();
        assert_eq!((shaped.records.len(), kept), (2, 2));
        let (_, kept) = shape_within(&names, &rows, false, 24).unwrap();
        assert_eq!(kept, 3);
        // Flattened, an entry of three elements is three records, kept or cut
        // together: the first entry (27 bytes) fits in 40, not the second too.
        let lists: Vec<Vec<Cell>> = (0..2)
            .map(|_| {
                vec![Cell::List(vec![
                    Cell::Int(1),
                    Cell::Int(2),
                    Cell::Float(f64::NAN),
                ])]
            })
            .collect();
        let (flat, kept) = shape_within(&names, &lists, true, 40).unwrap();
        assert_eq!((flat.records.len(), kept, flat.non_finite), (3, 1, 1));
        // The bound never undercounts: the longest numbers, escaped strings.
        let wide = vec![vec![Cell::List(vec![
            Cell::Float(-2.2250738585072014e-308),
            Cell::Int(i64::MIN),
            Cell::UInt(u64::MAX),
            Cell::Str("\u{1}\"\\".into()),
        ])]];
        let (shaped, _) = shape_within(&["k\"".to_string()], &wide, false, usize::MAX).unwrap();
        let text = serde_json::to_string(&shaped.records[0]).unwrap();
        assert!(
            super::record_bound(&shaped.records[0]) >= text.len(),
            "{text}"
        );
    }

    #[test]
    fn seeded_samples_are_fixed_distinct_and_in_range() {
        // Pinned: the entries seed 42 gives, in every version (also computed by
        // an independent Python transcription of SplitMix64 + Floyd).
        assert_eq!(random_entries(2421, 5, 42), [321, 804, 1276, 1795, 2049]);
        let s = random_entries(1000, 100, 7);
        assert_eq!(s.len(), 100);
        assert!(s.windows(2).all(|w| w[0] < w[1]) && s.iter().all(|&e| e < 1000));
        assert_eq!(random_entries(10, 50, 1), (0..10).collect::<Vec<_>>());
        assert_ne!(
            random_entries(1_000_000, 3, 1),
            random_entries(1_000_000, 3, 2)
        );
    }
}
