//! The semantic path with the real all-MiniLM-L6-v2 (scripts/fetch-model.sh):
//! embeddings against an independent NumPy implementation of the model
//! (tests/fixtures/rag/minilm_embeddings.json, written by
//! scripts/fixtures/minilm_embeddings.py), and hybrid retrieval through MCP.
//!
//! The model is found through `QUARRY_TEST_MODEL_DIR` (scripts/test.sh fetches
//! it and sets it), else in fetch-model.sh's default cache folder. Without it
//! these tests fail when `QUARRY_REQUIRE_MODEL` or `CI` is set, and otherwise
//! pass after printing how to get the model.

use crate::common;

use std::path::PathBuf;

use common::rag::*;
use common::{Sandbox, call, wait_indexed};
use serde_json::{Value, json};

fn model_dir(test: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("QUARRY_TEST_MODEL_DIR") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("model.safetensors").is_file(),
            "QUARRY_TEST_MODEL_DIR={} holds no model.safetensors: run scripts/fetch-model.sh",
            dir.display()
        );
        return Some(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(dir) = cache.map(|c| c.join("quarry/models/all-MiniLM-L6-v2"))
        && dir.join("model.safetensors").is_file()
    {
        return Some(dir);
    }
    let required = ["QUARRY_REQUIRE_MODEL", "CI"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty() && x != "0"));
    assert!(
        !required,
        "{test}: the sentence model is required here but missing: run scripts/fetch-model.sh and set QUARRY_TEST_MODEL_DIR"
    );
    eprintln!(
        "NOT RUN {test}: no sentence model. Run scripts/fetch-model.sh (or scripts/test.sh, which fetches it) to test the semantic path"
    );
    None
}

#[test]
fn embeddings_match_an_independent_numpy_implementation() {
    let Some(dir) = model_dir("embeddings_match_an_independent_numpy_implementation") else {
        return;
    };
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/rag/minilm_embeddings.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let model = quarry::rag::embed::Embedder::load(&dir).unwrap();
    assert_eq!(model.dims(), 384);
    let sentences = fixture["sentences"].as_array().unwrap();
    let texts: Vec<&str> = sentences
        .iter()
        .map(|s| s["text"].as_str().unwrap())
        .collect();
    // All at once: sentences of different lengths share a padded batch.
    let got = model.embed(&texts).unwrap();
    for (s, v) in sentences.iter().zip(&got) {
        let want: Vec<f32> = s["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let worst = want
            .iter()
            .zip(v)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst < 2e-4, "{}: differs by {worst}", s["text"]);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
    }
    // One at a time gives the same vectors as the batch.
    let alone = model.embed(&texts[2..3]).unwrap();
    let diff = alone[0]
        .iter()
        .zip(&got[2])
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(diff < 1e-5, "{diff}");
}

#[test]
fn a_folder_without_a_model_is_an_error_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("tokenizer.json"), "{ not json").unwrap();
    std::fs::write(tmp.path().join("model.safetensors"), b"garbage").unwrap();
    let e = quarry::rag::embed::Embedder::load(tmp.path())
        .err()
        .expect("an error");
    assert!(
        format!("{e:#}").contains("cannot load the sentence model"),
        "{e:#}"
    );
}

/// A fact that shares no word with its question, nor does any other text of
/// the corpus: BM25 finds nothing, only the model's vectors connect them.
const PARAPHRASED: &str =
    "The cryogenic pump stopped because its bearing seized during the cooldown.";
const PARAPHRASE_QUERY: &str = "Why did cooling compressors break down?";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hybrid_retrieval_finds_planted_facts_and_paraphrases() {
    let Some(dir) = model_dir("hybrid_retrieval_finds_planted_facts_and_paraphrases") else {
        return;
    };
    let s = Sandbox::new();
    corpus(&s);
    s.write(
        "cryo.md",
        format!("# Cryogenics\n\n{PARAPHRASED}\n").as_bytes(),
    );
    let corpus_words: std::collections::BTreeSet<String> = walk_words(&s.root);
    for w in PARAPHRASE_QUERY
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        assert!(
            !corpus_words.contains(&w.to_lowercase()),
            "{w} is in the corpus"
        );
    }
    let config = s.tmp.path().join("quarry.toml");
    std::fs::write(
        &config,
        format!("[rag]\nmodel_dir = \"{}\"\n", dir.display()),
    )
    .unwrap();
    let client = s
        .mcp_with_args(&["--config", config.to_str().unwrap()])
        .await;
    wait_indexed(&client).await;
    // Debug builds on a loaded 2-core machine: the model's trees take a while.
    let d = wait_trees_for(&client, 5, 5, std::time::Duration::from_secs(300)).await;
    assert_eq!(d["retrieval"], "hybrid", "{d}");

    for (_, (query, fact)) in facts() {
        for mode in ["collapsed", "traversal"] {
            let v = retrieve(&client, query, mode).await;
            assert_eq!(v["data"]["retrieval"], "hybrid");
            assert_eq!(v["data"]["score"], "rrf(bm25,cosine)");
            assert!(
                texts(&v["data"]).iter().any(|t| t.contains(fact)),
                "{mode} {query}: {v}"
            );
        }
    }
    let v = retrieve(&client, PARAPHRASE_QUERY, "collapsed").await;
    // Only the cosine side ranks anything: every score is at most 1/61.
    for h in v["data"]["hits"].as_array().unwrap() {
        assert!(h["score"].as_f64().unwrap() <= 1.0 / 61.0 + 1e-4, "{h}");
    }
    assert!(
        texts(&v["data"]).iter().any(|t| t.contains(PARAPHRASED)),
        "the paraphrase is not found: {v}"
    );
    let (a, err) = call(
        &client,
        "answer_question",
        json!({"dataset_id": "data", "query": "zorblax alignment constant"}),
    )
    .await;
    assert!(!err, "{a}");
    assert!(
        a["data"]["answer"]
            .as_str()
            .unwrap()
            .contains("42.7 micrometres")
    );
}

/// Every lowercased word of the files under `dir`.
fn walk_words(dir: &std::path::Path) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            out.extend(walk_words(&e.path()));
        } else {
            let text = std::fs::read_to_string(e.path()).unwrap();
            out.extend(
                text.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_lowercase),
            );
        }
    }
    out
}
