//! Feeds arbitrary text, as a server's answer, to every folder listing parser
//! of remote roots (nginx's JSON, HTML index pages, WebDAV, S3's
//! ListObjectsV2, XRootD's dirlist; the first byte chooses). A server may send
//! anything. A panic or a hang is a bug, and so is a name from an HTML page or
//! a WebDAV answer that is not one child's: those parsers decode names and
//! keep only direct children of the folder (the others' names are checked by
//! the walk, `remote::is_one_name`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&format, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    for (name, _size) in quarry::remote::parse_listing_for_fuzzing(format, &text) {
        if matches!(format % 5, 1 | 2) {
            assert!(!name.is_empty() && !name.contains(['/', '\0']), "{name:?}");
        }
    }
});
