//! Names a call gives to expressions (RDataFrame's `Define`): `{"m":
//! "InvariantMasses(...)", "os": "PairFirst(Muon_charge) != ..."}`. A
//! define is usable wherever a branch name is, in the cut and the
//! quantities of the same call, and in other defines (in any order). A plan
//! writes a define's expression out in place of its name, so a define costs
//! what its expression costs where it is used. A define may not take a
//! branch's name, nor refer to itself through others.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AnalysisError;
use super::plan::{TreeColumns, edit_distance};
use super::syntax::{Expr, MAX_LEN, parse};

/// Defines one call may make.
pub const MAX_DEFINES: usize = 64;
/// Defines nested in each other at most (`a` uses `b` uses `c` ...).
const MAX_NESTING: usize = 16;

/// Named expressions (a JSON object's come in name order: their order
/// matters nowhere, as defines may use each other in any order).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Defines {
    entries: Vec<(String, String)>,
}

impl Defines {
    /// No defines.
    pub const EMPTY: Defines = Defines {
        entries: Vec::new(),
    };

    /// Checks the names (a letter or `_`, then letters, digits or `_`; each
    /// once) and the count; the expressions are checked where they are used
    /// against a tree.
    pub fn new(entries: Vec<(String, String)>) -> Result<Defines, AnalysisError> {
        if entries.len() > MAX_DEFINES {
            return Err(AnalysisError::invalid(
                0,
                &format!("at most {MAX_DEFINES} defines"),
                format!(
                    "{} defines given, more than the {MAX_DEFINES} one call may make",
                    entries.len()
                ),
            ));
        }
        for (k, (name, text)) in entries.iter().enumerate() {
            if !is_define_name(name) {
                return Err(AnalysisError::invalid(
                    0,
                    "a define name: a letter or '_', then letters, digits or '_'",
                    format!(
                        "'{name}' cannot name a define: use a letter or '_', then letters, digits or '_'"
                    ),
                ));
            }
            if entries[..k].iter().any(|(earlier, _)| earlier == name) {
                return Err(AnalysisError::invalid(
                    0,
                    "each define named once",
                    format!("the define '{name}' is given twice"),
                ));
            }
            if text.chars().count() > MAX_LEN {
                return Err(AnalysisError::invalid(
                    0,
                    &format!("a define of at most {MAX_LEN} characters"),
                    format!("the define '{name}' is longer than {MAX_LEN} characters"),
                ));
            }
        }
        Ok(Defines { entries })
    }

    /// The defines of a tool's `define` argument: an object whose values are
    /// expressions (absent or null: none).
    pub fn from_json(value: Option<&Value>) -> Result<Defines, AnalysisError> {
        let map = match value {
            None | Some(Value::Null) => return Ok(Defines::default()),
            Some(Value::Object(map)) => map,
            Some(_) => {
                return Err(AnalysisError::invalid(
                    0,
                    "an object of names and expressions",
                    "define must be an object of names and expressions, e.g. {\"pt\": \"hypot(px, py)\"}"
                        .into(),
                ));
            }
        };
        let mut entries = Vec::with_capacity(map.len());
        for (name, text) in map {
            let Value::String(text) = text else {
                return Err(AnalysisError::invalid(
                    0,
                    "an expression (a string) for each define",
                    format!("the define '{name}' must be an expression given as a string"),
                ));
            };
            entries.push((name.clone(), text.clone()));
        }
        Defines::new(entries)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The defines, as (name, expression), in the order given.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, t)| (n.as_str(), t.as_str()))
    }

    /// The expression named `name`, if one is.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.as_str())
    }

    /// An error when a define has a name a branch of `tree` answers to (its
    /// path, or its last part): which of the two a name meant would be a
    /// guess.
    pub fn check(&self, tree: &TreeColumns<'_>) -> Result<(), AnalysisError> {
        for (name, _) in &self.entries {
            shadows(name, tree)?;
        }
        Ok(())
    }

    /// The parsed expression of the define `name`, about to be written out
    /// inside the defines `expanding` (outermost first): an error when it is
    /// one of them (a cycle), nests too deep, or takes a branch's name.
    pub(super) fn enter(
        &self,
        name: &str,
        expanding: &[String],
        tree: &TreeColumns<'_>,
        at: usize,
    ) -> Result<Expr, AnalysisError> {
        if let Some(start) = expanding.iter().position(|n| n == name) {
            let mut path: Vec<&str> = expanding[start..].iter().map(String::as_str).collect();
            path.push(name);
            return Err(AnalysisError::invalid(
                at,
                "defines that do not refer to themselves",
                format!(
                    "the define '{name}' refers to itself ({}); a define may use other defines, but not in a circle",
                    path.join(" -> ")
                ),
            ));
        }
        if expanding.len() >= MAX_NESTING {
            return Err(AnalysisError::invalid(
                at,
                &format!("defines nested at most {MAX_NESTING} deep"),
                format!(
                    "the defines nest more than {MAX_NESTING} deep ({} -> {name})",
                    expanding.join(" -> ")
                ),
            ));
        }
        shadows(name, tree)?;
        let text = self.get(name).expect("the caller looked the define up");
        parse(text, &|p| tree.is_path_prefix(p)).map_err(|e| Defines::located(name, e))
    }

    /// An error met inside the define `name`, saying so (its columns count in
    /// the define's text).
    pub(super) fn located(name: &str, e: AnalysisError) -> AnalysisError {
        match e {
            AnalysisError::InvalidSelection {
                column,
                expected,
                message,
            } if !message.starts_with("in define '") => AnalysisError::InvalidSelection {
                column,
                expected,
                message: format!("in define '{name}': {message}"),
            },
            other => other,
        }
    }

    /// `closest` (a tree's names closest to `name`) with the defines' names
    /// as close or closer put first.
    pub(super) fn closest_with(&self, name: &str, closest: Vec<String>) -> Vec<String> {
        let lower = name.to_lowercase();
        let limit = (name.chars().count() / 2).max(3);
        let mut near: Vec<(usize, String)> = self
            .entries
            .iter()
            .map(|(n, _)| (edit_distance(&lower, &n.to_lowercase()), n.clone()))
            .filter(|(d, _)| *d <= limit)
            .collect();
        near.sort();
        near.into_iter()
            .map(|(_, n)| n)
            .chain(closest)
            .take(5)
            .collect()
    }
}

/// A letter or `_`, then letters, digits or `_`; not a word the cut language
/// reads as a number.
fn is_define_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !matches!(name, "true" | "false" | "kTRUE" | "kFALSE")
}

fn shadows(name: &str, tree: &TreeColumns<'_>) -> Result<(), AnalysisError> {
    match tree.find(name) {
        None => Ok(()),
        Some(c) => Err(AnalysisError::invalid(
            0,
            "a define name that is no branch's",
            format!(
                "the define '{name}' has the name of the branch '{}': give it another name",
                tree.columns[c].path
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_checked() {
        let d = Defines::from_json(Some(&json!({"b": "x + 1", "a": "b * 2"}))).unwrap();
        let mut names: Vec<&str> = d.iter().map(|(n, _)| n).collect();
        names.sort();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(d.get("a"), Some("b * 2"));
        assert!(Defines::from_json(None).unwrap().is_empty());
        for bad in [
            json!({"1x": "2"}),
            json!({"a-b": "2"}),
            json!({"true": "2"}),
            json!({"": "2"}),
            json!({"x": 2}),
            json!(["x"]),
        ] {
            assert!(Defines::from_json(Some(&bad)).is_err(), "{bad}");
        }
        let many: serde_json::Map<String, Value> = (0..=MAX_DEFINES)
            .map(|i| (format!("d{i}"), json!("1")))
            .collect();
        assert!(Defines::from_json(Some(&Value::Object(many))).is_err());
        let twice = Defines::new(vec![("a".into(), "1".into()), ("a".into(), "2".into())]);
        assert!(twice.is_err());
    }
}
