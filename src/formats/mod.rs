//! Format readers. This layer knows nothing of the catalog or of MCP: it answers
//! "what kind of file is this" and "is it a well-formed file of that kind".
//!
//! `root` is quarry's own ROOT reader (keys, trees, columns, histograms: the
//! `quarry-rootio` crate);
//! `document` extracts the text, table of contents and metadata of PDF, Markdown
//! and text files. The other kinds validate their signature and header for now,
//! so that a corrupt or mislabelled file is recorded with a precise error; their
//! readers come with their tool families.

pub mod code;
pub mod document;
pub mod hdf5;
pub mod worker;

/// Why a file could not be read as its kind: shared by every reader (`crates/quarry-format-error`).
pub use quarry_format_error::FormatError;
/// quarry's own ROOT reader, a crate of its own (`crates/quarry-rootio`).
pub use quarry_rootio as root;

use std::fmt;
use std::fs::File;
use std::io::{self, Read};

use serde::{Deserialize, Serialize};

/// Runs the worker that `arg` names (the binary's first argument), if it names
/// one: its exit code, once its parent closes its input.
pub fn run_worker(arg: &std::ffi::OsStr) -> Option<std::process::ExitCode> {
    if arg == hdf5::isolated::WORKER_ARG {
        Some(hdf5::isolated::worker_main())
    } else if arg == document::WORKER_ARG {
        Some(document::worker_main())
    } else {
        None
    }
}

/// The kinds of file quarry indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Kind {
    Root,
    Hdf5,
    Document,
    Code,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Root, Kind::Hdf5, Kind::Document, Kind::Code];

    /// The name used in tool arguments, results and `quarry status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Root => "root",
            Kind::Hdf5 => "hdf5",
            Kind::Document => "document",
            Kind::Code => "code",
        }
    }

    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Human label for suggestions ("ROOT files", "HDF5 files", ...).
    pub fn label(self) -> &'static str {
        match self {
            Kind::Root => "ROOT files",
            Kind::Hdf5 => "HDF5 files",
            Kind::Document => "documents",
            Kind::Code => "source files",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind implied by a file name's extension alone (case-insensitive).
pub fn kind_from_name(file_name: &str) -> Option<Kind> {
    let ext = file_name.rsplit_once('.')?.1;
    let ext = ext.to_ascii_lowercase();
    match ext.as_str() {
        "root" => Some(Kind::Root),
        "h5" | "hdf5" | "he5" => Some(Kind::Hdf5),
        "pdf" | "md" | "markdown" | "txt" | "log" | "rst" => Some(Kind::Document),
        "py" | "cpp" | "cc" | "cxx" | "hpp" | "hh" | "h" | "hxx" => Some(Kind::Code),
        _ => None,
    }
}

/// How many leading bytes `sniff` looks at.
pub const SNIFF_LEN: usize = 8;

/// The kind implied by a file's leading bytes, for files whose name says nothing.
/// Only self-identifying binary formats are sniffed; text kinds need their extension.
pub fn sniff(head: &[u8]) -> Option<Kind> {
    if head.starts_with(root::MAGIC) {
        Some(Kind::Root)
    } else if head.starts_with(hdf5::SIGNATURE) {
        Some(Kind::Hdf5)
    } else if head.starts_with(document::PDF_MAGIC) {
        Some(Kind::Document)
    } else {
        None
    }
}

/// Decides a file's kind: by extension when it has a known one, otherwise by its
/// first bytes. `Ok(None)` means quarry does not index this file.
///
/// `open` is called only when the name does not decide, so most files are not
/// opened at all; the caller opens beneath the root.
pub fn detect(name: &str, open: impl FnOnce() -> io::Result<File>) -> io::Result<Option<Kind>> {
    if let Some(kind) = kind_from_name(name) {
        return Ok(Some(kind));
    }
    let mut head = [0u8; SNIFF_LEN];
    let n = read_prefix(&mut open()?, &mut head)?;
    Ok(sniff(&head[..n]))
}

/// Checks that the file is a well-formed file of `kind` (signature and header).
/// `name` is the file's name (documents tell PDF from text by it).
pub fn validate(kind: Kind, name: &str, mut file: File) -> Result<(), FormatError> {
    match kind {
        Kind::Root => root::RootFile::open(file)?.walk().map(|_| ()),
        Kind::Hdf5 => hdf5::H5File::open(file).map(|_| ()),
        Kind::Document => document::check(name, &mut file),
        Kind::Code => code::check(file),
    }
}

/// Reads as many bytes as fit in `buf` (fewer only at end of file).
pub(crate) fn read_prefix(file: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Rejects binary content in a file that should be text: a NUL byte in its first block.
pub(crate) fn check_text_prefix(file: &mut File, what: &str) -> Result<(), FormatError> {
    let mut head = vec![0u8; 8192];
    let n = read_prefix(file, &mut head)?;
    if memchr::memchr(0, &head[..n]).is_some() {
        return Err(FormatError::Corrupt(format!(
            "binary content (NUL byte) in a {what} file"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_map_to_kinds() {
        assert_eq!(kind_from_name("run_1.root"), Some(Kind::Root));
        assert_eq!(kind_from_name("RUN.ROOT"), Some(Kind::Root));
        assert_eq!(kind_from_name("a.h5"), Some(Kind::Hdf5));
        assert_eq!(kind_from_name("a.hdf5"), Some(Kind::Hdf5));
        assert_eq!(kind_from_name("notes.md"), Some(Kind::Document));
        assert_eq!(kind_from_name("paper.pdf"), Some(Kind::Document));
        assert_eq!(kind_from_name("x.markdown"), Some(Kind::Document));
        assert_eq!(kind_from_name("calib.hpp"), Some(Kind::Code));
        assert_eq!(kind_from_name("tool.py"), Some(Kind::Code));
        assert_eq!(kind_from_name("image.png"), None);
        assert_eq!(kind_from_name("Makefile"), None);
    }

    #[test]
    fn sniffing_recognises_binary_signatures() {
        assert_eq!(sniff(b"root\0\0\xf4\x6c"), Some(Kind::Root));
        assert_eq!(sniff(b"\x89HDF\r\n\x1a\n"), Some(Kind::Hdf5));
        assert_eq!(sniff(b"%PDF-1.7"), Some(Kind::Document));
        assert_eq!(sniff(b"#!/bin/sh"), None);
        assert_eq!(sniff(b""), None);
    }

    #[test]
    fn kind_names_round_trip() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(Kind::parse("all"), None);
    }
}
