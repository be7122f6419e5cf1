//! Reading a column's baskets with the help of its counter leaf. A counter
//! leaf's arrays (`muon_pt[nMuon]`) store their values, then a table of where
//! each entry starts, 4 bytes per entry. On zlib, the one algorithm
//! decompressed only as far as the bytes wanted, the counter's counts say
//! where the values end: the table is never inflated (a third of the
//! benchmark's jagged baskets' inflating), and a page early in a basket
//! inflates only the values up to it.
//!
//! The columns of one set of readers share each counter, which keeps the
//! basket it decoded last: `muon_pt` and `muon_eta` read `nMuon`'s basket
//! once per set, not once each, and `nMuon` read as a column of the set too
//! is a copy of that basket.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::AnalysisError;
use super::plan::TreeColumns;
use super::source::SourceReader;
use crate::formats::FormatError;
use crate::formats::root::{Column, LeafType, RootFile, StoredBasket, Values};

/// A column's basket reader, with the counter that spares it inflating its
/// offset tables, where there is one and it pays.
pub struct CountedReader<'f> {
    reader: SourceReader<'f>,
    /// The counter of this column's arrays.
    counter: Option<Arc<Counter<'f>>>,
    /// This column is itself the counter of others in the set: its baskets
    /// are the ones the counter keeps, decoded once for all.
    counting: Option<Arc<Counter<'f>>>,
}

/// An integer counter leaf, read for the item counts of the arrays it counts.
struct Counter<'f> {
    reader: SourceReader<'f>,
    /// The basket decoded last, at least its first `entries` of them.
    last: Mutex<Option<(usize, Column)>>,
}

/// Readers of `columns` (indices into `tree.columns`), the columns counted by
/// one counter sharing it (with the counter's own column, when read too).
pub fn open_readers<'f>(
    file: &'f RootFile,
    tree: &TreeColumns<'f>,
    columns: &[usize],
) -> Result<Vec<CountedReader<'f>>, AnalysisError> {
    let mut readers = Vec::with_capacity(columns.len());
    let mut counted_by = Vec::with_capacity(columns.len());
    for &c in columns {
        let reader = tree.columns[c].origin.open(file)?;
        counted_by.push(counter_column(tree, c, &reader));
        readers.push(reader);
    }
    let mut counters: HashMap<usize, Arc<Counter<'f>>> = HashMap::new();
    for &k in counted_by.iter().flatten() {
        if let Entry::Vacant(slot) = counters.entry(k) {
            slot.insert(Arc::new(Counter {
                reader: tree.columns[k].origin.open(file)?,
                last: Mutex::new(None),
            }));
        }
    }
    Ok(readers
        .into_iter()
        .zip(columns.iter().zip(counted_by))
        .map(|(reader, (c, k))| CountedReader {
            reader,
            counter: k.and_then(|k| counters.get(&k).cloned()),
            counting: counters.get(c).cloned(),
        })
        .collect())
}

/// The counter of column `c` when reading its baskets through it pays: a
/// counter leaf's arrays on zlib, counted by an integer scalar.
fn counter_column(tree: &TreeColumns<'_>, c: usize, reader: &SourceReader<'_>) -> Option<usize> {
    if !reader.head_needs_counts() || !reader.inflates_part_way() {
        return None;
    }
    let counter = tree.find(tree.columns[c].counter.as_deref()?)?;
    let integer_scalar = tree.columns[counter].layout.as_ref().is_ok_and(|l| {
        !l.jagged && l.inner == 1 && matches!(l.leaf_type, LeafType::Prim(p) if p.is_integer())
    });
    integer_scalar.then_some(counter)
}

impl<'f> CountedReader<'f> {
    /// For a column of a remote file: the file and the stored bytes of the
    /// chunks holding `entries`, its counter's included.
    pub fn remote_chunks(
        &self,
        entries: &Range<u64>,
    ) -> Option<(&'f crate::formats::root::RootFile, Vec<Range<u64>>)> {
        let (file, mut ranges) = self.reader.remote_chunks(entries)?;
        if let Some((_, more)) = self
            .counter
            .as_ref()
            .and_then(|c| c.reader.remote_chunks(entries))
        {
            ranges.extend(more);
        }
        Some((file, ranges))
    }
}

impl CountedReader<'_> {
    /// The entries of each basket, in order.
    pub fn basket_ranges(&self) -> &[Range<u64>] {
        self.reader.basket_ranges()
    }

    /// An empty column of this reader's layout, to read baskets into.
    pub fn empty_column(&self) -> Column {
        self.reader.empty_column()
    }

    /// Whether this column's baskets can be read as stored
    /// (`ColumnReader::keeps_stored`): a column of numbers, one per entry,
    /// that is not the counter of others (whose decoded baskets they share).
    pub fn keeps_stored(&self) -> bool {
        self.counting.is_none() && self.reader.keeps_stored()
    }

    /// Reads basket `index` as stored into `into`.
    pub fn read_stored(
        &self,
        index: usize,
        into: &mut Option<StoredBasket>,
    ) -> Result<(), AnalysisError> {
        Ok(self.reader.read_stored(index, into)?)
    }

    /// Entries `entries` of a stored basket, converted into `into`.
    pub fn convert(&self, stored: &StoredBasket, entries: Range<usize>, into: &mut Column) {
        self.reader.convert(stored, entries, into);
    }

    /// Gives a stored basket's buffer back to the reader.
    pub fn recycle(&self, stored: StoredBasket) {
        self.reader.recycle(stored);
    }

    /// Decodes basket `index` whole into `into`.
    pub fn read_basket(&self, index: usize, into: &mut Column) -> Result<(), AnalysisError> {
        self.read_basket_head(index, usize::MAX, into)
    }

    /// Decodes the first `entries` entries of basket `index` into `into`, at
    /// least (all of them past the basket's end): with a counter, only their
    /// values are decompressed.
    pub fn read_basket_head(
        &self,
        index: usize,
        entries: usize,
        into: &mut Column,
    ) -> Result<(), AnalysisError> {
        let range = self.reader.basket_ranges().get(index).cloned();
        let Some(range) = range else {
            return Ok(self.reader.read_basket_head(index, entries, None, into)?);
        };
        let head = (entries as u64).min(range.end - range.start) as usize;
        if let Some(counting) = &self.counting {
            let last = counting.basket(index, head)?;
            into.copy_from(&last.as_ref().expect("the basket just kept").1);
            return Ok(());
        }
        let Some(counter) = &self.counter else {
            return Ok(self.reader.read_basket_head(index, entries, None, into)?);
        };
        // A whole basket is a scan's: its counter's baskets are decoded whole,
        // once, for this basket and the next ones they also count (decoded
        // only as far as each basket needs, a counter basket spanning four
        // would be decoded two and a half times over).
        let whole = head as u64 == range.end - range.start;
        let counts = counter.counts(range.start..range.start + head as u64, whole)?;
        Ok(self
            .reader
            .read_basket_head(index, head, Some(&counts), into)?)
    }
}

/// The counter's kept basket, locked.
type Kept<'a> = MutexGuard<'a, Option<(usize, Column)>>;

impl Counter<'_> {
    /// The kept basket, made basket `index` decoded through its first
    /// `through` entries at least (a page wants only a head).
    fn basket(&self, index: usize, through: usize) -> Result<Kept<'_>, AnalysisError> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = matches!(&*last, Some((i, c)) if *i == index && c.entries >= through);
        if !kept {
            let mut column = match last.take() {
                Some((_, column)) => column,
                None => self.reader.empty_column(),
            };
            self.reader
                .read_basket_head(index, through, None, &mut column)?;
            *last = Some((index, column));
        }
        Ok(last)
    }

    /// The item counts of `entries`, from the counter's baskets (decoded
    /// `whole`, else only as far as `entries` go), the last one kept for the
    /// next column or basket that asks.
    fn counts(&self, entries: Range<u64>, whole: bool) -> Result<Vec<u32>, AnalysisError> {
        let mut counts = Vec::with_capacity((entries.end - entries.start) as usize);
        let ranges = self.reader.basket_ranges();
        let mut index = ranges.partition_point(|r| r.end <= entries.start);
        while let Some(range) = ranges.get(index).filter(|r| r.start < entries.end) {
            let through = (entries.end.min(range.end) - range.start) as usize;
            let decoded = if whole {
                (range.end - range.start) as usize
            } else {
                through
            };
            let last = self.basket(index, decoded)?;
            let column = &last.as_ref().expect("the basket just kept").1;
            let from = (entries.start.max(range.start) - range.start) as usize;
            push_counts(&column.values, from..through, &mut counts)?;
            index += 1;
        }
        if counts.len() as u64 != entries.end - entries.start {
            return Err(corrupt(format!(
                "the counter's baskets end before entry {}",
                entries.end
            )));
        }
        Ok(counts)
    }
}

fn corrupt(why: String) -> AnalysisError {
    AnalysisError::Format(FormatError::Corrupt(why))
}

/// `values[span]` of an integer counter appended to `out` as item counts; a
/// negative (or huge) count is corrupt data.
fn push_counts(
    values: &Values,
    span: Range<usize>,
    out: &mut Vec<u32>,
) -> Result<(), AnalysisError> {
    // Converted as they come and checked once at the end, so that the loop
    // has no exit and vectorises.
    fn add<T: Copy + TryInto<u32>>(v: &[T], out: &mut Vec<u32>) -> Result<(), AnalysisError> {
        let mut all_fit = true;
        out.extend(v.iter().map(|&n| {
            let count: Option<u32> = n.try_into().ok();
            all_fit &= count.is_some();
            count.unwrap_or(0)
        }));
        if !all_fit {
            return Err(corrupt(
                "a counter leaf holds a negative or huge count".into(),
            ));
        }
        Ok(())
    }
    match values {
        Values::I8(v) => add(&v[span], out),
        Values::U8(v) => add(&v[span], out),
        Values::I16(v) => add(&v[span], out),
        Values::U16(v) => add(&v[span], out),
        Values::I32(v) => add(&v[span], out),
        Values::U32(v) => add(&v[span], out),
        Values::I64(v) => add(&v[span], out),
        Values::U64(v) => add(&v[span], out),
        _ => Err(corrupt("a counter leaf that is not an integer".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::root::{Key, RootFile};

    fn open(name: &str) -> RootFile {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/root")
            .join(name);
        RootFile::open(std::fs::File::open(path).unwrap()).unwrap()
    }

    fn tree_key(file: &RootFile) -> Key {
        let keys = file.walk().unwrap();
        keys.into_iter()
            .find(|k| k.key.class_name == "TTree")
            .unwrap()
            .key
    }

    /// Every basket of every counted column, read through its counter (its
    /// values only), holds what the basket's own offset table gives, and the
    /// counters read as columns hold what they hold read alone; the counter is
    /// used on zlib files only, and shared by the columns it counts.
    #[test]
    fn counted_baskets_hold_what_their_offset_tables_give() {
        for (name, zlib) in [
            ("nanoAOD_2015_CMS_Open_Data_ttbar.root", true),
            ("uproot-HZZ-zlib.root", true),
            ("uproot-HZZ-lz4.root", false),
        ] {
            let file = open(name);
            let tree = file.tree(&tree_key(&file)).unwrap();
            let columns = TreeColumns::new(&tree);
            let all: Vec<usize> = (0..columns.columns.len())
                .filter(|&c| columns.columns[c].layout.is_ok())
                .collect();
            let readers = open_readers(&file, &columns, &all).unwrap();
            let counted = readers.iter().filter(|r| r.counter.is_some()).count();
            assert_eq!(counted > 0, zlib, "{name}: {counted} counted columns");
            let counters: std::collections::HashSet<*const Counter<'_>> = readers
                .iter()
                .filter_map(|r| r.counter.as_ref().map(Arc::as_ptr))
                .collect();
            assert!(
                counters.len() < counted || counted == 0,
                "{name}: not shared"
            );
            let counting = readers.iter().filter(|r| r.counting.is_some()).count();
            assert_eq!(counting, counters.len(), "{name}: counters read as columns");
            for (reader, &c) in readers.iter().zip(&all) {
                let plain = columns.columns[c].origin.open(&file).unwrap();
                let (mut via_counter, mut via_table) =
                    (reader.empty_column(), plain.empty_column());
                for index in 0..reader.basket_ranges().len() {
                    reader.read_basket(index, &mut via_counter).unwrap();
                    plain.read_basket(index, &mut via_table).unwrap();
                    // Debug forms: NaN is not equal to itself.
                    assert_eq!(
                        format!("{via_counter:?}"),
                        format!("{via_table:?}"),
                        "{name} {}",
                        columns.columns[c].path
                    );
                }
            }
        }
    }

    /// A scan reads each counter basket once however many of the counted
    /// column's baskets it spans (uproot-HZZ-zlib.root: `NMuon` has one
    /// basket, `Muon_Px` two).
    #[test]
    fn a_scan_reads_each_counter_basket_once() {
        let file = open("uproot-HZZ-zlib.root");
        let tree = file.tree(&tree_key(&file)).unwrap();
        let columns = TreeColumns::new(&tree);
        let (c, k) = (
            columns.find("Muon_Px").unwrap(),
            columns.find("NMuon").unwrap(),
        );
        let stored = |i: usize| -> u64 {
            let b = columns.columns[i].origin.branch().unwrap();
            b.basket_bytes[..b.write_basket]
                .iter()
                .map(|&n| n as u64)
                .sum()
        };
        assert_eq!(columns.columns[c].origin.branch().unwrap().write_basket, 2);
        assert_eq!(columns.columns[k].origin.branch().unwrap().write_basket, 1);
        let readers = open_readers(&file, &columns, &[c]).unwrap();
        let mut column = readers[0].empty_column();
        let before = file.bytes_read();
        for index in 0..2 {
            readers[0].read_basket(index, &mut column).unwrap();
        }
        assert_eq!(file.bytes_read() - before, stored(c) + stored(k));
    }

    /// Counts that do not account for every byte of a basket's values are
    /// corrupt data, not a shorter read.
    #[test]
    fn counts_that_disagree_with_a_basket_are_corrupt() {
        let file = open("uproot-HZZ-zlib.root");
        let tree = file.tree(&tree_key(&file)).unwrap();
        let columns = TreeColumns::new(&tree);
        let c = columns.find("Muon_Px").unwrap();
        let reader = columns.columns[c].origin.open(&file).unwrap();
        let k = columns.find("NMuon").unwrap();
        let counter = Counter {
            reader: columns.columns[k].origin.open(&file).unwrap(),
            last: Mutex::new(None),
        };
        let n = reader.basket_ranges()[0].end;
        let mut counts = counter.counts(0..n, true).unwrap();
        let n = n as usize;
        let mut column = reader.empty_column();
        let right = reader.read_basket_head(0, n, Some(&counts), &mut column);
        assert!(right.is_ok(), "{right:?}");
        let last = counts.iter().rposition(|&c| c > 0).unwrap();
        counts[last] -= 1;
        let wrong = reader.read_basket_head(0, n, Some(&counts), &mut column);
        assert!(
            matches!(&wrong, Err(FormatError::Corrupt(why)) if why.contains("entries wanted take")),
            "{wrong:?}"
        );
    }
}
