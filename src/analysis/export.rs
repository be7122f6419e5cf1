//! Exporting the entries that pass a cut to a file: JSON (an array of records),
//! CSV (a header, then one line per entry; a collection is a JSON array in one
//! cell) or Parquet (arrow-rs; a collection is a list column). The entries are
//! streamed window by window (one basket of each column in memory and the next
//! cluster's being decoded, plus the Parquet writer's current row group), so
//! memory does not grow with the number of entries exported.

use std::io::{self, Write};
use std::ops::Range;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use arrow_array::builder::{BooleanBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, ListArray, PrimitiveArray, RecordBatch,
    types::{
        Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
        UInt32Type, UInt64Type,
    },
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowColumnWriter, compute_leaves};
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

use super::AnalysisError;
use super::computed::{Computed, ReadColumns, Source};
use super::dataset::{Member, chain_entries};
use super::eval::{Inputs, SlotData, evaluate};
use super::plan::Plan;
use super::predicate::{Predicate, mask_cut};
use super::quantities::{Named, Quantity};
use super::scan::{ColumnPart, WINDOW, Window, scan};
use crate::formats::root::Values;
use crate::job::Job;

/// The file formats `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    Json,
    Csv,
    Parquet,
}

/// Rows per Parquet row group: bounds the writer's buffered, encoded rows.
const ROW_GROUP: usize = 256 * 1024;

/// Why an export failed: reading the tree, or writing the file.
#[derive(Debug)]
pub enum ExportError {
    Analysis(AnalysisError),
    Write(String),
}

impl From<AnalysisError> for ExportError {
    fn from(e: AnalysisError) -> ExportError {
        ExportError::Analysis(e)
    }
}

impl From<io::Error> for ExportError {
    fn from(e: io::Error) -> ExportError {
        ExportError::Write(e.to_string())
    }
}

impl From<parquet::errors::ParquetError> for ExportError {
    fn from(e: parquet::errors::ParquetError) -> ExportError {
        ExportError::Write(e.to_string())
    }
}

impl From<arrow_schema::ArrowError> for ExportError {
    fn from(e: arrow_schema::ArrowError) -> ExportError {
        ExportError::Write(e.to_string())
    }
}

/// What an export did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exported {
    /// Entries read (the clusters the cut ruled out are not read).
    pub entries_scanned: u64,
    pub entries_written: u64,
    /// The entry (numbered in the chain of members) the export stopped
    /// before: the entry count when it went through, less when the limit
    /// stopped it.
    pub stopped_at: u64,
    /// Each member's entries read and written (`selected`).
    pub by_member: Vec<super::ops::Counted>,
}

/// The columns a dataset's export adds after the named ones, so that each
/// row says where it came from (as `read_branches`' rows do): the member's
/// file, the entry in that file and the entry in the dataset.
pub const PROVENANCE: [&str; 3] = ["_file", "_entry", "_global_entry"];

/// Writes the entries of the members passing `cut` (all without one), at most
/// `limit`, of the named `columns` (branches as stored, expressions computed
/// in double; indices into each member's `tree.columns`) to `out` in
/// `format`, member after member; returns `out` once complete. With
/// `provenance` (each member's file as the answer names it) the rows also
/// carry the `PROVENANCE` columns.
#[allow(clippy::too_many_arguments)]
pub fn export<W: Write + Send + 'static>(
    members: &[Member<'_>],
    columns: &[Named],
    provenance: Option<&[String]>,
    cut: Option<&Plan>,
    limit: u64,
    format: ExportFormat,
    out: W,
    job: &Job,
) -> Result<(Exported, W), ExportError> {
    let Some(first) = members.first() else {
        return Err(ExportError::Write("no file to export from".into()));
    };
    let read = ReadColumns::new(columns, cut);
    let mut types = Vec::with_capacity(columns.len());
    for n in columns {
        types.push(match &n.quantity {
            Quantity::Branch(c) => {
                let info = &first.tree.columns[*c];
                let empty = info
                    .origin
                    .open(first.file)
                    .map_err(AnalysisError::from)?
                    .empty_column();
                arrow_type(&empty.values, empty.counts.is_some() || empty.inner > 1)
            }
            Quantity::Expression(plan) => arrow_type(&Values::F64(Vec::new()), plan.is_jagged()),
        });
    }
    let mut names: Vec<String> = columns.iter().map(|n| n.name.clone()).collect();
    if provenance.is_some() {
        names.extend(PROVENANCE.map(String::from));
        types.extend([DataType::Utf8, DataType::UInt64, DataType::UInt64]);
    }
    let mut writer = Writer::new(format, out, &names, &types)?;
    let total = chain_entries(members);
    let mut done = Exported {
        by_member: vec![Default::default(); members.len()],
        ..Exported::default()
    };
    let mut failure: Option<ExportError> = None;
    let predicate = cut.and_then(|p| Predicate::of(&p.root));
    // Without a cut the entries written are the first `limit`: the scan stops
    // there instead of decoding (ahead, beside the writer) a cluster past it.
    let entries = match cut {
        Some(_) => 0..total,
        None => 0..limit.min(total),
    };
    let scanned = scan(members, &read.columns, entries, cut, job, |w| {
        let slots: Vec<SlotData> = (0..read.columns.len()).map(|i| w.slot_data(i)).collect();
        let inputs = |map| Inputs {
            entries: w.len(),
            first_entry: w.global_start(),
            slots: &slots,
            map,
        };
        let mask = match cut {
            Some(plan) => Some(mask_cut(
                predicate.as_ref(),
                &plan.root,
                &inputs(&read.cut_map),
            )?),
            None => None,
        };
        let room = (limit - done.entries_written) as usize;
        let rows: Vec<usize> = match &mask {
            Some(m) => m
                .iter()
                .enumerate()
                .filter(|(_, p)| **p)
                .map(|(i, _)| i)
                .take(room)
                .collect(),
            None => (0..w.len().min(room)).collect(),
        };
        // Expressions are computed before anything is written: a window the
        // evaluator refuses (`TooLarge`) is handed over again in parts.
        let computed = if rows.is_empty() {
            Vec::new()
        } else {
            read.plans
                .iter()
                .zip(&read.plan_maps)
                .map(|(plan, map)| Ok(Computed::of(evaluate(&plan.root, &inputs(map))?, w.len())))
                .collect::<Result<Vec<_>, AnalysisError>>()?
        };
        done.stopped_at = w.first_entry + w.entries.end;
        done.by_member[w.member].scanned += w.len() as u64;
        if !rows.is_empty() {
            let whence = provenance.map(|files| window_provenance(&files[w.member], w));
            let mut parts: Vec<ColumnPart> = read
                .sources
                .iter()
                .map(|source| match source {
                    Source::Stored(i) => w.part(*i),
                    Source::Computed(k) => computed[*k].part(),
                })
                .collect();
            if let Some(columns) = &whence {
                parts.extend(columns.iter().map(|v| ColumnPart::computed(v, None)));
            }
            if let Err(e) = writer.window(&parts, &rows) {
                failure = Some(e);
                return Ok(false);
            }
            done.entries_written += rows.len() as u64;
            done.by_member[w.member].selected += rows.len() as u64;
        }
        Ok(done.entries_written < limit)
    });
    if let Some(e) = failure {
        // When the encoder stopped first, its own error says more.
        return Err(writer.finish().err().unwrap_or(e));
    }
    match scanned {
        Ok(read) => done.entries_scanned = read,
        Err(e) => {
            let _ = writer.finish();
            return Err(e.into());
        }
    }
    if done.entries_written < limit {
        done.stopped_at = total;
    }
    Ok((done, writer.finish()?))
}

/// The `PROVENANCE` columns of a window's entries: its member's `file`, each
/// entry's number in that file and in the dataset.
fn window_provenance(file: &str, w: &Window<'_, '_>) -> [Values; 3] {
    let global = w.global_start();
    [
        Values::Str(vec![file.to_string(); w.len()]),
        Values::U64(w.entries.clone().collect()),
        Values::U64((global..global + w.len() as u64).collect()),
    ]
}

/// How exported Parquet files are written (a cluster's parts joined too).
pub(super) fn parquet_properties() -> WriterProperties {
    // Dictionary encoding is off: event data (floats, event numbers) rarely
    // repeats, and building the dictionary took 40 % of an export before it
    // gave up on each page.
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_dictionary_enabled(false)
        // Values handed to the column encoders at a time: the default 1,024
        // spends a tenth of an export on per-batch work (levels, page checks).
        .set_write_batch_size(WINDOW as usize)
        .build()
}

/// Record batches waiting for the Parquet encoder at most: the scan runs
/// ahead of the encoder by this many windows, no more. Two hand-overs'
/// worth (`ENCODE_ROWS`), so that the scan fills the next while the encoder
/// works through the last, instead of each waiting on the other in turn.
const BATCHES_AHEAD: usize = 2 * ENCODE_ROWS / WINDOW as usize;

enum Writer<W: Write + Send + 'static> {
    Text {
        out: io::BufWriter<W>,
        json: bool,
        names: Vec<String>,
        first: bool,
        line: Vec<u8>,
    },
    /// Encoding and compressing the columns (arrow-rs) takes as long as
    /// reading them, so it runs on a thread of its own, fed window by window.
    Parquet {
        batches: SyncSender<RecordBatch>,
        encoder: JoinHandle<Result<W, ExportError>>,
        schema: SchemaRef,
    },
}

impl<W: Write + Send + 'static> Writer<W> {
    fn new(
        format: ExportFormat,
        out: W,
        names: &[String],
        types: &[DataType],
    ) -> Result<Writer<W>, ExportError> {
        match format {
            ExportFormat::Parquet => {
                let fields: Vec<Field> = names
                    .iter()
                    .zip(types)
                    .map(|(n, t)| Field::new(n, t.clone(), false))
                    .collect();
                let schema = Arc::new(Schema::new(fields));
                let writer = ArrowWriter::try_new(out, schema.clone(), Some(parquet_properties()))?;
                let (batches, received) = sync_channel::<RecordBatch>(BATCHES_AHEAD);
                let encoder = std::thread::Builder::new()
                    .name("quarry-parquet".into())
                    .spawn(move || encode_parquet(writer, received))?;
                Ok(Writer::Parquet {
                    batches,
                    encoder,
                    schema,
                })
            }
            ExportFormat::Json | ExportFormat::Csv => {
                let json = format == ExportFormat::Json;
                let mut out = io::BufWriter::with_capacity(1 << 20, out);
                if json {
                    out.write_all(b"[")?;
                } else {
                    let header: Vec<String> = names.iter().map(|n| csv_quoted(n)).collect();
                    out.write_all(header.join(",").as_bytes())?;
                    out.write_all(b"\n")?;
                }
                Ok(Writer::Text {
                    out,
                    json,
                    names: names.to_vec(),
                    first: true,
                    line: Vec::new(),
                })
            }
        }
    }

    /// Writes entries `rows` (window positions) of the columns' parts.
    fn window(&mut self, parts: &[ColumnPart<'_>], rows: &[usize]) -> Result<(), ExportError> {
        match self {
            Writer::Parquet {
                batches, schema, ..
            } => {
                let arrays: Vec<ArrayRef> = parts
                    .iter()
                    .zip(schema.fields())
                    .map(|(p, f)| gather(p, rows, f.data_type()))
                    .collect();
                // A send fails only once the encoder stopped on an error,
                // which `finish` returns.
                if batches
                    .send(RecordBatch::try_new(schema.clone(), arrays)?)
                    .is_err()
                {
                    return Err(ExportError::Write("the Parquet encoder stopped".into()));
                }
            }
            Writer::Text {
                out,
                json,
                names,
                first,
                line,
            } => {
                for &r in rows {
                    line.clear();
                    if *json {
                        line.extend_from_slice(if *first { b"\n{" } else { b",\n{" });
                    }
                    *first = false;
                    for (i, p) in parts.iter().enumerate() {
                        if *json {
                            if i > 0 {
                                line.push(b',');
                            }
                            serde_json::to_writer(&mut *line, &names[i])
                                .map_err(io::Error::from)?;
                            line.push(b':');
                            cell(line, p, r, true);
                        } else {
                            if i > 0 {
                                line.push(b',');
                            }
                            let is_list = p.is_list();
                            let quoted = is_list || matches!(p.values, Values::Str(_));
                            if quoted {
                                let mut text = Vec::new();
                                cell(&mut text, p, r, is_list);
                                let s = String::from_utf8_lossy(&text);
                                line.extend_from_slice(csv_quoted(&s).as_bytes());
                            } else {
                                cell(line, p, r, false);
                            }
                        }
                    }
                    line.extend_from_slice(if *json { b"}" } else { b"\n" });
                    out.write_all(line)?;
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<W, ExportError> {
        match self {
            Writer::Parquet {
                batches, encoder, ..
            } => {
                drop(batches);
                encoder.join().unwrap_or_else(|_| {
                    Err(ExportError::Write("the Parquet encoder failed".into()))
                })
            }
            Writer::Text { mut out, json, .. } => {
                if json {
                    out.write_all(b"\n]\n")?;
                }
                out.into_inner()
                    .map_err(|e| ExportError::Write(e.error().to_string()))
            }
        }
    }
}

/// Rows the Parquet encoder gathers before handing them to its column writers:
/// each hand-over is a round trip through the thread pool, which at one
/// window (8,192 rows) at a time cost more than the encoding.
const ENCODE_ROWS: usize = 64 * 1024;

/// The Parquet encoder: each row group's columns are encoded side by side
/// (arrow-rs's column writers, one per field: every exported field is one
/// leaf), then appended to the file in order.
fn encode_parquet<W: Write + Send>(
    writer: ArrowWriter<W>,
    batches: Receiver<RecordBatch>,
) -> Result<W, ExportError> {
    let (mut file, factory) = writer.into_serialized_writer()?;
    let mut group = 0;
    let mut columns = factory.create_column_writers(group)?;
    let (mut rows, mut pending_rows) = (0, 0);
    let mut pending: Vec<RecordBatch> = Vec::new();
    let mut costs: Vec<u64> = Vec::new();
    let append = |file: &mut SerializedFileWriter<W>,
                  columns: Vec<ArrowColumnWriter>|
     -> Result<(), ExportError> {
        let mut row_group = file.next_row_group()?;
        for c in columns {
            c.close()?.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        Ok(())
    };
    loop {
        let received = batches.recv().ok();
        let closed = received.is_none();
        if let Some(batch) = received {
            pending_rows += batch.num_rows();
            pending.push(batch);
        }
        let group_full = rows + pending_rows >= ROW_GROUP;
        if !(closed || group_full || pending_rows >= ENCODE_ROWS) {
            continue;
        }
        if !pending.is_empty() {
            encode_columns(&mut columns, &pending, &mut costs)?;
            rows += std::mem::take(&mut pending_rows);
            pending.clear();
        }
        if group_full {
            group += 1;
            let full = std::mem::replace(&mut columns, factory.create_column_writers(group)?);
            append(&mut file, full)?;
            rows = 0;
        }
        if closed {
            break;
        }
    }
    if rows > 0 {
        append(&mut file, columns)?;
    }
    Ok(file.into_inner()?)
}

/// Encodes `batches` into the column writers, side by side in groups of
/// columns balanced by `costs` (each column's encoding time the last time,
/// its buffers' size the first): a collection's column can take as long as
/// all the others, and two columns to a core by position would pair it with
/// another while a core waits.
fn encode_columns(
    columns: &mut [ArrowColumnWriter],
    batches: &[RecordBatch],
    costs: &mut Vec<u64>,
) -> Result<(), ExportError> {
    use rayon::prelude::*;
    let schema = batches[0].schema();
    if costs.len() != columns.len() {
        *costs = (0..columns.len())
            .map(|i| batches[0].column(i).get_buffer_memory_size() as u64)
            .collect();
    }
    let groups = super::balanced_groups(costs, rayon::current_num_threads().max(1));
    let mut writers: Vec<Option<&mut ArrowColumnWriter>> = columns.iter_mut().map(Some).collect();
    let work: Vec<Vec<(usize, &mut ArrowColumnWriter)>> = groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|&k| (k, writers[k].take().expect("each column in one group")))
                .collect()
        })
        .collect();
    let timed: Vec<Vec<(usize, u64)>> = work
        .into_par_iter()
        .with_max_len(1)
        .map(|group| {
            group
                .into_iter()
                .map(|(k, writer)| {
                    let started = std::time::Instant::now();
                    let field = schema.field(k);
                    for batch in batches {
                        for leaf in compute_leaves(field, batch.column(k))? {
                            writer.write(&leaf)?;
                        }
                    }
                    Ok((k, started.elapsed().as_nanos() as u64))
                })
                .collect::<Result<Vec<_>, ExportError>>()
        })
        .collect::<Result<_, _>>()?;
    for (k, nanos) in timed.into_iter().flatten() {
        costs[k] = nanos.max(1);
    }
    Ok(())
}

fn csv_quoted(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with('[') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The value(s) of entry `r` of a part: JSON text (numbers, `null` for NaN and
/// infinities, strings quoted, collections as arrays) when `json`, else CSV
/// text (`nan`, `inf`, `-inf`; strings bare, quoted by the caller).
fn cell(out: &mut Vec<u8>, p: &ColumnPart<'_>, r: usize, json: bool) {
    let Range { start: a, end: b } = p.entry(r);
    if p.is_list() {
        out.push(b'[');
        for i in a..b {
            if i > a {
                out.push(b',');
            }
            number(out, p.values, i, true);
        }
        out.push(b']');
    } else {
        number(out, p.values, a, json);
    }
}

fn number(out: &mut Vec<u8>, values: &Values, i: usize, json: bool) {
    fn float(out: &mut Vec<u8>, x: impl Into<f64> + std::fmt::Display + Copy, json: bool) {
        let v: f64 = x.into();
        if v.is_finite() {
            let _ = write!(out, "{x}");
        } else if json {
            out.extend_from_slice(b"null");
        } else if v.is_nan() {
            out.extend_from_slice(b"nan");
        } else if v > 0.0 {
            out.extend_from_slice(b"inf");
        } else {
            out.extend_from_slice(b"-inf");
        }
    }
    let _ = match values {
        Values::Bool(v) => write!(out, "{}", v[i]),
        Values::I8(v) => write!(out, "{}", v[i]),
        Values::U8(v) => write!(out, "{}", v[i]),
        Values::I16(v) => write!(out, "{}", v[i]),
        Values::U16(v) => write!(out, "{}", v[i]),
        Values::I32(v) => write!(out, "{}", v[i]),
        Values::U32(v) => write!(out, "{}", v[i]),
        Values::I64(v) => write!(out, "{}", v[i]),
        Values::U64(v) => write!(out, "{}", v[i]),
        Values::F32(v) => {
            float(out, v[i], json);
            Ok(())
        }
        Values::F64(v) => {
            float(out, v[i], json);
            Ok(())
        }
        Values::Str(v) => {
            if json {
                let _ = serde_json::to_writer(&mut *out, &v[i]);
            } else {
                out.extend_from_slice(v[i].as_bytes());
            }
            Ok(())
        }
    };
}

fn value_type(values: &Values) -> DataType {
    match values {
        Values::Bool(_) => DataType::Boolean,
        Values::I8(_) => DataType::Int8,
        Values::U8(_) => DataType::UInt8,
        Values::I16(_) => DataType::Int16,
        Values::U16(_) => DataType::UInt16,
        Values::I32(_) => DataType::Int32,
        Values::U32(_) => DataType::UInt32,
        Values::I64(_) => DataType::Int64,
        Values::U64(_) => DataType::UInt64,
        Values::F32(_) => DataType::Float32,
        Values::F64(_) => DataType::Float64,
        Values::Str(_) => DataType::Utf8,
    }
}

/// A column's Arrow type: its values', or a list of them for a collection or
/// a fixed array.
fn arrow_type(values: &Values, list: bool) -> DataType {
    let inner = value_type(values);
    if list {
        DataType::List(Arc::new(Field::new("item", inner, false)))
    } else {
        inner
    }
}

/// The values of entries `rows` of a part as an Arrow array of type `ty`.
fn gather(p: &ColumnPart<'_>, rows: &[usize], ty: &DataType) -> ArrayRef {
    let (offsets, runs) = element_runs(p, rows, matches!(ty, DataType::List(_)));
    let total = runs.iter().map(|r| r.len()).sum();
    macro_rules! prim {
        ($v:expr, $t:ty) => {{
            let mut out = Vec::with_capacity(total);
            for run in &runs {
                out.extend_from_slice(&$v[run.clone()]);
            }
            Arc::new(PrimitiveArray::<$t>::from(out)) as ArrayRef
        }};
    }
    let elements = || runs.iter().flat_map(|run| run.clone());
    let values: ArrayRef = match p.values {
        Values::Bool(v) => {
            let mut b = BooleanBuilder::with_capacity(total);
            elements().for_each(|i| b.append_value(v[i]));
            Arc::new(b.finish())
        }
        Values::I8(v) => prim!(v, Int8Type),
        Values::U8(v) => prim!(v, UInt8Type),
        Values::I16(v) => prim!(v, Int16Type),
        Values::U16(v) => prim!(v, UInt16Type),
        Values::I32(v) => prim!(v, Int32Type),
        Values::U32(v) => prim!(v, UInt32Type),
        Values::I64(v) => prim!(v, Int64Type),
        Values::U64(v) => prim!(v, UInt64Type),
        Values::F32(v) => prim!(v, Float32Type),
        Values::F64(v) => prim!(v, Float64Type),
        Values::Str(v) => {
            let mut b = StringBuilder::new();
            elements().for_each(|i| b.append_value(&v[i]));
            Arc::new(b.finish())
        }
    };
    match ty {
        DataType::List(field) => Arc::new(ListArray::new(
            field.clone(),
            arrow_buffer_offsets(offsets),
            values,
            None,
        )),
        _ => values,
    }
}

fn arrow_buffer_offsets(offsets: Vec<i32>) -> arrow_buffer::OffsetBuffer<i32> {
    arrow_buffer::OffsetBuffer::new(offsets.into())
}

/// The elements of entries `rows` (ascending window positions) as runs of
/// consecutive elements, and, for a list column, where each row's elements
/// start in them (`rows.len() + 1` offsets; none for other columns).
fn element_runs(p: &ColumnPart<'_>, rows: &[usize], list: bool) -> (Vec<i32>, Vec<Range<usize>>) {
    let mut offsets: Vec<i32> = Vec::with_capacity(if list { rows.len() + 1 } else { 0 });
    if list {
        offsets.push(0);
    }
    // Rows without gaps (every row of a window without a cut) are one run.
    if let (Some(&first), Some(&last)) = (rows.first(), rows.last())
        && last - first + 1 == rows.len()
    {
        let start = p.entry(first).start;
        if list {
            offsets.extend(rows.iter().map(|&r| (p.entry(r).end - start) as i32));
        }
        let run = start..p.entry(last).end;
        return (offsets, std::iter::once(run).collect());
    }
    let mut runs: Vec<Range<usize>> = Vec::new();
    let mut total = 0;
    for &r in rows {
        let e = p.entry(r);
        total += e.len();
        if list {
            offsets.push(total as i32);
        }
        match runs.last_mut() {
            Some(last) if last.end == e.start => last.end = e.end,
            _ if e.is_empty() => {}
            _ => runs.push(e),
        }
    }
    (offsets, runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Int64Array};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    /// Batches of uneven sizes (a cut's windows) spanning several row groups
    /// and hand-overs to the column writers come back whole and in order, in
    /// row groups of `ROW_GROUP` rows (the window that reaches it included).
    #[test]
    fn the_encoder_keeps_every_row_in_order_across_groups() {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        let props = WriterProperties::builder().build();
        let file = tempfile::tempfile().unwrap();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).unwrap();
        let (send, received) = sync_channel::<RecordBatch>(BATCHES_AHEAD);
        let encoder = std::thread::spawn(move || encode_parquet(writer, received));
        let sizes: Vec<usize> = (0..150).map(|i| [8192, 3001, 1, 7777][i % 4]).collect();
        let total: usize = sizes.iter().sum();
        let mut next = 0i64;
        for n in &sizes {
            let values: Int64Array = (next..next + *n as i64).collect();
            next += *n as i64;
            let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(values)]).unwrap();
            send.send(batch).unwrap();
        }
        drop(send);
        let file = encoder.join().unwrap().unwrap();

        let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        let groups: Vec<usize> = reader
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows() as usize)
            .collect();
        assert_eq!(groups.iter().sum::<usize>(), total);
        let (last, full) = groups.split_last().unwrap();
        assert!(
            full.iter()
                .all(|&g| (ROW_GROUP..ROW_GROUP + 8192).contains(&g)),
            "{groups:?}"
        );
        assert!(*last <= ROW_GROUP + 8192);
        let mut expected = 0i64;
        for batch in reader.build().unwrap() {
            let batch = batch.unwrap();
            let column = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            for v in column.iter() {
                assert_eq!(v, Some(expected));
                expected += 1;
            }
        }
        assert_eq!(expected as usize, total);
    }
}
