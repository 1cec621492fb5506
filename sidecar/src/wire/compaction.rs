//! Compaction on the wire: the `compaction` output item, the events that carry it (remote
//! compaction v2 over `/responses`) and the JSON body of `POST …/responses/compact` (remote
//! compaction v1), as `transports.md` §3 describes them.
//!
//! ```
//! use codex_parity_sidecar::compaction;
//! let body = compaction::compact_body(vec![compaction::item("cmp_1", "SUMMARY")]);
//! assert_eq!(body["output"][0]["type"], "compaction");
//! let events = compaction::compaction_response("resp_c", "cmp_1", "SUMMARY");
//! assert_eq!(events[1]["item"]["encrypted_content"], "SUMMARY");
//! ```

use serde_json::{Value, json};

use crate::wire::events;

/// The output item `{"type":"compaction","id":ID,"encrypted_content":SUMMARY}`.
pub fn item(id: &str, encrypted_content: &str) -> Value {
    json!({"type": "compaction", "id": id, "encrypted_content": encrypted_content})
}

/// `response.output_item.done` carrying a compaction item.
pub fn item_done(id: &str, encrypted_content: &str) -> Value {
    json!({"type": "response.output_item.done", "item": item(id, encrypted_content)})
}

/// A whole v2 compaction response: `created`, one compaction item, `completed`.
pub fn compaction_response(resp_id: &str, item_id: &str, encrypted_content: &str) -> Vec<Value> {
    vec![
        events::response_created(resp_id),
        item_done(item_id, encrypted_content),
        events::completed(resp_id),
    ]
}

/// The JSON body that `POST …/responses/compact` answers: `{"output": [items…]}`; the output
/// replaces codex's history.
pub fn compact_body(output: Vec<Value>) -> Value {
    json!({"output": output})
}

/// A user message item (`role: user`, one `input_text`), for compact bodies that keep the
/// user's messages as codex's own tests do.
pub fn user_message(text: &str) -> Value {
    json!({"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": text}]})
}
