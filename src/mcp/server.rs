//! The MCP server: tools/list from the registry (filtered by the enabled toolsets),
//! tools/call run off the async runtime with a time limit, results and errors in
//! the specs' shapes. One `QuarryServer` value serves any number of sessions.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, GetPromptRequestParams, GetPromptResponse, Implementation, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;
use tokio::sync::Semaphore;

use super::prompts;
use super::resources;
use super::response::ToolError;
use super::tasks::{self, Tasks};
use super::tools::{self, Context, ToolDef, Toolset};
use crate::job::Job;
use crate::panics::panic_message;

mod task_calls;

const INSTRUCTIONS: &str = "quarry answers questions about the user's data roots (CERN ROOT files, HDF5 files, \
documents, C++/Python source) from a pre-built catalog. Start with list_files(kind='all') to see what is there, \
and index_status() to know whether the catalog is complete. Paths returned by one tool are accepted by the others.";

#[derive(Clone)]
pub struct QuarryServer {
    ctx: Arc<Context>,
    tools: Arc<Vec<(&'static ToolDef, Tool)>>,
    /// Tool calls running at once, over every session: each holds a blocking
    /// thread and its working memory, so a flood of requests waits here.
    calls: Arc<Semaphore>,
    /// Calls running as MCP tasks, shared by every session (`mcp::tasks`).
    tasks: Tasks,
}

/// Tool calls run at once unless configured otherwise.
const DEFAULT_CONCURRENT_CALLS: usize = 8;

impl QuarryServer {
    pub fn new(ctx: Context) -> anyhow::Result<QuarryServer> {
        let mut listed = Vec::new();
        let llm_configured = ctx.rag.as_ref().is_some_and(|r| r.llm().is_some());
        for def in enabled(tools::all(), &ctx.settings.toolsets) {
            listed.push((def, describe(def, llm_configured)?));
        }
        Ok(QuarryServer {
            ctx: Arc::new(ctx),
            tools: Arc::new(listed),
            calls: Arc::new(Semaphore::new(DEFAULT_CONCURRENT_CALLS)),
            tasks: Tasks::default(),
        })
    }

    /// Holds tasks to `settings` (`[server]` in the config).
    pub fn with_tasks(mut self, settings: tasks::TaskSettings) -> QuarryServer {
        self.tasks = Tasks::new(settings);
        self
    }

    /// Runs at most `n` tool calls at once (the others wait their turn).
    pub fn with_concurrent_calls(mut self, n: usize) -> QuarryServer {
        self.calls = Arc::new(Semaphore::new(n.max(1)));
        self
    }

    /// Whether `h5://` or `raptor://` resources are served (their toolset is on).
    fn serves_resources(&self) -> bool {
        resources::served(&self.ctx)
    }

    fn find(&self, name: &str) -> Option<&'static ToolDef> {
        self.tools
            .iter()
            .find(|(d, _)| d.name == name)
            .map(|(d, _)| *d)
    }

    /// The tool called `name`, else the error naming the tools there are.
    fn tool(&self, name: &str) -> Result<&'static ToolDef, McpError> {
        self.find(name).ok_or_else(|| {
            let available: Vec<&str> = self.tools.iter().map(|(d, _)| d.name).collect();
            McpError::invalid_params(
                format!("unknown tool '{name}'"),
                Some(json!({ "available_tools": available })),
            )
        })
    }

    /// Runs a tool and shapes its answer; failures become tool errors. The work
    /// stops (at its next check of `job`) when the call has run `limit`, when
    /// `job` is cancelled, or when this future is dropped because the client
    /// went away.
    pub async fn run_tool(
        &self,
        def: &'static ToolDef,
        args: JsonObject,
        job: Job,
        limit: Duration,
    ) -> CallToolResult {
        let ctx = self.ctx.clone();
        let _stop_on_drop = CancelOnDrop(job.clone());
        let calls = self.calls.clone();
        let work = async move {
            // Waiting for a turn counts against the call's time limit.
            let turn = calls.acquire_owned().await.expect("never closed");
            tokio::task::spawn_blocking(move || {
                // The turn is the blocking work's, not the caller's: a call that
                // times out answers at once, but its slot is freed only when the
                // work has actually stopped, so timeouts never let more than the
                // cap run at once.
                let _turn = turn;
                let started = Instant::now();
                // A call cancelled while it waited for its turn does no work.
                if job.is_stopped() {
                    return (Err(ToolError::stopped(&job)), 0.0);
                }
                let result = tools::invoke(def, &ctx, &job, args);
                (result, started.elapsed().as_secs_f64() * 1000.0)
            })
            .await
        };
        let outcome = match tokio::time::timeout(limit, work).await {
            Ok(Ok((Ok(mut output), ms))) => {
                let images = std::mem::take(&mut output.images);
                let mut result = CallToolResult::structured(output.into_json(def.name, ms));
                // The text item is the result's JSON: its length is what counts.
                let len = result.content[0].as_text().map_or(0, |t| t.text.len());
                let cap = self.ctx.settings.limits.max_result_bytes;
                if let Some(e) = over_budget(def.name, len, cap) {
                    return CallToolResult::error(vec![ContentBlock::text(
                        e.into_json().to_string(),
                    )]);
                }
                for png in images {
                    use base64::Engine;
                    let data = base64::engine::general_purpose::STANDARD.encode(png);
                    result.content.push(ContentBlock::image(data, "image/png"));
                }
                return result;
            }
            Ok(Ok((Err(e), _))) => e,
            Ok(Err(join)) if join.is_panic() => {
                let why = panic_message(join.into_panic().as_ref());
                tracing::error!("tool {} panicked: {why}", def.name);
                ToolError::internal(format!("{} failed unexpectedly: {why}", def.name))
            }
            Ok(Err(join)) => ToolError::internal(join),
            Err(_) => ToolError::new(
                "timeout",
                format!("{} took longer than {} s", def.name, limit.as_secs()),
                "Reduce the scope: a tighter pattern, selection or smaller limit",
            ),
        };
        // The error object goes in the text item only: clients check
        // structuredContent against the tool's output schema (which describes
        // success), some even when isError is set.
        CallToolResult::error(vec![ContentBlock::text(outcome.into_json().to_string())])
    }
}

/// The last guard of the result budget: every tool cuts its own answer to fit
/// `max_result_bytes` (`mcp::budget`), so a result still over it is a bug in
/// that tool. The client would refuse it whole; an error says what happened.
fn over_budget(tool: &str, len: usize, cap: usize) -> Option<ToolError> {
    (len > cap).then(|| {
        tracing::error!("{tool} answered {len} bytes, over max_result_bytes ({cap})");
        ToolError::new(
            "result_too_large",
            format!("{tool}'s answer took {len} bytes, over the {cap} allowed (max_result_bytes)"),
            "Ask for less (a smaller limit, a narrower pattern or range) and report this as a bug",
        )
    })
}

/// Sends the job's progress reports to the client as `notifications/progress`
/// for `token` (the request's `_meta.progressToken`).
fn report_progress(job: &Job, token: ProgressToken, peer: Peer<RoleServer>) {
    job.on_progress(progress_notifier(token, peer));
}

/// What sends one progress report as `notifications/progress` for `token`.
/// Reports come from the blocking thread doing the work, so each is handed to
/// the runtime to send.
pub(super) fn progress_notifier(
    token: ProgressToken,
    peer: Peer<RoleServer>,
) -> impl Fn(u64, Option<u64>) + Send + Sync + 'static {
    let runtime = tokio::runtime::Handle::current();
    move |done, total| {
        let mut param = ProgressNotificationParam::new(token.clone(), done as f64);
        if let Some(total) = total {
            param = param.with_total(total as f64);
        }
        let peer = peer.clone();
        runtime.spawn(async move {
            if let Err(e) = peer.notify_progress(param).await {
                tracing::debug!("progress notification not sent: {e}");
            }
        });
    }
}

/// Cancels a job when dropped: a call whose future is dropped (its client hung
/// up, or it timed out) stops its blocking work too.
struct CancelOnDrop(Job);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// The tools whose toolset is switched on.
fn enabled<'a>(
    defs: impl IntoIterator<Item = &'a ToolDef>,
    toolsets: &[Toolset],
) -> impl Iterator<Item = &'a ToolDef> {
    defs.into_iter().filter(|d| d.toolset.is_on(toolsets))
}

fn parse_schema(name: &str, which: &str, text: &str) -> anyhow::Result<Arc<JsonObject>> {
    match serde_json::from_str(text)? {
        serde_json::Value::Object(map) => Ok(Arc::new(map)),
        _ => anyhow::bail!("the {which} schema of {name} is not a JSON object"),
    }
}

/// The tool as `tools/list` shows it, with all four of MCP's hints stated (their
/// defaults assume the worst: writing, destructive, open world).
fn describe(def: &ToolDef, llm_configured: bool) -> anyhow::Result<Tool> {
    let input = parse_schema(def.name, "input", def.input_schema)?;
    let output = parse_schema(def.name, "output", def.output_schema)?;
    let effects = def.effects;
    let annotations = ToolAnnotations::with_title(def.title)
        .read_only(effects.read_only)
        .destructive(effects.destructive)
        .idempotent(effects.idempotent)
        .open_world(effects.open_world(llm_configured));
    Ok(Tool::new(def.name, def.description, input)
        .with_title(def.title)
        .with_raw_output_schema(output)
        .with_annotations(annotations))
}

/// How long clients may treat `tools/list` as fresh (MCP 2026-07-28 `ttlMs`): a
/// day. The tools are fixed for a server's life; a new version means a restart.
pub const TOOLS_TTL_MS: u64 = 24 * 60 * 60 * 1000;

impl ServerHandler for QuarryServer {
    fn get_info(&self) -> ServerConfig {
        // The Tasks extension (2026-07-28); 2025-11-25 clients are told of
        // tasks as the initialize result is written (`connection`).
        let capabilities = if self.serves_resources() {
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_tools()
                .enable_tasks()
                .build()
        } else {
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_tools()
                .enable_tasks()
                .build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("quarry", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // The list never changes while a server runs: clients may keep it a day.
        Ok(
            ListToolsResult::with_all_items(self.tools.iter().map(|(_, t)| t.clone()).collect())
                .with_ttl_ms(TOOLS_TTL_MS),
        )
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(prompts::list(
            &self.ctx.settings.toolsets,
        )))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        prompts::get(
            &request.name,
            request.arguments.as_ref(),
            &self.ctx.settings.toolsets,
        )
        .map(Into::into)
        .map_err(|e| McpError::invalid_params(e.to_string(), None))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let cursor = request.and_then(|r| r.cursor);
        resources::list_page(&self.ctx, cursor.as_deref())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(resources::templates(&self.ctx))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let ctx = self.ctx.clone();
        let uri = request.uri.clone();
        // The catalog read is quick but blocking (redb): off the async threads.
        let read = tokio::task::spawn_blocking(move || resources::read(&ctx, &uri))
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let contents = read.map_err(|e| resources::mcp_error(&request.uri, e))?;
        Ok(ReadResourceResult::new(vec![contents.into_resource(request.uri)]).into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if !self.ctx.settings.toolsets.contains(&Toolset::Hdf5) {
            return;
        }
        // Tells this client whenever HDF5 files come or go; ends with the session.
        let mut changes = self.ctx.catalog.activity().subscribe_hdf5();
        let peer = context.peer.clone();
        tokio::spawn(async move {
            changes.mark_unchanged();
            while changes.changed().await.is_ok() {
                if peer.notify_resource_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools
            .iter()
            .find(|(d, _)| d.name == name)
            .map(|(_, t)| t.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let def = self.tool(&request.name)?;
        // A 2026-07-28 client that declares the Tasks extension gets a task for
        // a tool that can take long: quarry decides, as the extension has it.
        if tasks::wants_extension_task(&context)
            && tasks::support_of(def.name) == tasks::TaskSupport::Optional
        {
            let arguments = request.arguments.unwrap_or_default();
            let task = self.start_task(def, arguments, None, None)?;
            return Ok(
                match tasks::CreatedTask::new(tasks::Generation::Extension, &task) {
                    tasks::CreatedTask::Extension(created) => CallToolResponse::Task(created),
                    tasks::CreatedTask::Legacy(_) => unreachable!("an extension task"),
                },
            );
        }
        let limit = self.ctx.settings.limits.call_timeout;
        let job = Job::new(Some(limit));
        if let Some(token) = context.meta.get_progress_token() {
            report_progress(&job, token, context.peer.clone());
        }
        // notifications/cancelled for this request cancels rmcp's token; the
        // call then goes on until its work has noticed (no task of its own to
        // watch the token: one per call cost a spawn and a wake-up).
        let run = self.run_tool(
            def,
            request.arguments.unwrap_or_default(),
            job.clone(),
            limit,
        );
        tokio::pin!(run);
        let result = tokio::select! {
            result = &mut run => result,
            () = context.ct.cancelled() => {
                job.cancel();
                run.await
            }
        };
        Ok(result.into())
    }

    /// The requests rmcp does not know: `tasks/*` (the codec routes them all
    /// here) and a 2025-11-25 `tools/call` that asks for a task.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        if request.method == CALL_TOOL {
            return self.call_as_task(request, &context).await;
        }
        tasks::answer(&self.tasks, request, &context).await
    }
}

const CALL_TOOL: &str = "tools/call";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::response::ToolOutput;

    fn noop(_: &Context, _: &Job, _: JsonObject) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::default())
    }

    fn def(name: &'static str, toolset: Toolset) -> ToolDef {
        ToolDef {
            name,
            title: name,
            toolset,
            description: "",
            input_schema: "{}",
            output_schema: "{}",
            effects: tools::Effects::READS,
            handler: noop,
        }
    }

    use std::sync::atomic::{AtomicUsize, Ordering};

    static STARTED: AtomicUsize = AtomicUsize::new(0);
    static RUNNING: AtomicUsize = AtomicUsize::new(0);
    static PEAK: AtomicUsize = AtomicUsize::new(0);

    /// Blocking work that does not look at its job for 600 ms, as a handler
    /// between two checks does: it outlives the calls' 100 ms time limit.
    fn stubborn(_: &Context, _: &Job, _: JsonObject) -> Result<ToolOutput, ToolError> {
        STARTED.fetch_add(1, Ordering::SeqCst);
        let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
        PEAK.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(600));
        RUNNING.fetch_sub(1, Ordering::SeqCst);
        Ok(ToolOutput::default())
    }

    static STUBBORN: ToolDef = ToolDef {
        name: "stubborn",
        title: "stubborn",
        toolset: Toolset::Core,
        description: "",
        input_schema: "{}",
        output_schema: "{}",
        effects: tools::Effects::READS,
        handler: stubborn,
    };

    /// With two calls allowed at once, waves of two calls that each time out
    /// after 100 ms while their work runs 600 ms: every call answers `timeout`
    /// promptly, and no more than two pieces of work ever run at once (freeing a
    /// slot at the timeout let each wave start beside the last: four, then six).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn timed_out_calls_keep_their_slot_until_their_work_ends() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let roots = crate::roots::Roots::new(vec![("r".into(), root)]).unwrap();
        let catalog = crate::catalog::Catalog::open(&dir.path().join("catalog"), &roots).unwrap();
        let mut settings = tools::ServerSettings::default();
        settings.limits.call_timeout = Duration::from_millis(100);
        let server = QuarryServer::new(Context::new(Arc::new(catalog), settings))
            .unwrap()
            .with_concurrent_calls(2);
        for _wave in 0..3 {
            let calls: Vec<_> = (0..2)
                .map(|_| {
                    let server = server.clone();
                    tokio::spawn(async move {
                        let started = Instant::now();
                        let result = server
                            .run_tool(
                                &STUBBORN,
                                JsonObject::new(),
                                Job::new(None),
                                Duration::from_millis(100),
                            )
                            .await;
                        (result, started.elapsed())
                    })
                })
                .collect();
            for call in calls {
                let (result, took) = call.await.unwrap();
                assert_eq!(result.is_error, Some(true));
                let text = serde_json::to_string(&result.content).unwrap();
                assert!(text.contains("timeout"), "{text}");
                assert!(took < Duration::from_millis(400), "answered after {took:?}");
            }
        }
        let waited = Instant::now();
        while RUNNING.load(Ordering::SeqCst) > 0 {
            assert!(waited.elapsed() < Duration::from_secs(5));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            PEAK.load(Ordering::SeqCst),
            2,
            "more work ran at once than allowed"
        );
        // The later waves timed out waiting for a turn and never started.
        assert_eq!(STARTED.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn switched_off_toolsets_are_not_served() {
        let defs = [
            def("status", Toolset::Core),
            def("inspect", Toolset::Root),
            def("slice", Toolset::Hdf5),
            def("search", Toolset::Docs),
        ];
        let names = |sets: &[Toolset]| enabled(&defs, sets).map(|d| d.name).collect::<Vec<_>>();
        assert_eq!(
            names(&[Toolset::Core, Toolset::Docs]),
            vec!["status", "search"]
        );
        assert_eq!(names(&[Toolset::Core]), vec!["status"]);
        assert_eq!(
            names(&[Toolset::Core, Toolset::Root, Toolset::Hdf5]),
            vec!["status", "inspect", "slice"]
        );
    }

    #[test]
    fn every_registered_tool_has_valid_schemas() {
        for d in tools::all() {
            let tool = describe(d, false).unwrap();
            assert_eq!(
                tool.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                d.name
            );
            let output = tool.output_schema.unwrap();
            assert_eq!(output.get("type"), Some(&json!("object")), "{}", d.name);
        }
    }
}
