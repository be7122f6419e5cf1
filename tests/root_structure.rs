//! quarry's ROOT reader against uproot on the 12 real files of testdata/root and
//! one written by ROOT 6.40 for the branch kinds they lack (tests/data/root): the
//! same keys (path, cycle, class) in the same order, and every object decompressing
//! to the bytes uproot decompresses it to (length and SHA-256, from
//! tests/fixtures/root/*.keys.json, written by scripts/fixtures/root_keys.py).

use std::path::{Path, PathBuf};

use quarry::formats::root::{PathedKey, RootFile};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> Vec<(PathBuf, Value)> {
    let mut out: Vec<(PathBuf, Value)> = std::fs::read_dir(repo().join("tests/fixtures/root"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".keys.json"))
        .map(|p| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (data_file(v["file"].as_str().unwrap()), v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A test file by name: the public corpus in testdata/root, or one written for
/// the tests in tests/data/root.
fn data_file(name: &str) -> PathBuf {
    let corpus = repo().join("testdata/root").join(name);
    if corpus.exists() {
        corpus
    } else {
        repo().join("tests/data/root").join(name)
    }
}

/// The fixture `<file name>.<kind>.json` of a test file.
fn fixture_of(path: &Path, kind: &str) -> Value {
    let name = path.file_name().unwrap().to_string_lossy();
    let text = std::fs::read_to_string(
        repo()
            .join("tests/fixtures/root")
            .join(format!("{name}.{kind}.json")),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The key a fixture entry names by `path` and `cycle`.
fn key_of<'k>(keys: &'k [PathedKey], want: &Value) -> &'k PathedKey {
    keys.iter()
        .find(|k| {
            k.path() == want["path"].as_str().unwrap()
                && i64::from(k.key.cycle) == want["cycle"].as_i64().unwrap()
        })
        .unwrap_or_else(|| panic!("no key {} ;{}", want["path"], want["cycle"]))
}

/// uproot calls a TDirectoryFile key "TDirectory".
fn uproot_class(class: &str) -> &str {
    if class == "TDirectoryFile" {
        "TDirectory"
    } else {
        class
    }
}

#[test]
fn every_key_and_object_matches_uproot() {
    let all = fixtures();
    assert_eq!(
        all.len(),
        13,
        "one fixture per test file (12 + the ROOT-written one)"
    );
    for (path, fixture) in all {
        let file = RootFile::open(std::fs::File::open(&path).unwrap()).unwrap();
        let keys = file
            .walk()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let expected = fixture["keys"].as_array().unwrap();
        let got: Vec<(String, i64, String)> = keys
            .iter()
            .map(|k| {
                (
                    k.path(),
                    i64::from(k.key.cycle),
                    uproot_class(&k.key.class_name).to_string(),
                )
            })
            .collect();
        let want: Vec<(String, i64, String)> = expected
            .iter()
            .map(|k| {
                (
                    k["path"].as_str().unwrap().to_string(),
                    k["cycle"].as_i64().unwrap(),
                    k["class"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(got, want, "{}", path.display());
        for (k, e) in keys.iter().zip(expected) {
            if k.key.is_directory() {
                continue;
            }
            let bytes = file
                .object(&k.key)
                .unwrap_or_else(|err| panic!("{} {}: {err}", path.display(), k.path()));
            assert_eq!(
                bytes.len() as u64,
                e["uncompressed"].as_u64().unwrap(),
                "{}",
                k.path()
            );
            assert_eq!(
                u64::from(k.key.stored_len()),
                e["compressed"].as_u64().unwrap(),
                "{}",
                k.path()
            );
            let digest = format!("{:x}", Sha256::digest(&bytes));
            assert_eq!(
                digest,
                e["sha256"].as_str().unwrap(),
                "{} {}",
                path.display(),
                k.path()
            );
        }
    }
}

/// Reads everything the reader can reach; errors are fine, panics and hangs are not.
fn read_all(path: &Path) {
    let Ok(file) = RootFile::open(std::fs::File::open(path).unwrap()) else {
        return;
    };
    let Ok(keys) = file.walk() else { return };
    for k in keys {
        let _ = file.object(&k.key);
    }
}

#[test]
fn damaged_files_give_errors_not_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let damaged = tmp.path().join("damaged.root");
    for name in [
        "uproot-nesteddirs.root",
        "uproot-HZZ-lz4.root",
        "uproot-HZZ-zstd.root",
        "uproot-histograms.root",
    ] {
        let bytes = std::fs::read(repo().join("testdata/root").join(name)).unwrap();
        // Truncations everywhere, coarse steps.
        for cut in (0..bytes.len()).step_by(bytes.len() / 97 + 1) {
            std::fs::write(&damaged, &bytes[..cut]).unwrap();
            read_all(&damaged);
        }
        // Single-byte damage across the header, the key lists and the records
        // (a fixed pseudo-random walk, so failures reproduce).
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..400 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % bytes.len() as u64) as usize;
            let mut copy = bytes.clone();
            copy[at] ^= (state >> 32) as u8 | 1;
            std::fs::write(&damaged, &copy).unwrap();
            read_all(&damaged);
        }
    }
}

/// A branch as the fixture describes it, built from quarry's model.
fn branch_json(b: &quarry::formats::root::Branch) -> Value {
    let n = b.write_basket;
    serde_json::json!({
        "name": b.name,
        "class": b.class_name,
        "entries": b.entries,
        "leaves": b.leaves.iter().map(|l| serde_json::json!({
            "name": l.name, "class": l.class_name, "len": l.len, "len_type": l.len_type, "count": l.count,
        })).collect::<Vec<_>>(),
        "basket_entry": &b.basket_entry[..(n + 1).min(b.basket_entry.len())],
        "basket_seek": &b.basket_seek[..n],
        "basket_bytes": &b.basket_bytes[..n],
        "embedded_baskets": b.embedded_baskets.len(),
        "branches": b.branches.iter().map(branch_json).collect::<Vec<_>>(),
    })
}

#[test]
fn every_tree_matches_uproot_branch_by_branch() {
    let mut trees_seen = 0;
    for (path, _) in fixtures() {
        let fixture = fixture_of(&path, "trees");
        let file = RootFile::open(std::fs::File::open(&path).unwrap()).unwrap();
        let keys = file.walk().unwrap();
        for want in fixture["trees"].as_array().unwrap() {
            let key = key_of(&keys, want);
            let tree = file
                .tree(&key.key)
                .unwrap_or_else(|e| panic!("{} {}: {e}", path.display(), key.path()));
            assert_eq!(
                tree.entries,
                want["entries"].as_i64().unwrap(),
                "{}",
                key.path()
            );
            let got: Vec<Value> = tree.branches.iter().map(branch_json).collect();
            let want_branches = want["branches"].as_array().unwrap();
            assert_eq!(
                got.len(),
                want_branches.len(),
                "{} {}",
                path.display(),
                key.path()
            );
            for (g, w) in got.iter().zip(want_branches) {
                assert_eq!(
                    g,
                    w,
                    "{} {} branch {}",
                    path.display(),
                    key.path(),
                    w["name"]
                );
            }
            trees_seen += 1;
        }
    }
    // HZZ in six compressions, Zmumu, NanoAOD, three in nesteddirs, sample,
    // fullsplit, and the ROOT-written file's.
    assert_eq!(trees_seen, 14);
}

/// A branch anywhere in the tree, by name.
fn find_branch<'a>(
    branches: &'a [quarry::formats::root::Branch],
    name: &str,
) -> Option<&'a quarry::formats::root::Branch> {
    branches.iter().find_map(|b| {
        if b.name == name {
            Some(b)
        } else {
            find_branch(&b.branches, name)
        }
    })
}

/// SHA-256 of a column's values flattened, little-endian (strings: UTF-8 joined by NUL).
fn values_sha(values: &quarry::formats::root::Values) -> String {
    use quarry::formats::root::Values as V;
    let mut h = Sha256::new();
    match values {
        V::Bool(v) => h.update(v.iter().map(|&b| b as u8).collect::<Vec<_>>()),
        V::I8(v) => h.update(v.iter().map(|&x| x as u8).collect::<Vec<_>>()),
        V::U8(v) => h.update(v),
        V::I16(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        V::U16(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        V::I32(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        V::U32(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        V::I64(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        V::U64(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        V::F32(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        V::F64(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        V::Str(v) => h.update(v.join("\0").as_bytes()),
    }
    format!("{:x}", h.finalize())
}

#[test]
fn every_basic_column_decodes_to_uproots_values() {
    let mut columns_checked = 0;
    for (path, _) in fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let fixture = fixture_of(&path, "columns");
        let file = RootFile::open(std::fs::File::open(&path).unwrap()).unwrap();
        let keys = file.walk().unwrap();
        for want_tree in fixture["trees"].as_array().unwrap() {
            let key = keys
                .iter()
                .find(|k| k.path() == want_tree["path"].as_str().unwrap())
                .unwrap();
            let tree = file.tree(&key.key).unwrap();
            for want in want_tree["columns"].as_array().unwrap() {
                let branch_name = want["branch"].as_str().unwrap();
                let branch = find_branch(&tree.branches, branch_name)
                    .unwrap_or_else(|| panic!("{name}: no branch {branch_name}"));
                let leaf = want.get("leaf").and_then(Value::as_str);
                let col = match leaf {
                    None => file.column(branch),
                    Some(leaf) => file.leaf_column(
                        branch,
                        branch.leaves.iter().position(|l| l.name == leaf).unwrap(),
                    ),
                }
                .unwrap_or_else(|e| panic!("{name} {branch_name} {leaf:?}: {e}"));
                let what = format!("{name} {branch_name} {leaf:?}");
                let dtype = match col.leaf_type {
                    quarry::formats::root::LeafType::Str => "string",
                    quarry::formats::root::LeafType::Prim(p) => p.name(),
                };
                // The split Event's counter N is declared `int` in the file's
                // streamer info (uproot lists it so too) and quarry reads it so;
                // uproot reads every counter (streamer type 6) as uint32. Its
                // values (0..99) have the same bytes either way.
                let split_event_counter = branch_name == "N"
                    && (name.contains("fullsplit") || name.contains("nesteddirs"));
                if !split_event_counter {
                    assert_eq!(
                        dtype,
                        want["dtype"].as_str().unwrap(),
                        "{name} {branch_name} dtype"
                    );
                }
                assert_eq!(
                    col.entries as u64,
                    want["entries"].as_u64().unwrap(),
                    "{what}"
                );
                assert_eq!(
                    values_sha(&col.values),
                    want["values_sha256"].as_str().unwrap(),
                    "{what}"
                );
                if let Some(counts_sha) = want.get("counts_sha256") {
                    let counts = col
                        .counts
                        .as_ref()
                        .unwrap_or_else(|| panic!("{what}: not jagged"));
                    let mut h = Sha256::new();
                    counts
                        .iter()
                        .for_each(|&c| h.update(i64::from(c).to_le_bytes()));
                    assert_eq!(
                        format!("{:x}", h.finalize()),
                        counts_sha.as_str().unwrap(),
                        "{what} counts"
                    );
                } else {
                    assert!(col.counts.is_none(), "{what} should not be jagged");
                }
                columns_checked += 1;
            }
        }
    }
    // 947 NanoAOD + 6 x 51 HZZ + 20 Zmumu + (20 + 3 + 41) nesteddirs + 35 sample + 41
    // fullsplit (with std::string, 8 std::vector and a vector<string>) + 13 of the
    // ROOT-written file (5 leaves of 2 leaf lists, 3 top-level vectors, string,
    // vector<string>, bool, char*, int64), from the fixtures.
    assert_eq!(columns_checked, 947 + 6 * 51 + 20 + 64 + 35 + 41 + 13);
}

#[test]
fn histograms_match_uproot_bin_by_bin() {
    let cases = [
        repo().join("testdata/root/uproot-histograms.root"),
        repo().join("tests/data/root/uproot-written-hists.root"),
        repo().join("tests/data/root/root-written-types.root"),
    ];
    let mut seen = 0;
    for path in cases {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let fixture = fixture_of(&path, "hists");
        let file = RootFile::open(std::fs::File::open(&path).unwrap()).unwrap();
        let keys = file.walk().unwrap();
        for want in fixture["histograms"].as_array().unwrap() {
            let key = key_of(&keys, want);
            let h = file
                .histogram(&key.key)
                .unwrap_or_else(|e| panic!("{name} {}: {e}", key.path()));
            let what = format!("{name} {}", key.path());
            assert_eq!(h.class_name, want["class"].as_str().unwrap(), "{what}");
            assert_eq!(h.entries, want["entries"].as_f64().unwrap(), "{what}");
            let floats = |v: &Value| {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect::<Vec<_>>()
            };
            assert_eq!(h.x.edges, floats(&want["x"]["edges"]), "{what} x edges");
            assert_eq!(h.x.title, want["x"]["title"].as_str().unwrap(), "{what}");
            // uproot flattens 2-D cells with x slowest; ROOT stores them x fastest.
            let (nx, ny) = (h.x.nbins + 2, h.y.as_ref().map_or(1, |y| y.nbins + 2));
            let reorder = |cells: &[f64]| -> Vec<f64> {
                (0..nx)
                    .flat_map(|ix| (0..ny).map(move |iy| cells[ix + nx * iy]))
                    .collect()
            };
            if let Some(y) = &h.y {
                assert_eq!(y.edges, floats(&want["y"]["edges"]), "{what} y edges");
            }
            let Some(profile) = &h.profile else {
                assert_eq!(
                    reorder(&h.values()),
                    floats(&want["values"]),
                    "{what} values"
                );
                assert_eq!(
                    reorder(&h.variances()),
                    floats(&want["variances"]),
                    "{what} variances"
                );
                seen += 1;
                continue;
            };
            // A profile's means and errors are computed (by uproot and by quarry,
            // in their own order of operations): equal to rounding.
            let close = |got: Vec<f64>, want: Vec<f64>, what: &str| {
                assert_eq!(got.len(), want.len(), "{what}");
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                        "{what}: {g} vs {w}"
                    );
                }
            };
            close(
                reorder(&h.values()),
                floats(&want["values"]),
                &format!("{what} means"),
            );
            close(
                reorder(&h.variances()),
                floats(&want["variances"]),
                &format!("{what} squared errors"),
            );
            assert_eq!(
                reorder(&profile.bin_entries),
                floats(&want["bin_entries"]),
                "{what} entries per bin"
            );
            assert_eq!(
                profile.errors as i64,
                want["error_mode"].as_i64().unwrap(),
                "{what} error option"
            );
            seen += 1;
        }
    }
    // 3 TH1F, 3 written by uproot, 2 TProfile + TProfile2D + TH1I in two cycles
    // written by ROOT.
    assert_eq!(seen, 11);
}

/// The ROOT-written profile `prof` holds y = i % 7 at x = i for i in 0..500, in 10
/// bins of 50: each bin's mean and error on the mean, computed here from those
/// values; `prof_s` has error option "s", the spread itself.
#[test]
fn profiles_follow_their_fills() {
    use quarry::formats::root::ProfileErrors;
    let file =
        RootFile::open(std::fs::File::open(data_file("root-written-types.root")).unwrap()).unwrap();
    let keys = file.walk().unwrap();
    let read = |name: &str| {
        let key = keys.iter().find(|k| k.path() == name).unwrap();
        file.histogram(&key.key).unwrap()
    };
    let (prof, prof_s) = (read("prof"), read("prof_s"));
    assert_eq!(prof.profile.as_ref().unwrap().errors, ProfileErrors::Mean);
    assert_eq!(
        prof_s.profile.as_ref().unwrap().errors,
        ProfileErrors::Spread
    );
    let (means, errors, spreads) = (prof.values(), prof.errors(), prof_s.errors());
    for bin in 0..10 {
        let ys: Vec<f64> = (bin * 50..bin * 50 + 50)
            .map(|i| f64::from(i % 7))
            .collect();
        let n = ys.len() as f64;
        let mean = ys.iter().sum::<f64>() / n;
        let spread = (ys.iter().map(|y| y * y).sum::<f64>() / n - mean * mean).sqrt();
        let cell = bin as usize + 1; // cell 0 is the underflow
        assert!((means[cell] - mean).abs() < 1e-12, "bin {bin} mean");
        assert!(
            (errors[cell] - spread / n.sqrt()).abs() < 1e-12,
            "bin {bin} error"
        );
        assert!((spreads[cell] - spread).abs() < 1e-12, "bin {bin} spread");
    }
    assert_eq!(
        (means[0], means[11], errors[0]),
        (0.0, 0.0, 0.0),
        "empty flow bins"
    );
}

/// The ROOT-written file's values follow from the entry number (see
/// scripts/fixtures/root_write_types.py): checked here against those formulas,
/// independently of uproot.
#[test]
fn root_written_types_follow_their_formulas() {
    use quarry::formats::root::{Values, branch_type};
    let file =
        RootFile::open(std::fs::File::open(data_file("root-written-types.root")).unwrap()).unwrap();
    let keys = file.walk().unwrap();
    let key = keys.iter().find(|k| k.path() == "types").unwrap();
    let tree = file.tree(&key.key).unwrap();
    let branch = |name: &str| tree.branches.iter().find(|b| b.name == name).unwrap();
    let n = 500;

    let point = branch("point");
    assert_eq!(
        branch_type(point).name,
        "{y: float64, x: float32, n: int32}"
    );
    let Values::F64(y) = file.leaf_column(point, 0).unwrap().values else {
        panic!("y is a double")
    };
    assert_eq!(y, (0..n).map(|i| f64::from(i) / 4.0).collect::<Vec<_>>());
    let Values::I32(nn) = file.leaf_column(point, 2).unwrap().values else {
        panic!("n is an int")
    };
    assert_eq!(nn, (0..n).map(|i| i - 250).collect::<Vec<_>>());
    assert!(
        file.column(point).is_err(),
        "a leaf list is read leaf by leaf"
    );
    let pair = branch("pair");
    assert_eq!(branch_type(pair).name, "{a: int32[2], b: uint16}");
    let Values::I32(a) = file.leaf_column(pair, 0).unwrap().values else {
        panic!("a is int[2]")
    };
    assert_eq!(a, (0..n).flat_map(|i| [i, -i]).collect::<Vec<_>>());

    let vf = file.column(branch("vf")).unwrap();
    assert_eq!(branch_type(branch("vf")).name, "float32[]");
    let want_counts: Vec<u32> = (0..n as u32).map(|i| i % 5).collect();
    assert_eq!(vf.counts.as_deref(), Some(want_counts.as_slice()));
    let want: Vec<f32> = (0..n)
        .flat_map(|i| (0..i % 5).map(move |k| i as f32 + k as f32 / 10.0))
        .collect();
    assert_eq!(vf.values, Values::F32(want));
    let Values::I32(vi) = file.column(branch("vi")).unwrap().values else {
        panic!("vi holds ints")
    };
    assert_eq!(
        vi,
        (0..n)
            .flat_map(|i| (0..i % 5).map(move |k| i * 10 + k))
            .collect::<Vec<_>>()
    );

    let s = file.column(branch("s")).unwrap();
    assert_eq!(branch_type(branch("s")).name, "string");
    assert_eq!(
        s.values,
        Values::Str((0..n).map(|i| format!("entry-{i}")).collect())
    );
    let vs = file.column(branch("vs")).unwrap();
    assert_eq!(branch_type(branch("vs")).name, "string[]");
    assert_eq!(
        vs.values,
        Values::Str(
            (0..n)
                .flat_map(|i| (0..i % 3).map(move |k| format!("s{i}.{k}")))
                .collect()
        )
    );
    // Nested vectors are not read: reported as unsupported, never guessed.
    assert_eq!(branch_type(branch("vvf")).name, "unsupported");
    let err = file.column(branch("vvf")).unwrap_err().to_string();
    assert!(err.contains("vector<vector<float> >"), "{err}");
}
