//! One recording from start to end: a private `CODEX_HOME` seeded as the harness seeds a
//! world's (its `config.toml` points codex at the recording proxy), the shim first on the
//! client's `PATH` and in `CODEX_PARITY_CODEX`, the client's command run to its end, every
//! relay it left stopped, and the scenario file written from both sides (checked by the
//! scenario-file reader before it is written).
//!
//! The recording's directory (relay logs, the private home, the model exchanges) lives in
//! the command's run directory (`crate::harness::run_dir`), private to the user, and goes
//! with it, a killed `record`'s too. The client runs in a process group of its own that
//! dies with `record`: the client by the parent-death signal, the rest of its group by the
//! [`Guard`]. With `--keep` the directory moves to `$TMPDIR/codex-parity-kept-record-…`,
//! every file in it redacted ([`keep`]), on success and on failure alike. Everything
//! written or printed passes one [`Redactor`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::codex::binary::CodexBinary;
use crate::harness::guard::Guard;
use crate::harness::home_template;
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
    /// Serve the model side from the built-in mock with these responses (a sidecar script
    /// `{"responses": […]}` or a scenario file's `[[response]]`s) instead of an upstream.
    pub responses: Option<PathBuf>,
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
    /// `codex exec` runs the client started.
    pub execs: usize,
    /// Every request the proxy forwarded (model requests and others).
    pub forwarded: usize,
    /// The kept directory, with `--keep`.
    pub kept: Option<PathBuf>,
    /// What went wrong on the model side without failing the recording, and what the
    /// built-in mock of `--responses` was left with (redacted).
    pub problems: Vec<String>,
}

/// The redactor of a recording with options `o`: its `--redact` patterns, the API key's
/// variable, every variable of this process's environment that holds a secret, and what the
/// upstream URL must not show (credentials, a query).
pub fn redactor(o: &RecordOptions) -> anyhow::Result<Redactor> {
    Redactor::for_recording(
        &o.redact,
        &o.api_key_env,
        std::env::vars_os(),
        crate::record::upstream::secrets_of(&o.upstream),
    )
}

/// Records one session of the client (see the module documentation). Every error's text
/// has passed `redactor`; with `--keep`, so has every file of the kept directory.
pub async fn record(o: &RecordOptions, redactor: &mut Redactor) -> anyhow::Result<Recorded> {
    let dir = match prepare(o) {
        Ok(dir) => dir,
        Err(e) => return Err(redacted(&e, "", redactor)),
    };
    let session = session(o, dir.path(), redactor).await;
    // A file that does not read back is a bug of ours: its directory is kept to report it.
    let keep_it = o.keep || dir.path().join(REJECTED).exists();
    match session {
        Ok(mut recorded) => {
            if keep_it {
                let kept = keep(dir, redactor).map_err(|e| redacted(&e, "", redactor))?;
                recorded.kept = Some(kept);
            }
            Ok(recorded)
        }
        Err(e) => {
            let place = if keep_it {
                match keep(dir, redactor) {
                    Ok(kept) => format!(
                        "\nthe recording's directory (redacted) is kept at {}",
                        kept.display()
                    ),
                    Err(k) => format!("\nthe recording's directory could not be kept: {k:#}"),
                }
            } else {
                "\n(`--keep` keeps the recording's directory, redacted, to look into)".into()
            };
            Err(redacted(&e, &place, redactor))
        }
    }
}

/// The file a recording that does not read back is written to, in the kept directory.
const REJECTED: &str = "rejected.toml";

/// `e`'s whole text and `then`, through the redactor, as a new error.
fn redacted(e: &anyhow::Error, then: &str, redactor: &mut Redactor) -> anyhow::Error {
    anyhow::anyhow!("{}", redactor.text(&format!("{e:#}{then}")))
}

/// What is checked before anything runs (a command to record; an `--out` whose folder
/// exists, made when missing, and takes a file), then the recording's directory: in the
/// command's run directory, private, removed at the end or by the next command when this
/// one is killed.
fn prepare(o: &RecordOptions) -> anyhow::Result<tempfile::TempDir> {
    if o.command.is_empty() {
        bail!(
            "no command to record: give the client after `--`, e.g. `codex-parity record --out s.toml -- python3 my_client.py`"
        );
    }
    if o.out.is_dir() {
        bail!(
            "--out {} is a directory: give the scenario file to write (FILE.toml)",
            o.out.display()
        );
    }
    let folder = o
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder).with_context(|| {
        format!(
            "creating {} for --out (nothing was recorded)",
            folder.display()
        )
    })?;
    tempfile::NamedTempFile::new_in(folder).with_context(|| {
        format!(
            "--out {}: its folder takes no file (nothing was recorded; choose another --out)",
            o.out.display()
        )
    })?;
    tempfile::Builder::new()
        .prefix("codex-parity-record-")
        .tempdir()
        .context("creating the recording's directory")
}

/// The model side: the upstream, or the built-in mock serving `--responses`.
enum ModelSide {
    Upstream(Upstream),
    Mock(codex_parity_sidecar::Server),
}

impl ModelSide {
    async fn start(o: &RecordOptions) -> anyhow::Result<ModelSide> {
        let Some(path) = &o.responses else {
            return Ok(ModelSide::Upstream(Upstream::parse(&o.upstream)?));
        };
        let responses = responses_of(path)?;
        let server = codex_parity_sidecar::Server::start("127.0.0.1", 0)
            .await
            .context("starting the built-in mock for --responses")?;
        server
            .enqueue(&responses)
            .map_err(|e| anyhow::anyhow!("--responses {}: {e}", path.display()))?;
        Ok(ModelSide::Mock(server))
    }

    fn upstream(&self) -> anyhow::Result<Upstream> {
        match self {
            ModelSide::Upstream(u) => Ok(u.clone()),
            ModelSide::Mock(server) => Upstream::parse(&server.base_url()),
        }
    }

    /// What the mock was left with: responses never served, requests no response answered.
    fn leftovers(&self) -> Vec<String> {
        let ModelSide::Mock(server) = self else {
            return Vec::new();
        };
        let left = server.leftovers();
        left.pending
            .iter()
            .map(|l| format!("--responses: never served: {l}"))
            .chain(
                left.unscripted
                    .iter()
                    .map(|l| format!("--responses: no response left for: {l}")),
            )
            .collect()
    }
}

/// The responses of `--responses FILE`: a scenario file's `[[response]]`s (`.toml`) or a
/// sidecar script (`{"responses": […]}`).
fn responses_of(path: &Path) -> anyhow::Result<Vec<codex_parity_sidecar::Scripted>> {
    if path.extension().is_some_and(|x| x == "toml") {
        let compiled = crate::scenario_file::compile_file(path)
            .map_err(|e| anyhow::anyhow!("--responses {}: {e}", path.display()))?;
        if compiled.responses.is_empty() {
            bail!(
                "--responses {}: the scenario file has no [[response]] to serve",
                path.display()
            );
        }
        return Ok(compiled.responses);
    }
    codex_parity_sidecar::cli::load_config(path)
        .with_context(|| format!("--responses {}", path.display()))
}

/// The recording itself, in `dir`: on success the file is written to `--out`.
async fn session(
    o: &RecordOptions,
    dir: &Path,
    redactor: &mut Redactor,
) -> anyhow::Result<Recorded> {
    // First: from here on, a killed `record` leaves nothing behind.
    let mut guard = Guard::start(&o.exe)?;
    let model = ModelSide::start(o).await?;
    let upstream = model.upstream()?;
    reachable(&upstream).await?;
    let proxy = ModelProxy::start(upstream).await?;
    let setup = Setup::make(o, dir, &proxy.base_url()).await?;
    let logs = relay::logs_dir(&setup.session);
    let listener = match &o.listen {
        Some(url) => {
            let cwd = std::env::current_dir().context("reading the working directory")?;
            let log = setup.session.join("codex-stderr.log");
            Some(Listener::start(url, &setup.config, &logs, cwd, &log).await?)
        }
        None => None,
    };
    let listen_url = listener.as_ref().map(Listener::url);
    let client_exit = run_client(o, &setup.bin, &setup.shim, listen_url, &mut guard).await;
    let listen_note = match listener {
        Some(l) => l.stop().await,
        None => None,
    };
    let client_exit = client_exit?;
    stop_relays(&logs).await;
    drop(guard);
    let sessions = timeline::read(&logs)?;
    let (exchanges, mut problems) = proxy.finish().await;
    problems.extend(model.leftovers());
    let problems: Vec<String> = problems.iter().map(|p| redactor.text(p)).collect();
    // Raw, in the private directory: redacted with the rest if it is kept.
    let path = dir.join("exchanges.json");
    std::fs::write(&path, serde_json::to_string_pretty(&exchanges)?)
        .with_context(|| format!("writing {}", path.display()))?;
    if sessions.is_empty() {
        return Err(no_session(o, &sessions.others, &setup.shim, client_exit));
    }
    let meta = meta(o, &setup.home, client_exit, listen_note);
    let written = writer::write(&sessions, &exchanges, &meta, redactor)
        .map_err(|e| anyhow::anyhow!("{e:#}{}", exit_note(client_exit)))?;
    write_out(o, dir, &written.text)?;
    Ok(Recorded {
        name: meta.name,
        written,
        client_exit,
        sessions: sessions.app.len(),
        execs: sessions.exec.len(),
        forwarded: exchanges.len(),
        kept: None,
        problems,
    })
}

/// What the client is given: the private home (its `config.toml` pointing codex at the
/// proxy), the relays' configuration, and the shim.
struct Setup {
    home: PathBuf,
    session: PathBuf,
    bin: PathBuf,
    config: RelayConfig,
    shim: PathBuf,
}

impl Setup {
    async fn make(o: &RecordOptions, dir: &Path, base_url: &str) -> anyhow::Result<Setup> {
        let (home, session, bin) = (dir.join("codex-home"), dir.join("session"), dir.join("bin"));
        std::fs::create_dir_all(&session)
            .with_context(|| format!("creating {}", session.display()))?;
        if let Some(template) = home_template::ensure(&o.binary).await {
            template.seed(&home)?;
        }
        write_config(&home, o, base_url)?;
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
        Ok(Setup {
            home,
            session,
            bin,
            config,
            shim,
        })
    }
}

/// Why nothing can be written when the client started no session.
fn no_session(
    o: &RecordOptions,
    others: &[Vec<String>],
    shim: &Path,
    client_exit: Option<i32>,
) -> anyhow::Error {
    if let Some(url) = &o.listen {
        return anyhow::anyhow!(
            "the client never connected to the app-server listener {url} (also in \
             ${LISTEN_ENV}){}",
            exit_note(client_exit)
        );
    }
    let ran = if others.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = others
            .iter()
            .map(|a| format!("codex {}", a.join(" ")))
            .collect();
        format!(" (it ran only: {})", list.join("; "))
    };
    anyhow::anyhow!(
        "the client never started `codex app-server` or `codex exec`{ran}: it was given the \
         shim {} as the first `codex` on its PATH and in ${CODEX_ENV}; a client that takes \
         codex's path from elsewhere (a config file, an absolute path, an SDK's \
         `codexPathOverride`) must be pointed at it{}",
        shim.display(),
        exit_note(client_exit)
    )
}

/// What the file says about where it came from.
fn meta(
    o: &RecordOptions,
    home: &Path,
    client_exit: Option<i32>,
    listen_note: Option<String>,
) -> Meta {
    let listened = o.listen.iter().map(|_| {
        "recorded over the app-server's WebSocket listener; the replay speaks to codex over stdio"
            .to_string()
    });
    Meta {
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
        upstream: match &o.responses {
            Some(path) => format!("the built-in mock serving {}", path.display()),
            None => o.upstream.clone(),
        },
        date: today(),
        client_exit,
        home: home.to_path_buf(),
        approval_policy: o.approval_policy.clone(),
        sandbox_mode: o.sandbox_mode.clone(),
        timing: o.timing,
        notes: listened.chain(listen_note).collect(),
    }
}

/// Writes the file to `--out` once the scenario-file reader reads it back (the guard behind
/// the model: a file it refuses is a bug of ours, kept as `rejected.toml` in `dir`).
fn write_out(o: &RecordOptions, dir: &Path, text: &str) -> anyhow::Result<()> {
    if let Err(problems) = load::compile(&o.out, text) {
        let aside = dir.join(REJECTED);
        std::fs::write(&aside, text).with_context(|| format!("writing {}", aside.display()))?;
        let list: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        bail!(
            "the file written from this recording does not read back (a bug of codex-parity's; \
             it is kept as {REJECTED}):\n{}",
            list.join("\n")
        );
    }
    std::fs::write(&o.out, text).with_context(|| format!("writing {}", o.out.display()))
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
/// Ctrl-C or SIGTERM the group is stopped. The client dies with `record` (the parent-death
/// signal) and the guard kills the rest of its group then. Returns its exit status.
async fn run_client(
    o: &RecordOptions,
    bin: &Path,
    shim: &Path,
    listen: Option<&str>,
    guard: &mut Guard,
) -> anyhow::Result<Option<i32>> {
    let mut path = OsString::from(bin);
    if let Some(old) = std::env::var_os("PATH") {
        path.push(":");
        path.push(old);
    }
    let program = &o.command[0];
    let mut command = tokio::process::Command::new(program);
    command
        .args(&o.command[1..])
        .env("PATH", path)
        .env(CODEX_ENV, shim)
        .envs(listen.map(|url| (LISTEN_ENV, url)))
        .process_group(0)
        .kill_on_drop(true);
    codex_parity_sidecar::control::parent_death::die_with_parent(&mut command);
    let mut child = command
        .spawn()
        .with_context(|| format!("starting the client {}", program.to_string_lossy()))?;
    if let Some(pid) = child.id() {
        guard.watch(pid)?;
    }
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

/// Keeps the recording's directory: moved to `$TMPDIR/codex-parity-kept-record-…` (out of
/// the run directory, which goes at the end), every file in it redacted (text through the
/// redactor, other files masked byte for byte: codex's databases), directories made 0700
/// and files 0600, anything that is neither removed; a file in which the redactor's guard
/// still finds a secret is removed. Returns where.
pub fn keep(dir: tempfile::TempDir, redactor: &mut Redactor) -> anyhow::Result<PathBuf> {
    let kept = tempfile::Builder::new()
        .prefix("codex-parity-kept-record-")
        .tempdir_in(std::env::temp_dir())
        .context("creating the kept directory")?
        .keep();
    for entry in std::fs::read_dir(dir.path())
        .with_context(|| format!("reading {}", dir.path().display()))?
        .flatten()
    {
        let to = kept.join(entry.file_name());
        std::fs::rename(entry.path(), &to)
            .or_else(|_| copy_tree(&entry.path(), &to))
            .with_context(|| format!("moving {} to {}", entry.path().display(), to.display()))?;
    }
    drop(dir);
    redact_tree(&kept, redactor)?;
    Ok(kept)
}

/// Copies `from` (a file or a directory) to `to`: for a kept directory on another file
/// system than the run's.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    if from.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)?.flatten() {
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        std::fs::copy(from, to).map(|_| ())
    }
}

/// Redacts every file under `dir` in place and makes the tree private (see [`keep`]).
fn redact_tree(dir: &Path, redactor: &mut Redactor) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("making {} private", dir.display()))?;
    for entry in std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
    {
        let path = entry.path();
        let kind = entry
            .file_type()
            .with_context(|| format!("reading {}", path.display()))?;
        if kind.is_dir() {
            redact_tree(&path, redactor)?;
        } else if kind.is_file() {
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let clean = redactor.bytes(&bytes);
            if redactor.leak(&clean).is_some() {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
                continue;
            }
            if clean != bytes {
                std::fs::write(&path, &clean)
                    .with_context(|| format!("rewriting {}", path.display()))?;
            }
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .with_context(|| format!("making {} private", path.display()))?;
        } else {
            // Sockets, pipes and links: nothing to read later, and a link may lead out.
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
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
