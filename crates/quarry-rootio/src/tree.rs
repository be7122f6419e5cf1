//! The TTree model: a tree's entries and its branches (nested as ROOT nests them),
//! each with its leaves and the location of its baskets, including baskets kept
//! inside the TTree object itself rather than written as keys of their own.

use super::cursor::Cursor;
use super::object::{
    AnyObject, Framing, Referent, Refs, read_object_any, read_tnamed, read_tobjarray,
};
use super::streamer::Streamers;
use crate::FormatError;

/// Serializable so the catalog can keep a tree's layout (`Tree::skeleton`) and
/// plan over it without opening the file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Tree {
    pub name: String,
    pub title: String,
    pub entries: i64,
    pub tot_bytes: i64,
    pub zip_bytes: i64,
    pub branches: Vec<Branch>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Branch {
    pub name: String,
    pub title: String,
    /// TBranch, TBranchElement, TBranchObject...
    pub class_name: String,
    pub compress: i32,
    pub entries: i64,
    pub tot_bytes: i64,
    pub zip_bytes: i64,
    /// Number of baskets written to the file as keys of their own.
    pub write_basket: usize,
    /// First entry of each basket, one more than the written baskets.
    pub basket_entry: Vec<i64>,
    pub basket_seek: Vec<i64>,
    pub basket_bytes: Vec<i32>,
    /// Baskets stored inside the TTree object (written before the file was closed
    /// with entries still in memory): each one's streamed bytes.
    pub embedded_baskets: Vec<Vec<u8>>,
    pub leaves: Vec<Leaf>,
    pub branches: Vec<Branch>,
    pub element: Option<Element>,
}

impl Branch {
    /// A copy without the baskets kept inside it and the branches below it
    /// (which `Tree::skeleton` copies its own way).
    fn clone_without_children(&self) -> Branch {
        Branch {
            name: self.name.clone(),
            title: self.title.clone(),
            class_name: self.class_name.clone(),
            compress: self.compress,
            entries: self.entries,
            tot_bytes: self.tot_bytes,
            zip_bytes: self.zip_bytes,
            write_basket: self.write_basket,
            basket_entry: self.basket_entry.clone(),
            basket_seek: self.basket_seek.clone(),
            basket_bytes: self.basket_bytes.clone(),
            embedded_baskets: Vec::new(),
            leaves: self.leaves.clone(),
            branches: Vec::new(),
            element: self.element.clone(),
        }
    }
}

/// What a TBranchElement adds: the class member it holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Element {
    pub class_name: String,
    pub parent_name: String,
    pub clones_name: String,
    pub id: i32,
    pub kind: i32,
    pub streamer_type: i32,
    pub count_branch: Option<String>,
    /// The member's C++ type from the streamer info (`vector<short>`, `string`),
    /// when the file describes the class.
    pub member_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Leaf {
    pub name: String,
    pub title: String,
    /// TLeafF, TLeafI, TLeafElement...
    pub class_name: String,
    pub len: i32,
    pub len_type: i32,
    pub is_unsigned: bool,
    /// The name of the leaf holding this leaf's per-entry length.
    pub count: Option<String>,
    /// TLeafElement's streamer element id and type.
    pub element_id: Option<i32>,
    pub element_type: Option<i32>,
}

enum Part {
    Branch(Box<Branch>),
    Leaf(Leaf),
    Basket(Vec<u8>),
    Other,
}

type TreeRefs = Refs<Leaf>;

fn remember(part: &Part, _class: &str) -> Referent<Leaf> {
    match part {
        Part::Leaf(l) => Referent::Leaf(l.clone()),
        Part::Branch(b) => Referent::Branch(b.name.clone()),
        _ => Referent::Other,
    }
}

fn read_part(
    c: &mut Cursor<'_>,
    refs: &mut TreeRefs,
    class: &str,
    end: Option<usize>,
) -> Result<Part, FormatError> {
    if class.starts_with("TBranch") {
        return read_branch(c, refs, class).map(|b| Part::Branch(Box::new(b)));
    }
    if class.starts_with("TLeaf") {
        return read_leaf(c, refs, class).map(Part::Leaf);
    }
    let Some(end) = end else {
        return Err(FormatError::Unsupported(format!(
            "a {class} without a byte count inside a TTree"
        )));
    };
    let start = c.pos();
    c.set_pos(end, class)?;
    Ok(if class == "TBasket" {
        Part::Basket(c.between(start, end).to_vec())
    } else {
        Part::Other
    })
}

fn parts(
    c: &mut Cursor<'_>,
    refs: &mut TreeRefs,
) -> Result<Vec<AnyObject<Part, Leaf>>, FormatError> {
    read_tobjarray(c, refs, &mut read_part, &remember)
}

fn i64_array(c: &mut Cursor<'_>, n: usize, what: &str) -> Result<Vec<i64>, FormatError> {
    c.fits(n, 8, what)?;
    (0..n).map(|_| c.i64(what)).collect()
}

fn i32_array(c: &mut Cursor<'_>, n: usize, what: &str) -> Result<Vec<i32>, FormatError> {
    c.fits(n, 4, what)?;
    (0..n).map(|_| c.i32(what)).collect()
}

fn count(n: i64, what: &str) -> Result<usize, FormatError> {
    usize::try_from(n).map_err(|_| FormatError::Corrupt(format!("negative {what} ({n})")))
}

/// Reads a TTree object (the uncompressed bytes of its key; `key_len` is the
/// key header's length, from which object references count).
pub fn read_tree(bytes: &[u8], key_len: u16, origin: u64) -> Result<Tree, FormatError> {
    let c = &mut Cursor::new(bytes, origin);
    let refs = &mut TreeRefs::new(key_len);
    let f = Framing::read(c, "TTree")?;
    let v = f.version;
    if !(16..=20).contains(&v) {
        return Err(FormatError::Unsupported(format!("TTree class version {v}")));
    }
    let (name, title) = read_tnamed(c)?;
    for att in ["TAttLine", "TAttFill", "TAttMarker"] {
        Framing::skip(c, att)?;
    }
    let entries = c.i64("fEntries")?;
    let tot_bytes = c.i64("fTotBytes")?;
    let zip_bytes = c.i64("fZipBytes")?;
    c.i64("fSavedBytes")?;
    if v >= 18 {
        c.i64("fFlushedBytes")?;
    }
    c.f64("fWeight")?;
    c.skip(12, "fTimerInterval, fScanField, fUpdate")?;
    if v >= 17 {
        c.i32("fDefaultEntryOffsetLen")?;
    }
    let cluster_ranges = if v >= 19 {
        c.u32("fNClusterRange")? as usize
    } else {
        0
    };
    c.skip(32, "fMaxEntries, fMaxEntryLoop, fMaxVirtualSize, fAutoSave")?;
    if v >= 18 {
        c.i64("fAutoFlush")?;
    }
    c.i64("fEstimate")?;
    if v >= 19 {
        c.skip(1, "array marker")?;
        i64_array(c, cluster_ranges, "fClusterRangeEnd")?;
        c.skip(1, "array marker")?;
        i64_array(c, cluster_ranges, "fClusterSize")?;
    }
    if v >= 20 {
        Framing::skip(c, "TIOFeatures")?;
    }
    let branches = branches_of(parts(c, refs)?)?;
    Ok(Tree {
        name,
        title,
        entries,
        tot_bytes,
        zip_bytes,
        branches,
    })
}

impl Tree {
    /// The tree without its embedded baskets' data (each keeps its header,
    /// which says how many entries it holds): its layout, for keeping in the
    /// catalog. Columns and plans are made from it as from the tree itself;
    /// reading an embedded basket's values from it is an error, never wrong
    /// values.
    pub fn skeleton(&self) -> Tree {
        fn strip(branches: &[Branch]) -> Vec<Branch> {
            branches
                .iter()
                .map(|b| Branch {
                    embedded_baskets: b
                        .embedded_baskets
                        .iter()
                        .map(|e| super::basket::header_only(e))
                        .collect(),
                    branches: strip(&b.branches),
                    ..b.clone_without_children()
                })
                .collect()
        }
        Tree {
            branches: strip(&self.branches),
            ..self.clone_without_branches()
        }
    }

    fn clone_without_branches(&self) -> Tree {
        Tree {
            name: self.name.clone(),
            title: self.title.clone(),
            entries: self.entries,
            tot_bytes: self.tot_bytes,
            zip_bytes: self.zip_bytes,
            branches: Vec::new(),
        }
    }

    /// Whether any branch holds a class member (TBranchElement).
    pub(crate) fn has_elements(&self) -> bool {
        fn any(branches: &[Branch]) -> bool {
            branches
                .iter()
                .any(|b| b.element.is_some() || any(&b.branches))
        }
        any(&self.branches)
    }

    /// Looks up each member branch's C++ type in the class layouts.
    pub(crate) fn resolve_member_types(&mut self, streamers: &Streamers) {
        fn resolve(branches: &mut [Branch], streamers: &Streamers) {
            for b in branches {
                if let Some(e) = &mut b.element {
                    let member = member_name(&b.name);
                    e.member_type = streamers
                        .member(&e.class_name, e.id, member)
                        .map(|m| m.type_name.clone());
                }
                resolve(&mut b.branches, streamers);
            }
        }
        resolve(&mut self.branches, streamers);
    }
}

/// The class member a split branch holds: its name's last dotted part, without
/// an array suffix (`evt.P3.Px` -> `Px`, `ArrayI16[10]` -> `ArrayI16`).
fn member_name(branch: &str) -> &str {
    let last = branch.rsplit('.').next().unwrap_or(branch);
    last.split('[').next().unwrap_or(last)
}

fn branches_of(items: Vec<AnyObject<Part, Leaf>>) -> Result<Vec<Branch>, FormatError> {
    items
        .into_iter()
        .filter_map(|item| match item {
            AnyObject::New(Part::Branch(b)) => Some(Ok(*b)),
            AnyObject::Null => None,
            _ => Some(Err(FormatError::Corrupt(
                "a TTree's branch list holds something else".into(),
            ))),
        })
        .collect()
}

fn read_branch(
    c: &mut Cursor<'_>,
    refs: &mut TreeRefs,
    class: &str,
) -> Result<Branch, FormatError> {
    if class == "TBranch" {
        return read_tbranch(c, refs, class);
    }
    // Derived branch classes stream their TBranch base first.
    let f = Framing::read(c, class)?;
    let mut branch = read_tbranch(c, refs, class)?;
    if class == "TBranchElement" {
        let class_name = c.tstring("fClassName")?;
        let parent_name = c.tstring("fParentName")?;
        let clones_name = c.tstring("fClonesName")?;
        c.u32("fCheckSum")?;
        if f.version >= 10 {
            c.i16("fClassVersion")?;
        } else {
            c.i32("fClassVersion")?;
        }
        let id = c.i32("fID")?;
        let kind = c.i32("fType")?;
        let streamer_type = c.i32("fStreamerType")?;
        c.i32("fMaximum")?;
        let count_branch = match read_object_any(c, refs, &mut read_part, &remember)? {
            AnyObject::New(Part::Branch(b)) => Some(b.name),
            AnyObject::Earlier(Referent::Branch(name)) => Some(name),
            _ => None,
        };
        branch.element = Some(Element {
            class_name,
            parent_name,
            clones_name,
            id,
            kind,
            streamer_type,
            count_branch,
            member_type: None,
        });
    }
    f.finish(c, class)?;
    Ok(branch)
}

fn read_tbranch(
    c: &mut Cursor<'_>,
    refs: &mut TreeRefs,
    class: &str,
) -> Result<Branch, FormatError> {
    let f = Framing::read(c, "TBranch")?;
    let v = f.version;
    if !(10..=13).contains(&v) {
        return Err(FormatError::Unsupported(format!(
            "TBranch class version {v}"
        )));
    }
    let (name, title) = read_tnamed(c)?;
    Framing::skip(c, "TAttFill")?;
    let compress = c.i32("fCompress")?;
    c.i32("fBasketSize")?;
    c.i32("fEntryOffsetLen")?;
    let write_basket = count(i64::from(c.i32("fWriteBasket")?), "fWriteBasket")?;
    c.i64("fEntryNumber")?;
    if v >= 13 {
        Framing::skip(c, "TIOFeatures")?;
    }
    c.i32("fOffset")?;
    let max_baskets = c.u32("fMaxBaskets")? as usize;
    c.i32("fSplitLevel")?;
    let entries = c.i64("fEntries")?;
    if v >= 11 {
        c.i64("fFirstEntry")?;
    }
    let tot_bytes = c.i64("fTotBytes")?;
    let zip_bytes = c.i64("fZipBytes")?;
    let branches = branches_of(parts(c, refs)?)?;
    let leaves = parts(c, refs)?
        .into_iter()
        .filter_map(|item| match item {
            AnyObject::New(Part::Leaf(l)) | AnyObject::Earlier(Referent::Leaf(l)) => Some(l),
            _ => None,
        })
        .collect();
    let embedded_baskets = parts(c, refs)?
        .into_iter()
        .filter_map(|item| match item {
            AnyObject::New(Part::Basket(bytes)) => Some(bytes),
            _ => None,
        })
        .collect();
    c.skip(1, "array marker")?;
    let basket_bytes = i32_array(c, max_baskets, "fBasketBytes")?;
    c.skip(1, "array marker")?;
    let basket_entry = i64_array(c, max_baskets, "fBasketEntry")?;
    c.skip(1, "array marker")?;
    let basket_seek = i64_array(c, max_baskets, "fBasketSeek")?;
    if write_basket > max_baskets {
        return Err(FormatError::Corrupt(format!(
            "branch '{name}' has {write_basket} baskets written but room for {max_baskets}"
        )));
    }
    f.finish(c, "TBranch")?;
    Ok(Branch {
        name,
        title,
        class_name: class.to_string(),
        compress,
        entries,
        tot_bytes,
        zip_bytes,
        write_basket,
        basket_entry,
        basket_seek,
        basket_bytes,
        embedded_baskets,
        leaves,
        branches,
        element: None,
    })
}

fn read_leaf(c: &mut Cursor<'_>, refs: &mut TreeRefs, class: &str) -> Result<Leaf, FormatError> {
    let outer = Framing::read(c, class)?;
    let inner = Framing::read(c, "TLeaf")?;
    let (name, title) = read_tnamed(c)?;
    let len = c.i32("fLen")?;
    let len_type = c.i32("fLenType")?;
    c.i32("fOffset")?;
    c.u8("fIsRange")?;
    let is_unsigned = c.u8("fIsUnsigned")? != 0;
    let count = match read_object_any(c, refs, &mut read_part, &remember)? {
        AnyObject::New(Part::Leaf(l)) | AnyObject::Earlier(Referent::Leaf(l)) => Some(l.name),
        _ => None,
    };
    inner.finish(c, "TLeaf")?;
    let (element_id, element_type) = if class == "TLeafElement" {
        (Some(c.i32("fID")?), Some(c.i32("fType")?))
    } else {
        (None, None)
    };
    outer.finish(c, class)?;
    Ok(Leaf {
        name,
        title,
        class_name: class.to_string(),
        len,
        len_type,
        is_unsigned,
        count,
        element_id,
        element_type,
    })
}
