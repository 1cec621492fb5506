//! One connection of the app-server client: the state it shares with the tasks that pump
//! it ([`Shared`]: what the server sent, the calls waiting for an answer, the handlers of its
//! requests, how it ended) and those tasks: lines on a child's stdin and stdout or frames on
//! a WebSocket, codex's stderr, and the child's exit. `crate::app_server::client` is the
//! typed API over it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::Child;
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as Frame;

use crate::app_server::child::{ChildExit, StderrTail, wait_or_kill};
use crate::app_server::message::{Message, RequestId, RpcError};
use crate::app_server::transcript::{Sent, SentKind, UNKNOWN_METHOD};
use crate::lock;

/// How many lines of codex's stderr are kept for error messages.
const STDERR_TAIL_LINES: usize = 40;

/// One message the server sent (a notification or a server request), as logged.
#[derive(Debug, Clone)]
pub struct Inbound {
    /// Position in the log, 0-based.
    pub index: usize,
    /// The message.
    pub message: Message,
    /// When it arrived.
    pub at: Instant,
}

impl Inbound {
    /// The method name.
    pub fn method(&self) -> &str {
        self.message.method().unwrap_or("")
    }

    /// The params.
    pub fn params(&self) -> &Value {
        self.message.params()
    }

    /// Whether this is a notification with the given method.
    pub fn is(&self, method: &str) -> bool {
        self.method() == method
    }

    /// `params.turnId`, or `params.turn.id`, when present.
    pub fn turn_id(&self) -> Option<&str> {
        let p = self.params();
        p.get("turnId")
            .and_then(Value::as_str)
            .or_else(|| p.pointer("/turn/id").and_then(Value::as_str))
    }

    /// `params.threadId`, or `params.thread.id`, when present.
    pub fn thread_id(&self) -> Option<&str> {
        let p = self.params();
        p.get("threadId")
            .and_then(Value::as_str)
            .or_else(|| p.pointer("/thread/id").and_then(Value::as_str))
    }
}

/// A handler for one server-to-client request method: gets the params, returns the result.
pub type Handler = Arc<dyn Fn(&Value) -> Result<Value, RpcError> + Send + Sync>;

/// Where the answer to one pending call goes.
pub(super) type Reply = oneshot::Sender<Result<Value, RpcError>>;

/// State shared between the client and its reader tasks.
pub(super) struct Shared {
    pub(super) label: String,
    pub(super) log: Mutex<Vec<Inbound>>,
    pub(super) log_changed: Notify,
    pub(super) pending: Mutex<HashMap<RequestId, Reply>>,
    /// The method of every request the client made, by id (kept after the answer, so a
    /// late answer still names its method).
    pub(super) asked: Mutex<HashMap<RequestId, String>>,
    /// The method of every request the client wrote to the server, in the order written.
    pub(super) requested: Mutex<Vec<String>>,
    /// Everything the server sent, in order.
    pub(super) transcript: Mutex<Vec<Sent>>,
    pub(super) handlers: Mutex<HashMap<String, Handler>>,
    /// Server request methods the client leaves unanswered (see `leave_unanswered`).
    pub(super) held: Mutex<Vec<String>>,
    pub(super) unhandled: Mutex<Vec<String>>,
    pub(super) bad_lines: Mutex<Vec<String>>,
    /// Codex's stderr: this process's, or the listener's its connection goes to.
    pub(super) stderr: Arc<StderrTail>,
    pub(super) exit: watch::Sender<Option<ChildExit>>,
    /// Set as soon as the child has been waited for: its pid may then be reused.
    pub(super) reaped: AtomicBool,
    pub(super) writer: Mutex<Option<mpsc::UnboundedSender<String>>>,
    /// Whether the client reads what the server sends (see [`AppServer::pause_reading`]).
    pub(super) reading: watch::Sender<bool>,
}

impl Shared {
    /// The state of a new connection, with the receivers of its exit and of the lines to
    /// write.
    pub(super) fn new(
        label: &str,
        stderr: Option<Arc<StderrTail>>,
    ) -> (
        Arc<Shared>,
        watch::Receiver<Option<ChildExit>>,
        mpsc::UnboundedReceiver<String>,
    ) {
        let (exit_tx, exit_rx) = watch::channel(None);
        let (line_tx, line_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            label: label.to_string(),
            log: Mutex::new(Vec::new()),
            log_changed: Notify::new(),
            pending: Mutex::new(HashMap::new()),
            asked: Mutex::new(HashMap::new()),
            requested: Mutex::new(Vec::new()),
            transcript: Mutex::new(Vec::new()),
            handlers: Mutex::new(HashMap::new()),
            held: Mutex::new(Vec::new()),
            unhandled: Mutex::new(Vec::new()),
            bad_lines: Mutex::new(Vec::new()),
            stderr: stderr.unwrap_or_else(|| Arc::new(StderrTail::new(STDERR_TAIL_LINES))),
            exit: exit_tx,
            reaped: AtomicBool::new(false),
            writer: Mutex::new(Some(line_tx)),
            reading: watch::Sender::new(true),
        });
        (shared, exit_rx, line_rx)
    }

    /// The connection ended (`exit`): no more writing, every waiting call fails.
    pub(super) fn ended(&self, exit: ChildExit) {
        lock(&self.writer).take();
        let _ = self.exit.send(Some(exit));
        // Fail every call still waiting: its sender is dropped here.
        lock(&self.pending).clear();
        self.log_changed.notify_waiters();
    }

    /// Adds a message the server sent to the transcript.
    pub(super) fn record(&self, message: &Message) {
        let answered = |id: Option<&RequestId>| {
            id.and_then(|id| lock(&self.asked).get(id).cloned())
                .unwrap_or_else(|| UNKNOWN_METHOD.to_string())
        };
        let (kind, method, payload, extra) = match message {
            Message::Response { id, result } => {
                (SentKind::Response, answered(Some(id)), result.clone(), None)
            }
            Message::Error { id, error } => {
                let error = serde_json::to_value(error).unwrap_or(Value::Null);
                (SentKind::Error, answered(id.as_ref()), error, None)
            }
            Message::Notification {
                method,
                params,
                extra,
            } => (
                SentKind::Notification,
                method.clone(),
                params.clone(),
                Some(extra.clone()),
            ),
            Message::Request { method, params, .. } => {
                (SentKind::Request, method.clone(), params.clone(), None)
            }
        };
        lock(&self.transcript).push(Sent {
            kind,
            method,
            payload,
            extra: extra.unwrap_or_default(),
        });
    }

    pub(super) fn send_line(&self, line: String) -> bool {
        match lock(&self.writer).as_ref() {
            Some(tx) => tx.send(line).is_ok(),
            None => false,
        }
    }
}

pub(super) async fn write_lines(
    mut stdin: impl AsyncWrite + Unpin,
    mut rx: mpsc::UnboundedReceiver<String>,
) {
    while let Some(mut line) = rx.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
    // Dropping stdin closes it: codex exits on EOF.
}

pub(super) async fn read_stderr(shared: Arc<Shared>, stderr: tokio::process::ChildStderr) {
    let echo = std::env::var_os("CODEX_PARITY_ECHO_STDERR").is_some();
    let label = &shared.label;
    shared
        .stderr
        .read(stderr, |line| {
            if echo {
                eprintln!("[{label} stderr] {line}");
            }
        })
        .await;
}

pub(super) async fn read_lines(shared: Arc<Shared>, stdout: impl AsyncRead + Unpin) {
    let mut lines = BufReader::new(stdout).lines();
    let mut reading = shared.reading.subscribe();
    while reading.wait_for(|r| *r).await.is_ok()
        && let Ok(Some(line)) = lines.next_line().await
    {
        receive(&shared, line);
    }
}

/// Writes each line as one text frame; a close frame when the client stops writing.
pub(super) async fn write_frames<S>(
    mut sink: SplitSink<WebSocketStream<S>, Frame>,
    mut rx: mpsc::UnboundedReceiver<String>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    while let Some(line) = rx.recv().await {
        if sink.send(Frame::text(line)).await.is_err() {
            return;
        }
    }
    let _ = sink.close().await;
}

/// Reads frames until the socket ends: each text (or binary) frame is one message; pings
/// are answered by tungstenite itself.
pub(super) async fn read_frames<S>(shared: Arc<Shared>, mut stream: SplitStream<WebSocketStream<S>>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut reading = shared.reading.subscribe();
    while reading.wait_for(|r| *r).await.is_ok()
        && let Some(Ok(frame)) = stream.next().await
    {
        match frame {
            Frame::Text(text) => receive(&shared, text.to_string()),
            Frame::Binary(bytes) => receive(&shared, String::from_utf8_lossy(&bytes).into_owned()),
            Frame::Close(_) => break,
            Frame::Ping(_) | Frame::Pong(_) | Frame::Frame(_) => {}
        }
    }
}

/// One message (a line, a frame) the server sent: answers go to their calls, server
/// requests to their handlers, the rest to the log; what is not JSON-RPC to `bad_lines`.
pub(super) fn receive(shared: &Shared, line: String) {
    if line.trim().is_empty() {
        return;
    }
    let message = Message::parse(&line);
    if let Ok(message) = &message {
        shared.record(message);
    }
    match message {
        Ok(Message::Response { id, result }) => {
            if let Some(tx) = lock(&shared.pending).remove(&id) {
                let _ = tx.send(Ok(result));
            }
        }
        Ok(Message::Error { id, error }) => {
            if let Some(tx) = id.and_then(|id| lock(&shared.pending).remove(&id)) {
                let _ = tx.send(Err(error));
            } else {
                lock(&shared.bad_lines).push(line);
            }
        }
        Ok(message) => {
            if let Message::Request { id, method, params } = &message {
                answer_server_request(shared, id, method, params);
            }
            let mut log = lock(&shared.log);
            let index = log.len();
            log.push(Inbound {
                index,
                message,
                at: Instant::now(),
            });
            drop(log);
            shared.log_changed.notify_waiters();
        }
        Err(_) => lock(&shared.bad_lines).push(line),
    }
}

pub(super) fn answer_server_request(shared: &Shared, id: &RequestId, method: &str, params: &Value) {
    if lock(&shared.held).iter().any(|m| m == method) {
        return;
    }
    let handler = lock(&shared.handlers).get(method).cloned();
    let reply = match handler {
        Some(handler) => match handler(params) {
            Ok(result) => Message::Response {
                id: id.clone(),
                result,
            },
            Err(error) => Message::Error {
                id: Some(id.clone()),
                error,
            },
        },
        None => {
            lock(&shared.unhandled).push(method.to_string());
            Message::Error {
                id: Some(id.clone()),
                error: RpcError {
                    code: RpcError::METHOD_NOT_FOUND,
                    message: format!(
                        "codex-parity: no handler registered for server request {method}"
                    ),
                    data: None,
                },
            }
        }
    };
    shared.send_line(reply.to_line());
}

pub(super) async fn watch_child(
    shared: Arc<Shared>,
    mut child: Child,
    kill: oneshot::Receiver<()>,
    stdout_done: tokio::task::JoinHandle<()>,
    stderr_done: tokio::task::JoinHandle<()>,
) {
    let (exit, _) = wait_or_kill(&mut child, kill).await;
    shared.reaped.store(true, Ordering::SeqCst);
    // Let the readers drain what the process wrote before it ended.
    let _ = tokio::time::timeout(Duration::from_secs(2), stdout_done).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), stderr_done).await;
    shared.ended(exit);
}
