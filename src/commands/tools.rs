//! `quarry tools`: the tools a quarry serves, for people (a table) or for
//! programs (`--json`: the tools/list entries).

use serde_json::{Value, json};

use crate::cli::ToolsArgs;
use crate::config::Settings;
use crate::mcp::tools::{ToolDef, Toolset};

pub fn run(args: ToolsArgs) -> anyhow::Result<()> {
    if args.markdown {
        return super::print_out(&crate::mcp::reference::tools_markdown());
    }
    let toolsets = Settings::toolsets_of(args.config.as_deref())?;
    let served: Vec<&ToolDef> = served_tools(&toolsets).collect();
    if args.json {
        let list: Vec<Value> = served
            .iter()
            .map(|d| {
                json!({
                    "name": d.name,
                    "title": d.title,
                    "toolset": d.toolset.as_str(),
                    "read_only": d.effects.read_only,
                    "description": d.description,
                })
            })
            .collect();
        super::print_out(&format!("{}\n", serde_json::to_string_pretty(&list)?))
    } else {
        super::print_out(&table(&served))
    }
}

/// The tools whose toolset is on, in registry order.
pub fn served_tools(toolsets: &[Toolset]) -> impl Iterator<Item = &'static ToolDef> {
    crate::mcp::tools::all().filter(|d| d.toolset.is_on(toolsets))
}

/// One line per tool: name, toolset, whether it writes, and the description's
/// first sentence.
pub fn table(tools: &[&ToolDef]) -> String {
    let width = tools.iter().map(|d| d.name.len()).max().unwrap_or(4).max(4);
    let mut out = format!(
        "{:<width$}  {:<9}  {:<9}  summary\n",
        "tool", "set", "access"
    );
    for d in tools {
        let access = if d.effects.read_only {
            "read-only"
        } else {
            "writes"
        };
        out += &format!(
            "{:<width$}  {:<9}  {:<9}  {}\n",
            d.name,
            d.toolset.as_str(),
            access,
            summary(d.description)
        );
    }
    out
}

/// A description's first sentence (up to the first ". " or line break).
pub fn summary(description: &str) -> &str {
    let end = [description.find(". "), description.find('\n')]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(description.len());
    description[..end].trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_the_first_sentence() {
        assert_eq!(summary("Lists files. Then more."), "Lists files");
        assert_eq!(summary("One line\nsecond"), "One line");
        assert_eq!(summary("No stop"), "No stop");
        assert_eq!(summary("Ends here."), "Ends here");
    }

    #[test]
    fn every_tool_has_a_row() {
        let all: Vec<&ToolDef> = crate::mcp::tools::all().collect();
        let t = table(&all);
        assert_eq!(t.lines().count(), all.len() + 1);
        assert!(t.contains("list_files"), "{t}");
    }
}
