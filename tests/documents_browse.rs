//! Browsing and reading documents over MCP, on the real binary: the PDF's pages,
//! outline and metadata against poppler's pdftotext and pdfinfo, Markdown TOCs
//! against the files' own header lines, read_document's pages and character
//! cap, find_document's ranking, list_collections, the docs toolset switch.

use crate::common;

use common::docs::*;
use common::{assert_valid, call, wait_indexed};
use serde_json::{Value, json};

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
