//! `quarry status`: what the catalog holds per root and kind, how fresh it is,
//! and every file that failed to index. Reads the catalog directly when no process
//! holds it, and asks the process that does (over its socket) otherwise; both
//! answers are the index_status tool's result, printed the same way.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::{Map, Value, json};

use crate::catalog::{Catalog, OpenError};
use crate::cli::StatusArgs;
use crate::config::Settings;
use crate::mcp::client::SocketClient;
use crate::mcp::tools::{Context, ServerSettings};

pub fn run(args: StatusArgs) -> anyhow::Result<()> {
    let targets = Settings::status_targets(args.catalog.as_deref(), args.config.as_deref())?;
    let mut reports = Vec::new();
    let mut failures = 0;
    for (i, (dir, socket)) in targets.iter().enumerate() {
        let report = match Catalog::open_existing(dir) {
            Ok(catalog) => read_locally(catalog).map(|s| (s, false)),
            // No catalog there: perhaps a daemon serves this socket all the same.
            Err(OpenError::Failed(_)) if !crate::catalog::db_path(dir).exists() => {
                ask_daemon(socket).map(|s| (s, true)).map_err(|_| {
                    anyhow::anyhow!(
                        "no catalog at {} and nothing answers on its socket {}: start one with \
                         `quarry serve --root DIR --catalog {}` (or build it with `quarry rebuild`)",
                        dir.display(),
                        socket.display(),
                        dir.display()
                    )
                })
            }
            Err(OpenError::Locked) => ask_daemon(socket).map(|s| (s, true)),
            Err(OpenError::Failed(e) | OpenError::Corrupt(e)) => Err(e),
        };
        let (status, served) = match report {
            Ok(r) => r,
            // With several catalogs, one that cannot be read does not hide the others.
            Err(e) if targets.len() > 1 => {
                failures += 1;
                eprintln!("quarry: catalog {}: {e:#}", dir.display());
                continue;
            }
            Err(e) => return Err(e),
        };
        if args.json {
            reports.push(
                json!({ "catalog": dir.to_string_lossy(), "in_use": served, "status": status }),
            );
        } else {
            let gap = if i > 0 { "\n" } else { "" };
            super::print_out(&format!("{gap}{}", render(dir, served, &status)))?;
        }
    }
    if args.json {
        // One catalog: its index_status result; several: a list of them.
        let out = match reports.len() {
            1 if targets.len() == 1 => reports.remove(0)["status"].take(),
            _ => Value::Array(reports),
        };
        super::print_out(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
    }
    anyhow::ensure!(failures == 0, "{failures} catalog(s) could not be read");
    Ok(())
}

fn read_locally(catalog: Catalog) -> anyhow::Result<Value> {
    let ctx = Context::new(Arc::new(catalog), ServerSettings::default());
    let def = crate::mcp::tools::all()
        .find(|d| d.name == "index_status")
        .context("index_status tool")?;
    gather_pages(|args| {
        let out = (def.handler)(&ctx, &crate::job::Job::default(), args)
            .map_err(|e| anyhow::anyhow!(e.message))?;
        Ok(out.into_json("index_status", 0.0))
    })
}

/// The whole index_status answer (up to 1000 failures a root): its pages,
/// each held to the result budget, gathered by following `next_offset`.
fn gather_pages(
    mut fetch: impl FnMut(Map<String, Value>) -> anyhow::Result<Value>,
) -> anyhow::Result<Value> {
    let page = |offset: u64| {
        let mut args = Map::new();
        args.insert("max_errors".into(), json!(1000 - offset));
        args.insert("offset".into(), json!(offset));
        args
    };
    let mut whole = fetch(page(0))?;
    let mut next = whole["metadata"]["next_offset"].as_u64();
    while let Some(offset) = next.filter(|&n| n < 1000) {
        let more = fetch(page(offset))?;
        for (i, root) in more["data"]["roots"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            for list in ["failed_files", "skipped_paths"] {
                if let (Some(into), Some(from)) = (
                    whole["data"]["roots"][i][list].as_array_mut(),
                    root[list].as_array(),
                ) {
                    into.extend(from.iter().cloned());
                }
            }
        }
        next = more["metadata"]["next_offset"].as_u64();
    }
    if let Some(m) = whole["metadata"].as_object_mut() {
        m.remove("next_offset");
        m.remove("truncated");
    }
    Ok(whole)
}

/// Asks the process serving the catalog, over its socket.
fn ask_daemon(socket: &Path) -> anyhow::Result<Value> {
    let mut client = SocketClient::connect(socket, "quarry-status", Duration::from_secs(30))
        .context("the catalog is in use, but its socket does not answer")?;
    gather_pages(|args| {
        client
            .call_tool("index_status", args)?
            .structured
            .context("the daemon's index_status answer has no structured content")
    })
}

/// The human-readable report.
pub fn render(dir: &Path, served: bool, status: &Value) -> String {
    let data = &status["data"];
    let mut out = format!(
        "catalog {}{}\n",
        dir.display(),
        if served {
            " (in use by a running quarry)"
        } else {
            ""
        }
    );
    let state = match (
        data["complete"].as_bool(),
        data["watching"].as_bool(),
        served,
    ) {
        (Some(true), Some(true), _) => "complete, following changes",
        (Some(true), _, _) => "complete as of the last scan",
        (_, _, true) => "indexing in progress",
        (_, _, false) => {
            "incomplete: the last scan was stopped before it finished; quarry finishes it when it next runs"
        }
    };
    out += &format!("state: {state}\n");
    for root in data["roots"].as_array().into_iter().flatten() {
        let last = root["last_full_scan"].as_str().unwrap_or("never");
        out += &format!(
            "\nroot '{}' -> {}\n  last full scan: {last}{}\n",
            root["name"].as_str().unwrap_or("?"),
            root["path"].as_str().unwrap_or("?"),
            if root["scanning"] == json!(true) {
                " (scanning now)"
            } else {
                ""
            }
        );
        out += &format!(
            "  {:<10} {:>9} {:>9} {:>9}\n",
            "kind", "indexed", "pending", "failed"
        );
        if let Some(kinds) = root["kinds"].as_object() {
            for (kind, c) in kinds {
                out += &format!(
                    "  {:<10} {:>9} {:>9} {:>9}\n",
                    kind,
                    c["indexed"].as_u64().unwrap_or(0),
                    c["pending"].as_u64().unwrap_or(0),
                    c["failed"].as_u64().unwrap_or(0)
                );
            }
        }
        let failed = root["failed_files"]
            .as_array()
            .map_or(&[][..], |v| v.as_slice());
        if !failed.is_empty() {
            out += "  failed to index:\n";
            for f in failed {
                out += &format!(
                    "    {} ({}): {}\n",
                    f["path"].as_str().unwrap_or("?"),
                    f["kind"].as_str().unwrap_or("?"),
                    f["error"].as_str().unwrap_or("?")
                );
            }
        }
        let skipped = root["skipped_paths"]
            .as_array()
            .map_or(&[][..], |v| v.as_slice());
        if !skipped.is_empty() {
            out += &format!(
                "  skipped ({} in all):\n",
                root["skipped_total"].as_u64().unwrap_or(0)
            );
            for f in skipped {
                out += &format!(
                    "    {}: {}\n",
                    f["path"].as_str().unwrap_or("?"),
                    f["reason"].as_str().unwrap_or("?")
                );
            }
        }
        let stats_failed = root["stats_failed_files"]
            .as_array()
            .map_or(&[][..], |v| v.as_slice());
        if !stats_failed.is_empty() {
            out += &format!(
                "  statistics failed ({} in all):\n",
                root["stats_failed_total"].as_u64().unwrap_or(0)
            );
            for f in stats_failed {
                out += &format!(
                    "    {}: {}\n",
                    f["path"].as_str().unwrap_or("?"),
                    f["reason"].as_str().unwrap_or("?")
                );
            }
        }
    }
    out
}
