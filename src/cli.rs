//! The command line of DESIGN.md (a contract: tests and users rely on it).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "quarry",
    version,
    about = "Pre-indexes data roots (ROOT, HDF5, documents, source code) and serves them to AI assistants over MCP"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// More log output on stderr (-v: debug, -vv: trace). RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon: scan and watch the roots, serve MCP on a Unix socket.
    Serve(ServeArgs),
    /// MCP over stdio: relay to the process serving the catalog, or index and serve in-process.
    Mcp(ServeArgs),
    /// Build the catalog from scratch, then exit.
    Rebuild(RebuildArgs),
    /// Show what the catalog holds, how fresh it is, and what failed to index.
    Status(StatusArgs),
}

#[derive(Debug, Args, Clone, Default)]
pub struct ServeArgs {
    /// A data root, as DIR or NAME=DIR (repeatable). Without NAME the folder's name is used.
    #[arg(long = "root", value_name = "[NAME=]DIR")]
    pub roots: Vec<String>,
    /// Catalog folder (default: one per set of roots under $XDG_DATA_HOME/quarry/catalogs).
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
    /// Unix socket path (default: quarry.sock in the catalog folder).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// TOML config file holding any of these settings and more.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args, Clone, Default)]
pub struct RebuildArgs {
    #[arg(long = "root", value_name = "[NAME=]DIR")]
    pub roots: Vec<String>,
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args, Clone, Default)]
pub struct StatusArgs {
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the status as JSON (the index_status tool's result).
    #[arg(long)]
    pub json: bool,
}

impl From<RebuildArgs> for ServeArgs {
    fn from(a: RebuildArgs) -> ServeArgs {
        ServeArgs {
            roots: a.roots,
            catalog: a.catalog,
            socket: None,
            config: a.config,
        }
    }
}
