//! A sidecar run as a child process and steered by a [`Client`]: spawning the binary (in a
//! process group of its own, so a terminal's Ctrl-C reaches its owner, which stops it),
//! keeping the tail of its stderr, watching for its exit, killing it when asked, when the
//! handle is dropped or when this process dies (even by SIGKILL: [`die_with_parent`]). The
//! one process handle of a sidecar: its own tests and benchmark and the driver's worlds all
//! use it.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use codex_parity_sidecar::SidecarProcess;
//! let mut sidecar = SidecarProcess::spawn("codex-parity-sidecar", ["--lenient"]).await?;
//! let status = sidecar.status().await?; // any `Client` method, through Deref
//! assert_eq!(status.pending, 0);
//! let ended = sidecar.shutdown().await?;
//! assert_eq!(ended.exit.code(), Some(0));
//! # Ok(()) }
//! ```

use std::ffi::OsStr;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::control::client::{Client, ClientError, ShutdownReply};
use crate::control::parent_death::die_with_parent;

/// How long the sidecar may take to print its ready line.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long [`SidecarProcess::wait`] waits for the exit.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How many stderr lines an error message quotes.
const TAIL_LINES: usize = 20;
/// How much of its stderr a handle keeps: the last this many bytes.
const STDERR_KEPT: usize = 256 * 1024;

/// A running sidecar process; killed when dropped.
#[derive(Debug)]
pub struct SidecarProcess {
    client: Client,
    process: Process,
}

/// The process itself: its id, its exit as it is watched, the means to kill it, its stderr.
#[derive(Debug)]
struct Process {
    pid: Option<u32>,
    exit: watch::Receiver<Option<Exit>>,
    /// Sending, or dropping it, kills the process.
    kill: Option<oneshot::Sender<()>>,
    stderr: Stderr,
    reader: Option<JoinHandle<()>>,
}

impl Process {
    async fn wait_exit(&self, timeout: Duration) -> Option<Exit> {
        let mut exit = self.exit.clone();
        let _ = tokio::time::timeout(timeout, exit.wait_for(Option::is_some)).await;
        self.exit.borrow().clone()
    }

    /// `error` with what the process says about it: when the pipes closed, its exit
    /// status (waiting up to a second for it) and the last lines of its stderr.
    async fn explain(&mut self, error: ClientError) -> anyhow::Error {
        if !error.is_closed() {
            return anyhow::Error::new(error);
        }
        let pid = self.pid.map_or("?".to_string(), |pid| pid.to_string());
        let what = match self.wait_exit(Duration::from_secs(1)).await {
            Some(exit) => format!("the sidecar (pid {pid}) exited ({exit})"),
            None => format!("the sidecar (pid {pid}) closed its pipes but is still running"),
        };
        if let Some(reader) = self.reader.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), reader).await;
        }
        let tail = self.stderr.tail(TAIL_LINES);
        anyhow::Error::new(error).context(format!("{what}; its stderr:\n{tail}"))
    }
}

/// How a sidecar process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// Its exit status; `Err` with the reason when it could not be waited for.
    pub status: Result<ExitStatus, String>,
    /// Whether its handle killed it ([`SidecarProcess::kill`], or the handle dropped);
    /// false when it ended on its own.
    pub killed: bool,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.status {
            Ok(status) => write!(f, "{status}"),
            Err(e) => write!(f, "exit status unknown: {e}"),
        }
    }
}

/// The stderr a sidecar wrote (its last [`STDERR_KEPT`] bytes), shareable.
#[derive(Debug, Clone, Default)]
pub struct Stderr(Arc<Mutex<Vec<u8>>>);

impl Stderr {
    /// Everything kept.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&lock(&self.0)).into_owned()
    }

    /// The last `n` lines.
    pub fn tail(&self, n: usize) -> String {
        let text = self.text();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    fn push(&self, bytes: &[u8]) {
        let mut kept = lock(&self.0);
        kept.extend_from_slice(bytes);
        let over = kept.len().saturating_sub(STDERR_KEPT);
        kept.drain(..over);
    }
}

/// How a sidecar ended after [`SidecarProcess::shutdown`] or [`SidecarProcess::wait`].
#[derive(Debug, Clone)]
pub struct Ended {
    /// The shutdown reply (all zero when the sidecar was not asked to shut down).
    pub reply: ShutdownReply,
    /// The exit status.
    pub exit: ExitStatus,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

impl SidecarProcess {
    /// Starts `program` with `args` and reads its ready line; a sidecar that fails to start
    /// is reported with its exit status and stderr.
    pub async fn spawn<I, S>(program: impl AsRef<OsStr>, args: I) -> anyhow::Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let program = program.as_ref();
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        die_with_parent(&mut command);
        let mut child = command
            .spawn()
            .with_context(|| format!("starting the sidecar {}", program.display()))?;
        let stdin = child.stdin.take().context("the sidecar's stdin")?;
        let stdout = child.stdout.take().context("the sidecar's stdout")?;
        let stderr_pipe = child.stderr.take().context("the sidecar's stderr")?;
        let stderr = Stderr::default();
        let reader = Some(tokio::spawn(keep_stderr(stderr_pipe, stderr.clone())));
        let pid = child.id();
        let (kill, kill_rx) = oneshot::channel();
        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(watch_exit(child, kill_rx, exit_tx));
        let mut process = Process {
            pid,
            exit,
            kill: Some(kill),
            stderr,
            reader,
        };
        match Client::connect(stdin, stdout, READY_TIMEOUT).await {
            Ok(client) => Ok(SidecarProcess { client, process }),
            Err(e) => Err(process.explain(e).await),
        }
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.process.pid
    }

    /// The client steering it (also reachable through `Deref`).
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// What it wrote to stderr so far (its last 256 KiB).
    pub fn stderr(&self) -> String {
        self.process.stderr.text()
    }

    /// Its stderr, shareable (for messages after the handle is gone).
    pub fn stderr_handle(&self) -> Stderr {
        self.process.stderr.clone()
    }

    /// How it ended, once it has: a watch that turns `Some` at the exit.
    pub fn exit_watch(&self) -> watch::Receiver<Option<Exit>> {
        self.process.exit.clone()
    }

    /// Waits up to `timeout` for the exit; how it ended, if it did.
    pub async fn wait_exit(&self, timeout: Duration) -> Option<Exit> {
        self.process.wait_exit(timeout).await
    }

    /// Kills the process (SIGKILL); [`SidecarProcess::wait_exit`] then sees it end.
    pub fn kill(&mut self) {
        if let Some(kill) = self.process.kill.take() {
            let _ = kill.send(());
        }
    }

    /// `error` with what the process says about it: when the pipes closed, its exit status
    /// (waiting up to a second for it) and the last lines of its stderr.
    pub async fn explain(&mut self, error: ClientError) -> anyhow::Error {
        self.process.explain(error).await
    }

    /// Sends `shutdown`, then waits for the exit.
    pub async fn shutdown(mut self) -> anyhow::Result<Ended> {
        let reply = match self.client.shutdown().await {
            Ok(reply) => reply,
            Err(e) => return Err(self.explain(e).await),
        };
        let mut ended = self.wait().await?;
        ended.reply = reply;
        Ok(ended)
    }

    /// Closes the sidecar's stdin (EOF: it shuts down without a reply).
    pub fn close_stdin(&mut self) {
        self.client.close();
    }

    /// Waits (at most 10 s) for the process to exit and its stderr to end.
    pub async fn wait(mut self) -> anyhow::Result<Ended> {
        let exit = self
            .wait_exit(EXIT_TIMEOUT)
            .await
            .with_context(|| format!("the sidecar did not exit within {EXIT_TIMEOUT:?}"))?;
        let exit = exit
            .status
            .map_err(|e| anyhow::anyhow!(e))
            .context("waiting for the sidecar")?;
        if let Some(reader) = self.process.reader.take() {
            reader.await.context("reading the sidecar's stderr")?;
        }
        Ok(Ended {
            reply: ShutdownReply::default(),
            exit,
            stderr: self.stderr(),
        })
    }
}

/// Waits for `child` to end, or kills it (SIGKILL) when `kill` fires or its sender is
/// dropped; publishes how it ended.
async fn watch_exit(
    mut child: Child,
    kill: oneshot::Receiver<()>,
    exit: watch::Sender<Option<Exit>>,
) {
    let (status, killed) = tokio::select! {
        biased;
        status = child.wait() => (status, false),
        _ = kill => {
            let _ = child.start_kill();
            (child.wait().await, true)
        }
    };
    let status = status.map_err(|e| e.to_string());
    let _ = exit.send(Some(Exit { status, killed }));
}

impl std::ops::Deref for SidecarProcess {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl std::ops::DerefMut for SidecarProcess {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

async fn keep_stderr(mut pipe: ChildStderr, into: Stderr) {
    let mut buffer = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        into.push(&buffer[..n]);
    }
}

fn lock(buffer: &Mutex<Vec<u8>>) -> std::sync::MutexGuard<'_, Vec<u8>> {
    buffer
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
