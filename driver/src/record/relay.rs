//! The shim's other half: what runs when the client starts "codex". The shim
//! ([`crate::record::shim`]) is a script named `codex` that execs `codex-parity record-relay
//! SESSION ARGS…`; [`relay`] then starts the real codex with the client's arguments, in the
//! recording's private `CODEX_HOME`, writing what passed to a log of its own
//! (`SESSION/sessions/N.jsonl`, one per codex the client started):
//!
//! - `codex app-server`: stdin and stdout relayed line by line, unchanged, each line logged
//!   with its direction and time;
//! - `codex exec` (or `e`): stdin relayed as it comes and logged whole at its end, each line
//!   of the event stream on stdout logged as it goes, and the files the arguments name that
//!   a replay needs (`--output-schema`) logged with their content; codex runs with
//!   `--disable plugins -c analytics.enabled=false`, as the harness runs it;
//! - any other command (`codex --version`, …) runs as is and is only noted.
//!
//! The log is flushed line by line, so a relay killed outright still leaves what it saw.
//! On SIGTERM, SIGINT or SIGHUP the relay kills its codex and exits 143; a relay killed
//! with SIGKILL takes its codex with it (the parent-death signal).

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::record::exchange::{ClientLine, Micros, now_us};

/// What the recorder tells the relays (`SESSION/relay.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RelayConfig {
    /// The real codex binary.
    pub codex: PathBuf,
    /// Variables set for codex (the private `CODEX_HOME` among them).
    pub env: Vec<(String, String)>,
    /// Variables removed from the client's environment before codex starts.
    pub remove_env: Vec<String>,
    /// Arguments put right after `app-server` (`--disable plugins`).
    pub app_server_args: Vec<String>,
}

/// One line of a relay's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LogEntry {
    /// The client started codex with these arguments.
    Start {
        /// When.
        at: Micros,
        /// The arguments after `codex`.
        args: Vec<String>,
        /// Whether they were `app-server …` or `exec …`, whose stdio is relayed and logged.
        relayed: bool,
        /// Whether they were `exec …` (the stdout lines are its event stream).
        #[serde(default)]
        exec: bool,
        /// The client's working directory.
        cwd: PathBuf,
        /// The relay's process id (the recorder stops relays still running at the end).
        pid: u32,
    },
    /// A relayed JSON-RPC line, or a line of `exec`'s event stream.
    Line(ClientLine),
    /// What the client wrote to `exec`'s stdin, whole, when it closed it.
    Stdin {
        /// When stdin ended.
        at: Micros,
        /// The text (lossy UTF-8).
        text: String,
    },
    /// A file an `exec` argument names, as it was when codex started.
    File {
        /// When it was read.
        at: Micros,
        /// The flag that named it (`--output-schema`).
        flag: String,
        /// The path as given.
        path: String,
        /// Its content (lossy UTF-8); `None` when it could not be read.
        text: Option<String>,
    },
    /// Codex exited.
    Exit {
        /// When.
        at: Micros,
        /// Its exit status, `None` when killed by a signal.
        code: Option<i32>,
    },
}

/// The file a recorder writes its [`RelayConfig`] into, in the session directory.
pub fn config_path(session: &Path) -> PathBuf {
    session.join("relay.json")
}

/// The directory of the relays' logs.
pub fn logs_dir(session: &Path) -> PathBuf {
    session.join("sessions")
}

/// Runs codex for the client as the shim was asked to (see the module documentation);
/// returns codex's exit status for the relay to exit with.
pub async fn relay(session: &Path, args: Vec<OsString>) -> anyhow::Result<i32> {
    let path = config_path(session);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading {} (is the `codex-parity record` that made this shim still running?)",
            path.display()
        )
    })?;
    let config: RelayConfig =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let relayed = args.first().is_some_and(|a| a == "app-server");
    let exec = args.first().is_some_and(|a| a == "exec" || a == "e");
    let (mut log, _) = open_log(&logs_dir(session))?;
    let cwd = std::env::current_dir().unwrap_or_default();
    let start = LogEntry::Start {
        at: now_us(),
        args: args.clone(),
        relayed: relayed || exec,
        exec,
        cwd,
        pid: std::process::id(),
    };
    write_entry(&mut log, &start)?;
    let mut command = tokio::process::Command::new(&config.codex);
    if relayed {
        command
            .arg("app-server")
            .args(&config.app_server_args)
            .args(&args[1..]);
    } else if exec {
        for (flag, path) in named_files(&args) {
            let text = std::fs::read(&path)
                .ok()
                .map(|b| String::from_utf8_lossy(&b).into_owned());
            write_entry(
                &mut log,
                &LogEntry::File {
                    at: now_us(),
                    flag,
                    path,
                    text,
                },
            )?;
        }
        command.arg("exec").args(EXEC_ARGS).args(&args[1..]);
    } else {
        command.args(&args);
    }
    for name in &config.remove_env {
        command.env_remove(name);
    }
    command.envs(config.env.iter().map(|(k, v)| (k, v)));
    // Codex goes with its relay, even a relay killed outright.
    codex_parity_sidecar::control::parent_death::die_with_parent(&mut command);
    let code = if relayed {
        relay_stdio(command, &mut log).await?
    } else if exec {
        relay_exec(command, &mut log).await?
    } else {
        let status = command
            .status()
            .await
            .with_context(|| format!("starting {}", config.codex.display()))?;
        status.code()
    };
    write_entry(&mut log, &LogEntry::Exit { at: now_us(), code })?;
    Ok(code.unwrap_or(1))
}

/// What `exec` runs with, as the harness runs it: no plugins, no analytics (which `exec`,
/// unlike `app-server`, sends by default).
pub const EXEC_ARGS: [&str; 4] = ["--disable", "plugins", "-c", "analytics.enabled=false"];

/// The flags of `exec` whose value is a file a replay needs, with that file.
fn named_files(args: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a == "--output-schema" {
            if let Some(path) = args.get(i + 1) {
                out.push((a.clone(), path.clone()));
            }
        } else if let Some(path) = a.strip_prefix("--output-schema=") {
            out.push(("--output-schema".into(), path.to_string()));
        }
    }
    out
}

/// Creates the next free `N.jsonl` in `dir` (N from 0), for one relay alone.
pub fn open_log(dir: &Path) -> anyhow::Result<(std::fs::File, PathBuf)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for n in 0.. {
        let path = dir.join(format!("{n}.jsonl"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
    unreachable!("an unbounded range ends only by returning")
}

/// Appends one entry to a log.
pub fn write_entry(log: &mut std::fs::File, entry: &LogEntry) -> anyhow::Result<()> {
    let mut line = serde_json::to_string(entry).context("encoding a relay log line")?;
    line.push('\n');
    log.write_all(line.as_bytes())
        .context("writing the relay log")
}

/// Starts `command` with piped stdin and stdout, relays both ways logging each line, and
/// returns its exit status; a termination signal kills it.
async fn relay_stdio(
    mut command: tokio::process::Command,
    log: &mut std::fs::File,
) -> anyhow::Result<Option<i32>> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting codex app-server")?;
    let to_codex = child.stdin.take().context("codex's stdin")?;
    let from_codex = child.stdout.take().context("codex's stdout")?;
    let (lines, mut logged) = tokio::sync::mpsc::unbounded_channel::<ClientLine>();
    let client_lines = lines.clone();
    // Dropping codex's stdin when the client's ends is how the end of the session reaches
    // codex.
    let inbound = tokio::spawn(pump(tokio::io::stdin(), to_codex, true, client_lines));
    let outbound = tokio::spawn(pump(from_codex, tokio::io::stdout(), false, lines));
    let status = supervise(&mut child, outbound, &mut logged, log).await?;
    inbound.abort();
    Ok(status)
}

/// Waits for codex to exit (a termination signal to the relay kills it), logging the lines
/// the pumps send meanwhile, then what codex wrote before it exited (`outbound` relays it
/// within 2 s); returns its exit status.
async fn supervise(
    child: &mut tokio::process::Child,
    outbound: tokio::task::JoinHandle<()>,
    logged: &mut tokio::sync::mpsc::UnboundedReceiver<ClientLine>,
    log: &mut std::fs::File,
) -> anyhow::Result<Option<i32>> {
    let mut term = signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut int = signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut hup = signal(tokio::signal::unix::SignalKind::hangup())?;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.ok().and_then(|s| s.code()),
            Some(line) = logged.recv() => write_entry(log, &LogEntry::Line(line))?,
            _ = term.recv() => break killed(child).await,
            _ = int.recv() => break killed(child).await,
            _ = hup.recv() => break killed(child).await,
        }
    };
    // What codex wrote before it exited is still in the pipe: relay it before the exit line.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), outbound).await;
    while let Ok(line) = logged.try_recv() {
        write_entry(log, &LogEntry::Line(line))?;
    }
    Ok(status)
}

/// Starts `exec` with piped stdin and stdout: the client's stdin is relayed as it comes
/// (and logged whole when it ends), the event stream on stdout line by line (each line
/// logged); returns the exit status; a termination signal kills codex.
async fn relay_exec(
    mut command: tokio::process::Command,
    log: &mut std::fs::File,
) -> anyhow::Result<Option<i32>> {
    use std::io::IsTerminal;
    // A terminal is codex's own, as without the relay: exec reads a piped stdin only.
    let terminal = std::io::stdin().is_terminal();
    let mut child = command
        .stdin(if terminal {
            Stdio::inherit()
        } else {
            Stdio::piped()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting codex exec")?;
    let to_codex = child.stdin.take();
    let from_codex = child.stdout.take().context("codex's stdout")?;
    let (lines, mut logged) = tokio::sync::mpsc::unbounded_channel::<ClientLine>();
    let inbound = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut to_codex = to_codex?;
        let mut stdin = tokio::io::stdin();
        let mut all = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match stdin.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    all.extend_from_slice(&buf[..n]);
                    if to_codex.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping codex's stdin is how the end of the prompt reaches codex.
        drop(to_codex);
        Some((now_us(), String::from_utf8_lossy(&all).into_owned()))
    });
    let outbound = tokio::spawn(pump(from_codex, tokio::io::stdout(), false, lines));
    let status = supervise(&mut child, outbound, &mut logged, log).await?;
    // A client that never closes stdin (codex ran from the prompt argument alone): no stdin
    // is logged.
    if let Ok(Ok(Some((at, text)))) =
        tokio::time::timeout(std::time::Duration::from_millis(500), inbound).await
    {
        write_entry(log, &LogEntry::Stdin { at, text })?;
    }
    Ok(status)
}

/// Copies `from` to `to` line by line, flushing each, and sends each line (with its time
/// and direction) to `log`, until `from` ends or `to` is gone.
async fn pump(
    from: impl tokio::io::AsyncRead + Unpin,
    mut to: impl tokio::io::AsyncWrite + Unpin,
    from_client: bool,
    log: tokio::sync::mpsc::UnboundedSender<ClientLine>,
) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(text)) = lines.next_line().await {
        let at = now_us();
        if to.write_all(format!("{text}\n").as_bytes()).await.is_err() {
            break;
        }
        let _ = to.flush().await;
        let _ = log.send(ClientLine {
            at,
            from_client,
            text,
        });
    }
}

fn signal(kind: tokio::signal::unix::SignalKind) -> anyhow::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind).context("installing a signal handler")
}

/// Kills codex after a termination signal; the relay then exits 143.
async fn killed(child: &mut tokio::process::Child) -> Option<i32> {
    let _ = child.kill().await;
    Some(143)
}

/// Reads one relay log (entries that do not parse, such as a last line cut short by a
/// kill, are skipped).
pub fn read_log(path: &Path) -> anyhow::Result<Vec<LogEntry>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_are_numbered_one_per_relay() {
        let dir = tempfile::tempdir().unwrap();
        let (_, a) = open_log(dir.path()).unwrap();
        let (_, b) = open_log(dir.path()).unwrap();
        assert_eq!(
            (a.file_name().unwrap(), b.file_name().unwrap()),
            ("0.jsonl".as_ref(), "1.jsonl".as_ref())
        );
    }

    #[test]
    fn a_log_cut_short_keeps_its_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let (mut file, path) = open_log(dir.path()).unwrap();
        let line = LogEntry::Line(ClientLine {
            at: 5,
            from_client: true,
            text: "{}".into(),
        });
        write_entry(&mut file, &line).unwrap();
        file.write_all(b"{\"kind\":\"line\",\"at\":6,\"fr").unwrap();
        assert_eq!(read_log(&path).unwrap(), vec![line]);
    }
}
