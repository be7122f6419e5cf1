//! The symbols of a parsed source file: classes (C++ `class_specifier` and
//! `struct_specifier` with a body, Python `class_definition`) and functions
//! (every `function_definition`), each placed in its namespace/class scope.
//!
//! A symbol's line (1-based) and column (0-based, in bytes) are those of its
//! name as written: for an out-of-line C++ definition `void A::f()` that is
//! where `A::f` starts, as the reference server reports it.

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use super::names::{Action, Names};
use super::relations::{ClassInfo, CodeRefs, Include, LineCounts, RawRef, ScopeEntry, ScopeKind};
use super::{FastMap, FastSet, Language, ParsedSource};

/// Most syntax-error ranges kept per file: a file that is not code at all would
/// otherwise store one per line.
pub const MAX_ERROR_RANGES: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SymbolKind {
    Class,
    Struct,
    /// A function at namespace or module level, or nested in a function.
    Function,
    /// A function defined in a class body, or out of line as `A::f`.
    Method,
}

impl SymbolKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SymbolKind::Class => "class",
            SymbolKind::Struct => "struct",
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
        }
    }

    pub fn is_class(self) -> bool {
        matches!(self, SymbolKind::Class | SymbolKind::Struct)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    pub name: String,
    /// Namespace and class scope joined by `::` (C++) or `.` (Python).
    pub qualified_name: String,
    pub kind: SymbolKind,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    /// Qualified name of the enclosing class, if any.
    pub parent: Option<String>,
}

/// A syntax error or missing token: start and end as (line 1-based, column 0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorRange {
    pub start_line: u32,
    pub start_column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

/// What quarry keeps of a source file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeFile {
    pub language: Language,
    /// Classes and functions in source order.
    pub symbols: Vec<Symbol>,
    /// `#include` lines (C++) or import statements (Python).
    pub include_count: u32,
    pub has_errors: bool,
    pub error_ranges: Vec<ErrorRange>,
    /// `#include`s or imports, in source order.
    pub includes: Vec<Include>,
    /// Bases and members of each class with a body, in source order.
    pub class_info: Vec<ClassInfo>,
    pub lines: LineCounts,
}

impl CodeFile {
    pub fn classes(&self) -> impl Iterator<Item = &Symbol> {
        self.symbols.iter().filter(|s| s.kind.is_class())
    }

    pub fn functions(&self) -> impl Iterator<Item = &Symbol> {
        self.symbols.iter().filter(|s| !s.kind.is_class())
    }
}

/// One enclosing scope while walking.
pub(super) struct Scope {
    /// The scope's qualified name.
    pub(super) qualified: String,
    pub(super) is_class: bool,
    /// Its entry in the references' scope table, plus one.
    pub(super) entry: u32,
    /// Parameters and local variables of a function scope: uses of these
    /// names are not references to a symbol.
    pub(super) locals: FastSet<String>,
}

/// A node on the path from the root to the node being visited.
pub(super) struct Frame<'t> {
    pub(super) node: Node<'t>,
    /// `node.kind()`, looked up once.
    pub(super) kind: &'static str,
    /// The field it was reached as; in the quick walk only for the kinds
    /// that read it (`KindInfo::wants_field`), else None.
    pub(super) field: Option<&'static str>,
    /// No syntax error or missing token in its subtree.
    pub(super) clean: bool,
    /// The node opened a scope, closed when it is left.
    pub(super) opened: bool,
    /// Its identifiers were recorded by the statement (imports).
    pub(super) skip: bool,
    /// Inside a Python type annotation.
    pub(super) in_type: bool,
    /// For a qualified name (or a template naming one): the qualifier of
    /// the name it ends in, and of its scope part.
    pub(super) name_qual: Option<String>,
    pub(super) scope_qual: Option<String>,
}

/// Everything quarry keeps of a parsed source file.
pub struct Extracted {
    pub file: CodeFile,
    pub refs: CodeRefs,
}

pub(super) fn extract(source: &ParsedSource) -> Extracted {
    extract_with(source, Walking::Quick)
}

/// How the walk meets tokens and literals.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walking {
    /// Steps over them where the tree has no errors.
    Quick,
    /// Enters every node (the reference the quick walk is tested against).
    Full,
}

/// What the quick walk finds that the full walk does not, or the other way
/// round (for the fuzz target `code_source`).
pub(super) fn quick_walk_disagreement(source: &ParsedSource) -> Option<String> {
    let quick = extract_with(source, Walking::Quick);
    let full = extract_with(source, Walking::Full);
    if quick.file != full.file {
        return Some(
            "the quick walk's symbols, includes or lines differ from the full walk's".into(),
        );
    }
    if quick.refs != full.refs {
        return Some("the quick walk's references differ from the full walk's".into());
    }
    None
}

fn extract_with(source: &ParsedSource, walking: Walking) -> Extracted {
    let mut walk = Walk {
        text: &source.text,
        language: source.language,
        names: Names::of(source.language),
        scopes: Vec::new(),
        frames: Vec::new(),
        refs: Vec::new(),
        scope_entries: Vec::new(),
        usings: Vec::new(),
        comments: Vec::new(),
        aliases: Default::default(),
        out: CodeFile {
            language: source.language,
            symbols: Vec::new(),
            include_count: 0,
            has_errors: source.tree.root_node().has_error(),
            error_ranges: Vec::new(),
            includes: Vec::new(),
            class_info: Vec::new(),
            lines: LineCounts::default(),
        },
    };
    // One cursor over the whole tree, no recursion (hostile input nests deeper
    // than a thread's stack allows). `frames` is the path to the current node:
    // what its ancestors are decides how an identifier is used. Where a
    // subtree has no errors (most of a file that has some: a macro tree-sitter
    // cannot parse leaves the rest of the file clean) the quick walk's cursor
    // steps over tokens and literals itself (`Names::inert_kinds`), about half
    // the nodes, so every node it hands over gets a frame. The full walk's
    // cursor hands every node.
    let quick = walking == Walking::Quick;
    let mut cursor = if quick {
        super::walk::Cursor::skipping(&source.tree, walk.names.inert_kinds())
    } else {
        super::walk::Cursor::new(&source.tree)
    };
    'tree: loop {
        let node = cursor.node();
        let info = walk.names.info(node);
        // Below a node without errors no node has one (tree-sitter sums a
        // subtree's error cost from its children's).
        let clean = match walk.frames.last() {
            Some(parent) if parent.clean => true,
            _ => !node.has_error(),
        };
        debug_assert!(
            !(quick && clean && info.inert),
            "the quick walk's cursor handed a {} it steps over",
            info.name
        );
        // The field costs a walk over the grammar's field map: the quick
        // walk asks only where it is read.
        let field = if quick && !info.wants_field {
            None
        } else {
            walk.names.field(cursor.field_id())
        };
        let frame = walk.enter(node, info, field, clean);
        walk.frames.push(frame);
        // Strings are entered too: their parts are inert (the cursor passes
        // over them), but a comment can sit between two of them.
        if cursor.goto_first_child() {
            continue;
        }
        // Leave this node, then every ancestor whose last child it was.
        loop {
            if walk.frames.pop().is_some_and(|f| f.opened) {
                walk.scopes.pop();
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                break 'tree;
            }
        }
    }
    walk.out.lines = super::relations::count_lines(&source.text, &walk.comments);
    let refs = CodeRefs::build(walk.refs, walk.scope_entries, walk.usings);
    Extracted {
        file: walk.out,
        refs,
    }
}

pub(super) struct Walk<'a> {
    pub(super) text: &'a str,
    pub(super) language: Language,
    pub(super) names: &'static Names,
    pub(super) scopes: Vec<Scope>,
    pub(super) frames: Vec<Frame<'a>>,
    pub(super) refs: Vec<RawRef<'a>>,
    pub(super) scope_entries: Vec<ScopeEntry>,
    pub(super) usings: Vec<String>,
    /// Byte ranges of comments, in order.
    pub(super) comments: Vec<(usize, usize)>,
    /// Python names bound by imports: local name -> (the module it comes
    /// from, "" for a module itself; the full dotted name it stands for).
    pub(super) aliases: FastMap<String, (String, String)>,
    pub(super) out: CodeFile,
}

impl<'a> Walk<'a> {
    /// Records what `node` declares; true when it opened a scope its children are in.
    pub(super) fn visit(&mut self, node: Node, action: Action) -> bool {
        // A tree without errors has no error or missing node to ask about.
        if self.out.has_errors && (node.is_error() || node.is_missing()) {
            self.note_error(node);
        }
        match action {
            Action::Nothing => false,
            Action::Namespace => {
                let name = self
                    .names
                    .child(node, "name")
                    .map_or_else(|| "(anonymous)".to_string(), |n| self.compact(n));
                self.open_scope(&name, ScopeKind::Namespace);
                true
            }
            Action::CppClass => self.cpp_class(node),
            Action::PythonClass => self.python_class(node),
            Action::CppFunction => self.cpp_function(node),
            Action::PythonFunction => self.python_function(node),
            Action::CppInclude => {
                self.out.include_count += 1;
                self.cpp_include(node);
                false
            }
            Action::PythonImport => {
                self.out.include_count += 1;
                self.python_import(node);
                false
            }
            Action::Comment => {
                self.comments.push((node.start_byte(), node.end_byte()));
                false
            }
        }
    }

    fn note_error(&mut self, node: Node) {
        if self.out.error_ranges.len() < MAX_ERROR_RANGES {
            let (s, e) = (node.start_position(), node.end_position());
            self.out.error_ranges.push(ErrorRange {
                start_line: s.row as u32 + 1,
                start_column: s.column as u32,
                end_line: e.row as u32 + 1,
                end_column: e.column as u32,
            });
        }
    }

    fn cpp_class(&mut self, node: Node) -> bool {
        // `struct stat st;` and `class A;` name a class without defining one.
        if self.names.child(node, "body").is_none() {
            return false;
        }
        let kind = if node.kind() == "struct_specifier" {
            SymbolKind::Struct
        } else {
            SymbolKind::Class
        };
        let Some(name_node) = self.names.child(node, "name") else {
            self.open_scope("(anonymous)", ScopeKind::Class);
            return true;
        };
        let written = self.compact(name_node);
        let (qualifier, name) = split_qualified(&written);
        self.record(node, name_node, name, qualifier, kind);
        let qualified = self.symbol_qualified_name(qualifier, name);
        self.push_scope(qualified, ScopeKind::Class);
        self.cpp_class_info(node);
        true
    }

    fn python_class(&mut self, node: Node) -> bool {
        let Some(name_node) = self.names.child(node, "name") else {
            return false;
        };
        let name = self.compact(name_node);
        self.record(node, name_node, &name, "", SymbolKind::Class);
        self.open_scope(&name, ScopeKind::Class);
        self.python_class_info(node);
        true
    }

    fn cpp_function(&mut self, node: Node) -> bool {
        let Some(name_node) = cpp_function_name(node) else {
            return false;
        };
        let written = self.compact(name_node);
        let (qualifier, name) = split_qualified(&written);
        let kind = if !qualifier.is_empty() || self.in_class() {
            SymbolKind::Method
        } else {
            SymbolKind::Function
        };
        self.record(node, name_node, name, qualifier, kind);
        let qualified = self.symbol_qualified_name(qualifier, name);
        self.push_scope(qualified, ScopeKind::Function);
        true
    }

    fn python_function(&mut self, node: Node) -> bool {
        let Some(name_node) = self.names.child(node, "name") else {
            return false;
        };
        let name = self.compact(name_node);
        let kind = if self.in_class() {
            SymbolKind::Method
        } else {
            SymbolKind::Function
        };
        self.record(node, name_node, &name, "", kind);
        self.open_scope(&name, ScopeKind::Function);
        true
    }

    pub(super) fn in_class(&self) -> bool {
        self.scopes.last().is_some_and(|s| s.is_class)
    }

    pub(super) fn separator(&self) -> &'static str {
        match self.language {
            Language::Cpp => "::",
            Language::Python => ".",
        }
    }

    fn open_scope(&mut self, name: &str, kind: ScopeKind) {
        let qualified = self.symbol_qualified_name("", name);
        self.push_scope(qualified, kind);
    }

    /// Enters a scope, giving it an entry in the references' scope table.
    fn push_scope(&mut self, qualified: String, kind: ScopeKind) {
        self.scope_entries.push(ScopeEntry {
            name: qualified.clone(),
            kind,
            parent: self.scopes.last().map_or(0, |s| s.entry),
        });
        self.scopes.push(Scope {
            qualified,
            is_class: kind == ScopeKind::Class,
            entry: self.scope_entries.len() as u32,
            locals: Default::default(),
        });
    }

    /// The enclosing scope, then the qualifier written with the name, then the name.
    fn symbol_qualified_name(&self, qualifier: &str, name: &str) -> String {
        let sep = self.separator();
        let mut out = self
            .scopes
            .last()
            .map(|s| s.qualified.clone())
            .unwrap_or_default();
        for part in [qualifier, name] {
            if part.is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.push_str(sep);
            }
            out.push_str(part);
        }
        out
    }

    fn record(
        &mut self,
        node: Node,
        name_node: Node,
        name: &str,
        qualifier: &str,
        kind: SymbolKind,
    ) {
        let qualified_name = self.symbol_qualified_name(qualifier, name);
        let parent = if qualifier.is_empty() {
            self.scopes
                .iter()
                .rev()
                .find(|s| s.is_class)
                .filter(|_| self.in_class() || kind.is_class())
                .map(|s| s.qualified.clone())
        } else {
            Some(self.symbol_qualified_name("", qualifier))
        };
        let at = name_node.start_position();
        self.out.symbols.push(Symbol {
            name: name.to_string(),
            qualified_name,
            kind,
            line: at.row as u32 + 1,
            column: at.column as u32,
            end_line: node.end_position().row as u32 + 1,
            parent,
        });
    }

    /// A node's text with whitespace removed (`operator +` and `A :: f` as one word).
    pub(super) fn compact(&self, node: Node) -> String {
        compact_text(self.text.get(node.byte_range()).unwrap_or_default())
    }
}

/// A text with whitespace removed but between two words.
fn compact_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last_was_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            last_was_space = true;
            continue;
        }
        // Keep one space between two words (`operator new`, `unsigned int`).
        if last_was_space && is_word_char(c) && out.chars().last().is_some_and(is_word_char) {
            out.push(' ');
        }
        last_was_space = false;
        out.push(c);
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The node naming a C++ function definition: the declarator of its
/// `function_declarator`, under any pointer, reference or parenthesised
/// declarators (`int *f()`, `T& operator=(...)`).
pub(super) fn cpp_function_name(node: Node) -> Option<Node> {
    let mut declarator = node.child_by_field_name("declarator")?;
    for _ in 0..16 {
        if declarator.kind() == "function_declarator" {
            return declarator.child_by_field_name("declarator");
        }
        declarator = declarator
            .child_by_field_name("declarator")
            .or_else(|| last_named_child(declarator))?;
    }
    None
}

fn last_named_child(node: Node) -> Option<Node> {
    node.named_child(u32::try_from(node.named_child_count().checked_sub(1)?).ok()?)
}

/// `A::B::f` as (`A::B`, `f`); `::` inside template arguments does not split.
pub(super) fn split_qualified(written: &str) -> (&str, &str) {
    let mut depth = 0i32;
    let mut split = None;
    let bytes = written.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => split = Some(i),
            _ => {}
        }
    }
    match split {
        // `::f` (global scope) has an empty qualifier.
        Some(i) => (&written[..i], &written[i + 2..]),
        None => ("", written),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::code::{PARSE_BUDGET, parse};

    fn symbols(language: Language, text: &str) -> CodeFile {
        extract(&parse(language, text.to_string(), PARSE_BUDGET).unwrap()).file
    }

    fn summary(file: &CodeFile) -> Vec<(String, &'static str, u32, u32, Option<String>)> {
        file.symbols
            .iter()
            .map(|s| {
                (
                    s.qualified_name.clone(),
                    s.kind.as_str(),
                    s.line,
                    s.column,
                    s.parent.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn cpp_scopes_out_of_line_definitions_and_operators() {
        let file = symbols(
            Language::Cpp,
            "#include <vector>\n#include \"a.h\"\nnamespace calo {\nstruct P { int x; };\nclass A {\n public:\n  A() = default;\n  ~A() {}\n  bool operator==(const A& o) const { return true; }\n};\nvoid A::f() {}\ntemplate <typename T> T* make() { return nullptr; }\n}\nstruct stat st;\n",
        );
        let owned = |s: &str| Some(s.to_string());
        assert_eq!(
            summary(&file),
            vec![
                ("calo::P".into(), "struct", 4, 7, None),
                ("calo::A".into(), "class", 5, 6, None),
                ("calo::A::A".into(), "method", 7, 2, owned("calo::A")),
                ("calo::A::~A".into(), "method", 8, 2, owned("calo::A")),
                (
                    "calo::A::operator==".into(),
                    "method",
                    9,
                    7,
                    owned("calo::A")
                ),
                ("calo::A::f".into(), "method", 11, 5, owned("calo::A")),
                ("calo::make".into(), "function", 12, 25, None),
            ]
        );
        assert_eq!(file.include_count, 2);
        assert!(!file.has_errors);
    }

    #[test]
    fn python_methods_nested_functions_async_and_imports() {
        let file = symbols(
            Language::Python,
            "import os\nfrom x import y\n\nclass C:\n    @property\n    def v(self):\n        def inner():\n            pass\n\nasync def main():\n    pass\n",
        );
        let owned = |s: &str| Some(s.to_string());
        assert_eq!(
            summary(&file),
            vec![
                ("C".into(), "class", 4, 6, None),
                ("C.v".into(), "method", 6, 8, owned("C")),
                ("C.v.inner".into(), "function", 7, 12, None),
                ("main".into(), "function", 10, 10, None),
            ]
        );
        assert_eq!(file.include_count, 2);
        assert_eq!(file.symbols[1].end_line, 8);
    }

    #[test]
    fn syntax_errors_are_flagged_with_their_ranges() {
        let file = symbols(Language::Python, "def ok():\n    pass\n\ndef broken(:\n");
        assert!(file.has_errors);
        assert!(!file.error_ranges.is_empty());
        assert_eq!(file.symbols[0].name, "ok");
    }

    /// Every source file under `dir`, with its language.
    fn sources_under(dir: &std::path::Path, out: &mut Vec<(Language, String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.to_string_lossy().into_owned();
            if path.is_dir() && !path.is_symlink() {
                sources_under(&path, out);
            } else if let Some(language) = Language::from_name(&name)
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                out.push((language, name, text));
            }
        }
    }

    /// The quick walk steps over tokens and literals: it must find
    /// exactly what entering every node finds. Checked on the repository's
    /// code (the test files and its own Python scripts, f-strings among them),
    /// on snippets made for it, and on `QUARRY_WALK_CHECK_DIR` when set (a
    /// large tree such as the benchmark corpus, run by hand).
    #[test]
    fn the_quick_walk_finds_what_the_full_walk_finds() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut sources = Vec::new();
        sources_under(&root.join("testdata/code"), &mut sources);
        sources_under(&root.join("scripts"), &mut sources);
        if let Some(dir) = std::env::var_os("QUARRY_WALK_CHECK_DIR") {
            sources_under(std::path::Path::new(&dir), &mut sources);
        }
        let snippets = [
            (
                Language::Python,
                "import os as o\nx = f\"{o.sep}{y!r:>{w}}\" + rb'\\d' + t'{z}' + Fr\"{q}\"\nd = {'k': len(\"s\")}\n",
            ),
            (
                Language::Cpp,
                "#define FMT \"%d\"\nint f() { return printf(\"a\" FMT \"b\", 'c', R\"x(raw)x\", u8\"s\"_lit, nullptr, true); }\n",
            ), // Files with syntax errors: the quick walk steps over tokens
            // only in their subtrees without errors.
            (
                Language::Cpp,
                "MACRO(x) class A : public B { int f(\"s\", 1) { return g(y, 'c'); } ;\nint h() { return k(\"t\", a.b, 2); }\nvoid broken( { q(\"u\");\n",
            ),
            // Error recovery makes a string that holds a comment (found by
            // the fuzz target): the comment's line counts as one.
            (Language::Python, "s\"\n# a comment the string holds\n\"\n"),
            // A missing `;`: an anonymous token, to be noted as an error.
            (Language::Cpp, "void m() { g(\"s\", 1) }\nint n = 1\n"),
            (
                Language::Python,
                "import os\ndef f(a):\n    return os.path.join(a, \"x\", f\"{a.b}\")\ndef g(:\n    y = [1, 'z', b.c(\n",
            ),
        ];
        for (language, text) in snippets {
            sources.push((language, "snippet".into(), text.to_string()));
        }
        assert!(sources.len() > 15, "{} sources", sources.len());
        let mut with_strings = 0;
        for (language, name, text) in sources {
            let source = parse(language, text, PARSE_BUDGET).unwrap();
            let quick = extract_with(&source, Walking::Quick);
            let full = extract_with(&source, Walking::Full);
            assert_eq!(quick.file, full.file, "{name}");
            assert_eq!(quick.refs, full.refs, "{name}");
            // Stepping over a node skips its children: those of an inert
            // node (`is not` is two keywords) are inert too.
            let names = Names::of(language);
            let mut cursor = source.tree.walk();
            'tree: loop {
                let node = cursor.node();
                if names.info(node).inert && !node.has_error() {
                    let mut children = node.walk();
                    for child in node.children(&mut children) {
                        assert!(names.info(child).inert, "{name}: {}", child.kind());
                    }
                }
                with_strings += usize::from(matches!(node.kind(), "string" | "string_literal"));
                if cursor.goto_first_child() {
                    continue;
                }
                while !cursor.goto_next_sibling() {
                    if !cursor.goto_parent() {
                        break 'tree;
                    }
                }
            }
        }
        assert!(with_strings > 100, "{with_strings} strings seen");
    }

    #[test]
    fn qualified_names_split_outside_template_arguments() {
        assert_eq!(split_qualified("A::B::f"), ("A::B", "f"));
        assert_eq!(split_qualified("f"), ("", "f"));
        assert_eq!(split_qualified("A<x::y>::g"), ("A<x::y>", "g"));
        assert_eq!(split_qualified("::g"), ("", "g"));
    }
}
