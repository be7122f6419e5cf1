//! Damaged HDF5 files given to the reader: byte ranges of a real file
//! overwritten in turn, and the file cut at many lengths. The tree is walked,
//! and where that succeeds a few elements and the statistics of every dataset
//! are read, as quarry does it: in the `quarry` helper process, since libhdf5
//! itself crashes on some damage (both a tree walk and a read did, before).
//! Each case must end in a result or an error, never a crash or a hang.
//! Deterministic (no randomness), so a failure repeats.

use std::path::Path;
use std::time::Instant;

use quarry::formats::hdf5::Entry;
use quarry::formats::hdf5::isolated::{dataset_moments, read_slice, set_helper, tree_of};
use quarry::formats::hdf5::slice::{parse, resolve};

fn exercise(bytes: &[u8], dir: &Path, n: usize) {
    let path = dir.join(format!("case{n}.h5"));
    std::fs::write(&path, bytes).unwrap();
    let Ok(tree) = tree_of(std::fs::File::open(&path).unwrap()) else {
        return;
    };
    let open = || std::fs::File::open(&path).unwrap();
    for object in &tree.objects {
        let Entry::Dataset(info) = &object.entry else {
            continue;
        };
        let shape = info.shape.clone().unwrap_or_default();
        let text = if shape.is_empty() { "" } else { ":3" };
        if let Ok(sel) = resolve(&parse(text).unwrap(), &shape) {
            let _ = read_slice(open(), &object.path, &sel, &|| false);
            let _ = dataset_moments(open(), &object.path, &sel, 64, &|| false);
        }
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn damaged_files_are_errors_never_crashes() {
    let original =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdf5/kinds.h5"))
            .unwrap();
    set_helper(env!("CARGO_BIN_EXE_quarry").into());
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut n = 0;
    // Cut short at many lengths.
    for len in (0..original.len()).step_by(original.len() / 11 + 1) {
        exercise(&original[..len], tmp.path(), n);
        n += 1;
    }
    // 16-byte windows overwritten with a pattern, across the metadata-heavy start
    // and sparsely through the rest.
    let step = |at: usize| if at < 8192 { 389 } else { 7919 };
    let mut at = 0;
    while at + 16 <= original.len() {
        let mut bytes = original.clone();
        for (i, b) in bytes[at..at + 16].iter_mut().enumerate() {
            *b = if i % 2 == 0 { 0xff } else { (at + i) as u8 };
        }
        exercise(&bytes, tmp.path(), n);
        n += 1;
        at += step(at);
    }
    assert!(n > 30, "{n} cases");
    // Hangs are bounded by the helper's own time limit; this is only a report.
    eprintln!("{n} damaged files in {:?}", started.elapsed());
}
