//! A raw JSON-RPC client on the daemon's socket, and a daemon started with a config.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Daemon, Sandbox, quarry, wait_until};

/// Starts `quarry serve` with a config file holding `config`, its open-file
/// limit (soft and hard) set to `nofile` when given.
pub fn serve_with(s: &Sandbox, config: &str, nofile: Option<u64>) -> Daemon {
    let config_path = s.tmp.path().join("quarry.toml");
    std::fs::write(&config_path, config).unwrap();
    let mut cmd = quarry();
    cmd.args(["serve", "--root", &s.root_arg(), "--catalog"])
        .arg(&s.catalog)
        .arg("--config")
        .arg(&config_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(n) = nofile {
        // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child.
        unsafe {
            cmd.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: n,
                    rlim_max: n,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let child = cmd.spawn().unwrap();
    let socket = s.socket();
    wait_until(Duration::from_secs(20), || socket.exists());
    Daemon { child }
}

/// A JSON-RPC client speaking raw lines, to send what a well-behaved client never would.
pub struct Raw {
    pub stream: UnixStream,
    pub reader: BufReader<UnixStream>,
}

impl Raw {
    pub fn connect(socket: &Path) -> Raw {
        let stream = UnixStream::connect(socket).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Raw {
            reader: BufReader::new(stream.try_clone().unwrap()),
            stream,
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    pub fn send_json(&mut self, v: &Value) {
        self.send(format!("{v}\n").as_bytes());
    }

    /// The next line from the server, parsed.
    pub fn recv(&mut self) -> Value {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).unwrap();
        assert!(n > 0, "the server closed the connection");
        serde_json::from_str(&line).unwrap()
    }

    /// Reads until the answer to `id`, returning it and every notification seen.
    pub fn answer(&mut self, id: &Value) -> (Value, Vec<Value>) {
        let mut notes = Vec::new();
        loop {
            let v = self.recv();
            if v.get("method").is_some() {
                notes.push(v);
            } else if v.get("id") == Some(id) {
                return (v, notes);
            }
        }
    }

    pub fn initialize(&mut self) {
        self.send_json(
            &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "transport-test", "version": "1"}}}),
        );
        let (v, _) = self.answer(&json!("init"));
        assert!(v.get("result").is_some(), "{v}");
        self.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    pub fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.send_json(&tool_call(id, tool, arguments));
        self.answer(&json!(id)).0
    }
}

pub fn tool_call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

/// Waits until the catalog is complete (index_status over the socket).
pub fn wait_complete(socket: &Path) {
    let mut c = Raw::connect(socket);
    c.initialize();
    let start = Instant::now();
    for id in 1.. {
        let v = c.call(id, "index_status", json!({}));
        if v["result"]["structuredContent"]["data"]["complete"] == true {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "never indexed: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A root of documents that a search matching every line takes a while over:
/// 60 files of 2,000 lines of eight random words.
pub fn heavy_corpus(s: &Sandbox) {
    let mut seed = 7u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    let words: Vec<String> = (0..4000)
        .map(|_| {
            let len = 3 + next() % 7;
            (0..len)
                .map(|_| (b'a' + (next() % 26) as u8) as char)
                .collect()
        })
        .collect();
    for f in 0..60 {
        let mut text = String::new();
        for _ in 0..2000 {
            for w in 0..8 {
                if w > 0 {
                    text.push(' ');
                }
                text.push_str(&words[next() % words.len()]);
            }
            text.push('\n');
        }
        s.write(&format!("docs/doc{f}.txt"), text.as_bytes());
    }
}

/// The heaviest search of `heavy_corpus`: every line holds a vowel, so every
/// line of every document is a match.
pub fn heavy_search(id: u64) -> Value {
    tool_call(
        id,
        "search_documents",
        json!({"query": "a|e|i|o|u", "scope": {"type": "global"}, "max_results": 5}),
    )
}

/// How long `heavy_search` takes when nothing stops it: the work a
/// cancellation must cut short.
pub fn heavy_search_alone(c: &mut Raw, id: u64) -> Duration {
    let started = Instant::now();
    c.send_json(&heavy_search(id));
    let (v, _) = c.answer(&json!(id));
    assert_eq!(v["result"]["isError"], false, "{v}");
    started.elapsed()
}
