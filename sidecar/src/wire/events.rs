//! Builders for the Responses API stream events that Codex's own test support emits.
//! Each returns the exact JSON value given in `responses-wire-format.md` §3.
//!
//! ```
//! use codex_parity_sidecar::events;
//! let ev = events::assistant_message("msg-1", "hello");
//! assert_eq!(ev["item"]["content"][0]["text"], "hello");
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `{"type":"response.created","response":{"id":ID}}`: the first event of a response.
pub fn response_created(id: &str) -> Value {
    json!({"type": "response.created", "response": {"id": id}})
}

/// `response.completed` with all token counts zero and both detail objects `null`.
pub fn completed(id: &str) -> Value {
    completed_with_tokens(id, 0)
}

/// `response.completed` with `input_tokens` and `total_tokens` both `total`, output zero.
pub fn completed_with_tokens(id: &str, total: u64) -> Value {
    json!({
        "type": "response.completed",
        "response": {
            "id": id,
            "usage": {
                "input_tokens": total,
                "input_tokens_details": null,
                "output_tokens": 0,
                "output_tokens_details": null,
                "total_tokens": total
            }
        }
    })
}

/// Token usage reported by [`completed_with_usage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// `input_tokens`.
    pub input: u64,
    /// `input_tokens_details.cached_tokens`.
    pub cached: u64,
    /// `output_tokens`.
    pub output: u64,
    /// `output_tokens_details.reasoning_tokens`.
    pub reasoning: u64,
    /// `total_tokens`.
    pub total: u64,
}

/// `response.completed` with explicit usage, including cached and reasoning tokens.
///
/// ```
/// use codex_parity_sidecar::events::{completed_with_usage, Usage};
/// let usage = Usage { input: 10, cached: 4, output: 5, reasoning: 2, total: 15 };
/// let ev = completed_with_usage("resp-1", usage);
/// assert_eq!(ev["response"]["usage"]["input_tokens_details"]["cached_tokens"], 4);
/// ```
pub fn completed_with_usage(id: &str, usage: Usage) -> Value {
    json!({
        "type": "response.completed",
        "response": {
            "id": id,
            "usage": {
                "input_tokens": usage.input,
                "input_tokens_details": {"cached_tokens": usage.cached},
                "output_tokens": usage.output,
                "output_tokens_details": {"reasoning_tokens": usage.reasoning},
                "total_tokens": usage.total
            }
        }
    })
}

/// `response.metadata` carrying `openai_verification_recommendation`.
pub fn model_verification_metadata(id: &str, list: Value) -> Value {
    json!({
        "type": "response.metadata",
        "sequence_number": 1,
        "response_id": id,
        "metadata": {"openai_verification_recommendation": list}
    })
}

/// The `phase` of an assistant message item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// `"commentary"`: text shown while the turn goes on.
    Commentary,
    /// `"final_answer"`: the turn's answer.
    FinalAnswer,
}

impl Phase {
    /// The wire string, `"commentary"` or `"final_answer"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Commentary => "commentary",
            Phase::FinalAnswer => "final_answer",
        }
    }
}

fn message_item(id: &str, text: &str) -> Value {
    json!({
        "type": "message",
        "role": "assistant",
        "id": id,
        "content": [{"type": "output_text", "text": text}]
    })
}

fn item_done(item: Value) -> Value {
    json!({"type": "response.output_item.done", "item": item})
}

fn item_added(item: Value) -> Value {
    json!({"type": "response.output_item.added", "item": item})
}

/// `response.output_item.done` with an assistant message holding one `output_text`.
pub fn assistant_message(id: &str, text: &str) -> Value {
    item_done(message_item(id, text))
}

/// [`assistant_message`] whose item also has `"phase"`.
pub fn assistant_message_with_phase(id: &str, text: &str, phase: Phase) -> Value {
    let mut item = message_item(id, text);
    item["phase"] = Value::from(phase.as_str());
    item_done(item)
}

/// `response.output_item.added` with an assistant message holding one `output_text`.
pub fn message_item_added(id: &str, text: &str) -> Value {
    item_added(message_item(id, text))
}

/// `response.output_item.added` with an assistant message whose `content` is `[]`.
pub fn message_item_added_empty(id: &str) -> Value {
    item_added(json!({"type": "message", "role": "assistant", "id": id, "content": []}))
}

/// `{"type":"response.output_text.delta","delta":DELTA}`.
pub fn output_text_delta(delta: &str) -> Value {
    json!({"type": "response.output_text.delta", "delta": delta})
}

fn summary_parts(summaries: &[&str]) -> Vec<Value> {
    summaries
        .iter()
        .map(|s| json!({"type": "summary_text", "text": s}))
        .collect()
}

/// `response.output_item.done` with a reasoning item; `content` (reasoning texts) only when
/// `raws` is non-empty.
pub fn reasoning_item(id: &str, summaries: &[&str], raws: &[&str]) -> Value {
    let mut item = json!({"type": "reasoning", "id": id, "summary": summary_parts(summaries)});
    if !raws.is_empty() {
        let content: Vec<Value> = raws
            .iter()
            .map(|r| json!({"type": "reasoning_text", "text": r}))
            .collect();
        item["content"] = Value::Array(content);
    }
    item_done(item)
}

/// `response.output_item.added` with a reasoning item and its summaries.
pub fn reasoning_item_added(id: &str, summaries: &[&str]) -> Value {
    item_added(json!({"type": "reasoning", "id": id, "summary": summary_parts(summaries)}))
}

/// `response.reasoning_summary_text.delta` with `summary_index` 0.
pub fn reasoning_summary_text_delta(delta: &str) -> Value {
    json!({"type": "response.reasoning_summary_text.delta", "delta": delta, "summary_index": 0})
}

/// `response.reasoning_text.delta` with `content_index` 0.
pub fn reasoning_text_delta(delta: &str) -> Value {
    json!({"type": "response.reasoning_text.delta", "delta": delta, "content_index": 0})
}

/// A `function_call` item (no `id`); `arguments` is a string holding JSON.
///
/// ```
/// use codex_parity_sidecar::events::function_call;
/// let ev = function_call("call-1", "shell", r#"{"command":["ls"]}"#);
/// assert_eq!(ev["item"]["arguments"], r#"{"command":["ls"]}"#);
/// ```
pub fn function_call(call_id: &str, name: &str, arguments: &str) -> Value {
    item_done(json!({
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments
    }))
}

/// [`function_call`] plus `"namespace"` in the item.
pub fn function_call_with_namespace(
    call_id: &str,
    namespace: &str,
    name: &str,
    arguments: &str,
) -> Value {
    let mut ev = function_call(call_id, name, arguments);
    ev["item"]["namespace"] = Value::from(namespace);
    ev
}

/// A `custom_tool_call` item with free-form `input`.
pub fn custom_tool_call(call_id: &str, name: &str, input: &str) -> Value {
    item_done(json!({
        "type": "custom_tool_call",
        "call_id": call_id,
        "name": name,
        "input": input
    }))
}

/// A `local_shell_call` item running `argv` (`action.type` `"exec"`).
pub fn local_shell_call(call_id: &str, status: &str, argv: &[&str]) -> Value {
    item_done(json!({
        "type": "local_shell_call",
        "call_id": call_id,
        "status": status,
        "action": {"type": "exec", "command": argv}
    }))
}

/// A client-executed `tool_search_call` item with `arguments` as a JSON value.
pub fn tool_search_call(call_id: &str, arguments: Value) -> Value {
    item_done(json!({
        "type": "tool_search_call",
        "call_id": call_id,
        "execution": "client",
        "arguments": arguments
    }))
}

/// `apply_patch` as a custom tool call whose `input` is the patch.
pub fn apply_patch_custom_tool_call(call_id: &str, patch: &str) -> Value {
    custom_tool_call(call_id, "apply_patch", patch)
}

/// `apply_patch` as a function call with arguments `{"input":PATCH}`.
pub fn apply_patch_function_call(call_id: &str, patch: &str) -> Value {
    function_call(call_id, "apply_patch", &json!({"input": patch}).to_string())
}

/// `shell` function call with arguments `{"command":["apply_patch",PATCH]}`.
pub fn apply_patch_shell_call(call_id: &str, patch: &str) -> Value {
    function_call(
        call_id,
        "shell",
        &json!({"command": ["apply_patch", patch]}).to_string(),
    )
}

/// `shell` function call running `apply_patch` with the patch in a bash heredoc.
pub fn apply_patch_shell_call_via_heredoc(call_id: &str, patch: &str) -> Value {
    let script = format!("apply_patch <<'EOF'\n{patch}\nEOF\n");
    function_call(
        call_id,
        "shell",
        &json!({"command": ["bash", "-lc", script]}).to_string(),
    )
}

/// `shell_command` function call with arguments `{"command":CMD}`.
pub fn shell_command_call(call_id: &str, command: &str) -> Value {
    function_call(
        call_id,
        "shell_command",
        &json!({"command": command}).to_string(),
    )
}

/// `exec_command` function call with arguments `{"cmd":CMD}`.
pub fn exec_command_call(call_id: &str, cmd: &str) -> Value {
    function_call(call_id, "exec_command", &json!({"cmd": cmd}).to_string())
}

/// `exec_command` function call with arguments `{"cmd":CMD,"workdir":WORKDIR}`.
pub fn exec_command_call_in(call_id: &str, cmd: &str, workdir: &str) -> Value {
    function_call(
        call_id,
        "exec_command",
        &json!({"cmd": cmd, "workdir": workdir}).to_string(),
    )
}

/// `response.output_item.added` with a `web_search_call` item without `action`.
pub fn web_search_call_added_partial(id: &str, status: &str) -> Value {
    item_added(json!({"type": "web_search_call", "id": id, "status": status}))
}

/// `response.output_item.done` with a `web_search_call` item searching `query`.
pub fn web_search_call_done(id: &str, status: &str, query: &str) -> Value {
    item_done(json!({
        "type": "web_search_call",
        "id": id,
        "status": status,
        "action": {"type": "search", "query": query}
    }))
}

/// `response.output_item.done` with an `image_generation_call` item.
pub fn image_generation_call(id: &str, status: &str, revised_prompt: &str, result: &str) -> Value {
    item_done(json!({
        "type": "image_generation_call",
        "id": id,
        "status": status,
        "revised_prompt": revised_prompt,
        "result": result
    }))
}

/// `{"type":"response.failed","response":{"id":ID,"error":{"code":CODE,"message":MESSAGE}}}`.
pub fn failed(id: &str, code: &str, message: &str) -> Value {
    json!({
        "type": "response.failed",
        "response": {"id": id, "error": {"code": code, "message": message}}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses the doc's JSON text, so each assertion compares values, not key order.
    fn doc(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn lifecycle_events_match_the_doc() {
        assert_eq!(
            response_created("resp-1"),
            doc(r#"{"type":"response.created","response":{"id":"resp-1"}}"#)
        );
        assert_eq!(
            completed("resp-1"),
            doc(
                r#"{"type":"response.completed","response":{"id":"resp-1","usage":{"input_tokens":0,"input_tokens_details":null,"output_tokens":0,"output_tokens_details":null,"total_tokens":0}}}"#
            )
        );
        assert_eq!(
            completed_with_tokens("r", 42),
            doc(
                r#"{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":42,"input_tokens_details":null,"output_tokens":0,"output_tokens_details":null,"total_tokens":42}}}"#
            )
        );
        let usage = Usage {
            input: 11,
            cached: 3,
            output: 7,
            reasoning: 2,
            total: 18,
        };
        assert_eq!(
            completed_with_usage("r", usage),
            doc(
                r#"{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":11,"input_tokens_details":{"cached_tokens":3},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":18}}}"#
            )
        );
        assert_eq!(
            model_verification_metadata("r", json!(["a", "b"])),
            doc(
                r#"{"type":"response.metadata","sequence_number":1,"response_id":"r","metadata":{"openai_verification_recommendation":["a","b"]}}"#
            )
        );
    }

    #[test]
    fn message_events_match_the_doc() {
        assert_eq!(
            assistant_message("msg-1", "hello"),
            doc(
                r#"{"type":"response.output_item.done","item":{"type":"message","role":"assistant","id":"msg-1","content":[{"type":"output_text","text":"hello"}]}}"#
            )
        );
        assert_eq!(
            assistant_message_with_phase("m", "t", Phase::Commentary),
            doc(
                r#"{"type":"response.output_item.done","item":{"type":"message","role":"assistant","id":"m","content":[{"type":"output_text","text":"t"}],"phase":"commentary"}}"#
            )
        );
        assert_eq!(
            assistant_message_with_phase("m", "t", Phase::FinalAnswer)["item"]["phase"],
            "final_answer"
        );
        assert_eq!(
            serde_json::to_value(Phase::FinalAnswer).unwrap(),
            json!("final_answer")
        );
        assert_eq!(
            message_item_added("m", "x"),
            doc(
                r#"{"type":"response.output_item.added","item":{"type":"message","role":"assistant","id":"m","content":[{"type":"output_text","text":"x"}]}}"#
            )
        );
        assert_eq!(
            message_item_added_empty("m"),
            doc(
                r#"{"type":"response.output_item.added","item":{"type":"message","role":"assistant","id":"m","content":[]}}"#
            )
        );
        assert_eq!(
            output_text_delta("d"),
            doc(r#"{"type":"response.output_text.delta","delta":"d"}"#)
        );
    }

    #[test]
    fn reasoning_events_match_the_doc() {
        assert_eq!(
            reasoning_item("rs", &["s1", "s2"], &[]),
            doc(
                r#"{"type":"response.output_item.done","item":{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"s1"},{"type":"summary_text","text":"s2"}]}}"#
            )
        );
        assert_eq!(
            reasoning_item("rs", &["s"], &["r1", "r2"]),
            doc(
                r#"{"type":"response.output_item.done","item":{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"s"}],"content":[{"type":"reasoning_text","text":"r1"},{"type":"reasoning_text","text":"r2"}]}}"#
            )
        );
        assert_eq!(
            reasoning_item_added("rs", &["s"]),
            doc(
                r#"{"type":"response.output_item.added","item":{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"s"}]}}"#
            )
        );
        assert_eq!(
            reasoning_summary_text_delta("d"),
            doc(
                r#"{"type":"response.reasoning_summary_text.delta","delta":"d","summary_index":0}"#
            )
        );
        assert_eq!(
            reasoning_text_delta("d"),
            doc(r#"{"type":"response.reasoning_text.delta","delta":"d","content_index":0}"#)
        );
    }

    /// The parsed `arguments` string of a function call event.
    fn args(ev: &Value) -> Value {
        serde_json::from_str(ev["item"]["arguments"].as_str().unwrap()).unwrap()
    }

    #[test]
    fn tool_call_events_match_the_doc() {
        assert_eq!(
            function_call("c1", "f", "{\"a\":1}"),
            doc(
                r#"{"type":"response.output_item.done","item":{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"}}"#
            )
        );
        assert_eq!(
            function_call_with_namespace("c1", "ns", "f", "{}"),
            doc(
                r#"{"type":"response.output_item.done","item":{"type":"function_call","call_id":"c1","name":"f","arguments":"{}","namespace":"ns"}}"#
            )
        );
        assert_eq!(
            custom_tool_call("c2", "t", "in"),
            doc(
                r#"{"type":"response.output_item.done","item":{"type":"custom_tool_call","call_id":"c2","name":"t","input":"in"}}"#
            )
        );
        assert_eq!(
            local_shell_call("c3", "completed", &["ls", "-l"]),
            doc(
                r#"{"type":"response.output_item.done","item":{"type":"local_shell_call","call_id":"c3","status":"completed","action":{"type":"exec","command":["ls","-l"]}}}"#
            )
        );
        assert_eq!(
            tool_search_call("c4", json!({"query": "x"})),
            doc(
                r#"{"type":"response.output_item.done","item":{"type":"tool_search_call","call_id":"c4","execution":"client","arguments":{"query":"x"}}}"#
            )
        );
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch";
        assert_eq!(
            apply_patch_custom_tool_call("c5", patch),
            custom_tool_call("c5", "apply_patch", patch)
        );
        let ev = apply_patch_function_call("c6", patch);
        assert_eq!(ev["item"]["name"], "apply_patch");
        assert_eq!(args(&ev), json!({"input": patch}));
        let ev = apply_patch_shell_call("c7", patch);
        assert_eq!(ev["item"]["name"], "shell");
        assert_eq!(args(&ev), json!({"command": ["apply_patch", patch]}));
        let ev = apply_patch_shell_call_via_heredoc("c8", patch);
        assert_eq!(ev["item"]["name"], "shell");
        assert_eq!(
            args(&ev),
            json!({"command": ["bash", "-lc", format!("apply_patch <<'EOF'\n{patch}\nEOF\n")]})
        );
        let ev = shell_command_call("c9", "echo hi");
        assert_eq!(ev["item"]["name"], "shell_command");
        assert_eq!(args(&ev), json!({"command": "echo hi"}));
        let ev = exec_command_call("c10", "pwd");
        assert_eq!(ev["item"]["name"], "exec_command");
        assert_eq!(ev["item"]["type"], "function_call");
        assert_eq!(args(&ev), json!({"cmd": "pwd"}));
        assert_eq!(
            args(&exec_command_call_in("c11", "pwd", "/tmp")),
            json!({"cmd": "pwd", "workdir": "/tmp"})
        );
    }

    #[test]
    fn builtin_and_failure_events_match_the_doc() {
        assert_eq!(
            web_search_call_added_partial("ws", "in_progress"),
            doc(
                r#"{"type":"response.output_item.added","item":{"type":"web_search_call","id":"ws","status":"in_progress"}}"#
            )
        );
        assert_eq!(
            web_search_call_done("ws", "completed", "rust"),
            doc(
                r#"{"type":"response.output_item.done","item":{"type":"web_search_call","id":"ws","status":"completed","action":{"type":"search","query":"rust"}}}"#
            )
        );
        assert_eq!(
            image_generation_call("ig", "completed", "a cat", "AAAA"),
            doc(
                r#"{"type":"response.output_item.done","item":{"type":"image_generation_call","id":"ig","status":"completed","revised_prompt":"a cat","result":"AAAA"}}"#
            )
        );
        assert_eq!(
            failed("r", "server_error", "boom"),
            doc(
                r#"{"type":"response.failed","response":{"id":"r","error":{"code":"server_error","message":"boom"}}}"#
            )
        );
    }
}
