//! The documentation's links hold: every relative link in README.md, ARCHITECTURE.md and
//! `docs/**/*.md` points at a file that exists, and every page of the book (`docs/`) is
//! listed in `docs/SUMMARY.md`, its table of contents (mdBook renders only listed pages).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_relative_link_resolves() {
    let problems = broken_links(&repo(), &[]);
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_book_page_is_in_the_summary() {
    let missing = pages_missing_from_summary(&repo(), &[]);
    assert!(
        missing.is_empty(),
        "pages not listed in docs/SUMMARY.md:\n{}",
        missing.join("\n")
    );
}

/// The checker itself finds what it is meant to: a broken link, a broken link out of a
/// subfolder, an unlisted page; and it ignores links in code and to other sites.
#[test]
fn the_checks_catch_a_broken_link_and_an_unlisted_page() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("docs/guide")).unwrap();
    fs::write(root.join("ARCHITECTURE.md"), "# map\n").unwrap();
    fs::write(
        root.join("README.md"),
        "[ok](docs/guide/a.md#part) [web](https://example.org/x.md) `[code](nowhere.md)`\n\
         ```\n[fenced](nowhere.md)\n```\n[gone](docs/guide/gone.md)\n",
    )
    .unwrap();
    fs::write(root.join("docs/book.toml"), "[book]\n").unwrap();
    fs::write(root.join("docs/SUMMARY.md"), "- [A](guide/a.md)\n").unwrap();
    fs::write(
        root.join("docs/guide/a.md"),
        "[up](../../README.md) [bad](../b.md)\n",
    )
    .unwrap();
    fs::write(root.join("docs/guide/unlisted.md"), "text\n").unwrap();

    assert_eq!(
        broken_links(root, &[]),
        ["README.md: docs/guide/gone.md", "docs/guide/a.md: ../b.md"]
    );
    assert_eq!(
        pages_missing_from_summary(root, &[]),
        ["docs/guide/unlisted.md"]
    );
    // An exempted target is not reported.
    assert_eq!(
        broken_links(root, &["docs/guide/gone.md", "docs/b.md"]),
        Vec::<String>::new()
    );
}

/// `FILE: TARGET` for each relative link whose file does not exist.
fn broken_links(root: &Path, exempt: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    for page in pages_checked(root) {
        let text = fs::read_to_string(root.join(&page)).unwrap();
        let folder = Path::new(&page).parent().unwrap_or(Path::new(""));
        for target in relative_link_targets(&text) {
            let file = target.split('#').next().unwrap_or_default();
            if file.is_empty() {
                continue; // an anchor in the same page
            }
            let resolved = normalise(&folder.join(file));
            let exists = resolved
                .as_ref()
                .is_some_and(|path| root.join(path).exists());
            let exempted = resolved
                .as_ref()
                .is_some_and(|path| exempt.iter().any(|e| Path::new(e) == path));
            if !exists && !exempted {
                problems.push(format!("{page}: {target}"));
            }
        }
    }
    problems
}

/// The book's pages (Markdown under `docs/`, but the summary) that `docs/SUMMARY.md` does
/// not link to, as paths from the repository's top.
fn pages_missing_from_summary(root: &Path, exempt: &[&str]) -> Vec<String> {
    let summary = fs::read_to_string(root.join("docs/SUMMARY.md")).unwrap_or_default();
    let listed: BTreeSet<PathBuf> = relative_link_targets(&summary)
        .iter()
        .filter_map(|target| normalise(&Path::new("docs").join(target.split('#').next()?)))
        .collect();
    markdown_under(root, Path::new("docs"))
        .into_iter()
        .filter(|page| page != "docs/SUMMARY.md")
        .filter(|page| !exempt.contains(&page.as_str()))
        .filter(|page| !listed.contains(Path::new(page)))
        .collect()
}

/// README.md, ARCHITECTURE.md and every Markdown file under `docs/`, repository-relative.
fn pages_checked(root: &Path) -> Vec<String> {
    let mut pages = vec!["README.md".to_string(), "ARCHITECTURE.md".to_string()];
    pages.extend(markdown_under(root, Path::new("docs")));
    pages
}

/// The `.md` files below `folder` (relative to `root`), sorted, with `/` separators.
fn markdown_under(root: &Path, folder: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir(root.join(folder)) else {
        return found;
    };
    for entry in entries.flatten() {
        let relative = folder.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            found.extend(markdown_under(root, &relative));
        } else if relative.extension().is_some_and(|e| e == "md") {
            found.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    found.sort();
    found
}

/// The targets of the inline links `[text](target)` and images of a Markdown text that are
/// relative paths: not in fenced code blocks or code spans, not addresses of other sites.
fn relative_link_targets(markdown: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_fence = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let prose = without_code_spans(line);
        let mut rest = prose.as_str();
        while let Some(start) = rest.find("](") {
            rest = &rest[start + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].trim();
            // `[text](<path> "title")`: the path is the first word.
            let target = target.split_whitespace().next().unwrap_or_default();
            let target = target.trim_start_matches('<').trim_end_matches('>');
            if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                targets.push(target.to_string());
            }
            rest = &rest[end..];
        }
    }
    targets
}

/// The line with its `code spans` blanked, so that a link written as code is not a link.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code { ' ' } else { c });
        }
    }
    out
}

/// `a/./b/../c` as `a/c`; `None` for a path that climbs above the repository or is absolute.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}
