//! What the mock app-server serves: per app-server launch, the messages codex sent in the
//! order it sent them, as [`Step`]s. The answers to the client's requests are slots the
//! client's own requests fill (by method); notifications and server requests go out in
//! order between them. A [`Script`] is made from a transcript ([`Script::from_sent`]) or
//! from a relay log of `record --keep` ([`Script::from_rpcs`]), mutated by
//! [`crate::client_check::mutation`], and written as JSON for the mock to read.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::app_server::message::{Message, RequestId, RpcError};
use crate::app_server::transcript::{Sent, SentKind};
use crate::record::timeline::Rpc;

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
pub enum Step {
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

impl Step {
    /// The method the step sends or answers (`None` for the mock's own actions).
    pub fn method(&self) -> Option<&str> {
        match self {
            Step::Answer { method, .. }
            | Step::Notify { method, .. }
            | Step::Ask { method, .. } => Some(method),
            Step::Overload | Step::Exit { .. } => None,
        }
    }

    /// Whether this step is an answer slot for `method`.
    pub fn answers(&self, method: &str) -> bool {
        matches!(self, Step::Answer { method: m, .. } if m == method)
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
    pub connections: Vec<Vec<Step>>,
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
    /// A script of one connection per list of messages codex sent (a transcript).
    pub fn from_sent(origin: &str, version: &str, connections: &[Vec<Sent>]) -> Script {
        let steps = |messages: &Vec<Sent>| {
            messages
                .iter()
                .filter_map(|m| {
                    let method = m.method.clone();
                    Some(match m.kind {
                        SentKind::Response => Step::Answer {
                            method,
                            reply: Reply::Result(m.payload.clone()),
                            thread: None,
                        },
                        SentKind::Error => Step::Answer {
                            method,
                            reply: Reply::Error(rpc_error(&m.payload)),
                            thread: None,
                        },
                        SentKind::Notification => Step::Notify {
                            method,
                            params: m.payload.clone(),
                            extra: m.extra.clone(),
                        },
                        SentKind::Request => Step::Ask {
                            id: None,
                            method,
                            params: m.payload.clone(),
                            expected: None,
                        },
                        // `codex exec` events reach no app-server client.
                        SentKind::Event => return None,
                    })
                })
                .collect()
        };
        Script {
            origin: origin.into(),
            codex_version: version.into(),
            connections: connections.iter().map(steps).collect(),
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
                            Step::Answer {
                                method,
                                reply: Reply::Result(result.clone()),
                                thread,
                            }
                        }
                        Message::Error { id, error } => {
                            let (method, thread) = asked_as(id.as_ref()?);
                            Step::Answer {
                                method,
                                reply: Reply::Error(error.clone()),
                                thread,
                            }
                        }
                        Message::Notification {
                            method,
                            params,
                            extra,
                        } => Step::Notify {
                            method: method.clone(),
                            params: params.clone(),
                            extra: extra.clone(),
                        },
                        Message::Request { id, method, params } => Step::Ask {
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

    /// How many steps it holds, over all its connections.
    pub fn len(&self) -> usize {
        self.connections.iter().map(Vec::len).sum()
    }

    /// Whether it holds no step.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many answers to client requests the script holds, over all its connections.
    pub fn answers(&self) -> usize {
        self.connections
            .iter()
            .flatten()
            .filter(|s| matches!(s, Step::Answer { .. }))
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
        assert!(matches!(&s.connections[0][0], Step::Answer { thread: Some(t), .. } if t == "t"));
        assert_eq!(
            s.connections[0][1],
            Step::Ask {
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
}
