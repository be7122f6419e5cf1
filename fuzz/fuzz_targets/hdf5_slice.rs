//! Feeds arbitrary text to the slice parser and resolves what parses against a
//! shape taken from the input: parsing and resolving must never panic, and a
//! resolved selection must stay inside the shape.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry::formats::hdf5::slice::{parse, resolve};

fuzz_target!(|data: &[u8]| {
    let (dims, text) = data.split_at(data.len().min(4));
    let shape: Vec<u64> = dims.iter().map(|&d| u64::from(d % 17)).collect();
    let Ok(text) = std::str::from_utf8(text) else { return };
    let Ok(indices) = parse(text) else { return };
    let Ok(sel) = resolve(&indices, &shape) else { return };
    for (axis, len) in sel.axes.iter().zip(&shape) {
        if axis.count > 0 {
            assert!(axis.first + (axis.count - 1) * axis.step < *len);
        }
    }
    let thin = sel.thinned(7);
    assert!(thin.len() <= 7.max(1));
    let again = resolve(&parse(&thin.to_string()).unwrap(), &shape).unwrap();
    assert_eq!(again, thin);
});
