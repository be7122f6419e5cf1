//! The JSON-RPC line relay behind `quarry mcp`: stdio on one side, an upstream MCP
//! server on the other (this process's own server, or the socket of the process
//! that owns the catalog). The relay remembers the client's handshake and which
//! requests are awaiting answers, so that when the upstream goes away (the owning
//! process exits, or is killed by its own client) it can connect to the next
//! owner, replay the handshake there and send the unanswered requests again. quarry's
//! tools read, or write the same export again, so sending a request twice is
//! harmless; a request lost twice (it may be what kills servers) is answered with
//! an error instead. The client's session survives.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};

use super::codec::{Frame, LineReader, too_long_reply};

/// An upstream connection: anything that carries newline-delimited JSON-RPC.
pub trait Upstream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Upstream for T {}

/// Why a relay pass ended.
#[derive(Debug, PartialEq, Eq)]
pub enum RelayEnd {
    /// The client closed stdin and every answer it awaited was delivered.
    ClientClosed,
    /// The upstream went away; the client is still there.
    UpstreamLost,
}

/// What the relay knows of the client's session.
#[derive(Default)]
pub struct SessionState {
    initialize: Option<Value>,
    initialized: Option<String>,
    /// Unanswered requests by id: the line, and to how many upstreams that had
    /// completed the handshake it was delivered.
    in_flight: BTreeMap<String, (String, u8)>,
    replays: u64,
    /// Upstreams this session has been relayed to.
    connections: u64,
}

const REPLAY_ID_PREFIX: &str = "quarry-replay-";

fn id_key(id: &Value) -> String {
    id.to_string()
}

impl SessionState {
    fn observe_client(&mut self, line: &str) {
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let method = msg.get("method").and_then(Value::as_str);
        match (method, msg.get("id")) {
            (Some("initialize"), Some(id)) => {
                self.initialize = Some(msg.clone());
                self.in_flight.insert(id_key(id), (line.to_string(), 1));
            }
            (Some("notifications/initialized"), None) => self.initialized = Some(line.to_string()),
            (Some(_), Some(id)) => {
                self.in_flight.insert(id_key(id), (line.to_string(), 1));
            }
            _ => {}
        }
    }

    fn observe_server(&mut self, line: &str) {
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            return;
        };
        if msg.get("method").is_none()
            && let Some(id) = msg.get("id")
        {
            self.in_flight.remove(&id_key(id));
        }
    }

    /// After an upstream is lost: error answers for the requests delivered twice
    /// and still unanswered; the others stay in flight, to be sent again.
    fn fail_lost_twice(&mut self) -> Vec<String> {
        let lost_twice: Vec<String> = self
            .in_flight
            .iter()
            .filter(|(_, (_, deliveries))| *deliveries >= 2)
            .map(|(id, _)| id.clone())
            .collect();
        lost_twice
            .into_iter()
            .filter_map(|id| {
                self.in_flight.remove(&id);
                serde_json::from_str::<Value>(&id).ok()
            })
            .map(|id| {
                json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32603,
                    "message": "quarry's serving process went away twice while this request ran; the session continues, retry the request",
                }})
                .to_string()
            })
            .collect()
    }
}

pub struct Relay<R, W> {
    /// The client's lines, capped at the largest message the server accepts;
    /// they are passed on as bytes, so the upstream's codec answers malformed
    /// ones (invalid UTF-8 included) just as it does on the socket.
    client_in: LineReader<BufReader<R>>,
    client_out: W,
    max_message_bytes: usize,
    pub state: SessionState,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Relay<R, W> {
    pub fn new(client_in: R, client_out: W, max_message_bytes: usize) -> Relay<R, W> {
        Relay {
            client_in: LineReader::new(BufReader::new(client_in), max_message_bytes),
            client_out,
            max_message_bytes,
            state: SessionState::default(),
        }
    }

    async fn send_to_client(&mut self, line: &str) -> std::io::Result<()> {
        self.client_out.write_all(line.as_bytes()).await?;
        self.client_out.write_all(b"\n").await?;
        self.client_out.flush().await
    }

    /// Relays between the client and `upstream` until one side ends. A session
    /// that was already initialised is first re-initialised on the new upstream.
    pub async fn run(&mut self, upstream: Box<dyn Upstream>) -> anyhow::Result<RelayEnd> {
        self.state.connections += 1;
        let (up_read, mut up_write) = tokio::io::split(upstream);
        let mut up_lines = BufReader::new(up_read).lines();
        // An upstream that dies before completing the handshake never received
        // anything: nothing counts as lost to it.
        if !self.replay_handshake(&mut up_lines, &mut up_write).await {
            return Ok(RelayEnd::UpstreamLost);
        }
        if self.state.connections > 1 {
            for (line, deliveries) in self.state.in_flight.values_mut() {
                *deliveries += 1;
                if send_line(&mut up_write, line.as_bytes()).await.is_err() {
                    return self.upstream_lost().await;
                }
            }
        }
        let mut client_open = true;
        loop {
            if !client_open && self.state.in_flight.is_empty() {
                return Ok(RelayEnd::ClientClosed);
            }
            tokio::select! {
                frame = self.client_in.next_frame(), if client_open => match frame? {
                    Frame::Line(line) => {
                        if let Ok(text) = std::str::from_utf8(&line) {
                            self.state.observe_client(text);
                        }
                        if send_line(&mut up_write, &line).await.is_err() {
                            return self.upstream_lost().await;
                        }
                    }
                    // Never buffered, so never passed on: answered here.
                    Frame::TooLong(len) => {
                        let answer = too_long_reply(len, self.max_message_bytes).to_string();
                        self.send_to_client(&answer).await?;
                    }
                    Frame::End => {
                        client_open = false;
                        let _ = up_write.shutdown().await;
                    }
                },
                line = up_lines.next_line() => match line {
                    Ok(Some(line)) => {
                        self.state.observe_server(&line);
                        self.send_to_client(&line).await?;
                    }
                    _ if !client_open => return Ok(RelayEnd::ClientClosed),
                    _ => return self.upstream_lost().await,
                },
            }
        }
    }

    async fn upstream_lost(&mut self) -> anyhow::Result<RelayEnd> {
        for answer in self.state.fail_lost_twice() {
            self.send_to_client(&answer).await?;
        }
        Ok(RelayEnd::UpstreamLost)
    }

    /// Sends the remembered `initialize` (under a private id, its answer dropped)
    /// and `initialized`; false when the upstream fails meanwhile. A client still
    /// waiting for its own `initialize` answer has it resent as an in-flight request.
    async fn replay_handshake<UR: AsyncRead + Unpin, UW: AsyncWrite + Unpin>(
        &mut self,
        up_lines: &mut Lines<BufReader<UR>>,
        up_write: &mut UW,
    ) -> bool {
        let (Some(init), Some(initialized)) = (&self.state.initialize, &self.state.initialized)
        else {
            return true;
        };
        self.state.replays += 1;
        let replay_id = json!(format!("{REPLAY_ID_PREFIX}{}", self.state.replays));
        let mut init = init.clone();
        init["id"] = replay_id.clone();
        let initialized = initialized.clone();
        if send_line(up_write, init.to_string().as_bytes())
            .await
            .is_err()
        {
            return false;
        }
        loop {
            match up_lines.next_line().await {
                Ok(Some(line)) => {
                    let answered = serde_json::from_str::<Value>(&line)
                        .is_ok_and(|v| v.get("id") == Some(&replay_id));
                    if answered {
                        break;
                    }
                }
                _ => return false,
            }
        }
        send_line(up_write, initialized.as_bytes()).await.is_ok()
    }
}

async fn send_line<W: AsyncWrite + Unpin>(w: &mut W, line: &[u8]) -> std::io::Result<()> {
    w.write_all(line).await?;
    w.write_all(b"\n").await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_requests_until_answered_and_fails_those_lost_twice() {
        let mut s = SessionState::default();
        s.observe_client(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
        s.observe_server(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        s.observe_client(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s.observe_client(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}"#);
        s.observe_client(r#"{"jsonrpc":"2.0","id":"abc","method":"tools/list"}"#);
        s.observe_server(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
        // A server-to-client request with the same id as a pending one is not an answer.
        s.observe_server(r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#);
        assert!(s.initialize.is_some() && s.initialized.is_some());
        // First loss: "abc" is kept to be sent again.
        assert!(s.fail_lost_twice().is_empty());
        assert_eq!(s.in_flight.len(), 1);
        // Resent to a new upstream (as `run` does after a replayed handshake), then
        // lost again; a request made meanwhile was delivered once only.
        s.in_flight.get_mut("\"abc\"").unwrap().1 += 1;
        s.observe_client(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
        let failed = s.fail_lost_twice();
        assert_eq!(failed.len(), 1);
        let v: Value = serde_json::from_str(&failed[0]).unwrap();
        assert_eq!(v["id"], "abc");
        assert_eq!(v["error"]["code"], -32603);
        assert_eq!(s.in_flight.keys().collect::<Vec<_>>(), vec!["3"]);
    }
}
