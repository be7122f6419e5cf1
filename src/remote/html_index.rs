//! Folder listings as HTML index pages: nginx's and Apache's (relative links,
//! a folder's ending in `/`), and XRootD's HTTP plugin (XrdHttp), whose page
//! is a table linking every child by its absolute path (`/data//f.root`, a
//! folder without its `/`) with the child's mode, size and time in the cells
//! of its row. Those cells are read where a row has them, so XrdHttp's
//! listing gives sizes and times in one request: its `HEAD` answers carry no
//! time, and its `PROPFIND` reads `Depth` only when spelled with capitals,
//! which an HTTP/1 client that writes header names in lower case (as the
//! standard allows) cannot send.

use super::http::{http_date_ns, unescape_entities};
use super::url::decode_component;
use super::webdav::{child_of, names};
use super::{Entry, Meta};

/// The children an index page for the folder at `folder_path` (the URL's
/// path, percent-encoded as sent) links: relative links to a name in it
/// (`name`, `name/`), and absolute ones to a direct child of it. Sorting
/// links, parent links and links to other folders or hosts are left out.
pub fn parse_html_index(text: &str, folder_path: &str) -> Vec<Entry> {
    let folder = names(folder_path);
    let mut out: Vec<Entry> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut pos = 0;
    while let Some(found) = text[pos..].find("href=\"") {
        let at = pos + found;
        // The row this link is in, when one began since the last link (so
        // each byte of the page is looked at a bounded number of times).
        let row = text[pos..at].rfind("<tr").map(|tr| &text[pos + tr..at]);
        pos = at + "href=\"".len();
        let Some(target) = text[pos..].split('"').next() else {
            break;
        };
        let Some((name, slash)) = child_name(target, folder.as_deref()) else {
            continue;
        };
        if name.is_empty() || !seen.insert(name.clone()) {
            continue;
        }
        let row = row.map(Row::read).unwrap_or_default();
        let is_dir = slash || row.mode.is_some_and(|m| m.starts_with('d'));
        let meta = match (is_dir, row.size) {
            (false, Some(size)) => Some(Meta {
                size,
                mtime_ns: row.datetime.map_or(0, http_date_ns),
                etag: None,
            }),
            _ => None,
        };
        out.push(Entry { name, is_dir, meta });
    }
    out
}

/// The child a link names, decoded, and whether it ended in `/`; `None` for a
/// link to anything but a child of the folder.
fn child_name(target: &str, folder: Option<&[String]>) -> Option<(String, bool)> {
    if target.is_empty() || target.starts_with(['?', '#', '.']) || target.contains('?') {
        return None;
    }
    let target = unescape_entities(target);
    let slash = target.ends_with('/');
    if target.starts_with("//") {
        // Scheme-relative: another host.
        return None;
    }
    if target.starts_with('/') {
        // Absolute: a direct child of the folder.
        return Some((child_of(&target, folder?)?, slash));
    }
    if target.contains("://") {
        return None;
    }
    let name = target.strip_suffix('/').unwrap_or(&target);
    if name.contains('/') {
        return None;
    }
    Some((decode_component(name)?, slash))
}

/// What a listing's table row says of its link (XrdHttp's cells).
#[derive(Default)]
struct Row<'a> {
    mode: Option<&'a str>,
    size: Option<u64>,
    datetime: Option<&'a str>,
}

impl<'a> Row<'a> {
    /// The cells before the link in `row` (from its `<tr` to the link).
    fn read(row: &'a str) -> Row<'a> {
        Row {
            mode: cell(row, "mode"),
            size: cell(row, "size").and_then(|s| s.trim().parse().ok()),
            datetime: cell(row, "datetime"),
        }
    }
}

/// The text of the first cell of class `class` in `row`.
fn cell<'a>(row: &'a str, class: &str) -> Option<&'a str> {
    let open = format!("class=\"{class}\">");
    let start = row.find(&open)? + open.len();
    let len = row[start..].find('<')?;
    Some(&row[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_and_apache_pages_give_their_relative_links() {
        let text = r#"<html><body><h1>Index of /data/</h1><hr><pre><a href="../">../</a>
<a href="root/">root/</a>   27-Nov-2026 19:00    -
<a href="a%20b.md">a b.md</a>   27-Nov-2026 19:00   12
<a href="?C=M;O=A">Last modified</a><a href="/icons/x.gif">x</a>
<a href="https://elsewhere/x.root">x</a><a href="Q&amp;A.txt">Q&amp;A.txt</a>
<a href="sub/deeper.root">no</a>
</pre></body></html>"#;
        let e = parse_html_index(text, "/data/");
        let names: Vec<(&str, bool)> = e.iter().map(|e| (e.name.as_str(), e.is_dir)).collect();
        assert_eq!(
            names,
            [("root", true), ("a b.md", false), ("Q&A.txt", false)]
        );
        assert!(e.iter().all(|e| e.meta.is_none()));
    }

    /// XRootD 5.5's page (its HTTP plugin) for `/srv/run 1/`, trimmed: a file,
    /// a folder (mode `d…`, linked without its slash), a stylesheet link.
    const XRDHTTP: &str = r#"<html><head>
<link rel="stylesheet" type="text/css" href="/static/css/xrdhttp.css"/></head><body>
<h1>Listing of: /srv/run 1/</h1><div id="header"><table id="ft">
<thead><tr><th class="mode">Mode</th><th class="flags">Flags</th><th class="size">Size</th><th class="datetime">Modified</th><th class="name">Name</th></tr></thead>
<tr><td class="mode">---rw-</td><td class="mode">48</td><td class="size">217945</td><td class="datetime">Sat, 28 Nov 2026 11:14:45 GMT</td><td class="name"><a href="/srv/run%201//HZZ&amp;co.root">HZZ&amp;co.root</a></td></tr><tr><td class="mode">d--rwx</td><td class="mode">51</td><td class="size">4096</td><td class="datetime">Sat, 28 Nov 2026 11:14:45 GMT</td><td class="name"><a href="/srv/run%201//sub">sub</a></td></tr><tr><td class="mode">---rw-</td><td class="mode">48</td><td class="size">12</td><td class="datetime">Sat, 28 Nov 2026 11:14:46 GMT</td><td class="name"><a href="/srv/other/x.root">x.root</a></td></tr>
</table></div></body></html>"#;

    #[test]
    fn xrdhttp_pages_give_children_with_sizes_and_times() {
        let e = parse_html_index(XRDHTTP, "/srv/run%201/");
        assert_eq!(e.len(), 2, "the file and the folder, nothing else");
        assert_eq!((e[0].name.as_str(), e[0].is_dir), ("HZZ&co.root", false));
        let meta = e[0].meta.as_ref().unwrap();
        assert_eq!(meta.size, 217_945);
        // 2026-11-28T11:14:45Z, by `date -u -d '2026-11-28 11:14:45' +%s`.
        assert_eq!(meta.mtime_ns, 1_795_864_485 * 1_000_000_000);
        assert_eq!((e[1].name.as_str(), e[1].is_dir), ("sub", true));
        assert!(e[1].meta.is_none());
    }

    #[test]
    fn absolute_links_into_other_folders_or_hosts_are_left_out() {
        let text = r#"<a href="/data/../etc/passwd">a</a><a href="//evil/data/x.root">b</a>
<a href="/data/sub/y.root">c</a><a href="/data/z.root">d</a>"#;
        let e = parse_html_index(text, "/data/");
        let names: Vec<&str> = e.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["z.root"]);
    }

    /// A page of 100,000 links in one table row (a big folder, or a hostile
    /// page): read in linear time, each name once.
    #[test]
    fn a_page_of_many_links_is_read_in_linear_time() {
        let mut page = String::from("<table><tr><td class=\"size\">1</td>");
        for i in 0..100_000 {
            page.push_str(&format!(
                "<a href=\"/data/f{i}.root\">f</a><a href=\"f{i}.root\">f</a>"
            ));
        }
        let started = std::time::Instant::now();
        let e = parse_html_index(&page, "/data/");
        assert_eq!(e.len(), 100_000);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn garbage_gives_no_entries() {
        for text in [
            "",
            "href=\"",
            "<tr href=\"/\"",
            "<a href=\"%zz\">",
            "<tr><td class=\"size\">",
        ] {
            assert!(parse_html_index(text, "/data/").is_empty(), "{text}");
        }
    }
}
