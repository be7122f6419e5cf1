//! The tool registry: every tool with its toolset, schemas (from `schema/tools/`),
//! annotations and handler. A file per tool family.

mod arguments;
mod bins;
mod code;
mod code_files;
mod code_graph;
mod code_includes;
mod code_nav;
mod documents;
pub mod error_codes;
mod files;
mod hdf5;
mod hdf5_export;
mod rag;
mod resources;
mod root;
mod root_analysis;
mod root_compare;
mod root_cutflow;
mod root_dataset;
mod root_dataset_answers;
mod root_dataset_files;
mod root_executor;
mod root_export;
mod root_fit;
mod root_histogram;
mod root_plot;
mod root_quantities;
mod root_rows;
mod root_saved_datasets;
mod root_stats;

use std::path::PathBuf;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::budget::Budget;
use super::response::{ToolError, ToolOutput};
use crate::catalog::Catalog;
use crate::job::Job;

/// Groups of tools that can be switched on and off in the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Toolset {
    /// quarry's own tools (list_files, index_status): always on.
    Core,
    Root,
    Hdf5,
    Docs,
    Code,
    Rag,
    /// `read_resource`: on when a toolset with resources (hdf5, rag) is on.
    Resources,
}

impl Toolset {
    pub const SWITCHABLE: [Toolset; 5] = [
        Toolset::Root,
        Toolset::Hdf5,
        Toolset::Docs,
        Toolset::Code,
        Toolset::Rag,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Toolset::Core => "core",
            Toolset::Root => "root",
            Toolset::Hdf5 => "hdf5",
            Toolset::Docs => "docs",
            Toolset::Code => "code",
            Toolset::Rag => "rag",
            Toolset::Resources => "resources",
        }
    }

    /// Whether tools of this set are served when `enabled` are switched on.
    pub fn is_on(self, enabled: &[Toolset]) -> bool {
        match self {
            Toolset::Resources => {
                enabled.contains(&Toolset::Hdf5) || enabled.contains(&Toolset::Rag)
            }
            set => enabled.contains(&set),
        }
    }
}

/// Limits a tool call is held to.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Longest a tool call may run before it answers `timeout`.
    pub call_timeout: std::time::Duration,
    /// How many failed files `index_status` lists per root at most.
    pub max_listed_failures: usize,
    /// Most characters `read_document` returns in one call.
    pub max_document_read_chars: usize,
    /// Most elements `read_dataset_slice` returns in one call.
    pub max_slice_elements: u64,
    /// Most bytes of JSON any tool result holds (see `mcp::budget`): beyond
    /// it items are left out at an item boundary, `truncated` is set and
    /// `next_offset` (or the tool's own cursor) says where to go on.
    pub max_result_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            call_timeout: std::time::Duration::from_secs(120),
            max_listed_failures: 1000,
            max_document_read_chars: 10_000,
            max_slice_elements: 100_000,
            max_result_bytes: 12_000,
        }
    }
}

/// What the front end serves with.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    pub toolsets: Vec<Toolset>,
    pub limits: Limits,
    /// Where export tools may write; `None` disables writing.
    pub export_dir: Option<PathBuf>,
    /// Whether statistics computed on request are stored in the catalog.
    pub cache_stats: bool,
    /// Where ingest_document writes (indexed as the `ingest` root); `None`
    /// disables ingesting.
    pub ingest_dir: Option<PathBuf>,
    /// Where dataset calls run (`[executor]`).
    pub executor: crate::executor::ExecutorSettings,
    /// `[code] include_dirs`: folders, relative to each root, where C++
    /// includes are looked for.
    pub include_dirs: Vec<String>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        let mut toolsets = vec![Toolset::Core];
        toolsets.extend(Toolset::SWITCHABLE);
        ServerSettings {
            toolsets,
            limits: Limits::default(),
            export_dir: None,
            cache_stats: true,
            ingest_dir: None,
            executor: Default::default(),
            include_dirs: Vec::new(),
        }
    }
}

/// What a tool handler can reach.
pub struct Context {
    pub catalog: Arc<Catalog>,
    pub settings: ServerSettings,
    /// Decoded catalog rows that tools read on every call.
    pub cache: RowCache,
    /// Recently parsed source files, for `execute_query`.
    pub trees: code::TreeCache,
    /// The RAG engine (trees, datasets); `None` where no pass runs (status).
    pub rag: Option<Arc<crate::rag::Rag>>,
}

impl Context {
    pub fn new(catalog: Arc<Catalog>, settings: ServerSettings) -> Context {
        Context {
            catalog,
            settings,
            cache: RowCache::default(),
            trees: code::TreeCache::default(),
            rag: None,
        }
    }
}

/// Decoded branch lists by (file id, fingerprint, tree path). A file that changes
/// gets a new fingerprint, so an entry can be outdated but never wrong; the cache
/// is emptied when it grows past `ROW_CACHE_TREES`.
type BranchList = Arc<Vec<crate::catalog::root::BranchRow>>;

#[derive(Default)]
pub struct RowCache {
    branches: std::sync::Mutex<std::collections::HashMap<(u64, u64, String), BranchList>>,
}

const ROW_CACHE_TREES: usize = 64;

impl RowCache {
    pub fn branches(
        &self,
        key: (u64, u64, String),
        load: impl FnOnce() -> Result<Vec<crate::catalog::root::BranchRow>, ToolError>,
    ) -> Result<BranchList, ToolError> {
        if let Some(hit) = self.branches.lock().expect("row cache").get(&key) {
            return Ok(hit.clone());
        }
        let rows = Arc::new(load()?);
        let mut cache = self.branches.lock().expect("row cache");
        if cache.len() >= ROW_CACHE_TREES {
            cache.clear();
        }
        cache.insert(key, rows.clone());
        Ok(rows)
    }
}

impl Context {
    /// Whether this server offers the tool `name` (it exists and its toolset is on).
    pub fn serves(&self, name: &str) -> bool {
        all().any(|d| d.name == name && d.toolset.is_on(&self.settings.toolsets))
    }

    /// The byte budget of a tool's results: `max_result_bytes`, less the room
    /// `invoke` may need for its note of coerced arguments.
    pub fn budget(&self, tool: &'static str) -> Budget {
        let reserve = all()
            .find(|d| d.name == tool)
            .map_or(0, arguments::note_reserve);
        Budget::new(
            self.settings
                .limits
                .max_result_bytes
                .saturating_sub(reserve),
            tool,
        )
    }
}

/// Calls a tool as the front ends do: its arguments taken as models send them
/// (`arguments::coerce`), the coerced ones named in `metadata.coerced_arguments`.
pub fn invoke(
    def: &ToolDef,
    ctx: &Context,
    job: &Job,
    mut args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let coerced = arguments::coerce(def, &mut args)?;
    let mut out = run_on_one_version(def, ctx, job, args)?;
    if !coerced.is_empty() {
        out.metadata
            .insert("coerced_arguments".into(), serde_json::json!(coerced));
    }
    Ok(out)
}

/// Runs a tool; when it failed because a remote file it read was replaced
/// under it (the read found another version: `Job::source_changed_flag`),
/// runs it once more, reopening the file at its new version, so the answer
/// comes whole from the new version (blocks are cached per version, and the
/// old version's are dropped). Replaced again during that run: an `io_error`
/// saying the file keeps changing. Only for idempotent tools (a second run
/// changes nothing more: the same plot written again, say).
fn run_on_one_version(
    def: &ToolDef,
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    if !def.effects.idempotent {
        return (def.handler)(ctx, job, args);
    }
    job.take_source_changed();
    let error = match (def.handler)(ctx, job, args.clone()) {
        Err(e) if job.take_source_changed() && !job.is_stopped() => e,
        done => return done,
    };
    tracing::info!(
        tool = def.name,
        "a remote file changed while read: {}",
        error.message
    );
    match (def.handler)(ctx, job, args) {
        Err(e) if job.take_source_changed() => Err(ToolError::new(
            "io_error",
            format!(
                "the file kept changing on the server while it was read (read again once at its new version, it changed again): {}",
                e.message
            ),
            "Retry later, once the file has stopped changing; index_status() shows the remote root's last error",
        )),
        done => done,
    }
}

pub type Handler = fn(&Context, &Job, Map<String, Value>) -> Result<ToolOutput, ToolError>;

pub struct ToolDef {
    pub name: &'static str,
    pub title: &'static str,
    pub toolset: Toolset,
    pub description: &'static str,
    pub input_schema: &'static str,
    pub output_schema: &'static str,
    pub effects: Effects,
    pub handler: Handler,
}

/// What a call does besides answering: the facts behind MCP's four tool
/// annotations. Clients use them to ask before a tool that writes, and the
/// stdio relay to decide which calls may be sent again after a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effects {
    /// Changes nothing a user sees: at most quarry's own catalog, a cache
    /// (statistics computed on request are kept there).
    pub read_only: bool,
    /// May replace something already there (a file of the same name); false:
    /// only adds.
    pub destructive: bool,
    /// A second call with the same arguments changes nothing more.
    pub idempotent: bool,
    /// Sends the request's text to the `[llm]` model when one is configured:
    /// the tool then reaches an outside service (MCP's open world).
    pub asks_llm: bool,
}

impl Effects {
    /// Reads the roots and the catalog, writes nothing.
    pub const READS: Effects = Effects {
        read_only: true,
        destructive: false,
        idempotent: true,
        asks_llm: false,
    };

    /// Whether the tool reaches beyond the roots and quarry's folders, given
    /// whether an `[llm]` model is configured.
    pub fn open_world(self, llm_configured: bool) -> bool {
        self.asks_llm && llm_configured
    }
}

/// Every tool quarry has, whatever the config enables.
pub fn all() -> impl Iterator<Item = &'static ToolDef> {
    files::TOOLS
        .iter()
        .chain(root::TOOLS)
        .chain(root_analysis::TOOLS)
        .chain(root_cutflow::TOOLS)
        .chain(root_compare::TOOLS)
        .chain(root_rows::TOOLS)
        .chain(root_export::TOOLS)
        .chain(root_fit::TOOLS)
        .chain(root_saved_datasets::TOOLS)
        .chain(documents::TOOLS)
        .chain(hdf5::TOOLS)
        .chain(hdf5_export::TOOLS)
        .chain(code::TOOLS)
        .chain(code_nav::TOOLS)
        .chain(code_graph::TOOLS)
        .chain(rag::TOOLS)
        .chain(resources::TOOLS)
}

/// Parses a tool's arguments into its argument type, as a tool error when they
/// do not fit (so the model can correct itself).
pub fn parse_args<T: DeserializeOwned>(
    tool: &str,
    args: Map<String, Value>,
) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args)).map_err(|e| ToolError::invalid_arguments(tool, e))
}

/// An `offset` argument (items to skip, from a cut answer's `next_offset`):
/// 0 when absent, never negative.
pub fn checked_offset(tool: &str, name: &str, offset: Option<i64>) -> Result<usize, ToolError> {
    match offset {
        None => Ok(0),
        Some(n) if n >= 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        Some(n) => Err(ToolError::invalid_arguments(
            tool,
            format!("{name} = {n} is negative; give the next_offset of the previous answer, or 0"),
        )
        .retry_with(serde_json::json!({ name: 0 }))),
    }
}

/// A `limit` argument checked against its maximum (`limit_exceeded` with the
/// corrected value to retry with); `default` when absent.
pub fn checked_limit(
    limit: Option<i64>,
    default: usize,
    max: usize,
    narrow_hint: &str,
) -> Result<usize, ToolError> {
    match limit {
        None => Ok(default),
        Some(n) if (0..=max as i64).contains(&n) => Ok(n as usize),
        Some(n) => Err(ToolError::new(
            "limit_exceeded",
            format!("limit {n} is outside 0..={max}"),
            format!("Use a limit of at most {max} and {narrow_hint}"),
        )
        .retry_with(serde_json::json!({ "limit": max }))),
    }
}
