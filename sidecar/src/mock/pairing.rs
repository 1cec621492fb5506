//! The tool-call pairing invariant of `responses-wire-format.md` §9: in a model request's
//! `input`, every tool call carries its output and every output has its call.

use serde_json::Value;

/// The pairing violations of one model request body, each naming the item and `call_id`;
/// empty when the body is fine. A body with a `previous_response_id` (an incremental
/// WebSocket frame) carries only the new items: the calls its outputs answer are in the
/// responses it continues, so an output without its call in the same input is not counted.
///
/// ```
/// use codex_parity_sidecar::pairing::violations;
/// use serde_json::json;
/// let call = json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"});
/// let body = json!({"input": [call]});
/// assert_eq!(
///     violations(&body),
///     vec!["function_call \"c1\" has no function_call_output in the same input"]
/// );
/// ```
pub fn violations(body: &Value) -> Vec<String> {
    let Some(input) = body.get("input").and_then(Value::as_array) else {
        return vec!["the request body has no \"input\" array".to_string()];
    };
    let incremental = body
        .get("previous_response_id")
        .and_then(Value::as_str)
        .is_some_and(|id| !id.is_empty());
    let mut found = Vec::new();
    let has_item = |types: &[&str], call_id: &str| {
        input.iter().any(|item| {
            types.contains(&item_type(item))
                && item.get("call_id").and_then(Value::as_str) == Some(call_id)
        })
    };
    for (position, item) in input.iter().enumerate() {
        let kind = item_type(item);
        let call_id = item
            .get("call_id")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty());
        let (calls, outputs): (&[&str], &[&str]) = match kind {
            "function_call_output" => (&["function_call", "local_shell_call"], &[]),
            "custom_tool_call_output" => (&["custom_tool_call"], &[]),
            "tool_search_output" => (&["tool_search_call"], &[]),
            "function_call" => (&[], &["function_call_output"]),
            "custom_tool_call" => (&[], &["custom_tool_call_output"]),
            "tool_search_call" => (&[], &["tool_search_output"]),
            _ => continue,
        };
        let Some(call_id) = call_id else {
            let server_side = item.get("execution").and_then(Value::as_str) == Some("server");
            if kind != "tool_search_output" || !server_side {
                found.push(format!(
                    "{kind}{} at input[{position}] has no call_id",
                    named(item)
                ));
            }
            continue;
        };
        if !calls.is_empty() && !incremental && !has_item(calls, call_id) {
            found.push(format!(
                "{kind} for call_id \"{call_id}\" has no {} in the same input",
                calls.join(" or ")
            ));
        }
        if !outputs.is_empty() && !has_item(outputs, call_id) {
            found.push(format!(
                "{kind} \"{call_id}\" has no {} in the same input",
                outputs.join(" or ")
            ));
        }
    }
    found
}

/// ` "ns/name"` for an item that carries a name (so a report says which tool), else empty.
fn named(item: &Value) -> String {
    let text = |key| item.get(key).and_then(Value::as_str);
    match (text("namespace"), text("name")) {
        (Some(ns), Some(name)) => format!(" \"{ns}/{name}\""),
        (None, Some(name)) => format!(" \"{name}\""),
        _ => String::new(),
    }
}

fn item_type(item: &Value) -> &str {
    item.get("type").and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(ty: &str, id: &str) -> Value {
        json!({"type": ty, "call_id": id})
    }

    #[test]
    fn an_incremental_frame_answers_calls_of_the_chain() {
        let output = call("function_call_output", "a");
        let body = json!({"previous_response_id": "resp-2", "input": [output.clone()]});
        assert!(violations(&body).is_empty());
        let body = json!({"previous_response_id": "", "input": [output]});
        assert_eq!(violations(&body).len(), 1);
    }

    #[test]
    fn paired_calls_and_plain_messages_are_fine() {
        let body = json!({"input": [
            {"type": "message", "role": "user", "content": []},
            call("function_call", "a"), call("function_call_output", "a"),
            call("local_shell_call", "b"), call("function_call_output", "b"),
            call("custom_tool_call", "c"), call("custom_tool_call_output", "c"),
            call("tool_search_call", "d"), call("tool_search_output", "d"),
            {"type": "tool_search_output", "execution": "server"},
        ]});
        assert_eq!(violations(&body), Vec::<String>::new());
        assert!(violations(&json!({"input": []})).is_empty());
    }

    #[test]
    fn each_rule_is_reported_with_its_call_id() {
        assert_eq!(
            violations(&json!({"model": "m"})),
            vec!["the request body has no \"input\" array"]
        );
        assert_eq!(
            violations(&json!({"input": [{"type": "function_call_output", "call_id": ""}]})),
            vec!["function_call_output at input[0] has no call_id"]
        );
        // An output codex injects by itself names its tool (0.171.0's goal continuation).
        assert_eq!(
            violations(
                &json!({"input": [{"type": "function_call_output", "name": "goal_objective", "namespace": "agent"}]})
            ),
            vec!["function_call_output \"agent/goal_objective\" at input[0] has no call_id"]
        );
        assert_eq!(
            violations(&json!({"input": [{"type": "function_call_output", "name": "n"}]})),
            vec!["function_call_output \"n\" at input[0] has no call_id"]
        );
        assert_eq!(
            violations(&json!({"input": [{"type": "tool_search_output", "execution": "client"}]})),
            vec!["tool_search_output at input[0] has no call_id"]
        );
        assert_eq!(
            violations(&json!({"input": [call("custom_tool_call_output", "x")]})),
            vec![
                "custom_tool_call_output for call_id \"x\" has no custom_tool_call in the same input"
            ]
        );
        assert_eq!(
            violations(&json!({"input": [call("function_call_output", "y")]})),
            vec![
                "function_call_output for call_id \"y\" has no function_call or local_shell_call in the same input"
            ]
        );
        assert_eq!(
            violations(&json!({"input": [call("tool_search_call", "z")]})),
            vec!["tool_search_call \"z\" has no tool_search_output in the same input"]
        );
        // An output of the wrong kind does not pair.
        assert_eq!(
            violations(&json!({"input": [call("custom_tool_call", "w"), call("function_call_output", "w")]})).len(),
            2
        );
    }
}
