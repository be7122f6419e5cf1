//! `quarry mcp`: MCP over stdio for clients that launch a command.
//!
//! Whoever opens the catalog first owns it (redb locks the file): a daemon, or the
//! first `quarry mcp`, which then also listens on the catalog's socket. Every other
//! `quarry mcp` on that catalog proxies its stdio to the owner's socket, so any
//! number of clients can share one catalog. An owning `quarry mcp` whose own
//! client has left stays up until the clients it serves through the socket have
//! left too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::UnixStream;

use crate::catalog::{Catalog, OpenError};
use crate::config::Settings;
use crate::engine::{Engine, runtime};
use crate::mcp::transport::{Sessions, bind_socket, proxy_stdio, serve_socket, serve_stdio};

/// How long a second client waits for the owner's socket to appear.
const OWNER_WAIT: Duration = Duration::from_secs(20);

pub fn run(settings: Settings) -> anyhow::Result<()> {
    runtime()?.block_on(async {
        let deadline = Instant::now() + OWNER_WAIT;
        loop {
            match Catalog::open(&settings.catalog_dir, &settings.roots) {
                Ok(catalog) => return serve_in_process(&settings, catalog).await,
                Err(OpenError::Failed(e)) => return Err(e),
                Err(OpenError::Locked) => match UnixStream::connect(&settings.socket).await {
                    Ok(stream) => {
                        tracing::info!(
                            "proxying to the quarry serving {}",
                            settings.socket.display()
                        );
                        return proxy_stdio(stream).await;
                    }
                    // The owner may be starting (catalog locked, socket not bound yet)
                    // or leaving (socket gone, lock not yet released): try again.
                    Err(_) if Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(100)).await
                    }
                    Err(e) => {
                        return Err(anyhow::anyhow!(
                            "{}; its socket {} does not answer ({e})",
                            super::in_use(&settings),
                            settings.socket.display()
                        ));
                    }
                },
            }
        }
    })
}

async fn serve_in_process(settings: &Settings, catalog: Catalog) -> anyhow::Result<()> {
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
    let accepting =
        listener.map(|l| tokio::spawn(serve_socket(server.clone(), l, sessions.clone())));

    let outcome = serve_stdio(server).await;

    if let Some(accepting) = accepting {
        if sessions.live() > 0 {
            tracing::info!(
                "stdio client left; staying up for {} socket client(s)",
                sessions.live()
            );
            sessions.wait_idle().await;
        }
        // Stop taking new clients before leaving; a client that arrives now finds no
        // socket and becomes the next owner once this process has released the lock.
        accepting.abort();
        let _ = std::fs::remove_file(&settings.socket);
        sessions.wait_idle().await;
    }
    outcome
}
