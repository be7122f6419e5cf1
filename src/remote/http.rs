//! HTTP(S) storage through `ureq`: `HEAD` for a file's version, `GET` with a
//! `Range` header for bytes (a vectored read is its ranges in parallel over the
//! agent's pooled connections), and folder listings as nginx's `autoindex`
//! gives them (JSON, or an HTML index page: nginx's default, Apache's,
//! XRootD's HTTP plugin; `html_index`), else by WebDAV (`webdav`).
//! TLS is verified against the bundled Mozilla roots, plus a private CA when
//! configured. Redirects are not followed: a redirect could lead to a host
//! that is not the configured root's. Names under `localhost` are loopback
//! (`localhost`).

use std::io::{self, Read};
use std::ops::Range;
use std::sync::Arc;

use super::retry::{Failure, Policy, with_retries};
use super::s3::{self, Signer, region_from_env};
use super::url::{RootUrl, Scheme};
use super::{Entry, Meta, Protocol, Settings, Stop, cancelled, changed};

/// Bytes of an answer read between two looks at whether the call stopped.
const STOP_CHECK_BYTES: usize = 256 << 10;

/// Largest folder listing read, in bytes.
const MAX_LISTING_BYTES: u64 = 64 << 20;

/// What an S3 root adds to plain HTTP.
struct S3Root {
    /// The bucket's key prefix (`prefix/`, or empty).
    key_prefix: String,
    /// The request path of the bucket itself: `/bucket` path-style, empty
    /// virtual-hosted (the bucket is in the host name).
    bucket_path: String,
    /// Set when credentials are.
    signer: Option<Signer>,
}

pub struct Http {
    /// `scheme://host[:port]` of the server requests go to.
    base: String,
    /// The path every file's path starts with (the root's folder; for S3,
    /// `/bucket/prefix`).
    prefix: String,
    /// Set for an S3 root.
    s3: Option<S3Root>,
    agent: ureq::Agent,
    /// `Authorization: Bearer` for https roots (WLCG token discovery).
    token: Option<String>,
    retry: Policy,
    parallel: usize,
}

impl Http {
    pub fn new(url: RootUrl, settings: &Settings) -> Result<Http, String> {
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(ca) = &settings.ca_file {
            let pem = std::fs::read(ca)
                .map_err(|e| format!("cannot read the CA file {}: {e}", ca.display()))?;
            let certs: Vec<_> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(format!("no certificate in the CA file {}", ca.display()));
            }
            tls = tls.root_certs(ureq::tls::RootCerts::Specific(Arc::new(certs)));
        }
        let agent = super::localhost::agent(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .timeout_connect(Some(settings.connect_timeout))
                .timeout_global(Some(settings.request_timeout))
                .max_idle_connections_per_host(settings.parallel.max(1) * 2)
                // WebDAV's PROPFIND lists folders of servers without an
                // index page quarry reads (webdav.rs).
                .allow_non_standard_methods(true)
                .tls_config(tls.build())
                .build(),
        );
        let token = (url.scheme == Scheme::Https).then(bearer_token).flatten();
        let (base, prefix, s3) = match url.scheme {
            Scheme::S3 => {
                let region = region_from_env(settings.s3_region.as_deref());
                let at = s3::locate_bucket(
                    &url.authority,
                    settings.s3_endpoint.as_deref(),
                    settings.s3_addressing,
                    &region,
                )?;
                let key_prefix = match url.path.trim_start_matches('/') {
                    "" => String::new(),
                    p => format!("{p}/"),
                };
                let prefix = format!("{}{}", at.bucket_path, url.path);
                (
                    at.base,
                    prefix,
                    Some(S3Root {
                        key_prefix,
                        bucket_path: at.bucket_path,
                        signer: Signer::from_env(region),
                    }),
                )
            }
            _ => (
                format!("{}://{}", url.scheme.as_str(), url.authority),
                url.path.clone(),
                None,
            ),
        };
        Ok(Http {
            base,
            prefix,
            s3,
            agent,
            token,
            retry: settings.retry.clone(),
            parallel: settings.parallel.max(1),
        })
    }

    fn full(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The request path of `rel` (percent-encoded).
    fn path_of(&self, rel: &str) -> String {
        super::url::join_encoded(&self.prefix, rel)
    }

    /// A request to `path` with `query` pairs and a `Range`, signed for S3
    /// when there are credentials, with the bearer token for https.
    fn request(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        range: Option<&str>,
    ) -> ureq::RequestBuilder<ureq::typestate::WithoutBody> {
        let mut url = self.full(path);
        for (i, (k, v)) in query.iter().enumerate() {
            url.push(if i == 0 { '?' } else { '&' });
            url.push_str(&format!("{}={}", s3::encode(k, true), s3::encode(v, true)));
        }
        let mut r = match method {
            "HEAD" => self.agent.head(&url),
            _ => self.agent.get(&url),
        };
        // Written as spelled here: XRootD's HTTP plugin (5.5) reads header
        // names case-sensitively, and would answer a `range:` with the whole
        // file and take no `authorization:`.
        if let Some(range) = range {
            r = r.header_raw("Range", range.as_bytes());
        }
        if let Some(token) = &self.token {
            r = r.header_raw("Authorization", format!("Bearer {token}").as_bytes());
        }
        if let Some(S3Root {
            signer: Some(signer),
            ..
        }) = &self.s3
        {
            let host = self.base.split_once("://").map_or("", |(_, h)| h);
            let signed: Vec<(&str, &str)> = range.map(|r| ("range", r)).into_iter().collect();
            for (k, v) in signer.headers((method, path, query), host, &signed, &s3::amz_date_now())
            {
                r = r.header(k.as_str(), v.as_str());
            }
        }
        r
    }

    /// Every object below `rel` (ListObjectsV2, 1000 keys a request).
    fn list_objects(&self, rel: &str) -> io::Result<Vec<(String, Meta)>> {
        let Some(s3) = &self.s3 else {
            return Ok(Vec::new());
        };
        let bucket_path = match s3.bucket_path.as_str() {
            "" => "/".to_string(),
            p => p.to_string(),
        };
        let mut prefix = s3.key_prefix.clone();
        if !rel.is_empty() {
            prefix.push_str(rel);
            prefix.push('/');
        }
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![
                ("list-type".to_string(), "2".to_string()),
                ("prefix".to_string(), prefix.clone()),
            ];
            if let Some(t) = &token {
                query.push(("continuation-token".to_string(), t.clone()));
            }
            let page = with_retries(&self.retry, &|| false, || {
                let mut reply = self
                    .request("GET", &bucket_path, &query, None)
                    .call()
                    .map_err(failure)?;
                let status = reply.status().as_u16();
                if status != 200 {
                    return Err(status_failure(status, &self.full(&bucket_path)));
                }
                listing_text(&mut reply)
            })?;
            let (objects, next) = s3::parse_list_page(&page)?;
            for (key, meta) in objects {
                let Some(rest) = key.strip_prefix(&prefix) else {
                    continue;
                };
                let rest = if rel.is_empty() {
                    rest.to_string()
                } else {
                    format!("{rel}/{rest}")
                };
                // Folder markers and names no path can carry are left out.
                let valid = !rest.ends_with('/')
                    && rest
                        .split('/')
                        .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains('\0'));
                if valid {
                    out.push((rest, meta));
                }
            }
            match next {
                Some(t) => token = Some(t),
                None => return Ok(out),
            }
        }
    }

    fn read_range(
        &self,
        rel: &str,
        version: &Meta,
        range: &Range<u64>,
        stop: &Stop<'_>,
    ) -> Result<Vec<u8>, Failure> {
        let path = self.path_of(rel);
        let len = (range.end - range.start) as usize;
        let bytes = format!("bytes={}-{}", range.start, range.end - 1);
        let mut reply = self
            .request("GET", &path, &[], Some(&bytes))
            .call()
            .map_err(failure)?;
        let status = reply.status().as_u16();
        let url = || self.full(&path);
        match status {
            206 => {
                let total = reply
                    .headers()
                    .get("content-range")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.rsplit_once('/'))
                    .and_then(|(_, t)| t.trim().parse::<u64>().ok());
                if total.is_some_and(|t| t != version.size) {
                    return Err(Failure::permanent(changed(&url())));
                }
            }
            // A server that ignores `Range` sends the whole file: usable only
            // when the whole file was asked for.
            200 if range.start == 0 && range.end == version.size => {}
            200 => {
                return Err(Failure::permanent(io::Error::other(format!(
                    "{} does not answer range requests (HTTP 200 to a Range request)",
                    url()
                ))));
            }
            404 | 410 | 416 => return Err(Failure::permanent(changed(&url()))),
            _ => return Err(status_failure(status, &url())),
        }
        let etag = header(&reply, "etag");
        if let (Some(now), Some(then)) = (&etag, &version.etag)
            && now != then
        {
            return Err(Failure::permanent(changed(&url())));
        }
        let mut buf = vec![0u8; len];
        let mut body = reply.body_mut().as_reader();
        // In pieces, so that a cancelled call stops a long answer part-way.
        for piece in buf.chunks_mut(STOP_CHECK_BYTES) {
            if stop() {
                return Err(Failure::permanent(cancelled()));
            }
            body.read_exact(piece).map_err(|e| {
                // A body cut short: the server stopped or the connection broke.
                Failure::transient(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    format!("{}: the response was cut short ({e})", url()),
                ))
            })?;
        }
        Ok(buf)
    }

    fn stat_once(&self, rel: &str) -> Result<Meta, Failure> {
        let path = self.path_of(rel);
        let reply = self
            .request("HEAD", &path, &[], None)
            .call()
            .map_err(failure)?;
        let status = reply.status().as_u16();
        match status {
            200 => {}
            // nginx and Apache redirect a folder named without its slash.
            301 | 302 | 307 | 308
                if header(&reply, "location").is_some_and(|l| l.ends_with('/')) =>
            {
                return Err(Failure::permanent(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    format!("{} is a folder", self.full(&path)),
                )));
            }
            _ => return Err(status_failure(status, &self.full(&path))),
        }
        let size = header(&reply, "content-length")
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| {
                Failure::permanent(io::Error::other(format!(
                    "{} has no Content-Length",
                    self.full(&path)
                )))
            })?;
        Ok(Meta {
            size,
            mtime_ns: header(&reply, "last-modified").map_or(0, |d| http_date_ns(&d)),
            etag: header(&reply, "etag"),
        })
    }

    fn list_once(&self, rel: &str) -> Result<Vec<Entry>, Failure> {
        let mut path = self.path_of(rel);
        if !path.ends_with('/') {
            path.push('/');
        }
        let mut reply = self
            .request("GET", &path, &[], None)
            .header("Accept", "application/json, text/html")
            .call()
            .map_err(failure)?;
        let status = reply.status().as_u16();
        if status != 200 {
            // No index pages here (XRootD's HTTP plugin answers 503 when
            // `http.listingdeny` is set, Apache 403 without `Indexes`), but
            // the folder may be listed by WebDAV; the page's status is the
            // error when it is not.
            return match self.propfind(&path) {
                Ok(Some(entries)) => Ok(entries),
                _ => Err(status_failure(status, &self.full(&path))),
            };
        }
        let text = listing_text(&mut reply)?;
        if text.trim_start().starts_with('[') {
            return parse_json_index(&text).map_err(|why| {
                Failure::permanent(io::Error::other(format!(
                    "{}: not a folder listing ({why})",
                    self.full(&path)
                )))
            });
        }
        let entries = super::html_index::parse_html_index(&text, &path);
        if !entries.is_empty() {
            return Ok(entries);
        }
        // No index page (a WebDAV-only endpoint), or one linking nothing:
        // asked by WebDAV, where the server speaks it.
        Ok(self.propfind(&path)?.unwrap_or_default())
    }

    /// The folder at `path` listed by WebDAV (`PROPFIND`, `Depth: 1`), or
    /// `None` when the server does not speak it.
    fn propfind(&self, path: &str) -> Result<Option<Vec<Entry>>, Failure> {
        let request = ureq::http::Request::builder()
            .method("PROPFIND")
            .uri(self.full(path))
            .header("Content-Type", "application/xml; charset=utf-8");
        // As spelled (see `request`): XrdHttp takes a `depth:` for no depth.
        let mut request = ureq_proto::client::header_raw(request, "Depth", b"1");
        if let Some(token) = &self.token {
            let value = format!("Bearer {token}");
            request = ureq_proto::client::header_raw(request, "Authorization", value.as_bytes());
        }
        // No body, which asks for every property (RFC 4918, 9.1): XrdHttp
        // does not see ureq's `content-length:` either, would leave a body
        // unread and take it for the connection's next request.
        let request = request
            .body(())
            .map_err(|e| Failure::permanent(io::Error::other(e)))?;
        let mut reply = self.agent.run(request).map_err(failure)?;
        match reply.status().as_u16() {
            207 => {}
            400 | 403 | 404 | 405 | 501 => return Ok(None),
            status => return Err(status_failure(status, &self.full(path))),
        }
        let text = listing_text(&mut reply)?;
        Ok(Some(super::webdav::parse_propfind(&text, path)))
    }
}

impl Protocol for Http {
    fn stat(&self, rel: &str) -> io::Result<Meta> {
        with_retries(&self.retry, &|| false, || self.stat_once(rel))
    }

    fn read_ranges(
        &self,
        rel: &str,
        version: &Meta,
        ranges: &[Range<u64>],
        stop: &Stop<'_>,
    ) -> io::Result<Vec<Vec<u8>>> {
        let one = |r: &Range<u64>| {
            if stop() {
                return Err(cancelled());
            }
            with_retries(&self.retry, stop, || self.read_range(rel, version, r, stop))
        };
        if ranges.len() <= 1 {
            return ranges.iter().map(one).collect();
        }
        // Ranges dealt out to `parallel` threads, each over its own pooled
        // connection: the round trips overlap.
        let workers = self.parallel.min(ranges.len());
        let mut out: Vec<Option<io::Result<Vec<u8>>>> = (0..ranges.len()).map(|_| None).collect();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    scope.spawn(move || {
                        (w..ranges.len())
                            .step_by(workers)
                            .map(|i| (i, one(&ranges[i])))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for h in handles {
                for (i, got) in h.join().expect("range reader") {
                    out[i] = Some(got);
                }
            }
        });
        out.into_iter()
            .map(|r| r.expect("every range read"))
            .collect()
    }

    fn list_dir(&self, rel: &str) -> io::Result<Vec<Entry>> {
        with_retries(&self.retry, &|| false, || self.list_once(rel))
    }

    fn list_all(&self, rel: &str) -> Option<io::Result<Vec<(String, Meta)>>> {
        self.s3.is_some().then(|| self.list_objects(rel))
    }

    fn lists_etags(&self) -> bool {
        self.s3.is_some()
    }
}

fn header(reply: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    reply
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// A transport error: a timeout, refused or broken connection may pass.
fn failure(e: ureq::Error) -> Failure {
    match e {
        ureq::Error::Timeout(t) => Failure::transient(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("timed out ({t})"),
        )),
        ureq::Error::Io(e) => Failure::transient(e),
        ureq::Error::ConnectionFailed => Failure::transient(io::Error::new(
            io::ErrorKind::ConnectionRefused,
            "the connection failed",
        )),
        ureq::Error::Protocol(e) => Failure::transient(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            format!("bad HTTP from the server: {e}"),
        )),
        other => Failure::permanent(io::Error::other(other.to_string())),
    }
}

/// An HTTP status as a failure: server errors and 429 may pass.
fn status_failure(status: u16, url: &str) -> Failure {
    let kind = match status {
        404 | 410 => io::ErrorKind::NotFound,
        401 | 403 => io::ErrorKind::PermissionDenied,
        _ => io::ErrorKind::Other,
    };
    let error = io::Error::new(kind, format!("{url}: HTTP {status}"));
    if status >= 500 || status == 429 || status == 408 {
        Failure::transient(error)
    } else {
        Failure::permanent(error)
    }
}

/// An HTTP date (`Fri, 27 Nov 2026 19:00:00 GMT`) in ns since the epoch; 0
/// when it cannot be read.
pub(super) fn http_date_ns(date: &str) -> i64 {
    chrono::DateTime::parse_from_rfc2822(date.trim())
        .map_or(0, |d| d.timestamp().saturating_mul(1_000_000_000))
}

#[derive(serde::Deserialize)]
struct JsonEntry {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    mtime: Option<String>,
    size: Option<u64>,
}

/// nginx's `autoindex_format json`: `[{"name", "type", "mtime", "size"}]`.
pub(super) fn parse_json_index(text: &str) -> Result<Vec<Entry>, String> {
    let entries: Vec<JsonEntry> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(entries
        .into_iter()
        .filter(|e| e.kind == "file" || e.kind == "directory")
        .map(|e| Entry {
            is_dir: e.kind == "directory",
            meta: (e.kind == "file").then(|| Meta {
                size: e.size.unwrap_or(0),
                mtime_ns: e.mtime.as_deref().map_or(0, http_date_ns),
                etag: None,
            }),
            name: e.name,
        })
        .collect())
}

/// A listing's body as text, refused past `MAX_LISTING_BYTES`.
fn listing_text(reply: &mut ureq::http::Response<ureq::Body>) -> Result<String, Failure> {
    reply
        .body_mut()
        .with_config()
        .limit(MAX_LISTING_BYTES)
        .read_to_string()
        .map_err(failure)
}

/// HTML's and XML's entities for the characters markup escapes; `&amp;`
/// last, so that an escaped entity (`&amp;lt;`) stays as written.
pub(super) fn unescape_entities(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// A bearer token by WLCG token discovery: `BEARER_TOKEN`, the file
/// `BEARER_TOKEN_FILE` names, or `$XDG_RUNTIME_DIR/bt_u<uid>`.
fn bearer_token() -> Option<String> {
    let from_file = |p: &std::path::Path| std::fs::read_to_string(p).ok();
    let token = std::env::var("BEARER_TOKEN")
        .ok()
        .or_else(|| std::env::var_os("BEARER_TOKEN_FILE").and_then(|p| from_file(p.as_ref())))
        .or_else(|| {
            let dir = std::env::var_os("XDG_RUNTIME_DIR")?;
            // SAFETY: getuid has no preconditions.
            let uid = unsafe { libc::getuid() };
            from_file(&std::path::Path::new(&dir).join(format!("bt_u{uid}")))
        })?;
    let token = token.trim().to_string();
    // A token is one header value: anything else is not sent.
    (!token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic())).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_json_listings_give_names_sizes_and_times() {
        let text = r#"[
{ "name":"sub", "type":"directory", "mtime":"Fri, 27 Nov 2026 19:00:00 GMT" },
{ "name":"a b.root", "type":"file", "mtime":"Fri, 27 Nov 2026 19:00:01 GMT", "size":1234 },
{ "name":"sock", "type":"other", "mtime":"Fri, 27 Nov 2026 19:00:01 GMT" }
]"#;
        let e = parse_json_index(text).unwrap();
        assert_eq!(e.len(), 2);
        assert!(e[0].is_dir && e[0].name == "sub");
        let m = e[1].meta.as_ref().unwrap();
        assert_eq!((e[1].name.as_str(), m.size), ("a b.root", 1234));
        // 2026-11-27T19:00:01Z, by `date -u -d '2026-11-27 19:00:01' +%s`.
        assert_eq!(m.mtime_ns, 1_795_806_001 * 1_000_000_000);
    }
}
