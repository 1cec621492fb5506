//! Responses-over-WebSocket frames (`transports.md` §1.4–1.5): what a client sends
//! (`response.create`, the warm-up with `generate: false`) and the wrapped `error` event a
//! server sends instead of an HTTP error status. Every other server frame is one event JSON,
//! exactly what would follow `data:` in SSE.
//!
//! ```
//! use codex_parity_sidecar::ws_frames;
//! use serde_json::json;
//! let warm = ws_frames::response_create(json!({"model": "m", "input": [], "generate": false}));
//! assert!(ws_frames::is_warmup(&warm));
//! let e = ws_frames::error_frame(429, json!({"type": "usage_limit_reached"}), &[]);
//! assert_eq!(e["status"], 429);
//! ```

use serde_json::{Map, Value, json};

/// A `response.create` frame: the HTTP request body with `"type":"response.create"` first.
pub fn response_create(body: Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), Value::from("response.create"));
    if let Value::Object(object) = body {
        for (key, value) in object {
            if key != "type" {
                out.insert(key, value);
            }
        }
    }
    Value::Object(out)
}

/// Whether a client frame is the warm-up (`"generate": false`).
pub fn is_warmup(frame: &Value) -> bool {
    frame.get("generate") == Some(&Value::Bool(false))
}

/// The frame's `previous_response_id`, if any.
pub fn previous_response_id(frame: &Value) -> Option<&str> {
    frame.get("previous_response_id").and_then(Value::as_str)
}

/// The wrapped error event: `{"type":"error","status":S,"error":E,"headers":{…}}`; codex maps
/// a status of 400 or more to an HTTP error and reads rate limits from `headers`.
pub fn error_frame(status: u16, error: Value, headers: &[(String, String)]) -> Value {
    let headers: Map<String, Value> = headers
        .iter()
        .map(|(n, v)| (n.clone(), Value::from(v.as_str())))
        .collect();
    json!({"type": "error", "status": status, "error": error, "headers": headers})
}

/// The error frame for a scripted HTTP error body: its `error` member when it has one, else
/// the whole body.
pub fn error_frame_for_body(status: u16, body: &Value, headers: &[(String, String)]) -> Value {
    let error = body.get("error").cloned().unwrap_or_else(|| body.clone());
    error_frame(status, error, headers)
}

/// The ids of responses a body completes (`response.completed`'s `response.id`), which later
/// frames on the same connection may name in `previous_response_id`.
pub fn completed_ids(events: &[Value]) -> impl Iterator<Item = &str> {
    events.iter().filter_map(|e| {
        (e.get("type").and_then(Value::as_str) == Some("response.completed"))
            .then(|| e.pointer("/response/id").and_then(Value::as_str))
            .flatten()
    })
}

/// The items a body streams as `response.output_item.done`: the response's output, which a
/// later frame naming it in `previous_response_id` continues from.
pub fn output_items(events: &[Value]) -> impl Iterator<Item = &Value> {
    events.iter().filter_map(|e| {
        (e.get("type").and_then(Value::as_str) == Some("response.output_item.done"))
            .then(|| e.get("item"))
            .flatten()
    })
}

/// A frame's own `input` items (none when it has no `input` array).
pub fn input_items(frame: &Value) -> Vec<Value> {
    frame
        .get("input")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}
