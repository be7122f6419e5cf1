//! The catalog: a redb database of what the roots hold, plus an in-memory mirror of
//! its file list. It is a cache of the roots: deleting it loses only time.
//!
//! Tables (see `schema/catalog.md`):
//! - `meta`: schema version, next file id, per-root scan completion times;
//! - `roots`: root name -> directory, so a root that moved is re-indexed;
//! - `files`: (root name, relative path) -> `FileRecord`;
//! - one table per kind-owned table in `KIND_TABLES`: (file id, sub-key) -> bytes;
//! - `root_datasets`: saved ROOT datasets by name, kept when the rest is emptied.
//!
//! Beside the database, `text-index/` holds the documents' full-text index
//! (`documents::TextIndex`), which follows the committed tables; in memory, the
//! code symbols' name index (`code::SymbolIndex`) does the same.
//!
//! Every change goes through `apply`, one write transaction per batch, so a process
//! killed at any instant leaves the last committed batch and nothing half-written.

mod activity;
pub mod code;
pub mod datasets;
pub mod documents;
mod file_list;
pub mod hdf5;
mod records;
pub mod root;
mod skipped;

use std::path::{Path, PathBuf};

use anyhow::Context;
use redb::{
    Database, DatabaseError, ReadableDatabase, ReadableTable, TableDefinition, TableHandle,
};

pub use activity::Activity;
pub use file_list::{
    FileEntry, FileList, FileMatch, FileQuery, FileQueryResult, KindCounts, KindSet, Snapshot,
};
pub use records::{
    FileInfo, FileRecord, FileStatus, KIND_TABLES, KindRow, KindTable, decode, encode, fingerprint,
    kind_tables,
};

use crate::formats::Kind;
use crate::roots::RootId;
use crate::roots::Roots;

/// Bumped whenever a table's layout or a value's encoding changes; a catalog with
/// another version is emptied and rebuilt from the roots.
pub const SCHEMA_VERSION: u32 = 18;

const DB_FILE: &str = "catalog.redb";
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const ROOTS: TableDefinition<&str, &str> = TableDefinition::new("roots");
const FILES: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("files");

const META_SCHEMA_VERSION: &str = "schema_version";
const META_NEXT_FILE_ID: &str = "next_file_id";

fn kind_table(name: &'static str) -> TableDefinition<'static, (u64, &'static [u8]), &'static [u8]> {
    TableDefinition::new(name)
}

fn scan_key(root_name: &str) -> String {
    format!("scan_completed_ms:{root_name}")
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Another process holds the catalog (a daemon or another `quarry mcp`).
    #[error("the catalog is in use by another quarry process")]
    Locked,
    /// The file is not a catalog redb can read (corrupt, or an old format).
    #[error(transparent)]
    Corrupt(anyhow::Error),
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// A change to the file list, applied in one transaction with others.
#[derive(Debug, Clone)]
pub enum Change {
    Upsert {
        root_id: RootId,
        rel: String,
        file: FileInfo,
        rows: Vec<KindRow>,
    },
    Remove {
        root_id: RootId,
        rel: String,
    },
}

pub struct Catalog {
    db: Database,
    roots: Roots,
    files: FileList,
    activity: Activity,
    /// The documents' full-text index; `None` in a catalog opened only to report
    /// on it (`open_existing`).
    text: Option<documents::TextIndex>,
    /// Set when updating the text index failed: the next batch reconciles it
    /// with the tables instead of applying only its own changes.
    text_stale: std::sync::atomic::AtomicBool,
    /// Every source file's symbol names, for `find_symbol`.
    symbols: code::SymbolIndex,
    /// Every source file's references, includes and bases.
    relations: code::RelationIndex,
}

pub fn db_path(dir: &Path) -> PathBuf {
    dir.join(DB_FILE)
}

/// Creates the catalog folder, private to the user (it holds the full text of
/// every document and may hold the socket). A folder that already exists keeps its
/// mode, with a warning when others may enter it; what quarry keeps inside is made
/// private either way (`make_private`).
pub fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create catalog folder {}", dir.display()))?;
    } else if let Ok(meta) = std::fs::metadata(dir)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            "catalog folder {} is open to other users (mode {:o}); quarry's files in it are private, but consider `chmod 700` on it",
            dir.display(),
            meta.permissions().mode() & 0o777
        );
    }
    Ok(())
}

/// Makes the catalog's own files 0600 and folders 0700 (a catalog written by an
/// older quarry, or under a looser umask, may have others' read bits).
fn make_private(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fn tighten(path: &Path) {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        let wanted = if meta.is_dir() {
            0o700
        } else if meta.is_file() {
            0o600
        } else {
            return; // links and sockets are left alone
        };
        if meta.permissions().mode() & 0o777 != wanted
            && let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(wanted))
        {
            tracing::warn!("cannot make {} private: {e}", path.display());
        }
        if meta.is_dir()
            && let Ok(entries) = std::fs::read_dir(path)
        {
            for entry in entries.flatten() {
                tighten(&entry.path());
            }
        }
    }
    tighten(&db_path(dir));
    tighten(&dir.join(documents::TEXT_INDEX_DIR));
}

impl Catalog {
    /// Opens (or creates) the catalog in `dir` for `roots`. Entries of roots that are
    /// no longer configured, or whose folder changed, are dropped. A catalog of
    /// another schema version, or one redb cannot read, is emptied.
    pub fn open(dir: &Path, roots: &Roots) -> Result<Catalog, OpenError> {
        create_private_dir(dir)?;
        let path = db_path(dir);
        let db = match open_db(&path) {
            Ok(db) => db,
            Err(OpenError::Corrupt(e)) => {
                // A cache: replacing it loses only time.
                tracing::warn!(
                    "catalog {} is unreadable ({e:#}); starting a new one",
                    path.display()
                );
                std::fs::remove_file(&path).context("cannot remove the unreadable catalog")?;
                open_db(&path)?
            }
            Err(e) => return Err(e),
        };
        let text_dir = dir.join(documents::TEXT_INDEX_DIR);
        let text = documents::TextIndex::open(&text_dir)?;
        make_private(dir);
        let mut catalog = Catalog {
            db,
            roots: roots.clone(),
            files: FileList::new(roots.list().len()),
            activity: Activity::default(),
            text: Some(text),
            text_stale: Default::default(),
            symbols: Default::default(),
            relations: Default::default(),
        };
        catalog.ensure_schema().map_err(OpenError::Failed)?;
        catalog.sync_roots().map_err(OpenError::Failed)?;
        catalog.load_mirror().map_err(OpenError::Failed)?;
        catalog.load_symbols().map_err(OpenError::Failed)?;
        if let Err(e) = catalog.reconcile_text() {
            // The text index is a cache of the tables: one that cannot be
            // brought up to date is built again rather than keep quarry down
            // (the old one is dropped first: it holds the writer's lock).
            catalog.text = None;
            catalog.text = Some(documents::TextIndex::replace(&text_dir, &e)?);
            catalog.reconcile_text().map_err(OpenError::Failed)?;
        }
        if let Some(text) = &catalog.text {
            text.warm();
        }
        Ok(catalog)
    }

    /// Opens an existing catalog for reading what it holds, with the roots it records.
    pub fn open_existing(dir: &Path) -> Result<Catalog, OpenError> {
        let path = db_path(dir);
        if !path.exists() {
            return Err(OpenError::Failed(anyhow::anyhow!(
                "no catalog at {}: run `quarry rebuild --root DIR` or `quarry serve --root DIR`",
                dir.display()
            )));
        }
        let db = open_db(&path)?;
        let stored = stored_roots(&db).map_err(OpenError::Failed)?;
        let version = stored_version(&db).map_err(OpenError::Failed)?;
        if version != Some(SCHEMA_VERSION) {
            return Err(OpenError::Failed(anyhow::anyhow!(
                "the catalog at {} has schema version {:?}, this quarry uses {SCHEMA_VERSION}; it is rebuilt at the next serve or rebuild",
                dir.display(),
                version
            )));
        }
        let roots = Roots::recorded(stored);
        let catalog = Catalog {
            db,
            files: FileList::new(roots.list().len()),
            roots,
            activity: Activity::default(),
            text: None,
            text_stale: Default::default(),
            symbols: Default::default(),
            relations: Default::default(),
        };
        catalog.load_mirror().map_err(OpenError::Failed)?;
        Ok(catalog)
    }

    pub fn roots(&self) -> &Roots {
        &self.roots
    }

    pub fn files(&self) -> &FileList {
        &self.files
    }

    pub fn activity(&self) -> &Activity {
        &self.activity
    }

    fn ensure_schema(&self) -> anyhow::Result<()> {
        let version = stored_version(&self.db)?;
        if version == Some(SCHEMA_VERSION) {
            return Ok(());
        }
        if let Some(old) = version {
            tracing::warn!(
                "catalog schema version {old} differs from {SCHEMA_VERSION}: rebuilding it"
            );
        }
        self.recreate_tables()
    }

    /// Drops every table and creates this version's, empty, in one transaction;
    /// the saved datasets (the user's definitions, not a cache) are kept.
    fn recreate_tables(&self) -> anyhow::Result<()> {
        let txn = self.db.begin_write()?;
        for table in txn.list_tables()? {
            let name = table.name().to_string();
            if name == datasets::DATASETS_NAME {
                continue;
            }
            txn.delete_table(table)
                .with_context(|| format!("dropping table {name}"))?;
        }
        {
            let mut meta = txn.open_table(META)?;
            meta.insert(META_SCHEMA_VERSION, SCHEMA_VERSION.to_le_bytes().as_slice())?;
            meta.insert(META_NEXT_FILE_ID, 1u64.to_le_bytes().as_slice())?;
            txn.open_table(ROOTS)?;
            txn.open_table(FILES)?;
            txn.open_table(skipped::SKIPPED)?;
            txn.open_table(datasets::DATASETS)?;
            for t in KIND_TABLES {
                txn.open_table(kind_table(t.name))?;
            }
        }
        txn.commit()?;
        if let Some(text) = &self.text {
            text.clear()?;
        }
        Ok(())
    }

    /// Empties the catalog (for `rebuild`): every table recreated, the mirror cleared.
    pub fn reset(&self) -> anyhow::Result<()> {
        self.recreate_tables()?;
        self.sync_roots()?;
        self.files.clear();
        Ok(())
    }

    /// Drops the entries of roots that are gone or moved, and records the current set.
    fn sync_roots(&self) -> anyhow::Result<()> {
        let stored = stored_roots(&self.db)?;
        let current: Vec<(String, String)> = self
            .roots
            .list()
            .iter()
            .map(|r| (r.name.clone(), r.canonical.to_string_lossy().into_owned()))
            .collect();
        let stale: Vec<String> = stored
            .iter()
            .filter(|s| !current.contains(s))
            .map(|(name, _)| name.clone())
            .collect();
        if stale.is_empty() && stored.len() == current.len() {
            return Ok(());
        }
        let txn = self.db.begin_write()?;
        {
            let mut files = txn.open_table(FILES)?;
            let mut roots = txn.open_table(ROOTS)?;
            let mut meta = txn.open_table(META)?;
            for name in &stale {
                tracing::info!("root '{name}' is no longer configured here: dropping its entries");
                let mut doomed: Vec<(String, u64, Kind)> = Vec::new();
                for item in files.range((name.as_str(), "")..)? {
                    let (k, v) = item?;
                    let (root_name, rel) = k.value();
                    if root_name != name {
                        break;
                    }
                    let record: FileRecord = decode(v.value())?;
                    doomed.push((rel.to_string(), record.id, record.info.kind));
                }
                for (rel, id, kind) in doomed {
                    files.remove((name.as_str(), rel.as_str()))?;
                    delete_kind_rows(&txn, kind, id)?;
                }
                roots.remove(name.as_str())?;
                meta.remove(scan_key(name).as_str())?;
                let mut skipped = txn.open_table(skipped::SKIPPED)?;
                let doomed: Vec<String> = skipped
                    .range((name.as_str(), "")..)?
                    .map_while(|item| {
                        let (k, _) = item.ok()?;
                        let (root_name, rel) = k.value();
                        (root_name == name).then(|| rel.to_string())
                    })
                    .collect();
                for rel in doomed {
                    skipped.remove((name.as_str(), rel.as_str()))?;
                }
            }
            for (name, dir) in &current {
                roots.insert(name.as_str(), dir.as_str())?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    fn load_mirror(&self) -> anyhow::Result<()> {
        let txn = self.db.begin_read()?;
        let files = txn.open_table(FILES)?;
        for (i, root) in self.roots.list().iter().enumerate() {
            for item in files.range((root.name.as_str(), "")..)? {
                let (k, v) = item?;
                let (name, rel) = k.value();
                if name != root.name {
                    break;
                }
                let record: FileRecord = decode(v.value())?;
                self.files.insert(i, rel, entry_of(&record));
            }
        }
        Ok(())
    }

    /// Applies a batch of changes in one transaction, then updates the mirror.
    pub fn apply(&self, changes: &[Change]) -> anyhow::Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let txn = self.db.begin_write()?;
        let mut applied: Vec<(usize, &str, Option<FileEntry>)> = Vec::with_capacity(changes.len());
        let mut text_changes = documents::TextChanges::default();
        let mut hdf5_changed = false;
        // (old file id, new entry) pairs for the symbol index, applied after commit.
        let mut symbol_changes: Vec<SymbolChange<'_>> = Vec::new();
        {
            let mut files = txn.open_table(FILES)?;
            let mut meta = txn.open_table(META)?;
            let mut next_id = meta
                .get(META_NEXT_FILE_ID)?
                .map(|v| u64::from_le_bytes(v.value().try_into().unwrap_or([0; 8])))
                .unwrap_or(1);
            for change in changes {
                match change {
                    Change::Upsert {
                        root_id,
                        rel,
                        file,
                        rows,
                    } => {
                        let key = (self.roots.list()[*root_id].name.as_str(), rel.as_str());
                        let old: Option<FileRecord> =
                            files.get(key)?.map(|v| decode(v.value())).transpose()?;
                        let id = match &old {
                            Some(old) => {
                                delete_kind_rows(&txn, old.info.kind, old.id)?;
                                old.id
                            }
                            None => {
                                next_id += 1;
                                next_id - 1
                            }
                        };
                        hdf5_changed |= file.kind == Kind::Hdf5
                            || old.as_ref().is_some_and(|o| o.info.kind == Kind::Hdf5);
                        let root_name = &self.roots.list()[*root_id].name;
                        text_changes.note_upsert(root_name, rel, id, old.as_ref(), file, rows);
                        symbol_changes.push((
                            old.as_ref().map(|o| o.id),
                            Some((id, *root_id, rel.as_str(), rows.as_slice())),
                        ));
                        for row in rows {
                            let mut table = txn.open_table(kind_table(row.table))?;
                            table.insert((id, row.key.as_slice()), row.value.as_slice())?;
                        }
                        let record = FileRecord {
                            id,
                            info: file.clone(),
                        };
                        files.insert(key, encode(&record).as_slice())?;
                        applied.push((*root_id, rel, Some(entry_of(&record))));
                    }
                    Change::Remove { root_id, rel } => {
                        let key = (self.roots.list()[*root_id].name.as_str(), rel.as_str());
                        let old = files.remove(key)?.map(|v| decode::<FileRecord>(v.value()));
                        if let Some(old) = old.transpose()? {
                            hdf5_changed |= old.info.kind == Kind::Hdf5;
                            delete_kind_rows(&txn, old.info.kind, old.id)?;
                            text_changes.note_removal(&old);
                            symbol_changes.push((Some(old.id), None));
                        }
                        applied.push((*root_id, rel, None));
                    }
                }
            }
            meta.insert(META_NEXT_FILE_ID, next_id.to_le_bytes().as_slice())?;
        }
        txn.commit()?;
        for (root_id, rel, entry) in applied {
            match entry {
                Some(e) => self.files.insert(root_id, rel, e),
                None => self.files.remove(root_id, rel),
            }
        }
        self.update_text(&text_changes);
        self.update_symbols(symbol_changes);
        if hdf5_changed {
            self.activity.note_hdf5_change();
        }
        Ok(())
    }

    fn update_symbols(&self, changes: Vec<SymbolChange<'_>>) {
        for (old, new) in changes {
            if let Some(old) = old {
                self.symbols.remove(old);
                self.relations.remove(old);
            }
            if let Some((id, root_id, rel, rows)) = new
                && let Some((file, refs)) = code::code_file_of(rows)
            {
                self.relations.insert(code::FileRelations::new(
                    id,
                    root_id,
                    rel.to_string(),
                    &file,
                    refs,
                ));
                self.symbols.insert(id, root_id, rel, file);
            }
        }
    }

    /// Every row of a kind table, decoded, with its file id.
    pub(crate) fn all_kind_rows<T: serde::de::DeserializeOwned>(
        &self,
        table: &'static str,
    ) -> anyhow::Result<Vec<(u64, T)>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(kind_table(table)) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for item in table.iter()? {
            let (k, v) = item?;
            out.push((k.value().0, decode(v.value())?));
        }
        Ok(out)
    }

    /// The full record of one file, read from the database.
    pub fn record(&self, root_id: RootId, rel: &str) -> anyhow::Result<Option<FileRecord>> {
        Ok(self.file_snapshot(root_id, rel)?.map(|s| s.record))
    }

    /// A file's rows in a kind table whose sub-keys start with `prefix`, in key
    /// order, decoded.
    pub fn kind_rows<T: serde::de::DeserializeOwned>(
        &self,
        table: &'static str,
        file_id: u64,
        prefix: &[u8],
    ) -> anyhow::Result<Vec<T>> {
        rows_in(&self.db.begin_read()?, table, file_id, prefix)
    }

    /// A file's record, with its rows read from the same transaction
    /// (`FileSnapshot::rows`): a re-index committing meanwhile is seen whole
    /// or not at all. None when the catalog has no record of the file.
    pub fn file_snapshot(
        &self,
        root_id: RootId,
        rel: &str,
    ) -> anyhow::Result<Option<FileSnapshot>> {
        let txn = self.db.begin_read()?;
        let record: Option<FileRecord> = {
            let files = txn.open_table(FILES)?;
            let key = (self.roots.list()[root_id].name.as_str(), rel);
            files.get(key)?.map(|v| decode(v.value())).transpose()?
        };
        Ok(record.map(|record| FileSnapshot { txn, record }))
    }

    /// A file's rows in a kind table whose sub-keys start with `prefix`, when the
    /// catalog's record of the file has `fingerprint` (the identity of the
    /// version the caller has open); `None` when it has another, or none. The
    /// record and the rows are read in one transaction, so the rows belong to
    /// that version even while the file is being re-indexed.
    pub fn rows_of_version<T: serde::de::DeserializeOwned>(
        &self,
        table: &'static str,
        (root_id, rel): (RootId, &str),
        fingerprint: u64,
        prefix: &[u8],
    ) -> anyhow::Result<Option<Vec<T>>> {
        self.file_snapshot(root_id, rel)?
            .filter(|s| s.record.info.fingerprint == fingerprint)
            .map(|s| s.rows(table, prefix))
            .transpose()
    }

    /// A file's row in a kind table under exactly `key`, decoded.
    pub fn kind_row<T: serde::de::DeserializeOwned>(
        &self,
        table: &'static str,
        file_id: u64,
        key: &[u8],
    ) -> anyhow::Result<Option<T>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(kind_table(table)) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        table
            .get((file_id, key))?
            .map(|v| decode(v.value()))
            .transpose()
    }

    /// Whether a ROOT file already has cached branch statistics.
    pub fn has_stats(&self, root_id: RootId, rel: &str) -> bool {
        let Ok(Some(record)) = self.record(root_id, rel) else {
            return false;
        };
        self.kind_rows::<root::StatsRow>(root::ROOT_STATS, record.id, b"")
            .is_ok_and(|rows| !rows.is_empty())
    }

    /// The failed files of a root with their errors, at most `limit` of them.
    pub fn failures(
        &self,
        root_id: RootId,
        limit: usize,
    ) -> anyhow::Result<Vec<(String, Kind, String)>> {
        let mut out = Vec::new();
        for rel in self.files.failed(root_id).into_iter().take(limit) {
            if let Some(r) = self.record(root_id, &rel)?
                && let FileStatus::Failed(msg) = r.info.status
            {
                out.push((rel, r.info.kind, msg));
            }
        }
        Ok(out)
    }

    /// The files of a root whose background statistics failed, for the version
    /// the catalog holds now (a file changed since has its turn again), at most
    /// `limit` of them in path order as (path, reason), with their total.
    pub fn stats_failures(&self, root_id: RootId, limit: usize) -> (u64, Vec<(String, String)>) {
        let (kept, beyond) = self.activity.stats_failures(root_id);
        let current: Vec<(String, String)> = kept
            .into_iter()
            .filter(|(rel, fp, _)| {
                self.files
                    .get(root_id, rel)
                    .is_some_and(|e| e.fingerprint == *fp)
            })
            .map(|(rel, _, why)| (rel, why))
            .collect();
        let total = current.len() as u64 + beyond;
        (total, current.into_iter().take(limit).collect())
    }

    /// Adds rows to an indexed file's kind tables (results computed after
    /// indexing, such as statistics), in one transaction. Nothing is written, and
    /// `false` returned, when the file has changed since `fingerprint` was seen:
    /// its rows would describe a version that is gone.
    pub fn add_rows(
        &self,
        root_id: RootId,
        rel: &str,
        fingerprint: u64,
        rows: &[KindRow],
    ) -> anyhow::Result<bool> {
        let txn = self.db.begin_write()?;
        {
            let files = txn.open_table(FILES)?;
            let key = (self.roots.list()[root_id].name.as_str(), rel);
            let record: Option<FileRecord> =
                files.get(key)?.map(|v| decode(v.value())).transpose()?;
            let Some(record) = record.filter(|r| r.info.fingerprint == fingerprint) else {
                return Ok(false);
            };
            for row in rows {
                let mut table = txn.open_table(kind_table(row.table))?;
                table.insert((record.id, row.key.as_slice()), row.value.as_slice())?;
            }
        }
        txn.commit()?;
        Ok(true)
    }

    pub fn set_scan_completed(&self, root_id: RootId, at_ms: i64) -> anyhow::Result<()> {
        let txn = self.db.begin_write()?;
        {
            let mut meta = txn.open_table(META)?;
            let key = scan_key(&self.roots.list()[root_id].name);
            meta.insert(key.as_str(), at_ms.to_le_bytes().as_slice())?;
        }
        txn.commit()?;
        Ok(())
    }

    /// When the last full scan of a root finished (ms since the epoch).
    pub fn scan_completed(&self, root_id: RootId) -> anyhow::Result<Option<i64>> {
        let txn = self.db.begin_read()?;
        let meta = txn.open_table(META)?;
        let key = scan_key(&self.roots.list()[root_id].name);
        Ok(meta
            .get(key.as_str())?
            .and_then(|v| v.value().try_into().ok().map(i64::from_le_bytes)))
    }
}

/// One file's record and rows as one transaction saw them
/// (`Catalog::file_snapshot`). Held for the length of a catalog tool's answer,
/// never across a long read (a read transaction keeps the pages it sees).
pub struct FileSnapshot {
    txn: redb::ReadTransaction,
    pub record: FileRecord,
}

impl FileSnapshot {
    /// The file's rows in a kind table whose sub-keys start with `prefix`.
    pub fn rows<T: serde::de::DeserializeOwned>(
        &self,
        table: &'static str,
        prefix: &[u8],
    ) -> anyhow::Result<Vec<T>> {
        rows_in(&self.txn, table, self.record.id, prefix)
    }
}

/// A file's rows in a kind table whose sub-keys start with `prefix`, in key
/// order, decoded, as `txn` sees them.
fn rows_in<T: serde::de::DeserializeOwned>(
    txn: &redb::ReadTransaction,
    table: &'static str,
    file_id: u64,
    prefix: &[u8],
) -> anyhow::Result<Vec<T>> {
    let table = match txn.open_table(kind_table(table)) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for item in table.range((file_id, prefix)..)? {
        let (k, v) = item?;
        let (id, sub) = k.value();
        if id != file_id || !sub.starts_with(prefix) {
            break;
        }
        out.push(decode(v.value())?);
    }
    Ok(out)
}

fn open_db(path: &Path) -> Result<Database, OpenError> {
    // A small page cache: the hot data (the file list) lives in the mirror.
    match Database::builder().set_cache_size(4 << 20).create(path) {
        Ok(db) => Ok(db),
        Err(DatabaseError::DatabaseAlreadyOpen) => Err(OpenError::Locked),
        Err(e) if is_corrupt(&e) => Err(OpenError::Corrupt(anyhow::Error::new(e))),
        Err(e) => Err(OpenError::Failed(
            anyhow::Error::new(e).context(format!("cannot open catalog {}", path.display())),
        )),
    }
}

/// Whether redb says the file is not a catalog it can read (damaged, foreign, or
/// an old format), as opposed to an error reaching it (permissions, I/O).
fn is_corrupt(e: &DatabaseError) -> bool {
    match e {
        DatabaseError::Storage(redb::StorageError::Corrupted(_))
        | DatabaseError::UpgradeRequired(_) => true,
        DatabaseError::Storage(redb::StorageError::Io(io)) => {
            io.kind() == std::io::ErrorKind::InvalidData
        }
        _ => false,
    }
}

fn stored_version(db: &Database) -> anyhow::Result<Option<u32>> {
    let txn = db.begin_read()?;
    let meta = match txn.open_table(META) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(meta
        .get(META_SCHEMA_VERSION)?
        .and_then(|v| v.value().try_into().ok().map(u32::from_le_bytes)))
}

fn stored_roots(db: &Database) -> anyhow::Result<Vec<(String, String)>> {
    let txn = db.begin_read()?;
    let roots = match txn.open_table(ROOTS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for item in roots.iter()? {
        let (k, v) = item?;
        out.push((k.value().to_string(), v.value().to_string()));
    }
    Ok(out)
}

/// A file's change as the symbol index sees it: the id it had, and its new id,
/// root, path and rows.
type SymbolChange<'a> = (Option<u64>, Option<(u64, usize, &'a str, &'a [KindRow])>);

fn delete_kind_rows(txn: &redb::WriteTransaction, kind: Kind, id: u64) -> anyhow::Result<()> {
    for t in kind_tables(kind) {
        let mut table = txn.open_table(kind_table(t.name))?;
        let empty: &[u8] = &[];
        table.retain_in((id, empty)..(id + 1, empty), |_, _| false)?;
    }
    Ok(())
}

fn entry_of(r: &FileRecord) -> FileEntry {
    FileEntry {
        id: r.id,
        kind: r.info.kind,
        size: r.info.size,
        mtime_ns: r.info.mtime_ns,
        fingerprint: r.info.fingerprint,
        failed: r.info.status.is_failed(),
    }
}

#[cfg(test)]
mod stored_encoding_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn upsert(root_id: RootId, rel: &str) -> Change {
        Change::Upsert {
            root_id,
            rel: rel.into(),
            file: FileInfo {
                kind: Kind::Document,
                size: 3,
                mtime_ns: 0,
                fingerprint: 1,
                status: FileStatus::Ok,
                indexed_at_ms: 0,
            },
            rows: Vec::new(),
        }
    }

    struct Dirs {
        _tmp: tempfile::TempDir,
        a: PathBuf,
        b: PathBuf,
        catalog: PathBuf,
    }

    fn dirs() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        Dirs {
            catalog: tmp.path().join("catalog"),
            _tmp: tmp,
            a,
            b,
        }
    }

    fn roots(specs: &[(&str, &Path)]) -> Roots {
        Roots::new(
            specs
                .iter()
                .map(|(n, d)| (n.to_string(), d.to_path_buf()))
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn a_snapshot_sees_one_version_of_a_file_while_it_is_indexed_again() {
        let d = dirs();
        let cat = Catalog::open(&d.catalog, &roots(&[("data", &d.a)])).unwrap();
        let version = |size: u64, trees: &[&str]| Change::Upsert {
            root_id: 0,
            rel: "f.root".into(),
            file: FileInfo {
                kind: Kind::Root,
                size,
                mtime_ns: 0,
                fingerprint: size,
                status: FileStatus::Ok,
                indexed_at_ms: 0,
            },
            rows: trees
                .iter()
                .map(|t| KindRow {
                    table: root::ROOT_TREES,
                    key: t.as_bytes().to_vec(),
                    value: encode(&t.to_string()),
                })
                .collect(),
        };
        cat.apply(&[version(10, &["old"])]).unwrap();
        let before = cat.file_snapshot(0, "f.root").unwrap().unwrap();
        cat.apply(&[version(20, &["new_a", "new_b"])]).unwrap();
        // Read after the re-index committed: still the version it began with.
        assert_eq!(before.record.info.size, 10);
        let rows: Vec<String> = before.rows(root::ROOT_TREES, b"").unwrap();
        assert_eq!(rows, ["old"]);
        let after = cat.file_snapshot(0, "f.root").unwrap().unwrap();
        assert_eq!(after.record.info.size, 20);
        let rows: Vec<String> = after.rows(root::ROOT_TREES, b"").unwrap();
        assert_eq!(rows, ["new_a", "new_b"]);
        assert!(cat.file_snapshot(0, "absent.root").unwrap().is_none());
    }

    #[test]
    fn entries_survive_a_reopen_and_follow_their_root() {
        let d = dirs();
        let cat = Catalog::open(&d.catalog, &roots(&[("data", &d.a)])).unwrap();
        cat.apply(&[upsert(0, "x.md"), upsert(0, "sub/y.md")])
            .unwrap();
        drop(cat);
        let cat = Catalog::open(&d.catalog, &roots(&[("data", &d.a), ("more", &d.b)])).unwrap();
        assert_eq!(cat.files().under(0, "").len(), 2);
        let first_id = cat.record(0, "x.md").unwrap().unwrap().id;
        cat.apply(&[upsert(1, "z.md")]).unwrap();
        assert_ne!(cat.record(1, "z.md").unwrap().unwrap().id, first_id);
        drop(cat);
        // Root `data` now points at another folder: its old entries are dropped,
        // the other root keeps its own.
        let cat = Catalog::open(&d.catalog, &roots(&[("data", &d.b), ("more", &d.b)])).unwrap();
        assert!(cat.files().under(0, "").is_empty());
        assert_eq!(cat.files().under(1, "").len(), 1);
        assert_eq!(cat.record(0, "x.md").unwrap(), None);
    }

    #[test]
    fn another_schema_version_empties_the_catalog() {
        let d = dirs();
        let r = roots(&[("data", &d.a)]);
        let cat = Catalog::open(&d.catalog, &r).unwrap();
        cat.apply(&[upsert(0, "x.md")]).unwrap();
        let txn = cat.db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert(META_SCHEMA_VERSION, 999u32.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
        drop(cat);
        let err = Catalog::open_existing(&d.catalog).err().unwrap();
        assert!(err.to_string().contains("schema version"), "{err}");
        let cat = Catalog::open(&d.catalog, &r).unwrap();
        assert!(cat.files().under(0, "").is_empty());
        assert_eq!(stored_version(&cat.db).unwrap(), Some(SCHEMA_VERSION));
    }

    #[test]
    fn a_corrupt_catalog_file_is_replaced_and_a_locked_one_reported() {
        let d = dirs();
        let r = roots(&[("data", &d.a)]);
        create_private_dir(&d.catalog).unwrap();
        std::fs::write(db_path(&d.catalog), vec![0xA5u8; 8192]).unwrap();
        let cat = Catalog::open(&d.catalog, &r).unwrap();
        assert!(cat.files().under(0, "").is_empty());
        assert!(matches!(
            Catalog::open(&d.catalog, &r),
            Err(OpenError::Locked)
        ));
    }
}
