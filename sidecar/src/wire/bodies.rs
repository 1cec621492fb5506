//! Standard response bodies (`responses-wire-format.md` §4): whole event lists for the
//! common turns, ready to pass to [`crate::Scripted::sse`] or [`crate::wire::sse::frame`].
//!
//! ```
//! use codex_parity_sidecar::{bodies, Scripted};
//! let reply = Scripted::sse(bodies::assistant_reply("resp-1", "Hi!"));
//! assert_eq!(reply.to_json()[1]["item"]["id"], "msg-resp-1");
//! ```

use serde_json::Value;

use crate::wire::events;

/// An empty response: `created(id)`, `completed(id)`.
pub fn empty_response(id: &str) -> Vec<Value> {
    vec![events::response_created(id), events::completed(id)]
}

/// One assistant message: `created(resp_id)`, `assistant_message("msg-"+resp_id, text)`,
/// `completed(resp_id)`.
pub fn assistant_reply(resp_id: &str, text: &str) -> Vec<Value> {
    vec![
        events::response_created(resp_id),
        events::assistant_message(&format!("msg-{resp_id}"), text),
        events::completed(resp_id),
    ]
}

/// A streamed message: `created`, an empty `message_item_added`, one `output_text_delta` per
/// part, the whole message, `completed`.
pub fn streaming_reply(resp_id: &str, item_id: &str, parts: &[&str]) -> Vec<Value> {
    let mut body = vec![
        events::response_created(resp_id),
        events::message_item_added(item_id, ""),
    ];
    body.extend(parts.iter().map(|p| events::output_text_delta(p)));
    body.push(events::assistant_message(item_id, &parts.concat()));
    body.push(events::completed(resp_id));
    body
}

/// A function call turn: `created(resp_id)`, `function_call(call_id, name, arguments)`,
/// `completed(resp_id)`.
pub fn function_call_reply(
    resp_id: &str,
    call_id: &str,
    name: &str,
    arguments: &str,
) -> Vec<Value> {
    vec![
        events::response_created(resp_id),
        events::function_call(call_id, name, arguments),
        events::completed(resp_id),
    ]
}

/// A response whose only output is `item` (a tool call event of [`crate::wire::events`],
/// say): `created(resp_id)`, `item`, `completed(resp_id)`.
pub fn one_item_reply(resp_id: &str, item: Value) -> Vec<Value> {
    vec![
        events::response_created(resp_id),
        item,
        events::completed(resp_id),
    ]
}

/// One assistant message `text` (item `item_id`) whose completion reports `usage`:
/// `created(resp_id)`, `assistant_message(item_id, text)`,
/// `completed_with_usage(resp_id, usage)`.
pub fn costed_reply(resp_id: &str, item_id: &str, text: &str, usage: events::Usage) -> Vec<Value> {
    vec![
        events::response_created(resp_id),
        events::assistant_message(item_id, text),
        events::completed_with_usage(resp_id, usage),
    ]
}

/// `exec_command` running `apply_patch` with `patch` in a heredoc (codex intercepts it and
/// applies the patch through its own patch path).
pub fn apply_patch_exec_call(call_id: &str, patch: &str) -> Value {
    events::exec_command_call(call_id, &format!("apply_patch <<'EOF'\n{patch}\nEOF\n"))
}

/// A failed response: `created(resp_id)`, `failed(resp_id, code, message)`.
pub fn failed_reply(resp_id: &str, code: &str, message: &str) -> Vec<Value> {
    vec![
        events::response_created(resp_id),
        events::failed(resp_id, code, message),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::events::*;

    #[test]
    fn standard_bodies_list_the_doc_events() {
        assert_eq!(
            empty_response("r"),
            vec![response_created("r"), completed("r")]
        );
        assert_eq!(
            assistant_reply("resp-1", "hi"),
            vec![
                response_created("resp-1"),
                assistant_message("msg-resp-1", "hi"),
                completed("resp-1")
            ]
        );
        assert_eq!(
            streaming_reply("r", "m", &["He", "llo"]),
            vec![
                response_created("r"),
                message_item_added("m", ""),
                output_text_delta("He"),
                output_text_delta("llo"),
                assistant_message("m", "Hello"),
                completed("r")
            ]
        );
        assert_eq!(
            function_call_reply("resp-1", "c", "f", "{}"),
            vec![
                response_created("resp-1"),
                function_call("c", "f", "{}"),
                completed("resp-1")
            ]
        );
        assert_eq!(
            failed_reply("r", "server_error", "x"),
            vec![response_created("r"), failed("r", "server_error", "x")]
        );
    }
}
