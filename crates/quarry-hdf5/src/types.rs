//! HDF5 datatypes as quarry describes them (NumPy-style type strings, compound
//! fields, enum members) and the decoding of values read into memory.
//!
//! Values are always read in the native memory layout libhdf5 converts to
//! (`Datatype::from_descriptor`): atomic types in the machine's byte order,
//! compound fields at the offsets of the descriptor, variable-length strings as
//! C string pointers, variable-length sequences as `hvl_t`.

use hdf5::types::{FloatSize, IntSize, TypeDescriptor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// What a dataset or attribute holds, per element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DType {
    Int {
        size: u8,
        signed: bool,
        big_endian: bool,
    },
    Float {
        size: u8,
        big_endian: bool,
    },
    /// h5py's bool: an 8-bit enum of FALSE and TRUE.
    Bool,
    /// `fixed`: the byte length of a fixed-length string; `None` for variable length.
    String {
        fixed: Option<usize>,
        utf8: bool,
    },
    Enum {
        size: u8,
        signed: bool,
        members: Vec<(String, i64)>,
    },
    Compound {
        size: usize,
        fields: Vec<Field>,
    },
    Array {
        base: Box<DType>,
        dims: Vec<usize>,
    },
    VarLen(Box<DType>),
    Reference,
    /// A class quarry does not decode (opaque, bitfield, time, ...), described.
    Unsupported(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    pub dtype: DType,
}

fn int_size(s: IntSize) -> u8 {
    match s {
        IntSize::U1 => 1,
        IntSize::U2 => 2,
        IntSize::U4 => 4,
        IntSize::U8 => 8,
    }
}

fn float_size(s: FloatSize) -> u8 {
    match s {
        #[allow(unreachable_patterns)]
        FloatSize::U4 => 4,
        FloatSize::U8 => 8,
        #[allow(unreachable_patterns)]
        _ => 2,
    }
}

impl DType {
    /// From libhdf5's description of a type and the byte order of the file's type.
    pub(super) fn from_descriptor(d: &TypeDescriptor, big_endian: bool) -> DType {
        match d {
            TypeDescriptor::Integer(s) => DType::Int {
                size: int_size(*s),
                signed: true,
                big_endian,
            },
            TypeDescriptor::Unsigned(s) => DType::Int {
                size: int_size(*s),
                signed: false,
                big_endian,
            },
            TypeDescriptor::Float(s) => DType::Float {
                size: float_size(*s),
                big_endian,
            },
            TypeDescriptor::Boolean => DType::Bool,
            TypeDescriptor::Enum(e) => DType::Enum {
                size: int_size(e.size),
                signed: e.signed,
                members: e
                    .members
                    .iter()
                    .map(|m| {
                        (
                            m.name.clone(),
                            enum_value(m.value, e.signed, int_size(e.size)),
                        )
                    })
                    .collect(),
            },
            TypeDescriptor::Compound(c) => DType::Compound {
                size: c.size,
                fields: c
                    .fields
                    .iter()
                    .map(|f| Field {
                        name: f.name.clone(),
                        dtype: DType::from_descriptor(&f.ty, big_endian),
                    })
                    .collect(),
            },
            TypeDescriptor::FixedArray(base, n) => {
                let base = DType::from_descriptor(base, big_endian);
                match base {
                    DType::Array { base, mut dims } => {
                        dims.insert(0, *n);
                        DType::Array { base, dims }
                    }
                    other => DType::Array {
                        base: Box::new(other),
                        dims: vec![*n],
                    },
                }
            }
            TypeDescriptor::FixedAscii(n) => DType::String {
                fixed: Some(*n),
                utf8: false,
            },
            TypeDescriptor::FixedUnicode(n) => DType::String {
                fixed: Some(*n),
                utf8: true,
            },
            TypeDescriptor::VarLenArray(base) => {
                DType::VarLen(Box::new(DType::from_descriptor(base, big_endian)))
            }
            TypeDescriptor::VarLenAscii => DType::String {
                fixed: None,
                utf8: false,
            },
            TypeDescriptor::VarLenUnicode => DType::String {
                fixed: None,
                utf8: true,
            },
            TypeDescriptor::Reference(_) => DType::Reference,
        }
    }

    /// NumPy's type string (`dtype.str`): `<f4`, `|S8`, `|b1`, `|O` for
    /// variable-length data, `|V12` for compounds; an enum is its base integer.
    pub fn numpy(&self) -> String {
        let order = |size: u8, big: bool| {
            if size == 1 {
                '|'
            } else if big {
                '>'
            } else {
                '<'
            }
        };
        match self {
            DType::Int {
                size,
                signed,
                big_endian,
            } => format!(
                "{}{}{size}",
                order(*size, *big_endian),
                if *signed { 'i' } else { 'u' }
            ),
            DType::Float { size, big_endian } => format!("{}f{size}", order(*size, *big_endian)),
            DType::Bool => "|b1".into(),
            DType::String { fixed: Some(n), .. } => format!("|S{n}"),
            DType::String { fixed: None, .. } | DType::VarLen(_) | DType::Reference => "|O".into(),
            DType::Enum { size, signed, .. } => DType::Int {
                size: *size,
                signed: *signed,
                big_endian: false,
            }
            .numpy(),
            DType::Compound { size, .. } => format!("|V{size}"),
            DType::Array { base, dims } => {
                let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
                format!("({},){}", dims.join(","), base.numpy())
            }
            DType::Unsupported(what) => format!("unsupported:{what}"),
        }
    }

    /// A short description for people (and models): `float32`, `string (vlen, utf-8)`.
    pub fn describe(&self) -> Value {
        match self {
            DType::Compound { fields, .. } => json!({
                "class": "compound",
                "fields": fields.iter().map(|f| json!({"name": f.name, "dtype": f.dtype.numpy(), "type": f.dtype.describe()})).collect::<Vec<_>>(),
            }),
            DType::Enum { members, .. } => json!({
                "class": "enum",
                "base": self.numpy(),
                "members": members.iter().map(|(n, v)| (n.clone(), json!(v))).collect::<Map<_, _>>(),
            }),
            DType::String { fixed, utf8 } => json!({
                "class": "string",
                "length": fixed.map_or(json!("variable"), |n| json!(n)),
                "encoding": if *utf8 { "utf-8" } else { "ascii" },
            }),
            DType::Array { base, dims } => {
                json!({"class": "array", "dims": dims, "base": base.describe()})
            }
            DType::VarLen(base) => json!({"class": "vlen", "base": base.describe()}),
            DType::Int { .. } => json!({"class": "integer"}),
            DType::Float { .. } => json!({"class": "float"}),
            DType::Bool => json!({"class": "bool"}),
            DType::Reference => json!({"class": "reference"}),
            DType::Unsupported(what) => json!({"class": what}),
        }
    }

    /// Whether values of this type are numbers (statistics can be computed).
    pub fn is_numeric(&self) -> bool {
        matches!(self, DType::Int { .. } | DType::Float { .. } | DType::Bool)
    }
}

fn enum_value(raw: u64, signed: bool, size: u8) -> i64 {
    if !signed {
        return raw as i64;
    }
    let shift = 64 - 8 * u32::from(size);
    ((raw << shift) as i64) >> shift
}

/// The size in memory of one element of `d` in the native layout.
pub(super) fn mem_size(d: &TypeDescriptor) -> usize {
    d.size()
}

/// What decoding met that the caller should tell: non-finite floats become null.
#[derive(Debug, Default, Clone, Copy)]
pub struct DecodeNotes {
    pub non_finite: u64,
}

/// Decodes one element of type `d` at the start of `bytes` (native layout).
///
/// # Safety
/// Variable-length elements hold pointers that libhdf5 wrote into `bytes` by a
/// read of this very type, still unreclaimed.
pub(super) unsafe fn decode(d: &TypeDescriptor, bytes: &[u8], notes: &mut DecodeNotes) -> Value {
    match d {
        TypeDescriptor::Integer(s) => json!(read_int(bytes, int_size(*s), true)),
        TypeDescriptor::Unsigned(s) => json!(read_uint(bytes, int_size(*s))),
        TypeDescriptor::Float(s) => {
            let x = read_float(bytes, float_size(*s));
            if x.is_finite() {
                json!(x)
            } else {
                notes.non_finite += 1;
                Value::Null
            }
        }
        TypeDescriptor::Boolean => Value::Bool(bytes[0] != 0),
        TypeDescriptor::Enum(e) => {
            let size = int_size(e.size);
            let raw = read_uint(bytes, size);
            match e.members.iter().find(|m| m.value == raw) {
                Some(m) => Value::String(m.name.clone()),
                None => json!(enum_value(raw, e.signed, size)),
            }
        }
        TypeDescriptor::Compound(c) => {
            let mut row = Map::new();
            for f in &c.fields {
                row.insert(f.name.clone(), unsafe {
                    decode(&f.ty, &bytes[f.offset..], notes)
                });
            }
            Value::Object(row)
        }
        TypeDescriptor::FixedArray(base, n) => {
            let step = base.size();
            Value::Array(
                (0..*n)
                    .map(|i| unsafe { decode(base, &bytes[i * step..], notes) })
                    .collect(),
            )
        }
        TypeDescriptor::FixedAscii(n) | TypeDescriptor::FixedUnicode(n) => {
            Value::String(fixed_string(&bytes[..*n]))
        }
        TypeDescriptor::VarLenAscii | TypeDescriptor::VarLenUnicode => {
            let ptr = read_uint(bytes, 8) as usize as *const std::ffi::c_char;
            if ptr.is_null() {
                Value::String(String::new())
            } else {
                // SAFETY: libhdf5 wrote a NUL-terminated string pointer here.
                let s = unsafe { std::ffi::CStr::from_ptr(ptr) };
                Value::String(String::from_utf8_lossy(s.to_bytes()).into_owned())
            }
        }
        TypeDescriptor::VarLenArray(base) => {
            let len = read_uint(bytes, 8) as usize;
            let ptr = read_uint(&bytes[8..], 8) as usize as *const u8;
            let step = base.size();
            if ptr.is_null() || len == 0 {
                return Value::Array(Vec::new());
            }
            // SAFETY: libhdf5 wrote `len` elements of `base` at `ptr`.
            let data = unsafe { std::slice::from_raw_parts(ptr, len * step) };
            Value::Array(
                (0..len)
                    .map(|i| unsafe { decode(base, &data[i * step..], notes) })
                    .collect(),
            )
        }
        TypeDescriptor::Reference(_) => Value::String("<reference>".into()),
    }
}

/// The element as a number, for statistics; `None` for non-numeric types.
pub(super) fn as_f64(d: &TypeDescriptor, bytes: &[u8]) -> Option<f64> {
    Some(match d {
        TypeDescriptor::Integer(s) => read_int(bytes, int_size(*s), true) as f64,
        TypeDescriptor::Unsigned(s) => read_uint(bytes, int_size(*s)) as f64,
        TypeDescriptor::Float(s) => read_float(bytes, float_size(*s)),
        TypeDescriptor::Boolean => f64::from(u8::from(bytes[0] != 0)),
        TypeDescriptor::Enum(e) => read_uint(bytes, int_size(e.size)) as f64,
        _ => return None,
    })
}

/// A fixed-length string's bytes without their padding (NUL or space), as UTF-8.
pub(super) fn fixed_string(bytes: &[u8]) -> String {
    let end = memchr::memchr(0, bytes).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end])
        .trim_end_matches(' ')
        .to_string()
}

fn read_uint(bytes: &[u8], size: u8) -> u64 {
    let mut buf = [0u8; 8];
    let n = usize::from(size).min(8).min(bytes.len());
    buf[..n].copy_from_slice(&bytes[..n]);
    u64::from_ne_bytes(buf)
}

fn read_int(bytes: &[u8], size: u8, _signed: bool) -> i64 {
    let shift = 64 - 8 * u32::from(size);
    ((read_uint(bytes, size) << shift) as i64) >> shift
}

fn read_float(bytes: &[u8], size: u8) -> f64 {
    match size {
        4 => f64::from(f32::from_ne_bytes(bytes[..4].try_into().expect("4 bytes"))),
        8 => f64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes")),
        _ => half_to_f64(u16::from_ne_bytes(bytes[..2].try_into().expect("2 bytes"))),
    }
}

/// IEEE 754 binary16 to f64.
fn half_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_strings_follow_numpy() {
        let i = |size, signed, big_endian| DType::Int {
            size,
            signed,
            big_endian,
        };
        assert_eq!(i(4, true, false).numpy(), "<i4");
        assert_eq!(i(1, false, false).numpy(), "|u1");
        assert_eq!(i(8, false, true).numpy(), ">u8");
        assert_eq!(
            DType::Float {
                size: 4,
                big_endian: false
            }
            .numpy(),
            "<f4"
        );
        assert_eq!(DType::Bool.numpy(), "|b1");
        let s = |fixed| DType::String { fixed, utf8: false };
        assert_eq!(s(Some(8)).numpy(), "|S8");
        assert_eq!(s(None).numpy(), "|O");
        assert_eq!(fixed_string(b"abc\0\0"), "abc");
        assert_eq!(fixed_string(b"ab  "), "ab");
        assert_eq!(half_to_f64(0x3c00), 1.0);
        assert_eq!(half_to_f64(0xc000), -2.0);
        assert_eq!(enum_value(0xff, true, 1), -1);
    }
}
