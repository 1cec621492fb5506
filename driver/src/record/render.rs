//! A recorded scenario file: a [`Draft`] (what [`crate::record::writer`] made of the
//! recording) becomes the scenario-file model ([`ScenarioFile`]) with comments saying where
//! each part came from (the header: command, version, upstream, redaction, a warning when
//! the client failed; each response, step and check; the notes), passes the redactor whole,
//! and is written by `crate::scenario_file::write`, the code the reader reads back.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::record::exchange::{End, Exchange, Micros, Transport};
use crate::record::redact::Redactor;
use crate::scenario_file::checks::Check;
use crate::scenario_file::checks::messages::ServerRequestCheck;
use crate::scenario_file::checks::requests::RequestsCheck;
use crate::scenario_file::format::{CodexSection, Requires, ScenarioFile};
use crate::scenario_file::steps::Step;
use crate::scenario_file::steps::reply::ReplyStep;
use crate::scenario_file::write::{Comments, write};

/// What the file says about where it came from.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    /// The scenario's `name`.
    pub name: String,
    /// Its `id`.
    pub id: String,
    /// The client's command line.
    pub command: Vec<String>,
    /// The codex version recorded.
    pub codex_version: String,
    /// Where model requests went.
    pub upstream: String,
    /// The day of the recording (`2026-12-02`).
    pub date: String,
    /// The client's exit status (`None`: a signal ended it).
    pub client_exit: Option<i32>,
    /// The recording's private `CODEX_HOME` (written as `$home`).
    pub home: PathBuf,
    /// The config the recording ran with: `approval_policy` and `sandbox_mode`.
    pub approval_policy: String,
    /// See [`Meta::approval_policy`].
    pub sandbox_mode: String,
    /// Keep every event's recorded gap.
    pub timing: bool,
    /// Notes of the recorder's own, written with the writer's.
    pub notes: Vec<String>,
}

/// How the client answered a server request.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Answer {
    Result(Value),
    Error(Value),
    Unanswered,
}

impl Answer {
    /// The standing `reply` step for `method` that answers so.
    fn reply(&self, method: &str) -> Step {
        let mut reply = ReplyStep {
            method: method.to_string(),
            ..ReplyStep::default()
        };
        match self {
            Answer::Result(v) => reply.result = Some(v.clone()),
            Answer::Error(v) => reply.error = Some(v.clone()),
            Answer::Unanswered => reply.unanswered = true,
        }
        Step::Reply(reply)
    }
}

/// One step of the draft: when the client acted, the step, and where it came from.
#[derive(Debug, Clone)]
pub(super) struct DraftStep {
    pub(super) at: Micros,
    pub(super) step: Step,
    pub(super) comment: String,
}

/// What the writer made of a recording, before it is a file: the scripted responses, the
/// steps in order (with the replies to place before each), and what the checks count.
#[derive(Default)]
pub(super) struct Draft<'a> {
    pub(super) exchanges: Vec<&'a Exchange>,
    pub(super) steps: Vec<DraftStep>,
    pub(super) thread_table: Option<Map<String, Value>>,
    pub(super) experimental_api: Option<bool>,
    pub(super) replies_before: BTreeMap<usize, Vec<(String, Answer)>>,
    pub(super) server_requests: BTreeMap<String, usize>,
    pub(super) gates: BTreeMap<usize, (String, usize)>,
    pub(super) notes: Vec<String>,
    pub(super) origin: Micros,
}

/// Keys of a response object that echo the request (the instructions and the tool list):
/// left out of recorded events, which stay readable; codex does not read them back.
const ECHOED: &[&str] = &["instructions", "tools"];

impl Draft<'_> {
    /// The file's text: the model and its comments, every string of both through the
    /// redactor (the header says how many replacements it made).
    pub(super) fn render(&mut self, meta: &Meta, redactor: &mut Redactor) -> String {
        let command = redactor.text(&meta.command.join(" "));
        let upstream = redactor.text(&meta.upstream);
        let (file, mut comments) = self.model(meta, &command);
        let file = match ScenarioFile::from_json(&redactor.value(&file.to_json())) {
            Ok(redacted) => redacted,
            // A redaction that broke the model's shape (a pattern that matched a key the
            // model needs): the guard behind it refuses the text.
            Err(_) => file,
        };
        for list in [
            &mut comments.responses,
            &mut comments.steps,
            &mut comments.checks,
            &mut comments.notes,
        ] {
            for c in list.iter_mut() {
                *c = redactor.text(c);
            }
        }
        comments.header = header(meta, &command, &upstream, redactor);
        write(&file, &comments)
    }

    /// The model of the recording and its comments (nothing redacted yet).
    fn model(&mut self, meta: &Meta, command: &str) -> (ScenarioFile, Comments) {
        let mut comments = Comments::default();
        let mut file = ScenarioFile {
            name: meta.name.clone(),
            id: meta.id.clone(),
            summary: format!("recorded from {command}"),
            requires: self.requires(),
            codex: self.codex(meta),
            ..ScenarioFile::default()
        };
        let app_server = self.steps.iter().any(|s| s.step.needs_app_server());
        match &self.thread_table {
            // A file of exec runs starts no app-server, and so no thread.
            None if !app_server => {}
            None => {
                file.start_thread = Some(false);
                comments.start_thread = Some("the client started its thread itself".into());
            }
            Some(table) if !table.is_empty() => {
                file.thread = Some(table.clone());
                comments.thread = Some("the client's thread/start".into());
            }
            Some(_) => {}
        }
        if !file.requires.is_empty() {
            comments.requires = Some("what the session used".into());
        }
        if !file.codex.is_empty() {
            comments.codex = Some("as the recording ran".into());
        }
        let mut trimmed = false;
        for (pos, e) in self.exchanges.clone().iter().enumerate() {
            let (json, t) = self.response(pos, e, meta);
            trimmed |= t;
            file.responses.push(json);
            comments.responses.push(describe(e, pos, self.origin));
        }
        if trimmed {
            self.notes.push("the response objects of created/completed events are written without the instructions and tools they echo".into());
        }
        let mut registered: HashMap<String, Answer> = HashMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            for (method, answer) in self.replies_before.get(&i).cloned().unwrap_or_default() {
                if registered.get(&method) == Some(&answer) {
                    continue;
                }
                file.steps.push(answer.reply(&method));
                comments
                    .steps
                    .push(format!("the client's answer to codex's {method}"));
                registered.insert(method, answer);
            }
            file.steps.push(step.step.clone());
            comments.steps.push(step.comment.clone());
        }
        let model = self
            .exchanges
            .iter()
            .filter(|e| e.is_model_request())
            .count();
        file.checks.push(Check::Requests(RequestsCheck {
            count: model,
            drift: None,
        }));
        comments
            .checks
            .push("codex sent this many model requests".into());
        for (method, n) in &self.server_requests {
            file.checks
                .push(Check::ServerRequest(ServerRequestCheck::new(
                    method,
                    None,
                    Some(*n),
                )));
            comments.checks.push("codex asked the client this".into());
        }
        comments.notes = self.notes.clone();
        (file, comments)
    }

    /// `[codex]`: what the recording ran with that is not the default.
    fn codex(&self, meta: &Meta) -> CodexSection {
        let websocket = self
            .exchanges
            .iter()
            .any(|e| matches!(e.transport, Transport::WebSocket { .. }));
        CodexSection {
            approval_policy: (meta.approval_policy != "never")
                .then(|| meta.approval_policy.clone()),
            sandbox_mode: (meta.sandbox_mode != "danger-full-access")
                .then(|| meta.sandbox_mode.clone()),
            experimental_api: (self.experimental_api == Some(false)).then_some(false),
            websocket: websocket.then_some(true),
            ..CodexSection::default()
        }
    }

    /// `[requires]`: the client requests the steps send and the server requests the client
    /// answered, so that a codex without one reports the file not applicable, naming it.
    fn requires(&self) -> Requires {
        let mut methods: Vec<String> = self
            .steps
            .iter()
            .filter_map(|s| match &s.step {
                Step::Request(r) => Some(r.method.clone()),
                Step::Turn(_) => Some("turn/start".into()),
                Step::Steer(_) => Some("turn/steer".into()),
                Step::Interrupt(_) => Some("turn/interrupt".into()),
                _ => None,
            })
            .collect();
        if self.thread_table.is_some() {
            methods.push("thread/start".into());
        }
        methods.sort_unstable();
        methods.dedup();
        Requires {
            methods,
            server_requests: self.server_requests.keys().cloned().collect(),
            ..Requires::default()
        }
    }

    /// One scripted response in the sidecar's JSON form, and whether echoes were trimmed.
    fn response(&self, pos: usize, e: &Exchange, meta: &Meta) -> (Value, bool) {
        let parse = |body: &Option<String>| -> Value {
            let text = body.clone().unwrap_or_default();
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if e.is_compaction() {
            let v = json!({"status": e.status, "endpoint": "compact", "body": parse(&e.body)});
            return (v, false);
        }
        // Codex went away first (before any answer, its status is the proxy's own): the
        // replay holds the response open after what codex got, until codex goes again.
        let abandoned = matches!(e.end, End::ClientClosed { .. });
        if !abandoned
            && (e.status != 200 && e.status != 101 || matches!(e.end, End::UpstreamError { .. }))
        {
            return (json!({"status": e.status, "body": parse(&e.body)}), false);
        }
        let mut trimmed = false;
        let events: Vec<Value> = e
            .events
            .iter()
            .map(|(_, ev)| {
                let mut ev = ev.clone();
                if let Some(r) = ev.get_mut("response").and_then(Value::as_object_mut) {
                    for k in ECHOED {
                        trimmed |= r.remove(*k).is_some();
                    }
                }
                ev
            })
            .collect();
        let mut v = Map::new();
        v.insert("events".into(), Value::Array(events));
        if meta.timing {
            let mut last = e.request_at;
            let gaps: Vec<u64> = e
                .events
                .iter()
                .map(|(t, _)| {
                    let gap = t.saturating_sub(last) / 1000;
                    last = *t;
                    gap
                })
                .collect();
            v.insert("gap_ms".into(), json!(gaps));
        }
        if let Some((gate, event)) = self.gates.get(&pos) {
            v.insert("gates".into(), json!({gate.as_str(): event}));
        }
        match e.end {
            End::ClientClosed { .. } => {
                v.insert("stall_after".into(), json!(e.events.len()));
            }
            End::UpstreamClosed { .. } => {
                v.insert("disconnect_after".into(), json!(e.events.len()));
            }
            _ => {}
        }
        (Value::Object(v), trimmed)
    }
}

/// The header: where the file came from and what was redacted (the count is the
/// redactor's, so the header is made last).
fn header(meta: &Meta, command: &str, upstream: &str, redactor: &Redactor) -> Vec<String> {
    let mut lines = vec![
        format!(
            "Recorded by `codex-parity record` on {} from: {command}",
            meta.date
        ),
        format!(
            "codex {}; model requests forwarded to {upstream} and answered as recorded below.",
            meta.codex_version
        ),
    ];
    match meta.client_exit {
        Some(0) => {}
        Some(code) => lines.push(format!(
            "WARNING: the client exited with status {code}: this session may be incomplete."
        )),
        None => {
            lines.push("WARNING: a signal ended the client: this session may be incomplete.".into())
        }
    }
    lines.push(
        "Never written: credentials, cookies, account and organisation ids, and any header not \
         known to be safe."
            .into(),
    );
    let patterns = match redactor.pattern_count() {
        0 => ".".to_string(),
        n => format!(" and the matches of {n} --redact pattern(s)."),
    };
    lines.push(format!(
        "Replaced by <redacted> ({} replaced): the values of your environment's secret \
         variables, secret-shaped values (keys, bearer tokens, JWTs){patterns}",
        redactor.matched()
    ));
    lines
}

/// A response's comment: which request it answers and how it went.
fn describe(e: &Exchange, pos: usize, origin: Micros) -> String {
    let transport = match e.transport {
        Transport::Http => "HTTP",
        Transport::WebSocket { .. } => "WebSocket",
    };
    let span = e
        .events
        .last()
        .map_or(0, |(t, _)| t.saturating_sub(e.request_at));
    let end = match &e.end {
        End::Completed => String::new(),
        End::ClientClosed { .. } => ", then codex went away".into(),
        End::UpstreamClosed { .. } => ", then the upstream closed".into(),
        End::UpstreamError { message } => format!(", upstream error: {message}"),
    };
    format!(
        "model request #{}, +{:.2} s: {} {} ({transport}), {} event(s) over {:.2} s{end}",
        pos + 1,
        e.request_at.saturating_sub(origin) as f64 / 1e6,
        e.method,
        e.path,
        e.events.len(),
        span as f64 / 1e6
    )
}
