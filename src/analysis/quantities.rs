//! What a tool computes with: a branch, as stored, or an expression of the
//! cut language (`TTree::Draw`'s varexp: `hypot(Muon_Px, Muon_Py)`,
//! `InvariantMass(...)`, a define's name). A plain branch name keeps the
//! branch's own plan (and the fast paths built on it); anything else is an
//! expression computed in double precision. Columns that are read or
//! exported carry a name: the branch's, the expression's text, or the one
//! given (`"pt=hypot(px, py)"`, or `{"pt": "hypot(px, py)"}`).

use super::AnalysisError;
use super::defines::Defines;
use super::plan::{Plan, TreeColumns};

/// A column a tool reads or writes.
#[derive(Debug, Clone)]
pub enum Quantity {
    /// A column of the tree (an index into `TreeColumns::columns`), read as
    /// stored: integers stay integers, strings strings.
    Branch(usize),
    /// An expression, computed in double precision.
    Expression(Plan),
}

/// A quantity and the name it is shown under.
#[derive(Debug, Clone)]
pub struct Named {
    pub name: String,
    pub quantity: Quantity,
}

/// The plan of a quantity to compute with (a histogram's value, a weight, a
/// statistics' branch): a branch's own plan for a branch name, else the
/// expression's. An unknown name that reads as one name (not an expression)
/// is `BranchNotFound` for the whole text, as it was before expressions.
pub fn plan(text: &str, tree: &TreeColumns<'_>, defines: &Defines) -> Result<Plan, AnalysisError> {
    if defines.get(text).is_none() && tree.find(text).is_some() {
        return Plan::column(text, tree);
    }
    Plan::with_defines(text, tree, defines).map_err(|e| as_branch_name(text, tree, defines, e))
}

/// A column to read, named `name` (or by its text): a branch as it is stored
/// when `text` names one, else an expression.
pub fn named(
    name: Option<&str>,
    text: &str,
    tree: &TreeColumns<'_>,
    defines: &Defines,
) -> Result<Named, AnalysisError> {
    let quantity = match tree.find(text) {
        Some(column) if defines.get(text).is_none() => Quantity::Branch(column),
        _ => Quantity::Expression(
            Plan::with_defines(text, tree, defines)
                .map_err(|e| as_branch_name(text, tree, defines, e))?,
        ),
    };
    Ok(Named {
        name: name.unwrap_or(text).to_string(),
        quantity,
    })
}

/// `"name=expression"` split into its name and expression, when what comes
/// before the first `=` that is not part of `==`, `!=`, `<=` or `>=` is a name
/// (letters, digits, `_`, `.`); otherwise no name and the whole text.
pub fn split_named(text: &str) -> (Option<&str>, &str) {
    let bytes = text.as_bytes();
    let lone = (0..bytes.len()).find(|&i| {
        bytes[i] == b'='
            && bytes.get(i + 1) != Some(&b'=')
            && (i == 0 || !matches!(bytes[i - 1], b'=' | b'!' | b'<' | b'>'))
    });
    let Some(i) = lone else {
        return (None, text);
    };
    let name = text[..i].trim();
    let is_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    if is_name {
        (Some(name), text[i + 1..].trim())
    } else {
        (None, text)
    }
}

/// A failure to plan `text` as the old "no such branch" when `text` reads as
/// a single name (`Muon_ptt`, `my-branch`) that is no define's, not as an
/// expression.
fn as_branch_name(
    text: &str,
    tree: &TreeColumns<'_>,
    defines: &Defines,
    e: AnalysisError,
) -> AnalysisError {
    let one_name = defines.get(text).is_none()
        && !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || "_.-/:$[]#@".contains(c));
    match e {
        AnalysisError::InvalidSelection { .. } | AnalysisError::BranchNotFound { .. }
            if one_name =>
        {
            AnalysisError::BranchNotFound {
                name: text.to_string(),
                closest: tree.closest(text),
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::split_named;

    #[test]
    fn names_split_off_at_a_lone_equals_sign() {
        assert_eq!(
            split_named("pt=hypot(px, py)"),
            (Some("pt"), "hypot(px, py)")
        );
        assert_eq!(split_named(" m = a == b"), (Some("m"), "a == b"));
        for whole in [
            "a == b",
            "x <= 3",
            "x >= 3",
            "x != 3",
            "hypot(a, b)",
            "(a)=b",
        ] {
            assert_eq!(split_named(whole), (None, whole));
        }
    }
}
