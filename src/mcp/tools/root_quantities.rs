//! What the ROOT analysis tools share about quantities: the `define`
//! argument (named expressions), a `branch`-like argument as a plan (a
//! branch, or an expression of the cut language), and the named columns of
//! `branches` (`["Muon_pt", "pt=hypot(px, py)"]` or `{"pt": "hypot(px, py)"}`).

use serde_json::Value;

use super::root_analysis::analysis_error;
use super::root_dataset::OpenTree;
use crate::analysis::plan::Node;
use crate::analysis::quantities::{self, Named, split_named};
use crate::analysis::{Defines, Plan, TreeColumns};
use crate::mcp::response::ToolError;

/// The call's `define` argument, over the named expressions of the saved
/// dataset the call reads (`OpenTree::saved_defines`; the call's own win for
/// a name given in both), its names checked against the tree's.
pub(super) fn defines_of(
    tool: &str,
    define: Option<&Value>,
    columns: &TreeColumns<'_>,
    t: &OpenTree,
) -> Result<Defines, ToolError> {
    let merged = with_saved(t.saved_defines(), define);
    let defines = Defines::from_json(merged.as_ref()).map_err(|e| {
        ToolError::invalid_arguments(tool, e).details(serde_json::json!({ "argument": "define" }))
    })?;
    defines
        .check(columns)
        .map_err(|e| analysis_error(e, t, None))?;
    Ok(defines)
}

/// A saved dataset's expressions with the call's `define` over them; the
/// call's argument as it is when the dataset names none (or it is no object,
/// which `Defines::from_json` refuses with its own message).
fn with_saved(saved: &[(String, String)], define: Option<&Value>) -> Option<Value> {
    if saved.is_empty() {
        return define.cloned();
    }
    let mut merged: serde_json::Map<String, Value> = saved
        .iter()
        .map(|(name, expr)| (name.clone(), Value::String(expr.clone())))
        .collect();
    match define {
        Some(Value::Object(own)) => merged.extend(own.clone()),
        Some(other) => return Some(other.clone()),
        None => {}
    }
    Some(Value::Object(merged))
}

/// A quantity to compute with (`branch`, `x_branch`, `weights`, ...): the
/// branch's own plan, or the expression's. Errors name the expression.
pub(super) fn quantity_plan(
    text: &str,
    columns: &TreeColumns<'_>,
    defines: &Defines,
    t: &OpenTree,
) -> Result<Plan, ToolError> {
    quantities::plan(text, columns, defines).map_err(|e| analysis_error(e, t, Some(text)))
}

/// A cut or other expression (`selection`) as a plan, when given.
pub(super) fn expression_plan(
    text: Option<&str>,
    columns: &TreeColumns<'_>,
    defines: &Defines,
    t: &OpenTree,
) -> Result<Option<Plan>, ToolError> {
    text.map(|s| Plan::with_defines(s, columns, defines).map_err(|e| analysis_error(e, t, Some(s))))
        .transpose()
}

/// The (name, text) of each column a `branches` argument asks for: a list of
/// strings (a branch, an expression, or `name=expression`), or an object of
/// names and expressions.
pub(super) fn column_specs(
    tool: &str,
    branches: &Value,
) -> Result<Vec<(Option<String>, String)>, ToolError> {
    let wrong = || {
        ToolError::invalid_arguments(
            tool,
            "branches must be a list of branch names or expressions (\"name=expression\" names one), \
or an object of names and expressions",
        )
    };
    match branches {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => {
                    let (name, text) = split_named(s);
                    Ok((name.map(String::from), text.to_string()))
                }
                _ => Err(wrong()),
            })
            .collect(),
        Value::Object(map) => map
            .iter()
            .map(|(name, text)| match text {
                Value::String(s) => Ok((Some(name.clone()), s.clone())),
                _ => Err(wrong()),
            })
            .collect(),
        _ => Err(wrong()),
    }
}

/// The named columns of `specs`.
pub(super) fn named_columns(
    specs: &[(Option<String>, String)],
    columns: &TreeColumns<'_>,
    defines: &Defines,
    t: &OpenTree,
) -> Result<Vec<Named>, ToolError> {
    specs
        .iter()
        .map(|(name, text)| {
            quantities::named(name.as_deref(), text, columns, defines)
                .map_err(|e| analysis_error(e, t, Some(text)))
        })
        .collect()
}

/// The path of the branch a plan reads as it is stored (a branch, or a define
/// naming one), whose cached range the catalog may hold; None for an
/// expression.
pub(super) fn stored_branch<'c>(columns: &'c TreeColumns<'_>, plan: &Plan) -> Option<&'c str> {
    match plan.root {
        Node::Column(slot) => Some(columns.columns[plan.columns[slot]].path.as_str()),
        _ => None,
    }
}

/// The defines as part of a plot's request key (none: nothing, so the keys
/// of plots made without defines stay as they were).
pub(super) fn defines_key(defines: &Defines) -> String {
    defines.iter().map(|(n, e)| format!("|{n}={e}")).collect()
}
