//! Documents: PDF, Markdown and plain text (`.txt`, `.log`, `.rst`), read into
//! what quarry keeps of them: the text page by page, a table of contents and
//! metadata. `check` is the cheap header test of the indexer's validation; `read`
//! is the full extraction. Nothing here knows of the catalog or of MCP.

mod isolated;
mod markdown;
mod pdf;
mod text;

use std::fs::File;
use std::io::Read;

pub use isolated::{WORKER_ARG, worker_main};

use serde::{Deserialize, Serialize};

use super::{FormatError, check_text_prefix, read_prefix};

pub const PDF_MAGIC: &[u8] = b"%PDF-";

/// Larger PDFs are not read: the PDF reader holds the file whole (in its
/// worker), and a file this size is a data dump rather than a document.
pub const MAX_DOCUMENT_BYTES: u64 = 256 << 20;

/// The most text one document contributes to the catalog and the text index:
/// a text file is read only this far (cut at a line break), a PDF's pages
/// only until their text reaches it. The rest is named in the document's
/// warnings. Indexing holds a document's text whole a few times over (its
/// blocks, the text index's postings), so this bounds the indexer's memory
/// whatever the files.
pub const MAX_DOCUMENT_TEXT_BYTES: usize = 8 << 20;

/// The most table-of-contents entries kept of one document.
pub const MAX_TOC_ENTRIES: usize = 10_000;
/// The most bytes of one heading's title kept.
pub const MAX_HEADING_BYTES: usize = 1_000;

/// How a document's text is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Format {
    Pdf,
    Markdown,
    Text,
}

impl Format {
    /// The name used in tool results.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Pdf => "pdf",
            Format::Markdown => "markdown",
            Format::Text => "text",
        }
    }

    /// The format a document file name implies. Documents are recognised by
    /// extension, or (without a known extension) by the PDF signature, so a name
    /// without a text extension is a PDF.
    pub fn of_name(file_name: &str) -> Format {
        let ext = file_name
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        match ext.as_str() {
            "md" | "markdown" => Format::Markdown,
            "txt" | "log" | "rst" => Format::Text,
            _ => Format::Pdf,
        }
    }
}

/// A document as extracted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    pub format: Format,
    /// The text of each page; a page that has text ends with `'\n'`, so pages
    /// joined give whole lines. Markdown and text files are one page.
    pub pages: Vec<String>,
    /// Headings in document order (PDF outline, Markdown headers).
    pub toc: Vec<Heading>,
    pub metadata: Metadata,
    /// Problems that did not stop extraction, such as a PDF page whose text could
    /// not be read (that page is then empty).
    pub warnings: Vec<String>,
}

/// One table-of-contents entry (kept as it is in the catalog).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heading {
    pub title: String,
    /// 1 for top-level entries.
    pub level: u32,
    /// 1-based page the entry points to.
    pub page: u32,
    /// 1-based line of the header in the text (Markdown).
    pub line: Option<u32>,
}

/// A document's own description of itself (kept as it is in the catalog).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    pub title: Option<String>,
    pub author: Option<String>,
    pub subject: Option<String>,
    /// ISO 8601.
    pub created: Option<String>,
    pub keywords: Vec<String>,
}

/// Checks that the file is a well-formed document (signature and header).
pub fn check(name: &str, file: &mut File) -> Result<(), FormatError> {
    let is_pdf = Format::of_name(name) == Format::Pdf;
    let mut head = [0u8; 1024];
    let n = read_prefix(file, &mut head)?;
    let has_pdf_magic = memchr::memmem::find(&head[..n], PDF_MAGIC).is_some();
    if is_pdf || has_pdf_magic {
        if has_pdf_magic {
            return Ok(());
        }
        return Err(FormatError::Corrupt(
            "not a PDF: no '%PDF-' header in the first 1024 bytes".into(),
        ));
    }
    check_text_prefix(file, "text document")
}

/// Reads a document: text per page, table of contents, metadata. `name` (the
/// file's name) tells the format; the caller opened the file. A PDF is read
/// in a worker process when one is available (`isolated`); a text or Markdown
/// file only as far as `MAX_DOCUMENT_TEXT_BYTES`.
pub fn read(name: &str, mut file: File) -> Result<Document, FormatError> {
    let size = file.metadata()?.len();
    let format = Format::of_name(name);
    if format == Format::Pdf {
        check_pdf_size(size)?;
        check(name, &mut file)?;
        return isolated::read_pdf(file);
    }
    check_text_prefix(&mut file, "text document")?;
    let (bytes, cut) = read_text_prefix(&mut file, size)?;
    let text = text::decode(bytes);
    let mut doc = match format {
        Format::Markdown => markdown::read(text),
        _ => text::read(text),
    };
    if let Some(kept) = cut {
        doc.warnings.push(text_cut_warning(kept, Some(size)));
    }
    Ok(doc)
}

fn check_pdf_size(size: u64) -> Result<(), FormatError> {
    if size > MAX_DOCUMENT_BYTES {
        return Err(FormatError::Unsupported(format!(
            "the document is {} MiB; PDFs over {} MiB are not indexed",
            size >> 20,
            MAX_DOCUMENT_BYTES >> 20
        )));
    }
    Ok(())
}

/// The warning of a document whose text was cut after `kept` bytes.
fn text_cut_warning(kept: usize, size: Option<u64>) -> String {
    let of = size.map_or(String::new(), |s| {
        format!(" of {} MiB", s.div_ceil(1 << 20))
    });
    format!(
        "only the first {:.1} MiB{of} of the text are indexed: a document contributes at most {} MiB",
        kept as f64 / f64::from(1 << 20),
        MAX_DOCUMENT_TEXT_BYTES >> 20
    )
}

/// A text file's bytes up to `MAX_DOCUMENT_TEXT_BYTES`, never reading
/// further; when the file holds more, they end at the last line break within
/// the limit (or at the limit, for a longer last line) and the length kept
/// comes along.
fn read_text_prefix(file: &mut File, size: u64) -> Result<(Vec<u8>, Option<usize>), FormatError> {
    use std::io::Seek;
    file.rewind()?;
    let limit = MAX_DOCUMENT_TEXT_BYTES;
    let mut bytes = Vec::with_capacity(size.min(limit as u64 + 1) as usize);
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() <= limit {
        return Ok((bytes, None));
    }
    bytes.truncate(limit);
    // Within the last block's worth of bytes: a long last line is kept cut
    // rather than dropped with everything after an early line break.
    let tail_start = limit.saturating_sub(64 << 10);
    match memchr::memrchr(b'\n', &bytes[tail_start..]) {
        Some(end) => bytes.truncate(tail_start + end + 1),
        // Room for the line break a page ends with.
        None => bytes.truncate(limit - 1),
    }
    // A character cut in two at the end becomes U+FFFD when decoded, as any
    // other byte that is not UTF-8: the text stays valid.
    let kept = bytes.len();
    Ok((bytes, Some(kept)))
}

/// Appends as much of `text` to `out` as keeps it within `max` bytes, cut at
/// a character boundary.
fn push_within(out: &mut String, text: &str, max: usize) {
    let room = max.saturating_sub(out.len());
    if text.len() <= room {
        out.push_str(text);
    } else {
        let mut cut = room;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push_str(&text[..cut]);
    }
}

/// Makes a page's text end with a newline, so that pages joined keep their
/// last lines apart.
fn end_with_newline(mut text: String) -> String {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_follow_the_extension() {
        assert_eq!(Format::of_name("a.PDF"), Format::Pdf);
        assert_eq!(Format::of_name("notes.md"), Format::Markdown);
        assert_eq!(Format::of_name("x.markdown"), Format::Markdown);
        assert_eq!(Format::of_name("run.log"), Format::Text);
        assert_eq!(Format::of_name("index.rst"), Format::Text);
        assert_eq!(Format::of_name("README.TXT"), Format::Text);
        // Only PDFs are recognised by content.
        assert_eq!(Format::of_name("scan_0042"), Format::Pdf);
    }

    #[test]
    fn binary_text_files_and_fake_pdfs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("data.txt");
        std::fs::write(&bin, b"abc\0def").unwrap();
        assert!(matches!(
            read("data.txt", File::open(&bin).unwrap()),
            Err(FormatError::Corrupt(_))
        ));
        let fake = dir.path().join("paper.pdf");
        std::fs::write(&fake, b"just text").unwrap();
        let err = read("paper.pdf", File::open(&fake).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("%PDF-"), "{err}");
    }
}
