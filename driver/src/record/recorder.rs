//! One recording from start to end: a private `CODEX_HOME` seeded as the harness seeds a
//! world's (its `config.toml` points codex at the recording proxy), the shim first on the
//! client's `PATH` and in `CODEX_PARITY_CODEX`, the client's command run to its end, every
//! relay it left stopped, and the scenario file written from both sides (checked by the
//! scenario-file reader before it is written).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::codex::binary::CodexBinary;
use crate::harness::home_template;
use crate::record::exchange::Exchange;
use crate::record::listener::Listener;
use crate::record::model_proxy::ModelProxy;
use crate::record::redact::Redactor;
use crate::record::relay::{self, LogEntry, RelayConfig};
use crate::record::render::Meta;
use crate::record::shim::{self, CODEX_ENV};
use crate::record::timeline;
use crate::record::upstream::Upstream;
use crate::record::writer::{self, Written};
use crate::scenario_file::load;

/// The variable that tells a client of `--listen` where the app-server listens.
pub const LISTEN_ENV: &str = "CODEX_PARITY_LISTEN";

/// The default upstream: the OpenAI Responses API.
pub const DEFAULT_UPSTREAM: &str = "https://api.openai.com/v1";

/// What to record and how.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The real codex the client's `codex` runs.
    pub binary: CodexBinary,
    /// Where model requests go (`https://api.openai.com/v1`).
    pub upstream: String,
    /// The scenario file to write.
    pub out: PathBuf,
    /// Its `name` (default: the file's stem).
    pub name: Option<String>,
    /// Its `id` (default: `REC-` and the name).
    pub id: Option<String>,
    /// The client: a program and its arguments.
    pub command: Vec<OsString>,
    /// `--redact` patterns.
    pub redact: Vec<String>,
    /// The variable holding the API key codex sends (passed through to the upstream).
    pub api_key_env: String,
    /// `model` of the private config (codex's default when `None`).
    pub model: Option<String>,
    /// Offer codex the Responses WebSocket.
    pub websocket: bool,
    /// Keep each event's recorded gap in the file.
    pub timing: bool,
    /// `approval_policy` of the private config.
    pub approval_policy: String,
    /// `sandbox_mode` of the private config.
    pub sandbox_mode: String,
    /// Keep the recording's directory (logs redacted) and say where.
    pub keep: bool,
    /// The `codex-parity` executable the shim runs.
    pub exe: PathBuf,
    /// Accept the client on this app-server listener (`ws://HOST:PORT`) instead of giving
    /// it a codex to run over stdio.
    pub listen: Option<String>,
}

/// What a recording gave.
#[derive(Debug)]
pub struct Recorded {
    /// The scenario's name in the file.
    pub name: String,
    /// The file written and what is in it.
    pub written: Written,
    /// The client's exit status (`None`: a signal).
    pub client_exit: Option<i32>,
    /// App-server sessions the client started.
    pub sessions: usize,
    /// Every request the proxy forwarded (model requests and others).
    pub forwarded: usize,
    /// The kept directory, with `--keep`.
    pub kept: Option<PathBuf>,
}

/// Records one session of the client (see the module documentation).
pub async fn record(o: &RecordOptions) -> anyhow::Result<Recorded> {
    if o.command.is_empty() {
        bail!(
            "no command to record: give the client after `--`, e.g. `codex-parity record --out s.toml -- python3 my_client.py`"
        );
    }
    let secrets: Vec<(String, String)> = std::env::var(&o.api_key_env)
        .map(|v| vec![(v, format!("the API key in ${}", o.api_key_env))])
        .unwrap_or_default();
    let mut redactor = Redactor::new(&o.redact, secrets)?;
    let upstream = Upstream::parse(&o.upstream)?;
    reachable(&upstream).await?;
    let proxy = ModelProxy::start(upstream).await?;
    // In the system's temporary directory, not the run's (`harness::run_dir`): the recording
    // may be kept past the process (`--keep`, a rejected recording).
    let dir = tempfile::Builder::new()
        .prefix("codex-parity-record-")
        .tempdir_in(std::env::temp_dir())
        .context("creating the recording's directory")?;
    let (home, session, bin) = (
        dir.path().join("codex-home"),
        dir.path().join("session"),
        dir.path().join("bin"),
    );
    std::fs::create_dir_all(&session).with_context(|| format!("creating {}", session.display()))?;
    if let Some(template) = home_template::ensure(&o.binary).await {
        template.seed(&home)?;
    }
    write_config(&home, o, &proxy.base_url())?;
    let config = RelayConfig {
        codex: o.binary.path.clone(),
        env: vec![("CODEX_HOME".into(), home.to_string_lossy().into_owned())],
        remove_env: vec![],
        app_server_args: vec!["--disable".into(), "plugins".into()],
    };
    let config_path = relay::config_path(&session);
    std::fs::write(&config_path, serde_json::to_string(&config)?)
        .with_context(|| format!("writing {}", config_path.display()))?;
    let shim = shim::write(&bin, &o.exe, shim::RELAY_COMMAND, &session)?;
    let listener = match &o.listen {
        Some(url) => {
            let cwd = std::env::current_dir().context("reading the working directory")?;
            Some(Listener::start(url, &config, &relay::logs_dir(&session), cwd).await?)
        }
        None => None,
    };
    let client_exit = run_client(o, &bin, &shim, listener.as_ref().map(Listener::url)).await;
    let listen_note = match listener {
        Some(l) => l.stop().await,
        None => None,
    };
    let client_exit = client_exit?;
    stop_relays(&relay::logs_dir(&session)).await;
    let (sessions, others) = timeline::read(&relay::logs_dir(&session))?;
    let (exchanges, problems) = proxy.finish().await;
    for problem in problems {
        eprintln!("codex-parity: record: {problem}");
    }
    if sessions.is_empty() {
        if let Some(url) = &o.listen {
            bail!(
                "the client never connected to the app-server listener {url} (also in \
                 ${LISTEN_ENV}){}",
                exit_note(client_exit)
            );
        }
        let ran = if others.is_empty() {
            String::new()
        } else {
            format!(
                " (it ran only: {})",
                others
                    .iter()
                    .map(|a| format!("codex {}", a.join(" ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        };
        bail!(
            "the client never started `codex app-server`{ran}: it was given the shim {} as the \
             first `codex` on its PATH and in ${CODEX_ENV}; a client that takes codex's path \
             from elsewhere (a config file, an absolute path) must be pointed at it{}",
            shim.display(),
            exit_note(client_exit)
        );
    }
    let meta = Meta {
        name: o.name.clone().unwrap_or_else(|| stem(&o.out)),
        id: o
            .id
            .clone()
            .unwrap_or_else(|| format!("REC-{}", stem(&o.out))),
        command: o
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        codex_version: o.binary.version.clone(),
        upstream: o.upstream.clone(),
        date: today(),
        client_exit,
        home: home.clone(),
        approval_policy: o.approval_policy.clone(),
        sandbox_mode: o.sandbox_mode.clone(),
        timing: o.timing,
        notes: o
            .listen
            .iter()
            .map(|_| "recorded over the app-server's WebSocket listener; the replay speaks to codex over stdio".to_string())
            .chain(listen_note)
            .collect(),
    };
    let written = writer::write(&sessions, &exchanges, &meta, &mut redactor)
        .map_err(|e| anyhow::anyhow!("{e:#}{}", exit_note(client_exit)))?;
    if let Err(problems) = load::compile(&o.out, &written.text) {
        let kept = dir.keep();
        let aside = kept.join("rejected.toml");
        std::fs::write(&aside, &written.text)
            .with_context(|| format!("writing {}", aside.display()))?;
        let list: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        bail!(
            "the file written from this recording does not read back (a bug of codex-parity's; \
             it is kept at {}):\n{}",
            aside.display(),
            list.join("\n")
        );
    }
    std::fs::write(&o.out, &written.text)
        .with_context(|| format!("writing {}", o.out.display()))?;
    let kept = if o.keep {
        Some(keep(dir, &exchanges, &mut redactor)?)
    } else {
        None
    };
    Ok(Recorded {
        name: meta.name,
        written,
        client_exit,
        sessions: sessions.len(),
        forwarded: exchanges.len(),
        kept,
    })
}

/// Fails, naming the upstream, when no connection to it can be made: before the client
/// starts, so that nothing is recorded against a dead end.
async fn reachable(upstream: &Upstream) -> anyhow::Result<()> {
    upstream
        .connect()
        .await
        .map(|_| ())
        .map_err(|e| e.context("nothing was recorded: check --upstream"))
}

/// The private `config.toml`: codex's provider is the recording proxy.
fn write_config(home: &Path, o: &RecordOptions, base_url: &str) -> anyhow::Result<()> {
    let mut text = String::new();
    if let Some(model) = &o.model {
        text.push_str(&format!("model = \"{model}\"\n"));
    }
    text.push_str(&format!(
        "model_provider = \"record\"\napproval_policy = \"{}\"\nsandbox_mode = \"{}\"\n\n\
         [model_providers.record]\nname = \"Record\"\nbase_url = \"{base_url}\"\n\
         wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n\
         stream_idle_timeout_ms = 300000\n",
        o.approval_policy, o.sandbox_mode
    ));
    if std::env::var_os(&o.api_key_env).is_some() {
        text.push_str(&format!("env_key = \"{}\"\n", o.api_key_env));
    }
    if o.websocket {
        text.push_str("supports_websockets = true\n");
    }
    std::fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
    let path = home.join("config.toml");
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

/// Runs the client in a process group of its own with the shim first on its `PATH`; on
/// Ctrl-C or SIGTERM the group is stopped. Returns its exit status.
async fn run_client(
    o: &RecordOptions,
    bin: &Path,
    shim: &Path,
    listen: Option<&str>,
) -> anyhow::Result<Option<i32>> {
    let mut path = OsString::from(bin);
    if let Some(old) = std::env::var_os("PATH") {
        path.push(":");
        path.push(old);
    }
    let program = &o.command[0];
    let mut child = tokio::process::Command::new(program)
        .args(&o.command[1..])
        .env("PATH", path)
        .env(CODEX_ENV, shim)
        .envs(listen.map(|url| (LISTEN_ENV, url)))
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting the client {}", program.to_string_lossy()))?;
    let group = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing a signal handler")?;
    let status = tokio::select! {
        status = child.wait() => status.context("waiting for the client")?.code(),
        _ = tokio::signal::ctrl_c() => { stop_group(group).await; bail!("stopped by Ctrl-C: nothing was written") }
        _ = term.recv() => { stop_group(group).await; bail!("stopped by SIGTERM: nothing was written") }
    };
    stop_group(group).await;
    Ok(status)
}

/// Sends SIGTERM to what is left of the client's process group (a relay stops its codex).
async fn stop_group(group: Option<rustix::process::Pid>) {
    if let Some(pid) = group {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Stops every relay whose log has no exit line yet (SIGTERM: it kills its codex and
/// writes its exit), then waits up to 5 s for their logs to end.
async fn stop_relays(logs: &Path) {
    let running = || -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir(logs) else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| relay::read_log(&e.path()).ok())
            .filter(|entries| !entries.iter().any(|e| matches!(e, LogEntry::Exit { .. })))
            .filter_map(|entries| match entries.first() {
                Some(LogEntry::Start { pid, .. }) => Some(*pid),
                _ => None,
            })
            .collect()
    };
    for pid in running() {
        if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
    for _ in 0..50 {
        if running().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Keeps the recording's directory, its logs rewritten through the redactor, and the
/// model exchanges beside them; returns where.
fn keep(
    dir: tempfile::TempDir,
    exchanges: &[Exchange],
    redactor: &mut Redactor,
) -> anyhow::Result<PathBuf> {
    let kept = dir.keep();
    let logs = relay::logs_dir(&kept.join("session"));
    for entry in std::fs::read_dir(&logs).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        std::fs::write(entry.path(), redactor.text(&text))
            .with_context(|| format!("rewriting {}", entry.path().display()))?;
    }
    let json = serde_json::to_value(exchanges).context("encoding the model exchanges")?;
    let path = kept.join("exchanges.json");
    let text = serde_json::to_string_pretty(&redactor.value(&json))
        .context("encoding the model exchanges")?;
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(kept)
}

fn exit_note(code: Option<i32>) -> String {
    match code {
        Some(0) => String::new(),
        Some(c) => format!(" (the client exited with status {c})"),
        None => " (a signal ended the client)".into(),
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().replace(['-', ' ', '.'], "_"))
        .unwrap_or_else(|| "recorded".into())
}

/// Today's date (UTC), `YYYY-MM-DD`.
fn today() -> String {
    let days = (crate::record::exchange::now_us() / 86_400_000_000) as i64;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn today_is_a_date() {
        let t = today();
        assert_eq!(t.len(), 10, "{t}");
        assert!(t.starts_with("20"), "{t}");
    }

    #[test]
    fn a_file_name_makes_a_scenario_name() {
        assert_eq!(stem(Path::new("/x/my-tool.turn.toml")), "my_tool_turn");
    }
}
