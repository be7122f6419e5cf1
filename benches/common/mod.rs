//! What the benchmarks that drive a real daemon share: `quarry serve` started on
//! one root, and a plain JSON-RPC session over its socket (no MCP client
//! library in between, so the timings are the daemon's); the percentile
//! every benchmark reports; and, for the benchmarks that call tool handlers
//! in process, `handlers`.
#![allow(dead_code)]

pub mod handlers;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A `quarry serve` process, killed when dropped.
pub struct Daemon {
    pub child: Child,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An initialised session with a daemon.
pub struct Session {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
    id: u64,
}

/// Starts `quarry serve --root NAME=DIR --catalog CATALOG` and connects to it
/// once its socket appears (within `start_limit`).
pub fn serve(root: &str, dir: &Path, catalog: &Path, start_limit: Duration) -> (Daemon, Session) {
    let socket = catalog.join("quarry.sock");
    let child = Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(["serve", "--root"])
        .arg(format!("{root}={}", dir.display()))
        .arg("--catalog")
        .arg(catalog)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let daemon = Daemon { child };
    let deadline = Instant::now() + start_limit;
    while !socket.exists() {
        assert!(Instant::now() < deadline, "daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let stream = UnixStream::connect(&socket).unwrap();
    let reader = BufReader::new(stream.try_clone().unwrap());
    let mut session = Session {
        stream,
        reader,
        id: 0,
    };
    session.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "bench", "version": "0"}}),
    );
    writeln!(
        session.stream,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    (daemon, session)
}

impl Session {
    /// Sends a request and returns its `result`, skipping notifications.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        writeln!(self.stream, "{msg}").unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.reader.read_line(&mut line).unwrap() > 0,
                "daemon closed the socket"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(self.id) {
                return v["result"].clone();
            }
        }
    }

    /// Calls a tool; returns its structured result.
    pub fn call(&mut self, name: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": args}))["structuredContent"]
            .clone()
    }

    /// Waits until every root has been scanned.
    pub fn wait_indexed(&mut self) {
        while self.call("index_status", json!({}))["data"]["complete"] != json!(true) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The value at fraction `p` (0..=1) of already sorted timings.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}
