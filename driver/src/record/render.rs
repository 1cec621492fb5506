//! The text of a recorded scenario file: a [`Draft`] (what [`crate::record::writer`] made
//! of the recording) written as TOML with comments saying where each part came from, the
//! header (command, version, upstream, redaction, a warning when the client failed), the
//! responses as the sidecar's JSON one event per line, the steps, the checks and the notes.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::record::exchange::{End, Exchange, Micros, Transport};
use crate::record::redact::Redactor;
use crate::record::toml_text::{block, comment, key, string, value};

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

#[derive(Debug, Clone)]
pub(super) enum Kind {
    Request {
        method: String,
        params: Value,
        expect_error: Option<Value>,
    },
    Turn {
        thread: Option<String>,
        input: Value,
        params: Map<String, Value>,
        wait: bool,
        expect: Map<String, Value>,
    },
    WaitTurn {
        turn: String,
        expect: Map<String, Value>,
    },
    /// `turn/steer` (with its input) or `turn/interrupt` (without): `do` is the method's
    /// last segment.
    Control {
        method: String,
        thread: Option<String>,
        turn: String,
        input: Option<Value>,
        expect: Option<Value>,
        expect_error: Option<Value>,
    },
    WaitRequests(usize),
    Release(String),
    Restart,
}

#[derive(Debug, Clone)]
pub(super) struct Step {
    pub(super) at: Micros,
    pub(super) kind: Kind,
    pub(super) comment: String,
    pub(super) capture: Vec<(String, String)>,
}

/// What the writer made of a recording, before it is text: the scripted responses, the
/// steps in order (with the replies to place before each), and what the checks count.
#[derive(Default)]
pub(super) struct Draft<'a> {
    pub(super) exchanges: Vec<&'a Exchange>,
    pub(super) steps: Vec<Step>,
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
    pub(super) fn render(&mut self, meta: &Meta, redactor: &mut Redactor) -> String {
        let mut out = String::new();
        // Everything written passes the redactor: the command line may carry a secret in an
        // argument, the upstream in its address.
        let command = redactor.text(&meta.command.join(" "));
        out.push_str(&format!(
            "# Recorded by `codex-parity record` on {} from: {}\n",
            meta.date,
            comment(&command)
        ));
        out.push_str(&format!(
            "# codex {}; model requests forwarded to {} and answered as recorded below.\n",
            comment(&meta.codex_version),
            comment(&redactor.text(&meta.upstream))
        ));
        match meta.client_exit {
            Some(0) => {}
            Some(code) => out.push_str(&format!(
                "# WARNING: the client exited with status {code}: this session may be incomplete.\n"
            )),
            None => out.push_str(
                "# WARNING: a signal ended the client: this session may be incomplete.\n",
            ),
        }
        out.push_str(
            "# Never written: credentials, cookies, account and organisation ids, and any header \
             not known to be safe.\n# Replaced by <redacted> (\u{0}COUNT\u{0}): the values of \
             your environment's secret variables, secret-shaped values (keys, bearer tokens, JWTs)",
        );
        match redactor.pattern_count() {
            0 => out.push_str(".\n"),
            n => out.push_str(&format!(" and the matches of {n} --redact pattern(s).\n")),
        }
        out.push_str(&format!(
            "name = {}\nid = {}\nsummary = {}\n",
            string(&redactor.text(&meta.name)),
            string(&redactor.text(&meta.id)),
            string(&format!("recorded from {command}"))
        ));
        if self.thread_table.is_none() {
            out.push_str(
                "start_thread = false            # the client started its thread itself\n",
            );
        }
        out.push_str(&self.requires());
        let websocket = self
            .exchanges
            .iter()
            .any(|e| matches!(e.transport, Transport::WebSocket { .. }));
        let mut codex = Vec::new();
        if meta.approval_policy != "never" {
            codex.push(format!(
                "approval_policy = {}",
                string(&meta.approval_policy)
            ));
        }
        if meta.sandbox_mode != "danger-full-access" {
            codex.push(format!("sandbox_mode = {}", string(&meta.sandbox_mode)));
        }
        if self.experimental_api == Some(false) {
            codex.push("experimental_api = false".into());
        }
        if websocket {
            codex.push("websocket = true".into());
        }
        if !codex.is_empty() {
            out.push_str("\n[codex]                          # as the recording ran\n");
            for line in codex {
                out.push_str(&line);
                out.push('\n');
            }
        }
        if let Some(table) = self.thread_table.clone().filter(|t| !t.is_empty()) {
            out.push_str("\n[thread]                         # the client's thread/start\n");
            for (k, v) in &table {
                let v = redactor.value(v);
                out.push_str(&format!("{} = {}\n", key(&redactor.text(k)), value(&v)));
            }
        }
        let mut trimmed = false;
        let exchanges = self.exchanges.clone();
        for (pos, e) in exchanges.iter().enumerate() {
            let (json, t) = self.response(pos, e, meta, redactor);
            trimmed |= t;
            out.push_str(&format!(
                "\n[[response]]                     # {}\njson = {}\n",
                comment(&redactor.text(&describe(e, pos, self.origin))),
                block(&json)
            ));
        }
        if trimmed {
            self.notes.push("the response objects of created/completed events are written without the instructions and tools they echo".into());
        }
        let mut registered: HashMap<String, Answer> = HashMap::new();
        for (i, step) in self.steps.clone().iter().enumerate() {
            for (method, answer) in self.replies_before.get(&i).cloned().unwrap_or_default() {
                if registered.get(&method) == Some(&answer) {
                    continue;
                }
                let named = redactor.text(&method);
                out.push_str(&format!(
                    "\n[[step]]                         # the client's answer to codex's {}\n\
                     do = \"reply\"\nmethod = {}\n",
                    comment(&named),
                    string(&named)
                ));
                match &answer {
                    Answer::Result(v) => {
                        out.push_str(&format!("result = {}\n", value(&redactor.value(v))))
                    }
                    Answer::Error(v) => {
                        out.push_str(&format!("error = {}\n", value(&redactor.value(v))))
                    }
                    Answer::Unanswered => out.push_str("unanswered = true\n"),
                }
                registered.insert(method, answer);
            }
            out.push_str(&format!(
                "\n[[step]]                         # {}\n",
                comment(&redactor.text(&step.comment))
            ));
            out.push_str(&step_body(step, redactor));
        }
        let model = self
            .exchanges
            .iter()
            .filter(|e| e.is_model_request())
            .count();
        out.push_str(&format!("\n[[check]]                        # codex sent this many model requests\non = \"requests\"\ncount = {model}\n"));
        for (method, n) in &self.server_requests {
            out.push_str(&format!("\n[[check]]                        # codex asked the client this\non = \"server_request\"\nmethod = {}\ncount = {n}\n", string(&redactor.text(method))));
        }
        if !self.notes.is_empty() {
            out.push_str("\n# Notes:\n");
            for n in self.notes.clone() {
                out.push_str(&format!("# - {}\n", comment(&redactor.text(&n))));
            }
        }
        // The count is only known now; the marker holds a NUL, which no escaped text can.
        out.replace(
            "\u{0}COUNT\u{0}",
            &format!("{} replaced", redactor.matched()),
        )
    }

    /// `[requires]`: the client requests the steps send and the server requests the client
    /// answered, so that a codex without one reports the file not applicable, naming it.
    fn requires(&self) -> String {
        let mut methods: Vec<&str> = self
            .steps
            .iter()
            .filter_map(|s| match &s.kind {
                Kind::Request { method, .. } => Some(method.as_str()),
                Kind::Turn { .. } => Some("turn/start"),
                Kind::Control { method, .. } => Some(method.as_str()),
                _ => None,
            })
            .collect();
        if self.thread_table.is_some() {
            methods.push("thread/start");
        }
        methods.sort_unstable();
        methods.dedup();
        let list = |items: Vec<&str>| value(&json!(items));
        let mut out = format!(
            "\n[requires]                       # what the session used\nmethods = {}\n",
            list(methods)
        );
        if !self.server_requests.is_empty() {
            let answered = self.server_requests.keys().map(String::as_str).collect();
            out.push_str(&format!("server_requests = {}\n", list(answered)));
        }
        out
    }

    /// One scripted response as the sidecar's JSON text, and whether echoes were trimmed.
    fn response(
        &self,
        pos: usize,
        e: &Exchange,
        meta: &Meta,
        redactor: &mut Redactor,
    ) -> (String, bool) {
        let parse = |body: &Option<String>| -> Value {
            let text = body.clone().unwrap_or_default();
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if e.is_compaction() {
            let v = json!({"status": e.status, "endpoint": "compact", "body": redactor.value(&parse(&e.body))});
            return (escape(&v).to_string(), false);
        }
        // Codex went away first (before any answer, its status is the proxy's own): the
        // replay holds the response open after what codex got, until codex goes again.
        let abandoned = matches!(e.end, End::ClientClosed { .. });
        if !abandoned
            && (e.status != 200 && e.status != 101 || matches!(e.end, End::UpstreamError { .. }))
        {
            let v = json!({"status": e.status, "body": redactor.value(&parse(&e.body))});
            return (escape(&v).to_string(), false);
        }
        let mut trimmed = false;
        let events: Vec<String> = e
            .events
            .iter()
            .map(|(_, ev)| {
                let mut ev = ev.clone();
                if let Some(r) = ev.get_mut("response").and_then(Value::as_object_mut) {
                    for k in ECHOED {
                        trimmed |= r.remove(*k).is_some();
                    }
                }
                format!("  {}", escape(&redactor.value(&ev)))
            })
            .collect();
        let mut extra = Vec::new();
        if meta.timing {
            let mut last = e.request_at;
            let gaps: Vec<String> = e
                .events
                .iter()
                .map(|(t, _)| {
                    let gap = t.saturating_sub(last) / 1000;
                    last = *t;
                    gap.to_string()
                })
                .collect();
            extra.push(format!("\"gap_ms\": [{}]", gaps.join(", ")));
        }
        if let Some((gate, event)) = self.gates.get(&pos) {
            extra.push(format!("\"gates\": {{\"{gate}\": {event}}}"));
        }
        match e.end {
            End::ClientClosed { .. } => extra.push(format!("\"stall_after\": {}", e.events.len())),
            End::UpstreamClosed { .. } => {
                extra.push(format!("\"disconnect_after\": {}", e.events.len()))
            }
            _ => {}
        }
        let extra = extra.iter().map(|x| format!(",\n {x}")).collect::<String>();
        (
            format!("{{\"events\": [\n{}\n]{extra}}}\n", events.join(",\n")),
            trimmed,
        )
    }
}

/// A step's keys, one per line.
fn step_body(step: &Step, redactor: &mut Redactor) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut kv = |k: &str, v: &Value| lines.push(format!("{k} = {}", value(&redactor.value(v))));
    match &step.kind {
        Kind::Request {
            method,
            params,
            expect_error,
        } => {
            kv("do", &json!("request"));
            kv("method", &json!(method));
            kv("params", params);
            if let Some(e) = expect_error {
                kv("expect_error", e);
            }
        }
        Kind::Turn {
            thread,
            input,
            params,
            wait,
            expect,
        } => {
            kv("do", &json!("turn"));
            if let Some(t) = thread {
                kv("thread", &json!(t));
            }
            kv("input", input);
            if !params.is_empty() {
                kv("params", &Value::Object(params.clone()));
            }
            if !wait {
                kv("wait", &json!(false));
            }
            if !expect.is_empty() {
                kv("expect", &Value::Object(expect.clone()));
            }
        }
        Kind::WaitTurn { turn, expect } => {
            kv("do", &json!("wait_turn"));
            kv("turn", &json!(turn));
            if !expect.is_empty() {
                kv("expect", &Value::Object(expect.clone()));
            }
        }
        Kind::Control {
            method,
            thread,
            turn,
            input,
            expect,
            expect_error,
        } => {
            kv("do", &json!(method.trim_start_matches("turn/")));
            if let Some(t) = thread {
                kv("thread", &json!(t));
            }
            kv("turn", &json!(turn));
            if let Some(i) = input {
                kv("input", i);
            }
            if let Some(e) = expect {
                kv("expect", e);
            }
            if let Some(e) = expect_error {
                kv("expect_error", e);
            }
        }
        Kind::WaitRequests(n) => {
            kv("do", &json!("wait_requests"));
            kv("count", &json!(n));
        }
        Kind::Release(gate) => {
            kv("do", &json!("release"));
            kv("gate", &json!(gate));
        }
        Kind::Restart => kv("do", &json!("restart")),
    }
    if !step.capture.is_empty() {
        let capture: Map<String, Value> = step
            .capture
            .iter()
            .map(|(k, p)| (k.clone(), json!(p)))
            .collect();
        lines.push(format!("capture = {}", value(&Value::Object(capture))));
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
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

/// A value whose strings that start with `$` are doubled, so the scenario file reads them
/// as literal text.
fn escape(v: &Value) -> Value {
    match v {
        Value::String(s) if s.starts_with('$') => Value::String(format!("${s}")),
        Value::Array(items) => Value::Array(items.iter().map(escape).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), escape(v))).collect())
        }
        other => other.clone(),
    }
}
