//! Finding the files of a root (or of a folder inside it) and what they look like
//! now: kind, size, modification time and fingerprint.

use std::fs::{self, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crate::catalog::fingerprint;
use crate::formats::{self, Kind};
use crate::roots::{
    DataRoot, MAX_COMPONENT_BYTES, MAX_PATH_BYTES, OpenError, open_beneath, rel_string,
};

/// A file as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub rel: String,
    pub kind: Kind,
    pub size: u64,
    pub mtime_ns: i64,
    pub fingerprint: u64,
}

/// A path the walk found but cannot index, with the reason (shown by
/// `index_status` and `quarry status`, so that nothing is left out silently).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Relative to the root; bytes that are not UTF-8 shown as `\xNN`.
    pub rel: String,
    pub reason: String,
}

/// What a walk found: the files to index and the paths it had to skip.
#[derive(Debug, Default)]
pub struct Found {
    pub files: Vec<Observed>,
    pub skipped: Vec<Skipped>,
    /// A remote root that could not be listed: nothing is known, so nothing
    /// may be taken for gone.
    pub unlisted: Option<String>,
}

/// Which paths of a root the indexer never looks at: hidden names (dot files, editor
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

fn mtime_ns(meta: &Metadata) -> i64 {
    meta.mtime()
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.mtime_nsec())
}

/// Looks at one path: `None` when it is not a file quarry indexes (a folder, a link
/// leaving the root, an unknown kind, gone).
pub fn observe(root: &DataRoot, abs: &Path, rel: &str, ex: &Exclusions) -> Option<Observed> {
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
///
/// `rel` may come from the watcher, which reports paths by name: a path whose
/// folders pass through a link (`link/secret.md`, with `link` leading out of the
/// root) names nothing here, just as the walk never descends into linked folders.
pub fn observe_tree(root: &DataRoot, rel: &str, ex: &Exclusions, threads: usize) -> Found {
    if let Some(remote) = &root.remote {
        return observe_remote(remote, rel, ex);
    }
    let abs = if rel.is_empty() {
        root.canonical.clone()
    } else {
        root.canonical.join(rel)
    };
    if ex.excludes_rel(rel) || ex.excludes_abs(&abs) || !folders_are_real(root, rel) {
        return Found::default();
    }
    match fs::symlink_metadata(&abs) {
        Err(_) => Found::default(),
        Ok(m) if m.is_dir() => walk_folder(root, &abs, ex, threads),
        Ok(_) => Found {
            files: observe(root, &abs, rel, ex).into_iter().collect(),
            ..Found::default()
        },
    }
}

/// Whether every folder on the way from the root to `rel` is a real folder (no
/// link among them): its canonical form is itself.
fn folders_are_real(root: &DataRoot, rel: &str) -> bool {
    let Some((parent, _)) = rel.rsplit_once('/') else {
        return true;
    };
    let dir = root.canonical.join(parent);
    dir.canonicalize().is_ok_and(|real| real == dir)
}

fn walk_folder(root: &DataRoot, folder: &Path, ex: &Exclusions, threads: usize) -> Found {
    let (tx, rx) = mpsc::channel();
    let (skip_tx, skip_rx) = mpsc::channel();
    let skip = ex.clone();
    ignore::WalkBuilder::new(folder)
        .standard_filters(false)
        .hidden(true)
        .follow_links(false)
        .threads(threads.max(1))
        .filter_entry(move |e| !skip.excludes_abs(e.path()))
        .build_parallel()
        .run(|| {
            let (tx, skip_tx) = (tx.clone(), skip_tx.clone());
            Box::new(move |entry| {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(e) => {
                        if let Some(s) = skipped_by_error(root, &e) {
                            let _ = skip_tx.send(s);
                        }
                        return ignore::WalkState::Continue;
                    }
                };
                let path = entry.path();
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                let rel = match addressable_rel(root, path) {
                    Ok(rel) => rel,
                    Err(skipped) => {
                        // A folder that cannot be named cannot be entered either.
                        let _ = skip_tx.send(skipped);
                        return if is_dir {
                            ignore::WalkState::Skip
                        } else {
                            ignore::WalkState::Continue
                        };
                    }
                };
                if !is_dir && let Some(o) = observe(root, path, &rel, ex) {
                    let _ = tx.send(o);
                }
                ignore::WalkState::Continue
            })
        });
    drop((tx, skip_tx));
    Found {
        files: rx.into_iter().collect(),
        skipped: skip_rx.into_iter().collect(),
        unlisted: None,
    }
}

/// A remote root's files at or below `rel`, from its storage's listing, left
/// out by the same rules as a local walk (hidden names); kinds by extension
/// only (sniffing would cost a request per file).
fn observe_remote(remote: &crate::remote::RemoteRoot, rel: &str, ex: &Exclusions) -> Found {
    let listed = match remote.list(rel, &|path| ex.excludes_rel(path)) {
        Ok(listed) => listed,
        Err(e) => {
            tracing::warn!("{}: listing failed: {e}", remote.url.file_url(rel));
            return Found {
                unlisted: Some(e.to_string()),
                ..Found::default()
            };
        }
    };
    let mut found = Found::default();
    for (rel, meta) in listed {
        if rel.len() > MAX_PATH_BYTES || rel.split('/').any(|c| c.len() > MAX_COMPONENT_BYTES) {
            found.skipped.push(Skipped {
                rel,
                reason: format!(
                    "the path is longer than tools accept ({MAX_PATH_BYTES} bytes, {MAX_COMPONENT_BYTES} per name)"
                ),
            });
            continue;
        }
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        let Some(kind) = formats::kind_from_name(name) else {
            continue;
        };
        found.files.push(Observed {
            kind,
            size: meta.size,
            mtime_ns: meta.mtime_ns,
            fingerprint: remote.fingerprint(&meta),
            rel,
        });
    }
    found
}

/// The root-relative name tools would use for `path`, or why it has none: a name
/// that is not UTF-8 cannot be written in a tool's JSON arguments, and a path over
/// the tool path limit would be refused by every tool.
fn addressable_rel(root: &DataRoot, path: &Path) -> Result<String, Skipped> {
    let rest = path.strip_prefix(&root.canonical).unwrap_or(path);
    let Some(rel) = rel_string(rest) else {
        return Err(Skipped {
            rel: escaped(rest),
            reason: "the name is not valid UTF-8, so no tool can name it; rename it to index it"
                .into(),
        });
    };
    if rel.len() > MAX_PATH_BYTES || rel.split('/').any(|c| c.len() > MAX_COMPONENT_BYTES) {
        return Err(Skipped {
            rel,
            reason: format!(
                "the path is longer than tools accept ({MAX_PATH_BYTES} bytes, {MAX_COMPONENT_BYTES} per name)"
            ),
        });
    }
    Ok(rel)
}

/// A walk error as a skipped path: a folder that cannot be read (its files are not
/// indexed), a path the system cannot resolve.
fn skipped_by_error(root: &DataRoot, e: &ignore::Error) -> Option<Skipped> {
    let (path, why) = error_path(e)?;
    let rest = path.strip_prefix(&root.canonical).unwrap_or(path);
    Some(Skipped {
        rel: escaped(rest),
        reason: format!("cannot be read ({why}); nothing below it is indexed"),
    })
}

fn error_path(e: &ignore::Error) -> Option<(&Path, String)> {
    match e {
        ignore::Error::WithPath { path, err } => Some((path.as_path(), err.to_string())),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Loop { child, .. } => Some((child.as_path(), "a folder loop".into())),
        _ => None,
    }
}

/// A relative path for display: UTF-8 as it is, other bytes as `\xNN`.
pub fn escaped(rel: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for chunk in rel.as_os_str().as_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}
