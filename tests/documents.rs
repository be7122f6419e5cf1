//! The document search tools over MCP, on the real binary: every query form
//! against a line scan done here, fuzzy matching, scopes, context and paging,
//! search_multiple, a corrupt PDF, the watcher, several roots. Expected values
//! come from the files themselves (read with std::fs) and, for the PDF, from
//! poppler's pdftotext.

use crate::common;

use std::collections::BTreeMap;

use common::docs::*;
use common::{assert_valid, call, wait_indexed};
use serde_json::json;

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
async fn with_two_roots_paths_start_with_the_root_name() {
    let s = sandbox();
    let other = s.tmp.path().join("notes");
    std::fs::create_dir_all(other.join("sub")).unwrap();
    std::fs::write(
        other.join("sub/pedestal_log.txt"),
        b"first\npedestal again\n",
    )
    .unwrap();
    let root_arg = format!("notes={}", other.display());
    let client = s.mcp_with_args(&["--root", &root_arg]).await;
    wait_indexed(&client).await;

    let (v, _) = call(&client, "list_collections", json!({"path": ""})).await;
    assert_valid("list_collections.output.json", &v);
    let names: Vec<&str> = v["data"]["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    // The ingest folder (by default in the user's data folder) is a root of its own.
    assert_eq!(names, vec!["data", "notes", "ingest"]);
    let (v, _) = call(&client, "list_collections", json!({"path": "notes/sub"})).await;
    assert_eq!(
        v["data"]["documents"][0]["path"],
        "notes/sub/pedestal_log.txt"
    );

    let v = search(
        &client,
        "pedestal again",
        json!({"type": "collection", "path": "notes"}),
    )
    .await;
    assert_eq!(
        pairs(&v),
        vec![("notes/sub/pedestal_log.txt".to_string(), 2)]
    );
    let v = search(&client, "pedestal", json!({"type": "global"})).await;
    let docs: Vec<String> = pairs(&v).into_iter().map(|(d, _)| d).collect();
    assert!(docs.iter().any(|d| d.starts_with("data/docs/")), "{docs:?}");
    assert!(docs.contains(&"notes/sub/pedestal_log.txt".to_string()));

    let (v, is_error) = call(
        &client,
        "read_document",
        json!({"path": "notes/sub/pedestal_log.txt"}),
    )
    .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["data"]["content"], "first\npedestal again\n");
    let (v, _) = call(&client, "find_document", json!({"query": "pedestal_log"})).await;
    assert_eq!(v["data"]["matches"][0]["collection"], "notes/sub");
    // Without a root name a relative path is ambiguous: the document is not found.
    let e = error_of(
        &client,
        "get_document_info",
        json!({"path": "sub/pedestal_log.txt"}),
    )
    .await;
    assert_eq!(e["error"], "DOCUMENT_NOT_FOUND");
    assert_eq!(
        e["details"]["available_roots"],
        json!(["data", "notes", "ingest"])
    );
    client.cancel().await.unwrap();
}
