//! Folder listings by WebDAV (`PROPFIND` with `Depth: 1`), as XRootD's HTTP
//! plugin, dCache, EOS and Apache's mod_dav answer them: one request gives
//! every name of a folder with its size, time and whether it is a folder.
//! Servers whose folders give no HTML listing (a WebDAV-only endpoint) are
//! listed this way.
//!
//! The answer is XML whose namespace prefixes vary from server to server
//! (`D:`, `d:`, `lp1:`), so elements are matched by their local name; only the
//! four properties quarry needs are read, and anything else is passed over.
//! The request has no body, which asks for every property.

use super::http::unescape_entities;
use super::url::decode_component;
use super::{Entry, Meta};

/// The entries of a `PROPFIND` answer for the folder at `folder_path` (the
/// URL's path, percent-encoded as sent): the folder's own response is left
/// out, and so is any href that is not a direct child of it.
pub fn parse_propfind(xml: &str, folder_path: &str) -> Vec<Entry> {
    let Some(folder) = names(folder_path) else {
        return Vec::new();
    };
    let mut out: Vec<Entry> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for response in elements(xml, "response") {
        let Some(href) = elements(response, "href").next() else {
            continue;
        };
        let Some(name) = child_of(strip_origin(&unescape_entities(href.trim())), &folder) else {
            continue;
        };
        if !seen.insert(name.clone()) {
            continue;
        }
        let is_dir = elements(response, "resourcetype").any(|t| t.contains("collection"))
            || elements(response, "iscollection").any(|v| v.trim() == "1");
        let size = elements(response, "getcontentlength")
            .next()
            .and_then(|v| v.trim().parse::<u64>().ok());
        let mtime_ns = elements(response, "getlastmodified")
            .next()
            .map_or(0, super::http::http_date_ns);
        out.push(Entry {
            name,
            is_dir,
            meta: match (is_dir, size) {
                (false, Some(size)) => Some(Meta {
                    size,
                    mtime_ns,
                    etag: None,
                }),
                _ => None,
            },
        });
    }
    out
}

/// The inner text of every element named `local` (any namespace prefix) in
/// `xml`, outermost first; a self-closing element gives "".
fn elements<'a>(xml: &'a str, local: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    let mut rest = xml;
    std::iter::from_fn(move || {
        loop {
            let open = rest.find('<')?;
            let after = &rest[open + 1..];
            let name_end = after.find(|c: char| c.is_whitespace() || c == '>' || c == '/')?;
            let name = &after[..name_end];
            let tag_end = after.find('>')?;
            let tag = &after[..tag_end];
            rest = &after[tag_end + 1..];
            if name.starts_with(['/', '?', '!']) || local_name(name) != local {
                continue;
            }
            if tag.ends_with('/') {
                return Some("");
            }
            let close = format!("</{name}>");
            let end = rest.find(&close)?;
            let inner = &rest[..end];
            rest = &rest[end + close.len()..];
            return Some(inner);
        }
    })
}

fn local_name(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, local)| local)
}

/// An href given as a full URL, as its path.
fn strip_origin(href: &str) -> &str {
    match href.split_once("://") {
        Some((_, after)) => after.find('/').map_or("/", |i| &after[i..]),
        None => href,
    }
}

/// The name of the direct child of `folder` (its names, as `names` gives
/// them) that the percent-encoded URL path `path` is: the folder's names and
/// one more; `None` for any other path.
pub(super) fn child_of(path: &str, folder: &[String]) -> Option<String> {
    let mut path = names(path)?;
    if path.len() != folder.len() + 1 || path[..folder.len()] != folder[..] {
        return None;
    }
    path.pop()
}

/// The names of a percent-encoded URL path, decoded (runs of `/` are one:
/// XRootD writes `/data//f.root`); `None` when one is malformed.
pub(super) fn names(path: &str) -> Option<Vec<String>> {
    path.split('/')
        .filter(|p| !p.is_empty())
        .map(decode_component)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// XRootD 5.5's answer (its HTTP plugin), trimmed: the folder itself, a
    /// subfolder, a file written with a doubled slash.
    const XRDHTTP: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<D:multistatus xmlns:D="DAV:" xmlns:ns1="http://apache.org/dav/props/" xmlns:ns0="DAV:">
<D:response xmlns:lp1="DAV:" xmlns:lp2="http://apache.org/dav/props/" xmlns:lp3="LCGDM:">
<D:href>/data/run%201/</D:href>
<D:propstat><D:prop>
<lp1:getcontentlength>4096</lp1:getcontentlength>
<lp1:getlastmodified>Sat, 28 Nov 2026 10:14:31 GMT</lp1:getlastmodified>
<lp1:resourcetype><D:collection/></lp1:resourcetype>
<lp1:iscollection>1</lp1:iscollection>
</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>
</D:response>
<D:response xmlns:lp1="DAV:">
<D:href>/data/run%201//hists</D:href>
<D:propstat><D:prop>
<lp1:getcontentlength>4096</lp1:getcontentlength>
<lp1:iscollection>1</lp1:iscollection>
</D:prop></D:propstat>
</D:response>
<D:response xmlns:lp1="DAV:">
<D:href>/data/run%201//f&amp;g.root</D:href>
<D:propstat><D:prop>
<lp1:getcontentlength>5366</lp1:getcontentlength>
<lp1:getlastmodified>Sat, 28 Nov 2026 10:14:31 GMT</lp1:getlastmodified>
<lp1:iscollection>0</lp1:iscollection>
</D:prop></D:propstat>
</D:response>
</D:multistatus>"#;

    #[test]
    fn an_xrootd_answer_gives_the_folders_children_with_sizes_and_times() {
        let entries = parse_propfind(XRDHTTP, "/data/run%201/");
        let names: Vec<(&str, bool)> = entries
            .iter()
            .map(|e| (e.name.as_str(), e.is_dir))
            .collect();
        assert_eq!(names, [("hists", true), ("f&g.root", false)]);
        let meta = entries[1].meta.as_ref().unwrap();
        assert_eq!(meta.size, 5366);
        // 2026-11-28T10:14:31Z, by hand: 1,795,860,871 s after the epoch (Python's datetime).
        assert_eq!(meta.mtime_ns, 1_795_860_871_000_000_000);
        assert!(entries[0].meta.is_none());
    }

    #[test]
    fn apache_style_answers_with_full_urls_and_lower_case_prefixes_are_read() {
        let xml = r#"<d:multistatus xmlns:d="DAV:"><d:response><d:href>https://h.example/dav/a/</d:href>
<d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype></d:prop></d:propstat></d:response>
<d:response><d:href>https://h.example/dav/a/x.h5</d:href><d:propstat><d:prop><d:resourcetype/>
<d:getcontentlength>12</d:getcontentlength></d:prop></d:propstat></d:response>
<d:response><d:href>/elsewhere/y.h5</d:href></d:response></d:multistatus>"#;
        let entries = parse_propfind(xml, "/dav/a/");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].name, "x.h5");
        assert!(!entries[0].is_dir);
        assert_eq!(entries[0].meta.as_ref().unwrap().size, 12);
    }

    #[test]
    fn garbage_gives_no_entries() {
        for text in [
            "",
            "<",
            "<D:response>",
            "<a:response><a:href>",
            "not xml at all",
        ] {
            assert!(parse_propfind(text, "/").is_empty(), "{text}");
        }
    }
}
