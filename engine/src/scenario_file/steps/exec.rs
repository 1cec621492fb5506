//! `do = "exec"`: one `codex exec --json ARGS PROMPT` run to its end; its run (exit, events,
//! final message) is checked and captured.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Uses;
use crate::app_server::exec::ExecRun;
use crate::scenario_file::execute::{Run, inside, wait_of};

/// The default time limit of an `exec` step.
const EXEC_WAIT: Duration = Duration::from_secs(60);

/// One `codex exec` run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecStep {
    /// The prompt, the last argument (`-`: read from `stdin`); absent, the arguments end
    /// as they are (a prompt among them, or none: codex reads it from `stdin`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The arguments before the prompt (`--json` is added by the harness); a first
    /// `resume` runs `codex exec resume`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// What codex reads on stdin (closed at once when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// The working directory, relative to the workspace (the workspace by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// A subset the run (`exit`, `events`, `types`, `final_message`, `unparsed`,
    /// `stderr`) must match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<Value>,
    /// Variables bound from the run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capture: BTreeMap<String, String>,
    /// How long the run may take.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A mismatch is drift under this key instead of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
}

/// What an `exec` step is matched against: `exit` (the code, null when killed), `events`,
/// `types` (each event's type), `final_message` (the last agent message's text, or null),
/// `unparsed` (stdout lines that are not JSON objects) and `stderr`.
fn exec_value(run: &ExecRun) -> Value {
    json!({
        "exit": run.code(),
        "events": run.events,
        "types": run.types(),
        "final_message": run.final_message(),
        "unparsed": run.unparsed,
        "stderr": run.stderr,
    })
}

impl ExecStep {
    pub(super) fn needs_app_server(&self) -> bool {
        false
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        u.paths.extend(self.cwd.as_deref());
        u.texts.extend(
            self.prompt
                .iter()
                .chain(&self.args)
                .chain(&self.stdin)
                .chain(&self.cwd)
                .map(String::as_str),
        );
        u.expectations.extend(&self.expect);
        u.captures = Some(&self.capture);
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let mut all = self
            .args
            .iter()
            .map(|a| run.text(a))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if let Some(prompt) = &self.prompt {
            all.push(run.text(prompt)?);
        }
        let stdin = self.stdin.as_deref().map(|s| run.text(s)).transpose()?;
        let cwd = match &self.cwd {
            Some(c) => {
                let dir = inside(&run.world.workspace, &run.text(c)?)?;
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                dir
            }
            None => run.world.workspace.clone(),
        };
        let home = run.world.home.clone();
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let timeout = wait_of(self.timeout_ms, EXEC_WAIT);
        let ran = run.world.exec_in(&home, &cwd, &all, stdin, timeout).await?;
        run.ctx.observe(format!("exec events: {:?}", ran.types()));
        run.ctx
            .observe(format!("exec stderr: {}", ran.stderr_tail(5)));
        let value = exec_value(&ran);
        if let Some(e) = &self.expect {
            run.expect(self.drift.as_ref(), e, &value, "exec run")?;
        }
        run.bind(&self.capture, &value)
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        Some(&mut self.capture)
    }
}
