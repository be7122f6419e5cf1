//! Feeds arbitrary bytes to the decoding of a reader worker's answer, as the
//! server decodes a PDF worker's document: a worker that a hostile file has
//! corrupted may send anything. An error is expected; a panic or a runaway
//! allocation is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry::formats::document::Document;
use quarry::formats::worker::decode_answer;

fuzz_target!(|data: &[u8]| {
    let _ = decode_answer::<Document>(data, "the PDF reader");
});
