//! Feeds arbitrary bytes to quarry's HDF5 reader as a whole file: the object
//! tree, then a few elements and the statistics of every dataset. Errors are
//! expected; a crash, a hang or an allocation beyond libFuzzer's limit is a bug.
//! libhdf5 opens files by name, so each input is written to a file first.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use quarry::formats::hdf5::slice::{parse, resolve};
use quarry::formats::hdf5::{Entry, H5File};

fuzz_target!(|data: &[u8]| {
    let Ok(mut tmp) = temp_file() else { return };
    if tmp.1.write_all(data).is_err() {
        return;
    }
    let Ok(file) = std::fs::File::open(&tmp.0) else { return };
    let _ = std::fs::remove_file(&tmp.0);
    let Ok(h5) = H5File::open(file) else { return };
    let Ok(tree) = h5.tree() else { return };
    for object in &tree.objects {
        if !matches!(object.entry, Entry::Dataset(_)) {
            continue;
        }
        let Ok(ds) = h5.dataset(&object.path) else { continue };
        let shape = ds.shape.clone().unwrap_or_default();
        let head = if shape.is_empty() { "" } else { ":4" };
        if let Ok(sel) = resolve(&parse(head).unwrap(), &shape) {
            let _ = ds.read(&sel);
            let _ = ds.for_each_block(&sel, 1024, |_, _, _| true);
        }
    }
});

/// A fresh file in memory-backed storage: (its path, the file open for writing).
fn temp_file() -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    let dir = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" };
    let path = std::path::PathBuf::from(dir).join(format!("quarry-fuzz-{}.h5", std::process::id()));
    let file = std::fs::File::create(&path)?;
    Ok((path, file))
}
