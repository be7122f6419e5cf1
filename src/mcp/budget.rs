//! The result budget (`[limits] max_result_bytes`): every tool result fits it,
//! whatever the arguments. A result too long for it is cut at an item boundary
//! (a whole hit, node, row or bin), marked `truncated`, and tells in its
//! metadata where the next call starts (`next_offset`); an item that alone
//! cannot fit has its longest texts shortened, with a marker saying so.
//!
//! What is counted is the result's JSON as quarry sends it, once: the same JSON
//! is both `structuredContent` and the text item, and a client hands its model
//! one of the two (DESIGN.md, Results). Image items (plots) are not counted:
//! no client forwards them to the model, and the picture is also a file.

use std::io::Write;

use serde_json::{Map, Value};

use super::response::ToolOutput;

/// The widest `execution_time_ms` a result can carry, counted while fitting
/// (the time is known only once the tool has returned).
const WIDEST_TIME_MS: f64 = 9_999_999.999;

/// Bytes of a value's JSON, counted without building the text.
pub fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail, and a Value always serializes.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Bytes of the result `out` becomes (`ToolOutput::into_json`) for a tool,
/// with the widest time, without copying its data.
pub fn result_len(out: &ToolOutput, operation: &str) -> usize {
    let mut metadata = out.metadata.clone();
    metadata.insert("operation".into(), operation.into());
    metadata.insert("execution_time_ms".into(), WIDEST_TIME_MS.into());
    r#"{"data":,"metadata":,"suggestions":}"#.len()
        + json_len(&out.data)
        + json_len(&metadata)
        + json_len(&out.suggestions)
}

/// Where a cut left a list: how many items are shown of how many, and whether
/// the last shown item's text was shortened to fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub kept: usize,
    pub total: usize,
    pub shortened: bool,
}

impl Cut {
    /// Whether the answer holds less than everything (items left out, or an
    /// item shortened).
    pub fn truncated(&self) -> bool {
        self.kept < self.total || self.shortened
    }
}

/// The byte budget of one tool's results.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub cap: usize,
    pub operation: &'static str,
}

impl Budget {
    pub fn new(cap: usize, operation: &'static str) -> Budget {
        Budget { cap, operation }
    }

    pub fn len(&self, out: &ToolOutput) -> usize {
        result_len(out, self.operation)
    }

    pub fn fits(&self, out: &ToolOutput) -> bool {
        self.len(out) <= self.cap
    }

    /// Cuts the array at `pointer` (a JSON pointer into `out.data`) to its
    /// longest prefix that fits, shortening the first item's texts when not
    /// even it fits. `mark` adds what the answer says of its extent
    /// (`truncated`, where to go on); it is called once on the answer, cut or
    /// not, and what it adds is counted.
    pub fn cut_list(
        &self,
        out: &mut ToolOutput,
        pointer: &str,
        mark: impl FnMut(&mut ToolOutput, Cut),
    ) -> Cut {
        self.cut_together(out, &[(pointer, 0)], mark)
    }

    /// Cuts several arrays of `out.data` at the same index: item `k` of each
    /// array `(pointer, extra)` goes with the others' item `k`, and an array
    /// keeps `extra` items more than the others (a histogram's edges: one
    /// more than its bins). Shorter arrays are kept whole while they can be.
    pub fn cut_together(
        &self,
        out: &mut ToolOutput,
        arrays: &[(&str, usize)],
        mut mark: impl FnMut(&mut ToolOutput, Cut),
    ) -> Cut {
        let mut lists: Vec<Vec<Value>> = arrays.iter().map(|(p, _)| take(out, p)).collect();
        let total = lists
            .iter()
            .zip(arrays)
            .map(|(l, (_, extra))| l.len().saturating_sub(*extra))
            .max()
            .unwrap_or(0);
        let sizes: Vec<Vec<usize>> = lists
            .iter()
            .map(|l| l.iter().map(json_len).collect())
            .collect();
        // Bytes the arrays take when each holds its first `k` (+ extra) items.
        let arrays_len = |k: usize| -> usize {
            sizes
                .iter()
                .zip(arrays)
                .map(|(s, (_, extra))| array_len(&s[..(k + extra).min(s.len())]))
                .sum()
        };
        let empty_len = empty_arrays_len(out, arrays.iter().map(|(p, _)| *p));
        let cut_at = |kept: usize, shortened: bool| Cut {
            kept,
            total,
            shortened,
        };
        // The answer's length, but for its arrays, once marked for `cut`.
        let mut rest_len = |cut: Cut| {
            let mut trial = skeleton(out);
            mark(&mut trial, cut);
            self.len(&trial) - empty_len
        };
        let mut cut = cut_at(total, false);
        if rest_len(cut) + arrays_len(total) > self.cap {
            cut.kept = largest(total.saturating_sub(1), |k| {
                rest_len(cut_at(k, false)) + arrays_len(k) <= self.cap
            });
            if cut.kept == 0 && total > 0 {
                // Not even one item fits: shorten the first one's texts.
                // The longest of the first items is shortened to what the
                // others leave.
                let others = rest_len(cut_at(1, true)) + arrays_len(1);
                let firsts: Vec<usize> =
                    sizes.iter().map(|s| s.first().map_or(0, |n| *n)).collect();
                let longest = (0..firsts.len()).max_by_key(|&i| firsts[i]).unwrap_or(0);
                let room = self.cap.saturating_sub(others - firsts[longest]);
                if lists[longest]
                    .first_mut()
                    .is_some_and(|item| shorten(item, room))
                {
                    cut = cut_at(1, true);
                }
            }
        }
        put_back(out, arrays, lists, cut.kept);
        mark(out, cut);
        cut
    }

    /// Cuts arrays that follow one another (search_multiple's queries): the
    /// first array's items, then the second's, and so on, as one sequence.
    /// `mark` gets how many items of each array are kept (called once, cut or
    /// not) and whether the last kept item was shortened.
    pub fn cut_in_sequence(
        &self,
        out: &mut ToolOutput,
        pointers: &[String],
        mut mark: impl FnMut(&mut ToolOutput, &[usize], bool),
    ) -> Vec<usize> {
        let mut lists: Vec<Vec<Value>> = pointers.iter().map(|p| take(out, p)).collect();
        let lengths: Vec<usize> = lists.iter().map(Vec::len).collect();
        let sizes: Vec<Vec<usize>> = lists
            .iter()
            .map(|l| l.iter().map(json_len).collect())
            .collect();
        let total: usize = lengths.iter().sum();
        // How many items of each array the first `k` of the sequence are.
        let split = |mut k: usize| -> Vec<usize> {
            lengths
                .iter()
                .map(|&n| {
                    let here = k.min(n);
                    k -= here;
                    here
                })
                .collect()
        };
        let arrays_len = |kept: &[usize]| -> usize {
            sizes
                .iter()
                .zip(kept)
                .map(|(s, &k)| array_len(&s[..k]))
                .sum()
        };
        let empty_len = empty_arrays_len(out, pointers.iter().map(String::as_str));
        let mut rest_len = |kept: &[usize], shortened: bool| {
            let mut trial = skeleton(out);
            mark(&mut trial, kept, shortened);
            self.len(&trial) - empty_len
        };
        let (mut k, mut shortened) = (total, false);
        if rest_len(&lengths, false) + arrays_len(&lengths) > self.cap {
            k = largest(total.saturating_sub(1), |k| {
                let kept = split(k);
                rest_len(&kept, false) + arrays_len(&kept) <= self.cap
            });
            if k == 0 && total > 0 {
                // The sequence's first item alone is too long: shorten it.
                let kept = split(1);
                let first_list = kept.iter().position(|&n| n == 1).unwrap_or(0);
                let others = rest_len(&kept, true) + arrays_len(&kept);
                let room = self.cap.saturating_sub(others - sizes[first_list][0]);
                if shorten(&mut lists[first_list][0], room) {
                    (k, shortened) = (1, true);
                }
            }
        }
        let kept = split(k);
        restore(out, pointers, lists, &kept);
        mark(out, &kept, shortened);
        kept
    }
}

/// The array at `pointer` in `out.data`, taken out (an empty array left);
/// none when there is no array there.
fn take(out: &mut ToolOutput, pointer: &str) -> Vec<Value> {
    match out.data.pointer_mut(pointer) {
        Some(Value::Array(items)) => std::mem::take(items),
        _ => Vec::new(),
    }
}

/// Bytes the empty arrays left at these pointers take (`[]` each; nothing
/// where there is no array).
fn empty_arrays_len<'a>(out: &ToolOutput, pointers: impl IntoIterator<Item = &'a str>) -> usize {
    pointers
        .into_iter()
        .filter(|p| matches!(out.data.pointer(p), Some(Value::Array(_))))
        .count()
        * 2
}

fn put_back(out: &mut ToolOutput, arrays: &[(&str, usize)], lists: Vec<Vec<Value>>, k: usize) {
    for ((pointer, extra), mut list) in arrays.iter().zip(lists) {
        list.truncate(k + extra);
        if let Some(slot) = out.data.pointer_mut(pointer) {
            *slot = Value::Array(list);
        }
    }
}

fn restore(out: &mut ToolOutput, pointers: &[String], lists: Vec<Vec<Value>>, kept: &[usize]) {
    for ((pointer, mut list), &k) in pointers.iter().zip(lists).zip(kept) {
        list.truncate(k);
        if let Some(slot) = out.data.pointer_mut(pointer) {
            *slot = Value::Array(list);
        }
    }
}

/// A copy of a result without its images (the lists being cut are empty).
fn skeleton(out: &ToolOutput) -> ToolOutput {
    ToolOutput {
        data: out.data.clone(),
        metadata: out.metadata.clone(),
        suggestions: out.suggestions.clone(),
        images: Vec::new(),
    }
}

/// Bytes of a JSON array of items of these sizes.
fn array_len(sizes: &[usize]) -> usize {
    2 + sizes.iter().sum::<usize>() + sizes.len().saturating_sub(1)
}

/// The largest `k` in `0..=max` with `fits(k)`, for a `fits` that holds up to
/// some `k` and not past it (0 when even 0 does not fit): galloping from 0, then
/// halving, so the trials stay near the answer's size.
pub fn largest(max: usize, mut fits: impl FnMut(usize) -> bool) -> usize {
    let (mut good, mut step) = (0, 1);
    let mut bad = loop {
        if good == max {
            return max;
        }
        let k = (good + step).min(max);
        if !fits(k) {
            break k;
        }
        good = k;
        step *= 2;
    };
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if fits(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    good
}

/// Bytes a character takes inside a JSON string as serde_json writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The byte index where a prefix of `text` whose JSON (without quotes) takes
/// at most `room` bytes ends: always on a character boundary.
pub fn prefix_within(text: &str, room: usize) -> usize {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += escaped_len(c);
        if used > room {
            return at;
        }
    }
    text.len()
}

/// What a shortened text ends with.
pub fn cut_marker(chars_left_out: usize) -> String {
    format!(" …[cut here to fit max_result_bytes: {chars_left_out} more characters]")
}

/// Shortens the longest texts inside `value` until its JSON takes at most
/// `room` bytes, each cut on a character boundary and ended by a marker.
/// Whether it now fits (numbers and keys are never cut).
pub fn shorten(value: &mut Value, room: usize) -> bool {
    // Each round cuts the longest text by what is still too much; a handful of
    // rounds settles it (the markers' own length is counted in each round).
    for _ in 0..64 {
        let size = json_len(value);
        if size <= room {
            return true;
        }
        let Some(longest) = longest_text(value) else {
            return false;
        };
        let text_len = json_len(&Value::String(longest.clone())) - 2;
        let marker_len = cut_marker(longest.chars().count()).len();
        let excess = size - room;
        if text_len <= marker_len {
            return false;
        }
        let keep_room = text_len.saturating_sub(excess + marker_len);
        let at = prefix_within(longest, keep_room);
        let left_out = longest[at..].chars().count();
        let shortened = format!("{}{}", &longest[..at], cut_marker(left_out));
        *longest = shortened;
    }
    json_len(value) <= room
}

/// The longest string inside a value (by bytes), to be shortened first.
fn longest_text(value: &mut Value) -> Option<&mut String> {
    match value {
        Value::String(s) => Some(s),
        Value::Array(items) => items
            .iter_mut()
            .filter_map(longest_text)
            .max_by_key(|s| s.len()),
        Value::Object(map) => map
            .values_mut()
            .filter_map(longest_text)
            .max_by_key(|s| s.len()),
        _ => None,
    }
}

/// The usual marks of an answer holding part of a list: `truncated: true` in
/// the metadata and, when items remain, `next_offset` (the `offset` the next
/// call passes to go on) with a suggestion saying so. Nothing when the
/// answer is whole.
pub fn mark_offset(out: &mut ToolOutput, cut: Cut, offset: usize, tool: &str, unit: &str) {
    if !cut.truncated() {
        return;
    }
    out.metadata.insert("truncated".into(), true.into());
    if cut.kept < cut.total {
        let next = offset + cut.kept;
        out.metadata.insert("next_offset".into(), next.into());
        out.suggestions.push(format!(
            "More {unit} than shown: call {tool} again with the same arguments and offset={next} for the next ones"
        ));
    }
    if cut.shortened {
        out.suggestions.push(format!(
            "One of the {unit} was too long for max_result_bytes: its text ends with a '…[cut here' marker"
        ));
    }
}

impl Budget {
    /// The answer `build(k)` makes for the largest `k` in `0..=total` that
    /// fits, for answers built from the first `k` items of a sequence that do
    /// not nest as one list (a table of contents, an outline): each trial is
    /// built whole, so this suits answers of modest size.
    pub fn fit_prefix(
        &self,
        total: usize,
        mut build: impl FnMut(usize) -> ToolOutput,
    ) -> (usize, ToolOutput) {
        let whole = build(total);
        if self.fits(&whole) {
            return (total, whole);
        }
        let k = largest(total.saturating_sub(1), |k| self.fits(&build(k)));
        (k, build(k))
    }

    /// Cuts the list at `pointer`, a page of a longer sequence: it starts at
    /// `offset`, and `remaining` items (counting the page's) follow from
    /// there, so items left out by a limit are announced like items left out
    /// by the cut (`mark_offset`).
    pub fn page(
        &self,
        out: &mut ToolOutput,
        pointer: &str,
        offset: usize,
        remaining: usize,
        unit: &str,
    ) -> Cut {
        let tool = self.operation;
        self.cut_list(out, pointer, |o, cut| {
            let cut = Cut {
                total: remaining.max(cut.kept),
                ..cut
            };
            mark_offset(o, cut, offset, tool, unit);
        })
    }
}

/// Inserts `key: value` into a JSON object (a no-op on other values).
pub fn set(target: &mut Value, key: &str, value: impl Into<Value>) {
    if let Some(map) = target.as_object_mut() {
        map.insert(key.to_string(), value.into());
    }
}

/// A metadata map's `truncated`, true when any part of the answer was cut.
pub fn or_truncated(metadata: &mut Map<String, Value>, truncated: bool) {
    let before = metadata.get("truncated") == Some(&Value::Bool(true));
    metadata.insert("truncated".into(), (before || truncated).into());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn output(items: Vec<Value>) -> ToolOutput {
        ToolOutput::new(json!({ "items": items, "other": "x" }))
    }

    #[test]
    fn result_len_is_the_length_of_the_envelope() {
        let out = output(vec![json!("a"), json!(1)])
            .meta("truncated", false)
            .suggest("s");
        let text = out.clone().into_json("tool", WIDEST_TIME_MS).to_string();
        assert_eq!(result_len(&out, "tool"), text.len());
    }

    #[test]
    fn lists_are_cut_at_an_item_and_the_whole_fits() {
        let items: Vec<Value> = (0..500).map(|i| json!({ "n": i, "t": "abcdef" })).collect();
        let budget = Budget::new(1000, "tool");
        let mut out = output(items.clone());
        let cut = budget.cut_list(&mut out, "/items", |o, c| {
            mark_offset(o, c, 0, "tool", "items")
        });
        assert!(cut.kept > 0 && cut.kept < 500, "{cut:?}");
        assert!(budget.fits(&out), "{}", budget.len(&out));
        assert_eq!(out.data["items"].as_array().unwrap()[..], items[..cut.kept]);
        assert_eq!(out.metadata["next_offset"], json!(cut.kept));
        // One item more would not have fitted.
        let mut more = output(items[..=cut.kept].to_vec());
        mark_offset(
            &mut more,
            Cut {
                kept: cut.kept + 1,
                total: 500,
                shortened: false,
            },
            0,
            "tool",
            "items",
        );
        assert!(!budget.fits(&more));
        // A list that fits is left alone, unmarked.
        let mut small = output(items[..3].to_vec());
        let cut = budget.cut_list(&mut small, "/items", |o, c| {
            mark_offset(o, c, 0, "tool", "items")
        });
        assert_eq!((cut.kept, cut.truncated()), (3, false));
        assert!(small.metadata.get("truncated").is_none());
        // No array there: nothing to cut, and nothing added.
        let before = small.data.clone();
        let cut = budget.cut_list(&mut small, "/absent", |_, _| {});
        assert_eq!((cut.kept, cut.total), (0, 0));
        assert_eq!(small.data, before);
    }

    #[test]
    fn an_item_too_long_alone_is_shortened_on_a_character_boundary() {
        let long = "é".repeat(3000) + "\n";
        let budget = Budget::new(1024, "tool");
        let mut out = output(vec![json!({ "text": long }), json!({ "text": "b" })]);
        let cut = budget.cut_list(&mut out, "/items", |o, c| {
            mark_offset(o, c, 0, "tool", "items")
        });
        assert_eq!((cut.kept, cut.shortened), (1, true));
        assert!(budget.fits(&out), "{}", budget.len(&out));
        let text = out.data["items"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("éé") && text.contains("…[cut here"),
            "{text}"
        );
        assert_eq!(out.metadata["next_offset"], json!(1));
    }

    #[test]
    fn arrays_cut_together_keep_their_extra_items() {
        let edges: Vec<Value> = (0..=1000).map(|i| json!(i as f64 * 0.125)).collect();
        let counts: Vec<Value> = (0..1000).map(|i| json!(i)).collect();
        let budget = Budget::new(2000, "tool");
        let mut out = ToolOutput::new(json!({ "edges": edges, "counts": counts }));
        let cut = budget.cut_together(&mut out, &[("/edges", 1), ("/counts", 0)], |o, c| {
            mark_offset(o, c, 0, "tool", "bins")
        });
        assert_eq!(cut.total, 1000);
        assert!(cut.kept > 10 && cut.kept < 1000);
        assert_eq!(out.data["edges"].as_array().unwrap().len(), cut.kept + 1);
        assert_eq!(out.data["counts"].as_array().unwrap().len(), cut.kept);
        assert!(budget.fits(&out));
    }

    #[test]
    fn sequences_fill_the_first_arrays_first() {
        let list =
            |n: usize| -> Vec<Value> { (0..n).map(|i| json!(format!("item {i}"))).collect() };
        let budget = Budget::new(1100, "tool");
        let mut out = ToolOutput::new(json!({ "a": list(30), "b": list(300), "c": list(5) }));
        let pointers = ["/a".to_string(), "/b".to_string(), "/c".to_string()];
        let kept = budget.cut_in_sequence(&mut out, &pointers, |o, kept, _| {
            o.metadata.insert("kept".into(), json!(kept));
        });
        assert_eq!(kept[0], 30);
        assert!(kept[1] > 0 && kept[1] < 300 && kept[2] == 0, "{kept:?}");
        assert!(budget.fits(&out));
    }

    #[test]
    fn largest_finds_the_edge() {
        for edge in [0usize, 1, 2, 7, 64, 999, 1000] {
            assert_eq!(largest(1000, |k| k <= edge), edge);
        }
        assert_eq!(largest(0, |_| true), 0);
    }

    #[test]
    fn prefixes_count_escapes() {
        assert_eq!(prefix_within("ab\ncd", 3), 2);
        assert_eq!(prefix_within("ab\ncd", 4), 3);
        assert_eq!(prefix_within("\u{1}x", 5), 0);
        assert_eq!(prefix_within("ééé", 5), 4);
    }
}
