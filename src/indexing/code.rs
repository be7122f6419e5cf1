//! What the catalog keeps of a source file: its classes, functions, include
//! count and syntax errors, extracted once at index time so that `parse_file`,
//! `find_classes`, `find_functions` and `find_symbol` never parse it again.

use std::fs::File;

use crate::catalog::KindRow;
use crate::catalog::code::code_rows;
use crate::formats::FormatError;
use crate::formats::code;

/// The catalog rows of the source file `name`, opened as `file`.
pub fn rows(name: &str, file: File) -> Result<Vec<KindRow>, FormatError> {
    Ok(code_rows(&code::read(name, file)?))
}
