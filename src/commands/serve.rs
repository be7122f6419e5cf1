//! `quarry serve`: the daemon. Holds the catalog, keeps it fresh, serves MCP on a
//! Unix socket until SIGINT or SIGTERM. Then it stops accepting (the socket file is
//! removed at once), lets every connection answer its calls in flight (at most
//! `DRAIN_LIMIT`), stops the watcher after the update it is applying commits, and
//! exits 0.

use std::sync::Arc;
use std::time::Duration;

use crate::config::Settings;
use crate::daemon::{Daemon, runtime};
use crate::mcp::connection::Drain;
use crate::mcp::transport::{Sessions, bind_socket, raise_open_file_limit, serve_socket};

/// How long calls in flight may take to finish once a stop is asked for.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// Off the start's path when there is nothing to clean (no `jobs` folder).
fn quarry_jobs_clean_up(jobs: &std::path::Path) {
    if jobs.exists() {
        crate::executor::slurm::clean_up(jobs);
    }
}

pub fn run(settings: Settings) -> anyhow::Result<()> {
    raise_open_file_limit();
    let catalog = super::open_owned(&settings)?;
    // Cluster jobs an earlier daemon left are cancelled and removed: the
    // calls that asked for them ended with it (docs/guide/cluster.md).
    if let Some(jobs) = &settings.server.executor.jobs_dir {
        quarry_jobs_clean_up(jobs);
    }
    let rt = runtime()?;
    let outcome = rt.block_on(async {
        let listener = bind_socket(&settings.socket)?;
        let daemon = Daemon::start(&settings, catalog)?;
        let server = daemon.server(&settings)?;
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
        let sessions = Arc::new(Sessions::default());
        let (switch, drain) = Drain::new();
        let accepting = tokio::spawn(serve_socket(
            server,
            listener,
            sessions.clone(),
            settings.transport.clone(),
            drain,
        ));
        let signal = shutdown.await;
        super::notify::stopping();
        tracing::info!(
            "{signal}: stopping; {} connection(s) finish their calls in flight",
            sessions.live()
        );
        switch.start();
        let _ = accepting.await;
        // New clients find no socket from now on (and a new daemon may bind one).
        let _ = std::fs::remove_file(&settings.socket);
        if tokio::time::timeout(DRAIN_LIMIT, sessions.wait_idle())
            .await
            .is_err()
        {
            tracing::warn!(
                "{} connection(s) still busy after {DRAIN_LIMIT:?}: their calls are dropped",
                sessions.live()
            );
        }
        daemon.stop();
        tracing::info!("stopped");
        anyhow::Ok(())
    });
    // Calls still running on blocking threads (past the drain limit) are not
    // waited for: the process ends.
    rt.shutdown_timeout(Duration::from_millis(500));
    outcome
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
