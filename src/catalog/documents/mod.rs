//! The document kind's catalog tables, and the full-text index beside them.
//!
//! Rows are keyed by (file id, sub-key):
//! - `doc_meta`: sub-key empty; format, pages (first line, line and character
//!   counts), the first line of each text block, metadata, extraction warnings;
//! - `doc_text`: sub-key = block number (u32 big-endian); the text of whole lines
//!   of one page, about 64 KiB at most, LZ4-compressed. Search results and
//!   `read_document` decompress only the blocks they show;
//! - `doc_toc`: sub-key empty; the table of contents as a flat list in document
//!   order (levels say how it nests).
//!
//! The text is also indexed in tantivy (`text_index`), which finds the lines a
//! query matches without reading any text; the tables hold what the results
//! show. The tantivy index is derived from these tables and is reconciled with
//! them whenever the catalog opens.

pub mod query;
mod search;
mod text_index;
#[cfg(test)]
mod text_index_tests;
mod tokenizer;
mod vocabulary;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

pub use search::{DocumentHit, Scope, SearchError, SearchOptions, SearchOutcome};
pub use text_index::{TEXT_INDEX_DIR, TextChanges, TextIndex};
pub use tokenizer::words;

use super::Catalog;
use super::records::{KindRow, KindTable, encode};
use crate::formats::Kind;
use crate::formats::document::{Document, Heading, Metadata};

pub const DOC_META: &str = "doc_meta";
pub const DOC_TEXT: &str = "doc_text";
pub const DOC_TOC: &str = "doc_toc";
/// The document's RAPTOR tree, one row per node (the RAG engine's encoding),
/// written by the RAG pass after indexing and dropped with the document's rows.
pub const RAG_NODES: &str = "rag_nodes";

pub const TABLES: [KindTable; 4] = [
    KindTable {
        kind: Kind::Document,
        name: DOC_META,
        description: "document format, pages, text blocks, metadata",
    },
    KindTable {
        kind: Kind::Document,
        name: DOC_TEXT,
        description: "document text in blocks of whole lines, LZ4-compressed",
    },
    KindTable {
        kind: Kind::Document,
        name: DOC_TOC,
        description: "table of contents, flat, in document order",
    },
    KindTable {
        kind: Kind::Document,
        name: RAG_NODES,
        description: "RAPTOR tree nodes: text, level, source pieces, child and parent edges",
    },
];

/// A text block holds whole lines of one page up to about this many bytes (a
/// longer line makes a longer block).
const BLOCK_BYTES: usize = 64 << 10;

/// What the catalog keeps about a document besides its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocMetaRow {
    /// "pdf", "markdown" or "text".
    pub format: String,
    pub pages: Vec<PageSpan>,
    /// The first line (1-based) of each text block, in block order.
    pub block_first_lines: Vec<u32>,
    /// Lines in the whole text (pages joined).
    pub lines: u32,
    pub chars: u64,
    /// Title, author, subject, created, keywords (encoded as those fields in
    /// turn, as before they were grouped).
    pub metadata: Metadata,
    /// Problems met while extracting (a PDF page that could not be read).
    pub warnings: Vec<String>,
}

/// Where a page's text lies in the document's lines and blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageSpan {
    /// The page's first line (1-based, counted through the whole text).
    pub first_line: u32,
    pub lines: u32,
    pub chars: u64,
    pub first_block: u32,
    pub blocks: u32,
}

/// A table-of-contents entry, stored as the extractor gives it.
pub type TocRow = Heading;

/// The catalog rows of a document: its metadata, its text in blocks, its TOC.
pub fn document_rows(doc: Document) -> Vec<KindRow> {
    let mut rows = Vec::new();
    let mut pages = Vec::with_capacity(doc.pages.len());
    let mut block_first_lines = Vec::new();
    let mut next_line = 1u32;
    let mut chars = 0u64;
    for page in &doc.pages {
        let first_block = block_first_lines.len() as u32;
        let page_chars = page.chars().count() as u64;
        let mut line = next_line;
        for block in blocks_of(page) {
            block_first_lines.push(line);
            line += memchr::memchr_iter(b'\n', block.as_bytes()).count() as u32;
            rows.push(KindRow {
                table: DOC_TEXT,
                key: (block_first_lines.len() as u32 - 1).to_be_bytes().to_vec(),
                value: lz4_flex::block::compress_prepend_size(block.as_bytes()),
            });
        }
        pages.push(PageSpan {
            first_line: next_line,
            lines: line - next_line,
            chars: page_chars,
            first_block,
            blocks: block_first_lines.len() as u32 - first_block,
        });
        chars += page_chars;
        next_line = line;
    }
    let meta = DocMetaRow {
        format: doc.format.as_str().to_string(),
        pages,
        block_first_lines,
        lines: next_line - 1,
        chars,
        metadata: doc.metadata,
        warnings: doc.warnings,
    };
    rows.push(KindRow {
        table: DOC_META,
        key: Vec::new(),
        value: encode(&meta),
    });
    rows.push(KindRow {
        table: DOC_TOC,
        key: Vec::new(),
        value: encode(&doc.toc),
    });
    rows
}

/// Splits a page into blocks of whole lines of about `BLOCK_BYTES`.
fn blocks_of(page: &str) -> impl Iterator<Item = &str> {
    let mut rest = page;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = if rest.len() <= BLOCK_BYTES {
            rest.len()
        } else {
            // The end of the last line that fits, or of the first line if none does.
            let within = memchr::memrchr(b'\n', &rest.as_bytes()[..BLOCK_BYTES]);
            let end = within.or_else(|| memchr::memchr(b'\n', rest.as_bytes()));
            end.map_or(rest.len(), |i| i + 1)
        };
        let (block, tail) = rest.split_at(cut);
        rest = tail;
        Some(block)
    })
}

fn decompress(bytes: &[u8]) -> anyhow::Result<String> {
    let raw = lz4_flex::block::decompress_size_prepended(bytes)
        .map_err(|e| anyhow::anyhow!("a document text block is damaged: {e}"))?;
    Ok(String::from_utf8(raw)?)
}

/// The text blocks among `rows` (a document's rows as extracted), joined.
pub(crate) fn text_of_rows(rows: &[KindRow]) -> anyhow::Result<String> {
    let mut text = String::new();
    for row in rows.iter().filter(|r| r.table == DOC_TEXT) {
        text.push_str(&decompress(&row.value)?);
    }
    Ok(text)
}

impl Catalog {
    /// A document's metadata row; `None` when the file has none (not a document,
    /// or one that failed to index).
    pub fn document_meta(&self, file_id: u64) -> anyhow::Result<Option<DocMetaRow>> {
        Ok(self.kind_rows(DOC_META, file_id, b"")?.pop())
    }

    pub fn document_toc(&self, file_id: u64) -> anyhow::Result<Vec<TocRow>> {
        Ok(self
            .kind_rows::<Vec<TocRow>>(DOC_TOC, file_id, b"")?
            .pop()
            .unwrap_or_default())
    }

    /// A reader of a document's stored text, by lines or by pages.
    pub fn document_text_reader<'c>(
        &'c self,
        file_id: u64,
        meta: &'c DocMetaRow,
    ) -> DocumentText<'c> {
        DocumentText {
            catalog: self,
            file_id,
            meta,
            blocks: HashMap::new(),
        }
    }

    /// A document's whole text, pages joined (for re-indexing it).
    pub(crate) fn document_text(&self, file_id: u64) -> anyhow::Result<String> {
        let blocks: Vec<Vec<u8>> = self.kind_blobs(DOC_TEXT, file_id)?;
        let mut text = String::new();
        for b in blocks {
            text.push_str(&decompress(&b)?);
        }
        Ok(text)
    }

    /// One kind-table value as stored (not bincode: text blocks are LZ4 bytes).
    fn kind_blob(
        &self,
        table: &'static str,
        file_id: u64,
        sub: &[u8],
    ) -> anyhow::Result<Option<Vec<u8>>> {
        use redb::ReadableDatabase;
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(super::kind_table(table)) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(table.get((file_id, sub))?.map(|v| v.value().to_vec()))
    }

    /// Every value of a file in a kind table, in sub-key order, as stored.
    fn kind_blobs(&self, table: &'static str, file_id: u64) -> anyhow::Result<Vec<Vec<u8>>> {
        use redb::ReadableDatabase;
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(super::kind_table(table)) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let empty: &[u8] = &[];
        let mut out = Vec::new();
        for item in table.range((file_id, empty)..(file_id + 1, empty))? {
            out.push(item?.1.value().to_vec());
        }
        Ok(out)
    }

    fn text_block(&self, file_id: u64, block: u32) -> anyhow::Result<String> {
        let blob = self
            .kind_blob(DOC_TEXT, file_id, &block.to_be_bytes())?
            .ok_or_else(|| anyhow::anyhow!("text block {block} of file {file_id} is missing"))?;
        decompress(&blob)
    }
}

/// Reads one document's stored text, decompressing each block at most once.
pub struct DocumentText<'c> {
    catalog: &'c Catalog,
    file_id: u64,
    meta: &'c DocMetaRow,
    blocks: HashMap<u32, String>,
}

impl DocumentText<'_> {
    fn block(&mut self, block: u32) -> anyhow::Result<&str> {
        if !self.blocks.contains_key(&block) {
            let text = self.catalog.text_block(self.file_id, block)?;
            self.blocks.insert(block, text);
        }
        Ok(&self.blocks[&block])
    }

    /// Lines `from..=to` (1-based, clamped to the document).
    pub fn lines(&mut self, from: u32, to: u32) -> anyhow::Result<Vec<String>> {
        let (from, to) = (from.max(1), to.min(self.meta.lines));
        if from > to {
            return Ok(Vec::new());
        }
        let starts = &self.meta.block_first_lines;
        let block_of = |line: u32| starts.partition_point(|&f| f <= line) - 1;
        let mut out = Vec::with_capacity((to - from + 1) as usize);
        for block in block_of(from)..=block_of(to) {
            let first = self.meta.block_first_lines[block];
            let text = self.block(block as u32)?;
            for (i, line) in text.lines().enumerate() {
                if (from..=to).contains(&(first + i as u32)) {
                    out.push(line.to_string());
                }
            }
        }
        Ok(out)
    }

    /// The text of page `page` (1-based), cut after `max_chars` characters; and
    /// whether it is whole. Blocks past the cut are not read.
    pub fn page(&mut self, page: u32, max_chars: usize) -> anyhow::Result<(String, bool)> {
        let Some(span) = self
            .meta
            .pages
            .get((page as usize).wrapping_sub(1))
            .copied()
        else {
            return Ok((String::new(), true));
        };
        let mut text = String::new();
        let mut chars = 0;
        for block in span.first_block..span.first_block + span.blocks {
            let part = self.block(block)?;
            let n = part.chars().count();
            if chars + n > max_chars {
                let cut = part
                    .char_indices()
                    .nth(max_chars - chars)
                    .map_or(part.len(), |(i, _)| i);
                text.push_str(&part[..cut]);
                return Ok((text, false));
            }
            text.push_str(part);
            chars += n;
        }
        Ok((text, true))
    }

    /// The text of page `page` (1-based) from its character `skip` on, cut
    /// after `max_chars` characters; whether that rest of the page is whole;
    /// and how many characters were skipped (fewer than `skip` when the page
    /// is shorter). Blocks before `skip` are read one at a time and not kept,
    /// so a far offset into a long page costs no memory.
    pub fn page_from(
        &mut self,
        page: u32,
        skip: usize,
        max_chars: usize,
    ) -> anyhow::Result<(String, bool, usize)> {
        let Some(span) = self
            .meta
            .pages
            .get((page as usize).wrapping_sub(1))
            .copied()
        else {
            return Ok((String::new(), true, 0));
        };
        let (mut text, mut chars, mut skipped) = (String::new(), 0, 0);
        for block in span.first_block..span.first_block + span.blocks {
            let whole = self.catalog.text_block(self.file_id, block)?;
            let n = whole.chars().count();
            if skipped + n <= skip {
                skipped += n;
                continue;
            }
            let from = skip - skipped;
            skipped = skip;
            let start = whole
                .char_indices()
                .nth(from)
                .map_or(whole.len(), |(i, _)| i);
            let part = &whole[start..];
            let n = n - from;
            if chars + n > max_chars {
                let cut = part
                    .char_indices()
                    .nth(max_chars - chars)
                    .map_or(part.len(), |(i, _)| i);
                text.push_str(&part[..cut]);
                return Ok((text, false, skipped));
            }
            text.push_str(part);
            chars += n;
        }
        Ok((text, true, skipped))
    }
}

/// The text index's side of the catalog: searching, and keeping it in step.
impl Catalog {
    pub fn text_index(&self) -> Option<&TextIndex> {
        self.text.as_ref()
    }

    /// The lines of the catalog's documents that match a query; stops early
    /// (`SearchError::Stopped`) when `job` is stopped.
    pub fn search_documents(
        &self,
        expr: &query::Expr,
        scope: &Scope,
        options: &SearchOptions,
        job: &crate::job::Job,
    ) -> Result<SearchOutcome, SearchError> {
        let text = self.text.as_ref().ok_or_else(|| {
            SearchError::Failed(anyhow::anyhow!(
                "this catalog was opened without its text index"
            ))
        })?;
        text.search(expr, scope, options, job)
    }

    /// Passes a batch just committed on to the text index. A failure is
    /// logged and marks the index stale, so the next batch reconciles it whole:
    /// the batch itself is committed and must not be reported as failed.
    pub(super) fn update_text(&self, changes: &TextChanges<'_>) {
        use std::sync::atomic::Ordering;
        let Some(text) = &self.text else { return };
        let result = if self.text_stale.load(Ordering::Relaxed) {
            self.reconcile_text()
        } else {
            text.apply(changes)
        };
        match result {
            Ok(()) => self.text_stale.store(false, Ordering::Relaxed),
            Err(e) => {
                tracing::error!(
                    "updating the text index failed ({e:#}); it is rebuilt from the catalog at the next change"
                );
                self.text_stale.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Makes every change applied so far searchable (the end of a sync
    /// calls it; `apply` alone commits the text index only now and then).
    pub fn flush_text(&self) {
        use std::sync::atomic::Ordering;
        let Some(text) = &self.text else { return };
        if let Err(e) = text.flush() {
            tracing::error!(
                "committing the text index failed ({e:#}); it is rebuilt from the catalog at the next change"
            );
            self.text_stale.store(true, Ordering::Relaxed);
        }
    }

    /// Makes the text index hold exactly the catalog's readable documents, at
    /// their current fingerprints, re-indexing from the stored text what is
    /// missing or outdated (after a crash between the two commits, a damaged or
    /// replaced index).
    pub(super) fn reconcile_text(&self) -> anyhow::Result<()> {
        let Some(text) = &self.text else {
            return Ok(());
        };
        let indexed = text.contents()?;
        let mut wanted = Vec::new();
        for (i, root) in self.roots.list().iter().enumerate() {
            for (rel, e) in self.files.under(i, "") {
                if e.kind == Kind::Document && !e.failed {
                    wanted.push((e.id, e.fingerprint, format!("{}/{rel}", root.name)));
                }
            }
        }
        let current: std::collections::HashMap<u64, u64> =
            wanted.iter().map(|(id, fp, _)| (*id, *fp)).collect();
        let removed: Vec<u64> = indexed
            .iter()
            .filter(|(id, fp)| current.get(id) != Some(fp))
            .map(|(id, _)| *id)
            .collect();
        wanted.retain(|(id, fp, _)| indexed.get(id) != Some(fp));
        if removed.is_empty() && wanted.is_empty() {
            return Ok(());
        }
        tracing::info!(
            "text index: re-indexing {} documents from the catalog, dropping {}",
            wanted.len(),
            removed.len()
        );
        let added = wanted
            .into_iter()
            .map(|(id, fp, path)| Ok((id, fp, path, self.document_text(id)?)));
        text.reindex(&removed, added)?;
        Ok(())
    }
}

/// A document of these pages and nothing else (for tests).
#[cfg(test)]
fn bare(format: crate::formats::document::Format, pages: Vec<String>) -> Document {
    Document {
        format,
        pages,
        toc: Vec::new(),
        metadata: Metadata::default(),
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::decode;
    use crate::formats::document::Format;

    fn doc(pages: &[&str]) -> Document {
        bare(Format::Pdf, pages.iter().map(|p| p.to_string()).collect())
    }

    fn meta_of(rows: &[KindRow]) -> DocMetaRow {
        let row = rows.iter().find(|r| r.table == DOC_META).unwrap();
        decode(&row.value).unwrap()
    }

    #[test]
    fn pages_are_numbered_through_the_whole_text() {
        let rows = document_rows(doc(&["a\nb\n", "", "c\nd\ne\n"]));
        let meta = meta_of(&rows);
        assert_eq!(meta.lines, 5);
        assert_eq!(meta.chars, 10);
        let spans: Vec<(u32, u32)> = meta.pages.iter().map(|p| (p.first_line, p.lines)).collect();
        // The empty page has no lines: it starts where the next page starts.
        assert_eq!(spans, vec![(1, 2), (3, 0), (3, 3)]);
        assert_eq!(meta.block_first_lines, vec![1, 3]);
        assert_eq!(text_of_rows(&rows).unwrap(), "a\nb\nc\nd\ne\n");
    }

    #[test]
    fn long_pages_split_into_blocks_of_whole_lines() {
        let line = format!("{}\n", "x".repeat(999));
        let page = line.repeat(200); // 200,000 bytes
        let blocks: Vec<&str> = blocks_of(&page).collect();
        assert_eq!(blocks.concat(), page);
        assert!(blocks.len() >= 3);
        for b in &blocks {
            assert!(b.len() <= BLOCK_BYTES && b.ends_with('\n'));
        }
        // A single line longer than a block is one block.
        let huge = format!("{}\n", "y".repeat(BLOCK_BYTES * 2));
        assert_eq!(blocks_of(&huge).count(), 1);
        let rows = document_rows(doc(&[&page]));
        let meta = meta_of(&rows);
        assert_eq!(meta.block_first_lines.len(), blocks.len());
        assert_eq!(
            meta.block_first_lines[1],
            1 + blocks[0].lines().count() as u32
        );
    }
}
