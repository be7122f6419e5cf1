//! The code walk's cursor: tree-sitter's `TreeCursor` moves and answers, from
//! quarry's C cursor (`c/walk.c`), which keeps each level's child iterator
//! instead of rebuilding it from the parent at every sibling step. The public
//! cursor's steps were a tenth of a parse; see the C file for why and how.

use std::marker::PhantomData;
use std::num::NonZeroU16;
use std::ptr::NonNull;

use tree_sitter::{Node, Tree};

#[repr(C)]
struct RawCursor {
    _opaque: [u8; 0],
}

unsafe extern "C" {
    fn quarry_cursor_new(tree: *const tree_sitter::ffi::TSTree) -> *mut RawCursor;
    fn quarry_cursor_skip(cursor: *mut RawCursor, skip: *const bool, count: u32);
    fn quarry_cursor_delete(cursor: *mut RawCursor);
    fn quarry_cursor_goto_first_child(cursor: *mut RawCursor) -> bool;
    fn quarry_cursor_goto_next_sibling(cursor: *mut RawCursor) -> bool;
    fn quarry_cursor_goto_parent(cursor: *mut RawCursor) -> bool;
    fn quarry_cursor_node(cursor: *const RawCursor) -> tree_sitter::ffi::TSNode;
    fn quarry_cursor_field_id(cursor: *const RawCursor) -> u16;
}

/// A cursor at a tree's root, borrowing the tree.
pub(super) struct Cursor<'tree> {
    raw: NonNull<RawCursor>,
    tree: PhantomData<&'tree Tree>,
}

impl<'tree> Cursor<'tree> {
    pub(super) fn new(tree: &'tree Tree) -> Cursor<'tree> {
        let raw_tree = tree.root_node().into_raw().tree;
        // SAFETY: `raw_tree` is the live tree `tree` borrows for 'tree; the C
        // side ends the process rather than return null.
        let raw = NonNull::new(unsafe { quarry_cursor_new(raw_tree) }).expect("cursor allocated");
        Cursor {
            raw,
            tree: PhantomData,
        }
    }

    /// A cursor whose moves step over the nodes of the kinds `skip` marks
    /// (indexed by kind id) that have no error below them, as if the tree did
    /// not hold them. When `goto_next_sibling` finds nothing, the cursor may
    /// be left off its node, but under the same parent: `goto_parent` is the
    /// move to make next (as the code walk does).
    pub(super) fn skipping(tree: &'tree Tree, skip: &'static [bool]) -> Cursor<'tree> {
        let cursor = Cursor::new(tree);
        let count = u32::try_from(skip.len()).expect("fewer kinds than u32::MAX");
        // SAFETY: a live cursor; the table is 'static, so it outlives it.
        unsafe { quarry_cursor_skip(cursor.raw.as_ptr(), skip.as_ptr(), count) };
        cursor
    }

    pub(super) fn node(&self) -> Node<'tree> {
        // SAFETY: the cursor is at a node of the borrowed tree, which the
        // node borrows too.
        unsafe { Node::from_raw(quarry_cursor_node(self.raw.as_ptr())) }
    }

    pub(super) fn goto_first_child(&mut self) -> bool {
        // SAFETY: a live cursor over a live tree.
        unsafe { quarry_cursor_goto_first_child(self.raw.as_ptr()) }
    }

    pub(super) fn goto_next_sibling(&mut self) -> bool {
        // SAFETY: as above.
        unsafe { quarry_cursor_goto_next_sibling(self.raw.as_ptr()) }
    }

    pub(super) fn goto_parent(&mut self) -> bool {
        // SAFETY: as above.
        unsafe { quarry_cursor_goto_parent(self.raw.as_ptr()) }
    }

    /// The field the current node is of its parent, as `TreeCursor::field_id`.
    pub(super) fn field_id(&self) -> Option<NonZeroU16> {
        // SAFETY: as above.
        NonZeroU16::new(unsafe { quarry_cursor_field_id(self.raw.as_ptr()) })
    }
}

impl Drop for Cursor<'_> {
    fn drop(&mut self) {
        // SAFETY: made by quarry_cursor_new, deleted once.
        unsafe { quarry_cursor_delete(self.raw.as_ptr()) }
    }
}

/// Walks `tree` with tree-sitter's cursor and with quarry's side by side, in
/// the code walk's order (first child, else next sibling, else up), and checks
/// that every node, field and move agrees: the nodes seen, or where they first
/// differ. For the tests and the fuzz target `code_source`.
pub(super) fn compare_with_tree_sitter(tree: &Tree) -> Result<usize, String> {
    let mut theirs = tree.walk();
    let mut ours = Cursor::new(tree);
    let mut seen = 0;
    let differ = |what: &str, seen: usize| Err(format!("{what} differs at node {seen}"));
    loop {
        let (a, b) = (theirs.node(), ours.node());
        if a.id() != b.id() || a.kind_id() != b.kind_id() {
            return differ("the node", seen);
        }
        if a.byte_range() != b.byte_range() || a.start_position() != b.start_position() {
            return differ("the range", seen);
        }
        if theirs.field_id() != ours.field_id() {
            return differ("the field", seen);
        }
        seen += 1;
        let down = theirs.goto_first_child();
        if down != ours.goto_first_child() {
            return differ("the move to a first child", seen);
        }
        if down {
            continue;
        }
        loop {
            let next = theirs.goto_next_sibling();
            if next != ours.goto_next_sibling() {
                return differ("the move to a next sibling", seen);
            }
            if next {
                break;
            }
            let up = theirs.goto_parent();
            if up != ours.goto_parent() {
                return differ("the move to the parent", seen);
            }
            if !up {
                return Ok(seen);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::code::{Language, PARSE_BUDGET, parse};

    /// The nodes of `text`, walked by both cursors, which must agree.
    fn agree(language: Language, text: &str) -> usize {
        let source = parse(language, text.to_string(), PARSE_BUDGET).unwrap();
        compare_with_tree_sitter(&source.tree).unwrap_or_else(|e| panic!("{e}"))
    }

    fn sources(dir: &std::path::Path, out: &mut Vec<(Language, String)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if let Some(language) = Language::from_name(&path.to_string_lossy())
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                out.push((language, text));
            }
        }
    }

    #[test]
    fn moves_and_answers_as_tree_sitters_cursor_on_every_test_source() {
        let dir = std::env::var_os("QUARRY_WALK_CHECK_DIR").map_or_else(
            || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/code"),
            std::path::PathBuf::from,
        );
        let mut all = Vec::new();
        sources(&dir, &mut all);
        assert!(all.len() >= 10, "test sources found: {}", all.len());
        let nodes: usize = all.iter().map(|(l, t)| agree(*l, t)).sum();
        assert!(nodes > 2_000, "nodes walked: {nodes}");
    }

    #[test]
    fn moves_and_answers_as_tree_sitters_cursor_on_broken_and_odd_sources() {
        let cases = [
            (Language::Cpp, ""),
            (
                Language::Cpp,
                "int f( { class ; namespace x { template<> } ",
            ),
            (
                Language::Cpp,
                "#define X(a) a\nX(int) y; /* c */ struct S { int a : 3; };\n",
            ),
            (
                Language::Cpp,
                "template <typename T> using V = std::vector<T>; auto x = [](int a) { return a; };",
            ),
            (Language::Cpp, "}}}}((((\"unterminated"),
            (Language::Python, ""),
            (Language::Python, "def f(:\n  return [x for in y\n"),
            (
                Language::Python,
                "@d\nclass A(B, metaclass=M):\n    x: int = 1  # c\n    async def f(self, *a, **k) -> 'T': ...\n",
            ),
            (
                Language::Python,
                "s = f'{a!r:>{w}}' + \"\"\"doc\"\"\"\nmatch p:\n    case [1, *r]: pass\n",
            ),
        ];
        for (language, text) in cases {
            assert!(agree(language, text) >= 1);
        }
    }
}
