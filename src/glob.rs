//! Glob patterns for names in the catalog (file names, relative paths, later branch
//! and dataset names).
//!
//! A pattern without `/` matches a file's name; a pattern with `/` matches its
//! root-relative path, where `*` stays within one folder and `**` crosses folders.
//! Patterns made only of literals and `*` (the common case: `run_*.root`,
//! `*2024*`) are matched by a hand-written matcher that does a prefix test, a suffix
//! test and in-order substring searches, with no allocation; that keeps
//! `list_files` over 100,000 catalog entries well under a millisecond, where a
//! regex per name costs several. Everything else (`?`, classes, braces, paths) is
//! compiled by `globset`.

use memchr::memmem;

#[derive(Debug, Clone)]
pub struct Glob {
    on_path: bool,
    matcher: Matcher,
}

#[derive(Debug, Clone)]
enum Matcher {
    Stars(Stars),
    /// A full glob, behind a `Stars` prefilter that accepts a superset of it (its
    /// literal runs in order), so the regex runs only on likely matches.
    Full(Stars, globset::GlobMatcher),
}

/// `*`-separated literals: the first anchored at the start, the last at the end.
#[derive(Debug, Clone)]
struct Stars {
    first: Vec<u8>,
    middle: Vec<memmem::Finder<'static>>,
    last: Vec<u8>,
    has_star: bool,
}

/// Haystacks shorter than this are searched byte by byte: a file name is short,
/// and a SIMD searcher's set-up costs more than the search there.
const SHORT_HAYSTACK: usize = 64;

/// Byte equality without a `memcmp` call (names and literals are short).
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

#[inline]
fn find(haystack: &[u8], finder: &memmem::Finder<'_>) -> Option<usize> {
    let needle = finder.needle();
    if haystack.len() >= SHORT_HAYSTACK {
        return finder.find(haystack);
    }
    let last_start = haystack.len().checked_sub(needle.len())?;
    (0..=last_start).find(|&i| same(&haystack[i..i + needle.len()], needle))
}

impl Stars {
    fn new(pattern: &str) -> Stars {
        let mut parts: Vec<&str> = pattern.split('*').collect();
        let has_star = parts.len() > 1;
        let last = if has_star {
            parts.pop().unwrap_or("")
        } else {
            ""
        };
        let first = parts.remove(0);
        Stars {
            first: first.as_bytes().to_vec(),
            middle: parts
                .into_iter()
                .filter(|p| !p.is_empty())
                .map(|p| memmem::Finder::new(p.as_bytes()).into_owned())
                .collect(),
            last: last.as_bytes().to_vec(),
            has_star,
        }
    }

    /// The literal skeleton of a full glob: every wildcard, class or `?` becomes `*`.
    /// `None` when the pattern has alternatives or escapes, which have no such
    /// skeleton.
    fn skeleton_of(pattern: &str) -> Option<Stars> {
        if pattern.contains(['{', '}', '\\']) {
            return None;
        }
        // `**` may stand for zero folders, taking its separators with it: they are
        // not literals every match holds.
        let pattern = pattern
            .replace("/**/", "*")
            .replace("**/", "*")
            .replace("/**", "*");
        let mut skeleton = String::with_capacity(pattern.len());
        let mut in_class = false;
        for c in pattern.chars() {
            match (in_class, c) {
                (false, '[') => {
                    in_class = true;
                    skeleton.push('*');
                }
                (true, ']') => in_class = false,
                (true, _) => {}
                (false, '?') => skeleton.push('*'),
                (false, c) => skeleton.push(c),
            }
        }
        Some(Stars::new(&skeleton))
    }

    /// The literal runs every match contains.
    fn literals(&self) -> impl Iterator<Item = &[u8]> {
        [self.first.as_slice()]
            .into_iter()
            .chain(self.middle.iter().map(|f| f.needle()))
            .chain([self.last.as_slice()])
    }

    #[inline]
    fn is_match(&self, t: &[u8]) -> bool {
        if !self.has_star {
            return same(t, &self.first);
        }
        let (f, l) = (self.first.len(), self.last.len());
        if t.len() < f + l || !same(&t[..f], &self.first) || !same(&t[t.len() - l..], &self.last) {
            return false;
        }
        let mut rest = &t[f..t.len() - l];
        for finder in &self.middle {
            match find(rest, finder) {
                Some(at) => rest = &rest[at + finder.needle().len()..],
                None => return false,
            }
        }
        true
    }
}

impl Glob {
    pub fn new(pattern: &str) -> Result<Glob, String> {
        let on_path = pattern.contains('/');
        let simple = !on_path && !pattern.contains(['?', '[', ']', '{', '}', '\\']);
        let matcher = if simple {
            Matcher::Stars(Stars::new(pattern))
        } else {
            let glob = globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| format!("invalid glob pattern '{pattern}': {}", e.kind()))?;
            let prefilter = Stars::skeleton_of(pattern).unwrap_or_else(|| Stars::new("*"));
            Matcher::Full(prefilter, glob.compile_matcher())
        };
        Ok(Glob { on_path, matcher })
    }

    /// Whether the pattern is matched against relative paths rather than names.
    pub fn on_path(&self) -> bool {
        self.on_path
    }

    /// Matches a file given its name and its root-relative path.
    pub fn matches_file(&self, name: &str, rel_path: &str) -> bool {
        self.is_match(if self.on_path { rel_path } else { name })
    }

    /// Literals every matching name (or path) contains, long enough (2 bytes or
    /// more) to be worth searching for across a whole catalog at once.
    pub fn required_literals(&self) -> Vec<&[u8]> {
        let stars = match &self.matcher {
            Matcher::Stars(s) | Matcher::Full(s, _) => s,
        };
        stars.literals().filter(|l| l.len() >= 2).collect()
    }

    pub fn is_match(&self, text: &str) -> bool {
        match &self.matcher {
            Matcher::Stars(stars) => stars.is_match(text.as_bytes()),
            Matcher::Full(prefilter, glob) => {
                prefilter.is_match(text.as_bytes()) && glob.is_match(text)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        Glob::new(p).unwrap().is_match(s)
    }

    #[test]
    fn star_patterns_match_like_shell_globs() {
        assert!(m("*.root", "run_1.root"));
        assert!(!m("*.root", "run_1.root.bak"));
        assert!(m("run_*.root", "run_1.root"));
        assert!(!m("run_*.root", "xrun_1.root"));
        assert!(m("*2024*.root", "data_2024_v2.root"));
        assert!(!m("*2024*.root", "data_2023.root"));
        assert!(m("*", ""));
        assert!(m("a*b*c", "abc"));
        assert!(m("a*b*c", "axxbyyc"));
        assert!(!m("a*b*c", "acb"));
        // Overlap of prefix and suffix must not double-count characters.
        assert!(!m("ab*ba", "aba"));
        assert!(m("ab*ba", "abba"));
        assert!(m("exact.md", "exact.md"));
        assert!(!m("exact.md", "exact.mdx"));
        assert!(m("**", "anything"));
    }

    #[test]
    fn required_literals_are_the_literal_runs() {
        let lits = |p: &str| {
            let g = Glob::new(p).unwrap();
            g.required_literals()
                .iter()
                .map(|l| String::from_utf8(l.to_vec()).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(lits("*2024*.root"), vec!["2024", ".root"]);
        assert_eq!(lits("run_0042*"), vec!["run_0042"]);
        assert_eq!(lits("*_01234?_*"), vec!["_01234"]);
        assert_eq!(lits("run0420/*.root"), vec!["run0420/", ".root"]);
        assert!(lits("*").is_empty());
        assert!(lits("a*").is_empty());
        assert!(lits("{ab,cd}*").is_empty());
    }

    #[test]
    fn full_globs_and_path_patterns() {
        assert!(m("run_?.root", "run_1.root"));
        assert!(!m("run_?.root", "run_12.root"));
        assert!(m("[ab]*.h5", "a_x.h5"));
        assert!(m("*.{md,txt}", "notes.txt"));
        let g = Glob::new("guides/*.md").unwrap();
        assert!(g.on_path());
        assert!(g.matches_file("x.md", "guides/x.md"));
        assert!(!g.matches_file("x.md", "guides/trigger/x.md"));
        let g = Glob::new("guides/**/*.md").unwrap();
        assert!(g.matches_file("x.md", "guides/trigger/x.md"));
        assert!(g.matches_file("x.md", "guides/x.md"));
        assert!(Glob::new("**/x.md").unwrap().matches_file("x.md", "x.md"));
        assert!(Glob::new("a/**").unwrap().matches_file("b", "a/b/c"));
        assert!(!Glob::new("*.md").unwrap().on_path());
        assert!(Glob::new("[unclosed").is_err());
        // Classes holding '*' or '?' and alternatives keep exact semantics behind
        // the prefilter.
        assert!(m("a[*?]b", "a*b"));
        assert!(!m("a[*?]b", "axb"));
        assert!(m("run_[0-9][0-9].root", "run_42.root"));
        assert!(!m("run_[0-9][0-9].root", "run_4x.root"));
        assert!(m("{run,cond}_*.h5", "cond_1.h5"));
        // Long names take the SIMD searcher path.
        let long = format!("{}needle{}", "x".repeat(80), "y".repeat(80));
        assert!(m("*needle*", &long));
        assert!(!m("*needle*", &"x".repeat(200)));
    }
}
