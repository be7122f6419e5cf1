//! What the catalog keeps of a document: its text in blocks, its table of
//! contents and metadata, as rows of `catalog::documents`, extracted at index
//! time so that no tool reads or re-extracts the file.

use std::path::Path;

use crate::catalog::KindRow;
use crate::catalog::documents::document_rows;
use crate::formats::FormatError;
use crate::formats::document;

/// The catalog rows of the document at `path`.
pub fn rows(path: &Path) -> Result<Vec<KindRow>, FormatError> {
    Ok(document_rows(document::read(path)?))
}
