//! The RAPTOR tools over MCP, on the real binary, against a corpus written
//! here with planted facts: retrieval in both modes, navigation consistency,
//! extractive answers that quote only the sources, per-document rebuilds.

use crate::common;

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use common::rag::*;
use common::{Sandbox, assert_valid, call, wait_indexed};
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_facts_are_retrieved_and_navigation_is_consistent() {
    let s = Sandbox::new();
    corpus(&s);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let d = wait_trees(&client, 4, 4).await;
    assert_valid(
        "list_datasets.output.json",
        &json!({"data": {"datasets": [d.clone()]}, "metadata": {}, "suggestions": []}),
    );

    let mut roots = BTreeSet::new();
    for (path, (query, fact)) in facts() {
        for mode in ["collapsed", "traversal"] {
            let v = retrieve(&client, query, mode).await;
            let hits = &v["data"]["hits"];
            assert!(
                texts(&v["data"]).iter().any(|t| t.contains(fact)),
                "{mode} {query}: {v}"
            );
            assert_eq!(v["data"]["reranker"]["applied"], false);
            let first = &hits[0];
            assert_eq!(first["document"], path, "{mode}: {first}");
            let content = &v["data"]["content"][0]["resource"];
            assert_eq!(content["uri"], first["uri"]);
            // Each node's text is sent once: in its content item, not again
            // in its hit.
            for (c, h) in v["data"]["content"]
                .as_array()
                .unwrap()
                .iter()
                .zip(hits.as_array().unwrap())
            {
                assert!(
                    c["resource"]["text"].is_string() && h.get("text").is_none(),
                    "{h}"
                );
            }
        }
        let v = retrieve(&client, query, "collapsed").await;
        let leaf = v["data"]["hits"][0]["id"].as_str().unwrap().to_string();
        let (p, _) = call(&client, "rag_path_to_root", json!({"node_id": leaf})).await;
        roots.insert(
            p["data"]["path"].as_array().unwrap().last().unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }

    // Every node reachable from the roots: path_to_root follows parent
    // navigation, and children and parents are each other's inverse.
    let mut queue: VecDeque<String> = roots.iter().cloned().collect();
    let mut seen = BTreeSet::new();
    while let Some(n) = queue.pop_front() {
        if !seen.insert(n.clone()) {
            continue;
        }
        let children = ids(&client, "rag_node_children", &n, json!({}), "children").await;
        let (got, _) = call(&client, "rag_node_get", json!({"node_id": n})).await;
        assert_valid("rag_node_get.output.json", &got);
        assert_eq!(got["data"]["children_count"], children.len());
        for c in &children {
            let parents = ids(
                &client,
                "rag_node_navigation",
                c,
                json!({"direction": "parent"}),
                "nodes",
            )
            .await;
            assert!(parents.contains(&n), "{c} does not list its parent {n}");
            queue.push_back(c.clone());
        }
        let path = ids(&client, "rag_path_to_root", &n, json!({}), "path").await;
        assert_eq!(path[0], n);
        for pair in path.windows(2) {
            let parents = ids(
                &client,
                "rag_node_navigation",
                &pair[0],
                json!({"direction": "parent"}),
                "nodes",
            )
            .await;
            assert!(
                parents.contains(&pair[1]),
                "path {path:?} leaves the parents of {}",
                pair[0]
            );
        }
        assert!(roots.contains(path.last().unwrap()) || path.len() == 1 && roots.contains(&n));
        let (r, err) = call(&client, "read_resource", json!({"uri": got["data"]["uri"]})).await;
        assert!(!err);
        assert_valid("read_resource.output.json", &r);
        assert_eq!(r["data"]["contents"][0]["text"], got["data"]["text"]);
        // The same through MCP's resources/read.
        let uri = got["data"]["uri"].as_str().unwrap();
        let read = client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap();
        let ResourceContents::TextResourceContents {
            text, mime_type, ..
        } = &read.contents[0]
        else {
            panic!("a text resource");
        };
        assert_eq!(Some(text.as_str()), got["data"]["text"].as_str());
        assert_eq!(mime_type.as_deref(), Some("text/plain"));
    }
    assert_eq!(
        seen.len() as u64,
        d["nodes"].as_u64().unwrap(),
        "every node is below a root"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_quote_only_the_sources() {
    let s = Sandbox::new();
    corpus(&s);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    wait_trees(&client, 4, 4).await;
    for (path, (query, fact)) in facts() {
        let question = format!("What about the {query}?");
        let (v, err) = call(
            &client,
            "answer_question",
            json!({"dataset_id": "data", "query": question}),
        )
        .await;
        assert!(!err, "{v}");
        assert_valid("answer_question.output.json", &v);
        assert_eq!(v["data"]["mode"], "extractive");
        assert!(v["data"]["answer"].as_str().unwrap().contains(fact), "{v}");
        for e in v["data"]["evidence"].as_array().unwrap() {
            let doc =
                std::fs::read_to_string(s.root.join(e["document"].as_str().unwrap())).unwrap();
            assert!(doc.contains(e["text"].as_str().unwrap()), "invented: {e}");
        }
        let _ = path;
    }
    // A summary of some nodes quotes only their sources too.
    let v = retrieve(&client, "calibration alignment trigger", "collapsed").await;
    let node_ids: Vec<Value> = v["data"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].clone())
        .collect();
    let (sum, err) = call(&client, "rag_summarize", json!({"node_ids": node_ids})).await;
    assert!(!err, "{sum}");
    for sentence in sum["data"]["sentences"].as_array().unwrap() {
        let doc =
            std::fs::read_to_string(s.root.join(sentence["document"].as_str().unwrap())).unwrap();
        assert!(doc.contains(sentence["text"].as_str().unwrap()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_document_rebuilds_only_its_tree_and_a_deleted_one_leaves() {
    let s = Sandbox::new();
    corpus(&s);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let before = wait_trees(&client, 4, 4).await;
    let fact = "The gribbleton magnet current settled at 18 kiloamperes.";
    s.write("trigger.md", document(2, 9, fact).as_bytes());
    let built = before["trees_built"].as_u64().unwrap();
    let after = wait_trees(&client, 4, built + 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after_settled = datasets(&client).await;
    assert_eq!(
        after_settled["trees_built"].as_u64().unwrap(),
        built + 1,
        "only one tree rebuilt"
    );
    let written =
        after["nodes_written"].as_u64().unwrap() - before["nodes_written"].as_u64().unwrap();

    // The nodes written are exactly the changed document's tree.
    let v = retrieve(&client, "gribbleton magnet", "collapsed").await;
    assert!(texts(&v["data"]).iter().any(|t| t.contains(fact)), "{v}");
    let leaf = v["data"]["hits"][0]["id"].as_str().unwrap().to_string();
    let path = ids(&client, "rag_path_to_root", &leaf, json!({}), "path").await;
    let mut doc_nodes = BTreeSet::new();
    let mut queue: VecDeque<String> = path.into_iter().collect();
    while let Some(n) = queue.pop_front() {
        let (got, _) = call(&client, "rag_node_get", json!({"node_id": n})).await;
        if got["data"]["document"] != "trigger.md"
            || !got["data"]["id"]
                .as_str()
                .unwrap()
                .chars()
                .next()
                .unwrap()
                .is_ascii_digit()
        {
            continue;
        }
        if doc_nodes.insert(n.clone()) {
            queue.extend(ids(&client, "rag_node_children", &n, json!({}), "children").await);
        }
    }
    assert_eq!(written, doc_nodes.len() as u64, "nodes rewritten");
    assert!(written < after["nodes"].as_u64().unwrap());
    let old = retrieve(&client, "frimbly trigger", "collapsed").await;
    assert!(!texts(&old["data"]).iter().any(|t| t.contains("frimbly")));

    std::fs::remove_file(s.root.join("calo.md")).unwrap();
    wait_trees(&client, 3, 0).await;
    let gone = retrieve(&client, "quenvilt calibration", "collapsed").await;
    assert!(
        !texts(&gone["data"]).iter().any(|t| t.contains("quenvilt")),
        "{gone}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_ids_name_the_tool_that_lists_valid_ones() {
    let s = Sandbox::new();
    corpus(&s);
    let client = s.mcp().await;
    let (v, err) = call(
        &client,
        "rag_retrieve",
        json!({"dataset_id": "nope", "query": "x"}),
    )
    .await;
    assert!(err);
    assert_eq!(v["error"], "dataset_not_found");
    assert!(v["suggestion"].as_str().unwrap().contains("list_datasets"));
    let (v, err) = call(&client, "rag_node_get", json!({"node_id": "999999.0"})).await;
    assert!(err);
    assert_eq!(v["error"], "node_not_found");
    assert!(v["suggestion"].as_str().unwrap().contains("rag_retrieve"));
    let (v, err) = call(
        &client,
        "read_resource",
        json!({"uri": "raptor://data/nodes/1.99999"}),
    )
    .await;
    assert!(err);
    assert_eq!(v["details"]["code"], -32002);
    let (v, err) = call(
        &client,
        "rag_node_navigation",
        json!({"node_id": "1.0", "direction": "up"}),
    )
    .await;
    assert!(err, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingested_document_is_retrievable_at_once_and_survives_a_rebuild() {
    let s = Sandbox::new();
    corpus(&s);
    let config = s.tmp.path().join("quarry.toml");
    let ingest = s.tmp.path().join("ingested");
    std::fs::write(
        &config,
        format!("[rag]\ningest_dir = \"{}\"\n", ingest.display()),
    )
    .unwrap();
    let config = config.to_str().unwrap().to_string();
    let client = s.mcp_with_args(&["--config", &config]).await;
    wait_indexed(&client).await;
    let fact = "The snorkelwick detector was switched on at dawn on 3 May.";
    let (v, err) = call(
        &client,
        "ingest_document",
        json!({"dataset_id": "notes", "file_content": format!("Some notes.\n\n{fact}\n"), "source": "logbook", "tags": ["run3"]}),
    )
    .await;
    assert!(!err, "{v}");
    assert_valid("ingest_document.output.json", &v);
    let written = ingest.join("notes");
    let file = std::fs::read_dir(&written)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("---\nsource: \"logbook\"\ntags: [\"run3\"]\n---\n"),
        "{text}"
    );
    let query = json!({"dataset_id": "notes", "query": "snorkelwick detector"});
    wait_retrievable(&client, &query, fact, Duration::from_secs(2), "ingested").await;
    client.cancel().await.unwrap();

    // A rebuild empties the catalog; the ingested file brings the document back.
    let mut rebuild = common::quarry();
    rebuild
        .args([
            "rebuild",
            "--root",
            &s.root_arg(),
            "--config",
            &config,
            "--catalog",
        ])
        .arg(&s.catalog);
    common::run_ok(&mut rebuild);
    let client = s.mcp_with_args(&["--config", &config]).await;
    wait_retrievable(&client, &query, fact, Duration::from_secs(20), "rebuilt").await;
}

/// Waits until `rag_retrieve(query)` has a hit holding `fact`; fails after `within`.
async fn wait_retrievable(
    client: &common::Client,
    query: &Value,
    fact: &str,
    within: Duration,
    what: &str,
) {
    let start = Instant::now();
    loop {
        let (v, err) = call(client, "rag_retrieve", query.clone()).await;
        if !err && texts(&v["data"]).iter().any(|t| t.contains(fact)) {
            return;
        }
        assert!(
            start.elapsed() < within,
            "{what}: not retrievable after {within:?}: {v}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every node below the roots that the planted facts' paths reach, as (level,
/// text, children's texts): what a tree is, whatever ids the catalog gave.
async fn tree_shape(client: &common::Client) -> Vec<(u64, String, Vec<String>)> {
    let mut queue: VecDeque<String> = VecDeque::new();
    for (_, (query, _)) in facts() {
        let v = retrieve(client, query, "collapsed").await;
        let leaf = v["data"]["hits"][0]["id"].as_str().unwrap().to_string();
        queue.extend(
            ids(client, "rag_path_to_root", &leaf, json!({}), "path")
                .await
                .pop(),
        );
    }
    let mut seen = BTreeSet::new();
    let mut shape = Vec::new();
    while let Some(n) = queue.pop_front() {
        if !seen.insert(n.clone()) {
            continue;
        }
        let (got, _) = call(client, "rag_node_get", json!({"node_id": n})).await;
        let (children, _) = call(client, "rag_node_children", json!({"node_id": n})).await;
        let mut child_texts: Vec<String> = Vec::new();
        for c in children["data"]["children"].as_array().unwrap() {
            child_texts.push(c["text"].as_str().unwrap().to_string());
            queue.push_back(c["id"].as_str().unwrap().to_string());
        }
        child_texts.sort();
        shape.push((
            got["data"]["level"].as_u64().unwrap(),
            got["data"]["text"].as_str().unwrap().to_string(),
            child_texts,
        ));
    }
    shape.sort();
    shape
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_corpus_gives_the_same_trees() {
    let mut shapes = Vec::new();
    for _ in 0..2 {
        let s = Sandbox::new();
        corpus(&s);
        let client = s.mcp().await;
        wait_indexed(&client).await;
        let mut d = wait_trees(&client, 4, 4).await;
        // The pass may build a tree again (its start and the scan's events
        // overlap) and re-cluster the top layer, renumbering its ids: walk the
        // tree once the counters have been still for a second.
        loop {
            tokio::time::sleep(Duration::from_millis(1000)).await;
            let now = datasets(&client).await;
            if now == d {
                break;
            }
            d = now;
        }
        let shape = tree_shape(&client).await;
        assert_eq!(shape.len() as u64, d["nodes"].as_u64().unwrap());
        assert!(shape.iter().any(|n| n.0 >= 2), "a tree of several layers");
        shapes.push(shape);
        client.cancel().await.unwrap();
    }
    assert_eq!(shapes[0], shapes[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingesting_works_without_a_config_into_the_user_data_folder() {
    let s = Sandbox::new();
    corpus(&s);
    let xdg = s.tmp.path().join("xdg-data");
    let client = s
        .mcp_with_env(&[], &[("XDG_DATA_HOME", xdg.to_str().unwrap())])
        .await;
    wait_indexed(&client).await;
    let fact = "The quillback calorimeter was cooled to minus thirty degrees.";
    let (v, err) = call(
        &client,
        "ingest_document",
        json!({"dataset_id": "shift-notes", "file_content": format!("{fact}\n")}),
    )
    .await;
    assert!(!err, "{v}");
    // Beside the catalogs, not inside the (deletable) catalog folder.
    let written: Vec<_> = std::fs::read_dir(xdg.join("quarry/ingest/shift-notes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(!written[0].starts_with(&s.catalog));
    let query = json!({"dataset_id": "shift-notes", "query": "quillback calorimeter"});
    wait_retrievable(&client, &query, fact, Duration::from_secs(5), "ingested").await;
    client.cancel().await.unwrap();

    // `ingest_dir = false` turns ingesting off, with the error that says how to turn it on.
    let config = s.tmp.path().join("off.toml");
    std::fs::write(&config, "[rag]\ningest_dir = false\n").unwrap();
    let client = s
        .mcp_with_env(
            &["--config", config.to_str().unwrap()],
            &[("XDG_DATA_HOME", xdg.to_str().unwrap())],
        )
        .await;
    let (v, err) = call(
        &client,
        "ingest_document",
        json!({"dataset_id": "shift-notes", "file_content": "More notes.\n"}),
    )
    .await;
    assert!(err, "{v}");
    assert_eq!(v["error"], "ingest_disabled", "{v}");
    client.cancel().await.unwrap();
}
