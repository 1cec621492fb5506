//! What a recording holds: the model side as [`Exchange`]s (one per model request the
//! recording proxy forwarded, with every response event and when it arrived) and the client
//! side as [`ClientLine`]s (each JSON-RPC line the shim relayed, with its direction and
//! time). Times are wall-clock microseconds since the Unix epoch ([`now_us`]), so that the
//! proxy (in the `record` process) and the shim (in the client's process tree) share one
//! clock.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Microseconds since the Unix epoch.
pub type Micros = u64;

/// The wall clock now, in [`Micros`].
pub fn now_us() -> Micros {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as Micros)
        .unwrap_or(0)
}

/// The event types that end a response: after one of them codex has the whole answer.
pub const FINAL_EVENT_TYPES: [&str; 4] = [
    "response.completed",
    "response.failed",
    "response.incomplete",
    "error",
];

/// Whether `event` ends a response (its type is one of [`FINAL_EVENT_TYPES`]).
pub fn is_final_event(event: &Value) -> bool {
    event
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| FINAL_EVENT_TYPES.contains(&t))
}

/// How a model request reached the proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Transport {
    /// An HTTP request (`POST …/responses`, SSE or a whole body).
    Http,
    /// A `response.create` frame on the Responses WebSocket: `connection` counts upgrades
    /// from 0 in the order they arrived.
    WebSocket {
        /// The upgrade it came on, 0-based.
        connection: usize,
    },
}

/// How the response to one model request ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum End {
    /// The upstream finished the body (SSE: the stream ended; WebSocket: a
    /// `response.completed`, `response.failed` or `response.incomplete` frame, or an
    /// `error` frame).
    Completed,
    /// Codex went away before the response's final event (an interrupt, a timeout of its
    /// own). Going away after it is [`End::Completed`]: codex had the whole answer.
    ClientClosed {
        /// When the proxy saw it go.
        at: Micros,
    },
    /// The upstream closed the connection before the body ended.
    UpstreamClosed {
        /// When.
        at: Micros,
    },
    /// The upstream could not be reached or answered with something unreadable; the proxy
    /// answered codex `502` with this message.
    UpstreamError {
        /// What went wrong.
        message: String,
    },
}

/// One model request and its response, as the proxy forwarded them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// 0-based, in the order requests arrived.
    pub index: usize,
    /// HTTP or WebSocket.
    pub transport: Transport,
    /// `POST`, `GET`, …; `WS` for a WebSocket frame.
    pub method: String,
    /// The path codex asked for, below the provider's base URL (`/responses`,
    /// `/responses/compact`, `/models?client_version=…`).
    pub path: String,
    /// When the request arrived.
    pub request_at: Micros,
    /// The request body as JSON (`Value::Null` when empty or not JSON).
    pub request: Value,
    /// The upstream's HTTP status (101 for WebSocket frames; for [`End::UpstreamError`] 502,
    /// or the status with which the upstream refused a WebSocket upgrade).
    pub status: u16,
    /// The upstream's response headers known to carry no secret, names lower-cased
    /// (`crate::record::headers::is_safe_header`).
    pub headers: Vec<(String, String)>,
    /// Each event of the response with when the proxy received it: the JSON after `data:`
    /// of an SSE stream, or each text frame of the WebSocket.
    pub events: Vec<(Micros, Value)>,
    /// A body that was not an event stream (an error JSON, a compaction answer, the model
    /// list), as text.
    pub body: Option<String>,
    /// How the response ended.
    pub end: End,
}

impl Exchange {
    /// Whether this is a model request: a `POST …/responses` or a WebSocket
    /// `response.create` frame, not a warm-up (`"generate": false`, which the sidecar
    /// answers by itself) and not the model list.
    pub fn is_model_request(&self) -> bool {
        match self.transport {
            Transport::Http => {
                self.method == "POST" && self.path.trim_end_matches('/').ends_with("/responses")
            }
            Transport::WebSocket { .. } => {
                self.request.get("type").and_then(Value::as_str) == Some("response.create")
                    && self.request.get("generate") != Some(&Value::Bool(false))
            }
        }
    }

    /// Whether this is a remote compaction (`POST …/responses/compact`).
    pub fn is_compaction(&self) -> bool {
        self.method == "POST"
            && self
                .path
                .trim_end_matches('/')
                .ends_with("/responses/compact")
    }
}

/// One JSON-RPC line the shim relayed between the client and `codex app-server`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientLine {
    /// When the shim read it.
    pub at: Micros,
    /// `true`: the client sent it to codex; `false`: codex sent it to the client.
    pub from_client: bool,
    /// The line as relayed (without its newline).
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exchange(transport: Transport, method: &str, path: &str, request: Value) -> Exchange {
        Exchange {
            index: 0,
            transport,
            method: method.into(),
            path: path.into(),
            request_at: 0,
            request,
            status: 200,
            headers: vec![],
            events: vec![],
            body: None,
            end: End::Completed,
        }
    }

    #[test]
    fn model_requests_are_told_from_warmups_model_lists_and_compactions() {
        let ws = Transport::WebSocket { connection: 0 };
        let create = json!({"type": "response.create", "input": []});
        let warmup = json!({"type": "response.create", "generate": false});
        assert!(exchange(Transport::Http, "POST", "/responses", json!({})).is_model_request());
        assert!(exchange(ws.clone(), "WS", "/responses", create).is_model_request());
        assert!(!exchange(ws, "WS", "/responses", warmup).is_model_request());
        assert!(!exchange(Transport::Http, "GET", "/models", Value::Null).is_model_request());
        let compact = exchange(Transport::Http, "POST", "/responses/compact", json!({}));
        assert!(!compact.is_model_request() && compact.is_compaction());
    }
}
