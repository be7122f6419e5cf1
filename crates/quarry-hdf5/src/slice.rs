//! NumPy basic indexing of a dataset, parsed by hand from text: integers
//! (negative ones count from the end), `start:stop:step` (any part optional,
//! negative steps too), `...`, and omitted trailing axes. Nothing is ever
//! evaluated: the text is split on commas and colons and each piece must be
//! an integer, empty, or `...`.
//!
//! `resolve` turns the indices into one ascending hyperslab per axis (what
//! libhdf5 selects) plus whether that axis is read backwards (a negative step)
//! and whether it stays in the result (an integer index drops it), clipping
//! slice ranges as NumPy does.

use std::fmt;

/// One index of a slice string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    At(i64),
    Range {
        start: Option<i64>,
        stop: Option<i64>,
        step: Option<i64>,
    },
    Ellipsis,
}

/// Why a slice string cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SliceError {
    #[error("cannot parse slice '{text}': {why}")]
    Syntax { text: String, why: String },
    #[error("index {index} is out of range for axis {axis} with length {len}")]
    OutOfRange { index: i64, axis: usize, len: u64 },
    #[error("too many indices: the dataset has {rank} dimension(s) but {given} were given")]
    TooMany { rank: usize, given: usize },
}

/// The longest slice string accepted (a real one is a few dozen characters).
pub const MAX_SLICE_LEN: usize = 1024;

/// Parses a slice string. An empty string and `()` mean "no index" (the whole
/// dataset, and the way to read a scalar one).
pub fn parse(text: &str) -> Result<Vec<Index>, SliceError> {
    let syntax = |why: &str| SliceError::Syntax {
        text: text.chars().take(80).collect(),
        why: why.to_string(),
    };
    if text.len() > MAX_SLICE_LEN {
        return Err(syntax("longer than 1024 characters"));
    }
    let mut body = text.trim();
    if body.starts_with('(') || body.starts_with('[') {
        let close = if body.starts_with('(') { ')' } else { ']' };
        body = body[1..]
            .strip_suffix(close)
            .ok_or_else(|| syntax("unbalanced brackets"))?
            .trim();
    }
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let mut parts: Vec<&str> = body.split(',').collect();
    // A trailing comma makes a one-element tuple, as in Python ("3," is (3,)).
    if parts.len() > 1 && parts.last().is_some_and(|p| p.trim().is_empty()) {
        parts.pop();
    }
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        out.push(parse_index(part.trim()).map_err(|why| syntax(&why))?);
    }
    if out.iter().filter(|i| **i == Index::Ellipsis).count() > 1 {
        return Err(syntax("an index can only have a single ellipsis ('...')"));
    }
    Ok(out)
}

fn parse_index(part: &str) -> Result<Index, String> {
    if part.is_empty() {
        return Err("empty index between commas".into());
    }
    if part == "..." {
        return Ok(Index::Ellipsis);
    }
    if !part.contains(':') {
        return parse_int(part).map(Index::At);
    }
    let pieces: Vec<&str> = part.split(':').collect();
    if pieces.len() > 3 {
        return Err(format!("'{part}' has more than two colons"));
    }
    let bound = |i: usize| -> Result<Option<i64>, String> {
        match pieces.get(i).map(|p| p.trim()) {
            None | Some("") => Ok(None),
            Some(p) => parse_int(p).map(Some),
        }
    };
    let (start, stop, step) = (bound(0)?, bound(1)?, bound(2)?);
    if step == Some(0) {
        return Err("slice step cannot be zero".into());
    }
    Ok(Index::Range { start, stop, step })
}

/// A decimal integer with an optional sign; nothing else (no expressions,
/// names, floats or underscores).
fn parse_int(text: &str) -> Result<i64, String> {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text).trim_start();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{}' is not an integer, a start:stop:step range or '...'",
            text.chars().take(40).collect::<String>()
        ));
    }
    let value: i64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is too large"))?;
    Ok(if text.starts_with('-') { -value } else { value })
}

/// One axis of a selection: the ascending hyperslab `first, first + step, ...`
/// (`count` elements) libhdf5 reads, whether the result runs backwards along it
/// and whether the axis stays in the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Axis {
    pub first: u64,
    pub step: u64,
    pub count: u64,
    pub reversed: bool,
    pub kept: bool,
}

/// A resolved selection: one `Axis` per dimension of the dataset.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Selection {
    pub axes: Vec<Axis>,
}

impl Selection {
    /// Everything in a dataset of this shape.
    pub fn all(shape: &[u64]) -> Selection {
        Selection {
            axes: shape
                .iter()
                .map(|&n| Axis {
                    first: 0,
                    step: 1,
                    count: n,
                    reversed: false,
                    kept: true,
                })
                .collect(),
        }
    }

    /// How many elements are selected.
    pub fn len(&self) -> u64 {
        self.axes
            .iter()
            .fold(1u64, |n, a| n.saturating_mul(a.count))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shape of the result (the kept axes' counts), as NumPy gives it.
    pub fn shape(&self) -> Vec<u64> {
        self.axes
            .iter()
            .filter(|a| a.kept)
            .map(|a| a.count)
            .collect()
    }

    /// The rows `start .. start + count` of the result's first axis (clipped
    /// to the rows there are), as a selection of the same dataset; `None`
    /// when the result has no axis (a scalar).
    pub fn rows(&self, start: u64, count: u64) -> Option<Selection> {
        let mut out = self.clone();
        let axis = out.axes.iter_mut().find(|a| a.kept)?;
        let start = start.min(axis.count);
        let count = count.min(axis.count - start);
        if count == 0 {
            // An empty range: nothing is read along this axis.
            axis.count = 0;
            return Some(out);
        }
        if axis.reversed {
            // Result row j is the element `top - j * step`.
            let top = axis.first + (axis.count - 1) * axis.step;
            let new_top = top - start * axis.step;
            axis.first = new_top - (count - 1) * axis.step;
        } else {
            axis.first += start * axis.step;
        }
        axis.count = count;
        Some(out)
    }

    /// Rows of the result's first axis (1 for a scalar result).
    pub fn rows_total(&self) -> u64 {
        self.axes.iter().find(|a| a.kept).map_or(1, |a| a.count)
    }

    /// This selection with steps widened so that at most `cap` elements
    /// (and at least one) remain: the longest axis is thinned first.
    pub fn thinned(&self, cap: u64) -> Selection {
        let mut out = self.clone();
        while out.len() > cap.max(1) {
            // An axis with more than one element exists while over a cap of one.
            let Some((i, axis)) = out
                .axes
                .iter()
                .enumerate()
                .filter(|(_, a)| a.count > 1)
                .max_by_key(|(_, a)| a.count)
            else {
                break;
            };
            let rest = out.len() / axis.count;
            let target = (cap / rest.max(1)).max(1);
            let factor = axis.count.div_ceil(target).max(2);
            let a = &mut out.axes[i];
            if a.reversed {
                // Keep the same starting element (the highest one).
                let top = a.first + (a.count - 1) * a.step;
                a.step *= factor;
                a.count = a.count.div_ceil(factor);
                a.first = top - (a.count - 1) * a.step;
            } else {
                a.step *= factor;
                a.count = a.count.div_ceil(factor);
            }
        }
        out
    }
}

impl fmt::Display for Selection {
    /// The selection as a slice string that `parse` and NumPy read back to the
    /// same elements.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .axes
            .iter()
            .map(|a| {
                if !a.kept {
                    a.first.to_string()
                } else if a.count == 0 {
                    "0:0".into()
                } else if a.reversed {
                    let top = a.first + (a.count - 1) * a.step;
                    let stop = a
                        .first
                        .checked_sub(1)
                        .map_or(String::new(), |s| s.to_string());
                    format!("{top}:{stop}:-{}", a.step)
                } else {
                    let stop = a.first + (a.count - 1) * a.step + 1;
                    if a.step == 1 {
                        format!("{}:{stop}", a.first)
                    } else {
                        format!("{}:{stop}:{}", a.first, a.step)
                    }
                }
            })
            .collect();
        f.write_str(&parts.join(", "))
    }
}

/// Applies parsed indices to a dataset of `shape`, as NumPy does.
pub fn resolve(indices: &[Index], shape: &[u64]) -> Result<Selection, SliceError> {
    let rank = shape.len();
    let given = indices.iter().filter(|i| **i != Index::Ellipsis).count();
    if given > rank {
        return Err(SliceError::TooMany { rank, given });
    }
    let mut expanded = Vec::with_capacity(rank);
    for index in indices {
        if *index == Index::Ellipsis {
            expanded.extend(std::iter::repeat_n(
                Index::Range {
                    start: None,
                    stop: None,
                    step: None,
                },
                rank - given,
            ));
        } else {
            expanded.push(*index);
        }
    }
    while expanded.len() < rank {
        expanded.push(Index::Range {
            start: None,
            stop: None,
            step: None,
        });
    }
    let axes = expanded
        .iter()
        .zip(shape)
        .enumerate()
        .map(|(axis, (index, &len))| resolve_axis(*index, axis, len))
        .collect::<Result<_, _>>()?;
    Ok(Selection { axes })
}

fn resolve_axis(index: Index, axis: usize, len: u64) -> Result<Axis, SliceError> {
    let n = len as i128;
    match index {
        Index::At(i) => {
            let at = if i < 0 {
                n + i128::from(i)
            } else {
                i128::from(i)
            };
            if !(0..n).contains(&at) {
                return Err(SliceError::OutOfRange {
                    index: i,
                    axis,
                    len,
                });
            }
            Ok(Axis {
                first: at as u64,
                step: 1,
                count: 1,
                reversed: false,
                kept: false,
            })
        }
        Index::Range { start, stop, step } => {
            let step = i128::from(step.unwrap_or(1));
            // CPython's PySlice_AdjustIndices, in i128 so nothing overflows.
            let adjust = |v: Option<i64>, default: i128, lo: i128, hi: i128| match v {
                None => default,
                Some(v) => {
                    let v = i128::from(v);
                    let v = if v < 0 { v + n } else { v };
                    v.clamp(lo, hi)
                }
            };
            if step > 0 {
                let start = adjust(start, 0, 0, n);
                let stop = adjust(stop, n, 0, n);
                let count = if stop > start {
                    (stop - start + step - 1) / step
                } else {
                    0
                };
                Ok(Axis {
                    first: start as u64,
                    step: step as u64,
                    count: count as u64,
                    reversed: false,
                    kept: true,
                })
            } else {
                let start = adjust(start, n - 1, -1, n - 1);
                let stop = adjust(stop, -1, -1, n - 1);
                let stride = -step;
                let count = if start > stop {
                    (start - stop + stride - 1) / stride
                } else {
                    0
                };
                let first = if count > 0 {
                    start - (count - 1) * stride
                } else {
                    0
                };
                Ok(Axis {
                    first: first as u64,
                    step: stride as u64,
                    count: count as u64,
                    reversed: true,
                    kept: true,
                })
            }
        }
        Index::Ellipsis => unreachable!("ellipses are expanded before"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The source indices NumPy selects along one axis, listed by hand.
    fn picks(text: &str, len: u64) -> Vec<u64> {
        let sel = resolve(&parse(text).unwrap(), &[len]).unwrap();
        let a = sel.axes[0];
        let mut v: Vec<u64> = (0..a.count).map(|i| a.first + i * a.step).collect();
        if a.reversed {
            v.reverse();
        }
        v
    }

    #[test]
    fn ranges_clip_and_step_as_numpy() {
        assert_eq!(picks(":", 5), vec![0, 1, 2, 3, 4]);
        assert_eq!(picks("1:4", 5), vec![1, 2, 3]);
        assert_eq!(picks("::2", 5), vec![0, 2, 4]);
        assert_eq!(picks("-2:", 5), vec![3, 4]);
        assert_eq!(picks("::-1", 5), vec![4, 3, 2, 1, 0]);
        assert_eq!(picks("3:0:-2", 5), vec![3, 1]);
        assert_eq!(picks("-1:-6:-2", 5), vec![4, 2, 0]);
        assert_eq!(picks("10:20", 5), Vec::<u64>::new());
        assert_eq!(picks("-100:2", 5), vec![0, 1]);
        assert_eq!(picks("4:1", 5), Vec::<u64>::new());
        assert_eq!(picks("100::-3", 5), vec![4, 1]);
        assert_eq!(picks("2", 5), vec![2]);
        assert_eq!(picks("-1", 5), vec![4]);
    }

    #[test]
    fn ellipsis_integers_and_omitted_axes() {
        let shape = [4, 5, 6];
        let sel = resolve(&parse("..., 1").unwrap(), &shape).unwrap();
        assert_eq!(sel.shape(), vec![4, 5]);
        let sel = resolve(&parse("1").unwrap(), &shape).unwrap();
        assert_eq!(sel.shape(), vec![5, 6]);
        let sel = resolve(&parse("0, ..., ::2").unwrap(), &shape).unwrap();
        assert_eq!(sel.shape(), vec![5, 3]);
        assert_eq!(
            resolve(&parse("").unwrap(), &[]).unwrap().shape(),
            Vec::<u64>::new()
        );
        assert_eq!(resolve(&parse("()").unwrap(), &[]).unwrap().len(), 1);
        assert_eq!(resolve(&parse("...").unwrap(), &[]).unwrap().len(), 1);
    }

    #[test]
    fn bad_strings_and_indices_are_errors_that_name_the_axis() {
        for bad in [
            "a",
            "1:2:3:4",
            "1,,2",
            "::0",
            "..., ...",
            "1.5",
            "__import__('os')",
            "0x10",
            "1e3",
            "(1",
        ] {
            assert!(
                matches!(parse(bad), Err(SliceError::Syntax { .. })),
                "{bad}"
            );
        }
        let err = resolve(&parse("0, 7").unwrap(), &[3, 5]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "index 7 is out of range for axis 1 with length 5"
        );
        let err = resolve(&parse("-4").unwrap(), &[3]).unwrap_err();
        assert!(err.to_string().contains("axis 0 with length 3"), "{err}");
        let err = resolve(&parse("0,0,0").unwrap(), &[3, 5]).unwrap_err();
        assert!(matches!(err, SliceError::TooMany { rank: 2, given: 3 }));
        assert!(matches!(
            resolve(&parse("0").unwrap(), &[]),
            Err(SliceError::TooMany { .. })
        ));
    }

    #[test]
    fn thinning_keeps_under_the_cap_and_round_trips_as_text() {
        let sel = resolve(&parse("::-1, 0").unwrap(), &[1000, 3]).unwrap();
        let thin = sel.thinned(100);
        assert!(thin.len() <= 100);
        let again = resolve(&parse(&thin.to_string()).unwrap(), &[1000, 3]).unwrap();
        assert_eq!(again, thin);
        let sel = resolve(&parse("5:900:7, 1:3").unwrap(), &[1000, 3]).unwrap();
        let thin = sel.thinned(10);
        assert!(thin.len() <= 10, "{thin}");
        assert_eq!(
            resolve(&parse(&thin.to_string()).unwrap(), &[1000, 3]).unwrap(),
            thin
        );
        assert_eq!(
            resolve(&parse("1, 2").unwrap(), &[5, 5])
                .unwrap()
                .thinned(0)
                .len(),
            1
        );
    }

    #[test]
    fn rows_of_a_selection_are_the_rows_of_its_result() {
        // 10 x 4, rows 8, 6, 4, 2 (reversed, step 2), all columns.
        let shape = [10, 4];
        let sel = resolve(&parse("8:0:-2, :").unwrap(), &shape).unwrap();
        assert_eq!(sel.rows_total(), 4);
        let page = sel.rows(1, 2).unwrap();
        // Result rows 1 and 2 are dataset rows 6 and 4: "6:3:-2" in NumPy.
        assert_eq!(page, resolve(&parse("6:3:-2, :").unwrap(), &shape).unwrap());
        let tail = sel.rows(3, 100).unwrap();
        assert_eq!(tail, resolve(&parse("2:0:-2, :").unwrap(), &shape).unwrap());
        assert_eq!(sel.rows(9, 5).unwrap().len(), 0);
        // A dropped leading axis: the rows are the second axis's.
        let sel = resolve(&parse("3, 1:4").unwrap(), &shape).unwrap();
        assert_eq!(
            sel.rows(1, 1).unwrap(),
            resolve(&parse("3, 2:3").unwrap(), &shape).unwrap()
        );
        assert_eq!(
            resolve(&parse("3, 1").unwrap(), &shape).unwrap().rows(0, 1),
            None
        );
    }
}
