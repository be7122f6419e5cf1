//! Feeds arbitrary bytes to quarry's RNTuple reader as a whole ROOT file and
//! reads all it can reach: every RNTuple anchor's header, footer and page
//! lists, the sizes of its columns, the first and last entries of its
//! top-level fields as nested values (rendered as JSON), and for its
//! TTree-shaped columns the first two and the last of their chunks, and a
//! few entries across a chunk edge (the first 32 fields and columns: a
//! NanoAOD's thousand would only repeat them, slowly). Reads are held to 256 MiB of memory each (a
//! file may share one page's bytes between many pages). Errors are expected;
//! a panic, a hang or an allocation beyond libFuzzer's limit is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry::formats::root::{RootFile, is_rntuple};

const LIMIT: u64 = 256 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = RootFile::from_bytes(data.to_vec()) else { return };
    let Ok(keys) = file.walk() else { return };
    for k in keys.iter().filter(|k| is_rntuple(&k.key.class_name)) {
        let Ok(nt) = file.rntuple(&k.key) else { continue };
        let _ = (nt.sizes(), nt.compression(), nt.cluster_ranges());
        let n = nt.entries;
        for field in nt.fields.iter().take(32) {
            for range in [0..n.min(4), n.saturating_sub(2)..n] {
                if let Ok(values) = file.ntuple_field_within(&nt, field, range, LIMIT) {
                    for i in 0..values.len() {
                        let _ = values.json(i);
                    }
                }
            }
        }
        for column in nt.columns.iter().take(32) {
            let _ = nt.column_sizes(column);
            let Ok(mut reader) = file.ntuple_reader(&nt, column) else { continue };
            reader.set_read_limit(LIMIT);
            let chunks = reader.basket_ranges().to_vec();
            let mut into = reader.empty_column();
            for index in [0, 1, chunks.len().saturating_sub(1)] {
                if index < chunks.len() {
                    let _ = reader.read_basket(index, &mut into);
                }
            }
            if let Some(first) = chunks.first() {
                let across = first.end.saturating_sub(2)..first.end.saturating_add(2).min(n);
                let _ = reader.read_entries(across, &mut into);
            }
        }
    }
});
