//! rag_node_get, rag_node_children, rag_node_navigation and rag_path_to_root.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{node, node_brief, sources};
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};
use crate::mcp::tools::{Context, parse_args};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeArgs {
    node_id: String,
    #[serde(default)]
    direction: Option<String>,
}

pub fn rag_node_get(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: NodeArgs = parse_args("rag_node_get", args)?;
    let (ds, i) = node(ctx, &args.node_id)?;
    let n = &ds.nodes[i];
    let mut v = node_brief(&ds, i, true);
    v["dataset_id"] = json!(ds.name);
    v["parents"] = n
        .parents
        .iter()
        .map(|&p| json!(ds.node_id(p as usize)))
        .collect();
    v["children"] = n
        .children
        .iter()
        .map(|&c| json!(ds.node_id(c as usize)))
        .collect();
    v["sources"] = sources(&ds, i);
    Ok(ToolOutput::new(v))
}

pub fn rag_node_children(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: NodeArgs = parse_args("rag_node_children", args)?;
    let (ds, i) = node(ctx, &args.node_id)?;
    let children: Vec<Value> = ds.nodes[i]
        .children
        .iter()
        .map(|&c| node_brief(&ds, c as usize, true))
        .collect();
    Ok(ToolOutput::new(
        json!({ "node_id": args.node_id, "children": children }),
    ))
}

pub fn rag_node_navigation(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: NodeArgs = parse_args("rag_node_navigation", args)?;
    let (ds, i) = node(ctx, &args.node_id)?;
    let direction = args.direction.as_deref().unwrap_or("");
    let parents: Vec<usize> = ds.nodes[i].parents.iter().map(|&p| p as usize).collect();
    let found: Vec<usize> = match direction {
        "parent" => parents,
        "siblings" => {
            let mut s: Vec<usize> = parents
                .iter()
                .flat_map(|&p| ds.nodes[p].children.iter().map(|&c| c as usize))
                .filter(|&c| c != i)
                .collect();
            s.sort_unstable();
            s.dedup();
            s
        }
        other => {
            return Err(ToolError::new(
                "invalid_arguments",
                format!("direction '{other}' is not 'parent' or 'siblings'"),
                "Use direction 'parent' or 'siblings'; rag_node_children goes down",
            ));
        }
    };
    let nodes: Vec<Value> = found.iter().map(|&n| node_brief(&ds, n, true)).collect();
    Ok(ToolOutput::new(json!({
        "node_id": args.node_id,
        "direction": direction,
        "nodes": nodes,
        "is_root": ds.nodes[i].parents.is_empty(),
    })))
}

pub fn rag_path_to_root(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: NodeArgs = parse_args("rag_path_to_root", args)?;
    let (ds, mut i) = node(ctx, &args.node_id)?;
    let mut path = vec![node_brief(&ds, i, false)];
    // Parents sit at higher levels, so following them always ends.
    while let Some(&p) = ds.nodes[i].parents.first() {
        i = p as usize;
        path.push(node_brief(&ds, i, false));
    }
    Ok(ToolOutput::new(
        json!({ "node_id": args.node_id, "path": path }),
    ))
}
