//! The picture of a fit (fit_histogram's `plot: true`): the histogram as
//! points with √N error bars, the fitted model and its components as step
//! lines, and a panel of the pulls underneath; plus its text rendering.
//! A child of `plot`, whose canvas, labels and number format it shares.

use super::*;

pub struct FitPicture<'a> {
    pub title: &'a str,
    pub x_title: &'a str,
    pub edges: &'a [f64],
    pub counts: &'a [f64],
    pub fitted: &'a [f64],
    pub components: &'a [(&'a str, &'a [f64])],
    pub pulls: &'a [f64],
}

/// Pulls are drawn within ±this.
const PULL_RANGE: f64 = 4.0;
const COLOURS: [RGBColor; 4] = [
    RGBColor(220, 120, 30),
    RGBColor(40, 150, 70),
    RGBColor(150, 60, 160),
    RGBColor(120, 120, 120),
];

pub fn png_fit(p: &FitPicture<'_>) -> Result<Vec<u8>, String> {
    let mut rgb = vec![255u8; (WIDTH * HEIGHT * 3) as usize];
    let (x0, y0, x1, y1) = area();
    // The main panel above, the pulls below.
    let split = y0 + (y1 - y0) * 7 / 10;
    let (pull_top, main_bottom) = (split + 8, split - 8);
    let (lo, hi) = (p.edges[0], p.edges[p.edges.len() - 1]);
    let highest = p
        .counts
        .iter()
        .map(|c| c + c.max(0.0).sqrt())
        .chain(p.fitted.iter().copied())
        .fold(0.0, f64::max)
        .max(1.0);
    let step = tick_step(highest / 4.0);
    let top = step * 4.0;
    let px = |x: f64| x0 + ((x - lo) / (hi - lo) * f64::from(x1 - x0)) as i32;
    let py = |c: f64| main_bottom - (c.clamp(0.0, top) / top * f64::from(main_bottom - y0)) as i32;
    let pull_mid = (pull_top + y1) / 2;
    let pp = |v: f64| {
        pull_mid - (v.clamp(-PULL_RANGE, PULL_RANGE) / PULL_RANGE * f64::from(y1 - pull_mid)) as i32
    };
    let steps = |values: &[f64]| -> Vec<(i32, i32)> {
        values
            .iter()
            .enumerate()
            .flat_map(|(i, &v)| [(px(p.edges[i]), py(v)), (px(p.edges[i + 1]), py(v))])
            .collect()
    };
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        for (k, (_, values)) in p.components.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            root.draw(&PathElement::new(steps(values), colour.stroke_width(1)))
                .map_err(draw_err)?;
        }
        let fit = RGBColor(200, 30, 30);
        root.draw(&PathElement::new(steps(p.fitted), fit.stroke_width(2)))
            .map_err(draw_err)?;
        for (i, &c) in p.counts.iter().enumerate() {
            let x = px(0.5 * (p.edges[i] + p.edges[i + 1]));
            let e = c.max(0.0).sqrt();
            root.draw(&PathElement::new([(x, py(c - e)), (x, py(c + e))], BLACK))
                .map_err(draw_err)?;
            root.draw(&Circle::new((x, py(c)), 2, BLACK.filled()))
                .map_err(draw_err)?;
        }
        let pull_fill = RGBColor(70, 110, 180).filled();
        for (i, &v) in p.pulls.iter().enumerate() {
            let rect = [(px(p.edges[i]), pp(v)), (px(p.edges[i + 1]), pull_mid)];
            root.draw(&Rectangle::new(rect, pull_fill))
                .map_err(draw_err)?;
        }
        for (a, b) in [
            ((x0, y0), (x0, main_bottom)),
            ((x0, main_bottom), (x1, main_bottom)),
        ] {
            root.draw(&PathElement::new([a, b], BLACK))
                .map_err(draw_err)?;
        }
        for (a, b) in [
            ((x0, pull_top), (x0, y1)),
            ((x0, y1), (x1, y1)),
            ((x0, pull_mid), (x1, pull_mid)),
        ] {
            root.draw(&PathElement::new([a, b], BLACK))
                .map_err(draw_err)?;
        }
    }
    let mut text = Labels::new(&mut rgb);
    for k in 0..=4 {
        let f = f64::from(k) / 4.0;
        let x = x0 + ((x1 - x0) as f64 * f) as i32;
        text.centred(&number(lo + (hi - lo) * f), x, y1 + 18, 12.0);
        let y = main_bottom - ((main_bottom - y0) as f64 * f) as i32;
        text.right(&number(top * f), x0 - 8, y + 4, 12.0);
    }
    for v in [-PULL_RANGE / 2.0, 0.0, PULL_RANGE / 2.0] {
        text.right(&number(v), x0 - 8, pp(v) + 4, 11.0);
    }
    text.left("pull", 8, pull_top + 4, 11.0);
    let legend: Vec<String> = std::iter::once("fit (red)".to_string())
        .chain(p.components.iter().map(|(l, _)| l.to_string()))
        .collect();
    text.right(&legend.join(", "), x1, y0 - 8, 12.0);
    text.centred(p.title, (x0 + x1) / 2, 22, 15.0);
    text.centred(p.x_title, (x0 + x1) / 2, y1 + 42, 13.0);
    text.left("entries", 8, y0 - 12, 12.0);
    encode(&rgb)
}

/// The fit in text: the histogram's bars, then the pulls as signs (`+`/`-`
/// beyond 2σ, `.` within).
pub fn text_fit(p: &FitPicture<'_>) -> String {
    let bars = text_1d(&Hist1Picture {
        title: p.title,
        x_title: p.x_title,
        y_title: "entries",
        edges: p.edges,
        counts: p.counts,
        underflow: 0.0,
        overflow: 0.0,
    });
    // One mark per column of the bars above (bins grouped as they are): the
    // group's pull of largest size.
    let group = p.pulls.len().div_ceil(TEXT_COLUMNS).max(1);
    let marks: String = p
        .pulls
        .chunks(group)
        .map(|g| {
            g.iter()
                .copied()
                .fold(0.0f64, |a, v| if v.abs() > a.abs() { v } else { a })
        })
        .map(|v| {
            if v > 2.0 {
                '+'
            } else if v < -2.0 {
                '-'
            } else {
                '.'
            }
        })
        .collect();
    let worst = p.pulls.iter().map(|v| v.abs()).fold(0.0, f64::max);
    format!(
        "{bars}\npulls per bin (+/- beyond 2 sigma): {marks}\nlargest |pull| {}",
        number(worst)
    )
}
