//! A client for one `codex app-server` process: JSON-RPC over JSON lines on its stdin and
//! stdout, with per-call timeouts, a log of everything the server sent, and handlers for the
//! requests the server sends to the client.
//!
//! The transport is a seam: [`AppServer::spawn`] speaks over a child's stdin and stdout,
//! [`AppServer::over`] over any reader and writer (an in-memory pipe in the unit tests, a
//! socket), and [`AppServer::over_websocket`] over a WebSocket, one JSON-RPC message per text
//! frame (what `codex app-server --listen ws://…` and `unix://…` speak, see
//! `crate::app_server::listener`), all with the same typed API.
//!
//! The child runs in its own process group (so a Ctrl-C at the terminal reaches only the
//! harness, which then stops it) and the whole group is killed at once when the client is
//! dropped, so a test that panics or a run that is interrupted leaves no process.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::Command;
use tokio::sync::{oneshot, watch};
use tokio_tungstenite::WebSocketStream;

use crate::app_server::child::{ChildExit, StderrTail};
pub use crate::app_server::connection::{Handler, Inbound};
use crate::app_server::connection::{
    Shared, read_frames, read_lines, read_stderr, watch_child, write_frames, write_lines,
};
use crate::app_server::message::{Message, RequestId, RpcError};
use crate::app_server::transcript::Sent;
use crate::app_server::turn::StartedTurns;
use crate::lock;

/// The default timeout of one call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// What to launch: the binary, its arguments after `app-server`, its environment and cwd.
#[derive(Debug, Clone)]
pub struct AppServerCommand {
    /// The `codex` binary.
    pub program: PathBuf,
    /// Arguments after `app-server` (e.g. `--disable plugins`).
    pub args: Vec<String>,
    /// The complete environment (the caller's is not inherited).
    pub env: Vec<(OsString, OsString)>,
    /// The working directory.
    pub cwd: PathBuf,
    /// A name for error messages, e.g. `codex-0.171.0`.
    pub label: String,
}

impl AppServerCommand {
    /// `program app-server SUBCOMMAND… ARGS AFTER…` with exactly the command's environment
    /// and cwd, in a process group of its own, killed when dropped; `(stdin, stdout)` as
    /// given, stderr piped.
    pub(crate) fn process(
        &self,
        subcommand: &[&str],
        after: &[&str],
        (stdin, stdout): (Stdio, Stdio),
    ) -> Command {
        let mut command = Command::new(&self.program);
        command
            .arg("app-server")
            .args(subcommand)
            .args(&self.args)
            .args(after)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.cwd)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        command
    }
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// Codex answered with a JSON-RPC error.
    #[error("{label}: {method} answered {error}")]
    Rpc {
        /// Which codex.
        label: String,
        /// The method called.
        method: String,
        /// Codex's error object.
        error: RpcError,
    },
    /// No answer in time.
    #[error("{label}: {method} got no answer within {timeout:?}; codex stderr tail:\n{stderr}")]
    Timeout {
        /// Which codex.
        label: String,
        /// The method called.
        method: String,
        /// The timeout that ran out.
        timeout: Duration,
        /// The last lines of codex's stderr.
        stderr: String,
    },
    /// The process exited (or closed stdout) before answering.
    #[error(
        "{label}: codex exited ({status}) while waiting for {method}; codex stderr tail:\n{stderr}"
    )]
    Exited {
        /// Which codex.
        label: String,
        /// The method called.
        method: String,
        /// The exit status, as text.
        status: String,
        /// The last lines of codex's stderr.
        stderr: String,
    },
}

impl CallError {
    /// The JSON-RPC error, when codex answered with one.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            CallError::Rpc { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// A running `codex app-server`.
pub struct AppServer {
    shared: Arc<Shared>,
    next_id: AtomicI64,
    kill: Mutex<Option<oneshot::Sender<()>>>,
    exit_rx: watch::Receiver<Option<ChildExit>>,
    pid: Option<u32>,
    /// Set by [`AppServer::kill`] when the process or connection was still running.
    cut: AtomicBool,
    /// Turn ids `turn/start` returned on this connection, kept for the turn layer (which
    /// records them: the client itself knows no method).
    pub(crate) started_turns: StartedTurns,
    /// The default timeout of [`AppServer::call`].
    pub call_timeout: Duration,
}

impl AppServer {
    /// Spawns `program app-server ARGS` with exactly the given environment.
    pub fn spawn(cmd: &AppServerCommand) -> anyhow::Result<AppServer> {
        let command = cmd.process(&[], &[], (Stdio::piped(), Stdio::piped()));
        AppServer::spawn_process(command, &cmd.label)
    }

    /// Spawns a command the caller built whole (program, arguments, environment, cwd): an
    /// app-server launched the way an integrator launches it, flags before `app-server`
    /// included. Its stdio is piped here, and it runs in a process group of its own that is
    /// killed when the client is dropped, as with [`AppServer::spawn`].
    pub fn spawn_process(mut command: Command, label: &str) -> anyhow::Result<AppServer> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let mut child = command
            .spawn()
            .map_err(|e| anyhow::anyhow!("{label}: cannot start {program}: {e}"))?;
        let pid = child.id();
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdin pipe"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout pipe"))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stderr pipe"))?;
        let (shared, exit_rx, line_rx) = Shared::new(label, None);
        tokio::spawn(write_lines(stdin, line_rx));
        let stderr_done = tokio::spawn(read_stderr(shared.clone(), stderr));
        let stdout_done = tokio::spawn(read_lines(shared.clone(), stdout));
        let (kill_tx, kill_rx) = oneshot::channel();
        tokio::spawn(watch_child(
            shared.clone(),
            child,
            kill_rx,
            stdout_done,
            stderr_done,
        ));
        Ok(AppServer::new(shared, kill_tx, exit_rx, pid))
    }

    /// A client over `reader` and `writer` instead of a process: the same JSON lines, the
    /// same typed API. The "exit" is the end of `reader` ([`ChildExit::Closed`]); `kill`
    /// and dropping the client close the connection.
    pub fn over(
        reader: impl AsyncRead + Unpin + Send + 'static,
        writer: impl AsyncWrite + Unpin + Send + 'static,
        label: &str,
    ) -> AppServer {
        let (shared, exit_rx, line_rx) = Shared::new(label, None);
        let writing = tokio::spawn(write_lines(writer, line_rx));
        let reading = tokio::spawn(read_lines(shared.clone(), reader));
        AppServer::connection(shared, exit_rx, reading, writing)
    }

    /// A client over a WebSocket: each text frame the server sends is one message, each
    /// message the client sends goes in one text frame (a close frame when the client shuts
    /// down). `stderr` is the tail of the process the socket leads to, for error messages.
    /// The "exit" is the end of the socket ([`ChildExit::Closed`]); `kill` and dropping the
    /// client close it.
    pub fn over_websocket<S>(
        socket: WebSocketStream<S>,
        label: &str,
        stderr: Arc<StderrTail>,
    ) -> AppServer
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (shared, exit_rx, line_rx) = Shared::new(label, Some(stderr));
        let (sink, stream) = socket.split();
        let writing = tokio::spawn(write_frames(sink, line_rx));
        let reading = tokio::spawn(read_frames(shared.clone(), stream));
        AppServer::connection(shared, exit_rx, reading, writing)
    }

    /// The client of a connection without a process of its own: the connection ends when
    /// `reading` does, or when the client is killed.
    fn connection(
        shared: Arc<Shared>,
        exit_rx: watch::Receiver<Option<ChildExit>>,
        reading: tokio::task::JoinHandle<()>,
        writing: tokio::task::JoinHandle<()>,
    ) -> AppServer {
        let (kill_tx, kill_rx) = oneshot::channel::<()>();
        let watched = shared.clone();
        tokio::spawn(async move {
            let abort = reading.abort_handle();
            tokio::select! {
                _ = reading => {}
                _ = kill_rx => abort.abort(),
            }
            writing.abort();
            watched.ended(ChildExit::Closed);
        });
        AppServer::new(shared, kill_tx, exit_rx, None)
    }

    fn new(
        shared: Arc<Shared>,
        kill: oneshot::Sender<()>,
        exit_rx: watch::Receiver<Option<ChildExit>>,
        pid: Option<u32>,
    ) -> AppServer {
        AppServer {
            shared,
            next_id: AtomicI64::new(1),
            kill: Mutex::new(Some(kill)),
            exit_rx,
            pid,
            cut: AtomicBool::new(false),
            started_turns: StartedTurns::default(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }

    /// The label given at spawn (e.g. `codex-0.171.0`).
    pub fn label(&self) -> &str {
        &self.shared.label
    }

    /// The process id, if the process started.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Registers the handler for a server-to-client request method. Requests without a
    /// handler are answered with an error and listed by [`AppServer::unhandled_requests`].
    pub fn handle(
        &self,
        method: &str,
        handler: impl Fn(&Value) -> Result<Value, RpcError> + Send + Sync + 'static,
    ) {
        lock(&self.shared.handlers).insert(method.to_string(), Arc::new(handler));
    }

    /// Leaves every later `method` server request unanswered, as a client that never answers
    /// does; the request is still logged (see [`AppServer::messages`]).
    pub fn leave_unanswered(&self, method: &str) {
        lock(&self.shared.held).push(method.to_string());
    }

    /// Server requests that arrived without a registered handler.
    pub fn unhandled_requests(&self) -> Vec<String> {
        lock(&self.shared.unhandled).clone()
    }

    /// Lines on stdout that were not JSON-RPC messages.
    pub fn bad_lines(&self) -> Vec<String> {
        lock(&self.shared.bad_lines).clone()
    }

    /// The last lines codex wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.shared.stderr.text()
    }

    /// Calls `method` with the default timeout.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, CallError> {
        self.call_with_timeout(method, params, self.call_timeout)
            .await
    }

    /// Calls `method` and waits at most `timeout` for the answer.
    pub async fn call_with_timeout(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let id = RequestId::from(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id.clone(), tx);
        lock(&self.shared.asked).insert(id.clone(), method.to_string());
        let line = Message::Request {
            id: id.clone(),
            method: method.to_string(),
            params,
        }
        .to_line();
        if !self.shared.send_line(line) {
            lock(&self.shared.pending).remove(&id);
            return Err(self.exited_error(method));
        }
        lock(&self.shared.requested).push(method.to_string());
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(CallError::Rpc {
                label: self.shared.label.clone(),
                method: method.to_string(),
                error,
            }),
            Ok(Err(_closed)) => Err(self.exited_error(method)),
            Err(_elapsed) => {
                lock(&self.shared.pending).remove(&id);
                Err(CallError::Timeout {
                    label: self.shared.label.clone(),
                    method: method.to_string(),
                    timeout,
                    stderr: self.stderr_tail(),
                })
            }
        }
    }

    fn exited_error(&self, method: &str) -> CallError {
        let status = self
            .exit_rx
            .borrow()
            .as_ref()
            .map_or_else(|| "stdout closed".to_string(), ToString::to_string);
        CallError::Exited {
            label: self.shared.label.clone(),
            method: method.to_string(),
            status,
            stderr: self.stderr_tail(),
        }
    }

    /// Sends a notification (no answer expected).
    pub fn notify(&self, method: &str, params: Value) -> anyhow::Result<()> {
        let line = Message::Notification {
            method: method.to_string(),
            params,
            extra: Default::default(),
        }
        .to_line();
        self.send_raw(&line)
    }

    /// Writes one raw line to codex's stdin (for protocol tests).
    pub fn send_raw(&self, line: &str) -> anyhow::Result<()> {
        if self.shared.send_line(line.to_string()) {
            Ok(())
        } else {
            Err(anyhow::anyhow!(
                "{}: codex stdin is closed",
                self.shared.label
            ))
        }
    }

    /// `initialize` then `initialized`, with `capabilities.experimentalApi` as given.
    pub async fn initialize(&self, experimental: bool) -> Result<Value, CallError> {
        self.initialize_with(json!({"experimentalApi": experimental}))
            .await
    }

    /// `initialize` with the given `capabilities` object, then `initialized`.
    pub async fn initialize_with(&self, capabilities: Value) -> Result<Value, CallError> {
        let result = self
            .call(
                "initialize",
                json!({
                    "clientInfo": {"name": "codex-parity", "title": "codex-parity", "version": env!("CARGO_PKG_VERSION")},
                    "capabilities": capabilities,
                }),
            )
            .await?;
        // A closed stdin shows up on the next call; nothing to report here.
        let _ = self.notify("initialized", Value::Null);
        Ok(result)
    }

    /// Everything the server sent so far, in arrival order: answers (with the method they
    /// answer), notifications and server requests.
    pub fn transcript(&self) -> Vec<Sent> {
        lock(&self.shared.transcript).clone()
    }

    /// The method of every request the client has written to the server so far, in the
    /// order written (answered or not: the transcript holds the answers).
    pub fn requested(&self) -> Vec<String> {
        lock(&self.shared.requested).clone()
    }

    /// A snapshot of every message logged so far.
    pub fn messages(&self) -> Vec<Inbound> {
        lock(&self.shared.log).clone()
    }

    /// How many messages have been logged so far (a cursor for [`AppServer::wait_for`]).
    pub fn cursor(&self) -> usize {
        lock(&self.shared.log).len()
    }

    /// Waits for the first logged message at or after `from` that satisfies `pred`.
    pub async fn wait_for(
        &self,
        from: usize,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&Inbound) -> bool,
    ) -> anyhow::Result<Inbound> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.log_changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // The exit is published only after stdout is drained, so an exit seen before
            // this look means the log is complete.
            let exited = self.exit_rx.borrow().is_some();
            if let Some(found) = lock(&self.shared.log).iter().skip(from).find(|m| pred(m)) {
                return Ok(found.clone());
            }
            if exited {
                anyhow::bail!(
                    "{}: codex exited ({}) while waiting for {what}; stderr tail:\n{}",
                    self.shared.label,
                    self.exit_rx
                        .borrow()
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    self.stderr_tail()
                );
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                anyhow::bail!(
                    "{}: no {what} within {timeout:?}; stderr tail:\n{}",
                    self.shared.label,
                    self.stderr_tail()
                );
            }
        }
    }

    /// Waits for the notification `method` at or after `from` whose params satisfy `pred`.
    pub async fn wait_notification(
        &self,
        from: usize,
        method: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> anyhow::Result<Inbound> {
        self.wait_for(from, timeout, method, |m| m.is(method) && pred(m.params()))
            .await
    }

    /// Stops reading what the server sends, as a client that stops reading does: what it
    /// writes stays in the pipe (or socket) until [`AppServer::resume_reading`]; answers
    /// and notifications wait with it.
    pub fn pause_reading(&self) {
        self.shared.reading.send_replace(false);
    }

    /// Reads again after [`AppServer::pause_reading`].
    pub fn resume_reading(&self) {
        self.shared.reading.send_replace(true);
    }

    /// Kills the process and its process group now (SIGKILL, sent before this returns);
    /// the exit shows in [`AppServer::exit_status`]. A paused reader reads again, so that
    /// what the process wrote is drained.
    pub fn kill(&self) {
        self.resume_reading();
        if let Some(kill) = lock(&self.kill).take() {
            if self.exit_status().is_none() {
                self.cut.store(true, Ordering::SeqCst);
            }
            // The group id is the child's pid, valid until the child is reaped.
            if !self.shared.reaped.load(Ordering::SeqCst)
                && let Some(group) = self
                    .pid
                    .and_then(|p| rustix::process::Pid::from_raw(p as i32))
            {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            let _ = kill.send(());
        }
    }

    /// Whether the client cut the process or connection while it was still running (killed
    /// it, or closed its stdin: [`AppServer::kill`], [`AppServer::shutdown`]): what it had in
    /// flight then could not reach the client.
    pub fn was_cut(&self) -> bool {
        self.cut.load(Ordering::SeqCst)
    }

    /// Whether the process has exited, and how.
    pub fn exit_status(&self) -> Option<ChildExit> {
        self.exit_rx.borrow().clone()
    }

    /// Closes stdin and waits up to `timeout` for the process to exit; kills it after that.
    /// Returns the exit status as text (`did not exit` when even the kill was not seen);
    /// [`AppServer::shutdown_exit`] keeps it typed.
    pub async fn shutdown(&self, timeout: Duration) -> String {
        self.shutdown_exit(timeout)
            .await
            .map_or_else(|| "did not exit".into(), |exit| exit.to_string())
    }

    /// Closes stdin and requires a clean exit within 5 s; `what` names the process in the
    /// error.
    pub async fn exit_cleanly(&self, what: &str) -> anyhow::Result<()> {
        match self.shutdown_exit(Duration::from_secs(5)).await {
            Some(exit) if exit.success() => Ok(()),
            Some(exit) => anyhow::bail!("{what} exited with {exit}"),
            None => anyhow::bail!("{what} did not exit"),
        }
    }

    /// [`AppServer::shutdown`], typed: how the process ended, `None` when it did not.
    pub async fn shutdown_exit(&self, timeout: Duration) -> Option<ChildExit> {
        self.resume_reading();
        if lock(&self.shared.writer).take().is_some() && self.exit_status().is_none() {
            self.cut.store(true, Ordering::SeqCst);
        }
        let mut rx = self.exit_rx.clone();
        let exited = tokio::time::timeout(timeout, rx.wait_for(|s| s.is_some()))
            .await
            .is_ok();
        if !exited {
            self.kill();
            let _ =
                tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|s| s.is_some())).await;
        }
        self.exit_rx.borrow().clone()
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use futures_util::SinkExt;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
    use tokio_tungstenite::tungstenite::Message as Frame;

    use super::*;

    /// The server's end of the pipe, read as lines.
    type ServerLines = tokio::io::Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>;

    /// A client over an in-memory pipe, and the server's end of it as lines.
    fn pair() -> (AppServer, ServerLines, tokio::io::WriteHalf<DuplexStream>) {
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(client_end);
        let app = AppServer::over(read, write, "codex-memory");
        let (server_read, server_write) = tokio::io::split(server_end);
        (app, BufReader::new(server_read).lines(), server_write)
    }

    /// The next line the client wrote, as JSON.
    async fn next(lines: &mut ServerLines) -> Value {
        serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap()
    }

    async fn send(w: &mut tokio::io::WriteHalf<DuplexStream>, line: Value) {
        w.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }

    #[tokio::test]
    async fn answers_are_matched_to_calls_by_id() {
        let (app, mut lines, mut w) = pair();
        let server = tokio::spawn(async move {
            let a: Value = next(&mut lines).await;
            let b: Value = next(&mut lines).await;
            // Answered in the other order.
            send(&mut w, json!({"id": b["id"], "result": "two"})).await;
            send(&mut w, json!({"id": a["id"], "result": "one"})).await;
            (a["method"].clone(), b["method"].clone(), w, lines)
        });
        let (one, two) = tokio::join!(app.call("first", json!({})), async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            app.call("second", json!({})).await
        });
        assert_eq!(one.unwrap(), json!("one"));
        assert_eq!(two.unwrap(), json!("two"));
        let (a, b, _w, _lines) = server.await.unwrap();
        assert_eq!((a, b), (json!("first"), json!("second")));
        let methods: Vec<String> = app.transcript().iter().map(|s| s.method.clone()).collect();
        assert_eq!(
            methods,
            ["second", "first"],
            "each answer names the method it answers"
        );
        assert_eq!(app.requested(), ["first", "second"], "in the order written");
    }

    #[tokio::test]
    async fn rpc_errors_carry_code_and_message_and_bad_lines_are_kept() {
        let (app, mut lines, mut w) = pair();
        let server = tokio::spawn(async move {
            let call: Value = next(&mut lines).await;
            w.write_all(b"not json\n").await.unwrap();
            send(
                &mut w,
                json!({"id": call["id"], "error": {"code": -32600, "message": "Not initialized"}}),
            )
            .await;
            (w, lines)
        });
        let err = app.call("thread/start", json!({})).await.unwrap_err();
        let rpc = err.rpc().expect("an rpc error");
        assert_eq!(
            (rpc.code, rpc.message.as_str()),
            (-32600, "Not initialized")
        );
        assert!(err.to_string().contains("thread/start"), "{err}");
        assert_eq!(app.bad_lines(), ["not json"]);
        drop(server);
    }

    #[tokio::test]
    async fn server_requests_go_to_handlers_and_unhandled_ones_get_an_error() {
        let (app, mut lines, mut w) = pair();
        app.handle("item/tool/call", |params| {
            if params["tool"] == "calc" {
                Ok(json!({"contentItems": [], "success": true}))
            } else {
                Err(RpcError {
                    code: 1,
                    message: "wrong tool".into(),
                    data: None,
                })
            }
        });
        send(
            &mut w,
            json!({"id": 0, "method": "item/tool/call", "params": {"tool": "calc"}}),
        )
        .await;
        let first: Value = next(&mut lines).await;
        assert_eq!(first["id"], 0);
        assert_eq!(first["result"]["success"], true);
        send(
            &mut w,
            json!({"id": 1, "method": "item/commandExecution/requestApproval", "params": {}}),
        )
        .await;
        let second: Value = next(&mut lines).await;
        assert_eq!(second["id"], 1);
        let message = second["error"]["message"].as_str().unwrap();
        assert!(message.contains("no handler"), "{message}");
        assert_eq!(
            app.unhandled_requests(),
            ["item/commandExecution/requestApproval"]
        );
        let methods: Vec<String> = app
            .messages()
            .iter()
            .map(|m| m.method().to_string())
            .collect();
        assert_eq!(
            methods,
            ["item/tool/call", "item/commandExecution/requestApproval"]
        );
    }

    #[tokio::test]
    async fn a_closed_connection_fails_waiting_calls_and_shows_as_closed() {
        let (app, mut lines, w) = pair();
        let call = tokio::spawn(async move {
            // Read the call, then hang up without answering.
            let _ = lines.next_line().await;
            drop(w);
            drop(lines);
        });
        let err = app
            .call_with_timeout("thread/start", json!({}), Duration::from_secs(5))
            .await
            .unwrap_err();
        call.await.unwrap();
        assert!(
            !matches!(err, CallError::Timeout { .. }),
            "failed at once, not timed out: {err}"
        );
        let mut rx = app.exit_rx.clone();
        let _ = tokio::time::timeout(Duration::from_secs(2), rx.wait_for(|e| e.is_some())).await;
        assert_eq!(app.exit_status(), Some(ChildExit::Closed));
        assert!(
            app.notify("x", json!({})).is_err(),
            "no writing after the end"
        );
    }

    #[tokio::test]
    async fn a_websocket_carries_one_message_per_text_frame_both_ways() {
        use tokio_tungstenite::tungstenite::protocol::Role;
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        let client_ws = WebSocketStream::from_raw_socket(client_end, Role::Client, None).await;
        let mut server_ws = WebSocketStream::from_raw_socket(server_end, Role::Server, None).await;
        let tail = Arc::new(StderrTail::new(4));
        let app = AppServer::over_websocket(client_ws, "codex-ws-fake", tail);
        app.handle("item/tool/call", |_| Ok(json!({"success": true})));
        let server = tokio::spawn(async move {
            let Some(Ok(Frame::Text(call))) = server_ws.next().await else {
                panic!("no call frame");
            };
            let call: Value = serde_json::from_str(call.as_str()).unwrap();
            let request = json!({"id": 7, "method": "item/tool/call", "params": {}});
            server_ws
                .send(Frame::text(request.to_string()))
                .await
                .unwrap();
            let Some(Ok(Frame::Text(answer))) = server_ws.next().await else {
                panic!("no answer frame");
            };
            let answer: Value = serde_json::from_str(answer.as_str()).unwrap();
            let reply = json!({"id": call["id"], "result": {"ok": call["method"]}});
            server_ws
                .send(Frame::text(reply.to_string()))
                .await
                .unwrap();
            // Then the server closes: the client sees the connection end.
            server_ws.close(None).await.unwrap();
            answer
        });
        let result = app
            .call_with_timeout("thread/start", json!({}), Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(result, json!({"ok": "thread/start"}));
        let answer = server.await.unwrap();
        assert_eq!(
            (answer["id"].clone(), answer["result"]["success"].clone()),
            (json!(7), json!(true))
        );
        let mut rx = app.exit_rx.clone();
        let _ = tokio::time::timeout(Duration::from_secs(2), rx.wait_for(|e| e.is_some())).await;
        assert_eq!(app.exit_status(), Some(ChildExit::Closed));
        let methods: Vec<String> = app.transcript().iter().map(|s| s.method.clone()).collect();
        assert_eq!(methods, ["item/tool/call", "thread/start"]);
    }
}
