//! How the walk records identifier uses: each identifier's role comes from
//! the path of ancestors above it (a callee, a declarator, a base, a type),
//! its qualifier from the qualified name it ends (`ns::A::f`) or the object
//! it is a member of (`this->f`, `self.f`, `module.f`). Parameters and local
//! variables are left out: a use of one names no symbol of the project.

use tree_sitter::Node;

use super::Language;
use super::names::KindInfo;
use super::relations::{RawRef, Reference, Role};
use super::symbols::{Frame, Walk};

/// Nodes a name climbs through to reach the node that says how it is used.
pub(super) const CPP_NAME_WRAPPERS: [&str; 5] = [
    "qualified_identifier",
    "template_type",
    "template_function",
    "template_method",
    "destructor_name",
];

const CPP_DECLARATOR_WRAPPERS: [&str; 5] = [
    "pointer_declarator",
    "reference_declarator",
    "array_declarator",
    "parenthesized_declarator",
    "function_declarator",
];

impl<'a> Walk<'a> {
    /// Visits `node` (of kind `info`, reached as `field` of its parent; `clean`:
    /// no error below it) and gives its frame.
    pub(super) fn enter(
        &mut self,
        node: Node<'a>,
        info: &KindInfo,
        field: Option<&'static str>,
        clean: bool,
    ) -> Frame<'a> {
        let parent = self.frames.last();
        let mut frame = Frame {
            node,
            kind: info.name,
            field,
            clean,
            opened: false,
            skip: parent.is_some_and(|p| p.skip) || info.import,
            in_type: parent.is_some_and(|p| p.in_type) || info.annotation,
            name_qual: None,
            scope_qual: None,
        };
        if info.qualified || info.name_wrapper {
            self.qualifiers(&mut frame, info.qualified);
        }
        frame.opened = self.visit(node, info.action);
        if info.identifier && !frame.skip && node.child_count() == 0 {
            match self.language {
                Language::Cpp => self.cpp_reference(node, field),
                Language::Python => self.python_reference(node, field),
            }
        }
        frame
    }

    /// The qualifiers a qualified name (or a wrapper of one) passes to its parts.
    fn qualifiers(&self, frame: &mut Frame<'a>, qualified: bool) {
        let inherited = || match self.frames.last() {
            Some(p) if frame.field == Some("name") => p.name_qual.clone(),
            _ => None,
        };
        if qualified {
            let prefix = inherited().unwrap_or_default();
            let scope = self
                .names
                .child(frame.node, "scope")
                .map(|s| strip_template_arguments(&self.compact(s)))
                .unwrap_or_default();
            frame.name_qual = Some(join(&prefix, &scope, "::"));
            frame.scope_qual = Some(prefix);
        } else {
            frame.name_qual = inherited();
        }
    }

    pub(super) fn push(
        &mut self,
        node: Node,
        role: Role,
        member: bool,
        qualifier: impl Into<std::borrow::Cow<'a, str>>,
        imported: bool,
    ) {
        let Some(name) = self.text.get(node.byte_range()) else {
            return;
        };
        let at = node.start_position();
        self.refs.push(RawRef {
            name,
            reference: Reference {
                line: at.row as u32 + 1,
                column: at.column as u32,
                role,
                member,
                imported,
                qualifier: 0,
                scope: self.scopes.last().map_or(0, |s| s.entry),
            },
            qualifier: qualifier.into(),
        });
    }

    fn is_local(&self, name: &str) -> bool {
        self.scopes
            .iter()
            .rev()
            .take_while(|s| !s.is_class)
            .any(|s| s.locals.contains(name))
    }

    fn add_local(&mut self, name: &str) {
        if let Some(s) = self.scopes.iter_mut().rev().find(|s| !s.is_class) {
            s.locals.insert(name.to_string());
        }
    }

    fn in_function(&self) -> bool {
        self.scopes
            .iter()
            .any(|s| !s.is_class && self.scope_is_function(s.entry))
    }

    fn scope_is_function(&self, entry: u32) -> bool {
        entry
            .checked_sub(1)
            .and_then(|i| self.scope_entries.get(i as usize))
            .is_some_and(|e| e.kind == super::relations::ScopeKind::Function)
    }

    /// The class a `this`/`self` names: the nearest class scope, or the
    /// class of an out-of-line method (`A::f`).
    fn enclosing_class(&self) -> String {
        for s in self.scopes.iter().rev() {
            if s.is_class {
                return s.qualified.clone();
            }
            if self.scope_is_function(s.entry) && self.language == Language::Cpp {
                let (class, _) = super::symbols::split_qualified(&s.qualified);
                if !class.is_empty() {
                    return class.to_string();
                }
            }
        }
        String::new()
    }

    fn cpp_reference(&mut self, node: Node, field: Option<&'static str>) {
        let name = self.text.get(node.byte_range()).unwrap_or_default();
        let parent = self.frames.len().checked_sub(1);
        let Some(mut k) = parent else { return };
        let qualifier = match (field, self.frames[k].kind) {
            (Some("name"), _) => self.frames[k].name_qual.clone().unwrap_or_default(),
            (Some("scope"), "qualified_identifier") => {
                self.frames[k].scope_qual.clone().unwrap_or_default()
            }
            _ => String::new(),
        };
        // Climb the wrappers of a name to the node that uses it.
        let mut child_field = field;
        while CPP_NAME_WRAPPERS.contains(&self.frames[k].kind)
            && (child_field == Some("name") || self.frames[k].kind == "destructor_name")
            && k > 0
        {
            child_field = self.frames[k].field;
            k -= 1;
        }
        let user = self.frames[k].node;
        let role = match (self.frames[k].kind, child_field) {
            ("call_expression", Some("function")) => Role::Call,
            ("field_expression", Some("field")) => {
                let receiver = self.names.child(user, "argument");
                let qualifier = if receiver.is_some_and(|r| self.names.info(r).name == "this") {
                    self.enclosing_class()
                } else {
                    String::new()
                };
                let called = k > 0
                    && self.frames[k].field == Some("function")
                    && self.frames[k - 1].kind == "call_expression";
                let role = if called { Role::Call } else { Role::Use };
                self.push(node, role, true, qualifier, false);
                return;
            }
            ("field_initializer", _) => {
                let class = self.enclosing_class();
                self.push(node, Role::Use, true, class, false);
                return;
            }
            ("function_declarator", Some("declarator")) => self.cpp_function_role(k),
            (
                "class_specifier" | "struct_specifier" | "union_specifier" | "enum_specifier",
                Some("name"),
            ) => {
                if self.names.child(user, "body").is_some() {
                    Role::Definition
                } else if k > 0
                    && self.frames[k - 1].kind == "declaration"
                    && self
                        .names
                        .child(self.frames[k - 1].node, "declarator")
                        .is_none()
                {
                    Role::Declaration
                } else {
                    Role::Type
                }
            }
            ("namespace_definition" | "namespace_alias_definition", Some("name"))
            | ("preproc_def" | "preproc_function_def", Some("name"))
            | ("alias_declaration", Some("name"))
            | ("enumerator", Some("name"))
            | ("concept_definition", Some("name")) => Role::Definition,
            ("using_declaration", _) => {
                if user
                    .child(1)
                    .is_some_and(|c| self.names.info(c).name == "namespace")
                {
                    let full = join(&qualifier, name, "::");
                    self.usings.push(full);
                }
                Role::Import
            }
            ("preproc_params" | "template_parameter_list" | "type_parameter_declaration", _)
            | ("labeled_statement" | "goto_statement", _) => return,
            _ => match self.cpp_variable_role(k, child_field) {
                Some(VariableRole::Local) => {
                    self.add_local(name);
                    return;
                }
                Some(VariableRole::Member(role)) => role,
                None => {
                    if qualifier.is_empty() && self.is_local(name) {
                        return;
                    }
                    if self.names.info(node).name == "type_identifier" {
                        Role::Type
                    } else {
                        Role::Use
                    }
                }
            },
        };
        self.push(node, role, false, qualifier, false);
    }

    /// A function's name: defined when its declarator belongs to a function
    /// definition, else declared (a prototype, a method declaration).
    fn cpp_function_role(&self, k: usize) -> Role {
        let mut i = k;
        while i > 0 && CPP_DECLARATOR_WRAPPERS.contains(&self.frames[i].kind) {
            i -= 1;
        }
        match self.frames[i].kind {
            "function_definition" => Role::Definition,
            _ => Role::Declaration,
        }
    }

    /// A variable, field or parameter being declared at `frames[k]` (after
    /// its declarator wrappers), or None when the name is not declared here.
    fn cpp_variable_role(&self, k: usize, field: Option<&'static str>) -> Option<VariableRole> {
        if field != Some("declarator") {
            return None;
        }
        let mut i = k;
        while i > 0
            && matches!(
                self.frames[i].kind,
                "pointer_declarator"
                    | "reference_declarator"
                    | "array_declarator"
                    | "parenthesized_declarator"
                    | "init_declarator"
            )
        {
            i -= 1;
        }
        let init = self.frames[k].kind == "init_declarator";
        match self.frames[i].kind {
            "parameter_declaration"
            | "optional_parameter_declaration"
            | "variadic_parameter_declaration" => Some(VariableRole::Local),
            "field_declaration" => Some(VariableRole::Member(Role::Declaration)),
            "declaration" | "condition_clause" | "for_range_loop" => {
                if self.in_function() {
                    Some(VariableRole::Local)
                } else if init {
                    Some(VariableRole::Member(Role::Definition))
                } else {
                    Some(VariableRole::Member(Role::Declaration))
                }
            }
            "type_definition" => Some(VariableRole::Member(Role::Definition)),
            _ => None,
        }
    }

    fn python_reference(&mut self, node: Node, field: Option<&'static str>) {
        let name = self.text.get(node.byte_range()).unwrap_or_default();
        let Some(k) = self.frames.len().checked_sub(1) else {
            return;
        };
        let user = self.frames[k].node;
        let in_type = self.frames[k].in_type;
        let role = match (self.frames[k].kind, field) {
            ("function_definition" | "class_definition", Some("name")) => Role::Definition,
            ("parameters" | "lambda_parameters", _)
            | ("default_parameter" | "typed_default_parameter", Some("name"))
            | ("keyword_argument", Some("name")) => {
                if self.frames[k].kind != "keyword_argument" {
                    self.add_local(name);
                }
                return;
            }
            ("typed_parameter", _) if !in_type => {
                self.add_local(name);
                return;
            }
            ("list_splat_pattern" | "dictionary_splat_pattern", _)
                if k > 0
                    && matches!(
                        self.frames[k - 1].kind,
                        "parameters" | "typed_parameter" | "lambda_parameters"
                    ) =>
            {
                self.add_local(name);
                return;
            }
            ("attribute", Some("attribute")) => {
                let qualifier = self.python_receiver(user);
                let imported = qualifier.1;
                let called = self.frames[k].field == Some("function")
                    && k > 0
                    && self.frames[k - 1].kind == "call";
                let role = if called { Role::Call } else { Role::Use };
                self.push(node, role, true, qualifier.0, imported);
                return;
            }
            ("call", Some("function")) => Role::Call,
            _ if self.python_binds(k, field) => {
                if self.in_function() {
                    self.add_local(name);
                    return;
                }
                Role::Definition
            }
            _ if in_type => Role::Type,
            _ => Role::Use,
        };
        if role != Role::Definition && self.is_local(name) {
            return;
        }
        // A name bound by an import is qualified by its module.
        let (qualifier, imported) = match self.aliases.get(name) {
            Some((module, _)) if role != Role::Definition && !module.is_empty() => {
                (module.clone(), true)
            }
            _ => (String::new(), false),
        };
        self.push(node, role, false, qualifier, imported);
    }

    /// Whether the identifier at `frames[k]`'s child is a name being bound:
    /// an assignment's target (also in a tuple), a loop's, `with ... as`,
    /// `except ... as`.
    fn python_binds(&self, k: usize, field: Option<&'static str>) -> bool {
        let mut i = k;
        let mut f = field;
        while i > 0
            && matches!(
                self.frames[i].kind,
                "pattern_list" | "tuple_pattern" | "list_pattern"
            )
        {
            f = self.frames[i].field;
            i -= 1;
        }
        match self.frames[i].kind {
            "assignment" | "for_statement" | "for_in_clause" => f == Some("left"),
            "as_pattern_target" => true,
            "global_statement" | "nonlocal_statement" => true,
            _ => false,
        }
    }

    /// The qualifier of `object.attr`: the class for `self`/`cls`, the
    /// module for an imported name, the dotted text of a chain of names.
    fn python_receiver(&self, attribute: Node) -> (std::borrow::Cow<'a, str>, bool) {
        let Some(object) = self.names.child(attribute, "object") else {
            return ("".into(), false);
        };
        let text = self.text.get(object.byte_range()).unwrap_or_default();
        if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        {
            return ("".into(), false);
        }
        let (head, rest) = text.split_once('.').unwrap_or((text, ""));
        if matches!(head, "self" | "cls") && self.in_function() {
            let class = self.enclosing_class();
            return (join(&class, rest, ".").into(), false);
        }
        match self.aliases.get(head) {
            Some((_, full)) => (join(full, rest, ".").into(), true),
            None => (text.into(), false),
        }
    }
}

enum VariableRole {
    Local,
    Member(Role),
}

pub(super) fn join(a: &str, b: &str, sep: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}{sep}{b}"),
    }
}

/// `A<T, B<U>>::x` as `A::x`: template arguments do not name a scope.
pub(super) fn strip_template_arguments(text: &str) -> String {
    let mut depth = 0usize;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}
