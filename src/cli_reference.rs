//! The command-line reference (`docs/reference/cli.md`), written from clap's
//! definition (`cli::command()`), so it says what `quarry --help` says.
//! `tests/reference_docs.rs` fails when the committed page differs from this.

use std::fmt::Write as _;

use clap::{Arg, ArgAction, Command};

/// The whole page.
pub fn cli_markdown() -> String {
    let mut cmd = crate::cli::command();
    // Building fills in what clap derives at parse time: `--help`, `--version`,
    // the global options on every subcommand, each subcommand's full name.
    cmd.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
<!-- Generated from clap's definition (src/cli.rs) by quarry::cli_reference; do not edit \
by hand: `QUARRY_BLESS=1 cargo test --test integration reference_docs::` rewrites it. -->\n\n",
    );
    let _ = writeln!(out, "{}\n", about_of(&cmd));
    let _ = writeln!(out, "```text\n{}\n```\n", usage_of(&mut cmd));
    options(&mut out, &cmd, true);
    out.push_str("## Commands\n\n");
    for sub in cmd.get_subcommands() {
        let _ = writeln!(
            out,
            "- [`quarry {0}`](#quarry-{0}): {1}",
            sub.get_name(),
            first_line(sub)
        );
    }
    out.push('\n');
    for sub in cmd.get_subcommands_mut() {
        let name = sub.get_name().to_string();
        let _ = writeln!(out, "## `quarry {name}`\n");
        let _ = writeln!(out, "{}\n", about_of(sub));
        let _ = writeln!(out, "```text\n{}\n```\n", usage_of(sub));
        options(&mut out, sub, false);
        if let Some(after) = sub.get_after_long_help().or(sub.get_after_help()) {
            let _ = writeln!(out, "```text\n{after}\n```\n");
        }
    }
    out
}

fn first_line(cmd: &Command) -> String {
    cmd.get_about().map(|a| a.to_string()).unwrap_or_default()
}

/// `long_about` when there is one, else `about`.
fn about_of(cmd: &Command) -> String {
    cmd.get_long_about()
        .or(cmd.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default()
}

fn usage_of(cmd: &mut Command) -> String {
    cmd.render_usage()
        .to_string()
        .trim_start_matches("Usage: ")
        .to_string()
}

/// The table of a command's arguments and options (a subcommand's without the
/// global ones, shown once at the top). The default and env columns are shown
/// where some argument has one.
fn options(out: &mut String, cmd: &Command, top: bool) {
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && (top || !a.is_global_set()))
        .collect();
    if args.is_empty() {
        return;
    }
    let with_default = args.iter().any(|a| !a.get_default_values().is_empty());
    let with_env = args.iter().any(|a| a.get_env().is_some());
    let mut head = vec!["argument", "value"];
    head.extend(with_default.then_some("default"));
    head.extend(with_env.then_some("env"));
    head.push("description");
    let _ = writeln!(
        out,
        "| {} |\n|{}",
        head.join(" | "),
        "---|".repeat(head.len())
    );
    for arg in args {
        let mut row = vec![cell(&spelling(arg)), cell(&value_of(arg))];
        if with_default {
            row.push(cell(&defaults(arg)));
        }
        if with_env {
            row.push(
                arg.get_env()
                    .map(|e| format!("`{}`", e.to_string_lossy()))
                    .unwrap_or_default(),
            );
        }
        row.push(cell(&help_of(arg)));
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out.push('\n');
}

/// How the argument is written: `--root`, `-v, --verbose`, or `<TOOL>`.
fn spelling(arg: &Arg) -> String {
    if arg.is_positional() {
        let name = arg.get_value_names().and_then(|v| v.first()).map_or_else(
            || arg.get_id().to_string().to_uppercase(),
            |v| v.to_string(),
        );
        return format!("`<{name}>`");
    }
    let mut forms = Vec::new();
    if let Some(s) = arg.get_short() {
        forms.push(format!("`-{s}`"));
    }
    if let Some(l) = arg.get_long() {
        forms.push(format!("`--{l}`"));
    }
    forms.join(", ")
}

/// What the argument takes, how often, and whether it is required.
fn value_of(arg: &Arg) -> String {
    let mut words = Vec::new();
    match arg.get_action() {
        ArgAction::SetTrue | ArgAction::SetFalse => words.push("flag".to_string()),
        ArgAction::Count => words.push("flag, repeatable (counted)".to_string()),
        ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version => {
            words.push("flag".to_string())
        }
        action => {
            if !arg.is_positional()
                && let Some(names) = arg.get_value_names()
            {
                let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                words.push(names.join(" "));
            }
            let values: Vec<String> = arg
                .get_possible_values()
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| format!("`{}`", v.get_name()))
                .collect();
            if !values.is_empty() {
                words.push(format!("one of {}", values.join(", ")));
            }
            if matches!(action, ArgAction::Append) {
                words.push("repeatable".to_string());
            }
        }
    }
    if arg.is_required_set() {
        words.push("required".to_string());
    }
    if arg.is_global_set() {
        words.push("global".to_string());
    }
    words.join(", ")
}

fn defaults(arg: &Arg) -> String {
    if matches!(
        arg.get_action(),
        ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count
    ) {
        return String::new(); // a flag's default is its absence
    }
    let values: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    values.join(", ")
}

fn help_of(arg: &Arg) -> String {
    arg.get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default()
}

/// Text fit for a table cell: one line, no column breaks.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
