//! `quarry serve`: the daemon. Holds the catalog, keeps it fresh, serves MCP on a
//! Unix socket until SIGINT or SIGTERM.

use std::sync::Arc;

use crate::config::Settings;
use crate::engine::{Engine, runtime};
use crate::mcp::transport::{Sessions, bind_socket, raise_open_file_limit, serve_socket};

pub fn run(settings: Settings) -> anyhow::Result<()> {
    raise_open_file_limit();
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
        // Handlers first: a manager that sends SIGTERM as soon as it hears
        // READY=1 must find them in place.
        let shutdown = shutdown_signal()?;
        super::notify::ready();
        tokio::select! {
            _ = serve_socket(server, listener, Arc::new(Sessions::default()), settings.transport.clone()) => {}
            signal = shutdown => tracing::info!("{signal}: shutting down"),
        }
        super::notify::stopping();
        let _ = std::fs::remove_file(&settings.socket);
        Ok(())
    })
}

/// Installs the SIGTERM and SIGINT handlers now; the future resolves with the
/// first of them to arrive.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = &'static str>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    })
}
