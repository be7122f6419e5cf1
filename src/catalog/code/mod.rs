//! The code kind's catalog table, and the symbol name index beside it.
//!
//! - `code_file`: sub-key empty; the file's language, include/import count,
//!   syntax-error ranges and every class and function (`formats::code::CodeFile`
//!   as the reader returns it). One row per file: the per-file tools read it in
//!   one lookup, and a file of a few hundred symbols decodes in microseconds.
//!
//! `SymbolIndex` holds every symbol's name in memory for `find_symbol`; it is
//! built from `code_file` when the catalog opens and follows each committed batch.

mod symbol_index;

pub use symbol_index::{SymbolHit, SymbolIndex, SymbolQuery};

use super::Catalog;
use super::records::{KindRow, KindTable, encode};
use crate::formats::Kind;
use crate::formats::code::CodeFile;

pub const CODE_FILE: &str = "code_file";

pub const TABLES: [KindTable; 1] = [KindTable {
    kind: Kind::Code,
    name: CODE_FILE,
    description: "source file: language, includes, syntax errors, classes and functions",
}];

/// The catalog rows of one parsed source file.
pub fn code_rows(file: &CodeFile) -> Vec<KindRow> {
    vec![KindRow {
        table: CODE_FILE,
        key: Vec::new(),
        value: encode(file),
    }]
}

/// The `CodeFile` among a batch's rows, if any.
pub(super) fn code_file_of(rows: &[KindRow]) -> Option<CodeFile> {
    let row = rows.iter().find(|r| r.table == CODE_FILE)?;
    super::decode(&row.value).ok()
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
        self.symbols
            .load(files.into_iter().filter_map(|(id, file)| {
                let (root, rel) = located.remove(&id)?;
                Some((id, root, rel, file))
            }));
        Ok(())
    }
}
