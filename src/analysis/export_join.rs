//! Joining export parts into one file: a cluster's tasks each export their
//! run of files (`export::export`, into a part file of the call's format),
//! and the daemon writes the parts one after another, in task order, taking
//! from each only the rows the call's `limit` leaves, so the file holds what
//! one `export` over all the files would have written:
//! - CSV: the first part's header, then each part's rows (a row ends at a
//!   line break outside quotes: a quoted cell may hold line breaks);
//! - JSON: `[`, each part's records (one a line, as `export` writes them),
//!   `]`;
//! - Parquet: each part's record batches, written again with the same
//!   writer properties (the values are the parts' own, bit for bit).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;

use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::AnalysisError;
use super::export::{ExportError, ExportFormat, parquet_properties};
use crate::job::Job;

/// One part to join: its file and how many of its rows to take (its first).
pub struct Part {
    pub path: PathBuf,
    pub rows: u64,
}

/// Writes `parts` (at least one; in order) into `out` as one file of
/// `format`; returns `out` once complete. `job` is asked before each part:
/// a call stopped while its parts are joined ends there.
pub fn join_parts<W: Write + Send>(
    parts: &[Part],
    format: ExportFormat,
    out: W,
    job: &Job,
) -> Result<W, ExportError> {
    if parts.is_empty() {
        return Err(ExportError::Write("no export part to join".into()));
    }
    let go_on = || match job.stopped() {
        Some(stop) => Err(ExportError::Analysis(AnalysisError::Stopped {
            stop,
            entries_done: 0,
        })),
        None => Ok(()),
    };
    match format {
        ExportFormat::Csv => join_csv(parts, out, go_on),
        ExportFormat::Json => join_json(parts, out, go_on),
        ExportFormat::Parquet => join_parquet(parts, out, go_on),
    }
}

fn open(part: &Part) -> Result<BufReader<File>, ExportError> {
    let file = File::open(&part.path)
        .map_err(|e| ExportError::Write(format!("export part {}: {e}", part.path.display())))?;
    Ok(BufReader::with_capacity(1 << 20, file))
}

/// Reads one CSV row (its bytes, line break included) into `row`; false at
/// the end of the input. Quotes toggle: `""` inside a quoted cell toggles
/// twice, so a line break counts only outside every quoted cell.
fn csv_row(input: &mut impl BufRead, row: &mut Vec<u8>) -> std::io::Result<bool> {
    row.clear();
    let mut quoted = false;
    loop {
        let start = row.len();
        if input.read_until(b'\n', row)? == 0 {
            return Ok(!row.is_empty());
        }
        quoted ^= row[start..].iter().filter(|&&b| b == b'"').count() % 2 == 1;
        if !quoted {
            return Ok(true);
        }
    }
}

fn join_csv<W: Write>(
    parts: &[Part],
    out: W,
    go_on: impl Fn() -> Result<(), ExportError>,
) -> Result<W, ExportError> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    let mut row = Vec::new();
    for (k, part) in parts.iter().enumerate() {
        go_on()?;
        let mut input = open(part)?;
        // Every part starts with the same header: written once.
        csv_row(&mut input, &mut row)?;
        if k == 0 {
            out.write_all(&row)?;
        }
        for _ in 0..part.rows {
            if !csv_row(&mut input, &mut row)? {
                return Err(short(part));
            }
            out.write_all(&row)?;
        }
    }
    out.into_inner()
        .map_err(|e| ExportError::Write(e.error().to_string()))
}

fn short(part: &Part) -> ExportError {
    ExportError::Write(format!(
        "export part {} holds fewer than {} rows",
        part.path.display(),
        part.rows
    ))
}

fn join_json<W: Write>(
    parts: &[Part],
    out: W,
    go_on: impl Fn() -> Result<(), ExportError>,
) -> Result<W, ExportError> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    out.write_all(b"[")?;
    let mut first = true;
    let mut line = Vec::new();
    for part in parts {
        go_on()?;
        let mut input = open(part)?;
        // `[` alone on the first line, then a record a line (JSON strings
        // escape their line breaks), each but the last ending in `,`.
        line.clear();
        input.read_until(b'\n', &mut line)?;
        for _ in 0..part.rows {
            line.clear();
            if input.read_until(b'\n', &mut line)? == 0 || !line.starts_with(b"{") {
                return Err(short(part));
            }
            let record = line.strip_suffix(b"\n").unwrap_or(&line);
            let record = record.strip_suffix(b",").unwrap_or(record);
            out.write_all(if first { b"\n" } else { b",\n" })?;
            out.write_all(record)?;
            first = false;
        }
    }
    out.write_all(b"\n]\n")?;
    out.into_inner()
        .map_err(|e| ExportError::Write(e.error().to_string()))
}

fn join_parquet<W: Write + Send>(
    parts: &[Part],
    out: W,
    go_on: impl Fn() -> Result<(), ExportError>,
) -> Result<W, ExportError> {
    let schema = ParquetRecordBatchReaderBuilder::try_new(open(&parts[0])?.into_inner())?
        .schema()
        .clone();
    let mut writer = ArrowWriter::try_new(out, schema, Some(parquet_properties()))?;
    for part in parts {
        go_on()?;
        let mut left = part.rows as usize;
        if left == 0 {
            continue;
        }
        let reader = ParquetRecordBatchReaderBuilder::try_new(open(part)?.into_inner())?
            .with_batch_size(64 * 1024)
            .build()?;
        for batch in reader {
            let batch = batch?;
            let take = batch.num_rows().min(left);
            writer.write(&batch.slice(0, take))?;
            left -= take;
            if left == 0 {
                break;
            }
        }
        if left > 0 {
            return Err(short(part));
        }
    }
    Ok(writer.into_inner()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_end_outside_quotes() {
        let text = b"a,b\n1,\"x\ny\"\n2,\"say \"\"hi\"\"\"\n3,z";
        let mut input = &text[..];
        let mut row = Vec::new();
        let mut rows = Vec::new();
        while csv_row(&mut input, &mut row).unwrap() {
            rows.push(String::from_utf8(row.clone()).unwrap());
        }
        assert_eq!(
            rows,
            ["a,b\n", "1,\"x\ny\"\n", "2,\"say \"\"hi\"\"\"\n", "3,z"]
        );
    }
}
