//! Node kind and field names looked up by id. tree-sitter's `Node::kind` and
//! `TreeCursor::field_name` measure and UTF-8-check a C string on every call,
//! and the symbol walk asks for them at every node of every file (several
//! times per identifier, for its ancestors); a table per language, built
//! once, turns each into an index.

use std::num::NonZeroU16;
use std::sync::OnceLock;

use tree_sitter::Node;

use super::Language;

pub(super) struct Names {
    /// Indexed by kind id.
    kinds: Vec<KindInfo>,
    /// `KindInfo::inert` of each kind id, as the C cursor's skip table.
    inert: Vec<bool>,
    /// Indexed by field id; id 0 is no field.
    fields: Vec<Option<&'static str>>,
    /// Field names and ids, sorted by name.
    field_ids: Vec<(&'static str, u16)>,
}

impl Names {
    pub(super) fn of(language: Language) -> &'static Names {
        static CPP: OnceLock<Names> = OnceLock::new();
        static PYTHON: OnceLock<Names> = OnceLock::new();
        let cell = match language {
            Language::Cpp => &CPP,
            Language::Python => &PYTHON,
        };
        cell.get_or_init(|| Names::build(language, &language.grammar()))
    }

    fn build(language: Language, grammar: &tree_sitter::Language) -> Names {
        let kinds: Vec<KindInfo> = (0..grammar.node_kind_count())
            .map(|id| {
                let name = grammar.node_kind_for_id(id as u16).unwrap_or("");
                let named = grammar.node_kind_is_named(id as u16);
                KindInfo::of(language, name, named)
            })
            .collect();
        let inert = kinds.iter().map(|k| k.inert).collect();
        let fields: Vec<Option<&'static str>> = (0..=grammar.field_count())
            .map(|id| grammar.field_name_for_id(id as u16))
            .collect();
        let mut field_ids: Vec<(&'static str, u16)> = fields
            .iter()
            .enumerate()
            .filter_map(|(id, name)| Some(((*name)?, id as u16)))
            .collect();
        field_ids.sort_unstable();
        Names {
            kinds,
            inert,
            fields,
            field_ids,
        }
    }

    /// What the walk needs to know of `node`'s kind.
    pub(super) fn info(&self, node: Node) -> &KindInfo {
        // The error symbol (`u16::MAX`) is outside the table.
        self.kinds
            .get(usize::from(node.kind_id()))
            .unwrap_or(&ERROR_KIND)
    }

    /// Which kind ids are inert, for a cursor to step over
    /// (`walk::Cursor::skipping`).
    pub(super) fn inert_kinds(&'static self) -> &'static [bool] {
        &self.inert
    }

    /// What `node.child_by_field_name(field)` gives, without tree-sitter's
    /// lookup of the name (a `strncmp` over every field name of the grammar).
    pub(super) fn child<'t>(&self, node: Node<'t>, field: &str) -> Option<Node<'t>> {
        let at = self
            .field_ids
            .binary_search_by(|(name, _)| (*name).cmp(field))
            .ok()?;
        node.child_by_field_id(self.field_ids[at].1)
    }

    /// The name of the field a cursor's `field_id()` gives, as `field_name()`
    /// says it without its string conversion.
    pub(super) fn field(&self, id: Option<NonZeroU16>) -> Option<&'static str> {
        self.fields.get(usize::from(id?.get())).copied().flatten()
    }
}

/// What the walk does on entering a node of a kind (`Walk::visit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Nothing,
    Namespace,
    CppClass,
    PythonClass,
    CppFunction,
    PythonFunction,
    CppInclude,
    PythonImport,
    Comment,
}

/// A node kind, with what the walk asks of it decided once per grammar
/// rather than by comparing its name at every node.
#[derive(Debug)]
pub(super) struct KindInfo {
    pub(super) name: &'static str,
    pub(super) action: Action,
    /// The walk can step over a node of this kind without entering it: an
    /// anonymous token or a literal. Only where the node has no error below
    /// it, where such nodes are leaves (a `MISSING` token is anonymous, and
    /// is noted).
    pub(super) inert: bool,
    /// A name that can refer to a symbol (`identifier`, `type_identifier`…).
    pub(super) identifier: bool,
    /// A Python import statement: its names are recorded by the statement.
    pub(super) import: bool,
    /// A Python type annotation.
    pub(super) annotation: bool,
    /// A C++ `qualified_identifier`.
    pub(super) qualified: bool,
    /// A C++ node a name climbs through to the node that uses it.
    pub(super) name_wrapper: bool,
    /// The walk reads the field its node is reached as (`Frame::field`):
    /// names, the nodes a name climbs through, and the member accesses and
    /// patterns whose field decides an identifier's role. Asking the cursor
    /// for a field walks the grammar's field map, so other nodes go without.
    pub(super) wants_field: bool,
}

const ERROR_KIND: KindInfo = KindInfo {
    name: "ERROR",
    action: Action::Nothing,
    inert: false,
    identifier: false,
    import: false,
    annotation: false,
    qualified: false,
    name_wrapper: false,
    wants_field: false,
};

impl KindInfo {
    fn of(language: Language, name: &'static str, named: bool) -> KindInfo {
        let (cpp, python) = (language == Language::Cpp, language == Language::Python);
        let import = python
            && matches!(
                name,
                "import_statement" | "import_from_statement" | "future_import_statement"
            );
        let action = match (language, name) {
            (Language::Cpp, "namespace_definition") => Action::Namespace,
            (Language::Cpp, "class_specifier" | "struct_specifier") => Action::CppClass,
            (Language::Python, "class_definition") => Action::PythonClass,
            (Language::Cpp, "function_definition") => Action::CppFunction,
            (Language::Python, "function_definition") => Action::PythonFunction,
            (Language::Cpp, "preproc_include") => Action::CppInclude,
            _ if import => Action::PythonImport,
            (_, "comment") => Action::Comment,
            _ => Action::Nothing,
        };
        let identifier = match language {
            Language::Cpp => matches!(
                name,
                "identifier" | "field_identifier" | "type_identifier" | "namespace_identifier"
            ),
            Language::Python => name == "identifier",
        };
        let qualified = cpp && name == "qualified_identifier";
        let name_wrapper = cpp && super::refs::CPP_NAME_WRAPPERS.contains(&name);
        // Every `Frame::field` the walk reads (refs.rs) is of one of these.
        let field_read = match language {
            Language::Cpp => name == "field_expression",
            Language::Python => matches!(
                name,
                "attribute" | "pattern_list" | "tuple_pattern" | "list_pattern"
            ),
        };
        KindInfo {
            name,
            action,
            inert: !named || LITERALS.contains(&name),
            identifier,
            import,
            annotation: name == "type",
            qualified,
            name_wrapper,
            wants_field: identifier || qualified || name_wrapper || field_read,
        }
    }
}

/// Named leaf kinds of both grammars that name nothing: literals and the
/// parts of strings. Anonymous kinds (punctuation, keywords) are inert too.
const LITERALS: [&str; 16] = [
    "integer",
    "float",
    "true",
    "false",
    "none",
    "ellipsis",
    "string_start",
    "string_content",
    "string_end",
    "escape_sequence",
    "escape_interpolation",
    "number_literal",
    "null",
    "primitive_type",
    "raw_string_delimiter",
    "raw_string_content",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every node of real files, with aliases and errors among them, gets
    /// the same kind and field names from the table as from tree-sitter,
    /// and the same child for every field name.
    #[test]
    fn table_names_equal_tree_sitters() {
        let sources = [
            (
                Language::Cpp,
                include_str!("../../../testdata/code/cpp/include/calo/Calibrator.hpp"),
            ),
            (
                Language::Cpp,
                "int f( { class ; namespace x { template<> } ",
            ),
            (
                Language::Python,
                include_str!("../../../testdata/code/python/calo_tools/calibration.py"),
            ),
            (Language::Python, "def f(:\n  return [x for in y\n"),
        ];
        for (language, text) in sources {
            let names = Names::of(language);
            let grammar = language.grammar(); // before any tree-sitter object
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&grammar).unwrap();
            let tree = parser.parse(text, None).unwrap();
            let mut cursor = tree.walk();
            let mut seen = 0;
            'tree: loop {
                assert_eq!(names.info(cursor.node()).name, cursor.node().kind());
                assert_eq!(names.field(cursor.field_id()), cursor.field_name());
                for field in names.fields.iter().flatten().chain(&["no_such_field"]) {
                    let node = cursor.node();
                    assert_eq!(names.child(node, field), node.child_by_field_name(field));
                }
                seen += 1;
                if cursor.goto_first_child() {
                    continue;
                }
                while !cursor.goto_next_sibling() {
                    if !cursor.goto_parent() {
                        break 'tree;
                    }
                }
            }
            assert!(seen > 10, "{seen} nodes");
        }
    }
}
