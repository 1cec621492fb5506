//! The mock app-server's state: one connection of the session served to the client, message
//! by message (see [`crate::client_check::serve`] for the process around it).
//!
//! - A client request takes the first answer of its method not given yet (one recorded for
//!   the thread it names first, when the source says), with the client's id on it. Until
//!   `initialize` is answered, other requests are refused as codex refuses them.
//! - Notifications and server requests go out in the recorded order, held at each answer
//!   until the client has asked for it. A request whose answer lies further on is answered
//!   at once, the stream staying where it is; when the client then waits [`IDLE`] with the
//!   stream held at an answer it never asked for, that answer is passed (reported as never
//!   asked) and the stream goes on.
//! - A server request holds the notifications and server requests after it until the
//!   client answers (answers to the client's own requests still go out); the answer is
//!   compared with the recorded one when the source has it.
//! - A request the session has no answer for gets an error naming it; a thread id the
//!   session never served is reported.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::app_server::message::{Message, RequestId, RpcError};
use crate::client_check::script::{MockStep, Reply};
use crate::client_check::served::Served;

/// The error code and message of an overloaded app-server (codex's README).
pub const OVERLOADED: (i64, &str) = (-32001, "Server overloaded; retry later.");

/// How long a client may wait, with the stream held at an answer it never asked for but
/// a later one answered, before that answer is passed.
pub const IDLE: Duration = Duration::from_millis(500);

/// A client request waiting for its answer.
struct Pending {
    id: RequestId,
    target: usize,
}

/// One connection being served.
pub struct Mock<'a, W: Write> {
    steps: &'a [MockStep],
    consumed: Vec<bool>,
    cursor: usize,
    pending: Vec<Pending>,
    /// Server requests sent and not answered: their method and the recorded answer.
    awaiting: HashMap<RequestId, (String, Option<Value>)>,
    next_id: i64,
    /// The `overload` steps already used.
    overloaded: BTreeSet<usize>,
    initialized: bool,
    threads: BTreeSet<String>,
    gap: Duration,
    out: W,
    /// What it saw so far.
    pub served: Served,
    save: Box<dyn FnMut(&Served) + 'a>,
}

impl<'a, W: Write> Mock<'a, W> {
    /// A mock serving `steps` to `out`: `threads` are the thread ids the session serves,
    /// `gap` the pause before each message, `save` is called with the record after every
    /// message.
    pub fn new(
        steps: &'a [MockStep],
        threads: BTreeSet<String>,
        gap: Duration,
        out: W,
        served: Served,
        save: Box<dyn FnMut(&Served) + 'a>,
    ) -> Mock<'a, W> {
        let initialized = !steps.iter().any(|s| s.answers("initialize"));
        Mock {
            steps,
            consumed: vec![false; steps.len()],
            cursor: 0,
            pending: Vec::new(),
            awaiting: HashMap::new(),
            next_id: 0,
            overloaded: BTreeSet::new(),
            initialized,
            threads,
            gap,
            out,
            served,
            save,
        }
    }

    /// Serves the client's `lines` (`None` at its end) until the end or `deadline`; the
    /// exit status.
    pub fn run(&mut self, lines: &mpsc::Receiver<Option<String>>, deadline: Instant) -> i32 {
        let stopped_reading = |m: &mut Self| {
            m.end("the client stopped reading codex's stdout");
            0
        };
        loop {
            match self.advance() {
                Ok(Some(code)) => {
                    self.end(&format!("exited with status {code} mid-session"));
                    return code;
                }
                Ok(None) => {}
                Err(_) => return stopped_reading(self),
            }
            self.snapshot();
            let left = deadline.saturating_duration_since(Instant::now());
            let passing = self.may_pass();
            let wait = if passing { left.min(IDLE) } else { left };
            match lines.recv_timeout(wait) {
                Ok(Some(line)) => {
                    if self.incoming(&line).is_err() {
                        return stopped_reading(self);
                    }
                }
                Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.end("the client closed codex's stdin");
                    return 0;
                }
                Err(mpsc::RecvTimeoutError::Timeout) if passing && wait < left => {
                    self.cursor += 1;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.end("the mock's deadline passed");
                    return 1;
                }
            }
        }
    }

    /// Whether the stream is held at an answer nobody asked for while a later one was
    /// given: the client went another way.
    fn may_pass(&self) -> bool {
        let at = self.cursor;
        at < self.steps.len()
            && matches!(self.steps[at], MockStep::Answer { .. })
            && !self.consumed[at]
            && self.awaiting.is_empty()
            && !self.pending.iter().any(|p| p.target == at)
            && (at + 1..self.steps.len()).any(|i| self.consumed[i])
    }

    /// Sends what can be sent; `Some(code)` at an exit step.
    fn advance(&mut self) -> std::io::Result<Option<i32>> {
        while self.cursor < self.steps.len() {
            let at = self.cursor;
            if self.consumed[at] {
                self.cursor += 1;
                continue;
            }
            match &self.steps[at] {
                MockStep::Answer { .. } => match self.pending.iter().position(|p| p.target == at) {
                    Some(p) => self.reply(p)?,
                    None => return Ok(None),
                },
                _ if !self.awaiting.is_empty() => return Ok(None),
                MockStep::Notify {
                    method,
                    params,
                    extra,
                } => {
                    let message = Message::Notification {
                        method: method.clone(),
                        params: params.clone(),
                        extra: extra.clone(),
                    };
                    self.step_out(&message)?;
                }
                MockStep::Ask {
                    id,
                    method,
                    params,
                    expected,
                } => {
                    let id = id.clone().unwrap_or(RequestId::Integer(self.next_id));
                    self.next_id += 1;
                    self.awaiting
                        .insert(id.clone(), (method.clone(), expected.clone()));
                    self.served.unanswered.push(method.clone());
                    let message = Message::Request {
                        id,
                        method: method.clone(),
                        params: params.clone(),
                    };
                    self.step_out(&message)?;
                }
                MockStep::Overload => self.cursor += 1,
                MockStep::Exit { code } => {
                    self.out.flush()?;
                    return Ok(Some(*code));
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
                let message = format!("not a JSON-RPC message: {e}");
                self.send(&error(None, RpcError::PARSE_ERROR, &message))?;
            }
            Ok(Message::Request { id, method, params }) => self.request(id, method, &params)?,
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
        self.snapshot();
        Ok(())
    }

    /// A client request: refused before `initialize`, answered now when its answer lies
    /// away from the stream's place, else left for [`Mock::advance`].
    fn request(&mut self, id: RequestId, method: String, params: &Value) -> std::io::Result<()> {
        self.served.requests.push(method.clone());
        let thread = params.get("threadId").and_then(Value::as_str);
        if let Some(t) = thread
            && !self.threads.is_empty()
            && !self.threads.contains(t)
        {
            self.served.foreign_threads.push(format!(
                "{method} names thread {t}, which the session never served"
            ));
        }
        if !self.initialized && method != "initialize" {
            self.served.before_initialize.push(method);
            return self.send(&error(
                Some(id),
                RpcError::INVALID_REQUEST,
                "Not initialized",
            ));
        }
        match self.slot(&method, thread) {
            None => {
                self.served.unmatched.push(method.clone());
                let text = format!(
                    "codex-parity client-check: the recorded session has no (further) answer \
                     to {method}"
                );
                self.send(&error(Some(id), RpcError::INVALID_REQUEST, &text))
            }
            Some(target) => {
                self.pending.push(Pending { id, target });
                if target != self.cursor {
                    self.reply(self.pending.len() - 1)?;
                }
                Ok(())
            }
        }
    }

    /// The answer slot a request of `method` naming `thread` takes: the first one free
    /// recorded for that thread, else the first one free.
    fn slot(&self, method: &str, thread: Option<&str>) -> Option<usize> {
        let free: Vec<usize> = (0..self.steps.len())
            .filter(|&i| self.steps[i].answers(method) && !self.consumed[i])
            .filter(|&i| !self.pending.iter().any(|p| p.target == i))
            .collect();
        let recorded_for = |i: usize| match &self.steps[i] {
            MockStep::Answer {
                thread: Some(t), ..
            } => Some(t.as_str()),
            _ => None,
        };
        let same_thread = free
            .iter()
            .copied()
            .find(|&i| thread.is_some() && recorded_for(i) == thread);
        same_thread.or_else(|| free.first().copied())
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

    /// Answers pending request `p` from its slot, or with -32001 when an `overload` step
    /// stands right before the slot and was not used yet.
    fn reply(&mut self, p: usize) -> std::io::Result<()> {
        let Pending { id, target } = self.pending.remove(p);
        if target > 0
            && self.steps[target - 1] == MockStep::Overload
            && self.overloaded.insert(target - 1)
        {
            return self.send(&error(Some(id), OVERLOADED.0, OVERLOADED.1));
        }
        self.consumed[target] = true;
        let MockStep::Answer { method, reply, .. } = &self.steps[target] else {
            return Ok(());
        };
        if method == "initialize" {
            self.initialized = true;
        }
        let message = match reply {
            Reply::Result(result) => Message::Response {
                id,
                result: result.clone(),
            },
            Reply::Error(e) => Message::Error {
                id: Some(id),
                error: e.clone(),
            },
            Reply::Silence => return Ok(()),
        };
        self.send(&message)
    }

    /// Sends the message of the step at the cursor, which moves past it first (so that the
    /// record saved before the line goes out has it sent).
    fn step_out(&mut self, message: &Message) -> std::io::Result<()> {
        self.cursor += 1;
        let sent = self.send(message);
        if sent.is_err() {
            self.cursor -= 1;
        }
        sent
    }

    /// Sends one line. The record counts it, and is saved, before the line goes out: a client
    /// may end its app-server as soon as it has read the line (the turn's end), and the
    /// record must then say the line was sent.
    fn send(&mut self, message: &Message) -> std::io::Result<()> {
        if !self.gap.is_zero() {
            std::thread::sleep(self.gap);
        }
        self.served.sent += 1;
        self.snapshot();
        let written = writeln!(self.out, "{}", message.to_line()).and_then(|()| self.out.flush());
        if written.is_err() {
            self.served.sent -= 1;
        }
        written
    }

    /// Brings the record's view of the stream up to date and saves it.
    fn snapshot(&mut self) {
        let s = &mut self.served;
        s.not_asked = (0..self.cursor.min(self.steps.len()))
            .filter(|&i| !self.consumed[i])
            .filter_map(|i| match &self.steps[i] {
                MockStep::Answer { method, .. } => Some(method.clone()),
                _ => None,
            })
            .collect();
        // What is left: the steps from the cursor on that were not served (an answer given
        // out of order was) and that send or answer something.
        let rest: Vec<&MockStep> = (self.cursor.min(self.steps.len())..self.steps.len())
            .filter(|&i| !self.consumed[i])
            .map(|i| &self.steps[i])
            .filter(|s| s.method().is_some())
            .collect();
        s.not_reached = rest.len();
        s.next = rest
            .first()
            .and_then(|s| s.method().map(|m| format!("{} {m}", kind(s))));
        (self.save)(&self.served);
    }

    /// Records how it ended and saves.
    fn end(&mut self, how: &str) {
        self.served.ended = Some(how.to_string());
        self.snapshot();
    }
}

/// An error answer.
fn error(id: Option<RequestId>, code: i64, message: &str) -> Message {
    Message::Error {
        id,
        error: RpcError {
            code,
            message: message.into(),
            data: None,
        },
    }
}

/// The kind of a step, as reports name it.
fn kind(step: &MockStep) -> &'static str {
    match step {
        MockStep::Answer { .. } => "the answer to",
        MockStep::Notify { .. } => "the notification",
        MockStep::Ask { .. } => "the server request",
        MockStep::Overload | MockStep::Exit { .. } => "",
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
    use serde_json::Map;

    /// The mock's stdout, line by line.
    struct Lines(mpsc::Sender<Value>, Vec<u8>);

    impl Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.1.extend_from_slice(buf);
            while let Some(n) = self.1.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.1.drain(..=n).collect();
                let _ = self.0.send(serde_json::from_slice(&line).unwrap());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A client of a mock serving `steps` on a thread of its own.
    struct Client {
        to: mpsc::Sender<Option<String>>,
        from: mpsc::Receiver<Value>,
        done: std::thread::JoinHandle<Served>,
    }

    impl Client {
        fn new(steps: Vec<MockStep>) -> Client {
            let (to, lines) = mpsc::channel();
            let (tx, from) = mpsc::channel();
            let done = std::thread::spawn(move || {
                let mut mock = Mock::new(
                    &steps,
                    BTreeSet::from(["t1".to_string()]),
                    Duration::ZERO,
                    Lines(tx, Vec::new()),
                    Served::default(),
                    Box::new(|_| {}),
                );
                mock.run(&lines, Instant::now() + Duration::from_secs(20));
                mock.served
            });
            Client { to, from, done }
        }

        fn send(&self, line: Value) {
            self.to.send(Some(line.to_string())).unwrap();
        }

        fn ask(&self, id: i64, method: &str, params: Value) {
            self.send(json!({"id": id, "method": method, "params": params}));
        }

        /// The next message, within 3 s.
        fn next(&self) -> Value {
            self.from
                .recv_timeout(Duration::from_secs(3))
                .expect("a message")
        }

        /// Whether nothing comes within `ms`.
        fn quiet(&self, ms: u64) -> bool {
            self.from.recv_timeout(Duration::from_millis(ms)).is_err()
        }

        fn close(self) -> Served {
            self.to.send(None).unwrap();
            self.done.join().unwrap()
        }
    }

    fn answer(method: &str, result: Value) -> MockStep {
        MockStep::Answer {
            method: method.into(),
            reply: Reply::Result(result),
            thread: None,
        }
    }

    fn note(method: &str) -> MockStep {
        MockStep::Notify {
            method: method.into(),
            params: json!({"threadId": "t1"}),
            extra: Map::new(),
        }
    }

    fn turn() -> Vec<MockStep> {
        vec![
            answer("initialize", json!({})),
            answer("thread/start", json!({"thread": {"id": "t1"}})),
            note("thread/started"),
            answer("turn/start", json!({"turn": {"id": "u1"}})),
            note("turn/started"),
            note("turn/completed"),
        ]
    }

    #[test]
    fn the_stream_waits_at_each_answer_and_ids_are_the_clients() {
        let c = Client::new(turn());
        c.ask(7, "initialize", json!({}));
        assert_eq!(c.next(), json!({"id": 7, "result": {}}));
        assert!(c.quiet(100), "thread/started before thread/start");
        c.ask(8, "thread/start", json!({}));
        assert_eq!(c.next()["id"], 8);
        assert_eq!(c.next()["method"], "thread/started");
        c.ask(9, "turn/start", json!({"threadId": "t1"}));
        assert_eq!(c.next()["id"], 9);
        assert_eq!(c.next()["method"], "turn/started");
        assert_eq!(c.next()["method"], "turn/completed");
        c.ask(10, "model/list", json!({}));
        let refused = c.next();
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no (further) answer")
        );
        let served = c.close();
        assert_eq!(served.unmatched, vec!["model/list"]);
        assert_eq!((served.sent, served.not_reached), (7, 0));
    }

    /// The mock's stdout, recording for each line what the record saved before it said.
    struct Watched {
        saved: std::sync::Arc<std::sync::Mutex<Served>>,
        seen: std::sync::Arc<std::sync::Mutex<Vec<(String, usize, usize)>>>,
        lines: mpsc::Sender<Value>,
        buf: Vec<u8>,
    }

    impl Write for Watched {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.buf.extend_from_slice(buf);
            while let Some(n) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=n).collect();
                let value: Value = serde_json::from_slice(&line).unwrap();
                let saved = self.saved.lock().unwrap().clone();
                let what = value["method"].as_str().unwrap_or("answer").to_string();
                self.seen
                    .lock()
                    .unwrap()
                    .push((what, saved.sent, saved.not_reached));
                let _ = self.lines.send(value);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Issue 43's false note: a client that ends its app-server as soon as it has read
    /// `turn/completed` was reported as stopped before it, because the mock counted and
    /// saved the line after sending it. The record saved before each line now has it.
    #[test]
    fn each_line_is_in_the_saved_record_before_it_goes_out() {
        let steps = turn();
        let saved = std::sync::Arc::new(std::sync::Mutex::new(Served::default()));
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (to, lines) = mpsc::channel();
        let (tx, from) = mpsc::channel();
        let out = Watched {
            saved: saved.clone(),
            seen: seen.clone(),
            lines: tx,
            buf: Vec::new(),
        };
        let keep = saved.clone();
        let done = std::thread::spawn(move || {
            let mut mock = Mock::new(
                &steps,
                BTreeSet::new(),
                Duration::ZERO,
                out,
                Served::default(),
                Box::new(move |s: &Served| *keep.lock().unwrap() = s.clone()),
            );
            mock.run(&lines, Instant::now() + Duration::from_secs(20))
        });
        let ask = |id: i64, method: &str| {
            let line = json!({"id": id, "method": method, "params": {"threadId": "t1"}});
            to.send(Some(line.to_string())).unwrap();
        };
        let next = || {
            from.recv_timeout(Duration::from_secs(3))
                .expect("a message")
        };
        ask(1, "initialize");
        next();
        ask(2, "thread/start");
        next();
        next();
        ask(3, "turn/start");
        for _ in 0..3 {
            next();
        }
        to.send(None).unwrap();
        done.join().unwrap();
        let seen = seen.lock().unwrap().clone();
        for (n, (what, sent, _)) in seen.iter().enumerate() {
            assert_eq!(
                *sent,
                n + 1,
                "{what}: the saved record had {sent} line(s) sent"
            );
        }
        let last = seen.last().unwrap();
        assert_eq!(
            (last.0.as_str(), last.2),
            ("turn/completed", 0),
            "the session's end is in the record before its last line goes out"
        );
    }

    #[test]
    fn a_request_before_initialize_is_refused_as_codex_refuses_it() {
        let c = Client::new(turn());
        c.ask(1, "thread/start", json!({}));
        assert_eq!(c.next()["error"]["message"], "Not initialized");
        c.ask(2, "initialize", json!({}));
        assert_eq!(c.next()["id"], 2);
        assert_eq!(c.close().before_initialize, vec!["thread/start"]);
    }

    #[test]
    fn an_answer_further_on_is_given_at_once_without_letting_the_stream_go() {
        // model/list was recorded last; this client asks for it first.
        let mut steps = turn();
        steps.push(answer("model/list", json!({"data": []})));
        let c = Client::new(steps);
        c.ask(1, "initialize", json!({}));
        c.next();
        c.ask(2, "model/list", json!({}));
        assert_eq!(c.next(), json!({"id": 2, "result": {"data": []}}));
        c.ask(3, "thread/start", json!({}));
        assert_eq!(
            c.next()["id"],
            3,
            "the thread's answer, not the turn's notifications"
        );
        assert_eq!(c.next()["method"], "thread/started");
        assert!(c.close().not_asked.is_empty());
    }

    #[test]
    fn an_answer_never_asked_for_is_passed_once_the_client_waits() {
        // model/list was recorded before the thread; this client never asks for it.
        let mut steps = turn();
        steps.insert(1, answer("model/list", json!({})));
        let c = Client::new(steps);
        c.ask(1, "initialize", json!({}));
        c.next();
        c.ask(2, "thread/start", json!({}));
        assert_eq!(c.next()["id"], 2);
        assert_eq!(
            c.next()["method"],
            "thread/started",
            "passed after the idle time"
        );
        assert_eq!(c.close().not_asked, vec!["model/list"]);
    }

    #[test]
    fn a_server_request_holds_the_stream_but_not_the_clients_own_answers() {
        let steps = vec![
            answer("initialize", json!({})),
            MockStep::Ask {
                id: Some(RequestId::Integer(5)),
                method: "item/commandExecution/requestApproval".into(),
                params: json!({}),
                expected: Some(json!({"result": {"decision": "accept"}})),
            },
            note("serverRequest/resolved"),
            answer("turn/interrupt", json!({})),
        ];
        let c = Client::new(steps);
        c.ask(1, "initialize", json!({}));
        c.next();
        assert_eq!(c.next()["id"], 5, "the recorded id");
        c.ask(2, "turn/interrupt", json!({}));
        assert_eq!(c.next(), json!({"id": 2, "result": {}}));
        assert!(c.quiet(100), "resolved before the approval was answered");
        c.send(json!({"id": 5, "result": {"decision": "decline"}}));
        assert_eq!(c.next()["method"], "serverRequest/resolved");
        let served = c.close();
        assert!(served.unanswered.is_empty());
        assert_eq!(
            served.answers_differ.len(),
            1,
            "{:?}",
            served.answers_differ
        );
    }

    #[test]
    fn overloaded_refuses_the_turn_once_and_threads_find_their_own_answers() {
        let thread = |t: &str| MockStep::Answer {
            method: "thread/read".into(),
            reply: Reply::Result(json!({"thread": {"id": t}})),
            thread: Some(t.into()),
        };
        let mut steps = turn();
        steps.insert(3, MockStep::Overload);
        steps.extend([thread("t1"), thread("t2")]);
        let c = Client::new(steps);
        c.ask(1, "initialize", json!({}));
        c.next();
        c.ask(2, "thread/start", json!({}));
        c.next();
        c.next();
        c.ask(3, "turn/start", json!({"threadId": "t1"}));
        assert_eq!(c.next()["error"]["code"], OVERLOADED.0);
        c.ask(4, "turn/start", json!({"threadId": "t1"}));
        assert_eq!(c.next()["id"], 4);
        c.next();
        c.next();
        c.ask(5, "thread/read", json!({"threadId": "t2"}));
        assert_eq!(c.next()["result"]["thread"]["id"], "t2");
        let served = c.close();
        assert_eq!(
            served.foreign_threads.len(),
            1,
            "t2 is not among the served threads"
        );
    }

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
}
