//! `quarry mcp`: MCP over stdio for clients that launch a command.
//!
//! Whoever opens the catalog first owns it (redb locks the file): a daemon, or the
//! first `quarry mcp`, which then runs the indexer and server in-process and also
//! listens on the catalog's socket. Every other `quarry mcp` on that catalog relays
//! its stdio to the owner's socket. If the owner goes away (clients end their
//! server processes with SIGTERM), each relay elects the next owner — itself if it
//! gets the lock first — and carries its client's session over (see `mcp::relay`).
//!
//! Without roots (`quarry mcp --socket S` or `--catalog C` alone) it can only relay:
//! to the quarry serving that socket, waiting for it to come back when it restarts.
//! When nothing answers there at start, it says so, naming the socket and `quarry
//! serve`, and exits non-zero.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::UnixStream;

use crate::catalog::{Catalog, OpenError};
use crate::cli::ServeArgs;
use crate::config::{Endpoint, Settings};
use crate::daemon::{Daemon, runtime};
use crate::mcp::QuarryServer;
use crate::mcp::connection::{Drain, serve_connection};
use crate::mcp::relay::{Relay, RelayEnd, Upstream};
use crate::mcp::transport::{Sessions, bind_socket, raise_open_file_limit, serve_socket};

/// How long a client waits for an owner to appear (one starting, or one leaving).
const OWNER_WAIT: Duration = Duration::from_secs(20);

/// The pause before connecting again after an upstream was lost.
const RECONNECT_PAUSE: Duration = Duration::from_millis(100);

/// This process as the catalog's owner.
struct Owner {
    _daemon: Daemon,
    server: QuarryServer,
    sessions: Arc<Sessions>,
    accepting: Option<tokio::task::JoinHandle<()>>,
    limits: Arc<crate::mcp::connection::ConnectionLimits>,
}

impl Owner {
    fn start(settings: &Settings, catalog: Catalog) -> anyhow::Result<Owner> {
        let listener = match bind_socket(&settings.socket) {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::warn!("other clients cannot share this catalog: {e:#}");
                None
            }
        };
        let daemon = Daemon::start(settings, catalog)?;
        let server = daemon.server(settings)?;
        let sessions = Arc::new(Sessions::default());
        let accepting = listener.map(|l| {
            tokio::spawn(serve_socket(
                server.clone(),
                l,
                sessions.clone(),
                settings.transport.clone(),
                Drain::never(),
            ))
        });
        Ok(Owner {
            _daemon: daemon,
            server,
            sessions,
            accepting,
            // The pipe is this process's own relay: never idle-closed.
            limits: Arc::new(crate::mcp::connection::ConnectionLimits {
                idle_timeout: None,
                ..settings.transport.connection.clone()
            }),
        })
    }

    /// A fresh in-memory connection to this process's own server, framed and
    /// checked like a socket connection.
    fn connect(&self) -> Box<dyn Upstream> {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (server, limits) = (self.server.clone(), self.limits.clone());
        tokio::spawn(async move {
            serve_connection(server, theirs, None, &limits, Drain::never()).await
        });
        Box::new(ours)
    }

    /// Stays while socket clients remain, then stops taking new ones and leaves.
    async fn retire(self, settings: &Settings) {
        let Some(accepting) = self.accepting else {
            return;
        };
        if self.sessions.live() > 0 {
            tracing::info!(
                "stdio client left; staying up for {} socket client(s)",
                self.sessions.live()
            );
            self.sessions.wait_idle().await;
        }
        accepting.abort();
        let _ = std::fs::remove_file(&settings.socket);
        self.sessions.wait_idle().await;
    }
}

/// `quarry mcp`: with roots (on the command line or in the config file), relay or
/// serve in-process; without, relay only.
pub fn main(args: &ServeArgs) -> anyhow::Result<()> {
    let endpoint = Settings::endpoint(args)?;
    match endpoint.settings {
        Some(settings) => run(settings),
        None => relay_only(&endpoint),
    }
}

/// Relays stdio to the quarry serving `endpoint`; nothing is opened here.
fn relay_only(endpoint: &Endpoint) -> anyhow::Result<()> {
    runtime()?.block_on(async {
        let mut stream = connect_daemon(endpoint, Duration::ZERO).await?;
        tracing::info!(
            "relaying to the quarry serving {}",
            endpoint.socket.display()
        );
        let mut relay = Relay::new(
            tokio::io::stdin(),
            tokio::io::stdout(),
            crate::mcp::codec::DEFAULT_MAX_MESSAGE_BYTES,
        );
        loop {
            match relay.run(Box::new(stream)).await? {
                RelayEnd::ClientClosed => return Ok(()),
                RelayEnd::UpstreamLost => {
                    tracing::info!("the serving quarry went away; waiting for it to return");
                    tokio::time::sleep(RECONNECT_PAUSE).await;
                    // A service manager restarts a daemon within seconds.
                    stream = connect_daemon(endpoint, OWNER_WAIT).await?;
                }
            }
        }
    })
}

/// Connects to the daemon's socket, trying for up to `patience`.
async fn connect_daemon(endpoint: &Endpoint, patience: Duration) -> anyhow::Result<UnixStream> {
    let deadline = Instant::now() + patience;
    loop {
        match UnixStream::connect(&endpoint.socket).await {
            Ok(stream) => return Ok(stream),
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => anyhow::bail!(
                "no quarry serves the catalog at {}: nothing answers on its socket {} ({e}); \
                 start one with `quarry serve --root DIR --catalog {}`, or give --root DIR \
                 to serve in-process",
                endpoint.catalog_dir.display(),
                endpoint.socket.display(),
                endpoint.catalog_dir.display()
            ),
        }
    }
}

pub fn run(settings: Settings) -> anyhow::Result<()> {
    raise_open_file_limit();
    runtime()?.block_on(async {
        let mut relay = Relay::new(
            tokio::io::stdin(),
            tokio::io::stdout(),
            settings.transport.connection.max_message_bytes,
        );
        let mut owner: Option<Owner> = None;
        loop {
            let upstream = upstream(&settings, &mut owner).await?;
            match relay.run(upstream).await? {
                RelayEnd::ClientClosed => break,
                RelayEnd::UpstreamLost => {
                    tracing::info!("the serving quarry went away; reconnecting");
                    // An owner that refuses the connection (it serves its maximum)
                    // closes it at once: do not hammer it.
                    tokio::time::sleep(RECONNECT_PAUSE).await;
                }
            }
        }
        if let Some(owner) = owner {
            owner.retire(&settings).await;
        }
        Ok(())
    })
}

/// Connects to the catalog's owner, becoming it when the catalog is free.
async fn upstream(
    settings: &Settings,
    owner: &mut Option<Owner>,
) -> anyhow::Result<Box<dyn Upstream>> {
    if let Some(o) = owner {
        return Ok(o.connect());
    }
    let deadline = Instant::now() + OWNER_WAIT;
    loop {
        match Catalog::open(&settings.catalog_dir, &settings.roots) {
            Ok(catalog) => {
                let o = owner.insert(Owner::start(settings, catalog)?);
                return Ok(o.connect());
            }
            Err(OpenError::Failed(e) | OpenError::Corrupt(e)) => return Err(e),
            Err(OpenError::Locked) => match UnixStream::connect(&settings.socket).await {
                Ok(stream) => {
                    tracing::info!(
                        "relaying to the quarry serving {}",
                        settings.socket.display()
                    );
                    return Ok(Box::new(stream));
                }
                // The owner may be starting (catalog locked, socket not bound yet)
                // or leaving (socket gone, lock not yet released): try again.
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(e) => {
                    return Err(anyhow::anyhow!(
                        "{}; its socket {} does not answer ({e})",
                        super::in_use(settings),
                        settings.socket.display()
                    ));
                }
            },
        }
    }
}
