//! The XRootD client against scripted servers on loopback sockets: a
//! manager that asks to wait, then redirects, and the data server it names
//! (Debian's xrootd needs a cmsd pair for a real redirector; these scripts
//! speak the few answers quarry must handle, per XProtocol.hh).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

/// The file the data server holds: byte `i` is `i % 251`.
const SIZE: u64 = 1000;

/// What a scripted server answers to one request (id, its data): the
/// status and body of each answer it sends, in order.
type Script = dyn Fn(u16, &[u8], &[u8; 16]) -> (u16, Vec<u8>) + Send + Sync;

/// A server on a free loopback port answering every connection by `script`
/// (handshake and login answered ok), recording each request's id.
struct Fake {
    port: u16,
    requests: Arc<Mutex<Vec<u16>>>,
    connections: Arc<AtomicUsize>,
}

impl Fake {
    fn start(script: Arc<Script>) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let (seen, count) = (requests.clone(), connections.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let (script, seen) = (script.clone(), seen.clone());
                std::thread::spawn(move || serve(stream, &*script, &seen));
            }
        });
        Fake {
            port,
            requests,
            connections,
        }
    }

    fn seen(&self, request: u16) -> usize {
        let requests = self.requests.lock().unwrap();
        requests.iter().filter(|&&r| r == request).count()
    }
}

fn answer(stream: &mut TcpStream, stream_id: [u8; 2], status: u16, body: &[u8]) {
    let mut msg = stream_id.to_vec();
    msg.extend_from_slice(&status.to_be_bytes());
    msg.extend_from_slice(&(body.len() as i32).to_be_bytes());
    msg.extend_from_slice(body);
    stream.write_all(&msg).unwrap();
}

fn serve(mut stream: TcpStream, script: &Script, seen: &Mutex<Vec<u16>>) {
    let mut hello = [0u8; 20];
    if stream.read_exact(&mut hello).is_err() {
        return;
    }
    answer(&mut stream, [0, 0], KXR_OK, &[0, 0, 5, 0, 0, 0, 0, 1]);
    loop {
        let mut head = [0u8; 24];
        if stream.read_exact(&mut head).is_err() {
            return;
        }
        let id = u16::from_be_bytes([head[2], head[3]]);
        let parms: [u8; 16] = head[4..20].try_into().unwrap();
        let len = i32::from_be_bytes(head[20..24].try_into().unwrap()) as usize;
        let mut data = vec![0u8; len];
        stream.read_exact(&mut data).unwrap();
        let (status, body) = if id == KXR_LOGIN {
            (KXR_OK, vec![7u8; 16])
        } else {
            seen.lock().unwrap().push(id);
            script(id, &data, &parms)
        };
        answer(&mut stream, [head[0], head[1]], status, &body);
    }
}

/// A data server holding `/data/f.bin` (and nothing else).
fn data_server() -> Fake {
    let stat = format!("1 {SIZE} 16 1700000000\0");
    Fake::start(Arc::new(move |id, data, parms| match id {
        KXR_STAT | KXR_OPEN if data != b"/data/f.bin" => {
            let mut body = 3011i32.to_be_bytes().to_vec();
            body.extend_from_slice(b"no such file\0");
            (KXR_ERROR, body)
        }
        KXR_STAT => (KXR_OK, stat.clone().into_bytes()),
        KXR_OPEN => {
            let mut body = vec![1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0];
            body.extend_from_slice(stat.as_bytes());
            (KXR_OK, body)
        }
        KXR_READ => {
            let at = i64::from_be_bytes(parms[4..12].try_into().unwrap()) as u64;
            let len = i32::from_be_bytes(parms[12..16].try_into().unwrap()) as u64;
            (KXR_OK, (at..at + len).map(|i| (i % 251) as u8).collect())
        }
        KXR_READV => {
            let mut body = Vec::new();
            for element in data.chunks(16) {
                let len = i32::from_be_bytes(element[4..8].try_into().unwrap()) as u64;
                let at = i64::from_be_bytes(element[8..16].try_into().unwrap()) as u64;
                body.extend_from_slice(element);
                body.extend((at..at + len).map(|i| (i % 251) as u8));
            }
            (KXR_OK, body)
        }
        _ => (KXR_OK, Vec::new()),
    }))
}

/// A manager that answers each path request's first try with kXR_wait of
/// `wait_secs`, then redirects it to `to` (a port on 127.0.0.1).
fn manager(to: u16, wait_secs: i32) -> Fake {
    let waited = Arc::new(AtomicUsize::new(0));
    Fake::start(Arc::new(move |_, _, _| {
        if waited.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
            return (KXR_WAIT, wait_secs.to_be_bytes().to_vec());
        }
        let mut body = i32::from(to).to_be_bytes().to_vec();
        body.extend_from_slice(b"127.0.0.1?tried=x");
        (KXR_REDIRECT, body)
    }))
}

/// A client of the root `/data/` on the server at `port`, trying each
/// request once (a failure the test expects is not retried).
fn client(port: u16) -> Xrootd {
    let url = RootUrl::parse(&format!("root://127.0.0.1:{port}//data/")).unwrap();
    let mut settings = Settings::default();
    settings.retry.retries = 0;
    Xrootd::new(url, &settings)
}

#[test]
fn a_managers_wait_is_waited_out_and_its_redirect_followed_to_the_data_server() {
    let data = data_server();
    let manager = manager(data.port, 1);
    let xrd = client(manager.port);

    let started = Instant::now();
    let meta = xrd.stat("f.bin").unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the wait was kept"
    );
    assert_eq!(meta.size, SIZE);
    assert_eq!(meta.mtime_ns, 1_700_000_000_000_000_000);
    assert_eq!((manager.seen(KXR_STAT), data.seen(KXR_STAT)), (2, 1));

    let ranges = [0..10, 500..520, 990..1000];
    let got = xrd.read_ranges("f.bin", &meta, &ranges, &|| false).unwrap();
    for (bytes, range) in got.iter().zip(&ranges) {
        let expected: Vec<u8> = range.clone().map(|i| (i % 251) as u8).collect();
        assert_eq!(bytes, &expected);
    }
    assert_eq!((manager.seen(KXR_OPEN), data.seen(KXR_OPEN)), (2, 1));
    assert_eq!(data.seen(KXR_READV), 1);

    // The next read goes straight to the data server, on the file it holds open.
    let got = xrd
        .read_ranges("f.bin", &meta, std::slice::from_ref(&(100..110)), &|| false)
        .unwrap();
    assert_eq!(got[0], (100..110).map(|i| i as u8).collect::<Vec<u8>>());
    assert_eq!((manager.seen(KXR_OPEN), data.seen(KXR_OPEN)), (2, 1));
    assert_eq!(data.seen(KXR_READ), 1);

    // Another path is asked of the manager again, not of the data server.
    let err = xrd.stat("other.bin").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    assert_eq!(manager.seen(KXR_STAT), 4);
}

#[test]
fn redirects_in_a_loop_and_endless_waits_are_given_up() {
    // A server redirecting every request to itself.
    let port = Arc::new(AtomicUsize::new(0));
    let to = port.clone();
    let looping = Fake::start(Arc::new(move |_, _, _| {
        let mut body = (to.load(Ordering::SeqCst) as i32).to_be_bytes().to_vec();
        body.extend_from_slice(b"127.0.0.1");
        (KXR_REDIRECT, body)
    }));
    port.store(usize::from(looping.port), Ordering::SeqCst);
    let err = client(looping.port).stat("f.bin").unwrap_err();
    assert!(err.to_string().contains("redirected more than"), "{err}");
    assert_eq!(
        looping.connections.load(Ordering::SeqCst),
        1 + MAX_REDIRECTS
    );

    // A server that only ever asks to wait (0 s, so the test is quick).
    let waiting = Fake::start(Arc::new(|_, _, _| (KXR_WAIT, 0i32.to_be_bytes().to_vec())));
    let err = client(waiting.port).stat("f.bin").unwrap_err();
    assert!(err.to_string().contains("kept asking to wait"), "{err}");
    assert_eq!(waiting.seen(KXR_STAT), MAX_WAITS);
}
