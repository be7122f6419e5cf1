//! What a source file says about the rest of the project, beside its symbols:
//! where each identifier is used (`CodeRefs`), which classes it derives from
//! (`ClassInfo::bases`), what it includes or imports (`Include`), a class's
//! members for its interface, and line counts. All of it is collected in the
//! same walk as the symbols (`symbols::extract`), so a file is parsed once.
//!
//! References are kept compact, because a file has ten or twenty times more
//! of them than symbols: the distinct names once, sorted, and each name's uses
//! packed as varints (line delta, column, role, qualifier, scope) in one byte
//! string, so the uses of one name are found by a binary search and decoded
//! alone.

use serde::{Deserialize, Serialize};

use super::FastMap;

/// How an identifier is used where it appears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// Where the symbol is defined: a function with a body, a class with one,
    /// a namespace, a variable at file or class level with a value.
    Definition,
    /// Declared without a definition: a prototype, a forward declaration, a
    /// member field.
    Declaration,
    /// The callee of a call.
    Call,
    /// A type named in a declaration, cast or template argument.
    Type,
    /// Named by `#include`-free imports: Python `import`/`from`, C++ `using`.
    Import,
    /// Any other use.
    Use,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::Definition,
        Role::Declaration,
        Role::Call,
        Role::Type,
        Role::Import,
        Role::Use,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Definition => "definition",
            Role::Declaration => "declaration",
            Role::Call => "call",
            Role::Type => "type",
            Role::Import => "import",
            Role::Use => "use",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(c: u8) -> Role {
        Role::ALL[(c as usize).min(5)]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScopeKind {
    Namespace,
    Class,
    Function,
}

/// A scope references sit in: its qualified name, kind, and enclosing scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeEntry {
    pub name: String,
    pub kind: ScopeKind,
    /// Index of the enclosing scope in `CodeRefs::scopes` plus one; 0: the file.
    pub parent: u32,
}

/// One use of a name, as decoded from `CodeRefs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference {
    /// 1-based.
    pub line: u32,
    /// 0-based, in bytes.
    pub column: u32,
    pub role: Role,
    /// Reached through `.` or `->` (a member of something).
    pub member: bool,
    /// The qualifier came from an import (a Python module), not the text.
    pub imported: bool,
    /// Index in `CodeRefs::qualifiers` (0: none).
    pub qualifier: u32,
    /// Index in `CodeRefs::scopes` plus one (0: file level).
    pub scope: u32,
}

/// A reference while the walk collects them (the name borrowed from the
/// file's text: a file has tens of thousands of uses).
#[derive(Debug, Clone)]
pub(super) struct RawRef<'t> {
    pub name: &'t str,
    pub reference: Reference,
    /// Borrowed from the text when it is written there (`module.f`).
    pub qualifier: std::borrow::Cow<'t, str>,
}

/// Every indexed use of a name in one file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeRefs {
    /// Distinct names, sorted.
    pub names: Vec<String>,
    /// End of each name's uses in `packed` (parallel to `names`).
    pub ends: Vec<u32>,
    /// Distinct qualifiers; `qualifiers[0]` is "".
    pub qualifiers: Vec<String>,
    pub scopes: Vec<ScopeEntry>,
    /// C++ `using namespace X` directives of the file.
    pub usings: Vec<String>,
    pub packed: Vec<u8>,
}

const MEMBER_BIT: u8 = 0x10;
const IMPORTED_BIT: u8 = 0x20;
const QUALIFIED_BIT: u8 = 0x40;

impl CodeRefs {
    pub(super) fn build(
        raw: Vec<RawRef<'_>>,
        scopes: Vec<ScopeEntry>,
        usings: Vec<String>,
    ) -> Self {
        // Uses sorted by name, then position: names are ranked once (a file
        // has ten uses per distinct name), so the sort compares integers.
        let mut rank_of: FastMap<&str, u32> = Default::default();
        for r in &raw {
            let next = rank_of.len() as u32;
            rank_of.entry(r.name).or_insert(next);
        }
        let mut distinct: Vec<&str> = rank_of.keys().copied().collect();
        distinct.sort_unstable();
        for (rank, name) in distinct.iter().enumerate() {
            rank_of.insert(name, rank as u32);
        }
        // Sorting keys and indices moves 16 bytes an element, not a use.
        let mut order: Vec<((u32, u32, u32), u32)> = raw
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let key = (rank_of[r.name], r.reference.line, r.reference.column);
                (key, i as u32)
            })
            .collect();
        order.sort_unstable();
        let mut out = CodeRefs {
            names: Vec::with_capacity(distinct.len()),
            ends: Vec::with_capacity(distinct.len()),
            qualifiers: vec![String::new()],
            scopes,
            usings,
            packed: Vec::with_capacity(raw.len() * 4),
        };
        let mut qualifier_ids: FastMap<&str, u32> = Default::default();
        let mut last_line = 0;
        for (_, i) in order {
            let r = &raw[i as usize];
            if out.names.last().map(String::as_str) != Some(r.name) {
                if !out.names.is_empty() {
                    out.ends.push(out.packed.len() as u32);
                }
                out.names.push(r.name.to_string());
                last_line = 0;
            }
            let q = if r.qualifier.is_empty() {
                0
            } else if let Some(&id) = qualifier_ids.get(r.qualifier.as_ref()) {
                id
            } else {
                out.qualifiers.push(r.qualifier.to_string());
                let id = out.qualifiers.len() as u32 - 1;
                qualifier_ids.insert(r.qualifier.as_ref(), id);
                id
            };
            let x = r.reference;
            put_varint(&mut out.packed, x.line - last_line);
            last_line = x.line;
            put_varint(&mut out.packed, x.column);
            let mut flags = x.role.code();
            if x.member {
                flags |= MEMBER_BIT;
            }
            if x.imported {
                flags |= IMPORTED_BIT;
            }
            if q != 0 {
                flags |= QUALIFIED_BIT;
            }
            out.packed.push(flags);
            if q != 0 {
                put_varint(&mut out.packed, q);
            }
            put_varint(&mut out.packed, x.scope);
        }
        if !out.names.is_empty() {
            out.ends.push(out.packed.len() as u32);
        }
        out
    }

    /// The uses of `name`, in source order.
    pub fn uses(&self, name: &str) -> Vec<Reference> {
        match self.names.binary_search_by(|n| n.as_str().cmp(name)) {
            Ok(i) => self.group(i),
            Err(_) => Vec::new(),
        }
    }

    /// The uses of the `i`-th name.
    pub fn group(&self, i: usize) -> Vec<Reference> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let end = self.ends.get(i).map_or(0, |&e| e as usize);
        decode_group(self.packed.get(start..end).unwrap_or_default())
    }

    /// Every use, with its name's index, grouped by name.
    pub fn all(&self) -> impl Iterator<Item = (usize, Reference)> + '_ {
        (0..self.names.len()).flat_map(move |i| self.group(i).into_iter().map(move |r| (i, r)))
    }

    pub fn count(&self) -> usize {
        (0..self.names.len()).map(|i| self.group(i).len()).sum()
    }

    /// The innermost function around a scope (its qualified name).
    pub fn enclosing_function(&self, scope: u32) -> Option<&str> {
        let mut at = scope;
        for _ in 0..64 {
            let entry = self.scopes.get(at.checked_sub(1)? as usize)?;
            if entry.kind == ScopeKind::Function {
                return Some(&entry.name);
            }
            at = entry.parent;
        }
        None
    }

    /// The qualified name of a scope ("" for the file).
    pub fn scope_name(&self, scope: u32) -> &str {
        scope
            .checked_sub(1)
            .and_then(|i| self.scopes.get(i as usize))
            .map_or("", |s| s.name.as_str())
    }

    pub fn qualifier(&self, r: &Reference) -> &str {
        self.qualifiers
            .get(r.qualifier as usize)
            .map_or("", String::as_str)
    }
}

fn decode_group(mut bytes: &[u8]) -> Vec<Reference> {
    let mut out = Vec::new();
    let mut line = 0;
    while !bytes.is_empty() {
        let Some(delta) = take_varint(&mut bytes) else {
            break;
        };
        let column = take_varint(&mut bytes).unwrap_or(0);
        let Some((&flags, rest)) = bytes.split_first() else {
            break;
        };
        bytes = rest;
        let qualifier = if flags & QUALIFIED_BIT != 0 {
            take_varint(&mut bytes).unwrap_or(0)
        } else {
            0
        };
        let scope = take_varint(&mut bytes).unwrap_or(0);
        line += delta;
        out.push(Reference {
            line,
            column,
            role: Role::from_code(flags & 0x0f),
            member: flags & MEMBER_BIT != 0,
            imported: flags & IMPORTED_BIT != 0,
            qualifier,
            scope,
        });
    }
    out
}

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn take_varint(bytes: &mut &[u8]) -> Option<u32> {
    let mut v: u32 = 0;
    for shift in (0..35).step_by(7) {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        v |= u32::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// An `#include` or a Python import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Include {
    /// C++: the path between the quotes or brackets. Python: the module as
    /// written, relative ones with their leading dots (`.calibration`).
    pub path: String,
    /// C++ `<...>`; false for `"..."` and for Python.
    pub system: bool,
    pub line: u32,
    /// Python `from M import a, b`: the names imported (empty for `import M`).
    pub names: Vec<String>,
}

/// A base class as written in a class's base clause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Base {
    /// The base's name without template arguments (`ns::Container` for
    /// `ns::Container<T>`), Python's dotted (`m.Other`).
    pub name: String,
    /// As written, with template arguments.
    pub written: String,
    /// `public`, `protected`, `private` when written (C++).
    pub access: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Access {
    Public,
    Protected,
    Private,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Public => "public",
            Access::Protected => "protected",
            Access::Private => "private",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemberKind {
    Method,
    Field,
    Type,
}

impl MemberKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberKind::Method => "method",
            MemberKind::Field => "field",
            MemberKind::Type => "type",
        }
    }
}

/// A member of a class as its body declares it: the signature is the
/// declaration's text without a body, on one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub name: String,
    pub kind: MemberKind,
    pub access: Access,
    pub signature: String,
    pub line: u32,
}

/// What a class's definition says beyond its symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassInfo {
    /// Index of the class in `CodeFile::symbols`.
    pub symbol: u32,
    pub bases: Vec<Base>,
    pub members: Vec<Member>,
}

/// A file's lines: every line is exactly one of blank, comment or code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineCounts {
    pub total: u32,
    pub code: u32,
    pub comment: u32,
    pub blank: u32,
}

/// Counts a text's lines: blank (whitespace only), comment (every other
/// character inside a comment node, given as sorted byte ranges), else code.
pub(super) fn count_lines(text: &str, comments: &[(usize, usize)]) -> LineCounts {
    let mut counts = LineCounts::default();
    let mut next_comment = 0;
    let mut start = 0;
    let bytes = text.as_bytes();
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        counts.total += 1;
        while next_comment < comments.len() && comments[next_comment].1 <= start {
            next_comment += 1;
        }
        let mut blank = true;
        let mut all_comment = true;
        let mut c = next_comment;
        for (i, &b) in bytes[start..end].iter().enumerate() {
            if b.is_ascii_whitespace() {
                continue;
            }
            blank = false;
            let at = start + i;
            while c < comments.len() && comments[c].1 <= at {
                c += 1;
            }
            if !(c < comments.len() && comments[c].0 <= at) {
                all_comment = false;
                break;
            }
        }
        if blank {
            counts.blank += 1;
        } else if all_comment {
            counts.comment += 1;
        } else {
            counts.code += 1;
        }
        start = end + 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw<'t>(
        name: &'t str,
        line: u32,
        column: u32,
        role: Role,
        qualifier: &'t str,
    ) -> RawRef<'t> {
        RawRef {
            name,
            reference: Reference {
                line,
                column,
                role,
                member: qualifier == "m",
                imported: false,
                qualifier: 0,
                scope: line % 3,
            },
            qualifier: qualifier.into(),
        }
    }

    #[test]
    fn packed_references_decode_to_what_was_packed() {
        let refs = CodeRefs::build(
            vec![
                raw("b", 300, 4, Role::Call, "ns"),
                raw("a", 2, 0, Role::Definition, ""),
                raw("b", 1, 130, Role::Use, "m"),
                raw("a", 70_000, 9, Role::Type, "ns"),
            ],
            Vec::new(),
            Vec::new(),
        );
        assert_eq!(refs.names, ["a", "b"]);
        let a = refs.uses("a");
        assert_eq!(
            a.iter()
                .map(|r| (r.line, r.column, r.role, refs.qualifier(r), r.scope))
                .collect::<Vec<_>>(),
            [
                (2, 0, Role::Definition, "", 2),
                (70_000, 9, Role::Type, "ns", 1)
            ]
        );
        let b = refs.uses("b");
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].line, b[0].column, b[0].member), (1, 130, true));
        assert_eq!(
            (b[1].line, b[1].role, refs.qualifier(&b[1])),
            (300, Role::Call, "ns")
        );
        assert!(refs.uses("c").is_empty());
        assert_eq!(refs.count(), 4);
    }

    #[test]
    fn lines_are_blank_comment_or_code() {
        let text = "// a\nint x; // b\n\n  /* c\n d */\ny();\n";
        let comments = [(0, 4), (12, 16), (20, 30)];
        assert_eq!(
            count_lines(text, &comments),
            LineCounts {
                total: 6,
                code: 2,
                comment: 3,
                blank: 1
            }
        );
    }
}
