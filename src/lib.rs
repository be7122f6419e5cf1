//! quarry: pre-indexes data roots (CERN ROOT files, HDF5 files, documents, C++ and
//! Python source) into an on-disk catalog and serves AI assistants over MCP.
//!
//! Layers, as data flows (dependencies point one way: `formats` and `catalog`
//! know no other layer but `formats::Kind`; `index` writes to `catalog` using
//! `formats`; `mcp` reads `catalog` and borrows only the index's ROOT statistics
//! computation):
//! `formats` (file readers) -> `index` (scan, extract, watch) -> `catalog`
//! (redb tables + in-memory mirror + the documents' tantivy index) -> `mcp`
//! (tools, server, transports).
//! `roots`, `remote` (roots by URL, read by ranges), `byte_source` and `glob`
//! are shared foundations; `engine`, `config`, `cli` and
//! `commands` assemble a running program.

pub mod analysis;
pub mod byte_source;
pub mod catalog;
pub mod cli;
pub mod cli_reference;
pub mod commands;
pub mod config;
pub mod engine;
pub mod executor;
pub mod fit;
pub mod formats;
pub mod glob;
pub mod h5export;
pub mod index;
pub mod job;
pub mod logging;
pub mod mcp;
pub mod memory;
pub mod panics;
pub mod rag;
pub mod remote;
pub mod roots;
pub mod special;
pub mod transient;
