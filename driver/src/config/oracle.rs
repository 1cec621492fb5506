//! One live run of a real codex for a check: the profile's home files in a private
//! `CODEX_HOME`, a cleaned environment whose proxies lead to a listener that records any
//! connection, a scratch working directory, an offline model provider (`http://127.0.0.1:9`,
//! closed: nothing is ever asked of it) and `--disable plugins`, then the profile's command
//! line:
//!
//! - `app-server`: `initialize`, `initialized`, `thread/start` with the profile's params (when
//!   it fails, `thread/start` with none and with each param alone, to tell which one),
//!   `config/read` with its layers, `configRequirements/read`, `experimentalFeature/list`,
//!   then its input closed; every warning codex sent until it exits is kept (`configWarning`,
//!   `deprecationNotice`, `warning`), those that come after the last answer too.
//! - [`Mode::Start`]: `initialize` only (the `--strict-config` runs).
//! - `exec`: started when it prints its header (`session id:`) or a `thread.started` event;
//!   then read on until its turn reaches the offline provider (the first `ERROR:` line, or
//!   `turn.started` with `--json`), since a session's own warnings come after its header
//!   (with `--json` as `error` items and events), and stopped; refused when it exits before starting.
//!
//! Exiting before that is a refusal at start, with codex's own error (the `Error:`/`error:`
//! line and those after it up to a blank one). The private home's path in what codex says is
//! written `<CODEX_HOME>`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::app_server::{AppServer, CallError};
use crate::codex::binaries::CodexBinary;
use crate::config::isolation::Isolation;
use crate::harness::codex_env;
use crate::harness::egress_trap::EgressTrap;

/// How long codex may take to answer one request (thread/start took over 15 s once under
/// load).
const ANSWER: Duration = Duration::from_secs(45);

/// How long `codex exec` may take from its session's start to its turn's first request
/// (0.171.0: 1 ms); codex ends or is stopped then.
const AFTER_START: Duration = Duration::from_secs(5);

/// The offline provider's id (`-c model_provider=…`).
pub const PROVIDER: &str = "codex-parity-offline";

/// The arguments that give codex the offline provider.
pub fn provider_args() -> Vec<String> {
    vec![
        "-c".into(),
        format!("model_provider=\"{PROVIDER}\""),
        "-c".into(),
        format!(
            "model_providers.{PROVIDER}={{name=\"codex-parity offline\", \
             base_url=\"http://127.0.0.1:9/v1\", wire_api=\"responses\", \
             request_max_retries=0, stream_max_retries=0}}"
        ),
    ]
}

/// What a run does after starting codex.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The app-server handshake with `thread/start`, `config/read` and the requirements.
    Handshake,
    /// The app-server's `initialize` only.
    Start,
    /// `codex exec`: until it starts its session.
    Exec,
}

/// One run's inputs.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    /// The codex.
    pub binary: &'a CodexBinary,
    /// Its arguments, as they will be given.
    pub argv: Vec<String>,
    /// The home's files: name and text.
    pub files: Vec<(String, String)>,
    /// The `thread/start` params, in parts: a label and a JSON object each (merged for the
    /// call; tried alone when the call fails).
    pub thread: Vec<(String, Value)>,
    /// What to do.
    pub mode: Mode,
    /// How codex is started.
    pub isolation: &'a Isolation,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Codex answered (`initialize`, or exec's header).
    Started,
    /// Codex exited first; its error.
    Refused(String),
    /// Neither within the time allowed.
    NoAnswer(String),
}

/// What one run saw.
#[derive(Debug, Clone)]
pub struct Observed {
    /// How it ended.
    pub outcome: Outcome,
    /// `(method, text)` of each notification that warns (`configWarning`,
    /// `deprecationNotice`, `warning`), in order.
    pub warnings: Vec<(String, String)>,
    /// codex's stderr lines (ANSI codes removed).
    pub stderr: Vec<String>,
    /// The `thread/start` with every param: its result or codex's error message.
    pub thread: Option<Result<Value, String>>,
    /// When that failed: `thread/start` with no params.
    pub bare_thread: Option<Result<Value, String>>,
    /// When that did not fail: each part alone (label, outcome).
    pub alone: Vec<(String, Result<Value, String>)>,
    /// `config/read` with `includeLayers`.
    pub config: Option<Value>,
    /// `configRequirements/read`.
    pub requirements: Option<Value>,
    /// `experimentalFeature/list`, every page: each feature's `name`, `stage`, `enabled`.
    pub features: Option<Vec<Value>>,
    /// Connections codex tried through the proxies (hermeticity).
    pub connections: Vec<String>,
    /// The private home's path in codex's words (replaced by `<CODEX_HOME>`).
    pub home: String,
    /// How long the run took.
    pub took: Duration,
}

/// Runs codex once (see the module documentation).
pub async fn run(r: &Run<'_>) -> anyhow::Result<Observed> {
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("codex-parity-config-")
        .tempdir()
        .context("creating a directory for the check")?;
    let root = dir
        .path()
        .canonicalize()
        .context("resolving the check's directory")?;
    let (home, workspace) = codex_env::make_dirs(&root)?;
    for (name, text) in &r.files {
        let path = home.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let proxy = EgressTrap::start().await?;
    let mut cmd = r.isolation.command(&r.binary.path, &r.argv);
    cmd.env_clear()
        .envs(codex_env::codex_env(&root, &home, proxy.url()))
        .current_dir(&workspace);
    let home_text = home.display().to_string();
    let mut seen = match r.mode {
        Mode::Exec => exec(cmd, &r.binary.label()).await?,
        Mode::Start | Mode::Handshake => app_server(cmd, r).await?,
    };
    seen.connections = proxy.attempts();
    seen.took = started.elapsed();
    seen.home = home_text.clone();
    let tidy = |s: &str| {
        s.replace(&home_text, "<CODEX_HOME>")
            .replace(&workspace.display().to_string(), "<WORKSPACE>")
    };
    seen.stderr = seen.stderr.iter().map(|l| tidy(l)).collect();
    for (_, text) in &mut seen.warnings {
        *text = tidy(text);
    }
    seen.outcome = match seen.outcome {
        Outcome::Refused(m) => Outcome::Refused(tidy(&m)),
        other => other,
    };
    let tidy_result = |r: &mut Result<Value, String>| {
        if let Err(m) = r {
            *m = tidy(m);
        }
    };
    if let Some(t) = &mut seen.thread {
        tidy_result(t);
    }
    if let Some(t) = &mut seen.bare_thread {
        tidy_result(t);
    }
    for (_, t) in &mut seen.alone {
        tidy_result(t);
    }
    Ok(seen)
}

fn empty(outcome: Outcome) -> Observed {
    Observed {
        outcome,
        warnings: Vec::new(),
        stderr: Vec::new(),
        thread: None,
        bare_thread: None,
        alone: Vec::new(),
        config: None,
        requirements: None,
        features: None,
        connections: Vec::new(),
        home: String::new(),
        took: Duration::ZERO,
    }
}

/// The app-server modes.
async fn app_server(cmd: tokio::process::Command, r: &Run<'_>) -> anyhow::Result<Observed> {
    let label = r.binary.label();
    let server = AppServer::spawn_process(cmd, &label)?;
    let init = server
        .call_with_timeout(
            "initialize",
            json!({
                "clientInfo": {"name": "codex-parity", "title": "codex-parity config check",
                               "version": env!("CARGO_PKG_VERSION")},
                "capabilities": {"experimentalApi": true},
            }),
            ANSWER,
        )
        .await;
    let mut seen = empty(Outcome::Started);
    match init {
        Ok(_) => {}
        Err(CallError::Exited { .. }) | Err(CallError::Rpc { .. }) => {
            // The reader has the whole stderr once the process is gone.
            let _ = server.shutdown_exit(Duration::from_secs(5)).await;
            seen.stderr = lines(&server.stderr_tail());
            seen.outcome = Outcome::Refused(error_of(&seen.stderr));
            return Ok(seen);
        }
        Err(e @ CallError::Timeout { .. }) => {
            seen.outcome = Outcome::NoAnswer(format!("{e}"));
            server.kill();
            return Ok(seen);
        }
    }
    let _ = server.notify("initialized", Value::Null);
    if r.mode == Mode::Handshake {
        let params = merged(r.thread.iter().map(|(_, v)| v));
        let first = answer(&server, "thread/start", params).await;
        let failed = first.is_err();
        seen.thread = Some(first);
        if failed {
            let bare = answer(&server, "thread/start", json!({})).await;
            let bare_ok = bare.is_ok();
            seen.bare_thread = Some(bare);
            if bare_ok {
                for (label, part) in &r.thread {
                    let alone = answer(&server, "thread/start", merged([part])).await;
                    seen.alone.push((label.clone(), alone));
                }
            }
        }
        seen.config = answer(&server, "config/read", json!({"includeLayers": true}))
            .await
            .ok();
        seen.requirements = answer(&server, "configRequirements/read", json!({}))
            .await
            .ok();
        seen.features = feature_list(&server).await;
    }
    // Codex sends a thread's warnings on a task of its own (`on-failure` is deprecated: after
    // `thread/started`), which may come after a later answer: they are read once codex has
    // exited and everything it wrote has been read, never from the middle of the session.
    let _ = server.shutdown_exit(Duration::from_secs(5)).await;
    seen.warnings = server
        .messages()
        .iter()
        .filter_map(|m| warning_text(m.method(), m.params()).map(|t| (m.method().to_string(), t)))
        .collect();
    seen.stderr = lines(&server.stderr_tail());
    Ok(seen)
}

/// Every page of `experimentalFeature/list`, or `None` when it fails.
async fn feature_list(server: &AppServer) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    let mut cursor = Value::Null;
    for _ in 0..50 {
        let page = answer(
            server,
            "experimentalFeature/list",
            json!({"cursor": cursor, "limit": 200}),
        )
        .await
        .ok()?;
        out.extend(page["data"].as_array().cloned().unwrap_or_default());
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            return Some(out);
        }
    }
    None
}

/// Calls `method`; its result, or codex's error message.
async fn answer(server: &AppServer, method: &str, params: Value) -> Result<Value, String> {
    server
        .call_with_timeout(method, params, ANSWER)
        .await
        .map_err(|e| match e.rpc() {
            Some(rpc) => rpc.message.clone(),
            None => e.to_string(),
        })
}

/// JSON objects merged, later keys winning (a `config` map merged key by key).
fn merged<'v>(parts: impl IntoIterator<Item = &'v Value>) -> Value {
    let mut out = serde_json::Map::new();
    for part in parts {
        for (k, v) in part.as_object().into_iter().flatten() {
            match (out.get_mut(k), v) {
                (Some(Value::Object(have)), Value::Object(add)) => {
                    merge_into(have, add);
                }
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
    }
    Value::Object(out)
}

fn merge_into(have: &mut serde_json::Map<String, Value>, add: &serde_json::Map<String, Value>) {
    for (k, v) in add {
        match (have.get_mut(k), v) {
            (Some(Value::Object(h)), Value::Object(a)) => merge_into(h, a),
            _ => {
                have.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The text of a notification that warns, or `None` for the others.
pub fn warning_text(method: &str, params: &Value) -> Option<String> {
    let field = |k: &str| params.get(k).and_then(Value::as_str).map(str::to_string);
    match method {
        "configWarning" | "deprecationNotice" => {
            let summary = field("summary").unwrap_or_default();
            Some(match field("details") {
                Some(d) if !d.is_empty() => format!("{summary} {d}"),
                _ => summary,
            })
        }
        "warning" => field("message"),
        _ => None,
    }
}

/// `codex exec …` until its session starts.
async fn exec(mut cmd: tokio::process::Command, label: &str) -> anyhow::Result<Observed> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("{label}: cannot start codex exec"))?;
    let group = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(bool, String)>();
    for (is_err, stream) in [
        (
            false,
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ),
        (
            true,
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ),
    ] {
        let Some(stream) = stream else { continue };
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if tx.send((is_err, line)).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    let mut seen = empty(Outcome::NoAnswer(format!(
        "codex exec neither started nor exited within {} s",
        ANSWER.as_secs()
    )));
    // Until the session starts (its header), then until its turn's first request: `json`
    // says, once it started, whether it speaks `--json`.
    let mut json = None;
    let deadline = tokio::time::sleep(ANSWER);
    tokio::pin!(deadline);
    loop {
        let line = tokio::select! {
            line = rx.recv() => line,
            () = &mut deadline => break,
        };
        let Some((is_err, line)) = line else {
            if json.is_none() {
                seen.outcome = Outcome::Refused(error_of(&seen.stderr));
            }
            break;
        };
        let line = strip_ansi(&line);
        if let Some(json) = json {
            if reaches_the_provider(&mut seen, is_err, line, json) {
                break;
            }
            continue;
        }
        let began = line.starts_with("session id:") || line.contains("\"thread.started\"");
        if is_err {
            seen.stderr.push(line);
        }
        if began {
            seen.outcome = Outcome::Started;
            json = Some(!is_err);
            deadline
                .as_mut()
                .reset(tokio::time::Instant::now() + AFTER_START);
        }
    }
    if let Some(group) = group {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let _ = child.wait().await;
    Ok(seen)
}

/// One line `codex exec` says between its session's start and its turn's first model
/// request, where a session's own warnings come: a stderr line is kept, and with `--json` an
/// `error` item or event is a warning (`exec`, the message). True when the line shows the
/// turn reaching the offline provider (its first `ERROR:` line, or `turn.started`).
fn reaches_the_provider(seen: &mut Observed, is_err: bool, line: String, json: bool) -> bool {
    if is_err {
        let reached = !json && line.starts_with("ERROR:");
        seen.stderr.push(line);
        return reached;
    }
    let Ok(event) = serde_json::from_str::<Value>(&line) else {
        return false;
    };
    let message = match event["type"].as_str() {
        Some("turn.started" | "turn.failed") => return true,
        Some("item.completed") if event["item"]["type"] == "error" => {
            event["item"]["message"].as_str()
        }
        Some("error") => event["message"].as_str(),
        _ => None,
    };
    if let Some(message) = message {
        seen.warnings.push(("exec".into(), message.to_string()));
    }
    false
}

/// Lines of a text, ANSI codes removed.
fn lines(text: &str) -> Vec<String> {
    text.lines().map(strip_ansi).collect()
}

/// `line` without ANSI escape sequences.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Codex's error in its stderr: from the first `Error`/`error:` line to the next blank one,
/// joined; else the last line that is not a known harmless warning.
pub fn error_of(stderr: &[String]) -> String {
    let start = stderr
        .iter()
        .position(|l| l.starts_with("Error") || l.starts_with("error:"));
    if let Some(start) = start {
        return stderr[start..]
            .iter()
            .take_while(|l| !l.trim().is_empty())
            .map(|l| l.trim())
            .collect::<Vec<_>>()
            .join(" ");
    }
    stderr
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty() && !l.contains("Refusing to create helper binaries"))
        .cloned()
        .unwrap_or_else(|| "exited without a message".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codexs_error_is_the_error_line_and_what_follows() {
        let stderr: Vec<String> = [
            "WARNING: proceeding, even though we could not update PATH: Refusing to create helper binaries",
            "Error: invalid type: string \"big\", expected i64",
            "in `model_context_window`",
            "",
            "later",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            error_of(&stderr),
            "Error: invalid type: string \"big\", expected i64 in `model_context_window`"
        );
        assert_eq!(error_of(&["x".into(), "y".into()]), "y");
        assert_eq!(strip_ansi("\u{1b}[2mtime\u{1b}[0m WARN"), "time WARN");
    }

    /// Runs a fake codex (a shell script) as a check does, in `mode` with `argv`.
    async fn fake_codex(script: &str, argv: &[&str], mode: Mode) -> Observed {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("codex");
        std::fs::write(&path, format!("#!/bin/sh\n{script}")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let binary = CodexBinary {
            path,
            version: "0.171.0".into(),
        };
        let isolation = Isolation::none();
        run(&Run {
            binary: &binary,
            argv: argv.iter().map(|a| a.to_string()).collect(),
            files: Vec::new(),
            thread: Vec::new(),
            mode,
            isolation: &isolation,
        })
        .await
        .unwrap()
    }

    /// A fake `codex exec`.
    async fn fake_exec(script: &str) -> Observed {
        fake_codex(script, &["exec", "hi"], Mode::Exec).await
    }

    /// A codex that sends its warning after the last answer (as a thread's warnings may
    /// come, on a task of their own), here once its input is closed: the check still sees
    /// it, and a verdict is not `accepted` for want of waiting.
    #[tokio::test]
    async fn a_warning_sent_after_the_last_answer_is_kept() {
        let script = r#"while IFS= read -r line; do
  case "$line" in
    *'"id":'*)
      id=${line#*\"id\":}; id=${id%%,*}
      case "$line" in
        *'"thread/start"'*) printf '{"id":%s,"result":{"thread":{"id":"t1"}}}\n' "$id" ;;
        *'"experimentalFeature/list"'*) printf '{"id":%s,"result":{"data":[],"nextCursor":null}}\n' "$id" ;;
        *) printf '{"id":%s,"result":{}}\n' "$id" ;;
      esac ;;
  esac
done
printf '{"method":"warning","params":{"threadId":"t1","message":"`on-failure` is deprecated"}}\n'
"#;
        let seen = fake_codex(script, &["app-server"], Mode::Handshake).await;
        assert_eq!(seen.outcome, Outcome::Started);
        assert!(seen.thread.as_ref().is_some_and(Result::is_ok), "{seen:?}");
        assert_eq!(
            seen.warnings,
            [(
                "warning".to_string(),
                "`on-failure` is deprecated".to_string()
            )]
        );
    }

    /// `codex exec` prints a session's warnings after its header (0.171.0: its bubblewrap and
    /// Code Mode warnings), then hangs reconnecting to the offline provider: the check reads
    /// up to its first `ERROR:` line, and no longer.
    #[tokio::test]
    async fn exec_warnings_after_the_header_are_kept() {
        let seen = fake_exec(
            "echo 'session id: 1' >&2\nsleep 0.3\n\
             echo 'warning: `on-failure` approval policy is deprecated' >&2\n\
             echo 'ERROR: Reconnecting... waiting for network' >&2\n\
             echo 'warning: after the request' >&2\nsleep 60\n",
        )
        .await;
        assert_eq!(seen.outcome, Outcome::Started);
        assert!(
            seen.stderr
                .contains(&"warning: `on-failure` approval policy is deprecated".to_string()),
            "{:?}",
            seen.stderr
        );
        assert!(
            !seen.stderr.iter().any(|l| l.contains("after the request")),
            "{:?}",
            seen.stderr
        );
        assert!(seen.took < Duration::from_secs(30), "waited for the hang");
    }

    /// With `--json`, those warnings are `error` items (or events) before `turn.started`.
    #[tokio::test]
    async fn exec_json_error_items_before_the_turn_are_warnings() {
        let seen = fake_exec(
            "echo '{\"type\":\"thread.started\",\"thread_id\":\"t\"}'\nsleep 0.3\n\
             echo '{\"type\":\"item.completed\",\"item\":{\"id\":\"item_0\",\"type\":\"error\",\"message\":\"`on-failure` is deprecated\"}}'\n\
             echo '{\"type\":\"error\",\"message\":\"`x` is unknown\"}'\n\
             echo '{\"type\":\"turn.started\"}'\n\
             echo '{\"type\":\"item.completed\",\"item\":{\"id\":\"item_1\",\"type\":\"error\",\"message\":\"later\"}}'\nsleep 60\n",
        )
        .await;
        assert_eq!(seen.outcome, Outcome::Started);
        assert_eq!(
            seen.warnings,
            [
                ("exec".to_string(), "`on-failure` is deprecated".to_string()),
                ("exec".to_string(), "`x` is unknown".to_string())
            ]
        );
        assert!(seen.took < Duration::from_secs(30), "waited for the hang");
    }

    #[test]
    fn warnings_and_merged_params() {
        let w = warning_text(
            "configWarning",
            &json!({"summary": "Invalid configuration; using defaults.", "details": "x:1:1: bad"}),
        );
        assert_eq!(
            w.as_deref(),
            Some("Invalid configuration; using defaults. x:1:1: bad")
        );
        assert_eq!(warning_text("thread/started", &json!({})), None);
        let m = merged([
            &json!({"approvalPolicy": "never"}),
            &json!({"config": {"a": 1}}),
            &json!({"config": {"b": {"c": 2}}}),
        ]);
        assert_eq!(
            m,
            json!({"approvalPolicy": "never", "config": {"a": 1, "b": {"c": 2}}})
        );
        assert!(provider_args()[3].contains("127.0.0.1:9"));
    }
}
