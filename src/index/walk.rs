//! Finding the files of a root (or of a folder inside it) and what they look like
//! now: kind, size, modification time and fingerprint.

use std::fs::{self, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crate::formats::{self, Kind};
use crate::roots::{OpenError, Root, open_beneath, rel_string};

/// A file as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub rel: String,
    pub kind: Kind,
    pub size: u64,
    pub mtime_ns: i64,
    pub fingerprint: u64,
}

/// Which paths of a root the index never looks at: hidden names (dot files, editor
/// swap files, `.git`) and quarry's own folders when they sit inside a root.
#[derive(Debug, Clone, Default)]
pub struct Exclusions {
    dirs: Vec<PathBuf>,
}

impl Exclusions {
    /// Folders are compared in canonical form (they exist by the time an indexer runs).
    pub fn new(dirs: Vec<PathBuf>) -> Exclusions {
        let dirs = dirs
            .into_iter()
            .map(|d| d.canonicalize().unwrap_or(d))
            .collect();
        Exclusions { dirs }
    }

    pub fn excludes_rel(&self, rel: &str) -> bool {
        rel.split('/').any(|c| c.starts_with('.'))
    }

    pub fn excludes_abs(&self, abs: &Path) -> bool {
        self.dirs.iter().any(|d| abs.starts_with(d))
    }
}

/// The fingerprint that decides whether a file must be re-extracted: size,
/// modification time and identity (a write-then-rename save gives a new inode).
/// A fixed mixing function rather than `DefaultHasher`, whose output may change
/// between Rust releases: the value is persisted.
pub fn fingerprint(meta: &Metadata) -> u64 {
    let fields = [
        meta.len(),
        meta.mtime() as u64,
        meta.mtime_nsec() as u64,
        meta.ino(),
        meta.dev(),
    ];
    fields.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &v| {
        let h = (h ^ v).wrapping_mul(0x0000_0100_0000_01b3);
        h ^ (h >> 29)
    })
}

fn mtime_ns(meta: &Metadata) -> i64 {
    meta.mtime()
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.mtime_nsec())
}

/// Looks at one path: `None` when it is not a file quarry indexes (a folder, a link
/// leaving the root, an unknown kind, gone).
pub fn observe(root: &Root, abs: &Path, rel: &str, ex: &Exclusions) -> Option<Observed> {
    if ex.excludes_rel(rel) || ex.excludes_abs(abs) {
        return None;
    }
    let mut meta = fs::symlink_metadata(abs).ok()?;
    if meta.file_type().is_symlink() {
        let real = abs.canonicalize().ok()?;
        if !real.starts_with(&root.canonical) || ex.excludes_abs(&real) {
            return None;
        }
        meta = fs::metadata(&real).ok()?;
    }
    if !meta.is_file() {
        return None;
    }
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let kind = formats::detect(name, || {
        open_beneath(&root.canonical, rel).map_err(|e| match e {
            OpenError::Io(e) => e,
            other => std::io::Error::other(other.to_string()),
        })
    })
    .ok()??;
    Some(Observed {
        rel: rel.to_string(),
        kind,
        size: meta.len(),
        mtime_ns: mtime_ns(&meta),
        fingerprint: fingerprint(&meta),
    })
}

/// Everything quarry indexes at `rel` inside `root`: the file itself, or every file
/// below the folder (walked in parallel, links to folders not followed).
pub fn observe_tree(root: &Root, rel: &str, ex: &Exclusions, threads: usize) -> Vec<Observed> {
    let abs = if rel.is_empty() {
        root.canonical.clone()
    } else {
        root.canonical.join(rel)
    };
    if ex.excludes_rel(rel) || ex.excludes_abs(&abs) {
        return Vec::new();
    }
    match fs::symlink_metadata(&abs) {
        Err(_) => Vec::new(),
        Ok(m) if m.is_dir() => walk_folder(root, &abs, ex, threads),
        Ok(_) => observe(root, &abs, rel, ex).into_iter().collect(),
    }
}

fn walk_folder(root: &Root, folder: &Path, ex: &Exclusions, threads: usize) -> Vec<Observed> {
    let (tx, rx) = mpsc::channel();
    let skip = ex.clone();
    ignore::WalkBuilder::new(folder)
        .standard_filters(false)
        .hidden(true)
        .follow_links(false)
        .threads(threads.max(1))
        .filter_entry(move |e| !skip.excludes_abs(e.path()))
        .build_parallel()
        .run(|| {
            let tx = tx.clone();
            Box::new(move |entry| {
                let Ok(entry) = entry else {
                    return ignore::WalkState::Continue;
                };
                if entry.file_type().is_some_and(|t| t.is_dir()) {
                    return ignore::WalkState::Continue;
                }
                let path = entry.path();
                let rel = path.strip_prefix(&root.canonical).ok().and_then(rel_string);
                if let Some(o) = rel.and_then(|rel| observe(root, path, &rel, ex)) {
                    let _ = tx.send(o);
                }
                ignore::WalkState::Continue
            })
        });
    drop(tx);
    rx.into_iter().collect()
}
