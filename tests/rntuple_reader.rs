//! quarry's RNTuple reader against uproot, every field of every file: the 22
//! ROOT-written files of testdata/rntuple (scikit-hep-testdata), one written by
//! ROOT 6.40 for the kinds they lack (tests/data/rntuple/root-written-kinds.root:
//! an enum, std::optional, std::unique_ptr, Real16, std::set, Double32_t, a
//! streamer field, many pages) and three written with uproot's RNTuple writer
//! (std::optional, zlib, LZ4, LZMA pages). Expected values come from tests/fixtures/rntuple/values.json,
//! written by scripts/fixtures/rntuple_values.py: per RNTuple its format
//! version, entries and cluster ranges; per top-level field its C++ type and
//! every entry's value (`ak.to_list`), or digests of all values and the first
//! and last entries for RNTuples of more than 1000 entries; and per column as
//! uproot lists them (record members joined by '.') the same, which the
//! TTree-shaped `Column` reads must match.

use std::path::PathBuf;

use quarry::formats::FormatError;
use quarry::formats::root::rntuple::{RNTuple, value_json};
use quarry::formats::root::{Column, LeafType, RootFile, Values, is_rntuple, latest};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture() -> Value {
    let text = std::fs::read_to_string(repo().join("tests/fixtures/rntuple/values.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn open(rel: &str) -> RootFile {
    RootFile::open(std::fs::File::open(repo().join(rel)).unwrap()).unwrap()
}

/// The RNTuple a fixture entry names.
fn ntuple(file: &RootFile, key: &str) -> RNTuple {
    let keys = file.walk().unwrap();
    let k = latest(&keys, key, None).unwrap();
    assert!(is_rntuple(&k.key.class_name), "{key}: {}", k.key.class_name);
    file.rntuple(&k.key).unwrap()
}

/// Values as uproot's digest hashes them: little-endian in their type,
/// bools as one byte, strings UTF-8 joined by NUL.
fn hash_values(h: &mut Sha256, values: &Values, first: &mut bool) {
    fn le<T: Copy, const N: usize>(v: &[T], bytes: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| bytes(x)).collect()
    }
    let bytes = match values {
        Values::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
        Values::I8(v) => v.iter().map(|&x| x as u8).collect(),
        Values::U8(v) => v.clone(),
        Values::I16(v) => le(v, i16::to_le_bytes),
        Values::U16(v) => le(v, u16::to_le_bytes),
        Values::I32(v) => le(v, i32::to_le_bytes),
        Values::U32(v) => le(v, u32::to_le_bytes),
        Values::I64(v) => le(v, i64::to_le_bytes),
        Values::U64(v) => le(v, u64::to_le_bytes),
        Values::F32(v) => le(v, f32::to_le_bytes),
        Values::F64(v) => le(v, f64::to_le_bytes),
        Values::Str(v) => {
            let mut out = Vec::new();
            for s in v {
                if !*first {
                    out.push(0);
                }
                out.extend_from_slice(s.as_bytes());
                *first = false;
            }
            out
        }
    };
    h.update(bytes);
}

/// Entry `i` of a column as JSON, as uproot lists it.
fn column_entry(c: &Column, starts: &[usize], i: usize, optional: bool) -> Value {
    let inner = c.inner.max(1);
    let item = |k: usize| {
        if c.inner == 1 {
            value_json(&c.values, k)
        } else {
            Value::Array(
                (k * inner..(k + 1) * inner)
                    .map(|e| value_json(&c.values, e))
                    .collect(),
            )
        }
    };
    match &c.counts {
        None => item(i),
        Some(counts) => {
            let items: Vec<Value> = (starts[i]..starts[i] + counts[i] as usize)
                .map(item)
                .collect();
            if optional {
                items.into_iter().next().unwrap_or(Value::Null)
            } else {
                Value::Array(items)
            }
        }
    }
}

/// Each entry's first item.
fn item_starts(c: &Column) -> Vec<usize> {
    let mut starts = vec![0];
    if let Some(counts) = &c.counts {
        for &n in counts {
            starts.push(starts.last().unwrap() + n as usize);
        }
    }
    starts
}

/// Compares a whole column, read chunk by chunk, with the expected document:
/// every value, or the digests and the first and last entries.
fn check_column(file: &RootFile, nt: &RNTuple, path: &str, want: &Value, what: &str) {
    let column = nt
        .column(path)
        .unwrap_or_else(|| panic!("{what}: no column"));
    let reader = file.ntuple_reader(nt, column).unwrap();
    let optional = column.type_name.starts_with('?');
    let entries = nt.entries as usize;
    let edge = |i: usize| i < 3 || i + 3 >= entries;
    let (mut values_hash, mut counts_hash) = (Sha256::new(), Sha256::new());
    let mut first_string = true;
    let mut got_values = Vec::new();
    let mut chunk = reader.empty_column();
    let mut seen = 0usize;
    let ranges = reader.basket_ranges().to_vec();
    assert_eq!(ranges.first().map_or(0, |r| r.start), 0, "{what}");
    for (index, range) in ranges.iter().enumerate() {
        assert_eq!(
            range.start as usize, seen,
            "{what}: chunks tile the entries"
        );
        reader
            .read_basket(index, &mut chunk)
            .unwrap_or_else(|e| panic!("{what}: chunk {index} {range:?}: {e}"));
        assert_eq!(chunk.entries as u64, range.end - range.start, "{what}");
        hash_values(&mut values_hash, &chunk.values, &mut first_string);
        if let Some(counts) = &chunk.counts {
            counts
                .iter()
                .for_each(|&n| counts_hash.update(i64::from(n).to_le_bytes()));
        }
        let starts = item_starts(&chunk);
        for i in 0..chunk.entries {
            if want.get("values").is_some() || edge(seen + i) {
                got_values.push(column_entry(&chunk, &starts, i, optional));
            }
        }
        seen += chunk.entries;
    }
    assert_eq!(seen, entries, "{what}");
    if let Some(values) = want.get("values") {
        assert_eq!(&Value::Array(got_values), values, "{what}");
        return;
    }
    let mut edges = want["first"].as_array().unwrap().clone();
    edges.extend(want["last"].as_array().unwrap().iter().cloned());
    assert_eq!(got_values, edges, "{what}");
    assert_eq!(
        format!("{:x}", values_hash.finalize()),
        want["values_sha256"].as_str().unwrap(),
        "{what}"
    );
    if let Some(counts) = want.get("counts_sha256") {
        assert_eq!(
            format!("{:x}", counts_hash.finalize()),
            counts.as_str().unwrap(),
            "{what}"
        );
    }
}

/// uproot shows a `std::unique_ptr` as a list of at most one item; quarry,
/// as what it is, an optional: the item, or null.
fn pointer_as_optional(values: &Value) -> Value {
    let entries =
        values
            .as_array()
            .unwrap()
            .iter()
            .map(|v| match v.as_array().unwrap().as_slice() {
                [] => Value::Null,
                [one] => one.clone(),
                more => panic!("a unique_ptr of {} items", more.len()),
            });
    Value::Array(entries.collect())
}

/// Every top-level field read whole as nested values, entry by entry.
fn check_fields(file: &RootFile, nt: &RNTuple, want: &Value, name: &str) {
    let fields = want["fields"].as_array().unwrap();
    let names: Vec<&str> = nt.fields.iter().map(|f| f.name.as_str()).collect();
    let expected: Vec<&str> = fields.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, expected, "{name}: top-level fields");
    for (field, doc) in nt.fields.iter().zip(fields) {
        let what = format!("{name}: field {}", field.name);
        assert_eq!(field.cpp_type, doc["cpp_type"].as_str().unwrap(), "{what}");
        if doc.get("uproot_error").is_some() {
            // A streamer field: neither reader decodes it, quarry says why.
            let why = field.unsupported.clone().unwrap_or_default();
            assert!(why.contains("ROOT's streamer"), "{what}: {why}");
            let e = file.ntuple_field(nt, field, 0..nt.entries).unwrap_err();
            assert!(matches!(e, FormatError::Unsupported(_)), "{what}: {e}");
            continue;
        }
        assert_eq!(field.unsupported, None, "{what}");
        if let Some(values) = doc.get("values") {
            let values = &if field.cpp_type.starts_with("std::unique_ptr<") {
                pointer_as_optional(values)
            } else {
                values.clone()
            };
            let data = file
                .ntuple_field(nt, field, 0..nt.entries)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(data.len() as u64, nt.entries, "{what}");
            let got: Vec<Value> = (0..data.len()).map(|i| data.json(i)).collect();
            assert_eq!(&Value::Array(got), values, "{what}");
        } else {
            // Large: the first and last entries as nested values, the rest
            // through the column of the same name, by digest.
            let n = nt.entries;
            let head = file.ntuple_field(nt, field, 0..3).unwrap();
            let tail = file.ntuple_field(nt, field, n - 3..n).unwrap();
            let got: Vec<Value> = (0..3)
                .map(|i| head.json(i))
                .chain((0..3).map(|i| tail.json(i)))
                .collect();
            let mut edges = doc["first"].as_array().unwrap().clone();
            edges.extend(doc["last"].as_array().unwrap().iter().cloned());
            assert_eq!(got, edges, "{what}");
            check_column(file, nt, &field.name, doc, &what);
        }
    }
}

#[test]
fn every_field_of_every_file_equals_uproots() {
    let fixture = fixture();
    let mut checked = 0;
    for file_doc in fixture["files"].as_array().unwrap() {
        let rel = file_doc["file"].as_str().unwrap();
        let file = open(rel);
        for want in file_doc["ntuples"].as_array().unwrap() {
            let key = want["key"].as_str().unwrap();
            let name = format!("{rel}:{key}");
            let nt = ntuple(&file, key);
            assert_eq!(
                nt.anchor.version_string(),
                want["version"].as_str().unwrap(),
                "{name}"
            );
            assert_eq!(nt.entries, want["entries"].as_u64().unwrap(), "{name}");
            let clusters: Vec<Value> = nt
                .cluster_ranges()
                .iter()
                .map(|r| serde_json::json!([r.start, r.end - r.start]))
                .collect();
            assert_eq!(&Value::Array(clusters), &want["clusters"], "{name}");
            check_fields(&file, &nt, want, &name);
            checked += 1;
        }
    }
    assert_eq!(checked, 27, "every RNTuple of the fixture");
}

#[test]
fn columns_are_uproots_leaves_and_hold_their_values() {
    let fixture = fixture();
    let mut read = 0;
    let mut unsupported = Vec::new();
    for file_doc in fixture["files"].as_array().unwrap() {
        let rel = file_doc["file"].as_str().unwrap();
        let file = open(rel);
        for want in file_doc["ntuples"].as_array().unwrap() {
            let key = want["key"].as_str().unwrap();
            let nt = ntuple(&file, key);
            let docs = want["columns"].as_array().unwrap();
            let mut paths: Vec<&str> = nt.columns.iter().map(|c| c.path.as_str()).collect();
            let mut expected: Vec<&str> =
                docs.iter().map(|c| c["path"].as_str().unwrap()).collect();
            paths.sort_unstable();
            expected.sort_unstable();
            assert_eq!(paths, expected, "{rel}:{key}: columns");
            for doc in docs {
                let path = doc["path"].as_str().unwrap();
                let what = format!("{rel}:{key}: column {path}");
                let column = nt.column(path).unwrap();
                if let Err(why) = &column.layout {
                    unsupported.push(format!("{path} ({}): {why}", column.type_name));
                    continue;
                }
                let source = if doc.get("same_as_field").is_some() {
                    let field = want["fields"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|f| f["name"] == path)
                        .unwrap();
                    if field["cpp_type"]
                        .as_str()
                        .unwrap()
                        .starts_with("std::unique_ptr<")
                    {
                        let mut doc = field.clone();
                        doc["values"] = pointer_as_optional(&field["values"]);
                        check_column(&file, &nt, path, &doc, &what);
                        read += 1;
                        continue;
                    }
                    // A large field is read through this very column by
                    // `every_field_of_every_file_equals_uproots`.
                    if field.get("values").is_none() {
                        read += 1;
                        continue;
                    }
                    field
                } else {
                    doc
                };
                check_column(&file, &nt, path, source, &what);
                read += 1;
            }
        }
    }
    // What a TTree-shaped column cannot hold, read above as nested fields.
    unsupported.sort();
    assert_eq!(
        unsupported,
        [
            "empty_struct (()): a record without members",
            "note (unsupported): field 'note': an object of type 'TObjString' serialized by ROOT's streamer, not split into columns",
            "variant (union[int32, {i: int32}]): a std::variant (its alternatives differ in type)",
            "variant_int32_string (union[int32, string]): a std::variant (its alternatives differ in type)",
            "vec_opt (?float32[]): a collection of collections (quarry reads one level of nesting)",
            "vec_opt (?float32[]): a collection of collections (quarry reads one level of nesting)",
            "vec_opt (?float32[]): a collection of collections (quarry reads one level of nesting)",
            "vector_variant_int64_string (union[int64, string][]): a std::variant (its alternatives differ in type)",
            "vector_vector_int32 (int32[][]): a collection of collections (quarry reads one level of nesting)",
            "vector_vector_string (string[][]): a collection of collections (quarry reads one level of nesting)",
        ],
        "read {read} columns"
    );
}

#[test]
fn string_columns_hold_strings() {
    let file = open("testdata/rntuple/ntpl001_staff_rntuple_v1-0-0-0.root");
    let nt = ntuple(&file, "Staff");
    let nation = nt.column("Nation").unwrap();
    assert_eq!(nation.type_name, "string");
    let layout = nation.layout.clone().unwrap();
    assert_eq!(
        (layout.leaf_type, layout.inner, layout.jagged),
        (LeafType::Str, 1, false)
    );
}
