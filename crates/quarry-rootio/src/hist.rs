//! Histograms: TH1C/S/I/F/D, TH2C/S/I/F/D, TProfile and TProfile2D (class
//! versions TH1 v5-8, TH2 v3-5, TAxis v6-10): axes with titles and edges, every
//! bin's content including under- and overflow, the sum of squared weights when
//! stored, and the entry count. A profile stores per bin the sums of w·y, w·y²
//! and w; its values are the means and its errors follow its error option.

use super::cursor::Cursor;
use super::object::{Framing, read_tnamed};
use crate::FormatError;

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
    /// Sums of squared weights per cell, when the histogram stores them (for a
    /// profile, the sums of w·y²).
    pub sumw2: Option<Vec<f64>>,
    /// What a TProfile or TProfile2D adds; `contents` then holds the sums of w·y.
    pub profile: Option<Profile>,
}

/// A profile's per-cell sums of weights and how its errors are defined.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Sum of weights per cell (the number of entries when unweighted).
    pub bin_entries: Vec<f64>,
    /// Sum of squared weights per cell, when stored (weighted fills).
    pub bin_sumw2: Option<Vec<f64>>,
    pub errors: ProfileErrors,
}

/// ROOT's profile error options, numbered as ROOT stores them (EErrorType).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileErrors {
    /// "" (default): the error on the mean, spread / sqrt(effective entries).
    Mean = 0,
    /// "s": the spread of y in the bin.
    Spread = 1,
    /// "i": like Mean, but 1/sqrt(12 n) when all y in the bin are equal.
    SpreadI = 2,
    /// "g": 1/sqrt(sum of weights).
    SpreadG = 3,
}

impl ProfileErrors {
    pub fn option(self) -> &'static str {
        match self {
            ProfileErrors::Mean => "",
            ProfileErrors::Spread => "s",
            ProfileErrors::SpreadI => "i",
            ProfileErrors::SpreadG => "g",
        }
    }
}

impl Histogram {
    pub fn dims(&self) -> usize {
        if self.y.is_some() { 2 } else { 1 }
    }

    /// Per-cell values: the contents, or a profile's means.
    pub fn values(&self) -> Vec<f64> {
        match &self.profile {
            None => self.contents.clone(),
            Some(p) => self
                .contents
                .iter()
                .zip(&p.bin_entries)
                .map(|(&sum, &w)| if w == 0.0 { 0.0 } else { sum / w })
                .collect(),
        }
    }

    /// Per-cell variance: the stored sum of squared weights, else the content
    /// (Poisson), as ROOT reports it; for a profile, the squared error.
    pub fn variances(&self) -> Vec<f64> {
        if self.profile.is_some() {
            return self.errors().iter().map(|e| e * e).collect();
        }
        self.sumw2.clone().unwrap_or_else(|| self.contents.clone())
    }

    /// Per-cell errors, as ROOT's GetBinError gives them.
    pub fn errors(&self) -> Vec<f64> {
        let Some(p) = &self.profile else {
            return self.variances().iter().map(|v| v.sqrt()).collect();
        };
        let zeros = vec![0.0; self.contents.len()];
        let sum_wy2 = self.sumw2.as_ref().unwrap_or(&zeros);
        (0..self.contents.len())
            .map(|i| profile_error(p, i, self.contents[i], sum_wy2[i]))
            .collect()
    }
}

/// One profile cell's error from its sums of w, w·y and w·y².
fn profile_error(p: &Profile, cell: usize, sum_wy: f64, sum_wy2: f64) -> f64 {
    let sum_w = p.bin_entries[cell];
    if sum_w == 0.0 {
        return 0.0;
    }
    if p.errors == ProfileErrors::SpreadG {
        return 1.0 / sum_w.sqrt();
    }
    // Effective entries: (sum w)² / sum w², or sum w when w² is not stored.
    let neff = match &p.bin_sumw2 {
        Some(w2) if w2[cell] > 0.0 => sum_w * sum_w / w2[cell],
        Some(_) => 0.0,
        None => sum_w,
    };
    let mean = sum_wy / sum_w;
    let spread = (sum_wy2 / sum_w - mean * mean).abs().sqrt();
    match p.errors {
        ProfileErrors::Spread => spread,
        ProfileErrors::SpreadI if spread == 0.0 => 1.0 / (12.0 * neff).sqrt(),
        _ => spread / neff.sqrt(),
    }
}

/// Whether a class is one of the histograms this module reads.
pub fn is_histogram(class: &str) -> bool {
    let b = class.as_bytes();
    let plain = b.len() == 4
        && (class.starts_with("TH1") || class.starts_with("TH2"))
        && b"CSIFD".contains(&b[3]);
    plain || class == "TProfile" || class == "TProfile2D"
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
    // The bins' contents follow in the same object, a byte each at least:
    // a damaged count must not size the edges before that is found out.
    c.fits(nbins, 1, "fNbins")?;
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
    let profile = class.starts_with("TProfile");
    let two_d = class.starts_with("TH2") || class == "TProfile2D";
    let c = &mut Cursor::new(bytes, origin);
    let outer = Framing::read(c, class)?;
    // A profile is a TH1D (TProfile2D a TH2D) with more members after it.
    let base = profile
        .then(|| Framing::read(c, if two_d { "TH2D" } else { "TH1D" }))
        .transpose()?;
    let th1 = if two_d {
        let th2 = Framing::read(c, "TH2")?;
        let th1 = read_th1(c)?;
        th2.finish(c, "TH2")?;
        th1
    } else {
        read_th1(c)?
    };
    let letter = if profile { b'D' } else { class.as_bytes()[3] };
    let contents = read_contents(c, letter)?;
    let profile = match base {
        Some(base) => {
            base.finish(c, "profile base")?;
            Some(read_profile(c, outer.version)?)
        }
        None => None,
    };
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
    if let Some(p) = &profile {
        let cells = |v: &[f64]| v.len() == expected;
        if !cells(&p.bin_entries) || p.bin_sumw2.as_deref().is_some_and(|w| !cells(w)) {
            return Err(FormatError::Corrupt(format!(
                "profile '{}' has {} entry sums for {expected} cells",
                th1.name,
                p.bin_entries.len()
            )));
        }
    }
    Ok(Histogram {
        name: th1.name,
        title: th1.title,
        class_name: class.to_string(),
        entries: th1.entries,
        x: th1.x,
        y: two_d.then_some(th1.y),
        contents,
        sumw2,
        profile,
    })
}

/// The members a profile adds after its TH1D/TH2D base: the sums of weights,
/// the error option, the range and totals of y, and (v7 on) the sums of squared
/// weights.
fn read_profile(c: &mut Cursor<'_>, version: i16) -> Result<Profile, FormatError> {
    let bin_entries = read_array_d(c, "fBinEntries")?;
    let errors = match c.i32("fErrorMode")? {
        0 => ProfileErrors::Mean,
        1 => ProfileErrors::Spread,
        2 => ProfileErrors::SpreadI,
        3 => ProfileErrors::SpreadG,
        other => {
            return Err(FormatError::Corrupt(format!("profile error mode {other}")));
        }
    };
    c.skip(4 * 8, "range and sums of y")?;
    let bin_sumw2 = if version >= 7 {
        Some(read_array_d(c, "fBinSumw2")?).filter(|w| !w.is_empty())
    } else {
        None
    };
    Ok(Profile {
        bin_entries,
        bin_sumw2,
        errors,
    })
}
