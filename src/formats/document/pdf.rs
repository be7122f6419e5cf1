//! PDF: the text of each page through pdf-extract, the outline as the table of
//! contents and the Info dictionary as metadata through lopdf.
//!
//! pdf-extract panics on some malformed files, so every call into it runs under
//! `catch_unwind`, page by page: a page that cannot be read is left empty and
//! named in the warnings, and only a document none of whose pages can be read
//! fails. The outline comes from lopdf 0.47, not from the lopdf that pdf-extract
//! is built on (0.42), whose `get_toc` keeps one entry per distinct title and so
//! loses repeated titles such as a "Summary" in every chapter.

use pdf_extract::PlainTextOutput;

use super::{
    Document, Format, FormatError, Heading, MAX_DOCUMENT_TEXT_BYTES, MAX_HEADING_BYTES,
    MAX_TOC_ENTRIES, Metadata, end_with_newline, push_within, text_cut_warning,
};
use crate::panics::catch_quietly;

pub fn read(bytes: &[u8]) -> Result<Document, FormatError> {
    let Pages {
        texts,
        mut warnings,
    } = page_texts(bytes)?;
    let (toc, metadata) = outline_and_info(bytes, &mut warnings);
    Ok(Document {
        format: Format::Pdf,
        pages: texts,
        toc,
        metadata,
        warnings,
    })
}

/// The outline and the Info dictionary; what cannot be read is left empty and
/// named in `warnings` (the text alone makes the document searchable).
fn outline_and_info(bytes: &[u8], warnings: &mut Vec<String>) -> (Vec<Heading>, Metadata) {
    let doc = match caught(|| lopdf::Document::load_mem(bytes)) {
        Ok(Ok(doc)) => doc,
        Ok(Err(e)) => {
            warnings.push(format!("outline and metadata cannot be read: {e}"));
            return (Vec::new(), Metadata::default());
        }
        Err(why) => {
            warnings.push(format!("outline and metadata cannot be read: {why}"));
            return (Vec::new(), Metadata::default());
        }
    };
    let toc = match caught(|| outline(&doc)) {
        Ok(Ok(toc)) => toc,
        Ok(Err(why)) | Err(why) => {
            warnings.push(format!("the outline cannot be read: {why}"));
            Vec::new()
        }
    };
    (toc, caught(|| info(&doc)).unwrap_or_default())
}

/// Runs a third-party reader, turning a panic into its message (quietly:
/// the page's warning or the file's error says it).
fn caught<T>(read: impl FnOnce() -> T) -> Result<T, String> {
    catch_quietly(read).map_err(|caught| caught.message)
}

struct Pages {
    texts: Vec<String>,
    warnings: Vec<String>,
}

fn page_texts(bytes: &[u8]) -> Result<Pages, FormatError> {
    let unreadable = |why: String| FormatError::Corrupt(format!("the PDF cannot be parsed: {why}"));
    let mut doc = caught(|| pdf_extract::Document::load_mem(bytes))
        .map_err(unreadable)?
        .map_err(|e| unreadable(e.to_string()))?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err(FormatError::Unsupported(
            "the PDF is encrypted with a password".into(),
        ));
    }
    let numbers: Vec<u32> = doc.get_pages().keys().copied().collect();
    if numbers.is_empty() {
        return Err(FormatError::Corrupt("the PDF has no pages".into()));
    }
    let mut pages = Pages {
        texts: Vec::with_capacity(numbers.len()),
        warnings: Vec::new(),
    };
    let mut first_failure = None;
    // Text kept so far; past `MAX_DOCUMENT_TEXT_BYTES` the pages left are
    // not read (they stay empty, so the page count stays true).
    let mut kept = 0usize;
    let mut cut = false;
    for n in numbers {
        if cut {
            pages.texts.push(String::new());
            continue;
        }
        match caught(|| page_text(&doc, n)) {
            Ok(Ok(text)) => {
                let mut text = end_with_newline(text);
                if kept + text.len() > MAX_DOCUMENT_TEXT_BYTES {
                    cut_at_line(&mut text, MAX_DOCUMENT_TEXT_BYTES - kept);
                    cut = true;
                    pages.warnings.push(format!(
                        "page {n}: {}",
                        text_cut_warning(kept + text.len(), None)
                    ));
                }
                kept += text.len();
                pages.texts.push(text);
            }
            Ok(Err(why)) | Err(why) => {
                pages.warnings.push(format!("page {n}: {why}"));
                first_failure.get_or_insert(why);
                pages.texts.push(String::new());
            }
        }
    }
    if pages.texts.iter().all(String::is_empty)
        && let Some(why) = first_failure
    {
        return Err(FormatError::Corrupt(format!(
            "no page of the PDF could be read: {why}"
        )));
    }
    Ok(pages)
}

fn page_text(doc: &pdf_extract::Document, page: u32) -> Result<String, String> {
    let mut text = String::new();
    {
        let mut output = PlainTextOutput::new(&mut text);
        pdf_extract::output_doc_page(doc, &mut output, page).map_err(|e| e.to_string())?;
    }
    Ok(tidy(&text))
}

/// Cuts `text` to at most `max` bytes, at its last line break within them
/// (else at a character boundary), ending with a line break.
fn cut_at_line(text: &mut String, max: usize) {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(line_end) = text[..end].rfind('\n') {
        end = line_end + 1;
    }
    text.truncate(end);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
}

/// pdf-extract starts a page with blank lines and ends lines with the spaces
/// it placed between text runs; neither is text a reader sees.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.trim_start_matches('\n').lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let kept = out.trim_end_matches('\n').len();
    out.truncate(kept);
    out
}

fn outline(doc: &lopdf::Document) -> Result<Vec<Heading>, String> {
    match doc.get_toc() {
        Ok(toc) => Ok(toc
            .toc
            .into_iter()
            .take(MAX_TOC_ENTRIES)
            .map(|t| {
                let mut title = String::new();
                push_within(&mut title, t.title.trim(), MAX_HEADING_BYTES);
                Heading {
                    title,
                    level: t.level as u32,
                    page: t.page as u32,
                    line: None,
                }
            })
            .collect()),
        Err(lopdf::Error::NoOutline) => Ok(Vec::new()),
        Err(e) => Err(e.to_string()),
    }
}

/// Title, author, subject, keywords and creation date from the Info dictionary.
fn info(doc: &lopdf::Document) -> Metadata {
    let resolve = |o: &lopdf::Object| doc.dereference(o).ok().map(|(_, o)| o.clone());
    let Some(lopdf::Object::Dictionary(dict)) = doc.trailer.get(b"Info").ok().and_then(resolve)
    else {
        return Metadata::default();
    };
    let text = |key: &[u8]| {
        let value = resolve(dict.get(key).ok()?)?;
        let s = lopdf::decode_text_string(&value).ok()?;
        let s = s.trim();
        (!s.is_empty()).then(|| s.to_string())
    };
    Metadata {
        title: text(b"Title"),
        author: text(b"Author"),
        subject: text(b"Subject"),
        created: text(b"CreationDate").map(|d| pdf_date(&d).unwrap_or(d)),
        keywords: text(b"Keywords")
            .map(|k| {
                k.split([',', ';'])
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// A PDF date (`D:YYYYMMDDHHmmSSOHH'mm'`, everything after the year optional)
/// as ISO 8601; `None` when it is not one.
fn pdf_date(raw: &str) -> Option<String> {
    let s = raw.strip_prefix("D:").unwrap_or(raw);
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits < 4 || digits % 2 != 0 || digits > 14 {
        return None;
    }
    let part = |i: usize, default: &'static str| {
        if i + 2 <= digits {
            &s[i..i + 2]
        } else {
            default
        }
    };
    let date = format!(
        "{}-{}-{}T{}:{}:{}",
        &s[..4],
        part(4, "01"),
        part(6, "01"),
        part(8, "00"),
        part(10, "00"),
        part(12, "00")
    );
    let zone = match &s.as_bytes()[digits..] {
        [] => String::new(),
        [b'Z', ..] => "Z".into(),
        [sign @ (b'+' | b'-'), rest @ ..] => {
            let rest = std::str::from_utf8(rest).ok()?;
            let mut nums = rest.split('\'').filter(|p| !p.is_empty());
            let hours = nums.next()?;
            let minutes = nums.next().unwrap_or("00");
            format!("{}{hours:0>2}:{minutes:0>2}", *sign as char)
        }
        _ => return None,
    };
    Some(date + &zone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdf_dates_become_iso_8601() {
        assert_eq!(
            pdf_date("D:20000101000000+00'00'").as_deref(),
            Some("2000-01-01T00:00:00+00:00")
        );
        assert_eq!(
            pdf_date("D:20240315143000Z").as_deref(),
            Some("2024-03-15T14:30:00Z")
        );
        assert_eq!(
            pdf_date("D:19991231235959-05'30").as_deref(),
            Some("1999-12-31T23:59:59-05:30")
        );
        assert_eq!(pdf_date("D:2023").as_deref(), Some("2023-01-01T00:00:00"));
        assert_eq!(pdf_date("yesterday"), None);
        assert_eq!(pdf_date("D:202"), None);
    }

    #[test]
    fn tidying_drops_leading_blank_lines_and_trailing_spaces() {
        assert_eq!(tidy("\n\nTitle  \nbody\n\n\n"), "Title\nbody");
        assert_eq!(tidy(""), "");
    }

    /// The calibration note, checked against what poppler's pdfinfo and
    /// pdftotext report for it (testdata/README.md describes its outline).
    #[test]
    fn the_calibration_note_has_five_pages_an_outline_and_metadata() {
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/docs/detector_calibration.pdf"
        ))
        .unwrap();
        let doc = read(&bytes).unwrap();
        assert_eq!(doc.format, Format::Pdf);
        assert_eq!(doc.pages.len(), 5);
        assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
        for (i, page) in doc.pages.iter().enumerate() {
            assert!(page.ends_with(&format!("Page {} of 5\n", i + 1)), "{page}");
        }
        assert!(doc.pages[1].starts_with("2 Pedestal Measurement\n"));
        assert!(doc.pages[1].contains(
            "A drift larger than 1.5 ADC counts over twelve hours usually points to a temperature change\n"
        ));
        // 5 chapters at level 1, 8 sections at level 2, each on its chapter's page.
        let chapters: Vec<_> = doc.toc.iter().filter(|h| h.level == 1).collect();
        assert_eq!(chapters.len(), 5);
        assert_eq!(doc.toc.iter().filter(|h| h.level == 2).count(), 8);
        for h in &doc.toc {
            let chapter: u32 = h.title[..1].parse().unwrap();
            assert_eq!(h.page, chapter, "{h:?}");
            assert!(doc.pages[h.page as usize - 1].contains(&format!("{}\n", h.title)));
        }
        assert_eq!(doc.toc[4].title, "2.1 Random-trigger runs");
        assert_eq!(
            doc.metadata,
            Metadata {
                title: Some("HCAL Barrel Calibration Procedures".into()),
                author: Some("Calorimeter operations team".into()),
                subject: Some("Run period 2024B - internal note CAL-2024-017".into()),
                created: Some("2000-01-01T00:00:00+00:00".into()),
                keywords: Vec::new(),
            }
        );
    }

    #[test]
    fn garbage_after_a_pdf_header_is_an_error_not_a_panic() {
        let err = read(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> nonsense").unwrap_err();
        assert!(matches!(err, FormatError::Corrupt(_)), "{err:?}");
        let mut truncated = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/docs/detector_calibration.pdf"
        ))
        .unwrap();
        truncated.truncate(truncated.len() / 2);
        // Whatever the readers make of half a file, it must come back as a value.
        let _ = read(&truncated);
    }
}
