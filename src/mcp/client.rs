//! A minimal MCP client over the daemon's Unix socket, for quarry's own commands
//! (`status`, `call`): one session, the 2025-11-25 handshake, then tool calls,
//! each answered in order. It blocks; the commands using it run no runtime.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::{Map, Value, json};

/// A tool call's answer: the result object's parts.
#[derive(Debug, Clone)]
pub struct CallReply {
    pub is_error: bool,
    /// `structuredContent`: the tool's JSON result (absent on tool errors).
    pub structured: Option<Value>,
    /// The first text item (on a tool error, the spec's error object as JSON).
    pub text: String,
}

/// A JSON-RPC error the server answered with instead of a result (an unknown
/// tool, malformed arguments).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ProtocolError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

pub struct SocketClient {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
    next_id: u64,
}

impl SocketClient {
    /// Connects and completes the handshake. `timeout` bounds every answer.
    pub fn connect(socket: &Path, name: &str, timeout: Duration) -> anyhow::Result<SocketClient> {
        let stream = UnixStream::connect(socket)
            .with_context(|| format!("nothing answers on the socket {}", socket.display()))?;
        stream.set_read_timeout(Some(timeout))?;
        let mut client = SocketClient {
            writer: stream.try_clone()?,
            reader: BufReader::new(stream),
            next_id: 1,
        };
        client.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": name, "version": env!("CARGO_PKG_VERSION")}}),
        )?;
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(client)
    }

    /// Calls a tool. A JSON-RPC error comes back as a `ProtocolError` inside the
    /// `anyhow::Error` (downcast it to tell it from a broken connection).
    pub fn call_tool(
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> anyhow::Result<CallReply> {
        let result = self.request("tools/call", json!({"name": name, "arguments": arguments}))?;
        let text = result["content"]
            .as_array()
            .and_then(|items| items.iter().find_map(|i| i["text"].as_str()))
            .unwrap_or_default()
            .to_string();
        Ok(CallReply {
            is_error: result["isError"] == json!(true),
            structured: result.get("structuredContent").cloned(),
            text,
        })
    }

    fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        writeln!(self.writer, "{message}")?;
        Ok(self.writer.flush()?)
    }

    /// Sends a request and waits for the answer with its id (notifications the
    /// server sends meanwhile are passed over).
    fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let mut line = String::new();
        loop {
            line.clear();
            anyhow::ensure!(
                self.reader.read_line(&mut line)? > 0,
                "the daemon closed the connection"
            );
            let Ok(reply) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if reply["id"] != json!(id) {
                continue;
            }
            if let Some(error) = reply.get("error") {
                return Err(ProtocolError {
                    code: error["code"].as_i64().unwrap_or(0),
                    message: error["message"].as_str().unwrap_or("error").to_string(),
                    data: error.get("data").cloned(),
                }
                .into());
            }
            return Ok(reply["result"].clone());
        }
    }
}
