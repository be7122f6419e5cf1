//! A column's values as the type of the field that reads them: a field's
//! C++ type is fixed, but the columns holding it may differ (an `int32`
//! read from an `Int16` column, a `float` from a half, a `double` from a
//! `Real32`, a secondary representation in some clusters), as the
//! specification's table of fundamental types allows.

use crate::{Prim, Values};

/// Appends elements `range` of `from` to `to` (both of one type).
pub(super) fn extend_slice(to: &mut Values, from: &Values, range: std::ops::Range<usize>) {
    match (to, from) {
        (Values::Bool(a), Values::Bool(b)) => a.extend_from_slice(&b[range]),
        (Values::I8(a), Values::I8(b)) => a.extend_from_slice(&b[range]),
        (Values::U8(a), Values::U8(b)) => a.extend_from_slice(&b[range]),
        (Values::I16(a), Values::I16(b)) => a.extend_from_slice(&b[range]),
        (Values::U16(a), Values::U16(b)) => a.extend_from_slice(&b[range]),
        (Values::I32(a), Values::I32(b)) => a.extend_from_slice(&b[range]),
        (Values::U32(a), Values::U32(b)) => a.extend_from_slice(&b[range]),
        (Values::I64(a), Values::I64(b)) => a.extend_from_slice(&b[range]),
        (Values::U64(a), Values::U64(b)) => a.extend_from_slice(&b[range]),
        (Values::F32(a), Values::F32(b)) => a.extend_from_slice(&b[range]),
        (Values::F64(a), Values::F64(b)) => a.extend_from_slice(&b[range]),
        (Values::Str(a), Values::Str(b)) => a.extend_from_slice(&b[range]),
        _ => unreachable!("one column's values share a type"),
    }
}

/// The type of `values` as a `Prim`.
fn prim_of(values: &Values) -> Option<Prim> {
    Some(match values {
        Values::Bool(_) => Prim::Bool,
        Values::I8(_) => Prim::I8,
        Values::U8(_) => Prim::U8,
        Values::I16(_) => Prim::I16,
        Values::U16(_) => Prim::U16,
        Values::I32(_) => Prim::I32,
        Values::U32(_) => Prim::U32,
        Values::I64(_) => Prim::I64,
        Values::U64(_) => Prim::U64,
        Values::F32(_) => Prim::F32,
        Values::F64(_) => Prim::F64,
        Values::Str(_) => return None,
    })
}

/// A number of any column type, for converting between types.
trait Number: Copy {
    fn to_f64(self) -> f64;
    fn to_i128(self) -> i128;
    fn is_float() -> bool;
}

macro_rules! number {
    ($($t:ty: $float:expr),*) => {$(
        impl Number for $t {
            fn to_f64(self) -> f64 { self as f64 }
            fn to_i128(self) -> i128 { self as i128 }
            fn is_float() -> bool { $float }
        }
    )*};
}
number!(i8: false, u8: false, i16: false, u16: false, i32: false, u32: false,
        i64: false, u64: false, f32: true, f64: true);

impl Number for bool {
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn to_i128(self) -> i128 {
        i128::from(self)
    }
    fn is_float() -> bool {
        false
    }
}

fn cast<N: Number>(values: &[N], to: Prim) -> Values {
    // Integers convert as integers (wrapping like C++'s conversions to
    // narrower types), floats as floats; bools are 0 and 1.
    macro_rules! ints {
        ($variant:ident, $t:ty) => {
            Values::$variant(
                values
                    .iter()
                    .map(|&v| {
                        if N::is_float() {
                            v.to_f64() as $t
                        } else {
                            v.to_i128() as $t
                        }
                    })
                    .collect(),
            )
        };
    }
    match to {
        Prim::Bool => Values::Bool(values.iter().map(|&v| v.to_f64() != 0.0).collect()),
        Prim::I8 => ints!(I8, i8),
        Prim::U8 => ints!(U8, u8),
        Prim::I16 => ints!(I16, i16),
        Prim::U16 => ints!(U16, u16),
        Prim::I32 => ints!(I32, i32),
        Prim::U32 => ints!(U32, u32),
        Prim::I64 => ints!(I64, i64),
        Prim::U64 => ints!(U64, u64),
        Prim::F32 => Values::F32(values.iter().map(|&v| v.to_f64() as f32).collect()),
        Prim::F64 => Values::F64(values.iter().map(|&v| v.to_f64()).collect()),
    }
}

/// `values` as `to`: moved when already of that type, else converted.
pub(super) fn into_prim(values: Values, to: Prim) -> Values {
    if prim_of(&values) == Some(to) {
        return values;
    }
    match &values {
        Values::Bool(v) => cast(v, to),
        Values::I8(v) => cast(v, to),
        Values::U8(v) => cast(v, to),
        Values::I16(v) => cast(v, to),
        Values::U16(v) => cast(v, to),
        Values::I32(v) => cast(v, to),
        Values::U32(v) => cast(v, to),
        Values::I64(v) => cast(v, to),
        Values::U64(v) => cast(v, to),
        Values::F32(v) => cast(v, to),
        Values::F64(v) => cast(v, to),
        Values::Str(_) => values,
    }
}

/// The element type a C++ type name of a fundamental type holds, in
/// RNTuple's normalized spelling (and the plain C++ spellings, for files
/// written by other tools).
pub(super) fn prim_of_type_name(name: &str) -> Option<Prim> {
    Some(match name {
        "bool" => Prim::Bool,
        "char" | "std::int8_t" | "int8_t" | "signed char" => Prim::I8,
        "std::uint8_t" | "uint8_t" | "unsigned char" | "std::byte" => Prim::U8,
        "std::int16_t" | "int16_t" | "short" => Prim::I16,
        "std::uint16_t" | "uint16_t" | "unsigned short" => Prim::U16,
        "std::int32_t" | "int32_t" | "int" => Prim::I32,
        "std::uint32_t" | "uint32_t" | "unsigned int" => Prim::U32,
        "std::int64_t" | "int64_t" | "long" | "long long" => Prim::I64,
        "std::uint64_t" | "uint64_t" | "unsigned long" | "unsigned long long" => Prim::U64,
        "float" => Prim::F32,
        "double" | "Double32_t" => Prim::F64,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_convert_to_their_field_type() {
        assert_eq!(
            into_prim(Values::I16(vec![-2, 300]), Prim::I32),
            Values::I32(vec![-2, 300])
        );
        assert_eq!(
            into_prim(Values::F32(vec![1.5]), Prim::F64),
            Values::F64(vec![1.5])
        );
        assert_eq!(
            into_prim(Values::U8(vec![0, 2]), Prim::Bool),
            Values::Bool(vec![false, true])
        );
        assert_eq!(
            into_prim(Values::Bool(vec![true]), Prim::I64),
            Values::I64(vec![1])
        );
        assert_eq!(
            into_prim(Values::U64(vec![u64::MAX]), Prim::I64),
            Values::I64(vec![-1])
        );
    }
}
