//! `quarry mcp`: MCP over stdio for clients that launch a command.
//!
//! Whoever opens the catalog first owns it (redb locks the file): a daemon, or the
//! first `quarry mcp`, which then runs the indexer and server in-process and also
//! listens on the catalog's socket. Every other `quarry mcp` on that catalog relays
//! its stdio to the owner's socket. If the owner goes away (clients end their
//! server processes with SIGTERM), each relay elects the next owner — itself if it
//! gets the lock first — and carries its client's session over (see `mcp::relay`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::UnixStream;

use crate::catalog::{Catalog, OpenError};
use crate::config::Settings;
use crate::engine::{Engine, runtime};
use crate::mcp::QuarryServer;
use crate::mcp::connection::serve_connection;
use crate::mcp::relay::{Relay, RelayEnd, Upstream};
use crate::mcp::transport::{Sessions, bind_socket, raise_open_file_limit, serve_socket};

/// How long a client waits for an owner to appear (one starting, or one leaving).
const OWNER_WAIT: Duration = Duration::from_secs(20);

/// The pause before connecting again after an upstream was lost.
const RECONNECT_PAUSE: Duration = Duration::from_millis(100);

/// This process as the catalog's owner.
struct Owner {
    _engine: Engine,
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
        let engine = Engine::start(settings, catalog)?;
        let server = engine.server(settings)?;
        let sessions = Arc::new(Sessions::default());
        let accepting = listener.map(|l| {
            tokio::spawn(serve_socket(
                server.clone(),
                l,
                sessions.clone(),
                settings.transport.clone(),
            ))
        });
        Ok(Owner {
            _engine: engine,
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
        tokio::spawn(async move { serve_connection(server, theirs, None, &limits).await });
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
