//! The configuration reference: the keys quarry accepts (read from the config
//! types themselves), the commented example file `docs/reference/quarry.toml`
//! read entry by entry, and `docs/reference/configuration.md` written from it.
//! `tests/reference_docs.rs` checks the example against the first and the page
//! against the last.

use std::fmt::Write as _;

use super::FileConfig;

/// A key the probe below sends; no config type has a field of this name.
const PROBE: &str = "__quarry_probe__";

/// Every key a config file may hold, as `key` or `section.key`, in the order the
/// config types declare them. Asked of the types by parsing a file with an
/// unknown key in each table: `deny_unknown_fields` answers with the fields the
/// table has, so a field added to a type is here without a list to keep.
pub fn accepted_keys() -> Vec<String> {
    let mut keys = Vec::new();
    for key in fields_of("").unwrap_or_default() {
        let table = fields_of(&format!("[{key}]\n")).or_else(|| fields_of(&format!("[[{key}]]\n")));
        match table {
            Some(inner) => keys.extend(inner.into_iter().map(|k| format!("{key}.{k}"))),
            None => keys.push(key),
        }
    }
    keys
}

/// The fields of the table `header` opens (the top level for ""), or `None`
/// when that is not a table of named fields.
fn fields_of(header: &str) -> Option<Vec<String>> {
    let text = format!("{header}{PROBE} = 1\n");
    let err = toml::from_str::<FileConfig>(&text).err()?.to_string();
    let listed = err
        .split_once(&format!("unknown field `{PROBE}`, expected "))?
        .1;
    let listed = listed.lines().next().unwrap_or_default();
    // "one of `a`, `b`" or "`a`": the names are the backquoted words.
    Some(
        listed
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect(),
    )
}

/// One key of the example file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The table it is in (`""` at the top level, `roots` for `[[roots]]`).
    pub section: String,
    pub key: String,
    /// The value as written.
    pub value: String,
    /// For a value marked `# example, default: TEXT`: TEXT. `None`: the value
    /// is the default.
    pub example_default: Option<String>,
    /// The comment lines above the key.
    pub about: String,
}

impl Entry {
    /// `key` or `section.key`, as `accepted_keys` names it.
    pub fn dotted(&self) -> String {
        if self.section.is_empty() {
            self.key.clone()
        } else {
            format!("{}.{}", self.section, self.key)
        }
    }
}

/// One table of the example file.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub name: String,
    /// `[[name]]`: repeatable.
    pub array: bool,
    pub about: String,
}

/// The example file read line by line: its sections and keys with the comments
/// above them. The file keeps to a simple form (one key a line, comments above
/// what they describe, the example marker after the value), which this checks.
pub fn read_example(text: &str) -> Result<(Vec<Section>, Vec<Entry>), String> {
    let mut sections = vec![Section {
        name: String::new(),
        array: false,
        about: String::new(),
    }];
    let mut entries = Vec::new();
    let mut comment: Vec<&str> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            comment.clear();
        } else if let Some(c) = line.strip_prefix('#') {
            comment.push(c.strip_prefix(' ').unwrap_or(c));
        } else if line.starts_with('[') {
            let array = line.starts_with("[[");
            let name = line
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
            sections.push(Section {
                name,
                array,
                about: comment.join(" "),
            });
            comment.clear();
        } else {
            let (key, rest) = line
                .split_once('=')
                .ok_or_else(|| format!("line {}: neither a comment, a table nor a key", n + 1))?;
            let (value, marker) = split_comment(rest.trim());
            let example_default = match marker {
                None => None,
                Some(m) => Some(
                    m.strip_prefix("example, default: ")
                        .ok_or_else(|| {
                            format!(
                                "line {}: a value's comment must be `# example, default: ...`",
                                n + 1
                            )
                        })?
                        .to_string(),
                ),
            };
            if comment.is_empty() {
                return Err(format!(
                    "line {}: `{}` has no comment above it",
                    n + 1,
                    key.trim()
                ));
            }
            entries.push(Entry {
                section: sections.last().map(|s| s.name.clone()).unwrap_or_default(),
                key: key.trim().to_string(),
                value: value.to_string(),
                example_default,
                about: comment.join(" "),
            });
            comment.clear();
        }
    }
    Ok((sections, entries))
}

/// A value and the comment after it (`#` outside a string).
fn split_comment(text: &str) -> (&str, Option<&str>) {
    let mut quote = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') => return (text[..i].trim(), Some(text[i + 1..].trim())),
            _ => {}
        }
    }
    (text.trim(), None)
}

/// The example file with only its example values: what the defaults are
/// compared against (both files then differ only in the values said to be
/// defaults).
pub fn examples_only(text: &str) -> Result<String, String> {
    let (_, entries) = read_example(text)?;
    let mut out = String::new();
    let mut section = None;
    for e in entries.iter().filter(|e| e.example_default.is_some()) {
        if section != Some(&e.section) {
            let array = read_example(text)?
                .0
                .iter()
                .any(|s| s.name == e.section && s.array);
            if !e.section.is_empty() {
                let _ = if array {
                    writeln!(out, "[[{}]]", e.section)
                } else {
                    writeln!(out, "[{}]", e.section)
                };
            }
            section = Some(&e.section);
        }
        let _ = writeln!(out, "{} = {}", e.key, e.value);
    }
    Ok(out)
}

/// The example file's rules: its second block of comments (the first is its
/// title, the third says how the file is checked).
fn rules_of(text: &str) -> String {
    let blocks: Vec<Vec<&str>> = text
        .split("\n\n")
        .map(|b| b.lines().filter_map(|l| l.strip_prefix("# ")).collect())
        .collect();
    blocks.get(1).map(|b| b.join(" ")).unwrap_or_default()
}

/// `docs/reference/configuration.md`, from the example file's text.
pub fn configuration_markdown(example: &str) -> Result<String, String> {
    let (sections, entries) = read_example(example)?;
    let mut out = format!(
        "# Configuration reference\n\n\
<!-- Generated from docs/reference/quarry.toml by quarry::config::reference; do not edit \
by hand: `QUARRY_BLESS=1 cargo test --test integration reference_docs::` rewrites it. -->\n\n\
Every key of the TOML configuration file, from the commented example \
[`quarry.toml`](quarry.toml), which holds each key with its default value (a test checks \
that it parses, names every key quarry accepts and that its values are the defaults).\n\n\
{}\n\n",
        rules_of(example)
    );
    for section in &sections {
        let keys: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.section == section.name)
            .collect();
        if keys.is_empty() {
            continue;
        }
        let title = match (section.name.as_str(), section.array) {
            ("", _) => "Top level".to_string(),
            (name, true) => format!("`[[{name}]]`"),
            (name, false) => format!("`[{name}]`"),
        };
        let _ = writeln!(out, "## {title}\n");
        if !section.about.is_empty() {
            let _ = writeln!(out, "{}\n", section.about);
        }
        out.push_str("| key | default | description |\n|---|---|---|\n");
        for e in keys {
            let default = match &e.example_default {
                None => format!("`{}`", e.value),
                Some(d) => format!("{d} (example: `{}`)", e.value),
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} |",
                e.key,
                default.replace('|', "\\|"),
                e.about.replace('|', "\\|")
            );
        }
        out.push('\n');
    }
    Ok(out)
}
