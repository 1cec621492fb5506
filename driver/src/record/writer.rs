//! A recording written as one scenario file (docs/scenario-files.md): the model side as
//! `[[response]]` entries in the order codex asked for them, the client side as steps in
//! the order the client acted, ids as variables, the recording's paths as `$workspace` and
//! `$home`, and checks of what the session showed (each turn's status and final text, the
//! server requests the client answered, the number of model requests).
//!
//! Timing is kept where the replay needs it to be deterministic: a model request in flight
//! when the client steered is held at a gate (released right after the steer) at the event
//! the steer came before; one codex abandoned (an interrupt) stalls after the events it got;
//! `wait_requests` puts each steer and interrupt after the model requests it followed. With
//! `timing`, every event also keeps its recorded gap.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::bail;
use serde_json::{Map, Value, json};

use crate::app_server::client::Inbound;
use crate::app_server::message::{Message, RequestId};
use crate::app_server::turn::{StartedTurn, collect_turn};
use crate::record::exchange::{End, Exchange, Micros};
use crate::record::redact::Redactor;
use crate::record::render::{Answer, Draft, DraftStep, Meta};
use crate::record::timeline::{AppSession, ExecSession, Sessions};
use crate::scenario_file::fields::{Input, thread_var};
use crate::scenario_file::steps::Step;
use crate::scenario_file::steps::exec::ExecStep;
use crate::scenario_file::steps::interrupt::InterruptStep;
use crate::scenario_file::steps::release::ReleaseStep;
use crate::scenario_file::steps::request::RequestStep;
use crate::scenario_file::steps::restart::RestartStep;
use crate::scenario_file::steps::steer::SteerStep;
use crate::scenario_file::steps::turn::TurnStep;
use crate::scenario_file::steps::wait_requests::WaitRequestsStep;
use crate::scenario_file::steps::wait_turn::WaitTurnStep;
use crate::scenario_file::steps::write_file::WriteFileStep;

/// The file and what went into it.
#[derive(Debug, Clone, Default)]
pub struct Written {
    /// The scenario file's text.
    pub text: String,
    /// Turns recorded.
    pub turns: usize,
    /// Steps written.
    pub steps: usize,
    /// Scripted responses written.
    pub responses: usize,
    /// Server requests the client answered.
    pub answered: usize,
    /// What the file could not say or left out, one sentence each (also in its comments).
    pub notes: Vec<String>,
}

/// A value codex gave that a later client message may name: bound on first use.
#[derive(Debug, Clone)]
struct Candidate {
    step: usize,
    pointer: String,
    base: String,
}

#[derive(Default)]
struct Builder<'a> {
    d: Draft<'a>,
    vars: HashMap<String, String>,
    candidates: HashMap<String, Candidate>,
    taken: Vec<String>,
    last_wait_requests: usize,
    turns: usize,
    execs: usize,
    pending_waits: Vec<(Micros, String, Map<String, Value>, String)>,
    latest_turn: Option<(String, usize)>,
    paths: Vec<(String, String)>,
}

/// What the client ran, in the order it started it.
enum Started<'s> {
    App(&'s AppSession),
    Exec(&'s ExecSession),
}

/// Writes the file for `sessions` (the client side: its app-server sessions and `exec`
/// runs, in the order it started them) and `exchanges` (the model side); refuses a
/// recording that has no turn, or that a replay could only run with a secret.
pub fn write(
    sessions: &Sessions,
    exchanges: &[Exchange],
    meta: &Meta,
    redactor: &mut Redactor,
) -> anyhow::Result<Written> {
    let mut started: Vec<(Micros, PathBuf, Started)> = sessions
        .app
        .iter()
        .map(|s| (s.started, s.cwd.clone(), Started::App(s)))
        .chain(
            sessions
                .exec
                .iter()
                .map(|e| (e.started, e.cwd.clone(), Started::Exec(e))),
        )
        .collect();
    started.sort_by_key(|(at, _, _)| *at);
    let mut b = Builder {
        d: Draft {
            exchanges: exchanges
                .iter()
                .filter(|e| e.is_model_request() || e.is_compaction())
                .collect(),
            origin: started.first().map_or(0, |s| s.0),
            notes: meta.notes.clone(),
            ..Draft::default()
        },
        ..Builder::default()
    };
    if let Some((_, cwd, _)) = started.first() {
        let workspace = cwd.to_string_lossy().into_owned();
        b.paths
            .push((meta.home.to_string_lossy().into_owned(), "home".into()));
        if !workspace.is_empty() && workspace != "/" {
            b.paths.push((workspace, "workspace".into()));
        }
        b.paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    }
    let mut apps = 0;
    for (at, _, item) in &started {
        match item {
            Started::App(session) => {
                if apps > 0 {
                    b.flush_waits(Micros::MAX);
                    b.push(
                        *at,
                        Step::Restart(RestartStep {}),
                        "the client started a second app-server: a restart in the same home".into(),
                    );
                }
                apps += 1;
                b.session(session)?;
            }
            Started::Exec(run) => b.exec(run),
        }
    }
    b.flush_waits(Micros::MAX);
    if b.turns == 0 {
        bail!(
            "the session had no turn: the client never sent turn/start{} (nothing to replay)",
            if sessions.is_empty() {
                ", nor started codex app-server or codex exec"
            } else {
                ""
            }
        );
    }
    let text = b.d.render(meta, redactor);
    // The guard behind the redactor: whatever it missed (a pattern that matches the file's
    // own syntax, a secret split by an escape) refuses the file.
    if let Some((line, what)) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| redactor.leak(l.as_bytes()).map(|w| (i + 1, w)))
    {
        bail!(
            "the file this recording would write still holds {what} on line {line}, after \
             redaction: nothing was written; a --redact pattern that matches the file's own \
             syntax (a key, a bracket) cannot be applied, so make it narrower"
        );
    }
    Ok(Written {
        turns: b.turns,
        steps: b.d.steps.len() + b.d.replies_before.values().map(Vec::len).sum::<usize>(),
        responses: b.d.exchanges.len(),
        answered: b.d.server_requests.values().sum(),
        notes: b.d.notes.clone(),
        text,
    })
}

impl<'a> Builder<'a> {
    fn push(&mut self, at: Micros, step: Step, comment: String) -> usize {
        self.d.steps.push(DraftStep { at, step, comment });
        self.d.steps.len() - 1
    }

    /// Binds `name` from step `step`'s result at `pointer`.
    fn capture(&mut self, step: usize, name: &str, pointer: &str) {
        if let Some(capture) = self.d.steps[step].step.capture_mut() {
            capture.insert(name.to_string(), pointer.to_string());
        }
    }

    fn session(&mut self, s: &AppSession) -> anyhow::Result<()> {
        for problem in &s.unreadable {
            self.d.notes.push(format!("skipped {problem}"));
        }
        let mut answers: HashMap<RequestId, (Micros, Result<Value, Value>)> = HashMap::new();
        let mut client_answers: HashMap<RequestId, Answer> = HashMap::new();
        let mut completed: HashMap<String, Inbound> = HashMap::new();
        let mut inbound = Vec::new();
        for rpc in &s.rpcs {
            match (&rpc.message, rpc.from_client) {
                (Message::Response { id, result }, false) => {
                    answers.insert(id.clone(), (rpc.at, Ok(result.clone())));
                }
                (
                    Message::Error {
                        id: Some(id),
                        error,
                    },
                    false,
                ) => {
                    answers.insert(
                        id.clone(),
                        (
                            rpc.at,
                            Err(serde_json::to_value(error).unwrap_or(Value::Null)),
                        ),
                    );
                }
                (Message::Response { id, result }, true) => {
                    client_answers.insert(id.clone(), Answer::Result(result.clone()));
                }
                (
                    Message::Error {
                        id: Some(id),
                        error,
                    },
                    true,
                ) => {
                    client_answers.insert(
                        id.clone(),
                        Answer::Error(serde_json::to_value(error).unwrap_or(Value::Null)),
                    );
                }
                _ => {}
            }
            if !rpc.from_client {
                let m = Inbound {
                    index: inbound.len(),
                    message: rpc.message.clone(),
                    at: std::time::Instant::now(),
                };
                if m.is("turn/completed")
                    && let Some(id) = m.turn_id()
                {
                    completed.insert(id.to_string(), m.clone());
                }
                inbound.push((rpc.at, m));
            }
        }
        let client_acts: Vec<Micros> = s
            .rpcs
            .iter()
            .filter(|r| r.from_client && matches!(r.message, Message::Request { .. }))
            .map(|r| r.at)
            .collect();
        for rpc in &s.rpcs {
            match (&rpc.message, rpc.from_client) {
                (Message::Request { id, method, params }, true) => {
                    self.flush_waits(rpc.at);
                    let answer = answers.get(id).map(|(_, a)| a.clone());
                    let ctx = Ctx {
                        at: rpc.at,
                        inbound: &inbound,
                        completed: &completed,
                        client_acts: &client_acts,
                    };
                    self.client_request(method, params, answer, &ctx)?;
                }
                (Message::Request { id, method, params }, false) => {
                    let answer = client_answers
                        .get(id)
                        .cloned()
                        .unwrap_or(Answer::Unanswered);
                    self.server_request(rpc.at, method, params, answer);
                }
                (Message::Notification { method, .. }, true) if method != "initialized" => {
                    self.d.notes.push(format!(
                        "the client's notification {method} is not replayed"
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn client_request(
        &mut self,
        method: &str,
        params: &Value,
        answer: Option<Result<Value, Value>>,
        ctx: &Ctx<'_>,
    ) -> anyhow::Result<()> {
        if method.starts_with("account/login") {
            bail!(
                "the client logged in through the app-server ({method}): a replay would need its \
                 credentials, so nothing was written; log in outside the recorded session"
            );
        }
        let at = ctx.at;
        let when = format!(
            "client, +{:.2} s",
            (at.saturating_sub(self.d.origin)) as f64 / 1e6
        );
        match method {
            "initialize" => {
                self.d.experimental_api = Some(
                    params.pointer("/capabilities/experimentalApi") == Some(&Value::Bool(true)),
                );
            }
            "thread/start"
                if self.d.steps.is_empty()
                    && self.d.thread_table.is_none()
                    && matches!(answer, Some(Ok(_))) =>
            {
                let mut p = self.subst(params).as_object().cloned().unwrap_or_default();
                if p.get("cwd").and_then(Value::as_str) == Some("$workspace") {
                    p.remove("cwd");
                }
                self.d.thread_table = Some(p);
                if let Some(Ok(result)) = &answer
                    && let Some(id) = result.pointer("/thread/id").and_then(Value::as_str)
                {
                    self.vars.insert(id.to_string(), "thread".into());
                    self.taken.push("thread".into());
                }
            }
            "turn/start" => self.turn(params, answer, ctx, when),
            "turn/steer" | "turn/interrupt" => {
                self.steer_or_interrupt(method, params, answer, at, when)
            }
            _ => {
                let params = self.subst(params);
                let expect_error = match &answer {
                    Some(Err(e)) => Some(error_code(e)),
                    _ => None,
                };
                let step = self.push(
                    at,
                    Step::Request(RequestStep {
                        method: method.into(),
                        params,
                        expect_error,
                        ..RequestStep::default()
                    }),
                    format!("{when}: {method}"),
                );
                if let Some(Ok(result)) = &answer {
                    self.offer(step, result, "");
                }
                if method == "thread/start"
                    && self.d.thread_table.is_none()
                    && !self.taken.contains(&"thread".to_string())
                    && let Some(Ok(result)) = &answer
                    && let Some(id) = result.pointer("/thread/id").and_then(Value::as_str)
                {
                    // The thread the replay's turns run on: bound as `$thread` at once.
                    self.candidates.remove(id);
                    self.capture(step, "thread", "/thread/id");
                    self.vars.insert(id.to_string(), "thread".into());
                    self.taken.push("thread".into());
                }
                if answer.is_none() {
                    self.d.notes.push(format!(
                        "{method} ({when}) got no answer before the session ended"
                    ));
                }
            }
        }
        Ok(())
    }

    fn turn(
        &mut self,
        params: &Value,
        answer: Option<Result<Value, Value>>,
        ctx: &Ctx<'_>,
        when: String,
    ) {
        let result = match answer {
            Some(Ok(r)) => r,
            other => {
                let params = self.subst(params);
                let expect_error = other.and_then(Result::err).map(|e| error_code(&e));
                self.push(
                    ctx.at,
                    Step::Request(RequestStep {
                        method: "turn/start".into(),
                        params,
                        expect_error,
                        ..RequestStep::default()
                    }),
                    format!("{when}: turn/start, refused"),
                );
                return;
            }
        };
        let Some(turn_id) = result
            .pointer("/turn/id")
            .and_then(Value::as_str)
            .map(String::from)
        else {
            self.d.notes.push(format!(
                "turn/start ({when}) answered without a turn id: not replayed"
            ));
            return;
        };
        self.turns += 1;
        let thread = self.thread_of(params);
        let input = self.input_of(params);
        let mut rest = self.subst(params).as_object().cloned().unwrap_or_default();
        rest.remove("threadId");
        rest.remove("input");
        let done = ctx.completed.get(&turn_id);
        let (expect, done_at) = match done {
            Some(done) => (
                self.turn_expect(&turn_id, params, &result, ctx, done),
                ctx.at_of(done),
            ),
            None => {
                self.d.notes.push(format!("turn {} ({when}) never completed in the recording: the replay does not wait for it", self.turns));
                (Map::new(), Micros::MAX)
            }
        };
        // The client acted before the turn ended (a steer, an interrupt, another request):
        // the replay must not wait for it either.
        let wait = done.is_some() && !ctx.client_acts.iter().any(|&t| t > ctx.at && t < done_at);
        if let Some((old, step)) = self.latest_turn.take() {
            self.vars.remove(&old);
            self.candidates.insert(
                old,
                Candidate {
                    step,
                    pointer: "/id".into(),
                    base: "turn".into(),
                },
            );
        }
        self.vars.insert(turn_id.clone(), "turn".into());
        let kind = Step::Turn(TurnStep {
            thread: thread.unwrap_or_else(thread_var),
            params: if rest.is_empty() {
                Value::Null
            } else {
                Value::Object(rest)
            },
            wait,
            expect: (wait && !expect.is_empty()).then(|| Value::Object(expect.clone())),
            ..TurnStep::new(input)
        });
        let step = self.push(
            ctx.at,
            kind,
            format!("{when}: turn/start (turn {})", self.turns),
        );
        if wait {
            self.latest_turn = Some((turn_id, step));
        } else if done.is_some() {
            let comment = format!(
                "codex, +{:.2} s: turn/completed (turn {})",
                done_at.saturating_sub(self.d.origin) as f64 / 1e6,
                self.turns
            );
            self.pending_waits.push((done_at, turn_id, expect, comment));
        }
    }

    /// What the replay expects of a completed turn: its status and final text.
    fn turn_expect(
        &mut self,
        turn_id: &str,
        params: &Value,
        result: &Value,
        ctx: &Ctx<'_>,
        done: &Inbound,
    ) -> Map<String, Value> {
        let started = StartedTurn {
            id: turn_id.to_string(),
            thread_id: params
                .get("threadId")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            cursor: 0,
            result: result.clone(),
            model: String::new(),
        };
        let after = ctx
            .inbound
            .iter()
            .filter(|(t, _)| *t >= ctx.at)
            .map(|(_, m)| m.clone());
        let turn = collect_turn(started, after, done);
        let mut expect = Map::new();
        expect.insert("status".into(), json!(turn.status.as_str()));
        let text = turn.final_response();
        if !text.is_empty() {
            expect.insert("finalResponse".into(), self.subst(&json!(text)));
        }
        expect
    }

    fn steer_or_interrupt(
        &mut self,
        method: &str,
        params: &Value,
        answer: Option<Result<Value, Value>>,
        at: Micros,
        when: String,
    ) {
        let count = self
            .d
            .exchanges
            .iter()
            .filter(|e| e.is_model_request() && e.request_at < at)
            .count();
        if count > self.last_wait_requests {
            self.push(
                at,
                Step::WaitRequests(WaitRequestsStep {
                    count,
                    timeout_ms: None,
                }),
                format!("the client acted once codex had sent {count} model request(s)"),
            );
            self.last_wait_requests = count;
        }
        let thread = self.thread_of(params);
        let turn_field = if method == "turn/steer" {
            "expectedTurnId"
        } else {
            "turnId"
        };
        let turn = params
            .get(turn_field)
            .map(|t| self.subst(t))
            .and_then(|t| t.as_str().map(String::from))
            .unwrap_or_else(|| "$turn".into());
        let (expect, expect_error) = match &answer {
            Some(Ok(r)) => (Some(self.subst(r)), None),
            Some(Err(e)) => (None, Some(error_code(e))),
            None => (None, None),
        };
        let steer = method == "turn/steer";
        let thread = thread.unwrap_or_else(thread_var);
        let kind = if steer {
            Step::Steer(SteerStep {
                thread,
                turn,
                input: self.input_of(params),
                expect,
                expect_error,
            })
        } else {
            Step::Interrupt(InterruptStep {
                thread,
                turn,
                expect,
                expect_error,
            })
        };
        self.push(at, kind, format!("{when}: {method}"));
        if let Some((pos, event)) = self.in_flight(count, at).filter(|_| steer) {
            let gate = format!("steer_{}", self.d.gates.len() + 1);
            self.d.gates.insert(pos, (gate.clone(), event));
            self.push(
                at,
                Step::Release(ReleaseStep { gate }),
                format!("the model request in flight at the steer goes on from event {event}"),
            );
        }
    }

    /// One `codex exec` run: the files its arguments named written into the workspace
    /// first, then an `exec` step with its arguments (ids and paths as variables), its stdin,
    /// and what it showed (exit status, final message); the thread id of its
    /// `thread.started` offered to a later `exec resume`.
    fn exec(&mut self, e: &ExecSession) {
        self.flush_waits(e.started);
        self.turns += 1;
        self.execs += 1;
        let when = format!(
            "client, +{:.2} s",
            e.started.saturating_sub(self.d.origin) as f64 / 1e6
        );
        let args = self.exec_args(e, &when);
        let events: Vec<Value> = e
            .lines
            .iter()
            .filter_map(|(_, l)| serde_json::from_str(l).ok())
            .collect();
        let code = e.exit.flatten();
        let mut expect = Map::new();
        expect.insert("exit".into(), code.map_or(json!("$null"), |c| json!(c)));
        if let Some(text) = final_message(&events) {
            expect.insert("final_message".into(), self.subst(&json!(text)));
        }
        let cwd = self.relative_cwd(&e.cwd);
        let took_ms = e.ended.saturating_sub(e.started) / 1000;
        let step = self.push(
            e.started,
            Step::Exec(ExecStep {
                prompt: None,
                args,
                stdin: e.stdin.clone().filter(|s| !s.is_empty()),
                cwd,
                expect: Some(Value::Object(expect)),
                // The default limit is 60 s: a run that took longer gets twice its time.
                timeout_ms: (took_ms > 50_000).then_some(took_ms * 2),
                ..ExecStep::default()
            }),
            format!(
                "{when}: codex {} ({} event(s), exit {})",
                e.args.first().map_or("exec", String::as_str),
                events.len(),
                code.map_or("by a signal".into(), |c| c.to_string())
            ),
        );
        for (i, ev) in events.iter().enumerate() {
            if ev.get("type").and_then(Value::as_str) == Some("thread.started")
                && let Some(id) = ev.get("thread_id").and_then(Value::as_str)
            {
                self.candidates.entry(id.to_string()).or_insert(Candidate {
                    step,
                    pointer: format!("/events/{i}/thread_id"),
                    base: "thread".into(),
                });
            }
        }
        if e.exit.is_none() {
            self.d.notes.push(format!(
                "exec {} ({when}) had not exited when the recording ended",
                self.execs
            ));
        }
    }

    /// An `exec` run's arguments as the file writes them: `--json` left to the harness (as
    /// `--experimental-json` is), each file an argument names written into the workspace
    /// by a `write_file` step first and named there, ids and paths as variables.
    fn exec_args(&mut self, e: &ExecSession, when: &str) -> Vec<String> {
        // `--json` comes from the harness, as `--experimental-json` did from the client.
        let mut args: Vec<String> = e
            .args
            .iter()
            .skip(1)
            .filter(|a| *a != "--json" && *a != "--experimental-json")
            .cloned()
            .collect();
        for (flag, path, text) in &e.files {
            let Some(text) = text else {
                self.d.notes.push(format!(
                    "exec {} ({when}): {flag} {path} could not be read: the replay names it as it is",
                    self.execs
                ));
                continue;
            };
            let name = Path::new(path)
                .file_name()
                .map_or("file".into(), |n| n.to_string_lossy().into_owned());
            let copy = format!(".codex-parity/exec-{}-{name}", self.execs);
            self.push(
                e.started,
                Step::WriteFile(WriteFileStep {
                    path: copy.clone(),
                    content: text.clone(),
                }),
                format!("the file {flag} named, as the client wrote it"),
            );
            for a in args.iter_mut() {
                if a == path {
                    *a = format!("${{workspace}}/{copy}");
                } else if a.strip_prefix(&format!("{flag}=")) == Some(path) {
                    *a = format!("{flag}=${{workspace}}/{copy}");
                }
            }
        }
        args.iter()
            .map(|a| {
                if a.contains("${workspace}/.codex-parity/") {
                    a.clone()
                } else {
                    self.subst_str(a)
                }
            })
            .collect()
    }

    /// An `exec`'s working directory as a step's `cwd`: `None` for the workspace, a path
    /// relative to it below it, `None` with a note elsewhere.
    fn relative_cwd(&mut self, cwd: &Path) -> Option<String> {
        let workspace = self
            .paths
            .iter()
            .find(|(_, n)| n == "workspace")
            .map(|(p, _)| PathBuf::from(p))?;
        match cwd.strip_prefix(&workspace) {
            Ok(rest) if rest.as_os_str().is_empty() => None,
            Ok(rest) => Some(rest.to_string_lossy().into_owned()),
            Err(_) => {
                self.d.notes.push(format!(
                    "an exec ran in {}, outside the first one's directory: the replay runs it in the workspace",
                    cwd.display()
                ));
                None
            }
        }
    }

    /// A `threadId` param as the file writes it; `None` for `$thread`, the default.
    fn thread_of(&mut self, params: &Value) -> Option<String> {
        params
            .get("threadId")
            .map(|t| self.subst(t))
            .and_then(|t| t.as_str().map(String::from))
            .filter(|t| t != "$thread")
    }

    /// An `input` param as the file writes it: one plain text item as its text.
    fn input_of(&mut self, params: &Value) -> Input {
        match params.get("input") {
            Some(Value::Array(items)) if items.len() == 1 && only_text(&items[0]) => {
                match self.subst(&items[0]["text"]) {
                    Value::String(text) => Input::Text(text),
                    other => Input::Items(vec![other]),
                }
            }
            Some(other) => match self.subst(other) {
                Value::Array(items) => Input::Items(items),
                item => Input::Items(vec![item]),
            },
            None => Input::Items(Vec::new()),
        }
    }

    /// The model request (its position among the scripted ones, and how many of its events
    /// had arrived) that was still streaming at `at`, when it is the `count`th.
    fn in_flight(&self, count: usize, at: Micros) -> Option<(usize, usize)> {
        let pos = self
            .d
            .exchanges
            .iter()
            .enumerate()
            .filter(|(_, e)| e.is_model_request())
            .nth(count.checked_sub(1)?)?
            .0;
        let e = self.d.exchanges[pos];
        let arrived = e.events.iter().filter(|(t, _)| *t < at).count();
        (arrived < e.events.len() && e.end == End::Completed).then_some((pos, arrived))
    }

    fn server_request(&mut self, at: Micros, method: &str, params: &Value, answer: Answer) {
        *self
            .d
            .server_requests
            .entry(method.to_string())
            .or_default() += 1;
        let _ = self.subst(params);
        let answer = match answer {
            Answer::Result(v) => Answer::Result(self.subst(&v)),
            Answer::Error(v) => Answer::Error(self.subst(&v)),
            Answer::Unanswered => {
                self.d
                    .notes
                    .push(format!("the client never answered a {method}"));
                Answer::Unanswered
            }
        };
        let Some(step) = self.d.steps.iter().rposition(|s| s.at <= at) else {
            self.d.notes.push(format!(
                "{method} came before the client's first step: not replayed"
            ));
            return;
        };
        let list = self.d.replies_before.entry(step).or_default();
        match list.iter().find(|(m, _)| m == method) {
            Some((_, a)) if *a != answer => self.d.notes.push(format!(
                "the client answered two {method} requests of one step differently: the file replays the first answer for both"
            )),
            Some(_) => {}
            None => list.push((method.to_string(), answer)),
        }
    }

    /// Writes `wait_turn` steps for the turns started with `wait = false` that ended before
    /// `until`.
    fn flush_waits(&mut self, until: Micros) {
        self.pending_waits.sort_by_key(|w| w.0);
        while self.pending_waits.first().is_some_and(|w| w.0 < until) {
            let (at, turn_id, expect, comment) = self.pending_waits.remove(0);
            let turn = match self.vars.get(&turn_id) {
                Some(v) => format!("${v}"),
                None => "$turn".into(),
            };
            let step = self.push(
                at,
                Step::WaitTurn(WaitTurnStep {
                    turn,
                    expect: (!expect.is_empty()).then_some(Value::Object(expect)),
                    capture: Default::default(),
                    timeout_ms: None,
                    drift: None,
                }),
                comment,
            );
            if self.vars.get(&turn_id).is_some_and(|v| v == "turn") {
                self.latest_turn = Some((turn_id, step));
            }
        }
    }

    /// Remembers the ids in `result` (strings under keys `id` or `…Id`) as values a later
    /// client message may name, bound from step `step`.
    fn offer(&mut self, step: usize, result: &Value, pointer: &str) {
        match result {
            Value::Object(map) => {
                for (k, v) in map {
                    let p = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                    if let Value::String(s) = v
                        && (k == "id" || k.ends_with("Id"))
                        && s.len() >= 6
                        && !self.vars.contains_key(s)
                    {
                        let base = if k == "id" {
                            pointer.rsplit('/').next().unwrap_or("id")
                        } else {
                            k.trim_end_matches("Id")
                        };
                        let base = snake(
                            if base.is_empty() || base.chars().all(|c| c.is_ascii_digit()) {
                                "id"
                            } else {
                                base
                            },
                        );
                        self.candidates.entry(s.clone()).or_insert(Candidate {
                            step,
                            pointer: p.clone(),
                            base,
                        });
                    } else {
                        self.offer(step, v, &p);
                    }
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.offer(step, v, &format!("{pointer}/{i}"));
                }
            }
            _ => {}
        }
    }

    /// `v` as the file writes it: known ids as variables (a candidate is bound on first
    /// use), the recording's paths as `$workspace`/`$home`, a leading `$` doubled.
    fn subst(&mut self, v: &Value) -> Value {
        match v {
            // TOML has no null: a file says "$null".
            Value::Null => Value::String("$null".into()),
            Value::String(s) => Value::String(self.subst_str(s)),
            Value::Array(items) => Value::Array(items.iter().map(|i| self.subst(i)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.subst(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn subst_str(&mut self, s: &str) -> String {
        if let Some(name) = self.vars.get(s) {
            return format!("${name}");
        }
        if let Some(c) = self.candidates.remove(s) {
            let mut name = c.base.clone();
            let mut n = 2;
            while self.taken.contains(&name) {
                name = format!("{}_{n}", c.base);
                n += 1;
            }
            self.taken.push(name.clone());
            self.capture(c.step, &name, &c.pointer);
            self.vars.insert(s.to_string(), name.clone());
            return format!("${name}");
        }
        for (path, name) in &self.paths {
            if s == path {
                return format!("${name}");
            }
            if let Some(rest) = s.strip_prefix(path.as_str())
                && rest.starts_with('/')
                && !s.contains("${")
            {
                return format!("${{{name}}}{rest}");
            }
        }
        if s.starts_with('$') {
            format!("${s}")
        } else {
            s.to_string()
        }
    }
}

/// What a request's handling needs to see of its session.
struct Ctx<'s> {
    at: Micros,
    inbound: &'s [(Micros, Inbound)],
    completed: &'s HashMap<String, Inbound>,
    client_acts: &'s [Micros],
}

impl Ctx<'_> {
    fn at_of(&self, m: &Inbound) -> Micros {
        self.inbound.get(m.index).map_or(Micros::MAX, |(t, _)| *t)
    }
}

/// What the file expects of a refused request: the error's code.
fn error_code(e: &Value) -> Value {
    json!({"code": e.get("code").cloned().unwrap_or(Value::Null)})
}

/// Whether an input item is a plain text item (written as the step's `input` text).
fn only_text(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some("text")
        && item.as_object().is_some_and(|o| {
            o.iter().all(|(k, v)| {
                k == "type"
                    || k == "text"
                    || (k == "text_elements" && v.as_array().is_some_and(Vec::is_empty))
            })
        })
}

/// The text of the last `agent_message` item an exec stream completed.
fn final_message(events: &[Value]) -> Option<String> {
    events
        .iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("item.completed"))
        .filter_map(|e| e.get("item"))
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("agent_message"))
        .filter_map(|i| i.get("text").and_then(Value::as_str))
        .next_back()
        .map(String::from)
}

fn snake(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::exchange::Transport;
    use crate::record::timeline::Rpc;
    use std::path::Path;

    const WS: &str = "/work/client";

    /// A session built line by line: `c` the client sends, `x` codex sends, at `t` ms.
    struct S(AppSession);

    impl S {
        fn new() -> S {
            let mut s = S(AppSession {
                cwd: WS.into(),
                ..AppSession::default()
            });
            s.c(0, json!({"id": 0, "method": "initialize", "params": {"capabilities": {"experimentalApi": true}}}));
            s.x(1, json!({"id": 0, "result": {}}));
            s.c(2, json!({"method": "initialized"}));
            s
        }
        fn line(&mut self, t: u64, from_client: bool, v: Value) -> &mut S {
            let message = Message::from_value(v).unwrap();
            self.0.rpcs.push(Rpc {
                at: t * 1000,
                from_client,
                message,
            });
            self
        }
        fn c(&mut self, t: u64, v: Value) -> &mut S {
            self.line(t, true, v)
        }
        fn x(&mut self, t: u64, v: Value) -> &mut S {
            self.line(t, false, v)
        }
        fn thread(&mut self, t: u64) -> &mut S {
            self.c(
                t,
                json!({"id": 1, "method": "thread/start", "params": {"cwd": WS}}),
            )
            .x(
                t + 1,
                json!({"id": 1, "result": {"thread": {"id": "thr_0001"}}}),
            )
        }
        fn turn(&mut self, t: u64, id: i64, turn: &str, text: &str) -> &mut S {
            let input = json!([{"type": "text", "text": text}]);
            self.c(t, json!({"id": id, "method": "turn/start", "params": {"threadId": "thr_0001", "input": input}}))
                .x(t + 1, json!({"id": id, "result": {"turn": {"id": turn}}}))
        }
        fn done(&mut self, t: u64, turn: &str, status: &str, said: &str) -> &mut S {
            let item = json!({"type": "agentMessage", "id": "m1", "text": said});
            self.x(t, json!({"method": "item/completed", "params": {"threadId": "thr_0001", "turnId": turn, "item": item}}))
                .x(t + 1, json!({"method": "turn/completed", "params": {"threadId": "thr_0001", "turn": {"id": turn, "status": status}}}))
        }
    }

    fn model(index: usize, at_ms: u64, event_ms: &[u64], end: End) -> Exchange {
        let events = event_ms
            .iter()
            .enumerate()
            .map(|(i, t)| (t * 1000, json!({"type": format!("e{i}"), "response": {"id": "r", "instructions": "long"}})))
            .collect();
        Exchange {
            index,
            transport: Transport::Http,
            method: "POST".into(),
            path: "/responses".into(),
            request_at: at_ms * 1000,
            request: json!({"input": []}),
            status: 200,
            headers: vec![],
            events,
            body: None,
            end,
        }
    }

    fn meta() -> Meta {
        Meta {
            name: "rec".into(),
            id: "REC-1".into(),
            command: vec!["client".into(), "plain".into()],
            codex_version: "0.171.0".into(),
            upstream: "http://127.0.0.1:1/v1".into(),
            date: "2026-12-02".into(),
            client_exit: Some(0),
            home: "/tmp/rec/codex-home".into(),
            approval_policy: "never".into(),
            sandbox_mode: "danger-full-access".into(),
            timing: false,
            notes: vec![],
        }
    }

    /// Writes the file and reads it back with the scenario-file reader.
    fn written(sessions: &[AppSession], exchanges: &[Exchange]) -> Written {
        let w = write(&app(sessions), exchanges, &meta(), &mut Redactor::default()).unwrap();
        if let Err(problems) = load::compile(Path::new("rec.toml"), &w.text) {
            panic!("{}\n{problems:?}", w.text);
        }
        w
    }

    use crate::scenario_file::load;

    /// App-server sessions alone.
    fn app(sessions: &[AppSession]) -> Sessions {
        Sessions {
            app: sessions.to_vec(),
            ..Sessions::default()
        }
    }

    #[test]
    fn a_plain_turn_becomes_a_turn_step_with_its_status_and_text() {
        let mut s = S::new();
        s.thread(10).turn(20, 2, "turn_0001", "say hello").done(
            30,
            "turn_0001",
            "completed",
            "hello",
        );
        let w = written(&[s.0], &[model(0, 21, &[22, 23], End::Completed)]);
        let t = &w.text;
        assert!(
            !t.contains("[thread]") && !t.contains("start_thread"),
            "{t}"
        );
        assert!(!t.contains("cwd"), "the workspace is the default cwd: {t}");
        assert!(t.contains("do = \"turn\"\ninput = \"say hello\"\nexpect = { status = \"completed\", finalResponse = \"hello\" }"), "{t}");
        assert!(t.contains("on = \"requests\"\ncount = 1"), "{t}");
        assert!(!t.contains("\"long\""), "echoes are trimmed: {t}");
        assert_eq!((w.turns, w.responses), (1, 1));
    }

    #[test]
    fn with_timing_every_event_keeps_its_gap() {
        let mut s = S::new();
        s.thread(10)
            .turn(20, 2, "turn_0001", "hi")
            .done(400, "turn_0001", "completed", "yo");
        let meta = Meta {
            timing: true,
            ..meta()
        };
        let e = model(0, 21, &[121, 371], End::Completed);
        let w = write(&app(&[s.0]), &[e], &meta, &mut Redactor::default()).unwrap();
        assert!(w.text.contains("\"gap_ms\": [100,250]"), "{}", w.text);
        load::compile(Path::new("t.toml"), &w.text).unwrap();
    }

    #[test]
    fn a_steer_waits_for_its_request_and_holds_the_response_at_a_gate() {
        let mut s = S::new();
        s.thread(10).turn(20, 2, "turn_0001", "write a list");
        s.c(300, json!({"id": 3, "method": "turn/steer", "params": {"threadId": "thr_0001", "expectedTurnId": "turn_0001", "input": [{"type": "text", "text": "bananas"}]}}))
            .x(301, json!({"id": 3, "result": {"turnId": "turn_0001"}}))
            .done(900, "turn_0001", "completed", "fruit");
        let w = written(
            &[s.0],
            &[
                model(0, 25, &[100, 800], End::Completed),
                model(1, 850, &[860], End::Completed),
            ],
        );
        let t = &w.text;
        let order = [
            "wait = false",
            "do = \"wait_requests\"\ncount = 1",
            "do = \"steer\"\ninput = \"bananas\"\nexpect = { turnId = \"$turn\" }",
            "do = \"release\"\ngate = \"steer_1\"",
            "do = \"wait_turn\"\nexpect = { status = \"completed\", finalResponse = \"fruit\" }",
        ];
        let mut at = 0;
        for part in order {
            let found = t[at..]
                .find(part)
                .unwrap_or_else(|| panic!("{part:?} after byte {at} in\n{t}"));
            at += found + part.len();
        }
        assert!(t.contains("\"gates\": {\"steer_1\":1}"), "{t}");
    }

    #[test]
    fn an_interrupted_response_stalls_after_what_codex_got() {
        let mut s = S::new();
        s.thread(10).turn(20, 2, "turn_0001", "take your time");
        s.c(300, json!({"id": 3, "method": "turn/interrupt", "params": {"threadId": "thr_0001", "turnId": "turn_0001"}}))
            .x(301, json!({"id": 3, "result": {}}))
            .x(310, json!({"method": "turn/completed", "params": {"threadId": "thr_0001", "turn": {"id": "turn_0001", "status": "interrupted"}}}));
        let w = written(
            &[s.0],
            &[model(0, 25, &[30], End::ClientClosed { at: 305_000 })],
        );
        assert!(w.text.contains("\"stall_after\": 1"), "{}", w.text);
        assert!(
            w.text.contains("do = \"interrupt\"\nexpect = {}"),
            "{}",
            w.text
        );
        assert!(
            w.text.contains("expect = { status = \"interrupted\" }"),
            "{}",
            w.text
        );
    }

    #[test]
    fn a_server_request_is_answered_by_a_reply_before_its_turn_and_counted() {
        let mut s = S::new();
        s.thread(10).turn(20, 2, "turn_0001", "look it up");
        s.x(40, json!({"id": 0, "method": "item/tool/call", "params": {"threadId": "thr_0001", "turnId": "turn_0001", "callId": "call_1", "tool": "lookup"}}))
            .c(41, json!({"id": 0, "result": {"success": true, "contentItems": [{"type": "inputText", "text": "costs $5"}]}}))
            .done(60, "turn_0001", "completed", "done");
        let w = written(
            &[s.0],
            &[
                model(0, 25, &[30], End::Completed),
                model(1, 45, &[50], End::Completed),
            ],
        );
        let t = &w.text;
        let reply = t.find("do = \"reply\"\nmethod = \"item/tool/call\"\nresult = { success = true, contentItems = [{ type = \"inputText\", text = \"costs $5\" }] }").unwrap_or_else(|| panic!("{t}"));
        assert!(reply < t.find("do = \"turn\"").unwrap(), "{t}");
        assert!(
            t.contains("on = \"server_request\"\nmethod = \"item/tool/call\"\ncount = 1"),
            "{t}"
        );
        assert!(t.contains("server_requests = [\"item/tool/call\"]"), "{t}");
        assert_eq!(w.answered, 1);
    }

    #[test]
    fn ids_codex_gave_become_captures_and_paths_variables() {
        let mut s = S::new();
        s.thread(10);
        s.c(12, json!({"id": 5, "method": "thread/fork", "params": {"threadId": "thr_0001", "cwd": format!("{WS}/sub"), "note": "$HOME"}}))
            .x(13, json!({"id": 5, "result": {"thread": {"id": "thr_fork01"}}}));
        let input = json!([{"type": "text", "text": "hi"}]);
        s.c(20, json!({"id": 2, "method": "turn/start", "params": {"threadId": "thr_fork01", "input": input}}))
            .x(21, json!({"id": 2, "result": {"turn": {"id": "turn_0001"}}}))
            .x(30, json!({"method": "turn/completed", "params": {"threadId": "thr_fork01", "turn": {"id": "turn_0001", "status": "completed"}}}));
        let w = written(&[s.0], &[model(0, 22, &[25], End::Completed)]);
        let t = &w.text;
        assert!(t.contains("params = { threadId = \"$thread\", cwd = \"${workspace}/sub\", note = \"$$HOME\" }\ncapture = { thread_2 = \"/thread/id\" }"), "{t}");
        assert!(t.contains("do = \"turn\"\nthread = \"$thread_2\""), "{t}");
    }

    #[test]
    fn a_second_app_server_is_a_restart() {
        let mut a = S::new();
        a.thread(10)
            .turn(20, 2, "turn_0001", "one")
            .done(30, "turn_0001", "completed", "1");
        let mut b = S::new();
        b.0.started = 100_000;
        for r in &mut b.0.rpcs {
            r.at += 100_000;
        }
        b.c(
            110,
            json!({"id": 1, "method": "thread/resume", "params": {"threadId": "thr_0001"}}),
        )
        .x(
            111,
            json!({"id": 1, "result": {"thread": {"id": "thr_0001"}}}),
        );
        b.turn(120, 2, "turn_0002", "two")
            .done(130, "turn_0002", "completed", "2");
        let w = written(
            &[a.0, b.0],
            &[
                model(0, 21, &[25], End::Completed),
                model(1, 121, &[125], End::Completed),
            ],
        );
        let t = &w.text;
        assert!(
            t.find("do = \"restart\"").unwrap()
                < t.find("method = \"thread/resume\"\nparams = { threadId = \"$thread\" }")
                    .unwrap(),
            "{t}"
        );
        assert_eq!(w.turns, 2);
    }

    /// One `codex exec` as the relay logs it: its stream of `text`, then exit 0.
    fn exec_run(at: u64, args: &[&str], stdin: &str, thread: &str, text: &str) -> ExecSession {
        let t = |ms: u64| (at + ms) * 1000;
        let events = [
            json!({"type": "thread.started", "thread_id": thread}),
            json!({"type": "turn.started"}),
            json!({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": text}}),
            json!({"type": "turn.completed", "usage": {"input_tokens": 1}}),
        ];
        ExecSession {
            started: t(0),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: WS.into(),
            stdin: Some(stdin.into()),
            lines: events
                .iter()
                .enumerate()
                .map(|(i, e)| (t(10 + i as u64), e.to_string()))
                .collect(),
            files: vec![],
            exit: Some(Some(0)),
            ended: t(100),
        }
    }

    #[test]
    fn exec_runs_become_exec_steps_resumed_by_their_thread() {
        let mut first = exec_run(
            0,
            &[
                "exec",
                "--experimental-json",
                "--cd",
                WS,
                "--output-schema",
                "/tmp/s/schema.json",
            ],
            "say hi",
            "0199aaaa-bbbb-cccc",
            "hi",
        );
        first.files = vec![(
            "--output-schema".into(),
            "/tmp/s/schema.json".into(),
            Some("{\"type\": \"object\"}".into()),
        )];
        let second = exec_run(
            200,
            &[
                "exec",
                "--experimental-json",
                "resume",
                "0199aaaa-bbbb-cccc",
            ],
            "again",
            "0199aaaa-bbbb-cccc",
            "hi again",
        );
        let sessions = Sessions {
            exec: vec![first, second],
            ..Sessions::default()
        };
        let w = write(
            &sessions,
            &[
                model(0, 5, &[8], End::Completed),
                model(1, 205, &[208], End::Completed),
            ],
            &meta(),
            &mut Redactor::default(),
        )
        .unwrap();
        let t = &w.text;
        let c = load::compile(Path::new("exec.toml"), t).unwrap_or_else(|e| panic!("{e:?}\n{t}"));
        assert!(!c.app_server, "an exec file starts no app-server:\n{t}");
        assert_eq!(w.turns, 2);
        for part in [
            "do = \"write_file\"\npath = \".codex-parity/exec-1-schema.json\"\ncontent = \"{\\\"type\\\": \\\"object\\\"}\"",
            "do = \"exec\"\nargs = [\"--cd\", \"$workspace\", \"--output-schema\", \"${workspace}/.codex-parity/exec-1-schema.json\"]\nstdin = \"say hi\"\nexpect = { exit = 0, final_message = \"hi\" }\ncapture = { thread = \"/events/0/thread_id\" }",
            "do = \"exec\"\nargs = [\"resume\", \"$thread\"]\nstdin = \"again\"\nexpect = { exit = 0, final_message = \"hi again\" }",
        ] {
            assert!(t.contains(part), "{part:?} not in\n{t}");
        }
        assert!(
            !t.contains("experimental-json") && !t.contains("start_thread"),
            "{t}"
        );
    }

    #[test]
    fn no_turn_is_refused_and_secrets_are_replaced_everywhere() {
        let mut s = S::new();
        s.thread(10);
        let err = write(&app(&[s.0.clone()]), &[], &meta(), &mut Redactor::default()).unwrap_err();
        assert!(err.to_string().contains("the session had no turn"), "{err}");
        s.turn(20, 2, "turn_0001", "my key is key-secret-42").done(
            30,
            "turn_0001",
            "completed",
            "ok",
        );
        let mut r = Redactor::new(
            &[],
            vec![("key-secret-42".into(), "the API key in $K".into())],
        )
        .unwrap();
        let mut m = meta();
        m.command = vec!["client".into(), "--key=key-secret-42\nname = 'x'".into()];
        let w = write(
            &app(&[s.0.clone()]),
            &[model(0, 21, &[25], End::Completed)],
            &m,
            &mut r,
        )
        .unwrap();
        assert!(!w.text.contains("key-secret-42"), "{}", w.text);
        assert!(
            w.text.contains("input = \"my key is <redacted>\""),
            "{}",
            w.text
        );
        // In the command line (written twice from one redaction) and in the input.
        assert!(w.text.contains("(2 replaced)"), "{}", w.text);
        let parsed: toml::Table = toml::from_str(&w.text).unwrap();
        assert_eq!(parsed["name"].as_str(), Some("rec"), "no injected key");
        assert!(!parsed.contains_key("x"), "no injected key");
        // A pattern that matches the file's own syntax cannot be applied: refused.
        let mut r = Redactor::new(&["summary".into()], vec![]).unwrap();
        let err = write(
            &app(&[s.0]),
            &[model(0, 21, &[25], End::Completed)],
            &meta(),
            &mut r,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("a match of the --redact pattern #1"),
            "{err}"
        );
    }
}
