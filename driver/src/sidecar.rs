//! The driver's side of the sidecar: spawns a sidecar process, reads its ready line and
//! steers it over the JSONL protocol of `sidecar-protocol.md` (enqueue, requests, status,
//! shutdown). The process is killed when this handle is dropped.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use anyhow::{Context, bail};
use codex_parity_sidecar::Scripted;
use codex_parity_sidecar::captured::CapturedRequest;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

/// How long the sidecar may take to print its ready line.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// How to start a sidecar: a program and the arguments before the sidecar's own.
#[derive(Debug, Clone)]
pub struct SidecarLauncher {
    /// The executable: `codex-parity-sidecar`, or `codex-parity` with `sidecar` as first arg.
    pub program: PathBuf,
    /// Leading arguments (e.g. `["sidecar"]`).
    pub args: Vec<OsString>,
}

impl SidecarLauncher {
    /// The current executable's `sidecar` subcommand (what `codex-parity run` uses).
    pub fn current_exe() -> anyhow::Result<SidecarLauncher> {
        Ok(SidecarLauncher {
            program: std::env::current_exe().context("locating the codex-parity executable")?,
            args: vec!["sidecar".into()],
        })
    }
}

/// What the sidecar said and did on shutdown.
#[derive(Debug, Clone)]
pub struct ShutdownReport {
    /// Scripted responses never served.
    pub pending: u64,
    /// Unscripted requests.
    pub unscripted: u64,
    /// The process exit code (0 clean, 3 leftovers), if it exited.
    pub exit_code: Option<i32>,
}

struct Pipes {
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

/// A running sidecar.
pub struct Sidecar {
    child: Child,
    pipes: Mutex<Pipes>,
    base_url: String,
    stderr_tail: Arc<StdMutex<VecDeque<String>>>,
}

/// Keeps the last lines of the sidecar's stderr (its logs) for error messages.
async fn keep_tail(stderr: tokio::process::ChildStderr, tail: Arc<StdMutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        if tail.len() == 20 {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

fn tail_text(tail: &StdMutex<VecDeque<String>>) -> String {
    let tail = tail.lock().unwrap_or_else(|e| e.into_inner());
    tail.iter().cloned().collect::<Vec<_>>().join("\n")
}

impl Sidecar {
    /// Starts a sidecar with an empty script and waits for its ready line.
    pub async fn start(launcher: &SidecarLauncher) -> anyhow::Result<Sidecar> {
        let mut child = Command::new(&launcher.program)
            .args(&launcher.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting the sidecar {}", launcher.program.display()))?;
        let stdin = child.stdin.take().context("sidecar stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("sidecar stdout")?).lines();
        let stderr = child.stderr.take().context("sidecar stderr")?;
        let stderr_tail = Arc::new(StdMutex::new(VecDeque::new()));
        tokio::spawn(keep_tail(stderr, stderr_tail.clone()));
        let mut pipes = Pipes { stdin, stdout };
        let line = tokio::time::timeout(READY_TIMEOUT, pipes.stdout.next_line())
            .await
            .context("the sidecar printed no ready line within 10 s")?
            .context("reading the sidecar's ready line")?;
        let Some(line) = line else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            bail!(
                "the sidecar exited before its ready line; its stderr:\n{}",
                tail_text(&stderr_tail)
            );
        };
        let ready: Value = serde_json::from_str(&line)
            .with_context(|| format!("the sidecar's first line is not JSON: {line}"))?;
        if ready["type"] != "ready" {
            bail!("the sidecar's first line is not a ready line: {line}");
        }
        let base_url = ready["base_url"]
            .as_str()
            .with_context(|| format!("ready line without base_url: {line}"))?
            .to_string();
        Ok(Sidecar {
            child,
            pipes: Mutex::new(pipes),
            base_url,
            stderr_tail,
        })
    }

    /// The base URL for codex's provider config, `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Sends one command and returns its reply; an `error` reply is an error.
    pub async fn command(&self, command: Value) -> anyhow::Result<Value> {
        let op = command["op"].as_str().unwrap_or("?").to_string();
        let mut pipes = self.pipes.lock().await;
        let mut line = command.to_string();
        line.push('\n');
        pipes
            .stdin
            .write_all(line.as_bytes())
            .await
            .with_context(|| format!("sending {op} to the sidecar (did it die?)"))?;
        pipes
            .stdin
            .flush()
            .await
            .context("flushing the sidecar's stdin")?;
        let reply = pipes
            .stdout
            .next_line()
            .await
            .with_context(|| format!("reading the sidecar's reply to {op}"))?
            .with_context(|| {
                format!(
                    "the sidecar died before answering {op}; its stderr:\n{}",
                    tail_text(&self.stderr_tail)
                )
            })?;
        let reply: Value = serde_json::from_str(&reply)
            .with_context(|| format!("the sidecar's reply to {op} is not JSON: {reply}"))?;
        if reply["type"] == "error" {
            bail!("the sidecar refused {op}: {}", reply["message"]);
        }
        Ok(reply)
    }

    /// Queues scripted responses; returns how many are pending.
    pub async fn enqueue(&self, responses: &[Scripted]) -> anyhow::Result<u64> {
        let list: Vec<Value> = responses.iter().map(Scripted::to_json).collect();
        let reply = self
            .command(json!({"op": "enqueue", "responses": list}))
            .await?;
        Ok(reply["pending"].as_u64().unwrap_or(0))
    }

    /// The model requests captured so far, waiting up to `timeout` for at least `min`.
    pub async fn requests(
        &self,
        min: usize,
        timeout: Duration,
    ) -> anyhow::Result<Vec<CapturedRequest>> {
        self.requests_where(
            json!({"op": "requests", "min": min, "timeout_ms": timeout.as_millis() as u64}),
        )
        .await
    }

    /// Every captured request of any method and path.
    pub async fn all_requests(&self) -> anyhow::Result<Vec<CapturedRequest>> {
        self.requests_where(json!({"op": "requests", "all": true}))
            .await
    }

    async fn requests_where(&self, command: Value) -> anyhow::Result<Vec<CapturedRequest>> {
        let mut reply = self.command(command).await?;
        serde_json::from_value(reply["requests"].take()).context("decoding captured requests")
    }

    /// Asks the sidecar to shut down and waits for it to exit (kills it after 5 s).
    pub async fn shutdown(self) -> anyhow::Result<ShutdownReport> {
        let reply = self.command(json!({"op": "shutdown"})).await?;
        let mut child = self.child;
        let exit_code = match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
            Ok(status) => status.context("waiting for the sidecar")?.code(),
            Err(_) => {
                let _ = child.start_kill();
                None
            }
        };
        Ok(ShutdownReport {
            pending: reply["pending"].as_u64().unwrap_or(0),
            unscripted: reply["unscripted"].as_u64().unwrap_or(0),
            exit_code,
        })
    }
}
