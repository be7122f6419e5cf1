//! Saved ROOT datasets: `define_dataset` names a set of files (a glob or a
//! list of paths) with its tree, a description and named expressions, in the
//! catalog; `list_root_datasets` shows each with the files it holds now and
//! their entries. A glob is matched against the file list at each use, so the
//! files the watcher indexes or drops join or leave the dataset at once.
//! Both answer from the catalog: no data file is opened.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::root::{find_tree, known_root_file};
use super::root_dataset::{DatasetArg, MAX_FILES};
use super::root_dataset_files::{glob_files, saved_files};
use super::{Context, Effects, ToolDef, Toolset, checked_offset, parse_args};
use crate::catalog::datasets::{DatasetFiles, SavedDataset};
use crate::job::Job;
use crate::mcp::budget::mark_offset;
use crate::mcp::response::{ToolError, ToolOutput};

pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "define_dataset",
        title: "Save a ROOT dataset",
        toolset: Toolset::Root,
        description: "Names ROOT files read as one (a glob, matched anew at each use, or paths) with their tree, description and \
expressions; analysis tools then take dataset='NAME'.",
        input_schema: include_str!("../../../schema/tools/define_dataset.input.json"),
        output_schema: include_str!("../../../schema/tools/define_dataset.output.json"),
        // Writes quarry's catalog (a definition the user sees again), replacing
        // one of the same name; the same call again changes nothing more.
        effects: Effects {
            read_only: false,
            destructive: true,
            idempotent: true,
            asks_llm: false,
        },
        handler: define_dataset,
    },
    ToolDef {
        name: "list_root_datasets",
        title: "List saved ROOT datasets",
        toolset: Toolset::Root,
        description: "The saved ROOT datasets, with the files and entries they hold now.",
        input_schema: include_str!("../../../schema/tools/list_root_datasets.input.json"),
        output_schema: include_str!("../../../schema/tools/list_root_datasets.output.json"),
        effects: Effects::READS,
        handler: list_root_datasets,
    },
];

const MAX_NAME: usize = 64;
const MAX_DESCRIPTION: usize = 2000;
const MAX_DEFINES: usize = 100;
const MAX_EXPRESSION: usize = 4000;
/// Files each dataset shows when all are listed (`name=` shows them all).
const MEMBERS_IN_LIST: usize = 5;
const MEMBERS_OF_ONE: usize = MAX_FILES;

/// A dataset name: letters, digits, `_ . + : -`, starting with a letter, a
/// digit or `_` (so never a path, a glob, or hidden).
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.+:-".contains(c))
}

fn valid_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DefineArgs {
    name: String,
    files: DatasetArg,
    tree: String,
    description: Option<String>,
    define: Option<Map<String, Value>>,
}

/// The files argument as stored: a glob when it has wildcards, else paths.
fn files_of(ctx: &Context, tool: &str, files: DatasetArg) -> Result<DatasetFiles, ToolError> {
    let paths = match files {
        DatasetArg::List(paths) => paths,
        DatasetArg::One(text) => {
            let text = text.trim().to_string();
            if let Ok(paths) = serde_json::from_str::<Vec<String>>(&text) {
                paths
            } else if text.contains(super::root_dataset_files::GLOB_CHARS) {
                // Checked now: a glob outside the roots, or malformed, is refused.
                glob_files(ctx, tool, &text)?;
                return Ok(DatasetFiles::Glob(text));
            } else {
                vec![text]
            }
        }
    };
    if paths.is_empty() || paths.len() > MAX_FILES {
        return Err(ToolError::invalid_arguments(
            tool,
            format!("files must be a glob or 1 to {MAX_FILES} paths"),
        ));
    }
    for p in &paths {
        known_root_file(ctx, p)?;
    }
    Ok(DatasetFiles::List(paths))
}

/// The named expressions, checked for shape only (what they compute is
/// checked where a call plans them).
fn defines_of(
    tool: &str,
    define: Option<Map<String, Value>>,
) -> Result<Vec<(String, String)>, ToolError> {
    let define = define.unwrap_or_default();
    if define.len() > MAX_DEFINES {
        return Err(ToolError::invalid_arguments(
            tool,
            format!("define names at most {MAX_DEFINES} expressions"),
        ));
    }
    define
        .into_iter()
        .map(|(name, expr)| {
            let Value::String(expr) = expr else {
                return Err(ToolError::invalid_arguments(
                    tool,
                    format!("define['{name}'] must be an expression in a string"),
                ));
            };
            if !valid_identifier(&name) || expr.trim().is_empty() || expr.len() > MAX_EXPRESSION {
                return Err(ToolError::invalid_arguments(
                    tool,
                    format!(
                        "define maps names (letters, digits, _; not starting with a digit) to non-empty expressions of at most {MAX_EXPRESSION} characters; '{name}' is not one"
                    ),
                ));
            }
            Ok((name, expr))
        })
        .collect()
}

fn files_json(files: &DatasetFiles) -> Value {
    match files {
        DatasetFiles::Glob(g) => json!(g),
        DatasetFiles::List(paths) => json!(paths),
    }
}

/// A dataset's files now, each with its tree's entries, or without the tree.
struct Members {
    files: Vec<(String, u64)>,
    without_tree: Vec<String>,
}

fn members_of(ctx: &Context, d: &SavedDataset) -> Result<Members, ToolError> {
    let mut m = Members {
        files: Vec::new(),
        without_tree: Vec::new(),
    };
    for shown in saved_files(ctx, d)? {
        let entries = known_root_file(ctx, &shown)
            .and_then(|known| find_tree(ctx, &known, &d.tree))
            .map(|row| u64::try_from(row.entries).unwrap_or(0));
        match entries {
            Ok(n) => m.files.push((shown, n)),
            Err(_) => m.without_tree.push(shown),
        }
    }
    Ok(m)
}

fn define_dataset(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "define_dataset";
    let args: DefineArgs = parse_args(tool, args)?;
    if !valid_name(&args.name) {
        return Err(ToolError::invalid_arguments(
            tool,
            format!(
                "name '{}' must be 1 to {MAX_NAME} letters, digits or _ . + : - (no '/' nor wildcards), starting with a letter, digit or _",
                args.name
            ),
        ));
    }
    if args.tree.trim().is_empty() {
        return Err(ToolError::invalid_arguments(
            tool,
            "tree must name the tree the files share",
        ));
    }
    if args
        .description
        .as_ref()
        .is_some_and(|d| d.len() > MAX_DESCRIPTION)
    {
        return Err(ToolError::invalid_arguments(
            tool,
            format!("description is longer than {MAX_DESCRIPTION} bytes"),
        ));
    }
    let files = files_of(ctx, tool, args.files)?;
    let define = defines_of(tool, args.define)?;
    let now = crate::indexing::now_ms();
    let previous = ctx
        .catalog
        .dataset(&args.name)
        .map_err(ToolError::internal)?;
    let saved = SavedDataset {
        name: args.name.clone(),
        files,
        tree: args.tree.trim().to_string(),
        description: args.description,
        define,
        created_ms: previous.as_ref().map_or(now, |p| p.created_ms),
        updated_ms: now,
    };
    let members = members_of(ctx, &saved)?;
    ctx.catalog
        .save_dataset(&saved)
        .map_err(ToolError::internal)?;
    let entries: u64 = members.files.iter().map(|(_, n)| n).sum();
    let mut out = ToolOutput::new(json!({
        "name": saved.name,
        "files": files_json(&saved.files),
        "tree": saved.tree,
        "description": saved.description,
        "define": define_json(&saved.define),
        "member_count": members.files.len(),
        "entries": entries,
        "without_tree": members.without_tree.iter().take(20).collect::<Vec<_>>(),
        "replaced": previous.is_some(),
    }))
    .suggest(format!(
        "Read it with any ROOT analysis tool: apply_selection(dataset='{}', selection=...), compute_histogram(dataset='{}', branch=..., bins=50); dry_run=true estimates the cost first",
        saved.name, saved.name
    ));
    if members.files.is_empty() {
        out = out.suggest(format!(
            "No indexed file holds tree '{}' yet: files that match later join the dataset (list_files shows what is indexed)",
            saved.tree
        ));
    }
    if !members.without_tree.is_empty() {
        out = out.suggest(format!(
            "{} file(s) have no tree '{}': calls fail on them unless skip_mismatched=true",
            members.without_tree.len(),
            saved.tree
        ));
    }
    Ok(out)
}

fn define_json(define: &[(String, String)]) -> Value {
    Value::Object(define.iter().map(|(n, e)| (n.clone(), json!(e))).collect())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    name: Option<String>,
    offset: Option<i64>,
}

fn list_root_datasets(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "list_root_datasets";
    let args: ListArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let all = ctx.catalog.datasets().map_err(ToolError::internal)?;
    let wanted: Vec<_> = match &args.name {
        Some(name) => {
            let one: Vec<_> = all.into_iter().filter(|(n, _)| n == name).collect();
            if one.is_empty() {
                return Err(ToolError::new(
                    "dataset_not_found",
                    format!("no saved dataset is named '{name}'"),
                    "list_root_datasets() lists the saved datasets; define_dataset saves one",
                ));
            }
            one
        }
        None => all,
    };
    let shown_members = if args.name.is_some() {
        MEMBERS_OF_ONE
    } else {
        MEMBERS_IN_LIST
    };
    let total = wanted.len();
    let mut items = Vec::new();
    for (name, saved) in wanted.into_iter().skip(offset) {
        let item = match saved {
            Ok(d) => {
                let m = members_of(ctx, &d)?;
                json!({
                    "name": d.name,
                    "files": files_json(&d.files),
                    "tree": d.tree,
                    "description": d.description,
                    "define": define_json(&d.define),
                    "members": m.files.iter().take(shown_members)
                        .map(|(file, entries)| json!({ "file": file, "entries": entries }))
                        .collect::<Vec<_>>(),
                    "member_count": m.files.len(),
                    "entries": m.files.iter().map(|(_, n)| n).sum::<u64>(),
                    "without_tree": m.without_tree.iter().take(20).collect::<Vec<_>>(),
                    "updated": crate::mcp::response::iso8601_ms(d.updated_ms),
                })
            }
            Err(e) => json!({ "name": name, "error": e.to_string() }),
        };
        items.push(item);
    }
    let mut out = ToolOutput::new(json!({ "datasets": items, "total": total }))
        .suggest("Use one with dataset='NAME' in apply_selection, compute_histogram, get_branch_stats, read_branches, sample_tree or export_branches");
    let budget = ctx.budget(tool);
    if args.name.is_some() {
        budget.cut_list(&mut out, "/datasets/0/members", |o, cut| {
            if cut.truncated() {
                o.metadata.insert("truncated".into(), json!(true));
                o.metadata.insert("members_shown".into(), json!(cut.kept));
            }
        });
    } else {
        budget.cut_list(&mut out, "/datasets", |o, cut| {
            mark_offset(o, cut, offset, tool, "datasets");
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{valid_identifier, valid_name};

    #[test]
    fn names_are_never_paths_or_globs() {
        for good in ["run2012", "DoubleMu_2012.v2", "a:b+c-d", "_x", "7TeV"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in [
            "",
            "a/b",
            "run*",
            "r?n",
            "[a]",
            "{a,b}",
            ".hidden",
            "-x",
            "a b",
            &"x".repeat(65),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
        assert!(valid_identifier("m_mumu") && valid_identifier("_os"));
        assert!(!valid_identifier("2mu") && !valid_identifier("a.b") && !valid_identifier(""));
    }
}
