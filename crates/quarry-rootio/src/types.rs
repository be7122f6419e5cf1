//! What a branch holds and how its entries are laid out in its baskets, decided
//! from its leaves, its TBranchElement fields and, for members of split objects,
//! the C++ type the streamer info gives.

use super::tree::{Branch, Leaf};
use crate::FormatError;

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

    /// Whether values are whole numbers (what a counter leaf holds).
    pub fn is_integer(self) -> bool {
        !matches!(self, Prim::Bool | Prim::F32 | Prim::F64)
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

/// The basic type named by a C++ type name, in any of ROOT's spellings.
fn prim_of_name(name: &str) -> Option<Prim> {
    Some(match name {
        "bool" | "Bool_t" => Prim::Bool,
        "char" | "Char_t" | "int8_t" => Prim::I8,
        "unsigned char" | "UChar_t" | "uint8_t" => Prim::U8,
        "short" | "Short_t" | "int16_t" => Prim::I16,
        "unsigned short" | "UShort_t" | "uint16_t" => Prim::U16,
        "int" | "Int_t" | "int32_t" => Prim::I32,
        "unsigned int" | "UInt_t" | "uint32_t" => Prim::U32,
        "long" | "Long_t" | "Long64_t" | "long long" | "int64_t" => Prim::I64,
        "unsigned long" | "ULong_t" | "ULong64_t" | "unsigned long long" | "uint64_t" => Prim::U64,
        "float" | "Float_t" => Prim::F32,
        "double" | "Double_t" => Prim::F64,
        _ => return None,
    })
}

/// What an STL member or a top-level class branch holds, from its C++ type:
/// `vector<number>`, `string` or `vector<string>`; `None` for anything else.
fn stl_contents(cxx: &str) -> Option<(LeafType, bool)> {
    let name: String = cxx.replace("std::", "");
    let name = name.trim();
    if name == "string" {
        return Some((LeafType::Str, false));
    }
    let inner = name.strip_prefix("vector<")?.strip_suffix('>')?.trim();
    if inner == "string" {
        return Some((LeafType::Str, true));
    }
    prim_of_name(inner).map(|p| (LeafType::Prim(p), true))
}

/// The basic type of a streamer type code (ROOT's EDataType): 1 char, 2 short,
/// 3 int, 4 long, 5 float, 6 counter (an int), 8 double, 11-14 unsigned char,
/// short, int, long, 16-17 (unsigned) long long, 18 bool.
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

/// How each entry's bytes are laid out in a basket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// Items of one size back to back (scalars, fixed arrays); for strings, one
    /// TString-encoded string per entry.
    Plain,
    /// A header of this many bytes, then the entry's items (a split object's
    /// variable arrays carry a 1-byte header).
    Headed(usize),
    /// A streamed object: for vectors a byte count and version, a 4-byte length
    /// and the items (or strings); for `string` one TString, after a byte count
    /// and version when `framed` (a split object's member, not a top branch).
    Object { framed: bool },
    /// One leaf of a leaf list: entries of `stride` bytes, this leaf's items at
    /// `offset` in each.
    Strided { offset: usize, stride: usize },
}

/// How a branch's entries are stored, for the layouts the decoder reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Decoding {
    pub leaf_type: LeafType,
    /// Items per element of fixed arrays (`[10]`), 1 otherwise.
    pub inner: usize,
    pub jagged: bool,
    pub layout: Layout,
}

/// ROOT's streamer types for STL containers and strings held by split objects.
const STL_STREAMER_TYPES: [i32; 3] = [300, 365, 500];

pub(super) fn decoding(branch: &Branch) -> Result<Decoding, FormatError> {
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
        let st = element.streamer_type;
        // A top-level branch of a class (streamer type -1) or an STL member of a
        // split object: the C++ type says what it holds.
        let cxx = if st == -1 {
            Some(element.class_name.as_str())
        } else if STL_STREAMER_TYPES.contains(&st) {
            element.member_type.as_deref()
        } else {
            None
        };
        if st == -1 || STL_STREAMER_TYPES.contains(&st) {
            let Some((leaf_type, jagged)) = cxx.and_then(stl_contents) else {
                return unsupported(format!(
                    "C++ type {} (quarry reads numbers, strings and vectors of them)",
                    cxx.unwrap_or("not described by the file's streamer info")
                ));
            };
            return Ok(Decoding {
                leaf_type,
                inner: 1,
                jagged,
                layout: Layout::Object { framed: st != -1 },
            });
        }
        let leaf = branch.leaves.first();
        let fixed = leaf.map_or(1, |l| usize::try_from(l.len.max(1)).unwrap_or(1));
        let (code, inner, jagged, layout) = match st {
            65 => {
                return Ok(Decoding {
                    leaf_type: LeafType::Str,
                    inner: 1,
                    jagged: false,
                    layout: Layout::Plain,
                });
            }
            1..=18 => (st, 1, false, Layout::Plain),
            21..=38 => (st - 20, fixed, false, Layout::Plain),
            41..=58 => (st - 40, 1, true, Layout::Headed(1)),
            _ => return unsupported(format!("streamer type {st}")),
        };
        let Some(prim) = prim_of_code(code, leaf) else {
            return unsupported(format!("streamer type {st}"));
        };
        return Ok(Decoding {
            leaf_type: LeafType::Prim(prim),
            inner,
            jagged,
            layout,
        });
    }
    let [leaf] = branch.leaves.as_slice() else {
        return unsupported(format!(
            "a leaf list of {} leaves; read its leaves one by one",
            branch.leaves.len()
        ));
    };
    let leaf_type = LeafType::of(leaf)?;
    let is_string = leaf_type == LeafType::Str;
    Ok(Decoding {
        leaf_type,
        // A `char*` leaf's length is the longest string's, not an array size.
        inner: if is_string {
            1
        } else {
            usize::try_from(leaf.len.max(1)).unwrap_or(1)
        },
        jagged: leaf.count.is_some() && !is_string,
        layout: Layout::Plain,
    })
}

/// How one leaf of a leaf list (a TBranch of several leaves, `y/D:x/F:n/I`) is
/// stored: every entry holds each leaf's items in turn, so a leaf's items sit at
/// a fixed offset in entries of a fixed size. Leaves of varying length (a
/// counter, `char*`) would make entries vary; those lists are not read.
pub(super) fn leaf_decoding(branch: &Branch, leaf_index: usize) -> Result<Decoding, FormatError> {
    let unsupported = |why: &str| {
        Err(FormatError::Unsupported(format!(
            "leaf list '{}': {why}",
            branch.name
        )))
    };
    if branch.element.is_some() || leaf_index >= branch.leaves.len() {
        return unsupported("no such leaf");
    }
    let (mut offset, mut stride) = (0, 0);
    let mut target = None;
    for (i, leaf) in branch.leaves.iter().enumerate() {
        let LeafType::Prim(p) = LeafType::of(leaf)? else {
            return unsupported("a string leaf makes entries vary in size");
        };
        if leaf.count.is_some() {
            return unsupported("a leaf with a counter makes entries vary in size");
        }
        let inner = usize::try_from(leaf.len.max(1)).unwrap_or(1);
        if i == leaf_index {
            offset = stride;
            target = Some((p, inner));
        }
        stride += p.size() * inner;
    }
    let (p, inner) = target.expect("leaf index checked above");
    Ok(Decoding {
        leaf_type: LeafType::Prim(p),
        inner,
        jagged: false,
        layout: Layout::Strided { offset, stride },
    })
}

/// A leaf list's type: its leaves' names and types, `{y: float64, a: int32[2]}`.
fn leaf_list_type(branch: &Branch) -> Option<String> {
    let fields: Option<Vec<String>> = (0..branch.leaves.len())
        .map(|i| {
            let d = leaf_decoding(branch, i).ok()?;
            let LeafType::Prim(p) = d.leaf_type else {
                return None;
            };
            let suffix = if d.inner > 1 {
                format!("[{}]", d.inner)
            } else {
                String::new()
            };
            Some(format!("{}: {}{suffix}", branch.leaves[i].name, p.name()))
        })
        .collect();
    Some(format!("{{{}}}", fields?.join(", ")))
}

/// The type of a branch, as list_branches shows it.
pub fn branch_type(branch: &Branch) -> BranchType {
    if branch.element.is_none()
        && branch.leaves.len() > 1
        && let Some(name) = leaf_list_type(branch)
    {
        return BranchType {
            name,
            dtype: None,
            jagged: false,
            counter: None,
        };
    }
    let counter = branch.leaves.first().and_then(|l| l.count.clone());
    let Ok(Decoding {
        leaf_type,
        inner,
        jagged,
        ..
    }) = decoding(branch)
    else {
        return BranchType {
            name: "unsupported".into(),
            dtype: None,
            jagged: false,
            counter: None,
        };
    };
    let element = match leaf_type {
        LeafType::Str => "string",
        LeafType::Prim(p) => p.name(),
    };
    let (name, dtype) = match (jagged, inner) {
        (true, 1) => (format!("{element}[]"), None),
        (true, n) => (format!("{element}[][{n}]"), None),
        (false, n) if n > 1 => (format!("{element}[{n}]"), None),
        (false, _) => (
            element.to_string(),
            matches!(leaf_type, LeafType::Prim(_)).then(|| element.to_string()),
        ),
    };
    BranchType {
        name,
        dtype,
        jagged,
        counter: if jagged { counter } else { None },
    }
}
