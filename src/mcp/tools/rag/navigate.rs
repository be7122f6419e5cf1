//! rag_node_get, rag_node_children, rag_node_navigation and rag_path_to_root.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{node, node_brief, sources};
use crate::job::Job;
use crate::mcp::budget::mark_offset;
use crate::mcp::response::{ToolError, ToolOutput};
use crate::mcp::tools::{Context, checked_offset, parse_args};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeArgs {
    node_id: String,
    #[serde(default)]
    direction: Option<String>,
    /// Items of the tool's list (children, nodes, path; for rag_node_get its
    /// sources, parents and children) to skip.
    #[serde(default)]
    offset: Option<i64>,
}

/// `out` with its list at `pointer` (from item `offset` on, `remaining` in
/// all) cut to fit the tool's budget.
fn paged(
    ctx: &Context,
    tool: &'static str,
    mut out: ToolOutput,
    pointer: &str,
    (offset, remaining): (usize, usize),
) -> ToolOutput {
    ctx.budget(tool)
        .page(&mut out, pointer, offset, remaining, "nodes");
    out
}

/// The items of `list` from `offset` on, and how many there were from there.
fn from_offset<T: Clone>(list: &[T], offset: usize) -> (Vec<T>, usize) {
    let rest = &list[offset.min(list.len())..];
    (rest.to_vec(), rest.len())
}

pub fn rag_node_get(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "rag_node_get";
    let args: NodeArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let (ds, i) = node(ctx, &args.node_id)?;
    let n = &ds.nodes[i];
    let mut v = node_brief(&ds, i, true);
    v["dataset_id"] = json!(ds.name);
    v["parents"] = n
        .parents
        .iter()
        .skip(offset)
        .map(|&p| json!(ds.node_id(p as usize)))
        .collect();
    v["children"] = n
        .children
        .iter()
        .skip(offset)
        .map(|&c| json!(ds.node_id(c as usize)))
        .collect();
    let mut all_sources = sources(&ds, i);
    if let Some(list) = all_sources.as_array_mut() {
        list.drain(..offset.min(list.len()));
    }
    v["sources"] = all_sources;
    // The three lists are cut at the same index.
    let mut out = ToolOutput::new(v);
    let lists = [("/sources", 0), ("/parents", 0), ("/children", 0)];
    ctx.budget(tool).cut_together(&mut out, &lists, |o, cut| {
        mark_offset(o, cut, offset, tool, "sources, parents and children");
    });
    Ok(out)
}

pub fn rag_node_children(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "rag_node_children";
    let args: NodeArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let (ds, i) = node(ctx, &args.node_id)?;
    let (rest, remaining) = from_offset(&ds.nodes[i].children, offset);
    let children: Vec<Value> = rest
        .iter()
        .map(|&c| node_brief(&ds, c as usize, true))
        .collect();
    let out = ToolOutput::new(json!({ "node_id": args.node_id, "children": children }));
    Ok(paged(ctx, tool, out, "/children", (offset, remaining)))
}

pub fn rag_node_navigation(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "rag_node_navigation";
    let args: NodeArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
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
    let (rest, remaining) = from_offset(&found, offset);
    let nodes: Vec<Value> = rest.iter().map(|&n| node_brief(&ds, n, true)).collect();
    let out = ToolOutput::new(json!({
        "node_id": args.node_id,
        "direction": direction,
        "nodes": nodes,
        "is_root": ds.nodes[i].parents.is_empty(),
    }));
    Ok(paged(ctx, tool, out, "/nodes", (offset, remaining)))
}

pub fn rag_path_to_root(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "rag_path_to_root";
    let args: NodeArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let (ds, mut i) = node(ctx, &args.node_id)?;
    let mut path = vec![node_brief(&ds, i, false)];
    // Parents sit at higher levels, so following them always ends.
    while let Some(&p) = ds.nodes[i].parents.first() {
        i = p as usize;
        path.push(node_brief(&ds, i, false));
    }
    let (rest, remaining) = from_offset(&path, offset);
    let out = ToolOutput::new(json!({ "node_id": args.node_id, "path": rest }));
    Ok(paged(ctx, tool, out, "/path", (offset, remaining)))
}
