//! HDF5 signature check. The superblock may sit after a user block at offset 0,
//! 512, 1024, 2048, ... (powers of two from 512), per the HDF5 file-format spec.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use crate::FormatError;

pub const SIGNATURE: &[u8] = b"\x89HDF\r\n\x1a\n";

pub fn check_signature(file: &mut File) -> Result<(), FormatError> {
    let size = file.metadata()?.len();
    let mut offset = 0u64;
    let mut head = Vec::with_capacity(SIGNATURE.len());
    while offset + 8 <= size {
        file.seek(SeekFrom::Start(offset))?;
        head.clear();
        file.by_ref().take(8).read_to_end(&mut head)?;
        if head == SIGNATURE {
            return Ok(());
        }
        offset = if offset == 0 { 512 } else { offset * 2 };
    }
    Err(FormatError::Corrupt(
        "not an HDF5 file: no HDF5 signature at offset 0 or any user-block boundary".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn finds_signature_in_real_files_and_after_a_user_block() {
        let dir = PathBuf::from(crate::REPO).join("testdata/hdf5");
        check_signature(&mut File::open(dir.join("detector_conditions.h5")).unwrap()).unwrap();
        check_signature(&mut File::open(dir.join("pylhe-testfile-hpcgen.hdf5")).unwrap()).unwrap();

        let tmp = tempfile::tempdir().unwrap();
        let with_user_block = tmp.path().join("ub.h5");
        let mut bytes = vec![b' '; 1024];
        bytes.extend_from_slice(SIGNATURE);
        bytes.extend_from_slice(&[0u8; 100]);
        std::fs::write(&with_user_block, &bytes).unwrap();
        check_signature(&mut File::open(&with_user_block).unwrap()).unwrap();

        let fake = tmp.path().join("fake.h5");
        std::fs::write(&fake, b"just text pretending to be hdf5").unwrap();
        assert!(check_signature(&mut File::open(&fake).unwrap()).is_err());
    }
}
