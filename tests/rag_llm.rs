//! Chat sessions (create_chat_session, answer_question's session_id) and the
//! `[llm]` path of answer_question and rag_summarize, against a mock
//! OpenAI-compatible server written here: a tokio TCP listener speaking just
//! enough HTTP/1.1 to record each request and answer it as told.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::rag::*;
use common::{Sandbox, assert_valid, call, wait_indexed};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_sessions_keep_their_dataset_title_and_questions_across_restarts() {
    let s = Sandbox::new();
    corpus(&s);
    let client = s.mcp().await;
    wait_indexed(&client).await;
    wait_trees(&client, 4, 4).await;

    let (v, err) = call(
        &client,
        "create_chat_session",
        json!({"dataset_id": "data", "title": "Alignment questions"}),
    )
    .await;
    assert!(!err, "{v}");
    assert_valid("create_chat_session.output.json", &v);
    let id = v["data"]["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        v["data"]["message"],
        format!(
            "Successfully created chat session {id} for dataset data with title 'Alignment questions'"
        )
    );
    let (d, _) = call(
        &client,
        "create_chat_session",
        json!({"dataset_id": "data"}),
    )
    .await;
    assert_eq!(d["data"]["title"], "New Chat Session");
    assert_ne!(d["data"]["session_id"], v["data"]["session_id"]);

    let (e, err) = call(
        &client,
        "create_chat_session",
        json!({"dataset_id": "nope"}),
    )
    .await;
    assert!(err);
    assert_eq!(e["error"], "dataset_not_found");
    assert!(e["suggestion"].as_str().unwrap().contains("list_datasets"));

    let questions = [
        "What about the zorblax alignment?",
        "And the frimbly trigger?",
    ];
    for (k, q) in questions.iter().enumerate() {
        let (a, err) = call(
            &client,
            "answer_question",
            json!({"dataset_id": "data", "query": q, "session_id": id}),
        )
        .await;
        assert!(!err, "{a}");
        assert_valid("answer_question.output.json", &a);
        assert_eq!(a["data"]["session_questions"], k + 1);
    }
    let (e, err) = call(
        &client,
        "answer_question",
        json!({"dataset_id": "data", "query": "x", "session_id": "sess_00000000deadbeef"}),
    )
    .await;
    assert!(err);
    assert_eq!(e["error"], "session_not_found");
    assert!(
        e["suggestion"]
            .as_str()
            .unwrap()
            .contains("create_chat_session")
    );
    client.cancel().await.unwrap();

    // The session is a file in the catalog folder, read here with serde_json.
    let file = s.catalog.join("sessions").join(format!("{id}.json"));
    let stored: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(stored["dataset_id"], "data");
    assert_eq!(stored["title"], "Alignment questions");
    let asked: Vec<&str> = stored["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["query"].as_str().unwrap())
        .collect();
    assert_eq!(asked, questions);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // A new quarry over the same catalog keeps appending to it.
    let client = s.mcp().await;
    wait_trees(&client, 4, 0).await;
    let (a, err) = call(
        &client,
        "answer_question",
        json!({"dataset_id": "data", "query": "plonkish run", "session_id": id}),
    )
    .await;
    assert!(!err, "{a}");
    assert_eq!(a["data"]["session_questions"], 3);
}

/// How the mock answers.
#[derive(Clone, Copy, PartialEq)]
enum Reply {
    Answer,
    ServerError,
    Hang,
}

struct Mock {
    port: u16,
    reply: Arc<Mutex<Reply>>,
    /// (request line and headers, body) of every request.
    requests: Arc<Mutex<Vec<(String, Value)>>>,
}

const MOCK_ANSWER: &str =
    "The sources say \"The zorblax alignment constant was measured as 42.7 micrometres.\" [1]";

async fn mock_llm() -> Mock {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let reply = Arc::new(Mutex::new(Reply::Answer));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (r, q) = (reply.clone(), requests.clone());
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let (r, q) = (r.clone(), q.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let n = stream.read(&mut chunk).await.unwrap();
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                while buf.len() < head_end + length {
                    let n = stream.read(&mut chunk).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let body: Value = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
                q.lock().unwrap().push((head, body));
                let mode = *r.lock().unwrap();
                let (status, payload) = match mode {
                    Reply::Answer => (
                        "200 OK",
                        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": MOCK_ANSWER}}]})
                            .to_string(),
                    ),
                    Reply::ServerError => ("500 Internal Server Error", "{\"error\": \"boom\"}".into()),
                    Reply::Hang => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        return;
                    }
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
                    payload.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    Mock {
        port,
        reply,
        requests,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_llm_answers_abstractively_from_the_evidence_and_failures_fall_back() {
    let mock = mock_llm().await;
    let s = Sandbox::new();
    corpus(&s);
    let config = s.tmp.path().join("quarry.toml");
    std::fs::write(
        &config,
        format!(
            "[llm]\nbase_url = \"http://127.0.0.1:{}/v1\"\nmodel = \"mock-model\"\napi_key_env = \"QUARRY_TEST_LLM_KEY\"\ntimeout_secs = 1.5\n",
            mock.port
        ),
    )
    .unwrap();
    let client = s
        .mcp_with_env(
            &["--config", config.to_str().unwrap()],
            &[("QUARRY_TEST_LLM_KEY", "sk-test-123")],
        )
        .await;
    wait_indexed(&client).await;
    wait_trees(&client, 4, 4).await;

    let fact = "The zorblax alignment constant was measured as 42.7 micrometres.";
    let (v, err) = call(
        &client,
        "answer_question",
        json!({"dataset_id": "data", "query": "What is the zorblax alignment constant?", "temperature": 0.2}),
    )
    .await;
    assert!(!err, "{v}");
    assert_valid("answer_question.output.json", &v);
    assert_eq!(v["data"]["mode"], "abstractive");
    assert_eq!(v["data"]["answer"], MOCK_ANSWER);
    assert_eq!(v["data"]["model"], "mock-model");
    assert_eq!(v["data"]["temperature_applied"], true);
    let sources = v["data"]["sources"].as_array().unwrap();
    assert!(
        sources
            .iter()
            .any(|s| s["text"].as_str().unwrap().contains(fact)),
        "{v}"
    );
    {
        let requests = mock.requests.lock().unwrap();
        assert_eq!(requests.len(), 1);
        let (head, body) = &requests[0];
        assert!(
            head.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
            "{head}"
        );
        assert!(
            head.lines()
                .any(|l| l.eq_ignore_ascii_case("authorization: Bearer sk-test-123")),
            "{head}"
        );
        assert_eq!(body["model"], "mock-model");
        assert_eq!(body["temperature"], 0.2);
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains("zorblax alignment constant?"), "{user}");
        assert!(
            user.contains(fact),
            "the evidence is not in the prompt: {user}"
        );
        assert!(user.contains("[1] (muon.md p.1 l."), "{user}");
    }

    // rag_summarize: the nodes' texts go to the model, the default temperature applies.
    let node_ids: Vec<Value> = sources.iter().map(|s| s["node_id"].clone()).collect();
    let (sum, err) = call(&client, "rag_summarize", json!({"node_ids": node_ids})).await;
    assert!(!err, "{sum}");
    assert_valid("rag_summarize.output.json", &sum);
    assert_eq!(sum["data"]["mode"], "abstractive");
    assert_eq!(sum["data"]["summary"], MOCK_ANSWER);
    {
        let requests = mock.requests.lock().unwrap();
        let body = &requests[1].1;
        assert_eq!(body["temperature"], 0.7);
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains(fact), "{user}");
    }

    // A failing server: extractive, with the reason.
    *mock.reply.lock().unwrap() = Reply::ServerError;
    let (v, err) = call(
        &client,
        "answer_question",
        json!({"dataset_id": "data", "query": "What is the zorblax alignment constant?"}),
    )
    .await;
    assert!(!err, "{v}");
    assert_eq!(v["data"]["mode"], "extractive");
    assert!(v["data"]["answer"].as_str().unwrap().contains(fact));
    assert!(
        v["data"]["llm_error"]
            .as_str()
            .unwrap()
            .contains("HTTP 500"),
        "{v}"
    );
    assert!(v["suggestions"].to_string().contains("extractive"));

    // A server that never answers: the timeout (1.5 s) ends the wait.
    *mock.reply.lock().unwrap() = Reply::Hang;
    let started = Instant::now();
    let (v, err) = call(
        &client,
        "rag_summarize",
        json!({"node_ids": [sources[0]["node_id"]]}),
    )
    .await;
    let waited = started.elapsed();
    assert!(!err, "{v}");
    assert_eq!(v["data"]["mode"], "extractive");
    assert!(
        v["data"]["llm_error"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{v}"
    );
    assert!(
        waited >= Duration::from_millis(1400) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    client.cancel().await.unwrap();

    // Without the key variable the model is not called at all.
    let before = mock.requests.lock().unwrap().len();
    let client = s
        .mcp_with_env(
            &["--config", config.to_str().unwrap()],
            &[("QUARRY_TEST_LLM_KEY", "")],
        )
        .await;
    wait_trees(&client, 4, 0).await;
    let (v, _) = call(
        &client,
        "answer_question",
        json!({"dataset_id": "data", "query": "zorblax alignment"}),
    )
    .await;
    assert_eq!(v["data"]["mode"], "extractive");
    assert!(
        v["data"]["llm_error"]
            .as_str()
            .unwrap()
            .contains("QUARRY_TEST_LLM_KEY")
    );
    assert_eq!(mock.requests.lock().unwrap().len(), before);
}
