//! Server-sent-events framing of a response body, exactly as `responses-wire-format.md` §2
//! fixes it: `event:` line, `data:` line with the compact JSON of the whole event (omitted for
//! a type-only event), blank line; no terminator.

use serde_json::Value;

/// An event that cannot be framed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// The event is not a JSON object with a string `type`.
    #[error("event {index} is not a JSON object with a string \"type\": {event}")]
    MissingType {
        /// Position of the event in the body.
        index: usize,
        /// The event's JSON, shortened.
        event: String,
    },
}

/// Frames `events` as one SSE body.
///
/// ```
/// use codex_parity_sidecar::{events, sse};
/// let list = [events::output_text_delta("hi"), serde_json::json!({"type": "ping"})];
/// let body = sse::frame(&list).unwrap();
/// assert_eq!(
///     body,
///     "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\nevent: ping\n\n"
/// );
/// ```
pub fn frame(events: &[Value]) -> Result<String, SseError> {
    let mut out = String::new();
    for (index, event) in events.iter().enumerate() {
        frame_event(index, event, &mut out)?;
    }
    Ok(out)
}

/// Checks that every event can be framed (each has a string `type`), without framing.
pub fn check(events: &[Value]) -> Result<(), SseError> {
    for (index, event) in events.iter().enumerate() {
        event_type(index, event)?;
    }
    Ok(())
}

/// The event's `type`, or the error naming it.
fn event_type(index: usize, event: &Value) -> Result<&str, SseError> {
    event
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| SseError::MissingType {
            index,
            event: shorten(&event.to_string(), 200),
        })
}

fn frame_event(index: usize, event: &Value, out: &mut String) -> Result<(), SseError> {
    let kind = event_type(index, event)?;
    let object = event.as_object();
    out.push_str("event: ");
    out.push_str(kind);
    out.push('\n');
    if object.is_some_and(|o| o.len() > 1) {
        out.push_str("data: ");
        out.push_str(&event.to_string());
        out.push('\n');
    }
    out.push('\n');
    Ok(())
}

/// `text` cut to at most `max` characters, with `…` when cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::events;
    use serde_json::json;

    #[test]
    fn frames_the_doc_example_byte_for_byte() {
        let body = frame(&[
            events::response_created("resp-1"),
            events::assistant_message("msg-1", "hello"),
            events::completed("resp-1"),
        ])
        .unwrap();
        let expected = concat!(
            "event: response.created\n",
            "data: {\"type\":\"response.created\",\"response\":{\"id\":\"resp-1\"}}\n",
            "\n",
            "event: response.output_item.done\n",
            "data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"msg-1\",\"content\":[{\"type\":\"output_text\",\"text\":\"hello\"}]}}\n",
            "\n",
            "event: response.completed\n",
            "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp-1\",\"usage\":{\"input_tokens\":0,\"input_tokens_details\":null,\"output_tokens\":0,\"output_tokens_details\":null,\"total_tokens\":0}}}\n",
            "\n",
        );
        assert_eq!(body, expected);
    }

    #[test]
    fn type_only_event_has_no_data_line() {
        assert_eq!(
            frame(&[json!({"type": "response.in_progress"})]).unwrap(),
            "event: response.in_progress\n\n"
        );
    }

    #[test]
    fn empty_body_is_empty() {
        assert_eq!(frame(&[]).unwrap(), "");
    }

    #[test]
    fn data_is_compact_and_escaped() {
        let body = frame(&[events::output_text_delta("a \"q\"\nb")]).unwrap();
        assert_eq!(
            body,
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a \\\"q\\\"\\nb\"}\n\n"
        );
    }

    #[test]
    fn event_without_string_type_is_an_error_naming_its_index() {
        let err = frame(&[events::completed("r"), json!({"delta": "x"})]).unwrap_err();
        assert!(matches!(err, SseError::MissingType { index: 1, .. }));
        assert!(err.to_string().contains("event 1"));
        assert!(frame(&[json!({"type": 3})]).is_err());
        assert!(frame(&[json!("response.created")]).is_err());
    }

    #[test]
    fn shorten_cuts_on_char_boundaries() {
        assert_eq!(shorten("héllo", 2), "hé…");
        assert_eq!(shorten("abc", 3), "abc");
    }
}
