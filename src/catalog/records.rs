//! What the catalog stores about each file, and how values are encoded.

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::formats::Kind;

/// One indexed file (the value of the `files` table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Stable id of this file's entry; kind tables key their rows by it.
    pub id: u64,
    pub info: FileInfo,
}

/// What the indexer found out about a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileInfo {
    pub kind: Kind,
    pub size: u64,
    pub mtime_ns: i64,
    /// The file's identity (`fingerprint`): a changed fingerprint means
    /// re-extract, and the rows stored describe the file only while it holds.
    pub fingerprint: u64,
    pub status: FileStatus,
    pub indexed_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileStatus {
    Ok,
    Failed(String),
}

impl FileStatus {
    pub fn is_failed(&self) -> bool {
        matches!(self, FileStatus::Failed(_))
    }
}

/// The identity of a file as the catalog records it: size, modification time,
/// inode, device and status-change time. A write-then-rename save gives a new
/// inode; an in-place rewrite that keeps the size and puts the modification time
/// back (`touch -r`, `utimensat`, or a rewrite within the clock's granularity)
/// still moves the change time, which no process can set. Computed from an open
/// file's metadata (`File::metadata`, an `fstat`), it names the version that
/// descriptor reads; from a path's, the version found there.
///
/// A fixed mixing function rather than `DefaultHasher`, whose output may change
/// between Rust releases: the value is persisted.
pub fn fingerprint(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let fields = [
        meta.len(),
        meta.mtime() as u64,
        meta.mtime_nsec() as u64,
        meta.ino(),
        meta.dev(),
        meta.ctime() as u64,
        meta.ctime_nsec() as u64,
    ];
    fields.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &v| {
        let h = (h ^ v).wrapping_mul(0x0000_0100_0000_01b3);
        h ^ (h >> 29)
    })
}

/// A row a kind's extractor wants stored in one of that kind's tables, keyed by the
/// file's id and a kind-chosen sub-key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindRow {
    pub table: &'static str,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// A kind-owned table: rows keyed by (file id, sub-key). Each kind lists its tables
/// here; the catalog deletes a file's rows from them when the file changes or goes.
#[derive(Debug, Clone, Copy)]
pub struct KindTable {
    pub kind: Kind,
    pub name: &'static str,
    pub description: &'static str,
}

/// The kind tables of this catalog version. Kinds add theirs as their extractors
/// grow.
pub const KIND_TABLES: &[KindTable] = &ALL_KIND_TABLES;

const ROOT_AND_DOCUMENT_TABLES: [KindTable;
    super::root::TABLES.len() + super::documents::TABLES.len()] =
    concat_tables(super::root::TABLES, super::documents::TABLES);

const WITH_CODE_TABLES: [KindTable; ROOT_AND_DOCUMENT_TABLES.len() + super::code::TABLES.len()] =
    concat_tables(ROOT_AND_DOCUMENT_TABLES, super::code::TABLES);

const ALL_KIND_TABLES: [KindTable; WITH_CODE_TABLES.len() + super::hdf5::TABLES.len()] =
    concat_tables(WITH_CODE_TABLES, super::hdf5::TABLES);

/// Two kinds' table lists as one array (a `const fn`: `KIND_TABLES` is a constant).
const fn concat_tables<const A: usize, const B: usize, const N: usize>(
    a: [KindTable; A],
    b: [KindTable; B],
) -> [KindTable; N] {
    assert!(A + B == N);
    let mut out = [a[0]; N];
    let mut i = 0;
    while i < B {
        out[A + i] = b[i];
        i += 1;
    }
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    out
}

pub fn kind_tables(kind: Kind) -> impl Iterator<Item = &'static KindTable> {
    KIND_TABLES.iter().filter(move |t| t.kind == kind)
}

/// Encodes a value with bincode 2's standard configuration.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(value, bincode::config::standard())
        .expect("catalog values always encode")
}

pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> anyhow::Result<T> {
    let (value, _) = bincode::serde::decode_from_slice(bytes, bincode::config::standard())?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let r = FileRecord {
            id: 7,
            info: FileInfo {
                kind: Kind::Hdf5,
                size: 123,
                mtime_ns: -5,
                fingerprint: u64::MAX,
                status: FileStatus::Failed("bad signature".into()),
                indexed_at_ms: 1_700_000_000_000,
            },
        };
        assert_eq!(decode::<FileRecord>(&encode(&r)).unwrap(), r);
        assert!(decode::<FileRecord>(&[0xff, 0xff]).is_err());
    }
}
