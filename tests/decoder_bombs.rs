//! Decompression bombs given to every decoder of ROOT's compressed records:
//! blocks whose header states a few MiB while their stream holds hundreds.
//! Each must end in a clear error, having decoded no more than the header
//! states: its peak memory is measured in a child process (this test binary
//! run again on one case, its peak RSS reset first), and its time bounded.
//!
//! The XZ bomb is a committed file (tests/data/bombs/zeros-256m.xz, written by
//! scripts/fixtures/decoder_bombs.py with liblzma: quarry has no XZ encoder);
//! the others are made here by independent encoders (libdeflate, lz4_flex,
//! libzstd).

use std::process::Command;
use std::time::{Duration, Instant};

use quarry::formats::root::decompress;

/// What each bomb's header states.
const STATED: usize = 4 << 20;
/// What the zlib, LZ4 and ZSTD bombs hold (64 MiB: their encoders run
/// unoptimised in a debug build).
const HELD: usize = 64 << 20;
/// The most a bomb may raise the process's peak memory: the stated output
/// and the decoder's own state, nowhere near what the stream holds.
const MAX_GROWTH_KIB: u64 = 48 << 10;
/// The environment variable that makes `bomb_child` run one case.
const CASE_VAR: &str = "QUARRY_BOMB_CASE";

/// A ROOT compressed block: tag, method, compressed and uncompressed sizes
/// (3 bytes each, little-endian), payload.
fn block(tag: &[u8; 2], payload: &[u8], stated: usize) -> Vec<u8> {
    assert!(payload.len() < 1 << 24 && stated < 1 << 24);
    let mut b = tag.to_vec();
    b.push(0);
    b.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
    b.extend_from_slice(&(stated as u32).to_le_bytes()[..3]);
    b.extend_from_slice(payload);
    b
}

fn xz_bomb() -> Vec<u8> {
    let payload = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/bombs/zeros-256m.xz"
    ))
    .unwrap();
    block(b"XZ", &payload, STATED)
}

fn zlib_bomb() -> Vec<u8> {
    let zeros = vec![0u8; HELD];
    let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(1).unwrap());
    let mut z = vec![0; c.zlib_compress_bound(zeros.len())];
    let n = c.zlib_compress(&zeros, &mut z).unwrap();
    block(b"ZL", &z[..n], STATED)
}

fn lz4_bomb() -> Vec<u8> {
    // LZ4 compresses at most about 250 to 1: 64 MiB keep the block's
    // payload within its 3-byte size.
    let lz = lz4_flex::block::compress(&vec![0u8; HELD]);
    let mut payload = xxhash_rust::xxh64::xxh64(&lz, 0).to_be_bytes().to_vec();
    payload.extend_from_slice(&lz);
    block(b"L4", &payload, STATED)
}

fn zstd_bomb() -> Vec<u8> {
    let zs = zstd::bulk::compress(&vec![0u8; HELD], 1).unwrap();
    block(b"ZS", &zs, STATED)
}

fn bomb(case: &str) -> Vec<u8> {
    match case {
        "xz" => xz_bomb(),
        "zlib" => zlib_bomb(),
        "lz4" => lz4_bomb(),
        "zstd" => zstd_bomb(),
        other => panic!("no bomb {other}"),
    }
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Not a test of its own: the child side of `decoded_in_a_child`.
#[test]
fn bomb_child() {
    let Ok(case) = std::env::var(CASE_VAR) else {
        return;
    };
    let record = bomb(&case);
    // The bomb is built; from here on the peak is the decoder's alone.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = status_kib("VmRSS:");
    let started = Instant::now();
    let outcome = decompress(&record, STATED);
    let took = started.elapsed();
    let grew = status_kib("VmHWM:").saturating_sub(before);
    let result = match outcome {
        Ok(bytes) => format!("decoded {} bytes", bytes.len()),
        Err(e) => format!("error: {e}"),
    };
    println!(
        "BOMB grew_kib={grew} ms={} result={result}",
        took.as_millis()
    );
}

struct Measured {
    grew_kib: u64,
    took: Duration,
    result: String,
}

/// Decodes one bomb in a child process (this binary, `bomb_child` alone).
fn decoded_in_a_child(case: &str) -> Measured {
    let child_test = crate::common::test_name(module_path!(), "bomb_child");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            child_test.as_str(),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CASE_VAR, case)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.find("BOMB ").map(|at| &l[at + 5..]))
        .unwrap_or_else(|| {
            panic!(
                "the {case} child said nothing: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let field = |name: &str| {
        line.split(' ')
            .find_map(|f| f.strip_prefix(name))
            .unwrap()
            .to_string()
    };
    Measured {
        grew_kib: field("grew_kib=").parse().unwrap(),
        took: Duration::from_millis(field("ms=").parse().unwrap()),
        result: line[line.find("result=").unwrap() + 7..].to_string(),
    }
}

fn assert_defused(case: &str, expected: &str) {
    let m = decoded_in_a_child(case);
    eprintln!(
        "{case}: {} KiB more at the peak, {:?}: {}",
        m.grew_kib, m.took, m.result
    );
    assert!(
        m.result.starts_with("error: ") && m.result.contains(expected),
        "{case}: {}",
        m.result
    );
    assert!(
        m.grew_kib < MAX_GROWTH_KIB,
        "{case}: the peak grew by {} KiB decoding a block stated as {} KiB",
        m.grew_kib,
        STATED >> 10
    );
    assert!(m.took < Duration::from_secs(20), "{case}: {:?}", m.took);
}

/// The block of the issue: its header says 4 MiB, its xz stream holds 256 MiB
/// of zeros. Read whole before the size was checked, it raised the peak by
/// over 500 MB.
#[test]
fn an_xz_block_is_decoded_no_further_than_its_header_says() {
    assert_defused("xz", "more than the 4194304 bytes its header says");
}

#[test]
fn a_zlib_block_is_decoded_no_further_than_its_header_says() {
    assert_defused(
        "zlib",
        "zlib block decodes to more than the 4194304 bytes its header says",
    );
}

#[test]
fn an_lz4_block_is_decoded_no_further_than_its_header_says() {
    assert_defused("lz4", "bad LZ4 block");
}

#[test]
fn a_zstd_block_is_decoded_no_further_than_its_header_says() {
    assert_defused("zstd", "bad ZSTD block");
}

/// An XZ block that states its size truthfully is decoded whole; one cut
/// short is an error (the limit is the header's, nothing else).
#[test]
fn an_xz_block_that_tells_its_size_is_decoded() {
    let read = |name: &str| {
        std::fs::read(format!(
            "{}/tests/data/bombs/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    };
    let plain = b"muon_pt muon_eta ".repeat(1000);
    let muons = read("muons.xz");
    assert_eq!(
        decompress(&block(b"XZ", &muons, plain.len()), plain.len()).unwrap(),
        plain
    );
    // Stated one byte short: the byte past it is refused.
    let err = decompress(&block(b"XZ", &muons, plain.len() - 1), plain.len() - 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("its header says"), "{err}");
    let bomb = read("zeros-256m.xz");
    let cut = block(b"XZ", &bomb[..bomb.len() / 2], STATED);
    let err = decompress(&cut, STATED).unwrap_err().to_string();
    assert!(err.contains("LZMA"), "{err}");
}
