//! Histograms held to the result budget (read_histogram, compute_histogram,
//! compute_histogram_2d). A 1-D histogram is cut at a bin: `offset` names the
//! first bin shown, and its edges run from that bin's low edge. A 2-D one is
//! shown as a window of whole rows of y from `y_offset` (the columns from
//! `x_offset`); when not even one row fits, as a stretch of one row, going on
//! along x. `metadata.next_offset`, or `next_x_offset` and `next_y_offset`,
//! say where the next call starts.

use serde_json::{Value, json};

use crate::mcp::budget::{Budget, Cut, mark_offset};
use crate::mcp::response::ToolOutput;

/// The elements of `values` from `offset` on, as JSON.
pub(super) fn from<T: serde::Serialize>(values: &[T], offset: usize) -> Value {
    json!(&values[offset.min(values.len())..])
}

/// The rows of a [y][x] grid from `y_offset`, each from `x_offset`.
pub(super) fn window<T: serde::Serialize + Clone>(
    grid: &[Vec<T>],
    x_offset: usize,
    y_offset: usize,
) -> Value {
    let rows: Vec<&[T]> = grid
        .iter()
        .skip(y_offset)
        .map(|row| &row[x_offset.min(row.len())..])
        .collect();
    json!(rows)
}

/// Cuts a 1-D histogram whose `edges` and `per_bin` arrays start at bin
/// `offset` (of `bins` in all).
pub(super) fn page_1d(
    budget: &Budget,
    out: &mut ToolOutput,
    edges: &str,
    per_bin: &[&str],
    offset: usize,
    bins: usize,
) -> Cut {
    let mut arrays = vec![(edges, 1)];
    arrays.extend(per_bin.iter().map(|p| (*p, 0)));
    let tool = budget.operation;
    budget.cut_together(out, &arrays, |o, cut| {
        let cut = Cut {
            total: bins.saturating_sub(offset).max(cut.kept),
            ..cut
        };
        mark_offset(o, cut, offset, tool, "bins");
    })
}

/// Where a 2-D window starts, and the histogram's size.
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    pub x_offset: usize,
    pub y_offset: usize,
    pub x_bins: usize,
    pub y_bins: usize,
}

/// Cuts a 2-D histogram whose `x_edges` and `y_edges` and [y][x] `grids`
/// hold the window from (x_offset, y_offset) on. Rows are whole from the
/// window's first column, so a window that starts inside a row (x_offset > 0)
/// holds the rest of that row alone.
pub(super) fn page_2d(budget: &Budget, out: &mut ToolOutput, grids: &[&str], at: Window) {
    if at.x_offset >= at.x_bins || at.y_offset >= at.y_bins {
        return; // past the last cell: nothing to show, nothing after
    }
    if at.x_offset > 0 {
        keep_first_row(out, grids);
    }
    let mut rows: Vec<(&str, usize)> = vec![("/y_edges", 1)];
    rows.extend(grids.iter().map(|g| (*g, 0)));
    let mut trial = ToolOutput {
        data: out.data.clone(),
        metadata: out.metadata.clone(),
        suggestions: out.suggestions.clone(),
        images: Vec::new(),
    };
    let by_rows = budget.cut_together(&mut trial, &rows, |o, cut| {
        let next_y = at.y_offset + cut.kept;
        mark_2d(
            o,
            budget.operation,
            cut.shortened,
            (0, next_y),
            next_y < at.y_bins,
        );
    });
    if by_rows.kept > 0 {
        trial.images = std::mem::take(&mut out.images);
        *out = trial;
        return;
    }
    // Not even one row fits: a stretch of the first row, along x.
    keep_first_row(out, grids);
    let row_cells: Vec<String> = grids.iter().map(|g| format!("{g}/0")).collect();
    let mut columns: Vec<(&str, usize)> = vec![("/x_edges", 1)];
    columns.extend(row_cells.iter().map(|g| (g.as_str(), 0)));
    budget.cut_together(out, &columns, |o, cut| {
        let next_x = at.x_offset + cut.kept;
        let next = if next_x < at.x_bins {
            (next_x, at.y_offset)
        } else {
            (0, at.y_offset + 1)
        };
        let more = next_x < at.x_bins || at.y_offset + 1 < at.y_bins;
        mark_2d(o, budget.operation, cut.shortened, next, more);
    });
}

/// Leaves the window's first row only (and its two y edges).
fn keep_first_row(out: &mut ToolOutput, grids: &[&str]) {
    for pointer in grids {
        if let Some(Value::Array(rows)) = out.data.pointer_mut(pointer) {
            rows.truncate(1);
        }
    }
    if let Some(Value::Array(edges)) = out.data.pointer_mut("/y_edges") {
        edges.truncate(2);
    }
}

/// The marks of a 2-D window: `truncated`, and where the next one starts.
fn mark_2d(o: &mut ToolOutput, tool: &str, shortened: bool, next: (usize, usize), more: bool) {
    if !more && !shortened {
        return;
    }
    o.metadata.insert("truncated".into(), true.into());
    if more {
        let (x, y) = next;
        o.metadata.insert("next_x_offset".into(), x.into());
        o.metadata.insert("next_y_offset".into(), y.into());
        o.suggestions.push(format!(
            "Cut to fit max_result_bytes: call {tool} again with the same arguments, x_offset={x} and y_offset={y} for the next cells"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2-D answer of `nx` x `ny` cells of 5-digit counts.
    fn grid(nx: usize, ny: usize, at: Window) -> ToolOutput {
        let x_edges: Vec<f64> = (0..=nx).map(|i| i as f64 * 0.1).collect();
        let y_edges: Vec<f64> = (0..=ny).map(|i| i as f64 * 0.1).collect();
        let counts: Vec<Vec<u64>> = (0..ny)
            .map(|y| (0..nx).map(|x| 10_000 + (x + y * nx) as u64).collect())
            .collect();
        ToolOutput::new(json!({
            "x_edges": from(&x_edges, at.x_offset),
            "y_edges": from(&y_edges, at.y_offset),
            "counts": window(&counts, at.x_offset, at.y_offset),
        }))
    }

    /// Every cell, in order, gathered by following the next offsets.
    fn walk(nx: usize, ny: usize, cap: usize) -> (Vec<u64>, usize) {
        let budget = Budget::new(cap, "compute_histogram_2d");
        let mut at = Window {
            x_offset: 0,
            y_offset: 0,
            x_bins: nx,
            y_bins: ny,
        };
        let (mut cells, mut calls) = (Vec::new(), 0);
        loop {
            let mut out = grid(nx, ny, at);
            page_2d(&budget, &mut out, &["/counts"], at);
            calls += 1;
            assert!(budget.fits(&out), "{}", budget.len(&out));
            for row in out.data["counts"].as_array().unwrap() {
                cells.extend(row.as_array().unwrap().iter().map(|c| c.as_u64().unwrap()));
            }
            match out.metadata.get("next_x_offset") {
                Some(x) => {
                    at.x_offset = x.as_u64().unwrap() as usize;
                    at.y_offset = out.metadata["next_y_offset"].as_u64().unwrap() as usize;
                }
                None => return (cells, calls),
            }
        }
    }

    #[test]
    fn windows_cover_every_cell_once_in_order() {
        // Narrow rows page by rows; wide ones by stretches of a row.
        for (nx, ny) in [(10, 300), (400, 3), (1, 1)] {
            let (cells, calls) = walk(nx, ny, 1500);
            let expected: Vec<u64> = (0..nx * ny).map(|i| 10_000 + i as u64).collect();
            assert_eq!(cells, expected, "{nx} x {ny}");
            assert!(calls > 1 || nx * ny == 1);
        }
    }

    #[test]
    fn one_dimensional_pages_keep_an_edge_more() {
        let edges: Vec<f64> = (0..=2000).map(|i| i as f64 * 0.5).collect();
        let counts: Vec<u64> = (0..2000).collect();
        let budget = Budget::new(2000, "compute_histogram");
        let (mut offset, mut seen) = (0, Vec::new());
        loop {
            let mut out = ToolOutput::new(json!({
                "bin_edges": from(&edges, offset), "bin_counts": from(&counts, offset),
            }));
            let cut = page_1d(
                &budget,
                &mut out,
                "/bin_edges",
                &["/bin_counts"],
                offset,
                2000,
            );
            assert!(budget.fits(&out));
            let shown = out.data["bin_edges"].as_array().unwrap();
            assert_eq!(shown.len(), cut.kept + 1);
            assert_eq!(shown[0], json!(edges[offset]));
            seen.extend(
                out.data["bin_counts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_u64().unwrap()),
            );
            match out.metadata.get("next_offset") {
                Some(n) => offset = n.as_u64().unwrap() as usize,
                None => break,
            }
        }
        assert_eq!(seen, counts);
    }
}
