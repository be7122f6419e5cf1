//! Histograms: TH1C/S/I/F/D and TH2C/S/I/F/D (class versions TH1 v5-8, TH2 v3-5,
//! TAxis v6-10): axes with titles and edges, every bin's content including under-
//! and overflow, the sum of squared weights when stored, and the entry count.

use super::cursor::Cursor;
use super::object::{Framing, read_tnamed};
use crate::formats::FormatError;

#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub title: String,
    pub nbins: usize,
    /// nbins + 1 edges (from the variable edges when stored, else uniform).
    pub edges: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub name: String,
    pub title: String,
    pub class_name: String,
    pub entries: f64,
    pub x: Axis,
    /// The y axis of a 2-D histogram.
    pub y: Option<Axis>,
    /// Every cell, under- and overflow included: (nx + 2) for 1-D; for 2-D,
    /// (nx + 2) * (ny + 2) with x varying fastest, as ROOT stores them.
    pub contents: Vec<f64>,
    /// Sums of squared weights per cell, when the histogram stores them.
    pub sumw2: Option<Vec<f64>>,
}

impl Histogram {
    pub fn dims(&self) -> usize {
        if self.y.is_some() { 2 } else { 1 }
    }

    /// Per-cell variance: the stored sum of squared weights, else the content
    /// (Poisson), as ROOT reports it.
    pub fn variances(&self) -> Vec<f64> {
        self.sumw2.clone().unwrap_or_else(|| self.contents.clone())
    }
}

/// Whether a class is one of the histograms this module reads.
pub fn is_histogram(class: &str) -> bool {
    let b = class.as_bytes();
    b.len() == 4
        && (class.starts_with("TH1") || class.starts_with("TH2"))
        && b"CSIFD".contains(&b[3])
}

fn count(n: i32, what: &str) -> Result<usize, FormatError> {
    usize::try_from(n).map_err(|_| FormatError::Corrupt(format!("negative {what} ({n})")))
}

/// A TArrayD member: a length, then the values.
fn read_array_d(c: &mut Cursor<'_>, what: &str) -> Result<Vec<f64>, FormatError> {
    let n = count(c.i32(what)?, what)?;
    c.fits(n, 8, what)?;
    (0..n).map(|_| c.f64(what)).collect()
}

/// Reads one bin content of a TArray's element type, as f64.
type ReadBin = fn(&mut Cursor<'_>) -> Result<f64, FormatError>;

/// The TArray holding the bin contents, by the histogram's last letter.
fn read_contents(c: &mut Cursor<'_>, letter: u8) -> Result<Vec<f64>, FormatError> {
    let what = "bin contents";
    let n = count(c.i32(what)?, what)?;
    let (width, read): (usize, ReadBin) = match letter {
        b'C' => (1, |c| Ok(f64::from(c.u8("bin")? as i8))),
        b'S' => (2, |c| Ok(f64::from(c.i16("bin")?))),
        b'I' => (4, |c| Ok(f64::from(c.i32("bin")?))),
        b'F' => (4, |c| Ok(f64::from(f32::from_bits(c.u32("bin")?)))),
        _ => (8, |c| c.f64("bin")),
    };
    c.fits(n, width, what)?;
    (0..n).map(|_| read(c)).collect()
}

fn read_axis(c: &mut Cursor<'_>) -> Result<Axis, FormatError> {
    let f = Framing::read(c, "TAxis")?;
    if !(6..=10).contains(&f.version) {
        return Err(FormatError::Unsupported(format!(
            "TAxis class version {}",
            f.version
        )));
    }
    let (_, title) = read_tnamed(c)?;
    Framing::skip(c, "TAttAxis")?;
    let nbins = count(c.i32("fNbins")?, "number of bins")?;
    let xmin = c.f64("fXmin")?;
    let xmax = c.f64("fXmax")?;
    let variable = read_array_d(c, "fXbins")?;
    f.finish(c, "TAxis")?;
    let edges = if variable.is_empty() {
        let width = (xmax - xmin) / nbins.max(1) as f64;
        (0..=nbins).map(|i| xmin + width * i as f64).collect()
    } else if variable.len() == nbins + 1 {
        variable
    } else {
        return Err(FormatError::Corrupt(format!(
            "axis of {nbins} bins with {} edges",
            variable.len()
        )));
    };
    Ok(Axis {
        title,
        nbins,
        edges,
    })
}

/// The TH1 part every histogram starts with.
struct Th1 {
    name: String,
    title: String,
    cells: usize,
    x: Axis,
    y: Axis,
    entries: f64,
    sumw2: Vec<f64>,
}

fn read_th1(c: &mut Cursor<'_>) -> Result<Th1, FormatError> {
    let f = Framing::read(c, "TH1")?;
    if !(5..=8).contains(&f.version) {
        return Err(FormatError::Unsupported(format!(
            "TH1 class version {}",
            f.version
        )));
    }
    let (name, title) = read_tnamed(c)?;
    for att in ["TAttLine", "TAttFill", "TAttMarker"] {
        Framing::skip(c, att)?;
    }
    let cells = count(c.i32("fNcells")?, "number of cells")?;
    let x = read_axis(c)?;
    let y = read_axis(c)?;
    read_axis(c)?;
    c.skip(4, "fBarOffset, fBarWidth")?;
    let entries = c.f64("fEntries")?;
    c.skip(7 * 8, "sums, maximum, minimum, norm factor")?;
    read_array_d(c, "fContour")?;
    let sumw2 = read_array_d(c, "fSumw2")?;
    f.finish(c, "TH1")?;
    Ok(Th1 {
        name,
        title,
        cells,
        x,
        y,
        entries,
        sumw2,
    })
}

/// Reads a histogram object of class `class` (see `is_histogram`).
pub fn read_histogram(bytes: &[u8], class: &str, origin: u64) -> Result<Histogram, FormatError> {
    if !is_histogram(class) {
        return Err(FormatError::Unsupported(format!(
            "{class} is not a histogram quarry reads"
        )));
    }
    let two_d = class.starts_with("TH2");
    let c = &mut Cursor::new(bytes, origin);
    let outer = Framing::read(c, class)?;
    let th1 = if two_d {
        let th2 = Framing::read(c, "TH2")?;
        let th1 = read_th1(c)?;
        th2.finish(c, "TH2")?;
        th1
    } else {
        read_th1(c)?
    };
    let contents = read_contents(c, class.as_bytes()[3])?;
    outer.finish(c, class)?;
    let expected = if two_d {
        (th1.x.nbins + 2) * (th1.y.nbins + 2)
    } else {
        th1.x.nbins + 2
    };
    if contents.len() != expected || th1.cells != expected {
        return Err(FormatError::Corrupt(format!(
            "histogram '{}' has {} cells for its axes' {expected}",
            th1.name,
            contents.len()
        )));
    }
    let sumw2 = match th1.sumw2.len() {
        0 => None,
        n if n == expected => Some(th1.sumw2),
        n => {
            return Err(FormatError::Corrupt(format!(
                "{n} sums of squared weights for {expected} cells"
            )));
        }
    };
    Ok(Histogram {
        name: th1.name,
        title: th1.title,
        class_name: class.to_string(),
        entries: th1.entries,
        x: th1.x,
        y: two_d.then_some(th1.y),
        contents,
        sumw2,
    })
}
