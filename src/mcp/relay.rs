//! The JSON-RPC line relay behind `quarry mcp`: stdio on one side, an upstream MCP
//! server on the other (this process's own server, or the socket of the process
//! that owns the catalog). The relay remembers the client's handshake and which
//! requests are awaiting answers, so that when the upstream goes away (the owning
//! process exits, or is killed by its own client) it can connect to the next
//! owner, replay the handshake there and send the unanswered requests again. The client's
//! session survives.
//!
//! Only what is safe to run twice is sent again: protocol requests (lists, reads,
//! ping) and calls of read-only tools (the `read_only` of their annotations). A call
//! of a tool that writes (`ingest_document`, `create_chat_session`, `export_branches`,
//! `answer_question` ...) may have run before the server went away, so it is answered
//! with an error that says so; a request the client cancelled is forgotten; a request
//! lost twice (it may be what kills servers) is answered with an error too.
//!
//! Once the client closes its input, the relay passes on every line the upstream
//! still sends until the upstream closes in turn: each line read before the end gets
//! its answer (results, errors, and the upstream codec's parse errors alike).

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

/// A request awaiting its answer.
struct Pending {
    line: String,
    /// To how many upstreams that had completed the handshake it was delivered.
    deliveries: u8,
    /// `None` when it may be sent again; else what it is, for the error.
    not_resent: Option<String>,
}

/// What the relay knows of the client's session.
#[derive(Default)]
pub struct SessionState {
    initialize: Option<Value>,
    initialized: Option<String>,
    /// Unanswered requests by id.
    in_flight: BTreeMap<String, Pending>,
    replays: u64,
    /// Upstreams this session has been relayed to.
    connections: u64,
}

const REPLAY_ID_PREFIX: &str = "quarry-replay-";

fn id_key(id: &Value) -> String {
    id.to_string()
}

/// Why a request may not be sent to a second server: `None` when running it
/// twice is harmless, else what it is (a call of a tool that writes, or of a
/// tool this quarry does not know).
fn not_resendable(method: &str, params: Option<&Value>) -> Option<String> {
    if method != "tools/call" {
        // quarry's other requests (initialize, ping, lists, resources/read, tasks/*)
        // read. A task dies with the process that ran it: sent again, tasks/get
        // or tasks/result answers that the task is not found, which is the truth.
        return None;
    }
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    match crate::mcp::tools::all().find(|d| d.name == name) {
        Some(def) if def.effects.read_only => None,
        Some(_) => Some(format!("{name} (a tool that writes)")),
        None => Some(format!("{name} (a tool this quarry does not know)")),
    }
}

/// The error answering a request that was not sent again after its server went away.
fn not_resent_error(id: Value, what: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32603,
        "message": format!(
            "quarry's serving process stopped while this call of {what} was in flight (it was \
             restarted, or another quarry took over); the call may have run before it stopped, \
             and it was not sent again: check its effect before calling it again"),
        "data": {"daemon_restarted": true, "may_have_run": true, "resent": false},
    }})
    .to_string()
}

impl SessionState {
    fn observe_client(&mut self, line: &str) {
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let method = msg.get("method").and_then(Value::as_str);
        let pending = |not_resent| Pending {
            line: line.to_string(),
            deliveries: 1,
            not_resent,
        };
        match (method, msg.get("id")) {
            (Some("initialize"), Some(id)) => {
                self.initialize = Some(msg.clone());
                self.in_flight.insert(id_key(id), pending(None));
            }
            (Some("notifications/initialized"), None) => self.initialized = Some(line.to_string()),
            // The client wants no answer any more: never sent again either.
            (Some("notifications/cancelled"), None) => {
                if let Some(id) = msg.pointer("/params/requestId") {
                    self.in_flight.remove(&id_key(id));
                }
            }
            (Some(m), Some(id)) => {
                let why = not_resendable(m, msg.get("params"));
                self.in_flight.insert(id_key(id), pending(why));
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

    /// After an upstream is lost: error answers for the requests that are not
    /// sent again (they write, or were delivered twice already); the others stay
    /// in flight, to be sent again.
    fn settle_lost(&mut self) -> Vec<String> {
        let settled: Vec<String> = self
            .in_flight
            .iter()
            .filter(|(_, p)| p.not_resent.is_some() || p.deliveries >= 2)
            .map(|(id, _)| id.clone())
            .collect();
        settled
            .into_iter()
            .filter_map(|key| {
                let pending = self.in_flight.remove(&key)?;
                let id = serde_json::from_str::<Value>(&key).ok()?;
                Some(match pending.not_resent {
                    Some(what) => not_resent_error(id, &what),
                    None => json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32603,
                        "message": "quarry's serving process went away twice while this request ran; the session continues, retry the request",
                        "data": {"daemon_restarted": true, "may_have_run": true, "resent": true},
                    }})
                    .to_string(),
                })
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
            for pending in self.state.in_flight.values_mut() {
                pending.deliveries += 1;
                if send_line(&mut up_write, pending.line.as_bytes())
                    .await
                    .is_err()
                {
                    return self.upstream_lost().await;
                }
            }
        }
        let mut client_open = true;
        loop {
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
                // After the client's end of input the upstream answers what it
                // was sent, then closes: its end is the relay's.
                line = up_lines.next_line() => match line {
                    Ok(Some(line)) => {
                        self.state.observe_server(&line);
                        self.send_to_client(&line).await?;
                    }
                    _ if !client_open && self.state.in_flight.is_empty() => {
                        return Ok(RelayEnd::ClientClosed);
                    }
                    _ => return self.upstream_lost().await,
                },
            }
        }
    }

    async fn upstream_lost(&mut self) -> anyhow::Result<RelayEnd> {
        for answer in self.state.settle_lost() {
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
    use tokio::io::{AsyncBufReadExt, DuplexStream, ReadHalf};

    #[test]
    fn tracks_requests_until_answered_and_fails_those_lost_twice() {
        let mut s = SessionState::default();
        s.observe_client(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
        s.observe_server(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        s.observe_client(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s.observe_client(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_files"}}"#,
        );
        s.observe_client(r#"{"jsonrpc":"2.0","id":"abc","method":"tools/list"}"#);
        s.observe_server(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
        // A server-to-client request with the same id as a pending one is not an answer.
        s.observe_server(r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#);
        assert!(s.initialize.is_some() && s.initialized.is_some());
        // First loss: "abc" is kept to be sent again.
        assert!(s.settle_lost().is_empty());
        assert_eq!(s.in_flight.len(), 1);
        // Resent to a new upstream (as `run` does after a replayed handshake), then
        // lost again; a request made meanwhile was delivered once only.
        s.in_flight.get_mut("\"abc\"").unwrap().deliveries += 1;
        s.observe_client(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
        let failed = s.settle_lost();
        assert_eq!(failed.len(), 1);
        let v: Value = serde_json::from_str(&failed[0]).unwrap();
        assert_eq!(v["id"], "abc");
        assert_eq!(v["error"]["code"], -32603);
        assert_eq!(s.in_flight.keys().collect::<Vec<_>>(), vec!["3"]);
    }

    fn call(id: u64, tool: &str) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": {}}})
        .to_string()
    }

    /// Reads one line of `from`, parsed.
    async fn next(from: &mut tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>) -> Value {
        let line = from.next_line().await.unwrap().expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    /// A client's calls are pending when their server dies: after the relay has
    /// connected to the next server, only the read-only ones were sent again; the
    /// writing ones were answered with an error saying they may have run, and the
    /// cancelled one was dropped.
    #[tokio::test]
    async fn after_a_restart_only_read_only_calls_are_sent_again() {
        let (client, relay_side) = tokio::io::duplex(1 << 16);
        let (relay_in, relay_out) = tokio::io::split(relay_side);
        let mut relay = Relay::new(relay_in, relay_out, 1 << 20);
        let (mut client_read, mut client_write) = {
            let (r, w) = tokio::io::split(client);
            (BufReader::new(r).lines(), w)
        };
        let (first, first_server) = tokio::io::duplex(1 << 16);
        let (second, second_server) = tokio::io::duplex(1 << 16);

        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let lines = [
            init.to_string(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
            call(1, "ingest_document"),
            call(2, "create_chat_session"),
            call(3, "export_branches"),
            call(4, "answer_question"),
            call(5, "list_files"),
            call(6, "search_documents"),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}"#
                .to_string(),
            r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"h5://x"}}"#
                .to_string(),
        ];
        let client_side = async {
            for line in &lines {
                client_write
                    .write_all(format!("{line}\n").as_bytes())
                    .await
                    .unwrap();
            }
            let init_answer = next(&mut client_read).await;
            assert_eq!(init_answer["id"], 0);
            // The four writing calls are answered at once when the server is lost.
            let mut refused = Vec::new();
            for _ in 0..4 {
                let v = next(&mut client_read).await;
                let message = v["error"]["message"].as_str().unwrap().to_string();
                assert!(message.contains("may have run"), "{v}");
                assert!(message.contains("not sent again"), "{v}");
                assert_eq!(v["error"]["data"]["may_have_run"], true, "{v}");
                refused.push(v["id"].as_u64().unwrap());
            }
            refused.sort_unstable();
            assert_eq!(refused, [1, 2, 3, 4]);
            // The next server answers the two read-only requests sent again.
            let mut answered = [next(&mut client_read).await, next(&mut client_read).await];
            answered.sort_by_key(|v| v["id"].as_u64());
            assert_eq!(answered[0]["id"], 5);
            assert_eq!(answered[1]["id"], 7);
            assert!(answered.iter().all(|v| v["result"]["from"] == "second"));
            client_write.shutdown().await.unwrap();
            assert!(client_read.next_line().await.unwrap().is_none());
        };
        let sent = lines.len();
        let first_server_side = async move {
            let (r, mut w) = tokio::io::split(first_server);
            let mut r = BufReader::new(r).lines();
            // Everything the client sent arrives, then the server dies.
            for _ in 0..sent {
                let line = r.next_line().await.unwrap().unwrap();
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["method"] == "initialize" {
                    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\n")
                        .await
                        .unwrap();
                }
            }
        };
        let second_server_side = async move {
            let (r, mut w) = tokio::io::split(second_server);
            let mut r = BufReader::new(r).lines();
            let mut received = Vec::new();
            while let Some(line) = r.next_line().await.unwrap() {
                let v: Value = serde_json::from_str(&line).unwrap();
                let answer = match (&v["method"], &v["id"]) {
                    (_, Value::Null) => None,
                    (m, id) if m == "initialize" => {
                        Some(json!({"jsonrpc": "2.0", "id": id, "result": {}}))
                    }
                    (_, id) => {
                        Some(json!({"jsonrpc": "2.0", "id": id, "result": {"from": "second"}}))
                    }
                };
                if let Some(a) = answer {
                    w.write_all(format!("{a}\n").as_bytes()).await.unwrap();
                }
                received.push(v);
            }
            received
        };
        let relaying = async move {
            let lost = relay.run(Box::new(first)).await.unwrap();
            assert_eq!(lost, RelayEnd::UpstreamLost);
            relay.run(Box::new(second)).await.unwrap()
            // The relay is dropped here: the client's input ends.
        };
        let (_, _, received, end) =
            tokio::join!(client_side, first_server_side, second_server_side, relaying);
        assert_eq!(end, RelayEnd::ClientClosed);
        // The handshake replayed under the relay's own id, then only ids 5 and 7.
        assert_eq!(received[0]["method"], "initialize");
        assert_eq!(received[0]["id"], "quarry-replay-1");
        assert_eq!(received[1]["method"], "notifications/initialized");
        let ids: Vec<&Value> = received[2..].iter().map(|v| &v["id"]).collect();
        assert_eq!(ids, [&json!(5), &json!(7)]);
    }
}
