//! The remote-roots benchmark's delaying TCP proxy (scripts/bench-remote.sh),
//! the same contract as `scripts/bench/delay_proxy.py` in compiled code:
//! every byte is held DELAY_MS / 2 on its way to the server and DELAY_MS / 2
//! on its way back, so each request/answer exchange costs DELAY_MS more,
//! while bytes are queued with the time they may go (bandwidth unchanged).
//! The Python proxy spends about 0.1 s of CPU copying a call's 185 MB on the
//! same two cores as the client it measures (docs/benchmarks.md, "Remote
//! roots"); this one copies with a thread per direction and large reads, so
//! what it adds is the latency.
//!
//! It counts round trips as the Python one does: each time a client sends
//! after the server last spoke (or first) on a connection is one exchange;
//! the running total over all connections is written to COUNT_FILE after
//! each.
//!
//! Usage: delay_proxy LISTEN_PORT UPSTREAM_PORT DELAY_MS [COUNT_FILE]
//! Prints "ready" once listening.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which side spoke last on a connection.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Nobody,
    Client,
    Server,
}

struct Turns {
    total: AtomicU64,
    file: Option<PathBuf>,
}

impl Turns {
    fn count(&self) {
        let n = self.total.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(file) = &self.file {
            let tmp = file.with_extension("tmp");
            if std::fs::write(&tmp, n.to_string()).is_ok() {
                let _ = std::fs::rename(&tmp, file);
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: delay_proxy LISTEN_PORT UPSTREAM_PORT DELAY_MS [COUNT_FILE]");
        std::process::exit(2);
    }
    let listen: u16 = args[1].parse().expect("a listening port");
    let upstream: u16 = args[2].parse().expect("an upstream port");
    let delay_ms: f64 = args[3].parse().expect("a delay in milliseconds");
    let half = Duration::from_secs_f64(delay_ms / 2000.0);
    let turns = Arc::new(Turns {
        total: AtomicU64::new(0),
        file: args.get(4).map(PathBuf::from),
    });
    let listener = TcpListener::bind(("127.0.0.1", listen)).expect("the listening port");
    println!("ready");
    for client in listener.incoming().flatten() {
        let turns = turns.clone();
        std::thread::spawn(move || {
            if let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) {
                relay(client, server, half, turns);
            }
        });
    }
}

/// Relays one connection both ways until both sides are done.
fn relay(client: TcpStream, server: TcpStream, half: Duration, turns: Arc<Turns>) {
    for s in [&client, &server] {
        let _ = s.set_nodelay(true);
    }
    let last = Arc::new(Mutex::new(Side::Nobody));
    let up = {
        let (from, to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        let (last, turns) = (last.clone(), turns.clone());
        std::thread::spawn(move || pump(from, to, half, Side::Client, &last, &turns))
    };
    pump(server, client, half, Side::Server, &last, &turns);
    let _ = up.join();
}

/// Copies `from` to `to`, each chunk written `half` after it was read: a
/// reader thread stamps and queues, a writer thread waits and writes.
fn pump(
    mut from: TcpStream,
    to: TcpStream,
    half: Duration,
    side: Side,
    last: &Mutex<Side>,
    turns: &Turns,
) {
    let (queue, due) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = std::thread::spawn(move || {
        let mut to = to;
        for (at, bytes) in due {
            let now = Instant::now();
            if at > now {
                std::thread::sleep(at - now);
            }
            if to.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        {
            let mut last = last.lock().unwrap();
            if side == Side::Client && *last != Side::Client {
                turns.count();
            }
            *last = side;
        }
        if queue
            .send((Instant::now() + half, buf[..n].to_vec()))
            .is_err()
        {
            break;
        }
    }
    drop(queue);
    let _ = writer.join();
}
