//! What clients really forward (DESIGN.md, Results; issue #14, part 4), held for
//! every tool served: the model-facing tool list (name, title, description,
//! inputSchema) is at most 40 KB in all and every description at most 2 KB; every
//! tool called with its entry of tests/clients/tool_args.json (the required
//! arguments on the fixture data, so the tool's defaults) answers within
//! max_result_bytes; tools/list advertises a long ttlMs.
//!
//! And whatever the arguments (issue #27, part 7): every tool called with its
//! largest allowed arguments (tests/clients/largest_args.json) answers within
//! max_result_bytes, says `truncated` where the whole answer (from a quarry
//! whose cap is out of reach) is longer, and following `next_offset` page by
//! page gives the whole answer's items, each once, in order.

use crate::common;

use std::collections::BTreeSet;

use common::{Client, Sandbox, call, wait_indexed};
use serde_json::{Map, Value, json};

const TOOL_LIST_BUDGET: usize = 40 * 1024;
const DESCRIPTION_BUDGET: usize = 2 * 1024;
/// `max_result_bytes` by default (docs/guide/concepts.md, "Results").
const RESULT_BUDGET: usize = 12_000;

fn table() -> Map<String, Value> {
    table_of("tool_args.json")
}

fn table_of(name: &str) -> Map<String, Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(name);
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
            let n = result_len(&v);
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

/// Bytes of a result as the client receives it: the text item is this JSON,
/// and structuredContent the same (common::call checks they are equal).
fn result_len(v: &Value) -> usize {
    serde_json::to_string(v).unwrap().len()
}

/// A quarry on a copy of the test data (and, if asked, `long_text` as
/// docs/long_log.txt), with an ingest folder and these `[limits]` lines, its
/// catalog complete and the RAG trees of its documents built.
async fn quarry_with(limits: &str, long_document: bool) -> (Sandbox, Client) {
    let s = Sandbox::with_testdata();
    if long_document {
        s.write("docs/long_log.txt", long_text().as_bytes());
    }
    let config = s.tmp.path().join("quarry.toml");
    let ingest = s.tmp.path().join("ingest");
    std::fs::write(
        &config,
        format!(
            "[rag]\ningest_dir = \"{}\"\n[limits]\n{limits}",
            ingest.display()
        ),
    )
    .unwrap();
    let client = s
        .mcp_with_args(&["--config", config.to_str().unwrap()])
        .await;
    wait_indexed(&client).await;
    // Retrieval must see every document's tree: the dataset is complete when
    // it has built a tree for each of its documents.
    let start = std::time::Instant::now();
    loop {
        let (v, _) = call(&client, "list_datasets", json!({})).await;
        let data = v["data"]["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["id"] == "data")
            .cloned()
            .unwrap_or(Value::Null);
        let documents = data["documents"].as_u64().unwrap_or(0);
        if documents > 0 && data["trees_built"].as_u64().unwrap_or(0) >= documents {
            break;
        }
        assert!(start.elapsed().as_secs() < 120, "trees never built: {v}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    (s, client)
}

/// A long text of three-byte characters, quotes and newlines: its JSON is
/// longer than its characters, so a read is cut by bytes before characters.
fn long_text() -> String {
    (0..1500)
        .map(|i| format!("第{i}行：探测器校准 \"ok\" — gain drift\n"))
        .collect()
}

/// A cap out of reach of any answer on the test data: the whole answers.
const WHOLE: &str = "max_result_bytes = 100000000\nmax_document_read_chars = 100000000\n";

fn is_truncated(v: &Value) -> bool {
    v["metadata"]["truncated"] == true || v["data"]["truncated"] == true
}

/// Whether a cut answer says where the next call starts.
fn says_where_to_go_on(v: &Value) -> bool {
    let m = &v["metadata"];
    ["next_offset", "next_offsets", "next_x_offset"]
        .iter()
        .any(|k| m.get(*k).is_some())
}

/// The calls of a table's entry for `tool` that this server makes, with the
/// placeholders filled.
fn calls_of(
    table: &Map<String, Value>,
    tool: &str,
    served: &BTreeSet<String>,
    values: &Map<String, Value>,
) -> Vec<Value> {
    let list = match &table[tool] {
        Value::Array(a) => a.clone(),
        one => vec![one.clone()],
    };
    list.into_iter()
        .filter_map(|mut arguments| {
            let needs = arguments
                .as_object_mut()
                .unwrap()
                .remove("_if_served")
                .and_then(|v| v.as_str().map(str::to_string));
            if needs.is_some_and(|n| !served.contains(&n)) {
                return None;
            }
            Some(substitute(&arguments, values))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_with_its_largest_arguments_fits_max_result_bytes() {
    let ((s, small), (w, whole)) = tokio::join!(quarry_with("", false), quarry_with(WHOLE, false));
    let served: BTreeSet<String> = small
        .list_tools(None)
        .await
        .unwrap()
        .tools
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    let table = table_of("largest_args.json");
    let missing: Vec<_> = served.iter().filter(|t| !table.contains_key(*t)).collect();
    assert!(
        missing.is_empty(),
        "served tools without an entry in tests/clients/largest_args.json: {missing:?}"
    );
    let small_values = resolve(&small, &table, s.root.to_str().unwrap()).await;
    let whole_values = resolve(&whole, &table, w.root.to_str().unwrap()).await;
    let (mut problems, mut report) = (Vec::new(), Vec::new());
    for tool in &served {
        let small_calls = calls_of(&table, tool, &served, &small_values);
        let whole_calls = calls_of(&table, tool, &served, &whole_values);
        for (arguments, whole_arguments) in small_calls.into_iter().zip(whole_calls) {
            let (v, is_error) = call(&small, tool, arguments.clone()).await;
            let (full, full_error) = call(&whole, tool, whole_arguments).await;
            assert!(!is_error && !full_error, "{tool} {arguments}: {v}\n{full}");
            // What a cut answer adds (truncated, next offsets) is in its schema.
            common::assert_valid(&format!("{tool}.output.json"), &v);
            let (n, full_n) = (result_len(&v), result_len(&full));
            report.push(format!("{tool}: {n} bytes (whole: {full_n})"));
            if n > RESULT_BUDGET {
                problems.push(format!("{tool} {arguments}: {n} bytes"));
            }
            if full_n > RESULT_BUDGET && !(is_truncated(&v) && says_where_to_go_on(&v)) {
                problems.push(format!(
                    "{tool} {arguments}: the whole answer is {full_n} bytes, but the cut one \
                     ({n} bytes) does not say truncated and where to go on: {}",
                    v["metadata"]
                ));
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What a walk collects from each page.
type Items = Box<dyn Fn(&Value) -> Vec<Value>>;

fn list_at(pointer: &'static str) -> impl Fn(&Value) -> Vec<Value> {
    move |v: &Value| {
        v.pointer(pointer)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }
}

/// Every page of a call, following `metadata.next_offset`: each page within
/// the budget, cut ones saying so; the pages' items in order, and how many
/// pages there were.
async fn walk(
    client: &Client,
    tool: &str,
    arguments: &Value,
    items: &dyn Fn(&Value) -> Vec<Value>,
) -> (Vec<Value>, usize) {
    let (mut all, mut pages) = (Vec::new(), 0);
    let mut arguments = arguments.clone();
    loop {
        let (v, is_error) = call(client, tool, arguments.clone()).await;
        assert!(!is_error, "{tool} {arguments}: {v}");
        assert!(
            result_len(&v) <= RESULT_BUDGET,
            "{tool} {arguments}: {} bytes",
            result_len(&v)
        );
        pages += 1;
        all.extend(items(&v));
        match v["metadata"].get("next_offset") {
            Some(next) => {
                assert!(
                    is_truncated(&v),
                    "{tool}: a next_offset without truncated: {v}"
                );
                assert!(pages < 500, "{tool}: the pages never end");
                arguments["offset"] = next.clone();
            }
            None => return (all, pages),
        }
    }
}

/// rag_retrieve's hits without their node ids (each quarry numbers its nodes).
fn retrieved(v: &Value) -> Vec<Value> {
    let content = v["data"]["content"].as_array().cloned().unwrap_or_default();
    let hits = v["data"]["hits"].as_array().cloned().unwrap_or_default();
    content
        .iter()
        .zip(&hits)
        .map(|(c, h)| {
            json!({
                "text": c["resource"]["text"], "score": c["resource"]["metadata"]["score"],
                "document": h["document"], "page": h["page"], "line": h["line"],
                "level": h["level"], "kind": h["kind"],
            })
        })
        .collect()
}

/// A 1-D histogram's bins as (low edge, count, error).
fn bins_of(v: &Value) -> Vec<Value> {
    let d = &v["data"];
    let counts = d["bin_counts"].as_array().cloned().unwrap_or_default();
    let n = counts.len();
    assert_eq!(d["bin_edges"].as_array().map_or(0, Vec::len), n + 1, "{d}");
    (0..n)
        .map(|i| json!([d["bin_edges"][i], counts[i], d["bin_errors"][i]]))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_next_offset_gives_every_item_once_in_order() {
    // Reads are cut at 4000 characters, inside the PDF's last page, and by
    // bytes first in the long text.
    let ((s, small), (w, whole)) = tokio::join!(
        quarry_with("max_document_read_chars = 4000\n", true),
        quarry_with(WHOLE, true)
    );
    let (root, whole_root) = (s.root.display().to_string(), w.root.display().to_string());
    let at = |args: &Value, root: &str| -> Value {
        serde_json::from_str(&args.to_string().replace("{root}", root)).unwrap()
    };
    let slice = "h5://{root}/hdf5/pylhe-testfile-hpcgen.hdf5?path=/particles";
    let nano = "{root}/root/nanoAOD_2015_CMS_Open_Data_ttbar.root";
    let hzz = "{root}/root/uproot-HZZ.root";
    let walks: Vec<(&str, Value, Items)> = vec![
        (
            "search_documents",
            json!({"query": "the", "scope": {"type": "global"}, "max_results": 500, "context_lines": 5}),
            Box::new(list_at("/data/matches")),
        ),
        (
            "rag_retrieve",
            json!({"dataset_id": "data", "query": "the calibration run detector pedestal gain", "top_k": 50}),
            Box::new(retrieved),
        ),
        (
            "read_dataset_slice",
            json!({"uri": slice, "slice_str": ":"}),
            Box::new(list_at("/data/data")),
        ),
        (
            "read_dataset_slice",
            json!({"uri": slice, "slice_str": "::-1, 1:12"}),
            Box::new(list_at("/data/data")),
        ),
        (
            "list_branches",
            json!({"path": nano, "tree": "Events", "limit": 1000}),
            Box::new(list_at("/data/branches")),
        ),
        (
            "compute_histogram",
            json!({"path": hzz, "tree": "events", "branch": "Muon_Px", "bins": 5000}),
            Box::new(bins_of),
        ),
        (
            "read_branches",
            json!({"path": nano, "tree": "Events", "branches": ["nJet", "Jet_pt", "Jet_eta"], "limit": 1000000}),
            Box::new(list_at("/data/records")),
        ),
        (
            "execute_query",
            json!({"filepath": "{root}/code/python/calo_tools/calibration.py", "query": "(_) @node", "max_matches": 10000}),
            Box::new(list_at("/data/matches")),
        ),
    ];
    for (tool, arguments, items) in &walks {
        let (pages, calls) = walk(&small, tool, &at(arguments, &root), items).await;
        let (full, is_error) = call(&whole, tool, at(arguments, &whole_root)).await;
        assert!(!is_error, "{tool}: {full}");
        assert!(
            !says_where_to_go_on(&full),
            "{tool}: the whole answer is cut too: {}",
            full["metadata"]
        );
        let expected: Vec<Value> = items(&full)
            .into_iter()
            .map(|i| without_root(i, &whole_root))
            .collect();
        let got: Vec<Value> = pages.into_iter().map(|i| without_root(i, &root)).collect();
        assert!(
            calls > 1,
            "{tool}: one page holds everything; the walk tests nothing"
        );
        assert_eq!(got.len(), expected.len(), "{tool}: {calls} pages");
        assert!(
            got == expected,
            "{tool}: the pages differ from the whole answer"
        );
        eprintln!("{tool}: {} items in {calls} pages", got.len());
    }

    // search_multiple: each query's matches, going on with next_offsets.
    let queries = json!(["the", "calibration", "pedestal", "run"]);
    let arguments = json!({"queries": queries, "scope": {"type": "global"},
        "max_results_per_query": 500, "context_lines": 5});
    let (full, _) = call(&whole, "search_multiple", arguments.clone()).await;
    let mut got: Map<String, Value> = Map::new();
    let mut args = arguments.clone();
    let mut calls = 0;
    loop {
        let (v, is_error) = call(&small, "search_multiple", args.clone()).await;
        assert!(!is_error && result_len(&v) <= RESULT_BUDGET, "{v}");
        calls += 1;
        for (q, r) in v["data"]["results"].as_object().unwrap() {
            let list = got.entry(q.clone()).or_insert(json!([]));
            list.as_array_mut()
                .unwrap()
                .extend(r["matches"].as_array().unwrap().iter().cloned());
        }
        match v["metadata"].get("next_offsets") {
            Some(next) => {
                assert!(is_truncated(&v) && calls < 200, "{v}");
                args["offsets"] = next.clone();
            }
            None => break,
        }
    }
    assert!(calls > 1, "search_multiple: one page holds everything");
    for (q, r) in full["data"]["results"].as_object().unwrap() {
        assert!(
            got[q] == r["matches"],
            "search_multiple '{q}': the pages differ"
        );
    }

    // A 2-D histogram, window after window (x_offset, y_offset).
    let arguments = json!({"path": hzz, "tree": "events", "x_branch": "MET_px", "y_branch": "MET_py",
        "x_bins": 700, "y_bins": 40, "x_range": [-100, 100], "y_range": [-100, 100]});
    let (full, _) = call(&whole, "compute_histogram_2d", at(&arguments, &whole_root)).await;
    let cells = |rows: &Value| -> Vec<Value> {
        rows.as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r.as_array().unwrap().clone())
            .collect()
    };
    let mut args = at(&arguments, &root);
    let (mut got, mut calls) = (Vec::new(), 0);
    loop {
        let (v, is_error) = call(&small, "compute_histogram_2d", args.clone()).await;
        assert!(!is_error && result_len(&v) <= RESULT_BUDGET, "{v}");
        calls += 1;
        got.extend(cells(&v["data"]["counts"]));
        match v["metadata"].get("next_x_offset") {
            Some(x) => {
                args["x_offset"] = x.clone();
                args["y_offset"] = v["metadata"]["next_y_offset"].clone();
                assert!(calls < 500);
            }
            None => break,
        }
    }
    assert!(
        calls > 1 && got == cells(&full["data"]["counts"]),
        "2-D: {calls} windows"
    );

    // read_document: characters, continued with offset.
    for doc in ["docs/detector_calibration.pdf", "docs/long_log.txt"] {
        let args = json!({ "path": format!("{{root}}/{doc}") });
        let (full, _) = call(&whole, "read_document", at(&args, &whole_root)).await;
        let (pages, calls) = walk(&small, "read_document", &at(&args, &root), &|v: &Value| {
            vec![v["data"]["content"].clone()]
        })
        .await;
        let text: String = pages.iter().map(|p| p.as_str().unwrap()).collect();
        assert!(calls > 1, "{doc}: one page");
        assert!(
            text == full["data"]["content"].as_str().unwrap(),
            "{doc}: the pages differ"
        );
        eprintln!(
            "read_document {doc}: {} characters in {calls} pages",
            text.chars().count()
        );
    }

    // get_branch_stats: the branches' statistics, a page of branches at a time.
    let stats = json!({"path": hzz, "tree": "events",
        "branches": ["Muon_Px", "Muon_Py", "Muon_Pz", "Muon_E", "Jet_Px", "Jet_Py", "Jet_Pz", "Jet_E", "MET_px", "MET_py"],
        "quantiles": (1..=99).map(|i| f64::from(i) / 100.0).collect::<Vec<_>>()});
    let (full, _) = call(&whole, "get_branch_stats", at(&stats, &whole_root)).await;
    let (pages, calls) = walk(
        &small,
        "get_branch_stats",
        &at(&stats, &root),
        &|v: &Value| {
            v["data"]["statistics"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, s)| json!([k, s]))
                .collect()
        },
    )
    .await;
    let merged: Map<String, Value> = pages
        .iter()
        .map(|p| (p[0].as_str().unwrap().to_string(), p[1].clone()))
        .collect();
    assert_eq!(
        pages.len(),
        merged.len(),
        "get_branch_stats: a branch came twice"
    );
    assert!(
        calls > 1 && Value::Object(merged) == full["data"]["statistics"],
        "get_branch_stats"
    );
}

/// A value with this sandbox's root path taken out (the two quarries' roots
/// differ).
fn without_root(v: Value, root: &str) -> Value {
    serde_json::from_str(&v.to_string().replace(root, "{root}")).unwrap()
}
