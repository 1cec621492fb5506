//! A client that connects to an app-server listener instead of running codex over stdio
//! (`record --listen ws://HOST:PORT`): the recorder starts `codex app-server --listen
//! ws://127.0.0.1:0` itself (in the private home, as the shim would), reads where it
//! listens from its stderr, and accepts the client at HOST:PORT, relaying every frame both
//! ways unchanged. The first connection's text frames are logged as the shim's relay logs
//! stdio lines ([`crate::record::relay::LogEntry`]), so the writer reads both alike; later
//! connections are relayed but not recorded (a scenario file has one client).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use codex_parity_sidecar::handshake;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;

use crate::record::exchange::{ClientLine, now_us};
use crate::record::relay::{self, LogEntry, RelayConfig};

/// How long codex may take to say where it listens.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(20);

/// The listener the client connects to, and the codex behind it.
pub struct Listener {
    url: String,
    codex: tokio::process::Child,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: tokio::task::JoinSet<()>,
    later: Arc<AtomicBool>,
}

impl Listener {
    /// Starts codex as `config` says, listening on loopback, and accepts clients at `url`
    /// (`ws://HOST:PORT`); logs go under `logs`, with `cwd` as the client's directory, and
    /// what codex says on stderr after its banner goes to `stderr_log`, never to the
    /// terminal (the recorder keeps it, redacted, with `--keep`).
    pub async fn start(
        url: &str,
        config: &RelayConfig,
        logs: &Path,
        cwd: PathBuf,
        stderr_log: &Path,
    ) -> anyhow::Result<Listener> {
        let address = url
            .strip_prefix("ws://")
            .map(|a| a.trim_end_matches('/'))
            .with_context(|| format!("--listen {url:?}: expected ws://HOST:PORT"))?;
        let accept = TcpListener::bind(address).await.with_context(|| {
            format!("--listen {url}: cannot listen there (is the port in use?)")
        })?;
        let url = format!(
            "ws://{}",
            accept
                .local_addr()
                .context("reading the listener's address")?
        );
        let mut command = tokio::process::Command::new(&config.codex);
        command
            .arg("app-server")
            .args(&config.app_server_args)
            .args(["--listen", "ws://127.0.0.1:0"])
            .envs(config.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // A listener does not stop when its stdin closes: it dies with the recorder.
        codex_parity_sidecar::control::parent_death::die_with_parent(&mut command);
        let mut codex = command
            .spawn()
            .with_context(|| format!("starting {} app-server --listen", config.codex.display()))?;
        let stderr = codex.stderr.take().context("codex's stderr")?;
        let internal = listening_on(stderr, stderr_log).await?;
        let pid = codex.id().unwrap_or(0);
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let later = Arc::new(AtomicBool::new(false));
        let mut tasks = tokio::task::JoinSet::new();
        let (logs, first, seen) = (
            logs.to_path_buf(),
            Arc::new(AtomicBool::new(true)),
            later.clone(),
        );
        tasks.spawn(async move {
            while let Ok((client, _)) = accept.accept().await {
                let record = first.swap(false, Ordering::SeqCst);
                if !record {
                    seen.store(true, Ordering::SeqCst);
                }
                let start = LogEntry::Start {
                    at: now_us(),
                    args: vec!["app-server".into(), "--listen".into(), internal.clone()],
                    relayed: true,
                    exec: false,
                    cwd: cwd.clone(),
                    pid,
                };
                let log = if record {
                    relay::open_log(&logs).ok().map(|(f, _)| f)
                } else {
                    None
                };
                tokio::spawn(connection(
                    client,
                    internal.clone(),
                    log,
                    start,
                    stopped.clone(),
                ));
            }
        });
        Ok(Listener {
            url,
            codex,
            stop,
            tasks,
            later,
        })
    }

    /// Where the client connects: `ws://HOST:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Ends every connection (their logs closed with an exit line) and stops codex;
    /// returns a note when connections after the first were not recorded.
    pub async fn stop(mut self) -> Option<String> {
        let _ = self.stop.send(true);
        self.tasks.abort_all();
        // The connections see the stop and close their logs.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let _ = self.codex.kill().await;
        self.later
            .load(Ordering::SeqCst)
            .then(|| "the client connected to the listener more than once: only its first connection is recorded".into())
    }
}

/// Reads codex's stderr until it says `listening on: ws://…`; the rest (its banner's other
/// lines, `readyz: …`, and whatever it says later) goes to the file `log`.
async fn listening_on(stderr: tokio::process::ChildStderr, log: &Path) -> anyhow::Result<String> {
    let mut lines = BufReader::new(stderr).lines();
    let mut said = Vec::new();
    let found = tokio::time::timeout(LISTEN_TIMEOUT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(at) = line.split("listening on:").nth(1) {
                return Some(at.trim().to_string());
            }
            said.push(line);
        }
        None
    })
    .await;
    match found {
        Ok(Some(url)) => {
            let mut file = std::fs::File::create(log)
                .with_context(|| format!("creating {}", log.display()))?;
            tokio::spawn(async move {
                use std::io::Write;
                while let Ok(Some(line)) = lines.next_line().await {
                    let _ = writeln!(file, "{line}");
                }
            });
            Ok(url)
        }
        _ => bail!(
            "codex app-server --listen did not say where it listens within {} s (a codex without \
             a WebSocket listener?); its stderr:\n{}",
            LISTEN_TIMEOUT.as_secs(),
            said.join("\n")
        ),
    }
}

/// Relays one client connection to codex's listener, logging text frames when `log` is
/// given, until either side closes or the recording stops.
async fn connection(
    client: TcpStream,
    internal: String,
    mut log: Option<std::fs::File>,
    start: LogEntry,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let Ok((client, _)) = handshake::accept(client).await else {
        return;
    };
    let address = internal.trim_start_matches("ws://").to_string();
    let Ok(stream) = TcpStream::connect(&address).await else {
        return;
    };
    let Ok(request) = handshake::request(&internal) else {
        return;
    };
    let Ok((codex, _)) = handshake::connect(stream, request).await else {
        return;
    };
    let mut write = |entry: &LogEntry| {
        if let Some(file) = log.as_mut() {
            let _ = relay::write_entry(file, entry);
        }
    };
    write(&start);
    let (mut to_client, mut from_client) = client.split();
    let (mut to_codex, mut from_codex) = codex.split();
    loop {
        tokio::select! {
            m = from_client.next() => match m {
                Some(Ok(m)) => {
                    if let Message::Text(t) = &m {
                        write(&LogEntry::Line(ClientLine { at: now_us(), from_client: true, text: t.to_string() }));
                    }
                    let close = m.is_close();
                    if to_codex.send(m).await.is_err() || close { break; }
                }
                _ => break,
            },
            m = from_codex.next() => match m {
                Some(Ok(m)) => {
                    if let Message::Text(t) = &m {
                        write(&LogEntry::Line(ClientLine { at: now_us(), from_client: false, text: t.to_string() }));
                    }
                    let close = m.is_close();
                    if to_client.send(m).await.is_err() || close { break; }
                }
                _ => break,
            },
            _ = stopped.changed() => break,
        }
    }
    write(&LogEntry::Exit {
        at: now_us(),
        code: Some(0),
    });
}
