//! Document checks: a PDF must carry its `%PDF-` header (within the first KiB, as
//! readers allow); Markdown and plain text must be text.

use std::fs::File;
use std::path::Path;

use super::{FormatError, check_text_prefix, read_prefix};

pub const PDF_MAGIC: &[u8] = b"%PDF-";

pub fn check(path: &Path) -> Result<(), FormatError> {
    let is_pdf = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("pdf"));
    let mut head = [0u8; 1024];
    let n = read_prefix(&mut File::open(path)?, &mut head)?;
    let has_pdf_magic = memchr::memmem::find(&head[..n], PDF_MAGIC).is_some();
    if is_pdf || has_pdf_magic {
        if has_pdf_magic {
            return Ok(());
        }
        return Err(FormatError::Corrupt(
            "not a PDF: no '%PDF-' header in the first 1024 bytes".into(),
        ));
    }
    check_text_prefix(path, "text document")
}
