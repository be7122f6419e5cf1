//! What the catalog keeps of a document: its text in blocks, its table of
//! contents and metadata, as rows of `catalog::documents`, extracted at index
//! time so that no tool reads or re-extracts the file.

use std::path::Path;

use crate::catalog::KindRow;
use crate::catalog::documents::{NewDocument, TocRow, document_rows};
use crate::formats::FormatError;
use crate::formats::document;

/// The catalog rows of the document at `path`.
pub fn rows(path: &Path) -> Result<Vec<KindRow>, FormatError> {
    let doc = document::read(path)?;
    Ok(document_rows(NewDocument {
        format: doc.format.as_str().to_string(),
        pages: doc.pages,
        toc: doc
            .toc
            .into_iter()
            .map(|h| TocRow {
                title: h.title,
                level: h.level,
                page: h.page,
                line: h.line,
            })
            .collect(),
        title: doc.metadata.title,
        author: doc.metadata.author,
        subject: doc.metadata.subject,
        created: doc.metadata.created,
        keywords: doc.metadata.keywords,
        warnings: doc.warnings,
    }))
}
