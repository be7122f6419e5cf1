//! Arguments as models send them (DESIGN.md, Results): assistants often send
//! an object, array, number or boolean argument as a JSON string
//! (`"scope": "{\"type\":\"global\"}"`, `"bins": "10"`). A top-level string
//! that parses as JSON to exactly a type the tool's input schema wants for that
//! argument (and the schema does not also take a string) is taken as that
//! value, and the result's `metadata.coerced_arguments` names it; any other
//! string there is `invalid_arguments` naming the argument and the type wanted.
//! Driven by each tool's schema (schema/tools/*.input.json), once for all tools.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::ToolDef;
use crate::mcp::response::ToolError;

/// The JSON types each argument of a tool accepts, by argument name; an
/// argument without a `type` (or an enum of strings) is left as it comes.
type ArgumentTypes = HashMap<String, Vec<String>>;

fn types_of(def: &ToolDef) -> &'static ArgumentTypes {
    static ALL: OnceLock<HashMap<&'static str, ArgumentTypes>> = OnceLock::new();
    static NONE: OnceLock<ArgumentTypes> = OnceLock::new();
    ALL.get_or_init(|| {
        super::all()
            .map(|d| (d.name, parse_types(d.input_schema)))
            .collect()
    })
    .get(def.name)
    .unwrap_or_else(|| NONE.get_or_init(HashMap::new))
}

fn parse_types(schema: &str) -> ArgumentTypes {
    let schema: Value = serde_json::from_str(schema).unwrap_or(Value::Null);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return HashMap::new();
    };
    properties
        .iter()
        .map(|(name, p)| {
            let types = match p.get("type") {
                Some(Value::String(t)) => vec![t.clone()],
                Some(Value::Array(ts)) => ts
                    .iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
                // An enum without a type takes its values' types.
                _ => p
                    .get("enum")
                    .and_then(Value::as_array)
                    .map(|values| values.iter().map(|v| json_type(v).to_string()).collect())
                    .unwrap_or_default(),
            };
            (name.clone(), types)
        })
        .collect()
}

/// The JSON Schema type name of a value ("integer" for whole numbers).
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(v: &Value, wanted: &str) -> bool {
    let actual = json_type(v);
    actual == wanted || (wanted == "number" && actual == "integer")
}

/// "an integer", "an object or an array": the types an argument takes.
fn described(types: &[String]) -> String {
    let named: Vec<String> = types
        .iter()
        .map(|t| match t.as_str() {
            "integer" | "object" | "array" => format!("an {t}"),
            other => format!("a {other}"),
        })
        .collect();
    named.join(" or ")
}

/// Replaces the string arguments of `args` that stand for another JSON type
/// (see the module comment) by their values; the names of those replaced, in
/// order, or the error of the first string that stands for no type wanted.
pub fn coerce(def: &ToolDef, args: &mut Map<String, Value>) -> Result<Vec<String>, ToolError> {
    let types = types_of(def);
    let mut coerced = Vec::new();
    for (name, value) in args.iter_mut() {
        let Value::String(text) = value else {
            continue;
        };
        let Some(wanted) = types.get(name) else {
            continue;
        };
        if wanted.is_empty() || wanted.iter().any(|t| t == "string") {
            continue;
        }
        match serde_json::from_str::<Value>(text.trim()) {
            Ok(parsed) if wanted.iter().any(|t| has_type(&parsed, t)) => {
                *value = parsed;
                coerced.push(name.clone());
            }
            _ => {
                let shown: String = text.chars().take(60).collect();
                return Err(ToolError::invalid_arguments(
                    def.name,
                    format!(
                        "argument '{name}' must be {}, got the string \"{shown}\"",
                        described(wanted)
                    ),
                )
                .details(serde_json::json!({ "argument": name, "expected": wanted })));
            }
        }
    }
    Ok(coerced)
}

/// Bytes the note of coerced arguments can add to a result at most
/// (`"coerced_arguments":[...]` naming every argument that could be one), so
/// the tool's result budget leaves room for it.
pub fn note_reserve(def: &ToolDef) -> usize {
    let names: Vec<&String> = types_of(def)
        .iter()
        .filter(|(_, t)| !t.is_empty() && !t.iter().any(|t| t == "string"))
        .map(|(n, _)| n)
        .collect();
    if names.is_empty() {
        return 0;
    }
    r#","coerced_arguments":[]"#.len() + names.iter().map(|n| n.len() + 3).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(name: &str) -> &'static ToolDef {
        super::super::all().find(|d| d.name == name).unwrap()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn strings_standing_for_the_schema_type_are_taken_as_it() {
        let mut a = args(json!({
            "query": "10", "scope": "{\"type\":\"global\"}", "max_results": " 7 ", "fuzzy": "true"
        }));
        let coerced = coerce(def("search_documents"), &mut a).unwrap();
        assert_eq!(coerced, ["fuzzy", "max_results", "scope"]);
        // A string argument stays a string even when it looks like a number.
        assert_eq!(a["query"], json!("10"));
        assert_eq!(a["scope"], json!({"type": "global"}));
        assert_eq!(
            (a["max_results"].clone(), a["fuzzy"].clone()),
            (json!(7), json!(true))
        );
        let mut b = args(json!({ "path": "p", "tree": "t", "branches": "[\"x\", \"y\"]" }));
        coerce(def("read_branches"), &mut b).unwrap();
        assert_eq!(b["branches"], json!(["x", "y"]));
        // Native values pass untouched and are not reported.
        let mut c = args(json!({ "bins": 10, "range": [0, 1] }));
        assert!(coerce(def("compute_histogram"), &mut c).unwrap().is_empty());
    }

    #[test]
    fn a_string_of_another_type_is_an_error_naming_the_argument() {
        for bad in ["[1]", "ten", "10.5", ""] {
            let mut a = args(json!({ "bins": bad }));
            let e = coerce(def("compute_histogram"), &mut a).unwrap_err();
            assert_eq!(e.code, "invalid_arguments");
            assert!(
                e.message.contains("'bins'") && e.message.contains("an integer"),
                "{}",
                e.message
            );
        }
        // A number is what score_threshold wants; an integer is one.
        let mut a = args(json!({ "score_threshold": "2" }));
        coerce(def("rag_retrieve"), &mut a).unwrap();
        assert_eq!(a["score_threshold"], json!(2));
    }

    #[test]
    fn arguments_taking_a_string_or_an_array_are_left_alone() {
        // execute_query's filepath is a path or a list of paths.
        let mut a = args(json!({ "filepath": "[\"a.py\"]", "query": "(x)" }));
        assert!(coerce(def("execute_query"), &mut a).unwrap().is_empty());
        assert_eq!(a["filepath"], json!("[\"a.py\"]"));
    }
}
