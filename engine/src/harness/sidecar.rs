//! The driver's side of the sidecar: the sidecar crate's one process handle
//! ([`SidecarProcess`]: spawned in its own process group, stderr kept, exit watched, killed
//! when dropped) steered with its typed client of the JSONL protocol of
//! `sidecar-protocol.md` (enqueue, requests, status, reset, shutdown).
//! A sidecar that dies before it is told to shut down is reported as such, with its exit
//! status and the tail of its stderr: by the error of the command that got no answer and by
//! [`SidecarHealth::death`].

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::protocol::Status;
use codex_parity_sidecar::{
    ClientError, ConnectionScript, Exit, RequestFilter, Scripted, SidecarProcess, Stderr, Warmup,
};
use tokio::sync::{Mutex, watch};

use crate::app_server::child::ChildExit;

/// The environment variable naming the sidecar executable for [`SidecarLauncher::from_env`].
pub const SIDECAR_ENV: &str = "CODEX_PARITY_SIDECAR";

/// How to start a sidecar: a program and the arguments before the sidecar's own.
#[derive(Debug, Clone)]
pub struct SidecarLauncher {
    /// The executable: `codex-parity-sidecar`, or `codex-parity` with `sidecar` as first arg.
    pub program: PathBuf,
    /// Leading arguments (e.g. `["sidecar"]`).
    pub args: Vec<OsString>,
}

impl SidecarLauncher {
    /// The `sidecar` subcommand of the `codex-parity` executable `program`.
    pub fn codex_parity(program: impl Into<PathBuf>) -> SidecarLauncher {
        SidecarLauncher {
            program: program.into(),
            args: vec!["sidecar".into()],
        }
    }

    /// The sidecar for another crate's tests: `$CODEX_PARITY_SIDECAR` (a
    /// `codex-parity-sidecar` or a `codex-parity` executable), else the first of
    /// `codex-parity-sidecar` and `codex-parity` on `PATH` (`cargo install codex-parity`).
    pub fn from_env() -> anyhow::Result<SidecarLauncher> {
        let named = std::env::var_os(SIDECAR_ENV).map(PathBuf::from);
        let on_path = || {
            ["codex-parity-sidecar", "codex-parity"]
                .into_iter()
                .find_map(|name| {
                    std::env::split_paths(&std::env::var_os("PATH")?)
                        .map(|dir| dir.join(name))
                        .find(|p| p.is_file())
                })
        };
        let program = named.or_else(on_path).with_context(|| {
            format!(
                "no sidecar: set {SIDECAR_ENV} to a codex-parity-sidecar or codex-parity                  executable, or put one on PATH"
            )
        })?;
        let is_parity = program.file_name().is_some_and(|n| {
            n.to_string_lossy().starts_with("codex-parity")
                && !n.to_string_lossy().contains("sidecar")
        });
        Ok(if is_parity {
            SidecarLauncher::codex_parity(program)
        } else {
            SidecarLauncher {
                program,
                args: Vec::new(),
            }
        })
    }

    /// The current executable's `sidecar` subcommand (what `codex-parity run` uses).
    pub fn current_exe() -> anyhow::Result<SidecarLauncher> {
        let program = std::env::current_exe().context("locating the codex-parity executable")?;
        Ok(SidecarLauncher::codex_parity(program))
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

/// A running sidecar.
pub struct Sidecar {
    process: Mutex<SidecarProcess>,
    base_url: String,
    health: Arc<SidecarHealth>,
}

/// Whether a sidecar is alive, how it ended, and whether that was asked for. Shared with
/// whoever wants to explain a failure (the scenario's [`crate::harness::scenario::Tally`]).
#[derive(Debug)]
pub struct SidecarHealth {
    pid: Option<u32>,
    exit: watch::Receiver<Option<Exit>>,
    /// Set before the sidecar is told to shut down.
    stopping: AtomicBool,
    /// Set when it ended on its own, not told to and not killed by this handle.
    died: AtomicBool,
    stderr: Stderr,
}

impl SidecarHealth {
    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// How the process ended, once it has.
    pub fn exit_status(&self) -> Option<ChildExit> {
        self.exit.borrow().clone().map(child_exit)
    }

    /// Whether it ended on its own while nobody was stopping it: at the exit (recorded by
    /// [`watch_death`]) or now, before that record is made.
    fn died(&self) -> bool {
        self.died.load(Ordering::SeqCst)
            || (self.exit.borrow().as_ref().is_some_and(|e| !e.killed)
                && !self.stopping.load(Ordering::SeqCst))
    }

    /// When the sidecar ended without being told to (killed, crashed): what to say about it.
    pub fn death(&self) -> Option<String> {
        if !self.died() {
            return None;
        }
        let status = self
            .exit_status()
            .map_or_else(|| "exit status not yet known".into(), |s| s.to_string());
        Some(format!(
            "the sidecar (pid {}) died during the scenario: {status}; its stderr:\n{}",
            self.pid.map_or("?".to_string(), |p| p.to_string()),
            self.stderr.tail(STDERR_LINES)
        ))
    }

    /// Waits up to `timeout` for the process to end; its exit status if it did.
    async fn wait_exit(&self, timeout: Duration) -> Option<ChildExit> {
        let mut exit = self.exit.clone();
        let _ = tokio::time::timeout(timeout, exit.wait_for(Option::is_some)).await;
        self.exit_status()
    }
}

/// How many lines of its stderr a sidecar's error messages quote.
const STDERR_LINES: usize = 20;

/// The driver's word for how a process ended.
fn child_exit(exit: Exit) -> ChildExit {
    match exit.status {
        Ok(status) => ChildExit::Exited(status),
        Err(e) => ChildExit::WaitFailed(e),
    }
}

/// Dropping the handle is a deliberate stop (a world torn down on an error path): the
/// sidecar then exits on its closed stdin, which must not read as a death.
impl Drop for Sidecar {
    fn drop(&mut self) {
        self.health.stopping.store(true, Ordering::SeqCst);
    }
}

/// Records a death: the exit of a sidecar that ended on its own while nobody was stopping
/// it.
async fn watch_death(mut exit: watch::Receiver<Option<Exit>>, health: Arc<SidecarHealth>) {
    if let Ok(ended) = exit.wait_for(Option::is_some).await
        && ended.as_ref().is_some_and(|e| !e.killed)
        && !health.stopping.load(Ordering::SeqCst)
    {
        health.died.store(true, Ordering::SeqCst);
    }
}

impl Sidecar {
    /// Starts a sidecar with an empty script and waits for its ready line.
    pub async fn start(launcher: &SidecarLauncher) -> anyhow::Result<Sidecar> {
        let process = SidecarProcess::spawn(&launcher.program, &launcher.args)
            .await
            .with_context(|| format!("starting the sidecar {}", launcher.program.display()))?;
        let health = Arc::new(SidecarHealth {
            pid: process.pid(),
            exit: process.exit_watch(),
            stopping: AtomicBool::new(false),
            died: AtomicBool::new(false),
            stderr: process.stderr_handle(),
        });
        tokio::spawn(watch_death(process.exit_watch(), health.clone()));
        let base_url = process.base_url().to_string();
        Ok(Sidecar {
            process: Mutex::new(process),
            base_url,
            health,
        })
    }

    /// Its liveness, shareable (see [`SidecarHealth::death`]).
    pub fn health(&self) -> Arc<SidecarHealth> {
        self.health.clone()
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.health.pid
    }

    /// Why a command got no answer: the process died (with its exit status), or it is
    /// alive and closed its stdout.
    async fn no_answer(&self, op: &str) -> anyhow::Error {
        let pid = self.pid().map_or("?".to_string(), |p| p.to_string());
        let what = match self.health.wait_exit(Duration::from_secs(1)).await {
            Some(status) => format!("the sidecar (pid {pid}) died ({status})"),
            None => format!("the sidecar (pid {pid}) closed its pipes but is still running"),
        };
        anyhow::anyhow!(
            "{what} before answering {op}; its stderr:\n{}",
            self.health.stderr.tail(STDERR_LINES)
        )
    }

    /// The base URL for codex's provider config, `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// A client's result; an error gets how the process ended when its pipes closed.
    async fn explained<T>(&self, result: Result<T, ClientError>) -> anyhow::Result<T> {
        match result {
            Ok(value) => Ok(value),
            Err(e) if e.is_closed() => Err(self.no_answer(e.op()).await),
            Err(e) => Err(e.into()),
        }
    }

    /// Queues scripted responses; returns how many are pending.
    pub async fn enqueue(&self, responses: &[Scripted]) -> anyhow::Result<u64> {
        let result = self.process.lock().await.enqueue(responses).await;
        Ok(self.explained(result).await? as u64)
    }

    /// The model requests captured so far, waiting up to `timeout` for at least `min`.
    pub async fn requests(
        &self,
        min: usize,
        timeout: Duration,
    ) -> anyhow::Result<Vec<CapturedRequest>> {
        let filter = RequestFilter::default();
        let result = self
            .process
            .lock()
            .await
            .wait_for(filter, min, timeout)
            .await;
        self.explained(result).await
    }

    /// Every captured request of any method and path.
    pub async fn all_requests(&self) -> anyhow::Result<Vec<CapturedRequest>> {
        let filter = RequestFilter {
            since: 0,
            all: true,
        };
        let result = self.process.lock().await.requests(filter).await;
        self.explained(result).await
    }

    /// The sidecar's counters.
    pub async fn status(&self) -> anyhow::Result<Status> {
        let result = self.process.lock().await.status().await;
        self.explained(result).await
    }

    /// Empties the script and the captured requests.
    pub async fn reset(&self) -> anyhow::Result<()> {
        let result = self.process.lock().await.reset().await;
        self.explained(result).await
    }

    /// Queues WebSocket connection scripts (taken by upgrades in order) and sets the warm-up
    /// answer when `warmup` is given; returns how many connection scripts wait.
    pub async fn websocket(
        &self,
        warmup: Option<Warmup>,
        connections: Vec<ConnectionScript>,
    ) -> anyhow::Result<usize> {
        let result = self
            .process
            .lock()
            .await
            .websocket(warmup, connections)
            .await;
        self.explained(result).await
    }

    /// Opens the gate `gate`; returns how many responses it let go.
    pub async fn release(&self, gate: &str) -> anyhow::Result<usize> {
        let result = self.process.lock().await.release(gate).await;
        self.explained(result).await
    }

    /// Waits up to `timeout` until a response is held at `gate`; returns how many are held.
    pub async fn wait_gate(&self, gate: &str, timeout: Duration) -> anyhow::Result<usize> {
        let result = self.process.lock().await.wait_gate(gate, timeout).await;
        self.explained(result).await
    }

    /// Asks the sidecar to shut down and waits for it to exit (kills it after 5 s).
    pub async fn shutdown(mut self) -> anyhow::Result<ShutdownReport> {
        self.health.stopping.store(true, Ordering::SeqCst);
        let result = self.process.get_mut().client().shutdown().await;
        let reply = self.explained(result).await?;
        let exit_code = match self.health.wait_exit(Duration::from_secs(5)).await {
            Some(status) => status.code(),
            None => {
                self.process.get_mut().kill();
                None
            }
        };
        Ok(ShutdownReport {
            pending: reply.pending as u64,
            unscripted: reply.unscripted,
            exit_code,
        })
    }
}
