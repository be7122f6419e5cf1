//! Every distinct word of the text index in one string, for expanding a query
//! word into the index terms it matches: the words that contain it, start or end
//! with it, or (fuzzy) lie within a small edit distance of it.
//!
//! tantivy's term dictionaries answer exact and prefix lookups, but "contains"
//! and "ends with" would mean streaming every segment's dictionary per query.
//! Here all words sit in one NUL-separated string (NUL cannot occur in a word),
//! so each of those is a single `memmem` search. The string only grows: each new
//! segment's dictionary is added once, and words whose documents are gone stay
//! (they then expand to terms with no postings, which costs a lookup and
//! nothing else). It is rebuilt when the index is cleared.

use std::collections::HashSet;
use std::sync::RwLock;

use memchr::memmem;
use tantivy::Searcher;
use tantivy::index::SegmentId;
use tantivy::schema::Field;

use super::tokenizer::LINE_BREAK;

/// How a query word must relate to an index word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    Contains,
    StartsWith,
    EndsWith,
    Exact,
}

#[derive(Default)]
pub struct Vocabulary {
    inner: RwLock<Words>,
}

#[derive(Default)]
struct Words {
    /// "\0word\0word\0...": every word preceded and followed by a NUL.
    text: String,
    known: HashSet<Box<str>>,
    segments: HashSet<SegmentId>,
}

impl Vocabulary {
    /// Adds the words of the searcher's segments not seen yet.
    pub fn catch_up(&self, searcher: &Searcher, field: Field) -> tantivy::Result<()> {
        let fresh: Vec<_> = {
            let words = self.inner.read().expect("vocabulary lock");
            searcher
                .segment_readers()
                .iter()
                .filter(|s| !words.segments.contains(&s.segment_id()))
                .collect()
        };
        if fresh.is_empty() {
            return Ok(());
        }
        let mut words = self.inner.write().expect("vocabulary lock");
        for segment in fresh {
            if !words.segments.insert(segment.segment_id()) {
                continue; // another search added it meanwhile
            }
            let index = segment.inverted_index(field)?;
            let mut stream = index.terms().stream()?;
            while stream.advance() {
                if let Ok(word) = std::str::from_utf8(stream.key()) {
                    words.add(word);
                }
            }
        }
        Ok(())
    }

    pub fn clear(&self) {
        *self.inner.write().expect("vocabulary lock") = Words::default();
    }

    /// The index words that fit `word` (lowercase, as `tokenizer::words` gives),
    /// plus, when `max_edits` > 0, those within that many edits of it.
    pub fn expand(&self, word: &str, fit: Fit, max_edits: usize) -> Vec<String> {
        let words = self.inner.read().expect("vocabulary lock");
        let mut out: Vec<String> = match fit {
            Fit::Exact => Vec::from_iter(words.known.get(word).map(|w| w.to_string())),
            Fit::Contains => words.containing(word.as_bytes()),
            Fit::StartsWith => words.containing(format!("\0{word}").as_bytes()),
            Fit::EndsWith => words.containing(format!("{word}\0").as_bytes()),
        };
        if max_edits > 0 {
            out.extend(words.within_edits(word, max_edits));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.read().expect("vocabulary lock").known.len()
    }
}

impl Words {
    fn add(&mut self, word: &str) {
        if word == LINE_BREAK || self.known.contains(word) {
            return;
        }
        if self.text.is_empty() {
            self.text.push('\0');
        }
        self.text.push_str(word);
        self.text.push('\0');
        self.known.insert(word.into());
    }

    /// The words holding `needle` (which may include the NUL separators to anchor
    /// it at a word's start or end).
    fn containing(&self, needle: &[u8]) -> Vec<String> {
        let bytes = self.text.as_bytes();
        let mut out = Vec::new();
        let mut last_start = usize::MAX;
        for hit in memmem::find_iter(bytes, needle) {
            // The word around the hit (a needle starting with NUL begins at the
            // separator before its word).
            let probe = if needle.first() == Some(&0) {
                hit + 1
            } else {
                hit
            };
            let start = memchr::memrchr(0, &bytes[..probe]).map_or(0, |i| i + 1);
            if start == last_start {
                continue;
            }
            last_start = start;
            let end = memchr::memchr(0, &bytes[probe..]).map_or(bytes.len(), |i| probe + i);
            out.push(self.text[start..end].to_string());
        }
        out
    }

    fn within_edits(&self, word: &str, max_edits: usize) -> Vec<String> {
        let target: Vec<char> = word.chars().collect();
        self.text
            .split('\0')
            .filter(|w| !w.is_empty())
            .filter(|w| {
                // Cheap length test first: each edit changes the length by one at most.
                let n = w.chars().count();
                n.abs_diff(target.len()) <= max_edits && within_edits(w, &target, max_edits)
            })
            .map(str::to_string)
            .collect()
    }
}

/// How many edits (insertions, deletions, substitutions of one character) a
/// word may take and still match a query word of `chars` characters, when fuzzy
/// matching is on: none for short words (too many neighbours), one from four
/// characters, two from eight.
pub fn fuzzy_edits(chars: usize) -> usize {
    match chars {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    }
}

/// Whether the Levenshtein distance between `a` and `b` is at most `max`.
fn within_edits(a: &str, b: &[char], max: usize) -> bool {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        let mut row_min = current[0];
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
            row_min = row_min.min(current[j + 1]);
        }
        if row_min > max {
            return false; // every later row is at least this far
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()] <= max
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary(list: &[&str]) -> Vocabulary {
        let v = Vocabulary::default();
        {
            let mut words = v.inner.write().unwrap();
            for w in list {
                words.add(w);
            }
            words.add("\n");
            words.add(list[0]); // a second time: kept once
        }
        v
    }

    #[test]
    fn words_expand_by_fit() {
        let v = vocabulary(&["pedestal", "pedestals", "subpedestal", "drift", "ped"]);
        assert_eq!(v.len(), 5);
        assert_eq!(
            v.expand("pedestal", Fit::Contains, 0),
            vec!["pedestal", "pedestals", "subpedestal"]
        );
        assert_eq!(
            v.expand("ped", Fit::StartsWith, 0),
            vec!["ped", "pedestal", "pedestals"]
        );
        assert_eq!(
            v.expand("pedestal", Fit::EndsWith, 0),
            vec!["pedestal", "subpedestal"]
        );
        assert_eq!(v.expand("drift", Fit::Exact, 0), vec!["drift"]);
        assert!(v.expand("dri", Fit::Exact, 0).is_empty());
        assert!(v.expand("zzz", Fit::Contains, 0).is_empty());
        // Every hit inside one word yields the word once.
        let v = vocabulary(&["aaaa", "b"]);
        assert_eq!(v.expand("a", Fit::Contains, 0), vec!["aaaa"]);
    }

    #[test]
    fn fuzzy_expansion_uses_edit_distance() {
        let v = vocabulary(&[
            "pedestal",
            "pedestrian",
            "pedestl",
            "pedastal",
            "padastel",
            "x",
        ]);
        // One edit each: a deletion, a substitution; "padastel" is three away.
        assert_eq!(
            v.expand("pedestal", Fit::Exact, 2),
            vec!["pedastal", "pedestal", "pedestl"]
        );
        assert_eq!(
            v.expand("pedestal", Fit::Exact, 1),
            vec!["pedastal", "pedestal", "pedestl"]
        );
        assert!(within_edits(
            "kitten",
            &"sitting".chars().collect::<Vec<_>>(),
            3
        ));
        assert!(!within_edits(
            "kitten",
            &"sitting".chars().collect::<Vec<_>>(),
            2
        ));
        assert_eq!((fuzzy_edits(3), fuzzy_edits(4), fuzzy_edits(8)), (0, 1, 2));
    }
}
