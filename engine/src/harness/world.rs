//! One scenario's isolated world: a fresh sidecar, a fresh `CODEX_HOME` with the mock
//! provider's `config.toml`, a fresh workspace, a recording proxy, and the `codex
//! app-server` processes started in it, each talking to its client over stdio or, where the
//! world's [`Listen`] says so, over the connections of an app-server listener.
//! [`World::finish`] runs the checks every scenario ends with (all scripts served, nothing
//! unscripted, tool calls paired, no escape, one `turn/completed` per turn, no unexpected
//! turn).

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, bail};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{ConnectionScript, Scripted};
use serde_json::json;

use crate::app_server::exec::{self, ExecCommand, ExecRun};
use crate::app_server::listener::{ConnectError, ListenAt, Listener};
use crate::app_server::proxy::Proxy;
use crate::app_server::transcript::Sent;
use crate::app_server::{AppServer, AppServerCommand, DEFAULT_CALL_TIMEOUT};
use crate::codex::binaries::CodexBinary;
use crate::harness::baseline::pairing_kind;
use crate::harness::codex_env::{self, codex_env};
use crate::harness::egress_trap::EgressTrap;
use crate::harness::home_template::{self, HomeTemplate};
use crate::harness::outcome::Drift;
use crate::harness::perf::PerfSettings;
use crate::harness::sidecar::{Sidecar, SidecarLauncher};
use crate::harness::tally::{Connection, Tally};

/// The API key codex sends to the mock (`authorization: Bearer ...`).
pub use crate::harness::codex_env::MOCK_API_KEY;

/// The model configured for the mock provider.
pub use crate::app_server::turn::MOCK_MODEL;

/// How a world's codex is configured (`parity-scenarios.md` §0.1 by default).
#[derive(Debug, Clone)]
pub struct WorldOptions {
    /// `request_max_retries` of the provider (HTTP level).
    pub request_max_retries: u32,
    /// `stream_max_retries` of the provider (turn level).
    pub stream_max_retries: u32,
    /// `stream_idle_timeout_ms` of the provider.
    pub stream_idle_timeout_ms: u64,
    /// The transport the provider offers codex: HTTP only (`supports_websockets` left out,
    /// today's config) or the Responses WebSocket (`supports_websockets = true`).
    pub transport: Transport,
    /// `websocket_connect_timeout_ms` of the provider (codex's default, 15 s, when `None`;
    /// the key is then left out of `config.toml`).
    pub websocket_connect_timeout_ms: Option<u64>,
    /// `approval_policy`.
    pub approval_policy: String,
    /// `sandbox_mode`.
    pub sandbox_mode: String,
    /// The provider's `name` (`Mock` by default). Codex compacts remotely only for a
    /// provider named `OpenAI` (`transports.md` §3.1); `base_url` stays the sidecar's.
    pub provider_name: String,
    /// `model_auto_compact_token_limit`: the usage past which codex compacts by itself
    /// (`transports.md` §3.5); the key is left out of `config.toml` when `None`.
    pub auto_compact_token_limit: Option<u64>,
    /// Extra arguments after `app-server --disable plugins` (e.g. `--enable goals`).
    pub extra_args: Vec<String>,
    /// Extra top-level `config.toml` lines.
    pub extra_config: Vec<String>,
    /// `initialize.capabilities.experimentalApi`.
    pub experimental_api: bool,
    /// Turns codex may start by itself (goal continuations): no "unexpected turn" failure.
    pub allow_autonomous_turns: bool,
    /// A `turn/started` whose turn never completes is the scenario's to judge, not an
    /// after-scenario failure (`review/start` announces an inner turn id: G24).
    pub allow_unpaired_turn_started: bool,
    /// The provider's `base_url`: the world's sidecar when `None`, else a server of the
    /// test's own on loopback (a `wiremock::MockServer`'s `uri()/v1`, see
    /// `codex_parity_wiremock::base_url`). The world's sidecar still runs and
    /// must then see no request.
    pub provider_url: Option<String>,
    /// The provider takes codex's OpenAI auth (`requires_openai_auth = true` instead of an
    /// `env_key`): after a ChatGPT login codex sends its access token as the bearer, and asks
    /// the client to refresh it on a 401. `chatgpt_base_url` then points at a closed local
    /// port, so the ChatGPT backend calls such a login makes fail at once and stay local.
    pub openai_auth: bool,
    /// How the world's app-servers talk to their client: stdio, or one connection to a
    /// `codex app-server --listen` process of their own (group I).
    pub listen: Listen,
}

/// How a world's app-server talks to its client (`codex app-server --listen`); a scenario
/// file says `stdio`, `ws` or `unix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Listen {
    /// JSON lines on stdin and stdout, one client per process (the default).
    #[default]
    Stdio,
    /// `--listen ws://127.0.0.1:0`: WebSocket connections over loopback TCP.
    #[serde(rename = "ws")]
    WebSocket,
    /// `--listen unix://PATH`: WebSocket connections over a unix socket in the world.
    Unix,
}

impl Listen {
    /// The scheme `--listen` takes for it (`stdio`, `ws`, `unix`).
    pub fn scheme(self) -> &'static str {
        match self {
            Listen::Stdio => "stdio",
            Listen::WebSocket => "ws",
            Listen::Unix => "unix",
        }
    }
}

/// The transport a world's provider offers codex (`transports.md` §1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// `POST {base}/responses` with SSE only: the key `supports_websockets` is not written.
    #[default]
    Http,
    /// `supports_websockets = true`: codex upgrades `GET {base}/responses` per thread.
    WebSocket,
}

impl Default for WorldOptions {
    fn default() -> Self {
        WorldOptions {
            request_max_retries: 0,
            stream_max_retries: 0,
            stream_idle_timeout_ms: 10_000,
            transport: Transport::Http,
            websocket_connect_timeout_ms: None,
            approval_policy: "never".into(),
            sandbox_mode: "danger-full-access".into(),
            provider_name: "Mock".into(),
            auto_compact_token_limit: None,
            extra_args: Vec::new(),
            extra_config: Vec::new(),
            experimental_api: true,
            allow_autonomous_turns: false,
            allow_unpaired_turn_started: false,
            provider_url: None,
            openai_auth: false,
            listen: Listen::Stdio,
        }
    }
}

/// Settings shared by every scenario of a run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How to start a sidecar.
    pub sidecar: SidecarLauncher,
    /// Keep the temporary directories (and say where they are).
    pub keep: bool,
    /// `--bless`: golden-request checks are skipped, the run rewrites the golden files
    /// (see [`crate::drift::golden`]).
    pub bless: bool,
    /// What the performance scenarios are told: the reference, repetitions, scale.
    pub perf: PerfSettings,
    /// How long one JSON-RPC call to a world's app-server may take before it fails
    /// (`run --call-timeout-secs`; [`DEFAULT_CALL_TIMEOUT`] unless told).
    pub call_timeout: Duration,
}

impl Settings {
    /// Sidecars started by `sidecar`, directories kept when `keep`, golden checks on (no
    /// `--bless`).
    pub fn new(sidecar: SidecarLauncher, keep: bool) -> Settings {
        Settings {
            sidecar,
            keep,
            bless: false,
            perf: PerfSettings::default(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }
}

/// A scenario's world. Dropping it kills its processes and removes its directory
/// (unless `keep`).
pub struct World {
    root: PathBuf,
    /// `CODEX_HOME`.
    pub home: PathBuf,
    /// The workspace codex runs in (its cwd).
    pub workspace: PathBuf,
    /// The sidecar serving this world.
    pub sidecar: Sidecar,
    /// The recording proxy codex is pointed at.
    pub proxy: EgressTrap,
    /// The codex binary.
    pub binary: CodexBinary,
    /// The options it was made with.
    pub options: WorldOptions,
    servers: Vec<Arc<AppServer>>,
    listeners: usize,
    /// The settings' call timeout, given to each of its app-servers.
    call_timeout: Duration,
    tally: Arc<Tally>,
    cleanup: Cleanup,
    /// The binary's home template, copied into a home before codex first starts in it.
    template: Option<HomeTemplate>,
}

/// The world's directory and the codex processes that write into it: on drop the
/// processes are killed first (connections, then the listeners behind them), then the
/// directory is removed, so nothing recreates files in it afterwards. Other holders of an
/// [`AppServer`] or a [`Listener`] do not delay the kill. Before that, what each app-server
/// sent goes to the tally as its transcript.
struct Cleanup {
    servers: Vec<Arc<AppServer>>,
    listeners: Vec<Arc<Listener>>,
    proxies: Vec<Proxy>,
    /// The event streams of the world's `codex exec` runs, after the app-servers'.
    execs: Vec<Vec<Sent>>,
    dir: Option<tempfile::TempDir>,
    tally: Arc<Tally>,
    number: usize,
    root: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for server in &self.servers {
            server.kill();
        }
        self.proxies.clear();
        for listener in &self.listeners {
            listener.kill();
        }
        for (i, server) in self.servers.iter().enumerate() {
            self.tally.transcript(Connection {
                world: self.number,
                connection: i + 1,
                root: self.root.clone(),
                messages: server.transcript(),
                requested: server.requested(),
            });
        }
        for (i, events) in self.execs.drain(..).enumerate() {
            self.tally.transcript(Connection {
                world: self.number,
                connection: self.servers.len() + i + 1,
                root: self.root.clone(),
                messages: events,
                requested: Vec::new(),
            });
        }
        drop(self.dir.take());
    }
}

/// Files above a world that codex reads as project configuration or instructions from any
/// directory below them (`.codex/`, `AGENTS.md`).
const PROJECT_FILES: [&str; 3] = [".codex", "AGENTS.md", "AGENTS.override.md"];

/// Fails when a directory above the world's `root` holds one of [`PROJECT_FILES`]: codex,
/// started in the world's workspace, would read it, and the world would not be hermetic.
/// An empty `.codex` directory is not configuration: codex's Linux sandbox makes one, for as
/// long as a sandboxed command runs, in every writable root it protects (`/tmp` among them:
/// bwrap mounts a read-only tmpfs on `/tmp/.codex` and removes the mount point after), so
/// concurrent worlds see it come and go.
///
/// An empty `.git` above the world is removed first: no repository has an empty `.git`,
/// and codex (0.131.0 at least) takes one for a repository, so the world's workspace would
/// be inside it. One appeared in `/tmp` during a run here (2026-12-02, origin not traced:
/// most likely a mount point of codex's sandbox, as for `.codex` above, left by a sandboxed
/// command killed mid-run).
fn outside_config(root: &std::path::Path) -> anyhow::Result<()> {
    for dir in root.ancestors().skip(1) {
        let git = dir.join(".git");
        if git.is_dir() && is_empty_dir(&git) {
            let _ = std::fs::remove_dir(&git);
        }
        for name in PROJECT_FILES {
            let found = dir.join(name);
            if found.exists() && !is_empty_dir(&found) {
                bail!(
                    "{} exists above the scenario's directory {}: codex would read it as \
                     project configuration and the run would not be hermetic; remove it, or \
                     set TMPDIR to a directory without it above",
                    found.display(),
                    root.display()
                );
            }
        }
    }
    Ok(())
}

/// Whether `path` is a directory with nothing in it (or gone by the time it is read).
fn is_empty_dir(path: &std::path::Path) -> bool {
    match std::fs::read_dir(path) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

impl World {
    /// The model requests its sidecar captured so far, waiting up to `timeout` for at
    /// least `n`.
    pub async fn captured(
        &self,
        n: usize,
        timeout: Duration,
    ) -> anyhow::Result<Vec<CapturedRequest>> {
        self.sidecar
            .requests(n, timeout)
            .await
            .context("reading captured requests")
    }

    /// Waits up to `timeout` until the sidecar has captured at least `n` model requests
    /// (codex is then waiting for the answer to the last one); an error when fewer came.
    pub async fn requests_arrived(
        &self,
        n: usize,
        timeout: Duration,
    ) -> anyhow::Result<Vec<CapturedRequest>> {
        let requests = self.captured(n, timeout).await?;
        anyhow::ensure!(
            requests.len() >= n,
            "expected {n} model request(s) to have arrived, the sidecar has {}",
            requests.len()
        );
        Ok(requests)
    }

    /// Exactly `n` model requests were captured (waits briefly for them to arrive).
    /// Warm-up frames the sidecar answered by itself on a WebSocket are not model requests
    /// of a turn: they are left out.
    pub async fn expect_requests(&self, n: usize) -> anyhow::Result<Vec<CapturedRequest>> {
        let wait = Duration::from_millis(2000);
        let mut requests = self.captured(n, wait).await?;
        let warmups = requests.iter().filter(|r| r.auto_warmup).count();
        if warmups > 0 {
            requests = self.captured(n + warmups, wait).await?;
            requests.retain(|r| !r.auto_warmup);
        }
        if requests.len() != n {
            bail!(
                "expected exactly {n} model request(s), the sidecar captured {}",
                requests.len()
            );
        }
        Ok(requests)
    }

    /// Makes the directories, starts the sidecar and the proxy, writes `config.toml`.
    pub async fn new(
        binary: &CodexBinary,
        settings: &Settings,
        options: WorldOptions,
        tally: Arc<Tally>,
    ) -> anyhow::Result<World> {
        // A kept world goes to the system's temporary directory, not the run's (removed at
        // the run's end, see `run_dir`).
        let parent = if settings.keep {
            std::env::temp_dir()
        } else {
            tempfile::env::temp_dir()
        };
        // The user's alone, kept or not (it holds codex's home and what the scenario ran).
        let dir = tempfile::Builder::new()
            .prefix("codex-parity-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&parent)
            .context("creating the scenario's temporary directory")?;
        let root = dir
            .path()
            .canonicalize()
            .context("resolving the temporary directory")?;
        // With `keep` the directory outlives the world (and this process).
        let dir = if settings.keep {
            let _ = dir.keep();
            None
        } else {
            Some(dir)
        };
        outside_config(&root)?;
        let (home, workspace) = codex_env::make_dirs(&root)?;
        let template = home_template::ready(binary);
        let sidecar = Sidecar::start(&settings.sidecar).await?;
        tally.watch_sidecar(sidecar.health());
        let proxy = EgressTrap::start().await?;
        let world = World {
            root: root.clone(),
            home,
            workspace,
            sidecar,
            proxy,
            binary: binary.clone(),
            options,
            servers: Vec::new(),
            listeners: 0,
            cleanup: Cleanup {
                servers: Vec::new(),
                listeners: Vec::new(),
                proxies: Vec::new(),
                execs: Vec::new(),
                dir,
                number: tally.next_world(),
                tally: tally.clone(),
                root: root.clone(),
            },
            tally,
            template,
            call_timeout: settings.call_timeout,
        };
        world.write_config(&world.home)?;
        if settings.keep {
            eprintln!("codex-parity: keeping {}", world.root.display());
        }
        Ok(world)
    }

    /// The world's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes the mock provider's `config.toml` into `home`.
    pub fn write_config(&self, home: &Path) -> anyhow::Result<()> {
        let o = &self.options;
        let mut text = format!(
            "model = \"{MOCK_MODEL}\"\nmodel_provider = \"mock\"\napproval_policy = \"{}\"\nsandbox_mode = \"{}\"\n",
            o.approval_policy, o.sandbox_mode
        );
        if let Some(limit) = o.auto_compact_token_limit {
            text.push_str(&format!("model_auto_compact_token_limit = {limit}\n"));
        }
        if o.openai_auth {
            text.push_str(&format!(
                "chatgpt_base_url = \"{}/backend-api/\"\n",
                home_template::NOWHERE
            ));
        }
        // The sandbox's writable roots are the world's own (its workspace and its TMPDIR),
        // never the shared `/tmp`: codex's Linux sandbox makes mount points (`.git`,
        // `.codex`) in each writable root while a command runs, and in `/tmp`, above every
        // world, a concurrent world's codex took them for a project's root and untrusted
        // configuration. Left to the scenario when its own config names the table.
        if !o
            .extra_config
            .iter()
            .any(|l| l.contains("sandbox_workspace_write"))
        {
            text.push_str("sandbox_workspace_write.exclude_slash_tmp = true\n");
        }
        for line in &o.extra_config {
            text.push_str(line);
            text.push('\n');
        }
        let auth = if o.openai_auth {
            "requires_openai_auth = true"
        } else {
            "env_key = \"MOCK_API_KEY\""
        };
        text.push_str(&format!(
            "\n[model_providers.mock]\nname = \"{}\"\nbase_url = \"{}\"\nwire_api = \"responses\"\n{auth}\nrequest_max_retries = {}\nstream_max_retries = {}\nstream_idle_timeout_ms = {}\n",
            o.provider_name,
            o.provider_url.as_deref().unwrap_or(self.sidecar.base_url()),
            o.request_max_retries,
            o.stream_max_retries,
            o.stream_idle_timeout_ms
        ));
        if o.transport == Transport::WebSocket {
            text.push_str("supports_websockets = true\n");
        }
        if let Some(ms) = o.websocket_connect_timeout_ms {
            text.push_str(&format!("websocket_connect_timeout_ms = {ms}\n"));
        }
        std::fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
        let path = home.join("config.toml");
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    }

    /// The command that starts `codex app-server` in this world, in the environment of
    /// [`codex_env()`] (cleaned, `HOME` and `TMPDIR` inside the world, the proxy set).
    pub fn command(&self, home: &Path, cwd: &Path) -> AppServerCommand {
        let env = codex_env(&self.root, home, self.proxy.url());
        let mut args = vec!["--disable".to_string(), "plugins".to_string()];
        args.extend(self.options.extra_args.iter().cloned());
        AppServerCommand {
            program: self.binary.path.clone(),
            args,
            env,
            cwd: cwd.to_path_buf(),
            label: self.binary.label(),
        }
    }

    /// Seeds `home` from the binary's template when codex has not started in it yet and it
    /// holds only `config.toml` (see [`crate::harness::home_template`]).
    fn seed(&self, home: &Path) -> anyhow::Result<()> {
        match &self.template {
            Some(template) if home_template::unstarted(home) => template.seed(home),
            _ => Ok(()),
        }
    }

    /// Starts an app-server in the world's home and workspace, without `initialize`.
    pub async fn spawn(&mut self) -> anyhow::Result<Arc<AppServer>> {
        let (home, cwd) = (self.home.clone(), self.workspace.clone());
        self.spawn_in(&home, &cwd).await
    }

    /// Starts an app-server with another home or cwd (e.g. a resume in a cloned home). A
    /// home codex has not started in and that holds only `config.toml` is first seeded from
    /// the binary's template (see [`crate::harness::home_template`]). With a [`Listen`] other
    /// than stdio it is a listener of its own and the client its one connection.
    pub async fn spawn_in(&mut self, home: &Path, cwd: &Path) -> anyhow::Result<Arc<AppServer>> {
        match self.options.listen {
            Listen::Stdio => {
                self.seed(home)?;
                let server = AppServer::spawn(&self.command(home, cwd))?;
                Ok(self.keep(server))
            }
            listen => {
                self.listeners += 1;
                let at = match listen {
                    Listen::Unix => ListenAt::Unix(
                        self.root
                            .join(format!("app-server-{}.sock", self.listeners)),
                    ),
                    _ => ListenAt::WebSocket,
                };
                let listener = self.listen_in(home, cwd, &at, &[]).await?;
                self.connect(&listener, &[])
                    .await
                    .map_err(anyhow::Error::from)
            }
        }
    }

    /// [`World::listen_in`] the world's own home and workspace.
    pub async fn listen(
        &mut self,
        at: &ListenAt,
        extra: &[String],
    ) -> anyhow::Result<Arc<Listener>> {
        let (home, cwd) = (self.home.clone(), self.workspace.clone());
        self.listen_in(&home, &cwd, at, extra).await
    }

    /// Starts `codex app-server --listen` at `at` in `home` and `cwd`, with `extra`
    /// arguments after the world's (e.g. `--ws-auth …`); waits until it listens. Killed with
    /// the world.
    pub async fn listen_in(
        &mut self,
        home: &Path,
        cwd: &Path,
        at: &ListenAt,
        extra: &[String],
    ) -> anyhow::Result<Arc<Listener>> {
        self.seed(home)?;
        let mut cmd = self.command(home, cwd);
        cmd.args.extend(extra.iter().cloned());
        let listener = Arc::new(Listener::spawn(&cmd, at).await?);
        self.cleanup.listeners.push(listener.clone());
        Ok(listener)
    }

    /// A client of the control socket in `home` through `codex app-server proxy` (see
    /// [`crate::app_server::proxy`]), not initialized; one of the world's app-servers, the
    /// proxy killed with the world.
    pub async fn connect_proxy(&mut self, home: &Path) -> anyhow::Result<Arc<AppServer>> {
        let cwd = self.workspace.clone();
        let (proxy, server) = Proxy::connect(&self.command(home, &cwd)).await?;
        self.cleanup.proxies.push(proxy);
        Ok(self.keep(server))
    }

    /// A new connection to `listener` whose handshake carries `headers`, not initialized; it
    /// is one of the world's app-servers (its transcript kept, its turns checked at the end).
    pub async fn connect(
        &mut self,
        listener: &Listener,
        headers: &[(&str, &str)],
    ) -> Result<Arc<AppServer>, ConnectError> {
        let server = listener.connect_with(headers).await?;
        Ok(self.keep(server))
    }

    /// Makes `server` one of the world's app-servers, its calls bounded by the settings'
    /// call timeout.
    fn keep(&mut self, mut server: AppServer) -> Arc<AppServer> {
        server.call_timeout = self.call_timeout;
        let server = Arc::new(server);
        self.servers.push(server.clone());
        self.cleanup.servers.push(server.clone());
        server
    }

    /// Runs `codex exec --json ARGS` in the world's home and workspace (the environment of
    /// [`codex_env()`], `--disable plugins`), bounded by `timeout`; its events become one of
    /// the scenario's transcripts. ARGS holds the flags and the prompt.
    pub async fn exec(&mut self, args: &[&str], timeout: Duration) -> anyhow::Result<ExecRun> {
        let (home, cwd) = (self.home.clone(), self.workspace.clone());
        self.exec_in(&home, &cwd, args, None, timeout).await
    }

    /// [`World::exec`] in another home or directory, with `stdin` piped to codex.
    pub async fn exec_in(
        &mut self,
        home: &Path,
        cwd: &Path,
        args: &[&str],
        stdin: Option<String>,
        timeout: Duration,
    ) -> anyhow::Result<ExecRun> {
        self.seed(home)?;
        let mut all: Vec<String> = [
            "--json",
            "--disable",
            "plugins",
            "-c",
            "analytics.enabled=false",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        all.extend(args.iter().map(|a| a.to_string()));
        let cmd = ExecCommand {
            program: self.binary.path.clone(),
            args: all,
            env: codex_env(&self.root, home, self.proxy.url()),
            cwd: cwd.to_path_buf(),
            label: self.binary.label(),
            stdin,
            timeout,
        };
        let run = exec::run(&cmd).await?;
        self.cleanup.execs.push(run.transcript());
        Ok(run)
    }

    /// Starts an app-server and runs the `initialize` handshake.
    pub async fn start(&mut self) -> anyhow::Result<Arc<AppServer>> {
        let server = self.spawn().await?;
        server
            .initialize(self.options.experimental_api)
            .await
            .with_context(|| {
                // Reports show a reason's first line: name the binary and what it said last.
                let tail = server.stderr_tail();
                let last = tail.lines().rev().find(|l| !l.trim().is_empty());
                format!(
                    "starting {} app-server ({}){}: initialize",
                    self.binary.path.display(),
                    self.binary.label(),
                    last.map(|l| format!(" [last stderr line: {l}]"))
                        .unwrap_or_default()
                )
            })?;
        if self.template.is_none() {
            // This codex works: the next worlds (and homes of this one) can be seeded.
            self.template = home_template::ensure(&self.binary).await;
        }
        Ok(server)
    }

    /// `thread/start` in the workspace with extra params; returns the thread id and result.
    pub async fn start_thread(
        &self,
        server: &AppServer,
        mut params: serde_json::Value,
    ) -> anyhow::Result<(String, serde_json::Value)> {
        if let Some(obj) = params.as_object_mut() {
            obj.entry("cwd")
                .or_insert_with(|| self.workspace.display().to_string().into());
        }
        let result = server.thread_start(params).await?;
        let id = result
            .pointer("/thread/id")
            .and_then(serde_json::Value::as_str)
            .with_context(|| format!("thread/start result without thread.id: {result}"))?
            .to_string();
        Ok((id, result))
    }

    /// Queues scripted responses on the sidecar.
    pub async fn script(&self, responses: Vec<Scripted>) -> anyhow::Result<()> {
        self.sidecar.enqueue(&responses).await.map(|_| ())
    }

    /// Queues WebSocket connection scripts on the sidecar (upgrades take them in order).
    pub async fn websocket(&self, connections: Vec<ConnectionScript>) -> anyhow::Result<()> {
        self.sidecar.websocket(None, connections).await.map(|_| ())
    }

    /// Opens the sidecar's gate `gate`; returns how many responses it let go.
    pub async fn release(&self, gate: &str) -> anyhow::Result<usize> {
        self.sidecar.release(gate).await
    }

    /// The checks every scenario ends with (`parity-scenarios.md` §0.4), then shuts the
    /// world down. Fails naming everything that was wrong. The requests codex makes are
    /// its own doing: one no script answered, or one that breaks the tool-call pairing, is
    /// reported as drift, which fails the scenario unless the version's baseline lists it.
    pub async fn finish(self) -> anyhow::Result<()> {
        self.tally.finished.fetch_add(1, Ordering::SeqCst);
        let mut problems = Vec::new();
        let requests = self.sidecar.all_requests().await?;
        for r in &requests {
            if r.outcome == codex_parity_sidecar::captured::Outcome::Unscripted {
                // Which request: method, path and its place among the world's requests
                // (scenarios run their turns one after another, so the place is stable).
                self.tally.drift(Drift::new(
                    "requests.unscripted",
                    json!({"request": format!("{} {}", r.method, r.path), "index": r.index}),
                    format!("unscripted request #{}: {} {}", r.index, r.method, r.path),
                ));
            }
            for v in &r.pairing_violations {
                self.tally.drift(Drift::new(
                    "requests.tool_call_pairing",
                    json!(pairing_kind(v)),
                    format!("request #{} breaks tool-call pairing: {v}", r.index),
                ));
            }
        }
        for attempt in self.proxy.attempts() {
            problems.push(format!("network escape through the proxy: {attempt}"));
        }
        // A turn one client started is no surprise to another client of the same thread.
        let requested: BTreeSet<String> = self
            .servers
            .iter()
            .flat_map(|s| s.started_turns())
            .collect();
        for server in &self.servers {
            let o = &self.options;
            let (autonomous, unpaired) = (o.allow_autonomous_turns, o.allow_unpaired_turn_started);
            problems.extend(turn_problems(server, &requested, autonomous, unpaired));
            for method in server.unhandled_requests() {
                problems.push(format!("server request {method} had no handler"));
            }
        }
        for server in &self.servers {
            server.shutdown(Duration::from_secs(3)).await;
        }
        self.tally.captured(requests);
        let report = self.sidecar.shutdown().await?;
        if report.pending > 0 {
            problems.push(format!(
                "{} scripted response(s) never served",
                report.pending
            ));
        }
        // The sidecar's exit status is 3 when something was left over or unscripted.
        let clean = report.pending == 0 && report.unscripted == 0;
        let expected_exit = if clean { 0 } else { 3 };
        if report.exit_code != Some(expected_exit) {
            problems.push(format!(
                "the sidecar exited with {:?}, expected {expected_exit}",
                report.exit_code
            ));
        }
        drop(self.cleanup);
        if problems.is_empty() {
            Ok(())
        } else {
            bail!(
                "after-scenario checks failed:\n  - {}",
                problems.join("\n  - ")
            )
        }
    }
}

/// Every turn got exactly one `turn/completed` (none needed on a connection the client cut,
/// see [`AppServer::was_cut`]); no `turn/started` that no client of the world (`requested`)
/// asked for.
fn turn_problems(
    server: &AppServer,
    requested: &BTreeSet<String>,
    allow_autonomous: bool,
    allow_unpaired: bool,
) -> Vec<String> {
    let mut started = BTreeSet::new();
    let mut completed: BTreeMap<String, usize> = BTreeMap::new();
    for m in server.messages() {
        let Some(turn) = m.turn_id().map(str::to_string) else {
            continue;
        };
        if m.is("turn/started") {
            started.insert(turn);
        } else if m.is("turn/completed") {
            *completed.entry(turn).or_default() += 1;
        }
    }
    let mut problems = Vec::new();
    for turn in &started {
        match completed.get(turn).copied().unwrap_or(0) {
            1 => {}
            // A client that cut its connection (or killed codex) cannot see the end.
            0 if allow_unpaired || server.was_cut() => {}
            0 => problems.push(format!("turn {turn} never completed")),
            n => problems.push(format!("turn {turn} completed {n} times")),
        }
        if !allow_autonomous && !requested.contains(turn) {
            problems.push(format!("turn {turn} started without turn/start"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_files_above_a_world_are_refused_naming_them() {
        let top = tempfile::tempdir().unwrap();
        let world = top.path().join("a").join("world");
        std::fs::create_dir_all(&world).unwrap();
        let codex = top.path().join("a").join(".codex");
        std::fs::create_dir(&codex).unwrap();
        // Empty, as the sandbox's mount point of a concurrent world's command: no config.
        outside_config(&world).unwrap();
        std::fs::write(codex.join("config.toml"), "model = \"x\"").unwrap();
        let err = outside_config(&world).unwrap_err().to_string();
        assert!(err.contains("/a/.codex exists above"), "{err}");
        assert!(err.contains("set TMPDIR"), "{err}");
        std::fs::remove_dir_all(&codex).unwrap();
        std::fs::write(top.path().join("AGENTS.md"), "be nice").unwrap();
        let err = outside_config(&world).unwrap_err().to_string();
        assert!(err.contains("AGENTS.md exists above"), "{err}");
    }

    #[test]
    fn an_empty_git_above_a_world_is_removed_and_a_real_one_kept() {
        let top = tempfile::tempdir().unwrap();
        let world = top.path().join("a").join("world");
        std::fs::create_dir_all(&world).unwrap();
        let stale = top.path().join(".git");
        std::fs::create_dir(&stale).unwrap();
        outside_config(&world).unwrap();
        assert!(!stale.exists(), "the sandbox's leftover mount point stays");
        let real = top.path().join("a").join(".git");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        outside_config(&world).unwrap();
        assert!(real.join("HEAD").exists());
    }
}
