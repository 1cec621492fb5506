//! Per-connection WebSocket scripts (contract v2): what the next upgrade gets (accept with
//! extra 101 headers and its own responses, refuse with a status, or hang) and how warm-up
//! frames are answered.
//!
//! ```
//! use codex_parity_sidecar::mock::connection::{ConnectionScript, Handshake};
//! use serde_json::json;
//! let c = ConnectionScript::from_json(&json!({"refuse": 426, "headers": {"x-a": "1"}})).unwrap();
//! assert!(matches!(c.handshake, Handshake::Refuse { status: 426, .. }));
//! assert_eq!(ConnectionScript::from_json(&c.to_json()).unwrap(), c);
//! ```

use serde_json::{Map, Value};

use crate::mock::queue;
use crate::mock::script::{self, ScriptError, Scripted};

/// How warm-up frames (`"generate": false`) are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Warmup {
    /// `response.created` + `response.completed` by the sidecar, unless a queued response's
    /// `when` matches the frame.
    #[default]
    Auto,
    /// From the script like any other frame.
    Queue,
}

impl Warmup {
    /// Parses `"auto"` or `"queue"`.
    pub fn from_json(value: &Value) -> Result<Warmup, ScriptError> {
        match value.as_str() {
            Some("auto") => Ok(Warmup::Auto),
            Some("queue") => Ok(Warmup::Queue),
            _ => Err(ScriptError::Shape(
                "\"warmup\" must be \"auto\" or \"queue\"".into(),
            )),
        }
    }

    /// `"auto"` or `"queue"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Warmup::Auto => "auto",
            Warmup::Queue => "queue",
        }
    }
}

/// What the upgrade request gets.
#[derive(Debug, Clone, PartialEq)]
pub enum Handshake {
    /// 101 Switching Protocols with these extra headers.
    Accept {
        /// Extra headers on the 101 (e.g. rate limits, `x-codex-turn-state`).
        headers: Vec<(String, String)>,
    },
    /// An HTTP error instead of the 101.
    Refuse {
        /// The status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body (JSON; a string is sent as text; `null` for none).
        body: Value,
    },
    /// The TCP connection is accepted but the upgrade is never answered.
    Hang,
}

/// The script of one WebSocket connection, taken by the next upgrade in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionScript {
    /// What the upgrade gets.
    pub handshake: Handshake,
    /// Responses served to this connection's frames before the shared queue is asked.
    pub responses: Vec<Scripted>,
    /// How this connection's warm-up is answered (the server default when `None`).
    pub warmup: Option<Warmup>,
}

fn shape(message: impl Into<String>) -> ScriptError {
    ScriptError::Shape(message.into())
}

fn headers_of(object: &Map<String, Value>) -> Result<Vec<(String, String)>, ScriptError> {
    let Some(value) = object.get("headers") else {
        return Ok(Vec::new());
    };
    let map = value
        .as_object()
        .ok_or_else(|| shape("\"headers\" must be an object of strings"))?;
    let mut out = Vec::new();
    for (name, value) in map {
        let value = value
            .as_str()
            .ok_or_else(|| shape(format!("\"headers.{name}\" must be a string")))?;
        queue::header(name, value)?;
        out.push((name.clone(), value.to_string()));
    }
    Ok(out)
}

fn headers_json(headers: &[(String, String)]) -> Value {
    Value::Object(
        headers
            .iter()
            .map(|(n, v)| (n.clone(), Value::from(v.as_str())))
            .collect(),
    )
}

impl ConnectionScript {
    /// Parses the protocol form: `{"refuse": STATUS, "headers", "body"}`, `{"hang": true}`, or
    /// `{"headers", "responses", "warmup"}` (accept; every key optional).
    pub fn from_json(value: &Value) -> Result<ConnectionScript, ScriptError> {
        let object = value
            .as_object()
            .ok_or_else(|| shape("a connection script must be an object"))?;
        let (handshake, allowed): (Handshake, &[&str]) = if let Some(status) = object.get("refuse")
        {
            let status = status
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())
                .filter(|s| (100..=999).contains(s) && *s != 101)
                .ok_or_else(|| shape("\"refuse\" must be a status from 100 to 999, not 101"))?;
            (
                Handshake::Refuse {
                    status,
                    headers: headers_of(object)?,
                    body: object.get("body").cloned().unwrap_or(Value::Null),
                },
                &["refuse", "headers", "body"],
            )
        } else if object.contains_key("hang") {
            if object.get("hang") != Some(&Value::Bool(true)) {
                return Err(shape("\"hang\" must be true"));
            }
            (Handshake::Hang, &["hang"])
        } else {
            (
                Handshake::Accept {
                    headers: headers_of(object)?,
                },
                &["headers", "responses", "warmup"],
            )
        };
        if let Some(key) = object.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(shape(format!(
                "unknown field \"{key}\" in a connection script (allowed here: {})",
                allowed.join(", ")
            )));
        }
        let responses = match object.get("responses") {
            None => Vec::new(),
            Some(list) => script::parse_list(list)?,
        };
        for scripted in &responses {
            queue::prepare(scripted)?;
        }
        let warmup = object.get("warmup").map(Warmup::from_json).transpose()?;
        Ok(ConnectionScript {
            handshake,
            responses,
            warmup,
        })
    }

    /// The protocol JSON form.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        match &self.handshake {
            Handshake::Accept { headers } => {
                if !headers.is_empty() {
                    out.insert("headers".into(), headers_json(headers));
                }
            }
            Handshake::Refuse {
                status,
                headers,
                body,
            } => {
                out.insert("refuse".into(), Value::from(*status));
                if !headers.is_empty() {
                    out.insert("headers".into(), headers_json(headers));
                }
                if !body.is_null() {
                    out.insert("body".into(), body.clone());
                }
            }
            Handshake::Hang => {
                out.insert("hang".into(), Value::Bool(true));
            }
        }
        if !self.responses.is_empty() {
            out.insert(
                "responses".into(),
                Value::Array(self.responses.iter().map(Scripted::to_json).collect()),
            );
        }
        if let Some(warmup) = self.warmup {
            out.insert("warmup".into(), Value::from(warmup.as_str()));
        }
        Value::Object(out)
    }

    /// An accepted connection with extra 101 headers.
    pub fn accept() -> ConnectionScript {
        ConnectionScript {
            handshake: Handshake::Accept {
                headers: Vec::new(),
            },
            responses: Vec::new(),
            warmup: None,
        }
    }

    /// A refused upgrade.
    pub fn refuse(status: u16) -> ConnectionScript {
        ConnectionScript {
            handshake: Handshake::Refuse {
                status,
                headers: Vec::new(),
                body: Value::Null,
            },
            responses: Vec::new(),
            warmup: None,
        }
    }

    /// An upgrade never answered.
    pub fn hang() -> ConnectionScript {
        ConnectionScript {
            handshake: Handshake::Hang,
            responses: Vec::new(),
            warmup: None,
        }
    }

    /// Adds a header to the 101 (or to the refusal).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        match &mut self.handshake {
            Handshake::Accept { headers } | Handshake::Refuse { headers, .. } => {
                headers.push((name.to_string(), value.to_string()));
            }
            Handshake::Hang => {}
        }
        self
    }

    /// Adds a response for this connection only.
    pub fn response(mut self, scripted: Scripted) -> Self {
        self.responses.push(scripted);
        self
    }

    /// Sets how this connection's warm-up is answered.
    pub fn warmup(mut self, warmup: Warmup) -> Self {
        self.warmup = Some(warmup);
        self
    }

    /// One line for the shutdown report.
    pub fn describe(&self) -> String {
        format!("WebSocket connection script {}", self.to_json())
    }
}

/// Parses a list of connection scripts; an error names the offending index.
pub fn parse_list(value: &Value) -> Result<Vec<ConnectionScript>, ScriptError> {
    let items = value
        .as_array()
        .ok_or_else(|| shape("\"connections\" must be an array"))?;
    crate::mock::script::parse_each(items, ConnectionScript::from_json)
}
