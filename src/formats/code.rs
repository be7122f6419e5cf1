//! Source-code checks: a source file must be text.

use std::path::Path;

use super::{FormatError, check_text_prefix};

pub fn check(path: &Path) -> Result<(), FormatError> {
    check_text_prefix(path, "source")
}
