//! The tool reference (`docs/reference/tools.md`), written from the registry
//! (`tools::all()`: names, titles, descriptions, effects), the schemas it serves
//! (`schema/tools/`), the task table (`tasks::support_of`) and the error table
//! (`tools::error_codes`). Only facts the code holds go here; what the tools are for
//! is the guides' business. `tests/reference_docs.rs` fails when the committed page
//! differs from this.

use std::fmt::Write as _;

use serde_json::Value;

use super::tasks::support_of;
use super::tools::error_codes::{self, ERROR_CODES};
use super::tools::{ToolDef, Toolset, all};

/// The order toolsets are shown in.
const TOOLSETS: [Toolset; 7] = [
    Toolset::Core,
    Toolset::Root,
    Toolset::Hdf5,
    Toolset::Docs,
    Toolset::Code,
    Toolset::Rag,
    Toolset::Resources,
];

/// The whole page.
pub fn tools_markdown() -> String {
    let every: Vec<String> = error_codes::EVERY_TOOL
        .iter()
        .map(|c| format!("[`{c}`](#{c})"))
        .collect();
    let mut out = format!(
        "# Tool reference\n\n\
<!-- Generated from the tool registry (src/mcp/tools/) and schema/tools/ by \
quarry::mcp::reference; do not edit by hand: \
`QUARRY_BLESS=1 cargo test --test integration reference_docs::` rewrites it. -->\n\n\
Every tool quarry has, by toolset: its description as `tools/list` serves it, its \
annotations, its arguments (the input schema), the fields of a successful result (the \
output schema, nested fields as dotted paths, `[]` for the items of an array, `*` for \
any key of a map) and the error codes it can answer. A result is \
`{{data, metadata, suggestions}}`; an error is \
`{{error, message, details?, suggestion, retry_with?}}` with `error` one of the \
[error codes](#error-codes). Every tool can answer {}.\n\n",
        every.join(", ")
    );
    out.push_str("## Contents\n\n");
    for set in TOOLSETS {
        let names: Vec<String> = tools_of(set)
            .map(|d| format!("[`{0}`](#{0})", d.name))
            .collect();
        let _ = writeln!(
            out,
            "- [{}](#{}): {}",
            heading(set),
            anchor(&heading(set)),
            names.join(", ")
        );
    }
    out.push_str("- [Error codes](#error-codes)\n\n");
    for set in TOOLSETS {
        let _ = writeln!(out, "## {}\n\n{}\n", heading(set), served_when(set));
        for def in tools_of(set) {
            tool_section(&mut out, def);
        }
    }
    out.push_str("## Error codes\n\n| code | when |\n|---|---|\n");
    for e in ERROR_CODES {
        let _ = writeln!(
            out,
            "| <a id=\"{0}\"></a>`{0}` | {1} |",
            e.code,
            cell(e.when)
        );
    }
    out
}

fn tools_of(set: Toolset) -> impl Iterator<Item = &'static ToolDef> {
    all().filter(move |d| d.toolset == set)
}

fn heading(set: Toolset) -> String {
    format!("Toolset {}", set.as_str())
}

/// GitHub's anchor of a heading of words.
fn anchor(heading: &str) -> String {
    heading.to_lowercase().replace(' ', "-")
}

fn served_when(set: Toolset) -> String {
    match set {
        Toolset::Core => "Always served.".to_string(),
        Toolset::Resources => "Served while the `hdf5` or the `rag` toolset is on.".to_string(),
        set => format!(
            "Served while `[toolsets] {}` is `true` (the default).",
            set.as_str()
        ),
    }
}

fn tool_section(out: &mut String, def: &ToolDef) {
    let input: Value = serde_json::from_str(def.input_schema).expect("input schema is JSON");
    let _ = writeln!(
        out,
        "### `{}`\n\n**{}.** {}\n",
        def.name, def.title, def.description
    );
    annotations(out, def);
    arguments(out, &input);
    out.push_str("**Result fields**\n\n");
    field_table(out, &result_fields_of(def));
    let codes = error_codes::codes_of(def.name).unwrap_or_default();
    let links: Vec<String> = codes
        .iter()
        .filter(|c| !error_codes::EVERY_TOOL.contains(c))
        .map(|c| format!("[`{c}`](#{c})"))
        .collect();
    if links.is_empty() {
        out.push_str("**Errors:** only those [every tool](#tool-reference) can answer.\n\n");
    } else {
        let _ = writeln!(
            out,
            "**Errors** (besides [every tool's](#tool-reference)): {}.\n",
            links.join(", ")
        );
    }
}

fn annotations(out: &mut String, def: &ToolDef) {
    let e = def.effects;
    let yes = |b: bool| if b { "yes" } else { "no" };
    let open_world = if e.asks_llm {
        "yes with an `[llm]` model, else no"
    } else {
        "no"
    };
    let _ = writeln!(
        out,
        "Read-only: {} · destructive: {} · idempotent: {} · open-world: {} · task support: {}\n",
        yes(e.read_only),
        yes(e.destructive),
        yes(e.idempotent),
        open_world,
        support_of(def.name).as_str()
    );
}

fn arguments(out: &mut String, input: &Value) {
    let props = input["properties"].as_object();
    let Some(props) = props.filter(|p| !p.is_empty()) else {
        out.push_str("**Arguments:** none.\n\n");
        return;
    };
    let required = required_of(input);
    out.push_str("**Arguments**\n\n| argument | type | required | default | limits | description |\n|---|---|---|---|---|---|\n");
    // Required arguments first, each group by name.
    let mut names: Vec<&String> = props.keys().collect();
    names.sort_by_key(|n| (!required.contains(&n.as_str()), n.as_str()));
    for name in names {
        let s = &props[name];
        let _ = writeln!(
            out,
            "| `{name}` | {} | {} | {} | {} | {} |",
            cell(&type_of(s, input)),
            if required.contains(&name.as_str()) {
                "yes"
            } else {
                ""
            },
            s.get("default")
                .map(|d| format!("`{d}`"))
                .unwrap_or_default(),
            cell(&limits_of(s)),
            cell(s["description"].as_str().unwrap_or_default()),
        );
    }
    out.push('\n');
}

fn required_of(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// One row of the result table.
#[derive(Clone, PartialEq)]
struct Field {
    path: String,
    kind: String,
    required: bool,
    limits: String,
    about: String,
}

/// A tool's result fields, from its output schema.
fn result_fields_of(def: &ToolDef) -> Vec<Field> {
    let output: Value = serde_json::from_str(def.output_schema).expect("output schema is JSON");
    let mut fields = Vec::new();
    flatten(&output, &output, "", &mut Vec::new(), &mut fields);
    fields
}

fn field_table(out: &mut String, fields: &[Field]) {
    out.push_str("| field | type | required | limits | description |\n|---|---|---|---|---|\n");
    for f in fields {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            f.path,
            cell(&f.kind),
            if f.required { "yes" } else { "" },
            cell(&f.limits),
            cell(&f.about)
        );
    }
    out.push('\n');
}

/// The fields of the object `schema` (properties, the forms of a `oneOf` or
/// `anyOf`, references to `$defs`), under `prefix`. `visiting` holds the
/// definitions being expanded, so a recursive one is shown once.
fn flatten(
    schema: &Value,
    root: &Value,
    prefix: &str,
    visiting: &mut Vec<String>,
    out: &mut Vec<Field>,
) {
    let (schema, pushed) = match resolve(schema, root) {
        Some((name, _)) if visiting.contains(&name) => return,
        Some((name, target)) => {
            visiting.push(name);
            (target, true)
        }
        None => (schema, false),
    };
    if let Some(props) = schema["properties"].as_object() {
        let required = required_of(schema);
        for (name, s) in props {
            let path = format!("{prefix}{name}");
            let target = resolve(s, root).map_or(s, |(_, t)| t);
            out.push(Field {
                path: path.clone(),
                kind: type_of(s, root),
                required: required.contains(&name.as_str()),
                limits: limits_of(target),
                about: about_of(s, target),
            });
            flatten_inner(s, root, &path, visiting, out);
        }
    }
    for alternatives in ["oneOf", "anyOf"] {
        if let Some(forms) = schema[alternatives].as_array() {
            let per_form: Vec<Vec<Field>> = forms
                .iter()
                .map(|form| {
                    let mut fields = Vec::new();
                    flatten(form, root, prefix, visiting, &mut fields);
                    fields
                })
                .collect();
            out.extend(merge_forms(per_form));
        }
    }
    if pushed {
        visiting.pop();
    }
}

/// A field's description: its own, else its definition's; a `oneOf` adds
/// what each form is.
fn about_of(s: &Value, target: &Value) -> String {
    let own = s["description"]
        .as_str()
        .or(target["description"].as_str())
        .unwrap_or_default()
        .to_string();
    let forms: Vec<String> = ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| target[*k].as_array())
        .flatten()
        .enumerate()
        .filter_map(|(i, f)| {
            f["description"]
                .as_str()
                .map(|d| format!("form {}: {d}", i + 1))
        })
        .collect();
    [own, forms.join(" ")]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The fields of a `oneOf`'s forms as one list: a field every form has is
/// shown once; the others say which forms have them.
fn merge_forms(per_form: Vec<Vec<Field>>) -> Vec<Field> {
    let mut seen: Vec<&Field> = Vec::new();
    let mut merged = Vec::new();
    for f in per_form.iter().flatten() {
        if seen.contains(&f) {
            continue;
        }
        seen.push(f);
        let holders: Vec<String> = per_form
            .iter()
            .enumerate()
            .filter(|(_, fields)| fields.contains(f))
            .map(|(i, _)| (i + 1).to_string())
            .collect();
        let mut f = f.clone();
        if holders.len() < per_form.len() {
            let forms = if holders.len() == 1 { "form" } else { "forms" };
            f.about = format!("({forms} {}) {}", holders.join(", "), f.about)
                .trim_end()
                .to_string();
        }
        merged.push(f);
    }
    merged
}

/// The fields inside the field at `path`: an object's, or an array's items'.
fn flatten_inner(
    s: &Value,
    root: &Value,
    path: &str,
    visiting: &mut Vec<String>,
    out: &mut Vec<Field>,
) {
    let target = resolve(s, root).map_or(s, |(_, t)| t);
    if target.get("properties").is_some()
        || target.get("oneOf").is_some()
        || target.get("anyOf").is_some()
        || s.get("$ref").is_some()
    {
        flatten(s, root, &format!("{path}."), visiting, out);
    } else if let Some(items) = target.get("items") {
        flatten_inner(items, root, &format!("{path}[]"), visiting, out);
    } else if let Some(values) = target.get("additionalProperties").filter(|v| v.is_object()) {
        // A map: `*` stands for any of its keys.
        flatten_inner(values, root, &format!("{path}.*"), visiting, out);
    }
}

/// The definition a `$ref` names, with its name.
fn resolve<'a>(s: &'a Value, root: &'a Value) -> Option<(String, &'a Value)> {
    let name = s["$ref"].as_str()?.strip_prefix("#/$defs/")?;
    Some((name.to_string(), &root["$defs"][name]))
}

/// A schema's type in words: `integer`, `array of string`, `string or array`.
fn type_of(s: &Value, root: &Value) -> String {
    if let Some((name, _)) = resolve(s, root) {
        return format!("`{name}` object");
    }
    if let Some(c) = s.get("const") {
        return format!("`{c}`");
    }
    for alternatives in ["oneOf", "anyOf"] {
        if let Some(forms) = s[alternatives].as_array() {
            let mut kinds: Vec<String> = Vec::new();
            for k in forms.iter().map(|f| type_of(f, root)) {
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            return kinds.join(" or ");
        }
    }
    let base = match &s["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => match s["enum"].as_array().and_then(|v| v.first()) {
            Some(Value::String(_)) => "string".into(),
            Some(Value::Number(_)) => "number".into(),
            Some(Value::Bool(_)) => "boolean".into(),
            _ => "any".into(),
        },
    };
    if let Some(items) = s.get("items").filter(|_| base.contains("array")) {
        return format!("{base} of {}", type_of(items, root));
    }
    if let Some(values) = s
        .get("additionalProperties")
        .filter(|a| a.is_object() && base == "object")
    {
        return format!("object of {}", type_of(values, root));
    }
    base
}

/// A schema's limits in words: bounds, lengths, allowed values, pattern.
fn limits_of(s: &Value) -> String {
    let mut parts = Vec::new();
    let words = [
        ("minimum", "≥"),
        ("exclusiveMinimum", ">"),
        ("maximum", "≤"),
        ("exclusiveMaximum", "<"),
        ("minItems", "items ≥"),
        ("maxItems", "items ≤"),
        ("minLength", "length ≥"),
        ("maxLength", "length ≤"),
    ];
    for (key, word) in words {
        if let Some(v) = s.get(key) {
            parts.push(format!("{word} {v}"));
        }
    }
    if let Some(values) = s["enum"].as_array() {
        let shown: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        parts.push(format!("one of {}", shown.join(", ")));
    }
    if let Some(p) = s["pattern"].as_str() {
        parts.push(format!("pattern `{p}`"));
    }
    if let Some(f) = s["format"].as_str() {
        parts.push(format!("format {f}"));
    }
    parts.join("; ")
}

/// Text fit for a table cell: one line, no column breaks.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
