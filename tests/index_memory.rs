//! Indexing a hostile folder (tests/common/hostile.rs: ~490 damaged and odd
//! files, 2 GiB sparse files, a 200 MiB text file, 2,500 levels of folders,
//! odd names) keeps `quarry rebuild` under 300 MiB of resident memory: a
//! document contributes at most 8 MiB of text, text files are read no
//! further, PDFs and HDF5 files are read in workers (processes of their own,
//! each held to its own address-space limit), and a batch of extracted rows
//! is bounded by what it holds, not by the files' sizes.
//!
//! The peak is measured twice: the kernel's count for the process itself
//! (getrusage, which `rebuild` prints), and the VmHWM of /proc/PID/status
//! sampled while it runs.

use crate::common;
use crate::common::hostile;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// The bound the issue sets on indexing memory.
const MAX_PEAK_MIB: u64 = 300;

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn indexing_a_hostile_folder_stays_under_300_mib() {
    let s = Sandbox::new();
    let made = hostile::write_hostile_folder(&s.root, 200);
    assert!(made > 450, "{made} files");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(["rebuild", "--root", &s.root_arg(), "--catalog"])
        .arg(&s.catalog)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read the pipes on threads, so a chatty log never blocks the child.
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let mut sampled = 0;
    let status = loop {
        if let Some(kib) = vm_hwm_kib(child.id()) {
            sampled = sampled.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "rebuild runs for over 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(status.success(), "{stderr}");
    let at = stdout.find("peak memory ").expect("a peak in the summary") + 12;
    let reported: u64 = stdout[at..].split(' ').next().unwrap().parse().unwrap();
    eprintln!(
        "{made} files in {:?}: peak {reported} MiB (sampled {} MiB)\n{stdout}",
        started.elapsed(),
        sampled >> 10
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(reported <= MAX_PEAK_MIB, "rebuild peaked at {reported} MiB");
    assert!(sampled >> 10 <= MAX_PEAK_MIB, "sampled peak {sampled} KiB");

    // Everything is accounted for: indexed, failed with a reason, or skipped.
    let out = run_ok(
        quarry()
            .args(["status", "--json", "--catalog"])
            .arg(&s.catalog),
    );
    let status: Value = serde_json::from_str(&out).unwrap();
    let root = &status["data"]["roots"][0];
    let kinds = root["kinds"].as_object().unwrap();
    let total = |field: &str| -> u64 { kinds.values().map(|k| k[field].as_u64().unwrap()).sum() };
    eprintln!(
        "indexed {}, failed {}, skipped {}",
        total("indexed"),
        total("failed"),
        root["skipped_total"]
    );
    assert!(total("indexed") > 100, "{status}");
    assert!(total("failed") > 100, "{status}");
}

/// The generator alone, for a look by hand or another tool:
/// `QUARRY_HOSTILE_DIR=<folder> cargo test --test index_memory -- --ignored`
/// writes the folder there (200 MiB of text; the sparse files cost no disk).
#[test]
#[ignore]
fn write_the_hostile_folder() {
    let dir = std::env::var_os("QUARRY_HOSTILE_DIR").expect("QUARRY_HOSTILE_DIR names the folder");
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let made = hostile::write_hostile_folder(&dir, 200);
    eprintln!("{made} files written under {}", dir.display());
}
