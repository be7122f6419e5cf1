//! Feeds arbitrary bytes to quarry's ROOT reader as a whole file and reads all it
//! can reach: keys, objects, the streamer info, trees, columns (each leaf of a
//! leaf list too), the first half of each column's first basket (decompressed
//! only that far) and histograms (profiles included). Errors are expected; a
//! panic, a hang or an allocation beyond libFuzzer's limit is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry::formats::root::{RootFile, is_histogram};

fuzz_target!(|data: &[u8]| {
    let Ok(file) = RootFile::from_bytes(data.to_vec()) else { return };
    let _ = file.streamers();
    let Ok(keys) = file.walk() else { return };
    for k in keys {
        let _ = file.object(&k.key);
        if is_histogram(&k.key.class_name) {
            let _ = file.histogram(&k.key);
        }
        if k.key.class_name == "TTree"
            && let Ok(tree) = file.tree(&k.key)
        {
            let mut stack: Vec<_> = tree.branches.iter().collect();
            while let Some(branch) = stack.pop() {
                let _ = file.column(branch);
                if let Ok(reader) = file.column_reader(branch, None)
                    && let Some(first) = reader.basket_ranges().first()
                {
                    let half = ((first.end - first.start) / 2) as usize;
                    let counts = vec![1; half];
                    let mut column = reader.empty_column();
                    let _ = reader.read_basket_head(0, half, None, &mut column);
                    let _ = reader.read_basket_head(0, half, Some(&counts), &mut column);
                }
                if branch.leaves.len() > 1 {
                    for leaf in 0..branch.leaves.len() {
                        let _ = file.leaf_column(branch, leaf);
                    }
                }
                stack.extend(&branch.branches);
            }
        }
    }
});
