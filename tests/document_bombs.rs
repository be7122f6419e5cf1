//! Hostile documents: a PDF whose one page stream inflates to 2 GiB of zeros
//! (its FlateDecode stream is 2 MB), a PDF whose content makes pdf-extract
//! panic ("not a number"), a PDF whose page tree is a cycle, and text files
//! larger than what one document may contribute. PDFs are read in
//! `quarry __pdf-worker` processes held to an address-space limit: a bomb costs
//! the worker, the caller gets the file's error, and its own memory does not
//! move. Indexed by `quarry rebuild`, such a folder leaves the hostile files
//! failed with their reasons, the others indexed, and no stack trace in the log.
//!
//! The PDFs are written here, object by object, with their cross-reference
//! tables; the bomb's deflate stream is libz's (flate2's miniz backend) output
//! for 1 MiB of zeros under a sync flush, repeated (each repetition decodes to
//! another 1 MiB of zeros once the window holds zeros), with the Adler-32 of
//! the whole computed by hand.

use crate::common;

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use quarry::formats::document::{self, MAX_DOCUMENT_TEXT_BYTES};
use quarry::formats::worker;
use serde_json::Value;

/// The address space the tests give each worker: room for the debug
/// binary and a normal PDF, far from what the bomb inflates to.
const WORKER_MIB: u64 = 400;

fn use_workers() {
    worker::set_helper(env!("CARGO_BIN_EXE_quarry").into());
    worker::set_memory_limit_mib(WORKER_MIB);
}

/// A PDF of one page whose content stream is `content`, stored with
/// `/Filter filter` when one is given, and one font.
fn pdf_with_page(content: &[u8], filter: Option<&str>) -> Vec<u8> {
    let filter = filter.map_or(String::new(), |f| format!(" /Filter /{f}"));
    let stream = [
        format!("<< /Length {}{filter} >>\nstream\n", content.len()).into_bytes(),
        content.to_vec(),
        b"\nendstream".to_vec(),
    ]
    .concat();
    pdf_of(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
           /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_vec(),
        stream,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ])
}

/// A PDF of these objects (numbered from 1, the first the catalog), with its
/// cross-reference table and trailer.
fn pdf_of(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A zlib stream of `mib` MiB of zero bytes, about 1 KB a MiB.
fn zlib_zeros(mib: usize) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    let zeros = vec![0u8; 1 << 20];
    let mut c = Compress::new(Compression::best(), true);
    let piece = |c: &mut Compress| {
        let mut out = Vec::with_capacity(1 << 16);
        let before = c.total_in();
        c.compress_vec(&zeros, &mut out, FlushCompress::Sync)
            .unwrap();
        assert_eq!(c.total_in() - before, 1 << 20, "the piece did not fit");
        out
    };
    let first = piece(&mut c);
    let steady = piece(&mut c);
    assert_eq!(piece(&mut c), steady, "the pieces differ: not repeatable");
    let mut out = first;
    for _ in 1..mib {
        out.extend_from_slice(&steady);
    }
    // A final empty block with fixed codes, then Adler-32: a stays 1 over
    // zero bytes, b adds a (1) for each byte.
    out.extend_from_slice(&[0x03, 0x00]);
    let b = ((mib as u64) << 20) % 65521;
    out.extend_from_slice(&((b << 16 | 1) as u32).to_be_bytes());
    out
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// `document::read` of `bytes` written as `name` in a temporary folder.
fn read_as(name: &str, bytes: &[u8]) -> Result<document::Document, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    document::read(name, File::open(&path).unwrap()).map_err(|e| e.to_string())
}

#[test]
fn the_zlib_bomb_is_what_it_claims() {
    use std::io::Read;
    let mut decoded = Vec::new();
    flate2::read::ZlibDecoder::new(&zlib_zeros(3)[..])
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded.len(), 3 << 20);
    assert!(decoded.iter().all(|&b| b == 0));
}

/// The page stream inflates to 2 GiB: the worker runs out of its address
/// space and dies; the caller gets the reason, its own peak unmoved.
#[test]
fn a_flate_bomb_costs_only_the_worker() {
    use_workers();
    let bomb = pdf_with_page(&zlib_zeros(2048), Some("FlateDecode"));
    assert!(bomb.len() < 4 << 20, "{} bytes", bomb.len());
    let peak = status_kib("VmHWM:");
    let started = Instant::now();
    let err = read_as("bomb.pdf", &bomb).unwrap_err();
    let took = started.elapsed();
    eprintln!("{err} ({took:?})");
    assert!(
        err.contains(&format!("ran out of its {WORKER_MIB} MiB memory limit")),
        "{err}"
    );
    assert!(took < Duration::from_secs(120), "{took:?}");
    let grew = status_kib("VmHWM:").saturating_sub(peak);
    assert!(grew < 64 << 10, "the caller's peak grew by {grew} KiB");
    // The next document gets a fresh worker and is read.
    let good = std::fs::read(repo_testdata().join("docs/detector_calibration.pdf")).unwrap();
    assert_eq!(read_as("good.pdf", &good).unwrap().pages.len(), 5);
}

/// pdf-extract panics on a name where a number belongs; the page's reason
/// comes back as the file's error.
#[test]
fn a_parser_panic_is_the_files_error() {
    use_workers();
    let content = b"1 0 0 1 /x /y cm BT /F1 12 Tf 72 700 Td (Hello) Tj ET";
    let err = read_as("panics.pdf", &pdf_with_page(content, None)).unwrap_err();
    assert!(
        err.contains("no page of the PDF could be read: not a number"),
        "{err}"
    );
    // The same page with a number there reads.
    let content = b"1 0 0 1 0 0 cm BT /F1 12 Tf 72 700 Td (Hello) Tj ET";
    let doc = read_as("fine.pdf", &pdf_with_page(content, None)).unwrap();
    assert_eq!(doc.pages, vec!["Hello\n".to_string()]);
}

/// A page tree whose node is its own kid: an error, never a hang or a crash
/// of the caller (lopdf already stops at the cycle; this guards it).
#[test]
fn a_cyclic_page_tree_is_an_error() {
    use_workers();
    let pdf = pdf_of(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>".to_vec(),
        b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>".to_vec(),
    ]);
    let started = Instant::now();
    let outcome = read_as("cycle.pdf", &pdf);
    assert!(outcome.is_err(), "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(120));
}

/// A text file of 40 MiB contributes its first 8 MiB, cut at a line break,
/// with a warning; the reader never reads past the cut.
#[test]
fn a_large_text_file_contributes_its_first_8_mib() {
    let line = "run 2024 event 12345 muon pt 41.5 eta -1.2 accepted\n";
    let text = line.repeat((40 << 20) / line.len());
    let doc = read_as("big.log", text.as_bytes()).unwrap();
    assert_eq!(doc.pages.len(), 1);
    let kept = &doc.pages[0];
    assert!(kept.len() <= MAX_DOCUMENT_TEXT_BYTES, "{}", kept.len());
    assert!(kept.len() > MAX_DOCUMENT_TEXT_BYTES - line.len());
    assert!(text.starts_with(kept.as_str()));
    assert!(kept.ends_with('\n'));
    assert_eq!(doc.warnings.len(), 1, "{:?}", doc.warnings);
    assert!(
        doc.warnings[0].contains("of the text are indexed"),
        "{:?}",
        doc.warnings
    );
    // A Markdown file of headers only: the table of contents is capped.
    let md = "# h\n\n".repeat(30_000);
    let doc = read_as("many.md", md.as_bytes()).unwrap();
    assert_eq!(doc.toc.len(), document::MAX_TOC_ENTRIES);
    assert_eq!(doc.toc[9_999].line, Some(2 * 9_999 + 1));
}

/// 2 GiB files that are all hole: a source file and a text document are
/// refused or read only as far as their caps, at once and without memory.
#[test]
fn sparse_giants_cost_neither_memory_nor_time() {
    let dir = tempfile::tempdir().unwrap();
    let sparse = |name: &str, head: &[u8]| {
        let path = dir.path().join(name);
        let mut f = File::create(&path).unwrap();
        std::io::Write::write_all(&mut f, head).unwrap();
        f.set_len(2 << 30).unwrap();
        File::open(&path).unwrap()
    };
    let peak = status_kib("VmHWM:");
    let started = Instant::now();
    let err = quarry::formats::code::read_text(sparse("hole.py", b"")).unwrap_err();
    assert!(err.to_string().contains("larger than 16 MiB"), "{err}");
    let err = document::read("hole.txt", sparse("hole.txt", b"")).unwrap_err();
    assert!(err.to_string().contains("NUL"), "{err}");
    // Text past the first 8 KiB (where binary content is looked for), then
    // the hole: the cap's worth is kept, ending with a line break.
    let head = b"run 1 ok\n".repeat(1000);
    let doc = document::read("headed.log", sparse("headed.log", &head)).unwrap();
    assert_eq!(doc.pages[0].len(), MAX_DOCUMENT_TEXT_BYTES);
    assert!(doc.pages[0].as_bytes().starts_with(&head));
    assert!(doc.pages[0].ends_with('\n'));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    // The text kept, and no more: nothing near the 2 GiB.
    let grew = status_kib("VmHWM:").saturating_sub(peak);
    assert!(
        grew < 3 * (MAX_DOCUMENT_TEXT_BYTES as u64 >> 10),
        "grew {grew} KiB"
    );
}

/// The peak memory `quarry rebuild` reports for itself (getrusage of its own
/// process: a child's rusage from wait4 would include the workers it reaped).
fn rebuild_peak_mib(stdout: &str) -> u64 {
    let at = stdout.find("peak memory ").expect("a peak in the summary") + 12;
    stdout[at..].split(' ').next().unwrap().parse().unwrap()
}

/// The folder indexed as a daemon does: the hostile files failed with their
/// reasons, the rest indexed, no stack trace in the log even with
/// RUST_BACKTRACE set, and the indexer's own memory far from the bomb's.
#[test]
fn rebuild_records_hostile_documents_and_goes_on() {
    let s = Sandbox::new();
    s.write(
        "docs/bomb.pdf",
        &pdf_with_page(&zlib_zeros(2048), Some("FlateDecode")),
    );
    s.write(
        "docs/panics.pdf",
        &pdf_with_page(b"1 0 0 1 /x /y cm BT /F1 12 Tf (Hello) Tj ET", None),
    );
    let good = std::fs::read(repo_testdata().join("docs/detector_calibration.pdf")).unwrap();
    s.write("docs/good.pdf", &good);
    s.write("docs/notes.md", b"# Notes\n\npedestal drift\n");
    let out = Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(["rebuild", "--root", &s.root_arg(), "--catalog"])
        .arg(&s.catalog)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{log}");
    eprintln!("{summary}{log}");
    assert!(!log.contains("panicked"), "{log}");
    assert!(!log.contains("stack backtrace"), "{log}");
    let lines_about = |name: &str| log.lines().filter(|l| l.contains(name)).count();
    assert_eq!(lines_about("bomb.pdf"), 1, "{log}");
    assert_eq!(lines_about("panics.pdf"), 1, "{log}");
    let peak = rebuild_peak_mib(&summary);
    assert!(peak < 300, "rebuild peaked at {peak} MiB");

    let out = run_ok(
        quarry()
            .args(["status", "--json", "--catalog"])
            .arg(&s.catalog),
    );
    let status: Value = serde_json::from_str(&out).unwrap();
    let failed = |name: &str| -> String {
        status["data"]["roots"][0]["failed_files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(name))
            .map(|f| f["error"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("{name} is not failed: {status}"))
    };
    assert!(failed("bomb.pdf").contains("memory limit"), "{status}");
    assert!(failed("panics.pdf").contains("not a number"), "{status}");
    let kinds = &status["data"]["roots"][0]["kinds"]["document"];
    assert_eq!(kinds["indexed"], 2, "{status}");
}
