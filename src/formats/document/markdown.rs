//! Markdown: the file's text as one page, a table of contents from its headers
//! (parsed with pulldown-cmark, so a `#` line inside fenced or indented code is
//! not a header, and setext headers count), and metadata from a front-matter
//! block (YAML between `---` lines or TOML between `+++` lines).

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::{
    Document, Format, Heading, MAX_HEADING_BYTES, MAX_TOC_ENTRIES, Metadata, end_with_newline,
    push_within,
};

/// The most of a front-matter block read: the fields quarry reports come
/// first, and a block of megabytes would cost a value per line.
const MAX_FRONT_MATTER_BYTES: usize = 64 << 10;

/// The 1-based line of byte offsets asked in increasing order, counting the
/// line breaks between one offset and the next.
struct LineCounter<'t> {
    text: &'t [u8],
    offset: usize,
    line: u32,
}

impl<'t> LineCounter<'t> {
    fn new(text: &'t str) -> Self {
        LineCounter {
            text: text.as_bytes(),
            offset: 0,
            line: 1,
        }
    }

    fn line_of(&mut self, offset: usize) -> u32 {
        let offset = offset.min(self.text.len());
        if offset < self.offset {
            // Not in order (never seen): count again from the start.
            (self.offset, self.line) = (0, 1);
        }
        let between = &self.text[self.offset..offset];
        self.line += memchr::memchr_iter(b'\n', between).count() as u32;
        self.offset = offset;
        self.line
    }
}

pub fn read(text: String) -> Document {
    let text = end_with_newline(text);
    let outline = outline(&text);
    let mut metadata = outline
        .front_matter
        .as_deref()
        .map(front_matter)
        .unwrap_or_default();
    if metadata.title.is_none() {
        // Most Markdown files carry their title as the first level-1 header.
        metadata.title = outline
            .headings
            .iter()
            .find(|h| h.level == 1)
            .map(|h| h.title.clone());
    }
    Document {
        format: Format::Markdown,
        pages: vec![text],
        toc: outline.headings,
        metadata,
        warnings: Vec::new(),
    }
}

struct Outline {
    headings: Vec<Heading>,
    front_matter: Option<String>,
}

/// Markdown texts longer than this are parsed for their outline a section at
/// a time: pulldown-cmark builds the block tree of all it is given first,
/// about 60 bytes a block (a 16 MiB text of one-letter headers made 260 MB).
const SECTION_BYTES: usize = 1 << 20;

/// The headers of a Markdown text with their 1-based lines, and the raw
/// front-matter block if the text starts with one.
fn outline(text: &str) -> Outline {
    outline_in_sections(text, SECTION_BYTES)
}

/// `outline`, parsing sections of at least `min` bytes.
fn outline_in_sections(text: &str, min: usize) -> Outline {
    // Lines are counted as the headers come, in order, rather than through
    // a table of every line's start (8 bytes a line: 64 MiB for a text of
    // 8 MiB of empty lines).
    let mut lines = LineCounter::new(text);
    let mut out = Outline {
        headings: Vec::new(),
        front_matter: None,
    };
    let mut start = 0;
    for end in section_ends(text, min) {
        if out.headings.len() >= MAX_TOC_ENTRIES {
            break;
        }
        outline_section(&text[start..end], start, &mut lines, &mut out);
        start = end;
    }
    out
}

/// Where a text is cut into sections of at least `min` bytes: after a blank
/// line outside a fenced code block, where no block but a list or a quote
/// goes on (a header in those starts a line of its own either way). The last
/// end is the text's.
fn section_ends(text: &str, min: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut fence: Option<char> = None;
    let mut offset = 0;
    let mut since = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        since += line.len();
        let code = line.trim_start_matches(' ');
        let indent = line.len() - code.len();
        let marker = match code.as_bytes() {
            [b'`', b'`', b'`', ..] if indent < 4 => Some('`'),
            [b'~', b'~', b'~', ..] if indent < 4 => Some('~'),
            _ => None,
        };
        match (fence, marker) {
            (None, Some(c)) => fence = Some(c),
            (Some(open), Some(c)) if open == c => fence = None,
            _ => {}
        }
        if fence.is_none() && since >= min && line.trim().is_empty() {
            ends.push(offset);
            since = 0;
        }
    }
    if ends.last() != Some(&text.len()) {
        ends.push(text.len());
    }
    ends
}

/// Adds the headers of one section (starting `base` bytes into the text) to
/// `out`; only the first section may open with front matter.
fn outline_section(text: &str, base: usize, lines: &mut LineCounter, out: &mut Outline) {
    let mut options = Options::ENABLE_HEADING_ATTRIBUTES;
    if base == 0 {
        options |= Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
            | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS;
    }
    // (level, line, title so far) of the header being read.
    let mut open: Option<(u32, u32, String)> = None;
    let mut in_front_matter = false;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                let line = lines.line_of(base + range.start);
                open = Some((level as u32, line, String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, line, title)) = open.take() {
                    let title = title.trim().to_string();
                    if !title.is_empty() && out.headings.len() < MAX_TOC_ENTRIES {
                        out.headings.push(Heading {
                            title,
                            level,
                            page: 1,
                            line: Some(line),
                        });
                    }
                }
            }
            Event::Start(Tag::MetadataBlock(_)) => in_front_matter = true,
            Event::End(TagEnd::MetadataBlock(_)) => in_front_matter = false,
            Event::Text(t) if in_front_matter => {
                let block = out.front_matter.get_or_insert_with(String::new);
                push_within(block, &t, MAX_FRONT_MATTER_BYTES);
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, _, title)) = open.as_mut() {
                    push_within(title, &t, MAX_HEADING_BYTES);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, _, title)) = open.as_mut() {
                    title.push(' ');
                }
            }
            _ => {}
        }
    }
}

/// The metadata a front-matter block gives: `key: value` (YAML) or `key = value`
/// (TOML) lines, with lists written inline (`[a, b]`) or as `- item` lines.
/// Only the keys quarry reports are read; nested structures are ignored.
fn front_matter(block: &str) -> Metadata {
    let mut fields: Vec<(String, Vec<String>)> = Vec::new();
    for line in block.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed.strip_prefix("- ") {
            // An item of the list under the last key.
            if let Some((_, values)) = fields.last_mut() {
                values.push(unquote(item));
            }
            continue;
        }
        if line.starts_with([' ', '\t']) {
            continue; // nested mapping: not a field quarry reports
        }
        let Some((key, value)) = trimmed.split_once([':', '=']) else {
            continue;
        };
        fields.push((key.trim().to_ascii_lowercase(), scalar_or_list(value)));
    }
    let first = |keys: &[&str]| {
        fields
            .iter()
            .find(|(k, v)| keys.contains(&k.as_str()) && !v.is_empty())
            .map(|(_, v)| v.join(", "))
    };
    let keywords = fields
        .iter()
        .find(|(k, _)| k == "keywords" || k == "tags")
        .map(|(_, v)| split_keywords(v))
        .unwrap_or_default();
    Metadata {
        title: first(&["title"]),
        author: first(&["author", "authors"]),
        subject: first(&["subject", "description", "summary"]),
        created: first(&["created", "date"]),
        keywords,
    }
}

/// A front-matter value: an inline list `[a, "b"]`, a quoted or plain scalar,
/// or nothing (a block list follows).
fn scalar_or_list(value: &str) -> Vec<String> {
    let value = value.trim();
    if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        return inner
            .split(',')
            .map(unquote)
            .filter(|s| !s.is_empty())
            .collect();
    }
    let value = unquote(value);
    if value.is_empty() {
        Vec::new()
    } else {
        vec![value]
    }
}

/// Keywords given as one comma- or semicolon-separated string are split.
fn split_keywords(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split([',', ';']))
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
        .collect()
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner.to_string();
        }
    }
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn titles(doc: &Document) -> Vec<(u32, &str, u32)> {
        doc.toc
            .iter()
            .map(|h| (h.level, h.title.as_str(), h.line.unwrap()))
            .collect()
    }

    /// Parsed a few lines at a time, a text has the outline it has parsed
    /// whole: fences, front matter, setext headers and lists included.
    #[test]
    fn an_outline_parsed_in_sections_is_the_whole_texts() {
        let text = "---\ntitle: T\n---\n\n# One\n\npara\n\n```\n# not a header\n\n## nor this\n```\n\n\
                    Two\n===\n\n- item\n\n  # in a list\n\n~~~py\n# code\n\n~~~\n\n### Three *b* `c`\n\ntext\n";
        let whole = outline_in_sections(text, usize::MAX);
        let heads = |o: &Outline| -> Vec<(String, u32, Option<u32>)> {
            o.headings
                .iter()
                .map(|h| (h.title.clone(), h.level, h.line))
                .collect()
        };
        assert_eq!(whole.headings.len(), 4, "{:?}", heads(&whole));
        for min in [1, 8, 30, 64] {
            let cut = outline_in_sections(text, min);
            assert_eq!(heads(&cut), heads(&whole), "sections of {min}");
            assert_eq!(cut.front_matter, whole.front_matter);
        }
        let ends = section_ends(text, 1);
        assert!(
            ends.len() > 5 && ends.last() == Some(&text.len()),
            "{ends:?}"
        );
    }

    #[test]
    fn headers_in_fenced_and_indented_code_are_not_headers() {
        let text = "# Title\n\nintro\n\n```bash\n# a shell comment\n```\n\n    # indented code\n\n## Part *one* `x`\n\nSetext\n======\n\n### Deep {#anchor}\n";
        let doc = read(text.to_string());
        assert_eq!(
            titles(&doc),
            vec![
                (1, "Title", 1),
                (2, "Part one x", 11),
                (1, "Setext", 13),
                (3, "Deep", 16)
            ]
        );
        assert_eq!(doc.metadata.title.as_deref(), Some("Title"));
    }

    #[test]
    fn the_onboarding_guide_has_its_headers_and_not_the_shell_comment() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/docs/guides/shift_onboarding.md"
        );
        let raw = std::fs::read_to_string(path).unwrap();
        let doc = read(raw.clone());
        // The headers, found by reading the file by eye: levels 1-3.
        let expected = [
            (1, "Calorimeter Shift Onboarding"),
            (2, "Before your first shift"),
            (3, "Accounts and permissions"),
            (3, "Reading list"),
            (2, "During the shift"),
            (3, "Handling alarms"),
            (2, "Handing over"),
        ];
        let got: Vec<(u32, &str)> = doc
            .toc
            .iter()
            .map(|h| (h.level, h.title.as_str()))
            .collect();
        assert_eq!(got, expected);
        for h in &doc.toc {
            let line = raw.lines().nth(h.line.unwrap() as usize - 1).unwrap();
            assert!(line.starts_with('#') && line.ends_with(&h.title), "{line}");
        }
        assert!(raw.contains("# collect the last hour"));
        assert_eq!(doc.pages, vec![raw]);
    }

    #[test]
    fn front_matter_gives_metadata() {
        let yaml = "---\ntitle: \"Beam test notes\"\nauthor: Test beam crew\ndate: 2024-07-01\nkeywords: [calorimeter, 'beam test']\nextra:\n  nested: 1\n---\n\n# Heading\n";
        let doc = read(yaml.to_string());
        assert_eq!(
            doc.metadata,
            Metadata {
                title: Some("Beam test notes".into()),
                author: Some("Test beam crew".into()),
                subject: None,
                created: Some("2024-07-01".into()),
                keywords: vec!["calorimeter".into(), "beam test".into()],
            }
        );
        // The front matter is not a header (no setext reading of its '---').
        assert_eq!(titles(&doc), vec![(1, "Heading", 10)]);

        let toml = "+++\ntitle = 'Menu'\ntags = \"trigger; level-1\"\n+++\ntext\n";
        let doc = read(toml.to_string());
        assert_eq!(doc.metadata.title.as_deref(), Some("Menu"));
        assert_eq!(doc.metadata.keywords, vec!["trigger", "level-1"]);

        let block_list = "---\nauthors:\n  - A. One\n  - B. Two\ntags:\n - x\n---\n";
        let doc = read(block_list.to_string());
        assert_eq!(doc.metadata.author.as_deref(), Some("A. One, B. Two"));
        assert_eq!(doc.metadata.keywords, vec!["x"]);
    }
}
