//! The full-text index of the documents: one tantivy document per catalog
//! document, with its words and line breaks at their positions (see
//! `tokenizer`), its catalog file id, fingerprint and path ("root/rel").
//!
//! It lives in `text-index/` in the catalog folder and holds nothing the
//! catalog does not: the text comes from the `doc_text` rows. The catalog
//! updates it after each committed batch (`Catalog::apply`), and reconciles it
//! with the tables when it opens, so a process killed between the redb commit
//! and the tantivy commit, a damaged index or an index of another version is
//! repaired from the tables without reading a document again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context as _;
use tantivy::directory::MmapDirectory;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

use super::text_of_rows;
use super::tokenizer::{TOKENIZER_NAME, WordsAndLines};
use super::vocabulary::Vocabulary;
use crate::catalog::{FileInfo, FileRecord, KindRow};
use crate::formats::Kind;

/// The folder of the index inside the catalog folder.
pub const TEXT_INDEX_DIR: &str = "text-index";
/// Bumped when the index's schema or tokenizer changes: an index of another
/// version is deleted and rebuilt from the catalog.
const TEXT_INDEX_VERSION: u32 = 1;
const VERSION_FILE: &str = "quarry-text-index-version";
/// Memory tantivy may buffer per indexing thread before writing a segment.
const WRITER_BYTES_PER_THREAD: usize = 32 << 20;
/// During a long sync, batches are committed to the index at most this often (a
/// tantivy commit writes and syncs segment files: once per catalog batch would
/// dominate a scan of small batches). The sync's end commits what is left.
const COMMIT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// Text added since the last commit past which the index commits before it
/// takes the next document: a segment's postings sit in memory until its
/// commit, and writing them out takes about as much again (a document of
/// 16 MiB of short words cost 75 MB), so they are bounded by text, not time.
const COMMIT_BYTES: usize = 8 << 20;

pub(super) struct Fields {
    pub file_id: Field,
    pub fingerprint: Field,
    pub path: Field,
    pub text: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text_options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        file_id: b.add_u64_field("file_id", INDEXED | FAST),
        fingerprint: b.add_u64_field("fingerprint", FAST),
        path: b.add_text_field("path", STRING | FAST),
        text: b.add_text_field("text", text_options),
    };
    (b.build(), fields)
}

pub struct TextIndex {
    dir: PathBuf,
    index: Index,
    pub(super) fields: Fields,
    writer: Mutex<Writer>,
    reader: IndexReader,
    pub(super) vocabulary: Vocabulary,
}

/// The tantivy writer and what it holds that searches do not see yet. The
/// writer exists only while the index changes: its indexing and merge threads
/// and its 10,000-document queue (several MB) would otherwise sit in an idle
/// daemon's memory. `flush` lets its merges finish and releases it.
struct Writer {
    tantivy: Option<IndexWriter>,
    /// Whether files no commit refers to were removed (at the first writer).
    swept: bool,
    uncommitted: bool,
    /// Bytes of text added since the last commit.
    uncommitted_bytes: usize,
    last_commit: std::time::Instant,
}

/// A document to (re)index: the catalog's rows of it, as extracted.
pub struct PendingText<'a> {
    pub file_id: u64,
    pub fingerprint: u64,
    /// "root name/relative path".
    pub path: String,
    pub rows: &'a [KindRow],
}

/// What a committed catalog batch changed among the documents.
#[derive(Default)]
pub struct TextChanges<'a> {
    /// File ids whose indexed text is gone or outdated.
    pub removed: Vec<u64>,
    pub added: Vec<PendingText<'a>>,
}

impl<'a> TextChanges<'a> {
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.added.is_empty()
    }

    /// Notes a file stored as `file` (replacing `old`, if it existed) with `rows`.
    pub fn note_upsert(
        &mut self,
        root_name: &str,
        rel: &str,
        id: u64,
        old: Option<&FileRecord>,
        file: &FileInfo,
        rows: &'a [KindRow],
    ) {
        if old.is_some_and(|o| o.info.kind == Kind::Document) {
            self.removed.push(id);
        }
        if file.kind == Kind::Document && !file.status.is_failed() {
            self.added.push(PendingText {
                file_id: id,
                fingerprint: file.fingerprint,
                path: format!("{root_name}/{rel}"),
                rows,
            });
        }
    }

    pub fn note_removal(&mut self, old: &FileRecord) {
        if old.info.kind == Kind::Document {
            self.removed.push(old.id);
        }
    }
}

impl TextIndex {
    /// Opens the index in `dir`, creating it, or replacing one that is damaged or
    /// of another version (it is a cache of the catalog's tables).
    pub fn open(dir: &Path) -> anyhow::Result<TextIndex> {
        match Self::try_open(dir) {
            Ok(index) => Ok(index),
            Err(e) => Self::replace(dir, &e),
        }
    }

    /// A new, empty index in place of the one in `dir`, which cannot be used
    /// for `why` (the caller fills it from the catalog's tables).
    pub fn replace(dir: &Path, why: &anyhow::Error) -> anyhow::Result<TextIndex> {
        tracing::warn!(
            "the text index in {} cannot be used ({why:#}); building a new one",
            dir.display()
        );
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
        Self::try_open(dir)
    }

    fn try_open(dir: &Path) -> anyhow::Result<TextIndex> {
        let version_file = dir.join(VERSION_FILE);
        let current = std::fs::read_to_string(&version_file)
            .is_ok_and(|v| v.trim() == TEXT_INDEX_VERSION.to_string());
        if !current && dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        std::fs::create_dir_all(dir)?;
        let (schema, fields) = schema();
        let index = Index::open_or_create(MmapDirectory::open(dir)?, schema)?;
        index
            .tokenizers()
            .register(TOKENIZER_NAME, TextAnalyzer::from(WordsAndLines));
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        if !current {
            std::fs::write(&version_file, TEXT_INDEX_VERSION.to_string())?;
        }
        Ok(TextIndex {
            dir: dir.to_path_buf(),
            index,
            fields,
            writer: Mutex::new(Writer {
                tantivy: None,
                swept: false,
                uncommitted: false,
                uncommitted_bytes: 0,
                last_commit: std::time::Instant::now(),
            }),
            reader,
            vocabulary: Vocabulary::default(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The writer, created when the index first changes after a flush.
    fn open_writer<'w>(&self, w: &'w mut Writer) -> anyhow::Result<&'w mut IndexWriter> {
        if w.tantivy.is_none() {
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
            let options = tantivy::indexer::IndexWriterOptions::builder()
                .num_worker_threads(threads)
                .memory_budget_per_thread(WRITER_BYTES_PER_THREAD)
                .num_merge_threads(1)
                .build();
            let writer = self.index.writer_with_options(options)?;
            if !w.swept {
                // A process killed part-way through a commit leaves the files
                // it wrote, unreferenced; this one, starting from the commit
                // before, would write a deletion file of the same name (its
                // segment and opstamp) and fail on finding it there.
                // Best effort: a file that cannot be removed now is tried
                // again by tantivy after later commits.
                match writer.garbage_collect_files().wait() {
                    Ok(swept) if !swept.deleted_files.is_empty() => tracing::info!(
                        "text index: removed {} file(s) no commit refers to",
                        swept.deleted_files.len()
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::warn!("text index: removing unused files failed: {e}"),
                }
                w.swept = true;
            }
            w.tantivy = Some(writer);
        }
        Ok(w.tantivy.as_mut().expect("just created"))
    }

    /// The index as of its last commit.
    pub(super) fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    /// Applies a batch's changes. They are committed (and searchable) when the
    /// last commit is `COMMIT_INTERVAL` old, else at the next `flush`.
    pub fn apply(&self, changes: &TextChanges<'_>) -> anyhow::Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let mut writer = self.writer.lock().expect("text index writer");
        let w = self.open_writer(&mut writer)?;
        for &id in &changes.removed {
            w.delete_term(Term::from_field_u64(self.fields.file_id, id));
        }
        writer.uncommitted = true;
        for doc in &changes.added {
            let text = text_of_rows(doc.rows)?;
            self.add(&mut writer, doc.file_id, doc.fingerprint, &doc.path, &text)?;
        }
        if writer.last_commit.elapsed() >= COMMIT_INTERVAL {
            self.commit(&mut writer)?;
        }
        Ok(())
    }

    /// Adds one document, committing first when the text added since the
    /// last commit would pass `COMMIT_BYTES` with it.
    fn add(
        &self,
        writer: &mut Writer,
        file_id: u64,
        fingerprint: u64,
        path: &str,
        text: &str,
    ) -> anyhow::Result<()> {
        if writer.uncommitted_bytes > 0 && writer.uncommitted_bytes + text.len() > COMMIT_BYTES {
            self.commit(writer)?;
        }
        let doc = self.document(file_id, fingerprint, path, text);
        self.open_writer(writer)?.add_document(doc)?;
        writer.uncommitted = true;
        writer.uncommitted_bytes += text.len();
        Ok(())
    }

    /// Commits what `apply` left uncommitted, lets the merges that started
    /// finish, and releases the writer.
    pub fn flush(&self) -> anyhow::Result<()> {
        let mut writer = self.writer.lock().expect("text index writer");
        if writer.uncommitted {
            self.commit(&mut writer)?;
        }
        if let Some(w) = writer.tantivy.take() {
            w.wait_merging_threads()?;
            self.reader.reload()?;
            self.warm();
        }
        Ok(())
    }

    /// Reads the new segments' words into the vocabulary now, so that the next
    /// search does not pay for it (about 0.1 s for 100 MB of new text).
    pub fn warm(&self) {
        if let Err(e) = self.vocabulary.catch_up(&self.searcher(), self.fields.text) {
            tracing::warn!("reading the text index's words failed: {e}");
        }
    }

    /// Adds documents whose text is read from the catalog (reconciliation).
    pub fn reindex(
        &self,
        removed: &[u64],
        added: impl Iterator<Item = anyhow::Result<(u64, u64, String, String)>>,
    ) -> anyhow::Result<usize> {
        let mut count = 0;
        {
            let mut writer = self.writer.lock().expect("text index writer");
            let w = self.open_writer(&mut writer)?;
            for &id in removed {
                w.delete_term(Term::from_field_u64(self.fields.file_id, id));
            }
            for item in added {
                let (id, fingerprint, path, text) = item?;
                self.open_writer(&mut writer)?
                    .delete_term(Term::from_field_u64(self.fields.file_id, id));
                self.add(&mut writer, id, fingerprint, &path, &text)?;
                count += 1;
            }
            writer.uncommitted = true;
        }
        self.flush()?;
        Ok(count)
    }

    /// Empties the index (the catalog was emptied).
    pub fn clear(&self) -> anyhow::Result<()> {
        {
            let mut writer = self.writer.lock().expect("text index writer");
            self.open_writer(&mut writer)?.delete_all_documents()?;
            writer.uncommitted = true;
        }
        self.flush()?;
        self.vocabulary.clear();
        Ok(())
    }

    fn commit(&self, writer: &mut Writer) -> anyhow::Result<()> {
        if let Some(w) = writer.tantivy.as_mut() {
            w.commit()?;
        }
        writer.uncommitted = false;
        writer.uncommitted_bytes = 0;
        writer.last_commit = std::time::Instant::now();
        self.reader.reload()?;
        Ok(())
    }

    fn document(&self, file_id: u64, fingerprint: u64, path: &str, text: &str) -> TantivyDocument {
        let mut doc = TantivyDocument::default();
        doc.add_u64(self.fields.file_id, file_id);
        doc.add_u64(self.fields.fingerprint, fingerprint);
        doc.add_text(self.fields.path, path);
        doc.add_text(self.fields.text, text);
        doc
    }

    /// File id -> fingerprint of every document the index holds.
    pub fn contents(&self) -> anyhow::Result<HashMap<u64, u64>> {
        let searcher = self.searcher();
        let mut out = HashMap::new();
        for segment in searcher.segment_readers() {
            let ids = segment.fast_fields().u64("file_id")?;
            let fingerprints = segment.fast_fields().u64("fingerprint")?;
            for doc in segment.doc_ids_alive() {
                if let (Some(id), Some(fp)) = (ids.first(doc), fingerprints.first(doc)) {
                    out.insert(id, fp);
                }
            }
        }
        Ok(out)
    }

    /// How many documents the index holds.
    pub fn len(&self) -> u64 {
        self.searcher().num_docs()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
