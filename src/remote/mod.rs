//! Remote data roots: files on HTTP(S) servers, S3 buckets and XRootD servers
//! read by byte ranges as if local. A foundation like `roots`: it knows nothing
//! of formats, the catalog or MCP.
//!
//! - `RemoteRoot` is one configured root URL with its protocol client and its
//!   credentials (held in memory only; never logged, never shown).
//! - `RemoteFile` is one file of it, opened at a known version (size,
//!   modification time, ETag); it is a `ByteSource`: reads go through the
//!   process's block cache (`cache`), missing blocks fetched as few ranged
//!   requests as possible, in parallel, with retries (`retry`).
//! - `RemoteRoot::list` walks the root's folders for the index.

pub mod cache;
mod disk_cache;
mod html_index;
mod http;
mod localhost;
mod retry;
mod s3;
pub mod url;
mod webdav;
mod xrootd;

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::fd::FromRawFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use retry::Policy;
pub use s3::Addressing as S3Addressing;
pub use url::{RootUrl, Scheme, looks_like_url};

use crate::byte_source::{ByteSource, Fetched};
use cache::{BLOCK, Claim};

/// What storage says about a file: enough to tell one version from another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub size: u64,
    /// Modification time in nanoseconds since the epoch (0 when unknown).
    pub mtime_ns: i64,
    pub etag: Option<String>,
}

impl Meta {
    /// The catalog's identity of this version as a listing gives it: size,
    /// modification time and, where the listing carries one (S3), the ETag,
    /// which tells apart two uploads of one size within the same second
    /// (S3's times are whole seconds).
    pub fn fingerprint(&self) -> u64 {
        self.identity(true)
    }

    /// `fingerprint`, with the ETag left out unless `with_etag`.
    fn identity(&self, with_etag: bool) -> u64 {
        let mut bytes = b"remote".to_vec();
        bytes.extend_from_slice(&self.size.to_le_bytes());
        bytes.extend_from_slice(&self.mtime_ns.to_le_bytes());
        if let Some(etag) = self.etag.as_ref().filter(|_| with_etag) {
            bytes.push(0);
            bytes.extend_from_slice(etag.as_bytes());
        }
        xxhash_rust::xxh3::xxh3_64(&bytes)
    }

    /// Whether `other` (seen later) is the same version.
    fn same_version(&self, other: &Meta) -> bool {
        let etags_agree = match (&self.etag, &other.etag) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        self.size == other.size
            && (self.mtime_ns == 0 || other.mtime_ns == 0 || self.mtime_ns == other.mtime_ns)
            && etags_agree
    }
}

/// One name in a folder listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub is_dir: bool,
    /// Known from the listing itself, or `None` (asked for with `stat`).
    pub meta: Option<Meta>,
}

/// What a storage protocol gives quarry: read-only, by root-relative path.
trait Protocol: Send + Sync {
    fn stat(&self, rel: &str) -> io::Result<Meta>;
    /// The bytes of each range (each within the file), checked to come from
    /// the version `version`; an error when the file changed, and `cancelled()`
    /// as soon as `stop` says so (checked between requests and while an
    /// answer streams in).
    fn read_ranges(
        &self,
        rel: &str,
        version: &Meta,
        ranges: &[Range<u64>],
        stop: &Stop<'_>,
    ) -> io::Result<Vec<Vec<u8>>>;
    /// The names in the folder `rel` ("" for the root).
    fn list_dir(&self, rel: &str) -> io::Result<Vec<Entry>>;
    /// Every file below `rel` in one go, for stores that list so (S3);
    /// `None` where folders are listed one at a time.
    fn list_all(&self, _rel: &str) -> Option<io::Result<Vec<(String, Meta)>>> {
        None
    }
    /// Whether this storage's listings give each file's ETag (so the
    /// catalog's identity of a version includes it, and an open must compute
    /// it the same way).
    fn lists_etags(&self) -> bool {
        false
    }
}

/// Says when the reads of a call should stop (the call was cancelled).
pub type Stop<'a> = dyn Fn() -> bool + Send + Sync + 'a;

/// The error of a read stopped by its call.
fn cancelled() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "the read was cancelled")
}

/// How remote roots are reached (`[remote]` in the config).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Connecting, and each request's whole exchange.
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    pub retry: Policy,
    /// Ranged requests in flight at once for one vectored read.
    pub parallel: usize,
    /// A PEM file of extra CA certificates (a private CA); TLS is always verified.
    pub ca_file: Option<PathBuf>,
    /// Largest file fetched whole for the readers that need a whole file
    /// (documents, source code; HDF5 is read by ranges, `formats::worker`).
    pub max_whole_file: u64,
    /// How often remote roots are listed again.
    pub relist: Duration,
    /// S3's endpoint (`scheme://host:port`) and region, when not from the
    /// environment (`AWS_ENDPOINT_URL_S3`, `AWS_REGION`) or AWS's own.
    pub s3_endpoint: Option<String>,
    pub s3_region: Option<String>,
    /// Path-style or virtual-hosted bucket addresses; `None`: virtual on AWS,
    /// path-style on another endpoint (`s3::locate_bucket`).
    pub s3_addressing: Option<S3Addressing>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            retry: Policy::default(),
            parallel: 8,
            ca_file: None,
            max_whole_file: 512 << 20,
            relist: Duration::from_secs(600),
            s3_endpoint: None,
            s3_region: None,
            s3_addressing: None,
        }
    }
}

/// What `index_status` shows of a remote root.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Status {
    /// When the last listing finished (ms since the epoch).
    pub last_listing_ms: Option<i64>,
    /// Files the last listing found.
    pub files_listed: usize,
    /// The last listing's or read's error, if the last attempt failed.
    pub last_error: Option<String>,
    pub bytes_fetched: u64,
    pub requests: u64,
}

/// A configured remote root.
pub struct RemoteRoot {
    pub url: RootUrl,
    protocol: Box<dyn Protocol>,
    settings: Settings,
    status: Mutex<Status>,
    bytes: AtomicU64,
    requests: AtomicU64,
    /// Files a read found to be another version than the catalog's, to be
    /// listed again before the next scheduled listing (`take_changed`).
    changed: Mutex<std::collections::BTreeSet<String>>,
    /// The block cache its files read through: the process's (`None`, looked
    /// up at the first read, after the config has set its limits), or a
    /// test's own.
    cache: Option<&'static cache::BlockCache>,
}

impl std::fmt::Debug for RemoteRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL only: credentials never reach a log line.
        write!(f, "RemoteRoot({})", self.url)
    }
}

impl PartialEq for RemoteRoot {
    fn eq(&self, other: &RemoteRoot) -> bool {
        self.url == other.url
    }
}
impl Eq for RemoteRoot {}

impl RemoteRoot {
    /// A root for `url`, with credentials from the environment; an error for a
    /// protocol this build does not speak yet.
    pub fn new(url: RootUrl, settings: Settings) -> Result<RemoteRoot, String> {
        let protocol: Box<dyn Protocol> = match url.scheme {
            Scheme::Http | Scheme::Https | Scheme::S3 => {
                Box::new(http::Http::new(url.clone(), &settings)?)
            }
            Scheme::Root => Box::new(xrootd::Xrootd::new(url.clone(), &settings)),
        };
        Ok(RemoteRoot::over(url, protocol, settings))
    }

    /// A root at `url` spoken to by `protocol` (a test's own, too), reading
    /// through the process's block cache.
    fn over(url: RootUrl, protocol: Box<dyn Protocol>, settings: Settings) -> RemoteRoot {
        RemoteRoot {
            url,
            protocol,
            settings,
            status: Mutex::new(Status::default()),
            bytes: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            changed: Mutex::new(Default::default()),
            cache: None,
        }
    }

    fn cache(&self) -> &'static cache::BlockCache {
        self.cache.unwrap_or_else(cache::shared)
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn status(&self) -> Status {
        let mut s = self.status.lock().expect("remote status").clone();
        s.bytes_fetched = self.bytes.load(Ordering::Relaxed);
        s.requests = self.requests.load(Ordering::Relaxed);
        s
    }

    /// Records a failure of a listing or read, for `index_status`.
    pub fn note_error(&self, error: &str) {
        self.status.lock().expect("remote status").last_error = Some(error.to_string());
    }

    /// The catalog's identity of a file's version `meta`, the same whether
    /// `meta` came from a folder's listing or a stat: the ETag counts only
    /// where listings carry it (S3), as a stat's ETag would otherwise never
    /// match a listing's.
    pub fn fingerprint(&self, meta: &Meta) -> u64 {
        meta.identity(self.protocol.lists_etags())
    }

    /// Notes that the file `rel` was found to be another version than the
    /// one the catalog describes (a tool opened it, or it changed while
    /// read), so that the index states it again soon (`take_changed`).
    pub fn note_changed(&self, rel: &str) {
        self.changed
            .lock()
            .expect("changed files")
            .insert(rel.to_string());
    }

    /// The files noted changed since the last call.
    pub fn take_changed(&self) -> Vec<String> {
        std::mem::take(&mut *self.changed.lock().expect("changed files"))
            .into_iter()
            .collect()
    }

    /// Every file at or below `rel` (a folder or a file), with its version;
    /// `skip` says which root-relative paths to leave out (hidden names, as
    /// local walks do). Folders are listed one request each, to a depth of 64.
    pub fn list(&self, rel: &str, skip: &dyn Fn(&str) -> bool) -> io::Result<Vec<(String, Meta)>> {
        let result = self.list_below(rel, skip);
        let mut status = self.status.lock().expect("remote status");
        match &result {
            Ok(files) if rel.is_empty() => {
                status.last_listing_ms = Some(now_ms());
                status.files_listed = files.len();
                status.last_error = None;
            }
            Ok(_) => {}
            Err(e) => status.last_error = Some(format!("listing {}: {e}", self.url.file_url(rel))),
        }
        result
    }

    fn list_below(
        &self,
        rel: &str,
        skip: &dyn Fn(&str) -> bool,
    ) -> io::Result<Vec<(String, Meta)>> {
        const MAX_DEPTH: usize = 64;
        if !rel.is_empty() {
            // `rel` may name one file (a deferred file tried again).
            match self.protocol.stat(rel) {
                Ok(meta) => return Ok(vec![(rel.to_string(), meta)]),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) if e.kind() == io::ErrorKind::IsADirectory => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(all) = self.protocol.list_all(rel) {
            let mut files: Vec<(String, Meta)> =
                all?.into_iter().filter(|(path, _)| !skip(path)).collect();
            files.sort_by(|a, b| a.0.cmp(&b.0));
            return Ok(files);
        }
        let mut files = Vec::new();
        let mut folders = vec![(rel.to_string(), 0)];
        while let Some((folder, depth)) = folders.pop() {
            let entries = self.protocol.list_dir(&folder)?;
            for entry in entries.into_iter().filter(is_one_name) {
                let path = if folder.is_empty() {
                    entry.name.clone()
                } else {
                    format!("{folder}/{}", entry.name)
                };
                if skip(&path) {
                    continue;
                }
                if entry.is_dir {
                    if depth < MAX_DEPTH {
                        folders.push((path, depth + 1));
                    }
                } else {
                    let meta = match entry.meta {
                        Some(m) => m,
                        None => self.protocol.stat(&path)?,
                    };
                    files.push((path, meta));
                }
            }
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(files)
    }

    /// Opens the file `rel`; with `expected` (what a listing saw), a file that
    /// is another version now is refused with a transient error (the index
    /// lists again rather than storing rows under the old version's identity).
    pub fn open(self: &Arc<Self>, rel: &str, expected: Option<&Meta>) -> io::Result<RemoteFile> {
        let meta = self.protocol.stat(rel).inspect_err(|e| {
            if e.kind() != io::ErrorKind::NotFound {
                self.note_error(&format!("opening {}: {e}", self.url.file_url(rel)));
            }
        })?;
        if let Some(expected) = expected
            && !expected.same_version(&meta)
        {
            return Err(changed(&self.url.file_url(rel)));
        }
        let mut key = self.url.file_url(rel).into_bytes();
        key.extend_from_slice(&meta.fingerprint().to_le_bytes());
        key.extend_from_slice(meta.etag.as_deref().unwrap_or("").as_bytes());
        Ok(RemoteFile {
            root: self.clone(),
            rel: rel.to_string(),
            key: xxhash_rust::xxh3::xxh3_64(&key),
            meta,
            fetched_bytes: AtomicU64::new(0),
            fetched_requests: AtomicU64::new(0),
            changed_flag: None,
        })
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// What a file that is no longer the version first seen fails with.
#[derive(Debug)]
struct Changed(String);

impl std::fmt::Display for Changed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} changed on the server while it was being read",
            self.0
        )
    }
}

impl std::error::Error for Changed {}

/// The error for a file that is no longer the version first seen: of a
/// transient kind, so that the index tries again after listing it anew, but
/// not retried by the protocols (the same request would meet the same new
/// version); `is_changed` tells it apart.
fn changed(url: &str) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, Changed(url.to_string()))
}

/// Whether `e` says the file changed while it was read (`changed`).
fn is_changed(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Changed>())
}

/// The URL of the file `e` says changed while it was read, if it says so.
fn changed_url(e: &io::Error) -> Option<String> {
    e.get_ref()?.downcast_ref::<Changed>().map(|c| c.0.clone())
}

/// One remote file at one version.
pub struct RemoteFile {
    root: Arc<RemoteRoot>,
    rel: String,
    meta: Meta,
    /// The block cache's key for this version.
    key: u64,
    fetched_bytes: AtomicU64,
    fetched_requests: AtomicU64,
    /// Raised when a read finds the file replaced (`reporting_changes_to`).
    changed_flag: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl RemoteFile {
    /// This file, raising `flag` when a read finds it is no longer the
    /// version opened (a tool call then runs again on the new version).
    pub fn reporting_changes_to(mut self, flag: Arc<std::sync::atomic::AtomicBool>) -> RemoteFile {
        self.changed_flag = Some(flag);
        self
    }

    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The catalog's identity of the version open (`RemoteRoot::fingerprint`).
    pub fn fingerprint(&self) -> u64 {
        self.root.fingerprint(&self.meta)
    }

    pub fn url(&self) -> String {
        self.root.url.file_url(&self.rel)
    }

    /// Notes that a read found the file replaced: the index states it again,
    /// the version's blocks go (never read again), and the call reading it
    /// learns it (`reporting_changes_to`).
    fn found_changed(&self) {
        self.root.note_changed(&self.rel);
        self.root.cache().forget(self.key);
        if let Some(flag) = &self.changed_flag {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// Fetches `ranges` (each within the file) straight from storage, counted;
    /// given up, even part-way, once `stop` says so.
    fn fetch(&self, ranges: &[Range<u64>], stop: &Stop<'_>) -> io::Result<Vec<Vec<u8>>> {
        if stop() {
            return Err(cancelled());
        }
        let got = self
            .root
            .protocol
            .read_ranges(&self.rel, &self.meta, ranges, stop);
        if let Err(e) = &got
            && e.kind() != io::ErrorKind::Interrupted
        {
            self.root
                .note_error(&format!("reading {}: {e}", self.url()));
            if is_changed(e) {
                self.found_changed();
            }
        }
        let got = got?;
        let bytes: u64 = got.iter().map(|b| b.len() as u64).sum();
        for (counter, n) in [
            (&self.fetched_bytes, bytes),
            (&self.fetched_requests, ranges.len() as u64),
            (&self.root.bytes, bytes),
            (&self.root.requests, ranges.len() as u64),
        ] {
            counter.fetch_add(n, Ordering::Relaxed);
        }
        Ok(got)
    }

    /// The blocks covering `ranges` that the cache lacks, fetched as runs of
    /// neighbouring blocks in one vectored read, then cached; returned too,
    /// so a read never depends on the cache keeping them.
    fn fill(&self, ranges: &[Range<u64>], stop: &Stop<'_>) -> io::Result<HashMap<u64, Arc<[u8]>>> {
        let cache = self.root.cache();
        let mut held = HashMap::new();
        let mut missing = Vec::new();
        for r in ranges.iter().filter(|r| r.start < r.end) {
            for block in r.start / BLOCK..=(r.end - 1) / BLOCK {
                if held.contains_key(&block) || missing.contains(&block) {
                    continue;
                }
                match cache.get(self.key, block) {
                    Some(data) => {
                        held.insert(block, data);
                    }
                    None => missing.push(block),
                }
            }
        }
        // The disk tier's blocks (a daemon started again) before the network.
        // (A block of another length than the file's there would be another
        // version's, under a colliding key: fetched instead.)
        let block_len = |block: u64| (self.meta.size - block * BLOCK).min(BLOCK) as usize;
        missing.retain(
            |&block| match cache.get_from_disk(self.key, block, block_len(block)) {
                Some(data) => {
                    held.insert(block, data);
                    false
                }
                None => true,
            },
        );
        if missing.is_empty() {
            return Ok(held);
        }
        missing.sort_unstable();
        // Blocks another thread is fetching now are waited for, not fetched again.
        let (mut claimed, claims) = cache.claim(self.key, &missing);
        let mut mine = Vec::new();
        let mut waits = Vec::new();
        for (block, claim) in claims {
            match claim {
                Claim::Fetch => mine.push(block),
                Claim::Wait(pending) => waits.push((block, pending)),
                Claim::Held(data) => {
                    held.insert(block, data);
                }
            }
        }
        let runs = block_runs(&mine, self.meta.size);
        if !runs.is_empty() {
            let got = self.fetch(&runs, stop).inspect_err(|e| claimed.fail(e))?;
            for (run, bytes) in runs.iter().zip(got) {
                for (i, chunk) in bytes.chunks(BLOCK as usize).enumerate() {
                    let block = run.start / BLOCK + i as u64;
                    let data: Arc<[u8]> = chunk.into();
                    if mine.binary_search(&block).is_ok() {
                        claimed.settle(block, data.clone());
                    } else {
                        // A gap bridged between two runs: not claimed, kept all the same.
                        cache.put_fetched(self.key, block, data.clone());
                    }
                    held.insert(block, data);
                }
            }
        }
        // Only after settling its own claims does a thread wait for others'
        // (two threads each waiting for the other's block would never end).
        drop(claimed);
        for (block, pending) in waits {
            // Another reader's fetch (another call's, the index's) may be
            // the one that found the file replaced.
            let data = pending.wait().inspect_err(|e| {
                if is_changed(e) {
                    self.found_changed();
                }
            })?;
            held.insert(block, data);
        }
        Ok(held)
    }

    /// The whole file in an anonymous in-memory file (never on disk), for
    /// readers that take a whole `File` (documents, source code);
    /// refused past `Settings::max_whole_file`.
    pub fn to_memory_file(&self) -> io::Result<File> {
        let limit = self.root.settings.max_whole_file;
        if self.meta.size > limit {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!(
                    "{} is {} bytes; remote files are read whole only up to {limit} bytes",
                    self.url(),
                    self.meta.size
                ),
            ));
        }
        // SAFETY: memfd_create with a NUL-terminated name; the result is checked.
        let fd = unsafe { libc::memfd_create(c"quarry-remote".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        const CHUNK: u64 = 8 << 20;
        let chunks: Vec<Range<u64>> = (0..self.meta.size.div_ceil(CHUNK))
            .map(|i| i * CHUNK..((i + 1) * CHUNK).min(self.meta.size))
            .collect();
        for (range, bytes) in chunks.iter().zip(self.fetch(&chunks, &|| false)?) {
            file.write_all_at(&bytes, range.start)?;
        }
        Ok(file)
    }
}

/// Every folder listing parser, for the fuzz target `remote_listing`
/// (servers' answers are untrusted): the parser `format` picks (0 nginx's
/// JSON, 1 an HTML page, 2 WebDAV, 3 S3's ListObjectsV2, 4 XRootD's dirlist)
/// on `text`, for the folder `/data/run 1/`; each entry's name (an S3 key) and
/// size, as the parser gives them, before the walk's own check of names.
pub fn parse_listing_for_fuzzing(format: u8, text: &str) -> Vec<(String, Option<u64>)> {
    const FOLDER: &str = "/data/run%201/";
    let entries = match format % 5 {
        0 => http::parse_json_index(text).unwrap_or_default(),
        1 => html_index::parse_html_index(text, FOLDER),
        2 => webdav::parse_propfind(text, FOLDER),
        3 => {
            let objects = s3::parse_list_page(text)
                .map(|page| page.0)
                .unwrap_or_default();
            return objects
                .into_iter()
                .map(|(key, meta)| (key, Some(meta.size)))
                .collect();
        }
        _ => xrootd::parse_dirlist(text).unwrap_or_default(),
    };
    entries
        .into_iter()
        .map(|e| (e.name, e.meta.map(|m| m.size)))
        .collect()
}

/// Whether a listing's entry names one child of its folder: a server's
/// answer is not trusted to, and a name with a `/` in it, or `.` or `..`,
/// would make a path reaching elsewhere.
fn is_one_name(entry: &Entry) -> bool {
    let name = entry.name.as_str();
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Missing blocks (sorted) as byte ranges of neighbouring blocks; a gap of one
/// block is fetched too, as one request costs more than 64 KiB more.
fn block_runs(missing: &[u64], size: u64) -> Vec<Range<u64>> {
    let mut runs: Vec<Range<u64>> = Vec::new();
    for &block in missing {
        let (start, end) = (block * BLOCK, ((block + 1) * BLOCK).min(size));
        match runs.last_mut() {
            Some(last) if start <= last.end + BLOCK => last.end = end,
            _ => runs.push(start..end),
        }
    }
    runs
}

impl ByteSource for RemoteFile {
    fn size(&self) -> u64 {
        self.meta.size
    }

    fn read_into(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.meta.size)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "read past the end of the file",
                )
            })?;
        if buf.is_empty() {
            return Ok(());
        }
        let held = self.fill(std::slice::from_ref(&(offset..end)), &|| false)?;
        let mut at = offset;
        while at < end {
            let block = at / BLOCK;
            let data = &held[&block];
            let from = (at - block * BLOCK) as usize;
            let n = (data.len() - from).min((end - at) as usize);
            let into = (at - offset) as usize;
            buf[into..into + n].copy_from_slice(&data[from..from + n]);
            at += n as u64;
        }
        Ok(())
    }

    fn prefetch_until(&self, ranges: &[Range<u64>], stop: &Stop<'_>) -> io::Result<()> {
        // More than half the cache would push out what it fetched first: the
        // reads then fetch for themselves.
        let total: u64 = ranges.iter().map(|r| r.end.saturating_sub(r.start)).sum();
        if total > self.root.cache().limit() as u64 / 2 {
            return Ok(());
        }
        let within: Vec<Range<u64>> = ranges
            .iter()
            .map(|r| r.start.min(self.meta.size)..r.end.min(self.meta.size))
            .collect();
        self.fill(&within, stop).map(|_| ())
    }

    fn fetched(&self) -> Option<Fetched> {
        Some(Fetched {
            bytes: self.fetched_bytes.load(Ordering::Relaxed),
            requests: self.fetched_requests.load(Ordering::Relaxed),
        })
    }
}

#[cfg(test)]
mod tests;
