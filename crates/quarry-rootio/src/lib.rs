//! quarry's own reader of CERN ROOT files: the file's structure (header,
//! compressed records, keys and nested directories), the streamer infos,
//! TTree branches decoded basket by basket into typed `Column`s, RNTuple
//! fields and columns (`rntuple`), and histograms. Every read is bounds
//! checked against the file, so a truncated, corrupted or hostile file yields
//! a `FormatError`, never a panic or a runaway allocation.
//!
//! It reads from a local file, from memory, or through a `ByteSource` (positioned
//! reads, which quarry's remote clients implement); it knows nothing of quarry's
//! catalog, tools or configuration. README.md has a worked example.
//!
//! ```
//! # fn main() -> Result<(), quarry_rootio::FormatError> {
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/root/uproot-histograms.root");
//! let root = quarry_rootio::RootFile::open(std::fs::File::open(path)?)?;
//! let keys = root.walk()?;
//! let key = keys.iter().find(|k| quarry_rootio::is_histogram(&k.key.class_name)).unwrap();
//! let histogram = root.histogram(&key.key)?;
//! assert!(histogram.dims() >= 1);
//! # Ok(())
//! # }
//! ```

/// README.md's example, run as a test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

mod basket;
mod byte_source;
mod column;
mod compression;
mod cursor;
mod header;
mod hist;
mod keys;
mod object;
mod reader;
pub mod rntuple;
mod spare;
mod stored;
mod streamer;
mod tree;
mod types;
mod values;

use std::collections::HashSet;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

pub use basket::basket_ranges;
pub use column::Column;
pub use compression::{decompress, decompress_into};
pub use header::{MAGIC, RootHeader, compression_name};
pub use hist::{Axis, Histogram, Profile, ProfileErrors, is_histogram};
pub use keys::Key;
pub use reader::{ColumnLayout, ColumnReader, column_layout};
pub use rntuple::{FieldData, NtupleColumn, NtupleField, NtupleReader, RNTuple, is_rntuple};
pub use stored::StoredBasket;
pub use tree::{Branch, Element, Leaf, Tree};
pub use types::{BranchType, LeafType, Prim, branch_type};
pub use values::Values;

use cursor::Cursor;
use header::{parse_header, read_header};
use keys::DirectoryRecord;
use streamer::Streamers;

pub use byte_source::{ByteSource, Fetched};
pub use quarry_format_error::FormatError;

/// The repository this crate lives in: its tests read the ROOT files kept in
/// quarry's `testdata/` and `tests/data/`.
#[cfg(test)]
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Directories nested deeper than this are taken for a loop in a damaged file.
const MAX_DEPTH: usize = 64;

/// Where a ROOT file's bytes come from.
enum Source {
    File(File),
    /// Bytes already in memory (tests, fuzzing).
    Memory(Vec<u8>),
    /// Any other source: a remote file read by ranges.
    Shared(Arc<dyn ByteSource>),
}

/// An open ROOT file.
pub struct RootFile {
    source: Source,
    size: u64,
    pub header: RootHeader,
    /// The class layouts, read on first need.
    streamers: OnceLock<Result<Streamers, FormatError>>,
    /// Bytes read from the file so far (what a skipped cluster saves shows here).
    bytes_read: AtomicU64,
}

/// A key with the directory path it lives in ("" for the top directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathedKey {
    pub dir: String,
    pub key: Key,
}

/// The key at `path` with the highest cycle (what ROOT's `Get` returns), of class
/// `class` when given.
pub fn latest<'a>(keys: &'a [PathedKey], path: &str, class: Option<&str>) -> Option<&'a PathedKey> {
    keys.iter()
        .filter(|k| k.path() == path && class.is_none_or(|c| k.key.class_name == c))
        .max_by_key(|k| k.key.cycle)
}

impl PathedKey {
    /// "dir/sub/name", as uproot and ROOT name objects.
    pub fn path(&self) -> String {
        if self.dir.is_empty() {
            self.key.name.clone()
        } else {
            format!("{}/{}", self.dir, self.key.name)
        }
    }
}

impl RootFile {
    /// Reads a ROOT file from an open handle (opened beneath its root by the
    /// caller: this reader never resolves a path).
    pub fn open(mut file: File) -> Result<RootFile, FormatError> {
        let size = file.metadata()?.len();
        let header = read_header(&mut file, size)?;
        Ok(RootFile {
            source: Source::File(file),
            size,
            header,
            streamers: OnceLock::new(),
            bytes_read: AtomicU64::new(0),
        })
    }

    /// A ROOT file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<RootFile, FormatError> {
        let size = bytes.len() as u64;
        let header = parse_header(&bytes[..bytes.len().min(64)], size)?;
        Ok(RootFile {
            source: Source::Memory(bytes),
            size,
            header,
            streamers: OnceLock::new(),
            bytes_read: AtomicU64::new(0),
        })
    }

    /// A ROOT file read through a byte source (a remote file, by ranges).
    pub fn from_source(source: Arc<dyn ByteSource>) -> Result<RootFile, FormatError> {
        let size = source.size();
        let mut head = vec![0u8; size.min(64) as usize];
        source.read_into(0, &mut head)?;
        let header = parse_header(&head, size)?;
        Ok(RootFile {
            source: Source::Shared(source),
            size,
            header,
            streamers: OnceLock::new(),
            bytes_read: AtomicU64::new(head.len() as u64),
        })
    }

    /// Says which byte ranges are about to be read (a cluster's baskets): a
    /// remote file fetches them in one vectored request; a local one ignores it.
    /// `stop` ends a fetch in flight (the call was cancelled).
    pub fn prefetch(
        &self,
        ranges: &[Range<u64>],
        stop: &(dyn Fn() -> bool + Send + Sync),
    ) -> Result<(), FormatError> {
        match &self.source {
            Source::Shared(source) => Ok(source.prefetch_until(ranges, stop)?),
            Source::File(_) | Source::Memory(_) => Ok(()),
        }
    }

    /// What a remote file has fetched from storage (`None` for a local file).
    pub fn fetched(&self) -> Option<Fetched> {
        match &self.source {
            Source::Shared(source) => source.fetched(),
            Source::File(_) | Source::Memory(_) => None,
        }
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// How many bytes this handle has read from the file so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// Reads `len` bytes at `offset`, refusing ranges outside the file.
    pub fn read_at(&self, offset: u64, len: usize, what: &str) -> Result<Vec<u8>, FormatError> {
        let mut buf = Vec::new();
        self.read_over(offset, len, what, &mut buf)?;
        Ok(buf)
    }

    /// `read_at` over the start of a buffer the caller keeps: `buf` grows
    /// when too short but keeps a longer length (its tail stale), so a pooled
    /// buffer is not zeroed again each time it goes from a small read back to
    /// a large one.
    fn read_over(
        &self,
        offset: u64,
        len: usize,
        what: &str,
        buf: &mut Vec<u8>,
    ) -> Result<(), FormatError> {
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|end| end > self.size) {
            return Err(FormatError::Corrupt(format!(
                "{what} at byte {offset} ({len} bytes) lies beyond the end of the file ({} bytes)",
                self.size
            )));
        }
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let buf = &mut buf[..len];
        self.bytes_read.fetch_add(len as u64, Ordering::Relaxed);
        match &self.source {
            Source::File(file) => file.read_exact_at(buf, offset)?,
            Source::Shared(source) => source.read_into(offset, buf)?,
            Source::Memory(bytes) => {
                buf.copy_from_slice(&bytes[offset as usize..offset as usize + len])
            }
        }
        Ok(())
    }

    /// The top directory's record, which follows its name record at `begin`.
    fn top_directory(&self) -> Result<DirectoryRecord, FormatError> {
        let at = self.header.begin + u64::from(self.header.nbytes_name);
        let buf = self.read_at(
            at,
            42.min((self.size - at.min(self.size)) as usize),
            "top directory",
        )?;
        DirectoryRecord::read(&mut Cursor::new(&buf, at))
    }

    fn keys_of(&self, dir: DirectoryRecord) -> Result<Vec<Key>, FormatError> {
        let buf = self.read_at(dir.seek_keys, dir.nbytes_keys as usize, "key list")?;
        keys::read_key_list(&mut Cursor::new(&buf, dir.seek_keys))
    }

    /// The uncompressed bytes of a key's object.
    pub fn object(&self, key: &Key) -> Result<Vec<u8>, FormatError> {
        let stored = self.read_at(
            key.seek_data(),
            key.stored_len() as usize,
            &format!("object '{}'", key.name),
        )?;
        decompress(&stored, key.obj_len as usize)
    }

    /// Reads the TTree stored under `key`.
    pub fn tree(&self, key: &Key) -> Result<Tree, FormatError> {
        if key.class_name != "TTree" {
            return Err(FormatError::Unsupported(format!(
                "'{}' is a {}, not a TTree",
                key.name, key.class_name
            )));
        }
        let bytes = self.object(key)?;
        let mut tree = tree::read_tree(&bytes, key.key_len, key.seek_data())?;
        // A layout that cannot be read leaves those members unsupported; the
        // rest of the tree is still readable.
        if tree.has_elements()
            && let Ok(streamers) = self.streamers()
        {
            tree.resolve_member_types(streamers);
        }
        Ok(tree)
    }

    /// How many classes the file's streamer info record describes. A tree reads the
    /// record only when one of its branches needs a class layout; this reads it
    /// regardless (the fuzz target parses every record it is given this way).
    pub fn described_classes(&self) -> Result<usize, FormatError> {
        Ok(self.streamers()?.class_count())
    }

    /// The file's class layouts (its streamer info record).
    fn streamers(&self) -> Result<&Streamers, FormatError> {
        self.streamers
            .get_or_init(|| self.read_streamers())
            .as_ref()
            .map_err(Clone::clone)
    }

    fn read_streamers(&self) -> Result<Streamers, FormatError> {
        let at = self.header.seek_info;
        let head = self.read_at(
            at,
            1024.min((self.size - at.min(self.size)) as usize),
            "streamer info key",
        )?;
        let key = Key::read(&mut Cursor::new(&head, at))?;
        let bytes = self.object(&key)?;
        streamer::read_streamers(&bytes, key.key_len, key.seek_data())
    }

    /// Reads the histogram stored under `key`.
    pub fn histogram(&self, key: &Key) -> Result<Histogram, FormatError> {
        let bytes = self.object(key)?;
        hist::read_histogram(&bytes, &key.class_name, key.seek_data())
    }

    /// Every key of the file, depth first in key-list order: each directory's key
    /// is followed by the keys inside it.
    pub fn walk(&self) -> Result<Vec<PathedKey>, FormatError> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        self.walk_dir(self.top_directory()?, "", 0, &mut seen, &mut out)?;
        Ok(out)
    }

    fn walk_dir(
        &self,
        dir: DirectoryRecord,
        path: &str,
        depth: usize,
        seen: &mut HashSet<u64>,
        out: &mut Vec<PathedKey>,
    ) -> Result<(), FormatError> {
        if depth > MAX_DEPTH || !seen.insert(dir.seek_keys) {
            return Err(FormatError::Corrupt(format!(
                "directory '{path}' loops back on itself or nests too deep"
            )));
        }
        for key in self.keys_of(dir)? {
            let is_dir = key.is_directory();
            let entry = PathedKey {
                dir: path.to_string(),
                key,
            };
            let sub_path = entry.path();
            let record = is_dir
                .then(|| self.object(&entry.key))
                .transpose()?
                .map(|bytes| DirectoryRecord::read(&mut Cursor::new(&bytes, entry.key.seek_data())))
                .transpose()?;
            out.push(entry);
            if let Some(record) = record {
                self.walk_dir(record, &sub_path, depth + 1, seen, out)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_directories_are_walked_depth_first() {
        let path = std::path::Path::new(crate::REPO).join("testdata/root/uproot-nesteddirs.root");
        let keys = RootFile::open(std::fs::File::open(path).unwrap())
            .unwrap()
            .walk()
            .unwrap();
        let paths: Vec<String> = keys.iter().map(PathedKey::path).collect();
        // The layout the test corpus documents: one, one/two, three, each with a tree.
        assert_eq!(
            paths,
            [
                "one",
                "one/two",
                "one/two/tree",
                "one/tree",
                "three",
                "three/tree"
            ]
        );
        assert!(keys[0].key.is_directory() && !keys[2].key.is_directory());
    }

    #[test]
    fn reads_beyond_the_end_are_refused() {
        let path = std::path::Path::new(crate::REPO).join("testdata/root/uproot-histograms.root");
        let f = RootFile::open(std::fs::File::open(path).unwrap()).unwrap();
        assert!(f.read_at(5000, 1000, "probe").is_err());
        assert!(f.read_at(u64::MAX - 2, 10, "probe").is_err());
        assert_eq!(f.read_at(0, 4, "probe").unwrap(), b"root");
    }

    #[test]
    fn reads_over_a_longer_buffer_keep_its_tail() {
        let path = std::path::Path::new(crate::REPO).join("testdata/root/uproot-histograms.root");
        let f = RootFile::open(std::fs::File::open(path).unwrap()).unwrap();
        let mut buf = vec![7u8; 10];
        f.read_over(0, 4, "probe", &mut buf).unwrap();
        assert_eq!(buf, [b'r', b'o', b'o', b't', 7, 7, 7, 7, 7, 7]);
        let mut short = Vec::new();
        f.read_over(0, 4, "probe", &mut short).unwrap();
        assert_eq!(short, b"root");
    }
}
