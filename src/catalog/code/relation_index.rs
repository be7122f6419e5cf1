//! An in-memory index of what source files say about one another: each
//! file's references, includes and class bases, and for each name the files
//! that use it, so `find_references`, the call graph and the hierarchy read
//! only the files concerned.
//!
//! Why in memory: a lookup must answer in about a millisecond, and it reads
//! the references of every file using a name. The index holds each file's
//! packed references as stored (a few bytes a use), and follows the catalog
//! file by file in `Catalog::apply`: replacing a file costs its own distinct
//! names, never a rebuild.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::formats::code::{Base, CodeFile, CodeRefs, Include, Language, Reference, SymbolKind};
use crate::roots::RootId;

/// One class with a body and the bases it names.
#[derive(Debug, Clone)]
pub struct ClassEntry {
    pub name: String,
    pub qualified_name: String,
    pub kind: SymbolKind,
    pub line: u32,
    pub bases: Vec<Base>,
}

/// What the relation index keeps of one source file.
#[derive(Debug)]
pub struct FileRelations {
    pub id: u64,
    pub root_id: RootId,
    pub rel: String,
    pub language: Language,
    pub refs: CodeRefs,
    pub includes: Vec<Include>,
    pub classes: Vec<ClassEntry>,
}

#[derive(Default)]
struct Inner {
    files: HashMap<u64, Arc<FileRelations>>,
    /// Name -> ids of the files using it, sorted.
    users: HashMap<Box<str>, Vec<u64>>,
    /// Last part of a base's name -> ids of the files with a class deriving
    /// from it, sorted.
    derived: HashMap<Box<str>, Vec<u64>>,
}

#[derive(Default)]
pub struct RelationIndex {
    inner: RwLock<Inner>,
}

/// The last part of a qualified name (`ns::A` -> `A`, `m.B` -> `B`).
pub fn last_part(name: &str) -> &str {
    let name = name.rsplit("::").next().unwrap_or(name);
    name.rsplit('.').next().unwrap_or(name)
}

impl FileRelations {
    pub fn new(id: u64, root_id: RootId, rel: String, file: &CodeFile, refs: CodeRefs) -> Self {
        let classes = file
            .class_info
            .iter()
            .filter_map(|c| {
                let s = file.symbols.get(c.symbol as usize)?;
                Some(ClassEntry {
                    name: s.name.clone(),
                    qualified_name: s.qualified_name.clone(),
                    kind: s.kind,
                    line: s.line,
                    bases: c.bases.clone(),
                })
            })
            .collect();
        FileRelations {
            id,
            root_id,
            rel,
            language: file.language,
            refs,
            includes: file.includes.clone(),
            classes,
        }
    }
}

fn add(map: &mut HashMap<Box<str>, Vec<u64>>, key: &str, id: u64) {
    let ids = map.entry(key.into()).or_default();
    if let Err(at) = ids.binary_search(&id) {
        ids.insert(at, id);
    }
}

fn drop_id(map: &mut HashMap<Box<str>, Vec<u64>>, key: &str, id: u64) {
    if let Some(ids) = map.get_mut(key) {
        if let Ok(at) = ids.binary_search(&id) {
            ids.remove(at);
        }
        if ids.is_empty() {
            map.remove(key);
        }
    }
}

impl Inner {
    fn insert(&mut self, file: FileRelations) {
        self.remove(file.id);
        let id = file.id;
        for name in &file.refs.names {
            add(&mut self.users, name, id);
        }
        for c in &file.classes {
            for b in &c.bases {
                add(&mut self.derived, last_part(&b.name), id);
            }
        }
        self.files.insert(id, Arc::new(file));
    }

    fn remove(&mut self, id: u64) {
        let Some(old) = self.files.remove(&id) else {
            return;
        };
        for name in &old.refs.names {
            drop_id(&mut self.users, name, id);
        }
        for c in &old.classes {
            for b in &c.bases {
                drop_id(&mut self.derived, last_part(&b.name), id);
            }
        }
    }
}

impl RelationIndex {
    /// Replaces the whole index (at open).
    pub fn load(&self, files: impl Iterator<Item = FileRelations>) {
        let mut inner = self.inner.write().expect("relation index lock");
        *inner = Inner::default();
        for f in files {
            inner.insert(f);
        }
    }

    pub fn insert(&self, file: FileRelations) {
        self.inner
            .write()
            .expect("relation index lock")
            .insert(file);
    }

    pub fn remove(&self, id: u64) {
        self.inner.write().expect("relation index lock").remove(id);
    }

    /// The files using `name`, in path order, each with its uses of it.
    pub fn uses(&self, name: &str) -> Vec<(Arc<FileRelations>, Vec<Reference>)> {
        let files: Vec<Arc<FileRelations>> = {
            let inner = self.inner.read().expect("relation index lock");
            match inner.users.get(name) {
                Some(ids) => ids
                    .iter()
                    .filter_map(|id| inner.files.get(id).cloned())
                    .collect(),
                None => return Vec::new(),
            }
        };
        let mut out: Vec<_> = files
            .into_iter()
            .map(|f| {
                let uses = f.refs.uses(name);
                (f, uses)
            })
            .collect();
        out.sort_by(|a, b| (a.0.root_id, &a.0.rel).cmp(&(b.0.root_id, &b.0.rel)));
        out
    }

    /// The files with a class whose base ends in `name`.
    pub fn deriving_from(&self, name: &str) -> Vec<Arc<FileRelations>> {
        let inner = self.inner.read().expect("relation index lock");
        let mut out: Vec<_> = inner
            .derived
            .get(last_part(name))
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| inner.files.get(id).cloned())
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by(|a: &Arc<FileRelations>, b| (a.root_id, &a.rel).cmp(&(b.root_id, &b.rel)));
        out
    }

    pub fn file(&self, id: u64) -> Option<Arc<FileRelations>> {
        self.inner
            .read()
            .expect("relation index lock")
            .files
            .get(&id)
            .cloned()
    }

    /// Every file, in path order.
    pub fn all(&self) -> Vec<Arc<FileRelations>> {
        let inner = self.inner.read().expect("relation index lock");
        let mut out: Vec<_> = inner.files.values().cloned().collect();
        out.sort_by(|a, b| (a.root_id, &a.rel).cmp(&(b.root_id, &b.rel)));
        out
    }

    pub fn reference_count(&self) -> usize {
        let inner = self.inner.read().expect("relation index lock");
        inner.files.values().map(|f| f.refs.count()).sum()
    }
}
