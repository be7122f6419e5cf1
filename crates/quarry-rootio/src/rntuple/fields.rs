//! What each field holds, decided once from the schema: the C++ type
//! mapping of the specification turned into a `Shape` (a leaf of numbers, a
//! string, a fixed-size array, a collection, a record, a variant), with the
//! physical columns of each representation. Records present base classes'
//! members as their own (as uproot does), tuples and pairs as records of
//! `_0`, `_1`... Fields this reader cannot read become `Unsupported` with
//! the reason, never a guess.

use super::convert::prim_of_type_name;
use super::pages::ColumnCodec;
use super::schema::{FIELD_REPETITIVE, Role, Schema};
use crate::Prim;

/// Physical column ids, one list per representation (in representation
/// order); each cluster stores exactly one of them.
pub(super) type Reprs = Vec<Vec<usize>>;

/// How a field's values are laid out in columns.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Shape {
    Leaf {
        prim: Prim,
        columns: Reprs,
    },
    /// `std::string`: an index column and a character column.
    Str {
        columns: Reprs,
    },
    /// `ROOT::RNTupleCardinality`: a collection's sizes, from its index.
    Cardinality {
        prim: Prim,
        columns: Reprs,
    },
    /// `std::array`, C arrays, `std::bitset`: `size` items per item.
    Array {
        size: u64,
        item: Box<Shape>,
    },
    /// `std::vector`, `ROOT::RVec`, sets, maps; `std::optional` and
    /// `std::unique_ptr` (`optional`: at most one item).
    Collection {
        columns: Reprs,
        item: Box<Shape>,
        optional: bool,
    },
    /// Classes (base classes' members included), `std::pair`, `std::tuple`.
    Record {
        members: Vec<Member>,
        tuple: bool,
    },
    /// `std::variant`: a switch column and one shape per alternative.
    Variant {
        columns: Reprs,
        alternatives: Vec<Shape>,
    },
    Unsupported(String),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Member {
    pub name: String,
    pub shape: Shape,
}

/// Fields nested deeper than this are refused (a damaged schema could chain
/// fields without end).
const MAX_DEPTH: usize = 64;

/// What the shape builder needs of the schema.
pub(super) struct Catalog<'a> {
    pub schema: &'a Schema,
    pub children: Vec<Vec<usize>>,
    pub columns: Vec<Reprs>,
    pub codecs: &'a [Result<ColumnCodec, String>],
}

impl<'a> Catalog<'a> {
    pub fn new(schema: &'a Schema, codecs: &'a [Result<ColumnCodec, String>]) -> Catalog<'a> {
        let n = schema.fields.len();
        let mut children = vec![Vec::new(); n];
        for (id, f) in schema.fields.iter().enumerate() {
            if f.parent != id {
                children[f.parent].push(id);
            }
        }
        // Columns attached to each field, by representation: the physical
        // ones, then the alias columns of projected fields (which take the
        // representation of the column they alias).
        let mut by_repr: Vec<Vec<(u16, usize)>> = vec![Vec::new(); n];
        for (id, c) in schema.columns.iter().enumerate() {
            by_repr[c.field].push((c.representation, id));
        }
        for &(physical, field) in &schema.aliases {
            by_repr[field].push((schema.columns[physical].representation, physical));
        }
        let columns = by_repr
            .into_iter()
            .map(|mut list| {
                list.sort_by_key(|&(r, _)| r);
                let mut reprs: Reprs = Vec::new();
                let mut last = None;
                for (r, id) in list {
                    if last != Some(r) {
                        reprs.push(Vec::new());
                        last = Some(r);
                    }
                    reprs.last_mut().expect("pushed").push(id);
                }
                reprs
            })
            .collect();
        Catalog {
            schema,
            children,
            columns,
            codecs,
        }
    }

    /// The top-level fields, in id order.
    pub fn top_level(&self) -> Vec<usize> {
        (0..self.schema.fields.len())
            .filter(|&id| self.schema.fields[id].parent == id)
            .collect()
    }

    /// The shape of field `id`.
    pub fn shape(&self, id: usize) -> Shape {
        self.shape_at(id, 0)
    }

    fn shape_at(&self, id: usize, depth: usize) -> Shape {
        let f = &self.schema.fields[id];
        let unsupported = |why: String| Shape::Unsupported(format!("field '{}': {why}", f.name));
        if depth > MAX_DEPTH {
            return unsupported(format!("nested more than {MAX_DEPTH} levels deep"));
        }
        if f.unknown_flags() != 0 {
            return unsupported(format!(
                "field flags {:#06x}, which format 1.0 does not define",
                f.flags
            ));
        }
        let children = &self.children[id];
        let columns = &self.columns[id];
        let width = columns.first().map_or(0, Vec::len);
        if columns.iter().any(|r| r.len() != width) {
            return unsupported("representations with different numbers of columns".into());
        }
        if let Some(why) = columns
            .iter()
            .flatten()
            .find_map(|&c| self.codecs[c].as_ref().err())
        {
            return unsupported(why.clone());
        }
        let kinds = |c: usize| self.codecs[c].as_ref().map(|k| k.kind).ok();
        let all = |test: &dyn Fn(usize) -> bool, at: usize| columns.iter().all(|r| test(r[at]));
        let is_index = |c: usize| kinds(c).is_some_and(|k| k.is_index());
        let is_switch = |c: usize| kinds(c) == Some(super::pages::ColumnType::Switch);
        let is_data = |c: usize| !is_index(c) && !is_switch(c);
        match f.role {
            Role::Streamer => unsupported(format!(
                "an object of type '{}' serialized by ROOT's streamer, not split into columns",
                f.type_name
            )),
            Role::Unknown(code) => unsupported(format!("structural role {code}")),
            Role::Leaf if f.flags & FIELD_REPETITIVE != 0 => {
                let item = match (children.as_slice(), width) {
                    ([child], 0) => self.shape_at(*child, depth + 1),
                    // std::bitset<N>: N bits per entry in one Bit column.
                    ([], 1) if all(&is_data, 0) => Shape::Leaf {
                        prim: Prim::Bool,
                        columns: columns.clone(),
                    },
                    _ => return unsupported("a fixed-size array without one item field".into()),
                };
                Shape::Array {
                    size: f.repetition,
                    item: Box::new(item),
                }
            }
            Role::Leaf => match (children.as_slice(), width) {
                // std::atomic<T> and enums: a field over the one that holds
                // the values.
                ([child], 0) => self.shape_at(*child, depth + 1),
                ([], 1) if f.type_name.starts_with("ROOT::RNTupleCardinality<") => {
                    if !all(&is_index, 0) {
                        return unsupported("a cardinality without an index column".into());
                    }
                    let prim = if f.type_name.contains("uint32") {
                        Prim::U32
                    } else {
                        Prim::U64
                    };
                    Shape::Cardinality {
                        prim,
                        columns: columns.clone(),
                    }
                }
                ([], 1) => match prim_of_type_name(&f.type_name) {
                    Some(prim) if all(&is_data, 0) => Shape::Leaf {
                        prim,
                        columns: columns.clone(),
                    },
                    Some(_) => unsupported("a number stored in an index or switch column".into()),
                    None => unsupported(format!("type '{}'", f.type_name)),
                },
                ([], 2) if all(&is_index, 0) && all(&is_data, 1) => Shape::Str {
                    columns: columns.clone(),
                },
                _ => unsupported(format!("type '{}' of {width} columns", f.type_name)),
            },
            Role::Collection => {
                if width != 1 || !all(&is_index, 0) {
                    return unsupported("a collection without its index column".into());
                }
                let item = match children.as_slice() {
                    [child] => self.shape_at(*child, depth + 1),
                    // An untyped collection of several fields: a record each.
                    more => self.record(more, depth),
                };
                Shape::Collection {
                    columns: columns.clone(),
                    item: Box::new(item),
                    optional: f.type_name.starts_with("std::optional<")
                        || f.type_name.starts_with("std::unique_ptr<"),
                }
            }
            Role::Record => {
                if width != 0 {
                    return unsupported("a record with columns of its own".into());
                }
                self.record(children, depth)
            }
            Role::Variant => {
                if width != 1 || !all(&is_switch, 0) {
                    return unsupported("a variant without its switch column".into());
                }
                Shape::Variant {
                    columns: columns.clone(),
                    alternatives: children
                        .iter()
                        .map(|&c| self.shape_at(c, depth + 1))
                        .collect(),
                }
            }
        }
    }

    /// A record of `children`: base classes (`:_0`, `:_1`...) contribute
    /// their members; names two members share are told apart by the base
    /// classes they come through (`Child::x`), as uproot names them.
    fn record(&self, children: &[usize], depth: usize) -> Shape {
        let mut found = Vec::new();
        self.collect_members(children, &mut Vec::new(), depth, &mut found);
        let tuple = found.iter().all(|m| is_positional(&m.name));
        let names = unique_names(&found);
        let members = found
            .into_iter()
            .zip(names)
            .map(|(m, name)| Member {
                // Positional names lose their underscore: `pair.0`.
                name: if is_positional(&name) {
                    name.trim_start_matches('_').to_string()
                } else {
                    name
                },
                shape: m.shape,
            })
            .collect();
        Shape::Record { members, tuple }
    }

    fn collect_members(
        &self,
        children: &[usize],
        bases: &mut Vec<(usize, String)>,
        depth: usize,
        out: &mut Vec<Found>,
    ) {
        for &child in children {
            let f = &self.schema.fields[child];
            let is_base = f.role == Role::Record
                && f.name.starts_with(":_")
                && f.name[2..].bytes().all(|b| b.is_ascii_digit());
            if is_base && depth < MAX_DEPTH {
                bases.push((child, f.type_name.clone()));
                self.collect_members(&self.children[child], bases, depth + 1, out);
                bases.pop();
            } else {
                out.push(Found {
                    name: f.name.clone(),
                    bases: bases.clone(),
                    shape: self.shape_at(child, depth + 1),
                });
            }
        }
    }
}

/// A record member with the base classes (field id, type) it comes
/// through, outermost first.
struct Found {
    name: String,
    bases: Vec<(usize, String)>,
    shape: Shape,
}

fn is_positional(name: &str) -> bool {
    name.len() > 1 && name.starts_with('_') && name[1..].bytes().all(|b| b.is_ascii_digit())
}

/// Names for members, unique: a shared name is prefixed with the base
/// classes it comes through, from the first one the sharers do not have
/// in common, one more at a time until no two are alike.
fn unique_names(found: &[Found]) -> Vec<String> {
    let mut names: Vec<String> = found.iter().map(|m| m.name.clone()).collect();
    let mut groups: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for (i, m) in found.iter().enumerate() {
        groups.entry(&m.name).or_default().push(i);
    }
    for group in groups.values().filter(|g| g.len() > 1) {
        let shared = (0..)
            .take_while(|&level| {
                let first = found[group[0]].bases.get(level).map(|b| b.0);
                first.is_some()
                    && group
                        .iter()
                        .all(|&i| found[i].bases.get(level).map(|b| b.0) == first)
            })
            .count();
        let named = |i: usize, prefixes: usize| {
            let own = &found[i].bases[shared.min(found[i].bases.len())..];
            let mut parts: Vec<&str> = own.iter().take(prefixes).map(|b| b.1.as_str()).collect();
            parts.push(&found[i].name);
            parts.join("::")
        };
        let mut prefixes = vec![0usize; group.len()];
        let deepest = group
            .iter()
            .map(|&i| found[i].bases.len())
            .max()
            .unwrap_or(0);
        for _ in 0..=deepest {
            let current: Vec<String> = group
                .iter()
                .zip(&prefixes)
                .map(|(&i, &p)| named(i, p))
                .collect();
            let mut counts: std::collections::HashMap<&str, usize> = Default::default();
            for name in &current {
                *counts.entry(name.as_str()).or_default() += 1;
            }
            let mut clashing = false;
            for (k, name) in current.iter().enumerate() {
                if counts[name.as_str()] > 1 {
                    prefixes[k] += 1;
                    clashing = true;
                }
            }
            for (k, &i) in group.iter().enumerate() {
                names[i] = current[k].clone();
            }
            if !clashing {
                break;
            }
        }
    }
    names
}

/// A shape's type in quarry's spelling for TTree branches: `float32`,
/// `float32[]` (a collection), `int32[3]` (a fixed array), `string`,
/// `{pt: float32, eta: float32}` (a record), `(int32, string)` (a tuple),
/// `?float32` (optional), `union[int32, string]` (a variant).
pub(super) fn type_label(shape: &Shape) -> String {
    let (base, dims) = label_parts(shape);
    format!("{base}{dims}")
}

fn label_parts(shape: &Shape) -> (String, String) {
    match shape {
        Shape::Leaf { prim, .. } | Shape::Cardinality { prim, .. } => {
            (prim.name().to_string(), String::new())
        }
        Shape::Str { .. } => ("string".into(), String::new()),
        Shape::Array { size, item } => {
            let (base, dims) = label_parts(item);
            (base, format!("[{size}]{dims}"))
        }
        Shape::Collection {
            item,
            optional: false,
            ..
        } => {
            let (base, dims) = label_parts(item);
            (base, format!("[]{dims}"))
        }
        Shape::Collection { item, .. } => {
            let inner = type_label(item);
            if inner.ends_with(']') {
                (format!("?({inner})"), String::new())
            } else {
                (format!("?{inner}"), String::new())
            }
        }
        Shape::Record { members, tuple } => {
            let parts: Vec<String> = members
                .iter()
                .map(|m| {
                    if *tuple {
                        type_label(&m.shape)
                    } else {
                        format!("{}: {}", m.name, type_label(&m.shape))
                    }
                })
                .collect();
            if *tuple {
                (format!("({})", parts.join(", ")), String::new())
            } else {
                (format!("{{{}}}", parts.join(", ")), String::new())
            }
        }
        Shape::Variant { alternatives, .. } => {
            let parts: Vec<String> = alternatives.iter().map(type_label).collect();
            (format!("union[{}]", parts.join(", ")), String::new())
        }
        Shape::Unsupported(_) => ("unsupported".into(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(name: &str, bases: &[(usize, &str)]) -> Found {
        Found {
            name: name.into(),
            bases: bases.iter().map(|&(i, t)| (i, t.to_string())).collect(),
            shape: Shape::Unsupported(String::new()),
        }
    }

    #[test]
    fn shared_member_names_take_their_base_classes() {
        // MultiGrandParent: Child (: BaseA) and MultiParent (: BaseA, BaseB).
        let members = [
            found("base_a1", &[(30, "Child"), (31, "BaseA")]),
            found("child_1", &[(30, "Child")]),
            found("base_a1", &[(38, "MultiParent"), (39, "BaseA")]),
            found("base_b", &[(38, "MultiParent"), (44, "BaseB")]),
            found("own", &[]),
        ];
        assert_eq!(
            unique_names(&members),
            [
                "Child::base_a1",
                "child_1",
                "MultiParent::base_a1",
                "base_b",
                "own"
            ]
        );
        // Through a shared base, the names part at the first difference.
        let diamond = [
            found("m", &[(1, "Child"), (2, "A")]),
            found("m", &[(1, "Child"), (3, "B")]),
            found("m", &[]),
        ];
        assert_eq!(unique_names(&diamond), ["Child::A::m", "Child::B::m", "m"]);
        assert_eq!(unique_names(&diamond[..2]), ["A::m", "B::m"]);
    }
}
