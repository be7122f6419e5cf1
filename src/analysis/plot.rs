//! Pictures of filled histograms: a PNG for a person in a chat client, and a
//! few lines of text for a model (clients that forward only the JSON still
//! see the shape). plotters draws the bars and cells into an RGB buffer; the
//! labels are drawn by `ab_glyph` with an embedded DejaVu Sans, since
//! plotters' own text needs the system's font libraries and fonts, and quarry
//! reads nothing outside its roots.

use ab_glyph::{Font, FontRef, PxScale, ScaleFont, point};
use plotters::prelude::*;

pub mod fit;

/// DejaVu Sans (Bitstream Vera licence, assets/fonts/LICENSE-DejaVu.txt).
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

pub(super) const WIDTH: u32 = 640;
pub(super) const HEIGHT: u32 = 400;
/// The plotting area's margins: left (tick labels), right, top (title),
/// bottom (tick labels and the axis title).
const MARGIN: (i32, i32, i32, i32) = (72, 24, 40, 56);
/// Text lines columns at most (bins are summed in groups beyond that).
const TEXT_COLUMNS: usize = 48;

/// A 1-D histogram to draw: bins `[edges[i], edges[i + 1])`.
pub struct Hist1Picture<'a> {
    pub title: &'a str,
    pub x_title: &'a str,
    pub y_title: &'a str,
    pub edges: &'a [f64],
    pub counts: &'a [f64],
    pub underflow: f64,
    pub overflow: f64,
}

/// A 2-D histogram to draw: `counts[y][x]`.
pub struct Hist2Picture<'a> {
    pub title: &'a str,
    pub x_title: &'a str,
    pub y_title: &'a str,
    pub x_edges: &'a [f64],
    pub y_edges: &'a [f64],
    pub counts: &'a [Vec<f64>],
    pub outside: f64,
}

/// The plotting area, in pixels.
fn area() -> (i32, i32, i32, i32) {
    let (l, r, t, b) = MARGIN;
    (l, t, WIDTH as i32 - r, HEIGHT as i32 - b)
}

pub(super) fn draw_err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing the plot failed: {e:?}")
}

/// The PNG of a 1-D histogram: bars, axes with five labelled ticks each, the
/// axis titles, and under/overflow noted in the corner.
pub fn png_1d(p: &Hist1Picture<'_>) -> Result<Vec<u8>, String> {
    let mut rgb = vec![255u8; (WIDTH * HEIGHT * 3) as usize];
    let (x0, y0, x1, y1) = area();
    let (lo, hi) = (p.edges[0], p.edges[p.edges.len() - 1]);
    let step = tick_step(p.counts.iter().copied().fold(0.0, f64::max).max(1.0) / 4.0);
    let top = step * 4.0;
    let px = |x: f64| x0 + ((x - lo) / (hi - lo) * f64::from(x1 - x0)) as i32;
    let py = |c: f64| y1 - (c / top * f64::from(y1 - y0)) as i32;
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        let fill = RGBColor(70, 110, 180).filled();
        for (i, &c) in p.counts.iter().enumerate() {
            if c > 0.0 {
                let rect = [(px(p.edges[i]), py(c)), (px(p.edges[i + 1]), y1)];
                root.draw(&Rectangle::new(rect, fill)).map_err(draw_err)?;
            }
        }
        axes(&root)?;
    }
    let mut text = Labels::new(&mut rgb);
    ticks(&mut text, (lo, hi), (0.0, top));
    let note = format!(
        "underflow {}  overflow {}",
        number(p.underflow),
        number(p.overflow)
    );
    text.right(&note, x1, y0 - 8, 12.0);
    titles(&mut text, p.title, p.x_title, p.y_title);
    encode(&rgb)
}

/// The PNG of a 2-D histogram: cells shaded from white to dark blue by their
/// count, a colour scale beside it, and the pairs outside noted.
pub fn png_2d(p: &Hist2Picture<'_>) -> Result<Vec<u8>, String> {
    let mut rgb = vec![255u8; (WIDTH * HEIGHT * 3) as usize];
    let (x0, y0, x1, y1) = area();
    let x1 = x1 - 40; // room for the colour scale
    let (xlo, xhi) = (p.x_edges[0], p.x_edges[p.x_edges.len() - 1]);
    let (ylo, yhi) = (p.y_edges[0], p.y_edges[p.y_edges.len() - 1]);
    let top = p
        .counts
        .iter()
        .flatten()
        .copied()
        .fold(0.0, f64::max)
        .max(1.0);
    let px = |x: f64| x0 + ((x - xlo) / (xhi - xlo) * f64::from(x1 - x0)) as i32;
    let py = |y: f64| y1 - ((y - ylo) / (yhi - ylo) * f64::from(y1 - y0)) as i32;
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        for (j, row) in p.counts.iter().enumerate() {
            for (i, &c) in row.iter().enumerate() {
                if c > 0.0 {
                    let rect = [
                        (px(p.x_edges[i]), py(p.y_edges[j + 1])),
                        (px(p.x_edges[i + 1]), py(p.y_edges[j])),
                    ];
                    root.draw(&Rectangle::new(rect, shade(c / top).filled()))
                        .map_err(draw_err)?;
                }
            }
        }
        let (sx, steps) = (x1 + 16, 64);
        for k in 0..steps {
            let (a, b) = (y1 - (y1 - y0) * k / steps, y1 - (y1 - y0) * (k + 1) / steps);
            let colour = shade((f64::from(k) + 0.5) / f64::from(steps));
            root.draw(&Rectangle::new([(sx, b), (sx + 12, a)], colour.filled()))
                .map_err(draw_err)?;
        }
        let frame = [(x0, y0), (x0, y1), (x1, y1)];
        root.draw(&PathElement::new(frame, BLACK))
            .map_err(draw_err)?;
    }
    let mut text = Labels::new(&mut rgb);
    for k in 0..=4 {
        let f = f64::from(k) / 4.0;
        let x = x0 + ((x1 - x0) as f64 * f) as i32;
        text.centred(&number(xlo + (xhi - xlo) * f), x, y1 + 18, 12.0);
        let y = y1 - ((y1 - y0) as f64 * f) as i32;
        text.right(&number(ylo + (yhi - ylo) * f), x0 - 6, y + 4, 12.0);
    }
    text.left(&number(top), x1 + 8, y0 - 6, 11.0);
    if p.outside > 0.0 {
        text.right(&format!("outside {}", number(p.outside)), x1, y0 - 8, 12.0);
    }
    titles(&mut text, p.title, p.x_title, p.y_title);
    encode(&rgb)
}

/// White (0) to dark blue (1).
fn shade(f: f64) -> RGBColor {
    let f = f.clamp(0.0, 1.0);
    let mix = |white: f64, dark: f64| (white + (dark - white) * f).round() as u8;
    RGBColor(mix(235.0, 8.0), mix(240.0, 40.0), mix(250.0, 120.0))
}

fn axes(root: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>) -> Result<(), String> {
    let (x0, y0, x1, y1) = area();
    root.draw(&PathElement::new([(x0, y0), (x0, y1), (x1, y1)], BLACK))
        .map_err(draw_err)?;
    for k in 0..=4 {
        let x = x0 + (x1 - x0) * k / 4;
        let y = y1 - (y1 - y0) * k / 4;
        root.draw(&PathElement::new([(x, y1), (x, y1 + 5)], BLACK))
            .map_err(draw_err)?;
        root.draw(&PathElement::new([(x0 - 5, y), (x0, y)], BLACK))
            .map_err(draw_err)?;
    }
    Ok(())
}

fn ticks(text: &mut Labels<'_>, (xlo, xhi): (f64, f64), (ylo, yhi): (f64, f64)) {
    let (x0, y0, x1, y1) = area();
    for k in 0..=4 {
        let f = f64::from(k) / 4.0;
        let x = x0 + ((x1 - x0) as f64 * f) as i32;
        text.centred(&number(xlo + (xhi - xlo) * f), x, y1 + 18, 12.0);
        let y = y1 - ((y1 - y0) as f64 * f) as i32;
        text.right(&number(ylo + (yhi - ylo) * f), x0 - 8, y + 4, 12.0);
    }
}

fn titles(text: &mut Labels<'_>, title: &str, x_title: &str, y_title: &str) {
    let (x0, y0, x1, y1) = area();
    text.centred(title, (x0 + x1) / 2, 22, 15.0);
    text.centred(x_title, (x0 + x1) / 2, y1 + 42, 13.0);
    // The y title sits above the axis, written across (not turned on its side).
    text.left(y_title, 8, y0 - 12, 12.0);
}

/// The smallest of 1, 2, 2.5 and 5 times a power of ten at or above `x`:
/// round tick labels for the count axis.
pub(super) fn tick_step(x: f64) -> f64 {
    let power = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|&s| s >= x)
        .unwrap_or(10.0 * power)
}

/// A number short enough for a tick label.
pub(super) fn number(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{x:.2e}");
    }
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Text drawn into the RGB buffer, dark grey, anti-aliased.
pub(super) struct Labels<'b> {
    rgb: &'b mut [u8],
    font: Option<FontRef<'static>>,
}

impl<'b> Labels<'b> {
    pub(super) fn new(rgb: &'b mut [u8]) -> Labels<'b> {
        Labels {
            rgb,
            font: FontRef::try_from_slice(FONT).ok(),
        }
    }

    fn width(&self, s: &str, size: f32) -> f32 {
        let Some(font) = &self.font else { return 0.0 };
        let scaled = font.as_scaled(PxScale::from(size));
        s.chars().map(|c| scaled.h_advance(font.glyph_id(c))).sum()
    }

    pub(super) fn left(&mut self, s: &str, x: i32, baseline: i32, size: f32) {
        let Some(font) = self.font.clone() else {
            return;
        };
        let scale = PxScale::from(size);
        let scaled = font.as_scaled(scale);
        let mut pen = x as f32;
        for c in s.chars() {
            let id = font.glyph_id(c);
            let glyph = id.with_scale_and_position(scale, point(pen, baseline as f32));
            pen += scaled.h_advance(id);
            let Some(outline) = font.outline_glyph(glyph) else {
                continue;
            };
            let b = outline.px_bounds();
            outline.draw(|gx, gy, coverage| {
                self.blend(
                    b.min.x as i32 + gx as i32,
                    b.min.y as i32 + gy as i32,
                    coverage,
                );
            });
        }
    }

    pub(super) fn centred(&mut self, s: &str, x: i32, baseline: i32, size: f32) {
        let w = self.width(s, size);
        self.left(s, x - (w / 2.0) as i32, baseline, size);
    }

    pub(super) fn right(&mut self, s: &str, x: i32, baseline: i32, size: f32) {
        let w = self.width(s, size);
        self.left(s, x - w as i32, baseline, size);
    }

    fn blend(&mut self, x: i32, y: i32, coverage: f32) {
        if x < 0 || y < 0 || x >= WIDTH as i32 || y >= HEIGHT as i32 {
            return;
        }
        let at = ((y as u32 * WIDTH + x as u32) * 3) as usize;
        for v in &mut self.rgb[at..at + 3] {
            let ink = 40.0;
            *v = (f32::from(*v) * (1.0 - coverage) + ink * coverage).round() as u8;
        }
    }
}

pub(super) fn encode(rgb: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Best);
    let mut writer = encoder.write_header().map_err(draw_err)?;
    writer.write_image_data(rgb).map_err(draw_err)?;
    writer.finish().map_err(draw_err)?;
    Ok(out)
}

/// Bins summed in groups so at most `TEXT_COLUMNS` remain: (first edge, last
/// edge, sum) of each group.
pub(super) fn grouped(edges: &[f64], counts: &[f64]) -> Vec<(f64, f64, f64)> {
    let per = counts.len().div_ceil(TEXT_COLUMNS).max(1);
    counts
        .chunks(per)
        .enumerate()
        .map(|(g, c)| {
            let first = g * per;
            (edges[first], edges[first + c.len()], c.iter().sum())
        })
        .collect()
}

/// A 1-D histogram in three lines: a bar per (group of) bins, eight heights
/// from ▁ to █ (blank for none), then the range and the tallest bar.
pub fn text_1d(p: &Hist1Picture<'_>) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let groups = grouped(p.edges, p.counts);
    let top = groups.iter().map(|g| g.2).fold(0.0, f64::max);
    let bars: String = groups
        .iter()
        .map(|&(_, _, c)| {
            if c <= 0.0 || top <= 0.0 {
                ' '
            } else {
                BARS[((c / top * 8.0).ceil() as usize).clamp(1, 8) - 1]
            }
        })
        .collect();
    let (lo, hi) = (p.edges[0], p.edges[p.edges.len() - 1]);
    let peak = groups
        .iter()
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map_or(String::new(), |g| {
            format!(
                "tallest {} in [{}, {})",
                number(g.2),
                number(g.0),
                number(g.1)
            )
        });
    format!(
        "|{bars}|\n{} ... {}  ({} columns of {} bins)\n{peak}; underflow {}, overflow {}",
        number(lo),
        number(hi),
        groups.len(),
        p.counts.len().div_ceil(groups.len().max(1)),
        number(p.underflow),
        number(p.overflow),
    )
}

/// A 2-D histogram as a grid of at most 24 x 12 characters, densest `@`,
/// highest y on the first line.
pub fn text_2d(p: &Hist2Picture<'_>) -> String {
    const SHADES: [char; 9] = ['.', ':', '-', '=', '+', '*', '#', '%', '@'];
    let (nx, ny) = (p.x_edges.len() - 1, p.y_edges.len() - 1);
    let (cols, rows) = (nx.min(24), ny.min(12));
    let mut grid = vec![vec![0.0; cols]; rows];
    for (j, row) in p.counts.iter().enumerate() {
        for (i, &c) in row.iter().enumerate() {
            grid[j * rows / ny][i * cols / nx] += c;
        }
    }
    let top = grid.iter().flatten().copied().fold(0.0, f64::max);
    let mut out = String::new();
    for row in grid.iter().rev() {
        out.push('|');
        for &c in row {
            out.push(if c <= 0.0 || top <= 0.0 {
                ' '
            } else {
                SHADES[((c / top * 9.0).ceil() as usize).clamp(1, 9) - 1]
            });
        }
        out.push_str("|\n");
    }
    out.push_str(&format!(
        "x {} ... {}, y {} ... {} (bottom to top); densest cell {}",
        number(p.x_edges[0]),
        number(p.x_edges[nx]),
        number(p.y_edges[0]),
        number(p.y_edges[ny]),
        number(top)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_bars_follow_the_counts() {
        let edges: Vec<f64> = (0..=4).map(f64::from).collect();
        let p = Hist1Picture {
            title: "t",
            x_title: "x",
            y_title: "entries",
            edges: &edges,
            counts: &[0.0, 8.0, 4.0, 1.0],
            underflow: 2.0,
            overflow: 0.0,
        };
        let text = text_1d(&p);
        assert!(text.starts_with("| █▄▁|"), "{text}");
        assert!(text.contains("tallest 8 in [1, 2)"), "{text}");
        assert_eq!(
            (tick_step(97.0), tick_step(0.3), tick_step(2.2)),
            (100.0, 0.5, 2.5)
        );
        let png = png_1d(&p).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }
}
