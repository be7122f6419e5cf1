//! What clients really forward (DESIGN.md, Results; issue #14, part 4), held for
//! every tool served: the model-facing tool list (name, title, description,
//! inputSchema) is at most 40 KB in all and every description at most 2 KB; every
//! tool called with its entry of tests/clients/tool_args.json (the required
//! arguments on the fixture data, so the tool's defaults) answers with a
//! structuredContent of at most 16 KB; tools/list advertises a long ttlMs.

mod common;

use std::collections::BTreeSet;

use common::{Client, Sandbox, call, wait_indexed};
use serde_json::{Map, Value, json};

const TOOL_LIST_BUDGET: usize = 40 * 1024;
const DESCRIPTION_BUDGET: usize = 2 * 1024;
const RESULT_BUDGET: usize = 16 * 1024;

fn table() -> Map<String, Value> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/tool_args.json");
    match serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap() {
        Value::Object(m) => m,
        _ => panic!("tool_args.json is an object"),
    }
}

/// `{name}` replaced in every string, as tests/clients/tool_table.py does.
fn substitute(v: &Value, values: &Map<String, Value>) -> Value {
    match v {
        Value::String(s) => {
            let mut out = s.clone();
            for (k, x) in values {
                let text = x.as_str().map_or_else(|| x.to_string(), str::to_string);
                out = out.replace(&format!("{{{k}}}"), &text);
            }
            Value::String(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, values)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), substitute(x, values)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The placeholders' values: `root`, then each `_placeholders` entry by its call
/// (retried while the RAG trees are still being built).
async fn resolve(client: &Client, table: &Map<String, Value>, root: &str) -> Map<String, Value> {
    let mut values = Map::new();
    values.insert("root".into(), json!(root));
    for (name, how) in table["_placeholders"].as_object().unwrap() {
        let tool = how["tool"].as_str().unwrap();
        let arguments = substitute(&how["arguments"], &values);
        let mut tries = 0;
        let value = loop {
            let (v, is_error) = call(client, tool, arguments.clone()).await;
            assert!(!is_error, "placeholder {name}: {tool}: {v}");
            let picked = how["pick"]
                .as_array()
                .unwrap()
                .iter()
                .try_fold(&v, |at, step| match step {
                    Value::Number(i) => at.get(i.as_u64().unwrap() as usize),
                    Value::String(k) => at.get(k.as_str()),
                    _ => None,
                })
                .cloned();
            if let Some(p) = picked {
                break p;
            }
            tries += 1;
            assert!(tries < 120, "placeholder {name}: {tool} never gave it: {v}");
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        };
        values.insert(name.clone(), value);
    }
    values
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_list_and_default_results_fit_what_clients_forward() {
    let s = Sandbox::with_testdata();
    let config = s.tmp.path().join("quarry.toml");
    let ingest = s.tmp.path().join("ingest");
    std::fs::write(
        &config,
        format!("[rag]\ningest_dir = \"{}\"\n", ingest.display()),
    )
    .unwrap();
    let client = s
        .mcp_with_args(&["--config", config.to_str().unwrap()])
        .await;
    wait_indexed(&client).await;

    let listed = client.list_tools(None).await.unwrap();
    assert!(
        listed.ttl_ms.is_some_and(|t| t >= 3_600_000),
        "tools/list ttlMs: {:?}",
        listed.ttl_ms
    );
    let mut total = 0;
    let mut sizes = Vec::new();
    for tool in &listed.tools {
        let description = tool.description.as_deref().unwrap_or("");
        assert!(
            description.len() <= DESCRIPTION_BUDGET,
            "{}: description of {} bytes (Claude Code cuts past {DESCRIPTION_BUDGET})",
            tool.name,
            description.len()
        );
        let facing = json!({"name": tool.name, "title": tool.title,
            "description": description, "inputSchema": tool.input_schema});
        let n = serde_json::to_string(&facing).unwrap().len();
        sizes.push((n, tool.name.to_string()));
        total += n;
    }
    sizes.sort();
    eprintln!(
        "model-facing tool list: {} tools, {total} bytes; largest {:?}",
        listed.tools.len(),
        sizes.last()
    );
    assert!(
        total <= TOOL_LIST_BUDGET,
        "the model-facing tool list is {total} bytes (budget {TOOL_LIST_BUDGET}): {sizes:?}"
    );

    // Every served tool has an entry; every entry's calls fit the budget.
    let table = table();
    let served: BTreeSet<String> = listed.tools.iter().map(|t| t.name.to_string()).collect();
    let optional: BTreeSet<String> = table["_optional"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let entries: BTreeSet<String> = table
        .keys()
        .filter(|k| !k.starts_with('_'))
        .cloned()
        .collect();
    let missing: Vec<_> = served.difference(&entries).collect();
    assert!(
        missing.is_empty(),
        "served tools without an entry in tests/clients/tool_args.json: {missing:?}"
    );
    let unknown: Vec<_> = entries
        .difference(&served)
        .filter(|t| !optional.contains(*t))
        .collect();
    assert!(
        unknown.is_empty(),
        "tool_args.json entries for tools not served: {unknown:?}"
    );
    let values = resolve(&client, &table, s.root.to_str().unwrap()).await;
    let mut over = Vec::new();
    let mut calls = 0;
    for tool in &served {
        let entry = &table[tool.as_str()];
        let list = match entry {
            Value::Array(a) => a.clone(),
            one => vec![one.clone()],
        };
        for mut arguments in list {
            let needs = arguments
                .as_object_mut()
                .unwrap()
                .remove("_if_served")
                .and_then(|v| v.as_str().map(str::to_string));
            if needs.is_some_and(|n| !served.contains(&n)) {
                continue;
            }
            let arguments = substitute(&arguments, &values);
            let (v, is_error) = call(&client, tool, arguments.clone()).await;
            assert!(!is_error, "{tool} {arguments}: {v}");
            let n = serde_json::to_string(&v).unwrap().len();
            calls += 1;
            if n > RESULT_BUDGET {
                over.push(format!("{tool} {arguments}: {n} bytes"));
            }
        }
    }
    eprintln!("{calls} calls of {} tools", served.len());
    assert!(
        over.is_empty(),
        "structuredContent over {RESULT_BUDGET} bytes:\n{}",
        over.join("\n")
    );
}
