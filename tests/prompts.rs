//! MCP prompts over both transports (`quarry mcp` on stdio, the daemon's
//! socket): the capability is declared, `prompts/list` gives the four prompts
//! with their required arguments, `prompts/get` fills the arguments into
//! messages naming tools that `tools/list` serves, and bad requests are
//! JSON-RPC errors.

use crate::common;

use common::{Client, Sandbox};
use rmcp::model::{GetPromptRequestParams, JsonObject};
use serde_json::{Value, json};

const PROMPTS: [(&str, &[&str]); 4] = [
    ("explore_root_file", &["path"]),
    ("analyse_dataset", &["dataset", "question"]),
    ("find_in_documents", &["question"]),
    ("explain_code", &["symbol"]),
];

fn arguments(v: Value) -> JsonObject {
    serde_json::from_value(v).unwrap()
}

/// Every `name(` in `text` whose name has an underscore: the tool calls.
fn calls(text: &str) -> Vec<String> {
    text.match_indices('(')
        .map(|(at, _)| {
            let start = text[..at]
                .rfind(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                .map_or(0, |i| i + 1);
            text[start..at].to_string()
        })
        .filter(|n| n.contains('_'))
        .collect()
}

async fn check_prompts(client: &Client) {
    let info = client.peer_info().unwrap();
    assert!(info.capabilities.prompts.is_some(), "prompts capability");
    let listed = client.list_all_prompts().await.unwrap();
    let mut names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    let mut want: Vec<&str> = PROMPTS.iter().map(|(n, _)| *n).collect();
    want.sort_unstable();
    assert_eq!(names, want);
    let tools: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for (name, args) in PROMPTS {
        let prompt = listed.iter().find(|p| p.name == name).unwrap();
        let declared = prompt.arguments.as_ref().unwrap();
        assert_eq!(
            declared.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
            args,
            "{name}"
        );
        assert!(declared.iter().all(|a| a.required == Some(true)), "{name}");
        let values: serde_json::Map<String, Value> = args
            .iter()
            .map(|a| (a.to_string(), json!(format!("VALUE-OF-{a}"))))
            .collect();
        let got = client
            .get_prompt(GetPromptRequestParams::new(name).with_arguments(values))
            .await
            .unwrap();
        assert!(!got.messages.is_empty(), "{name}");
        let text = serde_json::to_string(&got.messages).unwrap();
        for a in args {
            assert!(
                text.contains(&format!("VALUE-OF-{a}")),
                "{name}: {a} not filled in"
            );
        }
        let named = calls(&text);
        assert!(named.len() >= 3, "{name}: {named:?}");
        for tool in &named {
            assert!(
                tools.contains(tool),
                "{name} names {tool}, which tools/list lacks"
            );
        }
    }
    // The first tool of each job, in order.
    let got = client
        .get_prompt(
            GetPromptRequestParams::new("explore_root_file")
                .with_arguments(arguments(json!({"path": "root/uproot-HZZ.root"}))),
        )
        .await
        .unwrap();
    let text = serde_json::to_string(&got.messages).unwrap();
    let first = calls(&text);
    assert_eq!(first[..2], ["inspect_file", "list_branches"]);
    assert!(text.contains("inspect_file(path='root/uproot-HZZ.root')"));
    // Unknown prompts and missing arguments are invalid params (-32602).
    for (name, args) in [
        ("no_such_prompt", json!({})),
        ("explain_code", json!({})),
        ("analyse_dataset", json!({"dataset": "x", "question": " "})),
    ] {
        let err = client
            .get_prompt(GetPromptRequestParams::new(name).with_arguments(arguments(args)))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("-32602") || format!("{err:?}").contains("-32602"),
            "{name}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_served_over_stdio() {
    let s = Sandbox::new();
    let client = s.mcp().await;
    check_prompts(&client).await;
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_served_over_the_daemons_socket() {
    let s = Sandbox::new();
    let _daemon = s.serve();
    let client = s.connect().await;
    check_prompts(&client).await;
    client.cancel().await.unwrap();
}
