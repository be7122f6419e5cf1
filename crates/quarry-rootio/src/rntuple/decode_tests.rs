//! The page decoder against a straightforward one (each page decoded whole
//! into a fresh vector, the split undone first, then the deltas summed: the
//! reader's decoder before pages were decoded in place), on hand-made pages
//! and on every page of every RNTuple of the repository's test files.

use std::path::{Path, PathBuf};

use super::*;
use crate::rntuple::pages::{PageBuffers, fetch_page, fetch_page_into};
use crate::{RootFile, is_rntuple};

/// Decodes all `n` elements of a page, the plain way.
fn reference(codec: &ColumnCodec, bytes: &[u8], n: usize) -> Decoded {
    macro_rules! le {
        ($variant:ident, $t:ty) => {
            Values::$variant(
                bytes
                    .chunks_exact(std::mem::size_of::<$t>())
                    .map(|c| <$t>::from_le_bytes(c.try_into().expect("sized")))
                    .collect(),
            )
        };
    }
    fn unsplit<const N: usize, V>(bytes: &[u8], n: usize, make: impl Fn([u8; N]) -> V) -> Vec<V> {
        let planes: [&[u8]; N] = std::array::from_fn(|k| &bytes[k * n..(k + 1) * n]);
        (0..n)
            .map(|i| make(std::array::from_fn(|k| planes[k][i])))
            .collect()
    }
    fn undelta(mut values: Vec<u64>) -> Vec<u64> {
        let mut sum = 0u64;
        for v in &mut values {
            sum = sum.wrapping_add(*v);
            *v = sum;
        }
        values
    }
    let half = |h: [u8; 2]| half_to_f32(u16::from_le_bytes(h));
    let values = match codec.kind {
        T::Bit => Values::Bool((0..n).map(|i| bytes[i / 8] >> (i % 8) & 1 != 0).collect()),
        T::Byte | T::Char | T::UInt8 => Values::U8(bytes.to_vec()),
        T::Int8 => Values::I8(bytes.iter().map(|&b| b as i8).collect()),
        T::Int16 => le!(I16, i16),
        T::UInt16 => le!(U16, u16),
        T::Int32 => le!(I32, i32),
        T::UInt32 => le!(U32, u32),
        T::Int64 => le!(I64, i64),
        T::UInt64 => le!(U64, u64),
        T::Real32 => le!(F32, f32),
        T::Real64 => le!(F64, f64),
        T::Real16 => Values::F32(bytes.chunks_exact(2).map(|c| half([c[0], c[1]])).collect()),
        T::SplitInt16 => Values::I16(unsplit(bytes, n, zigzag16)),
        T::SplitInt32 => Values::I32(unsplit(bytes, n, zigzag32)),
        T::SplitInt64 => Values::I64(unsplit(bytes, n, zigzag64)),
        T::SplitUInt16 => Values::U16(unsplit(bytes, n, u16::from_le_bytes)),
        T::SplitUInt32 => Values::U32(unsplit(bytes, n, u32::from_le_bytes)),
        T::SplitUInt64 => Values::U64(unsplit(bytes, n, u64::from_le_bytes)),
        T::SplitReal16 => Values::F32(unsplit(bytes, n, half)),
        T::SplitReal32 => Values::F32(unsplit(bytes, n, f32::from_le_bytes)),
        T::SplitReal64 => Values::F64(unsplit(bytes, n, f64::from_le_bytes)),
        T::Real32Trunc => {
            let shift = 32 - u32::from(codec.bits);
            Values::F32(
                unpack_bits(bytes, codec.bits, 0..n)
                    .map(|v| f32::from_bits(v << shift))
                    .collect(),
            )
        }
        T::Real32Quant => {
            let (lo, hi) = codec.range.unwrap();
            let steps = ((1u64 << codec.bits) - 1) as f64;
            Values::F32(
                unpack_bits(bytes, codec.bits, 0..n)
                    .map(|q| (lo + f64::from(q) * (hi - lo) / steps) as f32)
                    .collect(),
            )
        }
        T::Index32 => {
            return Decoded::Index(
                bytes
                    .chunks_exact(4)
                    .map(|c| u64::from(u32::from_le_bytes(c.try_into().unwrap())))
                    .collect(),
            );
        }
        T::Index64 => {
            return Decoded::Index(
                bytes
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            );
        }
        T::SplitIndex32 => {
            return Decoded::Index(undelta(unsplit(bytes, n, |b| {
                u64::from(u32::from_le_bytes(b))
            })));
        }
        T::SplitIndex64 => return Decoded::Index(undelta(unsplit(bytes, n, u64::from_le_bytes))),
        T::Switch => {
            return Decoded::Switch(
                bytes
                    .chunks_exact(12)
                    .map(|c| {
                        let index = u64::from_le_bytes(c[..8].try_into().unwrap());
                        (index, u32::from_le_bytes(c[8..].try_into().unwrap()))
                    })
                    .collect(),
            );
        }
    };
    assert_eq!(values.len(), n);
    Decoded::Values(values)
}

/// A page's bytes as stored, and prepared when it is split.
struct Forms {
    stored: Vec<u8>,
    plain: Option<Vec<u8>>,
}

impl Forms {
    fn of(codec: &ColumnCodec, bytes: &[u8], n: usize) -> Forms {
        let mut plain = Vec::new();
        let split = prepare(codec, bytes, n, &mut plain);
        Forms {
            stored: bytes.to_vec(),
            plain: split.then_some(plain),
        }
    }

    /// Elements `range` decoded by `decode_into` from each form.
    fn decoded(&self, codec: &ColumnCodec, n: usize, range: Range<usize>) -> Vec<Decoded> {
        let mut out = Decoded::empty(codec.kind);
        decode_into(codec, &self.stored, n, range.clone(), &mut out).unwrap();
        let mut all = vec![out];
        if let Some(plain) = &self.plain {
            let mut out = Decoded::empty(codec.kind);
            decode_into(&codec.plain(), plain, n, range, &mut out).unwrap();
            all.push(out);
        }
        all
    }
}

fn decoded(codec: &ColumnCodec, bytes: &[u8], n: usize, range: Range<usize>) -> Vec<Decoded> {
    Forms::of(codec, bytes, n).decoded(codec, n, range)
}

fn slice(d: &Decoded, range: Range<usize>) -> Decoded {
    let mut out = match d {
        Decoded::Index(_) => Decoded::Index(Vec::new()),
        Decoded::Switch(_) => Decoded::Switch(Vec::new()),
        Decoded::Values(v) => Decoded::Values(match v {
            Values::Bool(_) => Values::Bool(Vec::new()),
            Values::I8(_) => Values::I8(Vec::new()),
            Values::U8(_) => Values::U8(Vec::new()),
            Values::I16(_) => Values::I16(Vec::new()),
            Values::U16(_) => Values::U16(Vec::new()),
            Values::I32(_) => Values::I32(Vec::new()),
            Values::U32(_) => Values::U32(Vec::new()),
            Values::I64(_) => Values::I64(Vec::new()),
            Values::U64(_) => Values::U64(Vec::new()),
            Values::F32(_) => Values::F32(Vec::new()),
            Values::F64(_) => Values::F64(Vec::new()),
            Values::Str(_) => Values::Str(Vec::new()),
        }),
    };
    out.extend_from(d, range);
    out
}

/// A decoded page as comparable bits (NaNs equal themselves bit for bit).
fn bits(d: &Decoded) -> (&'static str, Vec<u64>) {
    fn all<V: Copy>(v: &[V], f: impl Fn(V) -> u64) -> Vec<u64> {
        v.iter().map(|&x| f(x)).collect()
    }
    match d {
        Decoded::Index(v) => ("index", v.clone()),
        Decoded::Switch(v) => ("switch", all(v, |(i, t)| i ^ u64::from(t) << 56)),
        Decoded::Values(v) => match v {
            Values::Bool(v) => ("bool", all(v, u64::from)),
            Values::I8(v) => ("i8", all(v, |x| x as u64)),
            Values::U8(v) => ("u8", all(v, u64::from)),
            Values::I16(v) => ("i16", all(v, |x| x as u64)),
            Values::U16(v) => ("u16", all(v, u64::from)),
            Values::I32(v) => ("i32", all(v, |x| x as u64)),
            Values::U32(v) => ("u32", all(v, u64::from)),
            Values::I64(v) => ("i64", all(v, |x| x as u64)),
            Values::U64(v) => ("u64", v.clone()),
            Values::F32(v) => ("f32", all(v, |x| u64::from(x.to_bits()))),
            Values::F64(v) => ("f64", all(v, f64::to_bits)),
            Values::Str(_) => ("str", Vec::new()),
        },
    }
}

/// The ranges of a page of `n` elements the test decodes: whole, a head, a
/// tail, a middle, single elements at the edges.
fn ranges(n: usize) -> Vec<Range<usize>> {
    let (third, half) = (n / 3, n / 2);
    let mut out = vec![0..n, 0..half, half..n, third..n - third, 0..0, n..n];
    if n > 0 {
        out.extend([0..1, n - 1..n]);
    }
    out
}

#[test]
fn split_zigzag_and_delta_encodings() {
    // 1, -1, 2 as zigzag 2, 1, 4, split into low then high bytes.
    let codec = ColumnCodec {
        kind: T::SplitInt16,
        bits: 16,
        range: None,
    };
    for got in decoded(&codec, &[2, 1, 4, 0, 0, 0], 3, 0..3) {
        assert_eq!(got, Decoded::Values(Values::I16(vec![1, -1, 2])));
    }
    for got in decoded(&codec, &[2, 1, 4, 0, 0, 0], 3, 1..3) {
        assert_eq!(got, Decoded::Values(Values::I16(vec![-1, 2])));
    }
    // Offsets 3, 3, 10 stored as deltas 3, 0, 7: the tail sums the head.
    let codec = ColumnCodec {
        kind: T::SplitIndex32,
        bits: 32,
        range: None,
    };
    let mut bytes = vec![3, 0, 7];
    bytes.extend([0; 9]);
    for got in decoded(&codec, &bytes, 3, 0..3) {
        assert_eq!(got, Decoded::Index(vec![3, 3, 10]));
    }
    for got in decoded(&codec, &bytes, 3, 2..3) {
        assert_eq!(got, Decoded::Index(vec![10]));
    }
}

#[test]
fn half_floats_convert_exactly() {
    assert_eq!(half_to_f32(0x3c00), 1.0);
    assert_eq!(half_to_f32(0xc000), -2.0);
    assert_eq!(half_to_f32(0x7bff), 65504.0);
    assert_eq!(half_to_f32(0x0001), 2f32.powi(-24));
    assert_eq!(half_to_f32(0x8000).to_bits(), (-0.0f32).to_bits());
    assert!(half_to_f32(0x7c00).is_infinite());
    assert!(half_to_f32(0x7e00).is_nan());
}

#[test]
fn packed_bits_read_least_significant_first() {
    let got: Vec<u32> = unpack_bits(&[0b1010_0101, 0b0000_0011], 3, 0..4).collect();
    assert_eq!(got, [0b101, 0b100, 0b110, 0b001]);
    let tail: Vec<u32> = unpack_bits(&[0b1010_0101, 0b0000_0011], 3, 2..4).collect();
    assert_eq!(tail, [0b110, 0b001]);
    let all: Vec<u32> = unpack_bits(&u32::MAX.to_le_bytes(), 32, 0..1).collect();
    assert_eq!(all, [u32::MAX]);
}

#[test]
fn a_range_beyond_the_page_is_refused() {
    let codec = ColumnCodec {
        kind: T::Real32,
        bits: 32,
        range: None,
    };
    let mut out = Decoded::empty(T::Real32);
    assert!(decode_into(&codec, &[0; 8], 2, 1..3, &mut out).is_err());
    let mut index = Decoded::empty(T::Index64);
    assert!(decode_into(&codec, &[0; 8], 2, 0..2, &mut index).is_err());
}

/// The RNTuple files of the repository (ROOT-written, uproot-written).
fn test_files() -> Vec<PathBuf> {
    let repo = Path::new(crate::REPO);
    let mut files = Vec::new();
    for dir in [
        "testdata/rntuple",
        "tests/data/rntuple",
        "tests/data/rntuple/copies",
    ] {
        for entry in std::fs::read_dir(repo.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "root") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Every page of every column of every RNTuple in the repository's test
/// files, whole and in parts, as stored and prepared, decodes to what the
/// straightforward decoder gives.
#[test]
fn every_page_of_the_test_files_decodes_as_the_plain_decoder_does() {
    let mut kinds = std::collections::BTreeSet::new();
    let mut direct_kinds = std::collections::BTreeSet::new();
    let mut pages = 0;
    let mut buffers = PageBuffers::default();
    for path in test_files() {
        let file = RootFile::open(std::fs::File::open(&path).unwrap()).unwrap();
        for key in file.walk().unwrap() {
            if !is_rntuple(&key.key.class_name) {
                continue;
            }
            let Ok(nt) = file.rntuple(&key.key) else {
                continue;
            };
            for cluster in &nt.clusters {
                for (c, range) in cluster.columns.iter().enumerate() {
                    let Ok(codec) = &nt.codecs[c] else { continue };
                    // A few pages of each column of each cluster: enough for
                    // every kind and page size the files hold, in a test that
                    // stays quick in a debug build.
                    for page in range.pages.iter().take(4) {
                        let max_key = nt.anchor.max_key_size;
                        let Ok(len) = fetch_page(&file, codec, page, max_key, &mut buffers) else {
                            continue;
                        };
                        let bytes = &buffers.bytes[..len];
                        let n = page.elements as usize;
                        let whole = reference(codec, bytes, n);
                        let forms = Forms::of(codec, bytes, n);
                        for r in ranges(n) {
                            let want = slice(&whole, r.clone());
                            for got in forms.decoded(codec, n, r.clone()) {
                                assert_eq!(
                                    bits(&got),
                                    bits(&want),
                                    "{}: column {c} ({:?}), elements {r:?} of {n}",
                                    path.display(),
                                    codec.kind
                                );
                            }
                        }
                        if direct_matches(&file, codec, page, max_key, &whole) {
                            direct_kinds.insert(format!("{:?}", codec.kind));
                        }
                        kinds.insert(format!("{:?}", codec.kind));
                        pages += 1;
                    }
                }
            }
        }
    }
    // The files hold the split encodings, with zigzag and deltas, and more.
    for kind in [
        "SplitIndex64",
        "SplitInt32",
        "SplitInt64",
        "SplitUInt32",
        "SplitReal32",
        "SplitReal64",
        "Index64",
        "Real32",
        "Bit",
        "Switch",
    ] {
        assert!(kinds.contains(kind), "no {kind} page in {kinds:?}");
    }
    assert!(pages > 100, "{pages} pages");
    // Pages of plain numbers went straight into their values.
    for kind in ["Real32", "Real64", "Int32", "UInt64"] {
        assert!(
            direct_kinds.contains(kind),
            "no {kind} page decompressed into its values ({direct_kinds:?})"
        );
    }
}

/// Whether the page is one `fill_direct` decompresses straight into values; if
/// so, it is checked to give `whole` (after a value already there, which it
/// must leave alone).
fn direct_matches(
    file: &RootFile,
    codec: &ColumnCodec,
    page: &crate::rntuple::Page,
    max_key: u64,
    whole: &Decoded,
) -> bool {
    let n = page.elements as usize;
    if n == 0 {
        return false;
    }
    let first = slice(whole, 0..1);
    let mut out = first.clone();
    let mut buffers = PageBuffers::default();
    // SAFETY: `fetch_page_into` writes every byte of the room when it
    // succeeds.
    let fetched = unsafe {
        fill_direct(codec, n, &mut out, |room| {
            fetch_page_into(file, codec, page, max_key, &mut buffers, room)
        })
    };
    let Some(fetched) = fetched else {
        assert_eq!(
            bits(&out),
            bits(&first),
            "a page not decoded directly left its values alone"
        );
        return false;
    };
    fetched.unwrap();
    let mut want = first;
    want.extend_from(whole, 0..n);
    assert_eq!(
        bits(&out),
        bits(&want),
        "{:?} page decoded directly",
        codec.kind
    );
    // Into the wrong size, the page is refused and the values left alone.
    let mut short = slice(whole, 0..1);
    // SAFETY: as above.
    let fetched = unsafe {
        fill_direct(codec, n - 1, &mut short, |room| {
            fetch_page_into(file, codec, page, max_key, &mut buffers, room)
        })
    };
    assert!(fetched.expect("the same kind").is_err());
    assert_eq!(bits(&short), bits(&slice(whole, 0..1)));
    true
}

/// `muon_pt` and `muon_eta` of the repository's RNTuple copy of
/// `clusters.root` are collections of the same sizes, each with an offsets
/// column of its own (uproot writes them so): read chunk by chunk in turn on
/// one thread, as a scan reads them, each `muon_eta` offsets page is served
/// from the memo `muon_pt`'s left, and both columns equal the TTree they
/// were copied from (read by the TTree reader; `scripts/fixtures/
/// rntuple_copies.py` checked with uproot that the copy reads back equal).
#[test]
fn collections_of_the_same_sizes_decompress_their_offsets_once() {
    use crate::rntuple::pages::MEMO_HITS;
    let data = Path::new(crate::REPO).join("tests/data");
    let open = |p: &str| RootFile::open(std::fs::File::open(data.join(p)).unwrap()).unwrap();
    let (copy, source) = (
        open("rntuple/copies/clusters.root"),
        open("root/clusters.root"),
    );
    let keys = copy.walk().unwrap();
    let key = keys.iter().find(|k| is_rntuple(&k.key.class_name)).unwrap();
    let nt = copy.rntuple(&key.key).unwrap();
    let tkeys = source.walk().unwrap();
    let tkey = tkeys.iter().find(|k| k.key.class_name == "TTree").unwrap();
    let tree = source.tree(&tkey.key).unwrap();
    let names = ["muon_pt", "muon_eta"];
    let readers: Vec<_> = names
        .iter()
        .map(|name| {
            let column = nt.columns.iter().find(|c| c.path == *name).unwrap();
            copy.ntuple_reader(&nt, column).unwrap()
        })
        .collect();
    let chunks = readers[0].basket_ranges().len();
    assert!(chunks > 1, "{chunks} chunks");
    let mut read: Vec<_> = readers.iter().map(|r| r.empty_column()).collect();
    let mut chunk = readers[0].empty_column();
    MEMO_HITS.set(0);
    for i in 0..chunks {
        for (reader, all) in readers.iter().zip(&mut read) {
            reader.read_basket(i, &mut chunk).unwrap();
            all.extend_from(&chunk);
        }
    }
    // At least every muon_eta page (a muon_pt page may equal the muon_eta
    // page before it too: compared byte for byte, it is the same page).
    let hits = MEMO_HITS.get();
    assert!(
        hits >= chunks,
        "{hits} offsets pages from the memo, {chunks} chunks"
    );
    for (name, got) in names.iter().zip(&read) {
        let branch = tree.branches.iter().find(|b| b.name == *name).unwrap();
        let want = source.column(branch).unwrap();
        assert_eq!(got.entries, want.entries, "{name}");
        assert_eq!(got.counts, want.counts, "{name}");
        assert_eq!(got.values, want.values, "{name}");
    }
}
