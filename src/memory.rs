//! The process's memory as glibc's malloc keeps it: how many arenas it may grow, and
//! handing freed memory back to the system. A foundation: the daemon's wiring (`daemon`)
//! and the MCP sessions (`mcp::connection`) both call it.

/// Hands memory freed by the initial scan (or a burst of answers) back to the system. glibc keeps freed
/// blocks in its per-thread arenas, so the scan's temporary buffers (walk
/// results, extracted text, index batches) would otherwise stay in a daemon's
/// resident memory for as long as it runs idle.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Arenas glibc's malloc may keep. By default it grows one per thread up to eight
/// per core, and each keeps the memory freed in it: with tool calls moving between
/// tokio's blocking threads, a daemon's resident memory crept up under a steady
/// load (the soak: +23 % after warm-up). Two arenas bound that; calls contend a
/// little more on malloc's locks, which costs nothing measurable next to a call.
const MALLOC_ARENAS: i32 = 2;

/// Caps glibc's malloc arenas (`MALLOC_ARENAS`); call before any thread starts.
/// An `MALLOC_ARENA_MAX` in the environment wins.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only adjusts malloc's tuning; no other thread runs yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS);
        }
    }
}
