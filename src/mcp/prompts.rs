//! MCP prompts (`prompts/list`, `prompts/get`): the jobs a user starts with,
//! each a short message sequence naming quarry's tools in the order to use
//! them. Clients show them as slash commands. The tools a prompt names are
//! checked against the registry by this module's tests, so they cannot drift.

use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};

use super::tools::Toolset;

/// Makes a prompt's messages from its arguments' values (`arg(name)`).
type Messages = fn(&dyn Fn(&str) -> String) -> Vec<(Role, String)>;

/// One prompt: its name, what it is for, its arguments (all required), and
/// the messages made from the arguments' values.
struct PromptDef {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    arguments: &'static [(&'static str, &'static str)],
    /// Served when any of these toolsets is on (the tools it names are).
    needs: &'static [Toolset],
    messages: Messages,
}

static PROMPTS: &[PromptDef] = &[
    PromptDef {
        name: "explore_root_file",
        title: "Explore a ROOT file",
        description: "What a ROOT file holds: trees, branches, histograms, and a first look at the data.",
        arguments: &[("path", "The ROOT file (as list_files shows it)")],
        needs: &[Toolset::Root],
        messages: |arg| {
            let path = arg("path");
            vec![
                (
                    Role::User,
                    format!(
                        "Explore the ROOT file {path} and tell me what it holds. Use quarry's tools in this order:\n\
1. inspect_file(path='{path}'): its trees (entries), histograms and folders.\n\
2. list_branches(path='{path}', tree=...) for each tree: branch names and types; include_stats=true gives ranges.\n\
3. sample_tree(path='{path}', tree=..., size=5) to see a few entries.\n\
4. read_histogram(path='{path}', name=...) for the stored histograms that matter.\n\
5. compute_histogram(path='{path}', tree=..., branch=..., bins=50) for one or two key branches.\n\
Summarise what the file is for, its main objects and anything odd (empty trees, NaN, unusual ranges)."
                    ),
                ),
                (
                    Role::Assistant,
                    format!("I'll start with inspect_file(path='{path}')."),
                ),
            ]
        },
    },
    PromptDef {
        name: "analyse_dataset",
        title: "Analyse a dataset",
        description: "Answers a question about an HDF5 dataset or a ROOT tree or saved dataset from its values.",
        arguments: &[
            (
                "dataset",
                "An h5:// URI, a ROOT file, or a saved ROOT dataset's name",
            ),
            ("question", "What to find out"),
        ],
        needs: &[Toolset::Hdf5, Toolset::Root],
        messages: |arg| {
            let (dataset, question) = (arg("dataset"), arg("question"));
            vec![
                (
                    Role::User,
                    format!(
                        "Answer this question about {dataset}: {question}\n\
If it is HDF5 (an h5:// URI; find_datasets(name=...) finds one):\n\
1. read_resource(uri=...) for its shape, type, chunks and attributes.\n\
2. get_dataset_stats(uri=...) for count, min, max, mean, std and NaN.\n\
3. read_dataset_slice(uri=..., slice_str=...) to look at values.\n\
4. export_dataset(uri=..., output_format='npy', output_path=...) when more values are needed than a reply carries.\n\
If it is ROOT (a file, or a saved dataset: list_root_datasets() lists them):\n\
1. list_branches(path=..., tree=...) for the branches and types.\n\
2. get_branch_stats(branches=[...]) for ranges and quantiles.\n\
3. apply_selection(selection=...) to count what passes a cut.\n\
4. compute_histogram(branch=..., bins=..., selection=...) and, for a peak or a slope, fit_histogram(...).\n\
Give the numbers the answer rests on and the calls that produced them."
                    ),
                ),
                (
                    Role::Assistant,
                    "I'll first find out what kind of dataset this is and how it is shaped."
                        .to_string(),
                ),
            ]
        },
    },
    PromptDef {
        name: "find_in_documents",
        title: "Find in the documents",
        description: "Answers a question from the indexed documents (PDF, Markdown, text), with the pages it rests on.",
        arguments: &[("question", "What to look for")],
        needs: &[Toolset::Docs],
        messages: |arg| {
            let question = arg("question");
            vec![(
                Role::User,
                format!(
                    "Find the answer to this in the indexed documents: {question}\n\
1. search_documents(query=..., scope={{\"type\": \"global\"}}) with the question's key terms; \
search_multiple(queries=[...], scope={{\"type\": \"global\"}}) for synonyms and spellings.\n\
2. get_document_info(path=...) for a promising document's title and outline.\n\
3. read_document(path=..., pages=...) for the pages the hits point to.\n\
Quote the passages the answer rests on, with document and page; say so if the documents do not answer it."
                ),
            )]
        },
    },
    PromptDef {
        name: "explain_code",
        title: "Explain a symbol in the code",
        description: "Where a C++ or Python symbol is defined, what it does and how it fits with the code around it.",
        arguments: &[("symbol", "A function, class or method name")],
        needs: &[Toolset::Code],
        messages: |arg| {
            let symbol = arg("symbol");
            vec![(
                Role::User,
                format!(
                    "Explain {symbol} in the indexed source code.\n\
1. find_symbol(name='{symbol}') for where it is defined and its signature.\n\
2. get_outline(filepath=...) of that file for what surrounds it.\n\
3. find_functions(filepath=...) or find_classes(filepath=...) for the related definitions.\n\
4. execute_query(filepath=..., query=...) to find where it is called or used.\n\
Explain what it does, its inputs and outputs, and where it is used, naming files and lines."
                ),
            )]
        },
    },
];

fn served(p: &PromptDef, toolsets: &[Toolset]) -> bool {
    p.needs.iter().any(|t| toolsets.contains(t))
}

/// The prompts whose tools are on, as `prompts/list` gives them.
pub fn list(toolsets: &[Toolset]) -> Vec<Prompt> {
    PROMPTS
        .iter()
        .filter(|p| served(p, toolsets))
        .map(|p| {
            let arguments = p
                .arguments
                .iter()
                .map(|(name, description)| {
                    PromptArgument::new(*name)
                        .with_description(*description)
                        .with_required(true)
                })
                .collect();
            Prompt::new(p.name, Some(p.description), Some(arguments)).with_title(p.title)
        })
        .collect()
}

/// Why `prompts/get` cannot answer.
#[derive(Debug, PartialEq, Eq)]
pub enum PromptError {
    Unknown(String),
    MissingArgument(&'static str),
}

impl std::fmt::Display for PromptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PromptError::Unknown(name) => write!(
                f,
                "no prompt '{name}'; prompts/list gives: {}",
                PROMPTS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            PromptError::MissingArgument(name) => write!(f, "the argument '{name}' is required"),
        }
    }
}

/// The prompt `name` with its arguments filled in.
pub fn get(
    name: &str,
    arguments: Option<&JsonObject>,
    toolsets: &[Toolset],
) -> Result<GetPromptResult, PromptError> {
    let p = PROMPTS
        .iter()
        .find(|p| p.name == name && served(p, toolsets))
        .ok_or_else(|| PromptError::Unknown(name.to_string()))?;
    let value = |key: &str| -> Option<String> {
        match arguments?.get(key)? {
            serde_json::Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
            serde_json::Value::String(_) | serde_json::Value::Null => None,
            other => Some(other.to_string()),
        }
    };
    for (key, _) in p.arguments {
        if value(key).is_none() {
            return Err(PromptError::MissingArgument(key));
        }
    }
    let arg = |key: &str| value(key).unwrap_or_default();
    let messages = (p.messages)(&arg)
        .into_iter()
        .map(|(role, text)| PromptMessage::new_text(role, text))
        .collect();
    Ok(GetPromptResult::new(messages).with_description(p.description))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: &[Toolset] = &[Toolset::Root, Toolset::Hdf5, Toolset::Docs, Toolset::Code];

    /// Every `word(` in a prompt's text that looks like a tool call.
    fn named_tools(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (at, _) in text.match_indices('(') {
            let name: String = text[..at]
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if name.contains('_') {
                out.push(name);
            }
        }
        out
    }

    #[test]
    fn prompts_name_only_registered_tools() {
        let registered: Vec<&str> = crate::mcp::tools::all().map(|t| t.name).collect();
        let filled = |_: &str| "X".to_string();
        for p in PROMPTS {
            let text: String = (p.messages)(&filled)
                .into_iter()
                .map(|(_, t)| t)
                .collect::<Vec<_>>()
                .join("\n");
            let named = named_tools(&text);
            assert!(named.len() >= 3, "{}: names {named:?}", p.name);
            for tool in named {
                assert!(
                    registered.contains(&tool.as_str()),
                    "{} names '{tool}', no such tool",
                    p.name
                );
            }
        }
    }

    #[test]
    fn arguments_are_required_and_filled_in() {
        assert_eq!(
            get("explore_root_file", None, ALL).unwrap_err(),
            PromptError::MissingArgument("path")
        );
        let args: JsonObject =
            serde_json::from_value(serde_json::json!({"path": "root/a.root"})).unwrap();
        let got = get("explore_root_file", Some(&args), ALL).unwrap();
        let text = serde_json::to_string(&got.messages).unwrap();
        assert!(text.contains("inspect_file(path='root/a.root')"), "{text}");
        assert!(matches!(
            get("nope", None, ALL),
            Err(PromptError::Unknown(_))
        ));
        // A prompt whose tools are off is not served.
        assert!(matches!(
            get("explore_root_file", Some(&args), &[Toolset::Hdf5]),
            Err(PromptError::Unknown(_))
        ));
        assert_eq!(list(&[Toolset::Hdf5]).len(), 1);
    }
}
