//! What the catalog keeps of a document: its text in blocks, its table of
//! contents and metadata, as rows of `catalog::documents`, extracted at index
//! time so that no tool reads or re-extracts the file.

use std::fs::File;

use crate::catalog::KindRow;
use crate::catalog::documents::document_rows;
use crate::formats::FormatError;
use crate::formats::document;

/// The catalog rows of the document `name`, opened as `file`.
pub fn rows(name: &str, file: File) -> Result<Vec<KindRow>, FormatError> {
    Ok(document_rows(document::read(name, file)?))
}
