//! The on-disk tier of the block cache (`[remote] disk_cache_mb`): blocks of
//! remote files kept in the catalog folder, so a daemon started again reads
//! what it read before from disk instead of the network.
//!
//! - One file per block, named by the file version's key (URL, size,
//!   modification time, ETag: see `RemoteRoot::open`) and the block's number,
//!   so a file changed on the server has other names and its old blocks are
//!   never served; they age out.
//! - Each entry starts with a header (a magic number, the key, the block, the
//!   length and a checksum of the bytes) and is written to a temporary name
//!   then renamed: a reader sees a whole entry or none. An entry that does not
//!   check out (torn by a crash, changed on disk) is deleted and read as a miss.
//! - A hit sets the entry's modification time: eviction removes the entries
//!   used longest ago once the folder holds more than the limit, by a scan of
//!   the folder, so several processes sharing it keep to the limit together.
//! - Writes go through one background thread with a bounded queue: the reads
//!   that fetched a block never wait for the disk (a full queue drops the
//!   write, which only costs a fetch later).

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::cache::BLOCK;

const MAGIC: [u8; 8] = *b"QRYBLK01";
const HEADER: usize = 40;
/// Writes waiting for the writer thread at most (64 KiB each).
const QUEUE: usize = 512;
/// A temporary file older than this is left over from a killed process.
const STALE_TEMP: Duration = Duration::from_secs(600);

/// A folder of cached blocks with a byte limit.
pub struct DiskCache {
    dir: PathBuf,
    limit: u64,
    /// Bytes in the folder as this process last counted them, plus its writes since.
    bytes: AtomicU64,
    /// Serialises evictions within the process.
    evicting: Mutex<()>,
    temp_names: AtomicU64,
}

enum Job {
    Put(u64, u64, Arc<[u8]>),
    Flush(SyncSender<()>),
}

/// A `DiskCache` with its writer thread.
pub struct DiskTier {
    pub cache: Arc<DiskCache>,
    writes: Mutex<SyncSender<Job>>,
}

impl DiskTier {
    /// The tier over `dir` (made if missing), or `None` when it cannot be
    /// used (the reads then only miss).
    pub fn open(dir: &Path, limit: u64) -> Option<DiskTier> {
        let cache = Arc::new(DiskCache::open(dir, limit).ok()?);
        let (send, receive) = sync_channel(QUEUE);
        let writer = cache.clone();
        std::thread::Builder::new()
            .name("quarry-disk-cache".into())
            .spawn(move || write_all(&writer, &receive))
            .ok()?;
        Some(DiskTier {
            cache,
            writes: Mutex::new(send),
        })
    }

    /// Queues the block for writing; dropped when the queue is full.
    pub fn put(&self, key: u64, block: u64, data: Arc<[u8]>) {
        let _ = self
            .writes
            .lock()
            .expect("disk cache queue")
            .try_send(Job::Put(key, block, data));
    }

    /// Waits until every write queued so far is done.
    pub fn flush(&self) {
        let (done, wait) = sync_channel(1);
        let sent = self
            .writes
            .lock()
            .expect("disk cache queue")
            .send(Job::Flush(done));
        if sent.is_ok() {
            let _ = wait.recv();
        }
    }
}

fn write_all(cache: &DiskCache, jobs: &Receiver<Job>) {
    for job in jobs {
        match job {
            // A failed write (a full disk) leaves a miss, nothing worse.
            Job::Put(key, block, data) => {
                let _ = cache.put(key, block, &data);
            }
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

impl DiskCache {
    pub fn open(dir: &Path, limit: u64) -> io::Result<DiskCache> {
        fs::create_dir_all(dir)?;
        let cache = DiskCache {
            dir: dir.to_path_buf(),
            limit,
            bytes: AtomicU64::new(0),
            evicting: Mutex::new(()),
            temp_names: AtomicU64::new(0),
        };
        let held = cache.bytes_on_disk()?;
        cache.bytes.store(held, Ordering::Relaxed);
        Ok(cache)
    }

    fn path(&self, key: u64, block: u64) -> PathBuf {
        self.dir.join(format!("{key:016x}-{block:x}.blk"))
    }

    /// The block, when an entry for it exists and checks out.
    pub fn get(&self, key: u64, block: u64) -> Option<Arc<[u8]>> {
        let path = self.path(key, block);
        // Opened for writing too: a hit marks its last use on the same handle.
        let file = File::options().read(true).write(true).open(&path).ok()?;
        let mut bytes = Vec::with_capacity(HEADER + BLOCK as usize);
        (&file)
            .take(HEADER as u64 + BLOCK + 1)
            .read_to_end(&mut bytes)
            .ok()?;
        match check(&bytes, key, block) {
            Some(data) => {
                // Its last use, for eviction; a failure only ages it sooner.
                let _ = file.set_modified(SystemTime::now());
                Some(data.into())
            }
            None => {
                let _ = fs::remove_file(&path);
                None
            }
        }
    }

    /// Writes the block's entry (whole, or not at all), then keeps the folder
    /// within the limit.
    pub fn put(&self, key: u64, block: u64, data: &[u8]) -> io::Result<()> {
        if data.len() as u64 > BLOCK || (HEADER + data.len()) as u64 > self.limit {
            return Ok(());
        }
        let path = self.path(key, block);
        if path.exists() {
            return Ok(());
        }
        let temp = self.dir.join(format!(
            "tmp-{}-{}",
            std::process::id(),
            self.temp_names.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut file = File::create(&temp)?;
            file.write_all(&header(key, block, data))?;
            file.write_all(data)?;
            fs::rename(&temp, &path)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&temp);
            return written;
        }
        let now = self
            .bytes
            .fetch_add((HEADER + data.len()) as u64, Ordering::Relaxed);
        if now + (HEADER + data.len()) as u64 > self.limit {
            self.evict()?;
        }
        Ok(())
    }

    /// Removes the entries used longest ago until the folder holds at most
    /// nine tenths of the limit (a margin, so that not every write scans).
    fn evict(&self) -> io::Result<()> {
        let _one = self.evicting.lock().expect("disk cache eviction");
        let mut entries = self.entries()?;
        let mut held: u64 = entries.iter().map(|e| e.1).sum();
        if held > self.limit {
            let target = self.limit / 10 * 9;
            entries.sort_by_key(|e| e.2);
            for (path, len, _) in entries {
                if held <= target {
                    break;
                }
                if fs::remove_file(&path).is_ok() {
                    held -= len;
                }
            }
        }
        self.bytes.store(held, Ordering::Relaxed);
        Ok(())
    }

    /// Every entry: its path, length and last use.
    fn entries(&self) -> io::Result<Vec<(PathBuf, u64, SystemTime)>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let Ok(entry) = entry else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("tmp-") {
                if used.elapsed().is_ok_and(|age| age > STALE_TEMP) {
                    let _ = fs::remove_file(entry.path());
                }
                continue;
            }
            if name.ends_with(".blk") && meta.is_file() {
                out.push((entry.path(), meta.len(), used));
            }
        }
        Ok(out)
    }

    /// The bytes of the entries in the folder now (a scan); temporary files
    /// left by a killed process are removed on the way.
    pub fn bytes_on_disk(&self) -> io::Result<u64> {
        Ok(self.entries()?.iter().map(|e| e.1).sum())
    }
}

fn header(key: u64, block: u64, data: &[u8]) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(&MAGIC);
    h[8..16].copy_from_slice(&key.to_le_bytes());
    h[16..24].copy_from_slice(&block.to_le_bytes());
    h[24..32].copy_from_slice(&(data.len() as u64).to_le_bytes());
    h[32..40].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(data).to_le_bytes());
    h
}

/// The block's bytes of an entry, if it is whole and the entry of this very
/// block (a torn write, a stray file or bit rot all fail the check).
fn check(entry: &[u8], key: u64, block: u64) -> Option<&[u8]> {
    let (head, data) = entry.split_at_checked(HEADER)?;
    (head == header(key, block, data)).then_some(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(seed: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(seed)).collect()
    }

    #[test]
    fn an_entry_is_read_back_only_when_whole_and_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(dir.path(), 1 << 20).unwrap();
        let data = bytes(7, 5000);
        cache.put(1, 2, &data).unwrap();
        assert_eq!(&*cache.get(1, 2).unwrap(), &data[..]);
        assert!(cache.get(1, 3).is_none());
        assert!(cache.get(2, 2).is_none());

        // Torn (as by a kill -9 in the middle of a write without the rename,
        // or a disk that lost the tail): dropped, never served, and removed.
        let path = cache.path(1, 2);
        let whole = fs::read(&path).unwrap();
        fs::write(&path, &whole[..whole.len() - 100]).unwrap();
        assert!(cache.get(1, 2).is_none());
        assert!(!path.exists());
        // One byte changed: dropped too.
        cache.put(1, 2, &data).unwrap();
        let mut flipped = fs::read(&path).unwrap();
        flipped[HEADER + 10] ^= 1;
        fs::write(&path, &flipped).unwrap();
        assert!(cache.get(1, 2).is_none());
        // Another block's entry under this block's name: dropped.
        cache.put(1, 9, &data).unwrap();
        fs::copy(cache.path(1, 9), &path).unwrap();
        assert!(cache.get(1, 2).is_none());
    }

    #[test]
    fn the_limit_holds_and_the_least_recently_used_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let entry = (HEADER + 1000) as u64;
        let cache = DiskCache::open(dir.path(), 10 * entry).unwrap();
        let old = SystemTime::now() - Duration::from_secs(3600);
        for block in 0..10 {
            cache.put(5, block, &bytes(3, 1000)).unwrap();
            // Ages one second apart, block 0 the oldest.
            let f = File::options()
                .write(true)
                .open(cache.path(5, block))
                .unwrap();
            f.set_modified(old + Duration::from_secs(block)).unwrap();
        }
        // Block 0 used now: block 1 is the oldest.
        assert!(cache.get(5, 0).is_some());
        cache.put(5, 10, &bytes(3, 1000)).unwrap();
        assert!(cache.bytes_on_disk().unwrap() <= 10 * entry);
        assert!(cache.get(5, 1).is_none(), "the oldest went");
        assert!(cache.get(5, 0).is_some(), "the one used just now stayed");
        assert!(cache.get(5, 10).is_some());
        // A second process's view of the same folder counts what is there.
        let again = DiskCache::open(dir.path(), 10 * entry).unwrap();
        assert_eq!(
            again.bytes.load(Ordering::Relaxed),
            cache.bytes_on_disk().unwrap()
        );
    }

    #[test]
    fn a_temporary_file_left_by_a_killed_writer_is_ignored_then_removed() {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join("tmp-1-0");
        fs::write(&temp, b"half an entry").unwrap();
        let f = File::options().write(true).open(&temp).unwrap();
        f.set_modified(SystemTime::now() - 2 * STALE_TEMP).unwrap();
        let cache = DiskCache::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(cache.bytes_on_disk().unwrap(), 0);
        assert!(!temp.exists());
    }
}
