//! The MCP JSON-RPC of the scripted server: what each incoming message asks for
//! ([`Session::handle`], pure and unit-tested) and the stdio loop that carries it out
//! ([`serve`]): newline-delimited JSON on stdin and stdout, every message captured.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::script::{Fault, McpReply, McpScript};

/// The MCP protocol versions the server speaks, newest first; an `initialize` asking for
/// another one is answered with the newest.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];

/// The `serverInfo.name` the server gives.
pub const SERVER_NAME: &str = "codex-parity-mcp";

/// What to do about one incoming message.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Write this message now.
    Reply(Value),
    /// Write this message after `delay`, unless the request `id` is cancelled first.
    Later {
        /// How long to wait.
        delay: Duration,
        /// The request id the answer is for.
        id: Value,
        /// The answer.
        message: Value,
    },
    /// Write a line that is not JSON.
    Malformed,
    /// Exit with status 1 without answering.
    Crash,
    /// Cancel the pending answer to request `id`.
    Cancel(Value),
    /// Nothing to write (a notification).
    Nothing,
}

/// One connection's view of the script, and the calls waiting for the client's answer to
/// an elicitation.
#[derive(Debug)]
pub struct Session {
    script: McpScript,
    /// Elicitation request id (as JSON text) → the id of the `tools/call` it holds up.
    eliciting: Mutex<HashMap<String, Value>>,
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A successful `tools/call` result holding `text`.
fn text_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

impl Session {
    /// A session serving `script`.
    pub fn new(script: McpScript) -> Session {
        Session {
            script,
            eliciting: Mutex::default(),
        }
    }

    /// The action for one line of input.
    pub fn handle_line(&self, line: &str) -> Action {
        match serde_json::from_str::<Value>(line) {
            Ok(message) => self.handle(&message),
            Err(e) => Action::Reply(error(&Value::Null, -32700, &format!("parse error: {e}"))),
        }
    }

    /// The action for one message.
    pub fn handle(&self, message: &Value) -> Action {
        let Some(method) = message["method"].as_str() else {
            // A response to a request of ours: an elicitation's answer releases its call.
            let key = message["id"].to_string();
            let call = self
                .eliciting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key);
            return match call {
                Some(call) => {
                    Action::Reply(result(&call, text_result(McpReply::elicited(message))))
                }
                None => Action::Nothing,
            };
        };
        let Some(id) = message.get("id").filter(|id| !id.is_null()) else {
            if method == "notifications/cancelled" {
                return Action::Cancel(message["params"]["requestId"].clone());
            }
            return Action::Nothing;
        };
        let params = &message["params"];
        match method {
            "initialize" => Action::Reply(result(id, self.initialize(params))),
            "ping" => Action::Reply(result(id, json!({}))),
            "tools/list" => Action::Reply(result(id, self.script.list_result())),
            "tools/call" => self.call(id, params),
            _ => Action::Reply(error(id, -32601, &format!("method not found: {method}"))),
        }
    }

    fn initialize(&self, params: &Value) -> Value {
        let asked = params["protocolVersion"].as_str().unwrap_or_default();
        let version = PROTOCOL_VERSIONS
            .iter()
            .find(|v| **v == asked)
            .unwrap_or(&PROTOCOL_VERSIONS[0]);
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")}
        })
    }

    fn call(&self, id: &Value, params: &Value) -> Action {
        let name = params["name"].as_str().unwrap_or_default();
        let Some(tool) = self.script.tool(name) else {
            return Action::Reply(error(id, -32602, &format!("unknown tool: {name}")));
        };
        let reply = &tool.reply;
        if let Some(params) = &reply.elicit {
            let ask = json!(format!("elicit-{id}"));
            self.eliciting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(ask.to_string(), id.clone());
            return Action::Reply(json!({"jsonrpc": "2.0", "id": ask,
                "method": "elicitation/create", "params": params}));
        }
        match reply.fault {
            Some(Fault::Crash) => Action::Crash,
            Some(Fault::Malformed) => Action::Malformed,
            None if reply.delay_ms > 0 => Action::Later {
                delay: Duration::from_millis(reply.delay_ms),
                id: id.clone(),
                message: result(id, reply.call_result()),
            },
            None => Action::Reply(result(id, reply.call_result())),
        }
    }
}

/// The capture file: one JSON object a line, each appended with one `write` (two servers of
/// one codex may share the file; an append of one small write is not interleaved).
#[derive(Clone)]
pub struct Capture(Arc<Mutex<Option<File>>>);

impl Capture {
    /// A capture appending to `file`, or none.
    pub fn new(file: Option<File>) -> Capture {
        Capture(Arc::new(Mutex::new(file)))
    }

    /// Appends `event` with this process's `pid` (errors are reported on stderr: capture
    /// must not stop serving).
    pub fn record(&self, mut event: Value) {
        event["pid"] = json!(std::process::id());
        let mut file = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(file) = file.as_mut()
            && let Err(e) = file.write_all(format!("{event}\n").as_bytes())
        {
            eprintln!("codex-parity mcp: cannot write the capture: {e}");
        }
    }
}

/// Writes one line to stdout (whose lock keeps delayed answers whole).
fn write_out(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush()) {
        eprintln!("codex-parity mcp: cannot write to stdout: {e}");
    }
}

/// Serves `session` on stdin and stdout until stdin closes; returns the exit status (1 after
/// a crash fault).
pub fn serve(session: &Session, capture: &Capture) -> i32 {
    capture.record(json!({"event": "start"}));
    let cancelled: Arc<Mutex<HashSet<String>>> = Arc::default();
    let stdin = std::io::stdin().lock();
    for line in stdin.lines() {
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                eprintln!("codex-parity mcp: cannot read stdin: {e}");
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let received = serde_json::from_str::<Value>(&line).unwrap_or(json!(line));
        capture.record(json!({"event": "received", "message": received}));
        match session.handle_line(&line) {
            Action::Reply(message) => write_out(&message.to_string()),
            Action::Nothing => {}
            Action::Cancel(id) => {
                let mut set = cancelled.lock().unwrap_or_else(|e| e.into_inner());
                set.insert(id.to_string());
            }
            Action::Malformed => write_out("{\"jsonrpc\": \"2.0\", \"id\": oops"),
            Action::Crash => {
                capture.record(json!({"event": "crash"}));
                return 1;
            }
            Action::Later { delay, id, message } => {
                let (capture, cancelled) = (capture.clone(), cancelled.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(delay);
                    let set = cancelled.lock().unwrap_or_else(|e| e.into_inner());
                    if set.contains(&id.to_string()) {
                        capture.record(json!({"event": "dropped", "id": id}));
                    } else {
                        write_out(&message.to_string());
                        capture.record(json!({"event": "answered", "id": id}));
                    }
                });
            }
        }
    }
    capture.record(json!({"event": "eof"}));
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        let script = McpScript::parse(
            r#"{"tools": [
                {"name": "echo", "reply": {"text": "hi"}},
                {"name": "bad", "reply": {"error": "no"}},
                {"name": "slow", "reply": {"text": "late", "delayMs": 50}},
                {"name": "dies", "reply": {"fault": "crash"}},
                {"name": "garbled", "reply": {"fault": "malformed"}}
            ]}"#,
        )
        .unwrap();
        Session::new(script)
    }

    fn reply(action: Action) -> Value {
        match action {
            Action::Reply(v) => v,
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn initialize_echoes_a_known_version_else_the_newest() {
        let s = session();
        let line = r#"{"jsonrpc":"2.0","id":0,"method":"initialize",
            "params":{"protocolVersion":"2025-03-26","capabilities":{}}}"#;
        let r = reply(s.handle_line(&line.replace('\n', "")));
        assert_eq!(r["id"], 0);
        assert_eq!(r["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(r["result"]["capabilities"]["tools"]["listChanged"], false);
        assert_eq!(r["result"]["serverInfo"]["name"], SERVER_NAME);
        let other = json!({"jsonrpc":"2.0","id":1,"method":"initialize",
            "params":{"protocolVersion":"1999-01-01"}});
        let r = reply(s.handle(&other));
        assert_eq!(r["result"]["protocolVersion"], PROTOCOL_VERSIONS[0]);
    }

    #[test]
    fn lists_and_calls_tools() {
        let s = session();
        let list = reply(s.handle(&json!({"jsonrpc":"2.0","id":"a","method":"tools/list"})));
        assert_eq!(list["id"], "a");
        assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 5);
        let call = |name: &str| {
            s.handle(&json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
                "params":{"name": name, "arguments": {"x": 1}}}))
        };
        let ok = reply(call("echo"));
        assert_eq!(
            ok["result"],
            json!({"content":[{"type":"text","text":"hi"}],"isError":false})
        );
        assert_eq!(reply(call("bad"))["result"]["isError"], true);
        assert_eq!(reply(call("nope"))["error"]["code"], -32602);
        assert_eq!(call("dies"), Action::Crash);
        assert_eq!(call("garbled"), Action::Malformed);
        match call("slow") {
            Action::Later { delay, id, message } => {
                assert_eq!(delay, Duration::from_millis(50));
                assert_eq!(id, 7);
                assert_eq!(message["result"]["content"][0]["text"], "late");
            }
            other => panic!("expected a delayed answer, got {other:?}"),
        }
    }

    #[test]
    fn an_elicit_call_asks_the_client_then_answers_with_its_answer() {
        let script = McpScript::parse(
            r#"{"tools": [{"name": "ask", "reply": {"elicit": {"message": "Name?",
                "requestedSchema": {"type": "object"}}}}]}"#,
        )
        .unwrap();
        let s = Session::new(script);
        let call = json!({"jsonrpc":"2.0","id":5,"method":"tools/call",
            "params":{"name": "ask", "arguments": {}}});
        let ask = reply(s.handle(&call));
        assert_eq!(ask["method"], "elicitation/create");
        assert_eq!(ask["params"]["message"], "Name?");
        let answer = json!({"jsonrpc":"2.0","id": ask["id"],
            "result":{"action":"accept","content":{"name":"Ada"}}});
        let done = reply(s.handle(&answer));
        assert_eq!(done["id"], 5);
        assert_eq!(
            done["result"]["content"][0]["text"],
            r#"elicitation accept {"name":"Ada"}"#
        );
        // The answer is used once; a stray response is ignored.
        assert_eq!(s.handle(&answer), Action::Nothing);
    }

    #[test]
    fn notifications_pings_and_unknown_methods() {
        let s = session();
        let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        assert_eq!(s.handle(&note), Action::Nothing);
        let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
            "params":{"requestId": 7, "reason": "x"}});
        assert_eq!(s.handle(&cancel), Action::Cancel(json!(7)));
        let ping = reply(s.handle(&json!({"jsonrpc":"2.0","id":3,"method":"ping"})));
        assert_eq!(ping["result"], json!({}));
        let other = reply(s.handle(&json!({"jsonrpc":"2.0","id":4,"method":"resources/list"})));
        assert_eq!(other["error"]["code"], -32601);
        assert_eq!(reply(s.handle_line("not json"))["error"]["code"], -32700);
        let response = json!({"jsonrpc":"2.0","id":9,"result":{}});
        assert_eq!(s.handle(&response), Action::Nothing);
    }
}
