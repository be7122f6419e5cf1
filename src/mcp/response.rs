//! The result and error shapes of the tool specs: results as
//! `{data, metadata: {operation, execution_time_ms, ...}, suggestions}`, errors as
//! `{error, message, details?, suggestion, retry_with?}`.

use serde_json::{Map, Value, json};

use crate::roots::PathError;

/// What a tool produces before the front end adds timing and wraps it.
#[derive(Debug, Clone, Default)]
pub struct ToolOutput {
    pub data: Value,
    /// Extra metadata fields (`truncated`, `entries_scanned`, ...).
    pub metadata: Map<String, Value>,
    pub suggestions: Vec<String>,
    /// PNG pictures, sent as image items after the JSON text item.
    pub images: Vec<Vec<u8>>,
}

impl ToolOutput {
    pub fn new(data: Value) -> ToolOutput {
        ToolOutput {
            data,
            ..ToolOutput::default()
        }
    }

    pub fn meta(mut self, key: &str, value: impl Into<Value>) -> ToolOutput {
        self.metadata.insert(key.to_string(), value.into());
        self
    }

    pub fn suggest(mut self, suggestion: impl Into<String>) -> ToolOutput {
        self.suggestions.push(suggestion.into());
        self
    }

    /// The JSON the client receives.
    pub fn into_json(self, operation: &str, execution_time_ms: f64) -> Value {
        let mut metadata = Map::new();
        metadata.insert("operation".into(), operation.into());
        metadata.insert("execution_time_ms".into(), json!(round3(execution_time_ms)));
        metadata.extend(self.metadata);
        json!({ "data": self.data, "metadata": metadata, "suggestions": self.suggestions })
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A tool failure the model can act on.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub code: String,
    pub message: String,
    // Boxed: errors travel in `Result`s, which stay small this way.
    pub details: Option<Box<Value>>,
    pub suggestion: String,
    pub retry_with: Option<Box<Value>>,
}

impl ToolError {
    pub fn new(code: &str, message: impl Into<String>, suggestion: impl Into<String>) -> ToolError {
        ToolError {
            code: code.to_string(),
            message: message.into(),
            details: None,
            suggestion: suggestion.into(),
            retry_with: None,
        }
    }

    pub fn details(mut self, details: Value) -> ToolError {
        self.details = Some(Box::new(details));
        self
    }

    pub fn retry_with(mut self, retry: Value) -> ToolError {
        self.retry_with = Some(Box::new(retry));
        self
    }

    pub fn into_json(self) -> Value {
        let mut v =
            json!({ "error": self.code, "message": self.message, "suggestion": self.suggestion });
        if let Some(d) = self.details {
            v["details"] = *d;
        }
        if let Some(r) = self.retry_with {
            v["retry_with"] = *r;
        }
        v
    }

    /// Arguments that do not fit the tool's input schema.
    pub fn invalid_arguments(tool: &str, why: impl std::fmt::Display) -> ToolError {
        ToolError::new(
            "invalid_arguments",
            format!("invalid arguments for {tool}: {why}"),
            format!(
                "Check the argument names and types against {tool}'s input schema (tools/list)"
            ),
        )
    }

    /// The work stopped because its job did: the client cancelled or left (the
    /// answer is then never read), or the call's time ran out.
    pub fn stopped(job: &crate::job::Job) -> ToolError {
        match job.stopped() {
            Some(crate::job::Stop::TimedOut) => ToolError::new(
                "timeout",
                format!(
                    "the call took longer than allowed ({:.0} s)",
                    job.elapsed().as_secs_f64()
                ),
                "Reduce the scope: a tighter pattern, selection or smaller limit",
            ),
            _ => ToolError::new(
                "cancelled",
                "the call was cancelled",
                "Call the tool again if the answer is still wanted",
            ),
        }
    }

    pub fn internal(why: impl std::fmt::Display) -> ToolError {
        ToolError::new(
            "internal_error",
            format!("quarry failed to answer: {why}"),
            "Retry once; if it fails again, run `quarry status` and report the error",
        )
    }

    /// A path refused or not found, in the ROOT tool family's codes.
    pub fn from_path(e: &PathError) -> ToolError {
        match e {
            PathError::NotFound(_) => ToolError::new(
                "file_not_found",
                e.to_string(),
                "Check the path; list_files() shows the files quarry knows",
            ),
            PathError::Unreadable { .. } => ToolError::new(
                "permission_denied",
                e.to_string(),
                "Retry in a moment; if it persists, index_status() shows whether the file failed to index",
            ),
            PathError::Unreachable { .. } => ToolError::new(
                "io_error",
                e.to_string(),
                "Retry in a moment; index_status() shows the remote root's last error",
            ),
            PathError::UnknownResource { available, .. } => ToolError::new(
                "resource_not_found",
                e.to_string(),
                "Use one of the available resources",
            )
            .details(json!({ "available_resources": available })),
            PathError::Ambiguous { available, .. } => ToolError::new(
                "resource_not_found",
                e.to_string(),
                "Prefix the path with a root name (NAME/...) or pass `resource`",
            )
            .details(json!({ "available_resources": available })),
            PathError::NulByte
            | PathError::TooLong(_)
            | PathError::Traversal
            | PathError::OutsideRoots(_)
            | PathError::SymlinkEscape(_) => ToolError::new(
                "permission_denied",
                e.to_string(),
                "Use a path inside a configured root, as list_files() returns it",
            ),
        }
    }
}

/// ISO 8601 UTC time (second precision) for a time in nanoseconds since the epoch.
pub fn iso8601_ns(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let nanos = ns.rem_euclid(1_000_000_000) as u32;
    chrono::DateTime::from_timestamp(secs, nanos)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub fn iso8601_ms(ms: i64) -> String {
    iso8601_ns(ms.saturating_mul(1_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_iso8601() {
        // 2024-03-15T14:30:00Z is 1710513000 s after the epoch (computed by hand:
        // 19797 days * 86400 + 14.5 h).
        assert_eq!(
            iso8601_ns(1_710_513_000_000_000_000),
            "2024-03-15T14:30:00Z"
        );
        assert_eq!(iso8601_ms(0), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn envelopes_and_errors_have_the_spec_shape() {
        let out = ToolOutput::new(json!({"x": 1}))
            .meta("truncated", true)
            .suggest("next");
        let v = out.into_json("list_files", 0.12345);
        assert_eq!(v["metadata"]["operation"], "list_files");
        assert_eq!(v["metadata"]["execution_time_ms"], 0.123);
        assert_eq!(v["metadata"]["truncated"], true);
        assert_eq!(v["suggestions"][0], "next");
        let e = ToolError::new("limit_exceeded", "too many", "reduce")
            .retry_with(json!({"limit": 1000}));
        let v = e.into_json();
        assert_eq!(v["error"], "limit_exceeded");
        assert_eq!(v["retry_with"]["limit"], 1000);
        assert!(v.get("details").is_none());
    }
}
