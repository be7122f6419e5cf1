//! The code kind's catalog table, and the symbol name index beside it.
//!
//! - `code_file`: sub-key empty; the file's language, include/import count,
//!   syntax-error ranges, every class and function, its includes or imports,
//!   each class's bases and members, and line counts (`formats::code::CodeFile`
//!   as the reader returns it). One row per file: the per-file tools read it in
//!   one lookup, and a file of a few hundred symbols decodes in microseconds.
//! - `code_refs`: sub-key empty; every use of a name in the file
//!   (`formats::code::CodeRefs`: names once, uses packed as varints),
//!   zstd-compressed (`StoredRefs`). Call sites are the uses whose role is
//!   `call`, with their enclosing function.
//!
//! `SymbolIndex` holds every symbol's name in memory for `find_symbol`, and
//! `RelationIndex` every file's references, includes and bases; both are
//! built from the tables when the catalog opens and follow each committed batch.

mod relation_index;
mod symbol_index;

pub use relation_index::{ClassEntry, FileRelations, RelationIndex, last_part};
pub use symbol_index::{SymbolHit, SymbolIndex, SymbolQuery};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Catalog;
use super::records::{KindRow, KindTable, decode, encode};
use crate::formats::Kind;
use crate::formats::code::{CodeFile, CodeRefs, Extracted, MAX_SOURCE_BYTES};

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

/// How a `code_refs` row is stored: the bincode of the file's `CodeRefs`,
/// compressed with zstd. References are most of what source code adds to the
/// catalog (a file has ten or twenty times more uses than symbols); their
/// sorted names and small varints compress well, and they are decompressed
/// only when the catalog opens or a file is re-indexed, since lookups go to
/// the in-memory `RelationIndex`.
pub struct StoredRefs(pub CodeRefs);

/// The same, for writing without a copy.
struct RefsToStore<'r>(&'r CodeRefs);

/// zstd's level for references: level 3 compresses them a little better than
/// 1 for a negligible cost beside the parse.
const REFS_LEVEL: i32 = 3;

/// Decompressed references are bounded by the largest file parsed: a damaged
/// row cannot ask for more memory than that.
const MAX_REFS_BYTES: usize = 4 * MAX_SOURCE_BYTES as usize;

thread_local! {
    /// One zstd compression context per indexing thread, kept: making one
    /// allocates and clears its tables, which cost as much as compressing a
    /// small file's references. None if zstd could not make one.
    static REFS_COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        std::cell::RefCell::new(zstd::bulk::Compressor::new(REFS_LEVEL).ok());
}

impl Serialize for RefsToStore<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw = encode(&self.0);
        let packed = REFS_COMPRESSOR
            .with_borrow_mut(|kept| match kept {
                Some(compressor) => compressor.compress(&raw),
                None => zstd::bulk::compress(&raw, REFS_LEVEL),
            })
            .map_err(serde::ser::Error::custom)?;
        packed.serialize(s)
    }
}

impl<'de> Deserialize<'de> for StoredRefs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let packed = Vec::<u8>::deserialize(d)?;
        let raw =
            zstd::bulk::decompress(&packed, MAX_REFS_BYTES).map_err(serde::de::Error::custom)?;
        decode(&raw)
            .map(StoredRefs)
            .map_err(serde::de::Error::custom)
    }
}

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
            value: encode(&RefsToStore(&extracted.refs)),
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
        .and_then(|r| super::decode::<StoredRefs>(&r.value).ok())
        .map(|r| r.0)
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
        for root_id in 0..self.roots.list().len() {
            for (rel, entry) in self.files.under(root_id, "") {
                if entry.kind == Kind::Code && !entry.failed {
                    located.insert(entry.id, (root_id, rel));
                }
            }
        }
        let files = self.all_kind_rows::<CodeFile>(CODE_FILE)?;
        let mut refs: std::collections::HashMap<u64, CodeRefs> = self
            .all_kind_rows::<StoredRefs>(CODE_REFS)?
            .into_iter()
            .map(|(id, r)| (id, r.0))
            .collect();
        let mut relations = Vec::new();
        let mut symbols = Vec::new();
        for (id, file) in files {
            let Some((root_id, rel)) = located.remove(&id) else {
                continue;
            };
            let file_refs = refs.remove(&id).unwrap_or_default();
            relations.push(FileRelations::new(
                id,
                root_id,
                rel.clone(),
                &file,
                file_refs,
            ));
            symbols.push((id, root_id, rel, file));
        }
        self.relations.load(relations.into_iter());
        self.symbols.load(symbols.into_iter());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real file's references come back equal from their stored row; a
    /// damaged row is an error. (What compression saves on real trees is
    /// measured by `benches/code_nav`: the test files are small.)
    #[test]
    fn stored_references_round_trip() {
        let text = include_str!("../../../testdata/code/python/calo_tools/calibration.py");
        let parsed = crate::formats::code::parse(
            crate::formats::code::Language::Python,
            text.to_string(),
            crate::formats::code::PARSE_BUDGET,
        )
        .unwrap();
        let extracted = crate::formats::code::extract(&parsed);
        assert!(extracted.refs.count() > 50);
        let rows = code_rows(&extracted);
        let stored = &rows.iter().find(|r| r.table == CODE_REFS).unwrap().value;
        let back = decode::<StoredRefs>(stored).unwrap().0;
        assert_eq!(back, extracted.refs);
        let mut damaged = stored.clone();
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0x5a;
        damaged.truncate(damaged.len() - 3);
        assert!(decode::<StoredRefs>(&damaged).is_err());
    }
}
