//! A tool result for people: records (and objects by name) as aligned
//! tables, plain fields as `key: value` lines, a histogram as a bar chart,
//! search hits as `path:line: text`, anything else as indented JSON.
//! Programs use `quarry call --json`, which prints the result as it is.

use serde_json::{Map, Value};

/// The widest bar of a histogram, in characters.
const BAR_WIDTH: usize = 50;
/// The widest table cell before it is cut with '…' (paths fit; long texts do not).
const CELL_WIDTH: usize = 72;
/// Columns shown first when a table has them: what names the row.
const LEADING_COLUMNS: [&str; 5] = ["path", "document", "name", "file", "tree"];

pub fn readable(result: &Value) -> String {
    let data = &result["data"];
    let mut out = histogram(data)
        .or_else(|| search_hits(data))
        .or_else(|| records(data))
        .or_else(|| keyed_records(data))
        .or_else(|| fields(data))
        .unwrap_or_else(|| pretty(data));
    for hint in result["suggestions"].as_array().into_iter().flatten() {
        if let Some(h) = hint.as_str() {
            out += &format!("hint: {h}\n");
        }
    }
    out
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

/// A 1-D histogram: one bar per bin `[lo, hi)`, with under- and overflow.
fn histogram(data: &Value) -> Option<String> {
    let counts: Vec<f64> = data["bin_counts"]
        .as_array()?
        .iter()
        .map(Value::as_f64)
        .collect::<Option<_>>()?;
    let edges: Vec<f64> = data["bin_edges"]
        .as_array()?
        .iter()
        .map(Value::as_f64)
        .collect::<Option<_>>()?;
    if edges.len() != counts.len() + 1 {
        return None;
    }
    let mut out = scalar_lines(data, &["bin_counts", "bin_edges", "bin_errors"]);
    let max = counts.iter().cloned().fold(0.0_f64, f64::max);
    let label = |i: usize| format!("[{}, {})", number(edges[i]), number(edges[i + 1]));
    let width = (0..counts.len()).map(|i| label(i).len()).max().unwrap_or(0);
    for (i, &c) in counts.iter().enumerate() {
        let bar = if max > 0.0 {
            (c / max * BAR_WIDTH as f64).round() as usize
        } else {
            0
        };
        out += &format!(
            "{:<width$}  {:>10}  {}\n",
            label(i),
            number(c),
            "█".repeat(bar)
        );
    }
    Some(out)
}

/// Search results: `document:line: text` per match.
fn search_hits(data: &Value) -> Option<String> {
    let matches = data["matches"].as_array()?;
    let mut out = scalar_lines(data, &["matches"]);
    for m in matches {
        let place = ["document", "path", "file"]
            .iter()
            .find_map(|k| m[*k].as_str())?;
        let line = m["line"].as_u64()?;
        let text = m["text"].as_str()?;
        out += &format!("{place}:{line}: {text}\n");
    }
    Some(out)
}

/// The first list of objects in the result, as a table under the other
/// fields. Rows that hold lists of objects themselves (a file's classes) are
/// shown one by one, each list as a table under its row.
fn records(data: &Value) -> Option<String> {
    let object = data.as_object()?;
    let (key, rows) = object.iter().find_map(|(k, v)| {
        let rows = v.as_array()?;
        is_records(v).then_some((k.as_str(), rows))
    })?;
    let body = match nested_records(rows) {
        Some(inner) => grouped(rows, inner),
        None => table(rows),
    };
    Some(under_fields(data, key, &body))
}

/// `body`, the rendering of field `key`, under the result's other fields.
fn under_fields(data: &Value, key: &str, body: &str) -> String {
    format!("{}{key}:\n{body}", scalar_lines(data, &[key]))
}

/// The first object of objects in the result (`get_branch_stats`' statistics
/// by branch) as a table with a row per key, named in its first column; an
/// object within a row (the quantiles) gives a column per field.
fn keyed_records(data: &Value) -> Option<String> {
    let object = data.as_object()?;
    let (key, by_name) = object.iter().find_map(|(k, v)| {
        let by_name = v.as_object()?;
        (!by_name.is_empty() && by_name.values().all(Value::is_object)).then_some((k, by_name))
    })?;
    let rows: Vec<Value> = by_name
        .iter()
        .map(|(name, fields)| {
            let mut row = Map::new();
            row.insert("name".into(), Value::String(name.clone()));
            for (field, value) in fields.as_object().into_iter().flatten() {
                match value.as_object() {
                    Some(inner) => row.extend(
                        inner
                            .iter()
                            .map(|(k, v)| (format!("{field} {k}"), v.clone())),
                    ),
                    None => {
                        row.insert(field.clone(), value.clone());
                    }
                }
            }
            Value::Object(row)
        })
        .collect();
    Some(under_fields(data, key, &table(&rows)))
}

/// An object with no object inside it (`apply_selection`'s counts, a
/// dataset's statistics) as `key: value` lines.
fn fields(data: &Value) -> Option<String> {
    let object = data.as_object()?;
    let nested = |v: &Value| match v {
        Value::Object(_) => true,
        Value::Array(items) => items.iter().any(|i| i.is_object() || i.is_array()),
        _ => false,
    };
    (!object.is_empty() && !object.values().any(nested)).then(|| scalar_lines(data, &[]))
}

/// Whether `v` is a non-empty list of objects.
fn is_records(v: &Value) -> bool {
    v.as_array()
        .is_some_and(|rows| !rows.is_empty() && rows.iter().all(Value::is_object))
}

/// The first field of the rows that holds a list of objects in some row.
fn nested_records(rows: &[Value]) -> Option<&str> {
    rows.iter()
        .filter_map(Value::as_object)
        .flatten()
        .find(|(_, v)| is_records(v))
        .map(|(k, _)| k.as_str())
}

/// Each row as a line of its other fields (what names it first), then its
/// `inner` list as a table indented under it.
fn grouped(rows: &[Value], inner: &str) -> String {
    let mut out = String::new();
    for row in rows.iter().filter_map(Value::as_object) {
        let (naming, rest): (Vec<_>, Vec<_>) = row
            .iter()
            .filter(|(k, _)| k.as_str() != inner)
            .partition(|(k, _)| LEADING_COLUMNS.contains(&k.as_str()));
        let head: Vec<String> = naming
            .iter()
            .map(|(_, v)| cell(v))
            .chain(rest.iter().map(|(k, v)| format!("{k}: {}", cell(v))))
            .collect();
        out += &format!("  {}\n", head.join("  "));
        match row.get(inner).and_then(Value::as_array) {
            Some(list) if !list.is_empty() => {
                for line in table(list).lines() {
                    out += &format!("  {line}\n");
                }
            }
            _ => out += &format!("    ({inner}: none)\n"),
        }
    }
    out
}

/// `key: value` lines for the scalar fields of an object (nested ones compact).
fn scalar_lines(data: &Value, skip: &[&str]) -> String {
    let Some(object) = data.as_object() else {
        return String::new();
    };
    object
        .iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}: {}\n", cell(v)))
        .collect()
}

/// Rows as aligned columns, in the order the first row gives its fields.
fn table(rows: &[Value]) -> String {
    let mut columns: Vec<&str> = LEADING_COLUMNS
        .into_iter()
        .filter(|c| rows.iter().any(|r| r.get(*c).is_some()))
        .collect();
    for row in rows {
        for key in row.as_object().map(Map::keys).into_iter().flatten() {
            if !columns.contains(&key.as_str()) {
                columns.push(key);
            }
        }
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| columns.iter().map(|c| cell(&r[*c])).collect())
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([c.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: Vec<&str>| -> String {
        let padded: Vec<String> = values
            .iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v}{}", " ".repeat(w - v.chars().count())))
            .collect();
        format!("  {}\n", padded.join("  ").trim_end())
    };
    let mut out = line(columns.clone());
    for row in &cells {
        out += &line(row.iter().map(String::as_str).collect());
    }
    out
}

/// A value in one cell: strings bare, numbers as short as they read, the rest as
/// compact JSON; long cells cut with '…'.
fn cell(v: &Value) -> String {
    let text = match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), number),
        other => other.to_string(),
    };
    if text.chars().count() > CELL_WIDTH {
        let cut: String = text.chars().take(CELL_WIDTH - 1).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// A number as people write it: integers without a fraction, others to 6
/// significant digits.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.6}");
        let trimmed = s.trim_end_matches('0').trim_end_matches('.');
        if trimmed.is_empty() || trimmed == "-" {
            format!("{x:e}")
        } else {
            trimmed.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_histogram_is_a_bar_chart() {
        let out = readable(&json!({"data": {
            "name": "one", "bin_counts": [1.0, 4.0, 2.0], "bin_edges": [0.0, 0.5, 1.0, 1.5],
            "underflow": 0.0, "overflow": 3.0}}));
        assert!(out.contains("name: one"), "{out}");
        assert!(out.contains("overflow: 3"), "{out}");
        let bars: Vec<&str> = out.lines().filter(|l| l.starts_with('[')).collect();
        assert_eq!(bars.len(), 3, "{out}");
        assert!(bars[1].starts_with("[0.5, 1)"), "{out}");
        assert_eq!(bars[1].matches('█').count(), BAR_WIDTH);
        assert_eq!(bars[0].matches('█').count(), BAR_WIDTH / 4 + 1);
    }

    #[test]
    fn search_hits_read_like_grep() {
        let out = readable(&json!({"data": {"total_matches": 1, "matches": [
            {"document": "notes/a.md", "line": 3, "text": "dead time", "context_before": []}]}}));
        assert!(out.contains("notes/a.md:3: dead time"), "{out}");
        assert!(out.contains("total_matches: 1"), "{out}");
    }

    #[test]
    fn records_are_aligned_columns_and_hints_follow() {
        let out = readable(&json!({
            "data": {"total": 2, "files": [{"path": "a.root", "size": 10}, {"path": "bb.root", "size": 2.5}]},
            "suggestions": ["Use inspect_file()"]}));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "total: 2");
        assert_eq!(lines[1], "files:");
        assert_eq!(lines[2], "  path     size");
        assert_eq!(lines[3], "  a.root   10");
        assert_eq!(lines[4], "  bb.root  2.5");
        assert_eq!(lines[5], "hint: Use inspect_file()");
    }

    #[test]
    fn rows_holding_lists_are_shown_each_with_its_table() {
        let out = readable(&json!({"data": {"total_files": 2, "results": [
            {"filepath": "a.hpp", "success": true, "classes": [
                {"name": "Calibrator", "line": 12}, {"name": "Key", "line": 40}]},
            {"filepath": "b.hpp", "success": true, "classes": []}]}}));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "total_files: 2",
                "results:",
                "  filepath: a.hpp  success: true",
                "    name        line",
                "    Calibrator  12",
                "    Key         40",
                "  filepath: b.hpp  success: true",
                "    (classes: none)",
            ],
            "{out}"
        );
    }

    #[test]
    fn objects_by_name_are_a_table_with_a_row_per_name() {
        let out = readable(&json!({"data": {"statistics": {
            "MET_pt": {"count": 140, "mean": 39.5, "quantiles": {"0.5": 32.0, "0.9": 63.25}},
            "nJet": {"count": 200, "mean": 2.0, "quantiles": {"0.5": 2.0, "0.9": 4.0}}}}}));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "statistics:",
                "  name    count  mean  quantiles 0.5  quantiles 0.9",
                "  MET_pt  140    39.5  32             63.25",
                "  nJet    200    2     2              4",
            ],
            "{out}"
        );
    }

    #[test]
    fn flat_results_are_key_value_lines() {
        let out = readable(&json!({"data": {
            "entries_selected": 1, "efficiency": 0.005, "shape": [64], "slice": null}}));
        assert_eq!(
            out, "efficiency: 0.005\nentries_selected: 1\nshape: [64]\nslice: \n",
            "{out}"
        );
    }

    #[test]
    fn anything_else_is_indented_json() {
        let out = readable(&json!({"data": {"nested": {"a": 1}}}));
        assert_eq!(out, "{\n  \"nested\": {\n    \"a\": 1\n  }\n}\n");
    }
}
