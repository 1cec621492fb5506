//! What the mock records of every request it receives, and how a record becomes the
//! protocol's `R` ([`CapturedRequest`]). It builds on [`crate::mock::captured`], never the
//! other way round.

use std::collections::BTreeMap;

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

impl Capture {
    /// Whether this is a model request.
    pub fn is_model_request(&self) -> bool {
        is_model_request(&self.method, &self.path)
    }

    /// `METHOD path[?query] (index N)`, for messages.
    pub fn describe(&self) -> String {
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
    pub fn to_captured_request(&self) -> CapturedRequest {
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
        CapturedRequest {
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
