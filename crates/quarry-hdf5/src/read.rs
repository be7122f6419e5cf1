//! Reading a selection of a dataset: only the selected hyperslab is read
//! (libhdf5 selections), into memory of the native type, then shaped as
//! NumPy shapes a basic-indexing result. Statistics read block by block.

use std::ffi::CString;

use hdf5::Dataset;
use serde_json::Value;

use super::H5File;
use super::buffer::Buffer;
use super::dataset::{Filter, dtype_of, filters};
use super::ffi::{self, Owned, locked};
use super::outside;
use super::slice::{Axis, Selection};
use super::types::DType;
use crate::FormatError;

/// A dataset opened for reading.
pub struct OpenDataset {
    ds: Dataset,
    /// `None` for an empty (null) dataspace.
    pub shape: Option<Vec<u64>>,
    pub dtype: DType,
    pub chunks: Option<Vec<u64>>,
}

/// What a read gives: values nested as the selection's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceData {
    pub shape: Vec<u64>,
    pub data: Value,
    /// How many NaN or infinite values became `null`.
    pub non_finite: u64,
}

/// Count, NaN and infinity counts, min, max, mean and squared deviations of
/// numbers seen block by block (blocks merged pairwise, as Chan et al.).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Moments {
    /// Finite values seen.
    pub count: u64,
    pub nan: u64,
    pub inf: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub m2: f64,
}

impl Default for Moments {
    fn default() -> Self {
        Moments {
            count: 0,
            nan: 0,
            inf: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            mean: 0.0,
            m2: 0.0,
        }
    }
}

impl Moments {
    /// Adds a block of values.
    pub fn add(&mut self, xs: &[f64]) {
        let mut block = Moments::default();
        let mut sum = 0.0;
        for &x in xs {
            if x.is_nan() {
                block.nan += 1;
            } else if x.is_infinite() {
                block.inf += 1;
            } else {
                block.count += 1;
                sum += x;
                block.min = block.min.min(x);
                block.max = block.max.max(x);
            }
        }
        if block.count > 0 {
            block.mean = sum / block.count as f64;
            block.m2 = xs
                .iter()
                .filter(|x| x.is_finite())
                .map(|x| (x - block.mean) * (x - block.mean))
                .sum();
        }
        self.merge(&block);
    }

    fn merge(&mut self, other: &Moments) {
        self.nan += other.nan;
        self.inf += other.inf;
        if other.count == 0 {
            return;
        }
        let n = self.count + other.count;
        let delta = other.mean - self.mean;
        let share = other.count as f64 / n as f64;
        self.mean += delta * share;
        self.m2 += other.m2 + delta * delta * self.count as f64 * share;
        self.count = n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// The population standard deviation of the finite values.
    pub fn std(&self) -> f64 {
        (self.m2 / self.count.max(1) as f64).sqrt()
    }
}

impl H5File {
    /// Opens the dataset at `path` for reading (soft links followed, external
    /// links refused). A dataset whose data lies in other files (external
    /// storage, a virtual dataset) is refused here, before anything of it but
    /// its header is read: no `OpenDataset` ever reads through those routes.
    pub fn dataset(&self, path: &str) -> Result<OpenDataset, FormatError> {
        let cpath = CString::new(path)
            .map_err(|_| FormatError::Corrupt("a dataset path cannot contain NUL".into()))?;
        locked(|| {
            let ds = outside::open_dataset(self.inner.id(), &cpath).map_err(|_| {
                FormatError::Corrupt(format!("no dataset at '{path}' in this file"))
            })?;
            // Before the dataspace is asked for: libhdf5 opens the sources of a
            // virtual dataset with an unlimited mapping to learn its extent.
            let dcpl = ds.dcpl().map_err(ffi::corrupt)?;
            let (targets, total) = outside::targets_of(dcpl.id())?;
            if total > 0 {
                return Err(FormatError::Refused(outside::refusal(
                    path, &targets, total,
                )));
            }
            let space = ds.space().map_err(ffi::corrupt)?;
            // SAFETY: a valid dataspace id.
            let is_null = unsafe {
                hdf5_sys::h5s::H5Sget_simple_extent_type(space.id())
                    == hdf5_sys::h5s::H5S_class_t::H5S_NULL
            };
            let dtype = dtype_of(&ds.dtype().map_err(ffi::corrupt)?);
            Ok(OpenDataset {
                shape: (!is_null).then(|| space.shape().into_iter().map(|n| n as u64).collect()),
                chunks: ds
                    .chunk()
                    .map(|c| c.into_iter().map(|n| n as u64).collect()),
                dtype,
                ds,
            })
        })
    }
}

impl OpenDataset {
    /// Reads the selected elements, nested as NumPy nests them.
    pub fn read(&self, sel: &Selection) -> Result<SliceData, FormatError> {
        let buf = self.read_buffer(sel)?;
        let (values, notes) = buf.decode_all();
        let data = if sel.axes.is_empty() {
            values.into_iter().next().unwrap_or_default()
        } else {
            arrange(values, &sel.axes)
        };
        Ok(SliceData {
            shape: sel.shape(),
            data,
            non_finite: notes.non_finite,
        })
    }

    /// Reads the selection block by block along its first axis, each block at
    /// most about `block_elements` elements (rounded to whole chunks along
    /// that axis), handing each block's values as numbers to `each`. Stops
    /// early, returning `Ok(false)`, when `each` returns false.
    pub fn for_each_block(
        &self,
        sel: &Selection,
        block_elements: u64,
        mut each: impl FnMut(&[f64], u64, u64) -> bool,
    ) -> Result<bool, FormatError> {
        if !self.dtype.is_numeric() && !matches!(self.dtype, DType::Enum { .. }) {
            return Err(FormatError::Unsupported(format!(
                "statistics need numbers; this dataset holds {}",
                self.dtype.numpy()
            )));
        }
        let total = sel.len();
        let Some(first) = sel.axes.first().copied() else {
            let numbers = self.read_buffer(sel)?.numbers().unwrap_or_default();
            return Ok(each(&numbers, 1, 1));
        };
        let per_row = (total / first.count.max(1)).max(1);
        let mut rows = (block_elements / per_row).max(1);
        // Whole chunks along the first axis: no chunk is decompressed twice.
        if let Some(chunk) = self.chunks.as_ref().and_then(|c| c.first()) {
            let chunk_rows = (chunk / first.step.max(1)).max(1);
            rows = (rows / chunk_rows).max(1) * chunk_rows;
        }
        let mut done_rows = 0;
        while done_rows < first.count {
            let n = rows.min(first.count - done_rows);
            let mut block = sel.clone();
            block.axes[0] = Axis {
                first: first.first + done_rows * first.step,
                count: n,
                ..first
            };
            let numbers = self.read_buffer(&block)?.numbers().unwrap_or_default();
            done_rows += n;
            if !each(&numbers, done_rows * per_row, total) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The moments of the selected values, read block by block; `Ok(None)`
    /// when `keep_going` said to stop.
    pub fn moments(
        &self,
        sel: &Selection,
        block_elements: u64,
        mut keep_going: impl FnMut(u64, u64) -> bool,
    ) -> Result<Option<Moments>, FormatError> {
        let mut m = Moments::default();
        let finished = self.for_each_block(sel, block_elements, |values, done, total| {
            m.add(values);
            keep_going(done, total)
        })?;
        Ok(finished.then_some(m))
    }

    /// The selected elements' bytes in the native layout, in ascending
    /// hyperslab order.
    pub(super) fn read_bytes(&self, sel: &Selection) -> Result<Vec<u8>, FormatError> {
        self.read_buffer(sel)?.into_bytes().ok_or_else(|| {
            FormatError::Unsupported(format!(
                "values of type {} have no fixed layout",
                self.dtype.numpy()
            ))
        })
    }

    fn read_buffer(&self, sel: &Selection) -> Result<Buffer, FormatError> {
        let desc = locked(|| self.ds.dtype().and_then(|t| t.to_descriptor())).map_err(|e| {
            FormatError::Unsupported(format!(
                "quarry cannot read values of type {} ({e})",
                self.dtype.numpy()
            ))
        })?;
        let len = sel.len();
        let mut buf = Buffer::new(&desc, len as usize)?;
        if len == 0 || self.shape.is_none() {
            return Ok(buf);
        }
        locked(|| {
            use hdf5_sys::h5s::{
                H5S_class_t, H5S_seloper_t, H5Sclose, H5Screate, H5Screate_simple,
                H5Sselect_hyperslab,
            };
            // SAFETY: a valid dataset id.
            let file_space = Owned::new(
                unsafe { hdf5_sys::h5d::H5Dget_space(self.ds.id()) },
                H5Sclose,
            )?;
            let mem_space = if sel.axes.is_empty() {
                // SAFETY: creating a scalar dataspace.
                Owned::new(unsafe { H5Screate(H5S_class_t::H5S_SCALAR) }, H5Sclose)?
            } else {
                let first: Vec<u64> = sel.axes.iter().map(|a| a.first).collect();
                let step: Vec<u64> = sel.axes.iter().map(|a| a.step).collect();
                let count: Vec<u64> = sel.axes.iter().map(|a| a.count).collect();
                // SAFETY: arrays of the dataset's rank, as libhdf5 expects.
                ffi::check(unsafe {
                    H5Sselect_hyperslab(
                        file_space.id,
                        H5S_seloper_t::H5S_SELECT_SET,
                        first.as_ptr(),
                        step.as_ptr(),
                        count.as_ptr(),
                        std::ptr::null(),
                    )
                })?;
                // SAFETY: `count` has one entry per axis.
                Owned::new(
                    unsafe {
                        H5Screate_simple(count.len() as i32, count.as_ptr(), std::ptr::null())
                    },
                    H5Sclose,
                )?
            };
            // SAFETY: the buffer holds `len` elements of the memory type, the
            // memory space has `len` elements, and so has the file selection.
            let status = unsafe {
                hdf5_sys::h5d::H5Dread(
                    self.ds.id(),
                    buf.memtype_id(),
                    mem_space.id,
                    file_space.id,
                    hdf5_sys::h5p::H5P_DEFAULT,
                    buf.as_mut_ptr(),
                )
            };
            if status < 0 {
                let error = ffi::last_error();
                return Err(match self.missing_filter() {
                    Some(f) => FormatError::UnsupportedFilter(format!(
                        "filter {} ({}) is not available in this build of libhdf5",
                        f.name, f.id
                    )),
                    None => error,
                });
            }
            buf.filled_by_library();
            Ok(buf)
        })
    }

    /// A filter of the dataset's pipeline that libhdf5 cannot apply here
    /// (neither built in nor found as a plugin): why a read failed, if any.
    fn missing_filter(&self) -> Option<Filter> {
        let dcpl = self.ds.dcpl().ok()?;
        filters(dcpl.id()).ok()?.into_iter().find(|f| {
            // SAFETY: asking about a filter id; callers hold the lock.
            unsafe { hdf5_sys::h5z::H5Zfilter_avail(f.id) <= 0 }
        })
    }
}

/// Values read in ascending hyperslab order, nested along the kept axes, with
/// axes of negative step read backwards.
fn arrange(mut values: Vec<Value>, axes: &[Axis]) -> Value {
    let mut strides = vec![1u64; axes.len()];
    for i in (0..axes.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * axes[i + 1].count;
    }
    build(&mut values, axes, &strides, 0)
}

fn build(values: &mut [Value], axes: &[Axis], strides: &[u64], base: u64) -> Value {
    let Some((axis, rest)) = axes.split_first() else {
        return values
            .get_mut(base as usize)
            .map(std::mem::take)
            .unwrap_or_default();
    };
    let at = |i: u64| {
        let source = if axis.reversed { axis.count - 1 - i } else { i };
        base + source * strides[0]
    };
    if !axis.kept {
        return build(values, rest, &strides[1..], at(0));
    }
    Value::Array(
        (0..axis.count)
            .map(|i| build(values, rest, &strides[1..], at(i)))
            .collect(),
    )
}

/// Row-major values nested into `shape` (attributes, read whole).
pub(super) fn nest(values: Vec<Value>, shape: &[u64]) -> Value {
    let axes: Vec<Axis> = shape
        .iter()
        .map(|&n| Axis {
            first: 0,
            step: 1,
            count: n,
            reversed: false,
            kept: true,
        })
        .collect();
    arrange(values, &axes)
}
