//! A decoded column's values: one typed vector per element type, flattened in
//! entry order.

use super::types::{LeafType, Prim};

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
    pub(super) fn empty(t: LeafType) -> Values {
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

    /// Appends big-endian elements (`bytes` holds whole elements). The byte
    /// swaps vectorise far better with AVX2's byte shuffles than with the
    /// baseline x86-64 instructions, so the same code is also compiled for AVX2
    /// and chosen when the CPU has it.
    pub(super) fn extend_from_be(&mut self, bytes: &[u8]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { self.extend_from_be_avx2(bytes) };
        }
        self.extend_from_be_portable(bytes)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn extend_from_be_avx2(&mut self, bytes: &[u8]) {
        self.extend_from_be_portable(bytes)
    }

    #[inline(always)]
    fn extend_from_be_portable(&mut self, bytes: &[u8]) {
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

    /// The bytes this column's buffer holds room for; None for strings
    /// (whose bytes live in each string).
    pub(super) fn capacity_bytes(&self) -> Option<usize> {
        fn bytes<T>(v: &Vec<T>) -> Option<usize> {
            Some(v.capacity() * std::mem::size_of::<T>())
        }
        match self {
            Values::Bool(v) => bytes(v),
            Values::I8(v) => bytes(v),
            Values::U8(v) => bytes(v),
            Values::I16(v) => bytes(v),
            Values::U16(v) => bytes(v),
            Values::I32(v) => bytes(v),
            Values::U32(v) => bytes(v),
            Values::I64(v) => bytes(v),
            Values::U64(v) => bytes(v),
            Values::F32(v) => bytes(v),
            Values::F64(v) => bytes(v),
            Values::Str(_) => None,
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

    /// Appends values of the same type (a later chunk of the same column).
    pub(super) fn extend_from(&mut self, more: &Values) {
        match (self, more) {
            (Values::Bool(v), Values::Bool(m)) => v.extend_from_slice(m),
            (Values::I8(v), Values::I8(m)) => v.extend_from_slice(m),
            (Values::U8(v), Values::U8(m)) => v.extend_from_slice(m),
            (Values::I16(v), Values::I16(m)) => v.extend_from_slice(m),
            (Values::U16(v), Values::U16(m)) => v.extend_from_slice(m),
            (Values::I32(v), Values::I32(m)) => v.extend_from_slice(m),
            (Values::U32(v), Values::U32(m)) => v.extend_from_slice(m),
            (Values::I64(v), Values::I64(m)) => v.extend_from_slice(m),
            (Values::U64(v), Values::U64(m)) => v.extend_from_slice(m),
            (Values::F32(v), Values::F32(m)) => v.extend_from_slice(m),
            (Values::F64(v), Values::F64(m)) => v.extend_from_slice(m),
            (Values::Str(v), Values::Str(m)) => v.extend_from_slice(m),
            _ => unreachable!("chunks of one column share its type"),
        }
    }

    pub(super) fn clear(&mut self) {
        match self {
            Values::Bool(v) => v.clear(),
            Values::I8(v) => v.clear(),
            Values::U8(v) => v.clear(),
            Values::I16(v) => v.clear(),
            Values::U16(v) => v.clear(),
            Values::I32(v) => v.clear(),
            Values::U32(v) => v.clear(),
            Values::I64(v) => v.clear(),
            Values::U64(v) => v.clear(),
            Values::F32(v) => v.clear(),
            Values::F64(v) => v.clear(),
            Values::Str(v) => v.clear(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn reserve(&mut self, n: usize) {
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
}

/// Runs `$body` with `$v` bound to a column's typed values and `$to` to the
/// conversion of one of them to the number a cut sees (bools as 0 and 1,
/// 64-bit integers rounded); strings run `$strings` with `$s` bound to them.
/// The one list of those conversions.
#[macro_export]
macro_rules! by_number {
    ($values:expr, $v:ident, $to:ident => $body:expr, strings: $s:ident => $strings:expr) => {
        match $values {
            $crate::Values::Bool($v) => {
                let $to = |b: bool| f64::from(u8::from(b));
                $body
            }
            $crate::Values::I8($v) => {
                let $to = |x: i8| f64::from(x);
                $body
            }
            $crate::Values::U8($v) => {
                let $to = |x: u8| f64::from(x);
                $body
            }
            $crate::Values::I16($v) => {
                let $to = |x: i16| f64::from(x);
                $body
            }
            $crate::Values::U16($v) => {
                let $to = |x: u16| f64::from(x);
                $body
            }
            $crate::Values::I32($v) => {
                let $to = |x: i32| f64::from(x);
                $body
            }
            $crate::Values::U32($v) => {
                let $to = |x: u32| f64::from(x);
                $body
            }
            $crate::Values::I64($v) => {
                let $to = |x: i64| x as f64;
                $body
            }
            $crate::Values::U64($v) => {
                let $to = |x: u64| x as f64;
                $body
            }
            $crate::Values::F32($v) => {
                let $to = |x: f32| f64::from(x);
                $body
            }
            $crate::Values::F64($v) => {
                let $to = |x: f64| x;
                $body
            }
            $crate::Values::Str($s) => $strings,
        }
    };
}
