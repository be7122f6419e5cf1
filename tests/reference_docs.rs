//! The generated references in docs/reference/ are what the code says: each page
//! is written again in memory and compared with the committed one, and the
//! example configuration file is checked against quarry's own config loader.
//! `QUARRY_BLESS=1 cargo test --test integration reference_docs::` writes the pages.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use quarry::cli::ServeArgs;
use quarry::config::{Settings, reference as config_ref};
use quarry::mcp::tools::error_codes;

const BLESS: &str = "QUARRY_BLESS=1 cargo test --test integration reference_docs::";

fn reference_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reference")
}

fn example() -> String {
    std::fs::read_to_string(reference_dir().join("quarry.toml"))
        .expect("docs/reference/quarry.toml")
}

/// Compares `page` with the committed file (or writes it, when blessing).
fn check_page(name: &str, page: &str) {
    let path = reference_dir().join(name);
    if std::env::var_os("QUARRY_BLESS").is_some() {
        std::fs::write(&path, page).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != page {
        let line = committed
            .lines()
            .zip(page.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(page.lines().count()));
        panic!(
            "docs/reference/{name} is stale (first difference at line {}): run `{BLESS}`",
            line + 1
        );
    }
}

#[test]
fn tools_page_is_current() {
    check_page("tools.md", &quarry::mcp::reference::tools_markdown());
}

/// `quarry tools --markdown` prints the same page.
#[test]
fn quarry_tools_markdown_prints_the_tool_page() {
    let printed = crate::common::run_ok(crate::common::quarry().args(["tools", "--markdown"]));
    assert!(
        printed == quarry::mcp::reference::tools_markdown(),
        "quarry tools --markdown differs from the tool reference"
    );
}

#[test]
fn cli_page_is_current() {
    check_page("cli.md", &quarry::cli_reference::cli_markdown());
}

#[test]
fn configuration_page_is_current() {
    let page = config_ref::configuration_markdown(&example()).unwrap();
    check_page("configuration.md", &page);
}

/// The example names every key quarry accepts and no other: a key added to the
/// config types without a line in the example fails here.
#[test]
fn example_config_holds_every_accepted_key() {
    let accepted: Vec<String> = config_ref::accepted_keys();
    // The probe itself is checked: the sections and keys quarry has always had.
    for known in [
        "catalog",
        "roots.path",
        "limits.max_result_bytes",
        "server.max_tasks",
    ] {
        assert!(
            accepted.iter().any(|k| k == known),
            "{known} not found in {accepted:?}"
        );
    }
    let (_, entries) = config_ref::read_example(&example()).unwrap();
    let written: Vec<String> = entries.iter().map(|e| e.dotted()).collect();
    let accepted_set: BTreeSet<&String> = accepted.iter().collect();
    let written_set: BTreeSet<&String> = written.iter().collect();
    let missing: Vec<&&String> = accepted_set.difference(&written_set).collect();
    let unknown: Vec<&&String> = written_set.difference(&accepted_set).collect();
    assert!(
        missing.is_empty(),
        "docs/reference/quarry.toml lacks the keys {missing:?}: add each with its default and a comment"
    );
    assert!(
        unknown.is_empty(),
        "docs/reference/quarry.toml names keys quarry refuses: {unknown:?}"
    );
    assert_eq!(
        written.len(),
        written_set.len(),
        "a key written twice: {written:?}"
    );
}

/// A remote root added to both files compared: the `[remote]` settings live in
/// each remote root (an XRootD one: made without a connection or a file read).
const PROBE_ROOT: &str = "\n[[roots]]\nname = \"probe\"\npath = \"root://127.0.0.1:1/probe\"\n";

/// What quarry makes of `text` (loaded as quarry does, from a folder holding the
/// `data` root it names), in words: every setting, and the `[remote]` ones.
fn settings_of(dir: &Path, text: &str) -> String {
    let config = dir.join("quarry.toml");
    std::fs::write(&config, format!("{text}{PROBE_ROOT}")).unwrap();
    let settings = Settings::load(&ServeArgs {
        config: Some(config),
        ..ServeArgs::default()
    })
    .unwrap_or_else(|e| panic!("the example does not load: {e:#}\n{text}"));
    let probe = settings.roots.list().iter().find(|r| r.name == "probe");
    let remote = probe
        .and_then(|r| r.remote.as_ref())
        .expect("the probe root");
    format!("{settings:#?}\n{:#?}", remote.settings())
}

/// The values the example writes without an example marker are the defaults:
/// quarry's settings from the whole file equal those from its example values
/// alone (everything else left to the defaults).
#[test]
fn example_config_values_are_the_defaults() {
    let text = example();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("data")).unwrap();
    let whole = settings_of(tmp.path(), &text);
    let examples = config_ref::examples_only(&text).unwrap();
    let defaults = settings_of(tmp.path(), &examples);
    if whole != defaults {
        // The first line that differs, after the lines before it (the names of
        // the settings it is in).
        let (whole, defaults): (Vec<&str>, Vec<&str>) =
            (whole.lines().collect(), defaults.lines().collect());
        let at = (0..whole.len().min(defaults.len()))
            .find(|&i| whole[i] != defaults[i])
            .unwrap_or(whole.len().min(defaults.len()));
        let context = whole[at.saturating_sub(4)..at].join("\n");
        panic!(
            "docs/reference/quarry.toml writes a value that is not the default (mark an intended example \
with `# example, default: ...`):\n{context}\nwritten: {}\ndefault: {}",
            whole.get(at).unwrap_or(&"").trim(),
            defaults.get(at).unwrap_or(&"").trim()
        );
    }
}

/// Every tool of the registry has its error codes in the table, each of them
/// described; every code a `ToolError::new` of the source writes is described.
#[test]
fn error_code_table_covers_every_tool_and_code() {
    for def in quarry::mcp::tools::all() {
        let codes = error_codes::codes_of(def.name).unwrap_or_else(|| {
            panic!(
                "{}: add the tool's error codes to src/mcp/tools/error_codes.rs",
                def.name
            )
        });
        assert!(codes.contains(&"invalid_arguments"), "{}", def.name);
    }
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    let mut seen = 0;
    while let Some(path) = dirs.pop() {
        if path.is_dir() {
            dirs.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (at, _) in text.match_indices("ToolError::new(") {
            let rest = text[at + "ToolError::new(".len()..].trim_start();
            let Some(literal) = rest.strip_prefix('"') else {
                continue; // a code held in a variable
            };
            let code = &literal[..literal.find('"').unwrap()];
            seen += 1;
            assert!(
                error_codes::describe(code).is_some(),
                "{}: the code {code} is not in src/mcp/tools/error_codes.rs's ERROR_CODES",
                path.display()
            );
        }
    }
    assert!(seen > 50, "the scan found only {seen} codes");
}
