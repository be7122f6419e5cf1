//! `quarry serve`: the daemon. Holds the catalog, keeps it fresh, serves MCP on a
//! Unix socket until SIGINT or SIGTERM.

use std::sync::Arc;

use crate::config::Settings;
use crate::engine::{Engine, runtime};
use crate::mcp::transport::{Sessions, bind_socket, serve_socket};

pub fn run(settings: Settings) -> anyhow::Result<()> {
    let catalog = super::open_owned(&settings)?;
    runtime()?.block_on(async {
        let listener = bind_socket(&settings.socket)?;
        let engine = Engine::start(&settings, catalog)?;
        let server = engine.server(&settings)?;
        tracing::info!(
            "serving {} root(s) on {} (catalog {})",
            settings.roots.list().len(),
            settings.socket.display(),
            settings.catalog_dir.display()
        );
        super::notify::ready();
        tokio::select! {
            _ = serve_socket(server, listener, Arc::new(Sessions::default())) => {}
            signal = shutdown_signal() => tracing::info!("{signal}: shutting down"),
        }
        super::notify::stopping();
        let _ = std::fs::remove_file(&settings.socket);
        Ok(())
    })
}

async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}
