//! Where MCP sessions come from: stdio, and a Unix socket with one session per
//! connection.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context as _;
use rmcp::ServiceExt;
use tokio::net::UnixListener;
use tokio::sync::Notify;

use super::QuarryServer;

/// Linux's limit on a socket path (sun_path), including the terminating NUL.
const MAX_SOCKET_PATH: usize = 107;

/// Binds the catalog's socket, readable and writable by the owner only. The caller
/// holds the catalog lock, so a socket file already there is a stale leftover.
///
/// A socket file appears at bind(), a moment before the socket listens; a client
/// that saw the file then would be refused. So the socket is bound under a
/// temporary name beside the final one and renamed into place once it listens:
/// whoever finds the path can connect.
pub fn bind_socket(path: &Path) -> anyhow::Result<UnixListener> {
    let binding = path.with_extension("binding");
    let len = path.as_os_str().len().max(binding.as_os_str().len());
    anyhow::ensure!(
        len <= MAX_SOCKET_PATH,
        "socket path {} is {len} bytes, longer than the {MAX_SOCKET_PATH} a Unix socket allows: choose a shorter one with --socket",
        path.display()
    );
    for p in [path, binding.as_path()] {
        if let Ok(meta) = p.symlink_metadata() {
            use std::os::unix::fs::FileTypeExt;
            anyhow::ensure!(
                meta.file_type().is_socket(),
                "{} exists and is not a socket: choose another path with --socket",
                p.display()
            );
            std::fs::remove_file(p)
                .with_context(|| format!("cannot remove stale socket {}", p.display()))?;
        }
    }
    // Create the socket file owner-only from the start (a chmod after bind alone
    // would leave a moment where others could connect). The umask is process-wide,
    // so it is restored at once; a file created meanwhile elsewhere in quarry is
    // only made more private.
    // SAFETY: umask(2) has no memory-safety preconditions.
    let previous = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(&binding);
    // SAFETY: as above.
    unsafe { libc::umask(previous) };
    let listener = bound.with_context(|| format!("cannot listen on {}", path.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&binding, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&binding, path)
        .with_context(|| format!("cannot put the socket in place at {}", path.display()))?;
    Ok(listener)
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

/// Accepts connections forever, one MCP session each.
pub async fn serve_socket(server: QuarryServer, listener: UnixListener, sessions: Arc<Sessions>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("socket accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        sessions.live.fetch_add(1, Ordering::SeqCst);
        let (server, sessions) = (server.clone(), sessions.clone());
        tokio::spawn(async move {
            match server.serve(stream).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(e) => tracing::debug!("socket session ended during initialisation: {e}"),
            }
            sessions.live.fetch_sub(1, Ordering::SeqCst);
            sessions.changed.notify_waiters();
        });
    }
}
