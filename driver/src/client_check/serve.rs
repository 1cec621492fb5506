//! The mock app-server: what the client's `codex` runs during `client-check` (the hidden
//! `codex-parity client-check-serve DIR ARGS…`). Each launch takes the next connection of
//! the check's [`Script`] (`DIR/script.json`) and serves it on stdio:
//!
//! - a client request is answered with the first answer of its method not yet given (the
//!   client's id put on it); notifications and server requests go out in the recorded order,
//!   held at each answer until the client has asked for it. A client that asks in another
//!   order is answered in its own: the recorded answers it has not asked for are passed (and
//!   reported as never asked) when it waits for a later one;
//! - a server request waits for the client's answer before the session goes on, and the
//!   answer is checked against the recorded one when the source has it;
//! - a request the session has no answer for gets an error and is reported, as is a thread
//!   id the session never served;
//! - what it saw is rewritten to `DIR/served/N.json` after every message, so a mock killed
//!   by the check's time limit still leaves it; it exits when the client closes its stdin,
//!   at an `exit` step, or after the script's deadline.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::app_server::message::{Message, RequestId, RpcError};
use crate::client_check::script::{Reply, Script, Step};

/// The hidden subcommand the shim runs.
pub const SERVE_COMMAND: &str = "client-check-serve";

/// The error code and message of an overloaded app-server (codex's README).
pub const OVERLOADED: (i64, &str) = (-32001, "Server overloaded; retry later.");

/// What one launch of the mock saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Served {
    /// Which launch it was, from 1.
    pub launch: usize,
    /// The arguments after `codex`.
    pub args: Vec<String>,
    /// How many messages it sent.
    pub sent: usize,
    /// The methods the client requested, in order.
    pub requests: Vec<String>,
    /// Client requests the session has no answer for.
    pub unmatched: Vec<String>,
    /// Server requests sent and never answered.
    pub unanswered: Vec<String>,
    /// Answers to server requests that differ from the recorded ones.
    pub answers_differ: Vec<String>,
    /// Recorded answers passed because the client never asked for them.
    pub not_asked: Vec<String>,
    /// Client requests naming a thread the session never served.
    pub foreign_threads: Vec<String>,
    /// Lines from the client that were not JSON-RPC.
    pub malformed: Vec<String>,
    /// How many of the session's steps were never reached, and the first of them.
    pub not_reached: usize,
    /// The first step never reached (its method).
    pub next: Option<String>,
    /// How it ended (`None` while it runs).
    pub ended: Option<String>,
}

/// The launches' records, in `DIR/served/`.
pub fn served_dir(dir: &Path) -> PathBuf {
    dir.join("served")
}

/// The check's script, in its directory.
pub fn script_path(dir: &Path) -> PathBuf {
    dir.join("script.json")
}

/// Every launch's record under `dir`, in launch order.
pub fn read_served(dir: &Path) -> Vec<Served> {
    let mut all: Vec<Served> = std::fs::read_dir(served_dir(dir))
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_to_string(e.path()).ok())
                .filter_map(|t| serde_json::from_str(&t).ok())
                .collect()
        })
        .unwrap_or_default();
    all.sort_by_key(|s| s.launch);
    all
}

/// Serves one launch (see the module docs); returns the exit status.
pub fn serve(dir: &Path, args: Vec<OsString>) -> anyhow::Result<i32> {
    let script = Script::read(&script_path(dir))?;
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match args.first().map(String::as_str) {
        Some("app-server") => {}
        Some("--version") | Some("-V") => {
            println!("codex-cli {}", script.codex_version);
            return Ok(0);
        }
        _ => {
            eprintln!(
                "codex-parity client-check: this codex only serves `codex app-server` (the \
                 session from {}); `codex {}` is not part of it",
                script.origin,
                args.join(" ")
            );
            return Ok(2);
        }
    }
    let (launch, path) = claim(dir)?;
    let mut served = Served {
        launch,
        args,
        ..Served::default()
    };
    let Some(steps) = script.connections.get(launch - 1) else {
        let why = format!(
            "app-server launch {launch}: the session has only {} app-server connection(s)",
            script.connections.len()
        );
        eprintln!("codex-parity client-check: {why}");
        served.ended = Some(why);
        save(&path, &served)?;
        return Ok(1);
    };
    let mut mock = Mock {
        steps,
        consumed: vec![false; steps.len()],
        cursor: 0,
        pending: Vec::new(),
        awaiting: HashMap::new(),
        next_id: 0,
        overload: false,
        threads: thread_ids(&script),
        gap: Duration::from_millis(script.gap_ms),
        out: std::io::stdout().lock(),
        served,
        path,
    };
    let deadline = Instant::now() + Duration::from_secs(script.deadline_secs.max(1));
    let lines = read_lines();
    let code = mock.run(&lines, deadline);
    mock.finish()?;
    Ok(code)
}

/// Takes the next launch number: the first `served/N.json` that did not exist.
fn claim(dir: &Path) -> anyhow::Result<(usize, PathBuf)> {
    let folder = served_dir(dir);
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    for n in 1.. {
        let path = folder.join(format!("{n}.json"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(_) => return Ok((n, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
    anyhow::bail!("no launch number left")
}

/// Stdin's lines, read on a thread of their own (`None` at the end).
fn read_lines() -> mpsc::Receiver<Option<String>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(Some(line)).is_err() {
                return;
            }
        }
        let _ = tx.send(None);
    });
    rx
}

/// Every thread id the session serves, on any connection.
fn thread_ids(script: &Script) -> BTreeSet<String> {
    fn walk(value: &Value, key: Option<&str>, out: &mut BTreeSet<String>) {
        match value {
            Value::Object(obj) => {
                for (k, v) in obj {
                    if k == "thread"
                        && let Some(id) = v.get("id").and_then(Value::as_str)
                    {
                        out.insert(id.to_string());
                    }
                    walk(v, Some(k), out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, key, out)),
            Value::String(s) if key == Some("threadId") => {
                out.insert(s.clone());
            }
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    for step in script.connections.iter().flatten() {
        match step {
            Step::Notify { params, .. } | Step::Ask { params, .. } => walk(params, None, &mut out),
            Step::Answer {
                reply: Reply::Result(result),
                ..
            } => walk(result, None, &mut out),
            _ => {}
        }
    }
    out
}

fn save(path: &Path, served: &Served) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    let text = serde_json::to_string_pretty(served).context("serialising what was served")?;
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// A client request waiting for its answer.
struct Pending {
    id: RequestId,
    target: usize,
}

/// One launch being served.
struct Mock<'a> {
    steps: &'a [Step],
    consumed: Vec<bool>,
    cursor: usize,
    pending: Vec<Pending>,
    /// Server requests sent and not answered: their method and the recorded answer.
    awaiting: HashMap<RequestId, (String, Option<Value>)>,
    next_id: i64,
    overload: bool,
    threads: BTreeSet<String>,
    gap: Duration,
    out: std::io::StdoutLock<'static>,
    served: Served,
    path: PathBuf,
}

impl Mock<'_> {
    /// Serves until the end; the exit status.
    fn run(&mut self, lines: &mpsc::Receiver<Option<String>>, deadline: Instant) -> i32 {
        loop {
            match self.advance() {
                Ok(Some(code)) => {
                    self.served.ended = Some(format!("exited with status {code} mid-session"));
                    return code;
                }
                Ok(None) => {}
                Err(_) => {
                    self.served.ended = Some("the client stopped reading codex's stdout".into());
                    return 0;
                }
            }
            let _ = save(&self.path, &self.served);
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(Some(line)) => {
                    if self.incoming(&line).is_err() {
                        self.served.ended =
                            Some("the client stopped reading codex's stdout".into());
                        return 0;
                    }
                }
                Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.served.ended = Some("the client closed codex's stdin".into());
                    return 0;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.served.ended = Some("the mock's deadline passed".into());
                    return 1;
                }
            }
        }
    }

    /// Sends what can be sent; `Some(code)` at an exit step.
    fn advance(&mut self) -> std::io::Result<Option<i32>> {
        while self.cursor < self.steps.len() {
            let at = self.cursor;
            if self.consumed[at] {
                self.cursor += 1;
                continue;
            }
            if !self.awaiting.is_empty() {
                return Ok(None);
            }
            match &self.steps[at] {
                Step::Notify {
                    method,
                    params,
                    extra,
                } => {
                    let message = Message::Notification {
                        method: method.clone(),
                        params: params.clone(),
                        extra: extra.clone(),
                    };
                    self.send(&message)?;
                    self.cursor += 1;
                }
                Step::Ask {
                    method,
                    params,
                    expected,
                } => {
                    let id = RequestId::Integer(self.next_id);
                    self.next_id += 1;
                    self.awaiting
                        .insert(id.clone(), (method.clone(), expected.clone()));
                    self.served.unanswered.push(method.clone());
                    let message = Message::Request {
                        id,
                        method: method.clone(),
                        params: params.clone(),
                    };
                    self.send(&message)?;
                    self.cursor += 1;
                }
                Step::Overload => {
                    self.overload = true;
                    self.cursor += 1;
                }
                Step::Exit { code } => {
                    self.out.flush()?;
                    eprintln!(
                        "codex-parity client-check: the app-server exits mid-turn (exit-mid-turn)"
                    );
                    return Ok(Some(*code));
                }
                Step::Answer { .. } => {
                    if let Some(p) = self.pending.iter().position(|p| p.target == at) {
                        self.reply(p)?;
                    } else if self.pending.iter().any(|p| p.target > at) {
                        self.cursor += 1;
                    } else {
                        return Ok(None);
                    }
                }
            }
        }
        Ok(None)
    }

    /// Handles one line from the client.
    fn incoming(&mut self, line: &str) -> std::io::Result<()> {
        match Message::parse(line) {
            Err(e) => {
                self.served.malformed.push(format!("{e}"));
                let error = RpcError {
                    code: RpcError::PARSE_ERROR,
                    message: format!("not a JSON-RPC message: {e}"),
                    data: None,
                };
                self.send(&Message::Error { id: None, error })?;
            }
            Ok(Message::Request { id, method, params }) => {
                self.served.requests.push(method.clone());
                if let Some(thread) = params.get("threadId").and_then(Value::as_str)
                    && !self.threads.is_empty()
                    && !self.threads.contains(thread)
                {
                    self.served.foreign_threads.push(format!(
                        "{method} names thread {thread}, which the session never served"
                    ));
                }
                let taken = |i: usize| self.pending.iter().any(|p| p.target == i);
                let target = (0..self.steps.len())
                    .find(|&i| self.steps[i].answers(&method) && !self.consumed[i] && !taken(i));
                match target {
                    None => {
                        self.served.unmatched.push(method.clone());
                        let error = RpcError {
                            code: RpcError::INVALID_REQUEST,
                            message: format!(
                                "codex-parity client-check: the recorded session has no \
                                 (further) answer to {method}"
                            ),
                            data: None,
                        };
                        self.send(&Message::Error {
                            id: Some(id),
                            error,
                        })?;
                    }
                    Some(target) => {
                        self.pending.push(Pending { id, target });
                        if target < self.cursor {
                            self.reply(self.pending.len() - 1)?;
                        }
                    }
                }
            }
            Ok(Message::Notification { .. }) => {}
            Ok(Message::Response { id, result }) => self.answered(&id, json!({"result": result})),
            Ok(Message::Error {
                id: Some(id),
                error,
            }) => self.answered(&id, json!({"error": error})),
            Ok(Message::Error { id: None, error }) => {
                self.served
                    .malformed
                    .push(format!("an error without an id: {error}"));
            }
        }
        Ok(())
    }

    /// The client answered a server request.
    fn answered(&mut self, id: &RequestId, answer: Value) {
        let Some((method, expected)) = self.awaiting.remove(id) else {
            self.served
                .malformed
                .push(format!("an answer to {id}, which codex never asked"));
            return;
        };
        if let Some(i) = self.served.unanswered.iter().position(|m| *m == method) {
            self.served.unanswered.remove(i);
        }
        if let Some(expected) = expected
            && differs(&expected, &answer)
        {
            self.served.answers_differ.push(format!(
                "{method} answered with {answer}; the recording has {expected}"
            ));
        }
    }

    /// Answers pending request `p` from its target step (or with -32001 when overloaded).
    fn reply(&mut self, p: usize) -> std::io::Result<()> {
        let pending = self.pending.remove(p);
        if self.overload {
            self.overload = false;
            let error = RpcError {
                code: OVERLOADED.0,
                message: OVERLOADED.1.into(),
                data: None,
            };
            return self.send(&Message::Error {
                id: Some(pending.id),
                error,
            });
        }
        self.consumed[pending.target] = true;
        let Step::Answer { reply, .. } = &self.steps[pending.target] else {
            return Ok(());
        };
        let message = match reply {
            Reply::Result(result) => Message::Response {
                id: pending.id,
                result: result.clone(),
            },
            Reply::Error(error) => Message::Error {
                id: Some(pending.id),
                error: error.clone(),
            },
            Reply::Silence => return Ok(()),
        };
        self.send(&message)
    }

    fn send(&mut self, message: &Message) -> std::io::Result<()> {
        if !self.gap.is_zero() {
            std::thread::sleep(self.gap);
        }
        writeln!(self.out, "{}", message.to_line())?;
        self.out.flush()?;
        self.served.sent += 1;
        Ok(())
    }

    /// Notes what the client never asked for or never got, and saves the record.
    fn finish(&mut self) -> anyhow::Result<()> {
        for (i, step) in self.steps.iter().enumerate() {
            if let Step::Answer { method, .. } = step
                && !self.consumed[i]
                && i < self.cursor
            {
                self.served.not_asked.push(method.clone());
            }
        }
        let rest = &self.steps[self.cursor.min(self.steps.len())..];
        self.served.not_reached = rest.len();
        self.served.next = rest
            .iter()
            .find_map(|s| s.method().map(|m| format!("{} {m}", kind(s))));
        save(&self.path, &self.served)
    }
}

/// The kind of a step, as reports name it.
fn kind(step: &Step) -> &'static str {
    match step {
        Step::Answer { .. } => "the answer to",
        Step::Notify { .. } => "the notification",
        Step::Ask { .. } => "the server request",
        Step::Overload | Step::Exit { .. } => "",
    }
}

/// Whether an answer differs from the recorded one: a result for an error or the other way
/// round, another result, or another error code.
fn differs(expected: &Value, got: &Value) -> bool {
    match (expected.get("result"), got.get("result")) {
        (Some(a), Some(b)) => a != b,
        (None, None) => expected.pointer("/error/code") != got.pointer("/error/code"),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_differ_by_kind_result_or_error_code() {
        let accept = json!({"result": {"decision": "accept"}});
        assert!(!differs(
            &accept,
            &json!({"result": {"decision": "accept"}})
        ));
        assert!(differs(
            &accept,
            &json!({"result": {"decision": "decline"}})
        ));
        assert!(differs(
            &accept,
            &json!({"error": {"code": -1, "message": "x"}})
        ));
        let refused = json!({"error": {"code": -32601, "message": "a"}});
        assert!(!differs(
            &refused,
            &json!({"error": {"code": -32601, "message": "b"}})
        ));
    }

    #[test]
    fn thread_ids_are_read_from_every_connection() {
        let script = Script {
            connections: vec![
                vec![Step::Answer {
                    method: "thread/start".into(),
                    reply: Reply::Result(json!({"thread": {"id": "t1"}})),
                }],
                vec![Step::Notify {
                    method: "turn/started".into(),
                    params: json!({"threadId": "t2"}),
                    extra: Default::default(),
                }],
            ],
            ..Script::default()
        };
        assert_eq!(
            thread_ids(&script).into_iter().collect::<Vec<_>>(),
            vec!["t1".to_string(), "t2".to_string()]
        );
    }
}
