//! RNTuples built byte by byte, for what no test file holds: enums and
//! `std::unique_ptr`, streamer fields, feature flags and cluster flags of
//! later formats, unknown column types and field flags, large and
//! object-store locators, payloads split over keys, damaged checksums,
//! oversized pages and reads past their memory limit. Expected values are
//! the ones written, by construction.

use xxhash_rust::xxh3::xxh3_64;

use super::*;
use crate::Values;

fn string(s: &str) -> Vec<u8> {
    let mut out = (s.len() as u32).to_le_bytes().to_vec();
    out.extend(s.as_bytes());
    out
}

fn record(payload: Vec<u8>) -> Vec<u8> {
    let mut out = (payload.len() as i64 + 8).to_le_bytes().to_vec();
    out.extend(payload);
    out
}

fn list(items: Vec<Vec<u8>>) -> Vec<u8> {
    list_with(items, Vec::new())
}

/// A list frame whose items are followed by `tail` inside the frame.
fn list_with(items: Vec<Vec<u8>>, tail: Vec<u8>) -> Vec<u8> {
    let body: Vec<u8> = items.concat();
    let size = 12 + body.len() + tail.len();
    let mut out = (-(size as i64)).to_le_bytes().to_vec();
    out.extend((items.len() as u32).to_le_bytes());
    out.extend(body);
    out.extend(tail);
    out
}

/// A field record: role, flags, parent, name and type (and the array size
/// when flag 0x01 is set).
fn field(parent: u32, role: u16, flags: u16, name: &str, ty: &str, repetition: u64) -> Vec<u8> {
    let mut p = 0u32.to_le_bytes().to_vec();
    p.extend(0u32.to_le_bytes());
    p.extend(parent.to_le_bytes());
    p.extend(role.to_le_bytes());
    p.extend(flags.to_le_bytes());
    for s in [name, ty, "", ""] {
        p.extend(string(s));
    }
    if flags & 0x01 != 0 {
        p.extend(repetition.to_le_bytes());
    }
    record(p)
}

fn column(kind: u16, bits: u16, field: u32) -> Vec<u8> {
    let mut p = kind.to_le_bytes().to_vec();
    p.extend(bits.to_le_bytes());
    p.extend(field.to_le_bytes());
    p.extend(0u16.to_le_bytes());
    p.extend(0u16.to_le_bytes());
    record(p)
}

fn envelope(kind: u16, payload: Vec<u8>) -> Vec<u8> {
    let mut out = (u64::from(kind) | ((payload.len() as u64 + 16) << 16))
        .to_le_bytes()
        .to_vec();
    out.extend(payload);
    let sum = xxh3_64(&out);
    out.extend(sum.to_le_bytes());
    out
}

fn locator(offset: u64, size: u64) -> Vec<u8> {
    let mut out = (size as i32).to_le_bytes().to_vec();
    out.extend(offset.to_le_bytes());
    out
}

/// A page as written: its element count (negative with a checksum), its
/// stored bytes, and how the page list locates it.
#[derive(Clone)]
struct PageSpec {
    elements: u32,
    bytes: Vec<u8>,
    checksum: bool,
    /// None: a standard locator; Some(1): large; Some(2): an object store's.
    locator_kind: Option<u8>,
}

fn page(elements: u32, bytes: Vec<u8>) -> PageSpec {
    PageSpec {
        elements,
        bytes,
        checksum: true,
        locator_kind: None,
    }
}

/// An RNTuple to build: schema records, one cluster of `entries` entries
/// with each column's pages, and the knobs tests turn.
struct Spec {
    fields: Vec<Vec<u8>>,
    columns: Vec<Vec<u8>>,
    entries: u64,
    pages: Vec<Vec<PageSpec>>,
    header_flags: u64,
    footer_flags: u64,
    cluster_flags: u64,
    max_key_size: u64,
    wrong_header_checksum: bool,
}

impl Spec {
    fn new(
        fields: Vec<Vec<u8>>,
        columns: Vec<Vec<u8>>,
        entries: u64,
        pages: Vec<Vec<PageSpec>>,
    ) -> Spec {
        Spec {
            fields,
            columns,
            entries,
            pages,
            header_flags: 0,
            footer_flags: 0,
            cluster_flags: 0,
            max_key_size: 0,
            wrong_header_checksum: false,
        }
    }
}

/// Builds a file around the RNTuple: a ROOT header, the pages, envelopes
/// and the anchor; returns its bytes and the anchor's key.
fn build(spec: &Spec) -> (Vec<u8>, Key) {
    let mut file = vec![0u8; 100];
    let max = spec.max_key_size;
    // A payload over the key limit goes in chunks, the first ending with
    // the others' offsets.
    let put = |file: &mut Vec<u8>, bytes: &[u8]| -> (u64, u64) {
        let at = file.len() as u64;
        if max == 0 || bytes.len() as u64 <= max {
            file.extend(bytes);
            return (at, bytes.len() as u64);
        }
        let chunks = envelope::chunk_count(bytes.len() as u64, max) as usize;
        let max = max as usize;
        let head = max - (chunks - 1) * 8;
        assert_eq!((bytes.len() - head).div_ceil(max), chunks - 1);
        let mut offsets = Vec::new();
        let tail_at = at as usize + max;
        let mut cursor = tail_at;
        for chunk in bytes[head..].chunks(max) {
            offsets.extend((cursor as u64).to_le_bytes());
            cursor += chunk.len();
        }
        file.extend(&bytes[..head]);
        file.extend(offsets);
        file.extend(&bytes[head..]);
        (at, bytes.len() as u64)
    };
    let mut column_lists = Vec::new();
    for pages in &spec.pages {
        let mut items = Vec::new();
        for p in pages {
            let (at, size) = put(&mut file, &p.bytes);
            if p.checksum {
                file.extend(xxh3_64(&p.bytes).to_le_bytes());
            }
            let mut item = if p.checksum {
                (-(p.elements as i32)).to_le_bytes().to_vec()
            } else {
                (p.elements as i32).to_le_bytes().to_vec()
            };
            match p.locator_kind {
                None => item.extend(locator(at, size)),
                Some(1) => {
                    item.extend((-((1 << 24) | 20i32)).to_le_bytes());
                    item.extend(size.to_le_bytes());
                    item.extend(at.to_le_bytes());
                }
                Some(kind) => {
                    item.extend((-((i32::from(kind) << 24) | 16)).to_le_bytes());
                    item.extend([7; 12]);
                }
            }
            items.push(item);
        }
        let mut tail = 0i64.to_le_bytes().to_vec();
        tail.extend(505u32.to_le_bytes());
        column_lists.push(list_with(items, tail));
    }
    let mut header = spec.header_flags.to_le_bytes().to_vec();
    for s in ["events", "", "quarry tests"] {
        header.extend(string(s));
    }
    header.extend(list(spec.fields.clone()));
    header.extend(list(spec.columns.clone()));
    header.extend(list(Vec::new()));
    header.extend(list(Vec::new()));
    let header = envelope(1, header);
    let header_sum = xxh3_64(&header[..header.len() - 8]);
    let (header_at, header_size) = put(&mut file, &header);
    let quoted = if spec.wrong_header_checksum {
        header_sum ^ 1
    } else {
        header_sum
    };
    let mut page_list = quoted.to_le_bytes().to_vec();
    let mut summary = 0u64.to_le_bytes().to_vec();
    summary.extend((spec.entries | spec.cluster_flags << 56).to_le_bytes());
    page_list.extend(list(vec![record(summary)]));
    page_list.extend(list(vec![list(column_lists)]));
    let page_list = envelope(3, page_list);
    let (pl_at, pl_size) = put(&mut file, &page_list);
    let mut footer = spec.footer_flags.to_le_bytes().to_vec();
    footer.extend(quoted.to_le_bytes());
    footer.extend(record(Vec::new()));
    let mut group = 0u64.to_le_bytes().to_vec();
    group.extend(spec.entries.to_le_bytes());
    group.extend(1u32.to_le_bytes());
    group.extend((page_list.len() as u64).to_le_bytes());
    group.extend(locator(pl_at, pl_size));
    footer.extend(list(vec![record(group)]));
    let footer = envelope(2, footer);
    let (footer_at, footer_size) = put(&mut file, &footer);
    let anchor = anchor::build_anchor(
        [
            header_at,
            header_size,
            header.len() as u64,
            footer_at,
            footer_size,
            footer.len() as u64,
            spec.max_key_size,
        ],
        [1, 0, 0, 0],
    );
    let anchor_at = file.len() as u64;
    file.extend(&anchor);
    let end = file.len() as i32;
    file[..4].copy_from_slice(b"root");
    file[4..8].copy_from_slice(&62000i32.to_be_bytes());
    file[8..12].copy_from_slice(&100i32.to_be_bytes());
    file[12..16].copy_from_slice(&end.to_be_bytes());
    file[37..41].copy_from_slice(&64i32.to_be_bytes());
    let key = Key {
        name: "events".into(),
        title: String::new(),
        class_name: ANCHOR_CLASS.into(),
        cycle: 1,
        nbytes: anchor.len() as u32,
        obj_len: anchor.len() as u32,
        key_len: 0,
        seek_key: anchor_at,
    };
    (file, key)
}

fn open(spec: &Spec) -> (RootFile, Result<RNTuple, FormatError>) {
    let (bytes, key) = build(spec);
    let file = RootFile::from_bytes(bytes).unwrap();
    let nt = file.rntuple(&key);
    (file, nt)
}

fn values(
    file: &RootFile,
    nt: &RNTuple,
    name: &str,
) -> Result<Vec<serde_json::Value>, FormatError> {
    let field = nt.field(name).unwrap();
    let data = file.ntuple_field(nt, field, 0..nt.entries)?;
    Ok((0..data.len()).map(|i| data.json(i)).collect())
}

fn i16s(v: &[i16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// An enum over an int16 (a leaf without columns over its `_0`, an Int16
/// column) and a `std::unique_ptr<float>` (a collection of at most one, its
/// offsets in an Index32 column), 3 entries.
fn enum_and_pointer() -> Spec {
    Spec::new(
        vec![
            field(0, 0, 0, "colour", "Colour", 0),
            field(0, 0, 0, "_0", "std::int16_t", 0),
            field(2, 1, 0, "maybe", "std::unique_ptr<float>", 0),
            field(2, 0, 0, "_0", "float", 0),
        ],
        vec![
            column(0x05, 16, 1),
            column(0x0E, 32, 2),
            column(0x0C, 32, 3),
        ],
        3,
        vec![
            vec![page(3, i16s(&[3, -1, 7]))],
            vec![page(3, u32s(&[1, 1, 2]))],
            vec![page(2, f32s(&[1.5, -2.25]))],
        ],
    )
}

#[test]
fn enums_and_unique_pointers_are_read() {
    let (file, nt) = open(&enum_and_pointer());
    let nt = nt.unwrap();
    assert_eq!(values(&file, &nt, "colour").unwrap(), [3, -1, 7]);
    assert_eq!(
        values(&file, &nt, "maybe").unwrap(),
        [
            serde_json::json!(1.5),
            serde_json::Value::Null,
            serde_json::json!(-2.25)
        ]
    );
    let none = file
        .ntuple_field(&nt, nt.field("maybe").unwrap(), 1..1)
        .unwrap();
    assert_eq!(none.len(), 0);
    let colour = nt.column("colour").unwrap();
    assert_eq!(colour.type_name, "int16");
    let maybe = nt.column("maybe").unwrap();
    assert_eq!(maybe.type_name, "?float32");
    let column = file.ntuple_column(&nt, maybe).unwrap();
    assert_eq!(column.counts, Some(vec![1, 0, 1]));
    assert_eq!(column.values, Values::F32(vec![1.5, -2.25]));
}

#[test]
fn chunked_payloads_and_large_locators_are_followed() {
    let mut spec = enum_and_pointer();
    // Keys of at most 96 bytes: the envelopes go in several chunks.
    spec.max_key_size = 96;
    spec.pages[2][0].locator_kind = Some(1);
    let (file, nt) = open(&spec);
    let nt = nt.unwrap();
    assert_eq!(values(&file, &nt, "colour").unwrap(), [3, -1, 7]);
    assert_eq!(
        values(&file, &nt, "maybe").unwrap()[2],
        serde_json::json!(-2.25)
    );
}

#[test]
fn an_object_store_locator_is_named_not_followed() {
    let mut spec = enum_and_pointer();
    spec.pages[0][0].locator_kind = Some(2);
    let (file, nt) = open(&spec);
    let nt = nt.unwrap();
    let e = values(&file, &nt, "colour").unwrap_err();
    assert!(
        matches!(&e, FormatError::Unsupported(m) if m.contains("type 0x02")),
        "{e}"
    );
    // The other fields still read.
    assert_eq!(values(&file, &nt, "maybe").unwrap().len(), 3);
}

#[test]
fn streamer_fields_unknown_types_and_flags_are_unsupported_not_misread() {
    let spec = Spec::new(
        vec![
            field(0, 4, 0, "blob", "TH1F", 0),
            field(1, 0, 0, "odd", "float", 0),
            field(2, 0, 0x08, "soa", "float", 0),
            field(3, 0, 0, "fine", "std::int16_t", 0),
        ],
        vec![
            column(0x0F, 64, 0),
            column(0x01, 8, 0),
            column(0x30, 32, 1),
            column(0x0C, 32, 2),
            column(0x05, 16, 3),
        ],
        2,
        vec![
            vec![page(2, u64s(&[1, 2]))],
            vec![page(2, vec![0xAB, 0xCD])],
            vec![page(2, f32s(&[1.0, 2.0]))],
            vec![page(2, f32s(&[1.0, 2.0]))],
            vec![page(2, i16s(&[4, 5]))],
        ],
    );
    let (file, nt) = open(&spec);
    let nt = nt.unwrap();
    let reason = |name: &str| {
        nt.field(name)
            .unwrap()
            .unsupported
            .clone()
            .unwrap_or_default()
    };
    assert!(
        reason("blob").contains("ROOT's streamer"),
        "{}",
        reason("blob")
    );
    assert!(
        reason("odd").contains("column type 0x30"),
        "{}",
        reason("odd")
    );
    assert!(
        reason("soa").contains("field flags 0x0008"),
        "{}",
        reason("soa")
    );
    for name in ["blob", "odd", "soa"] {
        assert!(matches!(
            values(&file, &nt, name),
            Err(FormatError::Unsupported(_))
        ));
        let c = nt.column(name).unwrap();
        assert!(c.layout.is_err());
        assert!(matches!(
            file.ntuple_reader(&nt, c),
            Err(FormatError::Unsupported(_))
        ));
    }
    assert_eq!(values(&file, &nt, "fine").unwrap(), [4, 5]);
}

#[test]
fn later_formats_features_are_refused() {
    for (flag, where_) in [(1u64 << 3, "header"), (1 << 0, "footer")] {
        let mut spec = enum_and_pointer();
        if where_ == "header" {
            spec.header_flags = flag;
        } else {
            spec.footer_flags = flag;
        }
        let e = open(&spec).1.unwrap_err().to_string();
        assert!(
            e.contains(&format!("{where_} sets feature flag bit")),
            "{e}"
        );
    }
    let mut sharded = enum_and_pointer();
    sharded.cluster_flags = 0x01;
    let e = open(&sharded).1.unwrap_err();
    assert!(
        matches!(&e, FormatError::Unsupported(m) if m.contains("sharded")),
        "{e}"
    );
}

#[test]
fn damage_is_named() {
    let mut other = enum_and_pointer();
    other.wrong_header_checksum = true;
    let e = open(&other).1.unwrap_err().to_string();
    assert!(e.contains("belongs to another header"), "{e}");

    let spec = enum_and_pointer();
    let (mut bytes, key) = build(&spec);
    // The header envelope follows the pages (3 pages + checksums): flip a
    // byte of the ntuple's name in it.
    let at = bytes.windows(6).position(|w| w == b"events").unwrap();
    bytes[at] ^= 0x20;
    let e = RootFile::from_bytes(bytes)
        .unwrap()
        .rntuple(&key)
        .unwrap_err()
        .to_string();
    assert!(e.contains("header envelope checksum mismatch"), "{e}");

    let (mut bytes, key) = build(&spec);
    bytes[100] ^= 0xFF; // the first byte of the first page
    let file = RootFile::from_bytes(bytes).unwrap();
    let nt = file.rntuple(&key).unwrap();
    let e = values(&file, &nt, "colour").unwrap_err().to_string();
    assert!(e.contains("page checksum mismatch"), "{e}");
}

#[test]
fn pages_and_reads_are_held_to_their_limits() {
    // A page claiming 2^25 elements in 6 bytes: refused before anything
    // is decompressed or allocated.
    let mut spec = enum_and_pointer();
    spec.entries = 1 << 25;
    spec.pages[0][0].elements = 1 << 25;
    let (file, nt) = open(&spec);
    let nt = nt.unwrap();
    let field = nt.field("colour").unwrap();
    let e = file.ntuple_field(&nt, field, 0..3).unwrap_err();
    assert!(
        matches!(&e, FormatError::Unsupported(m) if m.contains("elements, more than")),
        "{e}"
    );

    let (file, nt) = open(&enum_and_pointer());
    let nt = nt.unwrap();
    let field = nt.field("colour").unwrap();
    let e = file.ntuple_field_within(&nt, field, 0..3, 4).unwrap_err();
    assert!(
        matches!(&e, FormatError::Unsupported(m) if m.contains("read fewer")),
        "{e}"
    );
    let mut reader = file
        .ntuple_reader(&nt, nt.column("colour").unwrap())
        .unwrap();
    reader.set_read_limit(4);
    let mut into = reader.empty_column();
    assert!(reader.read_basket(0, &mut into).is_err());
    reader.set_read_limit(1 << 20);
    reader.read_basket(0, &mut into).unwrap();
    assert_eq!(into.values, Values::I16(vec![3, -1, 7]));
}
