//! Feeds arbitrary bytes to the code reader as a C++ or Python file (the first
//! byte chooses): UTF-8 decoding, tree-sitter's parse with its time budget and
//! the extraction of classes, functions, includes and error ranges. Errors are
//! expected; a panic, a hang or a runaway allocation is a bug. quarry's own
//! tree cursor must also walk every tree exactly as tree-sitter's does, and the
//! walk that steps over tokens must find what the walk entering every node finds.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use quarry::formats::code::{self, Language};

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let language = if first % 2 == 0 { Language::Cpp } else { Language::Python };
    if let Ok(parsed) = code::parse(language, text.to_string(), Duration::from_secs(2)) {
        let _ = code::extract(&parsed);
        if let Some(difference) = code::walk_disagreement_for_fuzzing(&parsed) {
            panic!("the walks disagree: {difference}");
        }
    }
});
