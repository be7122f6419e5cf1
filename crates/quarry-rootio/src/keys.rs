//! TKeys and TDirectories: the table of contents of a ROOT file.

use super::cursor::Cursor;
use crate::FormatError;

/// Key and directory records use 64-bit seeks when their version exceeds this.
const LARGE_RECORD_VERSION: i16 = 1000;

/// A key: one named, cycled object stored in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub name: String,
    pub title: String,
    pub class_name: String,
    pub cycle: i16,
    /// Bytes on disk, key header included.
    pub nbytes: u32,
    /// Bytes of the object once uncompressed.
    pub obj_len: u32,
    pub key_len: u16,
    /// Where the key header starts; the object follows it.
    pub seek_key: u64,
}

impl Key {
    pub(crate) fn read(c: &mut Cursor<'_>) -> Result<Key, FormatError> {
        let nbytes = c.i32("key size")?;
        let version = c.i16("key version")?;
        let obj_len = c.i32("key object length")?;
        c.skip(4, "key date")?;
        let key_len = c.i16("key header length")?;
        let cycle = c.i16("key cycle")?;
        let large = version > LARGE_RECORD_VERSION;
        let seek_key = c.seek(large, "key seek")?;
        c.seek(large, "key parent seek")?;
        let class_name = c.tstring("key class name")?;
        let name = c.tstring("key name")?;
        let title = c.tstring("key title")?;
        let (Ok(nbytes), Ok(obj_len), Ok(key_len)) = (
            u32::try_from(nbytes),
            u32::try_from(obj_len),
            u16::try_from(key_len),
        ) else {
            return Err(FormatError::Corrupt(format!(
                "key '{name}' has negative sizes (nbytes {nbytes}, object {obj_len}, header {key_len})"
            )));
        };
        if u32::from(key_len) > nbytes {
            return Err(FormatError::Corrupt(format!(
                "key '{name}' header ({key_len} bytes) is longer than the key ({nbytes} bytes)"
            )));
        }
        Ok(Key {
            name,
            title,
            class_name,
            cycle,
            nbytes,
            obj_len,
            key_len,
            seek_key,
        })
    }

    /// Where the (possibly compressed) object starts.
    pub(crate) fn seek_data(&self) -> u64 {
        self.seek_key + u64::from(self.key_len)
    }

    /// Bytes of the object as stored.
    pub fn stored_len(&self) -> u32 {
        self.nbytes - u32::from(self.key_len)
    }

    pub fn is_directory(&self) -> bool {
        matches!(self.class_name.as_str(), "TDirectory" | "TDirectoryFile")
    }
}

/// Where a directory's key list is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirectoryRecord {
    pub seek_keys: u64,
    pub nbytes_keys: u32,
}

impl DirectoryRecord {
    pub fn read(c: &mut Cursor<'_>) -> Result<DirectoryRecord, FormatError> {
        let version = c.i16("directory version")?;
        c.skip(8, "directory dates")?;
        let nbytes_keys = c.i32("directory key list size")?;
        c.i32("directory name size")?;
        let large = version > LARGE_RECORD_VERSION;
        c.seek(large, "directory seek")?;
        c.seek(large, "parent directory seek")?;
        let seek_keys = c.seek(large, "key list seek")?;
        let nbytes_keys = u32::try_from(nbytes_keys)
            .map_err(|_| FormatError::Corrupt(format!("negative key list size ({nbytes_keys})")))?;
        Ok(DirectoryRecord {
            seek_keys,
            nbytes_keys,
        })
    }
}

/// Parses a directory's key list: the list's own key, a count, then the keys.
pub fn read_key_list(c: &mut Cursor<'_>) -> Result<Vec<Key>, FormatError> {
    Key::read(c)?;
    let n = c.i32("number of keys")?;
    let n = usize::try_from(n)
        .map_err(|_| FormatError::Corrupt(format!("negative number of keys ({n})")))?;
    // Each key header takes at least 26 bytes: a count beyond that is a lie.
    if n > c.remaining() / 26 {
        return Err(FormatError::Corrupt(format!(
            "key list claims {n} keys in {} bytes",
            c.remaining()
        )));
    }
    (0..n).map(|_| Key::read(c)).collect()
}
