//! Graphs over the project's source files, from the relations stored at
//! index time: `get_class_hierarchy` (bases and derived classes by name),
//! `get_include_graph` (`#include`s resolved against the including file's
//! folder, `[code] include_dirs` and the project's files; Python imports
//! resolved to modules) and `get_call_graph` (call sites by name: syntactic,
//! not type-resolved). Graph answers are flat edge lists, cut at an edge.
//! Includes are resolved in `code_includes`.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::code_includes::{IncludeResolver, Resolution};
use super::code_nav::{ends_alike, one_file, parts, scope_match};
use super::{Context, Effects, ToolDef, Toolset, checked_offset, parse_args};
use crate::catalog::code::{FileRelations, last_part};
use crate::formats::code::Role;
use crate::job::Job;
use crate::mcp::budget::{Cut, mark_offset, set};
use crate::mcp::response::{ToolError, ToolOutput};

macro_rules! schema {
    ($name:literal) => {
        include_str!(concat!("../../../schema/tools/", $name))
    };
}

pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "get_class_hierarchy",
        title: "Class bases and derived classes",
        toolset: Toolset::Code,
        description: "Bases and/or derived classes of a C++/Python class across files (by name; templates by their name).",
        input_schema: schema!("get_class_hierarchy.input.json"),
        output_schema: schema!("get_class_hierarchy.output.json"),
        effects: Effects::READS,
        handler: get_class_hierarchy,
    },
    ToolDef {
        name: "get_include_graph",
        title: "Include and import graph",
        toolset: Toolset::Code,
        description: "#include/import edges resolved to project files, cycles, and who includes a file; all files without filepath.",
        input_schema: schema!("get_include_graph.input.json"),
        output_schema: schema!("get_include_graph.output.json"),
        effects: Effects::READS,
        handler: get_include_graph,
    },
    ToolDef {
        name: "get_call_graph",
        title: "Callers or callees",
        toolset: Toolset::Code,
        description: "Callers or callees of a function, by name (syntactic, not type-resolved): caller, callee, file, line.",
        input_schema: schema!("get_call_graph.input.json"),
        output_schema: schema!("get_call_graph.output.json"),
        effects: Effects::READS,
        handler: get_call_graph,
    },
];

const DEPTH_DEFAULT: usize = 3;
const DEPTH_MAX: usize = 10;
/// Most edges one graph call gathers before paging (a guard on a huge project).
const MAX_EDGES: usize = 20_000;

fn checked_depth(tool: &str, depth: Option<i64>) -> Result<usize, ToolError> {
    match depth {
        None => Ok(DEPTH_DEFAULT),
        Some(d) if (1..=DEPTH_MAX as i64).contains(&d) => Ok(d as usize),
        Some(d) => Err(ToolError::new(
            "limit_exceeded",
            format!("{tool}: depth {d} is outside 1..={DEPTH_MAX}"),
            format!("Use a depth from 1 to {DEPTH_MAX}"),
        )
        .retry_with(json!({ "depth": DEPTH_MAX }))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphArgs {
    filepath: Option<String>,
    depth: Option<i64>,
    offset: Option<i64>,
}

type FileKey = (crate::roots::RootId, String);

/// Every resolved include edge of the project: (from, to, line).
fn include_edges(
    resolver: &IncludeResolver,
    files: &[Arc<FileRelations>],
) -> (Vec<(FileKey, FileKey, u32)>, usize) {
    let mut edges = Vec::new();
    let mut outside = 0;
    for f in files {
        for inc in &f.includes {
            match resolver.resolve(f.root_id, &f.rel, f.language, inc) {
                Resolution::Files(to) => {
                    for t in to {
                        edges.push(((f.root_id, f.rel.clone()), t, inc.line));
                    }
                }
                _ => outside += 1,
            }
        }
    }
    (edges, outside)
}

/// The include cycles: strongly connected groups of files (Tarjan's
/// algorithm, iterative), each listed in path order.
fn cycles(edges: &[(FileKey, FileKey, u32)]) -> Vec<Vec<FileKey>> {
    let mut ids: HashMap<&FileKey, usize> = HashMap::new();
    let mut keys: Vec<&FileKey> = Vec::new();
    for (a, b, _) in edges {
        for k in [a, b] {
            if !ids.contains_key(k) {
                ids.insert(k, keys.len());
                keys.push(k);
            }
        }
    }
    let n = keys.len();
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut self_loop = vec![false; n];
    for (a, b, _) in edges {
        let (x, y) = (ids[a], ids[b]);
        next[x].push(y);
        self_loop[x] |= x == y;
    }
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut counter = 0;
    let mut out = Vec::new();
    for start in 0..n {
        if index[start] != usize::MAX {
            continue;
        }
        let mut work = vec![(start, 0usize)];
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if *i == 0 && index[v] == usize::MAX {
                index[v] = counter;
                low[v] = counter;
                counter += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = next[v].get(*i) {
                *i += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut group = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    group.push(keys[w].clone());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 || self_loop[v] {
                    group.sort();
                    out.push(group);
                }
            }
        }
    }
    out.sort();
    out
}

fn get_include_graph(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "get_include_graph";
    let args: GraphArgs = parse_args(tool, args)?;
    let depth = checked_depth(tool, args.depth)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let resolver = IncludeResolver::new(ctx);
    let files = ctx.catalog.relations().all();
    let (edges, outside) = include_edges(&resolver, &files);
    if job.is_stopped() {
        return Err(ToolError::new(
            "timeout",
            "the include graph was stopped",
            "Name one file with filepath",
        ));
    }
    let all_cycles = cycles(&edges);
    let (shown, included_by, cycles_shown, focus) = match &args.filepath {
        None => (edges.clone(), Vec::new(), all_cycles, None),
        Some(path) => {
            let (root_id, rel) = one_file(ctx, tool, path)?;
            let key = (root_id, rel);
            let down = reachable(&edges, &key, depth, false);
            let up = reachable(&edges, &key, depth, true);
            let mine: Vec<_> = all_cycles
                .into_iter()
                .filter(|c| c.contains(&key))
                .collect();
            (down, up, mine, Some(key))
        }
    };
    let edge_json = |(a, b, line): &(FileKey, FileKey, u32)| json!({ "from": resolver.display(a), "to": resolver.display(b), "line": line });
    let mut data = json!({
        "files": files.len(),
        "edges_total": shown.len(),
        "unresolved_includes": outside,
        "cycles": cycles_shown.iter().take(50).map(|c| c.iter().map(|k| resolver.display(k)).collect::<Vec<_>>()).collect::<Vec<_>>(),
    });
    if let Some(key) = &focus {
        data["filepath"] = resolver.display(key).into();
        data["included_by"] = included_by.iter().map(&edge_json).collect();
    }
    data["edges"] = shown
        .iter()
        .skip(offset)
        .take(MAX_EDGES)
        .map(edge_json)
        .collect();
    data["success"] = true.into();
    let remaining = shown.len().saturating_sub(offset);
    let mut out = ToolOutput::new(data)
        .meta("truncated", false)
        .suggest("get_file_summary(filepath) lists a file's includes with their lines");
    cut_edges(ctx, tool, &mut out, remaining, offset);
    Ok(out)
}

/// Cuts a graph answer's `edges` to the result budget: `remaining` is how
/// many edges there are from `offset` on, so the truncation flag and the next
/// offset count the edges the page left out, not only those the budget cut.
fn cut_edges(
    ctx: &Context,
    tool: &'static str,
    out: &mut ToolOutput,
    remaining: usize,
    offset: usize,
) {
    ctx.budget(tool).cut_list(out, "/edges", |o, cut| {
        let cut = Cut {
            total: remaining.max(cut.kept),
            ..cut
        };
        if cut.truncated() {
            set(&mut o.data, "truncated", true);
        }
        mark_offset(o, cut, offset, tool, "edges");
    });
}

/// Edges reachable from `start` within `depth` steps, breadth first; `up`
/// follows them backwards (who includes the file).
fn reachable(
    edges: &[(FileKey, FileKey, u32)],
    start: &FileKey,
    depth: usize,
    up: bool,
) -> Vec<(FileKey, FileKey, u32)> {
    let mut out = Vec::new();
    let mut seen: HashSet<FileKey> = HashSet::from([start.clone()]);
    let mut queue = VecDeque::from([(start.clone(), 0)]);
    while let Some((at, d)) = queue.pop_front() {
        if d == depth {
            continue;
        }
        for e in edges {
            let (near, far) = if up { (&e.1, &e.0) } else { (&e.0, &e.1) };
            if *near == at {
                out.push(e.clone());
                if seen.insert(far.clone()) {
                    queue.push_back((far.clone(), d + 1));
                }
            }
        }
    }
    out
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HierarchyArgs {
    name: String,
    direction: Option<String>,
    depth: Option<i64>,
    offset: Option<i64>,
}

/// A class found in the relation index.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ClassAt {
    qualified_name: String,
    file: FileKey,
    line: u32,
}

fn classes_named(all: &[Arc<FileRelations>], name: &str) -> Vec<ClassAt> {
    let wanted = parts(name);
    let Some(last) = wanted.last() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for f in all {
        for c in &f.classes {
            if c.name == *last && ends_alike(&parts(&c.qualified_name), &wanted) {
                out.push(ClassAt {
                    qualified_name: c.qualified_name.clone(),
                    file: (f.root_id, f.rel.clone()),
                    line: c.line,
                });
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn get_class_hierarchy(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "get_class_hierarchy";
    let args: HierarchyArgs = parse_args(tool, args)?;
    let depth = checked_depth(tool, args.depth)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let direction = args.direction.as_deref().unwrap_or("both");
    let (up, down) = match direction {
        "up" => (true, false),
        "down" => (false, true),
        "both" => (true, true),
        other => {
            return Err(ToolError::invalid_arguments(
                tool,
                format!("unknown direction '{other}' (up, down or both)"),
            )
            .retry_with(json!({ "direction": "both" })));
        }
    };
    let all = ctx.catalog.relations().all();
    let start = classes_named(&all, args.name.trim());
    if start.is_empty() {
        return Err(ToolError::new(
            "symbol_not_found",
            format!("no indexed class is named '{}'", args.name.trim()),
            "find_symbol(name, kind='class') finds classes by part of their name",
        ));
    }
    let resolver = IncludeResolver::new(ctx);
    let mut edges: BTreeSet<(usize, String, String, String, Option<String>)> = BTreeSet::new();
    let mut classes: BTreeSet<ClassAt> = start.iter().cloned().collect();
    if up {
        let mut frontier: Vec<ClassAt> = start.clone();
        for d in 1..=depth {
            let mut next = Vec::new();
            for c in &frontier {
                let Some(f) = all
                    .iter()
                    .find(|f| (f.root_id, &f.rel) == (c.file.0, &c.file.1))
                else {
                    continue;
                };
                let Some(entry) = f
                    .classes
                    .iter()
                    .find(|e| e.qualified_name == c.qualified_name)
                else {
                    continue;
                };
                for b in &entry.bases {
                    let found = classes_named(&all, &b.name);
                    let base_name = found
                        .first()
                        .map_or_else(|| b.name.clone(), |x| x.qualified_name.clone());
                    edges.insert((
                        d,
                        c.qualified_name.clone(),
                        base_name,
                        b.written.clone(),
                        b.access.clone(),
                    ));
                    for x in found {
                        if classes.insert(x.clone()) {
                            next.push(x);
                        }
                    }
                }
            }
            frontier = next;
        }
    }
    if down {
        let mut frontier: Vec<ClassAt> = start.clone();
        for d in 1..=depth {
            let mut next = Vec::new();
            for c in &frontier {
                let target = parts(&c.qualified_name);
                for f in ctx
                    .catalog
                    .relations()
                    .deriving_from(last_part(&c.qualified_name))
                {
                    for e in &f.classes {
                        for b in &e.bases {
                            if !ends_alike(&parts(&b.name), &target) {
                                continue;
                            }
                            edges.insert((
                                d,
                                e.qualified_name.clone(),
                                c.qualified_name.clone(),
                                b.written.clone(),
                                b.access.clone(),
                            ));
                            let x = ClassAt {
                                qualified_name: e.qualified_name.clone(),
                                file: (f.root_id, f.rel.clone()),
                                line: e.line,
                            };
                            if classes.insert(x.clone()) {
                                next.push(x);
                            }
                        }
                    }
                }
            }
            frontier = next;
        }
    }
    let class_json: Vec<Value> = classes
        .iter()
        .map(|c| json!({ "qualified_name": c.qualified_name, "filepath": resolver.display(&c.file), "line": c.line }))
        .collect();
    let edge_json: Vec<Value> = edges
        .iter()
        .skip(offset)
        .map(|(d, derived, base, written, access)| {
            let mut v = json!({ "derived": derived, "base": base, "written": written, "depth": d });
            if let Some(a) = access {
                v["access"] = a.as_str().into();
            }
            v
        })
        .collect();
    let remaining = edge_json.len();
    let mut out = ToolOutput::new(json!({
        "name": args.name.trim(),
        "direction": direction,
        "matches": start.iter().map(|c| c.qualified_name.clone()).collect::<Vec<_>>(),
        "classes": class_json,
        "edges": edge_json,
        "success": true,
    }))
    .meta("truncated", false)
    .suggest("extract_interface(filepath, name) shows a class's public members");
    cut_edges(ctx, tool, &mut out, remaining, offset);
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallArgs {
    name: String,
    direction: Option<String>,
    depth: Option<i64>,
    offset: Option<i64>,
}

/// One call edge: (depth, caller, callee, file, line).
type CallEdge = (usize, String, String, FileKey, u32);

fn get_call_graph(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "get_call_graph";
    let args: CallArgs = parse_args(tool, args)?;
    let depth = checked_depth(tool, args.depth)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let direction = args.direction.as_deref().unwrap_or("callers");
    let callers = match direction {
        "callers" => true,
        "callees" => false,
        other => {
            return Err(ToolError::invalid_arguments(
                tool,
                format!("unknown direction '{other}' (callers or callees)"),
            )
            .retry_with(json!({ "direction": "callers" })));
        }
    };
    let name = args.name.trim();
    if parts(name).is_empty() {
        return Err(ToolError::invalid_arguments(tool, "name is empty"));
    }
    let relations = ctx.catalog.relations();
    let mut edges: Vec<CallEdge> = Vec::new();
    let mut seen: HashSet<String> = HashSet::from([name.to_string()]);
    let mut frontier = vec![name.to_string()];
    for d in 1..=depth {
        let mut next = Vec::new();
        for target in &frontier {
            if job.is_stopped() || edges.len() >= MAX_EDGES {
                break;
            }
            let found = if callers {
                callers_of(relations, target)
            } else {
                callees_of(ctx, target)
            };
            for (caller, callee, file, line) in found {
                let follow = if callers { &caller } else { &callee };
                if !follow.is_empty() && seen.insert(follow.clone()) {
                    next.push(follow.clone());
                }
                edges.push((d, caller, callee, file, line));
            }
        }
        frontier = next;
    }
    if edges.is_empty()
        && !callers
        && ctx
            .catalog
            .symbols()
            .search(&crate::catalog::code::SymbolQuery {
                name,
                kind: None,
                language: None,
                limit: 1,
            })
            .0
            .is_empty()
    {
        return Err(ToolError::new(
            "symbol_not_found",
            format!("no indexed function is named '{name}'"),
            "find_symbol(name, kind='function') finds functions by part of their name",
        ));
    }
    let resolver = IncludeResolver::new(ctx);
    let total = edges.len();
    let items: Vec<Value> = edges
        .iter()
        .skip(offset)
        .map(|(d, caller, callee, file, line)| {
            json!({
                "caller": if caller.is_empty() { "(file level)" } else { caller },
                "callee": callee, "filepath": resolver.display(file), "line": line, "depth": d,
            })
        })
        .collect();
    let remaining = items.len();
    let mut out = ToolOutput::new(json!({
        "name": name,
        "direction": direction,
        "syntactic": true,
        "edges": items,
        "edges_total": total,
        "success": true,
    }))
    .meta("truncated", false)
    .suggest("Calls are matched by name, not type: find_references(name, kind='call') shows each site with its line");
    cut_edges(ctx, tool, &mut out, remaining, offset);
    Ok(out)
}

/// The call sites of `name` (qualified or not): (caller, callee, file, line).
fn callers_of(
    relations: &crate::catalog::code::RelationIndex,
    name: &str,
) -> Vec<(String, String, FileKey, u32)> {
    let written = parts(name);
    let Some((&last, qualifier)) = written.split_last() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (file, uses) in relations.uses(last) {
        for r in uses {
            if r.role != Role::Call || scope_match(&file, &r, qualifier).is_none() {
                continue;
            }
            let caller = file
                .refs
                .enclosing_function(r.scope)
                .unwrap_or_default()
                .to_string();
            out.push((
                caller,
                name.to_string(),
                (file.root_id, file.rel.clone()),
                r.line,
            ));
        }
    }
    out
}

/// The calls made in the bodies of the functions named `name`.
fn callees_of(ctx: &Context, name: &str) -> Vec<(String, String, FileKey, u32)> {
    let wanted = parts(name);
    let Some(last) = wanted.last() else {
        return Vec::new();
    };
    let (hits, _) = ctx
        .catalog
        .symbols()
        .search(&crate::catalog::code::SymbolQuery {
            name: last,
            kind: None,
            language: None,
            limit: 1000,
        });
    let mut out = Vec::new();
    let mut done = HashSet::new();
    for h in hits {
        let s = &h.symbol;
        if s.kind.is_class() || s.name != *last || !parts(&s.qualified_name).ends_with(&wanted) {
            continue;
        }
        if !done.insert((h.root_id, h.rel.clone(), s.qualified_name.clone())) {
            continue;
        }
        let Some(file) = ctx
            .catalog
            .files()
            .under(h.root_id, &h.rel)
            .into_iter()
            .find(|(p, _)| *p == h.rel)
            .and_then(|(_, e)| ctx.catalog.relations().file(e.id))
        else {
            continue;
        };
        let mut calls: Vec<(u32, String)> = file
            .refs
            .all()
            .filter(|(_, r)| {
                r.role == Role::Call
                    && file.refs.enclosing_function(r.scope) == Some(s.qualified_name.as_str())
            })
            .map(|(i, r)| (r.line, file.refs.names[i].clone()))
            .collect();
        calls.sort();
        for (line, callee) in calls {
            out.push((
                s.qualified_name.clone(),
                callee,
                (file.root_id, file.rel.clone()),
                line,
            ));
        }
    }
    out
}
