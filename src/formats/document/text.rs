//! Plain text (`.txt`, `.log`, `.rst`): one page, the file's lines as they are.

use super::{Document, Format, Metadata, end_with_newline};

/// A text file's bytes as a string: UTF-8 without its byte order mark; bytes
/// that are not UTF-8 become U+FFFD rather than failing the whole file.
pub fn decode(mut bytes: Vec<u8>) -> String {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

pub fn read(text: String) -> Document {
    Document {
        format: Format::Text,
        pages: vec![end_with_newline(text)],
        toc: Vec::new(),
        metadata: Metadata::default(),
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_drops_the_bom_and_replaces_invalid_bytes() {
        assert_eq!(decode(b"\xEF\xBB\xBFhello\n".to_vec()), "hello\n");
        assert_eq!(decode(b"caf\xE9 au lait".to_vec()), "caf\u{FFFD} au lait");
        assert_eq!(decode("grüße".as_bytes().to_vec()), "grüße");
    }

    #[test]
    fn the_run_log_is_one_page_of_its_lines() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/docs/run_log_2024.txt"
        );
        let raw = std::fs::read_to_string(path).unwrap();
        let doc =
            crate::formats::document::read("run_log_2024.txt", std::fs::File::open(path).unwrap())
                .unwrap();
        assert_eq!(doc.format, Format::Text);
        assert_eq!(doc.pages.len(), 1);
        assert_eq!(
            doc.pages[0].lines().collect::<Vec<_>>(),
            raw.lines().collect::<Vec<_>>()
        );
        assert!(doc.toc.is_empty());
        // A last line without a newline gets one.
        assert_eq!(read("a\nb".into()).pages, vec!["a\nb\n".to_string()]);
        assert_eq!(read(String::new()).pages, vec![String::new()]);
    }
}
