//! Scripted responses as `sidecar-protocol.md` §2 defines them (SSE bodies, HTTP errors, raw
//! bodies, delays, extra headers, `when` conditions), with builders and the protocol JSON form.
//!
//! ```
//! use codex_parity_sidecar::{bodies, Scripted};
//! use serde_json::json;
//!
//! let slow = Scripted::sse(bodies::assistant_reply("resp-1", "done"))
//!     .delay_ms(500)
//!     .when_body_contains("FORKWORD_1");
//! let limited = Scripted::http_error(429, json!({"error": {"message": "slow down"}}))
//!     .header("retry-after", "1");
//! assert_eq!(limited.to_json()["headers"]["retry-after"], "1");
//! assert_eq!(Scripted::from_json(&slow.to_json()).unwrap(), slow);
//! ```

use http::{HeaderName, HeaderValue};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::mock::timing::{self, Gaps, Timing};
use crate::wire::sse;

/// A scripted response that cannot be used, with what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// The scripted response's JSON has the wrong shape.
    #[error("{0}")]
    Shape(String),
    /// One response of a list is bad.
    #[error("response {index}: {source}")]
    AtIndex {
        /// Position of the response in the list.
        index: usize,
        /// What is wrong with it.
        source: Box<ScriptError>,
    },
}

impl From<sse::SseError> for ScriptError {
    fn from(e: sse::SseError) -> Self {
        ScriptError::Shape(e.to_string())
    }
}

fn shape(message: impl Into<String>) -> ScriptError {
    ScriptError::Shape(message.into())
}

/// What a scripted response sends back.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedReply {
    /// A 200 `text/event-stream` body framed from these events.
    Sse(Vec<Value>),
    /// An HTTP error: a JSON body, a string body sent as text, or `null` for no body.
    HttpError {
        /// The status code (100–999).
        status: u16,
        /// The body.
        body: Value,
    },
    /// A 200 body sent exactly as given.
    Raw {
        /// The body.
        text: String,
        /// Its `content-type`.
        content_type: String,
    },
}

/// Which endpoint a scripted response answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Endpoint {
    /// Model requests: `POST …/responses` and WebSocket `response.create` frames.
    #[default]
    Responses,
    /// `POST …/responses/compact` (remote compaction v1).
    Compact,
}

/// A condition on the request that a scripted response waits for; every part must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct When {
    /// Texts that the decoded body must contain (raw, or after JSON string escaping).
    pub body_contains: Vec<String>,
    /// Headers (name lower-case) that must be present with exactly these values.
    pub headers: Vec<(String, String)>,
}

impl When {
    /// Whether a request with this decoded body and these headers (names lower-case) meets
    /// the condition.
    pub fn matches(&self, body: &[u8], headers: &[(String, String)]) -> bool {
        self.matches_text(&String::from_utf8_lossy(body), headers)
    }

    /// [`When::matches`] for a body already read as text (so a queue converts it once).
    pub(crate) fn matches_text(&self, text: &str, headers: &[(String, String)]) -> bool {
        let bodies_ok = self
            .body_contains
            .iter()
            .all(|needle| contains_raw_or_escaped(text, needle));
        bodies_ok
            && self.headers.iter().all(|(name, value)| {
                headers
                    .iter()
                    .any(|(have_name, have_value)| have_name == name && have_value == value)
            })
    }

    /// The protocol JSON form of the condition.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        match self.body_contains.as_slice() {
            [] => {}
            [one] => {
                out.insert("body_contains".into(), Value::from(one.as_str()));
            }
            many => {
                out.insert("body_contains".into(), json!(many));
            }
        }
        if !self.headers.is_empty() {
            out.insert("header".into(), headers_json(&self.headers));
        }
        Value::Object(out)
    }

    fn from_json(value: &Value) -> Result<Self, ScriptError> {
        let object = value
            .as_object()
            .ok_or_else(|| shape("\"when\" must be an object"))?;
        let mut when = When::default();
        for (key, value) in object {
            match key.as_str() {
                "body_contains" => {
                    when.body_contains = match value {
                        Value::String(s) => vec![s.clone()],
                        Value::Array(items) => items
                            .iter()
                            .map(|i| i.as_str().map(str::to_string))
                            .collect::<Option<_>>()
                            .ok_or_else(|| {
                                shape("\"when.body_contains\" must be a string or strings")
                            })?,
                        _ => {
                            return Err(shape(
                                "\"when.body_contains\" must be a string or strings",
                            ));
                        }
                    }
                }
                "header" => {
                    when.headers = parse_headers(value, "when.header")?
                        .into_iter()
                        .map(|(n, v)| (n.to_ascii_lowercase(), v))
                        .collect();
                }
                other => {
                    return Err(shape(format!(
                        "unknown condition \"when.{other}\" (known: body_contains, header)"
                    )));
                }
            }
        }
        Ok(when)
    }
}

/// `text` as it appears inside a JSON string (quotes, backslashes and control characters
/// escaped), without the surrounding quotes.
fn json_escaped(text: &str) -> String {
    let quoted = Value::from(text).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// Whether `hay` contains `needle` as is or after JSON string escaping (so quotes and
/// newlines inside JSON strings match).
pub(crate) fn contains_raw_or_escaped(hay: &str, needle: &str) -> bool {
    hay.contains(needle) || hay.contains(&json_escaped(needle))
}

/// One scripted response: what to send, after how long, with which extra headers, and for
/// which requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Scripted {
    /// What is sent back.
    pub reply: ScriptedReply,
    /// How long the whole response waits, in milliseconds.
    pub delay_ms: u64,
    /// Extra response headers, in order.
    pub headers: Vec<(String, String)>,
    /// The condition a request must meet to take this response; `None` takes any request.
    pub when: Option<When>,
    /// How the events are released over time (SSE bodies only; v2).
    pub timing: Timing,
    /// Which endpoint this response answers (v2).
    pub endpoint: Endpoint,
}

impl Scripted {
    fn new(reply: ScriptedReply) -> Self {
        Scripted {
            reply,
            delay_ms: 0,
            headers: Vec::new(),
            when: None,
            timing: Timing::default(),
            endpoint: Endpoint::Responses,
        }
    }

    /// A `200 application/json` answer to `POST …/responses/compact` with this body (see
    /// [`crate::wire::compaction::compact_body`]).
    ///
    /// ```
    /// use codex_parity_sidecar::{compaction, Scripted};
    /// let body = compaction::compact_body(vec![compaction::item("cmp_1", "SUMMARY")]);
    /// let s = Scripted::compact(body);
    /// assert_eq!(s.to_json()["endpoint"], "compact");
    /// ```
    pub fn compact(body: Value) -> Self {
        let mut scripted = Scripted::new(ScriptedReply::HttpError { status: 200, body });
        scripted.endpoint = Endpoint::Compact;
        scripted
    }

    /// Waits `ms` before every event.
    pub fn gap_ms(mut self, ms: u64) -> Self {
        self.timing.gaps = Gaps::All(ms);
        self
    }

    /// Waits `gaps[i]` ms before event `i` (one gap per event).
    pub fn gaps_ms(mut self, gaps: Vec<u64>) -> Self {
        self.timing.gaps = Gaps::Each(gaps);
        self
    }

    /// After `n` events, sends nothing more until the client closes (or [`Scripted::stall_gate`]
    /// is released).
    pub fn stall_after(mut self, n: usize) -> Self {
        self.timing.stall_after = Some(n);
        self
    }

    /// Names the gate whose release ends the stall.
    pub fn stall_gate(mut self, name: &str) -> Self {
        self.timing.stall_gate = Some(name.to_string());
        self
    }

    /// After `n` events, closes the connection without finishing the response.
    pub fn disconnect_after(mut self, n: usize) -> Self {
        self.timing.disconnect_after = Some(n);
        self
    }

    /// Sends the body without chunked framing, ended by the connection's close (HTTP/1.0,
    /// `connection: close`): a later disconnect reads as the body's clean end.
    pub fn close_delimited(mut self) -> Self {
        self.timing.close_delimited = true;
        self
    }

    /// `ms` after the response started, closes the connection wherever it is.
    pub fn disconnect_after_ms(mut self, ms: u64) -> Self {
        self.timing.disconnect_after_ms = Some(ms);
        self
    }

    /// Holds event `index` and every later one until gate `name` is released.
    pub fn gate(mut self, name: &str, index: usize) -> Self {
        self.timing.gates.push((name.to_string(), index));
        self
    }

    /// Serves this response to `POST …/responses/compact` instead of model requests.
    pub fn for_compact(mut self) -> Self {
        self.endpoint = Endpoint::Compact;
        self
    }

    /// A 200 SSE body of these events.
    ///
    /// ```
    /// use codex_parity_sidecar::{events, Scripted};
    /// let s = Scripted::sse(vec![events::response_created("r"), events::completed("r")]);
    /// assert!(s.to_json().is_array());
    /// ```
    pub fn sse(events: Vec<Value>) -> Self {
        Scripted::new(ScriptedReply::Sse(events))
    }

    /// An HTTP error with this status and body (a JSON value; a JSON string is sent as text).
    ///
    /// ```
    /// use codex_parity_sidecar::Scripted;
    /// let s = Scripted::http_error(503, serde_json::json!("unavailable"));
    /// assert_eq!(s.to_json()["status"], 503);
    /// ```
    pub fn http_error(status: u16, body: Value) -> Self {
        Scripted::new(ScriptedReply::HttpError { status, body })
    }

    /// A 200 body sent as given, `content-type: text/event-stream` (see
    /// [`Scripted::content_type`]).
    ///
    /// ```
    /// use codex_parity_sidecar::Scripted;
    /// let cut = Scripted::raw("event: response.created\ndata: {\"type\":");
    /// assert_eq!(cut.to_json()["content_type"], "text/event-stream");
    /// ```
    pub fn raw(text: impl Into<String>) -> Self {
        Scripted::new(ScriptedReply::Raw {
            text: text.into(),
            content_type: "text/event-stream".into(),
        })
    }

    /// Sets the `content-type` of a raw body (no effect on other replies).
    pub fn content_type(mut self, value: &str) -> Self {
        if let ScriptedReply::Raw { content_type, .. } = &mut self.reply {
            *content_type = value.to_string();
        }
        self
    }

    /// Delays the whole response by `ms` milliseconds.
    pub fn delay_ms(mut self, ms: u64) -> Self {
        self.delay_ms = ms;
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Serves this response only to a request whose decoded body contains `text`
    /// (as is, or JSON-escaped); calling it again requires every text.
    pub fn when_body_contains(mut self, text: &str) -> Self {
        self.when
            .get_or_insert_with(When::default)
            .body_contains
            .push(text.to_string());
        self
    }

    /// Serves this response only to a request with header `name` equal to `value`.
    pub fn when_header(mut self, name: &str, value: &str) -> Self {
        self.when
            .get_or_insert_with(When::default)
            .headers
            .push((name.to_ascii_lowercase(), value.to_string()));
        self
    }

    /// The protocol JSON form: a bare event array when nothing else is set, otherwise an object.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        match &self.reply {
            ScriptedReply::Sse(events) => {
                if self.delay_ms == 0
                    && self.headers.is_empty()
                    && self.when.is_none()
                    && self.timing.is_immediate()
                    && self.endpoint == Endpoint::Responses
                {
                    return Value::Array(events.clone());
                }
                out.insert("events".into(), Value::Array(events.clone()));
                self.timing.write_into(&mut out);
            }
            ScriptedReply::HttpError { status, body } => {
                out.insert("status".into(), Value::from(*status));
                if !body.is_null() {
                    out.insert("body".into(), body.clone());
                }
            }
            ScriptedReply::Raw { text, content_type } => {
                out.insert("raw".into(), Value::from(text.as_str()));
                out.insert("content_type".into(), Value::from(content_type.as_str()));
            }
        }
        if self.delay_ms > 0 {
            out.insert("delay_ms".into(), Value::from(self.delay_ms));
        }
        if !self.headers.is_empty() {
            out.insert("headers".into(), headers_json(&self.headers));
        }
        if let Some(when) = &self.when {
            out.insert("when".into(), when.to_json());
        }
        if self.endpoint == Endpoint::Compact {
            out.insert("endpoint".into(), Value::from("compact"));
        }
        Value::Object(out)
    }

    /// Parses the protocol JSON form, checking everything that could fail when served
    /// (events without a string `type`, bad status, bad header names or values).
    pub fn from_json(value: &Value) -> Result<Self, ScriptError> {
        let scripted = match value {
            Value::Array(events) => Scripted::sse(events.clone()),
            Value::Object(object) => Scripted::from_object(object)?,
            other => {
                return Err(shape(format!(
                    "a scripted response must be an array of events or an object, not {}",
                    kind_of(other)
                )));
            }
        };
        scripted.validate()?;
        Ok(scripted)
    }

    fn from_object(object: &Map<String, Value>) -> Result<Self, ScriptError> {
        let form = Scripted::form_of(object)?;
        let reply = Scripted::reply_of(object, form)?;
        let delay_ms = match object.get("delay_ms") {
            None => 0,
            Some(v) => v
                .as_u64()
                .ok_or_else(|| shape("\"delay_ms\" must be a non-negative integer"))?,
        };
        let headers = match object.get("headers") {
            None => Vec::new(),
            Some(v) => parse_headers(v, "headers")?,
        };
        let when = object.get("when").map(When::from_json).transpose()?;
        let timing = if form == "events" {
            Timing::take_from(&mut object.clone()).map_err(ScriptError::Shape)?
        } else {
            Timing::default()
        };
        let endpoint = Scripted::endpoint_of(object)?;
        Ok(Scripted {
            reply,
            delay_ms,
            headers,
            when,
            timing,
            endpoint,
        })
    }

    /// The object's one form (`events`, `status` or `raw`), once its fields are all allowed
    /// for that form.
    fn form_of(object: &Map<String, Value>) -> Result<&'static str, ScriptError> {
        let forms: Vec<&str> = ["events", "status", "raw"]
            .into_iter()
            .filter(|k| object.contains_key(*k))
            .collect();
        let timed: Vec<&str> = ["events", "delay_ms", "headers", "when", "endpoint"]
            .into_iter()
            .chain(timing::KEYS)
            .collect();
        let allowed: &[&str] = match forms.as_slice() {
            ["events"] => &timed,
            ["status"] => &["status", "body", "delay_ms", "headers", "when", "endpoint"],
            ["raw"] => &[
                "raw",
                "content_type",
                "delay_ms",
                "headers",
                "when",
                "endpoint",
            ],
            [] => {
                return Err(shape(
                    "a scripted response object needs one of \"events\", \"status\" or \"raw\"",
                ));
            }
            several => {
                return Err(shape(format!(
                    "a scripted response object has only one of \"events\", \"status\" or \"raw\", not {}",
                    several.join(" and ")
                )));
            }
        };
        if let Some(key) = object.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(shape(format!(
                "unknown field \"{key}\" (allowed here: {})",
                allowed.join(", ")
            )));
        }
        Ok(forms[0])
    }

    /// The reply of the object's form: its events, its HTTP error or its raw body.
    fn reply_of(object: &Map<String, Value>, form: &str) -> Result<ScriptedReply, ScriptError> {
        let reply = match form {
            "events" => match &object["events"] {
                Value::Array(events) => ScriptedReply::Sse(events.clone()),
                _ => return Err(shape("\"events\" must be an array")),
            },
            "status" => {
                let status = object["status"]
                    .as_u64()
                    .and_then(|s| u16::try_from(s).ok())
                    .filter(|s| (100..=999).contains(s))
                    .ok_or_else(|| shape("\"status\" must be an integer from 100 to 999"))?;
                let body = object.get("body").cloned().unwrap_or(Value::Null);
                ScriptedReply::HttpError { status, body }
            }
            _ => {
                let text = object["raw"]
                    .as_str()
                    .ok_or_else(|| shape("\"raw\" must be a string"))?;
                let content_type = match object.get("content_type") {
                    None => "text/event-stream",
                    Some(Value::String(s)) => s.as_str(),
                    Some(_) => return Err(shape("\"content_type\" must be a string")),
                };
                ScriptedReply::Raw {
                    text: text.to_string(),
                    content_type: content_type.to_string(),
                }
            }
        };
        Ok(reply)
    }

    /// Which endpoint the response answers: `responses` (the default) or `compact`.
    fn endpoint_of(object: &Map<String, Value>) -> Result<Endpoint, ScriptError> {
        let endpoint = match object.get("endpoint") {
            None | Some(Value::Null) => Endpoint::Responses,
            Some(Value::String(s)) if s == "responses" => Endpoint::Responses,
            Some(Value::String(s)) if s == "compact" => Endpoint::Compact,
            Some(other) => {
                return Err(shape(format!(
                    "\"endpoint\" must be \"responses\" or \"compact\", not {other}"
                )));
            }
        };
        Ok(endpoint)
    }

    /// Checks what would otherwise fail when the response is served.
    pub fn validate(&self) -> Result<(), ScriptError> {
        if !matches!(self.reply, ScriptedReply::Sse(_)) && !self.timing.is_immediate() {
            return Err(shape(
                "gaps, stalls, disconnects and gates apply to \"events\" bodies only",
            ));
        }
        match &self.reply {
            ScriptedReply::Sse(events) => {
                sse::check(events)?;
                self.timing
                    .check(events.len())
                    .map_err(ScriptError::Shape)?;
            }
            ScriptedReply::HttpError { status, .. } => {
                if !(100..=999).contains(status) {
                    return Err(shape(format!("status {status} is not from 100 to 999")));
                }
            }
            ScriptedReply::Raw { content_type, .. } => {
                HeaderValue::from_str(content_type).map_err(|_| {
                    shape(format!(
                        "\"content_type\" {content_type:?} is not a valid header value"
                    ))
                })?;
            }
        }
        for (name, value) in &self.headers {
            HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| shape(format!("{name:?} is not a valid header name")))?;
            HeaderValue::from_str(value).map_err(|_| {
                shape(format!(
                    "header {name}: {value:?} is not a valid header value"
                ))
            })?;
        }
        Ok(())
    }
}

/// Parses a list of scripted responses (the config's `responses`, `enqueue`'s `responses`);
/// an error names the offending index.
pub fn parse_list(value: &Value) -> Result<Vec<Scripted>, ScriptError> {
    let items = value.as_array().ok_or_else(|| {
        shape(format!(
            "\"responses\" must be an array, not {}",
            kind_of(value)
        ))
    })?;
    parse_each(items, Scripted::from_json)
}

/// Parses each item with `parse`; an error names the offending index.
pub(crate) fn parse_each<T>(
    items: &[Value],
    parse: impl Fn(&Value) -> Result<T, ScriptError>,
) -> Result<Vec<T>, ScriptError> {
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            parse(item).map_err(|e| ScriptError::AtIndex {
                index,
                source: Box::new(e),
            })
        })
        .collect()
}

fn parse_headers(value: &Value, what: &str) -> Result<Vec<(String, String)>, ScriptError> {
    let object = value
        .as_object()
        .ok_or_else(|| shape(format!("\"{what}\" must be an object of strings")))?;
    object
        .iter()
        .map(|(name, value)| match value {
            Value::String(s) => Ok((name.clone(), s.clone())),
            _ => Err(shape(format!("\"{what}.{name}\" must be a string"))),
        })
        .collect()
}

fn headers_json(headers: &[(String, String)]) -> Value {
    Value::Object(
        headers
            .iter()
            .map(|(n, v)| (n.clone(), Value::from(v.as_str())))
            .collect(),
    )
}

/// A short name for the JSON type of `value`, for error messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Serialize for Scripted {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Scripted {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Scripted::from_json(&value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{bodies, events};

    fn parse(text: &str) -> Result<Scripted, ScriptError> {
        Scripted::from_json(&serde_json::from_str(text).unwrap())
    }

    #[test]
    fn every_protocol_form_round_trips() {
        let forms = [
            Scripted::sse(bodies::empty_response("r")),
            Scripted::sse(bodies::empty_response("r"))
                .delay_ms(250)
                .header("x-a", "1"),
            Scripted::http_error(429, json!({"error": {"message": "m"}}))
                .header("retry-after", "1"),
            Scripted::http_error(500, json!("plain text")).delay_ms(5),
            Scripted::http_error(502, Value::Null),
            Scripted::raw("event: x\n").content_type("text/plain"),
            Scripted::sse(vec![])
                .when_body_contains("A")
                .when_body_contains("B")
                .when_header("X-Codex-Window-Id", "w1"),
        ];
        for form in forms {
            let json = form.to_json();
            assert_eq!(Scripted::from_json(&json).unwrap(), form, "{json}");
            let text = serde_json::to_string(&form).unwrap();
            assert_eq!(serde_json::from_str::<Scripted>(&text).unwrap(), form);
        }
    }

    #[test]
    fn protocol_json_parses_into_the_documented_meaning() {
        let s = parse(r#"[{"type":"response.created","response":{"id":"r"}}]"#).unwrap();
        assert_eq!(
            s.reply,
            ScriptedReply::Sse(vec![events::response_created("r")])
        );
        assert_eq!(s.when, None);

        let s = parse(r#"{"events":[],"delay_ms":100,"headers":{"x-y":"z"}}"#).unwrap();
        assert_eq!(s.delay_ms, 100);
        assert_eq!(s.headers, vec![("x-y".to_string(), "z".to_string())]);

        let s = parse(
            r#"{"status":429,"body":{"error":{}},"headers":{"retry-after":"1"},"delay_ms":0}"#,
        )
        .unwrap();
        assert_eq!(
            s.reply,
            ScriptedReply::HttpError {
                status: 429,
                body: json!({"error": {}})
            }
        );

        let s = parse(r#"{"raw":"data: x"}"#).unwrap();
        assert_eq!(
            s.reply,
            ScriptedReply::Raw {
                text: "data: x".into(),
                content_type: "text/event-stream".into()
            }
        );

        let s = parse(
            r#"{"events":[],"when":{"header":{"X-Codex-Window-Id":"w"},"body_contains":"F"}}"#,
        )
        .unwrap();
        assert_eq!(
            s.when,
            Some(When {
                body_contains: vec!["F".into()],
                headers: vec![("x-codex-window-id".into(), "w".into())]
            })
        );
    }

    #[test]
    fn bad_forms_are_errors_that_say_why() {
        let cases = [
            ("3", "array of events or an object"),
            ("{}", "needs one of"),
            (r#"{"events":[],"status":500}"#, "only one of"),
            (r#"{"events":{}}"#, "must be an array"),
            (r#"{"events":[],"delay":5}"#, "unknown field \"delay\""),
            (r#"{"status":"500"}"#, "100 to 999"),
            (r#"{"status":42}"#, "100 to 999"),
            (r#"{"status":500,"delay_ms":-1}"#, "non-negative"),
            (r#"{"raw":5}"#, "\"raw\" must be a string"),
            (
                r#"{"status":500,"headers":{"a b":"c"}}"#,
                "not a valid header name",
            ),
            (
                r#"{"status":500,"headers":{"a":"c\nd"}}"#,
                "not a valid header value",
            ),
            (r#"{"status":500,"headers":{"a":1}}"#, "must be a string"),
            (r#"[{"delta":"x"}]"#, "event 0"),
            (r#"{"events":[],"when":{"path":"x"}}"#, "unknown condition"),
            (
                r#"{"events":[],"when":{"body_contains":3}}"#,
                "body_contains",
            ),
        ];
        for (text, needle) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn list_errors_name_the_index() {
        let err = parse_list(&json!([[], [], {"status": 1}])).unwrap_err();
        assert!(err.to_string().starts_with("response 2: "), "{err}");
        assert!(parse_list(&json!({})).is_err());
        assert_eq!(parse_list(&json!([[], []])).unwrap().len(), 2);
    }

    #[test]
    fn when_matches_body_text_raw_or_escaped_and_headers() {
        let when = Scripted::sse(vec![])
            .when_body_contains("say \"hi\"")
            .when_header("X-Win", "w1")
            .when
            .unwrap();
        let body = br#"{"input":"say \"hi\" now"}"#;
        let headers = vec![("x-win".to_string(), "w1".to_string())];
        assert!(when.matches(body, &headers));
        assert!(!when.matches(body, &[]));
        assert!(!when.matches(b"{}", &headers));
        let raw = When {
            body_contains: vec!["FORKWORD_1".into()],
            headers: vec![],
        };
        assert!(raw.matches(b"xxFORKWORD_1xx", &[]));
        assert!(!raw.matches(b"FORKWORD_2", &[]));
    }
}
