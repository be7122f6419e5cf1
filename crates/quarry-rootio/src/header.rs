//! The ROOT file header: enough to recognise a ROOT file, name its version and
//! compression, catch truncation, and find the top directory.

use std::fs::File;
use std::io::Read;

use crate::FormatError;

pub const MAGIC: &[u8] = b"root";

/// Versions at or above this use 64-bit seek pointers in the header.
const LARGE_FILE_VERSION: i32 = 1_000_000;
/// Bytes of the header quarry reads: enough for the large-file layout up to fSeekInfo.
const HEADER_LEN: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootHeader {
    /// ROOT's integer version, e.g. 62004 for 6.20/04.
    pub version: i32,
    pub begin: u64,
    pub end: u64,
    /// The file-level compression setting: algorithm * 100 + level.
    pub compress: i32,
    pub seek_info: u64,
    /// Length of the top directory's name record, which precedes its directory
    /// record at `begin`.
    pub nbytes_name: u32,
}

impl RootHeader {
    /// "6.20/04" style, as ROOT prints it.
    pub fn version_string(&self) -> String {
        let v = self.version % LARGE_FILE_VERSION;
        format!("{}.{:02}/{:02}", v / 10000, (v / 100) % 100, v % 100)
    }

    /// "ZLIB:4", "LZ4:4", "none"...
    pub fn compression_string(&self) -> String {
        compression_name(self.compress)
    }
}

/// Names a ROOT compression setting (algorithm * 100 + level): "ZLIB:4", "LZ4:4",
/// "none"...; algorithm 0 is ROOT's global default, ZLIB.
pub fn compression_name(setting: i32) -> String {
    let (algorithm, level) = (setting / 100, setting % 100);
    if level <= 0 {
        return "none".to_string();
    }
    let name = match algorithm {
        0 | 1 => "ZLIB",
        2 => "LZMA",
        3 => "OLD",
        4 => "LZ4",
        5 => "ZSTD",
        _ => "UNKNOWN",
    };
    format!("{name}:{level}")
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Reads and checks the header of the ROOT file at `path`.
pub fn read_header(file: &mut File, size: u64) -> Result<RootHeader, FormatError> {
    // As many of the header's bytes as the file has (fewer only when it is short).
    let mut buf = Vec::with_capacity(HEADER_LEN);
    file.take(HEADER_LEN as u64).read_to_end(&mut buf)?;
    parse_header(&buf, size)
}

/// Parses a header from the file's first bytes; `file_size` catches truncation.
pub fn parse_header(b: &[u8], file_size: u64) -> Result<RootHeader, FormatError> {
    let corrupt = |why: String| Err(FormatError::Corrupt(why));
    if !b.starts_with(MAGIC) {
        return corrupt("not a ROOT file: the file does not start with 'root'".into());
    }
    if b.len() < 45 {
        return corrupt(format!("truncated ROOT header ({} bytes)", b.len()));
    }
    let version = be_i32(b, 4);
    let begin = be_i32(b, 8);
    let (end, nbytes_name, compress, seek_info) = if version >= LARGE_FILE_VERSION {
        if b.len() < 53 {
            return corrupt(format!("truncated ROOT header ({} bytes)", b.len()));
        }
        (be_i64(b, 12), be_i32(b, 36), be_i32(b, 41), be_i64(b, 45))
    } else {
        (
            i64::from(be_i32(b, 12)),
            be_i32(b, 28),
            be_i32(b, 33),
            i64::from(be_i32(b, 37)),
        )
    };
    if nbytes_name < 0 {
        return corrupt(format!(
            "implausible ROOT header (name record of {nbytes_name} bytes)"
        ));
    }
    if version <= 0 || begin < 64 || end < i64::from(begin) || seek_info < 0 {
        return corrupt(format!(
            "implausible ROOT header (version {version}, begin {begin}, end {end})"
        ));
    }
    let (begin, end, seek_info) = (begin as u64, end as u64, seek_info as u64);
    if end > file_size {
        return corrupt(format!(
            "truncated ROOT file: header says it ends at byte {end}, but it has {file_size} bytes"
        ));
    }
    if seek_info >= end {
        return corrupt(format!(
            "ROOT header points its streamer info at byte {seek_info}, past the end ({end})"
        ));
    }
    Ok(RootHeader {
        version,
        begin,
        end,
        compress,
        seek_info,
        nbytes_name: nbytes_name as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn sample(name: &str) -> PathBuf {
        PathBuf::from(crate::REPO).join("testdata/root").join(name)
    }

    // Expected values read independently with Python's struct module from the
    // byte layout of ROOT's TFile header.
    #[test]
    fn reads_real_headers() {
        let h = {
            let mut f =
                std::fs::File::open(sample("uproot-sample-6.20.04-uncompressed.root")).unwrap();
            let n = f.metadata().unwrap().len();
            read_header(&mut f, n)
        }
        .unwrap();
        assert_eq!(h.version, 62004);
        assert_eq!(h.version_string(), "6.20/04");
        assert_eq!((h.begin, h.end, h.seek_info), (100, 80766, 63150));
        assert_eq!(h.compression_string(), "none");

        let h = {
            let mut f = std::fs::File::open(sample("uproot-HZZ-lz4.root")).unwrap();
            let n = f.metadata().unwrap().len();
            read_header(&mut f, n)
        }
        .unwrap();
        assert_eq!(h.version_string(), "6.10/05");
        assert_eq!(h.compression_string(), "LZ4:4");

        let h = {
            let mut f = std::fs::File::open(sample("uproot-HZZ-zstd.root")).unwrap();
            let n = f.metadata().unwrap().len();
            read_header(&mut f, n)
        }
        .unwrap();
        assert_eq!(h.compression_string(), "ZSTD:5");
        let h = {
            let mut f =
                std::fs::File::open(sample("nanoAOD_2015_CMS_Open_Data_ttbar.root")).unwrap();
            let n = f.metadata().unwrap().len();
            read_header(&mut f, n)
        }
        .unwrap();
        assert_eq!(h.compression_string(), "ZLIB:1");
        assert_eq!(h.version_string(), "6.22/08");
    }

    #[test]
    fn rejects_truncation_and_garbage() {
        let bytes = std::fs::read(sample("uproot-Zmumu.root")).unwrap();
        let err = parse_header(&bytes[..HEADER_LEN], 1000).unwrap_err();
        assert!(err.to_string().contains("truncated ROOT file"), "{err}");
        let err = parse_header(b"root", 4).unwrap_err();
        assert!(err.to_string().contains("truncated ROOT header"), "{err}");
        let err = parse_header(b"PK\x03\x04 not root at all", 100).unwrap_err();
        assert!(err.to_string().contains("not a ROOT file"), "{err}");
        let mut evil = bytes[..HEADER_LEN].to_vec();
        evil[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(parse_header(&evil, bytes.len() as u64).is_err());
    }
}
