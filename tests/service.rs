//! quarry as a service: the systemd unit is valid, readiness is reported over
//! the sd_notify protocol once the socket listens, and SIGTERM stops the daemon
//! cleanly (exit status 0, socket removed, "STOPPING=1" sent).

use crate::common;

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

#[test]
fn the_systemd_unit_verifies() {
    let Ok(probe) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("systemd-analyze is not installed here: the unit is not verified");
        return;
    };
    assert!(probe.status.success());
    let unit = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/systemd/quarry.service"),
    )
    .unwrap();
    // systemd-analyze checks that the program exists: point it at this build.
    let unit = unit.replace("%h/.cargo/bin/quarry", env!("CARGO_BIN_EXE_quarry"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("quarry.service");
    std::fs::write(&path, unit).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("quarry.service:"),
        "{stderr}"
    );
}

#[test]
fn readiness_is_notified_and_sigterm_stops_cleanly() {
    let sandbox = Sandbox::with_testdata();
    let notify_path = sandbox.tmp.path().join("notify.sock");
    let manager = UnixDatagram::bind(&notify_path).unwrap();
    manager
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut child = quarry()
        .args(["serve", "--root", &sandbox.root_arg(), "--catalog"])
        .arg(&sandbox.catalog)
        .env("NOTIFY_SOCKET", &notify_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut buf = [0u8; 256];
    let n = manager.recv(&mut buf).unwrap();
    let state = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(state.contains("READY=1"), "{state}");
    // Ready means the socket takes connections.
    std::os::unix::net::UnixStream::connect(sandbox.socket()).unwrap();

    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let n = manager.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"STOPPING=1");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!sandbox.socket().exists());
}

/// SIGTERM while calls are in flight: every call sent before it is answered
/// (with its result, not an error), the daemon exits 0 within the drain limit,
/// its socket is gone, and the catalog it leaves holds what it served.
#[test]
fn sigterm_under_load_answers_the_calls_in_flight_and_loses_nothing() {
    use common::raw::{Raw, tool_call, wait_complete};
    use serde_json::json;

    let s = Sandbox::with_testdata();
    let mut daemon = s.serve();
    wait_complete(&s.socket());
    let mut probe = Raw::connect(&s.socket());
    probe.initialize();
    let listing = |c: &mut Raw, id| {
        let v = c.call(id, "list_files", json!({"kind": "all", "limit": 1000}));
        v["result"]["structuredContent"]["data"]["files"].clone()
    };
    let before = listing(&mut probe, 1);
    assert!(before.as_array().unwrap().len() >= 30, "{before}");

    // 4 connections x 6 histograms of a jagged branch (about 0.1 s each in a
    // debug build), all written before the signal.
    let nano = s.root.join("root/nanoAOD_2015_CMS_Open_Data_ttbar.root");
    let mut clients: Vec<Raw> = (0..4)
        .map(|_| {
            let mut c = Raw::connect(&s.socket());
            c.initialize();
            c
        })
        .collect();
    for c in &mut clients {
        for id in 0..6 {
            c.send_json(&tool_call(
                id,
                "compute_histogram",
                json!({"path": nano, "tree": "Events", "branch": "Jet_pt", "bins": 50 + id}),
            ));
        }
    }
    std::thread::sleep(Duration::from_millis(100));
    let signalled = std::time::Instant::now();
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(daemon.child.id() as i32, libc::SIGTERM) };
    let mut answered_after_signal = 0;
    for c in &mut clients {
        // Answers come in the order the calls finish.
        let mut answers = std::collections::HashMap::new();
        while answers.len() < 6 {
            let v = c.recv();
            if let Some(id) = v["id"].as_u64() {
                answers.insert(id, v);
            }
        }
        for (id, v) in answers {
            let counts = &v["result"]["structuredContent"]["data"]["bin_counts"];
            assert_eq!(
                counts.as_array().map(Vec::len),
                Some(50 + id as usize),
                "call {id}: {v}"
            );
            answered_after_signal += 1;
        }
    }
    assert_eq!(answered_after_signal, 24);
    let status = daemon.child.wait().unwrap();
    let took = signalled.elapsed();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(took < Duration::from_secs(8), "stopping took {took:?}");
    assert!(!s.socket().exists(), "the socket outlived the daemon");
    // The other connection is closed: nothing more is read after the drain.
    let mut line = String::new();
    use std::io::BufRead;
    assert_eq!(probe.reader.read_line(&mut line).unwrap_or(0), 0, "{line}");

    // The catalog opens without repair and holds every file it listed.
    let indexed = status_indexed(&s.catalog);
    assert_eq!(indexed, before.as_array().unwrap().len());
    let daemon = s.serve();
    wait_complete(&s.socket());
    let mut again = Raw::connect(&s.socket());
    again.initialize();
    assert_eq!(listing(&mut again, 1), before);
    daemon.stop();
}
