//! The code tools: `parse_file`, `find_classes`, `find_functions` (the reference
//! server's, answered from the catalog for indexed files), `execute_query`
//! (parses, or reuses a recently parsed tree), and quarry's own `find_symbol`
//! and `get_outline`. Results have the spec's shapes inside quarry's envelope.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::code_files::{PathArg, Targets, code_file, for_each_file, path_error, targets};
use super::{Context, Effects, ToolDef, Toolset, checked_limit, checked_offset, parse_args};
use crate::catalog::code::SymbolQuery;
use crate::formats::code::{
    self, CompiledQuery, Language, ParsedSource, QueryError, QueryLimits, Symbol, SymbolKind,
};
use crate::job::Job;
use crate::mcp::budget::{Budget, Cut, mark_offset, set};
use crate::mcp::response::{ToolError, ToolOutput};
use crate::roots::RootId;

macro_rules! schema {
    ($name:literal) => {
        include_str!(concat!("../../../schema/tools/", $name))
    };
}

pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "parse_file",
        title: "Parse C++/Python files",
        toolset: Toolset::Code,
        description: "Parse C++/Python file(s) and return metadata: class, function and include counts, syntax errors, language.",
        input_schema: schema!("parse_file.input.json"),
        output_schema: schema!("parse_file.output.json"),
        effects: Effects::READS,
        handler: parse_file,
    },
    ToolDef {
        name: "find_classes",
        title: "Find class declarations",
        toolset: Toolset::Code,
        description: "Find all class declarations (C++ class/struct, Python class) with line (1-based), column (0-based).",
        input_schema: schema!("find_classes.input.json"),
        output_schema: schema!("find_classes.output.json"),
        effects: Effects::READS,
        handler: find_classes,
    },
    ToolDef {
        name: "find_functions",
        title: "Find function definitions",
        toolset: Toolset::Code,
        description: "Find all function definitions (methods, nested, out-of-line A::f, operators, constructors, async def) with \
line (1-based), column (0-based).",
        input_schema: schema!("find_functions.input.json"),
        output_schema: schema!("find_functions.output.json"),
        effects: Effects::READS,
        handler: find_functions,
    },
    ToolDef {
        name: "execute_query",
        title: "Run a tree-sitter query",
        toolset: Toolset::Code,
        description: "Execute a custom tree-sitter S-expression query on C++/Python file(s): capture_name, text, line (1-based), \
column (0-based).",
        input_schema: schema!("execute_query.input.json"),
        output_schema: schema!("execute_query.output.json"),
        effects: Effects::READS,
        handler: execute_query,
    },
    ToolDef {
        name: "find_symbol",
        title: "Find a symbol anywhere",
        toolset: Toolset::Code,
        description: "Finds a class or function by name in all indexed C++/Python files (exact, prefix, then substring; any case): \
file, line, kind, qualified name.",
        input_schema: schema!("find_symbol.input.json"),
        output_schema: schema!("find_symbol.output.json"),
        effects: Effects::READS,
        handler: find_symbol,
    },
    ToolDef {
        name: "get_outline",
        title: "Outline a source file",
        toolset: Toolset::Code,
        description: "The nested outline of one C++/Python file (classes, methods, functions): kind, line, end line.",
        input_schema: schema!("get_outline.input.json"),
        output_schema: schema!("get_outline.output.json"),
        effects: Effects::READS,
        handler: get_outline,
    },
];

const MATCHES_DEFAULT: usize = 1000;
const MATCHES_MAX: usize = 10_000;
/// How long `execute_query` may spend running queries (parsing not included).
const QUERY_BUDGET: Duration = Duration::from_secs(10);
const SYMBOLS_DEFAULT: usize = 50;
const SYMBOLS_MAX: usize = 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilesArgs {
    filepath: PathArg,
    recursive: Option<bool>,
    file_patterns: Option<Vec<String>>,
    offset: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryArgs {
    filepath: PathArg,
    query: String,
    recursive: Option<bool>,
    file_patterns: Option<Vec<String>>,
    max_matches: Option<i64>,
    offset: Option<i64>,
}

fn symbol_json(s: &Symbol) -> Value {
    json!({
        "name": s.name, "line": s.line, "column": s.column,
        "qualified_name": s.qualified_name, "kind": s.kind.as_str(), "end_line": s.end_line,
    })
}

fn parse_file(ctx: &Context, job: &Job, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let args: FilesArgs = parse_args("parse_file", args)?;
    let offset = checked_offset("parse_file", "offset", args.offset)?;
    let targets = targets(ctx, args.filepath, args.recursive, args.file_patterns)?;
    for_each_file(
        job,
        targets,
        &ctx.budget("parse_file"),
        ("errors", offset),
        |root_id, rel| {
            let f = code_file(ctx, root_id, rel)?;
            let mut m = Map::new();
            m.insert("class_count".into(), f.classes().count().into());
            m.insert("function_count".into(), f.functions().count().into());
            m.insert("include_count".into(), f.include_count.into());
            m.insert("has_errors".into(), f.has_errors.into());
            m.insert("language".into(), f.language.as_str().into());
            if f.has_errors {
                m.insert(
                    "errors".into(),
                    json!(
                        f.error_ranges
                            .iter()
                            .map(|r| json!({
                                "start_line": r.start_line, "start_column": r.start_column,
                                "end_line": r.end_line, "end_column": r.end_column,
                            }))
                            .collect::<Vec<_>>()
                    ),
                );
            }
            Ok(m)
        },
    )
}

fn find_classes(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    list_symbols(ctx, job, args, "find_classes", "classes", |s| {
        s.kind.is_class()
    })
}

fn find_functions(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    list_symbols(ctx, job, args, "find_functions", "functions", |s| {
        !s.kind.is_class()
    })
}

/// The symbols `keep` selects of each target file, as the list `field`.
fn list_symbols(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
    tool: &'static str,
    field: &str,
    keep: fn(&Symbol) -> bool,
) -> Result<ToolOutput, ToolError> {
    let args: FilesArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let targets = targets(ctx, args.filepath, args.recursive, args.file_patterns)?;
    for_each_file(
        job,
        targets,
        &ctx.budget(tool),
        (field, offset),
        |root_id, rel| {
            let f = code_file(ctx, root_id, rel)?;
            let symbols = f.symbols.iter().filter(|s| keep(s)).map(symbol_json);
            Ok(Map::from_iter([(field.to_string(), symbols.collect())]))
        },
    )
}

/// Recently parsed files for `execute_query`, by (file id, fingerprint): a file
/// that changed has a new fingerprint, so an entry may be stale but never wrong.
#[derive(Default)]
pub struct TreeCache {
    trees: Mutex<Vec<CachedTree>>,
}

/// (file id, fingerprint) and the parsed file.
type CachedTree = ((u64, u64), Arc<ParsedSource>);

const TREE_CACHE_FILES: usize = 16;

impl TreeCache {
    fn get_or_parse(
        &self,
        key: Option<(u64, u64)>,
        parse: impl FnOnce() -> Result<ParsedSource, String>,
    ) -> Result<Arc<ParsedSource>, String> {
        if let Some(key) = key {
            let trees = self.trees.lock().expect("tree cache");
            if let Some((_, hit)) = trees.iter().find(|(k, _)| *k == key) {
                return Ok(hit.clone());
            }
        }
        let parsed = Arc::new(parse()?);
        if let Some(key) = key {
            let mut trees = self.trees.lock().expect("tree cache");
            if trees.len() == TREE_CACHE_FILES {
                trees.remove(0);
            }
            trees.push((key, parsed.clone()));
        }
        Ok(parsed)
    }
}

fn parsed_source(ctx: &Context, root_id: RootId, rel: &str) -> Result<Arc<ParsedSource>, String> {
    let key = ctx
        .catalog
        .files()
        .under(root_id, rel)
        .into_iter()
        .find(|(p, _)| p == rel)
        .map(|(_, e)| (e.id, e.fingerprint));
    ctx.trees.get_or_parse(key, || {
        let roots = ctx.catalog.roots();
        let file = match key {
            Some((_, fingerprint)) => roots.open_as_indexed(root_id, rel, fingerprint),
            None => roots.open(root_id, rel),
        }
        .map_err(|e| e.to_string())?;
        let name = rel.rsplit('/').next().unwrap_or(rel);
        code::read_and_parse(name, file).map_err(|e| format!("Failed to parse file: {e}"))
    })
}

fn invalid_query(e: &QueryError) -> ToolError {
    ToolError::new(
        "invalid_query",
        e.to_string(),
        "Fix the S-expression at that offset; node and field names are the grammar's (execute_query on a small file with '(_) @node' shows them)",
    )
    .details(json!({ "kind": e.kind, "offset": e.offset }))
}

fn execute_query(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "execute_query";
    let args: QueryArgs = parse_args(tool, args)?;
    let max = checked_limit(
        args.max_matches,
        MATCHES_DEFAULT,
        MATCHES_MAX,
        "a narrower query",
    )?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let targets = targets(ctx, args.filepath, args.recursive, args.file_patterns)?;
    let mut compiled: HashMap<Language, Result<CompiledQuery, QueryError>> = HashMap::new();
    let deadline = Instant::now() + QUERY_BUDGET;
    // One file: `offset` skips captures, which are found again first.
    let single = matches!(targets, Targets::Single(_));
    let mut remaining = if single {
        max.saturating_add(offset)
    } else {
        max
    };
    let mut truncated = false;
    let mut timed_out = false;
    // Room is left for what is added once the files are done: the notes of
    // max_matches and of the time budget (under 400 bytes).
    let whole = ctx.budget(tool);
    let budget = Budget::new(whole.cap.saturating_sub(400), tool);
    let mut compile_error: Option<QueryError> = None;
    let out = for_each_file(
        job,
        targets,
        &budget,
        ("matches", offset),
        |root_id, rel| {
            let source = parsed_source(ctx, root_id, rel)?;
            let query = compiled
                .entry(source.language)
                .or_insert_with(|| CompiledQuery::compile(source.language, &args.query));
            let query = match query {
                Ok(q) => q,
                Err(e) => {
                    compile_error = Some(e.clone());
                    return Err(e.to_string());
                }
            };
            let limits = QueryLimits {
                max_captures: remaining,
                budget: deadline.saturating_duration_since(Instant::now()),
            };
            let run = query.run(&source, limits, &|| job.is_stopped());
            remaining -= run.captures.len();
            truncated |= run.truncated;
            timed_out |= run.timed_out;
            // A capture longer than the whole budget is never shown whole: it is
            // cut here, before its JSON is built.
            let matches: Vec<Value> = run
                .captures
                .iter()
                .map(|c| {
                    json!({
                        "capture_name": c.capture_name, "text": clipped(&c.text, budget.cap),
                        "line": c.line, "column": c.column,
                    })
                })
                .collect();
            let mut m = Map::new();
            m.insert("matches".into(), matches.into());
            Ok(m)
        },
    );
    // A query that compiles for no file's language is the caller's error.
    let all_failed_to_compile = !compiled.is_empty() && compiled.values().all(|c| c.is_err());
    if let Some(e) = compile_error.filter(|_| single || all_failed_to_compile) {
        return Err(invalid_query(&e));
    }
    let mut out = out?;
    let cut = out.metadata.get("truncated") == Some(&Value::Bool(true));
    if let Some(obj) = out.data.as_object_mut() {
        obj.insert(
            "truncated".into(),
            (truncated || obj.get("truncated") == Some(&Value::Bool(true))).into(),
        );
        if timed_out {
            obj.insert("timed_out".into(), true.into());
        }
    }
    if truncated {
        out = out.suggest(format!("More than {max} captures: narrow the query or the files, or raise max_matches (at most {MATCHES_MAX})"));
    }
    if timed_out {
        out = out.suggest("The query ran out of time: anchor it on a more specific node");
    }
    Ok(out
        .meta("truncated", truncated || cut)
        .meta("timed_out", timed_out))
}

/// A text of at most `cap` bytes, cut on a character boundary with the marker.
fn clipped(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let at = crate::mcp::budget::prefix_within(text, cap);
    format!(
        "{}{}",
        &text[..at],
        crate::mcp::budget::cut_marker(text[at..].chars().count())
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SymbolArgs {
    name: String,
    kind: Option<String>,
    language: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
}

fn parse_kind(kind: &str) -> Result<SymbolKind, ToolError> {
    [
        SymbolKind::Class,
        SymbolKind::Struct,
        SymbolKind::Function,
        SymbolKind::Method,
    ]
    .into_iter()
    .find(|k| k.as_str() == kind)
    .ok_or_else(|| {
        ToolError::invalid_arguments(
            "find_symbol",
            format!("unknown kind '{kind}' (class, struct, function or method)"),
        )
    })
}

fn find_symbol(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: SymbolArgs = parse_args("find_symbol", args)?;
    let limit = checked_limit(
        args.limit,
        SYMBOLS_DEFAULT,
        SYMBOLS_MAX,
        "a more specific name",
    )?;
    let kind = args.kind.as_deref().map(parse_kind).transpose()?;
    let language = args
        .language
        .as_deref()
        .map(|l| {
            Language::parse(l).ok_or_else(|| {
                ToolError::invalid_arguments(
                    "find_symbol",
                    format!("unknown language '{l}' (cpp or python)"),
                )
            })
        })
        .transpose()?;
    if args.name.trim().is_empty() {
        return Err(ToolError::invalid_arguments("find_symbol", "name is empty"));
    }
    let offset = checked_offset("find_symbol", "offset", args.offset)?;
    let query = SymbolQuery {
        name: args.name.trim(),
        kind,
        language,
        limit: offset.saturating_add(limit),
    };
    let (hits, truncated) = ctx.catalog.symbols().search(&query);
    let roots = ctx.catalog.roots().list();
    let symbols: Vec<Value> = hits
        .iter()
        .skip(offset)
        .map(|h| {
            let mut v = symbol_json(&h.symbol);
            v["filepath"] = roots[h.root_id]
                .canonical
                .join(&h.rel)
                .to_string_lossy()
                .into_owned()
                .into();
            v["language"] = h.language.as_str().into();
            v["match"] = h.rank.as_str().into();
            v
        })
        .collect();
    let mut out =
        ToolOutput::new(json!({ "symbols": symbols, "truncated": truncated, "success": true }));
    if let Some(first) = symbols.first() {
        out = out.suggest(format!(
            "See the file's outline with get_outline(filepath='{}')",
            first["filepath"].as_str().unwrap_or_default()
        ));
    } else {
        out = out.suggest(
            "No symbol matched: try part of the name, or find_functions/find_classes on a folder",
        );
    }
    let shown = symbols.len();
    let mut out = out.meta("truncated", truncated);
    ctx.budget("find_symbol")
        .cut_list(&mut out, "/symbols", |o, cut| {
            // More symbols match past the limit (`truncated`) or past the cut.
            let more = truncated || cut.kept < shown;
            if more || cut.shortened {
                set(&mut o.data, "truncated", true);
            }
            let cut = Cut {
                total: if more { cut.kept + 1 } else { cut.kept },
                ..cut
            };
            mark_offset(o, cut, offset, "find_symbol", "symbols");
        });
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutlineArgs {
    filepath: String,
    offset: Option<i64>,
}

fn get_outline(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: OutlineArgs = parse_args("get_outline", args)?;
    let resolved = ctx
        .catalog
        .roots()
        .resolve(&args.filepath, None)
        .map_err(|e| path_error(&args.filepath, &e))?;
    if resolved.abs.is_dir() {
        return Err(ToolError::new(
            "invalid_arguments",
            format!(
                "'{}' is a folder; get_outline takes one file",
                args.filepath
            ),
            "Use find_classes or find_functions on a folder",
        ));
    }
    let file = code_file(ctx, resolved.root_id, &resolved.rel).map_err(|why| {
        ToolError::new(
            "parse_failed",
            why,
            "index_status() lists files that failed to index",
        )
    })?;
    // Pages of the symbols in source order: `offset` symbols are skipped, and
    // a page starting inside a class lists its remaining methods at the top.
    let offset = checked_offset("get_outline", "offset", args.offset)?;
    let symbols = &file.symbols[offset.min(file.symbols.len())..];
    let budget = ctx.budget("get_outline");
    let (kept, out) = budget.fit_prefix(symbols.len(), |k| {
        let mut out = ToolOutput::new(json!({
            "filepath": args.filepath,
            "language": file.language.as_str(),
            "outline": outline(&symbols[..k]),
            "success": true,
        }));
        let cut = Cut {
            kept: k,
            total: symbols.len(),
            shortened: false,
        };
        mark_offset(&mut out, cut, offset, "get_outline", "symbols");
        out
    });
    if kept == 0 && !symbols.is_empty() {
        return Err(ToolError::new(
            "limit_exceeded",
            "one symbol's outline entry is longer than max_result_bytes",
            "find_symbol(name) lists symbols one line each",
        ));
    }
    Ok(out)
}

/// Symbols nested by containment: a method inside its class, a nested function
/// inside its function (symbols come in source order, so a stack suffices).
fn outline(symbols: &[Symbol]) -> Vec<Value> {
    let node = |s: &Symbol| {
        json!({
            "name": s.name, "qualified_name": s.qualified_name, "kind": s.kind.as_str(),
            "line": s.line, "column": s.column, "end_line": s.end_line, "children": [],
        })
    };
    // Stack of (end line, node); a finished node is attached to its parent.
    let mut stack: Vec<(u32, Value)> = Vec::new();
    let mut top_level = Vec::new();
    let close = |stack: &mut Vec<(u32, Value)>, top_level: &mut Vec<Value>| {
        let (_, done) = stack.pop().expect("non-empty stack");
        match stack.last_mut() {
            Some((_, parent)) => parent["children"]
                .as_array_mut()
                .expect("children")
                .push(done),
            None => top_level.push(done),
        }
    };
    for s in symbols {
        while stack.last().is_some_and(|(end, _)| *end < s.line) {
            close(&mut stack, &mut top_level);
        }
        stack.push((s.end_line, node(s)));
    }
    while !stack.is_empty() {
        close(&mut stack, &mut top_level);
    }
    top_level
}
