//! quarry's own framing of newline-delimited JSON-RPC, in front of rmcp.
//!
//! Every byte a client sends passes through here first. Lines are read with a
//! size cap; each is checked as JSON-RPC 2.0 and either handed on as a typed
//! message, or answered here with the error the JSON-RPC spec asks for (a parse
//! error with `"id": null`, an invalid request with the request's id when it can
//! be read, invalid params for a known method whose params do not fit). rmcp's
//! own codec would drop such lines silently and leave the client waiting.
//!
//! The functions here are pure over bytes (the fuzz target drives `classify`),
//! apart from `LineReader`, which only frames. A well-formed message is checked
//! in one pass over its text that builds nothing (`shape`) and then parsed once
//! into rmcp's type; anything else is parsed into a `Value` and judged there.
//!
//! Requests about tasks (`tasks/*`, and a `tools/call` with a 2025-11-25 `task`
//! member, which rmcp's type would drop) are handed on as custom requests with
//! their params whole: quarry serves both generations of tasks itself
//! (`mcp::tasks`).

mod shape;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ConstString as _, CustomRequest, JsonRpcMessage,
    JsonRpcRequest,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// JSON-RPC's error codes.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;

/// The default cap on one message (one line), in bytes.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 << 20;

/// One unit read off the wire.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A line without its terminator (a last line may have none).
    Line(Vec<u8>),
    /// A line longer than the cap, skipped up to its end; its length so far.
    TooLong(usize),
    /// The input has ended.
    End,
}

/// Reads lines of at most `max` bytes. A longer line is skipped to its newline
/// without being kept, so a client cannot make the server buffer more than the
/// cap; a last line that ends at EOF without a newline is still a line.
pub struct LineReader<R> {
    input: R,
    max: usize,
    line: Vec<u8>,
    ended: bool,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(input: R, max: usize) -> LineReader<R> {
        LineReader {
            input,
            max: max.max(1),
            line: Vec::new(),
            ended: false,
        }
    }

    pub async fn next_frame(&mut self) -> std::io::Result<Frame> {
        let mut skipped = 0usize;
        loop {
            if self.ended {
                return Ok(Frame::End);
            }
            let available = self.input.fill_buf().await?;
            if available.is_empty() {
                self.ended = true;
                if skipped > 0 {
                    return Ok(Frame::TooLong(skipped));
                }
                if self.line.is_empty() {
                    return Ok(Frame::End);
                }
                return Ok(Frame::Line(std::mem::take(&mut self.line)));
            }
            let newline = memchr::memchr(b'\n', available);
            let chunk = &available[..newline.unwrap_or(available.len())];
            if skipped > 0 || self.line.len() + chunk.len() > self.max {
                skipped += self.line.len() + chunk.len();
                self.line.clear();
            } else {
                self.line.extend_from_slice(chunk);
            }
            let used = chunk.len() + usize::from(newline.is_some());
            self.input.consume(used);
            if newline.is_some() {
                if skipped > 0 {
                    return Ok(Frame::TooLong(skipped));
                }
                return Ok(Frame::Line(std::mem::take(&mut self.line)));
            }
        }
    }
}

/// What to do with one line.
#[derive(Debug)]
pub enum Inbound {
    /// A well-formed message for the MCP service.
    Message(Box<ClientJsonRpcMessage>),
    /// An error answer to send back at once (a JSON-RPC error object).
    Reply(Value),
    /// Nothing to hand on or answer: a blank line, or a malformed notification or
    /// response (JSON-RPC answers neither).
    Ignore,
}

/// The JSON-RPC error response for `id` (`Value::Null` when unknown).
pub fn error_reply(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// The answer to a line over the size cap.
pub fn too_long_reply(len: usize, max: usize) -> Value {
    error_reply(
        Value::Null,
        PARSE_ERROR,
        format!("Parse error: the message is over {max} bytes (at least {len}); it was skipped"),
    )
}

/// Sorts one line (without its newline) into a message, an error answer, or nothing.
pub fn classify(line: &[u8]) -> Inbound {
    let text = match text_of(line) {
        Ok(text) => text,
        Err(answer) => return answer,
    };
    if let Some(message) = well_formed(text) {
        return Inbound::Message(Box::new(message));
    }
    classify_parsed(text)
}

/// A line's text without its `\r`; blank lines and invalid UTF-8 are decided here.
fn text_of(line: &[u8]) -> Result<&str, Inbound> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err(Inbound::Ignore);
    }
    std::str::from_utf8(line).map_err(|e| {
        Inbound::Reply(error_reply(
            Value::Null,
            PARSE_ERROR,
            format!("Parse error: the message is not valid UTF-8 ({e})"),
        ))
    })
}

/// The typed message of a line that passes every check below, from one parse
/// of its text; `None` leaves the line to `classify_parsed`, which decides.
fn well_formed(text: &str) -> Option<ClientJsonRpcMessage> {
    let shape = shape::of(text)?;
    let method = shape.checked_method()?;
    if shape.id.is_some() && is_task_request(method, shape.asks_for_task()) {
        let request: JsonRpcRequest<CustomRequest> = serde_json::from_str(text).ok()?;
        return Some(as_custom(request));
    }
    let message: ClientJsonRpcMessage = serde_json::from_str(text).ok()?;
    if let ClientJsonRpcMessage::Request(r) = &message
        && matches!(r.request, ClientRequest::CustomRequest(_))
        && is_known_method(method)
    {
        return None;
    }
    Some(message)
}

/// The checks on a line parsed into a `Value`: every error answer comes from here.
fn classify_parsed(text: &str) -> Inbound {
    // serde_json refuses lone surrogate escapes ("\ud800") too: they name no
    // character, so the text cannot be represented.
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Inbound::Reply(error_reply(
                Value::Null,
                PARSE_ERROR,
                format!("Parse error: {e}"),
            ));
        }
    };
    classify_value(value)
}

fn invalid_request(id: Value, why: &str) -> Inbound {
    Inbound::Reply(error_reply(
        id,
        INVALID_REQUEST,
        format!("Invalid Request: {why}"),
    ))
}

/// The id to echo in an error: the request's own when it is a valid id.
fn readable_id(msg: &serde_json::Map<String, Value>) -> Value {
    match msg.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

fn classify_value(value: Value) -> Inbound {
    let Value::Object(msg) = value else {
        let why = if value.is_array() {
            "batches are not supported (MCP sends one message per line)"
        } else {
            "a message must be a JSON object"
        };
        return invalid_request(Value::Null, why);
    };
    let id = readable_id(&msg);
    if msg.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid_request(id, "\"jsonrpc\" must be \"2.0\"");
    }
    let has_id = msg.contains_key("id");
    let is_response = msg.contains_key("result") || msg.contains_key("error");
    match msg.get("id") {
        None | Some(Value::String(_)) => {}
        Some(Value::Number(n)) if n.is_i64() => {}
        // JSON-RPC never answers a response, even a malformed one.
        Some(_) if is_response && !msg.contains_key("method") => return Inbound::Ignore,
        Some(_) => {
            return invalid_request(id, "\"id\" must be a string or an integer (and not null)");
        }
    }
    let method = match msg.get("method") {
        None => None,
        Some(Value::String(m)) => Some(m.clone()),
        Some(_) => return invalid_request(id, "\"method\" must be a string"),
    };
    match (&method, has_id, is_response) {
        (Some(_), _, true) => {
            return invalid_request(id, "a message is a request or a response, not both");
        }
        (None, false, _) => {
            return invalid_request(id, "a request needs a \"method\"");
        }
        (None, true, false) => {
            return invalid_request(id, "a request needs a \"method\"");
        }
        _ => {}
    }
    if let Some(params) = msg.get("params")
        && !(params.is_object() || params.is_array())
    {
        return match (&method, has_id) {
            (Some(_), true) => invalid_request(id, "\"params\" must be an object or an array"),
            _ => Inbound::Ignore,
        };
    }
    let is_request = method.is_some() && has_id;
    if is_request
        && let Some(why) = method
            .as_deref()
            .and_then(|m| bad_params(m, msg.get("params")))
    {
        return Inbound::Reply(error_reply(
            id,
            INVALID_PARAMS,
            format!("Invalid params: {why}"),
        ));
    }
    if is_request
        && let Some(m) = &method
        && is_task_request(
            m,
            msg.get("params").is_some_and(|p| p.get("task").is_some()),
        )
    {
        return match serde_json::from_value::<JsonRpcRequest<CustomRequest>>(Value::Object(msg)) {
            Ok(request) => Inbound::Message(Box::new(as_custom(request))),
            Err(e) => Inbound::Reply(error_reply(
                id,
                INVALID_PARAMS,
                format!("Invalid params for {m}: {e}"),
            )),
        };
    }
    let typed = serde_json::from_value::<ClientJsonRpcMessage>(Value::Object(msg));
    match (typed, method) {
        (Ok(ClientJsonRpcMessage::Request(r)), Some(m))
            if matches!(r.request, ClientRequest::CustomRequest(_)) && is_known_method(&m) =>
        {
            // rmcp falls back to a custom request when a known method's params do
            // not fit its type; that is the client's invalid params, not an
            // unknown method.
            Inbound::Reply(error_reply(
                id,
                INVALID_PARAMS,
                format!("Invalid params: the params do not fit {m}"),
            ))
        }
        (Ok(message), _) => Inbound::Message(Box::new(message)),
        (Err(e), Some(m)) if is_request => Inbound::Reply(error_reply(
            id,
            INVALID_PARAMS,
            format!("Invalid params for {m}: {e}"),
        )),
        (Err(_), _) => Inbound::Ignore,
    }
}

/// The precise complaint for the params of methods whose shape quarry checks
/// itself, so that the client learns which member is wrong.
fn bad_params(method: &str, params: Option<&Value>) -> Option<String> {
    if method != rmcp::model::CallToolRequestMethod::VALUE {
        return None;
    }
    let Some(Value::Object(params)) = params else {
        return Some("tools/call needs params, an object with \"name\"".into());
    };
    match params.get("name") {
        Some(Value::String(_)) => {}
        Some(_) => return Some("tools/call's \"name\" must be a string".into()),
        None => return Some("tools/call needs \"name\", the tool to call".into()),
    }
    match params.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(_) => return Some("tools/call's \"arguments\" must be an object".into()),
    }
    match params.get("task") {
        None | Some(Value::Object(_)) => None,
        Some(_) => Some(
            "tools/call's \"task\" must be an object (with an optional \"ttl\" in milliseconds)"
                .into(),
        ),
    }
}

/// Requests quarry answers itself, whatever rmcp makes of them: every `tasks/*`
/// method, and a `tools/call` that asks to run as a task.
fn is_task_request(method: &str, asks_for_task: bool) -> bool {
    method.starts_with("tasks/")
        || (asks_for_task && method == rmcp::model::CallToolRequestMethod::VALUE)
}

/// A request as rmcp's custom request, params kept whole.
fn as_custom(request: JsonRpcRequest<CustomRequest>) -> ClientJsonRpcMessage {
    JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc: request.jsonrpc,
        id: request.id,
        request: ClientRequest::CustomRequest(request.request),
    })
}

/// The client-to-server request methods rmcp knows (any other is a custom request
/// that rmcp answers as an unknown method).
fn is_known_method(method: &str) -> bool {
    use rmcp::model::*;
    [
        PingRequestMethod::VALUE,
        InitializeResultMethod::VALUE,
        DiscoverRequestMethod::VALUE,
        ListResourcesRequestMethod::VALUE,
        ListResourceTemplatesRequestMethod::VALUE,
        ReadResourceRequestMethod::VALUE,
        SubscribeRequestMethod::VALUE,
        UnsubscribeRequestMethod::VALUE,
        SubscriptionsListenRequestMethod::VALUE,
        ListPromptsRequestMethod::VALUE,
        GetPromptRequestMethod::VALUE,
        SetLevelRequestMethod::VALUE,
        CompleteRequestMethod::VALUE,
        ListToolsRequestMethod::VALUE,
        CallToolRequestMethod::VALUE,
        GetTaskMethod::VALUE,
        UpdateTaskMethod::VALUE,
        CancelTaskMethod::VALUE,
        ListSkillsRequestMethod::VALUE,
        GetSkillRequestMethod::VALUE,
        ReadResourceDirectoryRequestMethod::VALUE,
    ]
    .contains(&method)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Value {
        match classify(line.as_bytes()) {
            Inbound::Reply(v) => v,
            other => panic!("{line}: expected an error reply, got {other:?}"),
        }
    }

    #[test]
    fn unparsable_lines_are_parse_errors_with_a_null_id() {
        for line in [
            "{",
            "not json",
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\ud800"}}"#,
        ] {
            let v = reply(line);
            assert_eq!(v["error"]["code"], PARSE_ERROR, "{line}");
            assert_eq!(v["id"], Value::Null);
            assert!(v.as_object().unwrap().contains_key("id"));
        }
        let Inbound::Reply(v) = classify(b"{\"a\":\"\xff\"}") else {
            panic!()
        };
        assert_eq!(v["error"]["code"], PARSE_ERROR);
    }

    #[test]
    fn invalid_requests_echo_their_id() {
        let v = reply(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#);
        assert_eq!(
            (v["id"].clone(), v["error"]["code"].clone()),
            (json!(7), json!(INVALID_REQUEST))
        );
        let v = reply(r#"{"jsonrpc":"2.0","id":"x","method":5}"#);
        assert_eq!(v["id"], "x");
        let v = reply(r#"[1,2]"#);
        assert_eq!(v["id"], Value::Null);
        let v = reply(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#);
        assert_eq!(v["id"], Value::Null);
        assert_eq!(v["error"]["code"], INVALID_REQUEST);
    }

    #[test]
    fn tools_call_with_bad_params_is_invalid_params() {
        for params in [
            r#"{}"#,
            r#"{"name":3}"#,
            r#"{"name":"list_files","arguments":[1]}"#,
            r#"{"name":"list_files","arguments":"x"}"#,
        ] {
            let line =
                format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{params}}}"#);
            let v = reply(&line);
            assert_eq!(v["error"]["code"], INVALID_PARAMS, "{params}");
            assert_eq!(v["id"], 3);
        }
        let ok = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_files","arguments":{}}}"#;
        assert!(matches!(classify(ok.as_bytes()), Inbound::Message(_)));
    }

    #[test]
    fn notifications_and_blank_lines_are_never_answered() {
        assert!(matches!(classify(b"   "), Inbound::Ignore));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Inbound::Message(_)
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#),
            Inbound::Ignore
        ));
    }

    /// Both routes of `classify` agree: a line that takes the one-pass route
    /// gets the same message as when it is judged on its parsed `Value`.
    fn assert_same_as_parsed(line: &[u8]) {
        let parsed = text_of(line).map_or_else(|answer| answer, classify_parsed);
        let shown = String::from_utf8_lossy(line);
        match (classify(line), parsed) {
            (Inbound::Message(a), Inbound::Message(b)) => assert_eq!(
                serde_json::to_value(&a).unwrap(),
                serde_json::to_value(&b).unwrap(),
                "{shown}"
            ),
            (Inbound::Reply(a), Inbound::Reply(b)) => assert_eq!(a, b, "{shown}"),
            (Inbound::Ignore, Inbound::Ignore) => {}
            (a, b) => panic!("{shown}: {a:?} but {b:?} when parsed"),
        }
    }

    #[test]
    fn the_one_pass_route_agrees_with_the_parsed_value() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_files","arguments":{"kind":"all","limit":5,"pattern":"r\u00e9sum\u00e9*"}}}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"ping","id":4}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\ud800"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x/unknown","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":7}}"#,
            r#"{"\u006a\u0073\u006f\u006e\u0072\u0070\u0063":"2\u002e0","id":5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":1e400}}"#,
        ] {
            assert_same_as_parsed(line.as_bytes());
        }
        // Well-formed requests and notifications take the one-pass route.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_files","arguments":{"kind":"all"}}}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        ] {
            assert!(well_formed(line).is_some(), "{line}");
        }
    }

    #[test]
    fn task_requests_reach_the_server_whole_as_custom_requests() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"t","_meta":{"k":1}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{},"task":{"ttl":5}}}"#,
        ] {
            let Inbound::Message(message) = classify(line.as_bytes()) else {
                panic!("{line}")
            };
            let ClientJsonRpcMessage::Request(r) = *message else {
                panic!("{line}")
            };
            let ClientRequest::CustomRequest(custom) = r.request else {
                panic!("{line}: not a custom request")
            };
            let sent: Value = serde_json::from_str(line).unwrap();
            let mut params = sent["params"].clone();
            params.as_object_mut().unwrap().remove("_meta");
            assert_eq!(custom.params, Some(params), "{line}");
            assert!(
                well_formed(line).is_some(),
                "{line} left the one-pass route"
            );
            assert_same_as_parsed(line.as_bytes());
        }
        // A plain call is rmcp's typed request, as before.
        let plain = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}}"#;
        let Inbound::Message(message) = classify(plain.as_bytes()) else {
            panic!()
        };
        assert!(matches!(
            *message,
            ClientJsonRpcMessage::Request(JsonRpcRequest {
                request: ClientRequest::CallToolRequest(_),
                ..
            })
        ));
        let v = reply(
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x","task":5}}"#,
        );
        assert_eq!(v["error"]["code"], INVALID_PARAMS);
        assert_same_as_parsed(
            br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x","task":5}}"#,
        );
    }

    /// What the fuzz target checks, over mutations of a few seed messages (a
    /// stand-in where cargo-fuzz cannot run): every error answer has an id and a
    /// code, nothing panics, and both routes of `classify` agree.
    #[tokio::test]
    async fn mutated_messages_are_answered_or_handed_on_never_a_panic() {
        let seeds: [&[u8]; 4] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_files","arguments":{"kind":"all"}}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            br#"{"jsonrpc":"2.0","id":"x","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
        ];
        let alphabet = b"{}[]\":,\\u0123456789abcdefnulltrue \n\r\xff\xed\xa0";
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for round in 0..20_000 {
            let mut bytes = seeds[round % seeds.len()].to_vec();
            for _ in 0..1 + next(4) {
                let at = next(bytes.len() + 1);
                match next(3) {
                    0 if at < bytes.len() => {
                        bytes.remove(at);
                    }
                    1 if at < bytes.len() => bytes[at] = alphabet[next(alphabet.len())],
                    _ => bytes.insert(at, alphabet[next(alphabet.len())]),
                }
            }
            let mut lines =
                LineReader::new(tokio::io::BufReader::with_capacity(16, &bytes[..]), 64);
            loop {
                match lines.next_frame().await.unwrap() {
                    Frame::Line(line) => {
                        assert!(line.len() <= 64);
                        assert_same_as_parsed(&line);
                        if let Inbound::Reply(answer) = classify(&line) {
                            assert!(answer.get("id").is_some(), "{answer}");
                            assert!(answer["error"]["code"].is_i64(), "{answer}");
                        }
                    }
                    Frame::TooLong(len) => assert!(len > 64),
                    Frame::End => break,
                }
            }
            assert_same_as_parsed(&bytes);
            if let Inbound::Reply(answer) = classify(&bytes) {
                assert!(answer.get("id").is_some(), "{answer}");
            }
        }
    }

    #[tokio::test]
    async fn lines_are_capped_and_a_last_line_needs_no_newline() {
        let input: &[u8] = b"short\n0123456789abcdef\nok\nlast";
        let mut r = LineReader::new(tokio::io::BufReader::with_capacity(4, input), 8);
        assert_eq!(
            r.next_frame().await.unwrap(),
            Frame::Line(b"short".to_vec())
        );
        assert_eq!(r.next_frame().await.unwrap(), Frame::TooLong(16));
        assert_eq!(r.next_frame().await.unwrap(), Frame::Line(b"ok".to_vec()));
        assert_eq!(r.next_frame().await.unwrap(), Frame::Line(b"last".to_vec()));
        assert_eq!(r.next_frame().await.unwrap(), Frame::End);
    }
}
