//! `quarry call TOOL [key=value ...]`: one tool call from a shell. It goes to the
//! quarry serving the catalog, over its socket; when none is running it brings the
//! catalog up to date and calls the tool in-process. The answer is printed for
//! people (see `render`) or, with `--json`, as the tool's JSON for programs.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::render;
use crate::cli::CallArgs;
use crate::config::{Endpoint, Settings};
use crate::indexing::{Indexer, Quiet};
use crate::job::Job;
use crate::mcp::client::{CallReply, ProtocolError, SocketClient};
use crate::mcp::tools::Context;

/// A mistake in the command line itself: exit status 2, as for clap's errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// What a failed tool call prints: the tool's error, exit status 1.
#[derive(Debug, thiserror::Error)]
#[error("{tool}: {message}")]
pub struct ToolFailed {
    pub tool: String,
    pub message: String,
}

pub fn run(args: CallArgs) -> anyhow::Result<()> {
    if crate::mcp::tools::all().all(|d| d.name != args.tool) {
        return Err(UsageError(format!(
            "no tool '{}': `quarry tools` lists them",
            args.tool
        ))
        .into());
    }
    let arguments = parse_arguments(
        &args.pairs,
        args.args.as_deref(),
        &string_arguments(&args.tool),
    )?;
    let endpoint = Settings::endpoint(&args.serve)?;
    let reply = call(&endpoint, &args.tool, arguments)?;
    if reply.is_error {
        let error: Value = serde_json::from_str(&reply.text).unwrap_or(Value::Null);
        let message = error["message"].as_str().unwrap_or(&reply.text);
        if let Some(suggestion) = error["suggestion"].as_str() {
            eprintln!("suggestion: {suggestion}");
        }
        if let Some(retry) = error.get("retry_with").filter(|r| !r.is_null()) {
            eprintln!("retry with: {retry}");
        }
        return Err(ToolFailed {
            tool: args.tool,
            message: format!(
                "{} ({})",
                message,
                error["error"].as_str().unwrap_or("error")
            ),
        }
        .into());
    }
    let result = reply.structured.unwrap_or(Value::Null);
    if args.json {
        super::print_out(&format!("{}\n", serde_json::to_string_pretty(&result)?))
    } else {
        super::print_out(&render::readable(&result))
    }
}

/// Over the socket when a quarry serves the catalog, else in-process.
fn call(
    endpoint: &Endpoint,
    tool: &str,
    arguments: Map<String, Value>,
) -> anyhow::Result<CallReply> {
    let timeout = Duration::from_secs(600);
    match SocketClient::connect(&endpoint.socket, "quarry-call", timeout) {
        Ok(mut client) => {
            client
                .call_tool(tool, arguments)
                .map_err(|e| match e.downcast::<ProtocolError>() {
                    Ok(p) => UsageError(format!("{tool}: {}", p.message)).into(),
                    Err(e) => e,
                })
        }
        Err(connect_error) => match &endpoint.settings {
            Some(settings) => in_process(settings, tool, arguments),
            None => anyhow::bail!(
                "no quarry serves the catalog at {} ({connect_error:#}): start one with `quarry serve --root DIR`, or pass --root DIR to call in-process",
                endpoint.catalog_dir.display()
            ),
        },
    }
}

/// Opens the catalog as its owner, brings it up to date with the roots (only
/// what changed since it was last used is read), and calls the tool here.
/// A RAG tool first gets the trees of documents that changed.
fn in_process(
    settings: &Settings,
    tool: &str,
    arguments: Map<String, Value>,
) -> anyhow::Result<CallReply> {
    settings.apply_to_process();
    let catalog = Arc::new(super::open_owned(settings)?);
    let indexer = Indexer::new(catalog.clone(), settings.index.clone())?;
    indexer.scan_all(&Quiet)?;
    let rag = crate::rag::Rag::new(catalog.clone(), settings.rag_options());
    if tool_is_rag(tool) {
        rag.build_missing_trees();
    }
    let mut ctx = Context::new(catalog, settings.server.clone());
    ctx.rag = Some(rag);
    let def = super::tools::served_tools(&settings.server.toolsets)
        .find(|d| d.name == tool)
        .ok_or_else(|| {
            UsageError(format!(
                "the tool '{tool}' is switched off in this configuration"
            ))
        })?;
    let job = Job::new(Some(settings.server.limits.call_timeout));
    let started = std::time::Instant::now();
    Ok(
        match crate::mcp::tools::invoke(def, &ctx, &job, arguments) {
            Ok(output) => {
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                let json = output.into_json(tool, ms);
                CallReply {
                    is_error: false,
                    text: json.to_string(),
                    structured: Some(json),
                }
            }
            Err(e) => CallReply {
                is_error: true,
                text: e.into_json().to_string(),
                structured: None,
            },
        },
    )
}

/// The arguments the tool's input schema declares as strings: `key=value` keeps the text
/// of these (`node_id=49.3` is the id "49.3", not the number 49.3).
fn string_arguments(tool: &str) -> Vec<String> {
    let Some(def) = crate::mcp::tools::all().find(|d| d.name == tool) else {
        return Vec::new();
    };
    let schema: Value = serde_json::from_str(def.input_schema).unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|properties| {
            properties
                .iter()
                .filter(|(_, p)| p["type"] == "string")
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// `key=value` pairs over an optional JSON object. A value is read as JSON when
/// it parses (numbers, booleans, arrays, objects, null), else taken as a string;
/// for the `strings` keys (the tool's string arguments) it is always a string.
pub fn parse_arguments(
    pairs: &[String],
    json: Option<&str>,
    strings: &[String],
) -> Result<Map<String, Value>, UsageError> {
    let mut arguments = match json {
        None => Map::new(),
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(UsageError("--args must be a JSON object".into())),
            Err(e) => return Err(UsageError(format!("--args is not valid JSON: {e}"))),
        },
    };
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| UsageError(format!("'{pair}' is not key=value")))?;
        let value = match serde_json::from_str(value) {
            Ok(Value::String(text)) => Value::String(text),
            Ok(parsed) if !strings.iter().any(|s| s == key) => parsed,
            _ => Value::String(value.to_string()),
        };
        arguments.insert(key.to_string(), value);
    }
    Ok(arguments)
}

fn tool_is_rag(tool: &str) -> bool {
    crate::mcp::tools::all().any(|d| d.name == tool && d.toolset == crate::mcp::tools::Toolset::Rag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_json_where_they_parse_and_strings_otherwise() {
        let pairs = [
            "limit=5",
            "include_stats=true",
            "pattern=*HZZ*",
            "range=[0, 100]",
            "path=data/a b.root",
            "name=\"42\"",
        ]
        .map(String::from);
        let args = parse_arguments(&pairs, Some(r#"{"kind": "all", "limit": 1}"#), &[]).unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"kind": "all", "limit": 5, "include_stats": true, "pattern": "*HZZ*",
                   "range": [0, 100], "path": "data/a b.root", "name": "42"})
        );
    }

    #[test]
    fn malformed_arguments_are_usage_errors() {
        assert!(parse_arguments(&["nokey".into()], None, &[]).is_err());
        assert!(parse_arguments(&["=v".into()], None, &[]).is_err());
        assert!(parse_arguments(&[], Some("[1]"), &[]).is_err());
        assert!(parse_arguments(&[], Some("{"), &[]).is_err());
    }

    /// rag_path_to_root's `node_id` is a string in its schema: `node_id=49.3` is the
    /// node "49.3" (it was sent as a number and refused); its `limit`-like numbers and a
    /// quoted string are read as before.
    #[test]
    fn a_string_argument_keeps_its_text() {
        let strings = string_arguments("rag_path_to_root");
        assert!(strings.iter().any(|s| s == "node_id"), "{strings:?}");
        let pairs = ["node_id=49.3", "other=7", "quoted=\"x\""].map(String::from);
        let args = parse_arguments(&pairs, None, &strings).unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"node_id": "49.3", "other": 7, "quoted": "x"})
        );
    }
}
