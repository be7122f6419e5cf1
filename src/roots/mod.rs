//! Data roots and the path rules of DESIGN.md, in one place.
//!
//! A tool path is either absolute (inside a configured root) or relative to a root:
//! the only root when there is one, else `NAME/...` or the `resource` argument.
//! Anything that could leave a root is refused before the file system is touched:
//! `..` components, NUL bytes, absurd lengths, absolute paths elsewhere; and after
//! resolution, symlinks whose target lies outside the root.

mod create;
mod open;

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::remote::{RemoteFile, RemoteRoot, RootUrl, looks_like_url};

pub use create::{CreateError, PendingFile, create_pending};
pub use open::{OpenError, create_beneath, open_beneath};

/// Longest tool path accepted, in bytes (Linux PATH_MAX).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest single path component accepted, in bytes (Linux NAME_MAX).
pub const MAX_COMPONENT_BYTES: usize = 255;

/// A data root's number: its position in `Roots::list()`. The catalog and its
/// in-memory indexes key files by (root id, relative path); the id is not stored
/// on disk (the catalog's tables name a data root by its name), so it only has to
/// hold for one process.
pub type RootId = usize;

/// A data root: a configured folder (or URL) whose files quarry indexes. Not a
/// ROOT file (`formats::root`), nor `Kind::Root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataRoot {
    pub name: String,
    /// The directory as configured (absolute, lexically normalised).
    pub dir: PathBuf,
    /// The directory with symlinks resolved; containment is judged against this.
    /// For a remote root, its URL (so `canonical.join(rel)` is a file's URL).
    pub canonical: PathBuf,
    /// Set for a root given by URL: its storage client (`remote`).
    pub remote: Option<Arc<RemoteRoot>>,
}

impl DataRoot {
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Index of the root in `Roots::list()`.
    pub root_id: RootId,
    /// Path relative to the root, `/`-separated, empty for the root itself.
    pub rel: String,
    /// Absolute path under the root's canonical directory.
    pub abs: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path contains a NUL byte")]
    NulByte,
    #[error(
        "the path is too long ({0} bytes; at most {MAX_PATH_BYTES}, {MAX_COMPONENT_BYTES} per component)"
    )]
    TooLong(usize),
    #[error("'..' is not allowed in a path: paths must stay inside a configured root")]
    Traversal,
    #[error("'{0}' is outside every configured root")]
    OutsideRoots(String),
    #[error("'{0}' is a symbolic link that leads outside its root")]
    SymlinkEscape(String),
    #[error("resource '{name}' is not configured")]
    UnknownResource {
        name: String,
        available: Vec<String>,
    },
    #[error(
        "relative path '{path}' is ambiguous with several roots: prefix it with a root name or pass `resource`"
    )]
    Ambiguous {
        path: String,
        available: Vec<String>,
    },
    #[error("'{0}' does not exist")]
    NotFound(String),
    #[error("'{path}' cannot be read: {why}")]
    Unreadable { path: String, why: String },
    /// A remote root's server did not answer (down, timing out, failing)
    /// after the retries: not the file's fault, worth trying again.
    #[error("'{path}' cannot be reached: {why}")]
    Unreachable { path: String, why: String },
}

#[derive(Debug, Clone, Default)]
pub struct Roots {
    roots: Vec<DataRoot>,
    /// A root quarry adds for itself (the ingest folder): it does not count when
    /// deciding whether relative paths need a root name, so adding it never changes
    /// how the user's own root's paths read.
    aside: Option<RootId>,
}

/// A root name: non-empty, no path separators, not `.` or `..`.
pub fn valid_root_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

impl Roots {
    /// Builds the root set from (name, directory) pairs; directories must exist.
    pub fn new(specs: Vec<(String, PathBuf)>) -> anyhow::Result<Roots> {
        Roots::with_remote(specs, &crate::remote::Settings::default())
    }

    /// `new`, where a directory may be a URL (`https://`, `s3://`, `root://`):
    /// a remote root reached with `settings`.
    pub fn with_remote(
        specs: Vec<(String, PathBuf)>,
        settings: &crate::remote::Settings,
    ) -> anyhow::Result<Roots> {
        let mut roots: Vec<DataRoot> = Vec::new();
        for (name, dir) in specs {
            anyhow::ensure!(valid_root_name(&name), "invalid root name '{name}'");
            anyhow::ensure!(
                !roots.iter().any(|r| r.name == name),
                "two roots are named '{name}': give one of them another name with --root NAME=DIR"
            );
            if let Some(url) = dir.to_str().filter(|d| looks_like_url(d)) {
                roots.push(remote_root(name, url, settings)?);
                continue;
            }
            let absolute = std::path::absolute(&dir)?;
            let canonical = absolute.canonicalize().map_err(|e| {
                anyhow::anyhow!("root '{name}' ({}) cannot be opened: {e}", dir.display())
            })?;
            anyhow::ensure!(
                canonical.is_dir(),
                "root '{name}' ({}) is not a directory",
                dir.display()
            );
            roots.push(DataRoot {
                name,
                dir: normalize_lexically(&absolute),
                canonical,
                remote: None,
            });
        }
        Ok(Roots { roots, aside: None })
    }

    /// Sets the root named `name` aside (see `aside`).
    pub fn set_aside(&mut self, name: &str) {
        self.aside = self.id_of(name);
    }

    /// The root relative paths belong to without a root name: the one root that is not
    /// set aside, when there is exactly one.
    pub fn sole(&self) -> Option<RootId> {
        let mut counted = (0..self.roots.len()).filter(|&i| Some(i) != self.aside);
        match (counted.next(), counted.next()) {
            (Some(i), None) => Some(i),
            _ => None,
        }
    }

    /// Roots as a catalog recorded them, unchecked: for reporting on a catalog,
    /// never for reading files.
    pub fn recorded(stored: Vec<(String, String)>) -> Roots {
        let roots = stored
            .into_iter()
            .map(|(name, dir)| DataRoot {
                name,
                dir: PathBuf::from(&dir),
                canonical: PathBuf::from(dir),
                remote: None,
            })
            .collect();
        Roots { roots, aside: None }
    }

    pub fn list(&self) -> &[DataRoot] {
        &self.roots
    }

    pub fn names(&self) -> Vec<String> {
        self.roots.iter().map(|r| r.name.clone()).collect()
    }

    /// The id of the root named `name`.
    pub fn id_of(&self, name: &str) -> Option<RootId> {
        self.roots.iter().position(|r| r.name == name)
    }

    /// Resolves a root named by a tool's `resource` argument.
    pub fn resource(&self, name: &str) -> Result<RootId, PathError> {
        self.id_of(name).ok_or_else(|| PathError::UnknownResource {
            name: name.to_string(),
            available: self.names(),
        })
    }

    /// Resolves a tool path per DESIGN.md; the target must exist.
    pub fn resolve(&self, path: &str, resource: Option<&str>) -> Result<Resolved, PathError> {
        let (root_id, rel) = self.resolve_lexically(path, resource)?;
        if self.roots[root_id].is_remote() {
            // Whether it exists is the catalog's to say (its last listing).
            let abs = self.roots[root_id].canonical.join(&rel);
            return Ok(Resolved { root_id, rel, abs });
        }
        let abs = if rel.is_empty() {
            self.roots[root_id].canonical.clone()
        } else {
            self.roots[root_id].canonical.join(&rel)
        };
        match abs.canonicalize() {
            Ok(real) if real.starts_with(&self.roots[root_id].canonical) => {
                Ok(Resolved { root_id, rel, abs })
            }
            Ok(_) => Err(PathError::SymlinkEscape(path.to_string())),
            Err(_) if abs.symlink_metadata().is_ok() => {
                // A dangling link: it exists as a name but leads nowhere readable.
                Err(PathError::SymlinkEscape(path.to_string()))
            }
            Err(_) => Err(PathError::NotFound(path.to_string())),
        }
    }

    /// Opens a root-relative file for reading, beneath its root (`open_beneath`):
    /// the only way a tool turns a path into an open file.
    /// A remote root's file is fetched whole into memory (never to disk).
    pub fn open(&self, root_id: RootId, rel: &str) -> Result<std::fs::File, PathError> {
        if let Some(opened) = self.open_remote(root_id, rel) {
            return opened?.to_memory_file().map_err(|e| unreadable(rel, &e));
        }
        open_beneath(&self.roots[root_id].canonical, rel).map_err(|e| match e {
            OpenError::Escapes => PathError::SymlinkEscape(rel.to_string()),
            OpenError::NotFound | OpenError::NotAFile => PathError::NotFound(rel.to_string()),
            OpenError::Io(e) => PathError::Unreadable {
                path: rel.to_string(),
                why: e.to_string(),
            },
        })
    }

    /// Opens a file the catalog knows at version `fingerprint`, as `open`
    /// does; a remote file the storage now holds at another version is
    /// noted changed (`open_remote_as_indexed`) and read as it is now.
    pub fn open_as_indexed(
        &self,
        root_id: RootId,
        rel: &str,
        fingerprint: u64,
    ) -> Result<std::fs::File, PathError> {
        match self.open_remote_as_indexed(root_id, rel, fingerprint) {
            Some(opened) => opened?.0.to_memory_file().map_err(|e| unreadable(rel, &e)),
            None => self.open(root_id, rel),
        }
    }

    /// Opens a remote root's file by ranges, with whether it is still the
    /// version `fingerprint` (the catalog's). Another version is noted
    /// changed, so that the index states it again at once rather than at
    /// the next scheduled listing. `None` for a local root.
    pub fn open_remote_as_indexed(
        &self,
        root_id: RootId,
        rel: &str,
        fingerprint: u64,
    ) -> Option<Result<(RemoteFile, bool), PathError>> {
        let opened = self.open_remote(root_id, rel)?;
        Some(opened.map(|file| {
            let current = file.fingerprint() == fingerprint;
            if let (false, Some(remote)) = (current, &self.roots[root_id].remote) {
                remote.note_changed(rel);
            }
            (file, current)
        }))
    }

    /// Opens a file of a remote root for reading by ranges; `None` for a
    /// local root.
    pub fn open_remote(&self, root_id: RootId, rel: &str) -> Option<Result<RemoteFile, PathError>> {
        let remote = self.roots[root_id].remote.as_ref()?;
        Some(remote.open(rel, None).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => PathError::NotFound(rel.to_string()),
            _ => unreadable(rel, &e),
        }))
    }

    /// The root and relative path a tool path names, judged on its text alone.
    pub fn resolve_lexically(
        &self,
        path: &str,
        resource: Option<&str>,
    ) -> Result<(RootId, String), PathError> {
        check_text(path)?;
        let forced_root_id = resource.map(|r| self.resource(r)).transpose()?;
        if looks_like_url(path) {
            let (root_id, rel) = self
                .locate_url(path)
                .ok_or_else(|| PathError::OutsideRoots(path.to_string()))?;
            if forced_root_id.is_some_and(|f| f != root_id) {
                return Err(PathError::OutsideRoots(path.to_string()));
            }
            return Ok((root_id, normalized_relative(&rel)?));
        }
        if path.starts_with('/') {
            let (root_id, rel) = self
                .locate(Path::new(path))
                .ok_or_else(|| PathError::OutsideRoots(path.to_string()))?;
            if forced_root_id.is_some_and(|f| f != root_id) {
                return Err(PathError::OutsideRoots(path.to_string()));
            }
            return Ok((root_id, rel));
        }
        let rel = normalized_relative(path)?;
        if let Some(root_id) = forced_root_id {
            return Ok((root_id, rel));
        }
        if let Some(root_id) = self.sole() {
            return Ok((root_id, rel));
        }
        let (first, rest) = rel.split_once('/').unwrap_or((rel.as_str(), ""));
        match self.id_of(first) {
            Some(root_id) => Ok((root_id, rest.to_string())),
            None => Err(PathError::Ambiguous {
                path: path.to_string(),
                available: self.names(),
            }),
        }
    }

    /// The remote root whose URL `url` lies beneath (the deepest, when several
    /// do), and the path relative to it; never a root of another scheme,
    /// host, port or bucket.
    pub fn locate_url(&self, url: &str) -> Option<(RootId, String)> {
        let mut best: Option<(RootId, usize, String)> = None;
        for (i, root) in self.roots.iter().enumerate() {
            let Some(remote) = &root.remote else { continue };
            if let Some(Ok(rel)) = remote.url.rel_of(url) {
                let depth = remote.url.path.len();
                if best.as_ref().is_none_or(|b| depth > b.1) {
                    best = Some((i, depth, rel));
                }
            }
        }
        best.map(|(i, _, rel)| (i, rel))
    }

    /// The root containing an absolute path (configured or canonical form), lexically.
    /// `..` components make it `None`.
    pub fn locate(&self, abs: &Path) -> Option<(RootId, String)> {
        if abs.components().any(|c| c == Component::ParentDir) {
            return None;
        }
        let abs = normalize_lexically(abs);
        // The deepest matching root wins when roots nest.
        let mut best: Option<(RootId, usize, String)> = None;
        for (i, root) in self.roots.iter().enumerate() {
            for base in [&root.canonical, &root.dir] {
                if let Ok(rest) = abs.strip_prefix(base) {
                    let depth = base.components().count();
                    if best.as_ref().is_none_or(|b| depth > b.1) {
                        best = Some((i, depth, rel_string(rest)?));
                    }
                }
            }
        }
        best.map(|(i, _, rel)| (i, rel))
    }
}

/// A root given by URL: parsed, its client made (credentials from the
/// environment), no request sent yet.
fn remote_root(
    name: String,
    url: &str,
    settings: &crate::remote::Settings,
) -> anyhow::Result<DataRoot> {
    let parsed = RootUrl::parse(url).map_err(|e| anyhow::anyhow!("root '{name}': {e}"))?;
    let remote = RemoteRoot::new(parsed, settings.clone())
        .map_err(|e| anyhow::anyhow!("root '{name}': {e}"))?;
    let shown = PathBuf::from(remote.url.to_string());
    Ok(DataRoot {
        name,
        dir: shown.clone(),
        canonical: shown,
        remote: Some(Arc::new(remote)),
    })
}

fn unreadable(rel: &str, e: &std::io::Error) -> PathError {
    let (path, why) = (rel.to_string(), e.to_string());
    if crate::transient::is_transient(e) {
        PathError::Unreachable { path, why }
    } else {
        PathError::Unreadable { path, why }
    }
}

fn check_text(path: &str) -> Result<(), PathError> {
    if path.contains('\0') {
        return Err(PathError::NulByte);
    }
    if path.len() > MAX_PATH_BYTES || path.split('/').any(|c| c.len() > MAX_COMPONENT_BYTES) {
        return Err(PathError::TooLong(path.len()));
    }
    Ok(())
}

/// A relative tool path with `.` and empty components dropped; `..` refused.
fn normalized_relative(path: &str) -> Result<String, PathError> {
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(PathError::Traversal),
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// A `/`-joined relative path from path components; `None` for non-UTF-8 names.
pub fn rel_string(rest: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for c in rest.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str()?),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

/// Drops `.` components and repeated separators without touching the file system.
fn normalize_lexically(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| *c != Component::CurDir)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _tmp: tempfile::TempDir,
        base: PathBuf,
        roots: Roots,
    }

    /// Two roots `data` and `docs` beside a private folder, with links in and out.
    fn fixture() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        for d in ["data/sub", "docs", "private"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(base.join("data/a.root"), b"x").unwrap();
        std::fs::write(base.join("data/sub/b.root"), b"x").unwrap();
        std::fs::write(base.join("docs/n.md"), b"x").unwrap();
        std::fs::write(base.join("private/secret.txt"), b"x").unwrap();
        symlink(
            base.join("private/secret.txt"),
            base.join("data/escape.txt"),
        )
        .unwrap();
        symlink(base.join("private"), base.join("data/escape_dir")).unwrap();
        symlink(base.join("data/a.root"), base.join("data/inside.root")).unwrap();
        symlink(base.join("nowhere"), base.join("data/dangling")).unwrap();
        let roots = Roots::new(vec![
            ("data".into(), base.join("data")),
            ("docs".into(), base.join("docs")),
        ])
        .unwrap();
        Fixture {
            _tmp: tmp,
            base,
            roots,
        }
    }

    #[test]
    fn absolute_and_prefixed_relative_paths_resolve() {
        let f = fixture();
        let abs = f.base.join("data/sub/b.root");
        let r = f.roots.resolve(abs.to_str().unwrap(), None).unwrap();
        assert_eq!((r.root_id, r.rel.as_str()), (0, "sub/b.root"));
        let r = f.roots.resolve("docs/n.md", None).unwrap();
        assert_eq!((r.root_id, r.rel.as_str()), (1, "n.md"));
        let r = f.roots.resolve("./sub//b.root", Some("data")).unwrap();
        assert_eq!(r.rel, "sub/b.root");
        assert_eq!(r.abs, abs);
    }

    #[test]
    fn one_root_takes_bare_relative_paths() {
        let f = fixture();
        let one = Roots::new(vec![("data".into(), f.base.join("data"))]).unwrap();
        assert_eq!(one.resolve("sub/b.root", None).unwrap().rel, "sub/b.root");
    }

    #[test]
    fn a_root_set_aside_leaves_the_other_the_sole_one() {
        let mut f = fixture();
        assert_eq!(f.roots.sole(), None);
        assert!(f.roots.resolve("sub/b.root", None).is_err());
        // `data` set aside (as the ingest folder is): bare paths are `docs`'s.
        f.roots.set_aside("data");
        assert_eq!(f.roots.sole(), Some(1));
        let r = f.roots.resolve("n.md", None).unwrap();
        assert_eq!((r.root_id, r.rel.as_str()), (1, "n.md"));
        // The root set aside is still reached by absolute path or by name.
        let abs = f.base.join("data/a.root");
        assert_eq!(
            f.roots
                .resolve(abs.to_str().unwrap(), None)
                .unwrap()
                .root_id,
            0
        );
        assert_eq!(f.roots.resolve("a.root", Some("data")).unwrap().root_id, 0);
    }

    #[test]
    fn traversal_is_refused_before_touching_the_disk() {
        let f = fixture();
        for p in [
            "../private/secret.txt",
            "data/../../private",
            "sub/../../x",
            "..",
        ] {
            assert_eq!(
                f.roots.resolve(p, Some("data")),
                Err(PathError::Traversal),
                "{p}"
            );
        }
        let sneaky = format!("{}/data/../private/secret.txt", f.base.display());
        assert!(matches!(
            f.roots.resolve(&sneaky, None),
            Err(PathError::OutsideRoots(_))
        ));
    }

    #[test]
    fn absolute_paths_elsewhere_are_refused() {
        let f = fixture();
        let secret = f.base.join("private/secret.txt");
        for p in ["/etc/passwd", secret.to_str().unwrap(), "/"] {
            assert!(
                matches!(f.roots.resolve(p, None), Err(PathError::OutsideRoots(_))),
                "{p}"
            );
        }
        // An absolute path in root `data` is not accepted as belonging to `docs`.
        let a = f.base.join("data/a.root");
        assert!(f.roots.resolve(a.to_str().unwrap(), Some("docs")).is_err());
    }

    #[test]
    fn symlinks_that_leave_the_root_are_refused() {
        let f = fixture();
        assert_eq!(
            f.roots.resolve("escape.txt", Some("data")),
            Err(PathError::SymlinkEscape("escape.txt".into()))
        );
        assert!(matches!(
            f.roots.resolve("escape_dir/secret.txt", Some("data")),
            Err(PathError::SymlinkEscape(_))
        ));
        assert!(matches!(
            f.roots.resolve("dangling", Some("data")),
            Err(PathError::SymlinkEscape(_))
        ));
        // A link that stays inside the root is fine.
        assert!(f.roots.resolve("inside.root", Some("data")).is_ok());
    }

    #[test]
    fn nul_bytes_and_long_paths_are_refused() {
        let f = fixture();
        assert_eq!(
            f.roots.resolve("a.root\0.txt", Some("data")),
            Err(PathError::NulByte)
        );
        let long = "a/".repeat(3000);
        assert!(matches!(
            f.roots.resolve(&long, Some("data")),
            Err(PathError::TooLong(_))
        ));
        let long_name = "x".repeat(300);
        assert!(matches!(
            f.roots.resolve(&long_name, Some("data")),
            Err(PathError::TooLong(_))
        ));
    }

    #[test]
    fn resources_and_ambiguity_are_reported() {
        let f = fixture();
        assert!(matches!(
            f.roots.resolve("a.root", Some("nope")),
            Err(PathError::UnknownResource { .. })
        ));
        assert!(matches!(
            f.roots.resolve("a.root", None),
            Err(PathError::Ambiguous { .. })
        ));
        assert_eq!(
            f.roots.resolve("data/missing.root", None),
            Err(PathError::NotFound("data/missing.root".into()))
        );
    }

    #[test]
    fn locate_prefers_the_deepest_root() {
        let f = fixture();
        let nested = Roots::new(vec![
            ("outer".into(), f.base.clone()),
            ("inner".into(), f.base.join("data")),
        ])
        .unwrap();
        let (root_id, rel) = nested.locate(&f.base.join("data/sub/b.root")).unwrap();
        assert_eq!((root_id, rel.as_str()), (1, "sub/b.root"));
        let (root_id, rel) = nested.locate(&f.base.join("docs/n.md")).unwrap();
        assert_eq!((root_id, rel.as_str()), (0, "docs/n.md"));
        assert_eq!(nested.locate(Path::new("/elsewhere")), None);
    }

    #[test]
    fn root_configuration_is_checked() {
        let f = fixture();
        assert!(Roots::new(vec![("a/b".into(), f.base.join("data"))]).is_err());
        assert!(Roots::new(vec![("x".into(), f.base.join("missing"))]).is_err());
        assert!(
            Roots::new(vec![
                ("x".into(), f.base.join("data")),
                ("x".into(), f.base.join("docs"))
            ])
            .is_err()
        );
    }
}
