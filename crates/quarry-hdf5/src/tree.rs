//! The object tree of an HDF5 file: every group, dataset, named datatype and
//! link reachable from `/`, depth first in name order (h5py's `visit` order).
//! An object reached by several hard links is described once, under the first
//! name met, with its other names listed beside it; soft and external links
//! are described as links and never followed (a soft link's target is checked
//! only to say whether it dangles).

use std::collections::HashMap;
use std::ffi::CString;

use hdf5::{Group, IndexType, IterationOrder, LinkType, LocationType};
use serde::{Deserialize, Serialize};

use super::ffi::{self, locked};
use super::types::DType;
use super::{H5File, attributes, dataset, outside};
use crate::FormatError;

/// Deepest group nesting walked: a hostile file cannot recurse without end.
const MAX_DEPTH: usize = 64;
/// Most objects described per file; the rest are counted but not described.
pub const MAX_OBJECTS: usize = 100_000;

/// One object of the tree, at its (first) path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Object {
    /// Absolute path inside the file, `/` for the root group.
    pub path: String,
    /// Other paths of the same object (hard links), in walk order.
    pub aliases: Vec<String>,
    pub entry: Entry,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Entry {
    Group {
        members: Vec<Member>,
        attributes: Vec<attributes::Attribute>,
    },
    Dataset(Box<dataset::DatasetInfo>),
    Datatype {
        dtype: DType,
    },
    SoftLink {
        target: String,
        dangling: bool,
    },
    ExternalLink {
        file: String,
        path: String,
    },
}

impl Entry {
    pub fn kind(&self) -> MemberKind {
        match self {
            Entry::Group { .. } => MemberKind::Group,
            Entry::Dataset(_) => MemberKind::Dataset,
            Entry::Datatype { .. } => MemberKind::Datatype,
            Entry::SoftLink { .. } => MemberKind::SoftLink,
            Entry::ExternalLink { .. } => MemberKind::ExternalLink,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemberKind {
    Group,
    Dataset,
    Datatype,
    SoftLink,
    ExternalLink,
}

impl MemberKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberKind::Group => "group",
            MemberKind::Dataset => "dataset",
            MemberKind::Datatype => "datatype",
            MemberKind::SoftLink => "soft_link",
            MemberKind::ExternalLink => "external_link",
        }
    }
}

/// A group's member as its listing shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub name: String,
    pub kind: MemberKind,
    /// For datasets: shape (`None` for an empty dataspace) and NumPy type.
    pub shape: Option<Vec<u64>>,
    pub dtype: Option<String>,
}

/// The whole tree, and how many objects were left out past `MAX_OBJECTS`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    pub objects: Vec<Object>,
    pub omitted: u64,
}

struct Walk<'a> {
    file: &'a H5File,
    objects: Vec<Object>,
    /// Object identity (its address token) -> index in `objects`.
    seen: HashMap<String, usize>,
    omitted: u64,
}

impl H5File {
    /// Describes every object of the file.
    pub fn tree(&self) -> Result<Tree, FormatError> {
        let root = locked(|| self.inner.group("/")).map_err(ffi::corrupt)?;
        let mut walk = Walk {
            file: self,
            objects: Vec::new(),
            seen: HashMap::new(),
            omitted: 0,
        };
        let token = identity(&root, ".")?;
        walk.seen.insert(token, 0);
        walk.objects.push(Object {
            path: "/".into(),
            aliases: Vec::new(),
            entry: Entry::Group {
                members: Vec::new(),
                attributes: Vec::new(),
            },
        });
        walk.group(&root, 0, 0)?;
        mark_dangling(&mut walk.objects);
        Ok(Tree {
            objects: walk.objects,
            omitted: walk.omitted,
        })
    }
}

/// An object's identity in its file, for telling hard links to one object apart.
fn identity(group: &Group, name: &str) -> Result<String, FormatError> {
    let info = locked(|| group.loc_info_by_name(name)).map_err(ffi::corrupt)?;
    Ok(format!("{:?}", info.token))
}

fn child_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

impl Walk<'_> {
    /// Describes the members of the group at `objects[index]` and walks into
    /// the groups first met there.
    fn group(&mut self, group: &Group, index: usize, depth: usize) -> Result<(), FormatError> {
        let path = self.objects[index].path.clone();
        let attrs = attributes::of(group)?;
        let mut names: Vec<(String, LinkType)> = Vec::new();
        // The callback only collects: nothing that could fail or panic runs
        // inside libhdf5's iteration.
        locked(|| {
            group.iter_visit(IndexType::Name, IterationOrder::Increasing, |name, info| {
                names.push((name.to_string(), info.link_type));
                Ok(())
            })
        })
        .map_err(ffi::corrupt)?;
        let mut members = Vec::with_capacity(names.len());
        for (name, link) in names {
            let child = child_path(&path, &name);
            let kind = match link {
                LinkType::Soft => {
                    let target = link_value(group, &name, true)?.0;
                    // Whether it dangles is decided once the whole tree is known
                    // (asking libhdf5 would follow the link, maybe out of the file).
                    self.push(
                        child,
                        Entry::SoftLink {
                            target,
                            dangling: false,
                        },
                    );
                    MemberKind::SoftLink
                }
                LinkType::External => {
                    let (file, path) = link_value(group, &name, false)?;
                    self.push(child, Entry::ExternalLink { file, path });
                    MemberKind::ExternalLink
                }
                LinkType::Hard => {
                    let token = identity(group, &name)?;
                    if let Some(&known) = self.seen.get(&token) {
                        self.objects[known].aliases.push(child);
                        self.objects[known].entry.kind()
                    } else {
                        let entry = self.describe(group, &name)?;
                        let kind = entry.kind();
                        if let Some(i) = self.push(child, entry) {
                            self.seen.insert(token, i);
                            // Depth first, as h5py visits: a group's subtree
                            // before its next sibling, so the first name an
                            // object is met by is the one h5py reports.
                            if kind == MemberKind::Group {
                                self.subgroup(group, &name, i, depth)?;
                            }
                        }
                        kind
                    }
                }
            };
            members.push(Member {
                name,
                kind,
                shape: None,
                dtype: None,
            });
        }
        for m in &mut members {
            if m.kind == MemberKind::Dataset {
                let child = child_path(&path, &m.name);
                if let Some(Entry::Dataset(d)) = self.find(&child).map(|o| &o.entry) {
                    m.shape = d.shape.clone();
                    m.dtype = Some(d.dtype.numpy());
                }
            }
        }
        self.objects[index].entry = Entry::Group {
            members,
            attributes: attrs,
        };
        Ok(())
    }

    /// Walks into the member group `name` of `group`, unless too deep.
    fn subgroup(
        &mut self,
        group: &Group,
        name: &str,
        index: usize,
        depth: usize,
    ) -> Result<(), FormatError> {
        if depth >= MAX_DEPTH {
            self.omitted += 1;
            return Ok(());
        }
        let sub = locked(|| group.group(name)).map_err(ffi::corrupt)?;
        self.group(&sub, index, depth + 1)
    }

    /// The object (or alias) at `path`.
    fn find(&self, path: &str) -> Option<&Object> {
        self.objects
            .iter()
            .rev()
            .find(|o| o.path == path || o.aliases.iter().any(|a| a == path))
    }

    fn push(&mut self, path: String, entry: Entry) -> Option<usize> {
        if self.objects.len() >= MAX_OBJECTS {
            self.omitted += 1;
            return None;
        }
        self.objects.push(Object {
            path,
            aliases: Vec::new(),
            entry,
        });
        Some(self.objects.len() - 1)
    }

    /// Describes the object a hard link leads to (a group's members come later).
    fn describe(&self, group: &Group, name: &str) -> Result<Entry, FormatError> {
        let info = locked(|| group.loc_info_by_name(name)).map_err(ffi::corrupt)?;
        Ok(match info.loc_type {
            LocationType::Group => Entry::Group {
                members: Vec::new(),
                attributes: Vec::new(),
            },
            LocationType::Dataset => {
                let cname = CString::new(name)
                    .map_err(|_| FormatError::Corrupt("NUL in a dataset name".into()))?;
                let ds = locked(|| outside::open_dataset(group.id(), &cname))?;
                Entry::Dataset(Box::new(dataset::describe(self.file, &ds)?))
            }
            #[allow(unreachable_patterns)]
            _ => Entry::Datatype {
                dtype: named_type(group, name)
                    .unwrap_or_else(|| DType::Unsupported("named datatype".into())),
            },
        })
    }
}

/// The type a named (committed) datatype holds.
fn named_type(group: &Group, name: &str) -> Option<DType> {
    let cname = CString::new(name).ok()?;
    locked(|| {
        // SAFETY: valid group id and NUL-terminated name.
        let id = unsafe {
            hdf5_sys::h5t::H5Topen2(group.id(), cname.as_ptr(), hdf5_sys::h5p::H5P_DEFAULT)
        };
        if id < 0 {
            return None;
        }
        // SAFETY: a fresh datatype id, owned by the handle from here on.
        let t: hdf5::Datatype = unsafe { hdf5::from_id(id) }.ok()?;
        Some(dataset::dtype_of(&t))
    })
}

/// Sets `dangling` on the soft links whose target is no object of the tree
/// (resolved from the link's group, through other soft links).
fn mark_dangling(objects: &mut [Object]) {
    let known: HashMap<&str, usize> = objects
        .iter()
        .enumerate()
        .flat_map(|(i, o)| {
            std::iter::once((o.path.as_str(), i))
                .chain(o.aliases.iter().map(move |a| (a.as_str(), i)))
        })
        .collect();
    let dangling: Vec<usize> = objects
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o.entry, Entry::SoftLink { .. }))
        .filter(|(_, o)| resolve(objects, &known, &o.path, 0).is_none())
        .map(|(i, _)| i)
        .collect();
    for i in dangling {
        if let Entry::SoftLink { dangling, .. } = &mut objects[i].entry {
            *dangling = true;
        }
    }
}

/// The object a path leads to, following soft links (at most 16 deep); an
/// external link counts as leading somewhere.
fn resolve(
    objects: &[Object],
    known: &HashMap<&str, usize>,
    path: &str,
    depth: usize,
) -> Option<usize> {
    if depth > 16 {
        return None;
    }
    let i = *known.get(path)?;
    match &objects[i].entry {
        Entry::SoftLink { target, .. } => {
            let parent = path
                .rsplit_once('/')
                .map_or("/", |(p, _)| if p.is_empty() { "/" } else { p });
            let absolute = absolute_target(parent, target);
            resolve(objects, known, &absolute, depth + 1)
        }
        _ => Some(i),
    }
}

/// A link target made absolute against the group holding the link, with `.`
/// and empty components removed (`..` is not part of HDF5 paths).
pub fn absolute_target(parent: &str, target: &str) -> String {
    let joined = if target.starts_with('/') {
        target.to_string()
    } else {
        format!("{parent}/{target}")
    };
    let parts: Vec<&str> = joined
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    format!("/{}", parts.join("/"))
}

/// A soft link's target (and empty), or an external link's file and path.
fn link_value(group: &Group, name: &str, soft: bool) -> Result<(String, String), FormatError> {
    let cname =
        CString::new(name).map_err(|_| FormatError::Corrupt("NUL in a link name".into()))?;
    // The value's size is not asked for (the call that tells it differs between
    // libhdf5 versions): a buffer is tried at growing sizes until the value
    // fits, which its terminating NULs show.
    for size in [4096usize, 65536, 1 << 20] {
        let mut buf = vec![0u8; size];
        locked(|| {
            // SAFETY: valid group id, NUL-terminated name, `buf` has `size` bytes.
            ffi::check(unsafe {
                hdf5_sys::h5l::H5Lget_val(
                    group.id(),
                    cname.as_ptr(),
                    buf.as_mut_ptr().cast(),
                    size,
                    hdf5_sys::h5p::H5P_DEFAULT,
                )
            })
        })?;
        if soft {
            if let Some(end) = memchr::memchr(0, &buf) {
                return Ok((
                    String::from_utf8_lossy(&buf[..end]).into_owned(),
                    String::new(),
                ));
            }
            continue;
        }
        // An external link's value: a flags byte, the file name, the object path.
        let mut parts = buf.get(1..).unwrap_or_default().splitn(3, |&b| b == 0);
        if let (Some(file), Some(path), Some(_)) = (parts.next(), parts.next(), parts.next()) {
            return Ok((
                String::from_utf8_lossy(file).into_owned(),
                String::from_utf8_lossy(path).into_owned(),
            ));
        }
    }
    Err(FormatError::Corrupt(format!(
        "the value of link '{name}' is over 1 MiB"
    )))
}
