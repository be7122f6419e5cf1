//! NumPy's `.npy` format (version 1.0, or 2.0 for a header past 64 KiB): the
//! magic, a header dict giving `descr`, `fortran_order` and `shape`, padded to
//! a multiple of 64 bytes, then the elements in C order.

use std::io::Write;

use super::{ExportError, Layout};
use crate::formats::hdf5::Plain;

pub struct Npy<W: Write> {
    out: W,
}

/// NumPy's type string for the host's layout of `plain`.
pub fn descr(plain: Plain) -> String {
    let order = if cfg!(target_endian = "little") {
        '<'
    } else {
        '>'
    };
    match plain {
        Plain::Bool => "|b1".into(),
        Plain::Int { size: 1, signed } => format!("|{}1", if signed { 'i' } else { 'u' }),
        Plain::Int { size, signed } => format!("{order}{}{size}", if signed { 'i' } else { 'u' }),
        Plain::Float { size } => format!("{order}f{size}"),
    }
}

fn header(layout: &Layout) -> Vec<u8> {
    let shape = match layout.shape.as_slice() {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        axes => {
            let parts: Vec<String> = axes.iter().map(u64::to_string).collect();
            format!("({})", parts.join(", "))
        }
    };
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        descr(layout.plain)
    );
    // Magic, version, length field, dict and newline: a multiple of 64.
    let (version, length_bytes) = if dict.len() + 1 + 10 <= u16::MAX as usize {
        (1u8, 2)
    } else {
        (2u8, 4)
    };
    let fixed = 6 + 2 + length_bytes;
    let padded = (fixed + dict.len() + 1).div_ceil(64) * 64;
    let len = padded - fixed;
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([version, 0]);
    if version == 1 {
        out.extend((len as u16).to_le_bytes());
    } else {
        out.extend((len as u32).to_le_bytes());
    }
    out.extend(dict.as_bytes());
    out.resize(padded - 1, b' ');
    out.push(b'\n');
    out
}

impl<W: Write> Npy<W> {
    pub fn new(mut out: W, layout: &Layout) -> Result<Self, ExportError> {
        out.write_all(&header(layout))?;
        Ok(Npy { out })
    }

    pub fn block(&mut self, bytes: &[u8]) -> Result<(), ExportError> {
        // Elements are in the host's layout, which `descr` names.
        Ok(self.out.write_all(bytes)?)
    }

    pub fn finish(mut self) -> Result<W, ExportError> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_padded_to_64_bytes() {
        let layout = Layout {
            name: "x".into(),
            plain: Plain::Float { size: 8 },
            shape: vec![3, 2],
        };
        let h = header(&layout);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(usize::from(u16::from_le_bytes([h[8], h[9]])), h.len() - 10);
        let text = std::str::from_utf8(&h[10..]).unwrap();
        assert!(text.starts_with("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }"));
        assert!(text.ends_with(" \n"));
    }
}
