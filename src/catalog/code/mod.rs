//! The code kind's catalog table, and the symbol name index beside it.
//!
//! - `code_file`: sub-key empty; the file's language, include/import count,
//!   syntax-error ranges, every class and function, its includes or imports,
//!   each class's bases and members, and line counts (`formats::code::CodeFile`
//!   as the reader returns it). One row per file: the per-file tools read it in
//!   one lookup, and a file of a few hundred symbols decodes in microseconds.
//! - `code_refs`: sub-key empty; every use of a name in the file
//!   (`formats::code::CodeRefs`: names once, uses packed as varints). Call
//!   sites are the uses whose role is `call`, with their enclosing function.
//!
//! `SymbolIndex` holds every symbol's name in memory for `find_symbol`, and
//! `RelationIndex` every file's references, includes and bases; both are
//! built from the tables when the catalog opens and follow each committed batch.

mod relation_index;
mod symbol_index;

pub use relation_index::{ClassEntry, FileRelations, RelationIndex, last_part};
pub use symbol_index::{SymbolHit, SymbolIndex, SymbolQuery};

use super::Catalog;
use super::records::{KindRow, KindTable, encode};
use crate::formats::Kind;
use crate::formats::code::{CodeFile, CodeRefs, Extracted};

pub const CODE_FILE: &str = "code_file";
pub const CODE_REFS: &str = "code_refs";

pub const TABLES: [KindTable; 2] = [
    KindTable {
        kind: Kind::Code,
        name: CODE_FILE,
        description: "source file: language, includes, syntax errors, classes, functions, bases, members",
    },
    KindTable {
        kind: Kind::Code,
        name: CODE_REFS,
        description: "source file: every use of a name (role, qualifier, enclosing scope), packed",
    },
];

/// The catalog rows of one parsed source file.
pub fn code_rows(extracted: &Extracted) -> Vec<KindRow> {
    vec![
        KindRow {
            table: CODE_FILE,
            key: Vec::new(),
            value: encode(&extracted.file),
        },
        KindRow {
            table: CODE_REFS,
            key: Vec::new(),
            value: encode(&extracted.refs),
        },
    ]
}

/// The `CodeFile` and `CodeRefs` among a batch's rows, if any.
pub(super) fn code_file_of(rows: &[KindRow]) -> Option<(CodeFile, CodeRefs)> {
    let row = rows.iter().find(|r| r.table == CODE_FILE)?;
    let file = super::decode(&row.value).ok()?;
    let refs = rows
        .iter()
        .find(|r| r.table == CODE_REFS)
        .and_then(|r| super::decode(&r.value).ok())
        .unwrap_or_default();
    Some((file, refs))
}

impl Catalog {
    /// What the catalog keeps of an indexed source file.
    pub fn code_file(&self, file_id: u64) -> anyhow::Result<Option<CodeFile>> {
        Ok(self.kind_rows::<CodeFile>(CODE_FILE, file_id, b"")?.pop())
    }

    /// The symbol name index over every indexed source file.
    pub fn symbols(&self) -> &SymbolIndex {
        &self.symbols
    }

    /// References, includes and bases of every indexed source file.
    pub fn relations(&self) -> &RelationIndex {
        &self.relations
    }

    /// Fills the symbol index from the `code_file` table (at open).
    pub(super) fn load_symbols(&self) -> anyhow::Result<()> {
        let mut located = std::collections::HashMap::new();
        for root in 0..self.roots.list().len() {
            for (rel, entry) in self.files.under(root, "") {
                if entry.kind == Kind::Code && !entry.failed {
                    located.insert(entry.id, (root, rel));
                }
            }
        }
        let files = self.all_kind_rows::<CodeFile>(CODE_FILE)?;
        let mut refs: std::collections::HashMap<u64, CodeRefs> = self
            .all_kind_rows::<CodeRefs>(CODE_REFS)?
            .into_iter()
            .collect();
        let mut relations = Vec::new();
        let mut symbols = Vec::new();
        for (id, file) in files {
            let Some((root, rel)) = located.remove(&id) else {
                continue;
            };
            let file_refs = refs.remove(&id).unwrap_or_default();
            relations.push(FileRelations::new(id, root, rel.clone(), &file, file_refs));
            symbols.push((id, root, rel, file));
        }
        self.relations.load(relations.into_iter());
        self.symbols.load(symbols.into_iter());
        Ok(())
    }
}
