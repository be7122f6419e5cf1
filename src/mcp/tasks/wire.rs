//! Tasks on the wire, in each generation's shapes.
//!
//! - 2026-07-28, the Tasks extension: `CreateTaskResult` is the task's fields
//!   with `resultType: "task"`; `tasks/get` answers the task with its result or
//!   error inlined; times as `ttlMs` and `pollIntervalMs`; a tool error result
//!   is a `completed` task.
//! - 2025-11-25: `CreateTaskResult` is `{"task": {...}}`; `tasks/get` answers
//!   the bare task, the result comes from `tasks/result`; times as `ttl` and
//!   `pollInterval`; a tool error result makes the task `failed`. rmcp knows
//!   nothing of this generation, so its capability (`capabilities.tasks`) and the
//!   tools' `execution.taskSupport` are added to rmcp's answers as they are
//!   written (`legacy_initialize_fields`, `legacy_tools_fields`).

use std::time::SystemTime;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject,
    MetaObject, Task, TaskPayload, TaskStatus,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::{Outcome, POLL_INTERVAL_MS, Snapshot, support_of};
use crate::mcp::response::ToolError;

/// Which generation of the protocol a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// MCP 2025-11-25 and earlier (a session opened with `initialize`).
    Legacy,
    /// MCP 2026-07-28: the Tasks extension.
    Extension,
}

/// The request's generation: its own `_meta` protocol version, else its
/// session's (rmcp falls back to the `initialize` handshake).
pub fn generation(context: &RequestContext<RoleServer>) -> Generation {
    match context.protocol_version() {
        Some(v) if !v.has_initialize() => Generation::Extension,
        _ => Generation::Legacy,
    }
}

/// Whether a 2026-07-28 request declares the Tasks extension, so that its
/// `tools/call` may be answered with a task.
pub fn wants_extension_task(context: &RequestContext<RoleServer>) -> bool {
    generation(context) == Generation::Extension
        && context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
}

/// The `_meta` key of a task's last progress report: `{progress, total?}`, the
/// numbers `notifications/progress` would carry.
pub const PROGRESS_META: &str = "quarry/progress";

/// The `_meta` key tying a `tasks/result` answer to its task (2025-11-25).
pub const RELATED_TASK_META: &str = "io.modelcontextprotocol/related-task";

fn timestamp(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn is_error_result(result: &JsonObject) -> bool {
    result.get("isError") == Some(&Value::Bool(true))
}

/// The statusMessage: what the task is doing, or how it ended.
pub fn status_message(s: &Snapshot) -> String {
    let secs = s.ran.as_secs_f64();
    let tool = s.tool;
    let note = s.note.as_ref().map_or(String::new(), |n| format!("; {n}"));
    match &s.outcome {
        Outcome::Working => match s.progress {
            Some((done, Some(total))) if total > 0 => format!(
                "{tool} is running: {done} of {total} done ({:.0}%) in {secs:.1} s{note}",
                100.0 * done as f64 / total as f64
            ),
            Some((done, _)) => format!("{tool} is running: {done} done in {secs:.1} s{note}"),
            None => format!("{tool} is running ({secs:.1} s so far){note}"),
        },
        Outcome::Completed(r) if is_error_result(r) => {
            format!("{tool} answered with an error after {secs:.1} s (the result says which)")
        }
        Outcome::Completed(_) => format!("{tool} finished in {secs:.1} s"),
        Outcome::Failed(e) => format!(
            "{tool} failed: {}",
            e.get("message").and_then(Value::as_str).unwrap_or("?")
        ),
        Outcome::Cancelled => {
            format!("{tool} was cancelled (tasks/cancel) after {secs:.1} s: it has no result")
        }
    }
}

fn progress_meta(s: &Snapshot) -> Option<JsonObject> {
    let (done, total) = s.progress?;
    let mut meta = JsonObject::new();
    let mut progress = json!({ "progress": done });
    if let Some(total) = total {
        progress["total"] = total.into();
    }
    meta.insert(PROGRESS_META.into(), progress);
    Some(meta)
}

// ---- 2026-07-28: the Tasks extension --------------------------------------

fn extension_status(outcome: &Outcome) -> TaskStatus {
    match outcome {
        Outcome::Working => TaskStatus::Working,
        Outcome::Completed(_) => TaskStatus::Completed,
        Outcome::Failed(_) => TaskStatus::Failed,
        Outcome::Cancelled => TaskStatus::Cancelled,
    }
}

fn extension_task(s: &Snapshot) -> Task {
    Task::new(
        s.id.clone(),
        extension_status(&s.outcome),
        timestamp(s.created),
        timestamp(s.updated),
    )
    .with_status_message(status_message(s))
    .with_ttl_ms(s.ttl.as_millis() as u64)
    .with_poll_interval_ms(POLL_INTERVAL_MS)
}

/// `tasks/get` of the extension: the task, its result or error inlined.
pub fn extension_get(s: &Snapshot) -> GetTaskResult {
    let payload = match &s.outcome {
        Outcome::Working => TaskPayload::Working,
        Outcome::Completed(r) => TaskPayload::Completed {
            result: (**r).clone(),
        },
        Outcome::Failed(e) => TaskPayload::Failed {
            error: (**e).clone(),
        },
        Outcome::Cancelled => TaskPayload::Cancelled,
    };
    let mut result = GetTaskResult::new(DetailedTask::new(extension_task(s), payload));
    result.meta = progress_meta(s).map(MetaObject);
    result
}

// ---- 2025-11-25 -------------------------------------------------------------

fn legacy_status(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Working => "working",
        // 2025-11-25: a tool call whose result is an error is a failed task.
        Outcome::Completed(r) if is_error_result(r) => "failed",
        Outcome::Completed(_) => "completed",
        Outcome::Failed(_) => "failed",
        Outcome::Cancelled => "cancelled",
    }
}

/// A 2025-11-25 `Task`.
pub fn legacy_task(s: &Snapshot) -> JsonObject {
    let task = json!({
        "taskId": s.id,
        "status": legacy_status(&s.outcome),
        "statusMessage": status_message(s),
        "createdAt": timestamp(s.created),
        "lastUpdatedAt": timestamp(s.updated),
        "ttl": s.ttl.as_millis() as u64,
        "pollInterval": POLL_INTERVAL_MS,
    });
    let Value::Object(task) = task else {
        unreachable!("a JSON object literal")
    };
    task
}

/// `tasks/get` of 2025-11-25: the task, with its last progress report in `_meta`.
pub fn legacy_get(s: &Snapshot) -> JsonObject {
    let mut task = legacy_task(s);
    if let Some(meta) = progress_meta(s) {
        task.insert("_meta".into(), Value::Object(meta));
    }
    task
}

/// What a cancelled task's `tasks/result` answers: the tool error a cancelled
/// call gives, so a client that reads only results learns why there is none.
pub fn cancelled_result(s: &Snapshot) -> JsonObject {
    let error = ToolError::new(
        "cancelled",
        format!(
            "the task running {} was cancelled (tasks/cancel) before it finished: it has no result",
            s.tool
        ),
        "Call the tool again if the answer is still wanted",
    );
    let result = CallToolResult::error(vec![ContentBlock::text(error.into_json().to_string())]);
    match serde_json::to_value(result) {
        Ok(Value::Object(o)) => o,
        _ => JsonObject::new(),
    }
}

/// The answer to a `tools/call` that made a task.
pub enum CreatedTask {
    Extension(CreateTaskResult),
    Legacy(JsonObject),
}

impl CreatedTask {
    pub fn new(generation: Generation, s: &Snapshot) -> CreatedTask {
        match generation {
            Generation::Extension => {
                CreatedTask::Extension(CreateTaskResult::new(extension_task(s)))
            }
            Generation::Legacy => {
                let mut result = JsonObject::new();
                result.insert("task".into(), Value::Object(legacy_task(s)));
                CreatedTask::Legacy(result)
            }
        }
    }

    pub fn into_json(self) -> Value {
        match self {
            CreatedTask::Extension(r) => serde_json::to_value(r).unwrap_or(Value::Null),
            CreatedTask::Legacy(r) => Value::Object(r),
        }
    }
}

/// Adds the 2025-11-25 `tasks` capability to an `initialize` result: `tools/call`
/// may be a task, and `tasks/list` and `tasks/cancel` are served.
pub fn legacy_initialize_fields(result: &mut Value) {
    if let Some(capabilities) = result
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    {
        capabilities.insert(
            "tasks".into(),
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        );
    }
}

/// Adds each tool's 2025-11-25 `execution.taskSupport` to a `tools/list` result.
pub fn legacy_tools_fields(result: &mut Value) {
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return;
    };
    for tool in tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let support = support_of(name).as_str();
        if let Some(tool) = tool.as_object_mut() {
            tool.insert("execution".into(), json!({ "taskSupport": support }));
        }
    }
}
