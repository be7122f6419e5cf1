//! CSV and Parquet: one row per index of the result's first axis, the trailing
//! axes' elements in C order across it (CSV columns `name[j,k]`, a Parquet
//! fixed-size list), the row's elements written as they arrive.

use std::io::{BufWriter, Write};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Float64Array, Int8Array, Int16Array,
    Int32Array, Int64Array, RecordBatch, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use super::{Element, ExportError, Layout, element};
use crate::formats::hdf5::Plain;

/// Elements per Parquet batch (about 8 MiB of float64) and per row group.
const BATCH_ELEMENTS: u64 = 1 << 20;

pub struct Csv<W: Write> {
    out: BufWriter<W>,
    plain: Plain,
    width: u64,
    /// Elements of the current row written so far.
    column: u64,
}

/// The CSV header: the name for a result of one axis or none, else one column
/// per element of a row, named by its indices on the trailing axes.
fn csv_header(layout: &Layout) -> String {
    if layout.shape.len() <= 1 {
        return quoted(&layout.name);
    }
    let trailing = &layout.shape[1..];
    let width = layout.row_width();
    let mut names = Vec::with_capacity(width.min(1 << 16) as usize);
    for flat in 0..width {
        let mut rest = flat;
        let mut index = vec![0u64; trailing.len()];
        for (i, n) in trailing.iter().enumerate().rev() {
            index[i] = rest % n;
            rest /= n;
        }
        let index: Vec<String> = index.iter().map(u64::to_string).collect();
        names.push(quoted(&format!("{}[{}]", layout.name, index.join(","))));
    }
    names.join(",")
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn quoted(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl<W: Write> Csv<W> {
    pub fn new(out: W, layout: &Layout) -> Result<Self, ExportError> {
        let mut out = BufWriter::with_capacity(1 << 16, out);
        writeln!(out, "{}", csv_header(layout))?;
        Ok(Csv {
            out,
            plain: layout.plain,
            width: layout.row_width(),
            column: 0,
        })
    }

    pub fn block(&mut self, bytes: &[u8]) -> Result<(), ExportError> {
        for b in bytes.chunks_exact(self.plain.size()) {
            if self.column > 0 {
                self.out.write_all(b",")?;
            }
            write_element(&mut self.out, element(self.plain, b))?;
            self.column += 1;
            if self.column == self.width {
                self.out.write_all(b"\n")?;
                self.column = 0;
            }
        }
        Ok(())
    }

    pub fn finish(self) -> Result<W, ExportError> {
        self.out
            .into_inner()
            .map_err(|e| ExportError::Io(e.into_error()))
    }
}

/// A number as text that reads back to the same value (Rust's shortest
/// round-trip form); NaN and infinities as `nan`, `inf`, `-inf`, which pandas
/// and NumPy read.
fn write_element(out: &mut impl Write, e: Element) -> std::io::Result<()> {
    fn float(out: &mut impl Write, x: f64, text: &dyn std::fmt::Display) -> std::io::Result<()> {
        if x.is_finite() {
            write!(out, "{text}")
        } else if x.is_nan() {
            out.write_all(b"nan")
        } else if x > 0.0 {
            out.write_all(b"inf")
        } else {
            out.write_all(b"-inf")
        }
    }
    match e {
        Element::Int(v) => write!(out, "{v}"),
        Element::UInt(v) => write!(out, "{v}"),
        Element::Bool(v) => write!(out, "{v}"),
        Element::Float32(v) => float(out, f64::from(v), &v),
        Element::Float64(v) => float(out, v, &v),
    }
}

pub struct Parquet<W: Write + Send> {
    writer: ArrowWriter<W>,
    schema: Arc<Schema>,
    plain: Plain,
    /// Elements per row; `None` when a row is one element (no list).
    list: Option<u64>,
    /// Elements of rows not yet written.
    pending: Vec<u8>,
    batch_rows: u64,
}

fn data_type(plain: Plain) -> DataType {
    match plain {
        Plain::Bool => DataType::Boolean,
        Plain::Float { size: 4 } => DataType::Float32,
        Plain::Float { .. } => DataType::Float64,
        Plain::Int { size, signed } => match (size, signed) {
            (1, true) => DataType::Int8,
            (2, true) => DataType::Int16,
            (4, true) => DataType::Int32,
            (_, true) => DataType::Int64,
            (1, false) => DataType::UInt8,
            (2, false) => DataType::UInt16,
            (4, false) => DataType::UInt32,
            (_, false) => DataType::UInt64,
        },
    }
}

/// The elements of `bytes` as an Arrow array of their type.
fn values(plain: Plain, bytes: &[u8]) -> ArrayRef {
    let each = bytes.chunks_exact(plain.size()).map(|b| element(plain, b));
    macro_rules! collect {
        ($array:ty, $variant:ident, $t:ty) => {
            Arc::new(<$array>::from(
                each.map(|e| match e {
                    Element::$variant(v) => v as $t,
                    _ => unreachable!("one type per export"),
                })
                .collect::<Vec<$t>>(),
            ))
        };
    }
    match data_type(plain) {
        DataType::Boolean => collect!(BooleanArray, Bool, bool),
        DataType::Float32 => collect!(Float32Array, Float32, f32),
        DataType::Float64 => collect!(Float64Array, Float64, f64),
        DataType::Int8 => collect!(Int8Array, Int, i8),
        DataType::Int16 => collect!(Int16Array, Int, i16),
        DataType::Int32 => collect!(Int32Array, Int, i32),
        DataType::Int64 => collect!(Int64Array, Int, i64),
        DataType::UInt8 => collect!(UInt8Array, UInt, u8),
        DataType::UInt16 => collect!(UInt16Array, UInt, u16),
        DataType::UInt32 => collect!(UInt32Array, UInt, u32),
        _ => collect!(UInt64Array, UInt, u64),
    }
}

impl<W: Write + Send> Parquet<W> {
    pub fn new(out: W, layout: &Layout) -> Result<Self, ExportError> {
        let item = data_type(layout.plain);
        let list = (layout.shape.len() > 1).then(|| layout.row_width());
        let column_type = match list {
            Some(width) => DataType::FixedSizeList(
                Arc::new(Field::new("item", item, false)),
                i32::try_from(width).map_err(|_| {
                    ExportError::Encode(format!(
                        "rows of {width} elements are too wide for Parquet"
                    ))
                })?,
            ),
            None => item,
        };
        let shape: Vec<String> = layout.shape.iter().map(u64::to_string).collect();
        let schema = Arc::new(
            Schema::new(vec![Field::new(&layout.name, column_type, false)]).with_metadata(
                std::collections::HashMap::from([(
                    "shape".to_string(),
                    format!("[{}]", shape.join(", ")),
                )]),
            ),
        );
        let batch_rows = (BATCH_ELEMENTS / list.unwrap_or(1).max(1)).max(1);
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(batch_rows as usize))
            .build();
        let writer = ArrowWriter::try_new(out, schema.clone(), Some(props))?;
        Ok(Parquet {
            writer,
            schema,
            plain: layout.plain,
            list,
            pending: Vec::new(),
            batch_rows,
        })
    }

    pub fn block(&mut self, bytes: &[u8]) -> Result<(), ExportError> {
        self.pending.extend_from_slice(bytes);
        let row_bytes = self.list.unwrap_or(1) as usize * self.plain.size();
        let batch_bytes = self.batch_rows as usize * row_bytes;
        while row_bytes > 0 && self.pending.len() >= batch_bytes {
            let rest = self.pending.split_off(batch_bytes);
            let batch = std::mem::replace(&mut self.pending, rest);
            self.write(&batch)?;
        }
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), ExportError> {
        let flat = values(self.plain, bytes);
        let column: ArrayRef = match self.list {
            Some(width) => Arc::new(FixedSizeListArray::try_new(
                Arc::new(Field::new("item", data_type(self.plain), false)),
                width as i32,
                flat,
                None,
            )?),
            None => flat,
        };
        let batch = RecordBatch::try_new(self.schema.clone(), vec![column])?;
        self.writer.write(&batch)?;
        Ok(())
    }

    pub fn finish(mut self) -> Result<W, ExportError> {
        if !self.pending.is_empty() {
            let batch = std::mem::take(&mut self.pending);
            self.write(&batch)?;
        }
        Ok(self.writer.into_inner()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_headers_name_each_element_of_a_row() {
        let layout = |shape: Vec<u64>| Layout {
            name: "grid".into(),
            plain: Plain::Bool,
            shape,
        };
        assert_eq!(csv_header(&layout(vec![4])), "grid");
        assert_eq!(csv_header(&layout(vec![])), "grid");
        assert_eq!(
            csv_header(&layout(vec![4, 2, 3])),
            "\"grid[0,0]\",\"grid[0,1]\",\"grid[0,2]\",\"grid[1,0]\",\"grid[1,1]\",\"grid[1,2]\""
        );
        assert_eq!(csv_header(&layout(vec![4, 2])), "grid[0],grid[1]");
    }
}
