//! What a ROOT analysis tool reads: one file (`path`), or a dataset read as one
//! (`dataset`: a glob over the indexed files, a list of paths, or the name of
//! a saved dataset), its entries numbered across the files in path order as a
//! TChain numbers them. Here the files are resolved, each member opened (its
//! parsed tree kept in a bounded cache by file identity, so a member costs an
//! open and a header read) or, for a dry run, its layout read from the
//! catalog, its columns lined up with the first member's, and its recorded
//! bounds added for cluster skipping. Which files a `dataset` names is
//! `root_dataset_files.rs`; the answers about the files themselves (`dry_run`,
//! the per-file breakdown, the files skipped) are in `root_dataset_answers.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;
use serde_json::json;

use super::Context;
use super::root::{KnownRootFile, Opened, corrupted, find_tree, known_root_file};
use super::root_dataset_files::dataset_files;
use crate::analysis::dataset::{Member, align, alignment, first_entries, layout_signature};
use crate::analysis::prune::BasketSpan;
use crate::analysis::{Plan, TreeColumns, TreeObject};
use crate::catalog::datasets::SavedDataset;
use crate::catalog::root::{
    ROOT_LAYOUTS, ROOT_STATS, StatsRow, TREE_KIND_RNTUPLE, TreeRow, branch_key,
};
use crate::formats::root::rntuple::ANCHOR_CLASS;
use crate::formats::root::{Branch, RootFile, latest};
use crate::job::Job;
use crate::mcp::response::ToolError;

/// The `dataset` argument: one string (a glob, a path, or a saved dataset's
/// name) or a list of paths.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum DatasetArg {
    One(String),
    List(Vec<String>),
}

/// Most files one dataset may hold.
pub(super) const MAX_FILES: usize = 10_000;

/// What a tool call reads, as its arguments say.
pub(super) struct Reading<'a> {
    pub(super) tool: &'static str,
    /// The call: a remote file opened for it reports a change to it.
    pub(super) job: &'a Job,
    pub(super) path: Option<&'a str>,
    pub(super) dataset: Option<&'a DatasetArg>,
    pub(super) tree: Option<&'a str>,
    pub(super) skip_mismatched: bool,
}

/// `Reading` from the arguments every ROOT analysis tool takes.
pub(super) fn reading<'a>(
    tool: &'static str,
    job: &'a Job,
    path: &'a Option<String>,
    dataset: &'a Option<DatasetArg>,
    tree: &'a Option<String>,
    skip_mismatched: Option<bool>,
) -> Reading<'a> {
    Reading {
        tool,
        job,
        path: path.as_deref(),
        dataset: dataset.as_ref(),
        tree: tree.as_deref(),
        skip_mismatched: skip_mismatched.unwrap_or(false),
    }
}

/// How the files read were named.
pub(super) enum Named {
    Path,
    Glob(String),
    List,
    Saved(SavedDataset),
}

/// One file read: where it is, its tree's catalog row, the open file (none in
/// a dry run, which reads the tree's layout from the catalog), the identity of
/// the version read, the tree, and the order lining its columns up with the
/// first member's (none when they already are).
pub(super) struct Part {
    pub(super) known: KnownRootFile,
    pub(super) row: TreeRow,
    pub(super) file: Option<RootFile>,
    pub(super) fingerprint: u64,
    pub(super) tree: Arc<TreeObject>,
    order: Option<Vec<usize>>,
    /// The file as tools name it (root-relative, `NAME/...` with several roots).
    pub(super) shown: String,
}

/// The tree of one file, or of a dataset's files, ready for a call.
pub(super) struct OpenTree {
    pub(super) parts: Vec<Part>,
    /// Files of the dataset left out (`skip_mismatched`): (file, why).
    pub(super) skipped: Vec<(String, String)>,
    pub(super) named: Named,
}

impl OpenTree {
    /// The first file read: suggestions and messages name it.
    pub(super) fn first(&self) -> &Part {
        &self.parts[0]
    }

    pub(super) fn is_dataset(&self) -> bool {
        !matches!(self.named, Named::Path)
    }

    /// Entries of all the files read.
    pub(super) fn entries(&self) -> u64 {
        self.parts.iter().map(|p| p.tree.entries()).sum()
    }

    /// Each file's columns, lined up with the first file's: plans made over
    /// the first file's read every file's.
    pub(super) fn columns(&self) -> Vec<TreeColumns<'_>> {
        self.parts
            .iter()
            .map(|p| {
                let mut columns = TreeColumns::of(&p.tree);
                if let Some(order) = &p.order {
                    align(&mut columns, order);
                }
                columns
            })
            .collect()
    }

    /// The members the engine reads (a call that read the catalog only, a dry
    /// run, has none to give).
    pub(super) fn members<'a>(&'a self, columns: &'a [TreeColumns<'a>]) -> Vec<Member<'a>> {
        let firsts = first_entries(columns.iter().map(|c| c.entries));
        self.parts
            .iter()
            .zip(columns)
            .zip(firsts)
            .map(|((p, tree), first_entry)| Member {
                file: p
                    .file
                    .as_ref()
                    .expect("an opened file: a dry run reads none"),
                tree,
                first_entry,
                label: if self.is_dataset() { &p.shown } else { "" },
            })
            .collect()
    }

    /// Bytes read from the files by the call so far.
    pub(super) fn bytes_read(&self) -> u64 {
        self.parts
            .iter()
            .filter_map(|p| p.file.as_ref())
            .map(RootFile::bytes_read)
            .sum()
    }

    /// The expressions a saved dataset names (`define_dataset(define=...)`),
    /// for the call's own `define`: the one place a call's saved definitions
    /// are handed on (the calls' `define` argument is merged with them where
    /// expressions are planned). Empty unless the call named a saved dataset.
    pub(super) fn saved_defines(&self) -> &[(String, String)] {
        match &self.named {
            Named::Saved(d) => &d.define,
            _ => &[],
        }
    }
}

/// Opens what a call reads: the one file of `path`, or the files of
/// `dataset`, each opened and lined up with the first.
pub(super) fn open_tree(ctx: &Context, r: &Reading<'_>) -> Result<OpenTree, ToolError> {
    gather(ctx, r, open_part)
}

/// `open_tree` from the catalog alone (a dry run): each file's tree is its
/// layout as indexed, and no file is opened.
pub(super) fn plan_tree(ctx: &Context, r: &Reading<'_>) -> Result<OpenTree, ToolError> {
    gather(ctx, r, layout_part)
}

type Loader = fn(&Context, &Job, KnownRootFile, TreeRow) -> Result<Part, ToolError>;

fn gather(ctx: &Context, r: &Reading<'_>, load: Loader) -> Result<OpenTree, ToolError> {
    let (files, named, tree) = resolve(ctx, r)?;
    if let Named::Path = named {
        let path = r.path.expect("a path call");
        let known = known_root_file(ctx, path)?;
        let row = find_tree(ctx, &known, &tree)?;
        let mut part = load(ctx, r.job, known, row)?;
        part.shown = path.to_string();
        return Ok(OpenTree {
            parts: vec![part],
            skipped: Vec::new(),
            named,
        });
    }
    use rayon::prelude::*;
    let loaded: Vec<Result<Part, (String, ToolError)>> = files
        .par_iter()
        .map(|shown| {
            let known = known_root_file(ctx, shown).map_err(|e| (shown.clone(), e))?;
            let row = find_tree(ctx, &known, &tree).map_err(|e| (shown.clone(), e))?;
            let mut part = load(ctx, r.job, known, row).map_err(|e| (shown.clone(), e))?;
            part.shown = shown.clone();
            Ok(part)
        })
        .collect();
    let mut parts: Vec<Part> = Vec::with_capacity(loaded.len());
    let mut mismatched: Vec<(String, String)> = Vec::new();
    for item in loaded {
        match item {
            Ok(p) => parts.push(p),
            // A listed file that is gone is the caller's mistake, not the file's.
            Err((_, e)) if e.code == "file_not_found" && matches!(named, Named::List) => {
                return Err(e);
            }
            Err((shown, e)) => mismatched.push((shown, e.message)),
        }
    }
    line_up(&mut parts, &mut mismatched);
    if !mismatched.is_empty() && (!r.skip_mismatched || parts.is_empty()) {
        return Err(mismatch_error(r, &tree, &mismatched, parts.is_empty()));
    }
    Ok(OpenTree {
        parts,
        skipped: mismatched,
        named,
    })
}

/// Lines each part's columns up with the first part's; a part whose columns
/// differ moves to `mismatched` with how.
fn line_up(parts: &mut Vec<Part>, mismatched: &mut Vec<(String, String)>) {
    let Some(first) = parts.first() else {
        return;
    };
    let reference = first.tree.clone();
    let signature = layout_signature(&reference);
    let first_columns = TreeColumns::of(&reference);
    let mut kept = Vec::with_capacity(parts.len());
    for (k, mut p) in std::mem::take(parts).into_iter().enumerate() {
        // A tree made as the first is lined up already (the common case:
        // files written by one program): no column lists to compare.
        if k > 0 && layout_signature(&p.tree) != signature {
            match alignment(&first_columns, &TreeColumns::of(&p.tree)) {
                Ok(order) => {
                    let identity = order.iter().enumerate().all(|(i, &o)| i == o);
                    p.order = (!identity).then_some(order);
                }
                Err(m) => {
                    mismatched.push((p.shown.clone(), m.to_string()));
                    continue;
                }
            }
        }
        kept.push(p);
    }
    *parts = kept;
    mismatched.sort();
}

fn mismatch_error(
    r: &Reading<'_>,
    tree: &str,
    mismatched: &[(String, String)],
    none_left: bool,
) -> ToolError {
    let shown: Vec<_> = mismatched
        .iter()
        .take(20)
        .map(|(file, why)| json!({ "file": file, "reason": why }))
        .collect();
    let (message, suggestion) = if none_left {
        (
            format!(
                "none of the dataset's {} files can be read as tree '{tree}'",
                mismatched.len()
            ),
            "Check the tree's name with inspect_file on one of the files, and the files with list_files".to_string(),
        )
    } else {
        let (file, why) = &mismatched[0];
        (
            format!(
                "{} file(s) of the dataset cannot be read with the others as tree '{tree}': '{file}': {why}",
                mismatched.len()
            ),
            format!(
                "Pass skip_mismatched=true to {} the other files (the ones left out are listed), or narrow the dataset",
                r.tool
            ),
        )
    };
    ToolError::new("dataset_mismatch", message, suggestion)
        .details(json!({ "files": shown, "count": mismatched.len() }))
}

/// The files a call names (as tools show them), how it named them, and the
/// tree to read.
fn resolve(ctx: &Context, r: &Reading<'_>) -> Result<(Vec<String>, Named, String), ToolError> {
    let need_tree = |tree: Option<&str>| {
        tree.map(str::to_string).ok_or_else(|| {
            ToolError::invalid_arguments(
                r.tool,
                "tree is required: the tree's path in the file (inspect_file lists them)",
            )
        })
    };
    let (files, named) = match (r.path, r.dataset) {
        (Some(_), Some(_)) => {
            return Err(ToolError::invalid_arguments(
                r.tool,
                "give either path (one file) or dataset (several files read as one), not both",
            ));
        }
        (None, None) => {
            return Err(ToolError::invalid_arguments(
                r.tool,
                "give path (one file) or dataset (a glob such as 'run2012/**/*.root', a list of paths, or a saved dataset's name)",
            ));
        }
        (Some(_), None) => return Ok((Vec::new(), Named::Path, need_tree(r.tree)?)),
        (None, Some(d)) => dataset_files(ctx, r.tool, d)?,
    };
    let tree = match (&named, r.tree) {
        (_, Some(t)) => t.to_string(),
        (Named::Saved(d), None) => d.tree.clone(),
        (_, None) => need_tree(None)?,
    };
    if files.is_empty() {
        return Err(ToolError::new(
            "file_not_found",
            "the dataset holds no indexed ROOT file".to_string(),
            "See the ROOT files with list_files(pattern=...); a file written just now appears within seconds",
        ));
    }
    if files.len() > MAX_FILES {
        return Err(ToolError::new(
            "limit_exceeded",
            format!(
                "the dataset holds {} files, more than the {MAX_FILES} a call reads",
                files.len()
            ),
            "Narrow the glob (e.g. one run's folder), or split the question over several calls",
        ));
    }
    Ok((files, named, tree))
}

/// Opens a member's file and finds its tree: parsed once per version of the
/// file (the cache is keyed by the open descriptor's identity).
fn open_part(
    ctx: &Context,
    job: &Job,
    known: KnownRootFile,
    row: TreeRow,
) -> Result<Part, ToolError> {
    let Opened {
        file,
        fingerprint,
        version,
    } = known.open(ctx, job)?;
    let key = (known.record.id, version, row.path.clone());
    let tree = cached_tree(key, || {
        let keys = file.walk().map_err(|e| corrupted(&known.abs(), &e))?;
        read_object(&file, &keys, &row).map_err(|e| corrupted(&known.abs(), &e))
    })?;
    Ok(Part {
        known,
        row,
        file: Some(file),
        fingerprint,
        tree,
        order: None,
        shown: String::new(),
    })
}

/// The TTree or RNTuple a catalog row names, read from its file.
fn read_object(
    file: &RootFile,
    keys: &[crate::formats::root::PathedKey],
    row: &TreeRow,
) -> Result<TreeObject, crate::formats::FormatError> {
    let ntuple = row.kind == TREE_KIND_RNTUPLE;
    let class = if ntuple { ANCHOR_CLASS } else { "TTree" };
    let key = latest(keys, &row.path, Some(class)).ok_or_else(|| {
        crate::formats::FormatError::Corrupt(format!(
            "'{}' is in the catalog but not in the file (changed since?)",
            row.path
        ))
    })?;
    Ok(if ntuple {
        TreeObject::RNTuple(Box::new(file.rntuple(&key.key)?))
    } else {
        TreeObject::TTree(file.tree(&key.key)?)
    })
}

/// A member's tree from the catalog's layout of it (a dry run): nothing
/// opened. The tree a call parsed from the same version of the file serves
/// as well; a layout decoded is kept apart from them (its embedded baskets
/// are headers only, which a read must never get).
fn layout_part(
    ctx: &Context,
    job: &Job,
    known: KnownRootFile,
    row: TreeRow,
) -> Result<Part, ToolError> {
    // The catalog keeps no layout of an RNTuple: its anchor, header and
    // footer are read instead (no pages).
    if row.kind == TREE_KIND_RNTUPLE {
        let mut part = open_part(ctx, job, known, row)?;
        part.file = None;
        return Ok(part);
    }
    let fingerprint = known.record.info.fingerprint;
    let parsed = (known.record.id, fingerprint, row.path.clone());
    let tree = match cached(&parsed) {
        Some(tree) => tree,
        None => {
            let layout = (
                known.record.id,
                fingerprint,
                format!("{}\0layout", row.path),
            );
            cached_tree(layout, || {
                ctx.catalog
                    .kind_row(ROOT_LAYOUTS, known.record.id, row.path.as_bytes())
                    .map_err(ToolError::internal)?
                    .ok_or_else(|| {
                        ToolError::new(
                            "corrupted_file",
                            format!(
                                "the catalog holds no layout of tree '{}' in '{}'",
                                row.path,
                                known.abs().display()
                            ),
                            "Call without dry_run to read the file",
                        )
                    })
                    .map(TreeObject::TTree)
            })?
        }
    };
    Ok(Part {
        fingerprint,
        known,
        row,
        file: None,
        tree,
        order: None,
        shown: String::new(),
    })
}

/// Trees parsed from the files the analysis tools opened, by (file id,
/// identity of the opened version, tree path): a dataset's second call opens
/// each file and reads its header, nothing more. An entry can be outdated
/// (its version gone) but never wrong; the cache is emptied when its trees
/// pass `TREE_CACHE_BYTES` (as estimated by `tree_bytes`).
type TreeKey = (u64, u64, String);

#[derive(Default)]
struct TreeCache {
    trees: HashMap<TreeKey, Arc<TreeObject>>,
    bytes: usize,
}

const TREE_CACHE_BYTES: usize = 32 << 20;

fn tree_cache() -> &'static Mutex<TreeCache> {
    static CACHE: OnceLock<Mutex<TreeCache>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn cached(key: &TreeKey) -> Option<Arc<TreeObject>> {
    tree_cache()
        .lock()
        .expect("tree cache")
        .trees
        .get(key)
        .cloned()
}

/// The tree under `key`, parsed (and kept) on first use. A tree path holds no
/// NUL, so keys ending in `\0layout` (the catalog's layouts) never name a
/// parsed tree.
fn cached_tree(
    key: TreeKey,
    parse: impl FnOnce() -> Result<TreeObject, ToolError>,
) -> Result<Arc<TreeObject>, ToolError> {
    let cache = tree_cache();
    if let Some(hit) = cached(&key) {
        return Ok(hit);
    }
    let tree = Arc::new(parse()?);
    let size = tree_bytes(&tree);
    let mut c = cache.lock().expect("tree cache");
    if c.bytes + size > TREE_CACHE_BYTES {
        c.trees.clear();
        c.bytes = 0;
    }
    if size <= TREE_CACHE_BYTES {
        c.bytes += size;
        c.trees.insert(key, tree.clone());
    }
    Ok(tree)
}

/// About the memory a tree holds: its names, basket tables and embedded
/// baskets; an RNTuple's columns and page lists.
fn tree_bytes(object: &TreeObject) -> usize {
    let tree = match object {
        TreeObject::TTree(tree) => tree,
        TreeObject::RNTuple(nt) => {
            let pages: usize = nt
                .clusters
                .iter()
                .flat_map(|c| &c.columns)
                .map(|r| 48 * r.pages.len() + 64)
                .sum();
            return 256 + 512 * nt.columns.len() + pages;
        }
    };
    fn branch(b: &Branch) -> usize {
        256 + b.name.len()
            + b.title.len()
            + 20 * b.basket_entry.len()
            + b.embedded_baskets.iter().map(Vec::len).sum::<usize>()
            + 128 * b.leaves.len()
            + b.branches.iter().map(branch).sum::<usize>()
    }
    256 + tree.branches.iter().map(branch).sum::<usize>()
}

/// The position of the branch `path` among a tree's branches, depth first:
/// the sub-key order of its `root_branches` and `root_stats` rows.
fn branch_order(object: &TreeObject, path: &str) -> Option<u32> {
    let tree = match object {
        TreeObject::TTree(tree) => tree,
        // An RNTuple's rows are its columns, in order.
        TreeObject::RNTuple(nt) => {
            let at = nt.columns.iter().position(|c| c.path == path)?;
            return u32::try_from(at).ok();
        }
    };
    fn count(branches: &[Branch]) -> u32 {
        branches.iter().map(|b| 1 + count(&b.branches)).sum()
    }
    fn walk(branches: &[Branch], parent: &str, path: &str, at: &mut u32) -> bool {
        for b in branches {
            let mine = if parent.is_empty() {
                b.name.clone()
            } else {
                format!("{parent}/{}", b.name)
            };
            if mine == path {
                return true;
            }
            *at += 1;
            let below = path
                .strip_prefix(mine.as_str())
                .is_some_and(|r| r.starts_with('/'));
            if below {
                if walk(&b.branches, &mine, path, at) {
                    return true;
                }
            } else {
                *at += count(&b.branches);
            }
        }
        false
    }
    let mut at = 0;
    walk(&tree.branches, "", path, &mut at).then_some(at)
}

/// The statistics row of the branch `path` (a branch, not a leaf of a leaf
/// list), when the catalog holds it for the version of the file the part
/// reads; none otherwise (not computed yet, or the file changed since: another
/// version's ranges could rule out clusters that hold passing entries now).
pub(super) fn stats_row(
    ctx: &Context,
    part: &Part,
    path: &str,
) -> Result<Option<StatsRow>, ToolError> {
    let Some(order) = branch_order(&part.tree, path) else {
        return Ok(None);
    };
    let rows: Option<Vec<StatsRow>> = part.known.rows_of_version(
        ctx,
        ROOT_STATS,
        part.fingerprint,
        &branch_key(&part.row.path, order),
    )?;
    Ok(rows.and_then(|mut r| r.pop()))
}

/// Gives the columns `cut` reads, in every part, the value ranges the
/// statistics pass recorded for their baskets (when it has run on the version
/// of the file read), so the scan can skip the clusters the cut rules out.
/// Without a cut there is nothing to skip.
pub(super) fn add_bounds(
    ctx: &Context,
    t: &OpenTree,
    columns: &mut [TreeColumns<'_>],
    cut: Option<&Plan>,
) -> Result<(), ToolError> {
    let Some(cut) = cut else {
        return Ok(());
    };
    for (part, columns) in t.parts.iter().zip(columns.iter_mut()) {
        for &c in &cut.columns {
            let info = &columns.columns[c];
            if info.origin.leaf().is_some() {
                continue;
            }
            let Some(stats) = stats_row(ctx, part, &info.path)? else {
                continue;
            };
            let mut at = 0;
            let spans = stats
                .baskets
                .iter()
                .map(|b| {
                    let start = at;
                    at += b.entries;
                    BasketSpan {
                        entries: start..at,
                        values: b.values,
                        finite: b.finite,
                        min: b.min,
                        max: b.max,
                    }
                })
                .collect();
            let entries = columns.entries;
            columns.bounds.add_column(c, spans, entries);
        }
    }
    Ok(())
}

/// A branch's cached range over every file read (values, or multiplicity for
/// `flatten=false`), when the catalog holds statistics of it for each file's
/// version: a range without a pass over the files.
pub(super) fn cached_range(
    ctx: &Context,
    t: &OpenTree,
    columns: &[TreeColumns<'_>],
    branch: &str,
    multiplicity: bool,
) -> Result<Option<(f64, f64)>, ToolError> {
    let Some(c) = columns.first().and_then(|c| c.find(branch)) else {
        return Ok(None);
    };
    let mut range: Option<(f64, f64)> = None;
    for (part, columns) in t.parts.iter().zip(columns) {
        let info = &columns.columns[c];
        if info.origin.leaf().is_some() {
            return Ok(None);
        }
        let Some(stats) = stats_row(ctx, part, &info.path)? else {
            return Ok(None);
        };
        let summary = if multiplicity {
            stats.multiplicity
        } else {
            stats.values
        };
        let Some(s) = summary else {
            return Ok(None);
        };
        range = Some(range.map_or((s.min, s.max), |(lo, hi)| (lo.min(s.min), hi.max(s.max))));
    }
    Ok(range)
}

#[cfg(test)]
mod tests {
    use super::branch_order;
    use crate::analysis::TreeObject;
    use crate::formats::root::{Branch, Tree};

    fn branch(name: &str, children: Vec<Branch>) -> Branch {
        Branch {
            name: name.into(),
            title: String::new(),
            class_name: "TBranch".into(),
            compress: 0,
            entries: 0,
            tot_bytes: 0,
            zip_bytes: 0,
            write_basket: 0,
            basket_entry: Vec::new(),
            basket_seek: Vec::new(),
            basket_bytes: Vec::new(),
            embedded_baskets: Vec::new(),
            leaves: Vec::new(),
            branches: children,
            element: None,
        }
    }

    /// Depth first, as indexing numbers rows: a(0) a/x(1) a/x/p(2) a/y(3) b(4).
    #[test]
    fn branches_are_numbered_depth_first() {
        let tree = Tree {
            name: "t".into(),
            title: String::new(),
            entries: 0,
            tot_bytes: 0,
            zip_bytes: 0,
            branches: vec![
                branch(
                    "a",
                    vec![branch("x", vec![branch("p", vec![])]), branch("y", vec![])],
                ),
                branch("b", vec![]),
            ],
        };
        let tree = TreeObject::TTree(tree);
        let order = |p| branch_order(&tree, p);
        assert_eq!(
            ["a", "a/x", "a/x/p", "a/y", "b"].map(order),
            [Some(0), Some(1), Some(2), Some(3), Some(4)]
        );
        assert_eq!(order("c"), None);
        assert_eq!(order("a/z"), None);
    }
}
