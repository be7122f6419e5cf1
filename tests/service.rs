//! quarry as a service: the systemd unit is valid, readiness is reported over
//! the sd_notify protocol once the socket listens, and SIGTERM stops the daemon
//! cleanly (exit status 0, socket removed, "STOPPING=1" sent).

mod common;

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
