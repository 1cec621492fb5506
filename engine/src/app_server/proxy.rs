//! The other clients of a unix listener: `codex app-server proxy`, which relays its stdin and
//! stdout byte for byte to the socket (so its client speaks the WebSocket protocol over the
//! proxy's stdio, as over an SSH channel), and `codex app-server daemon version`, which asks
//! the app-server on the control socket for its version.
//!
//! Facts probed on 0.131.0, 0.161.0 and 0.171.0: both default to the control socket,
//! `$CODEX_HOME/app-server-control/app-server-control.sock`, where `--listen unix://` (no
//! path) makes it; plain JSON lines written to the proxy are not relayed as messages (the
//! app-server refuses what is not a WebSocket handshake and the proxy exits 1, "failed to
//! copy data from stdin to socket").

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use codex_parity_sidecar::control::parent_death::die_with_parent;
use codex_parity_sidecar::handshake;
use serde_json::Value;
use tokio::process::Child;

use crate::app_server::child::StderrTail;
use crate::app_server::listener::CONNECT_TIMEOUT;
use crate::app_server::{AppServer, AppServerCommand};

/// How long `daemon version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The path of the control socket in a `CODEX_HOME`.
pub fn control_socket(home: &std::path::Path) -> std::path::PathBuf {
    home.join("app-server-control")
        .join("app-server-control.sock")
}

/// A running `codex app-server proxy`: killed (its process group) when dropped, and when
/// this process dies.
pub struct Proxy {
    child: Child,
    stderr: Arc<StderrTail>,
}

impl Proxy {
    /// Starts `codex app-server ARGS proxy` (`cmd.args` hold the world's flags, e.g.
    /// `--disable plugins`, which the proxy takes too) and makes a WebSocket client over its
    /// stdio; the client is not initialized.
    pub async fn connect(cmd: &AppServerCommand) -> anyhow::Result<(Proxy, AppServer)> {
        let label = format!("{} proxy", cmd.label);
        let mut command = cmd.process(&["proxy"], &[], (Stdio::piped(), Stdio::piped()));
        die_with_parent(&mut command);
        let mut child = command
            .spawn()
            .with_context(|| format!("{label}: cannot start {}", cmd.program.display()))?;
        let stdin = child.stdin.take().context("no stdin pipe")?;
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let stderr = child.stderr.take().context("no stderr pipe")?;
        let tail = Arc::new(StderrTail::new(40));
        let reading = tail.clone();
        tokio::spawn(async move { reading.read(stderr, |_| {}).await });
        let proxy = Proxy {
            child,
            stderr: tail.clone(),
        };
        let request = handshake::request("ws://localhost/").context("a WebSocket request")?;
        let stream = tokio::io::join(stdout, stdin);
        let opening = handshake::connect(stream, request);
        let (socket, _) = tokio::time::timeout(CONNECT_TIMEOUT, opening)
            .await
            .map_err(|_| anyhow::anyhow!("no handshake within {CONNECT_TIMEOUT:?}"))
            .and_then(|r| r.map_err(anyhow::Error::from))
            .with_context(|| {
                format!(
                    "{label}: the WebSocket handshake through the proxy failed; its stderr tail:\n{}",
                    tail.text()
                )
            })?;
        Ok((proxy, AppServer::over_websocket(socket, &label, tail)))
    }

    /// The last lines the proxy wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    /// Whether the proxy has exited, and its exit code (`Some(None)`: by a signal).
    pub fn exited(&mut self) -> Option<Option<i32>> {
        self.child.try_wait().ok().flatten().map(|s| s.code())
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(group) = self
            .child
            .id()
            .and_then(|p| rustix::process::Pid::from_raw(p as i32))
        {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

/// Runs `codex app-server daemon ARGS version` in `cmd`'s environment (its own process
/// group, killed after it, within 10 s) and returns the JSON it printed.
pub async fn daemon_version(cmd: &AppServerCommand) -> anyhow::Result<Value> {
    let shown = format!("{} app-server daemon version", cmd.label);
    let child = cmd
        .process(&["daemon"], &["version"], (Stdio::null(), Stdio::piped()))
        .spawn()
        .with_context(|| format!("cannot run {shown}"))?;
    let group = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let output = tokio::time::timeout(VERSION_TIMEOUT, child.wait_with_output()).await;
    if let Some(group) = group {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let output = output
        .map_err(|_| anyhow::anyhow!("{shown} took over {VERSION_TIMEOUT:?}"))?
        .with_context(|| format!("cannot run {shown}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    anyhow::ensure!(
        output.status.success(),
        "{shown} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).with_context(|| format!("{shown} printed {stdout:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::{SinkExt, StreamExt};
    use std::os::unix::fs::PermissionsExt;
    use tokio_tungstenite::tungstenite::Message as Frame;

    /// A fake `codex` whose `app-server proxy` relays its stdio to the unix socket `socket`
    /// byte for byte, as codex's does (Python, no third-party module).
    fn fake_codex(dir: &std::path::Path, socket: &std::path::Path) -> std::path::PathBuf {
        let script = format!(
            r#"#!/usr/bin/env python3
import os, socket, sys, threading
assert sys.argv[1:3] == ["app-server", "proxy"], sys.argv
s = socket.socket(socket.AF_UNIX)
s.connect({socket:?})
def up():
    while True:
        b = os.read(0, 65536)
        if not b:
            break
        s.sendall(b)
threading.Thread(target=up, daemon=True).start()
while True:
    b = s.recv(65536)
    if not b:
        break
    os.write(1, b)
"#,
            socket = socket.display().to_string()
        );
        let path = dir.join("codex");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[tokio::test]
    async fn a_websocket_client_speaks_through_the_proxys_stdio() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("control.sock");
        let server = tokio::net::UnixListener::bind(&socket).unwrap();
        tokio::spawn(async move {
            let (stream, _) = server.accept().await.unwrap();
            let (mut ws, _) = handshake::accept(stream).await.unwrap();
            while let Some(Ok(Frame::Text(text))) = ws.next().await {
                let call: Value = serde_json::from_str(text.as_str()).unwrap();
                if let Some(id) = call.get("id") {
                    let reply = serde_json::json!({"id": id, "result": {"userAgent": "relayed"}});
                    ws.send(Frame::text(reply.to_string())).await.unwrap();
                }
            }
        });
        let cmd = AppServerCommand {
            program: fake_codex(dir.path(), &socket),
            args: vec![],
            env: vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
            cwd: dir.path().to_path_buf(),
            label: "fake".into(),
        };
        let (mut proxy, app) = Proxy::connect(&cmd).await.unwrap();
        assert_eq!(app.label(), "fake proxy");
        let result = app.initialize(false).await.unwrap();
        assert_eq!(result["userAgent"], "relayed");
        assert_eq!(proxy.exited(), None, "the proxy is still relaying");
        let pid = proxy.child.id().unwrap();
        drop(app);
        drop(proxy);
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
        });
        assert!(gone, "the proxy {pid} outlived its handle");
    }
}
