//! The documents tools over MCP, on the real binary: every query form against a
//! line scan done here, scopes, paging, TOCs, reading, a corrupt PDF, the
//! watcher. Expected values come from the files themselves (read with std::fs)
//! and, for the PDF, from poppler's pdftotext and pdfinfo.

mod common;

use std::collections::BTreeMap;

use common::docs::*;
use common::{assert_valid, call, wait_indexed};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_form_matches_a_line_scan() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let pdf_pages = pdftotext_pages(&s.root.join(PDF));
    for (query, matches) in query_forms() {
        let v = search(&client, query, json!({"type": "global"})).await;
        let data = &v["data"];
        let found = data["matches"].as_array().unwrap();
        // Text documents: exactly the lines of a line scan, in path then line order.
        let got: Vec<(String, u64)> = found
            .iter()
            .filter(|m| m["document"] != PDF)
            .map(|m| {
                (
                    m["document"].as_str().unwrap().to_string(),
                    m["line"].as_u64().unwrap(),
                )
            })
            .collect();
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(got, sorted, "{query}: results are in path, line order");
        let expected = line_scan(&s.root, &*matches);
        assert!(
            !expected.is_empty(),
            "{query}: the test documents hold matches"
        );
        assert_eq!(got, expected, "{query}");
        // The PDF: per page, the same lines pdftotext gives (blank lines aside).
        let pdf_got: Vec<(u64, String)> = found
            .iter()
            .filter(|m| m["document"] == PDF)
            .map(|m| {
                (
                    m["page"].as_u64().unwrap(),
                    m["text"].as_str().unwrap().trim().to_string(),
                )
            })
            .collect();
        let pdf_expected: Vec<(u64, String)> = pdf_pages
            .iter()
            .enumerate()
            .flat_map(|(i, lines)| {
                lines
                    .iter()
                    .filter(|l| matches(l))
                    .map(move |l| (i as u64 + 1, l.clone()))
            })
            .collect();
        if ["pedestal", "PEDESTAL drift", "gain drift|noise"].contains(&query) {
            assert!(!pdf_expected.is_empty(), "{query}: the PDF holds matches");
        }
        if query != "-e" {
            // (pdf-extract and pdftotext differ in blank lines, which "-e" matches.)
            assert_eq!(pdf_got, pdf_expected, "{query} in the PDF");
            assert_eq!(
                data["total_matches"].as_u64().unwrap() as usize,
                expected.len() + pdf_expected.len(),
                "{query}"
            );
        }
        assert_eq!(data["truncated"], false);
        assert_eq!(data["query"], query);
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzzy_matching_finds_near_spellings() {
    let s = sandbox();
    s.write(
        "docs/extra/typos.txt",
        b"the calbration run\nthe calibraton run\nunrelated\n",
    );
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let exact = search(
        &client,
        "calibraton",
        json!({"type": "document", "path": "docs/extra/typos.txt"}),
    )
    .await;
    assert_eq!(exact["data"]["total_matches"], 1);
    let (v, is_error) = call(
        &client,
        "search_documents",
        json!({"query": "calibraton", "scope": {"type": "document", "path": "docs/extra/typos.txt"}, "fuzzy": true}),
    )
    .await;
    assert!(!is_error, "{v}");
    // "calbration" is two edits from "calibraton" (a word of 10 letters allows two).
    let lines: Vec<u64> = v["data"]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![1, 2]);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_context_paging_and_errors() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let calorimeter = |l: &str| l.to_lowercase().contains("calorimeter");

    // A collection includes its sub-folders; a sibling with the same prefix is out.
    s.write(
        "docs/guides_old.md",
        b"calorimeter outside the collection\n",
    );
    wait_for(&client, "outside", 1).await;
    let v = search(
        &client,
        "calorimeter",
        json!({"type": "collection", "path": "docs/guides"}),
    )
    .await;
    let expected: Vec<(String, u64)> = line_scan(&s.root, &calorimeter)
        .into_iter()
        .filter(|(p, _)| p.starts_with("docs/guides/"))
        .collect();
    assert!(
        expected.iter().any(|(p, _)| p.contains("/trigger/")),
        "{expected:?}"
    );
    assert_eq!(pairs(&v), expected);

    let v = search(
        &client,
        "calorimeter",
        json!({"type": "document", "path": "docs/guides/shift_onboarding.md"}),
    )
    .await;
    let expected: Vec<(String, u64)> = line_scan(&s.root, &calorimeter)
        .into_iter()
        .filter(|(p, _)| p == "docs/guides/shift_onboarding.md")
        .collect();
    assert_eq!(pairs(&v), expected);

    // Context lines are the file's neighbours, cut at its start and end.
    let log = std::fs::read_to_string(s.root.join("docs/run_log_2024.txt")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let (v, _) = call(
        &client,
        "search_documents",
        json!({"query": "handover", "scope": {"type": "document", "path": "docs/run_log_2024.txt"}, "context_lines": 2}),
    )
    .await;
    let found = v["data"]["matches"].as_array().unwrap();
    assert_eq!(found.len(), 2);
    for m in found {
        let n = m["line"].as_u64().unwrap() as usize;
        assert_eq!(m["text"], lines[n - 1]);
        let before: Vec<&str> = lines[n.saturating_sub(3)..n - 1].to_vec();
        let after: Vec<&str> = lines[n..(n + 2).min(lines.len())].to_vec();
        assert_eq!(m["context_before"], json!(before), "line {n}");
        assert_eq!(m["context_after"], json!(after), "line {n}");
        assert!(m.get("page").is_none());
    }
    // The default is 5 lines of context.
    let (v, _) = call(
        &client,
        "search_documents",
        json!({"query": "quench protection", "scope": {"type": "document", "path": "docs/run_log_2024.txt"}}),
    )
    .await;
    let n = lines
        .iter()
        .position(|l| l.contains("Quench protection"))
        .unwrap()
        + 1;
    let m = &v["data"]["matches"][0];
    assert_eq!(m["line"], n as u64);
    assert_eq!(
        m["context_before"],
        json!(lines[n.saturating_sub(6)..n - 1].to_vec())
    );
    assert_eq!(m["context_after"], json!(lines[n..n + 5].to_vec()));

    // max_results cuts the matches; total_matches still counts them all.
    let all = line_scan(&s.root, &calorimeter).len() as u64;
    let (v, _) = call(
        &client,
        "search_documents",
        json!({"query": "calorimeter", "scope": {"type": "global"}, "max_results": 2}),
    )
    .await;
    assert_eq!(v["data"]["matches"].as_array().unwrap().len(), 2);
    assert!(
        v["data"]["total_matches"].as_u64().unwrap() > all,
        "PDF lines count too"
    );
    assert_eq!(v["data"]["truncated"], true);
    assert_valid("search_documents.output.json", &v);

    for (args, code, tool_named) in [
        (
            json!({"query": "(open", "scope": {"type": "global"}}),
            "INVALID_QUERY",
            "search_documents",
        ),
        (
            json!({"query": "\"unclosed", "scope": {"type": "global"}}),
            "INVALID_QUERY",
            "search_documents",
        ),
        (
            json!({"query": "a||b", "scope": {"type": "global"}}),
            "INVALID_QUERY",
            "search_documents",
        ),
        (
            json!({"query": "x", "scope": {"type": "collection", "path": "docs/nope"}}),
            "SCOPE_NOT_FOUND",
            "list_collections",
        ),
        (
            json!({"query": "x", "scope": {"type": "document", "path": "docs/nope.md"}}),
            "SCOPE_NOT_FOUND",
            "find_document",
        ),
        (
            json!({"query": "x", "scope": {"type": "collection", "path": "docs/run_log_2024.txt"}}),
            "NOT_A_DIRECTORY",
            "search_documents",
        ),
        (
            json!({"query": "x", "scope": {"type": "collection", "path": "../etc"}}),
            "PATH_TRAVERSAL_DETECTED",
            "list_collections",
        ),
        (
            json!({"query": "x", "scope": {"type": "document", "path": "/etc/passwd"}}),
            "PATH_TRAVERSAL_DETECTED",
            "list_collections",
        ),
    ] {
        let e = error_of(&client, "search_documents", args.clone()).await;
        assert_eq!(e["error"], code, "{args}: {e}");
        assert!(
            e["suggestion"].as_str().unwrap().contains(tool_named),
            "{e}"
        );
    }
    let e = error_of(
        &client,
        "search_documents",
        json!({"query": "x", "scope": {"type": "global"}, "max_results": 501}),
    )
    .await;
    assert_eq!(e["retry_with"]["max_results"], 500);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdf_pages_outline_and_metadata_match_poppler() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let pdf = s.root.join(PDF);
    let pages = pdftotext_pages(&pdf);
    let info = pdfinfo(&pdf);

    let (v, is_error) = call(&client, "get_document_info", json!({"path": PDF})).await;
    assert!(!is_error, "{v}");
    assert_valid("get_document_info.output.json", &v);
    let d = &v["data"];
    assert_eq!(d["name"], "detector_calibration.pdf");
    assert_eq!(d["path"], PDF);
    assert_eq!(d["collection"], "docs");
    assert_eq!(d["format"], "pdf");
    assert_eq!(
        d["pages"].as_u64().unwrap(),
        info["Pages"].parse::<u64>().unwrap()
    );
    assert_eq!(
        d["size_bytes"].as_u64().unwrap(),
        std::fs::metadata(&pdf).unwrap().len()
    );
    assert_eq!(d["size_human"], "9.1 KB");
    assert_eq!(d["metadata"]["title"], info["Title"].as_str());
    assert_eq!(d["metadata"]["author"], info["Author"].as_str());
    assert_eq!(d["metadata"]["subject"], info["Subject"].as_str());
    // pdfinfo -isodates: 2000-01-01T00:00:00Z; quarry keeps the offset as +00:00.
    let created = d["metadata"]["created"]
        .as_str()
        .unwrap()
        .replace("+00:00", "Z");
    assert_eq!(created, info["CreationDate"]);
    assert!(
        d["metadata"].get("keywords").is_none(),
        "the PDF has no keywords"
    );

    // The outline's entries are the numbered headings pdftotext shows on each
    // page: "2" is a chapter (level 1) with sections "2.1", "2.2" (level 2).
    let expected = numbered_headings(&pages);
    assert_eq!(expected.len(), 5);
    assert_eq!(d["toc"], json!(expected));
    assert_eq!(d["has_toc"], true);

    // Pages 2 and 4: separators, and each page's lines as pdftotext reads them.
    let (v, _) = call(
        &client,
        "read_document",
        json!({"path": PDF, "pages": [4, 2, 2]}),
    )
    .await;
    assert_valid("read_document.output.json", &v);
    let d = &v["data"];
    assert_eq!(d["pages_read"], json!([2, 4]));
    assert_eq!(d["total_pages"], 5);
    assert_eq!(d["format"], "pdf");
    assert_eq!(d["truncated"], false);
    let content = d["content"].as_str().unwrap();
    assert_eq!(
        d["char_count"].as_u64().unwrap() as usize,
        content.chars().count()
    );
    let (two, four) = content.split_once("\n--- Page 4 ---\n\n").unwrap();
    let two = two.strip_prefix("--- Page 2 ---\n\n").unwrap();
    for (text, page) in [(two, 2), (four, 4)] {
        let lines: Vec<String> = text
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(lines, pages[page - 1], "page {page}");
    }
    // Every page, in order, when none are asked for.
    let (v, _) = call(&client, "read_document", json!({"path": PDF})).await;
    assert_eq!(v["data"]["pages_read"], json!([1, 2, 3, 4, 5]));
    for p in 1..=5 {
        assert!(
            v["data"]["content"]
                .as_str()
                .unwrap()
                .contains(&format!("--- Page {p} ---\n\n"))
        );
    }
    for bad in [json!([6]), json!([0]), json!([1, 9])] {
        let e = error_of(&client, "read_document", json!({"path": PDF, "pages": bad})).await;
        assert_eq!(e["error"], "PAGE_OUT_OF_RANGE", "{e}");
        assert_eq!(e["details"]["total_pages"], 5);
        assert!(
            e["suggestion"]
                .as_str()
                .unwrap()
                .contains("get_document_info")
        );
    }

    // A match's line number counts through the whole text: it is that line of
    // the full read.
    let (v, _) = call(
        &client,
        "search_documents",
        json!({"query": "\"Z mass\"", "scope": {"type": "document", "path": PDF}}),
    )
    .await;
    let m = &v["data"]["matches"][0];
    assert_eq!(m["page"], 4);
    let (full, _) = call(&client, "read_document", json!({"path": PDF, "pages": []})).await;
    let without_separators: Vec<&str> = full["data"]["content"]
        .as_str()
        .unwrap()
        .split("--- Page ")
        .skip(1)
        .map(|p| p.split_once("---\n\n").unwrap().1)
        .collect();
    let text: String = without_separators
        .iter()
        .map(|p| p.strip_suffix('\n').unwrap_or(p))
        .collect();
    let line = m["line"].as_u64().unwrap() as usize;
    assert_eq!(
        text.lines().nth(line - 1).unwrap(),
        m["text"].as_str().unwrap()
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markdown_tocs_nest_headers_and_skip_code() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    for rel in [
        "docs/guides/shift_onboarding.md",
        "docs/guides/trigger/trigger_menu.md",
        "docs/notes/beam_test_2024.md",
    ] {
        let text = std::fs::read_to_string(s.root.join(rel)).unwrap();
        let flat = markdown_headers(&text);
        let (v, is_error) = call(&client, "get_document_info", json!({"path": rel})).await;
        assert!(!is_error, "{v}");
        assert_valid("get_document_info.output.json", &v);
        let d = &v["data"];
        assert_eq!(d["format"], "markdown");
        assert_eq!(d["pages"], 1);
        assert_eq!(d["metadata"]["title"], flat[0].1.as_str());
        // Walk the tree depth first: the same headers, each under the last
        // header of a lower level.
        let mut walked = Vec::new();
        fn walk(entries: &Value, parent_level: u64, out: &mut Vec<(u64, String, u64)>) {
            for e in entries.as_array().unwrap() {
                let level = e["level"].as_u64().unwrap();
                assert!(level > parent_level, "{e}");
                assert_eq!(e["page"], 1);
                out.push((
                    level,
                    e["title"].as_str().unwrap().to_string(),
                    e["line"].as_u64().unwrap(),
                ));
                if let Some(children) = e.get("children") {
                    walk(children, level, out);
                }
            }
        }
        walk(&d["toc"], 0, &mut walked);
        assert_eq!(walked, flat, "{rel}");
        assert_eq!(
            d["toc"].as_array().unwrap().len(),
            flat.iter().filter(|h| h.0 == 1).count()
        );
    }
    // The guide's shell comment inside a fence is not a header.
    let (v, _) = call(
        &client,
        "get_document_info",
        json!({"path": "docs/guides/shift_onboarding.md"}),
    )
    .await;
    assert!(!v.to_string().contains("collect the last hour"));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_text_is_capped_by_the_configured_limit() {
    let s = sandbox();
    let config = s.tmp.path().join("quarry.toml");
    std::fs::write(&config, "[limits]\nmax_document_read_chars = 120\n").unwrap();
    let client = s
        .mcp_with_args(&["--config", config.to_str().unwrap()])
        .await;
    wait_indexed(&client).await;
    let rel = "docs/notes/beam_test_2024.md";
    let text = std::fs::read_to_string(s.root.join(rel)).unwrap();
    let (v, is_error) = call(&client, "read_document", json!({"path": rel, "pages": [7]})).await;
    assert!(!is_error, "pages are ignored for Markdown: {v}");
    assert_valid("read_document.output.json", &v);
    let d = &v["data"];
    assert_eq!(
        d["content"].as_str().unwrap(),
        text.chars().take(120).collect::<String>()
    );
    assert_eq!(d["char_count"], 120);
    assert_eq!(d["truncated"], true);
    assert_eq!(d["pages_read"], json!([1]));
    assert_eq!(d["total_pages"], 1);
    assert!(
        v["suggestions"][0]
            .as_str()
            .unwrap()
            .contains("search_documents")
    );

    let (v, _) = call(
        &client,
        "read_document",
        json!({"path": "docs/extra/run.log"}),
    )
    .await;
    let log = std::fs::read_to_string(s.root.join("docs/extra/run.log")).unwrap();
    assert_eq!(v["data"]["content"], log.as_str());
    assert_eq!(v["data"]["format"], "text");
    assert_eq!(v["data"]["truncated"], false);

    // PDF pages are cut the same way; the suggestion says which page to read next.
    let (v, _) = call(
        &client,
        "read_document",
        json!({"path": PDF, "pages": [1, 2]}),
    )
    .await;
    assert_eq!(v["data"]["truncated"], true);
    assert_eq!(v["data"]["char_count"], 120);
    assert_eq!(v["data"]["pages_read"], json!([1]));
    assert!(
        v["suggestions"][0]
            .as_str()
            .unwrap()
            .contains("pages=[1, 2]"),
        "{v}"
    );

    for (path, code) in [
        ("docs/missing.md", "DOCUMENT_NOT_FOUND"),
        ("docs/slides.pptx", "UNSUPPORTED_FORMAT"),
        ("../outside.md", "PATH_TRAVERSAL_DETECTED"),
    ] {
        let e = error_of(&client, "read_document", json!({"path": path})).await;
        assert_eq!(e["error"], code, "{e}");
    }
    let e = error_of(
        &client,
        "get_document_info",
        json!({"path": "docs/missing.md"}),
    )
    .await;
    assert!(
        e["suggestion"].as_str().unwrap().contains("find_document"),
        "{e}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_pdfs_are_recorded_and_indexing_goes_on() {
    let s = sandbox();
    s.write(
        "docs/broken/garbage.pdf",
        b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 9 0 R >> trailer nonsense",
    );
    let mut half = std::fs::read(s.root.join(PDF)).unwrap();
    half.truncate(2000);
    s.write("docs/broken/half.pdf", &half);
    s.write("docs/broken/not_a.pdf", b"plain words, no PDF header");
    let client = s.mcp().await;
    wait_indexed(&client).await;

    let (status, _) = call(&client, "index_status", json!({})).await;
    let failed: BTreeMap<String, String> = status["data"]["roots"][0]["failed_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let p = f["path"].as_str().unwrap();
            (
                p.rsplit('/').next().unwrap().to_string(),
                f["error"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for name in ["garbage.pdf", "half.pdf", "not_a.pdf"] {
        assert!(
            failed.contains_key(name),
            "{name} not listed as failed: {status}"
        );
        assert!(!failed[name].is_empty());
    }
    assert!(failed["not_a.pdf"].contains("%PDF-"), "{failed:?}");
    // The rest is searchable.
    let v = search(&client, "pedestal", json!({"type": "global"})).await;
    assert!(v["data"]["total_matches"].as_u64().unwrap() > 10);

    let e = error_of(
        &client,
        "read_document",
        json!({"path": "docs/broken/garbage.pdf"}),
    )
    .await;
    assert_eq!(e["error"], "FILTER_FAILED");
    assert_eq!(e["details"]["error"], failed["garbage.pdf"].as_str());
    let e = error_of(
        &client,
        "get_document_info",
        json!({"path": "docs/broken/garbage.pdf"}),
    )
    .await;
    assert_eq!(e["error"], "METADATA_EXTRACTION_FAILED");
    let e = error_of(
        &client,
        "search_documents",
        json!({"query": "x", "scope": {"type": "document", "path": "docs/broken/half.pdf"}}),
    )
    .await;
    assert_eq!(e["error"], "FILTER_FAILED");
    let (v, _) = call(&client, "list_collections", json!({"path": "docs/broken"})).await;
    assert_valid("list_collections.output.json", &v);
    let docs = v["data"]["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 3);
    assert!(docs.iter().all(|d| d["index_failed"] == true));

    // `quarry status` shows them too (it asks this server over its socket).
    let out = common::run_ok(
        common::quarry()
            .args(["status", "--catalog"])
            .arg(&s.catalog),
    );
    assert!(out.contains("garbage.pdf"), "{out}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_keeps_search_current() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    assert_eq!(
        search(&client, "quokka", json!({"type": "global"})).await["data"]["total_matches"],
        0
    );

    s.write(
        "docs/new/fresh.md",
        b"# Fresh\n\nA quokka was seen.\nAnother quokka line.\n",
    );
    let took = wait_for(&client, "quokka", 2).await;
    eprintln!("new document searchable after {took:?} (300 ms settle included)");
    let v = search(&client, "quokka", json!({"type": "global"})).await;
    assert_eq!(
        pairs(&v),
        vec![
            ("docs/new/fresh.md".to_string(), 3),
            ("docs/new/fresh.md".to_string(), 4)
        ]
    );

    s.write("docs/new/fresh.md", b"# Fresh\n\nNow a wombat.\n");
    wait_for(&client, "wombat", 1).await;
    assert_eq!(
        search(&client, "quokka", json!({"type": "global"})).await["data"]["total_matches"],
        0
    );
    let (v, _) = call(
        &client,
        "get_document_info",
        json!({"path": "docs/new/fresh.md"}),
    )
    .await;
    assert_eq!(v["data"]["size_bytes"], 23);

    std::fs::remove_file(s.root.join("docs/new/fresh.md")).unwrap();
    wait_for(&client, "wombat", 0).await;
    let e = error_of(
        &client,
        "read_document",
        json!({"path": "docs/new/fresh.md"}),
    )
    .await;
    assert_eq!(e["error"], "DOCUMENT_NOT_FOUND");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_document_ranks_exact_then_prefix_then_contains() {
    let s = sandbox();
    for name in [
        "my_tutorial.md",
        "Tutorial-advanced.md",
        "tutorial.md",
        "deep/TUTORIAL.txt",
        "other.md",
    ] {
        s.write(&format!("docs/t/{name}"), b"text\n");
    }
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let (v, is_error) = call(&client, "find_document", json!({"query": "Tutorial"})).await;
    assert!(!is_error, "{v}");
    assert_valid("find_document.output.json", &v);
    let got: Vec<(String, f64)> = v["data"]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_string(),
                m["score"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("docs/t/deep/TUTORIAL.txt".to_string(), 0.9),
            ("docs/t/tutorial.md".to_string(), 0.9),
            ("docs/t/Tutorial-advanced.md".to_string(), 0.75),
            ("docs/t/my_tutorial.md".to_string(), 0.5),
        ]
    );
    assert_eq!(v["data"]["total_found"], 4);
    assert_eq!(v["data"]["matches"][0]["collection"], "docs/t/deep");
    let (v, _) = call(
        &client,
        "find_document",
        json!({"query": "tutorial.md", "limit": 1}),
    )
    .await;
    assert_eq!(v["data"]["matches"][0]["path"], "docs/t/tutorial.md");
    assert_eq!(v["data"]["matches"][0]["score"], 1.0);
    assert_eq!(v["data"]["total_found"], 2);
    assert_eq!(v["metadata"]["truncated"], true);
    let e = error_of(&client, "find_document", json!({"query": "x", "limit": 0})).await;
    assert_eq!(e["retry_with"]["limit"], 1);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_collections_browses_folders() {
    let s = sandbox();
    s.write("data/run1.root", b"root");
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let (v, is_error) = call(&client, "list_collections", json!({})).await;
    assert!(!is_error, "{v}");
    assert_valid("list_collections.output.json", &v);
    // Only folders holding documents; "data" holds a ROOT file only.
    assert_eq!(v["data"]["current_path"], "");
    assert_eq!(
        v["data"]["collections"],
        json!([{"name": "docs", "path": "docs", "document_count": 2, "subcollection_count": 3}])
    );
    let (v, _) = call(&client, "list_collections", json!({"path": "docs"})).await;
    let names: Vec<&str> = v["data"]["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["extra", "guides", "notes"]);
    let guides = &v["data"]["collections"][1];
    assert_eq!(guides["document_count"], 1);
    assert_eq!(guides["subcollection_count"], 1);
    let docs: Vec<&str> = v["data"]["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert_eq!(docs, vec![PDF, "docs/run_log_2024.txt"]);
    let pdf = &v["data"]["documents"][0];
    assert_eq!(
        pdf["size_bytes"].as_u64().unwrap(),
        std::fs::metadata(s.root.join(PDF)).unwrap().len()
    );
    let (v, _) = call(
        &client,
        "list_collections",
        json!({"path": "docs/guides/trigger/"}),
    )
    .await;
    assert_eq!(v["data"]["current_path"], "docs/guides/trigger");
    assert_eq!(v["data"]["documents"][0]["name"], "trigger_menu.md");
    // A folder without documents is an empty collection, not a missing one.
    let (v, is_error) = call(&client, "list_collections", json!({"path": "data"})).await;
    assert!(!is_error);
    assert_eq!(v["data"]["documents"], json!([]));

    for (path, code) in [
        ("docs/run_log_2024.txt", "NOT_A_DIRECTORY"),
        ("docs/nowhere", "COLLECTION_NOT_FOUND"),
        ("docs/../..", "PATH_TRAVERSAL_DETECTED"),
        ("/", "PATH_TRAVERSAL_DETECTED"),
    ] {
        let e = error_of(&client, "list_collections", json!({"path": path})).await;
        assert_eq!(e["error"], code, "{path}: {e}");
    }
    let e = error_of(&client, "list_collections", json!({"path": "docs/nowhere"})).await;
    assert!(
        e["suggestion"]
            .as_str()
            .unwrap()
            .contains("list_collections")
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_multiple_runs_each_query_and_survives_a_bad_one() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let scope = json!({"type": "collection", "path": "docs"});
    let (v, is_error) = call(
        &client,
        "search_multiple",
        json!({"queries": ["pedestal", "(broken", "tower -masked", "pedestal"], "scope": scope, "context_lines": 1}),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_valid("search_multiple.output.json", &v);
    let d = &v["data"];
    assert_eq!(d["queries_completed"], 2);
    assert_eq!(d["queries_failed"], 1);
    assert_eq!(d["results"]["(broken"]["error"]["code"], "INVALID_QUERY");
    for q in ["pedestal", "tower -masked"] {
        let (single, _) = call(
            &client,
            "search_documents",
            json!({"query": q, "scope": scope, "context_lines": 1}),
        )
        .await;
        let r = &d["results"][q];
        assert_eq!(r["query"], q);
        assert_eq!(r["matches"], single["data"]["matches"], "{q}");
        assert_eq!(r["total_matches"], single["data"]["total_matches"]);
        assert_eq!(r["truncated"], single["data"]["truncated"]);
    }
    let e = error_of(
        &client,
        "search_multiple",
        json!({"queries": ["a"], "scope": {"type": "collection", "path": "docs/none"}}),
    )
    .await;
    assert_eq!(e["error"], "SCOPE_NOT_FOUND");
    let e = error_of(
        &client,
        "search_multiple",
        json!({"queries": [], "scope": {"type": "global"}}),
    )
    .await;
    assert_eq!(e["error"], "invalid_arguments");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_docs_toolset_can_be_switched_off() {
    let s = sandbox();
    let config = s.tmp.path().join("quarry.toml");
    std::fs::write(&config, "[toolsets]\ndocs = false\n").unwrap();
    let client = s
        .mcp_with_args(&["--config", config.to_str().unwrap()])
        .await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"list_files".to_string()));
    for tool in [
        "list_collections",
        "find_document",
        "search_documents",
        "search_multiple",
        "read_document",
        "get_document_info",
    ] {
        assert!(
            !names.contains(&tool.to_string()),
            "{tool} is served: {names:?}"
        );
    }
    client.cancel().await.unwrap();
}
