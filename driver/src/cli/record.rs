//! `codex-parity record`: one session of the integrator's own program, recorded from both
//! sides into a scenario file (docs/record.md); and `record-relay`, the hidden command
//! the shim runs in the client's process tree.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use codex_parity::record::recorder::{self, DEFAULT_UPSTREAM, RecordOptions};
use codex_parity::record::relay;

use super::one_codex::OneCodex;

/// The arguments of `record`.
#[derive(Debug, clap::Args)]
pub(crate) struct RecordArgs {
    /// The codex the client's `codex` runs.
    #[command(flatten)]
    codex: OneCodex,
    /// Where codex's model requests are forwarded: the base URL of a Responses API
    /// (default: $OPENAI_BASE_URL, as codex's own OpenAI provider reads it, else
    /// https://api.openai.com/v1).
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Record offline: the model side is the built-in mock, serving these responses in
    /// order (a scenario file's [[response]]s, or a sidecar script {"responses": [...]});
    /// no upstream, no network, no key.
    #[arg(long, value_name = "FILE", conflicts_with = "upstream")]
    responses: Option<PathBuf>,
    /// The scenario file to write.
    #[arg(long, value_name = "FILE.toml")]
    out: PathBuf,
    /// The scenario's name (default: the file's name).
    #[arg(long)]
    name: Option<String>,
    /// The scenario's id (default: REC-NAME).
    #[arg(long)]
    id: Option<String>,
    /// Replace every match of this regular expression by <redacted> in everything written
    /// or printed (repeatable). The values of your environment's secret variables and
    /// secret-shaped text (keys, bearer tokens, JWTs) are always replaced.
    #[arg(long, value_name = "REGEX")]
    redact: Vec<String>,
    /// The variable holding the API key codex sends to the upstream (passed through, never
    /// written).
    #[arg(long, value_name = "NAME", default_value = "OPENAI_API_KEY")]
    api_key_env: String,
    /// The model codex uses (default: codex's own default model).
    #[arg(long)]
    model: Option<String>,
    /// Offer codex the Responses WebSocket (as `supports_websockets = true` does).
    #[arg(long)]
    websocket: bool,
    /// Keep each response event's recorded gap in the file (`gap_ms`).
    #[arg(long)]
    timing: bool,
    /// `approval_policy` codex runs with (as the file's replay will).
    #[arg(long, value_name = "POLICY", default_value = "never")]
    approval_policy: String,
    /// `sandbox_mode` codex runs with (as the file's replay will).
    #[arg(long, value_name = "MODE", default_value = "danger-full-access")]
    sandbox: String,
    /// Your client connects to an app-server listener instead of running codex: record
    /// starts `codex app-server --listen` itself and accepts your client at this address
    /// (`ws://127.0.0.1:PORT`; port 0 picks one), also given to it in $CODEX_PARITY_LISTEN.
    #[arg(long, value_name = "ws://HOST:PORT")]
    listen: Option<String>,
    /// Keep the recording's directory (the relayed lines, the model exchanges, codex's home;
    /// redacted, private to you) and print where; kept on failure too.
    #[arg(long)]
    keep: bool,
    /// The client to record and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Records the session; exit 0 when the client succeeded, 1 when it failed (the file is
/// still written, marked), 2 when nothing was written.
pub(crate) async fn record(args: RecordArgs) -> anyhow::Result<ExitCode> {
    if args.command.is_empty() {
        bail!(
            "no command to record: give your client after `--`, e.g. \
             `codex-parity record --out my.toml -- python3 my_client.py`"
        );
    }
    let binary = args.codex.binary().resolve().await?;
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("finding codex-parity's own path: {e}"))?;
    let options = RecordOptions {
        binary: binary.clone(),
        upstream: args
            .upstream
            .clone()
            .or_else(|| {
                std::env::var("OPENAI_BASE_URL")
                    .ok()
                    .filter(|u| !u.is_empty())
            })
            .unwrap_or_else(|| DEFAULT_UPSTREAM.to_string()),
        out: args.out.clone(),
        name: args.name,
        id: args.id,
        command: args.command.clone(),
        redact: args.redact,
        api_key_env: args.api_key_env,
        model: args.model,
        websocket: args.websocket,
        timing: args.timing,
        approval_policy: args.approval_policy,
        sandbox_mode: args.sandbox,
        keep: args.keep,
        exe,
        listen: args.listen,
        responses: args.responses,
    };
    // Everything this command prints passes the recording's redactor.
    let mut redactor = recorder::redactor(&options)?;
    let model_side = match &options.responses {
        Some(path) => format!("model requests served from {}", path.display()),
        None => format!("model requests to {}", options.upstream),
    };
    let command = options
        .command
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let mut say = |text: String| eprintln!("{}", redactor.text(&text));
    say(format!(
        "codex-parity: recording `{command}` with codex {} ({model_side})",
        binary.version
    ));
    let r = recorder::record(&options, &mut redactor).await?;
    let mut say = |text: String| eprintln!("{}", redactor.text(&text));
    for problem in &r.problems {
        say(format!("codex-parity: record: {problem}"));
    }
    let w = &r.written;
    let lines = w.text.lines().count();
    say(format!(
        "codex-parity: recorded {} app-server session(s) and {} codex exec run(s): {} turn(s), \
         {} scripted response(s) ({} request(s) forwarded), {} server request(s) answered",
        r.sessions, r.execs, w.turns, w.responses, r.forwarded, w.answered
    ));
    say(format!(
        "codex-parity: wrote {} ({lines} lines, {} bytes)",
        options.out.display(),
        w.text.len()
    ));
    for note in &w.notes {
        say(format!("  note: {note}"));
    }
    if let Some(dir) = &r.kept {
        say(format!(
            "codex-parity: kept the recording's directory (redacted, private): {}",
            dir.display()
        ));
    }
    let dir = options
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or(".".into(), |p| p.display().to_string());
    say(format!(
        "replay it: codex-parity run --scenarios {dir} --only-files --filter {} --codex-version {}",
        r.name, binary.version
    ));
    Ok(match r.client_exit {
        Some(0) => ExitCode::SUCCESS,
        code => {
            say(format!(
                "codex-parity: the client exited {}: the file is marked as possibly incomplete",
                code.map_or("by a signal".into(), |c| format!("with status {c}"))
            ));
            ExitCode::from(1)
        }
    })
}

/// The hidden `record-relay SESSION ARGS…` the shim runs.
pub(crate) async fn relay(session: PathBuf, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let code = relay::relay(&session, args).await?;
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}
