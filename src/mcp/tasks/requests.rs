//! The `tasks/*` requests of both generations. The codec hands every one of them
//! to the server as a custom request (rmcp would refuse a 2025-11-25 client's,
//! which declares no extension), and they are answered here.

use rmcp::model::{
    ClientCapabilities, CustomRequest, CustomResult, ErrorCode, JsonObject, TaskAckResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde::Deserialize;
use serde_json::{Value, json};

use super::wire::{self, Generation, RELATED_TASK_META};
use super::{Cancel, Outcome, Snapshot, Tasks};

/// Tasks per `tasks/list` page.
const LIST_PAGE: usize = 50;

/// Answers `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` and
/// `tasks/update`; any other method is not found.
pub async fn answer(
    tasks: &Tasks,
    request: CustomRequest,
    context: &RequestContext<RoleServer>,
) -> Result<CustomResult, McpError> {
    let generation = wire::generation(context);
    let method = request.method.as_str();
    let exists = match generation {
        Generation::Legacy => matches!(
            method,
            "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel"
        ),
        Generation::Extension => matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel"),
    };
    if !exists {
        return Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
            None,
        ));
    }
    if generation == Generation::Extension && !wire::wants_extension_task(context) {
        // SEP-2663: the extension's methods need the extension declared.
        return Err(McpError::missing_required_client_capability(
            ClientCapabilities::builder().enable_tasks().build(),
        ));
    }
    let params = request.params.unwrap_or(Value::Null);
    let answer = match method {
        "tasks/get" => get(tasks, task_id(method, &params)?, generation),
        "tasks/result" => result(tasks, task_id(method, &params)?, context).await,
        "tasks/list" => list(tasks, &params),
        "tasks/cancel" => cancel(tasks, task_id(method, &params)?, generation),
        _ => update(tasks, task_id(method, &params)?),
    }?;
    Ok(CustomResult::new(answer))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskIdParams {
    task_id: String,
}

fn task_id(method: &str, params: &Value) -> Result<String, McpError> {
    TaskIdParams::deserialize(params)
        .map(|p| p.task_id)
        .map_err(|_| {
            McpError::invalid_params(
                format!(
                    "{method} needs params.taskId, the id a task-augmented tools/call answered"
                ),
                None,
            )
        })
}

/// The spec's error for an id no task has (any more).
fn not_found(id: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "Failed to retrieve task: Task not found: no task {id} (a finished task's result \
             is kept for its ttl, across restarts; a task still running ends with the quarry \
             that ran it)"
        ),
        Some(json!({ "taskId": id })),
    )
}

fn get(tasks: &Tasks, id: String, generation: Generation) -> Result<Value, McpError> {
    let snapshot = tasks.get(&id).ok_or_else(|| not_found(&id))?;
    Ok(match generation {
        Generation::Legacy => Value::Object(wire::legacy_get(&snapshot)),
        Generation::Extension => serde_json::to_value(wire::extension_get(&snapshot))
            .map_err(|e| McpError::internal_error(e.to_string(), None))?,
    })
}

/// `tasks/result` (2025-11-25): waits for the task to end, then answers what the
/// call itself would have: its result, or the JSON-RPC error it failed with.
async fn result(
    tasks: &Tasks,
    id: String,
    context: &RequestContext<RoleServer>,
) -> Result<Value, McpError> {
    let ended = tokio::select! {
        ended = tasks.wait(&id) => ended,
        () = context.ct.cancelled() => {
            // The client cancelled this request (or left): nobody reads the answer.
            return Err(McpError::invalid_request("tasks/result was cancelled", None));
        }
    };
    let snapshot = ended.ok_or_else(|| not_found(&id))?;
    let mut result = match &snapshot.outcome {
        Outcome::Completed(r) => (**r).clone(),
        Outcome::Cancelled => wire::cancelled_result(&snapshot),
        Outcome::Failed(e) => return Err(failed_error(e)),
        Outcome::Working => unreachable!("wait returns ended tasks"),
    };
    // The result as the call itself answers it: a 2025-11-25 result has no
    // `resultType` (rmcp strips it from a plain call's answer likewise).
    if result.get("resultType") == Some(&json!("complete")) {
        result.remove("resultType");
    }
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(RELATED_TASK_META.into(), json!({ "taskId": id }));
    }
    Ok(Value::Object(result))
}

fn failed_error(error: &JsonObject) -> McpError {
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the task failed")
        .to_string();
    McpError::new(ErrorCode(code as i32), message, error.get("data").cloned())
}

fn list(tasks: &Tasks, params: &Value) -> Result<Value, McpError> {
    let after = match params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.parse::<u64>().map_err(|_| bad_cursor(c))?),
        Some(other) => return Err(bad_cursor(&other.to_string())),
    };
    let (page, next) = tasks.list(after, LIST_PAGE);
    let tasks: Vec<Value> = page
        .iter()
        .map(|s| Value::Object(wire::legacy_task(s)))
        .collect();
    let mut answer = json!({ "tasks": tasks });
    if let Some(next) = next {
        answer["nextCursor"] = next.to_string().into();
    }
    Ok(answer)
}

fn bad_cursor(cursor: &str) -> McpError {
    McpError::invalid_params(
        format!("tasks/list: {cursor} is not a cursor this server gave (use nextCursor as it is)"),
        None,
    )
}

fn cancel(tasks: &Tasks, id: String, generation: Generation) -> Result<Value, McpError> {
    match (generation, tasks.cancel(&id)) {
        (_, Cancel::NotFound) => Err(not_found(&id)),
        (Generation::Legacy, Cancel::Done(s)) => Ok(Value::Object(wire::legacy_task(&s))),
        (Generation::Legacy, Cancel::Ended(s)) => Err(McpError::invalid_params(
            format!(
                "task {id} cannot be cancelled: it has ended ({})",
                wire::status_message(&s)
            ),
            None,
        )),
        // The extension's cancel is an acknowledgement, whatever the task's state.
        (Generation::Extension, _) => ack(),
    }
}

/// `tasks/update` (the extension): quarry never asks a client for input, so
/// there is nothing to update; the spec says to ignore unknown responses.
fn update(tasks: &Tasks, id: String) -> Result<Value, McpError> {
    let _: Snapshot = tasks.get(&id).ok_or_else(|| not_found(&id))?;
    ack()
}

fn ack() -> Result<Value, McpError> {
    serde_json::to_value(TaskAckResult::new())
        .map_err(|e| McpError::internal_error(e.to_string(), None))
}
