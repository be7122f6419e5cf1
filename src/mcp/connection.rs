//! One MCP session over a byte stream (a socket connection, or the in-memory pipe
//! of an in-process `quarry mcp`), with the limits that keep one client from
//! exhausting the daemon.
//!
//! Three parts share the stream: a reader task frames and checks each line
//! (`codec`) and hands well-formed messages to rmcp; rmcp runs the session; a
//! writer task puts rmcp's answers and the reader's error answers on the wire.
//! - At most `max_in_flight` requests are being answered at once. A request's
//!   slot comes back when its answer has been *written*, so a client that sends
//!   requests and reads nothing stops being read after that many: the kernel's
//!   socket buffers push back on it, and the daemon holds a bounded number of
//!   answers (the outgoing queue is bounded too).
//! - Answers keep the order of the lines for the lines answered here: a parse
//!   error (its id is null) or an invalid request is written after the answers
//!   to every request read before it, and input is read on only then.
//! - The input ending is not the client leaving: a client may close its writing
//!   side and wait for its answers. When the peer is gone entirely (its side of
//!   the socket is closed, or a write fails), the session is cancelled, and with
//!   it every call still running (their `Job`s stop their work).
//! - A connection that sends no well-formed message within `idle_timeout` of
//!   connecting is closed: idle connections that never start a session would
//!   otherwise hold descriptors forever.
//! - When the daemon drains (SIGTERM), a connection reads nothing more: its calls in
//!   flight are answered, then it is closed, as when a client closes its input.

use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt as _};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::time::Instant;

use super::QuarryServer;
use super::codec::{Frame, Inbound, LineReader, classify, too_long_reply};
use super::tasks;

/// What one connection is held to.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Requests being answered at once; further input waits.
    pub max_in_flight: usize,
    /// The longest line accepted, in bytes.
    pub max_message_bytes: usize,
    /// How long a new connection may stay silent before its first message
    /// (`None`: as long as it likes, for the in-process pipe).
    pub idle_timeout: Option<Duration>,
}

/// Tells connections that the daemon is stopping (`Drain::start`); each then reads
/// no more requests, answers those in flight, and closes.
#[derive(Clone)]
pub struct Drain(watch::Receiver<bool>);

/// The sending side of a `Drain`.
pub struct DrainSwitch(watch::Sender<bool>);

impl Drain {
    pub fn new() -> (DrainSwitch, Drain) {
        let (tx, rx) = watch::channel(false);
        (DrainSwitch(tx), Drain(rx))
    }

    /// A drain that never starts (a switch dropped unused means "never" too).
    pub fn never() -> Drain {
        Drain::new().1
    }

    /// Resolves once draining has started; never, if it cannot start any more.
    pub async fn started(&mut self) {
        if self.0.wait_for(|d| *d).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl DrainSwitch {
    pub fn start(&self) {
        self.0.send_replace(true);
    }
}

/// Answers and error replies waiting for the writer. Small: the in-flight cap
/// already bounds how many answers exist, this only keeps the writer fed.
const OUTGOING_QUEUE: usize = 8;

/// Draining, how long a connection's input may pause before reading stops.
const DRAIN_READ_GRACE: Duration = Duration::from_millis(50);

/// How often a connection whose input has ended checks that its peer is still
/// there (a Unix socket reports a full close as a hang-up).
const HANGUP_POLL: Duration = Duration::from_millis(50);

/// Bytes of answers written by every connection since memory was last handed back.
static WRITTEN_SINCE_TRIM: AtomicU64 = AtomicU64::new(0);

/// After this much output, a connection that ends hands freed memory back.
const TRIM_AFTER_BYTES: u64 = 1 << 20;

/// The requests of one connection that are being answered, each holding a slot.
struct InFlight {
    slots: Arc<Semaphore>,
    held: Mutex<HashMap<RequestId, OwnedSemaphorePermit>>,
    changed: Notify,
}

impl InFlight {
    fn new(max: usize) -> InFlight {
        InFlight {
            slots: Arc::new(Semaphore::new(max.max(1))),
            held: Mutex::new(HashMap::new()),
            changed: Notify::new(),
        }
    }

    /// Waits for a free slot; false when the connection is closing.
    async fn admit(&self, id: RequestId) -> bool {
        let Ok(permit) = self.slots.clone().acquire_owned().await else {
            return false;
        };
        self.held.lock().expect("in-flight map").insert(id, permit);
        true
    }

    /// The request was answered, or cancelled (rmcp then sends no answer).
    fn release(&self, id: &RequestId) {
        self.held.lock().expect("in-flight map").remove(id);
        self.changed.notify_waiters();
    }

    fn is_empty(&self) -> bool {
        self.held.lock().expect("in-flight map").is_empty()
    }

    /// No more requests will be admitted (the peer is gone).
    fn close(&self) {
        self.slots.close();
        self.held.lock().expect("in-flight map").clear();
        self.changed.notify_waiters();
    }
}

/// One line for the writer; `answers` is the request it completes, if any.
struct Outgoing {
    line: String,
    answers: Option<RequestId>,
}

/// rmcp's end of the connection: typed messages in, typed messages out.
struct ServiceSide {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    outgoing: mpsc::Sender<Outgoing>,
    /// The session was opened with `initialize` (MCP 2025-11-25 or earlier).
    legacy: bool,
}

impl ServiceSide {
    /// The line for `item`. A 2025-11-25 session's initialize and tools/list
    /// results gain the task fields that rmcp, which serves the 2026 Tasks
    /// extension, does not know (`tasks::wire`); these two answers go through
    /// a `Value`, every other message is written straight from its type.
    fn encode(&mut self, item: &ServerJsonRpcMessage) -> io::Result<String> {
        let patch: fn(&mut serde_json::Value) = match item {
            JsonRpcMessage::Response(r) => match &r.result {
                ServerResult::InitializeResult(_) => {
                    self.legacy = true;
                    tasks::legacy_initialize_fields
                }
                ServerResult::ListToolsResult(_) if self.legacy => tasks::legacy_tools_fields,
                _ => return serde_json::to_string(item).map_err(io::Error::other),
            },
            _ => return serde_json::to_string(item).map_err(io::Error::other),
        };
        let mut value = serde_json::to_value(item).map_err(io::Error::other)?;
        if let Some(result) = value.get_mut("result") {
            patch(result);
        }
        serde_json::to_string(&value).map_err(io::Error::other)
    }
}

impl Transport<RoleServer> for ServiceSide {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        let answers = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        let line = self.encode(&item);
        async move {
            let line = line?;
            outgoing
                .send(Outgoing { line, answers })
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client has gone"))
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        Ok(())
    }
}

/// Serves one MCP session on `stream` until the client leaves. `socket_fd`, when
/// given, is the stream's descriptor, polled to tell a client that only closed
/// its writing side from one that is gone.
pub async fn serve_connection<S>(
    server: QuarryServer,
    stream: S,
    socket_fd: Option<RawFd>,
    limits: &ConnectionLimits,
    drain: Drain,
) where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (read, write) = tokio::io::split(stream);
    let in_flight = Arc::new(InFlight::new(limits.max_in_flight));
    let (out_tx, out_rx) = mpsc::channel(OUTGOING_QUEUE);
    // One message at a time: while rmcp is busy the reader waits, not buffers.
    let (in_tx, in_rx) = mpsc::channel(1);
    let (gone_tx, gone_rx) = watch::channel(false);
    let gone_tx = Arc::new(gone_tx);
    let writer = tokio::spawn(write_lines(
        write,
        out_rx,
        in_flight.clone(),
        gone_tx.clone(),
    ));
    let reader = tokio::spawn(
        Reader {
            limits: limits.clone(),
            to_service: in_tx,
            replies: out_tx.clone(),
            in_flight: in_flight.clone(),
            gone: gone_tx,
            socket_fd,
            drain,
        }
        .run(read),
    );
    let side = ServiceSide {
        incoming: in_rx,
        outgoing: out_tx,
        legacy: false,
    };
    match server.serve(side).await {
        Ok(running) => {
            let cancel = running.cancellation_token();
            let waiting = running.waiting();
            tokio::pin!(waiting);
            let mut gone = gone_rx;
            tokio::select! {
                _ = &mut waiting => {}
                _ = async { gone.wait_for(|g| *g).await.is_ok() } => {
                    tracing::debug!("client gone: cancelling its calls");
                    cancel.cancel();
                    let _ = waiting.await;
                }
            }
        }
        Err(e) => tracing::debug!("connection ended before its session started: {e}"),
    }
    reader.abort();
    // Let the last answers reach a client that is still reading, but do not
    // wait forever on one that is not.
    let mut writer = writer;
    if tokio::time::timeout(Duration::from_secs(5), &mut writer)
        .await
        .is_err()
    {
        // Aborting drops the writing half, so the connection is closed.
        tracing::debug!("dropping answers a client did not read");
        writer.abort();
    }
    if WRITTEN_SINCE_TRIM.load(Ordering::Relaxed) >= TRIM_AFTER_BYTES {
        WRITTEN_SINCE_TRIM.store(0, Ordering::Relaxed);
        let _ = tokio::task::spawn_blocking(crate::memory::release_freed_memory).await;
    }
}

/// Writes each outgoing line; a request's slot is freed once its answer is out.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut write: W,
    mut queue: mpsc::Receiver<Outgoing>,
    in_flight: Arc<InFlight>,
    gone: Arc<watch::Sender<bool>>,
) {
    while let Some(Outgoing { mut line, answers }) = queue.recv().await {
        line.push('\n');
        let written = match write.write_all(line.as_bytes()).await {
            Ok(()) => write.flush().await,
            Err(e) => Err(e),
        };
        WRITTEN_SINCE_TRIM.fetch_add(line.len() as u64, Ordering::Relaxed);
        drop(line);
        if let Err(e) = written {
            tracing::debug!("client gone while writing: {e}");
            in_flight.close();
            gone.send_replace(true);
            return;
        }
        if let Some(id) = answers {
            in_flight.release(&id);
        }
    }
    let _ = write.shutdown().await;
}

/// The reading side of a connection.
struct Reader {
    limits: ConnectionLimits,
    to_service: mpsc::Sender<ClientJsonRpcMessage>,
    replies: mpsc::Sender<Outgoing>,
    in_flight: Arc<InFlight>,
    gone: Arc<watch::Sender<bool>>,
    socket_fd: Option<RawFd>,
    drain: Drain,
}

impl Reader {
    async fn run<R: AsyncRead + Unpin>(mut self, read: R) {
        if self.read_all(read).await {
            self.after_input_ends().await;
        }
    }

    /// Reads and hands on messages until the input ends (true: answers are still
    /// owed) or the session is over (false).
    async fn read_all<R: AsyncRead + Unpin>(&mut self, read: R) -> bool {
        let mut lines = LineReader::new(BufReader::new(read), self.limits.max_message_bytes);
        let idle = self.limits.idle_timeout;
        let first_message_by = idle.map(|t| Instant::now() + t);
        let mut started = false;
        let mut drain = self.drain.clone();
        let mut draining = false;
        loop {
            // Draining, what the client sent already is still read (and answered);
            // a pause in its input ends the reading.
            let deadline = if draining {
                Some(Instant::now() + DRAIN_READ_GRACE)
            } else if started {
                None
            } else {
                first_message_by
            };
            let next = async {
                match deadline {
                    Some(by) => tokio::time::timeout_at(by, lines.next_frame()).await.ok(),
                    None => Some(lines.next_frame().await),
                }
            };
            let frame = tokio::select! {
                f = next => f,
                _ = drain.started(), if !draining => {
                    tracing::debug!("draining: reading only what is already sent");
                    draining = true;
                    continue;
                }
            };
            let frame = match frame {
                Some(frame) => frame,
                None if draining => break,
                None => {
                    tracing::info!(
                        "closing a connection that sent no message in {:?}",
                        idle.unwrap_or_default()
                    );
                    self.gone.send_replace(true);
                    return false;
                }
            };
            let inbound = match frame {
                Ok(Frame::Line(bytes)) => classify(&bytes),
                Ok(Frame::TooLong(len)) => {
                    Inbound::Reply(too_long_reply(len, self.limits.max_message_bytes))
                }
                Ok(Frame::End) => break,
                Err(e) => {
                    tracing::debug!("reading a connection failed: {e}");
                    break;
                }
            };
            match inbound {
                Inbound::Ignore => {}
                Inbound::Reply(error) => {
                    // A parse error's id is null: only its place among the
                    // answers tells the client which line it answers, so it
                    // follows the answers to every request read before it.
                    if !self.until_answered().await {
                        return false;
                    }
                    let line = error.to_string();
                    if self
                        .replies
                        .send(Outgoing {
                            line,
                            answers: None,
                        })
                        .await
                        .is_err()
                    {
                        return false;
                    }
                }
                Inbound::Message(message) => {
                    started = true;
                    if !self.hand_on(*message).await {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Passes a message to rmcp, first taking a slot for a request (waiting for
    /// one is what stops the reading). False when the session is over.
    async fn hand_on(&self, message: ClientJsonRpcMessage) -> bool {
        let admitted = match &message {
            JsonRpcMessage::Request(r) => self.in_flight.admit(r.id.clone()).await,
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.in_flight.release(id);
                }
                true
            }
            _ => true,
        };
        if !admitted {
            return false;
        }
        self.to_service.send(message).await.is_ok()
    }

    /// The client sent its last message. Its answers are still owed unless it
    /// has gone entirely; rmcp's input is closed once they are all written.
    async fn after_input_ends(&self) {
        self.until_answered().await;
    }

    /// Waits until every request read so far is answered (true), or the client
    /// has gone entirely (false).
    async fn until_answered(&self) -> bool {
        loop {
            let changed = self.in_flight.changed.notified();
            if *self.gone.borrow() {
                return false;
            }
            if self.in_flight.is_empty() {
                return true;
            }
            if self.socket_fd.is_some_and(peer_hung_up) {
                tracing::debug!("client hung up with {} call(s) running", self.held());
                self.in_flight.close();
                self.gone.send_replace(true);
                return false;
            }
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep(HANGUP_POLL) => {}
            }
        }
    }

    fn held(&self) -> usize {
        self.in_flight.held.lock().expect("in-flight map").len()
    }
}

/// Whether the other end of a connected socket has closed entirely (both
/// directions), as opposed to only shutting down its writing side.
fn peer_hung_up(fd: RawFd) -> bool {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a zero timeout; the descriptor belongs to a
    // stream this connection still owns.
    let ready = unsafe { libc::poll(&mut poll, 1, 0) };
    ready > 0 && poll.revents & (libc::POLLHUP | libc::POLLERR) != 0
}
