//! quarry: pre-indexes data roots (CERN ROOT files, HDF5 files, documents, C++ and
//! Python source) into an on-disk catalog and serves AI assistants over MCP.
//!
//! Layers, as data flows (dependencies point one way: `formats` and `catalog`
//! know no other layer but `formats::Kind`; `indexing` writes to `catalog` using
//! `formats`; `mcp` reads `catalog` and borrows only indexing's ROOT statistics
//! computation):
//! `formats` (file readers) -> `indexing` (scan, extract, watch) -> `catalog`
//! (redb tables + in-memory mirror + the documents' text index) -> `mcp`
//! (tools, server, transports).
//! `roots`, `remote` (roots by URL, read by ranges), `byte_source` and `glob`
//! are shared foundations; `daemon`, `config`, `cli` and
//! `commands` assemble a running program.

pub mod analysis;
/// Where a reader's bytes come from: the trait is the ROOT reader's
/// (`quarry_rootio::ByteSource`); `remote` implements it for remote files.
pub mod byte_source {
    pub use quarry_rootio::{ByteSource, Fetched};
}
pub mod catalog;
pub mod cli;
pub mod cli_reference;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod executor;
pub mod fit;
pub mod formats;
pub mod glob;
pub mod h5export;
pub mod indexing;
pub mod job;
pub mod logging;
pub mod mcp;
pub mod memory;
/// Caught panics as messages, and the hook that keeps them quiet
/// (`quarry_format_error::panics`: the readers catch their decoders' panics too).
pub mod panics {
    pub use quarry_format_error::panics::*;
}
pub mod rag;
pub mod remote;
pub mod roots;
pub mod special;
/// Which I/O errors are the system's passing shortage rather than a file's
/// fault (`quarry_format_error::is_transient`): the indexer retries them.
pub mod transient {
    pub use quarry_format_error::is_transient;
}
