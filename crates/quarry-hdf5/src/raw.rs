//! Reading a selection as raw elements for export: numbers and booleans only,
//! in the host's native layout, in the order NumPy gives a basic-indexing
//! result (axes of negative step read backwards), plus the plan that cuts a
//! selection into blocks of bounded size.

use super::read::OpenDataset;
use super::slice::{Axis, Selection};
use super::types::DType;
use crate::FormatError;

/// The element types an export writes: plain numbers and booleans (one byte,
/// 0 or 1), each `size` bytes in the host's byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Plain {
    Int { size: u8, signed: bool },
    Float { size: u8 },
    Bool,
}

impl Plain {
    /// The plain type of a dataset's type; `None` for strings, compounds,
    /// enums and the rest.
    pub fn of(dtype: &DType) -> Option<Plain> {
        match dtype {
            DType::Int { size, signed, .. } if matches!(size, 1 | 2 | 4 | 8) => Some(Plain::Int {
                size: *size,
                signed: *signed,
            }),
            DType::Float { size, .. } if matches!(size, 4 | 8) => {
                Some(Plain::Float { size: *size })
            }
            DType::Bool => Some(Plain::Bool),
            _ => None,
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Plain::Int { size, .. } | Plain::Float { size } => usize::from(size),
            Plain::Bool => 1,
        }
    }
}

impl OpenDataset {
    /// The selected elements' bytes (native layout) in NumPy's order.
    pub fn read_raw(&self, sel: &Selection) -> Result<Vec<u8>, FormatError> {
        let Some(plain) = Plain::of(&self.dtype) else {
            return Err(FormatError::Unsupported(format!(
                "only numbers and booleans are exported; this dataset holds {}",
                self.dtype.numpy()
            )));
        };
        let bytes = self.read_bytes(sel)?;
        Ok(numpy_order(bytes, plain.size(), &sel.axes))
    }
}

/// Elements read in ascending hyperslab order, rearranged so that axes read
/// backwards (negative steps) come out in NumPy's order.
fn numpy_order(bytes: Vec<u8>, size: usize, axes: &[Axis]) -> Vec<u8> {
    if !axes.iter().any(|a| a.reversed && a.count > 1) {
        return bytes;
    }
    let counts: Vec<u64> = axes.iter().map(|a| a.count).collect();
    let mut strides = vec![1u64; axes.len()];
    for i in (0..axes.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * counts[i + 1];
    }
    let n = bytes.len() / size.max(1);
    let mut out = Vec::with_capacity(bytes.len());
    for flat in 0..n as u64 {
        let mut rest = flat;
        let mut source = 0;
        for (i, axis) in axes.iter().enumerate() {
            let index = rest / strides[i];
            rest %= strides[i];
            let index = if axis.reversed {
                axis.count - 1 - index
            } else {
                index
            };
            source += index * strides[i];
        }
        let at = source as usize * size;
        out.extend_from_slice(&bytes[at..at + size]);
    }
    out
}

/// The blocks, in NumPy's order, that together make `sel`, each at most
/// `max_elements` elements (or a single element): the leading axes are
/// taken one index at a time, the first axis whose trailing axes fit is
/// taken in runs, the axes after it whole. With the dataset's `chunks`, a run
/// spans whole chunks along its axis when one fits, so that (for a selection
/// starting on a chunk boundary) no chunk is decompressed for two blocks.
pub fn blocks(sel: &Selection, max_elements: u64, chunks: Option<&[u64]>) -> Vec<Selection> {
    let max = max_elements.max(1);
    if sel.is_empty() || sel.axes.is_empty() {
        return vec![sel.clone()];
    }
    // `split`: the axis taken in runs; every axis after it fits in a block.
    let mut trailing = 1u64;
    let mut split = sel.axes.len() - 1;
    for i in (0..sel.axes.len()).rev() {
        split = i;
        let with = trailing.saturating_mul(sel.axes[i].count);
        if with > max {
            break;
        }
        trailing = with;
        if i == 0 {
            return vec![sel.clone()];
        }
    }
    let mut run = (max / trailing).max(1);
    let axis = sel.axes[split];
    if let Some(&chunk) = chunks.and_then(|c| c.get(split)) {
        // Selected indices per chunk along this axis.
        let per_chunk = (chunk / axis.step.max(1)).max(1);
        if run >= per_chunk {
            run = run / per_chunk * per_chunk;
        }
    }
    let mut out = Vec::new();
    let leading: Vec<u64> = sel.axes[..split].iter().map(|a| a.count).collect();
    let mut index = vec![0u64; split];
    loop {
        let mut start = 0;
        while start < sel.axes[split].count {
            let n = run.min(sel.axes[split].count - start);
            let mut block = sel.clone();
            for (i, &k) in index.iter().enumerate() {
                block.axes[i] = sub_range(sel.axes[i], k, 1);
            }
            block.axes[split] = sub_range(sel.axes[split], start, n);
            out.push(block);
            start += n;
        }
        // The next index of the leading axes, last axis fastest.
        let mut i = split;
        loop {
            if i == 0 {
                return out;
            }
            i -= 1;
            index[i] += 1;
            if index[i] < leading[i] {
                break;
            }
            index[i] = 0;
        }
    }
}

/// The result indices `start .. start + count` of one axis as an axis.
fn sub_range(axis: Axis, start: u64, count: u64) -> Axis {
    let first = if axis.reversed {
        // Result index j is the element `top - j * step`.
        let top = axis.first + (axis.count - 1) * axis.step;
        top - (start + count - 1) * axis.step
    } else {
        axis.first + start * axis.step
    };
    Axis {
        first,
        count,
        ..axis
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slice::{parse, resolve};

    fn sel(text: &str, shape: &[u64]) -> Selection {
        resolve(&parse(text).unwrap(), shape).unwrap()
    }

    /// The dataset element (flat index) of each selected element in NumPy's
    /// order, for a selection read whole.
    fn elements(sel: &Selection, shape: &[u64]) -> Vec<u64> {
        let mut strides = vec![1u64; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * shape[i + 1];
        }
        let counts: Vec<u64> = sel.axes.iter().map(|a| a.count).collect();
        let n: u64 = counts.iter().product();
        let ascending: Vec<u8> = (0..n)
            .flat_map(|flat| {
                let mut rest = flat;
                let mut element = 0;
                for (i, a) in sel.axes.iter().enumerate() {
                    let inner: u64 = counts[i + 1..].iter().product();
                    let k = rest / inner;
                    rest %= inner;
                    element += (a.first + k * a.step) * strides[i];
                }
                element.to_le_bytes()
            })
            .collect();
        numpy_order(ascending, 8, &sel.axes)
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn blocks_make_the_selection_in_numpy_order() {
        // NumPy: np.arange(60).reshape(3, 4, 5)[::-1, 1:, ::-2].ravel()
        let shape = [3, 4, 5];
        let s = sel("::-1, 1:, ::-2", &shape);
        let whole = elements(&s, &shape);
        assert_eq!(
            whole,
            [
                49, 47, 45, 54, 52, 50, 59, 57, 55, 29, 27, 25, 34, 32, 30, 39, 37, 35, 9, 7, 5,
                14, 12, 10, 19, 17, 15
            ]
        );
        for max in [1, 2, 3, 4, 5, 8, 9, 10, 27, 100] {
            let pieces = blocks(&s, max, None);
            assert!(pieces.iter().all(|b| b.len() <= max), "{max}");
            let joined: Vec<u64> = pieces.iter().flat_map(|b| elements(b, &shape)).collect();
            assert_eq!(joined, whole, "blocks of at most {max}");
        }
    }

    #[test]
    fn scalars_and_empty_selections_are_one_block() {
        assert_eq!(blocks(&sel("", &[]), 10, None).len(), 1);
        assert_eq!(blocks(&sel("5:5", &[10]), 10, None).len(), 1);
        assert_eq!(blocks(&sel("2", &[10]), 1, None).len(), 1);
    }

    #[test]
    fn runs_span_whole_chunks() {
        // 1000 rows of 7 in chunks of 30 rows: a block of at most 1000
        // elements holds 142 rows, cut to 120 (four chunks).
        let s = sel(":", &[1000, 7]);
        let shape = [1000, 7];
        let pieces = blocks(&s, 1000, Some(&[30, 7]));
        assert!(pieces.iter().all(|b| b.axes[0].first % 30 == 0));
        assert!(
            pieces[..pieces.len() - 1]
                .iter()
                .all(|b| b.axes[0].count == 120)
        );
        let joined: Vec<u64> = pieces.iter().flat_map(|b| elements(b, &shape)).collect();
        assert_eq!(joined, elements(&s, &shape));
        // A chunk larger than a block: runs as before.
        assert_eq!(blocks(&s, 70, Some(&[30, 7]))[0].axes[0].count, 10);
    }
}
