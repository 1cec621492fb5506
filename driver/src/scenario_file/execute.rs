//! Running a compiled scenario file in a world, like a Rust scenario body: the world is
//! made from `[codex]` and `[workspace]`, the responses are queued, `codex app-server`
//! starts when a step talks to it (and a thread, binding `$thread`), the steps run in order
//! (an `exec` step runs `codex exec --json`), the checks are made, and
//! [`World::finish`] runs the after-scenario checks. A failed step or check names its
//! place in the file; a check or step with `drift = "key"` reports a mismatch as drift
//! (the value found at the mismatch), for the baselines to judge.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use codex_parity_sidecar::Scripted;
use codex_parity_sidecar::captured::CapturedRequest;
use serde_json::{Value, json};

use super::format::{Check, Input, Step};
use super::load::{Compiled, Placed};
use super::matching::{self, Vars};
use crate::app_server::exec::ExecRun;
use crate::app_server::message::{Message, RpcError};
use crate::app_server::turn::{StartedTurn, Turn, TurnOptions, start_turn, text, wait_turn};
use crate::app_server::{AppServer, CallError};
use crate::codex::capabilities::Capabilities;
use crate::drift::normalize::Normalizer;
use crate::harness::git;
use crate::harness::scenario::Ctx;
use crate::harness::world::{Transport, World, WorldOptions};

/// The default wait of a turn step for `turn/completed`.
const TURN_WAIT: Duration = Duration::from_secs(30);

/// The default wait of a step that waits for a notification or for requests.
const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// The default time limit of an `exec` step.
const EXEC_WAIT: Duration = Duration::from_secs(60);

/// The world options a file's `[codex]` asks for, on this binary.
pub fn world_options(c: &Compiled, caps: &Capabilities) -> WorldOptions {
    let d = WorldOptions::default();
    let x = &c.codex;
    let mut extra_args = x.args.clone();
    for (feature, method) in &x.enable_when_experimental {
        if caps.is_experimental(method) {
            extra_args.extend(["--enable".to_string(), feature.clone()]);
        }
    }
    WorldOptions {
        request_max_retries: x.request_max_retries.unwrap_or(d.request_max_retries),
        stream_max_retries: x.stream_max_retries.unwrap_or(d.stream_max_retries),
        stream_idle_timeout_ms: x.stream_idle_timeout_ms.unwrap_or(d.stream_idle_timeout_ms),
        transport: if x.websocket == Some(true) {
            Transport::WebSocket
        } else {
            Transport::Http
        },
        approval_policy: x.approval_policy.clone().unwrap_or(d.approval_policy),
        sandbox_mode: x.sandbox_mode.clone().unwrap_or(d.sandbox_mode),
        extra_args,
        extra_config: x.config.clone(),
        experimental_api: x.experimental_api.unwrap_or(d.experimental_api),
        allow_autonomous_turns: x.allow_autonomous_turns.unwrap_or(false),
        ..d
    }
}

/// Whether the binary has what `[requires]` names: `Err` names everything missing.
pub fn applies(c: &super::format::Requires, caps: &Capabilities) -> Result<(), String> {
    let mut missing = Vec::new();
    for m in &c.methods {
        if !caps.has_method(m) {
            missing.push(format!("method {m}"));
        }
    }
    for m in &c.server_requests {
        if !caps.server_requests.contains(m) {
            missing.push(format!("server request {m}"));
        }
    }
    for m in &c.notifications {
        if !caps.notifications.contains(m) {
            missing.push(format!("notification {m}"));
        }
    }
    for f in &c.fields {
        let (ty, field) = f.split_once('.').unwrap_or((f, ""));
        if !caps.has_field(ty, field) {
            missing.push(format!("field {f}"));
        }
    }
    for v in &c.enum_values {
        let (ty, value) = v.split_once('.').unwrap_or((v, ""));
        if !caps.enum_has(ty, value) {
            missing.push(format!("enum value {v}"));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "this codex's schema has no {} (the file's [requires])",
            missing.join(", ")
        ))
    }
}

/// A reply registered by a `reply` step, re-registered on each new app-server.
#[derive(Debug, Clone)]
enum Answer {
    Result(Value),
    Error(RpcError),
    Unanswered,
}

/// One run of a scenario file.
struct Run<'a> {
    ctx: &'a Ctx,
    world: World,
    /// The current app-server (`None`: no step talks to one).
    app: Option<Arc<AppServer>>,
    /// Every app-server of the run, the current one last.
    apps: Vec<Arc<AppServer>>,
    vars: Vars,
    answers: Vec<(String, Answer)>,
    /// Where the next `wait` starts looking in the current app-server's log.
    cursor: usize,
    /// Turns started with `wait = false`, by id.
    pending: HashMap<String, StartedTurn>,
}

/// Runs the scenario file `c` with `ctx`.
pub async fn run(ctx: &Ctx, c: &Compiled) -> anyhow::Result<()> {
    let mut world = ctx.world(world_options(c, &ctx.caps)).await?;
    if c.workspace.git {
        git::init_repository(&world.workspace).await?;
    }
    for (path, content) in &c.workspace.files {
        write_file(&world.workspace, path, content)?;
    }
    world.script(c.responses.clone()).await?;
    let app = if c.app_server {
        Some(world.start().await?)
    } else {
        None
    };
    let mut vars = Vars::default();
    vars.set("workspace", json!(world.workspace.display().to_string()));
    vars.set("home", json!(world.home.display().to_string()));
    if let (Some(params), Some(app)) = (&c.thread, &app) {
        let params = vars.substitute(params).map_err(anyhow::Error::msg)?;
        let (thread, _) = world.start_thread(app, params).await?;
        vars.set("thread", json!(thread));
    }
    let mut run = Run {
        ctx,
        world,
        apps: app.iter().cloned().collect(),
        app,
        vars,
        answers: Vec::new(),
        cursor: 0,
        pending: HashMap::new(),
    };
    for (i, Placed { item, place }) in c.steps.iter().enumerate() {
        run.step(item)
            .await
            .with_context(|| format!("step {} ({}) at {place}", i + 1, item.kind()))?;
    }
    for (i, Placed { item, place }) in c.checks.iter().enumerate() {
        run.check(item)
            .await
            .with_context(|| format!("check {} (on {}) at {place}", i + 1, item.kind()))?;
    }
    run.world.finish().await
}

/// Writes `content` to `relative` inside `workspace`; refuses paths that leave it.
fn write_file(workspace: &Path, relative: &str, content: &str) -> anyhow::Result<()> {
    let path = inside(workspace, relative)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))
}

/// `relative` inside `workspace`, refusing absolute paths and `..`.
fn inside(workspace: &Path, relative: &str) -> anyhow::Result<PathBuf> {
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

/// The place a mismatch message names (`at /a/b: …`), as a JSON pointer.
fn mismatch_pointer(message: &str) -> &str {
    let rest = message.strip_prefix("at ").unwrap_or("");
    let pointer = rest.split(": ").next().unwrap_or("");
    if pointer == "/" { "" } else { pointer }
}

fn ms(timeout_ms: Option<u64>) -> Duration {
    timeout_ms.map_or(DEFAULT_WAIT, Duration::from_millis)
}

fn turn_ms(timeout_ms: Option<u64>) -> Duration {
    timeout_ms.map_or(TURN_WAIT, Duration::from_millis)
}

impl Run<'_> {
    /// Checks `actual` against `expected` (variables substituted): a mismatch fails, or is
    /// drift under `drift` (the value found where it differs).
    fn expect(
        &self,
        drift: Option<&String>,
        expected: &Value,
        actual: &Value,
        what: &str,
    ) -> anyhow::Result<()> {
        let expected = self.vars.substitute(expected).map_err(anyhow::Error::msg)?;
        self.judge(
            drift,
            matching::check(&expected, Some(actual), ""),
            actual,
            what,
        )
    }

    /// A mismatch (`result`) fails, or is drift under `drift`.
    fn judge(
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

    fn bind(
        &mut self,
        captures: &std::collections::BTreeMap<String, String>,
        from: &Value,
    ) -> anyhow::Result<()> {
        for (name, pointer) in captures {
            let value = matching::capture(from, pointer)
                .map_err(|e| anyhow::anyhow!("capturing {name}: {e}"))?;
            self.vars.set(name, value);
        }
        Ok(())
    }

    fn input(&self, input: &Input) -> anyhow::Result<Vec<Value>> {
        Ok(match input {
            Input::Text(t) => vec![text(&self.vars.text(t).map_err(anyhow::Error::msg)?)],
            Input::Items(items) => items
                .iter()
                .map(|i| self.vars.substitute(i))
                .collect::<Result<_, _>>()
                .map_err(anyhow::Error::msg)?,
        })
    }

    fn register(&self, app: &AppServer, method: &str, answer: &Answer) {
        match answer.clone() {
            Answer::Result(v) => app.handle(method, move |_| Ok(v.clone())),
            Answer::Error(e) => app.handle(method, move |_| Err(e.clone())),
            Answer::Unanswered => app.leave_unanswered(method),
        }
    }

    /// Ends an expected-error call: the error must match `expected`.
    fn expect_failure(
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

    async fn step(&mut self, step: &Step) -> anyhow::Result<()> {
        match step {
            Step::Request {
                method,
                params,
                expect,
                expect_error,
                capture,
                timeout_ms,
                drift,
            } => {
                let params = self.vars.substitute(params).map_err(anyhow::Error::msg)?;
                let app = self.app()?;
                let timeout = timeout_ms.map_or(app.call_timeout, Duration::from_millis);
                let result = app.call_with_timeout(method, params, timeout).await;
                if method == "turn/start"
                    && let Ok(v) = &result
                {
                    app.started_turns.record(v);
                }
                let value = match expect_error {
                    Some(expected) => {
                        self.expect_failure(method, result, expected, drift.as_ref())?
                    }
                    None => {
                        let v = result.with_context(|| format!("{method} failed"))?;
                        if let Some(expected) = expect {
                            self.expect(drift.as_ref(), expected, &v, &format!("{method} result"))?;
                        }
                        v
                    }
                };
                self.bind(capture, &value)
            }
            Step::Turn {
                thread,
                input,
                params,
                wait,
                expect,
                capture,
                timeout_ms,
                drift,
            } => {
                let thread = self.vars.text(thread).map_err(anyhow::Error::msg)?;
                let input = self.input(input)?;
                let extra = match self.vars.substitute(params).map_err(anyhow::Error::msg)? {
                    Value::Object(map) => map,
                    Value::Null => Default::default(),
                    other => bail!("expected turn params as a table, found {other}"),
                };
                let options = TurnOptions { model: None, extra };
                let app = self.app()?;
                let started = start_turn(&app, &thread, input, &options).await?;
                self.vars.set("turn", json!(started.id));
                if *wait {
                    let turn = wait_turn(&app, started, turn_ms(*timeout_ms)).await?;
                    self.finished_turn(&turn, expect.as_ref(), capture, drift.as_ref())
                } else {
                    let result = started.result.clone();
                    self.pending.insert(started.id.clone(), started);
                    self.bind(capture, &result)
                }
            }
            Step::WaitTurn {
                turn,
                expect,
                capture,
                timeout_ms,
                drift,
            } => {
                let id = self.vars.text(turn).map_err(anyhow::Error::msg)?;
                let started = self
                    .pending
                    .remove(&id)
                    .with_context(|| format!("expected a turn started with wait = false, found {id}, which is not waiting"))?;
                let turn = wait_turn(&*self.app()?, started, turn_ms(*timeout_ms)).await?;
                self.finished_turn(&turn, expect.as_ref(), capture, drift.as_ref())
            }
            Step::Wait {
                notification,
                matches,
                capture,
                timeout_ms,
            } => {
                let expected = matches
                    .as_ref()
                    .map(|m| self.vars.substitute(m))
                    .transpose()
                    .map_err(anyhow::Error::msg)?;
                let found = self
                    .app()?
                    .wait_for(self.cursor, ms(*timeout_ms), notification, |m| {
                        matches!(m.message, Message::Notification { .. })
                            && m.is(notification)
                            && expected
                                .as_ref()
                                .is_none_or(|e| matching::check(e, Some(m.params()), "").is_ok())
                    })
                    .await?;
                self.cursor = found.index + 1;
                self.bind(capture, found.params())
            }
            Step::Reply {
                method,
                result,
                error,
                unanswered,
            } => {
                let answer = if *unanswered {
                    Answer::Unanswered
                } else if let Some(e) = error {
                    let e = self.vars.substitute(e).map_err(anyhow::Error::msg)?;
                    Answer::Error(
                        serde_json::from_value(e)
                            .context("expected error = { code = N, message = \"…\" } in a reply")?,
                    )
                } else {
                    let r = result.clone().unwrap_or(Value::Null);
                    Answer::Result(self.vars.substitute(&r).map_err(anyhow::Error::msg)?)
                };
                self.register(&*self.app()?, method, &answer);
                self.answers.push((method.clone(), answer));
                Ok(())
            }
            Step::Steer {
                thread,
                turn,
                input,
                expect,
                expect_error,
            } => {
                let (thread, turn) = (self.text(thread)?, self.text(turn)?);
                let input = self.input(input)?;
                let result = self.app()?.turn_steer(&thread, &turn, input).await;
                self.answered("turn/steer", result, expect.as_ref(), expect_error.as_ref())
            }
            Step::Interrupt {
                thread,
                turn,
                expect,
                expect_error,
            } => {
                let (thread, turn) = (self.text(thread)?, self.text(turn)?);
                let result = self.app()?.turn_interrupt(&thread, &turn).await;
                self.answered(
                    "turn/interrupt",
                    result,
                    expect.as_ref(),
                    expect_error.as_ref(),
                )
            }
            Step::WaitRequests { count, timeout_ms } => self
                .world
                .requests_arrived(*count, ms(*timeout_ms))
                .await
                .map(|_| ()),
            Step::Restart {} => {
                self.app()?
                    .exit_cleanly("the app-server before the restart")
                    .await?;
                let app = self.world.start().await?;
                for (method, answer) in &self.answers {
                    self.register(&app, method, answer);
                }
                self.apps.push(app.clone());
                self.app = Some(app);
                self.cursor = 0;
                Ok(())
            }
            Step::Script { response } => {
                let scripts = response
                    .iter()
                    .map(|r| {
                        Scripted::from_json(&matching::literals(r))
                            .map_err(|e| anyhow::anyhow!("{e}"))
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                self.world.script(scripts).await
            }
            Step::Release { gate } => self.world.release(gate).await.map(|_| ()),
            Step::WriteFile { path, content } => {
                let (path, content) = (self.text(path)?, self.text(content)?);
                write_file(&self.world.workspace, &path, &content)
            }
            Step::Sleep { ms } => {
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                Ok(())
            }
            Step::Exec {
                prompt,
                args,
                stdin,
                cwd,
                expect,
                capture,
                timeout_ms,
                drift,
            } => {
                let mut all = args
                    .iter()
                    .map(|a| self.text(a))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                all.push(self.text(prompt)?);
                let stdin = stdin.as_deref().map(|s| self.text(s)).transpose()?;
                let cwd = match cwd {
                    Some(c) => {
                        let dir = inside(&self.world.workspace, &self.text(c)?)?;
                        std::fs::create_dir_all(&dir)
                            .with_context(|| format!("creating {}", dir.display()))?;
                        dir
                    }
                    None => self.world.workspace.clone(),
                };
                let home = self.world.home.clone();
                let all: Vec<&str> = all.iter().map(String::as_str).collect();
                let timeout = timeout_ms.map_or(EXEC_WAIT, Duration::from_millis);
                let run = self
                    .world
                    .exec_in(&home, &cwd, &all, stdin, timeout)
                    .await?;
                self.ctx.observe(format!("exec events: {:?}", run.types()));
                self.ctx
                    .observe(format!("exec stderr: {}", run.stderr_tail(5)));
                let value = exec_value(&run);
                if let Some(e) = expect {
                    self.expect(drift.as_ref(), e, &value, "exec run")?;
                }
                self.bind(capture, &value)
            }
        }
    }

    /// The current app-server; the file's load made sure a step that needs one has one.
    fn app(&self) -> anyhow::Result<Arc<AppServer>> {
        self.app
            .clone()
            .context("expected an app-server for this step, found none started")
    }

    fn text(&self, s: &str) -> anyhow::Result<String> {
        self.vars.text(s).map_err(anyhow::Error::msg)
    }

    fn answered(
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

    fn finished_turn(
        &mut self,
        turn: &Turn,
        expect: Option<&Value>,
        capture: &std::collections::BTreeMap<String, String>,
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
    async fn model_requests(&self, n: usize) -> anyhow::Result<Vec<CapturedRequest>> {
        let all = self.world.captured(n, Duration::from_secs(2)).await?;
        Ok(all.into_iter().filter(|r| !r.auto_warmup).collect())
    }

    /// Every message of every app-server of the run that `keep` selects.
    fn messages(&self, keep: impl Fn(&Message) -> bool) -> Vec<Value> {
        self.apps
            .iter()
            .flat_map(|a| a.messages())
            .filter(|m| keep(&m.message))
            .map(|m| m.params().clone())
            .collect()
    }

    async fn check(&mut self, check: &Check) -> anyhow::Result<()> {
        match check {
            Check::Requests { count, drift } => {
                let n = self.model_requests(*count).await?.len();
                let result = if n == *count {
                    Ok(())
                } else {
                    Err(format!(
                        "at /: expected {count} model request(s), found {n}"
                    ))
                };
                self.judge(drift.as_ref(), result, &json!(n), "model requests")
            }
            Check::Request {
                index,
                matches,
                contains,
                lacks,
                last_user_text,
                drift,
            } => {
                let want = usize::try_from(*index).map_or(1, |i| i + 1);
                let requests = self.model_requests(want).await?;
                let at = if *index < 0 {
                    requests.len().checked_sub(index.unsigned_abs() as usize)
                } else {
                    usize::try_from(*index).ok().filter(|i| *i < requests.len())
                };
                let Some(at) = at else {
                    bail!(
                        "expected a model request #{index}, found {} request(s)",
                        requests.len()
                    );
                };
                let mut normalizer = Normalizer::default();
                let normalised: Vec<Value> =
                    requests.iter().map(|r| normalizer.request(r)).collect();
                let r = &requests[at];
                let what = format!("model request #{at}");
                if let Some(m) = matches {
                    let expected = self.vars.substitute(m).map_err(anyhow::Error::msg)?;
                    let expected = normalizer.json(&expected);
                    let result = matching::check(&expected, Some(&normalised[at]), "");
                    self.judge(drift.as_ref(), result, &normalised[at], &what)?;
                }
                for t in contains {
                    let t = self.text(t)?;
                    let result = if r.body_contains_text(&t) {
                        Ok(())
                    } else {
                        Err(format!(
                            "at /body: expected a body containing {t:?}, found none"
                        ))
                    };
                    self.judge(drift.as_ref(), result, &json!({"body": false}), &what)?;
                }
                for t in lacks {
                    let t = self.text(t)?;
                    let result = if r.body_contains_text(&t) {
                        Err(format!("at /body: expected a body without {t:?}, found it"))
                    } else {
                        Ok(())
                    };
                    self.judge(drift.as_ref(), result, &json!({"body": true}), &what)?;
                }
                if let Some(t) = last_user_text {
                    let t = self.text(t)?;
                    let got = json!(r.last_user_text());
                    let result = matching::check(&json!(t), Some(&got), "");
                    self.judge(
                        drift.as_ref(),
                        result,
                        &got,
                        &format!("{what} last user text"),
                    )?;
                }
                Ok(())
            }
            Check::Value {
                value,
                matches,
                drift,
            } => {
                let actual = self
                    .vars
                    .substitute(&Value::String(value.clone()))
                    .map_err(anyhow::Error::msg)?;
                self.expect(drift.as_ref(), matches, &actual, value)
            }
            Check::Notification {
                method,
                matches,
                count,
                drift,
            } => {
                let all = self.messages(
                    |m| matches!(m, Message::Notification { method: x, .. } if x == method),
                );
                self.count_matching(&all, method, matches.as_ref(), *count, drift.as_ref())
            }
            Check::ServerRequest {
                method,
                matches,
                count,
                drift,
            } => {
                let all = self
                    .messages(|m| matches!(m, Message::Request { method: x, .. } if x == method));
                self.count_matching(&all, method, matches.as_ref(), *count, drift.as_ref())
            }
            Check::File {
                path,
                content,
                contains,
                exists,
                drift,
            } => {
                let path = inside(&self.world.workspace, &self.text(path)?)?;
                let want_exists = exists.unwrap_or(true);
                let got = std::fs::read_to_string(&path).ok();
                let what = format!("file {}", path.display());
                let observed = got.clone().map_or(Value::Null, Value::String);
                let result = match (&got, want_exists) {
                    (None, true) => Err("at /: expected the file to exist, found none".to_string()),
                    (Some(_), false) => Err("at /: expected no file, found one".to_string()),
                    (None, false) => Ok(()),
                    (Some(text), true) => {
                        let mut r = Ok(());
                        if let Some(c) = content {
                            let c = self.text(c)?;
                            if text.strip_suffix('\n').unwrap_or(text)
                                != c.strip_suffix('\n').unwrap_or(&c)
                            {
                                r = Err(format!(
                                    "at /: expected the content {c:?}, found {text:?}"
                                ));
                            }
                        }
                        if let Some(c) = contains {
                            let c = self.text(c)?;
                            if !text.contains(&c) {
                                r = Err(format!(
                                    "at /: expected a text containing {c:?}, found {text:?}"
                                ));
                            }
                        }
                        r
                    }
                };
                self.judge(drift.as_ref(), result, &observed, &what)
            }
        }
    }

    fn count_matching(
        &self,
        all: &[Value],
        method: &str,
        matches: Option<&Value>,
        count: Option<usize>,
        drift: Option<&String>,
    ) -> anyhow::Result<()> {
        let expected = matches
            .map(|m| self.vars.substitute(m))
            .transpose()
            .map_err(anyhow::Error::msg)?;
        let mut first_mismatch = None;
        let n = all
            .iter()
            .filter(|p| match &expected {
                None => true,
                Some(e) => match matching::check(e, Some(p), "") {
                    Ok(()) => true,
                    Err(m) => {
                        first_mismatch.get_or_insert(m);
                        false
                    }
                },
            })
            .count();
        let ok = match count {
            Some(c) => n == c,
            None => n > 0,
        };
        let result = if ok {
            Ok(())
        } else {
            let want = count.map_or("at least one".to_string(), |c| c.to_string());
            Err(format!(
                "at /: expected {want} {method} matching, found {n} of {}{}",
                all.len(),
                first_mismatch
                    .map(|m| format!(" (first mismatch {m})"))
                    .unwrap_or_default()
            ))
        };
        self.judge(drift, result, &json!(n), method)
    }
}
