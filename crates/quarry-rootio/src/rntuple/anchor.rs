//! The anchor: the `ROOT::RNTuple` object a TKey holds, the one entry point
//! to an RNTuple in a ROOT file. Big-endian like the rest of the TFile
//! layer: a byte count and class version (6 bytes, outside the checksum),
//! the format version, where the header and footer envelopes lie, the
//! largest key a payload may take, then an XXH3-64 of everything after the
//! first 6 bytes and before the checksum itself (later class versions may
//! append members, which the checksum then covers).

use xxhash_rust::xxh3::xxh3_64;

use super::bytes::{corrupt, mismatch};
use crate::FormatError;

/// The smallest anchor: class version 2 (6 + 64 bytes) and its checksum.
const MIN_ANCHOR: usize = 78;

/// The anchor's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// The format version EPOCH.MAJOR.MINOR.PATCH; only the epoch decides
    /// whether a reader may read it.
    pub version: [u16; 4],
    pub seek_header: u64,
    pub nbytes_header: u64,
    pub len_header: u64,
    pub seek_footer: u64,
    pub nbytes_footer: u64,
    pub len_footer: u64,
    /// Payloads longer than this are split over several keys (0: never).
    pub max_key_size: u64,
}

impl Anchor {
    /// "1.0.0.0"
    pub fn version_string(&self) -> String {
        let [e, m, n, p] = self.version;
        format!("{e}.{m}.{n}.{p}")
    }
}

/// Parses an anchor from the uncompressed object of its key.
pub(super) fn parse_anchor(object: &[u8]) -> Result<Anchor, FormatError> {
    if object.len() < MIN_ANCHOR {
        return Err(corrupt(format!(
            "RNTuple anchor of {} bytes, shorter than the {MIN_ANCHOR} of its first version",
            object.len()
        )));
    }
    let count = u32::from_be_bytes(object[..4].try_into().expect("4 bytes"));
    if count & 0x4000_0000 == 0 {
        return Err(corrupt("RNTuple anchor without its byte count"));
    }
    let (checked, sum) = object.split_at(object.len() - 8);
    let want = u64::from_be_bytes(sum.try_into().expect("8 bytes"));
    let got = xxh3_64(&checked[6..]);
    if mismatch(got, want) {
        return Err(corrupt(format!(
            "RNTuple anchor checksum mismatch ({got:016x} computed, {want:016x} stored)"
        )));
    }
    let u16_at = |at: usize| u16::from_be_bytes(object[at..at + 2].try_into().expect("2"));
    let u64_at = |at: usize| u64::from_be_bytes(object[at..at + 8].try_into().expect("8"));
    let anchor = Anchor {
        version: [u16_at(6), u16_at(8), u16_at(10), u16_at(12)],
        seek_header: u64_at(14),
        nbytes_header: u64_at(22),
        len_header: u64_at(30),
        seek_footer: u64_at(38),
        nbytes_footer: u64_at(46),
        len_footer: u64_at(54),
        max_key_size: u64_at(62),
    };
    if anchor.version[0] != 1 {
        return Err(FormatError::Unsupported(format!(
            "RNTuple format {} (quarry reads epoch 1, formats 1.x.x.x; epoch 0 was ROOT's pre-release)",
            anchor.version_string()
        )));
    }
    Ok(anchor)
}

#[cfg(test)]
pub(super) fn build_anchor(fields: [u64; 7], version: [u16; 4]) -> Vec<u8> {
    let mut out = (0x4000_0000u32 | 66).to_be_bytes().to_vec();
    out.extend(2u16.to_be_bytes());
    for v in version {
        out.extend(v.to_be_bytes());
    }
    for f in fields {
        out.extend(f.to_be_bytes());
    }
    let sum = xxh3_64(&out[6..]);
    out.extend(sum.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_anchor_is_read_and_its_checksum_checked() {
        let bytes = build_anchor([302, 167, 263, 762, 82, 148, 1 << 30], [1, 0, 0, 1]);
        let anchor = parse_anchor(&bytes).unwrap();
        assert_eq!(anchor.version_string(), "1.0.0.1");
        assert_eq!((anchor.seek_header, anchor.len_footer), (302, 148));
        let mut damaged = bytes.clone();
        damaged[20] ^= 1;
        let e = parse_anchor(&damaged).unwrap_err().to_string();
        assert!(e.contains("checksum"), "{e}");
        assert!(parse_anchor(&bytes[..70]).is_err());
        let old = build_anchor([0; 7], [0, 5, 0, 0]);
        assert!(matches!(
            parse_anchor(&old),
            Err(FormatError::Unsupported(_))
        ));
        // A later class version appends members, which the checksum covers.
        let mut longer = bytes[..bytes.len() - 8].to_vec();
        longer.extend(42u64.to_be_bytes());
        let sum = xxh3_64(&longer[6..]);
        longer.extend(sum.to_be_bytes());
        assert_eq!(parse_anchor(&longer).unwrap(), anchor);
    }
}
