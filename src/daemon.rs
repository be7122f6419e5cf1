//! The daemon: the running pieces of a serving quarry, wired together: the
//! catalog, the indexer with its initial scan in the background, the watcher,
//! and the MCP server over them. (Not an engine: the engines are the compute
//! layers, `analysis`, `fit`, `h5export`, `executor` and `rag`.)

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::config::Settings;
use crate::indexing::{Indexer, Quiet, watcher};
use crate::mcp::QuarryServer;
use crate::mcp::tools::Context;
use crate::mcp::tools::Toolset;

/// What `quarry serve` and an owning `quarry mcp` keep running.
pub struct Daemon {
    pub catalog: Arc<Catalog>,
    pub indexer: Arc<Indexer>,
    pub rag: Arc<crate::rag::Rag>,
    _watcher: Option<watcher::Watcher>,
}

impl Daemon {
    /// Starts following the roots: the watcher first (so nothing that changes
    /// during the scan is missed), then the initial scan on its own thread. Tools
    /// answer from the catalog meanwhile; index_status tells how far it got.
    pub fn start(settings: &Settings, catalog: Catalog) -> anyhow::Result<Daemon> {
        settings.apply_to_process();
        let catalog = Arc::new(catalog);
        let indexer = Arc::new(Indexer::new(catalog.clone(), settings.index.clone())?);
        indexer.start_stats_pass()?;
        let rag = crate::rag::Rag::new(catalog.clone(), settings.rag_options());
        // Trees cost CPU on every document change: build them only where the RAG
        // tools are served.
        if settings.server.toolsets.contains(&Toolset::Rag) {
            indexer.set_document_listener(rag.start_pass()?);
        }
        for root_id in 0..catalog.roots().list().len() {
            catalog.activity().set_scanning(root_id, true);
        }
        let watcher = match watcher::start(indexer.clone(), settings.settle) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(
                    "cannot watch the roots ({e:#}): the catalog is refreshed only by restarts"
                );
                None
            }
        };
        std::thread::Builder::new()
            .name("quarry-scan".into())
            .spawn({
                let indexer = indexer.clone();
                move || {
                    let started = std::time::Instant::now();
                    match indexer.scan_all(&Quiet) {
                        Ok(s) => tracing::info!(
                            "initial scan done in {:.1} s: {} indexed, {} failed, {} unchanged, {} removed",
                            started.elapsed().as_secs_f64(),
                            s.indexed,
                            s.failed,
                            s.unchanged,
                            s.removed
                        ),
                        Err(e) => tracing::error!("initial scan failed: {e:#}"),
                    }
                    crate::memory::release_freed_memory();
                }
            })?;
        relist_remote_roots(&indexer)?;
        Ok(Daemon {
            catalog,
            indexer,
            rag,
            _watcher: watcher,
        })
    }

    /// Stops following the roots: the watcher finishes the update it is applying
    /// (its transaction commits) and stops; what the text index was given is
    /// committed. An initial scan still running is left to the process's end: every
    /// batch it stored is committed, the rest is read again at the next start.
    pub fn stop(self) {
        drop(self._watcher);
        self.catalog.flush_text();
    }

    pub fn server(&self, settings: &Settings) -> anyhow::Result<QuarryServer> {
        let mut context = Context::new(self.catalog.clone(), settings.server.clone());
        context.rag = Some(self.rag.clone());
        // Finished tasks' results are kept in the catalog folder, so that a
        // daemon started again still hands them out within their ttl.
        let mut tasks = settings.transport.tasks.clone();
        tasks.store = Some(settings.catalog_dir.join("tasks"));
        Ok(QuarryServer::new(context)?
            .with_concurrent_calls(settings.transport.max_concurrent_calls)
            .with_tasks(tasks))
    }
}

/// Lists each remote root again every `[remote] relist_minutes` (a remote root
/// has no file events to watch): new, changed (size or time) and gone files
/// are brought into the catalog as a local root's are by the watcher.
fn relist_remote_roots(indexer: &Arc<Indexer>) -> anyhow::Result<()> {
    let roots = indexer.catalog().roots();
    let remote: Vec<(usize, std::time::Duration)> = roots
        .list()
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, r.remote.as_ref()?.settings().relist)))
        .collect();
    let Some(every) = remote.iter().map(|(_, d)| *d).min() else {
        return Ok(());
    };
    let indexer = indexer.clone();
    std::thread::Builder::new()
        .name("quarry-relist".into())
        .spawn(move || {
            loop {
                std::thread::sleep(every);
                for &(root_id, _) in &remote {
                    if let Err(e) = indexer.scan_root(root_id, &Quiet) {
                        tracing::warn!("listing a remote root again failed: {e:#}");
                    }
                }
            }
        })?;
    Ok(())
}

/// Most threads tokio runs blocking work on (tool calls, stdio). Tool calls are
/// also held to `[server] max_concurrent_calls`; this bounds the rest, so that no
/// burst of requests can start hundreds of threads.
const MAX_BLOCKING_THREADS: usize = 32;

/// Stack of every thread a tool call may evaluate an expression on (tokio's
/// blocking threads, rayon's pool). Checking and evaluating a cut recurse over
/// its tree, which `analysis::syntax::MAX_TREE_DEPTH` bounds (and defines twice
/// that); a debug build spends tens of KB a level, more than the 2 MiB default
/// holds, and an overflow aborts the process. The memory is only reserved: pages
/// a thread never touches cost nothing.
pub const CALL_STACK_BYTES: usize = 64 << 20;

/// Gives rayon's global pool, where the analysis engine evaluates, stacks of
/// `CALL_STACK_BYTES`. Call once before any parallel work.
pub fn size_thread_stacks() {
    // An error means the pool exists already (a test harness built it): it then
    // keeps its own stacks.
    let _ = rayon::ThreadPoolBuilder::new()
        .stack_size(CALL_STACK_BYTES)
        .build_global();
}

/// The async runtime quarry's servers run on.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .thread_stack_size(CALL_STACK_BYTES)
        .thread_name("quarry-rt")
        .enable_all()
        .build()?)
}
