//! Feeds arbitrary bytes to quarry's ROOT reader as a whole file and reads all
//! it can reach: keys, objects, the streamer info, trees, columns (each leaf of
//! a leaf list too), the first half of each column's first basket (decompressed
//! only that far), that basket's values as counts would give them (its offset
//! table not decompressed), that basket kept as stored and converted a part
//! at a time, and histograms (profiles included). Errors are
//! expected; a panic, a hang or an allocation beyond libFuzzer's limit is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry::formats::root::{RootFile, is_histogram};

fuzz_target!(|data: &[u8]| {
    let Ok(file) = RootFile::from_bytes(data.to_vec()) else { return };
    let _ = file.described_classes();
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
                    // Counts of one item per entry, for at most 2^16 entries
                    // (a damaged table can claim any number).
                    let all = (first.end - first.start).min(1 << 16) as usize;
                    let half = all / 2;
                    let ones = vec![1; all];
                    let mut column = reader.empty_column();
                    let _ = reader.read_basket_head(0, half, None, &mut column);
                    let _ = reader.read_basket_head(0, half, Some(&ones[..half]), &mut column);
                    let _ = reader.read_basket_head(0, all, Some(&ones), &mut column);
                    // The first basket kept as stored, converted in two halves.
                    let mut stored = None;
                    if reader.read_stored(0, &mut stored).is_ok()
                        && let Some(basket) = &stored
                    {
                        let n = basket.entries();
                        reader.convert(basket, 0..n / 2, &mut column);
                        reader.convert(basket, n / 2..n, &mut column);
                    }
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
