//! Feeds arbitrary text to execute_query's query compiler (tree-sitter's, a
//! third-party parser of untrusted text) for C++ or Python (the first byte
//! chooses), and runs every query that compiles over a real source file of that
//! language with the tool's limits. Errors are expected; a panic, a hang past the
//! time budget or a runaway allocation is a bug.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use quarry::formats::code::{self, CompiledQuery, Language, ParsedSource, QueryLimits};

static CPP: &str = include_str!("../../testdata/code/cpp/src/Calibrator.cpp");
static PY: &str = include_str!("../../testdata/code/python/calo_tools/calibration.py");

fn source(language: Language) -> &'static ParsedSource {
    static SOURCES: OnceLock<(ParsedSource, ParsedSource)> = OnceLock::new();
    let (cpp, py) = SOURCES.get_or_init(|| {
        let parse = |l, text: &str| code::parse(l, text.to_string(), Duration::from_secs(5)).unwrap();
        (parse(Language::Cpp, CPP), parse(Language::Python, PY))
    });
    match language {
        Language::Cpp => cpp,
        Language::Python => py,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let language = if first % 2 == 0 { Language::Cpp } else { Language::Python };
    let Ok(query) = CompiledQuery::compile(language, text) else { return };
    let limits = QueryLimits {
        max_captures: 1000,
        budget: Duration::from_secs(2),
    };
    let _ = query.run(source(language), limits, &|| false);
});
