//! What the mock codex serves: per app-server launch (or connection to its listener), the
//! messages codex sent in the order it sent them, as [`MockStep`]s; per `codex exec` run, the
//! event stream it printed and its exit status, as an [`ExecScript`]. The answers to the
//! client's requests are slots the client's own requests fill (by method); notifications
//! and server requests go out in order between them. A [`Script`] is made from a
//! transcript ([`Script::from_sent`]) or from the relay logs of `record --keep`
//! ([`Script::from_rpcs`], [`ExecScript::from_session`]), mutated by
//! [`crate::client_check::mutation`], and written as JSON for the mock to read.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::app_server::exec::event_type;
use crate::app_server::message::{Message, RequestId, RpcError};
use crate::app_server::transcript::{Sent, SentKind};
use crate::client_check::exec_args::ExecArgs;
use crate::record::timeline::{ExecSession, Rpc};

/// How codex answered one of the client's requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// `{"result": …}`.
    Result(Value),
    /// `{"error": …}`.
    Error(RpcError),
    /// No answer at all (the `drop:METHOD` mutation of an answer).
    Silence,
}

/// One thing the mock does, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "do")]
pub enum MockStep {
    /// Answers the client's request of `method` (the first one not yet answered).
    Answer {
        /// The method answered.
        method: String,
        /// The answer.
        reply: Reply,
        /// The `threadId` the recorded request named, when the source has it: a request
        /// naming a thread takes that thread's answer first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thread: Option<String>,
    },
    /// Sends a notification.
    Notify {
        /// Its method.
        method: String,
        /// Its params (`Null`: none).
        params: Value,
        /// Its other top-level fields (`emittedAtMs`).
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        extra: Map<String, Value>,
    },
    /// Sends a server request and waits for the client's answer.
    Ask {
        /// Its id as recorded (`None`: the mock numbers it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<RequestId>,
        /// Its method.
        method: String,
        /// Its params.
        params: Value,
        /// The answer the recorded client gave (`{"result": …}` or `{"error": …}`), when
        /// the source has it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expected: Option<Value>,
    },
    /// The next answer the mock would give is -32001 "Server overloaded; retry later."
    /// instead (the request stays unanswered until the client sends it again).
    Overload,
    /// The mock app-server exits here with this status, as a crashing codex would.
    Exit {
        /// The exit status.
        code: i32,
    },
}

impl MockStep {
    /// The method the step sends or answers (`None` for the mock's own actions).
    pub fn method(&self) -> Option<&str> {
        match self {
            MockStep::Answer { method, .. }
            | MockStep::Notify { method, .. }
            | MockStep::Ask { method, .. } => Some(method),
            MockStep::Overload | MockStep::Exit { .. } => None,
        }
    }

    /// Whether this step is an answer slot for `method`.
    pub fn answers(&self, method: &str) -> bool {
        matches!(self, MockStep::Answer { method: m, .. } if m == method)
    }
}

/// What a session holds: app-server connections, `codex exec` runs, or both (the default
/// mutations are those of its kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kinds {
    /// App-server connections.
    pub app_server: bool,
    /// `codex exec` runs.
    pub exec: bool,
}

impl Default for Kinds {
    /// An app-server session, what a source holds unless it says otherwise.
    fn default() -> Kinds {
        Kinds {
            app_server: true,
            exec: false,
        }
    }
}

/// Everything one mock app-server launch needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Script {
    /// Where the session came from (for the mock's messages and the report).
    pub origin: String,
    /// The codex version the session was recorded from (what `codex --version` prints).
    pub codex_version: String,
    /// The steps of each app-server launch, in launch order.
    pub connections: Vec<Vec<MockStep>>,
    /// The `codex exec` runs, in the order the client ran them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub execs: Vec<ExecScript>,
    /// The pause before each message the mock sends, in milliseconds (`slow`).
    #[serde(default)]
    pub gap_ms: u64,
    /// When the mock exits whatever happens, in milliseconds since the epoch (no orphan
    /// outlives it).
    pub deadline_ms: u64,
    /// What the source says of the session itself (a scenario file that failed on the codex
    /// it ran on): said on every row served from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Script {
    /// A script of the messages codex sent (a transcript): a list of `codex exec` events
    /// is one exec run, any other list one app-server connection (an empty list is an
    /// exec run that printed nothing when no list is an app-server's).
    pub fn from_sent(origin: &str, version: &str, connections: &[Vec<Sent>]) -> Script {
        let steps = |messages: &Vec<Sent>| {
            messages
                .iter()
                .filter_map(|m| {
                    let method = m.method.clone();
                    Some(match m.kind {
                        SentKind::Response => MockStep::Answer {
                            method,
                            reply: Reply::Result(m.payload.clone()),
                            thread: None,
                        },
                        SentKind::Error => MockStep::Answer {
                            method,
                            reply: Reply::Error(rpc_error(&m.payload)),
                            thread: None,
                        },
                        SentKind::Notification => MockStep::Notify {
                            method,
                            params: m.payload.clone(),
                            extra: m.extra.clone(),
                        },
                        SentKind::Request => MockStep::Ask {
                            id: None,
                            method,
                            params: m.payload.clone(),
                            expected: None,
                        },
                        SentKind::Event => return None,
                    })
                })
                .collect()
        };
        let events = |messages: &Vec<Sent>| messages.iter().all(|m| m.kind == SentKind::Event);
        let apps = connections.iter().any(|c| !c.is_empty() && !events(c));
        let exec = |messages: &Vec<Sent>| events(messages) && (!messages.is_empty() || !apps);
        Script {
            origin: origin.into(),
            codex_version: version.into(),
            connections: connections.iter().filter(|c| !exec(c)).map(steps).collect(),
            execs: connections
                .iter()
                .filter(|c| exec(c))
                .map(|c| ExecScript::from_events(c.iter().map(|m| m.payload.clone()).collect()))
                .collect(),
            ..Script::default()
        }
    }

    /// A script of one connection per relayed app-server session: codex's messages, each
    /// answer named by the client request it answers, each server request with the
    /// client's recorded answer.
    pub fn from_rpcs(origin: &str, version: &str, sessions: &[Vec<Rpc>]) -> Script {
        let steps = |rpcs: &Vec<Rpc>| {
            let (mut asked, mut answered) = (HashMap::new(), HashMap::new());
            for rpc in rpcs {
                match (&rpc.message, rpc.from_client) {
                    (Message::Request { id, method, params }, true) => {
                        let thread = params.get("threadId").and_then(Value::as_str);
                        asked.insert(id.clone(), (method.clone(), thread.map(str::to_string)));
                    }
                    (Message::Response { id, result }, true) => {
                        answered.insert(id.clone(), serde_json::json!({"result": result}));
                    }
                    (
                        Message::Error {
                            id: Some(id),
                            error,
                        },
                        true,
                    ) => {
                        answered.insert(id.clone(), serde_json::json!({"error": error}));
                    }
                    _ => {}
                }
            }
            let asked_as = |id: &RequestId| {
                asked
                    .get(id)
                    .cloned()
                    .unwrap_or_else(|| ("?".to_string(), None))
            };
            rpcs.iter()
                .filter(|r| !r.from_client)
                .filter_map(|r| {
                    Some(match &r.message {
                        Message::Response { id, result } => {
                            let (method, thread) = asked_as(id);
                            MockStep::Answer {
                                method,
                                reply: Reply::Result(result.clone()),
                                thread,
                            }
                        }
                        Message::Error { id, error } => {
                            let (method, thread) = asked_as(id.as_ref()?);
                            MockStep::Answer {
                                method,
                                reply: Reply::Error(error.clone()),
                                thread,
                            }
                        }
                        Message::Notification {
                            method,
                            params,
                            extra,
                        } => MockStep::Notify {
                            method: method.clone(),
                            params: params.clone(),
                            extra: extra.clone(),
                        },
                        Message::Request { id, method, params } => MockStep::Ask {
                            id: Some(id.clone()),
                            method: method.clone(),
                            params: params.clone(),
                            expected: answered.get(id).cloned(),
                        },
                    })
                })
                .collect()
        };
        Script {
            origin: origin.into(),
            codex_version: version.into(),
            connections: sessions.iter().map(steps).collect(),
            ..Script::default()
        }
    }

    /// What it holds (an empty script counts as an app-server session).
    pub fn kinds(&self) -> Kinds {
        let exec = !self.execs.is_empty();
        Kinds {
            app_server: !self.connections.is_empty() || !exec,
            exec,
        }
    }

    /// How many steps and exec events it holds, over all its connections and runs.
    pub fn len(&self) -> usize {
        self.connections.iter().map(Vec::len).sum::<usize>()
            + self.execs.iter().map(|e| e.events.len()).sum::<usize>()
    }

    /// Whether it holds no step.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every thread id the session serves, on any connection or exec run.
    pub fn thread_ids(&self) -> BTreeSet<String> {
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
                Value::String(s) if matches!(key, Some("threadId" | "thread_id")) => {
                    out.insert(s.clone());
                }
                _ => {}
            }
        }
        let mut out = BTreeSet::new();
        for step in self.connections.iter().flatten() {
            match step {
                MockStep::Notify { params, .. } | MockStep::Ask { params, .. } => {
                    walk(params, None, &mut out)
                }
                MockStep::Answer {
                    reply: Reply::Result(result),
                    ..
                } => walk(result, None, &mut out),
                _ => {}
            }
        }
        for event in self.execs.iter().flat_map(|e| &e.events) {
            walk(event, None, &mut out);
        }
        out
    }

    /// How many answers to client requests the script holds, over all its connections.
    pub fn answers(&self) -> usize {
        self.connections
            .iter()
            .flatten()
            .filter(|s| matches!(s, MockStep::Answer { .. }))
            .count()
    }

    /// Reads a script written by [`Script::write`].
    pub fn read(path: &Path) -> anyhow::Result<Script> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))
    }

    /// Writes the script as JSON.
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string(self).context("serialising a script")?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
    }
}

/// One `codex exec` run the mock plays: the events it prints on stdout, one a line, and the
/// status it exits with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecScript {
    /// The arguments after `codex` the recorded client gave (`exec` first), when the source
    /// has them (a recording).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// What the recorded client wrote to codex's stdin, when the source has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// The event stream, a line each: a JSON event, or a line that was not JSON as a string.
    pub events: Vec<Value>,
    /// The exit status.
    pub exit: i32,
    /// Whether the source does not hold the exit status, so that it is read from the stream
    /// ([`ExecScript::from_events`]).
    #[serde(default)]
    pub exit_inferred: bool,
    /// Whether a mutation cut the stream short (`exit-mid-stream`).
    #[serde(default)]
    pub cut: bool,
}

impl ExecScript {
    /// A run of `events` whose exit status is not known: read from the stream (1 after
    /// `turn.failed`, after an `error` with no `turn.completed`, or when codex printed
    /// nothing; else 0, as codex exits).
    pub fn from_events(events: Vec<Value>) -> ExecScript {
        let has = |t: &str| events.iter().any(|e| event_type(e) == t);
        let failed =
            events.is_empty() || has("turn.failed") || (has("error") && !has("turn.completed"));
        ExecScript {
            exit: i32::from(failed),
            exit_inferred: true,
            events,
            ..ExecScript::default()
        }
    }

    /// A run `record --keep` logged: its arguments, stdin, lines and exit status as they
    /// were (a run killed by a signal, or still running when the recording ended, exits 1).
    pub fn from_session(session: &ExecSession) -> ExecScript {
        ExecScript {
            args: Some(session.args.clone()),
            stdin: session.stdin.clone(),
            events: session
                .lines
                .iter()
                .map(|(_, line)| {
                    serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.clone()))
                })
                .collect(),
            exit: session.exit.flatten().unwrap_or(1),
            exit_inferred: false,
            cut: false,
        }
    }

    /// The thread id its `thread.started` gives, if any.
    pub fn thread_id(&self) -> Option<&str> {
        self.events
            .iter()
            .find(|e| event_type(e) == "thread.started")
            .and_then(|e| e.get("thread_id"))
            .and_then(Value::as_str)
    }

    /// The text of its last completed agent message (as older releases named it too:
    /// `item_type`, `assistant_message`), what codex writes to `--output-last-message`.
    pub fn final_message(&self) -> Option<&str> {
        self.events
            .iter()
            .filter(|e| event_type(e) == "item.completed")
            .filter_map(|e| e.get("item"))
            .filter(|i| {
                let kind = i.get("type").or_else(|| i.get("item_type"));
                matches!(
                    kind.and_then(Value::as_str),
                    Some("agent_message" | "assistant_message")
                )
            })
            .filter_map(|i| i.get("text").and_then(Value::as_str))
            .next_back()
    }

    /// The resume the recorded client asked for, when the source has its arguments:
    /// `Some(Some(id))` for `resume ID`, `Some(None)` for none (or `--last`).
    pub fn recorded_resume(&self) -> Option<Option<String>> {
        self.args
            .as_ref()
            .map(|a| ExecArgs::of(a).and_then(|e| e.resume).and_then(|r| r.id))
    }
}

/// A transcript's error object as an [`RpcError`]; what it lacks is said in the message
/// rather than the answer dropped.
fn rpc_error(payload: &Value) -> RpcError {
    serde_json::from_value(payload.clone()).unwrap_or_else(|_| RpcError {
        code: payload
            .get("code")
            .and_then(Value::as_i64)
            .unwrap_or(RpcError::INTERNAL_ERROR),
        message: payload
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| payload.to_string(), str::to_string),
        data: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rpc(from_client: bool, line: &str) -> Rpc {
        Rpc {
            at: 0,
            from_client,
            message: Message::parse(line).unwrap(),
        }
    }

    #[test]
    fn a_relay_log_names_each_answer_by_its_request_and_keeps_the_clients_answers() {
        let rpcs = vec![
            rpc(
                true,
                r#"{"id":7,"method":"turn/start","params":{"threadId":"t"}}"#,
            ),
            rpc(false, r#"{"id":7,"result":{"turn":{"id":"u"}}}"#),
            rpc(
                false,
                r#"{"id":0,"method":"item/tool/call","params":{"callId":"c"}}"#,
            ),
            rpc(true, r#"{"id":0,"result":{"success":true}}"#),
            rpc(false, r#"{"method":"turn/completed","params":{"turn":{}}}"#),
        ];
        let s = Script::from_rpcs("log", "0.171.0", &[rpcs]);
        assert_eq!(s.answers(), 1);
        assert!(s.connections[0][0].answers("turn/start"));
        assert!(
            matches!(&s.connections[0][0], MockStep::Answer { thread: Some(t), .. } if t == "t")
        );
        assert_eq!(
            s.connections[0][1],
            MockStep::Ask {
                id: Some(RequestId::Integer(0)),
                method: "item/tool/call".into(),
                params: json!({"callId": "c"}),
                expected: Some(json!({"result": {"success": true}})),
            }
        );
        assert_eq!(s.connections[0][2].method(), Some("turn/completed"));
        let dir = tempfile::tempdir().unwrap();
        s.write(&dir.path().join("s.json")).unwrap();
        assert_eq!(Script::read(&dir.path().join("s.json")).unwrap(), s);
    }

    #[test]
    fn a_transcript_becomes_answers_notifications_and_questions() {
        let sent = vec![
            Sent::new(SentKind::Response, "initialize", json!({})),
            Sent::new(
                SentKind::Error,
                "thread/rollback",
                json!({"code": -32600, "message": "no"}),
            ),
            Sent::new(SentKind::Notification, "thread/started", json!({})),
            Sent::new(SentKind::Request, "item/tool/call", json!({})),
        ];
        let s = Script::from_sent("t", "0.171.0", &[sent]);
        let kinds: Vec<_> = s.connections[0]
            .iter()
            .map(|s| serde_json::to_value(s).unwrap()["do"].clone())
            .collect();
        assert_eq!(kinds, vec!["answer", "answer", "notify", "ask"]);
    }

    #[test]
    fn thread_ids_are_read_from_every_connection_and_exec_run() {
        let script = Script {
            connections: vec![
                vec![MockStep::Answer {
                    method: "thread/start".into(),
                    reply: Reply::Result(json!({"thread": {"id": "t1"}})),
                    thread: None,
                }],
                vec![MockStep::Notify {
                    method: "turn/started".into(),
                    params: json!({"threadId": "t2"}),
                    extra: Default::default(),
                }],
            ],
            execs: vec![ExecScript::from_events(vec![
                json!({"type": "thread.started", "thread_id": "t3"}),
            ])],
            ..Script::default()
        };
        assert_eq!(
            script.thread_ids().into_iter().collect::<Vec<_>>(),
            vec!["t1".to_string(), "t2".to_string(), "t3".to_string()]
        );
    }

    #[test]
    fn an_exec_stream_is_one_run_whose_exit_is_read_from_it() {
        let event = |t: &str| Sent::new(SentKind::Event, t, json!({"type": t}));
        let ok = vec![
            event("thread.started"),
            event("turn.started"),
            event("turn.completed"),
        ];
        let failed = vec![
            event("thread.started"),
            event("error"),
            event("turn.failed"),
        ];
        let s = Script::from_sent("t", "0.171.0", &[ok, failed]);
        assert!(s.connections.is_empty(), "{:?}", s.connections);
        assert_eq!(
            s.execs
                .iter()
                .map(|e| (e.exit, e.exit_inferred))
                .collect::<Vec<_>>(),
            vec![(0, true), (1, true)]
        );
        assert_eq!(s.len(), 6);
        let run = ExecScript::from_events(vec![
            json!({"type": "item.completed", "item": {"item_type": "assistant_message", "text": "a"}}),
            json!({"type": "item.completed", "item": {"type": "agent_message", "text": "b"}}),
            json!({"type": "item.completed", "item": {"type": "reasoning", "text": "c"}}),
        ]);
        assert_eq!(run.final_message(), Some("b"));
    }
}
