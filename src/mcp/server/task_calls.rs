//! Tool calls that become tasks: the work is started detached from the session
//! and registered in the daemon's `Tasks`; the call answers the task at once.

use std::time::Duration;

use rmcp::model::{CustomRequest, CustomResult, ErrorCode, JsonObject, ProgressToken};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer};
use serde::Deserialize;
use serde_json::json;

use super::{QuarryServer, progress_notifier};
use crate::job::Job;
use crate::mcp::tasks::{self, CreatedTask, Generation, Progress, Snapshot, StartError};
use crate::mcp::tools::ToolDef;

/// The params of a 2025-11-25 task-augmented `tools/call`.
#[derive(Deserialize)]
struct TaskCall {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    task: TaskParams,
}

#[derive(Deserialize)]
struct TaskParams {
    /// How long to keep the task, in milliseconds (the server may shorten it).
    #[serde(default)]
    ttl: Option<u64>,
}

impl QuarryServer {
    /// A `tools/call` with a `task` member (MCP 2025-11-25): answers the task.
    pub(super) async fn call_as_task(
        &self,
        request: CustomRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let call: TaskCall = request.params_as().ok().flatten().ok_or_else(|| {
            McpError::invalid_params(
                "a task-augmented tools/call needs \"name\", optional \"arguments\" (an \
                     object) and \"task\" (an object, with an optional \"ttl\" in milliseconds)",
                None,
            )
        })?;
        let def = self.tool(&call.name)?;
        if tasks::support_of(def.name) == tasks::TaskSupport::Forbidden {
            // 2025-11-25: a tool whose taskSupport is forbidden is not found as a task.
            return Err(McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "{} does not run as a task (its execution.taskSupport is \"forbidden\": it \
                     answers at once); call it without \"task\"",
                    def.name
                ),
                None,
            ));
        }
        let generation = tasks::generation(context);
        if generation == Generation::Extension && !tasks::wants_extension_task(context) {
            return Err(McpError::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_tasks()
                    .build(),
            ));
        }
        // 2025-11-25: the request's progressToken stays valid for the task's life.
        let notify = match generation {
            Generation::Legacy => context
                .meta
                .get_progress_token()
                .map(|token| (token, context.peer.clone())),
            Generation::Extension => None,
        };
        let ttl = call.task.ttl.map(Duration::from_millis);
        let task = self.start_task(def, call.arguments.unwrap_or_default(), ttl, notify)?;
        Ok(CustomResult::new(
            CreatedTask::new(generation, &task).into_json(),
        ))
    }

    /// Starts `def` as a task held to the tasks' time limit; its progress is
    /// recorded for `tasks/get` and, given `notify`, sent as notifications too.
    pub(super) fn start_task(
        &self,
        def: &'static ToolDef,
        arguments: JsonObject,
        ttl: Option<Duration>,
        notify: Option<(ProgressToken, Peer<RoleServer>)>,
    ) -> Result<Snapshot, McpError> {
        let limit = self.tasks.settings().timeout;
        let job = Job::new(Some(limit));
        let progress = Progress::new();
        let recorded = progress.clone();
        let send = notify.map(|(token, peer)| progress_notifier(token, peer));
        job.on_progress(move |done, total| {
            recorded.report(done, total);
            if let Some(send) = &send {
                send(done, total);
            }
        });
        let server = self.clone();
        let work_job = job.clone();
        let work = async move { server.run_tool(def, arguments, work_job, limit).await };
        self.tasks
            .start(def.name, ttl, job, progress, work)
            .map_err(|StartError::TooMany(max)| {
                McpError::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!(
                        "quarry is running {max} tasks already (its cap, [server] max_tasks): \
                         wait for one to finish, or cancel one (tasks/cancel), then call again"
                    ),
                    Some(json!({ "reason": "too_many_tasks", "max_tasks": max })),
                )
            })
    }
}
