//! Decoding a branch into a column: typed values for all entries at once, plus
//! per-entry counts for jagged data. This covers plain TBranches with one leaf of
//! a basic type: scalars, fixed-size arrays, C-style variable arrays with a
//! counter leaf, and `char*` strings.

use super::RootFile;
use super::basket::Basket;
use super::cursor::Cursor;
use super::tree::{Branch, Leaf};
use crate::formats::FormatError;

/// A basic element type, as a leaf class and its signedness give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prim {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl Prim {
    pub fn size(self) -> usize {
        match self {
            Prim::Bool | Prim::I8 | Prim::U8 => 1,
            Prim::I16 | Prim::U16 => 2,
            Prim::I32 | Prim::U32 | Prim::F32 => 4,
            Prim::I64 | Prim::U64 | Prim::F64 => 8,
        }
    }

    /// The numpy-style name (`float32`, `uint64`, `bool`...).
    pub fn name(self) -> &'static str {
        match self {
            Prim::Bool => "bool",
            Prim::I8 => "int8",
            Prim::U8 => "uint8",
            Prim::I16 => "int16",
            Prim::U16 => "uint16",
            Prim::I32 => "int32",
            Prim::U32 => "uint32",
            Prim::I64 => "int64",
            Prim::U64 => "uint64",
            Prim::F32 => "float32",
            Prim::F64 => "float64",
        }
    }
}

/// What a leaf's entries are made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafType {
    Prim(Prim),
    Str,
}

impl LeafType {
    pub fn of(leaf: &Leaf) -> Result<LeafType, FormatError> {
        let u = leaf.is_unsigned;
        let prim = match leaf.class_name.as_str() {
            "TLeafO" => Prim::Bool,
            "TLeafB" => {
                if u {
                    Prim::U8
                } else {
                    Prim::I8
                }
            }
            "TLeafS" => {
                if u {
                    Prim::U16
                } else {
                    Prim::I16
                }
            }
            "TLeafI" => {
                if u {
                    Prim::U32
                } else {
                    Prim::I32
                }
            }
            "TLeafL" => {
                if u {
                    Prim::U64
                } else {
                    Prim::I64
                }
            }
            "TLeafF" => Prim::F32,
            "TLeafD" => Prim::F64,
            "TLeafC" => return Ok(LeafType::Str),
            other => return Err(FormatError::Unsupported(format!("leaf class {other}"))),
        };
        Ok(LeafType::Prim(prim))
    }
}

/// A branch's type in uproot's numpy-style spelling: `float32`, `float32[]`
/// (jagged), `int32[3]` (fixed array), `string`; "unsupported" for what the
/// column decoder cannot read yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchType {
    pub name: String,
    /// The numpy dtype when the branch is a plain scalar.
    pub dtype: Option<String>,
    pub jagged: bool,
    /// The counter leaf of a jagged branch.
    pub counter: Option<String>,
}

/// Element types of `std::vector<T>` branches, by T's C++ name.
fn vector_element(class: &str) -> Option<Prim> {
    let inner = class.strip_prefix("vector<")?.strip_suffix('>')?.trim();
    Some(match inner {
        "bool" => Prim::Bool,
        "char" | "Char_t" | "int8_t" => Prim::I8,
        "unsigned char" | "UChar_t" | "uint8_t" => Prim::U8,
        "short" | "Short_t" | "int16_t" => Prim::I16,
        "unsigned short" | "UShort_t" | "uint16_t" => Prim::U16,
        "int" | "Int_t" | "int32_t" => Prim::I32,
        "unsigned int" | "UInt_t" | "uint32_t" => Prim::U32,
        "long" | "Long64_t" | "long long" | "int64_t" => Prim::I64,
        "unsigned long" | "ULong64_t" | "unsigned long long" | "uint64_t" => Prim::U64,
        "float" | "Float_t" => Prim::F32,
        "double" | "Double_t" => Prim::F64,
        _ => return None,
    })
}

/// The basic type of a streamer type code (ROOT's EDataType): 1 char, 2 short,
/// 3 int, 4 long, 5 float, 6 counter (int), 8 double, 11-14 unsigned char, short,
/// int, long, 16-17 (unsigned) long long, 18 bool.
fn prim_of_code(code: i32, leaf: Option<&Leaf>) -> Option<Prim> {
    let unsigned = leaf.is_some_and(|l| l.is_unsigned);
    Some(match code {
        1 => Prim::I8,
        2 => Prim::I16,
        3 => Prim::I32,
        6 if unsigned => Prim::U32,
        6 => Prim::I32,
        4 | 16 => Prim::I64,
        5 => Prim::F32,
        8 => Prim::F64,
        11 => Prim::U8,
        12 => Prim::U16,
        13 => Prim::U32,
        14 | 17 => Prim::U64,
        18 => Prim::Bool,
        _ => return None,
    })
}

/// How a branch's entries are stored, for the layouts the decoder reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decoding {
    leaf_type: LeafType,
    /// Items per element of fixed arrays (`[10]`), 1 otherwise.
    inner: usize,
    jagged: bool,
    /// Bytes before each jagged entry's items.
    entry_header: usize,
}

fn decoding(branch: &Branch) -> Result<Decoding, FormatError> {
    let unsupported = |why: String| {
        Err(FormatError::Unsupported(format!(
            "branch '{}': {why}",
            branch.name
        )))
    };
    if let Some(element) = &branch.element {
        if !branch.branches.is_empty() {
            return unsupported("an object split into sub-branches; read the sub-branches".into());
        }
        let leaf = branch.leaves.first();
        let fixed = leaf.map_or(1, |l| usize::try_from(l.len.max(1)).unwrap_or(1));
        let st = element.streamer_type;
        let (code, inner, jagged, entry_header) = match st {
            65 => {
                return Ok(Decoding {
                    leaf_type: LeafType::Str,
                    inner: 1,
                    jagged: false,
                    entry_header: 0,
                });
            }
            1..=18 => (st, 1, false, 0),
            21..=38 => (st - 20, fixed, false, 0),
            41..=58 => (st - 40, 1, true, 1),
            _ => {
                return unsupported(format!(
                    "streamer type {st} needs the streamer info (not read yet)"
                ));
            }
        };
        let Some(prim) = prim_of_code(code, leaf) else {
            return unsupported(format!("streamer type {st}"));
        };
        return Ok(Decoding {
            leaf_type: LeafType::Prim(prim),
            inner,
            jagged,
            entry_header,
        });
    }
    let [leaf] = branch.leaves.as_slice() else {
        return unsupported(format!(
            "{} leaves (leaf lists come later)",
            branch.leaves.len()
        ));
    };
    let leaf_type = LeafType::of(leaf)?;
    Ok(Decoding {
        leaf_type,
        inner: usize::try_from(leaf.len.max(1)).unwrap_or(1),
        jagged: leaf.count.is_some() && leaf_type != LeafType::Str,
        entry_header: 0,
    })
}

/// The type of a branch, as list_branches shows it.
pub fn branch_type(branch: &Branch) -> BranchType {
    let unsupported = || BranchType {
        name: "unsupported".into(),
        dtype: None,
        jagged: false,
        counter: None,
    };
    if let Some(element) = &branch.element
        && let Some(p) = vector_element(&element.class_name)
        && branch.branches.is_empty()
    {
        return BranchType {
            name: format!("{}[]", p.name()),
            dtype: None,
            jagged: true,
            counter: None,
        };
    }
    let counter = branch.leaves.first().and_then(|l| l.count.clone());
    match decoding(branch) {
        Ok(Decoding {
            leaf_type: LeafType::Str,
            ..
        }) => BranchType {
            name: "string".into(),
            dtype: None,
            jagged: false,
            counter: None,
        },
        Ok(Decoding {
            leaf_type: LeafType::Prim(p),
            inner,
            jagged,
            ..
        }) => {
            let (name, dtype) = match (jagged, inner) {
                (true, 1) => (format!("{}[]", p.name()), None),
                (true, n) => (format!("{}[][{n}]", p.name()), None),
                (false, n) if n > 1 => (format!("{}[{n}]", p.name()), None),
                (false, _) => (p.name().to_string(), Some(p.name().to_string())),
            };
            BranchType {
                name,
                dtype,
                jagged,
                counter: if jagged { counter } else { None },
            }
        }
        Err(_) => unsupported(),
    }
}

/// A column's values, flattened in entry order.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    Bool(Vec<bool>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    I16(Vec<i16>),
    U16(Vec<u16>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Str(Vec<String>),
}

macro_rules! extend_be {
    ($vec:expr, $bytes:expr, $t:ty, $n:literal) => {
        $vec.extend(
            $bytes
                .chunks_exact($n)
                .map(|b| <$t>::from_be_bytes(b.try_into().expect("chunk size"))),
        )
    };
}

impl Values {
    fn empty(t: LeafType) -> Values {
        match t {
            LeafType::Str => Values::Str(Vec::new()),
            LeafType::Prim(p) => match p {
                Prim::Bool => Values::Bool(Vec::new()),
                Prim::I8 => Values::I8(Vec::new()),
                Prim::U8 => Values::U8(Vec::new()),
                Prim::I16 => Values::I16(Vec::new()),
                Prim::U16 => Values::U16(Vec::new()),
                Prim::I32 => Values::I32(Vec::new()),
                Prim::U32 => Values::U32(Vec::new()),
                Prim::I64 => Values::I64(Vec::new()),
                Prim::U64 => Values::U64(Vec::new()),
                Prim::F32 => Values::F32(Vec::new()),
                Prim::F64 => Values::F64(Vec::new()),
            },
        }
    }

    /// Appends big-endian elements (`bytes` holds whole elements).
    fn extend_from_be(&mut self, bytes: &[u8]) {
        macro_rules! reserve {
            ($v:expr, $size:expr) => {
                $v.reserve(bytes.len() / $size)
            };
        }
        match self {
            Values::I16(v) => reserve!(v, 2),
            Values::U16(v) => reserve!(v, 2),
            Values::I32(v) => reserve!(v, 4),
            Values::U32(v) => reserve!(v, 4),
            Values::F32(v) => reserve!(v, 4),
            Values::I64(v) => reserve!(v, 8),
            Values::U64(v) => reserve!(v, 8),
            Values::F64(v) => reserve!(v, 8),
            _ => {}
        }
        match self {
            Values::Bool(v) => v.extend(bytes.iter().map(|&b| b != 0)),
            Values::I8(v) => v.extend(bytes.iter().map(|&b| b as i8)),
            Values::U8(v) => v.extend_from_slice(bytes),
            Values::I16(v) => extend_be!(v, bytes, i16, 2),
            Values::U16(v) => extend_be!(v, bytes, u16, 2),
            Values::I32(v) => extend_be!(v, bytes, i32, 4),
            Values::U32(v) => extend_be!(v, bytes, u32, 4),
            Values::I64(v) => extend_be!(v, bytes, i64, 8),
            Values::U64(v) => extend_be!(v, bytes, u64, 8),
            Values::F32(v) => v.extend(
                bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_bits(u32::from_be_bytes(b.try_into().expect("4")))),
            ),
            Values::F64(v) => v.extend(
                bytes
                    .chunks_exact(8)
                    .map(|b| f64::from_bits(u64::from_be_bytes(b.try_into().expect("8")))),
            ),
            Values::Str(_) => unreachable!("strings are decoded entry by entry"),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Values::Bool(v) => v.len(),
            Values::I8(v) => v.len(),
            Values::U8(v) => v.len(),
            Values::I16(v) => v.len(),
            Values::U16(v) => v.len(),
            Values::I32(v) => v.len(),
            Values::U32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::U64(v) => v.len(),
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Str(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn reserve(&mut self, n: usize) {
        match self {
            Values::Bool(v) => v.reserve(n),
            Values::I8(v) => v.reserve(n),
            Values::U8(v) => v.reserve(n),
            Values::I16(v) => v.reserve(n),
            Values::U16(v) => v.reserve(n),
            Values::I32(v) => v.reserve(n),
            Values::U32(v) => v.reserve(n),
            Values::I64(v) => v.reserve(n),
            Values::U64(v) => v.reserve(n),
            Values::F32(v) => v.reserve(n),
            Values::F64(v) => v.reserve(n),
            Values::Str(v) => v.reserve(n),
        }
    }

    /// The values as f64 (for statistics); `None` for strings.
    pub fn to_f64(&self) -> Option<Vec<f64>> {
        Some(match self {
            Values::Bool(v) => v.iter().map(|&b| f64::from(u8::from(b))).collect(),
            Values::I8(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Values::U8(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Values::I16(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Values::U16(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Values::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Values::U32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Values::I64(v) => v.iter().map(|&x| x as f64).collect(),
            Values::U64(v) => v.iter().map(|&x| x as f64).collect(),
            Values::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Values::F64(v) => v.clone(),
            Values::Str(_) => return None,
        })
    }
}

/// A decoded branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub entries: usize,
    pub leaf_type: LeafType,
    pub values: Values,
    /// Elements per item: the fixed array size (`[3]`), 1 for scalars.
    pub inner: usize,
    /// Items per entry, for jagged columns (counter leaf).
    pub counts: Option<Vec<u32>>,
    /// Bytes before each jagged entry's items (TBranchElement variable arrays).
    entry_header: usize,
}

impl RootFile {
    /// Reads every entry of a plain one-leaf branch of a basic type.
    pub fn column(&self, branch: &Branch) -> Result<Column, FormatError> {
        let mut col = Column::empty_for(branch)?;
        col.reserve_for(branch);
        self.for_each_basket(branch, |basket| append(&mut col, &basket, &branch.name))?;
        check_entries(branch, col.entries)?;
        Ok(col)
    }

    /// Decodes a branch basket by basket, handing each basket's entries to `each`
    /// as a column of their own: memory holds a few baskets, not the branch.
    pub fn for_each_chunk(
        &self,
        branch: &Branch,
        mut each: impl FnMut(Column) -> Result<(), FormatError>,
    ) -> Result<(), FormatError> {
        let empty = Column::empty_for(branch)?;
        let mut entries = 0;
        self.for_each_basket(branch, |basket| {
            let mut chunk = empty.clone();
            append(&mut chunk, &basket, &branch.name)?;
            entries += chunk.entries;
            each(chunk)
        })?;
        check_entries(branch, entries)
    }
}

impl Column {
    /// Reserves room for the whole branch at once (its uncompressed size bounds the
    /// values), so the column is not copied as it grows.
    fn reserve_for(&mut self, branch: &Branch) {
        let entries = usize::try_from(branch.entries).unwrap_or(0);
        let bytes = usize::try_from(branch.tot_bytes).unwrap_or(0);
        if let (LeafType::Prim(p), Some(counts)) = (self.leaf_type, &mut self.counts) {
            counts.reserve(entries);
            self.values.reserve(bytes / p.size());
        } else if let LeafType::Prim(p) = self.leaf_type {
            self.values
                .reserve((entries * self.inner).min(bytes / p.size()));
        }
    }

    /// An empty column of a plain one-leaf branch's type.
    fn empty_for(branch: &Branch) -> Result<Column, FormatError> {
        let d = decoding(branch)?;
        Ok(Column {
            entries: 0,
            leaf_type: d.leaf_type,
            values: Values::empty(d.leaf_type),
            inner: d.inner,
            counts: d.jagged.then(Vec::new),
            entry_header: d.entry_header,
        })
    }
}

fn check_entries(branch: &Branch, entries: usize) -> Result<(), FormatError> {
    if entries as i64 != branch.entries {
        return Err(FormatError::Corrupt(format!(
            "branch '{}' records {} entries, its baskets hold {entries}",
            branch.name, branch.entries
        )));
    }
    Ok(())
}

fn append(col: &mut Column, basket: &Basket, branch: &str) -> Result<(), FormatError> {
    let corrupt = |why: String| FormatError::Corrupt(format!("branch '{branch}': {why}"));
    match col.leaf_type {
        LeafType::Str => {
            let Values::Str(strings) = &mut col.values else {
                unreachable!("string column")
            };
            let offsets = basket
                .offsets
                .as_ref()
                .ok_or_else(|| corrupt("strings without entry offsets".into()))?;
            for w in offsets.windows(2) {
                let mut c = Cursor::new(&basket.data()[w[0]..w[1]], 0);
                strings.push(c.tstring("string entry")?);
            }
        }
        LeafType::Prim(p) => {
            let item = p.size() * col.inner;
            if col.entry_header == 0 && !basket.data().len().is_multiple_of(item) {
                return Err(corrupt(format!(
                    "{} bytes of {}-byte items",
                    basket.data().len(),
                    item
                )));
            }
            match (&mut col.counts, &basket.offsets) {
                (Some(counts), Some(offsets)) if col.entry_header > 0 => {
                    if offsets.len() != basket.entries + 1 {
                        return Err(corrupt(format!(
                            "{} entry offsets for {} entries",
                            offsets.len() - 1,
                            basket.entries
                        )));
                    }
                    // Each entry starts with a header: copy its items entry by entry.
                    for w in offsets.windows(2) {
                        let start = w[0] + col.entry_header;
                        if start > w[1] || !(w[1] - start).is_multiple_of(item) {
                            return Err(corrupt(format!(
                                "an entry of {} bytes does not fit its header",
                                w[1] - w[0]
                            )));
                        }
                        counts.push(((w[1] - start) / item) as u32);
                        col.values.extend_from_be(&basket.data()[start..w[1]]);
                    }
                    col.entries += basket.entries;
                    return Ok(());
                }
                (Some(counts), Some(offsets)) => {
                    // Item sizes are powers of two but for odd fixed arrays: a shift
                    // and a mask instead of a division per entry.
                    let pow2 = item.is_power_of_two();
                    let shift = item.trailing_zeros();
                    counts.reserve(offsets.len());
                    for w in offsets.windows(2) {
                        let bytes = w[1] - w[0];
                        let (n, partial) = if pow2 {
                            (bytes >> shift, bytes & (item - 1))
                        } else {
                            (bytes / item, bytes % item)
                        };
                        if partial != 0 {
                            return Err(corrupt(format!(
                                "an entry of {bytes} bytes holds partial items"
                            )));
                        }
                        counts.push(n as u32);
                    }
                }
                (Some(counts), None) if basket.data().is_empty() => {
                    counts.extend(std::iter::repeat_n(0, basket.entries))
                }
                (Some(_), None) => return Err(corrupt("jagged data without entry offsets".into())),
                (None, _) if basket.data().len() != basket.entries * item => {
                    return Err(corrupt(format!(
                        "{} entries of {item} bytes in {} bytes",
                        basket.entries,
                        basket.data().len()
                    )));
                }
                (None, _) => {}
            }
            col.values.extend_from_be(basket.data());
        }
    }
    if let Some(offsets) = &basket.offsets
        && offsets.len() != basket.entries + 1
    {
        return Err(corrupt(format!(
            "{} entry offsets for {} entries",
            offsets.len() - 1,
            basket.entries
        )));
    }
    col.entries += basket.entries;
    Ok(())
}
