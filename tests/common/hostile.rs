//! A hostile folder, as an attacker could drop into a watched root: every
//! file of the repository's test data cut short and with bytes flipped, 2 GiB
//! sparse files of every kind (some behind a real header), a large text file,
//! a Markdown file of headers only, a folder nested 2,500 levels deep, and
//! names a shell or a tool would trip on. Deterministic (a fixed xorshift), so
//! a failure repeats; sparse files cost no disk, the large text file is
//! written at test time and never committed.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Damaged copies of each test data file: cut at `CUTS` lengths and with
/// bytes flipped in `FLIPS` ways.
const CUTS: u64 = 7;
const FLIPS: u64 = 7;
/// Bytes flipped in each flipped copy.
const FLIPPED_BYTES: usize = 32;
/// How deep the nested folder goes.
pub const NESTING: usize = 2_500;

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Writes the hostile folder into `root`, with a text file of `big_text_mib`
/// MiB; returns how many files it made.
pub fn write_hostile_folder(root: &Path, big_text_mib: u64) -> usize {
    let mut made = 0;
    made += damaged_copies(root);
    made += sparse_files(root);
    made += large_texts(root, big_text_mib);
    made += deep_nesting(root);
    made += odd_names(root);
    made
}

fn testdata_files() -> Vec<PathBuf> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut files = Vec::new();
    let mut dirs = vec![base];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// `name` with `tag` before its extension: `a.root` -> `a.cut3.root`.
fn tagged(name: &str, tag: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) => format!("{stem}.{tag}.{ext}"),
        None => format!("{name}.{tag}"),
    }
}

fn damaged_copies(root: &Path) -> usize {
    let mut made = 0;
    for (i, file) in testdata_files().iter().enumerate() {
        let bytes = std::fs::read(file).unwrap();
        let name = file.file_name().unwrap().to_str().unwrap();
        let dir = root.join("damaged").join(format!("{i:02}"));
        for k in 0..CUTS {
            let len = bytes.len() as u64 * k / CUTS;
            write(
                &dir.join(tagged(name, &format!("cut{k}"))),
                &bytes[..len as usize],
            );
            made += 1;
        }
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (i as u64) << 8);
        for k in 0..FLIPS {
            let mut flipped = bytes.clone();
            for _ in 0..FLIPPED_BYTES {
                if flipped.is_empty() {
                    break;
                }
                // Half the flips in the first 4 KiB, where the headers are.
                let span = if rng.next().is_multiple_of(2) {
                    flipped.len().min(4096)
                } else {
                    flipped.len()
                };
                let at = (rng.next() % span as u64) as usize;
                flipped[at] ^= (rng.next() % 255 + 1) as u8;
            }
            write(&dir.join(tagged(name, &format!("flip{k}"))), &flipped);
            made += 1;
        }
    }
    made
}

/// 2 GiB files that are all hole, of every extension, and some with a real
/// header before the hole.
fn sparse_files(root: &Path) -> usize {
    let dir = root.join("sparse");
    std::fs::create_dir_all(&dir).unwrap();
    let sparse = |name: &str, head: &[u8], size: u64| {
        let mut f = std::fs::File::create(dir.join(name)).unwrap();
        f.write_all(head).unwrap();
        f.set_len(size).unwrap();
    };
    let two_gib = 2 << 30;
    let mut made = 0;
    for ext in [
        "root", "h5", "pdf", "txt", "md", "log", "py", "cpp", "hpp", "rst",
    ] {
        sparse(&format!("hole.{ext}"), b"", two_gib);
        made += 1;
    }
    sparse("no_extension", b"", two_gib);
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let head = |rel: &str, n: usize| {
        let bytes = std::fs::read(data.join(rel)).unwrap();
        bytes[..n.min(bytes.len())].to_vec()
    };
    sparse("headed.root", &head("root/uproot-HZZ.root", 4096), two_gib);
    sparse(
        "headed.h5",
        &head("hdf5/detector_geometry.h5", 4096),
        two_gib,
    );
    sparse(
        "headed.pdf",
        &head("docs/detector_calibration.pdf", 2048),
        two_gib,
    );
    // Under the PDF size limit, so its worker reads it whole.
    sparse(
        "headed_200m.pdf",
        &head("docs/detector_calibration.pdf", 2048),
        200 << 20,
    );
    sparse("headed.txt", b"a text that goes on as a hole\n", two_gib);
    sparse("headed.py", b"def f():\n    return 1\n", two_gib);
    made + 6
}

/// A text file of `mib` MiB of lines of words, and a Markdown file of 20 MiB
/// of headers (a table of contents of millions of entries).
fn large_texts(root: &Path, mib: u64) -> usize {
    let dir = root.join("large");
    std::fs::create_dir_all(&dir).unwrap();
    let words = [
        "muon",
        "pedestal",
        "calorimeter",
        "trigger",
        "run",
        "drift",
        "gain",
        "channel",
        "barrel",
        "endcap",
        "tracker",
        "vertex",
        "jet",
        "energy",
        "scale",
        "offset",
    ];
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let mut out = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(dir.join("huge.txt")).unwrap(),
    );
    let mut written = 0u64;
    let mut line = String::new();
    while written < mib << 20 {
        line.clear();
        for w in 0..12 {
            if w > 0 {
                line.push(' ');
            }
            line.push_str(words[(rng.next() % words.len() as u64) as usize]);
            // Numbers make words of their own: a vocabulary that keeps growing.
            if rng.next().is_multiple_of(4) {
                line.push_str(&(rng.next() % 100_000).to_string());
            }
        }
        line.push('\n');
        out.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
    }
    out.flush().unwrap();
    let headers = "# h\n\n".repeat((20 << 20) / 5);
    std::fs::write(dir.join("headers.md"), headers).unwrap();
    2
}

/// A folder 2,500 levels deep (paths far past PATH_MAX, made level by level
/// from an open handle), with a document at the bottom.
fn deep_nesting(root: &Path) -> usize {
    let top = CString::new(root.join("deep").as_os_str().as_bytes()).unwrap();
    let name = CString::new("d").unwrap();
    // SAFETY: plain system calls on NUL-terminated names; every descriptor
    // opened is closed below.
    unsafe {
        assert_eq!(libc::mkdir(top.as_ptr(), 0o755), 0);
        let mut fd = libc::open(top.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
        assert!(fd >= 0);
        for _ in 0..NESTING {
            assert_eq!(libc::mkdirat(fd, name.as_ptr(), 0o755), 0);
            let next = libc::openat(fd, name.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
            assert!(next >= 0);
            libc::close(fd);
            fd = next;
        }
        let file = CString::new("bottom.md").unwrap();
        let out = libc::openat(fd, file.as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o644);
        assert!(out >= 0);
        let text = b"# The bottom\n\nnothing here\n";
        assert_eq!(
            libc::write(out, text.as_ptr().cast(), text.len()),
            text.len() as isize
        );
        libc::close(out);
        libc::close(fd);
    }
    1
}

/// Names with spaces, control characters, non-UTF-8 bytes, a leading dash,
/// the longest a name may be, and look-alikes of paths.
fn odd_names(root: &Path) -> usize {
    let dir = root.join("names");
    std::fs::create_dir_all(&dir).unwrap();
    let names: Vec<Vec<u8>> = vec![
        b"with space.md".to_vec(),
        b"tab\there.txt".to_vec(),
        b"new\nline.md".to_vec(),
        "\u{fc}n\u{ef}c\u{f6}d\u{e9}.md".as_bytes().to_vec(),
        "rocket_\u{1f680}.txt".as_bytes().to_vec(),
        b"-rf.md".to_vec(),
        b"not\xffutf8.md".to_vec(),
        [vec![b'a'; 252], b".md".to_vec()].concat(),
        b"..%2f..%2fetc.md".to_vec(),
        b"back\\slash.txt".to_vec(),
        b"quote\"'s.md".to_vec(),
        b"star*?[x].py".to_vec(),
    ];
    for name in &names {
        let path = dir.join(std::ffi::OsStr::from_bytes(name));
        std::fs::write(path, b"# Odd\n\nan oddly named file\n").unwrap();
    }
    names.len()
}
