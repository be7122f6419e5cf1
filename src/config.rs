//! Settings: the command line over an optional TOML file over defaults.
//!
//! Every key of the file, with its default and what it does, is in the example
//! `docs/reference/quarry.toml` (`tests/reference_docs.rs` checks it against these
//! types and `Settings::load`); the comments here say why, not what.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;

use crate::cli::ServeArgs;
use crate::indexing::{IndexOptions, StatsMode};
use crate::mcp::tools::{Limits, ServerSettings, Toolset};
use crate::mcp::transport::TransportSettings;
use crate::roots::{Roots, valid_root_name};

pub mod reference;

pub const SOCKET_FILE: &str = "quarry.sock";
/// The export folder inside the catalog folder, when the config names none.
pub const EXPORT_DIR: &str = "exports";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    catalog: Option<PathBuf>,
    socket: Option<PathBuf>,
    export_dir: Option<PathBuf>,
    #[serde(default)]
    roots: Vec<RootConfig>,
    #[serde(default)]
    toolsets: ToolsetsConfig,
    #[serde(default)]
    limits: LimitsConfig,
    #[serde(default)]
    index: IndexConfig,
    #[serde(default)]
    server: TransportConfig,
    #[serde(default)]
    rag: RagConfig,
    #[serde(default)]
    code: CodeConfig,
    llm: Option<LlmFileConfig>,
    #[serde(default)]
    remote: RemoteConfig,
    #[serde(default)]
    executor: ExecutorConfig,
}

/// `[remote]`: how roots given by URL are reached.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoteConfig {
    relist_minutes: Option<f64>,
    cache_mb: Option<u64>,
    /// Kept on disk so that the daemon's next run need not fetch them again.
    disk_cache_mb: Option<u64>,
    timeout_secs: Option<f64>,
    retries: Option<u32>,
    parallel: Option<usize>,
    ca_file: Option<PathBuf>,
    /// libhdf5 and the document and code readers need the whole file in memory.
    max_whole_file_mb: Option<u64>,
    s3_endpoint: Option<String>,
    s3_region: Option<String>,
    s3_addressing: Option<crate::remote::S3Addressing>,
}

impl RemoteConfig {
    fn settings(
        self,
        base: Option<&Path>,
    ) -> anyhow::Result<(crate::remote::Settings, usize, u64)> {
        let mut s = crate::remote::Settings::default();
        let secs = |v: f64, what: &str| -> anyhow::Result<Duration> {
            anyhow::ensure!(
                v.is_finite() && v > 0.0 && v < 1e7,
                "[remote] {what} must be a positive number, not {v}"
            );
            Ok(Duration::from_secs_f64(v))
        };
        if let Some(m) = self.relist_minutes {
            s.relist = secs(m * 60.0, "relist_minutes")?;
        }
        if let Some(t) = self.timeout_secs {
            s.request_timeout = secs(t, "timeout_secs")?;
        }
        // Retries stop once a request's time limit has passed since the first try.
        s.retry.give_up_after = s.request_timeout;
        if let Some(r) = self.retries {
            s.retry.retries = r.min(20);
        }
        if let Some(p) = self.parallel {
            s.parallel = p.clamp(1, 64);
        }
        if let Some(mb) = self.max_whole_file_mb {
            s.max_whole_file = mb << 20;
        }
        s.ca_file = self.ca_file.map(|f| relative_to(base, f));
        s.s3_endpoint = self.s3_endpoint;
        s.s3_region = self.s3_region;
        s.s3_addressing = self.s3_addressing;
        let cache = self
            .cache_mb
            .map_or(crate::remote::cache::DEFAULT_CACHE_BYTES, |mb| {
                (mb as usize) << 20
            });
        let disk = self
            .disk_cache_mb
            .map_or(crate::remote::cache::DEFAULT_DISK_CACHE_BYTES, |mb| {
                mb.saturating_mul(1 << 20)
            });
        Ok((s, cache, disk))
    }
}

/// `[executor]`: where dataset calls run (see `crate::executor`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecutorConfig {
    kind: Option<crate::executor::ExecutorKind>,
    partition: Option<String>,
    max_jobs: Option<usize>,
    files_per_job: Option<usize>,
    time_limit: Option<String>,
    #[serde(default)]
    extra_args: Vec<String>,
    auto_above_gb: Option<f64>,
    split_above_mb: Option<f64>,
    quarry: Option<PathBuf>,
}

impl ExecutorConfig {
    fn settings(
        self,
        catalog_dir: &Path,
        base: Option<&Path>,
    ) -> anyhow::Result<crate::executor::ExecutorSettings> {
        let auto_above_bytes = match self.auto_above_gb {
            None => None,
            Some(gb) if gb.is_finite() && gb >= 0.0 => Some((gb * 1e9) as u64),
            Some(gb) => anyhow::bail!("[executor] auto_above_gb must be a number of GB, not {gb}"),
        };
        let split_above_bytes = match self.split_above_mb {
            None => None,
            Some(mb) if mb.is_finite() && mb > 0.0 => Some((mb * 1e6) as u64),
            Some(mb) => {
                anyhow::bail!("[executor] split_above_mb must be a positive number of MB, not {mb}")
            }
        };
        let slurm = crate::executor::slurm::SlurmSettings {
            partition: self.partition,
            max_jobs: self.max_jobs,
            files_per_job: self.files_per_job,
            time_limit: self.time_limit,
            extra_args: self.extra_args,
        };
        slurm.check().map_err(anyhow::Error::msg)?;
        Ok(crate::executor::ExecutorSettings {
            kind: self.kind.unwrap_or_default(),
            slurm,
            auto_above_bytes,
            split_above_bytes,
            jobs_dir: Some(crate::executor::jobs_dir(catalog_dir)),
            quarry: self.quarry.map(|q| relative_to(base, q)),
        })
    }
}

/// `[code]`: where C++ `#include`s are looked for, besides the including
/// file's folder (like a compiler's `-I`), relative to each root.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CodeConfig {
    #[serde(default)]
    include_dirs: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LlmFileConfig {
    base_url: String,
    model: String,
    api_key_env: Option<String>,
    timeout_secs: Option<f64>,
    max_tokens: Option<u32>,
}

impl LlmFileConfig {
    fn settings(self) -> anyhow::Result<crate::rag::llm::LlmConfig> {
        anyhow::ensure!(
            self.base_url.starts_with("http://") || self.base_url.starts_with("https://"),
            "[llm] base_url must be an http:// or https:// URL, not '{}'",
            self.base_url
        );
        let timeout = match self.timeout_secs {
            None => crate::rag::llm::DEFAULT_TIMEOUT,
            Some(s) if s.is_finite() && s > 0.0 && s < 1e6 => Duration::from_secs_f64(s),
            Some(s) => anyhow::bail!("[llm] timeout_secs must be a positive number, not {s}"),
        };
        Ok(crate::rag::llm::LlmConfig {
            base_url: self.base_url,
            model: self.model,
            api_key_env: self.api_key_env.filter(|v| !v.is_empty()),
            timeout,
            max_tokens: self.max_tokens.unwrap_or(400).clamp(16, 32_768),
        })
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TransportConfig {
    max_connections: Option<usize>,
    max_in_flight: Option<usize>,
    max_concurrent_calls: Option<usize>,
    idle_timeout_secs: Option<f64>,
    max_message_bytes: Option<usize>,
    max_tasks: Option<usize>,
    task_timeout_secs: Option<u64>,
    task_results_mib: Option<usize>,
}

impl TransportConfig {
    fn settings(&self) -> anyhow::Result<TransportSettings> {
        let d = TransportSettings::default();
        let idle_timeout = match self.idle_timeout_secs {
            None => d.connection.idle_timeout,
            Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Some(Duration::from_secs_f64(s)),
            Some(s) => anyhow::bail!(
                "[server] idle_timeout_secs must be a positive number of seconds, not {s}"
            ),
        };
        Ok(TransportSettings {
            max_connections: self.max_connections.unwrap_or(d.max_connections).max(1),
            max_concurrent_calls: self
                .max_concurrent_calls
                .unwrap_or(d.max_concurrent_calls)
                .max(1),
            connection: crate::mcp::connection::ConnectionLimits {
                max_in_flight: self
                    .max_in_flight
                    .unwrap_or(d.connection.max_in_flight)
                    .max(1),
                max_message_bytes: self
                    .max_message_bytes
                    .unwrap_or(d.connection.max_message_bytes)
                    .max(1024),
                idle_timeout,
            },
            tasks: crate::mcp::tasks::TaskSettings {
                max_live: self.max_tasks.unwrap_or(d.tasks.max_live).max(1),
                results_bytes: self
                    .task_results_mib
                    .map_or(d.tasks.results_bytes, |m| m.max(1) << 20),
                timeout: self
                    .task_timeout_secs
                    .map_or(d.tasks.timeout, |s| Duration::from_secs(s.max(1))),
                // The engine sets it: the catalog folder's `tasks/`.
                store: None,
            },
        })
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RagConfig {
    /// Unset: `default_ingest_dir()`.
    ingest_dir: Option<IngestDirConfig>,
    model_dir: Option<PathBuf>,
}

/// `[rag] ingest_dir`: a folder, or `false` for no ingesting (`true` is the default).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum IngestDirConfig {
    Enabled(bool),
    Dir(PathBuf),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RootConfig {
    name: Option<String>,
    path: PathBuf,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsetsConfig {
    root: Option<bool>,
    hdf5: Option<bool>,
    docs: Option<bool>,
    code: Option<bool>,
    rag: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsConfig {
    call_timeout_secs: Option<u64>,
    max_listed_failures: Option<usize>,
    max_document_read_chars: Option<usize>,
    max_slice_elements: Option<u64>,
    max_result_bytes: Option<usize>,
    worker_memory_mib: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexConfig {
    threads: Option<usize>,
    batch: Option<usize>,
    settle_ms: Option<u64>,
    stats: Option<StatsMode>,
}

/// Everything a command runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    pub roots: Roots,
    pub catalog_dir: PathBuf,
    pub socket: PathBuf,
    pub server: ServerSettings,
    pub index: IndexOptions,
    pub settle: Duration,
    /// The socket's and each connection's limits.
    pub transport: TransportSettings,
    /// The RAG engine's `[rag]` and `[llm]` settings.
    pub rag: crate::rag::RagOptions,
    /// The address space of each reader worker process (`[limits]
    /// worker_memory_mib`).
    pub worker_memory_mib: u64,
    /// The remote roots' block cache, in bytes (`[remote] cache_mb`).
    pub remote_cache_bytes: usize,
    /// The remote roots' blocks on disk, in bytes (`[remote] disk_cache_mb`).
    pub remote_disk_cache_bytes: u64,
}

impl Settings {
    /// Applies the settings that hold for the whole process: the reader
    /// workers' memory limit.
    pub fn apply_to_process(&self) {
        crate::formats::worker::set_memory_limit_mib(self.worker_memory_mib);
        crate::remote::cache::set_limit(self.remote_cache_bytes);
        crate::remote::cache::set_disk(
            self.catalog_dir.join(crate::remote::cache::DISK_FOLDER),
            self.remote_disk_cache_bytes,
        );
    }
}

/// Where default catalogs live: `quarry/catalogs` in the user's XDG data dir.
pub fn default_catalogs_home() -> anyhow::Result<PathBuf> {
    dirs::data_dir()
        .map(|d| d.join("quarry").join("catalogs"))
        .context("no user data folder (set XDG_DATA_HOME or HOME), pass --catalog DIR")
}

/// Where ingest_document writes when the config names no folder: `quarry/ingest` in the
/// user's XDG data dir, beside the catalogs and not inside one, since a catalog is a cache
/// that may be deleted and ingested documents are the user's data. Every set of roots
/// shares it.
pub fn default_ingest_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("quarry").join("ingest"))
}

/// The ingest folder the settings name, made if missing: the configured one (an error
/// when it cannot be made), else the default one (ingesting off, with a warning, when it
/// cannot be made: a read-only home must not stop quarry from serving its roots).
fn ingest_folder(
    base: Option<&Path>,
    config: Option<IngestDirConfig>,
) -> anyhow::Result<Option<PathBuf>> {
    let dir = match config {
        Some(IngestDirConfig::Enabled(false)) => return Ok(None),
        Some(IngestDirConfig::Dir(d)) => {
            let dir = relative_to(base, d);
            crate::catalog::create_private_dir(&dir)
                .with_context(|| format!("ingest_dir {}", dir.display()))?;
            return Ok(Some(dir.canonicalize()?));
        }
        Some(IngestDirConfig::Enabled(true)) | None => default_ingest_dir(),
    };
    let made = dir
        .as_deref()
        .map(|d| crate::catalog::create_private_dir(d).and_then(|()| Ok(d.canonicalize()?)));
    match made {
        Some(Ok(dir)) => Ok(Some(dir)),
        Some(Err(e)) => {
            tracing::warn!(
                "ingest_document is off: no default ingest folder ({e:#}); set [rag] ingest_dir"
            );
            Ok(None)
        }
        None => Ok(None),
    }
}

/// The default catalog of a set of roots: one per set, so that assistants set up
/// with different roots never share (and thrash) one catalog. Named after the
/// first root (by name) plus a hash of every (name, folder) pair.
pub fn default_catalog_dir(roots: &Roots) -> anyhow::Result<PathBuf> {
    let mut pairs: Vec<String> = roots
        .list()
        .iter()
        .map(|r| format!("{}={}", r.name, r.canonical.display()))
        .collect();
    pairs.sort();
    // FNV-1a: a fixed function, as the name must not change between builds.
    let hash = pairs
        .join("\0")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    // Named after the first root in sorted order, so the same set in any order
    // gives the same folder.
    let first = pairs
        .first()
        .and_then(|p| p.split_once('='))
        .map_or("quarry", |(name, _)| name);
    let slug: String = first
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    Ok(default_catalogs_home()?.join(format!("{slug}-{:08x}", hash as u32)))
}

/// Splits `--root [NAME=]DIR`; a bare DIR is named after its folder.
pub fn parse_root_arg(arg: &str) -> anyhow::Result<(String, PathBuf)> {
    if let Some((name, dir)) = arg.split_once('=')
        && valid_root_name(name)
    {
        return Ok((name.to_string(), PathBuf::from(dir)));
    }
    let dir = PathBuf::from(arg);
    Ok((name_of_dir(&dir)?, dir))
}

fn name_of_dir(dir: &Path) -> anyhow::Result<String> {
    let absolute = std::path::absolute(dir)?;
    let name = absolute
        .canonicalize()
        .unwrap_or(absolute)
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string);
    name.filter(|n| valid_root_name(n)).with_context(|| {
        format!(
            "cannot name root {} after its folder: use --root NAME=DIR",
            dir.display()
        )
    })
}

fn load_file(path: &Path) -> anyhow::Result<FileConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("invalid config {}", path.display()))
}

/// Resolves a path from the config file: `~/` is the home folder, other relative
/// paths are relative to the file's folder.
fn relative_to(base: Option<&Path>, p: PathBuf) -> PathBuf {
    if p.to_str().is_some_and(crate::remote::looks_like_url) {
        return p; // a remote root's URL
    }
    if let (Ok(rest), Some(home)) = (p.strip_prefix("~"), dirs::home_dir()) {
        return home.join(rest);
    }
    match base {
        Some(b) if p.is_relative() => b.join(p),
        _ => p,
    }
}

/// The toolsets a config file switches on (every one unless it says otherwise).
fn enabled_toolsets(file: &FileConfig) -> Vec<Toolset> {
    let t = &file.toolsets;
    let mut toolsets = vec![Toolset::Core];
    for (set, on) in [
        (Toolset::Root, t.root),
        (Toolset::Hdf5, t.hdf5),
        (Toolset::Docs, t.docs),
        (Toolset::Code, t.code),
        (Toolset::Rag, t.rag),
    ] {
        if on.unwrap_or(true) {
            toolsets.push(set);
        }
    }
    toolsets
}

/// Where a client command (`call`) finds the catalog's server, and the full
/// settings when roots were given (so it can serve itself when none runs).
#[derive(Debug)]
pub struct Endpoint {
    pub catalog_dir: PathBuf,
    pub socket: PathBuf,
    pub settings: Option<Settings>,
}

impl Settings {
    /// What the RAG engine runs with.
    pub fn rag_options(&self) -> crate::rag::RagOptions {
        self.rag.clone()
    }

    /// The toolsets a config file (or, without one, the defaults) switches on.
    pub fn toolsets_of(config: Option<&Path>) -> anyhow::Result<Vec<Toolset>> {
        let file = config.map(load_file).transpose()?.unwrap_or_default();
        Ok(enabled_toolsets(&file))
    }

    /// The catalog and socket a client command talks to. With roots (on the
    /// command line or in the config) these are the full settings; without, the
    /// catalog or socket must be named.
    pub fn endpoint(args: &ServeArgs) -> anyhow::Result<Endpoint> {
        let file = args
            .config
            .as_deref()
            .map(load_file)
            .transpose()?
            .unwrap_or_default();
        if !args.roots.is_empty() || !file.roots.is_empty() {
            let settings = Settings::load(args)?;
            return Ok(Endpoint {
                catalog_dir: settings.catalog_dir.clone(),
                socket: settings.socket.clone(),
                settings: Some(settings),
            });
        }
        let base = args.config.as_deref().and_then(Path::parent);
        let catalog = match (&args.catalog, file.catalog) {
            (Some(c), _) => Some(std::path::absolute(c)?),
            (None, Some(c)) => Some(relative_to(base, c)),
            (None, None) => None,
        };
        let socket = match (&args.socket, file.socket, &catalog) {
            (Some(s), _, _) => std::path::absolute(s)?,
            (None, Some(s), _) => relative_to(base, s),
            (None, None, Some(c)) => c.join(SOCKET_FILE),
            (None, None, None) => anyhow::bail!(
                "no data roots and no catalog: pass --root DIR, or --catalog DIR (or --socket PATH) of a running `quarry serve`"
            ),
        };
        let catalog_dir =
            catalog.unwrap_or_else(|| socket.parent().unwrap_or(&socket).to_path_buf());
        Ok(Endpoint {
            catalog_dir,
            socket,
            settings: None,
        })
    }

    /// Settings for commands that need roots (serve, mcp, rebuild).
    pub fn load(args: &ServeArgs) -> anyhow::Result<Settings> {
        let mut file = args
            .config
            .as_deref()
            .map(load_file)
            .transpose()?
            .unwrap_or_default();
        let base = args.config.as_deref().and_then(Path::parent);

        let toolsets = enabled_toolsets(&file);
        let (remote, remote_cache_bytes, remote_disk_cache_bytes) =
            std::mem::take(&mut file.remote).settings(base)?;
        let mut specs = Vec::new();
        for r in file.roots {
            let path = relative_to(base, r.path);
            let name = match r.name {
                Some(n) => n,
                None => name_of_dir(&path)?,
            };
            specs.push((name, path));
        }
        for arg in &args.roots {
            specs.push(parse_root_arg(arg)?);
        }
        anyhow::ensure!(
            !specs.is_empty(),
            "no data roots: pass --root DIR (repeatable) or list [[roots]] in a --config file"
        );
        let model_dir = file.rag.model_dir.map(|d| relative_to(base, d));
        let llm = file.llm.map(LlmFileConfig::settings).transpose()?;
        let explicit_ingest = matches!(file.rag.ingest_dir, Some(IngestDirConfig::Dir(_)));
        let named_ingest = specs.iter().any(|(n, _)| n == crate::rag::INGEST_ROOT);
        let ingest_dir = if !toolsets.contains(&Toolset::Rag) {
            None // no ingest_document to write there
        } else if named_ingest && !explicit_ingest {
            // A root of the user's already has the name the ingest folder is served as.
            tracing::warn!(
                "ingest_document is off: a root is named '{}'; set [rag] ingest_dir to turn it on",
                crate::rag::INGEST_ROOT
            );
            None
        } else {
            ingest_folder(base, file.rag.ingest_dir)?
        };
        // The default ingest folder is every set's, so it does not name the set's
        // catalog (which stays where it was before ingesting had a default).
        let mut catalog_roots = specs.clone();
        if let Some(dir) = &ingest_dir {
            let spec = (crate::rag::INGEST_ROOT.to_string(), dir.clone());
            if explicit_ingest {
                catalog_roots.push(spec.clone());
            }
            specs.push(spec);
        }
        let mut roots = Roots::with_remote(specs, &remote)?;
        if ingest_dir.is_some() {
            roots.set_aside(crate::rag::INGEST_ROOT);
        }

        let catalog_dir = match (&args.catalog, file.catalog) {
            (Some(c), _) => std::path::absolute(c)?,
            (None, Some(c)) => relative_to(base, c),
            (None, None) => default_catalog_dir(&Roots::new(catalog_roots)?)?,
        };
        let socket = match (&args.socket, file.socket) {
            (Some(s), _) => std::path::absolute(s)?,
            (None, Some(s)) => relative_to(base, s),
            (None, None) => catalog_dir.join(SOCKET_FILE),
        };
        // Exports go under the catalog folder unless the config names another.
        let export_dir = Some(
            file.export_dir
                .map_or_else(|| catalog_dir.join(EXPORT_DIR), |d| relative_to(base, d)),
        );
        let defaults = Limits::default();
        let stats = file.index.stats.unwrap_or_default();
        let limits = Limits {
            call_timeout: file
                .limits
                .call_timeout_secs
                .map_or(defaults.call_timeout, Duration::from_secs),
            max_listed_failures: file
                .limits
                .max_listed_failures
                .unwrap_or(defaults.max_listed_failures),
            max_document_read_chars: file
                .limits
                .max_document_read_chars
                .unwrap_or(defaults.max_document_read_chars)
                .max(1),
            max_slice_elements: file
                .limits
                .max_slice_elements
                .unwrap_or(defaults.max_slice_elements)
                .max(1),
            max_result_bytes: file
                .limits
                .max_result_bytes
                .unwrap_or(defaults.max_result_bytes)
                .max(1024),
        };

        let executor = file.executor.settings(&catalog_dir, base)?;
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut excluded_dirs = vec![catalog_dir.clone()];
        excluded_dirs.extend(export_dir.clone());
        Ok(Settings {
            roots,
            socket,
            server: ServerSettings {
                toolsets,
                limits,
                export_dir,
                cache_stats: stats != StatsMode::Off,
                ingest_dir: ingest_dir.clone(),
                executor,
                include_dirs: file
                    .code
                    .include_dirs
                    .iter()
                    .map(|d| d.trim_matches('/').to_string())
                    .filter(|d| !d.is_empty() && !d.split('/').any(|c| c == ".."))
                    .collect(),
            },
            index: IndexOptions {
                threads: file.index.threads.unwrap_or(cores).max(1),
                batch: file.index.batch.unwrap_or(512).max(1),
                excluded_dirs,
                stats: file.index.stats.unwrap_or_default(),
            },
            settle: Duration::from_millis(file.index.settle_ms.unwrap_or(300)),
            transport: file.server.settings()?,
            rag: crate::rag::RagOptions {
                ingest_root_name: ingest_dir
                    .as_ref()
                    .map(|_| crate::rag::INGEST_ROOT.to_string()),
                catalog_dir: Some(catalog_dir.clone()),
                model_dir,
                llm,
            },
            catalog_dir,
            worker_memory_mib: file
                .limits
                .worker_memory_mib
                .unwrap_or(crate::formats::worker::DEFAULT_MEMORY_MIB)
                .max(crate::formats::worker::MIN_MEMORY_MIB),
            remote_cache_bytes,
            remote_disk_cache_bytes,
        })
    }

    /// The catalogs `status` reports on, with their sockets: the one named by
    /// `--catalog` or the config file, else every default catalog there is.
    pub fn status_targets(
        catalog: Option<&Path>,
        config: Option<&Path>,
    ) -> anyhow::Result<Vec<(PathBuf, PathBuf)>> {
        let file = config.map(load_file).transpose()?.unwrap_or_default();
        let base = config.and_then(Path::parent);
        let dir = match (catalog, file.catalog) {
            (Some(c), _) => Some(std::path::absolute(c)?),
            (None, Some(c)) => Some(relative_to(base, c)),
            (None, None) => None,
        };
        if let Some(dir) = dir {
            let socket = file
                .socket
                .map(|s| relative_to(base, s))
                .unwrap_or_else(|| dir.join(SOCKET_FILE));
            return Ok(vec![(dir, socket)]);
        }
        let home = default_catalogs_home()?;
        let mut found: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(&home)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|d| crate::catalog::db_path(d).exists())
            .map(|d| (d.clone(), d.join(SOCKET_FILE)))
            .collect();
        found.sort();
        anyhow::ensure!(
            !found.is_empty(),
            "no catalog in {}: quarry builds one when it first runs with --root DIR (or pass --catalog DIR)",
            home.display()
        );
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_arguments_take_an_optional_name() {
        let (name, dir) = parse_root_arg("data=/srv/x").unwrap();
        assert_eq!((name.as_str(), dir), ("data", PathBuf::from("/srv/x")));
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("run2024");
        std::fs::create_dir(&d).unwrap();
        let (name, _) = parse_root_arg(d.to_str().unwrap()).unwrap();
        assert_eq!(name, "run2024");
        // '=' inside a folder path is not a name separator when the left part has '/'.
        let weird = tmp.path().join("a=b");
        std::fs::create_dir(&weird).unwrap();
        let (name, dir) = parse_root_arg(weird.to_str().unwrap()).unwrap();
        assert_eq!((name.as_str(), dir), ("a=b", weird));
    }

    #[test]
    fn config_file_supplies_roots_toolsets_and_relative_paths() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("data")).unwrap();
        let cfg = tmp.path().join("quarry.toml");
        std::fs::write(
            &cfg,
            "catalog = \"cat\"\nexport_dir = \"out\"\n[[roots]]\npath = \"data\"\n[toolsets]\nrag = false\nhdf5 = false\n[index]\nsettle_ms = 100\n",
        )
        .unwrap();
        let s = Settings::load(&ServeArgs {
            config: Some(cfg),
            ..ServeArgs::default()
        })
        .unwrap();
        assert_eq!(s.roots.names(), vec!["data"]);
        assert_eq!(s.catalog_dir, tmp.path().join("cat"));
        assert_eq!(s.socket, tmp.path().join("cat").join(SOCKET_FILE));
        assert_eq!(s.server.export_dir, Some(tmp.path().join("out")));
        assert!(!s.server.toolsets.contains(&Toolset::Rag));
        assert!(!s.server.toolsets.contains(&Toolset::Hdf5));
        assert!(s.server.toolsets.contains(&Toolset::Root));
        assert_eq!(s.settle, Duration::from_millis(100));
    }

    #[test]
    fn server_section_sets_the_transport_limits() {
        let t = TransportConfig {
            max_connections: Some(3),
            max_in_flight: Some(0),
            idle_timeout_secs: Some(0.5),
            ..TransportConfig::default()
        }
        .settings()
        .unwrap();
        assert_eq!(t.max_connections, 3);
        assert_eq!(
            t.connection.max_in_flight, 1,
            "at least one request at a time"
        );
        assert_eq!(t.connection.idle_timeout, Some(Duration::from_millis(500)));
        assert_eq!(
            t.max_concurrent_calls,
            TransportSettings::default().max_concurrent_calls
        );
        let bad = TransportConfig {
            idle_timeout_secs: Some(-1.0),
            ..TransportConfig::default()
        };
        assert!(bad.settings().is_err());
    }

    #[test]
    fn default_catalogs_differ_per_root_set() {
        let tmp = tempfile::tempdir().unwrap();
        for d in ["a", "b"] {
            std::fs::create_dir(tmp.path().join(d)).unwrap();
        }
        let roots = |specs: &[(&str, &str)]| {
            Roots::new(
                specs
                    .iter()
                    .map(|(n, d)| (n.to_string(), tmp.path().join(d)))
                    .collect(),
            )
            .unwrap()
        };
        let one = default_catalog_dir(&roots(&[("data", "a")])).unwrap();
        let same = default_catalog_dir(&roots(&[("data", "a")])).unwrap();
        let other_dir = default_catalog_dir(&roots(&[("data", "b")])).unwrap();
        let two = default_catalog_dir(&roots(&[("data", "a"), ("docs", "b")])).unwrap();
        let reordered = default_catalog_dir(&roots(&[("docs", "b"), ("data", "a")])).unwrap();
        assert_eq!(one, same);
        assert_ne!(one, other_dir);
        assert_ne!(one, two);
        assert!(
            one.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("data-")
        );
        assert_eq!(two.parent(), reordered.parent());
        assert_eq!(
            two.file_name().unwrap().to_str().unwrap()[5..],
            reordered.file_name().unwrap().to_str().unwrap()[5..]
        );
    }

    #[test]
    fn bad_configs_are_refused_clearly() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = tmp.path().join("q.toml");
        std::fs::write(&cfg, "unknown_key = 1\n").unwrap();
        let err = Settings::load(&ServeArgs {
            config: Some(cfg),
            ..ServeArgs::default()
        })
        .unwrap_err();
        assert!(format!("{err:#}").contains("unknown_key"), "{err:#}");
        let err = Settings::load(&ServeArgs::default()).unwrap_err();
        assert!(err.to_string().contains("no data roots"));
    }
}

#[cfg(test)]
#[path = "config/executor_tests.rs"]
mod executor_tests;
