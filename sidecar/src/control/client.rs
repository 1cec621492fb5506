//! A typed async client of the JSONL [`protocol`](crate::control::protocol), over any
//! process's stdin and stdout: it reads the ready line, sends each [`Command`] with a fresh
//! numeric `id`, and matches the [`Reply`] that echoes it. Whoever owns the process (the
//! driver, [`crate::control::spawn`]) keeps its own process handling and adds what it knows
//! (exit status, stderr) to a [`ClientError::Closed`].
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use std::time::Duration;
//! use codex_parity_sidecar::{bodies, Client, RequestFilter, Scripted};
//! let mut child = tokio::process::Command::new("codex-parity-sidecar")
//!     .stdin(std::process::Stdio::piped())
//!     .stdout(std::process::Stdio::piped())
//!     .spawn()?;
//! let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
//! let mut client = Client::connect(stdin, stdout, Duration::from_secs(10)).await?;
//! client.enqueue(&[Scripted::sse(bodies::assistant_reply("resp-1", "hi"))]).await?;
//! // ... point codex at client.base_url() ...
//! let requests = client.wait_for(RequestFilter::default(), 1, Duration::from_secs(5)).await?;
//! let ended = client.shutdown().await?;
//! assert_eq!((requests.len(), ended.pending), (1, 0));
//! # Ok(()) }
//! ```

use std::pin::Pin;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};

use crate::control::protocol::{Command, PROTOCOL_VERSION, Reply, Status};
use crate::mock::captured::CapturedRequest;
use crate::mock::connection::{ConnectionScript, Warmup};
use crate::mock::script::Scripted;
use crate::mock::server::RequestFilter;

/// How much of a sent or received line an error message quotes.
const QUOTE_CHARS: usize = 300;

/// What the ready line announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    /// `http://HOST:PORT`.
    pub server_url: String,
    /// `http://HOST:PORT/v1`, the provider base URL for codex.
    pub base_url: String,
    /// The protocol version (0 when the line did not say).
    pub protocol: u32,
    /// The sidecar's process id (0 when the line did not say).
    pub pid: u32,
}

/// What the sidecar reported as it shut down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShutdownReply {
    /// Scripted responses never served.
    pub pending: usize,
    /// Requests that got no scripted response.
    pub unscripted: u64,
}

/// Why a command got no usable reply. Every variant names what was sent (`op`, and the line
/// as far as its first 300 characters) and, where one came, the line that came back.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Writing the command failed (the process's stdin is closed).
    #[error("cannot send {op} to the sidecar ({sent}): {source}")]
    Send {
        /// The command's `op`.
        op: &'static str,
        /// The line sent.
        sent: String,
        /// The write error.
        source: std::io::Error,
    },
    /// Stdout ended (or could not be read) before the reply: the process likely died; its
    /// owner knows the exit status and stderr.
    #[error("the sidecar closed its stdout before answering {op} ({sent}){}", detail(.reason))]
    Closed {
        /// The command's `op` (`ready` while waiting for the ready line).
        op: &'static str,
        /// The line sent.
        sent: String,
        /// The read error, if stdout failed rather than ended.
        reason: Option<String>,
    },
    /// No reply within the time allowed.
    #[error("the sidecar did not answer {op} within {timeout:?} ({sent})")]
    Timeout {
        /// The command's `op` (`ready` while waiting for the ready line).
        op: &'static str,
        /// The line sent.
        sent: String,
        /// How long the client waited.
        timeout: Duration,
    },
    /// A line that is not a protocol reply, or not the reply the command expects.
    #[error("the sidecar answered {op} ({sent}) with {received}: {problem}")]
    Unexpected {
        /// The command's `op` (`ready` for the first line).
        op: &'static str,
        /// The line sent.
        sent: String,
        /// The line received.
        received: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The sidecar answered with an `error` reply (it keeps serving).
    #[error("the sidecar refused {op} ({sent}): {message}")]
    Refused {
        /// The command's `op`.
        op: &'static str,
        /// The line sent.
        sent: String,
        /// The error reply's message.
        message: String,
    },
}

fn detail(reason: &Option<String>) -> String {
    reason
        .as_ref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default()
}

impl ClientError {
    /// Whether the process's pipes closed (its owner should say how the process ended).
    pub fn is_closed(&self) -> bool {
        matches!(self, ClientError::Closed { .. } | ClientError::Send { .. })
    }

    /// The `op` of the command that failed (`ready` for the ready line).
    pub fn op(&self) -> &'static str {
        match self {
            ClientError::Send { op, .. }
            | ClientError::Closed { op, .. }
            | ClientError::Timeout { op, .. }
            | ClientError::Unexpected { op, .. }
            | ClientError::Refused { op, .. } => op,
        }
    }
}

/// `line`, cut to [`QUOTE_CHARS`] characters for messages.
fn quote(line: &str) -> String {
    match line.char_indices().nth(QUOTE_CHARS) {
        Some((at, _)) => format!("{}… ({} bytes)", &line[..at], line.len()),
        None => line.to_string(),
    }
}

type Writer = Pin<Box<dyn AsyncWrite + Send>>;
type Reader = Lines<BufReader<Pin<Box<dyn AsyncRead + Send>>>>;

/// A connected client: one command in flight at a time (`&mut self`); share it behind a
/// `tokio::sync::Mutex` when several tasks steer one sidecar.
pub struct Client {
    /// `None` once closed.
    stdin: Option<Writer>,
    stdout: Reader,
    ready: Ready,
    next_id: u64,
    reply_timeout: Option<Duration>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("ready", &self.ready)
            .field("next_id", &self.next_id)
            .field("reply_timeout", &self.reply_timeout)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Reads the ready line from `stdout` (waiting at most `ready_timeout`) and returns a
    /// client that writes commands to `stdin`.
    pub async fn connect<W, R>(
        stdin: W,
        stdout: R,
        ready_timeout: Duration,
    ) -> Result<Client, ClientError>
    where
        W: AsyncWrite + Send + 'static,
        R: AsyncRead + Send + 'static,
    {
        let stdout: Pin<Box<dyn AsyncRead + Send>> = Box::pin(stdout);
        let mut stdout = BufReader::new(stdout).lines();
        let sent = "nothing (waiting for the ready line)".to_string();
        let line = match tokio::time::timeout(ready_timeout, stdout.next_line()).await {
            Err(_) => {
                return Err(ClientError::Timeout {
                    op: "ready",
                    sent,
                    timeout: ready_timeout,
                });
            }
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => {
                return Err(ClientError::Closed {
                    op: "ready",
                    sent,
                    reason: None,
                });
            }
            Ok(Err(e)) => {
                return Err(ClientError::Closed {
                    op: "ready",
                    sent,
                    reason: Some(e.to_string()),
                });
            }
        };
        let unexpected = |problem: String| ClientError::Unexpected {
            op: "ready",
            sent: sent.clone(),
            received: quote(&line),
            problem,
        };
        let ready = match Reply::parse_line(&line) {
            Ok((
                _,
                Reply::Ready {
                    server_url,
                    base_url,
                    protocol,
                    pid,
                },
            )) => Ready {
                server_url,
                base_url,
                protocol,
                pid,
            },
            Ok(_) => return Err(unexpected("not a ready line".into())),
            Err(e) => return Err(unexpected(format!("not a protocol reply: {e}"))),
        };
        if ready.protocol > PROTOCOL_VERSION {
            return Err(unexpected(format!(
                "protocol {} is newer than this client's {PROTOCOL_VERSION}",
                ready.protocol
            )));
        }
        Ok(Client {
            stdin: Some(Box::pin(stdin)),
            stdout,
            ready,
            next_id: 1,
            reply_timeout: None,
        })
    }

    /// Fails a command whose reply takes longer than `timeout` (plus, for `requests`, the
    /// time it was asked to wait); `None`, the default, waits as long as it takes.
    pub fn set_reply_timeout(&mut self, timeout: Option<Duration>) {
        self.reply_timeout = timeout;
    }

    /// What the ready line announced.
    pub fn ready(&self) -> &Ready {
        &self.ready
    }

    /// `http://HOST:PORT`.
    pub fn server_url(&self) -> &str {
        &self.ready.server_url
    }

    /// `http://HOST:PORT/v1`, the provider base URL for codex.
    pub fn base_url(&self) -> &str {
        &self.ready.base_url
    }

    /// Sends `command` and returns the reply that echoes its id; an `error` reply is
    /// [`ClientError::Refused`]. Replies to earlier commands whose caller stopped waiting
    /// are skipped.
    pub async fn call(&mut self, command: &Command) -> Result<Reply, ClientError> {
        let op = command.op();
        let id = self.next_id;
        self.next_id += 1;
        let line = command.to_line(Some(&json!(id)));
        let sent = quote(&line);
        if let Err(source) = self.write_line(line).await {
            return Err(ClientError::Send { op, sent, source });
        }
        let waits = match command {
            Command::Requests { timeout_ms, .. } => Duration::from_millis(*timeout_ms),
            _ => Duration::ZERO,
        };
        let reply = match self.reply_timeout {
            None => self.read_reply(op, &sent, id).await,
            Some(timeout) => {
                let timeout = timeout + waits;
                match tokio::time::timeout(timeout, self.read_reply(op, &sent, id)).await {
                    Ok(reply) => reply,
                    Err(_) => Err(ClientError::Timeout {
                        op,
                        sent: sent.clone(),
                        timeout,
                    }),
                }
            }
        }?;
        match reply {
            Reply::Error { message } => Err(ClientError::Refused { op, sent, message }),
            reply => Ok(reply),
        }
    }

    async fn write_line(&mut self, mut line: String) -> std::io::Result<()> {
        line.push('\n');
        let stdin = self.stdin.as_mut().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdin was closed")
        })?;
        stdin.write_all(line.as_bytes()).await?;
        stdin.flush().await
    }

    /// Reads lines until the reply carrying `id`.
    async fn read_reply(
        &mut self,
        op: &'static str,
        sent: &str,
        id: u64,
    ) -> Result<Reply, ClientError> {
        loop {
            let line = match self.stdout.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => {
                    return Err(ClientError::Closed {
                        op,
                        sent: sent.to_string(),
                        reason: None,
                    });
                }
                Err(e) => {
                    return Err(ClientError::Closed {
                        op,
                        sent: sent.to_string(),
                        reason: Some(e.to_string()),
                    });
                }
            };
            let unexpected = |problem: String| ClientError::Unexpected {
                op,
                sent: sent.to_string(),
                received: quote(&line),
                problem,
            };
            let (echoed, reply) = Reply::parse_line(&line)
                .map_err(|e| unexpected(format!("not a protocol reply: {e}")))?;
            match echoed.as_ref().and_then(Value::as_u64) {
                Some(echoed) if echoed == id => return Ok(reply),
                // A reply to an earlier command whose caller gave up waiting.
                Some(echoed) if echoed < id => continue,
                _ => return Err(unexpected(format!("expected a reply with id {id}"))),
            }
        }
    }

    /// A reply of the wrong type for `command`.
    fn wrong_reply(command: &Command, reply: &Reply) -> ClientError {
        ClientError::Unexpected {
            op: command.op(),
            sent: quote(&command.to_line(None)),
            received: quote(&reply.to_line(None)),
            problem: "a reply of another type".into(),
        }
    }

    /// Queues scripted responses after those already waiting (all or none); returns how
    /// many wait now.
    pub async fn enqueue(&mut self, responses: &[Scripted]) -> Result<usize, ClientError> {
        let command = Command::Enqueue {
            responses: responses.to_vec(),
        };
        match self.call(&command).await? {
            Reply::Enqueued { pending } => Ok(pending),
            other => Err(Client::wrong_reply(&command, &other)),
        }
    }

    /// The captured requests that `filter` wants, as they are now.
    pub async fn requests(
        &mut self,
        filter: RequestFilter,
    ) -> Result<Vec<CapturedRequest>, ClientError> {
        self.wait_for(filter, 0, Duration::ZERO).await
    }

    /// Waits until at least `min` captured requests match `filter` or `timeout` passes,
    /// then returns those that match (fewer than `min` when the time ran out).
    pub async fn wait_for(
        &mut self,
        filter: RequestFilter,
        min: usize,
        timeout: Duration,
    ) -> Result<Vec<CapturedRequest>, ClientError> {
        let command = Command::Requests {
            min: min as u64,
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            since: filter.since,
            all: filter.all,
        };
        match self.call(&command).await? {
            Reply::Requests { requests } => Ok(requests),
            other => Err(Client::wrong_reply(&command, &other)),
        }
    }

    /// The sidecar's counters.
    pub async fn status(&mut self) -> Result<Status, ClientError> {
        match self.call(&Command::Status).await? {
            Reply::Status(status) => Ok(status),
            other => Err(Client::wrong_reply(&Command::Status, &other)),
        }
    }

    /// Sets the body that `GET …/models` answers.
    pub async fn set_models(&mut self, body: &Value) -> Result<(), ClientError> {
        let command = Command::Models { body: body.clone() };
        self.expect_ok(&command).await
    }

    /// Empties the script and the captured requests.
    pub async fn reset(&mut self) -> Result<(), ClientError> {
        self.expect_ok(&Command::Reset).await
    }

    /// Opens the gate `gate` (v2): the responses held at it go on. Returns how many were
    /// held.
    pub async fn release(&mut self, gate: &str) -> Result<usize, ClientError> {
        let command = Command::Release {
            gate: gate.to_string(),
        };
        match self.call(&command).await? {
            Reply::Released { held, .. } => Ok(held),
            other => Err(Client::wrong_reply(&command, &other)),
        }
    }

    /// Waits until a response is held at the gate `gate`, or `timeout` passes (v2).
    /// Returns how many are held (0 after a timeout).
    pub async fn wait_gate(&mut self, gate: &str, timeout: Duration) -> Result<usize, ClientError> {
        let command = Command::WaitGate {
            gate: gate.to_string(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        };
        match self.call(&command).await? {
            Reply::Gate { held, .. } => Ok(held),
            other => Err(Client::wrong_reply(&command, &other)),
        }
    }

    /// Queues WebSocket connection scripts and sets the warm-up answer when `warmup` is
    /// given (v2). Returns how many connection scripts wait for upgrades.
    pub async fn websocket(
        &mut self,
        warmup: Option<Warmup>,
        connections: Vec<ConnectionScript>,
    ) -> Result<usize, ClientError> {
        let command = Command::Websocket {
            warmup,
            connections,
        };
        match self.call(&command).await? {
            Reply::Websocket { connections } => Ok(connections),
            other => Err(Client::wrong_reply(&command, &other)),
        }
    }

    async fn expect_ok(&mut self, command: &Command) -> Result<(), ClientError> {
        match self.call(command).await? {
            Reply::Ok => Ok(()),
            other => Err(Client::wrong_reply(command, &other)),
        }
    }

    /// Tells the sidecar to exit; returns its leftovers (the process then exits, with
    /// status 3 when there were leftovers, unless it runs with `--lenient`).
    pub async fn shutdown(&mut self) -> Result<ShutdownReply, ClientError> {
        match self.call(&Command::Shutdown).await? {
            Reply::Shutdown {
                pending,
                unscripted,
            } => Ok(ShutdownReply {
                pending,
                unscripted,
            }),
            other => Err(Client::wrong_reply(&Command::Shutdown, &other)),
        }
    }

    /// Closes the sidecar's stdin (drops the pipe): it shuts down without a reply. Later
    /// commands fail with [`ClientError::Send`].
    pub fn close(&mut self) {
        self.stdin = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, DuplexStream};

    /// A client on in-memory pipes, and the other ends (the fake sidecar's stdin lines and
    /// its stdout).
    async fn connected(ready: &str) -> (Result<Client, ClientError>, FakeSidecar) {
        let (client_in, sidecar_in) = tokio::io::duplex(1 << 16);
        let (mut sidecar_out, client_out) = tokio::io::duplex(1 << 16);
        sidecar_out.write_all(ready.as_bytes()).await.unwrap();
        let client = Client::connect(client_in, client_out, Duration::from_secs(1)).await;
        let fake = FakeSidecar {
            commands: BufReader::new(sidecar_in).lines(),
            replies: sidecar_out,
        };
        (client, fake)
    }

    struct FakeSidecar {
        commands: Lines<BufReader<DuplexStream>>,
        replies: DuplexStream,
    }

    impl FakeSidecar {
        async fn command(&mut self) -> Value {
            let line = self.commands.next_line().await.unwrap().unwrap();
            serde_json::from_str(&line).unwrap()
        }

        async fn reply(&mut self, line: &str) {
            self.replies.write_all(line.as_bytes()).await.unwrap();
            self.replies.write_all(b"\n").await.unwrap();
        }
    }

    const READY: &str = "{\"type\":\"ready\",\"server_url\":\"http://127.0.0.1:9\",\"base_url\":\"http://127.0.0.1:9/v1\",\"protocol\":1,\"pid\":42}\n";

    #[tokio::test]
    async fn reads_the_ready_line_and_matches_replies_by_id() {
        let (client, mut fake) = connected(READY).await;
        let mut client = client.unwrap();
        assert_eq!(client.base_url(), "http://127.0.0.1:9/v1");
        assert_eq!(client.ready().pid, 42);
        let server = tokio::spawn(async move {
            let first = fake.command().await;
            assert_eq!(first, json!({"op": "status", "id": 1}));
            let second = fake.command().await;
            assert_eq!(second["op"], "enqueue");
            assert_eq!(second["id"], 2);
            // A stale reply to command 1 comes first; the client skips it.
            fake.reply(r#"{"type":"ok","id":1}"#).await;
            fake.reply(r#"{"type":"enqueued","pending":1,"id":2}"#)
                .await;
            let third = fake.command().await;
            assert_eq!(third["id"], 3);
            fake.reply(r#"{"type":"error","message":"unknown op: x","id":3}"#)
                .await;
            fake
        });
        // The first call is abandoned before its reply, as a caller's timeout would.
        let abandoned = tokio::time::timeout(Duration::from_millis(50), client.status()).await;
        assert!(abandoned.is_err());
        let pending = client
            .enqueue(&[Scripted::sse(crate::wire::bodies::empty_response("r"))])
            .await
            .unwrap();
        assert_eq!(pending, 1);
        let refused = client.reset().await.unwrap_err();
        assert_eq!(
            refused.to_string(),
            r#"the sidecar refused reset ({"op":"reset","id":3}): unknown op: x"#
        );
        server.await.unwrap();
    }

    #[tokio::test]
    async fn errors_name_what_was_sent_and_what_came_back() {
        let (client, mut fake) = connected(READY).await;
        let mut client = client.unwrap();
        fake.reply(r#"{"type":"ok","id":1}"#).await;
        let wrong = client.status().await.unwrap_err();
        assert_eq!(
            wrong.to_string(),
            r#"the sidecar answered status ({"op":"status"}) with {"type":"ok"}: a reply of another type"#
        );
        fake.reply("garbage").await;
        let garbage = client.reset().await.unwrap_err();
        assert!(
            garbage
                .to_string()
                .starts_with(r#"the sidecar answered reset ({"op":"reset","id":2}) with garbage: not a protocol reply"#),
            "{garbage}"
        );
        drop(fake);
        let closed = client.shutdown().await.unwrap_err();
        assert!(closed.is_closed(), "{closed}");
        assert_eq!(closed.op(), "shutdown");
    }

    #[tokio::test]
    async fn a_bad_or_missing_ready_line_is_an_error() {
        let (client, _fake) = connected("{\"type\":\"ok\"}\n").await;
        assert_eq!(
            client.unwrap_err().to_string(),
            r#"the sidecar answered ready (nothing (waiting for the ready line)) with {"type":"ok"}: not a ready line"#
        );
        let (client_in, _sidecar_in) = tokio::io::duplex(64);
        let (sidecar_out, client_out) = tokio::io::duplex(64);
        drop(sidecar_out);
        let closed = Client::connect(client_in, client_out, Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(closed.is_closed());
        let (client_in, _sidecar_in) = tokio::io::duplex(64);
        let (_sidecar_out, client_out) = tokio::io::duplex(64);
        let silent = Client::connect(client_in, client_out, Duration::from_millis(20))
            .await
            .unwrap_err();
        assert!(matches!(silent, ClientError::Timeout { .. }), "{silent}");
    }

    #[tokio::test]
    async fn a_reply_timeout_covers_the_requested_wait() {
        let (client, mut fake) = connected(READY).await;
        let mut client = client.unwrap();
        client.set_reply_timeout(Some(Duration::from_millis(30)));
        let filter = RequestFilter::default();
        let slow = client
            .wait_for(filter, 1, Duration::from_millis(20))
            .await
            .unwrap_err();
        match slow {
            ClientError::Timeout { timeout, .. } => {
                assert_eq!(timeout, Duration::from_millis(50))
            }
            other => panic!("{other}"),
        }
        let command = fake.command().await;
        assert_eq!(
            command,
            json!({"op": "requests", "min": 1, "timeout_ms": 20, "since": 0, "all": false, "id": 1})
        );
    }

    #[test]
    fn long_lines_are_cut_in_messages() {
        let long = "é".repeat(400);
        let quoted = quote(&long);
        assert!(quoted.ends_with("… (800 bytes)"), "{quoted}");
        assert_eq!(quoted.chars().filter(|c| *c == 'é').count(), QUOTE_CHARS);
        assert_eq!(quote("short"), "short");
    }
}
