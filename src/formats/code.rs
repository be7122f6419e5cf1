//! Source-code checks: a source file must be text.

use std::fs::File;

use super::{FormatError, check_text_prefix};

pub fn check(file: &mut File) -> Result<(), FormatError> {
    check_text_prefix(file, "source")
}
