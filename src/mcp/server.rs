//! The MCP server: tools/list from the registry (filtered by the enabled toolsets),
//! tools/call run off the async runtime with a time limit, results and errors in
//! the specs' shapes. One `QuarryServer` value serves any number of sessions.

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;

use super::resources::{self, ResourceError};
use super::response::ToolError;
use super::tools::{self, Context, ToolDef, Toolset};
use crate::job::Job;
use crate::panics::panic_message;

const INSTRUCTIONS: &str = "quarry answers questions about the user's data roots (CERN ROOT files, HDF5 files, \
documents, C++/Python source) from a pre-built catalog. Start with list_files(kind='all') to see what is there, \
and index_status() to know whether the catalog is complete. Paths returned by one tool are accepted by the others.";

#[derive(Clone)]
pub struct QuarryServer {
    ctx: Arc<Context>,
    tools: Arc<Vec<(&'static ToolDef, Tool)>>,
}

impl QuarryServer {
    pub fn new(ctx: Context) -> anyhow::Result<QuarryServer> {
        let mut listed = Vec::new();
        for def in enabled(tools::all(), &ctx.settings.toolsets) {
            listed.push((def, describe(def)?));
        }
        Ok(QuarryServer {
            ctx: Arc::new(ctx),
            tools: Arc::new(listed),
        })
    }

    /// Whether the HDF5 toolset (and so `h5://` resources) is on.
    fn serves_resources(&self) -> bool {
        self.ctx.settings.toolsets.contains(&Toolset::Hdf5)
    }

    fn find(&self, name: &str) -> Option<&'static ToolDef> {
        self.tools
            .iter()
            .find(|(d, _)| d.name == name)
            .map(|(d, _)| *d)
    }

    /// Runs a tool and shapes its answer; failures become tool errors. The work
    /// stops (at its next check of `job`) when the call times out, when `job` is
    /// cancelled, or when this future is dropped because the client went away.
    pub async fn run_tool(
        &self,
        def: &'static ToolDef,
        args: JsonObject,
        job: Job,
    ) -> CallToolResult {
        let ctx = self.ctx.clone();
        let limit = ctx.settings.limits.call_timeout;
        let _stop_on_drop = CancelOnDrop(job.clone());
        let work = tokio::task::spawn_blocking({
            let job = job.clone();
            move || {
                let started = Instant::now();
                let result = (def.handler)(&ctx, &job, args);
                (result, started.elapsed().as_secs_f64() * 1000.0)
            }
        });
        let outcome = match tokio::time::timeout(limit, work).await {
            Ok(Ok((Ok(output), ms))) => {
                return CallToolResult::structured(output.into_json(def.name, ms));
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

/// A resource problem as the protocol error MCP prescribes.
fn resource_mcp_error(uri: &str, e: ResourceError) -> McpError {
    match e {
        ResourceError::BadUri(why) => McpError::invalid_params(
            format!("invalid resource URI: {why}"),
            Some(json!({ "uri": uri })),
        ),
        ResourceError::Refused(p) => McpError::invalid_params(
            p.to_string(),
            Some(json!({ "uri": uri, "error": ToolError::from_path(&p).code })),
        ),
        ResourceError::NotFound { why, .. } => McpError::resource_not_found(
            format!("resource not found: {why}"),
            Some(json!({ "uri": uri })),
        ),
        ResourceError::Unreadable(why) => {
            McpError::internal_error(why, Some(json!({ "uri": uri })))
        }
        ResourceError::Internal(why) => McpError::internal_error(why, None),
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
    defs.into_iter().filter(|d| toolsets.contains(&d.toolset))
}

fn parse_schema(name: &str, which: &str, text: &str) -> anyhow::Result<Arc<JsonObject>> {
    match serde_json::from_str(text)? {
        serde_json::Value::Object(map) => Ok(Arc::new(map)),
        _ => anyhow::bail!("the {which} schema of {name} is not a JSON object"),
    }
}

fn describe(def: &ToolDef) -> anyhow::Result<Tool> {
    let input = parse_schema(def.name, "input", def.input_schema)?;
    let output = parse_schema(def.name, "output", def.output_schema)?;
    let annotations = ToolAnnotations::with_title(def.title)
        .read_only(def.read_only)
        .destructive(false);
    Ok(Tool::new(def.name, def.description, input)
        .with_title(def.title)
        .with_raw_output_schema(output)
        .with_annotations(annotations))
}

impl ServerHandler for QuarryServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = if self.serves_resources() {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_list_changed()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
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
        Ok(ListToolsResult::with_all_items(
            self.tools.iter().map(|(_, t)| t.clone()).collect(),
        ))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        if !self.serves_resources() {
            return Ok(ListResourcesResult::default());
        }
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .map_err(|_| McpError::invalid_params(format!("invalid cursor '{c}'"), None))?,
        };
        let files = resources::files(&self.ctx);
        let page: Vec<Resource> = files
            .iter()
            .skip(start)
            .take(resources::PAGE)
            .map(|(abs, name)| {
                Resource::new(resources::uri_of(abs, "/"), name.clone())
                    .with_description(format!("HDF5 file {abs}: its root group"))
                    .with_mime_type("application/json")
            })
            .collect();
        let mut result = ListResourcesResult::with_all_items(page);
        if start + resources::PAGE < files.len() {
            result.next_cursor = Some((start + resources::PAGE).to_string());
        }
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        if !self.serves_resources() {
            return Ok(ListResourceTemplatesResult::default());
        }
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(resources::TEMPLATE, "HDF5 object")
                .with_description(
                    "A group, dataset or link of an HDF5 file: file is its absolute path, path the object's path in it (default /)",
                )
                .with_mime_type("application/json"),
        ]))
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
        let value = read.map_err(|e| resource_mcp_error(&request.uri, e))?;
        let text = value.to_string();
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, request.uri).with_mime_type("application/json"),
        ])
        .into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if !self.serves_resources() {
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
        let Some(def) = self.find(&request.name) else {
            let available: Vec<&str> = self.tools.iter().map(|(d, _)| d.name).collect();
            return Err(McpError::invalid_params(
                format!("unknown tool '{}'", request.name),
                Some(json!({ "available_tools": available })),
            ));
        };
        let job = Job::new(Some(self.ctx.settings.limits.call_timeout));
        // notifications/cancelled for this request cancels rmcp's token.
        let cancelled = context.ct.clone();
        let watch = tokio::spawn({
            let job = job.clone();
            async move {
                cancelled.cancelled().await;
                job.cancel();
            }
        });
        let result = self
            .run_tool(def, request.arguments.unwrap_or_default(), job)
            .await;
        watch.abort();
        Ok(result.into())
    }
}

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
            read_only: true,
            handler: noop,
        }
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
            let tool = describe(d).unwrap();
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
