//! A field's values for a range of entries, nested as the field is: typed
//! values at the leaves, offsets for collections, one list per record
//! member, tags and indices for variants (awkward-array style). Each entry
//! can be rendered as JSON the way `ak.to_list` shows it.

use serde_json::Value;

use super::convert::extend_slice;
use super::fields::Shape;
use crate::FormatError;
use crate::{LeafType, Values};

/// Values of a field for consecutive entries (or items, inside another).
#[derive(Debug, Clone, PartialEq)]
pub enum FieldData {
    /// One value per item: numbers, bools or strings.
    Values(Values),
    /// `len` items of `size` consecutive items of `items` each.
    Array {
        size: usize,
        len: usize,
        items: Box<FieldData>,
    },
    /// Item `i` holds `items[offsets[i]..offsets[i + 1]]`; `offsets` starts
    /// at 0. An optional holds at most one.
    List {
        offsets: Vec<u64>,
        items: Box<FieldData>,
        optional: bool,
    },
    /// One list per member, each as long as the record. A tuple's members
    /// are positional (`_0`, `_1`, named `0`, `1`).
    Record {
        names: Vec<String>,
        fields: Vec<FieldData>,
        tuple: bool,
        len: usize,
    },
    /// Item `i` is `alternatives[tags[i] - 1]`'s item `indices[i]`, or none
    /// when its tag is 0.
    Variant {
        tags: Vec<u32>,
        indices: Vec<u64>,
        alternatives: Vec<FieldData>,
    },
}

impl FieldData {
    /// How many items this holds.
    pub fn len(&self) -> usize {
        match self {
            FieldData::Values(v) => v.len(),
            FieldData::Array { len, .. } => *len,
            FieldData::List { offsets, .. } => offsets.len().saturating_sub(1),
            FieldData::Record { len, .. } => *len,
            FieldData::Variant { tags, .. } => tags.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// No items of a field of this shape.
    pub(super) fn empty(shape: &Shape) -> Result<FieldData, FormatError> {
        Ok(match shape {
            Shape::Leaf { prim, .. } | Shape::Cardinality { prim, .. } => {
                FieldData::Values(Values::empty(LeafType::Prim(*prim)))
            }
            Shape::Str { .. } => FieldData::Values(Values::Str(Vec::new())),
            Shape::Array { size, item } => FieldData::Array {
                size: usize::try_from(*size).unwrap_or(usize::MAX),
                len: 0,
                items: Box::new(FieldData::empty(item)?),
            },
            Shape::Collection { item, optional, .. } => FieldData::List {
                offsets: vec![0],
                items: Box::new(FieldData::empty(item)?),
                optional: *optional,
            },
            Shape::Record { members, tuple } => FieldData::Record {
                names: members.iter().map(|m| m.name.clone()).collect(),
                fields: members
                    .iter()
                    .map(|m| FieldData::empty(&m.shape))
                    .collect::<Result<_, _>>()?,
                tuple: *tuple,
                len: 0,
            },
            Shape::Variant { alternatives, .. } => FieldData::Variant {
                tags: Vec::new(),
                indices: Vec::new(),
                alternatives: alternatives
                    .iter()
                    .map(FieldData::empty)
                    .collect::<Result<_, _>>()?,
            },
            Shape::Unsupported(why) => return Err(FormatError::Unsupported(why.clone())),
        })
    }

    /// Appends the items of `more`, read from the same field (a later
    /// cluster).
    pub(super) fn append(&mut self, more: FieldData) {
        match (self, more) {
            (FieldData::Values(a), FieldData::Values(b)) => extend_slice(a, &b, 0..b.len()),
            (
                FieldData::Array { items, len, .. },
                FieldData::Array {
                    items: more,
                    len: more_len,
                    ..
                },
            ) => {
                items.append(*more);
                *len += more_len;
            }
            (
                FieldData::List { offsets, items, .. },
                FieldData::List {
                    offsets: more_offsets,
                    items: more_items,
                    ..
                },
            ) => {
                let base = offsets.last().copied().unwrap_or(0);
                if offsets.is_empty() {
                    offsets.push(0);
                }
                offsets.extend(more_offsets.iter().skip(1).map(|o| o + base));
                items.append(*more_items);
            }
            (
                FieldData::Record { fields, len, .. },
                FieldData::Record {
                    fields: more,
                    len: more_len,
                    ..
                },
            ) => {
                for (field, m) in fields.iter_mut().zip(more) {
                    field.append(m);
                }
                *len += more_len;
            }
            (
                FieldData::Variant {
                    tags,
                    indices,
                    alternatives,
                },
                FieldData::Variant {
                    tags: more_tags,
                    indices: more_indices,
                    alternatives: more_alternatives,
                },
            ) => {
                let bases: Vec<u64> = alternatives.iter().map(|a| a.len() as u64).collect();
                for (&tag, &index) in more_tags.iter().zip(&more_indices) {
                    let base = (tag as usize)
                        .checked_sub(1)
                        .and_then(|k| bases.get(k))
                        .copied()
                        .unwrap_or(0);
                    tags.push(tag);
                    indices.push(index + base);
                }
                for (a, m) in alternatives.iter_mut().zip(more_alternatives) {
                    a.append(m);
                }
            }
            _ => unreachable!("reads of one field share its shape"),
        }
    }

    /// Item `i` as JSON, as awkward's `to_list` shows it: records as
    /// objects, tuples as arrays, none as null; non-finite floats as the
    /// strings "nan", "inf", "-inf" (JSON has no numbers for them).
    pub fn json(&self, i: usize) -> Value {
        match self {
            FieldData::Values(v) => value_json(v, i),
            FieldData::Array { size, items, .. } => {
                Value::Array((i * size..(i + 1) * size).map(|k| items.json(k)).collect())
            }
            FieldData::List {
                offsets,
                items,
                optional,
            } => {
                let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                if *optional {
                    if start == end {
                        Value::Null
                    } else {
                        items.json(start)
                    }
                } else {
                    Value::Array((start..end).map(|k| items.json(k)).collect())
                }
            }
            FieldData::Record {
                names,
                fields,
                tuple,
                ..
            } => {
                if *tuple {
                    Value::Array(fields.iter().map(|f| f.json(i)).collect())
                } else {
                    Value::Object(
                        names
                            .iter()
                            .zip(fields)
                            .map(|(n, f)| (n.clone(), f.json(i)))
                            .collect(),
                    )
                }
            }
            FieldData::Variant {
                tags,
                indices,
                alternatives,
            } => match tags[i] {
                0 => Value::Null,
                tag => alternatives[tag as usize - 1].json(indices[i] as usize),
            },
        }
    }
}

fn float_json(x: f64) -> Value {
    match serde_json::Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None if x.is_nan() => Value::String("nan".into()),
        None if x > 0.0 => Value::String("inf".into()),
        None => Value::String("-inf".into()),
    }
}

/// Value `i` of `values` as JSON (as `FieldData::json` renders a leaf).
pub fn value_json(values: &Values, i: usize) -> Value {
    match values {
        Values::Bool(v) => Value::Bool(v[i]),
        Values::I8(v) => v[i].into(),
        Values::U8(v) => v[i].into(),
        Values::I16(v) => v[i].into(),
        Values::U16(v) => v[i].into(),
        Values::I32(v) => v[i].into(),
        Values::U32(v) => v[i].into(),
        Values::I64(v) => v[i].into(),
        Values::U64(v) => v[i].into(),
        Values::F32(v) => float_json(f64::from(v[i])),
        Values::F64(v) => float_json(v[i]),
        Values::Str(v) => Value::String(v[i].clone()),
    }
}
