//! Shared helpers for the integration tests: temporary roots, the real `quarry`
//! binary, and an rmcp client talking to it over stdio or the Unix socket.
#![allow(dead_code)]

pub mod docs;
pub mod faults;
pub mod hostile;
pub mod rag;
pub mod raw;
pub mod remote;
pub mod test_filter;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};

pub type Client = RunningService<RoleClient, ()>;

/// The `quarry` binary, with the user's data folder (where the default ingest folder
/// and default catalogs live) inside this test process's own temporary folder.
pub fn quarry() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_quarry"));
    cmd.env("XDG_DATA_HOME", data_home());
    cmd
}

/// `quarry()` for tokio's process API (rmcp's child-process transport).
pub fn quarry_tokio() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_quarry"));
    cmd.env("XDG_DATA_HOME", data_home());
    cmd
}

/// A data folder for every quarry this test process starts: tests never write to the
/// user's own (`$XDG_DATA_HOME/quarry/ingest` is made by default).
pub fn data_home() -> &'static Path {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    HOME.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// The name the test harness knows a test by (`file::test`), for running one test of
/// this binary again in a child process: `module` is the caller's `module_path!()`,
/// whose first part is the binary's crate name, which the harness leaves out.
pub fn test_name(module: &str, test: &str) -> String {
    let (_crate, path) = module.split_once("::").expect("a test module's path");
    format!("{path}::{test}")
}

/// Set in a child process that runs one test of this binary alone.
const ALONE_VAR: &str = "QUARRY_TEST_ALONE";

/// Whether this process runs one test alone (see `run_alone`).
pub fn running_alone() -> bool {
    std::env::var_os(ALONE_VAR).is_some()
}

/// Runs one test of this binary alone in a child process and fails if it fails. For
/// tests of process-wide settings (the worker pool's limits): the other tests of this
/// binary share its process and may have changed them. The test calls this unless
/// `running_alone()`, passing its `module_path!()` and its own name.
pub fn run_alone(module: &str, test: &str) {
    let name = test_name(module, test);
    let out = Command::new(std::env::current_exe().unwrap())
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE_VAR, "1")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{name}, run alone, failed:\n{said}");
    assert!(
        said.contains("1 passed"),
        "{name}, run alone, ran no test:\n{said}"
    );
}

/// Runs a quarry command that must succeed; returns its standard output.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub fn repo_testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata")
}

/// How the ROOT tool tests' data is stored: as the TTree files, or as their
/// RNTuple copies (`scripts/fixtures/rntuple_copies.py`: the same branches as
/// fields of the same names and types, the same clusters). Each ROOT tool
/// test runs once per form with the same expected values.
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    TTree,
    RNTuple,
}

#[allow(dead_code)]
impl Form {
    /// The file holding the data of the repository's TTree file `rel`
    /// (relative to the repository) in this form; `None` for a TTree file
    /// without an RNTuple copy.
    pub fn source(self, rel: &str) -> Option<PathBuf> {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        match self {
            Form::TTree => Some(repo.join(rel)),
            Form::RNTuple => {
                let name = std::path::Path::new(rel).file_name()?;
                let copy = repo.join("tests/data/rntuple/copies").join(name);
                copy.exists().then_some(copy)
            }
        }
    }
}

/// A temporary data root and catalog folder.
pub struct Sandbox {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub catalog: PathBuf,
    /// The root's URL when a server serves it (`serve_over`).
    pub url: Option<String>,
    /// Environment for the quarry it starts (a remote root's credentials).
    pub env: Vec<(String, String)>,
    /// The form of the repository's test data the root holds as copied, when
    /// nothing was written to it since (`write`): `serve_over` then serves
    /// the shared servers' copy instead of the root.
    pub pristine: std::sync::Mutex<Option<Form>>,
}

impl Sandbox {
    /// An empty root named `data`.
    pub fn new() -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("data");
        std::fs::create_dir(&root).unwrap();
        Sandbox {
            catalog: base.join("catalog"),
            root,
            tmp,
            url: None,
            env: Vec::new(),
            pristine: std::sync::Mutex::new(None),
        }
    }

    /// A root holding a copy of the repository's test data.
    pub fn with_testdata() -> Sandbox {
        let s = Sandbox::new();
        copy_tree(&repo_testdata(), &s.root);
        *s.pristine.lock().unwrap() = Some(Form::TTree);
        s
    }

    /// `with_testdata`, its TTree files replaced by their RNTuple copies (of
    /// the same names, trees and data) in the RNTuple form.
    #[allow(dead_code)]
    pub fn with_testdata_as(form: Form) -> Sandbox {
        let s = Sandbox::with_testdata();
        if form == Form::RNTuple {
            for entry in std::fs::read_dir(repo_testdata().join("root")).unwrap() {
                let name = entry.unwrap().file_name().into_string().unwrap();
                if let Some(copy) = form.source(&format!("testdata/root/{name}")) {
                    std::fs::copy(copy, s.root.join("root").join(&name)).unwrap();
                }
            }
            *s.pristine.lock().unwrap() = Some(form);
        }
        s
    }

    pub fn socket(&self) -> PathBuf {
        self.catalog.join("quarry.sock")
    }

    pub fn root_arg(&self) -> String {
        match &self.url {
            Some(url) => format!("data={url}"),
            None => format!("data={}", self.root.display()),
        }
    }

    pub fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        *self.pristine.lock().unwrap() = None;
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Starts `quarry serve` and waits for its socket.
    pub fn serve(&self) -> Daemon {
        let child = quarry()
            .args(["serve", "--root", &self.root_arg(), "--catalog"])
            .arg(&self.catalog)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let socket = self.socket();
        wait_until(Duration::from_secs(20), || socket.exists());
        Daemon { child }
    }

    /// Starts `quarry mcp` as a child process and connects an MCP client to it.
    pub async fn mcp(&self) -> Client {
        self.mcp_with_pid().await.0
    }

    /// Starts `quarry mcp` with extra command-line arguments (e.g. `--config`).
    pub async fn mcp_with_args(&self, extra: &[&str]) -> Client {
        self.mcp_with_env(extra, &[]).await
    }

    /// Starts `quarry mcp` with extra arguments and environment variables.
    pub async fn mcp_with_env(&self, extra: &[&str], env: &[(&str, &str)]) -> Client {
        let mut cmd = quarry_tokio();
        cmd.args(["mcp", "--root", &self.root_arg(), "--catalog"])
            .arg(&self.catalog)
            .args(extra)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(env.iter().copied());
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        ().serve(transport).await.unwrap()
    }

    /// Like `mcp`, also giving the child's process id.
    pub async fn mcp_with_pid(&self) -> (Client, u32) {
        let mut cmd = quarry_tokio();
        cmd.args(["mcp", "--root", &self.root_arg(), "--catalog"])
            .arg(&self.catalog)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = transport.id().unwrap();
        (().serve(transport).await.unwrap(), pid)
    }

    pub async fn connect(&self) -> Client {
        let stream = tokio::net::UnixStream::connect(self.socket())
            .await
            .unwrap();
        ().serve(stream).await.unwrap()
    }
}

pub struct Daemon {
    pub child: Child,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    /// Stops the daemon with SIGTERM and waits for it.
    pub fn stop(mut self) {
        // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

pub fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Polls `cond` until it holds; panics after `limit`.
pub fn wait_until(limit: Duration, cond: impl FnMut() -> bool) {
    assert!(
        holds_within(limit, cond),
        "condition not met within {limit:?}"
    );
}

/// Polls `cond` until it holds (true) or `limit` has passed (false).
pub fn holds_within(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !cond() {
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

pub fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("arguments must be an object"),
    }
}

/// Calls a tool; returns its structured content and whether it was an error.
pub async fn call(client: &Client, tool: &str, arguments: Value) -> (Value, bool) {
    let result: CallToolResult = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(arguments)))
        .await
        .unwrap();
    // One text item carries the JSON (then only image items, for plots); a
    // success carries it as structuredContent too, an error only as text
    // (clients check structuredContent against the success schema).
    assert!(!result.content.is_empty());
    assert!(result.content[1..].iter().all(|c| c.as_image().is_some()));
    let text = result.content[0]
        .as_text()
        .expect("a text item")
        .text
        .clone();
    let json: Value = serde_json::from_str(&text).unwrap();
    let is_error = result.is_error == Some(true);
    if is_error {
        assert_eq!(result.structured_content, None);
        assert_code_documented(tool, &json);
    } else {
        assert_eq!(result.structured_content.as_ref(), Some(&json));
    }
    (json, is_error)
}

/// A tool error's code is one the tool reference lists for that tool
/// (`src/mcp/tools/error_codes.rs`, shown in docs/reference/tools.md).
fn assert_code_documented(tool: &str, error: &Value) {
    let Some(code) = error["error"].as_str() else {
        return; // not a tool error object
    };
    let listed = quarry::mcp::tools::error_codes::codes_of(tool).unwrap_or_default();
    assert!(
        listed.contains(&code),
        "{tool} answered the error code {code}, which src/mcp/tools/error_codes.rs does not list for it \
(docs/reference/tools.md shows that table): add it there and bless the page: {error}"
    );
}

/// Calls a tool that must succeed; its structured content, checked against
/// the tool's output schema.
pub async fn call_ok(client: &Client, tool: &str, args: Value) -> Value {
    let (v, is_error) = call(client, tool, args.clone()).await;
    assert!(!is_error, "{tool} {args}: {v}");
    assert_valid(&format!("{tool}.output.json"), &v);
    v
}

/// Calls a tool that must fail; its error object.
pub async fn call_err(client: &Client, tool: &str, args: Value) -> Value {
    let (v, is_error) = call(client, tool, args.clone()).await;
    assert!(is_error, "{tool} {args} should fail: {v}");
    v
}

/// Waits until index_status says the catalog is complete.
pub async fn wait_indexed(client: &Client) {
    let start = Instant::now();
    loop {
        let (status, _) = call(client, "index_status", serde_json::json!({})).await;
        if status["data"]["complete"] == Value::Bool(true) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "index never completed: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (up to 10 s) until list_files lists the root-relative path `name`.
pub async fn wait_listed(client: &Client, sandbox: &Sandbox, name: &str) {
    let start = Instant::now();
    loop {
        let all = serde_json::json!({"kind": "all", "limit": 1000});
        let files = listed(client, &sandbox.root, all).await;
        if files.iter().any(|f| f == name) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{name} never appeared: {files:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The root-relative paths list_files returns for a query (limit 1000).
pub async fn listed(client: &Client, root: &Path, arguments: Value) -> Vec<String> {
    let (v, is_error) = call(client, "list_files", arguments).await;
    assert!(!is_error, "{v}");
    let mut out: Vec<String> = v["data"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            Path::new(f["path"].as_str().unwrap())
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    out.sort();
    out
}

/// A tool's JSON Schema from schema/tools.
pub fn schema(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("schema/tools")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Asserts that a tool result validates against its output schema file.
pub fn assert_valid(schema_file: &str, value: &Value) {
    let validator = jsonschema::validator_for(&schema(schema_file)).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{schema_file}: {errors:?}\n{value}");
}

/// The files `quarry status --json --catalog CATALOG` counts as indexed (in the
/// first root, over every kind).
pub fn status_indexed(catalog: &Path) -> usize {
    let out = run_ok(
        quarry()
            .args(["status", "--json", "--catalog"])
            .arg(catalog),
    );
    let status: Value = serde_json::from_str(&out).unwrap();
    status["data"]["roots"][0]["kinds"]
        .as_object()
        .unwrap_or_else(|| panic!("{status}"))
        .values()
        .map(|k| k["indexed"].as_u64().unwrap())
        .sum::<u64>() as usize
}

/// Every record batch of a Parquet file, read with arrow-rs.
pub fn parquet_batches(path: &Path) -> Vec<arrow_array::RecordBatch> {
    let file = std::fs::File::open(path).unwrap();
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}
