//! Loopback proxies that put faults between quarry and a real server: an
//! HTTP one (in front of nginx or moto) and a byte relay that follows
//! XRootD's framing (in front of xrootd). Each fault is armed by the test,
//! counted down as it is served, and counted in what was served.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Something the test does at one moment of the traffic (e.g. replace a
/// file on the server), once.
pub type Hook = Box<dyn FnOnce() + Send>;

/// Faults a `FaultProxy` injects, counted down as they are served.
#[derive(Default)]
pub struct Faults {
    /// Ranged requests answered `503 Slow Down` (S3's throttling answer).
    pub unavailable: usize,
    /// Ranged responses cut off half-way through.
    pub truncate: usize,
    /// Every connection closed at once, unanswered (the server gone).
    pub down: bool,
    /// Ranged requests answered before the server goes away (`down`
    /// set): a server that stops in the middle of a read.
    pub down_after: Option<usize>,
    /// Run before the next ranged request is passed on.
    pub before_ranged: Option<Hook>,
    /// Run before every ranged request is passed on (a file that keeps changing).
    pub before_every_ranged: Option<Arc<dyn Fn() + Send + Sync>>,
    /// What was served so far.
    pub served_unavailable: usize,
    pub served_truncated: usize,
    pub refused: usize,
    /// Each request's line and `Host` header, in order.
    pub requests: Vec<(String, String)>,
}

/// A loopback proxy in front of an HTTP server that injects `Faults`: one
/// request per connection (it asks the server to close after each answer).
pub struct FaultProxy {
    pub port: u16,
    pub url: String,
    pub faults: Arc<Mutex<Faults>>,
    stop: Arc<AtomicBool>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the stop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

impl FaultProxy {
    pub fn new(upstream_port: u16) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let faults = Arc::new(Mutex::new(Faults::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (f, s) = (faults.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let f = f.clone();
                std::thread::spawn(move || relay_http(conn, upstream_port, &f));
            }
        });
        FaultProxy {
            port,
            url: format!("http://127.0.0.1:{port}/"),
            faults,
            stop,
        }
    }

    pub fn set(&self, change: impl FnOnce(&mut Faults)) {
        change(&mut self.faults.lock().unwrap());
    }

    /// A look at the faults and counts (under the lock).
    pub fn faults(&self) -> std::sync::MutexGuard<'_, Faults> {
        self.faults.lock().unwrap()
    }
}

/// S3's throttling answer (what AWS sends when a prefix gets too many requests).
const SLOW_DOWN: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>\
<Message>Please reduce your request rate.</Message></Error>";

fn relay_http(mut client: TcpStream, upstream_port: u16, faults: &Mutex<Faults>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let lower = text.to_ascii_lowercase();
    let ranged = lower.contains("\r\nrange:");
    let host = text
        .split("\r\n")
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("host"))
        })
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let line = text.split("\r\n").next().unwrap_or("").to_string();
    let (answer_503, cut, hook) = {
        let mut f = faults.lock().unwrap();
        f.requests.push((line, host));
        if f.down {
            f.refused += 1;
            return; // closed unanswered
        }
        if ranged && let Some(n) = f.down_after {
            if n == 0 {
                f.down = true;
                f.down_after = None;
                f.refused += 1;
                return;
            }
            f.down_after = Some(n - 1);
        }
        let answer_503 = ranged && f.unavailable > 0;
        if answer_503 {
            f.unavailable -= 1;
            f.served_unavailable += 1;
        }
        let cut = ranged && !answer_503 && f.truncate > 0;
        if cut {
            f.truncate -= 1;
            f.served_truncated += 1;
        }
        let hook = if ranged { f.before_ranged.take() } else { None };
        let every = if ranged {
            f.before_every_ranged.clone()
        } else {
            None
        };
        (answer_503, cut, (hook, every))
    };
    if let Some(hook) = hook.0 {
        hook();
    }
    if let Some(every) = hook.1 {
        every();
    }
    if answer_503 {
        let _ = client.write_all(
            format!(
                "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{SLOW_DOWN}",
                SLOW_DOWN.len()
            )
            .as_bytes(),
        );
        return;
    }
    // The request again, asking the server to close after answering.
    let request: String = text
        .split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:") && !l.is_empty())
        .map(|l| format!("{l}\r\n"))
        .collect::<String>()
        + "Connection: close\r\n\r\n";
    let Ok(mut upstream) = TcpStream::connect(("127.0.0.1", upstream_port)) else {
        return;
    };
    if upstream.write_all(request.as_bytes()).is_err() {
        return;
    }
    let mut answer = Vec::new();
    let _ = upstream.read_to_end(&mut answer);
    let send = if cut {
        &answer[..answer.len() / 2]
    } else {
        &answer[..]
    };
    let _ = client.write_all(send);
}

/// XRootD request ids the relay acts on (XProtocol.hh).
pub const KXR_OPEN: u16 = 3010;
pub const KXR_READ: u16 = 3013;
pub const KXR_READV: u16 = 3025;
const KXR_WAIT: u16 = 4005;

/// Faults an `XrdRelay` injects into reads (kXR_read and kXR_readv
/// requests), counted down as they are served.
#[derive(Default)]
pub struct XrdFaults {
    /// Reads answered `kXR_wait` (1 s) by the relay itself, as a busy
    /// server does; the client must wait and ask again.
    pub wait: usize,
    /// Reads whose connection is dropped before the server sees them.
    pub drop: usize,
    /// Reads whose answer is cut off after its first 100 bytes, the
    /// connection then closed (a response truncated).
    pub truncate: usize,
    /// Reads passed on before the server goes away (`down` set, every
    /// connection closed): a server that stops in the middle of a read.
    pub down_after: Option<usize>,
    /// New connections are closed at once.
    pub down: bool,
    /// Run before the next kXR_open is passed on.
    pub before_open: Option<Hook>,
    pub served_wait: usize,
    pub served_drop: usize,
    pub served_truncated: usize,
    /// Reads passed on to the server.
    pub reads: usize,
}

/// A loopback relay in front of an XRootD server, reading the client's
/// requests by XRootD's framing (a 20-byte handshake, then 24-byte headers
/// each followed by its data) to inject `XrdFaults`; answers are copied
/// byte for byte.
pub struct XrdRelay {
    pub port: u16,
    pub faults: Arc<Mutex<XrdFaults>>,
    /// Every open connection, both ends, to close when the server "stops".
    conns: Arc<Mutex<Vec<(TcpStream, TcpStream)>>>,
    stop: Arc<AtomicBool>,
}

impl Drop for XrdRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        self.close_all();
    }
}

impl XrdRelay {
    pub fn new(upstream_port: u16) -> XrdRelay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let faults = Arc::new(Mutex::new(XrdFaults::default()));
        let conns = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (f, c, s) = (faults.clone(), conns.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                if f.lock().unwrap().down {
                    continue; // dropped: closed unanswered
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream_port)) else {
                    continue;
                };
                c.lock()
                    .unwrap()
                    .push((client.try_clone().unwrap(), server.try_clone().unwrap()));
                let (f, c) = (f.clone(), c.clone());
                std::thread::spawn(move || relay_xrd(client, server, &f, &c));
            }
        });
        XrdRelay {
            port,
            faults,
            conns,
            stop,
        }
    }

    pub fn set(&self, change: impl FnOnce(&mut XrdFaults)) {
        change(&mut self.faults.lock().unwrap());
    }

    pub fn faults(&self) -> std::sync::MutexGuard<'_, XrdFaults> {
        self.faults.lock().unwrap()
    }

    fn close_all(&self) {
        close_all(&self.conns);
    }
}

fn close_all(conns: &Mutex<Vec<(TcpStream, TcpStream)>>) {
    for (a, b) in conns.lock().unwrap().drain(..) {
        let _ = a.shutdown(Shutdown::Both);
        let _ = b.shutdown(Shutdown::Both);
    }
}

/// What the relay does with one read request.
enum Act {
    Pass,
    Wait,
    Drop,
    Truncate,
    GoDown,
}

fn relay_xrd(
    mut client: TcpStream,
    mut server: TcpStream,
    faults: &Arc<Mutex<XrdFaults>>,
    conns: &Arc<Mutex<Vec<(TcpStream, TcpStream)>>>,
) {
    // Answers flow back byte for byte, cut short when a truncation is armed.
    let cut_at: Arc<Mutex<Option<usize>>> = Arc::new(Mutex::new(None));
    let back = {
        let (mut from, mut to) = (server.try_clone().unwrap(), client.try_clone().unwrap());
        let cut_at = cut_at.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 16384];
            loop {
                let n = match from.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let mut cut = cut_at.lock().unwrap();
                let n = match *cut {
                    Some(left) if left <= n => {
                        let _ = to.write_all(&buf[..left]);
                        *cut = None;
                        let _ = to.shutdown(Shutdown::Both);
                        let _ = from.shutdown(Shutdown::Both);
                        break;
                    }
                    Some(left) => {
                        *cut = Some(left - n);
                        n
                    }
                    None => n,
                };
                drop(cut);
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        })
    };
    let mut hello = [0u8; 20];
    if client.read_exact(&mut hello).is_ok() && server.write_all(&hello).is_ok() {
        loop {
            let mut head = [0u8; 24];
            if client.read_exact(&mut head).is_err() {
                break;
            }
            let id = u16::from_be_bytes([head[2], head[3]]);
            let len = i32::from_be_bytes(head[20..24].try_into().unwrap()).max(0) as usize;
            let mut data = vec![0u8; len];
            if client.read_exact(&mut data).is_err() {
                break;
            }
            let (act, hook) = {
                let mut f = faults.lock().unwrap();
                let hook = if id == KXR_OPEN {
                    f.before_open.take()
                } else {
                    None
                };
                let act = if id != KXR_READ && id != KXR_READV {
                    Act::Pass
                } else if f.wait > 0 {
                    f.wait -= 1;
                    f.served_wait += 1;
                    Act::Wait
                } else if f.drop > 0 {
                    f.drop -= 1;
                    f.served_drop += 1;
                    Act::Drop
                } else if f.down_after == Some(0) {
                    f.down_after = None;
                    f.down = true;
                    Act::GoDown
                } else {
                    f.down_after = f.down_after.map(|n| n - 1);
                    f.reads += 1;
                    if f.truncate > 0 {
                        f.truncate -= 1;
                        f.served_truncated += 1;
                        Act::Truncate
                    } else {
                        Act::Pass
                    }
                };
                (act, hook)
            };
            if let Some(hook) = hook {
                hook();
            }
            match act {
                Act::Wait => {
                    // kXR_wait: the stream id, the status, then the seconds
                    // and a message.
                    let mut answer = vec![head[0], head[1]];
                    answer.extend_from_slice(&KXR_WAIT.to_be_bytes());
                    let body = [&1i32.to_be_bytes()[..], b"busy\0"].concat();
                    answer.extend_from_slice(&(body.len() as i32).to_be_bytes());
                    answer.extend_from_slice(&body);
                    if client.write_all(&answer).is_err() {
                        break;
                    }
                    continue;
                }
                Act::Drop => break,
                Act::GoDown => {
                    close_all(conns);
                    break;
                }
                Act::Truncate => *cut_at.lock().unwrap() = Some(100),
                Act::Pass => {}
            }
            if server.write_all(&head).is_err() || server.write_all(&data).is_err() {
                break;
            }
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
    let _ = back.join();
}
