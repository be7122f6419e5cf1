//! create_chat_session, and the session errors answer_question shares.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{dataset, engine};
use crate::job::Job;
use crate::mcp::response::{ToolError, ToolOutput};
use crate::mcp::tools::{Context, parse_args};
use crate::rag::sessions::SessionError;

/// Longest title kept, in characters.
const MAX_TITLE_CHARS: usize = 200;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionArgs {
    dataset_id: String,
    #[serde(default)]
    title: Option<String>,
}

pub fn create_chat_session(
    ctx: &Context,
    job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: SessionArgs = parse_args("create_chat_session", args)?;
    let title = args.title.unwrap_or_else(|| "New Chat Session".to_string());
    if title.chars().count() > MAX_TITLE_CHARS || title.chars().any(char::is_control) {
        return Err(ToolError::new(
            "invalid_arguments",
            format!(
                "the title is longer than {MAX_TITLE_CHARS} characters or holds control characters"
            ),
            "Give a short one-line title (or none: 'New Chat Session')",
        ));
    }
    let ds = dataset(ctx, &args.dataset_id, job)?;
    let session = engine(ctx)?
        .sessions()
        .create(&ds.name, &title)
        .map_err(session_error)?;
    Ok(ToolOutput::new(json!({
        "session_id": session.session_id,
        "dataset_id": session.dataset_id,
        "title": session.title,
        "created_at": session.created_at,
        "message": format!(
            "Successfully created chat session {} for dataset {} with title '{}'",
            session.session_id, session.dataset_id, session.title
        ),
    }))
    .suggest(format!(
        "Pass session_id '{}' to answer_question to record the questions asked in this session",
        session.session_id
    )))
}

/// A session store failure as the tool error the model can act on.
pub(super) fn session_error(e: SessionError) -> ToolError {
    match e {
        SessionError::NotFound(id) => ToolError::new(
            "session_not_found",
            format!("no chat session with id '{id}'"),
            "Call create_chat_session for a session id, or leave session_id out",
        ),
        SessionError::Unavailable => ToolError::new(
            "sessions_unavailable",
            e.to_string(),
            "Leave session_id out; answer_question works without a session",
        ),
        SessionError::Io(_) => ToolError::new(
            "write_failed",
            e.to_string(),
            "Check that the catalog folder is writable and has space",
        ),
    }
}
