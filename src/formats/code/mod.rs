//! Source code (C++ and Python) read with tree-sitter: the language from the
//! file name, a parse held to a time budget, and the file's classes, functions,
//! include/import count and syntax-error ranges (`symbols`). Queries written by
//! a client are compiled and run here too (`query`). This module knows nothing
//! of the catalog or of MCP.

mod members;
mod names;
mod query;
mod refs;
mod relations;
mod runtime;
mod symbols;
mod walk;

use std::fs::File;
use std::io::Read;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::FormatError;

pub use query::{CompiledQuery, QueryCapture, QueryError, QueryLimits, QueryRun};
pub use relations::{
    Access, Base, ClassInfo, CodeRefs, Include, LineCounts, Member, MemberKind, Reference, Role,
    ScopeEntry, ScopeKind,
};
pub use symbols::{CodeFile, ErrorRange, Extracted, Symbol, SymbolKind};

/// The walk's maps and sets, keyed by names of the file.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub(crate) type FastSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

/// Largest source file quarry parses: past this it is generated code or data.
pub const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// How long one file's parse may take before it is given up.
pub const PARSE_BUDGET: Duration = Duration::from_secs(5);

/// The languages quarry parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Language {
    Cpp,
    Python,
}

impl Language {
    pub const ALL: [Language; 2] = [Language::Cpp, Language::Python];

    /// The name tools use (`cpp`, `python`), as the spec's `language` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Cpp => "cpp",
            Language::Python => "python",
        }
    }

    pub fn parse(name: &str) -> Option<Language> {
        Language::ALL.into_iter().find(|l| l.as_str() == name)
    }

    /// The language a file name's extension says (case-insensitive).
    pub fn from_name(name: &str) -> Option<Language> {
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "py" => Some(Language::Python),
            "cpp" | "cc" | "cxx" | "hpp" | "hh" | "h" | "hxx" => Some(Language::Cpp),
            _ => None,
        }
    }

    /// The tree-sitter grammar. Every tree-sitter object starts from here
    /// (`runtime`: the runtime's allocator is set first).
    pub fn grammar(self) -> tree_sitter::Language {
        runtime::grammar(self)
    }
}

/// A parsed source file: its text and tree, kept together because captures and
/// names are slices of the text.
pub struct ParsedSource {
    pub language: Language,
    pub text: String,
    pub tree: tree_sitter::Tree,
}

/// Reads a source file as UTF-8 text; binary content (a NUL byte) and bytes that
/// are not UTF-8 are the file's error.
pub fn read_text(mut file: File) -> Result<String, FormatError> {
    let too_large = || {
        FormatError::Unsupported(format!(
            "source file larger than {} MiB (generated code?) is not parsed",
            MAX_SOURCE_BYTES >> 20
        ))
    };
    // A file that says it is larger is not read at all; one that grows
    // while it is read is read no further than the limit.
    if file.metadata()?.len() > MAX_SOURCE_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_SOURCE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SOURCE_BYTES {
        return Err(too_large());
    }
    if memchr::memchr(0, &bytes).is_some() {
        return Err(FormatError::Corrupt(
            "binary content (NUL byte) in a source file".into(),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        FormatError::Corrupt(format!(
            "source file is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Parses `text` as `language`, giving up after `budget`.
pub fn parse(
    language: Language,
    text: String,
    budget: Duration,
) -> Result<ParsedSource, FormatError> {
    let deadline = Instant::now() + budget;
    // Breaking from the progress callback halts the parse.
    let mut over_budget = |_: &tree_sitter::ParseState| {
        if Instant::now() > deadline {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let bytes = text.as_bytes();
    let mut input = |offset: usize, _: tree_sitter::Point| bytes.get(offset..).unwrap_or(&[]);
    let tree = runtime::with_parser(language, |parser| {
        let options = tree_sitter::ParseOptions::new().progress_callback(&mut over_budget);
        parser.parse_with_options(&mut input, None, Some(options))
    })
    .map_err(|e| FormatError::Unsupported(format!("tree-sitter grammar mismatch: {e}")))?
    .ok_or_else(|| {
        FormatError::Unsupported(format!(
            "parsing took longer than {} s and was given up",
            budget.as_secs_f64()
        ))
    })?;
    Ok(ParsedSource {
        language,
        text,
        tree,
    })
}

/// Reads and parses the source file `name`, opened as `file`.
pub fn read_and_parse(name: &str, file: File) -> Result<ParsedSource, FormatError> {
    let language = Language::from_name(name).ok_or_else(|| {
        FormatError::Unsupported(format!("'{name}' has no C++ or Python extension"))
    })?;
    parse(language, read_text(file)?, PARSE_BUDGET)
}

/// The symbols, relations and references of the source file `name`.
pub fn read(name: &str, file: File) -> Result<Extracted, FormatError> {
    Ok(symbols::extract(&read_and_parse(name, file)?))
}

/// Extracts what the catalog keeps of an already parsed source.
pub fn extract(source: &ParsedSource) -> Extracted {
    symbols::extract(source)
}

/// Where quarry's tree cursor and tree-sitter's first disagree on `source`'s
/// tree, or the quick walk (stepping over tokens) and the full walk, if
/// anywhere: for the fuzz target `code_source`.
pub fn walk_disagreement_for_fuzzing(source: &ParsedSource) -> Option<String> {
    walk::compare_with_tree_sitter(&source.tree)
        .err()
        .or_else(|| symbols::quick_walk_disagreement(source))
}

/// The check `formats::validate` runs: the file is UTF-8 text.
pub fn check(file: File) -> Result<(), FormatError> {
    read_text(file).map(|_| ())
}
