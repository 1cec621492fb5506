//! Whether what a codex binary sends its client conforms to the JSON schema the same binary
//! publishes (`generate-json-schema --experimental`): a notification's params to its
//! variant of the notification union, a server request's params to its variant of the
//! server-request union, an answer to the response type of the client request it answers,
//! an error to the JSON-RPC error object. The schema is read once per binary
//! ([`crate::codex::json_schema`], draft-07); checking one message is then cheap.
//!
//! The response type of a client request is found by name: the variant titled `XRequest`
//! answers with the definition `XResponse`, else its params `XParams` with `XResponse`. A
//! request whose response type the schema does not name is not checked.
//!
//! A failure is reduced to the places that explain it ([`Violation`]): in a union (`oneOf`,
//! `anyOf`) the variants that were never meant (another `type` tag, another JSON type, such
//! as the `null` of a nullable field) are dropped, and the remaining ones are followed.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;

use crate::codex::json_schema::{Failure, FailureKind, Schema};
use crate::codex::schema::BUNDLE;

/// The definition added to the bundle for the params of a message that has none.
const NULL_DEF: &str = "codexParityNull";

/// How many characters of a value a violation shows.
const SHOWN: usize = 120;

/// What kind of message a check is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// A notification: its params against its variant of `ServerNotification`.
    Notification,
    /// A server-to-client request: its params against its variant of `ServerRequest`.
    ServerRequest,
    /// A successful answer: its result against the response type of the method.
    Response,
    /// An error answer: its error object against `JSONRPCErrorError`.
    Error,
}

/// One place where a message does not conform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// A JSON pointer into the message's params, result or error (`""`: the whole of it).
    pub pointer: String,
    /// What the schema wanted there, as the validator words it.
    pub wanted: String,
    /// What came, compact JSON cut to a readable length (`absent` for a missing value).
    pub got: String,
}

/// The outcome of checking one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conformity {
    /// It conforms.
    Conforms,
    /// It does not: where and how.
    Violates(Vec<Violation>),
    /// Its method is not in the schema at all (a notification or server request only).
    UnknownMethod,
    /// Nothing to check it against (an answer to a method without a published response
    /// type, or to a request the client made outside the typed calls).
    Unchecked,
}

/// The schema of one binary, with the pointer to each message's subschema.
pub struct Conformance {
    schema: Schema,
    notifications: HashMap<String, String>,
    server_requests: HashMap<String, String>,
    responses: HashMap<String, String>,
    error: Option<String>,
    compile_time: Duration,
}

impl std::fmt::Debug for Conformance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Conformance({} notifications, {} server requests, {} responses)",
            self.notifications.len(),
            self.server_requests.len(),
            self.responses.len()
        )
    }
}

impl Conformance {
    /// Reads and compiles the bundle in a directory written by `generate-json-schema`.
    pub fn read(dir: &Path) -> anyhow::Result<Conformance> {
        let path = dir.join(BUNDLE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let bundle: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        Conformance::compile(bundle).with_context(|| format!("compiling {}", path.display()))
    }

    /// Compiles a bundle: a JSON Schema document whose `definitions` hold the unions
    /// `ServerNotification`, `ServerRequest` and `ClientRequest` and the types they name
    /// (directly or in a namespace such as `definitions.v2`).
    pub fn compile(bundle: Value) -> anyhow::Result<Conformance> {
        let started = Instant::now();
        let defs = bundle
            .get("definitions")
            .and_then(Value::as_object)
            .context("the schema has no definitions")?;
        let notifications = variants(defs.get("ServerNotification"), "ServerNotification");
        let server_requests = variants(defs.get("ServerRequest"), "ServerRequest");
        let responses = response_types(&bundle);
        let error = defs
            .contains_key("JSONRPCErrorError")
            .then(|| "/definitions/JSONRPCErrorError".to_string());
        let mut bundle = bundle;
        if let Some(defs) = bundle.get_mut("definitions").and_then(Value::as_object_mut) {
            defs.insert(NULL_DEF.into(), serde_json::json!({"type": "null"}));
        }
        let schema = Schema::new(bundle)?;
        // Every pointer was read from the bundle itself (a miss in `check` still refuses).
        let index = |list: Vec<(String, String)>| -> HashMap<_, _> { list.into_iter().collect() };
        let (notifications, server_requests) = (index(notifications), index(server_requests));
        let responses = index(responses);
        Ok(Conformance {
            schema,
            notifications,
            server_requests,
            responses,
            error,
            compile_time: started.elapsed(),
        })
    }

    /// How long compiling the schema took (once per binary and run).
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// Checks one message: `payload` is its params, result or error.
    pub fn check(&self, direction: Direction, method: &str, payload: &Value) -> Conformity {
        let pointer = match direction {
            Direction::Notification => match self.notifications.get(method) {
                Some(p) => p,
                None => return Conformity::UnknownMethod,
            },
            Direction::ServerRequest => match self.server_requests.get(method) {
                Some(p) => p,
                None => return Conformity::UnknownMethod,
            },
            Direction::Response => match self.responses.get(method) {
                Some(p) => p,
                None => return Conformity::Unchecked,
            },
            Direction::Error => match &self.error {
                Some(p) => p,
                None => return Conformity::Unchecked,
            },
        };
        let failures = match self.schema.validate(pointer, payload) {
            Ok(failures) => failures,
            // Every pointer was found when the schema was read; were one lost, the message
            // would still not pass unchecked.
            Err(e) => vec![Failure {
                at: Vec::new(),
                wanted: e.to_string(),
                kind: FailureKind::Other,
            }],
        };
        if failures.is_empty() {
            return Conformity::Conforms;
        }
        let mut found = Vec::new();
        explain(&failures, payload, &mut found);
        found.dedup();
        Conformity::Violates(found)
    }
}

/// `(method, pointer to the params schema)` of every variant of a union of messages; a
/// variant without params gets the schema of its whole `params` property slot, which
/// accepts only an absent (null) payload.
fn variants(union: Option<&Value>, name: &str) -> Vec<(String, String)> {
    let Some(list) = union.and_then(|u| u.get("oneOf")).and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, variant) in list.iter().enumerate() {
        let Some(method) = variant
            .pointer("/properties/method/enum/0")
            .and_then(Value::as_str)
        else {
            continue;
        };
        let pointer = if variant.pointer("/properties/params").is_some() {
            format!("/definitions/{name}/oneOf/{i}/properties/params")
        } else {
            format!("/definitions/{NULL_DEF}")
        };
        out.push((method.to_string(), pointer));
    }
    out
}

/// `(method, pointer to its response type)` of every client request whose response type
/// the bundle names.
fn response_types(bundle: &Value) -> Vec<(String, String)> {
    let Some(list) = bundle
        .pointer("/definitions/ClientRequest/oneOf")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for variant in list {
        let Some(method) = variant
            .pointer("/properties/method/enum/0")
            .and_then(Value::as_str)
        else {
            continue;
        };
        let by_title = variant
            .get("title")
            .and_then(Value::as_str)
            .and_then(|t| t.strip_suffix("Request"));
        let by_params = variant
            .pointer("/properties/params/$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.rsplit('/').next())
            .and_then(|n| n.strip_suffix("Params"));
        let found = [by_title, by_params]
            .into_iter()
            .flatten()
            .find_map(|stem| definition(bundle, &format!("{stem}Response")));
        if let Some(pointer) = found {
            out.push((method.to_string(), pointer));
        }
    }
    out
}

/// The pointer to the definition `name`, at the top of `definitions` or in a namespace.
fn definition(bundle: &Value, name: &str) -> Option<String> {
    let defs = bundle.get("definitions")?.as_object()?;
    if defs.contains_key(name) {
        return Some(format!("/definitions/{name}"));
    }
    defs.iter()
        .find(|(_, v)| v.get(name).is_some_and(Value::is_object) && v.get("type").is_none())
        .map(|(space, _)| format!("/definitions/{space}/{name}"))
}

/// Adds the violations that explain `failures` to `out`.
fn explain(failures: &[Failure], payload: &Value, out: &mut Vec<Violation>) {
    for failure in failures {
        if let FailureKind::Union(variants) = &failure.kind {
            let depth = failure.at.len();
            let meant: Vec<&Vec<Failure>> =
                variants.iter().filter(|v| !not_meant(v, depth)).collect();
            if !meant.is_empty() {
                for variant in meant {
                    explain(variant, payload, out);
                }
                continue;
            }
        }
        out.push(violation(failure, payload));
    }
}

/// Whether a failed variant of a union at `depth` was never meant for the value: it wanted
/// another JSON type right there, or another value of a tag property (`type`, `method`: a
/// property with a single allowed value).
fn not_meant(variant: &[Failure], depth: usize) -> bool {
    variant.iter().any(|f| match &f.kind {
        FailureKind::Type => f.at.len() == depth,
        FailureKind::Tag => f.at.len() == depth + 1,
        FailureKind::Union(inner) => inner.iter().any(|v| not_meant(v, depth)),
        FailureKind::Other => false,
    })
}

fn violation(failure: &Failure, payload: &Value) -> Violation {
    let pointer = failure.pointer();
    let got = payload
        .pointer(&pointer)
        .map_or_else(|| "absent".to_string(), shown);
    Violation {
        pointer,
        wanted: failure.wanted.clone(),
        got,
    }
}

/// A value as compact JSON, cut to [`SHOWN`] characters.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= SHOWN {
        return text;
    }
    let cut: String = text.chars().take(SHOWN).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn bundle() -> Value {
        json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {
                "ServerNotification": {"oneOf": [
                    {"type": "object", "required": ["method", "params"], "properties": {
                        "method": {"type": "string", "enum": ["item/completed"]},
                        "params": {"$ref": "#/definitions/v2/ItemCompleted"}}},
                    {"type": "object", "required": ["method"], "properties": {
                        "method": {"type": "string", "enum": ["ping"]}}}
                ]},
                "ServerRequest": {"oneOf": [
                    {"type": "object", "required": ["id", "method", "params"], "properties": {
                        "id": {"type": "integer"},
                        "method": {"type": "string", "enum": ["item/tool/call"]},
                        "params": {"type": "object", "required": ["callId"],
                                   "properties": {"callId": {"type": "string"}}}}}
                ]},
                "ClientRequest": {"oneOf": [
                    {"title": "Thread/startRequest", "properties": {
                        "method": {"enum": ["thread/start"]},
                        "params": {"$ref": "#/definitions/v2/ThreadStartParams"}}},
                    {"title": "InitializeRequest", "properties": {
                        "method": {"enum": ["initialize"]}}},
                    {"title": "Nope/Request", "properties": {"method": {"enum": ["nope"]}}}
                ]},
                "InitializeResponse": {"type": "object", "required": ["userAgent"],
                    "properties": {"userAgent": {"type": "string"}}},
                "JSONRPCErrorError": {"type": "object", "required": ["code", "message"],
                    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}}},
                "v2": {
                    "ThreadStartParams": {"type": "object"},
                    "ThreadStartResponse": {"type": "object", "required": ["thread"],
                        "properties": {"thread": {"type": "object", "required": ["id"],
                            "properties": {"id": {"type": "string"}}}}},
                    "ItemCompleted": {"type": "object", "required": ["item"], "properties": {
                        "item": {"oneOf": [
                            {"type": "object", "required": ["type", "text"], "properties": {
                                "type": {"type": "string", "enum": ["agentMessage"]},
                                "text": {"type": "string"}}},
                            {"type": "object", "required": ["type", "status"], "properties": {
                                "type": {"type": "string", "enum": ["fileChange"]},
                                "status": {"type": "string",
                                           "enum": ["completed", "failed"]}}}
                        ]},
                        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
                }
            }
        })
    }

    fn check(direction: Direction, method: &str, payload: Value) -> Conformity {
        let c = Conformance::compile(bundle()).unwrap();
        c.check(direction, method, &payload)
    }

    fn one(verdict: Conformity) -> Violation {
        match verdict {
            Conformity::Violates(v) if v.len() == 1 => v[0].clone(),
            other => panic!("expected one violation, got {other:?}"),
        }
    }

    #[test]
    fn conforming_messages_pass() {
        let item = json!({"item": {"type": "agentMessage", "text": "hi"}, "note": null});
        assert_eq!(
            check(Direction::Notification, "item/completed", item),
            Conformity::Conforms
        );
        assert_eq!(
            check(Direction::Notification, "ping", Value::Null),
            Conformity::Conforms
        );
        let thread = json!({"thread": {"id": "t"}});
        assert_eq!(
            check(Direction::Response, "thread/start", thread),
            Conformity::Conforms
        );
        let init = json!({"userAgent": "x"});
        assert_eq!(
            check(Direction::Response, "initialize", init),
            Conformity::Conforms
        );
        let call = json!({"callId": "c"});
        assert_eq!(
            check(Direction::ServerRequest, "item/tool/call", call),
            Conformity::Conforms
        );
        let error = json!({"code": -32600, "message": "no"});
        assert_eq!(check(Direction::Error, "x", error), Conformity::Conforms);
    }

    #[test]
    fn a_renamed_field_names_its_place() {
        let renamed = json!({"item": {"type": "agentMessage", "txt": "hi"}});
        let v = one(check(Direction::Notification, "item/completed", renamed));
        assert_eq!(v.pointer, "/item");
        assert!(v.wanted.contains("text"), "{v:?}");
    }

    #[test]
    fn a_retyped_field_and_a_new_enum_value_say_what_came() {
        let retyped = json!({"item": {"type": "agentMessage", "text": 5}});
        let v = one(check(Direction::Notification, "item/completed", retyped));
        assert_eq!((v.pointer.as_str(), v.got.as_str()), ("/item/text", "5"));
        assert!(v.wanted.contains("string"), "{v:?}");
        let status = json!({"item": {"type": "fileChange", "status": "declined"}});
        let v = one(check(Direction::Notification, "item/completed", status));
        assert_eq!(v.pointer, "/item/status");
        assert_eq!(v.got, "\"declined\"");
        let note = json!({"item": {"type": "agentMessage", "text": "x"}, "note": 3});
        let v = one(check(Direction::Notification, "item/completed", note));
        assert_eq!(v.pointer, "/note");
    }

    #[test]
    fn a_variant_no_tag_matches_is_one_violation() {
        let unknown = json!({"item": {"type": "newKind"}});
        let v = one(check(Direction::Notification, "item/completed", unknown));
        assert_eq!(v.pointer, "/item");
        assert_eq!(v.wanted, "one of the union's variants");
    }

    #[test]
    fn unknown_methods_and_unnamed_responses_are_told_apart() {
        assert_eq!(
            check(Direction::Notification, "brand/new", json!({})),
            Conformity::UnknownMethod
        );
        assert_eq!(
            check(Direction::ServerRequest, "brand/new", json!({})),
            Conformity::UnknownMethod
        );
        assert_eq!(
            check(Direction::Response, "nope", json!({})),
            Conformity::Unchecked
        );
        let missing = one(check(Direction::Response, "thread/start", json!({})));
        assert_eq!((missing.pointer.as_str(), missing.got.as_str()), ("", "{}"));
    }

    #[test]
    fn a_schema_without_definitions_is_an_error() {
        let err = Conformance::compile(json!({"type": "object"})).unwrap_err();
        assert!(err.to_string().contains("definitions"), "{err}");
    }
}
