//! What the mock records of every request it receives, and how a record becomes the
//! protocol's `R` ([`CapturedRequest`]). It builds on [`crate::mock::captured`], never the
//! other way round.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

pub(crate) use crate::mock::captured::is_model_request;
use crate::mock::captured::{CapturedRequest, Outcome};
use crate::{decode, pairing};

/// The nine headers that `R.headers` carries when the request had them.
pub const SELECTED_HEADERS: [&str; 9] = [
    "authorization",
    "chatgpt-account-id",
    "content-encoding",
    "content-type",
    "user-agent",
    "x-codex-parent-thread-id",
    "x-codex-turn-metadata",
    "x-codex-window-id",
    "x-openai-subagent",
];

/// Which transport carried a captured request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Transport {
    /// A plain HTTP request.
    #[default]
    Http,
    /// A WebSocket upgrade request (`frame` none) or a text frame on one.
    WebSocket,
}

/// How a response's events left, filled in while it is served.
#[derive(Debug, Clone, Default)]
pub(crate) struct Delivery {
    /// When each event left, in ms since the request arrived.
    pub events_sent_ms: Vec<f64>,
    /// How the response ended (`completed`, `disconnected`, `client_closed`, `stalled`, …).
    pub end: Option<&'static str>,
}

/// One received request as recorded, before it is rendered for a `requests` reply.
#[derive(Debug, Clone)]
pub(crate) struct Capture {
    pub index: u64,
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Header names lower-case, repeated headers joined with `, `, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The decoded body (the raw body when decoding failed).
    pub body: Vec<u8>,
    pub decode_error: Option<String>,
    pub received_at_ms: u64,
    pub outcome: Outcome,
    /// When it arrived, for the event times of [`Delivery`].
    pub started: Instant,
    pub transport: Transport,
    /// The WebSocket connection number (0-based, in upgrade order).
    pub connection: Option<u64>,
    /// The frame number within the connection (0-based), for frames.
    pub frame: Option<u64>,
    /// A problem with the frame's `previous_response_id`.
    pub chain_error: Option<String>,
    /// Whether the sidecar answered a warm-up frame by itself.
    pub auto_warmup: bool,
    /// For a frame continuing a response of its connection: the whole input it stands for.
    pub resolved_input: Option<Vec<Value>>,
    pub delivery: Arc<Mutex<Delivery>>,
}

/// Header pairs with lower-case names, repeated names joined with `, `.
pub(crate) fn merge_headers<'a>(
    pairs: impl Iterator<Item = (&'a str, &'a [u8])>,
) -> Vec<(String, String)> {
    let mut merged: Vec<(String, String)> = Vec::new();
    for (name, value) in pairs {
        let name = name.to_ascii_lowercase();
        let value = String::from_utf8_lossy(value);
        match merged.iter_mut().find(|(n, _)| *n == name) {
            Some((_, existing)) => {
                existing.push_str(", ");
                existing.push_str(&value);
            }
            None => merged.push((name, value.into_owned())),
        }
    }
    merged
}

/// Decodes a raw body by the request's `content-encoding`; on failure keeps the raw bytes and
/// returns the error text.
pub(crate) fn decoded_body(headers: &[(String, String)], raw: &[u8]) -> (Vec<u8>, Option<String>) {
    let encoding = headers
        .iter()
        .find(|(n, _)| n == "content-encoding")
        .map(|(_, v)| v.as_str());
    match decode::decode_body(encoding, raw) {
        Ok(body) => (body, None),
        Err(e) => (raw.to_vec(), Some(e.to_string())),
    }
}

/// One HTTP request read as the sidecar reads what it receives: header names lower-cased and
/// repeated ones joined, the body decoded by its `content-encoding` (codex's `zstd`), the
/// input checked; `index` is its place in arrival order. What another server's mock (the
/// `codex-parity-wiremock` crate's) captures with.
pub fn read_http_request<'a>(
    index: u64,
    method: &str,
    path: &str,
    query: Option<&str>,
    headers: impl Iterator<Item = (&'a str, &'a [u8])>,
    raw_body: &[u8],
) -> CapturedRequest {
    let headers = merge_headers(headers);
    let (body, decode_error) = decoded_body(&headers, raw_body);
    let mut record = Capture::new(
        method.to_string(),
        path.to_string(),
        query.map(str::to_string),
        headers,
    );
    record.index = index;
    record.body = body;
    record.decode_error = decode_error;
    record.to_captured_request()
}

impl Capture {
    /// Whether this is a model request.
    pub(crate) fn is_model_request(&self) -> bool {
        match self.transport {
            Transport::Http => is_model_request(&self.method, &self.path),
            Transport::WebSocket => {
                self.frame.is_some()
                    && serde_json::from_slice::<Value>(&self.body)
                        .ok()
                        .and_then(|b| b.get("type").and_then(Value::as_str).map(str::to_string))
                        .as_deref()
                        == Some("response.create")
            }
        }
    }

    /// A fresh record with nothing delivered yet.
    pub(crate) fn new(
        method: String,
        path: String,
        query: Option<String>,
        headers: Vec<(String, String)>,
    ) -> Capture {
        Capture {
            index: 0,
            method,
            path,
            query,
            headers,
            body: Vec::new(),
            decode_error: None,
            received_at_ms: crate::mock::captured::now_ms(),
            outcome: Outcome::Scripted,
            started: Instant::now(),
            transport: Transport::Http,
            connection: None,
            frame: None,
            chain_error: None,
            auto_warmup: false,
            resolved_input: None,
            delivery: Arc::new(Mutex::new(Delivery::default())),
        }
    }

    /// `METHOD path[?query] (index N)`, for messages.
    pub(crate) fn describe(&self) -> String {
        if let (Some(connection), Some(frame)) = (self.connection, self.frame) {
            return format!(
                "WebSocket frame {frame} on connection {connection} of {} (request index {})",
                self.path, self.index
            );
        }
        match &self.query {
            Some(q) => format!(
                "{} {}?{} (request index {})",
                self.method, self.path, q, self.index
            ),
            None => format!(
                "{} {} (request index {})",
                self.method, self.path, self.index
            ),
        }
    }

    /// The protocol's `R` for this request; parses the body and checks tool-call pairing.
    pub(crate) fn to_captured_request(&self) -> CapturedRequest {
        let parsed: Option<Value> = serde_json::from_slice(&self.body).ok();
        let body_text = match (&parsed, self.body.is_empty()) {
            (None, false) => Some(String::from_utf8_lossy(&self.body).into_owned()),
            _ => None,
        };
        let pairing_violations = match (&parsed, self.is_model_request()) {
            (Some(body), true) => pairing::violations(body),
            _ => Vec::new(),
        };
        let all_headers: BTreeMap<String, String> = self.headers.iter().cloned().collect();
        let headers = all_headers
            .iter()
            .filter(|(name, _)| SELECTED_HEADERS.contains(&name.as_str()))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        let delivery = self
            .delivery
            .lock()
            .map(|d| d.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone());
        CapturedRequest {
            transport: (self.transport == Transport::WebSocket).then(|| "websocket".to_string()),
            connection: self.connection,
            frame: self.frame,
            events_sent_ms: delivery.events_sent_ms,
            stream_end: delivery.end.map(str::to_string),
            chain_error: self.chain_error.clone(),
            auto_warmup: self.auto_warmup,
            resolved_input: self.resolved_input.clone(),
            index: self.index,
            method: self.method.clone(),
            path: self.path.clone(),
            query: self.query.clone(),
            headers,
            all_headers,
            body: parsed.unwrap_or(Value::Null),
            body_text,
            decode_error: self.decode_error.clone(),
            received_at_ms: self.received_at_ms,
            outcome: self.outcome,
            pairing_violations,
        }
    }
}
