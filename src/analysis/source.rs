//! Where a column's values come from: a TTree branch (or one leaf of a leaf
//! list) or a leaf column of an RNTuple. The scans read every column through
//! one `SourceReader`, whose chunks are a branch's baskets or an RNTuple
//! column's pages, so the engine works on either object without converting
//! one into the other (docs/decisions/0061-one-engine-ttree-rntuple.md).

use std::ops::Range;

use crate::formats::FormatError;
use crate::formats::root::{
    Branch, Column, ColumnLayout, ColumnReader, NtupleColumn, NtupleReader, RNTuple, RootFile,
    StoredBasket, Tree, basket_ranges, branch_type,
};

/// A file's tree-like object: a TTree or an RNTuple.
#[derive(Debug)]
pub enum TreeObject {
    TTree(Tree),
    // Boxed: the RNTuple struct is several times the Tree struct's size.
    RNTuple(Box<RNTuple>),
}

impl TreeObject {
    pub fn entries(&self) -> u64 {
        match self {
            TreeObject::TTree(t) => u64::try_from(t.entries).unwrap_or(0),
            TreeObject::RNTuple(n) => n.entries,
        }
    }

    /// `ttree` or `rntuple`, as `inspect_file` names the kinds.
    pub fn kind(&self) -> &'static str {
        match self {
            TreeObject::TTree(_) => "ttree",
            TreeObject::RNTuple(_) => "rntuple",
        }
    }
}

/// What a column reads.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'t> {
    /// A branch, or its leaf `leaf` of a leaf list.
    Branch {
        branch: &'t Branch,
        leaf: Option<usize>,
    },
    /// A leaf column of an RNTuple (`Muon.pt`).
    Ntuple {
        ntuple: &'t RNTuple,
        column: &'t NtupleColumn,
    },
}

impl<'t> Origin<'t> {
    /// The branch read, for a TTree's column.
    pub fn branch(&self) -> Option<&'t Branch> {
        match self {
            Origin::Branch { branch, .. } => Some(branch),
            Origin::Ntuple { .. } => None,
        }
    }

    /// The leaf of a leaf list read, if the column is one.
    pub fn leaf(&self) -> Option<usize> {
        match self {
            Origin::Branch { leaf, .. } => *leaf,
            Origin::Ntuple { .. } => None,
        }
    }

    /// The branch's title (an RNTuple column has none of its own).
    pub fn title(&self) -> &'t str {
        match self {
            Origin::Branch { branch, .. } => &branch.title,
            Origin::Ntuple { .. } => "",
        }
    }

    /// A reader of the column in `file` (the file the object was read from).
    pub fn open<'f>(&self, file: &'f RootFile) -> Result<SourceReader<'f>, FormatError>
    where
        't: 'f,
    {
        Ok(match *self {
            Origin::Branch { branch, leaf } => {
                SourceReader::Branch(file.column_reader(branch, leaf)?)
            }
            Origin::Ntuple { ntuple, column } => {
                SourceReader::Ntuple(Box::new(file.ntuple_reader(ntuple, column)?))
            }
        })
    }

    /// The entries of each of the column's chunks that clusters are cut at:
    /// a branch's baskets, an RNTuple's clusters (every column's pages end
    /// at them).
    pub fn entry_ranges(&self) -> Result<Vec<Range<u64>>, FormatError> {
        match self {
            Origin::Branch { branch, .. } => basket_ranges(branch),
            Origin::Ntuple { ntuple, .. } => Ok(ntuple.cluster_ranges()),
        }
    }

    /// The stored bytes of each chunk `entry_ranges` gives, with its first
    /// entry.
    pub fn chunk_bytes(&self) -> Vec<(u64, u64)> {
        match self {
            Origin::Branch { branch, .. } => {
                let written = branch.write_basket.min(branch.basket_bytes.len());
                branch
                    .basket_entry
                    .iter()
                    .zip(&branch.basket_bytes[..written])
                    .filter_map(|(start, size)| {
                        Some((
                            u64::try_from(*start).ok()?,
                            u64::try_from(*size).unwrap_or(0),
                        ))
                    })
                    .collect()
            }
            Origin::Ntuple { ntuple, column } => ntuple
                .clusters
                .iter()
                .map(|c| c.first_entry)
                .zip(ntuple.column_cluster_bytes(column))
                .collect(),
        }
    }

    /// The object read, to tell two columns of one branch apart (the leaves
    /// of a leaf list share their branch's baskets).
    pub fn chunk_owner(&self) -> *const () {
        match self {
            Origin::Branch { branch, .. } => *branch as *const Branch as *const (),
            Origin::Ntuple { column, .. } => *column as *const NtupleColumn as *const (),
        }
    }

    /// The type `list_branches` shows for a whole branch or an RNTuple
    /// column (a leaf of a leaf list is typed by its layout instead).
    pub fn type_name(&self) -> String {
        match self {
            Origin::Branch { branch, .. } => branch_type(branch).name,
            Origin::Ntuple { column, .. } => column.type_name.clone(),
        }
    }

    pub fn is_ntuple(&self) -> bool {
        matches!(self, Origin::Ntuple { .. })
    }
}

/// A column's reader: a branch's baskets, or an RNTuple column's chunks
/// (pages of its entry-level column), behind one interface.
pub enum SourceReader<'f> {
    Branch(ColumnReader<'f>),
    // Boxed: an RNTuple column's reader holds its read state, three times a
    // branch reader's size.
    Ntuple(Box<NtupleReader<'f>>),
}

impl<'f> SourceReader<'f> {
    /// For a column of a remote file: the file and the stored bytes of its
    /// chunks holding any of `entries` (a branch's baskets, an RNTuple
    /// column's pages).
    pub fn remote_chunks(&self, entries: &Range<u64>) -> Option<(&'f RootFile, Vec<Range<u64>>)> {
        match self {
            SourceReader::Branch(r) if r.file().fetched().is_some() => {
                Some((r.file(), r.basket_bytes_within(entries)))
            }
            SourceReader::Ntuple(r) if r.file().fetched().is_some() => {
                Some((r.file(), r.page_bytes_within(entries)))
            }
            _ => None,
        }
    }

    pub fn layout(&self) -> ColumnLayout {
        match self {
            SourceReader::Branch(r) => r.layout(),
            SourceReader::Ntuple(r) => r.layout(),
        }
    }

    /// The entries of each chunk, in order; together they tile the object.
    pub fn basket_ranges(&self) -> &[Range<u64>] {
        match self {
            SourceReader::Branch(r) => r.basket_ranges(),
            SourceReader::Ntuple(r) => r.basket_ranges(),
        }
    }

    pub fn read_basket(&self, index: usize, into: &mut Column) -> Result<(), FormatError> {
        match self {
            SourceReader::Branch(r) => r.read_basket(index, into),
            SourceReader::Ntuple(r) => r.read_basket(index, into),
        }
    }

    /// The first `entries` of chunk `index` at least (an RNTuple chunk is
    /// read whole: its pages are read whole anyway).
    pub fn read_basket_head(
        &self,
        index: usize,
        entries: usize,
        counts: Option<&[u32]>,
        into: &mut Column,
    ) -> Result<(), FormatError> {
        match self {
            SourceReader::Branch(r) => r.read_basket_head(index, entries, counts, into),
            SourceReader::Ntuple(r) => r.read_basket(index, into),
        }
    }

    /// Whether a head read wants the counter's counts (a branch's only).
    pub fn head_needs_counts(&self) -> bool {
        match self {
            SourceReader::Branch(r) => r.head_needs_counts(),
            SourceReader::Ntuple(_) => false,
        }
    }

    pub fn inflates_part_way(&self) -> bool {
        match self {
            SourceReader::Branch(r) => r.inflates_part_way(),
            SourceReader::Ntuple(_) => false,
        }
    }

    /// Whether chunks can be kept as stored and converted a window at a
    /// time (a branch's baskets of numbers; an RNTuple's pages are decoded).
    pub fn keeps_stored(&self) -> bool {
        match self {
            SourceReader::Branch(r) => r.keeps_stored(),
            SourceReader::Ntuple(_) => false,
        }
    }

    pub fn read_stored(
        &self,
        index: usize,
        into: &mut Option<StoredBasket>,
    ) -> Result<(), FormatError> {
        match self {
            SourceReader::Branch(r) => r.read_stored(index, into),
            SourceReader::Ntuple(_) => Err(FormatError::Unsupported(
                "an RNTuple column is never read as stored".into(),
            )),
        }
    }

    pub fn convert(&self, stored: &StoredBasket, entries: Range<usize>, into: &mut Column) {
        if let SourceReader::Branch(r) = self {
            r.convert(stored, entries, into);
        }
    }

    pub fn recycle(&self, stored: StoredBasket) {
        if let SourceReader::Branch(r) = self {
            r.recycle(stored);
        }
    }

    pub fn empty_column(&self) -> Column {
        match self {
            SourceReader::Branch(r) => r.empty_column(),
            SourceReader::Ntuple(r) => r.empty_column(),
        }
    }
}
