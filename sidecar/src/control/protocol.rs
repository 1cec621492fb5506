//! The JSONL protocol of `sidecar-protocol.md`: commands read from stdin, replies written to
//! stdout, one compact JSON object per line, each optionally carrying an `id` echoed back.
//!
//! ```
//! use codex_parity_sidecar::protocol::{parse_command, Command, Reply};
//! let (id, command) = parse_command(r#"{"op":"status","id":7}"#);
//! assert_eq!(command.unwrap(), Command::Status);
//! let line = Reply::Ok.to_line(id.as_ref());
//! assert_eq!(line, r#"{"type":"ok","id":7}"#);
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::mock::captured::CapturedRequest;
use crate::mock::connection::{self, ConnectionScript, Warmup};
use crate::mock::script::{self, ScriptError, Scripted, kind_of};

/// The protocol version announced in the ready line.
pub const PROTOCOL_VERSION: u32 = 2;

/// A command line that cannot be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The line is not JSON.
    #[error("line is not JSON: {0}")]
    NotJson(String),
    /// The line is JSON but not an object.
    #[error("line is {0}, not a JSON object")]
    NotObject(&'static str),
    /// The object has no `op`.
    #[error("missing \"op\"")]
    MissingOp,
    /// `op` names no known command.
    #[error("unknown op: {0}")]
    UnknownOp(String),
    /// A field of a known command has the wrong type.
    #[error("{op}: {message}")]
    BadField {
        /// The command.
        op: &'static str,
        /// What is wrong.
        message: String,
    },
    /// `enqueue` carried a bad scripted response.
    #[error("enqueue: {0}")]
    BadResponses(ScriptError),
    /// `websocket` carried a bad connection script or warm-up mode.
    #[error("websocket: {0}")]
    BadConnections(ScriptError),
}

/// A command of the protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Wait for `min` requests or `timeout_ms`, then list captured requests.
    Requests {
        /// How many requests to wait for.
        min: u64,
        /// How long to wait at most.
        timeout_ms: u64,
        /// Only requests with `index >= since`.
        since: u64,
        /// Every request, not only model requests.
        all: bool,
    },
    /// Reply, then exit.
    Shutdown,
    /// Queue scripted responses.
    Enqueue {
        /// The responses, in order.
        responses: Vec<Scripted>,
    },
    /// Set the body that `GET …/models` answers.
    Models {
        /// The body.
        body: Value,
    },
    /// Report counters.
    Status,
    /// Empty the script and the captured requests.
    Reset,
    /// Open a gate (v2).
    Release {
        /// The gate's name.
        gate: String,
    },
    /// Wait until a response waits at a gate, or `timeout_ms` (v2).
    WaitGate {
        /// The gate's name.
        gate: String,
        /// How long to wait at most.
        timeout_ms: u64,
    },
    /// Queue WebSocket connection scripts and set the warm-up answer (v2).
    Websocket {
        /// The default warm-up answer, unchanged when `None`.
        warmup: Option<Warmup>,
        /// Connection scripts, taken by upgrades in order.
        connections: Vec<ConnectionScript>,
    },
}

impl Command {
    /// `requests` with every option at its default.
    pub fn requests() -> Self {
        Command::Requests {
            min: 0,
            timeout_ms: 0,
            since: 0,
            all: false,
        }
    }

    /// The command's `op`, e.g. `"requests"`.
    pub fn op(&self) -> &'static str {
        match self {
            Command::Requests { .. } => "requests",
            Command::Shutdown => "shutdown",
            Command::Enqueue { .. } => "enqueue",
            Command::Models { .. } => "models",
            Command::Status => "status",
            Command::Reset => "reset",
            Command::Release { .. } => "release",
            Command::WaitGate { .. } => "wait_gate",
            Command::Websocket { .. } => "websocket",
        }
    }

    /// The command as a JSON object.
    pub fn to_json(&self) -> Value {
        match self {
            Command::Requests {
                min,
                timeout_ms,
                since,
                all,
            } => {
                json!({"op": "requests", "min": min, "timeout_ms": timeout_ms, "since": since, "all": all})
            }
            Command::Shutdown => json!({"op": "shutdown"}),
            Command::Enqueue { responses } => {
                let list: Vec<Value> = responses.iter().map(Scripted::to_json).collect();
                json!({"op": "enqueue", "responses": list})
            }
            Command::Models { body } => json!({"op": "models", "body": body}),
            Command::Status => json!({"op": "status"}),
            Command::Reset => json!({"op": "reset"}),
            Command::Release { gate } => json!({"op": "release", "gate": gate}),
            Command::WaitGate { gate, timeout_ms } => {
                json!({"op": "wait_gate", "gate": gate, "timeout_ms": timeout_ms})
            }
            Command::Websocket {
                warmup,
                connections,
            } => {
                let list: Vec<Value> = connections.iter().map(ConnectionScript::to_json).collect();
                let mut out = json!({"op": "websocket", "connections": list});
                if let (Some(warmup), Some(object)) = (warmup, out.as_object_mut()) {
                    object.insert("warmup".into(), Value::from(warmup.as_str()));
                }
                out
            }
        }
    }

    /// The command as one protocol line (without the newline), carrying `id` if given.
    pub fn to_line(&self, id: Option<&Value>) -> String {
        with_id(self.to_json(), id)
    }
}

/// Parses one command line; also returns its `id` (when the line is an object that has one)
/// so that even an error reply can echo it.
pub fn parse_command(line: &str) -> (Option<Value>, Result<Command, ProtocolError>) {
    let value: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(e) => return (None, Err(ProtocolError::NotJson(e.to_string()))),
    };
    let Value::Object(object) = value else {
        return (None, Err(ProtocolError::NotObject(kind_of(&value))));
    };
    let id = object.get("id").cloned();
    (id, command_of(&object))
}

fn command_of(object: &Map<String, Value>) -> Result<Command, ProtocolError> {
    let op = match object.get("op") {
        None => return Err(ProtocolError::MissingOp),
        Some(Value::String(op)) => op.as_str(),
        Some(other) => return Err(ProtocolError::UnknownOp(other.to_string())),
    };
    match op {
        "requests" => Ok(Command::Requests {
            min: count(object, "requests", "min")?,
            timeout_ms: count(object, "requests", "timeout_ms")?,
            since: count(object, "requests", "since")?,
            all: match object.get("all") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(bad("requests", "\"all\" must be a boolean")),
            },
        }),
        "shutdown" => Ok(Command::Shutdown),
        "enqueue" => {
            let list = object
                .get("responses")
                .ok_or_else(|| bad("enqueue", "missing \"responses\""))?;
            let responses = script::parse_list(list).map_err(ProtocolError::BadResponses)?;
            Ok(Command::Enqueue { responses })
        }
        "models" => {
            let body = object
                .get("body")
                .cloned()
                .ok_or_else(|| bad("models", "missing \"body\""))?;
            Ok(Command::Models { body })
        }
        "status" => Ok(Command::Status),
        "reset" => Ok(Command::Reset),
        "release" => Ok(Command::Release {
            gate: gate_name(object, "release")?,
        }),
        "wait_gate" => Ok(Command::WaitGate {
            gate: gate_name(object, "wait_gate")?,
            timeout_ms: count(object, "wait_gate", "timeout_ms")?,
        }),
        "websocket" => {
            let warmup = match object.get("warmup") {
                None | Some(Value::Null) => None,
                Some(value) => {
                    Some(Warmup::from_json(value).map_err(ProtocolError::BadConnections)?)
                }
            };
            let connections = match object.get("connections") {
                None | Some(Value::Null) => Vec::new(),
                Some(list) => {
                    connection::parse_list(list).map_err(ProtocolError::BadConnections)?
                }
            };
            Ok(Command::Websocket {
                warmup,
                connections,
            })
        }
        other => Err(ProtocolError::UnknownOp(other.to_string())),
    }
}

fn gate_name(object: &Map<String, Value>, op: &'static str) -> Result<String, ProtocolError> {
    match object.get("gate") {
        Some(Value::String(name)) if !name.is_empty() => Ok(name.clone()),
        _ => Err(bad(op, "\"gate\" must be a non-empty string")),
    }
}

fn bad(op: &'static str, message: impl Into<String>) -> ProtocolError {
    ProtocolError::BadField {
        op,
        message: message.into(),
    }
}

fn count(object: &Map<String, Value>, op: &'static str, field: &str) -> Result<u64, ProtocolError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(0),
        Some(value) => value
            .as_u64()
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| {
                bad(
                    op,
                    format!("\"{field}\" must be a non-negative integer, not {value}"),
                )
            }),
    }
}

/// A reply line of the protocol (its `type` is the variant name in snake case).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    /// The first line: the server listens.
    Ready {
        /// `http://HOST:PORT`.
        server_url: String,
        /// `http://HOST:PORT/v1`.
        base_url: String,
        /// The protocol version, [`PROTOCOL_VERSION`].
        #[serde(default)]
        protocol: u32,
        /// The sidecar's process id.
        #[serde(default)]
        pid: u32,
    },
    /// Captured requests.
    Requests {
        /// The requests, in arrival order.
        requests: Vec<CapturedRequest>,
    },
    /// The sidecar is exiting.
    Shutdown {
        /// Scripted responses never served.
        #[serde(default)]
        pending: usize,
        /// Requests that got no scripted response.
        #[serde(default)]
        unscripted: u64,
    },
    /// Responses were queued.
    Enqueued {
        /// How many wait now.
        pending: usize,
    },
    /// Done.
    Ok,
    /// Counters.
    Status(Status),
    /// A gate was opened (v2).
    Released {
        /// The gate.
        gate: String,
        /// How many responses were waiting at it.
        held: usize,
    },
    /// How many responses wait at a gate (v2, the `wait_gate` reply).
    Gate {
        /// The gate.
        gate: String,
        /// How many wait (0 after a timeout).
        held: usize,
    },
    /// WebSocket connection scripts were queued (v2).
    Websocket {
        /// How many wait for upgrades now.
        connections: usize,
    },
    /// The command failed; the sidecar keeps serving.
    Error {
        /// What went wrong.
        message: String,
    },
}

/// Counters of the `status` reply: the server's own.
pub use crate::mock::server::Status;

/// Adds `"id":ID` to a line holding one JSON object (it must end with `}`).
pub(crate) fn push_id(line: &mut String, id: Option<&Value>) {
    if let Some(id) = id
        && line.ends_with('}')
    {
        line.pop();
        line.push_str(",\"id\":");
        line.push_str(&id.to_string());
        line.push('}');
    }
}

impl Reply {
    /// The reply as one protocol line (without the newline), carrying `id` if given.
    pub fn to_line(&self, id: Option<&Value>) -> String {
        // Straight to text: a `requests` reply can be large, so skip the intermediate Value.
        let mut line = match serde_json::to_string(self) {
            Ok(line) => line,
            // Serializing these plain types cannot fail; answer with an error line anyway.
            Err(e) => return with_id(json!({"type": "error", "message": e.to_string()}), id),
        };
        push_id(&mut line, id);
        line
    }

    /// Parses a reply line, splitting off its `id`.
    pub fn parse_line(line: &str) -> Result<(Option<Value>, Reply), serde_json::Error> {
        let mut value: Value = serde_json::from_str(line)?;
        let id = value.as_object_mut().and_then(|o| o.remove("id"));
        Ok((id, serde_json::from_value(value)?))
    }
}

fn with_id(mut value: Value, id: Option<&Value>) -> String {
    if let (Some(id), Some(object)) = (id, value.as_object_mut()) {
        object.insert("id".into(), id.clone());
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::bodies;

    fn error_of(line: &str) -> String {
        parse_command(line).1.unwrap_err().to_string()
    }

    #[test]
    fn commands_parse_with_defaults_and_ids() {
        assert_eq!(
            parse_command(r#"{"op":"requests"}"#).1.unwrap(),
            Command::requests()
        );
        let (id, command) = parse_command(
            r#"{"op":"requests","min":2,"timeout_ms":500,"since":1,"all":true,"id":"a"}"#,
        );
        assert_eq!(id, Some(json!("a")));
        assert_eq!(
            command.unwrap(),
            Command::Requests {
                min: 2,
                timeout_ms: 500,
                since: 1,
                all: true
            }
        );
        assert_eq!(
            parse_command(r#"{"op":"shutdown","id":null}"#).0,
            Some(Value::Null)
        );
        assert_eq!(
            parse_command(r#"{"op":"reset"}"#).1.unwrap(),
            Command::Reset
        );
        assert_eq!(
            parse_command(r#"{"op":"models","body":{"models":[1]}}"#)
                .1
                .unwrap(),
            Command::Models {
                body: json!({"models": [1]})
            }
        );
    }

    #[test]
    fn commands_round_trip_through_lines() {
        let commands = [
            Command::requests(),
            Command::Shutdown,
            Command::Status,
            Command::Reset,
            Command::Models { body: json!({}) },
            Command::Release { gate: "g".into() },
            Command::WaitGate {
                gate: "g".into(),
                timeout_ms: 5,
            },
            Command::Websocket {
                warmup: Some(Warmup::Queue),
                connections: vec![
                    ConnectionScript::refuse(426).header("x-a", "1"),
                    ConnectionScript::hang(),
                    ConnectionScript::accept()
                        .response(Scripted::sse(bodies::empty_response("r")).disconnect_after(1)),
                ],
            },
            Command::Enqueue {
                responses: vec![Scripted::sse(bodies::empty_response("r")).delay_ms(3)],
            },
        ];
        for command in commands {
            let line = command.to_line(Some(&json!(5)));
            assert!(line.starts_with(&format!("{{\"op\":\"{}\"", command.op())));
            let (id, parsed) = parse_command(&line);
            assert_eq!(id, Some(json!(5)));
            assert_eq!(parsed.unwrap(), command);
        }
    }

    #[test]
    fn bad_lines_get_messages_that_name_the_problem() {
        assert!(error_of("nope").starts_with("line is not JSON"));
        assert_eq!(error_of("[1]"), "line is an array, not a JSON object");
        assert_eq!(error_of(r#"{"id":1}"#), "missing \"op\"");
        assert_eq!(error_of(r#"{"op":"frobnicate"}"#), "unknown op: frobnicate");
        assert!(error_of(r#"{"op":"requests","min":-1}"#).contains("\"min\""));
        assert!(error_of(r#"{"op":"requests","all":"yes"}"#).contains("\"all\""));
        assert!(error_of(r#"{"op":"enqueue"}"#).contains("missing \"responses\""));
        assert!(
            error_of(r#"{"op":"enqueue","responses":[[],{"status":0}]}"#)
                .starts_with("enqueue: response 1: ")
        );
        assert!(error_of(r#"{"op":"models"}"#).contains("missing \"body\""));
    }

    #[test]
    fn replies_serialize_as_the_protocol_says() {
        assert_eq!(Reply::Ok.to_line(None), r#"{"type":"ok"}"#);
        assert_eq!(
            Reply::Shutdown {
                pending: 1,
                unscripted: 2
            }
            .to_line(None),
            r#"{"type":"shutdown","pending":1,"unscripted":2}"#
        );
        assert_eq!(
            Reply::Error {
                message: "unknown op: x".into()
            }
            .to_line(Some(&json!({"k": 1}))),
            r#"{"type":"error","message":"unknown op: x","id":{"k":1}}"#
        );
        let line = r#"{"type":"ready","server_url":"http://127.0.0.1:1","base_url":"http://127.0.0.1:1/v1"}"#;
        let (id, reply) = Reply::parse_line(line).unwrap();
        assert_eq!(id, None);
        assert!(matches!(reply, Reply::Ready { protocol: 0, .. }));
        let (id, reply) = Reply::parse_line(r#"{"type":"enqueued","pending":3,"id":9}"#).unwrap();
        assert_eq!(
            (id, reply),
            (Some(json!(9)), Reply::Enqueued { pending: 3 })
        );
    }
}
