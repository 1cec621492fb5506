//! `codex exec --json`, the other surface integrators parse: one non-interactive run of
//! codex whose stdout is a JSONL stream of events (`thread.started`, `turn.started`,
//! `item.started`, `item.completed`, `turn.completed`, `turn.failed`, `error`, …). The
//! run is bounded by a time limit (its process group killed after it); every stdout line
//! is kept, as an event when it is a JSON object, as it is otherwise.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::app_server::child::ChildExit;
use crate::app_server::transcript::{Sent, SentKind};

/// How to run one `codex exec`.
#[derive(Debug, Clone)]
pub struct ExecCommand {
    /// The `codex` binary.
    pub program: PathBuf,
    /// The arguments after `exec` (`--json` among them).
    pub args: Vec<String>,
    /// The complete environment (the caller's is not inherited).
    pub env: Vec<(OsString, OsString)>,
    /// The working directory.
    pub cwd: PathBuf,
    /// A name for error messages, e.g. `codex-0.171.0`.
    pub label: String,
    /// What codex reads on stdin (`None`: stdin closed at once).
    pub stdin: Option<String>,
    /// The time limit of the run.
    pub timeout: Duration,
}

/// What one `codex exec --json` printed and how it ended.
#[derive(Debug, Clone)]
pub struct ExecRun {
    /// The stdout lines that are JSON objects, in order.
    pub events: Vec<Value>,
    /// The stdout lines that are not (each as printed).
    pub unparsed: Vec<String>,
    /// How it ended (`None`: killed at the time limit).
    pub exit: Option<ChildExit>,
    /// Its stderr.
    pub stderr: String,
    /// How long it ran.
    pub duration: Duration,
}

impl ExecRun {
    /// The exit code (`None`: a signal, or killed at the time limit).
    pub fn code(&self) -> Option<i32> {
        self.exit.as_ref().and_then(ChildExit::code)
    }

    /// The `type` of each event, in order.
    pub fn types(&self) -> Vec<&str> {
        self.events.iter().map(event_type).collect()
    }

    /// The events of type `kind`.
    pub fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| event_type(e) == kind)
            .collect()
    }

    /// The items of the `item.completed` events whose `item.type` is `kind`.
    pub fn completed(&self, kind: &str) -> Vec<&Value> {
        self.of_type("item.completed")
            .into_iter()
            .filter_map(|e| e.get("item"))
            .filter(|i| i.get("type").and_then(Value::as_str) == Some(kind))
            .collect()
    }

    /// The text of the last completed `agent_message` item (`None`: there is none).
    pub fn final_message(&self) -> Option<&str> {
        self.completed("agent_message")
            .last()
            .and_then(|i| i.get("text"))
            .and_then(Value::as_str)
    }

    /// The events as transcript entries ([`SentKind::Event`], the method being the type).
    pub fn transcript(&self) -> Vec<Sent> {
        self.events
            .iter()
            .map(|e| Sent::new(SentKind::Event, event_type(e), e.clone()))
            .collect()
    }

    /// The last lines of stderr, for error messages.
    pub fn stderr_tail(&self, lines: usize) -> String {
        let all: Vec<&str> = self.stderr.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// An event's `type` (`""` without one).
pub fn event_type(event: &Value) -> &str {
    event.get("type").and_then(Value::as_str).unwrap_or("")
}

/// Runs `codex exec ARGS` to its end or its time limit.
pub async fn run(cmd: &ExecCommand) -> anyhow::Result<ExecRun> {
    let started = Instant::now();
    let mut child = tokio::process::Command::new(&cmd.program)
        .arg("exec")
        .args(&cmd.args)
        .env_clear()
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&cmd.cwd)
        .stdin(if cmd.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("{}: cannot start {} exec", cmd.label, cmd.program.display()))?;
    if let (Some(text), Some(mut stdin)) = (&cmd.stdin, child.stdin.take()) {
        // A codex that exits before reading all of it is not an error here.
        let _ = stdin.write_all(text.as_bytes()).await;
    }
    let group = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let mut stdout = child.stdout.take().context("no stdout pipe")?;
    let mut stderr = child.stderr.take().context("no stderr pipe")?;
    let read = async {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let _ = tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
        let status = child.wait().await;
        (out, err, status)
    };
    let (out, err, exit) = match tokio::time::timeout(cmd.timeout, read).await {
        Ok((out, err, status)) => {
            let exit = match status {
                Ok(s) => ChildExit::Exited(s),
                Err(e) => ChildExit::WaitFailed(e.to_string()),
            };
            (out, err, Some(exit))
        }
        Err(_) => (Vec::new(), Vec::new(), None),
    };
    if let Some(group) = group {
        // Whatever it started (a shell command of the model's) goes with it.
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let (mut events, mut unparsed) = (Vec::new(), Vec::new());
    for line in String::from_utf8_lossy(&out)
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        match serde_json::from_str::<Value>(line) {
            Ok(v @ Value::Object(_)) => events.push(v),
            _ => unparsed.push(line.to_string()),
        }
    }
    Ok(ExecRun {
        events,
        unparsed,
        exit,
        stderr: String::from_utf8_lossy(&err).into_owned(),
        duration: started.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(script: &str, timeout: Duration) -> ExecCommand {
        let dir = std::env::temp_dir();
        let program = dir.join(format!("fake-exec-{}", std::process::id()));
        std::fs::write(&program, format!("#!/bin/sh\n{script}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        ExecCommand {
            program,
            args: vec!["--json".into()],
            env: vec![("PATH".into(), std::env::var_os("PATH").unwrap())],
            cwd: dir,
            label: "fake".into(),
            stdin: Some("piped prompt".into()),
            timeout,
        }
    }

    #[tokio::test]
    async fn events_lines_and_the_exit_are_kept_and_a_hang_is_killed() {
        let cmd = command(
            r#"[ "$1 $2" = "exec --json" ] || exit 9
read line; echo "{\"type\":\"thread.started\",\"thread_id\":\"$line\"}"
echo 'not json'
echo '{"type":"item.completed","item":{"type":"agent_message","text":"hi"}}'
echo oops >&2; exit 3"#,
            Duration::from_secs(10),
        );
        let run = run(&cmd).await.unwrap();
        assert_eq!(run.types(), vec!["thread.started", "item.completed"]);
        assert_eq!(run.events[0]["thread_id"], "piped prompt");
        assert_eq!(run.unparsed, vec!["not json"]);
        assert_eq!(run.final_message(), Some("hi"));
        assert_eq!(run.code(), Some(3));
        assert_eq!(run.stderr_tail(1), "oops");
        assert_eq!(run.transcript()[1].kind, SentKind::Event);
        let hang = command("sleep 30", Duration::from_millis(300));
        let run = super::run(&hang).await.unwrap();
        assert!(run.exit.is_none());
        assert!(run.duration < Duration::from_secs(5));
        let _ = std::fs::remove_file(&hang.program);
    }
}
