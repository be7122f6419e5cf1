//! Root URLs: `http[s]://host[:port]/path/`, `s3://bucket/prefix/`,
//! `root://host[:port]//path/`. A root URL is parsed once, at configuration; a
//! tool's path that is a URL is accepted only when it lies beneath a configured
//! root's URL (same scheme, host, port or bucket, and path prefix), and a
//! file's URL is always built here from the root's URL and percent-encoded
//! components, so no tool argument can name another host, scheme or bucket.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
    S3,
    Root,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
            Scheme::S3 => "s3",
            Scheme::Root => "root",
        }
    }

    fn parse(s: &str) -> Option<Scheme> {
        match s.to_ascii_lowercase().as_str() {
            "http" => Some(Scheme::Http),
            "https" => Some(Scheme::Https),
            "s3" => Some(Scheme::S3),
            "root" | "roots" => Some(Scheme::Root),
            _ => None,
        }
    }
}

/// A root's URL, without credentials, query or fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootUrl {
    pub scheme: Scheme,
    /// `host[:port]` in lower case; the bucket for S3.
    pub authority: String,
    /// The folder's path: `/`-separated, percent-encoded as given, no trailing
    /// `/` (empty for the server's top); XRootD's absolute paths keep their `//`.
    pub path: String,
}

/// Whether `s` is written as a URL (`scheme://...`) rather than a local path.
pub fn looks_like_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    })
}

impl RootUrl {
    /// Parses a root URL; the error says what is wrong with it.
    pub fn parse(s: &str) -> Result<RootUrl, String> {
        let (scheme, rest) = s
            .split_once("://")
            .ok_or_else(|| format!("'{s}' is not a URL"))?;
        let scheme = Scheme::parse(scheme).ok_or_else(|| {
            format!("'{scheme}://' roots are not supported: use http(s)://, s3:// or root://")
        })?;
        if rest.contains(['?', '#']) {
            return Err("a root URL takes no query or fragment".into());
        }
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority.contains('@') {
            return Err(
                "a root URL must not carry credentials: give them in the config or the environment"
                    .into(),
            );
        }
        let valid_authority = !authority.is_empty()
            && authority
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._:[]".contains(&b));
        if !valid_authority {
            return Err(format!("'{authority}' is not a valid host"));
        }
        let path = path.trim_end_matches('/');
        if path.split('/').any(|c| c == ".." || c == ".") {
            return Err("a root URL's path must not contain '.' or '..'".into());
        }
        let path = if scheme == Scheme::Root {
            path.to_string()
        } else {
            squeeze_slashes(path)
        };
        Ok(RootUrl {
            scheme,
            authority: authority.to_ascii_lowercase(),
            path,
        })
    }

    /// `host:port`, with `default` when the URL names no port.
    pub fn authority_with_port(&self, default: u16) -> String {
        let has_port = match self.authority.rsplit_once(':') {
            Some((host, port)) => !host.ends_with(']') || !port.is_empty(),
            None => false,
        } && !self.authority.ends_with(']');
        if has_port {
            self.authority.clone()
        } else {
            format!("{}:{default}", self.authority)
        }
    }

    /// The URL of the file (or folder) `rel` beneath this root, each component
    /// percent-encoded.
    pub fn file_url(&self, rel: &str) -> String {
        let mut url = self.to_string();
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            url.push('/');
            url.push_str(&encode_component(part));
        }
        url
    }

    /// The path part of `file_url` (what an HTTP request names).
    pub fn file_path(&self, rel: &str) -> String {
        join_encoded(&self.path, rel)
    }

    /// The root-relative path (decoded) that `url` names, when `url` lies
    /// beneath this root: `None` when it names another scheme, host, port,
    /// bucket or folder; `Some(Err)` when it is beneath but malformed.
    pub fn rel_of(&self, url: &str) -> Option<Result<String, String>> {
        let other = RootUrl::parse(url).ok()?;
        if other.scheme != self.scheme || other.authority != self.authority {
            return None;
        }
        let (mine, theirs) = (squeeze_slashes(&self.path), squeeze_slashes(&other.path));
        let rest = theirs.strip_prefix(&mine)?;
        if !rest.is_empty() && !rest.starts_with('/') {
            return None; // `/data2` is not beneath `/data`
        }
        let mut parts = Vec::new();
        for part in rest.split('/').filter(|p| !p.is_empty()) {
            match decode_component(part) {
                Some(p) => parts.push(p),
                None => return Some(Err(format!("'{url}' is not a valid percent-encoded path"))),
            }
        }
        Some(Ok(parts.join("/")))
    }
}

impl fmt::Display for RootUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}{}",
            self.scheme.as_str(),
            self.authority,
            self.path
        )
    }
}

fn squeeze_slashes(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if !(c == '/' && out.ends_with('/')) {
            out.push(c);
        }
    }
    out
}

/// A path component percent-encoded: everything but RFC 3986's unreserved
/// characters, so a name can never add a `/`, `?`, `#` or `..` to a URL.
pub fn encode_component(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for b in part.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A percent-encoded component decoded; `None` when it is malformed, not
/// UTF-8, or decodes to something no file name holds (`/`, NUL).
pub fn decode_component(part: &str) -> Option<String> {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let s = String::from_utf8(out).ok()?;
    (!s.contains(['/', '\0'])).then_some(s)
}

/// `prefix` followed by each name of the root-relative `rel`, percent-encoded
/// ("/" for an empty result): a request path no name can step out of.
pub fn join_encoded(prefix: &str, rel: &str) -> String {
    let mut path = prefix.to_string();
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        path.push('/');
        path.push_str(&encode_component(part));
    }
    if path.is_empty() {
        path.push('/');
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_urls_of_each_protocol_parse() {
        let u = RootUrl::parse("https://Data.Example.org:8443/store/run1/").unwrap();
        assert_eq!(u.scheme, Scheme::Https);
        assert_eq!(u.to_string(), "https://data.example.org:8443/store/run1");
        assert_eq!(
            u.file_url("a b/f.root"),
            "https://data.example.org:8443/store/run1/a%20b/f.root"
        );
        let s3 = RootUrl::parse("s3://bucket/prefix/").unwrap();
        assert_eq!(
            (s3.scheme, s3.authority.as_str(), s3.path.as_str()),
            (Scheme::S3, "bucket", "/prefix")
        );
        let x = RootUrl::parse("root://eos.cern.ch//eos/data/").unwrap();
        assert_eq!(x.to_string(), "root://eos.cern.ch//eos/data");
        assert_eq!(x.file_url("f.root"), "root://eos.cern.ch//eos/data/f.root");
        let top = RootUrl::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(top.file_path(""), "/");
        assert_eq!(top.file_url("x.md"), "http://127.0.0.1:8080/x.md");
    }

    #[test]
    fn bad_root_urls_are_refused_with_a_reason() {
        for bad in [
            "ftp://host/x",
            "https://user:secret@host/x",
            "https://host/x?y=1",
            "https:///x",
            "https://host/a/../b",
            "https://ho st/x",
        ] {
            assert!(RootUrl::parse(bad).is_err(), "{bad}");
        }
        assert!(
            looks_like_url("s3://b/p") && !looks_like_url("/data/x") && !looks_like_url("://x")
        );
    }

    #[test]
    fn only_urls_beneath_the_root_name_its_files() {
        let u = RootUrl::parse("https://host:8443/data/").unwrap();
        assert_eq!(
            u.rel_of("https://host:8443/data/sub/f%20x.root"),
            Some(Ok("sub/f x.root".into()))
        );
        assert_eq!(u.rel_of("HTTPS://HOST:8443/data"), Some(Ok(String::new())));
        for other in [
            "http://host:8443/data/f.root",
            "https://host/data/f.root",
            "https://host:8444/data/f.root",
            "https://evil:8443/data/f.root",
            "https://host:8443/data2/f.root",
            "https://host:8443/other/f.root",
            "s3://host:8443/data/f.root",
        ] {
            assert_eq!(u.rel_of(other), None, "{other}");
        }
        // `..` in a tool's URL is refused by the parser, before any comparison.
        assert_eq!(u.rel_of("https://host:8443/data/../etc/passwd"), None);
        // An encoded slash or NUL cannot smuggle a separator into a name.
        assert!(matches!(
            u.rel_of("https://host:8443/data/a%2Fb"),
            Some(Err(_))
        ));
        let x = RootUrl::parse("root://h//eos/d/").unwrap();
        assert_eq!(
            x.rel_of("root://h//eos/d/f.root"),
            Some(Ok("f.root".into()))
        );
        assert_eq!(x.rel_of("root://h/eos/d/f.root"), Some(Ok("f.root".into())));
        let b = RootUrl::parse("s3://bucket/p/").unwrap();
        assert_eq!(b.rel_of("s3://other/p/f.root"), None);
    }

    #[test]
    fn components_are_encoded_so_names_cannot_leave_their_folder() {
        assert_eq!(encode_component("../x?y#z"), "..%2Fx%3Fy%23z");
        assert_eq!(decode_component("a%20b"), Some("a b".into()));
        assert_eq!(decode_component("%zz"), None);
        assert_eq!(decode_component("%00"), None);
    }
}
