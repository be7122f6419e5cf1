//! Code navigation over the whole project, from the catalog: `find_references`
//! (every indexed use of a name, resolved by qualifier and scope as far as
//! syntax allows), `get_file_summary` and `extract_interface`. Nothing here
//! parses a file: the uses, includes and members were stored at index time.
//! `find_references` reads the lines it shows from the files themselves.

use std::collections::HashMap;
use std::io::Read;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::code_files::{code_file, path_error};
use super::code_includes::{IncludeResolver, Resolution};
use super::{Context, Effects, ToolDef, Toolset, checked_limit, checked_offset, parse_args};
use crate::catalog::code::FileRelations;
use crate::formats::code::{Access, Language, Reference, Role};
use crate::job::Job;
use crate::mcp::budget::{Cut, mark_offset, set};
use crate::mcp::response::{ToolError, ToolOutput};
use crate::roots::RootId;

macro_rules! schema {
    ($name:literal) => {
        include_str!(concat!("../../../schema/tools/", $name))
    };
}

pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "find_references",
        title: "Find uses of a symbol",
        toolset: Toolset::Code,
        description: "Every indexed use of a name in C++/Python files (qualifier, scope, this/self, imports resolved syntactically): \
file, line, column, role, enclosing function, line text.",
        input_schema: schema!("find_references.input.json"),
        output_schema: schema!("find_references.output.json"),
        effects: Effects::READS,
        handler: find_references,
    },
    ToolDef {
        name: "get_file_summary",
        title: "Summarise a source file",
        toolset: Toolset::Code,
        description: "One C++/Python file in one answer: line counts, includes/imports (resolved to files), symbols.",
        input_schema: schema!("get_file_summary.input.json"),
        output_schema: schema!("get_file_summary.output.json"),
        effects: Effects::READS,
        handler: get_file_summary,
    },
    ToolDef {
        name: "extract_interface",
        title: "A class's public interface",
        toolset: Toolset::Code,
        description: "A class's bases and public members with signatures, no bodies.",
        input_schema: schema!("extract_interface.input.json"),
        output_schema: schema!("extract_interface.output.json"),
        effects: Effects::READS,
        handler: extract_interface,
    },
];

const REFERENCES_DEFAULT: usize = 100;
const REFERENCES_MAX: usize = 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReferencesArgs {
    name: String,
    kind: Option<String>,
    scope: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
}

/// A qualified name's parts, whatever its separators (`a::B`, `a.B`);
/// relative Python modules lose their leading dots.
pub(super) fn parts(name: &str) -> Vec<&str> {
    name.split("::")
        .flat_map(|p| p.split('.'))
        .filter(|p| !p.is_empty())
        .collect()
}

/// Whether one of two qualified names ends the other (`Calibrator` and
/// `calo::Calibrator`): a qualifier is written relative to where it is used.
pub(super) fn ends_alike(a: &[&str], b: &[&str]) -> bool {
    let n = a.len().min(b.len());
    n > 0 && a[a.len() - n..] == b[b.len() - n..]
}

/// How a use was tied to the wanted scope.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Match {
    /// Its written qualifier (or `this`/`self`, or an import) names the scope.
    Qualified,
    /// It sits in the scope (or a `using namespace` of its file names it).
    Scope,
    /// Only the name matches: a member of an object of unknown type.
    Name,
}

impl Match {
    fn as_str(self) -> &'static str {
        match self {
            Match::Qualified => "qualifier",
            Match::Scope => "scope",
            Match::Name => "name",
        }
    }
}

/// The Python module a file is (`pkg/base.py` -> `pkg.base`).
pub(super) fn python_module(rel: &str) -> String {
    let stem = rel.strip_suffix(".py").unwrap_or(rel);
    let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
    stem.replace('/', ".")
}

/// Whether a use in `file` can be the wanted scope's (`wanted` empty: any).
pub(super) fn scope_match(file: &FileRelations, r: &Reference, wanted: &[&str]) -> Option<Match> {
    if wanted.is_empty() {
        return Some(Match::Name);
    }
    let refs = &file.refs;
    let qualifier = refs.qualifier(r);
    if !qualifier.is_empty() {
        let q = parts(qualifier);
        let by_import = r.imported && (q.starts_with(wanted) || wanted.starts_with(&q));
        return (ends_alike(&q, wanted) || by_import).then_some(Match::Qualified);
    }
    if r.member {
        return Some(Match::Name);
    }
    let module = match file.language {
        Language::Python => python_module(&file.rel),
        Language::Cpp => String::new(),
    };
    let scope = refs.scope_name(r.scope);
    let mut around: Vec<&str> = parts(&module);
    around.extend(parts(scope));
    // The scopes a use sits in: every enclosing one (a function's own name
    // is not a scope its body's names belong to).
    let own = match r
        .scope
        .checked_sub(1)
        .and_then(|i| refs.scopes.get(i as usize))
    {
        Some(s) if s.kind == crate::formats::code::ScopeKind::Function => 1,
        _ => 0,
    };
    let module_len = parts(&module).len();
    for end in (module_len.max(1)..=around.len().saturating_sub(own)).rev() {
        if ends_alike(&around[..end], wanted) {
            return Some(Match::Scope);
        }
    }
    for using in &refs.usings {
        if parts(using).ends_with(wanted) {
            return Some(Match::Scope);
        }
    }
    None
}

/// One use found, with what it shows.
struct Found {
    file: std::sync::Arc<FileRelations>,
    reference: Reference,
    how: Match,
}

fn find_references(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "find_references";
    let args: ReferencesArgs = parse_args(tool, args)?;
    let limit = checked_limit(
        args.limit,
        REFERENCES_DEFAULT,
        REFERENCES_MAX,
        "a kind or scope",
    )?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let role = args.kind.as_deref().map(parse_role).transpose()?;
    let written = parts(args.name.trim());
    let Some((&last, qualifier)) = written.split_last() else {
        return Err(ToolError::invalid_arguments(tool, "name is empty"));
    };
    let mut wanted: Vec<&str> = args.scope.as_deref().map(parts).unwrap_or_default();
    wanted.extend(qualifier);
    let mut found = Vec::new();
    for (file, uses) in ctx.catalog.relations().uses(last) {
        for r in uses {
            if role.is_some_and(|k| k != r.role) {
                continue;
            }
            if let Some(how) = scope_match(&file, &r, &wanted) {
                found.push(Found {
                    file: file.clone(),
                    reference: r,
                    how,
                });
            }
        }
    }
    let total = found.len();
    let page: Vec<&Found> = found.iter().skip(offset).take(limit).collect();
    let mut lines = LineReader::new(ctx);
    let items: Vec<Value> = page
        .iter()
        .map(|f| reference_json(ctx, f, &mut lines, !wanted.is_empty()))
        .collect();
    let more = offset + page.len() < total;
    let mut out = ToolOutput::new(json!({
        "name": args.name.trim(),
        "references": items,
        "total": total,
        "truncated": more,
        "success": true,
    }))
    .meta("truncated", more);
    out = if total == 0 {
        out.suggest("No indexed use: find_symbol(name) finds names by part; local variables and parameters are not indexed")
    } else {
        out.suggest("get_call_graph(name) shows callers; get_class_hierarchy(name) a class's bases and derived classes")
    };
    let shown = items_len(&out);
    ctx.budget(tool)
        .cut_list(&mut out, "/references", |o, cut| {
            let cut = Cut {
                total: if more { cut.kept + 1 } else { cut.kept },
                ..cut
            };
            if cut.kept < shown || more {
                set(&mut o.data, "truncated", true);
            }
            mark_offset(o, cut, offset, tool, "references");
        });
    if more && out.metadata.get("next_offset").is_none() {
        out.metadata
            .insert("next_offset".into(), (offset + page.len()).into());
    }
    Ok(out)
}

fn items_len(out: &ToolOutput) -> usize {
    out.data["references"].as_array().map_or(0, Vec::len)
}

fn parse_role(kind: &str) -> Result<Role, ToolError> {
    Role::parse(kind).ok_or_else(|| {
        ToolError::invalid_arguments(
            "find_references",
            format!("unknown kind '{kind}' (definition, declaration, call, type, import or use)"),
        )
        .retry_with(json!({ "kind": "call" }))
    })
}

fn reference_json(ctx: &Context, f: &Found, lines: &mut LineReader, scoped: bool) -> Value {
    let r = &f.reference;
    let refs = &f.file.refs;
    let mut v = json!({
        "filepath": absolute(ctx, f.file.root_id, &f.file.rel),
        "line": r.line,
        "column": r.column,
        "role": r.role.as_str(),
    });
    if scoped {
        v["match"] = f.how.as_str().into();
    }
    let qualifier = refs.qualifier(r);
    if !qualifier.is_empty() {
        v["qualifier"] = qualifier.into();
    }
    if let Some(function) = refs.enclosing_function(r.scope) {
        v["function"] = function.into();
    }
    match lines.line(&f.file, r.line) {
        Some(text) => v["line_text"] = text.into(),
        None => v["stale"] = true.into(),
    }
    v
}

pub(super) fn absolute(ctx: &Context, root_id: RootId, rel: &str) -> String {
    ctx.catalog.roots().list()[root_id]
        .canonical
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// Lines of the files a page shows, each file read once, and only while it
/// is the version the catalog indexed (else its lines may have moved).
struct LineReader<'c> {
    ctx: &'c Context,
    files: HashMap<u64, Option<Vec<String>>>,
}

/// Longest line text shown.
const MAX_LINE_TEXT: usize = 200;

impl<'c> LineReader<'c> {
    fn new(ctx: &'c Context) -> Self {
        LineReader {
            ctx,
            files: HashMap::new(),
        }
    }

    fn line(&mut self, file: &FileRelations, line: u32) -> Option<String> {
        let ctx = self.ctx;
        let lines = self
            .files
            .entry(file.id)
            .or_insert_with(|| read_lines(ctx, file))
            .as_ref()?;
        let text = lines.get(line.checked_sub(1)? as usize)?.trim();
        let at = crate::mcp::budget::prefix_within(text, MAX_LINE_TEXT);
        Some(text[..at].to_string())
    }
}

fn read_lines(ctx: &Context, file: &FileRelations) -> Option<Vec<String>> {
    let entry = ctx
        .catalog
        .files()
        .under(file.root_id, &file.rel)
        .into_iter()
        .find(|(p, _)| *p == file.rel)?
        .1;
    // Lines of another version than the catalog's would be the wrong lines.
    let roots = ctx.catalog.roots();
    let mut f = match roots.open_remote_as_indexed(file.root_id, &file.rel, entry.fingerprint) {
        Some(opened) => match opened.ok()? {
            (remote, true) => remote.to_memory_file().ok()?,
            (_, false) => return None,
        },
        None => {
            let f = roots.open(file.root_id, &file.rel).ok()?;
            (crate::catalog::fingerprint(&f.metadata().ok()?) == entry.fingerprint).then_some(f)?
        }
    };
    if f.metadata().ok()?.len() > crate::formats::code::MAX_SOURCE_BYTES {
        return None;
    }
    let mut text = String::new();
    f.read_to_string(&mut text).ok()?;
    Some(text.lines().map(str::to_string).collect())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SummaryArgs {
    filepath: String,
    offset: Option<i64>,
}

/// The one file a `filepath` names: (root id, relative path).
pub(super) fn one_file(
    ctx: &Context,
    tool: &str,
    filepath: &str,
) -> Result<(RootId, String), ToolError> {
    let resolved = ctx
        .catalog
        .roots()
        .resolve(filepath, None)
        .map_err(|e| path_error(filepath, &e))?;
    if resolved.abs.is_dir() {
        return Err(ToolError::new(
            "invalid_arguments",
            format!("'{filepath}' is a folder; {tool} takes one file"),
            "list_files(kind='code') lists the source files; get_include_graph() covers every file",
        ));
    }
    Ok((resolved.root_id, resolved.rel))
}

fn parse_failed(why: String) -> ToolError {
    ToolError::new(
        "parse_failed",
        why,
        "index_status() lists files that failed to index",
    )
}

fn get_file_summary(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "get_file_summary";
    let args: SummaryArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let (root_id, rel) = one_file(ctx, tool, &args.filepath)?;
    let file = code_file(ctx, root_id, &rel).map_err(parse_failed)?;
    let resolver = IncludeResolver::new(ctx);
    let includes: Vec<Value> = file
        .includes
        .iter()
        .map(|inc| {
            let mut v = json!({ "path": inc.path, "line": inc.line });
            if inc.system {
                v["system"] = true.into();
            }
            if !inc.names.is_empty() {
                v["names"] = json!(inc.names);
            }
            match resolver.resolve(root_id, &rel, file.language, inc) {
                Resolution::Files(files) => {
                    v["resolved"] = json!(
                        files
                            .iter()
                            .map(|f| resolver.display(f))
                            .collect::<Vec<_>>()
                    )
                }
                Resolution::Ambiguous(n) => v["ambiguous"] = n.into(),
                Resolution::Outside => {}
            }
            v
        })
        .collect();
    let symbols: Vec<Value> = file
        .symbols
        .iter()
        .skip(offset)
        .map(|s| {
            json!({
                "name": s.name, "qualified_name": s.qualified_name, "kind": s.kind.as_str(),
                "line": s.line, "end_line": s.end_line,
            })
        })
        .collect();
    let remaining = symbols.len();
    let l = file.lines;
    let mut out = ToolOutput::new(json!({
        "filepath": args.filepath,
        "language": file.language.as_str(),
        "lines": { "total": l.total, "code": l.code, "comment": l.comment, "blank": l.blank },
        "class_count": file.classes().count(),
        "function_count": file.functions().count(),
        "has_errors": file.has_errors,
        "includes": includes,
        "symbols": symbols,
        "success": true,
    }))
    .meta("truncated", false)
    .suggest("extract_interface(filepath, name) gives a class's members; get_include_graph(filepath) who includes this file");
    ctx.budget(tool).cut_list(&mut out, "/symbols", |o, cut| {
        let cut = Cut {
            total: remaining.max(cut.kept),
            ..cut
        };
        if cut.truncated() {
            set(&mut o.data, "truncated", true);
        }
        mark_offset(o, cut, offset, tool, "symbols");
    });
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InterfaceArgs {
    filepath: String,
    name: String,
}

fn extract_interface(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "extract_interface";
    let args: InterfaceArgs = parse_args(tool, args)?;
    let (root_id, rel) = one_file(ctx, tool, &args.filepath)?;
    let file = code_file(ctx, root_id, &rel).map_err(parse_failed)?;
    let wanted = parts(args.name.trim());
    let class = file.class_info.iter().find(|c| {
        file.symbols
            .get(c.symbol as usize)
            .is_some_and(|s| parts(&s.qualified_name).ends_with(&wanted) && !wanted.is_empty())
    });
    let Some(class) = class else {
        let names: Vec<&str> = file
            .class_info
            .iter()
            .filter_map(|c| file.symbols.get(c.symbol as usize))
            .map(|s| s.qualified_name.as_str())
            .take(50)
            .collect();
        return Err(ToolError::new(
            "symbol_not_found",
            format!("no class '{}' is defined in {}", args.name, args.filepath),
            "find_symbol(name, kind='class') finds the file that defines it",
        )
        .details(json!({ "classes_in_file": names })));
    };
    let symbol = &file.symbols[class.symbol as usize];
    let public: Vec<Value> = class
        .members
        .iter()
        .filter(|m| m.access == Access::Public)
        .map(|m| {
            json!({
                "name": m.name, "kind": m.kind.as_str(), "signature": m.signature, "line": m.line,
            })
        })
        .collect();
    let hidden = class.members.len() - public.len();
    let bases: Vec<Value> = class
        .bases
        .iter()
        .map(|b| {
            let mut v = json!({ "name": b.name, "written": b.written });
            if let Some(a) = &b.access {
                v["access"] = a.as_str().into();
            }
            v
        })
        .collect();
    let shown = public.len();
    let mut out = ToolOutput::new(json!({
        "filepath": args.filepath,
        "name": symbol.name,
        "qualified_name": symbol.qualified_name,
        "kind": symbol.kind.as_str(),
        "line": symbol.line,
        "bases": bases,
        "members": public,
        "non_public_members": hidden,
        "success": true,
    }))
    .meta("truncated", false)
    .suggest(format!(
        "get_class_hierarchy(name='{}') shows its bases and derived classes",
        symbol.name
    ));
    ctx.budget(tool).cut_list(&mut out, "/members", |o, cut| {
        if cut.kept < shown || cut.shortened {
            set(&mut o.data, "truncated", true);
            o.metadata.insert("truncated".into(), true.into());
            o.suggestions.push(format!(
                "{} of {shown} public members shown: get_outline(filepath) lists them all",
                cut.kept
            ));
        }
    });
    Ok(out)
}
