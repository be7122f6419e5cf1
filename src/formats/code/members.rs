//! What a class definition and an include or import statement say, read when
//! the walk meets them: a class's bases and members (for `extract_interface`
//! and the class hierarchy), and a file's includes and imports (for the
//! include graph), with the names an import binds.

use tree_sitter::Node;

use super::relations::{Access, Base, ClassInfo, Include, Member, MemberKind, Role};
use super::symbols::{Walk, cpp_function_name};

/// Longest signature kept: past it a member is written out of the ordinary
/// (a huge initializer), and the start says what it is.
const MAX_SIGNATURE: usize = 240;

impl<'a> Walk<'a> {
    /// The bases and members of the C++ class just recorded.
    pub(super) fn cpp_class_info(&mut self, class: Node) {
        let symbol = self.out.symbols.len().saturating_sub(1) as u32;
        let mut bases = Vec::new();
        let mut cursor = class.walk();
        for child in class.named_children(&mut cursor) {
            if child.kind() == "base_class_clause" {
                let mut access = None;
                let mut inner = child.walk();
                for part in child.named_children(&mut inner) {
                    match part.kind() {
                        "access_specifier" => access = Some(self.compact(part)),
                        "type_identifier" | "template_type" | "qualified_identifier" => {
                            let written = self.compact(part);
                            bases.push(Base {
                                name: super::refs::strip_template_arguments(&written),
                                written,
                                access: access.take(),
                            });
                        }
                        _ => {}
                    }
                }
            }
        }
        let mut members = Vec::new();
        let mut access = if class.kind() == "struct_specifier" {
            Access::Public
        } else {
            Access::Private
        };
        if let Some(body) = self.names.child(class, "body") {
            let mut cursor = body.walk();
            for child in body.named_children(&mut cursor) {
                if child.kind() == "access_specifier" {
                    access = match self.compact(child).as_str() {
                        "public" => Access::Public,
                        "protected" => Access::Protected,
                        _ => Access::Private,
                    };
                    continue;
                }
                self.cpp_member(child, access, "", &mut members);
            }
        }
        self.out.class_info.push(ClassInfo {
            symbol,
            bases,
            members,
        });
    }

    fn cpp_member(&self, node: Node, access: Access, prefix: &str, out: &mut Vec<Member>) {
        let line = node.start_position().row as u32 + 1;
        let mut member = |name: String, kind: MemberKind, signature: String| {
            out.push(Member {
                name,
                kind,
                access,
                signature: clip(format!("{prefix}{signature}")),
                line,
            });
        };
        match node.kind() {
            "function_definition" => {
                let cut = ["field_initializer_list", "body"]
                    .iter()
                    .filter_map(|f| {
                        self.names
                            .child(node, f)
                            .or_else(|| first_child_of_kind(node, f))
                    })
                    .filter(|n| {
                        n.kind() != "default_method_clause" && n.kind() != "delete_method_clause"
                    })
                    .map(|n| n.start_byte())
                    .min();
                if let Some(name) = cpp_function_name(node) {
                    member(
                        self.compact(name),
                        MemberKind::Method,
                        self.signature(node, cut),
                    );
                }
            }
            "field_declaration" | "declaration" => {
                if let Some(name) = function_declarator_name(node) {
                    member(
                        self.compact(name),
                        MemberKind::Method,
                        self.signature(node, None),
                    );
                    return;
                }
                let mut cursor = node.walk();
                let declarators: Vec<Node> = node
                    .children_by_field_name("declarator", &mut cursor)
                    .collect();
                if declarators.is_empty() {
                    if let Some(ty) = self.names.child(node, "type")
                        && let Some(name) = self.names.child(ty, "name")
                    {
                        let keyword = ty.kind().trim_end_matches("_specifier");
                        member(
                            self.compact(name),
                            MemberKind::Type,
                            format!("{keyword} {}", self.compact(name)),
                        );
                    }
                    return;
                }
                for d in declarators {
                    if let Some(name) = innermost_name(d) {
                        member(
                            self.compact(name),
                            MemberKind::Field,
                            self.signature(node, None),
                        );
                    }
                }
            }
            "template_declaration" => {
                let params = self
                    .names
                    .child(node, "parameters")
                    .map(|p| format!("template {} ", self.compact(p)))
                    .unwrap_or_default();
                let count = node.named_child_count();
                if let Some(inner) = count
                    .checked_sub(1)
                    .and_then(|i| node.named_child(i as u32))
                {
                    self.cpp_member(inner, access, &params, out);
                }
            }
            "alias_declaration" | "type_definition" => {
                if let Some(name) = self
                    .names
                    .child(node, "name")
                    .or_else(|| self.names.child(node, "declarator"))
                {
                    member(
                        self.compact(name),
                        MemberKind::Type,
                        self.signature(node, None),
                    );
                }
            }
            "class_specifier" | "struct_specifier" | "enum_specifier" | "union_specifier" => {
                if let Some(name) = self.names.child(node, "name") {
                    let keyword = node.kind().trim_end_matches("_specifier");
                    member(
                        self.compact(name),
                        MemberKind::Type,
                        format!("{keyword} {}", self.compact(name)),
                    );
                }
            }
            _ => {}
        }
    }

    /// The bases and members of the Python class just recorded.
    pub(super) fn python_class_info(&mut self, class: Node) {
        let symbol = self.out.symbols.len().saturating_sub(1) as u32;
        let mut bases = Vec::new();
        if let Some(list) = self.names.child(class, "superclasses") {
            let mut cursor = list.walk();
            for b in list.named_children(&mut cursor) {
                if matches!(b.kind(), "identifier" | "attribute" | "subscript") {
                    let written = self.compact(b);
                    let name = written.split('[').next().unwrap_or_default().to_string();
                    bases.push(Base {
                        name,
                        written,
                        access: None,
                    });
                }
            }
        }
        let mut members = Vec::new();
        if let Some(body) = self.names.child(class, "body") {
            let mut cursor = body.walk();
            for child in body.named_children(&mut cursor) {
                self.python_member(child, &mut members);
            }
        }
        self.out.class_info.push(ClassInfo {
            symbol,
            bases,
            members,
        });
    }

    fn python_member(&self, node: Node, out: &mut Vec<Member>) {
        let line = node.start_position().row as u32 + 1;
        let mut push = |name: String, kind: MemberKind, signature: String| {
            out.push(Member {
                access: python_access(&name),
                name,
                kind,
                signature: clip(signature),
                line,
            });
        };
        match node.kind() {
            "decorated_definition" | "function_definition" | "class_definition" => {
                let (decorators, definition) = if node.kind() == "decorated_definition" {
                    let mut cursor = node.walk();
                    let decorators: Vec<String> = node
                        .named_children(&mut cursor)
                        .filter(|c| c.kind() == "decorator")
                        .map(|d| self.compact(d))
                        .collect();
                    (decorators, self.names.child(node, "definition"))
                } else {
                    (Vec::new(), Some(node))
                };
                let Some(def) = definition else { return };
                let Some(name) = self.names.child(def, "name") else {
                    return;
                };
                let cut = self.names.child(def, "body").map(|b| b.start_byte());
                let mut signature = self.signature(def, cut);
                signature = signature.trim_end_matches(':').to_string();
                for d in decorators.iter().rev() {
                    signature = format!("{d} {signature}");
                }
                let kind = if def.kind() == "class_definition" {
                    MemberKind::Type
                } else {
                    MemberKind::Method
                };
                push(self.compact(name), kind, signature);
            }
            "expression_statement" => {
                let Some(assignment) = node.named_child(0).filter(|a| a.kind() == "assignment")
                else {
                    return;
                };
                if let Some(left) = self
                    .names
                    .child(assignment, "left")
                    .filter(|l| l.kind() == "identifier")
                {
                    push(
                        self.compact(left),
                        MemberKind::Field,
                        self.signature(assignment, None),
                    );
                }
            }
            _ => {}
        }
    }

    /// `#include "a/b.h"` or `<vector>`.
    pub(super) fn cpp_include(&mut self, node: Node) {
        let Some(path) = self.names.child(node, "path") else {
            return;
        };
        let text = self.text.get(path.byte_range()).unwrap_or_default().trim();
        let system = path.kind() == "system_lib_string";
        let inner = text
            .trim_start_matches(['"', '<'])
            .trim_end_matches(['"', '>']);
        self.out.includes.push(Include {
            path: inner.to_string(),
            system,
            line: node.start_position().row as u32 + 1,
            names: Vec::new(),
        });
    }

    /// `import a.b [as c]`, `from .m import x [as y]`: the include, the
    /// names it binds, and a reference per name it imports.
    pub(super) fn python_import(&mut self, node: Node) {
        let line = node.start_position().row as u32 + 1;
        let mut cursor = node.walk();
        let names: Vec<Node> = node.children_by_field_name("name", &mut cursor).collect();
        match node.kind() {
            "import_statement" => {
                for n in names {
                    let (dotted, alias) = split_alias(n);
                    let module = self.compact(dotted);
                    self.dotted_refs(dotted, "");
                    let bound = match alias {
                        Some(a) => (self.compact(a), module.clone()),
                        None => {
                            let head = module.split('.').next().unwrap_or_default().to_string();
                            (head.clone(), head)
                        }
                    };
                    self.aliases.insert(bound.0, (String::new(), bound.1));
                    self.out.includes.push(Include {
                        path: module,
                        system: false,
                        line,
                        names: Vec::new(),
                    });
                }
            }
            "import_from_statement" => {
                let Some(module_node) = self.names.child(node, "module_name") else {
                    return;
                };
                let module = self.compact(module_node);
                let mut dotted = module_node;
                if module_node.kind() == "relative_import" {
                    let mut c = module_node.walk();
                    let found = module_node
                        .named_children(&mut c)
                        .find(|x| x.kind() == "dotted_name");
                    if let Some(d) = found {
                        dotted = d;
                    }
                }
                if dotted.kind() == "dotted_name" {
                    let prefix = module.trim_end_matches(&self.compact(dotted)).to_string();
                    self.dotted_refs(dotted, &prefix);
                }
                let mut imported = Vec::new();
                for n in names {
                    let (name_node, alias) = split_alias(n);
                    let name = self.compact(name_node);
                    if let Some(id) = last_identifier(name_node) {
                        self.push(id, Role::Import, false, module.clone(), true);
                    }
                    let local = alias.map_or_else(|| name.clone(), |a| self.compact(a));
                    let full = if module.ends_with('.') {
                        format!("{module}{name}")
                    } else {
                        format!("{module}.{name}")
                    };
                    self.aliases.insert(local, (module.clone(), full));
                    imported.push(name);
                }
                let mut c = node.walk();
                if node
                    .named_children(&mut c)
                    .any(|x| x.kind() == "wildcard_import")
                {
                    imported.push("*".into());
                }
                self.out.includes.push(Include {
                    path: module,
                    system: false,
                    line,
                    names: imported,
                });
            }
            _ => self.out.includes.push(Include {
                path: "__future__".into(),
                system: false,
                line,
                names: Vec::new(),
            }),
        }
    }

    /// An import reference per part of a dotted module name, each qualified
    /// by the parts before it.
    fn dotted_refs(&mut self, dotted: Node, prefix: &str) {
        let mut qualifier = prefix.to_string();
        let mut cursor = dotted.walk();
        let parts: Vec<Node> = dotted.named_children(&mut cursor).collect();
        for part in parts {
            self.push(part, Role::Import, false, qualifier.clone(), true);
            let text = self.compact(part);
            // Relative imports start with their dots (`..pkg.mod`).
            qualifier = if qualifier.chars().all(|c| c == '.') {
                format!("{qualifier}{text}")
            } else {
                format!("{qualifier}.{text}")
            };
        }
    }

    /// A declaration's text up to `cut` (a body), on one line, without `;`.
    fn signature(&self, node: Node, cut: Option<usize>) -> String {
        let end = cut.unwrap_or(node.end_byte()).max(node.start_byte());
        let text = self.text.get(node.start_byte()..end).unwrap_or_default();
        one_line(text).trim_end_matches(';').trim_end().to_string()
    }
}

/// A text with each run of whitespace made one space, trimmed.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn clip(mut s: String) -> String {
    if s.len() > MAX_SIGNATURE {
        let mut at = MAX_SIGNATURE;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        s.truncate(at);
        s.push('…');
    }
    s
}

fn python_access(name: &str) -> Access {
    if name.starts_with("__") && name.ends_with("__") {
        Access::Public
    } else if name.starts_with('_') {
        Access::Private
    } else {
        Access::Public
    }
}

fn first_child_of_kind<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).find(|c| c.kind() == kind)
}

/// The name of a function declared by a declaration (`int f(int);`).
fn function_declarator_name(decl: Node) -> Option<Node> {
    let mut d = decl.child_by_field_name("declarator")?;
    for _ in 0..16 {
        if d.kind() == "function_declarator" {
            return d.child_by_field_name("declarator");
        }
        d = d.child_by_field_name("declarator")?;
    }
    None
}

/// The identifier a (pointer, array, initialised) declarator declares.
fn innermost_name(mut d: Node) -> Option<Node> {
    for _ in 0..16 {
        match d.child_by_field_name("declarator") {
            Some(inner) => d = inner,
            None => return Some(d),
        }
    }
    None
}

fn split_alias(n: Node) -> (Node, Option<Node>) {
    if n.kind() == "aliased_import" {
        (
            n.child_by_field_name("name").unwrap_or(n),
            n.child_by_field_name("alias"),
        )
    } else {
        (n, None)
    }
}

fn last_identifier(n: Node) -> Option<Node> {
    if n.kind() == "identifier" {
        return Some(n);
    }
    let count = n.named_child_count();
    n.named_child(u32::try_from(count.checked_sub(1)?).ok()?)
}
