//! JSON-RPC messages as `codex app-server` speaks them: one JSON object per line, no
//! `"jsonrpc"` field from the server, ids that are integers or strings.

use serde_json::{Map, Value, json};

/// A request id: codex uses integers for its own requests, and accepts strings too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id (what this client and codex send).
    Integer(i64),
    /// A string id.
    String(String),
}

impl RequestId {
    /// The id in a JSON value, when it is an integer or a string.
    pub fn from_value(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::String(s.clone())),
            other => other.as_i64().map(RequestId::Integer),
        }
    }
}

impl From<i64> for RequestId {
    fn from(id: i64) -> RequestId {
        RequestId::Integer(id)
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Integer(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// One message read from (or written to) the app-server.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// `{id, method, params?}`: a request (from the server, a server-to-client request).
    Request {
        /// The request id.
        id: RequestId,
        /// The method name.
        method: String,
        /// The params, `Value::Null` when absent.
        params: Value,
    },
    /// `{method, params?}` without an id.
    Notification {
        /// The method name.
        method: String,
        /// The params, `Value::Null` when absent.
        params: Value,
        /// Every top-level field besides `method` and `params` (e.g. `emittedAtMs`).
        extra: Map<String, Value>,
    },
    /// `{id, result}`.
    Response {
        /// The id of the request this answers.
        id: RequestId,
        /// The result.
        result: Value,
    },
    /// `{id, error:{code, message, data?}}`.
    Error {
        /// The id of the request this answers (`None`: null, when the request could not
        /// be read).
        id: Option<RequestId>,
        /// The error object.
        error: RpcError,
    },
}

/// The `error` object of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RpcError {
    /// The error code (`-32600` for invalid requests in codex).
    pub code: i64,
    /// The human-readable message.
    pub message: String,
    /// Optional structured data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// JSON-RPC "parse error": the line was not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// JSON-RPC "invalid request" (what codex answers for requests it refuses, e.g.
    /// before `initialize`, or an unknown method).
    pub const INVALID_REQUEST: i64 = -32600;
    /// JSON-RPC "method not found" (what this client answers to server requests it has
    /// no handler for).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// JSON-RPC "invalid params".
    pub const INVALID_PARAMS: i64 = -32602;
    /// JSON-RPC "internal error".
    pub const INTERNAL_ERROR: i64 = -32603;
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error {}: {}", self.code, self.message)
    }
}

/// Why a line could not be read as a message.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The line is not JSON.
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON is not one of the four message shapes.
    #[error("not a JSON-RPC message: {0}")]
    Shape(String),
}

impl Message {
    /// Parses one line.
    pub fn parse(line: &str) -> Result<Message, ParseError> {
        let value: Value = serde_json::from_str(line)?;
        Message::from_value(value)
    }

    /// Classifies a JSON value as a message.
    pub fn from_value(value: Value) -> Result<Message, ParseError> {
        let Value::Object(mut obj) = value else {
            return Err(ParseError::Shape(value.to_string()));
        };
        let id = obj.remove("id");
        let method = obj.remove("method");
        let id_of = |id: Value| {
            RequestId::from_value(&id)
                .ok_or_else(|| ParseError::Shape(format!("id neither integer nor string: {id}")))
        };
        let params = obj.remove("params").unwrap_or(Value::Null);
        match (id, method) {
            (Some(id), Some(Value::String(method))) => Ok(Message::Request {
                id: id_of(id)?,
                method,
                params,
            }),
            (None, Some(Value::String(method))) => {
                obj.remove("jsonrpc");
                Ok(Message::Notification {
                    method,
                    params,
                    extra: obj,
                })
            }
            (Some(id), None) => {
                if let Some(error) = obj.remove("error") {
                    let error: RpcError = serde_json::from_value(error)?;
                    let id = if id.is_null() { None } else { Some(id_of(id)?) };
                    Ok(Message::Error { id, error })
                } else if let Some(result) = obj.remove("result") {
                    Ok(Message::Response {
                        id: id_of(id)?,
                        result,
                    })
                } else {
                    Err(ParseError::Shape(format!(
                        "response without result or error: {obj:?}"
                    )))
                }
            }
            _ => Err(ParseError::Shape(Value::Object(obj).to_string())),
        }
    }

    /// The message as one line of compact JSON (without the newline).
    pub fn to_line(&self) -> String {
        let value = match self {
            Message::Request { id, method, params } => {
                if params.is_null() {
                    json!({"id": id, "method": method})
                } else {
                    json!({"id": id, "method": method, "params": params})
                }
            }
            Message::Notification {
                method,
                params,
                extra,
            } => {
                let mut obj = extra.clone();
                obj.insert("method".into(), Value::String(method.clone()));
                if !params.is_null() {
                    obj.insert("params".into(), params.clone());
                }
                Value::Object(obj)
            }
            Message::Response { id, result } => json!({"id": id, "result": result}),
            Message::Error { id, error } => json!({"id": id, "error": error}),
        };
        value.to_string()
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            _ => None,
        }
    }

    /// The params of a request or notification (`Null` otherwise).
    pub fn params(&self) -> &Value {
        match self {
            Message::Request { params, .. } | Message::Notification { params, .. } => params,
            _ => &Value::Null,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_four_shapes() {
        let req = Message::parse(r#"{"id":0,"method":"item/tool/call","params":{"a":1}}"#).unwrap();
        assert_eq!(req.method(), Some("item/tool/call"));
        assert!(matches!(req, Message::Request { .. }));
        let note =
            Message::parse(r#"{"method":"turn/started","params":{},"emittedAtMs":5}"#).unwrap();
        match note {
            Message::Notification { extra, .. } => assert_eq!(extra["emittedAtMs"], 5),
            other => panic!("{other:?}"),
        }
        let resp = Message::parse(r#"{"id":"x","result":{}}"#).unwrap();
        assert_eq!(
            resp,
            Message::Response {
                id: RequestId::String("x".into()),
                result: json!({})
            }
        );
        let unreadable =
            Message::parse(r#"{"id":null,"error":{"code":-32700,"message":"x"}}"#).unwrap();
        match unreadable {
            Message::Error { id, error } => {
                assert_eq!(id, None);
                assert_eq!(error.code, RpcError::PARSE_ERROR);
            }
            other => panic!("{other:?}"),
        }
        let err = Message::parse(r#"{"id":1,"error":{"code":-32600,"message":"Not initialized"}}"#)
            .unwrap();
        match err {
            Message::Error { error, .. } => assert_eq!(error.message, "Not initialized"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rejects_what_is_not_a_message() {
        assert!(Message::parse("nope").is_err());
        assert!(Message::parse("[1]").is_err());
        assert!(Message::parse(r#"{"id":1}"#).is_err());
        assert!(Message::parse(r#"{"id":1.5,"result":{}}"#).is_err());
        assert!(Message::parse(r#"{"id":{"a":1},"method":"m"}"#).is_err());
    }

    #[test]
    fn round_trips_lines() {
        let line = r#"{"id":3,"method":"turn/start","params":{"threadId":"t"}}"#;
        let msg = Message::parse(line).unwrap();
        assert_eq!(Message::parse(&msg.to_line()).unwrap(), msg);
        let named = Message::parse(r#"{"id":"r-1","result":5}"#).unwrap();
        assert_eq!(named.to_line(), r#"{"id":"r-1","result":5}"#);
        let numbered = Message::parse(r#"{"id":7,"result":5}"#).unwrap();
        assert_eq!(numbered.to_line(), r#"{"id":7,"result":5}"#);
    }
}
