//! What the steps and checks of a running scenario file share ([`Run`]): the world, the
//! app-servers, the variables, the replies registered, and the judging of an expectation (a
//! mismatch fails, or with `drift = "key"` is drift: the value found at the mismatch, for
//! the baselines to judge). `super::body` makes one and runs a file's steps and checks
//! with it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use codex_parity_sidecar::captured::CapturedRequest;
use serde_json::{Value, json};

use super::fields::Input;
use super::matching::{self, Vars};
use crate::app_server::message::{Message, RpcError};
use crate::app_server::turn::{StartedTurn, Turn, text};
use crate::app_server::{AppServer, CallError};
use crate::harness::scenario::Ctx;
use crate::harness::world::World;

/// The default wait of a turn step for `turn/completed`.
pub(super) const TURN_WAIT: Duration = Duration::from_secs(30);

/// The default wait of a step that waits for a notification or for requests.
pub(super) const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// A reply registered by a `reply` step, registered again on each new app-server.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// Answer with this result.
    Result(Value),
    /// Answer with this error.
    Error(RpcError),
    /// Leave it unanswered.
    Unanswered,
}

/// One run of a scenario file: what its steps and checks share.
pub(crate) struct Run<'a> {
    /// The scenario's context (drift, observations).
    pub(super) ctx: &'a Ctx,
    /// The world.
    pub(super) world: World,
    /// The current app-server (`None`: no step talks to one).
    pub(super) app: Option<Arc<AppServer>>,
    /// Every app-server of the run, the current one last.
    pub(super) apps: Vec<Arc<AppServer>>,
    /// The variables bound so far.
    pub(super) vars: Vars,
    /// The replies registered so far, in order.
    pub(super) answers: Vec<(String, Answer)>,
    /// Where the next `wait` starts looking in the current app-server's log.
    pub(super) cursor: usize,
    /// Turns started with `wait = false`, by id.
    pub(super) pending: HashMap<String, StartedTurn>,
}

/// Writes `content` to `relative` inside `workspace`; refuses paths that leave it.
pub(super) fn write_file(workspace: &Path, relative: &str, content: &str) -> anyhow::Result<()> {
    let path = inside(workspace, relative)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))
}

/// `relative` inside `workspace`, refusing absolute paths and `..`.
pub(super) fn inside(workspace: &Path, relative: &str) -> anyhow::Result<PathBuf> {
    let p = Path::new(relative);
    if p.components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        bail!("expected a path inside the workspace, found {relative:?}");
    }
    Ok(workspace.join(p))
}

/// The JSON of a JSON-RPC error a call ended with; other failures are errors.
fn rpc_json(e: &CallError) -> anyhow::Result<Value> {
    let rpc = e
        .rpc()
        .with_context(|| format!("expected a JSON-RPC error, found: {e}"))?;
    Ok(serde_json::to_value(rpc)?)
}

/// What a completed turn is matched against: the `turn` of `turn/completed` with
/// `finalResponse`, `chunks` and `agentMessages` added.
fn turn_value(turn: &Turn) -> Value {
    let mut v = match &turn.completed {
        Value::Object(_) => turn.completed.clone(),
        _ => json!({}),
    };
    v["finalResponse"] = json!(turn.final_response());
    v["chunks"] = json!(turn.chunks());
    v["agentMessages"] = Value::Array(
        turn.agent_messages()
            .into_iter()
            .map(|(id, text, phase)| json!({"id": id, "text": text, "phase": phase}))
            .collect(),
    );
    v
}

/// The place a mismatch message names (`at /a/b: …`), as a JSON pointer.
fn mismatch_pointer(message: &str) -> &str {
    let rest = message.strip_prefix("at ").unwrap_or("");
    let pointer = rest.split(": ").next().unwrap_or("");
    if pointer == "/" { "" } else { pointer }
}

/// A wait's `timeout_ms`, or `default`.
pub(super) fn wait_of(timeout_ms: Option<u64>, default: Duration) -> Duration {
    timeout_ms.map_or(default, Duration::from_millis)
}

impl Run<'_> {
    /// Checks `actual` against `expected` (variables substituted): a mismatch fails, or is
    /// drift under `drift` (the value found where it differs).
    pub(super) fn expect(
        &self,
        drift: Option<&String>,
        expected: &Value,
        actual: &Value,
        what: &str,
    ) -> anyhow::Result<()> {
        let expected = self.value(expected)?;
        self.judge(
            drift,
            matching::check(&expected, Some(actual), ""),
            actual,
            what,
        )
    }

    /// A mismatch (`result`) fails, or is drift under `drift`.
    pub(super) fn judge(
        &self,
        drift: Option<&String>,
        result: Result<(), String>,
        actual: &Value,
        what: &str,
    ) -> anyhow::Result<()> {
        let Err(message) = result else {
            return Ok(());
        };
        match drift {
            Some(key) => {
                let observed = actual
                    .pointer(mismatch_pointer(&message))
                    .cloned()
                    .unwrap_or(Value::Null);
                self.ctx.drift(key, observed, format!("{what}: {message}"));
                Ok(())
            }
            None => bail!("{what}: {message}"),
        }
    }

    /// Binds each capture from `from`.
    pub(super) fn bind(
        &mut self,
        captures: &BTreeMap<String, String>,
        from: &Value,
    ) -> anyhow::Result<()> {
        for (name, pointer) in captures {
            let value = matching::capture(from, pointer)
                .map_err(|e| anyhow::anyhow!("capturing {name}: {e}"))?;
            self.vars.set(name, value);
        }
        Ok(())
    }

    /// `value` with its variables substituted.
    pub(super) fn value(&self, value: &Value) -> anyhow::Result<Value> {
        self.vars.substitute(value).map_err(anyhow::Error::msg)
    }

    /// `s` with its variables substituted, as text.
    pub(super) fn text(&self, s: &str) -> anyhow::Result<String> {
        self.vars.text(s).map_err(anyhow::Error::msg)
    }

    /// A turn's input as `turn/start` takes it.
    pub(super) fn input(&self, input: &Input) -> anyhow::Result<Vec<Value>> {
        Ok(match input {
            Input::Text(t) => vec![text(&self.text(t)?)],
            Input::Items(items) => items
                .iter()
                .map(|i| self.value(i))
                .collect::<anyhow::Result<_>>()?,
        })
    }

    /// Registers `answer` for every later server request `method` of `app`.
    pub(super) fn register(&self, app: &AppServer, method: &str, answer: &Answer) {
        match answer.clone() {
            Answer::Result(v) => app.handle(method, move |_| Ok(v.clone())),
            Answer::Error(e) => app.handle(method, move |_| Err(e.clone())),
            Answer::Unanswered => app.leave_unanswered(method),
        }
    }

    /// Ends an expected-error call: the error must match `expected`.
    pub(super) fn expect_failure(
        &mut self,
        method: &str,
        result: Result<Value, CallError>,
        expected: &Value,
        drift: Option<&String>,
    ) -> anyhow::Result<Value> {
        match result {
            Ok(v) => {
                let what = format!(
                    "{method}: expected an error matching {expected}, found the result {v}"
                );
                match drift {
                    Some(key) => {
                        self.ctx.drift(key, json!({"result": v}), what);
                        Ok(v)
                    }
                    None => bail!(what),
                }
            }
            Err(e) => {
                let error = rpc_json(&e).with_context(|| method.to_string())?;
                self.expect(drift, expected, &error, &format!("{method} error"))?;
                Ok(error)
            }
        }
    }

    /// The current app-server; the file's load made sure a step that needs one has one.
    pub(super) fn app(&self) -> anyhow::Result<Arc<AppServer>> {
        self.app
            .clone()
            .context("expected an app-server for this step, found none started")
    }

    /// A call's answer checked: its error against `expect_error`, or its result against
    /// `expect`.
    pub(super) fn answered(
        &mut self,
        method: &str,
        result: Result<Value, CallError>,
        expect: Option<&Value>,
        expect_error: Option<&Value>,
    ) -> anyhow::Result<()> {
        match expect_error {
            Some(expected) => self
                .expect_failure(method, result, expected, None)
                .map(|_| ()),
            None => {
                let v = result.with_context(|| format!("{method} failed"))?;
                match expect {
                    Some(e) => self.expect(None, e, &v, &format!("{method} result")),
                    None => Ok(()),
                }
            }
        }
    }

    /// A completed turn checked against `expect` and captured.
    pub(super) fn finished_turn(
        &mut self,
        turn: &Turn,
        expect: Option<&Value>,
        capture: &BTreeMap<String, String>,
        drift: Option<&String>,
    ) -> anyhow::Result<()> {
        let value = turn_value(turn);
        if let Some(e) = expect {
            self.expect(drift, e, &value, &format!("turn {}", turn.id))?;
        }
        self.bind(capture, &value)
    }

    /// The model requests captured so far (warm-up frames left out), waiting up to 2 s for
    /// at least `n`.
    pub(super) async fn model_requests(&self, n: usize) -> anyhow::Result<Vec<CapturedRequest>> {
        let all = self.world.captured(n, Duration::from_secs(2)).await?;
        Ok(all.into_iter().filter(|r| !r.auto_warmup).collect())
    }

    /// The params of every message of every app-server of the run that `keep` selects.
    pub(super) fn messages(&self, keep: impl Fn(&Message) -> bool) -> Vec<Value> {
        self.apps
            .iter()
            .flat_map(|a| a.messages())
            .filter(|m| keep(&m.message))
            .map(|m| m.params().clone())
            .collect()
    }
}
