//! One thread over every C++/Python file of a tree, for callgrind's instruction
//! counts (docs/benchmarks.md, "Code indexing"): `read` only reads the files,
//! `parse` parses them (tree dropped), `index` parses, extracts and encodes the
//! catalog rows as indexing does. Indexing against parse-only is
//! (parse - read) / (index - read).
//!
//! `cargo build --profile profiling --example code_profile`, then
//! `valgrind --tool=callgrind target/profiling/examples/code_profile index DIR`.

use std::path::{Path, PathBuf};

use quarry::catalog::code::code_rows;
use quarry::formats::code::{self, Language};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("readable folder").flatten() {
            let t = e.file_type().expect("file type");
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() && Language::from_name(&e.path().to_string_lossy()).is_some() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (mode, dir) = match args.as_slice() {
        [_, mode, dir] => (mode.as_str(), Path::new(dir)),
        _ => panic!("usage: code_profile read|parse|index DIR"),
    };
    let (mut bytes, mut rows) = (0usize, 0usize);
    for p in files(dir) {
        let language = Language::from_name(&p.to_string_lossy()).expect("code file");
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        bytes += text.len();
        if mode == "read" {
            continue;
        }
        let Ok(parsed) = code::parse(language, text, code::PARSE_BUDGET) else {
            continue;
        };
        if mode == "index" {
            let extracted = code::extract(&parsed);
            rows += code_rows(&extracted)
                .iter()
                .map(|r| r.value.len())
                .sum::<usize>();
        }
    }
    println!("{mode}: {bytes} bytes read, {rows} bytes of rows");
}
