//! Feeds arbitrary bytes to quarry's LZF decoder (the HDF5 `lzf` filter), with
//! a limit from the first two bytes: an error is expected, a panic or an
//! output past the limit is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry::formats::hdf5::filters::lzf;

fuzz_target!(|data: &[u8]| {
    let (limit, stream) = match data {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        _ => (0, data),
    };
    if let Ok(out) = lzf::decompress(stream, limit) {
        assert!(out.len() <= limit);
    }
});
