//! A sidecar run as a child process and steered by a [`Client`]: spawning the binary,
//! keeping its stderr, waiting for its exit. What the sidecar's own tests and benchmark use;
//! the driver has its own process handling and uses the [`Client`] directly.
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
use tokio::task::JoinHandle;

use crate::control::client::{Client, ClientError, ShutdownReply};

/// How long the sidecar may take to print its ready line.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long [`SidecarProcess::wait`] waits for the exit.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How many stderr lines an error message quotes.
const TAIL_LINES: usize = 20;

/// A running sidecar process; killed when dropped.
#[derive(Debug)]
pub struct SidecarProcess {
    child: Child,
    client: Client,
    stderr: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
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
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting the sidecar {}", program.display()))?;
        let stdin = child.stdin.take().context("the sidecar's stdin")?;
        let stdout = child.stdout.take().context("the sidecar's stdout")?;
        let stderr_pipe = child.stderr.take().context("the sidecar's stderr")?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let reader = tokio::spawn(keep_stderr(stderr_pipe, stderr.clone()));
        match Client::connect(stdin, stdout, READY_TIMEOUT).await {
            Ok(client) => Ok(SidecarProcess {
                child,
                client,
                stderr,
                reader: Some(reader),
            }),
            Err(e) => Err(explain(&mut child, &mut Some(reader), &stderr, e).await),
        }
    }

    /// The process id (`None` once it was reaped).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The client steering it (also reachable through `Deref`).
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr)).into_owned()
    }

    /// `error` with what the process says about it: when the pipes closed, its exit status
    /// (waiting up to a second for it) and the last lines of its stderr.
    pub async fn explain(&mut self, error: ClientError) -> anyhow::Error {
        explain(&mut self.child, &mut self.reader, &self.stderr, error).await
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
        let exit = tokio::time::timeout(EXIT_TIMEOUT, self.child.wait())
            .await
            .with_context(|| format!("the sidecar did not exit within {EXIT_TIMEOUT:?}"))?
            .context("waiting for the sidecar")?;
        if let Some(reader) = self.reader.take() {
            reader.await.context("reading the sidecar's stderr")?;
        }
        Ok(Ended {
            reply: ShutdownReply::default(),
            exit,
            stderr: self.stderr(),
        })
    }
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

/// `error`, and when the pipes closed, the exit status (waiting up to a second for it) and
/// the last lines of stderr.
async fn explain(
    child: &mut Child,
    reader: &mut Option<JoinHandle<()>>,
    stderr: &Mutex<Vec<u8>>,
    error: ClientError,
) -> anyhow::Error {
    if !error.is_closed() {
        return anyhow::Error::new(error);
    }
    let pid = child.id().map_or("?".to_string(), |pid| pid.to_string());
    let what = match tokio::time::timeout(Duration::from_secs(1), child.wait()).await {
        Ok(Ok(status)) => format!("the sidecar (pid {pid}) exited ({status})"),
        Ok(Err(e)) => format!("the sidecar (pid {pid}) cannot be waited for ({e})"),
        Err(_) => format!("the sidecar (pid {pid}) closed its pipes but is still running"),
    };
    if let Some(reader) = reader.take() {
        let _ = tokio::time::timeout(Duration::from_secs(1), reader).await;
    }
    let text = String::from_utf8_lossy(&lock(stderr)).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    anyhow::Error::new(error).context(format!("{what}; its stderr:\n{tail}"))
}

async fn keep_stderr(mut pipe: ChildStderr, into: Arc<Mutex<Vec<u8>>>) {
    let mut buffer = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        lock(&into).extend_from_slice(&buffer[..n]);
    }
}

fn lock(buffer: &Mutex<Vec<u8>>) -> std::sync::MutexGuard<'_, Vec<u8>> {
    buffer
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
