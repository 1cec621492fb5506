//! A captured request as the `requests` reply carries it (the protocol's `R`), with the
//! accessors of `responses-wire-format.md` §8.2 for assertions on what codex sent.
//!
//! ```
//! use codex_parity_sidecar::captured::CapturedRequest;
//! let r: CapturedRequest = serde_json::from_value(serde_json::json!({
//!     "path": "/v1/responses",
//!     "headers": {"content-type": "application/json"},
//!     "body": {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}
//! })).unwrap();
//! assert_eq!(r.last_user_text().as_deref(), Some("hi"));
//! assert_eq!(r.header("Content-Type"), Some("application/json"));
//! ```

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Whether `method` and `path` make a model request (`POST …/responses`).
pub(crate) fn is_model_request(method: &str, path: &str) -> bool {
    method == "POST" && path.ends_with("/responses")
}

/// How the sidecar answered a captured request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A scripted response (or the models body) answered it.
    #[default]
    Scripted,
    /// Nothing fitted: it got the 500 "no scripted response was left".
    Unscripted,
}

/// One captured request, in the protocol's JSON shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturedRequest {
    /// 0-based arrival order among all captured requests.
    #[serde(default)]
    pub index: u64,
    /// HTTP method, e.g. `POST`.
    #[serde(default)]
    pub method: String,
    /// URL path without the query string, e.g. `/v1/responses`.
    pub path: String,
    /// The query string without `?`, `null` when there was none.
    #[serde(default)]
    pub query: Option<String>,
    /// The nine selected headers that the request had (names lower-case).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Every header, names lower-case (repeated headers joined with `, `).
    #[serde(default)]
    pub all_headers: BTreeMap<String, String>,
    /// The decoded body parsed as JSON, `null` if it is not JSON.
    #[serde(default)]
    pub body: Value,
    /// The decoded body as text, present only when it is not JSON (and not empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_text: Option<String>,
    /// Why the body could not be decoded, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_error: Option<String>,
    /// When it arrived, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub received_at_ms: u64,
    /// Scripted or unscripted.
    #[serde(default)]
    pub outcome: Outcome,
    /// Violations of the tool-call pairing invariant (model requests only); empty when fine.
    #[serde(default)]
    pub pairing_violations: Vec<String>,
    /// `"websocket"` for a WebSocket upgrade or frame; absent for plain HTTP (v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The WebSocket connection number, 0-based in upgrade order (v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<u64>,
    /// The frame number within its connection, 0-based; absent for the upgrade itself (v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<u64>,
    /// When each event of the response left, in ms since the request arrived (v2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events_sent_ms: Vec<f64>,
    /// How the response stream ended: `completed`, `disconnected` (scripted), `client_closed`,
    /// `stalled` (still held when captured), `released` … (v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_end: Option<String>,
    /// A WebSocket frame naming a `previous_response_id` this connection never served (v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_error: Option<String>,
    /// The sidecar answered this warm-up frame by itself (v2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub auto_warmup: bool,
    /// For a WebSocket frame whose `previous_response_id` names a response its connection
    /// completed: the input the frame stands for, as the Responses API resolves it (that
    /// response's own resolved input, its output items, then the frame's `input`) (v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_input: Option<Vec<Value>>,
}

/// What an accessor could not find.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapturedError {
    /// The body is not JSON.
    #[error("request {index} ({method} {path}): body is not JSON")]
    BodyNotJson {
        /// The request's index.
        index: u64,
        /// Its method.
        method: String,
        /// Its path.
        path: String,
    },
    /// The body has no `input` array.
    #[error("request {index}: body has no \"input\" array")]
    NoInput {
        /// The request's index.
        index: u64,
    },
    /// No output item of this type for this call.
    #[error("request {index}: no {item_type} for call_id {call_id:?}")]
    NoOutput {
        /// The request's index.
        index: u64,
        /// The output item type looked for.
        item_type: String,
        /// The call id.
        call_id: String,
    },
    /// A header is missing or not JSON.
    #[error("request {index}: header {name}: {problem}")]
    Header {
        /// The request's index.
        index: u64,
        /// The header name.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// A sequence did not hold exactly one request.
    #[error("expected exactly one request, got {0}")]
    NotExactlyOne(usize),
}

impl CapturedRequest {
    /// Whether this is a model request (`POST` on a path ending in `/responses`).
    pub fn is_model_request(&self) -> bool {
        is_model_request(&self.method, &self.path)
    }

    /// The body as JSON; an error if it was not JSON.
    pub fn body_json(&self) -> Result<&Value, CapturedError> {
        if self.body.is_null() {
            return Err(CapturedError::BodyNotJson {
                index: self.index,
                method: self.method.clone(),
                path: self.path.clone(),
            });
        }
        Ok(&self.body)
    }

    /// The body's bytes: the compact JSON, or the text when it was not JSON.
    pub fn body_bytes(&self) -> Vec<u8> {
        match (&self.body, &self.body_text) {
            (Value::Null, Some(text)) => text.as_bytes().to_vec(),
            (Value::Null, None) => Vec::new(),
            (body, _) => body.to_string().into_bytes(),
        }
    }

    /// Whether the body contains `text`, as is or after JSON string escaping (so quotes and
    /// newlines inside JSON strings match).
    pub fn body_contains_text(&self, text: &str) -> bool {
        crate::mock::script::contains_raw_or_escaped(
            &String::from_utf8_lossy(&self.body_bytes()),
            text,
        )
    }

    /// The URL path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The HTTP method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The first value of query parameter `name`, percent-decoded.
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query.as_deref()?.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key) == name).then(|| percent_decode(value))
        })
    }

    /// A header's value, name case-insensitive.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.all_headers
            .get(&name)
            .or_else(|| self.headers.get(&name))
            .map(String::as_str)
    }

    /// `x-codex-turn-metadata` parsed as JSON.
    pub fn turn_metadata(&self) -> Result<Value, CapturedError> {
        let name = "x-codex-turn-metadata";
        let header_error = |problem: String| CapturedError::Header {
            index: self.index,
            name: name.to_string(),
            problem,
        };
        let text = self
            .header(name)
            .ok_or_else(|| header_error("absent".to_string()))?;
        serde_json::from_str(text).map_err(|e| header_error(format!("not JSON: {e}")))
    }

    /// `body.input` as an array.
    pub fn input(&self) -> Result<&Vec<Value>, CapturedError> {
        self.body_json()?
            .get("input")
            .and_then(Value::as_array)
            .ok_or(CapturedError::NoInput { index: self.index })
    }

    /// The whole input the request stands for, whatever the transport: the resolved input of
    /// a WebSocket frame that continues an earlier response, else the body's `input`.
    pub fn full_input(&self) -> Result<&Vec<Value>, CapturedError> {
        match &self.resolved_input {
            Some(input) => Ok(input),
            None => self.input(),
        }
    }

    /// The input items whose `type` is `item_type`.
    pub fn inputs_of_type(&self, item_type: &str) -> Vec<&Value> {
        self.input_items()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some(item_type))
            .collect()
    }

    fn input_items(&self) -> impl Iterator<Item = &Value> {
        self.input().map(|v| v.iter()).into_iter().flatten()
    }

    fn messages<'a>(&'a self, role: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.input_items().filter(move |item| {
            item.get("type")
                .and_then(Value::as_str)
                .unwrap_or("message")
                == "message"
                && item.get("role").and_then(Value::as_str) == Some(role)
        })
    }

    /// Texts of each message with this role, grouped per message: `input_text` parts (and
    /// `output_text` for `assistant`), or a string `content`.
    pub fn message_input_text_groups(&self, role: &str) -> Vec<Vec<String>> {
        self.messages(role)
            .map(|message| match message.get("content") {
                Some(Value::String(text)) => vec![text.clone()],
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter(|part| {
                        let kind = part.get("type").and_then(Value::as_str);
                        kind == Some("input_text")
                            || (role == "assistant" && kind == Some("output_text"))
                    })
                    .filter_map(|part| part.get("text").and_then(Value::as_str).map(str::to_string))
                    .collect(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// Every text of messages with this role, in order.
    pub fn message_input_texts(&self, role: &str) -> Vec<String> {
        self.message_input_text_groups(role)
            .into_iter()
            .flatten()
            .collect()
    }

    /// Whether some message of this role has texts satisfying `pred`.
    pub fn has_message_with_input_texts(
        &self,
        role: &str,
        pred: impl Fn(&[String]) -> bool,
    ) -> bool {
        self.message_input_text_groups(role)
            .iter()
            .any(|texts| pred(texts))
    }

    /// `image_url` of the `input_image` parts of messages with this role.
    pub fn message_input_image_urls(&self, role: &str) -> Vec<String> {
        self.messages(role)
            .filter_map(|m| m.get("content").and_then(Value::as_array))
            .flatten()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("input_image"))
            .filter_map(|part| {
                part.get("image_url")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect()
    }

    /// The text of the last user message (its parts joined with `\n`).
    pub fn last_user_text(&self) -> Option<String> {
        self.message_input_text_groups("user")
            .pop()
            .map(|texts| texts.join("\n"))
    }

    /// `body.instructions`, if present.
    pub fn instructions_text(&self) -> Option<&str> {
        self.body.get("instructions").and_then(Value::as_str)
    }

    fn item_with_call_id(&self, item_type: &str, call_id: &str) -> Option<&Value> {
        self.input_items().find(|item| {
            item.get("type").and_then(Value::as_str) == Some(item_type)
                && item.get("call_id").and_then(Value::as_str) == Some(call_id)
        })
    }

    /// Whether the input has a `function_call` with this `call_id`.
    pub fn has_function_call(&self, call_id: &str) -> bool {
        self.function_call(call_id).is_some()
    }

    /// The `function_call` item with this `call_id`.
    pub fn function_call(&self, call_id: &str) -> Option<&Value> {
        self.item_with_call_id("function_call", call_id)
    }

    /// The output item of type `item_type` for this `call_id`.
    pub fn call_output(&self, call_id: &str, item_type: &str) -> Result<&Value, CapturedError> {
        self.item_with_call_id(item_type, call_id)
            .ok_or_else(|| CapturedError::NoOutput {
                index: self.index,
                item_type: item_type.to_string(),
                call_id: call_id.to_string(),
            })
    }

    /// The `function_call_output` item for this `call_id`.
    pub fn function_call_output(&self, call_id: &str) -> Result<&Value, CapturedError> {
        self.call_output(call_id, "function_call_output")
    }

    /// The `custom_tool_call_output` item for this `call_id`.
    pub fn custom_tool_call_output(&self, call_id: &str) -> Result<&Value, CapturedError> {
        self.call_output(call_id, "custom_tool_call_output")
    }

    /// The `tool_search_output` item for this `call_id`.
    pub fn tool_search_output(&self, call_id: &str) -> Result<&Value, CapturedError> {
        self.call_output(call_id, "tool_search_output")
    }

    /// The `output` of this call's `function_call_output` when it is a string.
    pub fn function_call_output_text(&self, call_id: &str) -> Option<String> {
        self.function_call_output(call_id)
            .ok()?
            .get("output")?
            .as_str()
            .map(str::to_string)
    }

    /// `(text, success)` of this call's output: from a string, a one-item `input_text`
    /// array, or a `{content, success}` object. `None` when there is no output.
    pub fn function_call_output_content_and_success(
        &self,
        call_id: &str,
    ) -> Option<(Option<String>, Option<bool>)> {
        let output = self.function_call_output(call_id).ok()?.get("output")?;
        let text_of = |v: &Value| -> Option<String> {
            match v {
                Value::String(s) => Some(s.clone()),
                Value::Array(items) if items.len() == 1 => items[0]
                    .get("text")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                _ => None,
            }
        };
        Some(match output {
            Value::Object(o) => (
                o.get("content").and_then(text_of),
                o.get("success").and_then(Value::as_bool),
            ),
            other => (text_of(other), None),
        })
    }

    /// Names of `body.tools`; children of a namespace as `ns/name`.
    pub fn tool_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for tool in self.tools() {
            let name = tool.get("name").and_then(Value::as_str);
            match (tool.get("type").and_then(Value::as_str), name) {
                (Some("namespace"), Some(ns)) => {
                    for child in tool
                        .get("tools")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(child) = child.get("name").and_then(Value::as_str) {
                            names.push(format!("{ns}/{child}"));
                        }
                    }
                }
                (_, Some(name)) => names.push(name.to_string()),
                (Some(kind), None) => names.push(kind.to_string()),
                (None, None) => {}
            }
        }
        names
    }

    /// The tool spec named `name` (inside namespace `namespace` when given).
    pub fn tool_by_name(&self, namespace: Option<&str>, name: &str) -> Option<&Value> {
        let named =
            |tool: &&Value, want: &str| tool.get("name").and_then(Value::as_str) == Some(want);
        match namespace {
            None => self.tools().find(|t| named(t, name)),
            Some(ns) => self
                .tools()
                .find(|t| {
                    t.get("type").and_then(Value::as_str) == Some("namespace") && named(t, ns)
                })?
                .get("tools")?
                .as_array()?
                .iter()
                .find(|t| named(t, name)),
        }
    }

    fn tools(&self) -> impl Iterator<Item = &Value> {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map(|v| v.iter())
            .into_iter()
            .flatten()
    }
}

/// The only request of `requests`; an error unless there is exactly one.
pub fn single_request(requests: &[CapturedRequest]) -> Result<&CapturedRequest, CapturedError> {
    match requests {
        [one] => Ok(one),
        other => Err(CapturedError::NotExactlyOne(other.len())),
    }
}

/// The last request of `requests`.
pub fn last_request(requests: &[CapturedRequest]) -> Option<&CapturedRequest> {
    requests.last()
}

/// Whether any request's input has a `function_call` with this `call_id`.
pub fn saw_function_call(requests: &[CapturedRequest], call_id: &str) -> bool {
    requests.iter().any(|r| r.has_function_call(call_id))
}

/// The first string `function_call_output` for this `call_id` over all requests.
pub fn function_call_output_text(requests: &[CapturedRequest], call_id: &str) -> Option<String> {
    requests
        .iter()
        .find_map(|r| r.function_call_output_text(call_id))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(body: Value) -> CapturedRequest {
        serde_json::from_value(
            json!({"index": 4, "method": "POST", "path": "/v1/responses", "body": body}),
        )
        .unwrap()
    }

    #[test]
    fn message_accessors_read_texts_by_role() {
        let r = request(json!({"input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "data:x"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "b"}]},
            {"type": "message", "role": "user", "content": "plain"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "c1"}, {"type": "input_text", "text": "c2"}]}
        ]}));
        assert_eq!(r.message_input_texts("user"), ["a", "plain", "c1", "c2"]);
        assert_eq!(r.message_input_text_groups("user").len(), 3);
        assert_eq!(r.message_input_texts("assistant"), ["b"]);
        assert_eq!(r.message_input_texts("developer"), ["rules"]);
        assert_eq!(r.message_input_image_urls("user"), ["data:x"]);
        assert_eq!(r.last_user_text().as_deref(), Some("c1\nc2"));
        assert!(r.has_message_with_input_texts("user", |t| t == ["plain"]));
        assert_eq!(r.inputs_of_type("message").len(), 5);
        assert!(r.body_contains_text("c1"));
    }

    #[test]
    fn call_output_accessors_accept_every_output_shape() {
        let r = request(json!({"input": [
            {"type": "function_call", "call_id": "s", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "s", "output": "text out"},
            {"type": "function_call_output", "call_id": "a", "output": [{"type": "input_text", "text": "arr"}]},
            {"type": "function_call_output", "call_id": "o", "output": {"content": "obj", "success": false}},
            {"type": "custom_tool_call_output", "call_id": "c", "output": "custom"}
        ]}));
        assert!(r.has_function_call("s"));
        assert_eq!(
            r.function_call_output_text("s").as_deref(),
            Some("text out")
        );
        assert_eq!(r.function_call_output_text("a"), None);
        assert_eq!(
            r.function_call_output_content_and_success("a"),
            Some((Some("arr".into()), None))
        );
        assert_eq!(
            r.function_call_output_content_and_success("o"),
            Some((Some("obj".into()), Some(false)))
        );
        assert_eq!(r.custom_tool_call_output("c").unwrap()["output"], "custom");
        let err = r.tool_search_output("c").unwrap_err();
        assert_eq!(
            err.to_string(),
            "request 4: no tool_search_output for call_id \"c\""
        );
        assert!(saw_function_call(std::slice::from_ref(&r), "s"));
        assert_eq!(
            single_request(&[]).unwrap_err(),
            CapturedError::NotExactlyOne(0)
        );
    }

    #[test]
    fn tool_accessors_look_inside_namespaces() {
        let r = request(json!({"input": [], "tools": [
            {"type": "function", "name": "shell"},
            {"type": "namespace", "name": "mcp", "tools": [{"type": "function", "name": "read"}]},
            {"type": "web_search"}
        ]}));
        assert_eq!(r.tool_names(), ["shell", "mcp/read", "web_search"]);
        assert!(r.tool_by_name(Some("mcp"), "read").is_some());
        assert!(r.tool_by_name(None, "read").is_none());
        assert_eq!(r.tool_by_name(None, "shell").unwrap()["type"], "function");
    }

    #[test]
    fn missing_pieces_are_errors_not_panics() {
        let r: CapturedRequest =
            serde_json::from_value(json!({"path": "/v1/models", "body": null, "body_text": "x"}))
                .unwrap();
        assert!(r.body_json().is_err());
        assert!(r.input().is_err());
        assert!(r.turn_metadata().is_err());
        assert_eq!(r.body_bytes(), b"x");
        assert!(r.message_input_texts("user").is_empty());
        assert_eq!(r.query_param("a"), None);
    }
}
