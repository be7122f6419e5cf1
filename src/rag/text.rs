//! Sentences and ~100-token chunks cut from a document's stored text, each an
//! exact slice of that text with its source position (page, lines), so that
//! whatever the trees show can be traced back and quoted verbatim.

use serde::{Deserialize, Serialize};

/// Aim of a chunk's size in tokens (RAPTOR's published setting).
pub const CHUNK_TOKENS: usize = 100;
/// A run of text without sentence punctuation is cut at a line end once it
/// holds this many tokens (tables, lists, code).
const LONG_SENTENCE_TOKENS: usize = 60;

/// A sentence: a byte range of the document text and where it lies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sentence {
    pub start: u32,
    pub end: u32,
    /// 1-based page (1 for Markdown and text).
    pub page: u32,
    /// 1-based first and last line, counted through the whole text.
    pub line: u32,
    pub end_line: u32,
    pub tokens: u32,
}

/// Tokens as the trees count them: runs of letters and digits.
pub fn token_count(text: &str) -> usize {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .count()
}

/// Lowercased words, the terms of the vectors and of the node search.
pub fn terms(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Cuts `text` into sentences: at `.`, `!` or `?` followed by white space, at
/// blank lines and headings, and at a line end once a sentence grows long.
/// `page_first_lines` holds each page's first line (1-based, ascending).
pub fn sentences(text: &str, page_first_lines: &[u32]) -> Vec<Sentence> {
    let page_of = |line: u32| page_first_lines.partition_point(|&f| f <= line).max(1) as u32;
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut start_line = 1u32;
    let mut line = 1u32;
    let bytes = text.as_bytes();
    let push = |from: usize, to: usize, first: u32, last: u32, out: &mut Vec<Sentence>| {
        let slice = text[from..to].trim_end();
        let to = from + slice.len();
        let tokens = token_count(slice);
        if tokens > 0 {
            out.push(Sentence {
                start: from as u32,
                end: to as u32,
                page: page_of(first),
                line: first,
                end_line: last,
                tokens: tokens as u32,
            });
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if start.is_none() && !b.is_ascii_whitespace() {
            start = Some(i);
            start_line = line;
        }
        let next = bytes.get(i + 1).copied();
        let ends_sentence =
            matches!(b, b'.' | b'!' | b'?') && next.is_none_or(|n| n.is_ascii_whitespace());
        if b == b'\n' {
            if let Some(s) = start {
                let line_text = &text[s..i];
                let blank_next = next.is_none_or(|n| n == b'\n');
                let heading = text[line_start(text, i)..i].trim_start().starts_with('#');
                if blank_next || heading || token_count(line_text) >= LONG_SENTENCE_TOKENS {
                    push(s, i, start_line, line, &mut out);
                    start = None;
                }
            }
            line += 1;
        } else if ends_sentence && let Some(s) = start {
            push(s, i + 1, start_line, line, &mut out);
            start = None;
        }
        i += 1;
    }
    if let Some(s) = start {
        push(s, bytes.len(), start_line, line, &mut out);
    }
    out
}

fn line_start(text: &str, end: usize) -> usize {
    text[..end].rfind('\n').map_or(0, |i| i + 1)
}

/// Consecutive sentences packed into chunks of about `CHUNK_TOKENS` tokens (a
/// longer sentence is a chunk of its own); ranges into `sentences`.
pub fn chunks(sentences: &[Sentence]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut from = 0;
    let mut tokens = 0usize;
    for (i, s) in sentences.iter().enumerate() {
        if i > from && tokens + s.tokens as usize > CHUNK_TOKENS {
            out.push(from..i);
            from = i;
            tokens = 0;
        }
        tokens += s.tokens as usize;
    }
    if from < sentences.len() {
        out.push(from..sentences.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_are_exact_slices_with_lines_and_pages() {
        let text = "# Title\nFirst one. Second\none spans lines!\n\nThird para\n";
        let s = sentences(text, &[1, 4]);
        let texts: Vec<&str> = s
            .iter()
            .map(|s| &text[s.start as usize..s.end as usize])
            .collect();
        assert_eq!(
            texts,
            [
                "# Title",
                "First one.",
                "Second\none spans lines!",
                "Third para"
            ]
        );
        assert_eq!((s[2].line, s[2].end_line, s[2].page), (2, 3, 1));
        assert_eq!((s[3].line, s[3].page), (5, 2));
    }

    #[test]
    fn chunks_pack_about_a_hundred_tokens() {
        let text = "word ".repeat(30).trim_end().to_string() + ". ";
        let text = text.repeat(10);
        let s = sentences(&text, &[1]);
        assert_eq!(s.len(), 10);
        let c = chunks(&s);
        assert!(c.iter().all(|r| r.len() == 3 || r.len() == 1), "{c:?}");
        assert_eq!(c.iter().map(|r| r.len()).sum::<usize>(), 10);
    }
}
