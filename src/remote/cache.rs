//! The block cache: remote files are read in aligned blocks, kept in memory up
//! to a byte limit shared by the whole process, least recently used first out.
//! Blocks are keyed by the file's version (URL, size, modification time, ETag),
//! so a file that changed is never served from the blocks of its old version.
//!
//! A block being fetched is claimed (`claim`): a second reader that misses it
//! meanwhile waits for that fetch (`Claim::wait`) instead of fetching it again,
//! so two threads decoding neighbouring baskets never pay for one block twice.
//!
//! Behind the memory, optionally, a folder of blocks in the catalog folder
//! (`disk_cache`): a block missing from memory is looked for there before it
//! is fetched, and a fetched block is written there too.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use super::disk_cache::DiskTier;

/// Bytes per block: small enough that reading a ROOT file's header, keys and
/// streamers fetches little beyond them, large enough that neighbouring small
/// reads share a block.
pub const BLOCK: u64 = 64 << 10;

/// The cache's limit when the config sets none.
pub const DEFAULT_CACHE_BYTES: usize = 256 << 20;

/// The disk tier's limit when the config sets none.
pub const DEFAULT_DISK_CACHE_BYTES: u64 = 2 << 30;

/// The disk tier's folder, in the catalog folder.
pub const DISK_FOLDER: &str = "remote-blocks";

type BlockKey = (u64, u64);

pub struct BlockCache {
    limit: usize,
    disk: Option<DiskTier>,
    inner: Mutex<Inner>,
    /// Blocks some thread is fetching now, with where their bytes will be.
    pending: Mutex<HashMap<BlockKey, Arc<Pending>>>,
}

/// How a fetch of a block ended: its bytes, or its error's kind and message
/// (an `io::Error` is not `Clone`, and every waiting reader gets one), and
/// for a file found changed its URL, so that the waiting readers' calls learn
/// it too (`super::is_changed`).
type Outcome = Result<Arc<[u8]>, (io::ErrorKind, String, Option<String>)>;

/// A block on its way: the bytes, or the fetch's error, once it settled.
#[derive(Default)]
pub struct Pending {
    outcome: Mutex<Option<Outcome>>,
    settled: Condvar,
}

impl Pending {
    /// Waits until the fetching thread settles the block.
    pub fn wait(&self) -> io::Result<Arc<[u8]>> {
        let mut outcome = self.outcome.lock().expect("pending block");
        loop {
            if let Some(got) = outcome.as_ref() {
                return got.clone().map_err(|(kind, why, changed)| match changed {
                    Some(url) => super::changed(&url),
                    None => io::Error::new(kind, why),
                });
            }
            outcome = self.settled.wait(outcome).expect("pending block");
        }
    }
}

/// What a reader gets for a block it lacks: the job of fetching it, or
/// another thread's fetch to wait for.
pub enum Claim {
    Fetch,
    Wait(Arc<Pending>),
    /// Cached after all (a fetch settled since the reader looked).
    Held(Arc<[u8]>),
}

/// The blocks a thread claimed to fetch: each settled with its bytes, or, if
/// the fetch failed or was abandoned (an early return, a panic), with an
/// error that the waiting readers report.
pub struct Claimed<'c> {
    cache: &'c BlockCache,
    file: u64,
    blocks: Vec<u64>,
}

impl Claimed<'_> {
    /// Caches the block's bytes and hands them to whoever waits for them.
    pub fn settle(&mut self, block: u64, data: Arc<[u8]>) {
        self.cache.put_fetched(self.file, block, data.clone());
        self.blocks.retain(|&b| b != block);
        self.cache.release(self.file, block, Ok(data));
    }

    /// Every block not settled yet fails with `error`'s kind and message.
    pub fn fail(&mut self, error: &io::Error) {
        let changed = super::changed_url(error);
        for block in std::mem::take(&mut self.blocks) {
            let why = (error.kind(), error.to_string(), changed.clone());
            self.cache.release(self.file, block, Err(why));
        }
    }
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        // Transient: a waiting reader's call may try again.
        self.fail(&io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "the read that was fetching this block stopped",
        ));
    }
}

#[derive(Default)]
struct Inner {
    blocks: HashMap<BlockKey, (Arc<[u8]>, u64)>,
    /// Last use (a counter) to key, for eviction in age order.
    by_use: BTreeMap<u64, BlockKey>,
    bytes: usize,
    clock: u64,
}

static SHARED: OnceLock<BlockCache> = OnceLock::new();
static LIMIT: OnceLock<usize> = OnceLock::new();
static DISK: OnceLock<(PathBuf, u64)> = OnceLock::new();

/// Sets the process's cache limit; only the first call counts, and only
/// before the cache is first used.
pub fn set_limit(bytes: usize) {
    let _ = LIMIT.set(bytes);
}

/// Puts the process's on-disk tier in `dir` with a limit of `bytes` (0: no
/// tier); only the first call counts, and only before the cache is first used.
pub fn set_disk(dir: PathBuf, bytes: u64) {
    let _ = DISK.set((dir, bytes));
}

/// The process's cache limit.
pub fn shared_limit() -> usize {
    shared().limit
}

/// The process's block cache.
pub fn shared() -> &'static BlockCache {
    SHARED.get_or_init(|| {
        let limit = *LIMIT.get().unwrap_or(&DEFAULT_CACHE_BYTES);
        let disk = DISK
            .get()
            .filter(|(_, bytes)| *bytes > 0)
            .and_then(|(dir, bytes)| DiskTier::open(dir, *bytes));
        BlockCache::with_disk(limit, disk)
    })
}

impl BlockCache {
    pub fn new(limit: usize) -> BlockCache {
        BlockCache::with_disk(limit, None)
    }

    /// A cache of `limit` bytes in memory, over `disk` when given.
    pub fn with_disk(limit: usize, disk: Option<DiskTier>) -> BlockCache {
        BlockCache {
            limit,
            disk,
            inner: Mutex::new(Inner::default()),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// For each block (missing from the cache), whether this thread fetches
    /// it or waits for the thread already fetching it; the blocks to fetch
    /// are claimed until the returned `Claimed` settles or drops them.
    pub fn claim(&self, file: u64, blocks: &[u64]) -> (Claimed<'_>, Vec<(u64, Claim)>) {
        let mut pending = self.pending.lock().expect("pending blocks");
        let mut mine = Vec::new();
        let claims = blocks
            .iter()
            .map(|&block| {
                if let Some(p) = pending.get(&(file, block)) {
                    return (block, Claim::Wait(p.clone()));
                }
                // Settling caches before it releases: looked for under the lock.
                if let Some(data) = self.get(file, block) {
                    return (block, Claim::Held(data));
                }
                pending.insert((file, block), Arc::default());
                mine.push(block);
                (block, Claim::Fetch)
            })
            .collect();
        let claimed = Claimed {
            cache: self,
            file,
            blocks: mine,
        };
        (claimed, claims)
    }

    fn release(&self, file: u64, block: u64, outcome: Outcome) {
        let Some(p) = self
            .pending
            .lock()
            .expect("pending blocks")
            .remove(&(file, block))
        else {
            return;
        };
        *p.outcome.lock().expect("pending block") = Some(outcome);
        p.settled.notify_all();
    }

    pub fn get(&self, file: u64, block: u64) -> Option<Arc<[u8]>> {
        let mut inner = self.inner.lock().expect("block cache");
        inner.clock += 1;
        let now = inner.clock;
        let (data, used) = inner.blocks.get_mut(&(file, block))?;
        let (data, old) = (data.clone(), std::mem::replace(used, now));
        inner.by_use.remove(&old);
        inner.by_use.insert(now, (file, block));
        Some(data)
    }

    /// The memory's limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The block from the disk tier (then kept in memory too), if it holds
    /// it with the length `len` the file's block has.
    pub fn get_from_disk(&self, file: u64, block: u64, len: usize) -> Option<Arc<[u8]>> {
        let data = self.disk.as_ref()?.cache.get(file, block)?;
        if data.len() != len {
            return None;
        }
        self.put(file, block, data.clone());
        Some(data)
    }

    /// Keeps a block just fetched from storage, in memory and on disk.
    pub fn put_fetched(&self, file: u64, block: u64, data: Arc<[u8]>) {
        if let Some(disk) = &self.disk {
            disk.put(file, block, data.clone());
        }
        self.put(file, block, data);
    }

    /// Waits for the blocks queued for the disk tier to be written.
    pub fn flush_disk(&self) {
        if let Some(disk) = &self.disk {
            disk.flush();
        }
    }

    pub fn put(&self, file: u64, block: u64, data: Arc<[u8]>) {
        if data.len() > self.limit {
            return;
        }
        let mut inner = self.inner.lock().expect("block cache");
        inner.clock += 1;
        let now = inner.clock;
        let len = data.len();
        if let Some((old, used)) = inner.blocks.insert((file, block), (data, now)) {
            inner.bytes -= old.len();
            inner.by_use.remove(&used);
        }
        inner.by_use.insert(now, (file, block));
        inner.bytes += len;
        while inner.bytes > self.limit {
            let Some((_, key)) = inner.by_use.pop_first() else {
                break;
            };
            if let Some((old, _)) = inner.blocks.remove(&key) {
                inner.bytes -= old.len();
            }
        }
    }

    /// Drops every block of `file` kept in memory (a version found replaced:
    /// nothing will read it again, and its blocks would only crowd out others).
    pub fn forget(&self, file: u64) {
        let mut inner = self.inner.lock().expect("block cache");
        let gone: Vec<(BlockKey, usize, u64)> = inner
            .blocks
            .iter()
            .filter(|((f, _), _)| *f == file)
            .map(|(key, (data, used))| (*key, data.len(), *used))
            .collect();
        for (key, len, used) in gone {
            inner.blocks.remove(&key);
            inner.by_use.remove(&used);
            inner.bytes -= len;
        }
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.inner.lock().expect("block cache").bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_blocks_go_first_and_the_limit_holds() {
        let cache = BlockCache::new(30);
        let block = |b: u8| -> Arc<[u8]> { vec![b; 10].into() };
        cache.put(1, 0, block(0));
        cache.put(1, 1, block(1));
        cache.put(1, 2, block(2));
        assert!(cache.get(1, 0).is_some()); // block 1 is now the oldest
        cache.put(2, 0, block(9));
        assert_eq!(cache.bytes(), 30);
        assert!(cache.get(1, 1).is_none());
        assert_eq!(cache.get(1, 0).unwrap()[0], 0);
        assert_eq!(cache.get(2, 0).unwrap()[0], 9);
        // Another version of the file is another key.
        assert!(cache.get(3, 0).is_none());
        // A version forgotten leaves the others' blocks.
        cache.forget(2);
        assert!(cache.get(2, 0).is_none());
        assert_eq!(cache.get(1, 0).unwrap()[0], 0);
        assert_eq!(cache.bytes(), 20);
        cache.put(2, 0, block(9));
        // A block larger than the whole cache is not kept.
        cache.put(4, 0, vec![0u8; 31].into());
        assert!(cache.get(4, 0).is_none());
        assert_eq!(cache.bytes(), 30);
    }

    /// A reader waiting for another's fetch learns that the file changed when
    /// that fetch found so, and gets a plain error for any other failure.
    #[test]
    fn a_waiting_reader_learns_that_the_file_changed() {
        let cache = BlockCache::new(1 << 20);
        for (error, changed) in [
            (super::super::changed("http://h/f.root"), true),
            (io::Error::other("the server went away"), false),
        ] {
            let (mut mine, _) = cache.claim(7, &[0]);
            let (_, claims) = cache.claim(7, &[0]);
            let Claim::Wait(pending) = &claims[0].1 else {
                panic!("the block is being fetched");
            };
            mine.fail(&error);
            let got = pending.wait().unwrap_err();
            assert_eq!(super::super::is_changed(&got), changed, "{got}");
            assert_eq!(got.to_string(), error.to_string());
        }
    }
}
