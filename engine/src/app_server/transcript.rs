//! What one `codex app-server` sent to its client, in the order it arrived: the answers to
//! the client's requests (each with the method it answers), the notifications and the
//! requests the server made. An integrator's code reads exactly this stream; the transcript
//! is what the drift layer normalises and the codex layer's schema checks.

use serde_json::{Map, Value, json};

/// What kind of message codex sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SentKind {
    /// A successful answer to a client request (`result`).
    Response,
    /// An error answer to a client request (`error`).
    Error,
    /// A notification (`params`).
    Notification,
    /// A server-to-client request (`params`).
    Request,
    /// An event line of `codex exec --json` (the whole event as `params`; its `type` is the
    /// method).
    Event,
}

impl SentKind {
    /// The word used in transcripts and reports: `response`, `error`, `notification`,
    /// `request`, `event`.
    pub fn word(self) -> &'static str {
        match self {
            SentKind::Response => "response",
            SentKind::Error => "error",
            SentKind::Notification => "notification",
            SentKind::Request => "request",
            SentKind::Event => "event",
        }
    }

    /// The kind a word names (the inverse of [`SentKind::word`]).
    pub fn from_word(word: &str) -> Option<SentKind> {
        Some(match word {
            "response" => SentKind::Response,
            "error" => SentKind::Error,
            "notification" => SentKind::Notification,
            "request" => SentKind::Request,
            "event" => SentKind::Event,
            _ => return None,
        })
    }
}

/// The method a response answers when the client did not make the request through
/// [`crate::app_server::AppServer::call`] (a raw line of a protocol test).
pub const UNKNOWN_METHOD: &str = "?";

/// One message codex sent to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    /// What kind of message it is.
    pub kind: SentKind,
    /// Its method: for answers, the method of the request they answer.
    pub method: String,
    /// `result` of a response, `error` of an error, `params` otherwise (`Null` if absent).
    pub payload: Value,
    /// Top-level fields of a notification besides `method` and `params` (`emittedAtMs`).
    pub extra: Map<String, Value>,
}

impl Sent {
    /// A message without extra top-level fields.
    pub fn new(kind: SentKind, method: impl Into<String>, payload: Value) -> Sent {
        Sent {
            kind,
            method: method.into(),
            payload,
            extra: Map::new(),
        }
    }

    /// The message as a transcript entry: `{"type", "method", "result"|"error"|"params"}`,
    /// plus `extra` when there is any. Ids are left out: they number the client's calls.
    pub fn to_json(&self) -> Value {
        let payload_key = match self.kind {
            SentKind::Response => "result",
            SentKind::Error => "error",
            SentKind::Notification | SentKind::Request | SentKind::Event => "params",
        };
        let mut out = json!({"type": self.kind.word(), "method": self.method});
        if let Value::Object(obj) = &mut out {
            obj.insert(payload_key.into(), self.payload.clone());
            if !self.extra.is_empty() {
                obj.insert("extra".into(), Value::Object(self.extra.clone()));
            }
        }
        out
    }

    /// Reads an entry written by [`Sent::to_json`]; `None` when it is not one.
    pub fn from_json(value: &Value) -> Option<Sent> {
        let kind = SentKind::from_word(value.get("type")?.as_str()?)?;
        let method = value.get("method")?.as_str()?.to_string();
        let payload = ["result", "error", "params"]
            .iter()
            .find_map(|k| value.get(*k))
            .cloned()
            .unwrap_or(Value::Null);
        let extra = value
            .get("extra")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        Some(Sent {
            kind,
            method,
            payload,
            extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_through_json() {
        let mut extra = Map::new();
        extra.insert("emittedAtMs".into(), json!(5));
        let sent = Sent {
            kind: SentKind::Notification,
            method: "turn/started".into(),
            payload: json!({"turn": {"id": "t"}}),
            extra,
        };
        let value = sent.to_json();
        assert_eq!(value["type"], "notification");
        assert_eq!(value["params"]["turn"]["id"], "t");
        assert_eq!(Sent::from_json(&value), Some(sent));
        let answer = Sent::new(SentKind::Response, "thread/start", json!({}));
        assert_eq!(
            answer.to_json(),
            json!({"type": "response", "method": "thread/start", "result": {}})
        );
        assert_eq!(
            Sent::from_json(&json!({"type": "nope", "method": "m"})),
            None
        );
    }
}
