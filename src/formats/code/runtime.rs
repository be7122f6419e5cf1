//! tree-sitter's runtime as quarry runs it: its C allocations go to mimalloc,
//! and each thread keeps one parser per language.
//!
//! A parse is mostly small allocations and frees (subtrees, stack versions,
//! arrays); glibc's malloc made 5-8 % of it. py-tree-sitter hands the same
//! calls to Python's small-object allocator for the same reason.
//!
//! The allocator must be set before tree-sitter allocates anything, and never
//! changed after: a block from one allocator freed by the other is memory
//! corruption. So every tree-sitter object quarry makes starts from
//! [`grammar`] (a parser needs a language, a query is compiled for one, a tree
//! and a cursor come from those), and `grammar` sets the allocator once per
//! process before handing out a language.

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::Once;

use super::Language;

static ALLOCATOR: Once = Once::new();

/// The grammar of `language`, with tree-sitter's allocator set up first.
pub(super) fn grammar(language: Language) -> tree_sitter::Language {
    ALLOCATOR.call_once(|| {
        // SAFETY: runs once, before any tree-sitter object of this process
        // exists (see the module's comment), and the four functions are
        // mimalloc's, which agree with each other.
        unsafe { tree_sitter::set_allocator(Some(malloc), Some(calloc), Some(realloc), Some(free)) }
    });
    match language {
        Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        Language::Python => tree_sitter_python::LANGUAGE.into(),
    }
}

unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    // SAFETY: plain allocation.
    unsafe { libmimalloc_sys::mi_malloc(size) }
}

unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    match count.checked_mul(size) {
        // SAFETY: plain zeroed allocation.
        Some(bytes) => unsafe { libmimalloc_sys::mi_zalloc(bytes) },
        None => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn realloc(block: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: tree-sitter passes a block it had from these functions, or null.
    unsafe { libmimalloc_sys::mi_realloc(block, size) }
}

unsafe extern "C" fn free(block: *mut c_void) {
    // SAFETY: as for `realloc`.
    unsafe { libmimalloc_sys::mi_free(block) }
}

thread_local! {
    /// A parser per language, kept for the thread's next file: a parser
    /// reuses the subtrees and stacks its last parse freed.
    static PARSERS: RefCell<[Option<tree_sitter::Parser>; 2]> = const { RefCell::new([None, None]) };
}

/// Runs `parse` with this thread's parser for `language`. A parse that did not
/// finish (halted by its budget) is forgotten, so the next one starts afresh
/// rather than resuming it.
pub(super) fn with_parser<T>(
    language: Language,
    parse: impl FnOnce(&mut tree_sitter::Parser) -> Option<T>,
) -> Result<Option<T>, tree_sitter::LanguageError> {
    let slot = language as usize;
    let taken = PARSERS.with(|parsers| parsers.borrow_mut()[slot].take());
    let mut parser = match taken {
        Some(parser) => parser,
        None => {
            let grammar = grammar(language); // before the parser is made
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&grammar)?;
            parser
        }
    };
    let out = parse(&mut parser);
    if out.is_none() {
        parser.reset();
    }
    // A parse that panicked (its parser dropped while unwinding) leaves the
    // slot empty, and the thread's next parse makes a new parser.
    PARSERS.with(|parsers| parsers.borrow_mut()[slot] = Some(parser));
    Ok(out)
}
