//! Helpers of the documents tests: a root of test documents, searches, and the
//! independent readings the results are compared with (a line scan of the text
//! files, poppler's pdftotext and pdfinfo for the PDF).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Client, Sandbox, assert_valid, call, copy_tree, repo_testdata};

pub const PDF: &str = "docs/detector_calibration.pdf";

/// A root with the repository's test documents under `docs/` and a few more
/// written here to exercise plurals, punctuation, case and phrases.
pub fn sandbox() -> Sandbox {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.root.join("docs")).unwrap();
    copy_tree(&repo_testdata().join("docs"), &s.root.join("docs"));
    s.write(
        "docs/extra/pedestals.md",
        b"# Pedestal notes\n\nPedestals drift; the PEDESTAL drift is tracked.\nExpert-on-call: page the expert, on call tonight.\n\
          e-mail the expert on  call\nsubpedestal values\n\n## Tower status\n\nTower 17 masked.\nTower 18 fine.\n",
    );
    s.write(
        "docs/extra/notes.rst",
        b"Trigger calibration stream\n==========================\n\ncalibration constants, pedestal and gain\nLED scan\nGain drift, below the noise\n",
    );
    s.write(
        "docs/extra/run.log",
        b"06:55 tower 17 tripped\n07:10 tower 17 masked\n",
    );
    s
}

pub async fn search(client: &Client, query: &str, scope: Value) -> Value {
    let (v, is_error) = call(
        client,
        "search_documents",
        json!({"query": query, "scope": scope, "max_results": 500, "context_lines": 0}),
    )
    .await;
    assert!(!is_error, "{query}: {v}");
    assert_valid("search_documents.output.json", &v);
    v
}

pub async fn error_of(client: &Client, tool: &str, args: Value) -> Value {
    let (v, is_error) = call(client, tool, args).await;
    assert!(is_error, "{tool} should fail: {v}");
    v
}

/// The words of a line, lowercased and joined by single spaces: what the
/// search semantics compare against (written out here independently).
pub fn normalized(line: &str) -> String {
    line.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text documents under `dir` (relative paths).
pub fn text_documents(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            text_documents(&p, base, out);
        } else if ["md", "txt", "log", "rst"]
            .iter()
            .any(|x| p.extension().is_some_and(|e| e == *x))
        {
            out.push(p.strip_prefix(base).unwrap().to_path_buf());
        }
    }
}

/// (document, line) of every line of the text documents that `matches`.
pub fn line_scan(root: &Path, matches: &dyn Fn(&str) -> bool) -> Vec<(String, u64)> {
    let mut files = Vec::new();
    text_documents(root, root, &mut files);
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(root.join(&f)).unwrap();
        for (i, line) in text.lines().enumerate() {
            if matches(line) {
                out.push((f.to_string_lossy().into_owned(), i as u64 + 1));
            }
        }
    }
    out.sort();
    out
}

/// Each page's non-empty lines as pdftotext (poppler) reads them.
pub fn pdftotext_pages(pdf: &Path) -> Vec<Vec<String>> {
    let info = Command::new("pdfinfo")
        .arg(pdf)
        .output()
        .expect("pdfinfo (poppler-utils, installed by scripts/setup-system.sh)");
    let pages: usize = String::from_utf8(info.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (1..=pages)
        .map(|p| {
            let out = Command::new("pdftotext")
                .args(["-enc", "UTF-8", "-f", &p.to_string(), "-l", &p.to_string()])
                .arg(pdf)
                .arg("-")
                .output()
                .expect("pdftotext (poppler-utils)");
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(|l| {
                    l.trim_matches(|c: char| c.is_whitespace() || c == '\u{c}')
                        .to_string()
                })
                .filter(|l| !l.is_empty())
                .collect()
        })
        .collect()
}

pub fn pdfinfo(pdf: &Path) -> BTreeMap<String, String> {
    let out = Command::new("pdfinfo")
        .args(["-isodates"])
        .arg(pdf)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// A line predicate of the line scan.
pub type LineTest = Box<dyn Fn(&str) -> bool>;

/// The query forms of the spec, each with the predicate a line must satisfy.
pub fn query_forms() -> Vec<(&'static str, LineTest)> {
    let has = |w: &'static str| move |l: &str| l.to_lowercase().contains(w);
    let phrase = |p: &'static str| move |l: &str| normalized(l).contains(p);
    vec![
        ("pedestal", Box::new(has("pedestal"))),
        (
            "PEDESTAL drift",
            Box::new(move |l: &str| has("pedestal")(l) && has("drift")(l)),
        ),
        (
            "alarm|interlock",
            Box::new(move |l: &str| has("alarm")(l) || has("interlock")(l)),
        ),
        (
            "tower -masked",
            Box::new(move |l: &str| has("tower")(l) && !has("masked")(l)),
        ),
        ("\"expert on call\"", Box::new(phrase("expert on call"))),
        (
            "(trigger|calibration) -stream",
            Box::new(move |l: &str| {
                (has("trigger")(l) || has("calibration")(l)) && !has("stream")(l)
            }),
        ),
        ("e-mail", Box::new(phrase("e mail"))),
        (
            "gain drift|noise",
            Box::new(move |l: &str| has("gain")(l) && (has("drift")(l) || has("noise")(l))),
        ),
        ("-e", Box::new(move |l: &str| !has("e")(l))),
    ]
}

pub fn pairs(v: &Value) -> Vec<(String, u64)> {
    v["data"]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["document"].as_str().unwrap().to_string(),
                m["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Waits until a global search for `query` finds `count` lines; returns how long.
pub async fn wait_for(client: &Client, query: &str, count: u64) -> Duration {
    let start = Instant::now();
    loop {
        let v = search(client, query, json!({"type": "global"})).await;
        if v["data"]["total_matches"] == count {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "'{query}' never reached {count} matches: {v}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The outline a PDF's numbered headings imply ("2 Pedestal Measurement" is a
/// chapter at level 1, "2.1 ..." a section inside it), from each page's lines.
pub fn numbered_headings(pages: &[Vec<String>]) -> Vec<Value> {
    let mut expected: Vec<Value> = Vec::new();
    for (i, lines) in pages.iter().enumerate() {
        for l in lines {
            let Some((number, _)) = l.split_once(' ') else {
                continue;
            };
            let parts: Vec<&str> = number.split('.').collect();
            if !parts
                .iter()
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
                || parts[0].len() > 1
            {
                continue;
            }
            let entry = json!({"title": l, "page": i + 1, "level": parts.len()});
            if parts.len() == 1 {
                expected.push(entry);
            } else {
                let parent = expected.last_mut().unwrap();
                match parent.get_mut("children") {
                    Some(c) => c.as_array_mut().unwrap().push(entry),
                    None => parent["children"] = json!([entry]),
                }
            }
        }
    }
    expected
}

/// The headers of a Markdown text, read line by line: `#` lines outside ```
/// fences, as (level = number of '#', title, 1-based line).
pub fn markdown_headers(text: &str) -> Vec<(u64, String, u64)> {
    let mut headers = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !fenced && hashes > 0 && line[hashes..].starts_with(' ') {
            headers.push((
                hashes as u64,
                line[hashes + 1..].trim().to_string(),
                i as u64 + 1,
            ));
        }
    }
    headers
}
