//! How document text becomes index terms, and query text becomes words.
//!
//! A word is a maximal run of letters and digits (Unicode alphanumerics),
//! lowercased. Every line break is a token too (`LINE_BREAK`), taking a position
//! like a word: so a term's positions say which line it is on (count the line
//! breaks before it), and two words at consecutive positions are always on the
//! same line. Search semantics rest on this: a line matches a term when the
//! line's words, lowercased and joined by single spaces, contain the term's
//! words joined the same way (`search` explains why that is exact).

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The term indexed at every `'\n'`. No word can equal it: words hold only
/// letters and digits.
pub const LINE_BREAK: &str = "\n";

/// The name the tokenizer is registered under in the tantivy index.
pub const TOKENIZER_NAME: &str = "quarry_words_and_lines";

/// Words longer than this many bytes are indexed in pieces of this size (tantivy
/// drops terms over 65,530 bytes; such "words" are encoded blobs, not prose).
pub const MAX_WORD_BYTES: usize = 1024;

/// The words of a text, as the index sees them.
pub fn words(text: &str) -> Vec<String> {
    let mut stream = WordStream::new(text);
    let mut out = Vec::new();
    while stream.advance() {
        if stream.token.text != LINE_BREAK {
            out.push(stream.token.text.clone());
        }
    }
    out
}

#[derive(Clone, Default)]
pub struct WordsAndLines;

impl Tokenizer for WordsAndLines {
    type TokenStream<'a> = WordStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> WordStream<'a> {
        WordStream::new(text)
    }
}

pub struct WordStream<'a> {
    text: &'a str,
    /// Byte offset of the next character to look at.
    at: usize,
    token: Token,
    next_position: usize,
}

impl<'a> WordStream<'a> {
    fn new(text: &'a str) -> WordStream<'a> {
        WordStream {
            text,
            at: 0,
            token: Token::default(),
            next_position: 0,
        }
    }

    fn emit(&mut self, from: usize, to: usize) {
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = self.next_position;
        self.next_position += 1;
    }
}

impl TokenStream for WordStream<'_> {
    fn advance(&mut self) -> bool {
        self.token.text.clear();
        let rest = &self.text[self.at..];
        for (i, c) in rest.char_indices() {
            if c == '\n' {
                let from = self.at + i;
                self.at = from + 1;
                self.token.text.push('\n');
                self.emit(from, from + 1);
                return true;
            }
            if !c.is_alphanumeric() {
                continue;
            }
            let from = self.at + i;
            let mut to = from;
            for (j, c) in self.text[from..].char_indices() {
                if !c.is_alphanumeric() || self.token.text.len() >= MAX_WORD_BYTES {
                    break;
                }
                to = from + j + c.len_utf8();
                push_lowercase(&mut self.token.text, c);
            }
            self.at = to;
            self.emit(from, to);
            return true;
        }
        self.at = self.text.len();
        false
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

fn push_lowercase(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
    } else {
        out.extend(c.to_lowercase());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<(String, usize)> {
        let mut tokenizer = WordsAndLines;
        let mut s = tokenizer.token_stream(text);
        let mut out = Vec::new();
        while s.advance() {
            out.push((s.token().text.clone(), s.token().position));
        }
        out
    }

    #[test]
    fn words_and_line_breaks_take_consecutive_positions() {
        let got = tokens("Run 381447: HV-trip!\n\nTower_17 ok\n");
        let expected = [
            ("run", 0),
            ("381447", 1),
            ("hv", 2),
            ("trip", 3),
            ("\n", 4),
            ("\n", 5),
            ("tower", 6),
            ("17", 7),
            ("ok", 8),
            ("\n", 9),
        ];
        let expected: Vec<(String, usize)> =
            expected.iter().map(|(t, p)| (t.to_string(), *p)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn words_are_unicode_and_lowercased() {
        assert_eq!(
            words("Größe ÉTÉ naïve 3.5µs"),
            vec!["größe", "été", "naïve", "3", "5µs"]
        );
        assert_eq!(words("-- // ++"), Vec::<String>::new());
        assert_eq!(words("a\r\nb"), vec!["a", "b"]);
    }

    #[test]
    fn overlong_words_are_cut_into_pieces() {
        let long = "ab".repeat(MAX_WORD_BYTES);
        let got = words(&long);
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|w| w.len() == MAX_WORD_BYTES));
        assert_eq!(got.concat(), long);
    }
}
