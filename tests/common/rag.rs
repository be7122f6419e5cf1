//! Helpers of the RAG tests: a corpus of Markdown documents with planted facts
//! (nonsense words no other text holds), and calls that wait for trees and
//! collect retrieved texts and node ids.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Client, Sandbox, assert_valid, call};

pub const TOPICS: [&str; 4] = [
    "The muon chambers record tracks that cross the outer detector. Alignment of the chambers uses cosmic rays.",
    "Calorimeter calibration fixes the energy scale with electrons from Z boson decays. Each cell has its own constant.",
    "The trigger system selects interesting collisions in real time. Its first level runs on custom hardware.",
    "Data quality monitoring flags runs where a subsystem misbehaved. Shifters check histograms every hour.",
];

/// A Markdown document of `paragraphs` paragraphs about its topic, with `fact`
/// planted in the middle.
pub fn document(topic: usize, paragraphs: usize, fact: &str) -> String {
    let mut text = format!("# Notes on topic {topic}\n\n");
    for p in 0..paragraphs {
        if p == paragraphs / 2 {
            text.push_str(fact);
            text.push_str("\n\n");
        }
        text.push_str(&format!(
            "{} Paragraph {p} adds remark number {} about detail {}.\n\n",
            TOPICS[(topic + p) % TOPICS.len()],
            p * 13 + topic,
            p % 5
        ));
    }
    text
}

pub fn facts() -> BTreeMap<&'static str, (&'static str, &'static str)> {
    BTreeMap::from([
        (
            "muon.md",
            (
                "zorblax alignment",
                "The zorblax alignment constant was measured as 42.7 micrometres.",
            ),
        ),
        (
            "calo.md",
            (
                "quenvilt calibration",
                "The quenvilt calibration drifted by 0.3 percent after the shutdown.",
            ),
        ),
        (
            "trigger.md",
            (
                "frimbly trigger",
                "The frimbly trigger threshold was raised to 27 GeV in the autumn.",
            ),
        ),
        (
            "dq/quality.md",
            (
                "plonkish run",
                "The plonkish run 3811 was declared bad because the magnet tripped.",
            ),
        ),
    ])
}

pub fn corpus(s: &Sandbox) {
    for (i, (path, (_, fact))) in facts().into_iter().enumerate() {
        s.write(path, document(i, 12 + 3 * i, fact).as_bytes());
    }
}

pub async fn datasets(client: &Client) -> Value {
    call(client, "list_datasets", json!({})).await.0["data"]["datasets"][0].clone()
}

/// Waits until the dataset holds `documents` documents and has built at least
/// `trees` trees.
pub async fn wait_trees(client: &Client, documents: u64, trees: u64) -> Value {
    wait_trees_for(client, documents, trees, Duration::from_secs(30)).await
}

/// `wait_trees` with another time limit (the sentence model's trees take longer).
pub async fn wait_trees_for(client: &Client, documents: u64, trees: u64, limit: Duration) -> Value {
    let start = Instant::now();
    loop {
        let d = datasets(client).await;
        if d["documents"] == documents && d["trees_built"].as_u64().unwrap() >= trees {
            return d;
        }
        assert!(start.elapsed() < limit, "trees never built: {d}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn retrieve(client: &Client, query: &str, mode: &str) -> Value {
    let (v, err) = call(
        client,
        "rag_retrieve",
        json!({"dataset_id": "data", "query": query, "mode": mode, "top_k": 5}),
    )
    .await;
    assert!(!err, "{v}");
    assert_valid("rag_retrieve.output.json", &v);
    v
}

pub fn texts(data: &Value) -> Vec<String> {
    // A hit's text is in its content item (rag_retrieve shows it once); the
    // leaves expanded under a summary hit carry theirs.
    let shown = data["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["resource"]["text"].as_str().unwrap().to_string());
    let expanded = data["hits"].as_array().unwrap().iter().flat_map(|h| {
        h["expanded"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| e["text"].as_str().unwrap().to_string())
    });
    shown.chain(expanded).collect()
}

pub async fn ids(client: &Client, tool: &str, node: &str, extra: Value, key: &str) -> Vec<String> {
    let mut a = json!({"node_id": node});
    a.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (v, err) = call(client, tool, a).await;
    assert!(!err, "{tool} {node}: {v}");
    assert_valid(&format!("{tool}.output.json"), &v);
    v["data"][key]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect()
}
