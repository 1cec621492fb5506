//! One `client-check`: the integrator's COMMAND run once per mutation, each time with a
//! `codex` shim (first on its `PATH` and in `CODEX_PARITY_CODEX`, as with `record`) that is
//! the mock codex of [`crate::client_check::serve`] serving that mutation's script (its
//! app-server on stdio, its `codex exec`). With a listener ([`CheckOptions::listen`]) the
//! mock also listens on a WebSocket before COMMAND starts, its URL in
//! `CODEX_PARITY_LISTEN`, as `record --listen` gives it. COMMAND runs in a process group of
//! its own, bounded by the time limit; the group is killed after it, and the listener
//! with it, so nothing either started outlives the check (the listener and COMMAND die
//! with client-check, and the guard kills the rest when client-check is killed outright).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::client_check::judge::{Ran, Reference, Rules, judge};
use crate::client_check::mutation::Mutation;
use crate::client_check::script::Script;
use crate::client_check::serve::{self, SERVE_COMMAND};
use crate::client_check::served::{self, Served, Via};
use crate::client_check::source::Source;
use crate::client_check::verdict::{CheckVerdict, Row};
use crate::client_check::ws_serve::LISTENING_ON;
use crate::codex::binaries::OneBinary;
use crate::harness::guard::Guard;
use crate::record::recorder::LISTEN_ENV;
use crate::record::redact::Redactor;
use crate::record::shim::{self, CODEX_ENV};

/// What to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The session served.
    pub source: Source,
    /// The codex a scenario-file source runs on.
    pub codex: OneBinary,
    /// The mutations, in order.
    pub mutations: Vec<Mutation>,
    /// The mutations that must pass for the check to pass (by name).
    pub must_survive: Vec<String>,
    /// COMMAND's time limit per mutation.
    pub timeout: Duration,
    /// COMMAND and its arguments.
    pub command: Vec<OsString>,
    /// codex-parity's own executable (what the shim runs).
    pub exe: PathBuf,
    /// Where each mutation's run is kept (its script, what was served, COMMAND's output);
    /// `None`: a temporary directory, removed at the end.
    pub keep_in: Option<PathBuf>,
    /// Whether a client that ends before the session's end fails (else its row is
    /// `stopped early`, which passes).
    pub whole_session: bool,
    /// Lines of COMMAND's stdout left out when it is held against `none`'s.
    pub ignore_output: Vec<regex::Regex>,
    /// Serve the app-server connections on a WebSocket listener at this address
    /// (`ws://HOST:PORT`, port 0 for one the system picks), given to COMMAND in
    /// `CODEX_PARITY_LISTEN`; `None`: only through the shim (stdio, exec).
    pub listen: Option<String>,
}

/// Runs the check (see the module docs).
pub async fn check(o: &CheckOptions) -> anyhow::Result<CheckVerdict> {
    let Some(program) = o.command.first() else {
        bail!(
            "no command to check: give your client after `--`, e.g. \
             `codex-parity client-check --from s.toml -- python3 my_client.py`"
        );
    };
    if which(Path::new(program)).is_none() {
        bail!(
            "command not found: {}; give a path to it or put it on PATH",
            program.to_string_lossy()
        );
    }
    // From here on, a client-check killed outright leaves no COMMAND running.
    let mut guard = Guard::start(&o.exe)?;
    let temp = tempfile::Builder::new()
        .prefix("codex-parity-check-")
        .tempdir()
        .context("creating the check's directory")?;
    let base = o
        .keep_in
        .clone()
        .unwrap_or_else(|| temp.path().to_path_buf());
    let world = base.join("world");
    if world.exists() {
        std::fs::remove_dir_all(&world).with_context(|| format!("emptying {}", world.display()))?;
    }
    std::fs::create_dir_all(world.join("workspace"))
        .with_context(|| format!("creating {}", world.display()))?;
    let recorded = o.source.script(None, &o.codex, &world).await?;
    if recorded.answers() == 0 && recorded.execs.is_empty() {
        bail!(
            "{} holds no answer to any client request and no codex exec run: there is \
             nothing to serve a client",
            o.source.describe()
        );
    }
    if o.listen.is_some() && recorded.connections.is_empty() {
        bail!(
            "--listen: {} holds no app-server connection to serve on a listener (it holds \
             codex exec runs only)",
            o.source.describe()
        );
    }
    let mut rows: Vec<Option<Row>> = vec![None; o.mutations.len()];
    // `none` first: the others' output is held against its own.
    let mut order: Vec<usize> = (0..o.mutations.len()).collect();
    order.sort_by_key(|&n| o.mutations[n] != Mutation::None);
    let mut reference = Reference::NotRun;
    for n in order {
        let mutation = &o.mutations[n];
        let name = mutation.name();
        let must = o.must_survive.iter().any(|m| *m == name || m == "all");
        let served = match mutation {
            Mutation::As(v) => o.source.script(Some(v), &o.codex, &world).await,
            _ => Ok(recorded.clone()),
        }
        .map_err(|e| format!("{e:#}"))
        .and_then(|s| mutation.apply(&s));
        let row = match served {
            Err(why) => Row::not_applicable(&name, mutation.expect(), must, why),
            Ok(script) => {
                let dir = base.join(format!("{:02}-{}", n + 1, file_name(&name)));
                let said = script.notes.clone();
                let ran = run_one(o, &dir, script, &mut guard).await?;
                let rules = Rules {
                    whole_session: o.whole_session,
                    ignore_output: &o.ignore_output,
                };
                let mut row = judge(mutation, must, &ran, &rules, &reference);
                row.notes.extend(said);
                if *mutation == Mutation::None {
                    reference = if row.passes() {
                        Reference::Printed(ran.stdout)
                    } else {
                        Reference::Failed
                    };
                }
                row
            }
        };
        eprintln!("codex-parity: {}", row.line());
        rows[n] = Some(row);
    }
    Ok(CheckVerdict {
        source: recorded.origin,
        codex: recorded.codex_version,
        command: o
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        timeout_secs: o.timeout.as_secs(),
        whole_session: o.whole_session,
        listen: o.listen.clone(),
        rows: rows.into_iter().flatten().collect(),
    })
}

/// A mutation's name as a directory name.
fn file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Where `program` is found as the shell would run it (`None`: nowhere).
fn which(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Runs COMMAND against one mutation's script in `dir`. The time limit grows by the
/// pauses `slow` adds, so that a slow session never times out by itself.
async fn run_one(
    o: &CheckOptions,
    dir: &Path,
    mut script: Script,
    guard: &mut Guard,
) -> anyhow::Result<Ran> {
    // Only this run's records may judge it: nothing of an earlier check in the same place.
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("emptying {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let limit = o.timeout + Duration::from_millis(script.gap_ms * script.len() as u64);
    let (connections, execs) = (script.connections.len(), script.execs.len());
    script.deadline_ms = serve::now_ms() + limit.as_millis() as u64 + 5000;
    script.write(&serve::script_path(dir))?;
    let bin = dir.join("bin");
    let codex = shim::write(&bin, &o.exe, SERVE_COMMAND, dir)?;
    let listener = match &o.listen {
        Some(url) => Some(MockListener::start(o, dir, url, guard).await?),
        None => None,
    };
    let listened = listener.as_ref().map(|l| l.url.clone());
    let mut path = OsString::from(&bin);
    if let Some(old) = std::env::var_os("PATH") {
        path.push(":");
        path.push(old);
    }
    let file = |n: &str| {
        std::fs::File::create(dir.join(n))
            .with_context(|| format!("creating {n} in {}", dir.display()))
    };
    let started = Instant::now();
    let mut command = tokio::process::Command::new(&o.command[0]);
    command
        .args(&o.command[1..])
        .env("PATH", path)
        .env(CODEX_ENV, &codex)
        .envs(listened.iter().map(|url| (LISTEN_ENV, url)))
        .stdin(Stdio::null())
        .stdout(file("stdout.txt")?)
        .stderr(file("stderr.txt")?)
        .process_group(0)
        .kill_on_drop(true);
    // COMMAND dies with client-check, and the guard takes the rest of its group.
    codex_parity_sidecar::control::parent_death::die_with_parent(&mut command);
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {}", o.command[0].to_string_lossy()))?;
    if let Some(pid) = child.id() {
        guard.watch(pid)?;
    }
    let group = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(status) => Some(status.context("waiting for the command")?),
        Err(_) => None,
    };
    let seconds = started.elapsed().as_secs_f64();
    if status.is_some() {
        // The mocks end when their stdin closes with COMMAND: let them write how.
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline && running(dir).is_some_and(|r| !r.is_empty()) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    if let Some(group) = group {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let _ = child.wait().await;
    // Only once the group is gone is a mock still running one that left it.
    let group = group.map(|g| g.as_raw_nonzero().get());
    if let Some(group) = group {
        let deadline = Instant::now() + REAPED;
        while Instant::now() < deadline && group_lives(group) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    if let Some(group) = group {
        guard.release(group.unsigned_abs());
    }
    if let Some(listener) = listener {
        listener.stop(guard).await;
    }
    let escaped = stop_escaped(dir, group).await;
    redact_output(dir)?;
    Ok(Ran {
        status,
        seconds,
        limit,
        served: served::read_all(dir),
        escaped,
        stderr: std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default(),
        stdout: std::fs::read_to_string(dir.join("stdout.txt")).unwrap_or_default(),
        connections,
        execs,
        listened,
    })
}

/// The mock's WebSocket listener of one run: `client-check-serve DIR app-server --listen
/// URL`, in a process group of its own, dying with client-check (the parent-death signal)
/// and watched by the guard.
struct MockListener {
    child: tokio::process::Child,
    /// Where it listens: `ws://IP:PORT`.
    url: String,
}

/// How long the listener may take to say where it listens.
const LISTEN_WAIT: Duration = Duration::from_secs(10);

impl MockListener {
    /// Starts it at `url` for the run in `dir`; an error when it cannot listen there.
    async fn start(
        o: &CheckOptions,
        dir: &Path,
        url: &str,
        guard: &mut Guard,
    ) -> anyhow::Result<MockListener> {
        let mut command = tokio::process::Command::new(&o.exe);
        command
            .arg(SERVE_COMMAND)
            .arg(dir)
            .args(["app-server", "--listen", url])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        codex_parity_sidecar::control::parent_death::die_with_parent(&mut command);
        let mut child = command
            .spawn()
            .with_context(|| format!("starting the mock's listener at {url}"))?;
        if let Some(pid) = child.id() {
            guard.watch(pid)?;
        }
        let stderr = child.stderr.take().context("the listener's stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let mut said = Vec::new();
        let found = tokio::time::timeout(LISTEN_WAIT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = line.split(LISTENING_ON).nth(1) {
                    return Some(at.trim().to_string());
                }
                said.push(line);
            }
            None
        })
        .await;
        let Ok(Some(bound)) = found else {
            let _ = child.kill().await;
            bail!(
                "--listen {url}: the mock app-server could not listen there: {}",
                said.join("; ")
            );
        };
        // What it says later goes to a file of the run, never blocks it.
        let log = dir.join("listener-stderr.txt");
        tokio::spawn(async move {
            let mut text = String::new();
            while let Ok(Some(line)) = lines.next_line().await {
                text.push_str(&line);
                text.push('\n');
                let _ = std::fs::write(&log, &text);
            }
        });
        Ok(MockListener { child, url: bound })
    }

    /// Kills it (the connections it still serves end with it) and waits for it.
    async fn stop(mut self, guard: &mut Guard) {
        if let Some(pid) = self.child.id() {
            if let Some(group) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            let _ = self.child.wait().await;
            guard.release(pid);
        } else {
            let _ = self.child.wait().await;
        }
    }
}

/// COMMAND's output as kept (in `--report DIR`), with the values of the environment's
/// secret variables and secret-shaped text replaced (`crate::record::redact`): a client
/// that prints its key does not write it into a report a CI job uploads.
fn redact_output(dir: &Path) -> anyhow::Result<()> {
    let mut redactor =
        Redactor::for_recording(&[], "OPENAI_API_KEY", std::env::vars_os(), Vec::new())?;
    for name in ["stdout.txt", "stderr.txt"] {
        let path = dir.join(name);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let clean = redactor.bytes(&bytes);
        if clean != bytes {
            std::fs::write(&path, clean)
                .with_context(|| format!("rewriting {}", path.display()))?;
        }
    }
    Ok(())
}

/// How long COMMAND's process group may take to be gone after its SIGKILL.
const REAPED: Duration = Duration::from_secs(5);

/// The records of mocks that have not ended and whose process still runs (`None`: the
/// records cannot be read).
fn running(dir: &Path) -> Option<Vec<Served>> {
    let all = served::read_all(dir).ok()?;
    Some(
        all.into_iter()
            .filter(|s| s.ended.is_none() && s.pid != 0 && lives(s.pid))
            .collect(),
    )
}

/// The state and process group of process `pid`, from `/proc/PID/stat`.
fn stat(pid: &str) -> Option<(String, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.to_string();
    let group = fields.nth(1)?.parse().ok()?;
    Some((state, group))
}

/// Whether a process is alive: it exists and is not a zombie (dead, waiting to be reaped).
fn lives(pid: u32) -> bool {
    stat(&pid.to_string()).is_some_and(|(state, _)| !matches!(state.as_str(), "Z" | "X"))
}

/// Whether a live process of process group `group` is left.
fn group_lives(group: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        stat(&name.to_string_lossy())
            .is_some_and(|(state, g)| g == group && !matches!(state.as_str(), "Z" | "X"))
    })
}

/// Kills the mocks still running once COMMAND's process group is gone: they left it (they
/// or whatever started them, e.g. by `setsid`), so they are killed with their own process
/// group; their launches. A mock whose record names COMMAND's group is never one of them.
async fn stop_escaped(dir: &Path, group: Option<i32>) -> Vec<usize> {
    // The listener's connections are the check's own, stopped with it.
    let left: Vec<Served> = running(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| Some(s.pgid as i32) != group && s.via != Via::WebSocket)
        .collect();
    for s in &left {
        for (pid, group) in [(s.pgid, true), (s.pid, false)] {
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = if group {
                    rustix::process::kill_process_group(pid, rustix::process::Signal::KILL)
                } else {
                    rustix::process::kill_process(pid, rustix::process::Signal::KILL)
                };
            }
        }
    }
    if !left.is_empty() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    left.iter().map(|s| s.launch).collect()
}
