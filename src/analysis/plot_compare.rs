//! The picture of compared histograms: their normalised shapes overlaid as
//! steps of distinct colours with a legend, and below them each one's ratio
//! to the first; and the same as a few lines of text.

use plotters::prelude::*;

use super::plot::{HEIGHT, Labels, WIDTH, draw_err, encode, grouped, number, tick_step};

/// Histograms with the same bins, as shapes (each summing to 1).
pub struct ComparePicture<'a> {
    pub title: &'a str,
    pub x_title: &'a str,
    pub edges: &'a [f64],
    pub labels: &'a [&'a str],
    pub shapes: &'a [&'a [f64]],
    /// Each shape's errors, for the ratios' error bars.
    pub errors: &'a [&'a [f64]],
}

const COLOURS: [RGBColor; 8] = [
    RGBColor(20, 20, 20),
    RGBColor(200, 40, 40),
    RGBColor(40, 90, 200),
    RGBColor(30, 150, 60),
    RGBColor(220, 140, 20),
    RGBColor(140, 60, 170),
    RGBColor(20, 160, 170),
    RGBColor(120, 120, 120),
];

/// Left, top, right and bottom of the shapes' panel and of the ratio panel.
const SHAPES: (i32, i32, i32, i32) = (72, 40, WIDTH as i32 - 24, 270);
const RATIOS: (i32, i32, i32, i32) = (72, 285, WIDTH as i32 - 24, HEIGHT as i32 - 48);

/// The PNG: shapes above, ratios to the first (from 0 to 2) below.
pub fn png_compare(p: &ComparePicture<'_>) -> Result<Vec<u8>, String> {
    let mut rgb = vec![255u8; (WIDTH * HEIGHT * 3) as usize];
    let (lo, hi) = (p.edges[0], p.edges[p.edges.len() - 1]);
    let tallest = p
        .shapes
        .iter()
        .flat_map(|s| s.iter())
        .copied()
        .fold(0.0, f64::max);
    let top = tick_step(tallest.max(1e-12) / 4.0) * 4.0;
    let (x0, y0, x1, y1) = SHAPES;
    let px = |x: f64| x0 + ((x - lo) / (hi - lo) * f64::from(x1 - x0)) as i32;
    let py = |v: f64| y1 - (v / top * f64::from(y1 - y0)) as i32;
    let (_, r0, _, r1) = RATIOS;
    let pr = |q: f64| r1 - (q.clamp(0.0, 2.0) / 2.0 * f64::from(r1 - r0)) as i32;
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        for panel in [SHAPES, RATIOS] {
            let (a, b, c, d) = panel;
            root.draw(&PathElement::new([(a, b), (a, d), (c, d)], BLACK))
                .map_err(draw_err)?;
        }
        root.draw(&PathElement::new(
            [(x0, pr(1.0)), (x1, pr(1.0))],
            RGBColor(170, 170, 170),
        ))
        .map_err(draw_err)?;
        for (k, shape) in p.shapes.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            let y = legend_y(k) - 4;
            root.draw(&PathElement::new(
                [(x1 - 18, y), (x1 - 4, y)],
                colour.stroke_width(2),
            ))
            .map_err(draw_err)?;
            let mut steps = Vec::with_capacity(2 * shape.len());
            for (i, &v) in shape.iter().enumerate() {
                steps.push((px(p.edges[i]), py(v)));
                steps.push((px(p.edges[i + 1]), py(v)));
            }
            root.draw(&PathElement::new(steps, colour.stroke_width(2)))
                .map_err(draw_err)?;
            if k == 0 {
                continue;
            }
            for (i, (&v, &r)) in shape.iter().zip(p.shapes[0]).enumerate() {
                if r > 0.0 {
                    let x = (px(p.edges[i]) + px(p.edges[i + 1])) / 2;
                    let q = v / r;
                    let e = ratio_error((v, p.errors[k][i]), (r, p.errors[0][i]));
                    root.draw(&PathElement::new([(x, pr(q - e)), (x, pr(q + e))], colour))
                        .map_err(draw_err)?;
                    root.draw(&Circle::new((x, pr(q)), 2, colour.filled()))
                        .map_err(draw_err)?;
                }
            }
        }
    }
    let mut text = Labels::new(&mut rgb);
    for k in 0..=4 {
        let f = f64::from(k) / 4.0;
        let x = x0 + ((x1 - x0) as f64 * f) as i32;
        text.centred(&number(lo + (hi - lo) * f), x, r1 + 16, 12.0);
        let y = y1 - ((y1 - y0) as f64 * f) as i32;
        text.right(&number(top * f), x0 - 8, y + 4, 12.0);
    }
    for q in [0.0, 1.0, 2.0] {
        text.right(&number(q), x0 - 8, pr(q) + 4, 12.0);
    }
    text.centred(p.title, (x0 + x1) / 2, 22, 15.0);
    text.centred(p.x_title, (x0 + x1) / 2, r1 + 36, 13.0);
    text.left("fraction", 8, y0 - 12, 12.0);
    text.left("ratio", 8, r0 + 4, 12.0);
    for (k, label) in p.labels.iter().enumerate() {
        text.right(label, x1 - 22, legend_y(k), 12.0);
    }
    encode(&rgb)
}

/// The error of a / b from their errors (relative errors in quadrature).
pub fn ratio_error((a, ea): (f64, f64), (b, eb): (f64, f64)) -> f64 {
    if a == 0.0 {
        return ea / b;
    }
    (a / b).abs() * ((ea / a).powi(2) + (eb / b).powi(2)).sqrt()
}

/// The baseline of the legend's `k`th line, top right of the shapes.
fn legend_y(k: usize) -> i32 {
    SHAPES.1 + 14 + 16 * k as i32
}

/// The text: per histogram a bar line of its shape, then each ratio to the
/// first per column of bins.
pub fn text_compare(p: &ComparePicture<'_>) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let grouped_shapes: Vec<Vec<(f64, f64, f64)>> =
        p.shapes.iter().map(|s| grouped(p.edges, s)).collect();
    let top = grouped_shapes
        .iter()
        .flatten()
        .map(|g| g.2)
        .fold(0.0, f64::max);
    let width = p
        .labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    let mut lines = Vec::new();
    for (label, groups) in p.labels.iter().zip(&grouped_shapes) {
        let bars: String = groups
            .iter()
            .map(|g| {
                if g.2 <= 0.0 || top <= 0.0 {
                    ' '
                } else {
                    BARS[((g.2 / top * 8.0).ceil() as usize).clamp(1, 8) - 1]
                }
            })
            .collect();
        lines.push(format!("{label:>width$} |{bars}|"));
    }
    for (label, groups) in p.labels.iter().zip(&grouped_shapes).skip(1) {
        let ratios: Vec<String> = groups
            .iter()
            .zip(&grouped_shapes[0])
            .map(|(g, r)| {
                if r.2 > 0.0 {
                    format!("{:.2}", g.2 / r.2)
                } else {
                    "-".into()
                }
            })
            .collect();
        lines.push(format!("{label} / {}: {}", p.labels[0], ratios.join(" ")));
    }
    lines.push(format!(
        "{} ... {}",
        number(p.edges[0]),
        number(p.edges[p.edges.len() - 1])
    ));
    lines.join("\n")
}
