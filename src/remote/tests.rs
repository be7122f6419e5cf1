//! The remote-file layer's own tests, on scripted storage (no server).

use super::*;

#[test]
fn missing_blocks_become_few_ranges() {
    let size = 10 * BLOCK + 100;
    assert_eq!(block_runs(&[0, 1, 2], size), vec![0..3 * BLOCK]);
    // A one-block gap is bridged, a longer one is not.
    assert_eq!(block_runs(&[0, 2], size), vec![0..3 * BLOCK]);
    assert_eq!(
        block_runs(&[0, 3], size),
        vec![0..BLOCK, 3 * BLOCK..4 * BLOCK]
    );
    // The last block ends with the file.
    assert_eq!(block_runs(&[10], size), vec![10 * BLOCK..size]);
    assert!(block_runs(&[], size).is_empty());
}

/// Storage that serves `size` bytes (each byte its offset mod 251), one
/// range at a time, each `pause` long, counting the ranges asked for.
struct Slow {
    size: u64,
    ranges: AtomicU64,
    pause: Duration,
    /// The file's modification time: another one is another version, whose
    /// bytes are shifted by it (so a stale block would show).
    mtime_ns: i64,
}

impl Protocol for Slow {
    fn stat(&self, _rel: &str) -> io::Result<Meta> {
        // An ETag in the stat, as HTTP servers give one, though listings
        // here (as nginx's and XRootD's) carry none.
        Ok(Meta {
            size: self.size,
            mtime_ns: self.mtime_ns,
            etag: Some(format!("\"{}\"", self.mtime_ns)),
        })
    }
    fn read_ranges(
        &self,
        _rel: &str,
        _version: &Meta,
        ranges: &[Range<u64>],
        stop: &Stop<'_>,
    ) -> io::Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for r in ranges {
            if stop() {
                return Err(cancelled());
            }
            self.ranges.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(self.pause);
            out.push(r.clone().map(|at| byte_at(at, self.mtime_ns)).collect());
        }
        Ok(out)
    }
    fn list_dir(&self, _rel: &str) -> io::Result<Vec<Entry>> {
        Ok(Vec::new())
    }
}

/// The byte at `at` of the scripted file of modification time `mtime_ns`.
fn byte_at(at: u64, mtime_ns: i64) -> u8 {
    ((at + mtime_ns as u64 - 1) % 251) as u8
}

fn slow_root(size: u64, pause: Duration) -> Arc<RemoteRoot> {
    root_over(size, pause, 1, None)
}

/// A root over the scripted file, reading through `cache`.
fn root_over(
    size: u64,
    pause: Duration,
    mtime_ns: i64,
    cache: Option<&'static cache::BlockCache>,
) -> Arc<RemoteRoot> {
    let slow = Slow {
        size,
        ranges: AtomicU64::new(0),
        pause,
        mtime_ns,
    };
    let url = RootUrl::parse("http://127.0.0.1:9/slow/").unwrap();
    let mut root = RemoteRoot::over(url, Box::new(slow), Settings::default());
    root.cache = cache;
    Arc::new(root)
}

#[test]
fn threads_missing_the_same_block_fetch_it_once() {
    let root = slow_root(3 * BLOCK, Duration::from_millis(300));
    // A file name of its own: the block cache is the process's.
    let file = Arc::new(root.open("dedup.bin", None).unwrap());
    let readers: Vec<_> = (0..4)
        .map(|i| {
            let file = file.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1000];
                file.read_into(BLOCK + 10 * i, &mut buf).unwrap();
                buf[0]
            })
        })
        .collect();
    for (i, r) in readers.into_iter().enumerate() {
        assert_eq!(r.join().unwrap(), ((BLOCK + 10 * i as u64) % 251) as u8);
    }
    assert_eq!(file.fetched().unwrap().requests, 1);
    assert_eq!(file.fetched().unwrap().bytes, BLOCK);
}

#[test]
fn a_cancelled_call_stops_fetching_promptly() {
    let root = slow_root(1000 * BLOCK, Duration::from_millis(50));
    let stopped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stopped.clone();
    let file = root.open("cancel.bin", None).unwrap();
    // 100 separate blocks: 5 s of fetching, one range after another.
    let ranges: Vec<Range<u64>> = (0..100)
        .map(|i| 4 * i * BLOCK..4 * i * BLOCK + 10)
        .collect();
    let started = std::time::Instant::now();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        stopped.store(true, Ordering::SeqCst);
    });
    let err = file
        .prefetch_until(&ranges, &move || flag.load(Ordering::SeqCst))
        .unwrap_err();
    stopper.join().unwrap();
    assert_eq!(err.kind(), io::ErrorKind::Interrupted, "{err}");
    assert!(
        started.elapsed() < Duration::from_millis(600),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        file.fetched().unwrap().requests,
        0,
        "a failed fetch counts nothing"
    );
    // The blocks it was fetching are free for the next reader to claim.
    let mut buf = [0u8; 10];
    let again = root.open("cancel.bin", None).unwrap();
    again.read_into(0, &mut buf).unwrap();
    assert_eq!(buf[..3], [0, 1, 2]);
}

#[test]
fn versions_differ_by_size_time_or_etag() {
    let m = |size, mtime_ns, etag: Option<&str>| Meta {
        size,
        mtime_ns,
        etag: etag.map(str::to_string),
    };
    assert!(m(10, 5, None).same_version(&m(10, 5, Some("a"))));
    assert!(!m(10, 5, None).same_version(&m(11, 5, None)));
    assert!(!m(10, 5, None).same_version(&m(10, 6, None)));
    assert!(!m(10, 5, Some("a")).same_version(&m(10, 5, Some("b"))));
    assert_ne!(m(10, 5, None).fingerprint(), m(10, 6, None).fingerprint());
    // Two uploads of one size within one second (S3's times are whole
    // seconds) are told apart by their ETags, where the listing has them.
    assert_ne!(
        m(10, 5, Some("\"a\"")).fingerprint(),
        m(10, 5, Some("\"b\"")).fingerprint()
    );
}

#[test]
fn an_open_file_has_the_identity_its_listing_gives() {
    // Slow's listings carry no ETag: a stat's ETag must not count, or every
    // open would take the catalog's version for another one.
    let root = slow_root(1000, Duration::ZERO);
    let file = root.open("f", None).unwrap();
    let listed = Meta {
        size: 1000,
        mtime_ns: 1,
        etag: None,
    };
    assert_eq!(file.fingerprint(), listed.fingerprint());
}

/// A process's block cache (64 MiB of memory) over the disk tier in `dir`
/// of `disk_bytes`: a new one is what a daemon started again has.
fn process_cache(dir: &std::path::Path, disk_bytes: u64) -> &'static cache::BlockCache {
    let tier = disk_cache::DiskTier::open(dir, disk_bytes).expect("a disk tier");
    Box::leak(Box::new(cache::BlockCache::with_disk(64 << 20, Some(tier))))
}

/// Reads the whole file in reads of 10,000 bytes, checking each byte; the
/// bytes fetched from the server.
fn read_all(root: &Arc<RemoteRoot>, mtime_ns: i64) -> u64 {
    let file = root.open("disk.bin", None).unwrap();
    let mut buf = vec![0u8; 10_000];
    let mut at = 0;
    while at < file.size() {
        let n = buf.len().min((file.size() - at) as usize);
        file.read_into(at, &mut buf[..n]).unwrap();
        for (i, b) in buf[..n].iter().enumerate() {
            assert_eq!(
                *b,
                byte_at(at + i as u64, mtime_ns),
                "byte {}",
                at + i as u64
            );
        }
        at += n as u64;
    }
    file.fetched().unwrap().bytes
}

#[test]
fn a_daemon_started_again_reads_its_blocks_from_disk_and_a_changed_file_anew() {
    let dir = tempfile::tempdir().unwrap();
    let size = 40 * BLOCK + 123;
    let first = process_cache(dir.path(), 1 << 30);
    assert_eq!(
        read_all(&root_over(size, Duration::ZERO, 1, Some(first)), 1),
        size
    );
    first.flush_disk();
    // Started again: an empty memory, the same folder.
    let again = process_cache(dir.path(), 1 << 30);
    let fetched = read_all(&root_over(size, Duration::ZERO, 1, Some(again)), 1);
    assert!(
        fetched <= size / 10,
        "{fetched} of {size} bytes fetched again"
    );
    // The file changed on the server (another modification time): every byte
    // comes from the server, none from the old version's blocks.
    let changed = process_cache(dir.path(), 1 << 30);
    assert_eq!(
        read_all(&root_over(size, Duration::ZERO, 2, Some(changed)), 2),
        size
    );
}

#[test]
fn the_disk_tier_keeps_within_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 10 * (BLOCK + 40);
    let cache = process_cache(dir.path(), limit);
    read_all(&root_over(40 * BLOCK, Duration::ZERO, 1, Some(cache)), 1);
    cache.flush_disk();
    let on_disk: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(on_disk <= limit, "{on_disk} bytes on disk, limit {limit}");
    assert!(
        on_disk >= limit / 2,
        "{on_disk} bytes on disk: the tier kept little"
    );
}

#[test]
fn a_torn_block_on_disk_is_fetched_again_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let size = 4 * BLOCK;
    let first = process_cache(dir.path(), 1 << 30);
    read_all(&root_over(size, Duration::ZERO, 1, Some(first)), 1);
    first.flush_disk();
    // Every entry cut short, as a crash in the middle of writing would.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    }
    let again = process_cache(dir.path(), 1 << 30);
    // Right bytes (checked in read_all), all fetched from the server.
    assert_eq!(
        read_all(&root_over(size, Duration::ZERO, 1, Some(again)), 1),
        size
    );
}

/// A server whose listing names paths rather than children: `a/../../etc`,
/// `..`, a name with a NUL. The walk keeps only the names of one child.
#[test]
fn a_listing_naming_paths_instead_of_children_is_not_followed() {
    struct Hostile;
    impl Protocol for Hostile {
        fn stat(&self, _rel: &str) -> io::Result<Meta> {
            Err(io::Error::new(io::ErrorKind::IsADirectory, "a folder"))
        }
        fn read_ranges(
            &self,
            _: &str,
            _: &Meta,
            _: &[Range<u64>],
            _: &Stop<'_>,
        ) -> io::Result<Vec<Vec<u8>>> {
            unreachable!("a listing reads no bytes")
        }
        fn list_dir(&self, rel: &str) -> io::Result<Vec<Entry>> {
            let file = |name: &str| Entry {
                name: name.into(),
                is_dir: false,
                meta: Some(Meta {
                    size: 1,
                    mtime_ns: 0,
                    etag: None,
                }),
            };
            let folder = |name: &str| Entry {
                name: name.into(),
                is_dir: true,
                meta: None,
            };
            Ok(match rel {
                "" => vec![
                    file("ok.root"),
                    file("a/../../etc/passwd"),
                    file("x\0y.root"),
                    file(""),
                    folder(".."),
                    folder("."),
                    folder("up/.."),
                    folder("sub"),
                ],
                "sub" => vec![file("in.root"), file("/abs.root")],
                other => panic!("listed {other}, which no safe walk reaches"),
            })
        }
    }
    let url = RootUrl::parse("http://127.0.0.1:9/data/").unwrap();
    let root = RemoteRoot::over(url, Box::new(Hostile), Settings::default());
    let listed: Vec<String> = root
        .list("", &|_| false)
        .unwrap()
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    assert_eq!(listed, ["ok.root", "sub/in.root"]);
}
