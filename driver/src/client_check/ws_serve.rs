//! The mock app-server's WebSocket listener: `codex app-server --listen ws://HOST:PORT` as
//! the mock plays it. It listens at HOST:PORT (port 0: one the system picks), says where on
//! stderr as codex does (`listening on: ws://…`), and serves each connection the next
//! app-server connection of the session, one JSON-RPC message per text frame, through the
//! same [`Mock`] as stdio, so every mutation applies over it. An `exit` step
//! (`exit-mid-turn`) ends the whole listener, as a crashing codex would; otherwise it runs
//! until it is killed or the script's deadline passes. Each connection's record is
//! `DIR/served/N.json`, with the listener's process id.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_tungstenite::tungstenite::Message;

use crate::client_check::mock::Mock;
use crate::client_check::script::Script;
use crate::client_check::served::{self, Served, Via};

/// What a listener says on stderr before its URL, as codex says it.
pub const LISTENING_ON: &str = "listening on:";

/// Listens at `url` and serves connections until an `exit` step; returns its status.
pub fn listen(
    dir: &Path,
    script: &Script,
    args: &[String],
    url: &str,
    deadline: Instant,
) -> anyhow::Result<i32> {
    let address = url
        .strip_prefix("ws://")
        .map(|a| a.trim_end_matches('/'))
        .with_context(|| format!("--listen {url:?}: expected ws://HOST:PORT"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the listener's runtime")?;
    let code = runtime.block_on(accept_all(dir, script, args, address, deadline));
    // Connections still served are abandoned: the process ends with the listener.
    runtime.shutdown_background();
    code
}

/// Accepts connections, each served on its own, until one of them reaches an `exit` step.
async fn accept_all(
    dir: &Path,
    script: &Script,
    args: &[String],
    address: &str,
    deadline: Instant,
) -> anyhow::Result<i32> {
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("the mock app-server cannot listen at {address}"))?;
    let bound = listener
        .local_addr()
        .context("reading the listener's address")?;
    eprintln!("codex-parity client-check: mock codex app-server (WebSockets)");
    eprintln!("  {LISTENING_ON} ws://{bound}");
    let script = Arc::new(script.clone());
    let (exited, mut exit) = unbounded_channel::<i32>();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((tcp, _)) = accepted {
                    tokio::spawn(connection(
                        tcp,
                        dir.to_path_buf(),
                        script.clone(),
                        args.to_vec(),
                        deadline,
                        exited.clone(),
                    ));
                }
            }
            Some(code) = exit.recv() => {
                eprintln!(
                    "codex-parity client-check: the app-server exits mid-turn (exit-mid-turn)"
                );
                return Ok(code);
            }
        }
    }
}

/// Serves one connection: text frames in are the client's lines, the mock's lines go out
/// as text frames. Tells `exited` the status when the mock reached an `exit` step.
async fn connection(
    tcp: TcpStream,
    dir: PathBuf,
    script: Arc<Script>,
    args: Vec<String>,
    deadline: Instant,
    exited: UnboundedSender<i32>,
) {
    let Ok((socket, _)) = codex_parity_sidecar::handshake::accept(tcp).await else {
        return;
    };
    let Ok((served, path)) = served::start(&dir, Via::WebSocket, script.connections.len(), &args)
    else {
        return;
    };
    let (mut sink, mut stream) = socket.split();
    let (to_mock, lines) = std::sync::mpsc::channel::<Option<String>>();
    let (frames, mut outgoing) = unbounded_channel::<String>();
    let mock = std::thread::spawn(move || {
        let steps = &script.connections[served.connection - 1];
        let save_to = path.clone();
        let mut mock = Mock::new(
            steps,
            script.thread_ids(),
            Duration::from_millis(script.gap_ms),
            Frames {
                to: frames,
                buf: Vec::new(),
            },
            served,
            Box::new(move |s: &Served| {
                let _ = served::save(&save_to, s);
            }),
        );
        let code = mock.run(&lines, deadline);
        let _ = served::save(&path, &mock.served);
        let crashed = mock
            .served
            .ended
            .as_deref()
            .is_some_and(|e| e.starts_with("exited"));
        (code, crashed)
    });
    let write = async {
        while let Some(text) = outgoing.recv().await {
            if sink.send(Message::text(text)).await.is_err() {
                return;
            }
        }
        let _ = sink.close().await;
    };
    let read = async {
        while let Some(message) = stream.next().await {
            let line = match message {
                Ok(Message::Text(text)) => text.to_string(),
                Ok(Message::Binary(data)) => String::from_utf8_lossy(&data).into_owned(),
                Ok(Message::Close(_)) | Err(_) => break,
                Ok(_) => continue,
            };
            if to_mock.send(Some(line)).is_err() {
                break;
            }
        }
        let _ = to_mock.send(None);
    };
    // Either side's end ends the connection: the client gone, or the mock done.
    tokio::select! {
        () = write => {}
        () = read => {}
    }
    if let Ok(Ok((code, true))) = tokio::task::spawn_blocking(move || mock.join()).await {
        let _ = exited.send(code);
    }
}

/// The mock's output as text frames: each line it writes is one frame.
struct Frames {
    to: UnboundedSender<String>,
    buf: Vec<u8>,
}

impl Write for Frames {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        while let Some(n) = self.buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=n).collect();
            let text = String::from_utf8_lossy(&line[..n]).into_owned();
            self.to.send(text).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the WebSocket is closed")
            })?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
