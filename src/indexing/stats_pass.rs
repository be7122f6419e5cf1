//! The eager statistics pass: a background thread that computes the branch
//! statistics of each ROOT file the indexer hands it, one file at a time, and
//! stores them under the identity of the version it read.
//!
//! One file's failure is that file's alone: a panic in the reader is caught,
//! the file and the reason go to `index_status` (through `Activity`) and to the
//! log, and the pass goes on with the next file. Without this guard one panic
//! would end statistics, and the cluster skipping that needs them, for the life
//! of the daemon, silently.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc::Receiver;

use crate::catalog::{Catalog, KindRow, fingerprint};
use crate::formats::FormatError;
use crate::panics::panic_message;
use crate::roots::RootId;
use crate::roots::{OpenError, open_beneath};
use crate::transient::is_transient;

/// A file queued for statistics: root id, path, and the fingerprint the
/// indexer recorded for it.
pub(super) type Queued = (RootId, String, u64);

/// What computing one file's statistics came to.
enum Outcome {
    /// Rows of the version with this fingerprint.
    Rows(u64, Vec<KindRow>),
    /// The file is gone or has changed since it was queued: the indexer re-queues
    /// it when it has indexed the new version.
    Moved,
    /// The system's passing shortage (descriptors, memory): not the file's fault.
    Transient(String),
    /// The file's own fault, for the version with this fingerprint.
    Failed(u64, String),
}

/// Runs the pass over `queue` until every sender is gone.
pub(super) fn run(catalog: Arc<Catalog>, queue: Receiver<Queued>) {
    for (root_id, rel, queued) in queue {
        if catalog.has_stats(root_id, &rel) {
            continue;
        }
        let name = &catalog.roots().list()[root_id].name;
        match guarded(&catalog, root_id, &rel, queued) {
            Outcome::Rows(version, rows) => match catalog.add_rows(root_id, &rel, version, &rows) {
                Ok(_) => catalog.activity().clear_stats_failure(root_id, &rel),
                Err(e) => tracing::warn!("storing statistics of {name}/{rel}: {e:#}"),
            },
            Outcome::Moved => tracing::debug!("{name}/{rel} changed before its statistics"),
            Outcome::Transient(why) => {
                tracing::warn!("no statistics for {name}/{rel} this time: {why}")
            }
            Outcome::Failed(version, why) => {
                tracing::warn!("statistics of {name}/{rel} failed: {why}");
                catalog
                    .activity()
                    .note_stats_failure(root_id, &rel, version, &why);
            }
        }
    }
}

/// `compute`, with a panic turned into the file's failure.
fn guarded(catalog: &Catalog, root_id: RootId, rel: &str, queued: u64) -> Outcome {
    catch_unwind(AssertUnwindSafe(|| compute(catalog, root_id, rel, queued))).unwrap_or_else(
        |panic| {
            Outcome::Failed(
                queued,
                format!("the statistics panicked: {}", panic_message(panic.as_ref())),
            )
        },
    )
}

/// Opens the file beneath its root and computes its statistics, if it is still
/// the version queued (the descriptor's identity says which version is read).
fn compute(catalog: &Catalog, root_id: RootId, rel: &str, queued: u64) -> Outcome {
    let base = &catalog.roots().list()[root_id].canonical;
    let file = match open_beneath(base, rel) {
        Ok(f) => f,
        // The path no longer names the file indexed (gone, or replaced by a
        // folder or a link leading out): the indexer's next look settles it.
        Err(OpenError::NotFound | OpenError::NotAFile | OpenError::Escapes) => {
            return Outcome::Moved;
        }
        Err(OpenError::Io(e)) if is_transient(&e) => return Outcome::Transient(e.to_string()),
        Err(e) => return Outcome::Failed(queued, e.to_string()),
    };
    let version = match file.metadata() {
        Ok(meta) => fingerprint(&meta),
        Err(e) => return Outcome::Transient(e.to_string()),
    };
    if version != queued {
        return Outcome::Moved;
    }
    injected_fault(rel);
    match super::root::file_stats_rows(file) {
        Ok(rows) => Outcome::Rows(version, rows),
        Err(FormatError::Transient(why)) => Outcome::Transient(why),
        Err(e) => Outcome::Failed(version, e.to_string()),
    }
}

/// A panic for tests, in debug builds only: the statistics of a file whose
/// path ends with `QUARRY_TEST_STATS_PANIC` panic, as a reader bug would.
/// Release builds have no such hook.
fn injected_fault(rel: &str) {
    #[cfg(debug_assertions)]
    if let Ok(suffix) = std::env::var("QUARRY_TEST_STATS_PANIC")
        && !suffix.is_empty()
        && rel.ends_with(&suffix)
    {
        panic!("injected for a test (QUARRY_TEST_STATS_PANIC)");
    }
    #[cfg(not(debug_assertions))]
    let _ = rel;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::indexing::{IndexOptions, Indexer, Quiet, StatsMode};
    use crate::roots::Roots;

    fn test_file(name: &str) -> Vec<u8> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/root");
        std::fs::read(dir.join(name)).unwrap()
    }

    /// A file rewritten in place after it was queued (same size, inode and
    /// modification time: tests/data/root/rewrite_*.root, from
    /// scripts/fixtures/root_rewrite.py) gets no statistics stored against
    /// the version indexed: they would describe other bytes. The version on
    /// disk gets its turn once indexed.
    #[test]
    fn a_file_rewritten_after_it_was_queued_gets_no_statistics_for_the_old_version() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let path = data.join("f.root");
        std::fs::write(&path, test_file("rewrite_a.root")).unwrap();
        let roots = Roots::new(vec![("data".into(), data.clone())]).unwrap();
        let catalog = Arc::new(Catalog::open(&tmp.path().join("catalog"), &roots).unwrap());
        let options = IndexOptions {
            threads: 1,
            batch: 10,
            excluded_dirs: Vec::new(),
            stats: StatsMode::Lazy,
        };
        let indexer = Indexer::new(catalog.clone(), options).unwrap();
        indexer.scan_all(&Quiet).unwrap();
        let indexed = catalog
            .record(0, "f.root")
            .unwrap()
            .unwrap()
            .info
            .fingerprint;

        // The rewrite: the other version's bytes, the modification time put back.
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.write_all(&test_file("rewrite_b.root")).unwrap();
            f.set_modified(mtime).unwrap();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send((0, "f.root".to_string(), indexed)).unwrap();
        drop(tx);
        run(catalog.clone(), rx);
        assert!(!catalog.has_stats(0, "f.root"));
        assert!(catalog.activity().stats_failures(0).0.is_empty());

        // Indexed again, the new version is queued with its own identity.
        indexer.scan_all(&Quiet).unwrap();
        let now = catalog
            .record(0, "f.root")
            .unwrap()
            .unwrap()
            .info
            .fingerprint;
        assert_ne!(now, indexed);
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send((0, "f.root".to_string(), now)).unwrap();
        drop(tx);
        run(catalog.clone(), rx);
        assert!(catalog.has_stats(0, "f.root"));
    }
}
