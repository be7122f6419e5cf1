//! Feeds arbitrary bytes to the document reader as a PDF, a Markdown or a
//! text file (the first byte chooses), in this process (no worker helper is
//! set): pdf-extract and lopdf on hostile PDFs, the Markdown outline parsed in
//! sections, the text cap. Errors are expected; a panic out of `read`, a hang
//! or a runaway allocation is a bug (run with `-rss_limit_mb`).
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use quarry::formats::document;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let name = match first % 3 {
        0 => "input.pdf",
        1 => "input.md",
        _ => "input.txt",
    };
    let path = std::env::temp_dir().join(format!("quarry-fuzz-{}-{name}", std::process::id()));
    std::fs::File::create(&path).unwrap().write_all(rest).unwrap();
    let _ = document::read(name, std::fs::File::open(&path).unwrap());
    let _ = std::fs::remove_file(&path);
});
