//! The Unix socket: a private bind, one MCP session per connection, and the
//! limits on connections and descriptors.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use tokio::net::UnixListener;
use tokio::sync::{Notify, Semaphore};

use super::QuarryServer;
use super::codec::{DEFAULT_MAX_MESSAGE_BYTES, error_reply};
use super::connection::{ConnectionLimits, Drain, serve_connection};

/// Linux's limit on a socket path (sun_path), including the terminating NUL.
const MAX_SOCKET_PATH: usize = 107;

/// Binds the catalog's socket, readable and writable by the owner only. The caller
/// holds the catalog lock, so a socket already at `path` is a stale leftover: the
/// rename below replaces it. Any other kind of file there is an error.
///
/// A socket file appears at bind(), a moment before the socket listens; a client
/// that saw the file then would be refused. So the socket is bound under a
/// private name beside the final one (unique to this process and call, so no
/// other process's socket is ever touched) and renamed into place once it
/// listens: whoever finds the path can connect. quarry removes no file it did not
/// create.
pub fn bind_socket(path: &Path) -> anyhow::Result<UnixListener> {
    use std::os::unix::fs::FileTypeExt;
    if let Ok(meta) = path.symlink_metadata() {
        anyhow::ensure!(
            meta.file_type().is_socket(),
            "{} exists and is not a socket: choose another path with --socket",
            path.display()
        );
    }
    let mut attempt = 0;
    let (binding, listener) = loop {
        let binding = private_binding_name(path, attempt);
        let len = path.as_os_str().len().max(binding.as_os_str().len());
        anyhow::ensure!(
            len <= MAX_SOCKET_PATH,
            "socket path {} is too long ({len} bytes while binding; a Unix socket allows {MAX_SOCKET_PATH}): choose a shorter one with --socket",
            path.display()
        );
        match bind_private(&binding) {
            Ok(l) => break (binding, l),
            // Another binder's name (or a leftover of a crashed one): take another.
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && attempt < 8 => attempt += 1,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot listen on {}", path.display()));
            }
        }
    };
    let placed = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&binding, std::fs::Permissions::from_mode(0o600))
            .and_then(|()| std::fs::rename(&binding, path))
    };
    if let Err(e) = placed {
        // The private name is this call's own file: never leave it behind.
        let _ = std::fs::remove_file(&binding);
        return Err(e)
            .with_context(|| format!("cannot put the socket in place at {}", path.display()));
    }
    Ok(listener)
}

/// `DIR/.NAME.PID-RANDOM.bind` beside `DIR/NAME`: a name no other process uses.
fn private_binding_name(path: &Path, attempt: u32) -> std::path::PathBuf {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(attempt);
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    let name = path.file_name().map_or_else(
        || "quarry.sock".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    path.with_file_name(format!(
        ".{name}.{}-{:08x}.bind",
        std::process::id(),
        hasher.finish() as u32
    ))
}

/// Binds `binding` with the socket file owner-only from the start (a chmod
/// after bind alone would leave a moment where others could connect). The umask
/// is process-wide, so it is restored at once; a file created meanwhile
/// elsewhere in quarry is only made more private.
fn bind_private(binding: &Path) -> std::io::Result<UnixListener> {
    // SAFETY: umask(2) has no memory-safety preconditions.
    let previous = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(binding);
    // SAFETY: as above.
    unsafe { libc::umask(previous) };
    bound
}

/// Counts live socket sessions, so an in-process `quarry mcp` can stay up while
/// other clients still use it.
#[derive(Default)]
pub struct Sessions {
    live: AtomicUsize,
    changed: Notify,
}

impl Sessions {
    pub fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Waits until no socket session is live.
    pub async fn wait_idle(&self) {
        loop {
            let changed = self.changed.notified();
            if self.live() == 0 {
                return;
            }
            changed.await;
        }
    }
}

/// What the socket and its connections are held to (`[server]` in the config).
#[derive(Debug, Clone)]
pub struct TransportSettings {
    /// Connections served at once; more are refused at once.
    pub max_connections: usize,
    /// Tool calls running at once, over all connections.
    pub max_concurrent_calls: usize,
    pub connection: ConnectionLimits,
    /// Calls running as MCP tasks (`mcp::tasks`).
    pub tasks: crate::mcp::tasks::TaskSettings,
}

impl Default for TransportSettings {
    fn default() -> Self {
        TransportSettings {
            max_connections: 256,
            max_concurrent_calls: 8,
            connection: ConnectionLimits {
                max_in_flight: 16,
                max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
                idle_timeout: Some(Duration::from_secs(10)),
            },
            tasks: crate::mcp::tasks::TaskSettings::default(),
        }
    }
}

/// Descriptors kept for everything but connections (the catalog, the text
/// index's segments, files being indexed or read by tools, the watcher).
const RESERVED_DESCRIPTORS: u64 = 256;

/// Raises the soft limit on open files to the hard limit, so that connections
/// and the indexer do not run out at the common default of 1,024. Returns the
/// limit in force.
pub fn raise_open_file_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
    }
    limit.rlim_cur
}

/// The connection cap in force: the configured one, lowered so that connections
/// can take at most half of the descriptors beyond a reserve.
fn connection_cap(configured: usize, open_file_limit: u64) -> usize {
    let room = open_file_limit.saturating_sub(RESERVED_DESCRIPTORS) / 2;
    configured.min(room as usize).max(1)
}

/// Accepts connections, one MCP session each, at most `max_connections` at once,
/// until `drain` starts; then the listener is closed and each connection answers
/// its calls in flight and closes (`Sessions::wait_idle` tells when they have).
pub async fn serve_socket(
    server: QuarryServer,
    listener: UnixListener,
    sessions: Arc<Sessions>,
    settings: TransportSettings,
    drain: Drain,
) {
    let cap = connection_cap(settings.max_connections, raise_open_file_limit());
    if cap < settings.max_connections {
        tracing::info!(
            "serving at most {cap} connections at once (the open-file limit allows no more)"
        );
    }
    let slots = Arc::new(Semaphore::new(cap));
    let limits = Arc::new(settings.connection);
    let mut refusals = Refusals::default();
    let mut draining = drain.clone();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = draining.started() => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("socket accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            refusals.refuse(stream, cap);
            continue;
        };
        sessions.live.fetch_add(1, Ordering::SeqCst);
        let (server, sessions, limits) = (server.clone(), sessions.clone(), limits.clone());
        let drain = drain.clone();
        tokio::spawn(async move {
            let fd = stream.as_raw_fd();
            serve_connection(server, stream, Some(fd), &limits, drain).await;
            drop(slot);
            sessions.live.fetch_sub(1, Ordering::SeqCst);
            sessions.changed.notify_waiters();
        });
    }
}

/// Turns away connections over the cap, logging why (once a second at most: a
/// flood must not flood the log too).
#[derive(Default)]
struct Refusals {
    last_logged: Option<std::time::Instant>,
    since_logged: u64,
}

impl Refusals {
    fn refuse(&mut self, stream: tokio::net::UnixStream, cap: usize) {
        self.since_logged += 1;
        if self
            .last_logged
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            tracing::warn!(
                "refused {} connection(s): {cap} are open, the most quarry serves at once ([server] max_connections)",
                self.since_logged
            );
            self.last_logged = Some(std::time::Instant::now());
            self.since_logged = 0;
        }
        // Tell the client why if its buffer takes it at once; never wait on it.
        let why = error_reply(
            serde_json::Value::Null,
            SERVER_BUSY,
            format!("quarry is serving {cap} connections, its maximum; try again later"),
        );
        let _ = stream.try_write(format!("{why}\n").as_bytes());
    }
}

/// The JSON-RPC error code (implementation-defined range) of a refused connection.
const SERVER_BUSY: i64 = -32000;
