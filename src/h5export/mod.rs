//! Writing an HDF5 dataset (or a slice of it) to a file: NumPy's `.npy`, CSV or
//! Parquet, block by block, so memory stays bounded whatever the size. An
//! engine: it knows the element layout (`formats::hdf5::Plain`) and the
//! writers, not where blocks come from (the caller reads them, in a worker)
//! nor where the file goes (the caller hands a `Write`).
//!
//! Rows are the result's first axis (one row for a scalar); a row of a result
//! with more axes holds the trailing axes' elements in C order: CSV columns
//! `name[0]`, `name[1]`, ..., a Parquet fixed-size list.

pub mod npy;
mod table;

use std::io::Write;

use crate::formats::hdf5::Plain;

/// The file formats an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Npy,
    Csv,
    Parquet,
}

impl Format {
    pub fn parse(name: &str) -> Option<Format> {
        match name {
            "npy" => Some(Format::Npy),
            "csv" => Some(Format::Csv),
            "parquet" => Some(Format::Parquet),
            _ => None,
        }
    }
}

/// What is exported: the column's name (the dataset's last path component),
/// the element type and the result's shape.
#[derive(Debug, Clone)]
pub struct Layout {
    pub name: String,
    pub plain: Plain,
    pub shape: Vec<u64>,
}

impl Layout {
    /// Elements per row: the product of the axes after the first.
    fn row_width(&self) -> u64 {
        self.shape.iter().skip(1).product::<u64>()
    }
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Encode(String),
}

impl From<parquet::errors::ParquetError> for ExportError {
    fn from(e: parquet::errors::ParquetError) -> Self {
        ExportError::Encode(e.to_string())
    }
}

impl From<arrow_schema::ArrowError> for ExportError {
    fn from(e: arrow_schema::ArrowError) -> Self {
        ExportError::Encode(e.to_string())
    }
}

/// An export under way: blocks of elements (native layout, NumPy's order) in,
/// the finished writer out.
pub struct Exporter<W: Write + Send> {
    sink: Sink<W>,
}

enum Sink<W: Write + Send> {
    Npy(npy::Npy<W>),
    Csv(table::Csv<W>),
    // Boxed: the Parquet writer is far larger than the others.
    Parquet(Box<table::Parquet<W>>),
}

impl<W: Write + Send> Exporter<W> {
    /// Starts the file (writes its header).
    pub fn new(out: W, format: Format, layout: &Layout) -> Result<Self, ExportError> {
        let sink = match format {
            Format::Npy => Sink::Npy(npy::Npy::new(out, layout)?),
            Format::Csv => Sink::Csv(table::Csv::new(out, layout)?),
            Format::Parquet => Sink::Parquet(Box::new(table::Parquet::new(out, layout)?)),
        };
        Ok(Exporter { sink })
    }

    /// Appends the next elements.
    pub fn block(&mut self, bytes: &[u8]) -> Result<(), ExportError> {
        match &mut self.sink {
            Sink::Npy(s) => s.block(bytes),
            Sink::Csv(s) => s.block(bytes),
            Sink::Parquet(s) => s.block(bytes),
        }
    }

    /// Ends the file; the writer back.
    pub fn finish(self) -> Result<W, ExportError> {
        match self.sink {
            Sink::Npy(s) => s.finish(),
            Sink::Csv(s) => s.finish(),
            Sink::Parquet(s) => (*s).finish(),
        }
    }
}

/// Elements of a block decoded one at a time (host byte order).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Element {
    Int(i64),
    UInt(u64),
    Float32(f32),
    Float64(f64),
    Bool(bool),
}

fn element(plain: Plain, b: &[u8]) -> Element {
    match plain {
        Plain::Bool => Element::Bool(b[0] != 0),
        Plain::Float { size: 4 } => {
            Element::Float32(f32::from_ne_bytes(b[..4].try_into().unwrap()))
        }
        Plain::Float { .. } => Element::Float64(f64::from_ne_bytes(b[..8].try_into().unwrap())),
        Plain::Int { size, signed } => {
            let mut raw = [0u8; 8];
            let size = usize::from(size);
            // Native order: on a little-endian host the low bytes come first.
            if cfg!(target_endian = "little") {
                raw[..size].copy_from_slice(&b[..size]);
            } else {
                raw[8 - size..].copy_from_slice(&b[..size]);
            }
            let unsigned = u64::from_ne_bytes(raw);
            if signed {
                let shift = 64 - 8 * size as u32;
                Element::Int(((unsigned << shift) as i64) >> shift)
            } else {
                Element::UInt(unsigned)
            }
        }
    }
}
