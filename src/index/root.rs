//! What the catalog keeps of a ROOT file: rows for the tables of `catalog::root`,
//! built from quarry's ROOT reader at index time.

use std::collections::BTreeMap;
use std::path::Path;

use crate::catalog::root::{
    BranchRow, HistogramRow, ROOT_BRANCHES, ROOT_FILE, ROOT_HISTOGRAMS, ROOT_TREES, RootFileRow,
    TreeRow, branch_key,
};
use crate::catalog::{KindRow, encode};
use crate::formats::FormatError;
use crate::formats::root::{
    Branch, PathedKey, RootFile, branch_type, compression_name, is_histogram,
};

fn row<T: serde::Serialize>(table: &'static str, key: Vec<u8>, value: &T) -> KindRow {
    KindRow {
        table,
        key,
        value: encode(value),
    }
}

/// Keeps, for each path, the key with the highest cycle (what ROOT's `Get` returns).
fn latest_cycles(keys: Vec<PathedKey>) -> Vec<PathedKey> {
    let mut best: BTreeMap<String, usize> = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        let slot = best.entry(k.path()).or_insert(i);
        if keys[*slot].key.cycle < k.key.cycle {
            *slot = i;
        }
    }
    let keep: std::collections::HashSet<usize> = best.into_values().collect();
    keys.into_iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, k)| k)
        .collect()
}

fn flatten(branches: &[Branch], parent: &str, file_compress: i32, out: &mut Vec<BranchRow>) {
    for b in branches {
        let path = if parent.is_empty() {
            b.name.clone()
        } else {
            format!("{parent}/{}", b.name)
        };
        let t = branch_type(b);
        let compress = if b.compress >= 0 {
            b.compress
        } else {
            file_compress
        };
        out.push(BranchRow {
            name: b.name.clone(),
            path: path.clone(),
            type_name: t.name,
            dtype: t.dtype,
            title: b.title.clone(),
            jagged: t.jagged,
            counter: t.counter,
            compression: compression_name(compress),
            entries: b.entries,
            compressed_bytes: b.zip_bytes,
            uncompressed_bytes: b.tot_bytes,
        });
        flatten(&b.branches, &path, file_compress, out);
    }
}

/// The catalog rows of the ROOT file at `path`.
pub fn root_rows(path: &Path) -> Result<Vec<KindRow>, FormatError> {
    let file = RootFile::open(path)?;
    let mut rows = Vec::new();
    let mut summary = RootFileRow {
        root_version: file.header.version_string(),
        compression: file.header.compression_string(),
        directories: Vec::new(),
        other_objects: Vec::new(),
    };
    // Trees and histograms are keyed by their position in the file, so they come
    // back in file order (as ROOT lists them).
    let mut order = 0u32;
    for k in latest_cycles(file.walk()?) {
        order += 1;
        let key_path = k.path();
        if k.key.is_directory() {
            summary.directories.push(key_path);
        } else if k.key.class_name == "TTree" {
            let tree = file.tree(&k.key)?;
            let mut branches = Vec::new();
            flatten(&tree.branches, "", file.header.compress, &mut branches);
            rows.push(row(
                ROOT_TREES,
                order.to_be_bytes().to_vec(),
                &TreeRow {
                    name: k.key.name.clone(),
                    path: key_path.clone(),
                    cycle: k.key.cycle,
                    title: tree.title.clone(),
                    entries: tree.entries,
                    branches: branches.len() as u32,
                    compressed_bytes: branches.iter().map(|b| b.compressed_bytes).sum(),
                    uncompressed_bytes: branches.iter().map(|b| b.uncompressed_bytes).sum(),
                },
            ));
            for (i, b) in branches.iter().enumerate() {
                rows.push(row(ROOT_BRANCHES, branch_key(&key_path, i as u32), b));
            }
        } else if is_histogram(&k.key.class_name) {
            let h = file.histogram(&k.key)?;
            let bins = std::iter::once(h.x.nbins)
                .chain(h.y.as_ref().map(|y| y.nbins))
                .map(|n| n as u32)
                .collect();
            rows.push(row(
                ROOT_HISTOGRAMS,
                order.to_be_bytes().to_vec(),
                &HistogramRow {
                    name: k.key.name.clone(),
                    path: key_path,
                    class_name: k.key.class_name.clone(),
                    bins,
                    entries: h.entries,
                },
            ));
        } else {
            summary
                .other_objects
                .push((k.key.name.clone(), k.key.class_name.clone(), key_path));
        }
    }
    rows.push(row(ROOT_FILE, Vec::new(), &summary));
    Ok(rows)
}
