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
    pattern: String,
    on_path: bool,
    matcher: Matcher,
}

#[derive(Debug, Clone)]
enum Matcher {
    /// `*` separated literals: the first anchored at the start, the last at the end.
    Stars {
        first: Vec<u8>,
        middle: Vec<memmem::Finder<'static>>,
        last: Vec<u8>,
        has_star: bool,
    },
    Full(globset::GlobMatcher),
}

impl Glob {
    pub fn new(pattern: &str) -> Result<Glob, String> {
        let on_path = pattern.contains('/');
        let simple = !on_path && !pattern.contains(['?', '[', ']', '{', '}', '\\']);
        let matcher = if simple {
            let mut parts: Vec<&str> = pattern.split('*').collect();
            let has_star = parts.len() > 1;
            let last = if has_star {
                parts.pop().unwrap_or("")
            } else {
                ""
            };
            let first = parts.remove(0);
            Matcher::Stars {
                first: first.as_bytes().to_vec(),
                middle: parts
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .map(|p| memmem::Finder::new(p.as_bytes()).into_owned())
                    .collect(),
                last: last.as_bytes().to_vec(),
                has_star,
            }
        } else {
            let glob = globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| format!("invalid glob pattern '{pattern}': {}", e.kind()))?;
            Matcher::Full(glob.compile_matcher())
        };
        Ok(Glob {
            pattern: pattern.to_string(),
            on_path,
            matcher,
        })
    }

    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the pattern is matched against relative paths rather than names.
    pub fn on_path(&self) -> bool {
        self.on_path
    }

    /// Matches a file given its name and its root-relative path.
    pub fn matches_file(&self, name: &str, rel_path: &str) -> bool {
        self.is_match(if self.on_path { rel_path } else { name })
    }

    pub fn is_match(&self, text: &str) -> bool {
        match &self.matcher {
            Matcher::Full(m) => m.is_match(text),
            Matcher::Stars {
                first,
                middle,
                last,
                has_star,
            } => {
                let t = text.as_bytes();
                if !has_star {
                    return t == first.as_slice();
                }
                if t.len() < first.len() + last.len() || !t.starts_with(first) || !t.ends_with(last)
                {
                    return false;
                }
                let mut rest = &t[first.len()..t.len() - last.len()];
                for finder in middle {
                    match finder.find(rest) {
                        Some(at) => rest = &rest[at + finder.needle().len()..],
                        None => return false,
                    }
                }
                true
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
        assert!(!Glob::new("*.md").unwrap().on_path());
        assert!(Glob::new("[unclosed").is_err());
    }
}
