//! XRootD (`root://`): quarry's own client for the read-only subset of the
//! protocol it needs (handshake, login, stat, dirlist, open, read, readv,
//! close), from the protocol's published definition (XProtocol.hh). One
//! request at a time per connection; connections are pooled per root and
//! dropped after any error. A pooled connection keeps its last file open, so
//! that the reads of one file after the first cost one round trip each (a
//! readv), not three (open, read, close). Security (kXR_auth) and TLS are not
//! spoken: a server that asks for them is reported.
//!
//! Redirects (kXR_redirect: a manager sending a request on to the data server
//! holding the file) are followed, at most `MAX_REDIRECTS` in a row, to the
//! host the server names: the server chooses it, never a tool call. A
//! connection a redirect led to serves only the reads of the file it opened
//! (kept for them, as the root's own connections are); every other request
//! starts again at the root's own server. kXR_wait is waited out, up to
//! `MAX_WAITS` times for one request and `MAX_WAIT` each.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::ops::Range;
use std::sync::Mutex;
use std::time::Duration;

use super::retry::{Failure, Policy, with_retries};
use super::url::RootUrl;
use super::{Entry, Meta, Protocol, Settings, Stop, cancelled, changed, is_changed};

const KXR_CLOSE: u16 = 3003;
const KXR_DIRLIST: u16 = 3004;
const KXR_LOGIN: u16 = 3007;
const KXR_OPEN: u16 = 3010;
const KXR_READ: u16 = 3013;
const KXR_STAT: u16 = 3017;
const KXR_READV: u16 = 3025;

const KXR_OK: u16 = 0;
const KXR_OKSOFAR: u16 = 4000;
const KXR_ERROR: u16 = 4003;
const KXR_REDIRECT: u16 = 4004;
const KXR_WAIT: u16 = 4005;

/// kXR_error's "no such file".
const KXR_NOT_FOUND: i32 = 3011;
/// The stat flag of a folder.
const KXR_IS_DIR: u64 = 2;
const KXR_OPEN_READ: u16 = 0x0010;
/// kXR_open's "answer with the file's stat too".
const KXR_RETSTAT: u16 = 0x0400;
const KXR_DSTAT: u8 = 2;

/// Most bytes one readv element asks for, and elements per readv request
/// (servers cap both; these stay well inside the defaults).
const READV_ELEMENT: u64 = 512 << 10;
const READV_ELEMENTS: usize = 256;
/// Bytes of an answer read between two looks at whether the call stopped.
const STOP_CHECK_BYTES: usize = 256 << 10;
/// Largest response accepted (a listing, a readv).
const MAX_RESPONSE: usize = 256 << 20;
/// Redirects followed in a row for one request.
const MAX_REDIRECTS: usize = 4;
/// kXR_wait answers waited out for one request, and the longest wait each.
const MAX_WAITS: usize = 5;
const MAX_WAIT: Duration = Duration::from_secs(5);
/// Connections a redirect led to, kept for reads of the file they opened.
const KEPT_REDIRECTED: usize = 8;

pub struct Xrootd {
    url: RootUrl,
    /// The folder's path on the server (`/data`).
    base: String,
    timeout: Duration,
    connect_timeout: Duration,
    retry: Policy,
    /// Logged-in connections to the root's own server.
    pool: Mutex<Vec<Conn>>,
    /// Connections a redirect led to, each holding its file open.
    redirected: Mutex<Vec<Conn>>,
}

/// A logged-in connection and the file it holds open.
struct Conn {
    stream: TcpStream,
    open: Option<OpenFile>,
    /// Reached by a redirect (not the root's own server).
    redirected: bool,
}

/// A kXR_redirect answer: where the server sends the request.
#[derive(Debug)]
struct Redirect {
    host: String,
    port: u16,
}

impl std::fmt::Display for Redirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the XRootD server redirects to {}:{}",
            self.host, self.port
        )
    }
}

impl std::error::Error for Redirect {}

impl Redirect {
    /// kXR_redirect's body: the port (4 bytes), then the host, possibly
    /// followed by `?` and opaque data (not passed on: quarry's requests
    /// carry none); a negative port means the host is a URL.
    fn parse(body: &[u8]) -> Option<Redirect> {
        let port = i32::from_be_bytes(body.get(..4)?.try_into().ok()?);
        let text = String::from_utf8_lossy(&body[4..]);
        let text = text.trim_end_matches('\0');
        let host = text.split('?').next()?;
        if port >= 0 {
            let port = u16::try_from(port).ok()?;
            return (!host.is_empty()).then(|| Redirect {
                host: host.to_string(),
                port,
            });
        }
        // root://host:port/... (the URL form of newer servers).
        let authority = host.strip_prefix("root://")?.split('/').next()?;
        let (host, port) = authority.rsplit_once(':')?;
        Some(Redirect {
            host: host.to_string(),
            port: port.parse().ok()?,
        })
    }

    fn of(e: &io::Error) -> Option<&Redirect> {
        e.get_ref()?.downcast_ref::<Redirect>()
    }
}

/// A file handle of a connection, with the version the server stated when
/// it was opened: reused only for reads of that very version.
struct OpenFile {
    path: String,
    size: u64,
    mtime_ns: i64,
    handle: [u8; 4],
}

impl OpenFile {
    fn is_version(&self, version: &Meta) -> bool {
        self.size == version.size && self.mtime_ns == version.mtime_ns
    }
}

impl Xrootd {
    pub fn new(url: RootUrl, settings: &Settings) -> Xrootd {
        let mut base = String::new();
        for part in url.path.split('/').filter(|p| !p.is_empty()) {
            base.push('/');
            base.push_str(part);
        }
        Xrootd {
            url,
            base,
            timeout: settings.request_timeout,
            connect_timeout: settings.connect_timeout,
            retry: settings.retry.clone(),
            pool: Mutex::new(Vec::new()),
            redirected: Mutex::new(Vec::new()),
        }
    }

    /// The server path of `rel`; names XRootD would read as more than a
    /// name (opaque data after `?`, a listing's line break) are refused.
    fn path_of(&self, rel: &str) -> io::Result<String> {
        let mut path = self.base.clone();
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            if part.contains(['?', '\n', '\0']) {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("'{rel}' cannot be named over XRootD"),
                ));
            }
            path.push('/');
            path.push_str(part);
        }
        if path.is_empty() {
            path.push('/');
        }
        Ok(path)
    }

    /// A connection for a request: for a read of `file`, one a redirect led
    /// to that holds it open; else one to the root's own server.
    fn connect(&self, file: Option<(&str, &Meta)>) -> io::Result<Conn> {
        if let Some((path, version)) = file {
            let mut kept = self.redirected.lock().expect("xrootd redirected");
            let holding = kept.iter().position(|c| {
                c.open
                    .as_ref()
                    .is_some_and(|o| o.path == path && o.is_version(version))
            });
            if let Some(at) = holding {
                return Ok(kept.swap_remove(at));
            }
        }
        if let Some(conn) = self.pool.lock().expect("xrootd pool").pop() {
            return Ok(conn);
        }
        let mut conn = self.log_in(&self.url.authority_with_port(1094))?;
        conn.redirected = false;
        Ok(conn)
    }

    /// A new connection to `authority` (`host:port`), handshaken and logged in.
    fn log_in(&self, authority: &str) -> io::Result<Conn> {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(authority)?
            .next()
            .ok_or_else(|| io::Error::other(format!("{authority} has no address")))?;
        let mut conn = TcpStream::connect_timeout(&addr, self.connect_timeout)?;
        conn.set_read_timeout(Some(self.timeout))?;
        conn.set_write_timeout(Some(self.timeout))?;
        conn.set_nodelay(true)?;
        // The handshake: five numbers, answered by the server's version.
        let mut hello = Vec::with_capacity(20);
        for n in [0i32, 0, 0, 4, 2012] {
            hello.extend_from_slice(&n.to_be_bytes());
        }
        conn.write_all(&hello)?;
        let (status, _) = read_response(&mut conn, &|| false)?;
        if status != KXR_OK {
            return Err(io::Error::other("the XRootD handshake was refused"));
        }
        let mut login = [0u8; 16];
        login[..4].copy_from_slice(&(std::process::id() as i32).to_be_bytes());
        login[4..10].copy_from_slice(b"quarry");
        login[14] = 3; // capver: the 2011-2012 client's protocol
        let (status, body) = exchange(&mut conn, KXR_LOGIN, login, &[])?;
        if status != KXR_OK {
            return Err(server_error(status, &body));
        }
        // A session id (16 bytes), then security parameters when the server
        // wants authentication, which quarry does not speak.
        if body.len() > 16 && body[16..].starts_with(b"&P=") {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the XRootD server asks for authentication, which quarry does not support yet",
            ));
        }
        Ok(Conn {
            stream: conn,
            open: None,
            redirected: true,
        })
    }

    /// Runs `work` on `conn`, and again on the server a redirect names
    /// (`conn` then becomes that connection), up to `MAX_REDIRECTS` times.
    fn follow<T>(
        &self,
        conn: &mut Conn,
        work: &impl Fn(&mut Conn) -> io::Result<T>,
    ) -> io::Result<T> {
        for _ in 0..MAX_REDIRECTS {
            match work(conn) {
                Err(e) if Redirect::of(&e).is_some() => {
                    let to = Redirect::of(&e).expect("a redirect");
                    let authority = if to.host.contains(':') {
                        format!("[{}]:{}", to.host, to.port)
                    } else {
                        format!("{}:{}", to.host, to.port)
                    };
                    let was = std::mem::replace(conn, self.log_in(&authority)?);
                    // The server that redirected answered whole: still usable.
                    if !was.redirected {
                        self.pool.lock().expect("xrootd pool").push(was);
                    }
                }
                other => return other,
            }
        }
        work(conn).map_err(|e| match Redirect::of(&e) {
            Some(_) => io::Error::other(format!(
                "the XRootD server redirected more than {MAX_REDIRECTS} times in a row"
            )),
            None => e,
        })
    }

    /// Keeps a connection that served a request: the root's own for any
    /// request, one a redirect led to only while it holds a file open.
    fn give_back(&self, conn: Conn) {
        if !conn.redirected {
            self.pool.lock().expect("xrootd pool").push(conn);
        } else if conn.open.is_some() {
            let mut kept = self.redirected.lock().expect("xrootd redirected");
            if kept.len() >= KEPT_REDIRECTED {
                kept.remove(0);
            }
            kept.push(conn);
        }
    }

    /// Runs `work` on a pooled connection, which goes back to the pool only
    /// when the work succeeded (a failed one may hold half a response).
    fn with_conn<T>(&self, work: impl Fn(&mut Conn) -> io::Result<T>) -> io::Result<T> {
        self.with_conn_until(None, &|| false, work)
    }

    /// `with_conn` for work that `stop` may cut short.
    /// (`file`: the read's file and version, whose open handle may be reused.)
    fn with_conn_until<T>(
        &self,
        file: Option<(&str, &Meta)>,
        stop: &Stop<'_>,
        work: impl Fn(&mut Conn) -> io::Result<T>,
    ) -> io::Result<T> {
        with_retries(&self.retry, stop, || {
            if stop() {
                return Err(Failure::permanent(cancelled()));
            }
            let mut conn = self.connect(file).map_err(classify)?;
            let got = self.follow(&mut conn, &work).map_err(classify)?;
            self.give_back(conn);
            Ok(got)
        })
    }

    fn stat_path(&self, conn: &mut TcpStream, path: &str) -> io::Result<(u64, u64, i64)> {
        let (status, body) = exchange(conn, KXR_STAT, [0u8; 16], path.as_bytes())?;
        if status != KXR_OK {
            return Err(server_error(status, &body));
        }
        parse_stat(&String::from_utf8_lossy(&body))
    }
}

impl Protocol for Xrootd {
    fn stat(&self, rel: &str) -> io::Result<Meta> {
        let path = self.path_of(rel)?;
        let (size, flags, mtime) = self.with_conn(|c| self.stat_path(&mut c.stream, &path))?;
        if flags & KXR_IS_DIR != 0 {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{path} is a folder"),
            ));
        }
        Ok(Meta {
            size,
            mtime_ns: mtime.saturating_mul(1_000_000_000),
            etag: None,
        })
    }

    fn read_ranges(
        &self,
        rel: &str,
        version: &Meta,
        ranges: &[Range<u64>],
        stop: &Stop<'_>,
    ) -> io::Result<Vec<Vec<u8>>> {
        let path = self.path_of(rel)?;
        self.with_conn_until(Some((&path, version)), stop, |conn| {
            let handle = open_version(conn, &path, version)
                .map_err(|e| e.unwrap_or_else(|| changed(&self.url.file_url(rel))))?;
            let got = read_with(&mut conn.stream, handle, ranges, stop)?;
            // A file that changed size since it was opened reads short.
            if got
                .iter()
                .zip(ranges)
                .any(|(b, r)| b.len() as u64 != r.end - r.start)
            {
                return Err(changed(&self.url.file_url(rel)));
            }
            Ok(got)
        })
    }

    fn list_dir(&self, rel: &str) -> io::Result<Vec<Entry>> {
        let path = self.path_of(rel)?;
        let mut parms = [0u8; 16];
        parms[15] = KXR_DSTAT;
        let body = self.with_conn(|conn| {
            let (status, body) = exchange(&mut conn.stream, KXR_DIRLIST, parms, path.as_bytes())?;
            if status != KXR_OK {
                return Err(server_error(status, &body));
            }
            Ok(body)
        })?;
        parse_dirlist(&String::from_utf8_lossy(&body))
    }
}

/// The connection's handle of `path` at `version`: the one it holds, or the
/// file opened now (the one held before closed) with the server's stat of it
/// checked against `version`; `Err(None)` when the file is another version.
fn open_version(conn: &mut Conn, path: &str, version: &Meta) -> Result<[u8; 4], Option<io::Error>> {
    if let Some(open) = &conn.open {
        if open.path == path && open.is_version(version) {
            return Ok(open.handle);
        }
        let mut close = [0u8; 16];
        close[..4].copy_from_slice(&open.handle);
        conn.open = None;
        exchange(&mut conn.stream, KXR_CLOSE, close, &[])?;
    }
    let mut parms = [0u8; 16];
    parms[2..4].copy_from_slice(&(KXR_OPEN_READ | KXR_RETSTAT).to_be_bytes());
    let (status, body) = exchange(&mut conn.stream, KXR_OPEN, parms, path.as_bytes())?;
    if status != KXR_OK || body.len() < 4 {
        return Err(Some(server_error(status, &body)));
    }
    let handle: [u8; 4] = body[..4].try_into().expect("4 bytes");
    // The handle, compression size and type (4 bytes each), then the stat.
    let (size, _, mtime) = body
        .get(12..)
        .map(|stat| parse_stat(&String::from_utf8_lossy(stat)))
        .ok_or_else(|| {
            Some(io::Error::other(
                "kXR_open answered without the file's stat",
            ))
        })??;
    let mtime_ns = mtime.saturating_mul(1_000_000_000);
    conn.open = Some(OpenFile {
        path: path.to_string(),
        size,
        mtime_ns,
        handle,
    });
    if size != version.size || (version.mtime_ns != 0 && mtime_ns != version.mtime_ns) {
        return Err(None);
    }
    Ok(handle)
}

/// `ranges` read through one open handle: one readv for all of them (cut
/// into the elements and requests servers accept), a plain read for one.
fn read_with(
    conn: &mut TcpStream,
    handle: [u8; 4],
    ranges: &[Range<u64>],
    stop: &Stop<'_>,
) -> io::Result<Vec<Vec<u8>>> {
    if let [one] = ranges {
        let mut parms = [0u8; 16];
        parms[..4].copy_from_slice(&handle);
        parms[4..12].copy_from_slice(&(one.start as i64).to_be_bytes());
        parms[12..16].copy_from_slice(&((one.end - one.start) as i32).to_be_bytes());
        let (status, body) = exchange_until(conn, (KXR_READ, parms, &[]), stop)?;
        if status != KXR_OK {
            return Err(server_error(status, &body));
        }
        return Ok(vec![body]);
    }
    // Each range as elements of at most READV_ELEMENT bytes, remembered by
    // which range they belong to.
    let mut elements: Vec<(usize, u64, u64)> = Vec::new();
    for (i, r) in ranges.iter().enumerate() {
        let mut at = r.start;
        while at < r.end {
            let len = (r.end - at).min(READV_ELEMENT);
            elements.push((i, at, len));
            at += len;
        }
    }
    let mut out: Vec<Vec<u8>> = ranges
        .iter()
        .map(|r| Vec::with_capacity((r.end - r.start) as usize))
        .collect();
    for batch in elements.chunks(READV_ELEMENTS) {
        if stop() {
            return Err(cancelled());
        }
        let mut list = Vec::with_capacity(batch.len() * 16);
        for &(_, offset, len) in batch {
            list.extend_from_slice(&handle);
            list.extend_from_slice(&(len as i32).to_be_bytes());
            list.extend_from_slice(&(offset as i64).to_be_bytes());
        }
        let (status, body) = exchange_until(conn, (KXR_READV, [0u8; 16], &list), stop)?;
        if status != KXR_OK {
            return Err(server_error(status, &body));
        }
        // The answer: each element's 16-byte header, then its bytes.
        let mut at = 0;
        for &(i, offset, _) in batch {
            let head = body.get(at..at + 16).ok_or_else(short_readv)?;
            let len = i32::from_be_bytes(head[4..8].try_into().expect("4 bytes"));
            let got_offset = i64::from_be_bytes(head[8..16].try_into().expect("8 bytes"));
            let len = usize::try_from(len).map_err(|_| short_readv())?;
            if got_offset != offset as i64 {
                return Err(io::Error::other("a readv answer out of order"));
            }
            let data = body.get(at + 16..at + 16 + len).ok_or_else(short_readv)?;
            out[i].extend_from_slice(data);
            at += 16 + len;
        }
    }
    Ok(out)
}

fn short_readv() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "a readv answer was cut short",
    )
}

/// Sends one request and reads its whole answer (the partial answers of
/// kXR_oksofar joined); kXR_wait is waited out and the request sent again.
fn exchange(
    conn: &mut TcpStream,
    request: u16,
    parms: [u8; 16],
    data: &[u8],
) -> io::Result<(u16, Vec<u8>)> {
    exchange_until(conn, (request, parms, data), &|| false)
}

/// `exchange`, whose answer `stop` may cut short (the connection then holds
/// half an answer and must be dropped, as after any error).
fn exchange_until(
    conn: &mut TcpStream,
    (request, parms, data): (u16, [u8; 16], &[u8]),
    stop: &Stop<'_>,
) -> io::Result<(u16, Vec<u8>)> {
    let mut msg = Vec::with_capacity(24 + data.len());
    msg.extend_from_slice(&[0, 1]);
    msg.extend_from_slice(&request.to_be_bytes());
    msg.extend_from_slice(&parms);
    msg.extend_from_slice(&(data.len() as i32).to_be_bytes());
    msg.extend_from_slice(data);
    for _ in 0..MAX_WAITS {
        conn.write_all(&msg)?;
        let (status, body) = read_response(conn, stop)?;
        if status == KXR_WAIT && body.len() >= 4 {
            let secs = i32::from_be_bytes(body[..4].try_into().expect("4 bytes"));
            let wait = Duration::from_secs(secs.max(0) as u64).min(MAX_WAIT);
            std::thread::sleep(wait);
            continue;
        }
        return Ok((status, body));
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        "the XRootD server kept asking to wait",
    ))
}

/// One answer: headers and bodies until a status other than kXR_oksofar.
fn read_response(conn: &mut TcpStream, stop: &Stop<'_>) -> io::Result<(u16, Vec<u8>)> {
    let mut body = Vec::new();
    loop {
        let mut head = [0u8; 8];
        conn.read_exact(&mut head)?;
        let status = u16::from_be_bytes([head[2], head[3]]);
        let len = i32::from_be_bytes(head[4..8].try_into().expect("4 bytes"));
        let len = usize::try_from(len).map_err(|_| io::Error::other("a negative answer length"))?;
        if body.len() + len > MAX_RESPONSE {
            return Err(io::Error::other(
                "an XRootD answer larger than quarry accepts",
            ));
        }
        let at = body.len();
        body.resize(at + len, 0);
        for piece in body[at..].chunks_mut(STOP_CHECK_BYTES) {
            if stop() {
                return Err(cancelled());
            }
            conn.read_exact(piece)?;
        }
        if status != KXR_OKSOFAR {
            return Ok((status, body));
        }
    }
}

/// A non-ok answer as an error: kXR_error's number and message.
fn server_error(status: u16, body: &[u8]) -> io::Error {
    match status {
        KXR_ERROR if body.len() >= 4 => {
            let code = i32::from_be_bytes(body[..4].try_into().expect("4 bytes"));
            let text = String::from_utf8_lossy(&body[4..])
                .trim_end_matches('\0')
                .to_string();
            let kind = if code == KXR_NOT_FOUND {
                io::ErrorKind::NotFound
            } else {
                io::ErrorKind::Other
            };
            io::Error::new(kind, format!("XRootD error {code}: {text}"))
        }
        KXR_REDIRECT => match Redirect::parse(body) {
            Some(to) => io::Error::other(to),
            None => io::Error::other("an XRootD redirect without a host"),
        },
        other => io::Error::other(format!("unexpected XRootD answer {other}")),
    }
}

/// Network failures may pass; the server's own answers, and a file that
/// changed (read again, it would still be another version), do not.
fn classify(e: io::Error) -> Failure {
    if is_changed(&e) {
        return Failure::permanent(e);
    }
    match e.kind() {
        io::ErrorKind::TimedOut
        | io::ErrorKind::WouldBlock
        | io::ErrorKind::ConnectionRefused
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof => Failure::transient(e),
        _ => Failure::permanent(e),
    }
}

/// kXR_stat's text: `id size flags modtime`.
fn parse_stat(text: &str) -> io::Result<(u64, u64, i64)> {
    let mut f = text.trim_end_matches('\0').split_whitespace().skip(1);
    let bad = || io::Error::other(format!("unreadable XRootD stat '{text}'"));
    let size = f.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
    let flags = f.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
    let mtime = f.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
    Ok((size, flags, mtime))
}

/// kXR_dirlist with kXR_dstat: a name line, then its stat line, for each
/// entry (a leading `.` entry, and names quarry cannot carry, left out).
pub(super) fn parse_dirlist(text: &str) -> io::Result<Vec<Entry>> {
    let lines: Vec<&str> = text
        .trim_end_matches('\0')
        .split('\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut out = Vec::new();
    for pair in lines.chunks(2) {
        let [name, stat] = pair else {
            return Err(io::Error::other("an XRootD listing without stat lines"));
        };
        if *name == "." || *name == ".." || name.contains('?') {
            continue;
        }
        let (size, flags, mtime) = parse_stat(stat)?;
        let is_dir = flags & KXR_IS_DIR != 0;
        out.push(Entry {
            name: name.to_string(),
            is_dir,
            meta: (!is_dir).then_some(Meta {
                size,
                mtime_ns: mtime.saturating_mul(1_000_000_000),
                etag: None,
            }),
        });
    }
    Ok(out)
}

#[cfg(test)]
#[path = "xrootd_fake.rs"]
mod fake_server_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_and_stats_parse() {
        let text = ".\n0 0 0 0\nsub\n12 4096 19 1795806001\nf.root\n13 1234 16 1795806001\n\0";
        let e = parse_dirlist(text).unwrap();
        assert_eq!(e.len(), 2);
        assert!(e[0].is_dir && e[0].name == "sub");
        let m = e[1].meta.as_ref().unwrap();
        assert_eq!(
            (e[1].name.as_str(), m.size, m.mtime_ns),
            ("f.root", 1234, 1_795_806_001_000_000_000)
        );
        assert_eq!(parse_stat("5 100 16 7\0").unwrap(), (100, 16, 7));
        assert!(parse_stat("garbage").is_err());
    }
}
