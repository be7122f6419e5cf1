//! The code tools: `parse_file`, `find_classes`, `find_functions` (the reference
//! server's, answered from the catalog for indexed files), `execute_query`
//! (parses, or reuses a recently parsed tree), and quarry's own `find_symbol`
//! and `get_outline`. Results have the spec's shapes inside quarry's envelope.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Context, Effects, ToolDef, Toolset, checked_limit, parse_args};
use crate::catalog::FileStatus;
use crate::catalog::code::SymbolQuery;
use crate::formats::Kind;
use crate::formats::code::{
    self, CodeFile, CompiledQuery, Language, ParsedSource, QueryError, QueryLimits, Symbol,
    SymbolKind,
};
use crate::glob::Glob;
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};
use crate::roots::PathError;

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
        description: "Parse C++/Python file(s) and return metadata: class, function and include counts, syntax errors, \
language. `filepath` is a file, a list of files or a directory (recursive by default, filtered by `file_patterns`).",
        input_schema: schema!("parse_file.input.json"),
        output_schema: schema!("parse_file.output.json"),
        effects: Effects::READS,
        handler: parse_file,
    },
    ToolDef {
        name: "find_classes",
        title: "Find class declarations",
        toolset: Toolset::Code,
        description: "Find all class declarations (C++ class/struct definitions, Python classes) with line (1-based) and \
column (0-based). `filepath` is a file, a list of files or a directory.",
        input_schema: schema!("find_classes.input.json"),
        output_schema: schema!("find_classes.output.json"),
        effects: Effects::READS,
        handler: find_classes,
    },
    ToolDef {
        name: "find_functions",
        title: "Find function definitions",
        toolset: Toolset::Code,
        description: "Find all function definitions (free functions, methods, nested, out-of-line A::f, operators, \
constructors, async def) with line (1-based) and column (0-based). `filepath` is a file, a list of files or a directory.",
        input_schema: schema!("find_functions.input.json"),
        output_schema: schema!("find_functions.output.json"),
        effects: Effects::READS,
        handler: find_functions,
    },
    ToolDef {
        name: "execute_query",
        title: "Run a tree-sitter query",
        toolset: Toolset::Code,
        description: "Execute a custom tree-sitter S-expression query on C++/Python file(s); returns capture_name, text, \
line (1-based) and column (0-based) per capture, at most `max_matches` (default 1000).",
        input_schema: schema!("execute_query.input.json"),
        output_schema: schema!("execute_query.output.json"),
        effects: Effects::READS,
        handler: execute_query,
    },
    ToolDef {
        name: "find_symbol",
        title: "Find a symbol anywhere",
        toolset: Toolset::Code,
        description: "Search every indexed C++/Python file for a class or function by name: exact, then prefix, then \
substring matches, case-insensitive; qualified names work too (`Calibration::apply`). Returns file, line, column, kind \
and qualified name.",
        input_schema: schema!("find_symbol.input.json"),
        output_schema: schema!("find_symbol.output.json"),
        effects: Effects::READS,
        handler: find_symbol,
    },
    ToolDef {
        name: "get_outline",
        title: "Outline a source file",
        toolset: Toolset::Code,
        description: "The nested outline of one C++/Python file: classes with their methods, functions with nested \
functions, each with kind, line and end line.",
        input_schema: schema!("get_outline.input.json"),
        output_schema: schema!("get_outline.output.json"),
        effects: Effects::READS,
        handler: get_outline,
    },
];

const DEFAULT_PATTERNS: [&str; 6] = ["*.cpp", "*.hpp", "*.h", "*.cc", "*.cxx", "*.py"];
/// Most files one call covers; a larger directory answers `truncated`.
const MAX_FILES: usize = 1000;
const MATCHES_DEFAULT: usize = 1000;
const MATCHES_MAX: usize = 10_000;
/// How long `execute_query` may spend running queries (parsing not included).
const QUERY_BUDGET: Duration = Duration::from_secs(10);
const SYMBOLS_DEFAULT: usize = 50;
const SYMBOLS_MAX: usize = 1000;

#[derive(Deserialize)]
#[serde(untagged)]
enum PathArg {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilesArgs {
    filepath: PathArg,
    recursive: Option<bool>,
    file_patterns: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryArgs {
    filepath: PathArg,
    query: String,
    recursive: Option<bool>,
    file_patterns: Option<Vec<String>>,
    max_matches: Option<i64>,
}

/// One file a call covers: how the result names it, and where it is.
struct Target {
    display: String,
    place: Result<(usize, String), String>,
}

/// The files a `filepath` argument names: one file (single-file result shape) or
/// several (list and directory shape).
enum Targets {
    Single(Target),
    Many { files: Vec<Target>, truncated: bool },
}

fn not_found(path: &str) -> ToolError {
    ToolError::new(
        "file_not_found",
        format!("Failed to open file: {path}"),
        "Check the path; list_files(kind='code') shows the source files quarry knows",
    )
}

fn path_error(path: &str, e: &PathError) -> ToolError {
    match e {
        PathError::NotFound(_) => not_found(path),
        other => ToolError::from_path(other),
    }
}

fn targets(
    ctx: &Context,
    filepath: PathArg,
    recursive: Option<bool>,
    patterns: Option<Vec<String>>,
) -> Result<Targets, ToolError> {
    let patterns = patterns.unwrap_or_else(|| DEFAULT_PATTERNS.map(String::from).to_vec());
    let globs = patterns
        .iter()
        .map(|p| Glob::new(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ToolError::invalid_arguments("file_patterns", e))?;
    let recursive = recursive.unwrap_or(true);
    let roots = ctx.catalog.roots();
    match filepath {
        PathArg::One(path) => {
            let resolved = roots
                .resolve(&path, None)
                .map_err(|e| path_error(&path, &e))?;
            if resolved.abs.is_dir() {
                let (files, truncated) =
                    folder_files(ctx, resolved.root, &resolved.rel, recursive, &globs);
                Ok(Targets::Many { files, truncated })
            } else {
                Ok(Targets::Single(Target {
                    display: path,
                    place: Ok((resolved.root, resolved.rel)),
                }))
            }
        }
        PathArg::Many(paths) => {
            let mut files = Vec::new();
            for path in paths.into_iter().take(MAX_FILES + 1) {
                let place = match roots.resolve(&path, None) {
                    Ok(r) if r.abs.is_dir() => {
                        let (inner, _) = folder_files(ctx, r.root, &r.rel, recursive, &globs);
                        files.extend(inner);
                        continue;
                    }
                    Ok(r) => Ok((r.root, r.rel)),
                    Err(e) => Err(path_error(&path, &e).message),
                };
                files.push(Target {
                    display: path,
                    place,
                });
            }
            let truncated = files.len() > MAX_FILES;
            files.truncate(MAX_FILES);
            Ok(Targets::Many { files, truncated })
        }
    }
}

/// The indexed source files in a folder that match the patterns, in path order.
fn folder_files(
    ctx: &Context,
    root: usize,
    rel: &str,
    recursive: bool,
    globs: &[Glob],
) -> (Vec<Target>, bool) {
    let multi_root = ctx.catalog.roots().sole().is_none();
    let root_name = &ctx.catalog.roots().list()[root].name;
    let mut out = Vec::new();
    for (path, entry) in ctx.catalog.files().under(root, rel) {
        if entry.kind != Kind::Code {
            continue;
        }
        let below = path[rel.len()..].trim_start_matches('/');
        let name = path.rsplit('/').next().unwrap_or(&path);
        if (!recursive && below.contains('/')) || !globs.iter().any(|g| g.matches_file(name, &path))
        {
            continue;
        }
        if out.len() == MAX_FILES {
            return (out, true);
        }
        let display = if multi_root {
            format!("{root_name}/{path}")
        } else {
            path.clone()
        };
        out.push(Target {
            display,
            place: Ok((root, path)),
        });
    }
    (out, false)
}

/// A source file's symbols: from the catalog when it is indexed, parsed now when
/// it is not indexed yet (written a moment ago).
fn code_file(ctx: &Context, root: usize, rel: &str) -> Result<CodeFile, String> {
    let record = ctx.catalog.record(root, rel).map_err(|e| e.to_string())?;
    match record {
        Some(r) if r.info.kind == Kind::Code => match r.info.status {
            FileStatus::Failed(why) => Err(format!("Failed to parse file: {why}")),
            FileStatus::Ok => ctx
                .catalog
                .code_file(r.id)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "the catalog has no symbols for this file".to_string()),
        },
        _ => {
            let file = ctx
                .catalog
                .roots()
                .open(root, rel)
                .map_err(|e| e.to_string())?;
            let name = rel.rsplit('/').next().unwrap_or(rel);
            code::read(name, file).map_err(|e| format!("Failed to parse file: {e}"))
        }
    }
}

/// Runs `per_file` over the targets, in the single or many-file result shape,
/// held to `cap` bytes of JSON: a single file's longest list is cut, and a
/// folder's results stop at the first file that would pass the cap (the counts
/// still cover every file).
fn for_each_file(
    job: &Job,
    targets: Targets,
    cap: usize,
    mut per_file: impl FnMut(usize, &str) -> Result<Map<String, Value>, String>,
) -> Result<ToolOutput, ToolError> {
    match targets {
        Targets::Single(t) => {
            let (root, rel) = t
                .place
                .map_err(|m| ToolError::new("file_not_found", m, "Check the path"))?;
            let mut fields = per_file(root, &rel).map_err(|why| {
                ToolError::new(
                    "parse_failed",
                    why,
                    "index_status() lists files that failed to index; fix the file and it is re-read",
                )
            })?;
            fields.insert("success".into(), true.into());
            let cut = cut_lists(&mut fields, cap);
            let mut out = ToolOutput::new(Value::Object(fields));
            if let Some((list, total)) = &cut {
                out = out.suggest(format!(
                    "Cut at {cap} bytes, {list} of {total}: get_outline(filepath) gives the class -> method tree, \
find_symbol(name) finds one symbol, execute_query narrows by pattern"
                ));
            }
            Ok(out.meta("truncated", cut.is_some()))
        }
        Targets::Many { files, truncated } => {
            let total = files.len();
            let mut results = Vec::new();
            let (mut failed, mut bytes, mut cut_at) = (0, 0, None);
            for (done, t) in files.into_iter().enumerate() {
                if let Some(stop) = job.stopped() {
                    return Err(stopped(stop));
                }
                job.progress(done as u64, Some(total as u64));
                let mut entry = Map::new();
                entry.insert("filepath".into(), t.display.into());
                match t.place.and_then(|(root, rel)| per_file(root, &rel)) {
                    Ok(fields) => {
                        entry.extend(fields);
                        entry.insert("success".into(), true.into());
                    }
                    Err(why) => {
                        failed += 1;
                        entry.insert("success".into(), false.into());
                        entry.insert("error".into(), why.into());
                    }
                }
                if cut_at.is_none() {
                    bytes += json_len(&entry);
                    if bytes > cap {
                        cut_at = Some(done);
                    } else {
                        results.push(Value::Object(entry));
                    }
                }
            }
            let truncated = truncated || cut_at.is_some();
            let mut out = ToolOutput::new(json!({
                "total_files": total,
                "processed_files": total - failed,
                "failed_files": failed,
                "results": results,
                "truncated": truncated,
            }));
            if let Some(at) = cut_at {
                out = out.suggest(format!(
                    "Results cut at {cap} bytes after {at} of {total} files: name a narrower folder or \
file_patterns, or one file at a time; find_symbol(name) searches every file at once"
                ));
            }
            Ok(out.meta("truncated", truncated))
        }
    }
}

/// Bytes of a value's JSON.
fn json_len(value: &Map<String, Value>) -> usize {
    serde_json::to_vec(value).map_or(0, |v| v.len())
}

/// Cuts the longest list of a single file's result until the whole fits in
/// `cap` bytes, marking it `truncated` with the list's full length as
/// `<list>_total`; which list was cut and its length, if one was.
fn cut_lists(fields: &mut Map<String, Value>, cap: usize) -> Option<(String, usize)> {
    let size = json_len(fields);
    if size <= cap {
        return None;
    }
    let list = ["functions", "classes", "errors"]
        .into_iter()
        .filter(|k| fields.get(*k).is_some_and(Value::is_array))
        .max_by_key(|k| fields[*k].as_array().map_or(0, Vec::len))?;
    let items = fields[list].as_array()?.clone();
    let fixed = size - json_len_value(&fields[list]);
    let mut keep = Vec::new();
    let mut used = fixed + 64;
    for item in items.iter() {
        used += json_len_value(item) + 1;
        if used > cap {
            break;
        }
        keep.push(item.clone());
    }
    fields.insert(list.into(), Value::Array(keep));
    fields.insert(format!("{list}_total"), items.len().into());
    fields.insert("truncated".into(), true.into());
    Some((list.to_string(), items.len()))
}

fn json_len_value(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(0, |v| v.len())
}

fn stopped(stop: crate::job::Stop) -> ToolError {
    ToolError::new(
        "timeout",
        format!("the call stopped before covering every file ({stop:?})"),
        "Name fewer files, or a narrower folder or file_patterns",
    )
}

fn symbol_json(s: &Symbol) -> Value {
    json!({
        "name": s.name, "line": s.line, "column": s.column,
        "qualified_name": s.qualified_name, "kind": s.kind.as_str(), "end_line": s.end_line,
    })
}

fn parse_file(ctx: &Context, job: &Job, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let args: FilesArgs = parse_args("parse_file", args)?;
    let targets = targets(ctx, args.filepath, args.recursive, args.file_patterns)?;
    for_each_file(
        job,
        targets,
        ctx.settings.limits.max_result_bytes,
        |root, rel| {
            let f = code_file(ctx, root, rel)?;
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
    tool: &str,
    field: &str,
    keep: fn(&Symbol) -> bool,
) -> Result<ToolOutput, ToolError> {
    let args: FilesArgs = parse_args(tool, args)?;
    let targets = targets(ctx, args.filepath, args.recursive, args.file_patterns)?;
    for_each_file(
        job,
        targets,
        ctx.settings.limits.max_result_bytes,
        |root, rel| {
            let f = code_file(ctx, root, rel)?;
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

fn parsed_source(ctx: &Context, root: usize, rel: &str) -> Result<Arc<ParsedSource>, String> {
    let key = ctx
        .catalog
        .files()
        .under(root, rel)
        .into_iter()
        .find(|(p, _)| p == rel)
        .map(|(_, e)| (e.id, e.fingerprint));
    ctx.trees.get_or_parse(key, || {
        let file = ctx
            .catalog
            .roots()
            .open(root, rel)
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
    let args: QueryArgs = parse_args("execute_query", args)?;
    let max = checked_limit(
        args.max_matches,
        MATCHES_DEFAULT,
        MATCHES_MAX,
        "a narrower query",
    )?;
    let targets = targets(ctx, args.filepath, args.recursive, args.file_patterns)?;
    let mut compiled: HashMap<Language, Result<CompiledQuery, QueryError>> = HashMap::new();
    let deadline = Instant::now() + QUERY_BUDGET;
    let mut remaining = max;
    let mut truncated = false;
    let mut timed_out = false;
    let (byte_cap, mut bytes, mut bytes_capped) = (ctx.settings.limits.max_result_bytes, 0, false);
    let single = matches!(targets, Targets::Single(_));
    let mut compile_error: Option<QueryError> = None;
    let out = for_each_file(
        job,
        targets,
        ctx.settings.limits.max_result_bytes,
        |root, rel| {
            let source = parsed_source(ctx, root, rel)?;
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
            // The answer is also held to the byte cap: captures past it are dropped,
            // and the files after it get none.
            let mut matches = Vec::with_capacity(run.captures.len());
            for c in &run.captures {
                let m = json!({
                    "capture_name": c.capture_name, "text": c.text, "line": c.line, "column": c.column,
                });
                bytes += m.to_string().len() + 1;
                if bytes > byte_cap {
                    bytes_capped = true;
                    remaining = 0;
                    break;
                }
                matches.push(m);
            }
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
    if bytes_capped {
        out = out.suggest(format!(
            "Cut at {byte_cap} bytes of captures: narrow the query (a more specific node, a #match? predicate) \
or the files (one filepath, file_patterns)"
        ));
    }
    let truncated = truncated || bytes_capped;
    if let Some(obj) = out.data.as_object_mut() {
        obj.insert(
            "truncated".into(),
            (truncated || obj.get("truncated") == Some(&Value::Bool(true))).into(),
        );
        if timed_out {
            obj.insert("timed_out".into(), true.into());
        }
    }
    if truncated && !bytes_capped {
        out = out.suggest(format!("More than {max} captures: narrow the query or the files, or raise max_matches (at most {MATCHES_MAX})"));
    }
    if timed_out {
        out = out.suggest("The query ran out of time: anchor it on a more specific node");
    }
    Ok(out
        .meta("truncated", truncated)
        .meta("timed_out", timed_out))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SymbolArgs {
    name: String,
    kind: Option<String>,
    language: Option<String>,
    limit: Option<i64>,
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
    let query = SymbolQuery {
        name: args.name.trim(),
        kind,
        language,
        limit,
    };
    let (hits, truncated) = ctx.catalog.symbols().search(&query);
    let roots = ctx.catalog.roots().list();
    let symbols: Vec<Value> = hits
        .iter()
        .map(|h| {
            let mut v = symbol_json(&h.symbol);
            v["filepath"] = roots[h.root]
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
    Ok(out.meta("truncated", truncated))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutlineArgs {
    filepath: String,
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
    let file = code_file(ctx, resolved.root, &resolved.rel).map_err(|why| {
        ToolError::new(
            "parse_failed",
            why,
            "index_status() lists files that failed to index",
        )
    })?;
    Ok(ToolOutput::new(json!({
        "filepath": args.filepath,
        "language": file.language.as_str(),
        "outline": outline(&file.symbols),
        "success": true,
    })))
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
