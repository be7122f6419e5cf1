//! Where an `#include` or an import leads, among the indexed source files:
//! a C++ include beside the including file, in each `[code] include_dirs`
//! folder, at the root, then as the one project file whose path ends in it;
//! a Python module's file from the root or a folder above the importer, a
//! relative import from the importer's package.

use std::collections::{HashMap, HashSet};

use super::Context;
use crate::formats::code::{Include, Language};
use crate::roots::RootId;

/// Where an include leads.
pub(super) enum Resolution {
    /// Project files (a Python `from pkg import a, b` may reach several).
    Files(Vec<(RootId, String)>),
    /// Several project files end in the path and no rule picks one.
    Ambiguous(usize),
    /// Not a project file (a system or third-party header, a module
    /// outside the roots).
    Outside,
}

/// Resolves includes against the indexed source files.
pub(super) struct IncludeResolver<'c> {
    ctx: &'c Context,
    /// Every indexed source file, as (root id, relative path).
    known: HashSet<(RootId, String)>,
    /// File name -> the files of that name.
    by_name: HashMap<String, Vec<(RootId, String)>>,
}

impl<'c> IncludeResolver<'c> {
    pub(super) fn new(ctx: &'c Context) -> Self {
        let mut known = HashSet::new();
        let mut by_name: HashMap<String, Vec<(RootId, String)>> = HashMap::new();
        for root_id in 0..ctx.catalog.roots().list().len() {
            for (rel, entry) in ctx.catalog.files().under(root_id, "") {
                if entry.kind != crate::formats::Kind::Code {
                    continue;
                }
                let name = rel.rsplit('/').next().unwrap_or(&rel).to_string();
                by_name
                    .entry(name)
                    .or_default()
                    .push((root_id, rel.clone()));
                known.insert((root_id, rel));
            }
        }
        IncludeResolver {
            ctx,
            known,
            by_name,
        }
    }

    /// How a file is named in graph answers: its path in its root, with
    /// the root's name first when there are several roots.
    pub(super) fn display(&self, (root_id, rel): &(RootId, String)) -> String {
        let roots = self.ctx.catalog.roots();
        if roots.sole().is_some() {
            rel.clone()
        } else {
            format!("{}/{rel}", roots.list()[*root_id].name)
        }
    }

    fn has(&self, root_id: RootId, rel: &str) -> Option<(RootId, String)> {
        let key = (root_id, normalise(rel)?);
        self.known.contains(&key).then_some(key)
    }

    pub(super) fn resolve(
        &self,
        root_id: RootId,
        from: &str,
        language: Language,
        inc: &Include,
    ) -> Resolution {
        match language {
            Language::Cpp => self.resolve_cpp(root_id, from, inc),
            Language::Python => self.resolve_python(root_id, from, inc),
        }
    }

    fn resolve_cpp(&self, root_id: RootId, from: &str, inc: &Include) -> Resolution {
        let folder = from.rsplit_once('/').map_or("", |(d, _)| d);
        let mut tries = Vec::new();
        if !inc.system {
            tries.push(join_path(folder, &inc.path));
        }
        for dir in &self.ctx.settings.include_dirs {
            tries.push(join_path(dir, &inc.path));
        }
        tries.push(inc.path.clone());
        for t in &tries {
            if let Some(hit) = self.has(root_id, t) {
                return Resolution::Files(vec![hit]);
            }
        }
        // The project's folders: a unique file whose path ends in the include.
        let name = inc.path.rsplit('/').next().unwrap_or(&inc.path);
        let suffix = format!("/{}", inc.path);
        let candidates: Vec<&(RootId, String)> = self
            .by_name
            .get(name)
            .map(|v| {
                v.iter()
                    .filter(|(_, rel)| rel == &inc.path || rel.ends_with(&suffix))
                    .collect()
            })
            .unwrap_or_default();
        match candidates.len() {
            0 => Resolution::Outside,
            1 => Resolution::Files(vec![candidates[0].clone()]),
            n => Resolution::Ambiguous(n),
        }
    }

    fn resolve_python(&self, root_id: RootId, from: &str, inc: &Include) -> Resolution {
        let dots = inc.path.chars().take_while(|&c| c == '.').count();
        let module = inc.path[dots..].replace('.', "/");
        let bases: Vec<String> = if dots > 0 {
            // Relative: from the importing file's package, one folder up per dot past the first.
            let mut folder: Vec<&str> = from.split('/').collect();
            folder.pop();
            for _ in 1..dots {
                folder.pop();
            }
            vec![folder.join("/")]
        } else {
            // Absolute: from the root, or from any folder above the importing file.
            let mut out = vec![String::new()];
            let mut folder: Vec<&str> = from.split('/').collect();
            folder.pop();
            while !folder.is_empty() {
                out.push(folder.join("/"));
                folder.pop();
            }
            out
        };
        let mut files = Vec::new();
        for base in &bases {
            let at = join_path(base, &module);
            let module_file = [format!("{at}.py"), join_path(&at, "__init__.py")]
                .into_iter()
                .find_map(|p| self.has(root_id, &p));
            let Some(found) = module_file else { continue };
            files.push(found);
            // `from pkg import mod` imports the module pkg/mod.py too.
            for name in &inc.names {
                if let Some(sub) = self.has(root_id, &format!("{}.py", join_path(&at, name))) {
                    files.push(sub);
                }
            }
            break;
        }
        if files.is_empty() {
            Resolution::Outside
        } else {
            Resolution::Files(files)
        }
    }
}

fn join_path(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else if b.is_empty() {
        a.to_string()
    } else {
        format!("{a}/{b}")
    }
}

/// `a/./b/../c.h` as `a/c.h`; None when it climbs out of the root.
fn normalise(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            p => out.push(p),
        }
    }
    Some(out.join("/"))
}
