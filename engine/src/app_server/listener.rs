//! `codex app-server --listen ws://127.0.0.1:0` or `--listen unix://PATH`: one app-server
//! process serving connections, each a WebSocket (over TCP, or over the unix socket: codex
//! upgrades every accepted unix connection to a WebSocket), each an [`AppServer`] with the
//! same typed API as stdio.
//!
//! Facts probed on 0.131.0, 0.139.0, 0.150.1, 0.161.0, 0.166.0 and 0.171.0: the bound
//! address for port 0 is printed on stderr as `  listening on: ws://IP:PORT` (even with
//! `RUST_LOG=warn`); stdin is not served and its end does not stop the process; from some
//! release after 0.150.1 (0.161.0 has it) `unix://PATH` makes PATH a symbolic link to a
//! socket in `/tmp/codex-daemon-UID/` (with a `.lock` file beside it), both of which
//! [`Listener`] removes after killing codex. A plain HTTP request to a ws:// listener
//! ([`Listener::http_get`]) reaches its `/readyz` and `/healthz`.
//!
//! The process runs in its own process group, killed with it when the [`Listener`] is
//! killed or dropped. Unlike a stdio app-server, which exits when the harness dies and its
//! stdin closes, a listener would outlive a harness killed with SIGKILL: it is started with
//! the parent-death signal set to SIGKILL (`die_with_parent`), so nothing is orphaned.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use codex_parity_sidecar::control::parent_death::die_with_parent;
use codex_parity_sidecar::handshake::{self, HandshakeError};
use tokio::sync::{oneshot, watch};

use crate::app_server::child::{ChildExit, StderrTail, wait_or_kill};
use crate::app_server::{AppServer, AppServerCommand};
use crate::lock;

/// How long codex may take to bind its listener.
pub const BIND_TIMEOUT: Duration = Duration::from_secs(15);

/// How long one connection's handshake may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a listener listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `ws://IP:PORT`, the address codex printed.
    WebSocket(String),
    /// The unix socket's path as given to `--listen unix://PATH`.
    Unix(PathBuf),
}

/// What to ask codex for: a loopback port of its choice, or a unix socket at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAt {
    /// `--listen ws://127.0.0.1:0`.
    WebSocket,
    /// `--listen unix://PATH`.
    Unix(PathBuf),
    /// `--listen unix://`: the control socket codex makes at this path, in its `CODEX_HOME`
    /// (see [`crate::app_server::proxy::control_socket`]).
    ControlSocket(PathBuf),
}

impl ListenAt {
    /// The value of `--listen`.
    pub fn url(&self) -> String {
        match self {
            ListenAt::WebSocket => "ws://127.0.0.1:0".into(),
            ListenAt::Unix(path) => format!("unix://{}", path.display()),
            ListenAt::ControlSocket(_) => "unix://".into(),
        }
    }
}

/// Why a connection was not made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Codex answered the handshake with an HTTP status instead of `101`.
    #[error("codex refused the WebSocket handshake with HTTP {status}: {body}")]
    Refused {
        /// The status.
        status: u16,
        /// The body, as text.
        body: String,
    },
    /// Anything else (no connection, timeout, a broken handshake).
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// A running `codex app-server --listen …`.
pub struct Listener {
    label: String,
    endpoint: Endpoint,
    pid: Option<u32>,
    stderr: Arc<StderrTail>,
    kill: Mutex<Option<oneshot::Sender<()>>>,
    exit_rx: watch::Receiver<Option<ChildExit>>,
    connections: Mutex<usize>,
}

impl Listener {
    /// Starts `program app-server ARGS --listen URL` and waits (at most [`BIND_TIMEOUT`])
    /// until it listens; the error carries codex's stderr tail.
    pub async fn spawn(cmd: &AppServerCommand, at: &ListenAt) -> anyhow::Result<Listener> {
        let url = at.url();
        let mut command = cmd.process(&[], &["--listen", &url], (Stdio::null(), Stdio::null()));
        die_with_parent(&mut command);
        let mut child = command
            .spawn()
            .with_context(|| format!("{}: cannot start {}", cmd.label, cmd.program.display()))?;
        let pid = child.id();
        let stderr = child.stderr.take().context("no stderr pipe")?;
        let tail = Arc::new(StderrTail::new(40));
        let (addr_tx, mut addr_rx) = watch::channel(None::<String>);
        let reading = tail.clone();
        tokio::spawn(async move {
            reading
                .read(stderr, |line| {
                    if let Some(url) = bound_address(line) {
                        let _ = addr_tx.send(Some(url));
                    }
                })
                .await;
        });
        let (exit_tx, exit_rx) = watch::channel(None);
        let (kill_tx, kill_rx) = oneshot::channel();
        tokio::spawn(async move {
            let (exit, _) = wait_or_kill(&mut child, kill_rx).await;
            let _ = exit_tx.send(Some(exit));
        });
        let mut listener = Listener {
            label: cmd.label.clone(),
            endpoint: Endpoint::Unix(PathBuf::new()),
            pid,
            stderr: tail,
            kill: Mutex::new(Some(kill_tx)),
            exit_rx,
            connections: Mutex::new(0),
        };
        let deadline = tokio::time::Instant::now() + BIND_TIMEOUT;
        listener.endpoint = match at {
            ListenAt::WebSocket => {
                let found = tokio::time::timeout_at(deadline, addr_rx.wait_for(Option::is_some));
                match found.await {
                    Ok(Ok(url)) => Endpoint::WebSocket(url.clone().unwrap_or_default()),
                    _ => bail!(listener.failed("print its ws:// address")),
                }
            }
            ListenAt::Unix(path) | ListenAt::ControlSocket(path) => {
                while !path.exists() {
                    if tokio::time::Instant::now() > deadline || listener.exit_status().is_some() {
                        bail!(listener.failed(&format!("create {}", path.display())));
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Endpoint::Unix(path.clone())
            }
        };
        Ok(listener)
    }

    fn failed(&self, what: &str) -> String {
        format!(
            "{}: codex app-server did not {what} within {BIND_TIMEOUT:?} ({}); stderr tail:\n{}",
            self.label,
            self.exit_status()
                .map_or_else(|| "still running".to_string(), |e| e.to_string()),
            self.stderr.text()
        )
    }

    /// Where it listens.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The last lines codex wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    /// Whether the process has exited, and how.
    pub fn exit_status(&self) -> Option<ChildExit> {
        self.exit_rx.borrow().clone()
    }

    /// A new connection (not initialized).
    pub async fn connect(&self) -> anyhow::Result<AppServer> {
        self.connect_with(&[]).await.map_err(anyhow::Error::from)
    }

    /// A new connection whose handshake carries `headers` (e.g. `Authorization`).
    pub async fn connect_with(&self, headers: &[(&str, &str)]) -> Result<AppServer, ConnectError> {
        let number = {
            let mut n = lock(&self.connections);
            *n += 1;
            *n
        };
        let label = format!("{}#{number}", self.label);
        let work = async {
            match &self.endpoint {
                Endpoint::WebSocket(url) => {
                    let stream = tokio::net::TcpStream::connect(
                        url.trim_start_matches("ws://").trim_end_matches('/'),
                    )
                    .await
                    .with_context(|| format!("connecting to {url}"))?;
                    self.handshake(url, stream, headers, &label).await
                }
                Endpoint::Unix(path) => {
                    let stream = connect_unix(path).await?;
                    self.handshake("ws://localhost/", stream, headers, &label)
                        .await
                }
            }
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, work).await {
            Ok(result) => result,
            Err(_) => Err(ConnectError::Failed(anyhow::anyhow!(
                "{label}: no WebSocket handshake within {CONNECT_TIMEOUT:?}; stderr tail:\n{}",
                self.stderr.text()
            ))),
        }
    }

    async fn handshake<S>(
        &self,
        url: &str,
        stream: S,
        headers: &[(&str, &str)],
        label: &str,
    ) -> Result<AppServer, ConnectError>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let mut request =
            handshake::request(url).with_context(|| format!("a WebSocket request for {url}"))?;
        for (name, value) in headers {
            let name = http::HeaderName::from_bytes(name.as_bytes()).context("a header name")?;
            let value = http::HeaderValue::from_str(value).context("a header value")?;
            request.headers_mut().insert(name, value);
        }
        match handshake::connect(stream, request).await {
            Ok((socket, _)) => Ok(AppServer::over_websocket(
                socket,
                label,
                self.stderr.clone(),
            )),
            Err(HandshakeError::Refused(response)) => {
                let status = response.status().as_u16();
                let body = String::from_utf8_lossy(response.body()).into_owned();
                Err(ConnectError::Refused { status, body })
            }
            Err(e) => Err(ConnectError::Failed(anyhow::anyhow!(
                "{label}: WebSocket handshake failed: {e}; stderr tail:\n{}",
                self.stderr.text()
            ))),
        }
    }

    /// A plain HTTP/1.1 `GET path` to the listener (over TCP to a ws:// one, over its socket
    /// to a unix:// one) with `headers`, bounded by [`CONNECT_TIMEOUT`]: its status and body
    /// (read to the connection's end).
    pub async fn http_get(
        &self,
        path: &str,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<(u16, String)> {
        let answer = self.http_raw(path, headers).await?;
        http_status(&answer)
            .with_context(|| format!("{}: GET {path}: not an HTTP answer: {answer:?}", self.label))
    }

    /// What the listener writes back to a plain HTTP/1.1 `GET path` with `headers` before it
    /// closes the connection (empty when it answers nothing), bounded by [`CONNECT_TIMEOUT`].
    pub async fn http_raw(&self, path: &str, headers: &[(&str, &str)]) -> anyhow::Result<String> {
        let host = match &self.endpoint {
            Endpoint::WebSocket(url) => url.trim_start_matches("ws://").trim_end_matches('/'),
            Endpoint::Unix(_) => "localhost",
        };
        let mut request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        let work = async {
            match &self.endpoint {
                Endpoint::WebSocket(_) => {
                    let stream = tokio::net::TcpStream::connect(host)
                        .await
                        .with_context(|| format!("connecting to {host}"))?;
                    exchange(stream, &request).await
                }
                Endpoint::Unix(socket) => exchange(connect_unix(socket).await?, &request).await,
            }
        };
        tokio::time::timeout(CONNECT_TIMEOUT, work)
            .await
            .with_context(|| {
                format!(
                    "{}: GET {path}: no answer within {CONNECT_TIMEOUT:?}",
                    self.label
                )
            })?
            .with_context(|| format!("{}: GET {path}", self.label))
    }

    /// Kills the process group now (SIGKILL) and removes the socket a unix listener's
    /// PATH links to (codex cannot, being killed).
    pub fn kill(&self) {
        if let Some(kill) = lock(&self.kill).take() {
            if self.exit_status().is_none()
                && let Some(group) = self
                    .pid
                    .and_then(|p| rustix::process::Pid::from_raw(p as i32))
            {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            let _ = kill.send(());
        }
        if let Endpoint::Unix(path) = &self.endpoint
            && let Ok(target) = std::fs::read_link(path)
        {
            use std::os::unix::fs::FileTypeExt;
            if std::fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_socket()) {
                let _ = std::fs::remove_file(&target);
                let mut lock = target.into_os_string();
                lock.push(".lock");
                let _ = std::fs::remove_file(lock);
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Connects to the unix socket at `path`, again while it refuses: codex makes the socket's
/// file when it binds, a moment before it listens (the caller bounds the wait).
async fn connect_unix(path: &std::path::Path) -> anyhow::Result<tokio::net::UnixStream> {
    loop {
        match tokio::net::UnixStream::connect(path).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            result => return result.with_context(|| format!("connecting to {}", path.display())),
        }
    }
}

/// Writes `request` to `stream` and reads the answer to the connection's end.
async fn exchange(
    mut stream: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    request: &str,
) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// The status and body of a whole HTTP/1.1 answer (`HTTP/1.1 200 OK\r\n…\r\n\r\nbody`).
fn http_status(answer: &str) -> Option<(u16, String)> {
    let status = answer.strip_prefix("HTTP/1.")?.get(2..5)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Some((status, body.to_string()))
}

/// The `ws://IP:PORT` of a stderr line `  listening on: ws://IP:PORT`.
fn bound_address(line: &str) -> Option<String> {
    let url = line.trim().strip_prefix("listening on:")?.trim();
    url.starts_with("ws://").then(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_address_is_read_from_codexs_banner() {
        assert_eq!(
            bound_address("  listening on: ws://127.0.0.1:33361"),
            Some("ws://127.0.0.1:33361".to_string())
        );
        assert_eq!(
            bound_address("  readyz: http://127.0.0.1:33361/readyz"),
            None
        );
        assert_eq!(ListenAt::Unix("/w/s.sock".into()).url(), "unix:///w/s.sock");
    }

    #[test]
    fn an_http_answer_gives_its_status_and_body() {
        let answer = "HTTP/1.1 400 Bad Request\r\ncontent-length: 5\r\n\r\nno up";
        assert_eq!(http_status(answer), Some((400, "no up".to_string())));
        assert_eq!(
            http_status("HTTP/1.1 200 OK\r\n\r\n"),
            Some((200, String::new()))
        );
        assert_eq!(http_status("SSH-2.0"), None);
    }

    /// A listener of the test's own: a fake app-server answering `initialize` over a
    /// WebSocket on a unix socket, started by a shell that waits (for the process handling).
    #[tokio::test]
    async fn a_unix_listener_connects_over_a_websocket_and_is_killed() {
        use futures_util::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message as Frame;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fake.sock");
        let socket = tokio::net::UnixListener::bind(&path).unwrap();
        tokio::spawn(async move {
            let (stream, _) = socket.accept().await.unwrap();
            let (mut ws, _) = handshake::accept(stream).await.unwrap();
            while let Some(Ok(Frame::Text(text))) = ws.next().await {
                let call: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
                if let Some(id) = call.get("id") {
                    let reply = serde_json::json!({"id": id, "result": {"userAgent": "fake"}});
                    ws.send(Frame::text(reply.to_string())).await.unwrap();
                }
            }
        });
        let cmd = sleeping(dir.path());
        let listener = Listener::spawn(&cmd, &ListenAt::Unix(path.clone()))
            .await
            .unwrap();
        let app = listener.connect().await.unwrap();
        assert_eq!(app.label(), "fake#1");
        let result = app.initialize(false).await.unwrap();
        assert_eq!(result["userAgent"], "fake");
        listener.kill();
        let mut rx = listener.exit_rx.clone();
        let _ = tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|e| e.is_some())).await;
        assert!(listener.exit_status().is_some(), "the process was killed");
    }

    /// A fake `codex` for a unix listener whose socket is the test's own: `sleep` refuses
    /// the app-server arguments and exits, and the process handling runs.
    fn sleeping(dir: &std::path::Path) -> AppServerCommand {
        AppServerCommand {
            program: "/bin/sleep".into(),
            args: vec!["30".into()],
            env: vec![],
            cwd: dir.to_path_buf(),
            label: "fake".into(),
        }
    }

    /// A fake `codex` that prints codex's banner for `address` on stderr, then waits.
    fn banner_codex(dir: &std::path::Path, address: &str) -> AppServerCommand {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("codex");
        let script = format!(
            "#!/bin/sh\necho 'codex app-server (WebSockets)' >&2\necho '  listening on: ws://{address}' >&2\nexec sleep 30\n"
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        AppServerCommand {
            program: path,
            args: vec![],
            env: vec![],
            cwd: dir.to_path_buf(),
            label: "fake".into(),
        }
    }

    /// A ws:// listener of the test's own: a handshake without the right bearer is refused
    /// with 401 (typed, with its body), one with it is served; the address comes from the
    /// banner on stderr.
    #[tokio::test]
    async fn a_ws_listener_is_found_by_its_banner_and_a_refusal_is_typed() {
        use futures_util::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message as Frame;
        let dir = tempfile::tempdir().unwrap();
        let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = socket.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            loop {
                let (stream, _) = socket.accept().await.unwrap();
                let check = |request: &http::Request<()>| {
                    let auth = request.headers().get("authorization");
                    if auth.is_some_and(|a| a == "Bearer right") {
                        Ok(())
                    } else {
                        let mut refused = http::Response::new(b"no token".to_vec());
                        *refused.status_mut() = http::StatusCode::UNAUTHORIZED;
                        Err(Box::new(refused))
                    }
                };
                let Ok((mut ws, _)) = handshake::accept_with(stream, check).await else {
                    continue;
                };
                tokio::spawn(async move {
                    while let Some(Ok(Frame::Text(text))) = ws.next().await {
                        let call: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
                        let reply =
                            serde_json::json!({"id": call["id"], "result": {"userAgent": "ws"}});
                        ws.send(Frame::text(reply.to_string())).await.unwrap();
                    }
                });
            }
        });
        let listener = Listener::spawn(&banner_codex(dir.path(), &address), &ListenAt::WebSocket)
            .await
            .unwrap();
        assert_eq!(
            listener.endpoint(),
            &Endpoint::WebSocket(format!("ws://{address}"))
        );
        match listener.connect().await {
            Err(e) => assert!(e.to_string().contains("HTTP 401"), "{e}"),
            Ok(_) => panic!("a handshake without the token was served"),
        }
        match listener
            .connect_with(&[("Authorization", "Bearer wrong")])
            .await
        {
            Err(ConnectError::Refused { status, body }) => {
                assert_eq!((status, body.as_str()), (401, "no token"))
            }
            Err(e) => panic!("refused otherwise: {e}"),
            Ok(_) => panic!("a wrong token was served"),
        }
        let app = listener
            .connect_with(&[("Authorization", "Bearer right")])
            .await
            .unwrap();
        assert_eq!(app.label(), "fake#3");
        assert_eq!(app.initialize(false).await.unwrap()["userAgent"], "ws");
        listener.kill();
    }

    /// `http_get` sends a plain request to a ws:// listener and reads its status and body.
    #[tokio::test]
    async fn a_plain_http_request_reaches_a_ws_listener() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let dir = tempfile::tempdir().unwrap();
        let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = socket.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut stream, _) = socket.accept().await.unwrap();
            let mut request = vec![0; 1024];
            let n = stream.read(&mut request).await.unwrap();
            let request = String::from_utf8_lossy(&request[..n]).into_owned();
            let line = request.lines().next().unwrap_or("").to_string();
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{line}",
                line.len()
            );
            stream.write_all(answer.as_bytes()).await.unwrap();
        });
        let listener = Listener::spawn(&banner_codex(dir.path(), &address), &ListenAt::WebSocket)
            .await
            .unwrap();
        let (status, body) = listener.http_get("/readyz", &[]).await.unwrap();
        assert_eq!((status, body.as_str()), (200, "GET /readyz HTTP/1.1"));
    }

    /// `http_raw` speaks over a unix listener's socket too: a server that closes without a
    /// word gives an empty answer (and `http_get` says it is no HTTP answer), one that
    /// answers gives its status and body.
    #[tokio::test]
    async fn a_plain_http_request_reaches_a_unix_listener() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("http.sock");
        let socket = tokio::net::UnixListener::bind(&path).unwrap();
        tokio::spawn(async move {
            for answer in [
                "",
                "",
                "HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\nno",
            ] {
                let (mut stream, _) = socket.accept().await.unwrap();
                let mut request = vec![0; 1024];
                let n = stream.read(&mut request).await.unwrap();
                assert!(request[..n].starts_with(b"GET /readyz HTTP/1.1\r\nHost: localhost"));
                stream.write_all(answer.as_bytes()).await.unwrap();
            }
        });
        let cmd = sleeping(dir.path());
        let listener = Listener::spawn(&cmd, &ListenAt::Unix(path)).await.unwrap();
        assert_eq!(listener.http_raw("/readyz", &[]).await.unwrap(), "");
        let refused = listener.http_get("/readyz", &[]).await.unwrap_err();
        assert!(
            format!("{refused:#}").contains("not an HTTP answer"),
            "{refused:#}"
        );
        let (status, body) = listener.http_get("/readyz", &[]).await.unwrap();
        assert_eq!((status, body.as_str()), (400, "no"));
        listener.kill();
    }
}
