//! Client-written tree-sitter queries: compiled per language with an error that
//! names tree-sitter's error kind and offset, and run with a cap on captures and
//! a time budget so that a pathological pattern cannot hold the server.

use std::fmt;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use streaming_iterator::StreamingIterator;
use tree_sitter::{Query, QueryCursor, QueryCursorOptions, QueryErrorKind};

use super::{Language, ParsedSource};

/// Most in-progress matches the cursor keeps at once (tree-sitter drops the
/// oldest past this), which bounds a query's memory.
const IN_PROGRESS_MATCH_LIMIT: u32 = 10_000;

pub struct CompiledQuery {
    pub language: Language,
    query: Query,
}

/// Why a query did not compile, in tree-sitter's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    /// `syntax`, `node_type`, `field`, `capture`, `predicate`, `structure`, `language`.
    pub kind: &'static str,
    /// Byte offset of the fault in the query text.
    pub offset: usize,
    pub detail: String,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Failed to compile query: {} at offset {}",
            self.detail, self.offset
        )
    }
}

/// How much one run may return and how long it may take.
#[derive(Debug, Clone, Copy)]
pub struct QueryLimits {
    pub max_captures: usize,
    pub budget: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryCapture {
    pub capture_name: String,
    pub text: String,
    /// 1-based.
    pub line: u32,
    /// 0-based, in bytes.
    pub column: u32,
}

#[derive(Debug, Default)]
pub struct QueryRun {
    pub captures: Vec<QueryCapture>,
    /// More captures existed than `max_captures`.
    pub truncated: bool,
    /// The time budget ran out (or the caller stopped) before the tree was covered.
    pub timed_out: bool,
}

impl CompiledQuery {
    pub fn compile(language: Language, source: &str) -> Result<CompiledQuery, QueryError> {
        let query = Query::new(&language.grammar(), source).map_err(|e| {
            let (kind, detail) = match e.kind {
                QueryErrorKind::Syntax => ("syntax", "invalid syntax".to_string()),
                // tree-sitter 0.26 quotes the name in its message; the
                // detail quotes it once.
                QueryErrorKind::NodeType => (
                    "node_type",
                    format!("invalid node type '{}'", e.message.trim_matches('"')),
                ),
                QueryErrorKind::Field => ("field", format!("invalid field name '{}'", e.message)),
                QueryErrorKind::Capture => {
                    ("capture", format!("invalid capture name '{}'", e.message))
                }
                QueryErrorKind::Predicate => {
                    ("predicate", format!("invalid predicate: {}", e.message))
                }
                QueryErrorKind::Structure => ("structure", "impossible pattern".to_string()),
                QueryErrorKind::Language => ("language", e.message.clone()),
            };
            QueryError {
                kind,
                offset: e.offset,
                detail,
            }
        })?;
        Ok(CompiledQuery { language, query })
    }

    /// Runs the query over a parsed source, in document order. `stopped` is
    /// polled as the cursor advances; when it says so, the run ends as timed out.
    pub fn run(
        &self,
        source: &ParsedSource,
        limits: QueryLimits,
        stopped: &dyn Fn() -> bool,
    ) -> QueryRun {
        let deadline = Instant::now() + limits.budget;
        let mut run = QueryRun::default();
        let mut halted = false;
        // Breaking from the progress callback halts the cursor.
        let mut halt = |_: &tree_sitter::QueryCursorState| {
            let stop = Instant::now() > deadline || stopped();
            halted |= stop;
            if stop {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let mut cursor = QueryCursor::new();
        cursor.set_match_limit(IN_PROGRESS_MATCH_LIMIT);
        let names = self.query.capture_names();
        let text = source.text.as_bytes();
        let mut captures = cursor.captures_with_options(
            &self.query,
            source.tree.root_node(),
            text,
            QueryCursorOptions::new().progress_callback(&mut halt),
        );
        while let Some((m, index)) = captures.next() {
            if run.captures.len() == limits.max_captures {
                run.truncated = true;
                break;
            }
            let capture = m.captures[*index];
            let at = capture.node.start_position();
            run.captures.push(QueryCapture {
                capture_name: names[capture.index as usize].to_string(),
                text: source
                    .text
                    .get(capture.node.byte_range())
                    .unwrap_or_default()
                    .to_string(),
                line: at.row as u32 + 1,
                column: at.column as u32,
            });
        }
        drop(captures);
        run.timed_out = halted;
        run
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::code::{PARSE_BUDGET, parse};

    const LIMITS: QueryLimits = QueryLimits {
        max_captures: 1000,
        budget: Duration::from_secs(5),
    };

    #[test]
    fn compile_errors_name_the_kind_and_offset() {
        let e = CompiledQuery::compile(Language::Cpp, "(function_definition (foo) @x)")
            .err()
            .unwrap();
        assert_eq!(e.kind, "node_type");
        assert_eq!(
            e.to_string(),
            "Failed to compile query: invalid node type 'foo' at offset 22"
        );
        let e = CompiledQuery::compile(Language::Python, "(identifier @x")
            .err()
            .unwrap();
        assert_eq!(e.kind, "syntax");
        assert!(
            e.to_string()
                .starts_with("Failed to compile query: invalid syntax at offset")
        );
    }

    #[test]
    fn captures_come_in_document_order_and_are_capped() {
        let src = parse(
            Language::Python,
            "import os\nimport sys\nfrom a import b\n".into(),
            PARSE_BUDGET,
        )
        .unwrap();
        let q = CompiledQuery::compile(
            Language::Python,
            "[(import_statement) @import (import_from_statement) @import_from]",
        )
        .unwrap();
        let run = q.run(&src, LIMITS, &|| false);
        let got: Vec<_> = run
            .captures
            .iter()
            .map(|c| (c.capture_name.as_str(), c.text.as_str(), c.line, c.column))
            .collect();
        assert_eq!(
            got,
            vec![
                ("import", "import os", 1, 0),
                ("import", "import sys", 2, 0),
                ("import_from", "from a import b", 3, 0)
            ]
        );
        assert!(!run.truncated);
        let run = q.run(
            &src,
            QueryLimits {
                max_captures: 2,
                ..LIMITS
            },
            &|| false,
        );
        assert_eq!(run.captures.len(), 2);
        assert!(run.truncated);
    }
}
