//! A stand-in integrator program for the tests of `codex-parity record`.
//!
//! It speaks the app-server's JSON-RPC over one of two transports:
//!
//! - stdio (the default): it launches `codex app-server` itself, as an integrator's program
//!   would, and writes and reads one JSON object per line. Codex is the program named by the
//!   environment variable `CODEX_PARITY_CODEX`, else `codex` on `PATH`. At the end it closes
//!   codex's stdin and waits for codex to exit.
//! - WebSocket: when `CODEX_PARITY_LISTEN` is set (e.g. `ws://127.0.0.1:45123`, a listener of
//!   `codex app-server --listen ws://IP:PORT`), it starts no codex and connects there, retrying
//!   for 10 s while the listener starts; one JSON object per text frame. At the end it sends a
//!   close frame. Codex answers it by dropping the connection, without a close frame of its own,
//!   and its listener goes on running.
//!
//! The one argument is the mode, the same on both transports:
//!
//! - `plain`: one turn, "say hello".
//! - `tool`: a thread with the dynamic tool `lookup`; its `item/tool/call` gets "x is 42".
//! - `approval`: an `untrusted`, workspace-write thread; command approvals are accepted.
//! - `steer`: `turn/steer` 1 s after `turn/started`; the steer must succeed.
//! - `interrupt`: `turn/interrupt` 1 s after `turn/started`; the interrupt must succeed.
//! - `exit-at-once`: exits 0 at once, without starting codex or connecting.
//! - `fail`: the `plain` flow, then exit status 3.
//!
//! Every mode but `exit-at-once` prints `turn <status>` when its turn completes. Any failure
//! exits non-zero with a message on stderr. No wait is longer than 30 s, and a codex it started
//! is killed on exit. `driver/tests/record/client.py` is its Python twin on stdio: same modes,
//! same behaviour.
//!
//! ```text
//! cargo run -p codex-parity --example record_client -- tool
//! CODEX_PARITY_LISTEN=ws://127.0.0.1:45123 cargo run -p codex-parity --example record_client \
//!     -- plain
//! ```

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::{self, Child, ChildStdin, Command, ExitCode};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use codex_parity_sidecar::handshake;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{Error as WsError, Message, WebSocket, protocol::Role};

/// The longest any one wait may take.
const WAIT: Duration = Duration::from_secs(30);
/// How long the client retries connecting to a listener that may still be starting.
const CONNECT_WAIT: Duration = Duration::from_secs(10);
/// The pause between two attempts to connect.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// How long codex gets to exit after its stdin is closed (or to answer the close frame).
const EXIT_WAIT: Duration = Duration::from_secs(5);
/// The pause between `turn/started` and the steer or interrupt.
const PAUSE: Duration = Duration::from_secs(1);
/// The exit status of the `fail` mode.
const FAIL_STATUS: u8 = 3;

/// What the client does: the one argument.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Plain,
    Tool,
    Approval,
    Steer,
    Interrupt,
    ExitAtOnce,
    Fail,
}

impl Mode {
    /// Every mode with its name.
    const ALL: [(&'static str, Mode); 7] = [
        ("plain", Mode::Plain),
        ("tool", Mode::Tool),
        ("approval", Mode::Approval),
        ("steer", Mode::Steer),
        ("interrupt", Mode::Interrupt),
        ("exit-at-once", Mode::ExitAtOnce),
        ("fail", Mode::Fail),
    ];

    /// The mode named `name`.
    fn parse(name: &str) -> Option<Mode> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }

    /// The text of the mode's turn.
    fn turn_text(self) -> &'static str {
        match self {
            Mode::Plain | Mode::Fail | Mode::ExitAtOnce => "say hello",
            Mode::Tool => "look up the key x",
            Mode::Approval => "run the command",
            Mode::Steer => "write a fruit list",
            Mode::Interrupt => "take your time",
        }
    }

    /// The `thread/start` params of the mode, with `cwd` the client's directory.
    fn thread_params(self) -> anyhow::Result<Value> {
        let cwd = std::env::current_dir().context("reading the current directory")?;
        let mut params = json!({"cwd": cwd});
        match self {
            Mode::Tool => {
                params["dynamicTools"] = json!([{
                    "name": "lookup",
                    "description": "Look a key up.",
                    "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}
                }]);
            }
            Mode::Approval => {
                params["approvalPolicy"] = json!("untrusted");
                params["sandbox"] = json!("workspace-write");
            }
            _ => {}
        }
        Ok(params)
    }

    /// The result this mode answers the server request `method` with, if it handles it.
    fn answer(self, method: &str) -> Option<Value> {
        match (self, method) {
            (Mode::Tool, "item/tool/call") => Some(json!({
                "success": true,
                "contentItems": [{"type": "inputText", "text": "x is 42"}]
            })),
            (Mode::Approval, "item/commandExecution/requestApproval") => {
                Some(json!({"decision": "accept"}))
            }
            (Mode::Approval, "execCommandApproval") => Some(json!({"decision": "approved"})),
            _ => None,
        }
    }
}

/// What one read from the transport gave.
enum Incoming {
    /// One message: a stdout line or a WebSocket text frame.
    Text(String),
    /// Nothing before the deadline.
    Timeout,
    /// The end of codex's output: stdout closed, or the WebSocket closed.
    Closed,
}

/// A `codex app-server` the client started, spoken to by lines on its stdin and stdout.
/// Dropping it kills codex if it still runs.
struct Stdio {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Codex's stdout lines, from a reader thread; disconnected at the end of the output.
    inbox: Receiver<String>,
}

impl Stdio {
    /// Starts `$CODEX_PARITY_CODEX app-server` (or `codex app-server`) with piped stdio.
    fn spawn() -> anyhow::Result<Stdio> {
        let program = std::env::var_os("CODEX_PARITY_CODEX")
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "codex".into());
        let mut child = Command::new(&program)
            .arg("app-server")
            .stdin(process::Stdio::piped())
            .stdout(process::Stdio::piped())
            .stderr(process::Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start {} app-server", program.to_string_lossy()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("codex's stdout is not piped")?;
        let (tx, inbox) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Stdio {
            child,
            stdin,
            inbox,
        })
    }

    /// Closes codex's stdin and waits for it to exit, killing it after [`EXIT_WAIT`].
    fn close(&mut self) -> anyhow::Result<()> {
        drop(self.stdin.take());
        let deadline = Instant::now() + EXIT_WAIT;
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// How the client speaks to codex.
enum Transport {
    /// Lines on the stdio of a codex the client started.
    Stdio(Stdio),
    /// Text frames on a WebSocket to an app-server listener; reads poll with a read timeout.
    WebSocket(Box<WebSocket<TcpStream>>),
}

impl Transport {
    /// The WebSocket to `url` if `CODEX_PARITY_LISTEN` names one, else a codex on stdio.
    fn open() -> anyhow::Result<Transport> {
        match std::env::var("CODEX_PARITY_LISTEN") {
            Ok(url) if !url.is_empty() => Ok(Transport::WebSocket(Box::new(connect(&url)?))),
            _ => Ok(Transport::Stdio(Stdio::spawn()?)),
        }
    }

    /// Sends one message: a line on codex's stdin, or a text frame.
    fn send(&mut self, text: String) -> anyhow::Result<()> {
        match self {
            Transport::Stdio(stdio) => {
                let stdin = stdio.stdin.as_mut().context("codex's stdin is closed")?;
                stdin
                    .write_all(text.as_bytes())
                    .and_then(|()| stdin.write_all(b"\n"))
                    .and_then(|()| stdin.flush())
                    .context("cannot write to codex (has it exited?)")
            }
            Transport::WebSocket(socket) => socket
                .send(Message::text(text))
                .context("cannot send on the WebSocket (has codex closed it?)"),
        }
    }

    /// The next message, waiting until `deadline` at most.
    fn receive(&mut self, deadline: Instant) -> anyhow::Result<Incoming> {
        match self {
            Transport::Stdio(stdio) => {
                let left = deadline.saturating_duration_since(Instant::now());
                match stdio.inbox.recv_timeout(left) {
                    Ok(line) => Ok(Incoming::Text(line)),
                    Err(RecvTimeoutError::Timeout) => Ok(Incoming::Timeout),
                    Err(RecvTimeoutError::Disconnected) => Ok(Incoming::Closed),
                }
            }
            Transport::WebSocket(socket) => loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(Incoming::Timeout);
                }
                socket
                    .get_mut()
                    .set_read_timeout(Some(left))
                    .context("setting the WebSocket's read timeout")?;
                // A timed-out read leaves a partial frame buffered; the next read goes on.
                match socket.read() {
                    Ok(Message::Text(text)) => return Ok(Incoming::Text(text.as_str().into())),
                    Ok(Message::Close(_)) => return Ok(Incoming::Closed),
                    Ok(Message::Binary(data)) => {
                        eprintln!("record-test-client: a binary frame of {} bytes", data.len());
                    }
                    // Pings are answered by the library on the next read or write.
                    Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => {}
                    Err(WsError::Io(err))
                        if matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                    Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => {
                        return Ok(Incoming::Closed);
                    }
                    Err(err) => return Err(err).context("reading from the WebSocket"),
                }
            },
        }
    }

    /// What the end of codex's output is, for messages.
    fn closed(&self) -> &'static str {
        match self {
            Transport::Stdio(_) => "codex closed its stdout",
            Transport::WebSocket(_) => "codex closed the WebSocket",
        }
    }

    /// Ends the session: closes codex's stdin and waits for its exit, or sends a close frame
    /// and waits (for at most [`EXIT_WAIT`]) for codex's.
    fn close(&mut self) -> anyhow::Result<()> {
        match self {
            Transport::Stdio(stdio) => stdio.close(),
            Transport::WebSocket(socket) => {
                socket.close(None).context("sending the close frame")?;
                let deadline = Instant::now() + EXIT_WAIT;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(());
                    }
                    socket
                        .get_mut()
                        .set_read_timeout(Some(left))
                        .context("setting the WebSocket's read timeout")?;
                    match socket.read() {
                        Ok(_) => {}
                        Err(WsError::Io(err))
                            if matches!(
                                err.kind(),
                                ErrorKind::WouldBlock | ErrorKind::TimedOut
                            ) => {}
                        // The close handshake is done, or codex dropped the connection.
                        Err(_) => return Ok(()),
                    }
                }
            }
        }
    }
}

/// Connects to the app-server listener at `url` (`ws://IP:PORT`), retrying for
/// [`CONNECT_WAIT`] while the listener may still be starting. A bad URL fails at once.
fn connect(url: &str) -> anyhow::Result<WebSocket<TcpStream>> {
    let (host, port) = address(url).with_context(|| format!("bad listener URL {url}"))?;
    let deadline = Instant::now() + CONNECT_WAIT;
    loop {
        match try_connect(url, (host.as_str(), port), deadline) {
            Ok(socket) => return Ok(socket),
            Err(err) if Instant::now() + RETRY_PAUSE >= deadline => {
                return Err(err).with_context(|| {
                    format!(
                        "cannot connect to the app-server listener {url} (tried for {} s)",
                        CONNECT_WAIT.as_secs()
                    )
                });
            }
            Err(_) => std::thread::sleep(RETRY_PAUSE),
        }
    }
}

/// The host and port of the `ws://` URL `url`.
fn address(url: &str) -> anyhow::Result<(String, u16)> {
    let request = handshake::request(url)?;
    let uri = request.uri();
    if uri.scheme_str() != Some("ws") {
        bail!("only ws:// URLs are supported");
    }
    let host = uri.host().context("no host in the URL")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_string(), uri.port_u16().unwrap_or(80)))
}

/// One attempt at the WebSocket to `url` at `address`: the TCP connection, then the
/// handshake, which may take until `deadline` at most.
fn try_connect(
    url: &str,
    address: (&str, u16),
    deadline: Instant,
) -> anyhow::Result<WebSocket<TcpStream>> {
    let mut stream = TcpStream::connect(address).context("cannot open the TCP connection")?;
    stream.set_nodelay(true)?;
    let left = deadline.saturating_duration_since(Instant::now());
    stream.set_read_timeout(Some(left.max(RETRY_PAUSE)))?;
    let failed = |err: handshake::HandshakeError| anyhow!("the WebSocket handshake failed: {err}");
    let key = handshake::new_key();
    let request = handshake::request(url).map_err(failed)?;
    stream.write_all(&handshake::client_request(&request, &key).map_err(failed)?)?;
    let mut answer = Vec::new();
    let used = loop {
        if let Some((_, used)) = handshake::client_response(&answer, &key, None).map_err(failed)? {
            break used;
        }
        let mut chunk = [0u8; 4096];
        let n = stream
            .read(&mut chunk)
            .context("reading the handshake's answer")?;
        if n == 0 {
            bail!("the listener closed the connection during the WebSocket handshake");
        }
        answer.extend_from_slice(&chunk[..n]);
    };
    let frames = answer.split_off(used);
    Ok(WebSocket::from_partially_read(
        stream,
        frames,
        Role::Client,
        None,
    ))
}

/// The session with codex: its transport and what the session saw.
struct Codex {
    transport: Transport,
    next_id: u64,
    mode: Mode,
    /// The turn ids whose `turn/started` arrived.
    started: HashSet<String>,
    /// The status of each completed turn, by turn id.
    completed: HashMap<String, String>,
}

impl Codex {
    /// Opens the session: the transport [`Transport::open`] chooses.
    fn open(mode: Mode) -> anyhow::Result<Codex> {
        Ok(Codex {
            transport: Transport::open()?,
            next_id: 1,
            mode,
            started: HashSet::new(),
            completed: HashMap::new(),
        })
    }

    /// Sends one message to codex.
    fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        self.transport.send(serde_json::to_string(message)?)
    }

    /// The next message from codex, handled (server requests answered, turn events noted);
    /// `None` once `deadline` passed. The end of codex's output is an error.
    fn next(&mut self, deadline: Instant, waiting_for: &str) -> anyhow::Result<Option<Value>> {
        loop {
            if deadline <= Instant::now() {
                return Ok(None);
            }
            let text = match self.transport.receive(deadline)? {
                Incoming::Text(text) => text,
                Incoming::Timeout => return Ok(None),
                Incoming::Closed => {
                    bail!(
                        "{} while the client waited for {waiting_for}",
                        self.transport.closed()
                    )
                }
            };
            match serde_json::from_str::<Value>(&text) {
                Ok(message) if message.is_object() => {
                    self.handle(&message)?;
                    return Ok(Some(message));
                }
                _ => eprintln!("record-test-client: not a JSON object from codex: {text:?}"),
            }
        }
    }

    /// The next message from codex, handled; an error at `deadline`.
    fn receive(&mut self, deadline: Instant, waiting_for: &str) -> anyhow::Result<Value> {
        self.next(deadline, waiting_for)?.ok_or_else(|| {
            anyhow!(
                "timed out after {} s waiting for {waiting_for}",
                WAIT.as_secs()
            )
        })
    }

    /// Answers a server request; notes `turn/started` and `turn/completed`.
    fn handle(&mut self, message: &Value) -> anyhow::Result<()> {
        let method = message["method"].as_str();
        if let (Some(id), Some(method)) = (message.get("id"), method) {
            let reply = match self.mode.answer(method) {
                Some(result) => json!({"id": id, "result": result}),
                None => json!({"id": id, "error": {
                    "code": -32601,
                    "message": "not handled by the test client"
                }}),
            };
            return self.send(&reply);
        }
        let turn = &message["params"]["turn"];
        let id = turn["id"].as_str().unwrap_or_default().to_string();
        match method {
            Some("turn/started") => {
                self.started.insert(id);
            }
            Some("turn/completed") => {
                let status = turn["status"].as_str().unwrap_or("(no status)");
                self.completed.insert(id, status.to_string());
            }
            _ => {}
        }
        Ok(())
    }

    /// Sends a request and returns its result; an error reply is an error.
    fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + WAIT;
        let waiting_for = format!("the reply to {method}");
        loop {
            let mut reply = self.receive(deadline, &waiting_for)?;
            if reply.get("method").is_some() || reply["id"] != json!(id) {
                continue;
            }
            if let Some(error) = reply.get("error") {
                bail!("{method} failed: {error}");
            }
            match reply.get_mut("result") {
                Some(result) => return Ok(result.take()),
                None => bail!("{method}: a reply with neither result nor error: {reply}"),
            }
        }
    }

    /// Handles messages until `done` holds of the session, for at most [`WAIT`].
    fn wait_until(
        &mut self,
        done: impl Fn(&Codex) -> bool,
        waiting_for: &str,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + WAIT;
        while !done(self) {
            self.receive(deadline, waiting_for)?;
        }
        Ok(())
    }

    /// Handles the messages that arrive in the next `pause` (answering server requests).
    fn pause(&mut self, pause: Duration, before: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + pause;
        let waiting_for = format!("the end of the pause before {before}");
        while self.next(deadline, &waiting_for)?.is_some() {}
        Ok(())
    }

    /// Ends the session ([`Transport::close`]).
    fn close(&mut self) -> anyhow::Result<()> {
        self.transport.close()
    }
}

/// A one-text user input.
fn text_input(text: &str) -> Value {
    json!([{"type": "text", "text": text}])
}

/// The session of `mode`, from the start of codex to its exit.
fn run(mode: Mode) -> anyhow::Result<()> {
    let mut codex = Codex::open(mode)?;
    codex.request(
        "initialize",
        json!({
            "clientInfo": {"name": "record-test-client", "version": "1.0.0"},
            "capabilities": {"experimentalApi": true}
        }),
    )?;
    codex.send(&json!({"method": "initialized"}))?;
    let started = codex.request("thread/start", mode.thread_params()?)?;
    let thread_id = started["thread"]["id"]
        .as_str()
        .with_context(|| format!("thread/start: no result.thread.id in {started}"))?
        .to_string();
    let input = text_input(mode.turn_text());
    let turn = codex.request("turn/start", json!({"threadId": thread_id, "input": input}))?;
    let turn_id = turn["turn"]["id"]
        .as_str()
        .with_context(|| format!("turn/start: no result.turn.id in {turn}"))?
        .to_string();
    if matches!(mode, Mode::Steer | Mode::Interrupt) {
        let id = turn_id.clone();
        codex.wait_until(
            move |c| c.started.contains(&id) || c.completed.contains_key(&id),
            "turn/started",
        )?;
        if codex.completed.contains_key(&turn_id) {
            bail!("the turn completed before the {mode:?} could be sent");
        }
        if mode == Mode::Steer {
            codex.pause(PAUSE, "turn/steer")?;
            let input = text_input("also mention bananas");
            codex.request(
                "turn/steer",
                json!({"threadId": thread_id, "input": input, "expectedTurnId": turn_id}),
            )?;
        } else {
            codex.pause(PAUSE, "turn/interrupt")?;
            codex.request(
                "turn/interrupt",
                json!({"threadId": thread_id, "turnId": turn_id}),
            )?;
        }
    }
    let id = turn_id.clone();
    codex.wait_until(move |c| c.completed.contains_key(&id), "turn/completed")?;
    if let Some(status) = codex.completed.get(&turn_id) {
        println!("turn {status}");
    }
    codex.close()
}

/// Runs the mode named by the one argument; returns the exit status.
fn client() -> anyhow::Result<u8> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = Mode::ALL.iter().map(|(n, _)| *n).collect();
    let mode = match args.as_slice() {
        [name] => Mode::parse(name),
        _ => None,
    }
    .with_context(|| {
        let names = names.join(", ");
        format!("record-test-client: usage: record_client MODE (one of {names})")
    })?;
    if mode == Mode::ExitAtOnce {
        return Ok(0);
    }
    run(mode).with_context(|| format!("record-test-client ({})", args.join(" ")))?;
    if mode == Mode::Fail {
        eprintln!("record-test-client (fail): failing on purpose with status {FAIL_STATUS}");
        return Ok(FAIL_STATUS);
    }
    Ok(0)
}

fn main() -> ExitCode {
    match client() {
        Ok(status) => ExitCode::from(status),
        // One line, whatever `RUST_BACKTRACE` says: the recorder's tests read this stderr.
        Err(err) => {
            eprintln!("{err:#}");
            ExitCode::FAILURE
        }
    }
}
