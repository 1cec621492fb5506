//! The events of a `text/event-stream` body read chunk by chunk as the proxy relays it: each
//! event's `data:` payload as JSON (a JSON string when it is not JSON, such as `[DONE]`),
//! timed with when the chunk that ended it arrived. Events and lines may be split across
//! chunks anywhere; lines end with `\n`, `\r\n` or `\r`, as the SSE format allows.

use serde_json::Value;

use super::exchange::Micros;

/// An incremental SSE reader.
#[derive(Debug, Default)]
pub struct SseEvents {
    /// Bytes of a line not yet ended.
    line: Vec<u8>,
    /// The `data:` lines of the event being read, joined with `\n`.
    data: Option<String>,
    /// The last chunk ended with `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
}

impl SseEvents {
    /// Reads a chunk that arrived at `at`; returns the events it completed.
    pub fn push(&mut self, chunk: &[u8], at: Micros) -> Vec<(Micros, Value)> {
        let mut events = Vec::new();
        for &byte in chunk {
            if std::mem::take(&mut self.after_cr) && byte == b'\n' {
                continue;
            }
            match byte {
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.end_line(&line) {
                        events.push((at, event));
                    }
                }
                _ => self.line.push(byte),
            }
        }
        events
    }

    /// Handles one whole line; the event's payload when the line was blank and ended one.
    fn end_line(&mut self, line: &[u8]) -> Option<Value> {
        if line.is_empty() {
            return self.data.take().map(|data| payload(&data));
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        if field == "data" {
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            }
        }
        None
    }
}

/// An event's data as JSON, or as a JSON string when it is not JSON.
fn payload(data: &str) -> Value {
    serde_json::from_str(data).unwrap_or_else(|_| Value::String(data.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_split_anywhere_are_read_whole_and_timed_by_their_last_chunk() {
        let body = "event: response.created\ndata: {\"type\":\"response.created\"}\n\n\
                    event: x\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n: comment\n\ndata: [DONE]\n\n";
        for split in 0..body.len() {
            let mut sse = SseEvents::default();
            let (first, second) = body.as_bytes().split_at(split);
            let mut events = sse.push(first, 1);
            events.extend(sse.push(second, 2));
            let values: Vec<&Value> = events.iter().map(|(_, v)| v).collect();
            assert_eq!(
                values,
                [
                    &json!({"type": "response.created"}),
                    &json!({"a": 1}),
                    &json!("[DONE]"),
                ],
                "split at {split}"
            );
            let first_end = body.find("\n\n").unwrap() + 2;
            assert_eq!(events[0].0, if split >= first_end { 1 } else { 2 });
            assert_eq!(events[2].0, 2);
        }
    }

    #[test]
    fn an_unended_event_is_not_an_event() {
        let mut sse = SseEvents::default();
        assert!(sse.push(b"data: {\"type\":\"x\"}\n", 1).is_empty());
    }
}
