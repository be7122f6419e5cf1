//! The command line of DESIGN.md (a contract: tests and users rely on it).

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

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
    /// List the tools quarry serves.
    Tools(ToolsArgs),
    /// Call one tool and print its answer (through the running quarry, or in-process).
    Call(CallArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Run one task of a cluster job (what `sbatch` runs on the nodes).
    Worker(WorkerArgs),
}

#[derive(Debug, Args, Clone)]
pub struct WorkerArgs {
    /// The job description (job.json in the job's folder).
    #[arg(long)]
    pub job: std::path::PathBuf,
    /// Which task of the job (the array task id).
    #[arg(long)]
    pub task: usize,
}

#[derive(Debug, Args, Clone, Default)]
pub struct ToolsArgs {
    /// Config file whose [toolsets] decide which tools are listed.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print the tool reference of every tool, whatever the config (docs/reference/tools.md).
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
}

#[derive(Debug, Args, Clone, Default)]
pub struct CallArgs {
    /// The tool to call (`quarry tools` lists them).
    pub tool: String,
    /// Arguments as key=value; values are read as JSON where they parse
    /// (5, true, [0,100]), else as strings; the tool's string arguments keep their text.
    #[arg(value_name = "KEY=VALUE")]
    pub pairs: Vec<String>,
    /// Arguments as one JSON object (key=value pairs are applied over it).
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// Print the tool's JSON result as it is (for jq).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Args, Clone)]
pub struct CompletionsArgs {
    /// The shell to write completions for.
    pub shell: clap_complete::Shell,
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
    /// A data root, as DIR or NAME=DIR (repeatable). Without NAME the folder's name is used.
    #[arg(long = "root", value_name = "[NAME=]DIR")]
    pub roots: Vec<String>,
    /// Catalog folder to empty and build again (default: the one of this set of roots).
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
    /// TOML config file holding any of these settings and more.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args, Clone, Default)]
pub struct StatusArgs {
    /// Catalog folder to report on (default: every catalog under $XDG_DATA_HOME/quarry/catalogs).
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
    /// TOML config file; only its catalog and socket are used.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the status as JSON (the index_status tool's result).
    #[arg(long)]
    pub json: bool,
}

/// The command line's definition, with the tool list under `quarry call --help`.
pub fn command() -> clap::Command {
    let tools: Vec<&str> = crate::mcp::tools::all().map(|d| d.name).collect();
    let listing = format!(
        "Tools: {}\n\nExamples:\n  quarry call list_files kind=root limit=5 --root data=DIR\n  quarry call read_histogram path=hists.root name=h1 --catalog DIR --json",
        tools.join(", ")
    );
    Cli::command().mut_subcommand("call", |c| c.after_help(listing))
}

/// Parses the process's arguments (clap exits with status 2 on a usage error).
pub fn parse() -> Cli {
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
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
