//! Documents: PDF, Markdown and plain text (`.txt`, `.log`, `.rst`), read into
//! what quarry keeps of them: the text page by page, a table of contents and
//! metadata. `check` is the cheap header test of the index's validation; `read`
//! is the full extraction. Nothing here knows of the catalog or of MCP.

mod markdown;
mod pdf;
mod text;

use std::fs::File;

use serde::{Deserialize, Serialize};

use super::{FormatError, check_text_prefix, read_prefix};

pub const PDF_MAGIC: &[u8] = b"%PDF-";

/// Larger documents are not read: their text would have to sit in memory whole,
/// and a file this size is a data dump rather than a document.
pub const MAX_DOCUMENT_BYTES: u64 = 256 << 20;

/// How a document's text is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// Reads a document whole: text per page, table of contents, metadata.
/// `name` (the file's name) tells the format; the caller opened the file.
pub fn read(name: &str, mut file: File) -> Result<Document, FormatError> {
    let size = file.metadata()?.len();
    if size > MAX_DOCUMENT_BYTES {
        return Err(FormatError::Unsupported(format!(
            "the document is {} MiB; documents over {} MiB are not indexed",
            size >> 20,
            MAX_DOCUMENT_BYTES >> 20
        )));
    }
    let format = Format::of_name(name);
    let whole = |file: &mut File| -> Result<Vec<u8>, FormatError> {
        use std::io::{Read, Seek};
        file.rewind()?;
        let mut bytes = Vec::with_capacity(size as usize);
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    if format == Format::Pdf {
        check(name, &mut file)?;
        return pdf::read(&whole(&mut file)?);
    }
    check_text_prefix(&mut file, "text document")?;
    let text = text::decode(whole(&mut file)?);
    Ok(match format {
        Format::Markdown => markdown::read(text),
        _ => text::read(text),
    })
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
