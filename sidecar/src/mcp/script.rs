//! The script of the scripted MCP server: which tools it offers and how each call is answered.
//!
//! ```json
//! {"tools": [
//!   {"name": "echo", "description": "Echoes", "inputSchema": {"type": "object"},
//!    "reply": {"text": "echoed"}},
//!   {"name": "broken", "reply": {"error": "it broke"}},
//!   {"name": "slow", "reply": {"text": "late", "delayMs": 30000}},
//!   {"name": "dies", "reply": {"fault": "crash"}},
//!   {"name": "ask", "reply": {"elicit": {"message": "Your name?", "requestedSchema":
//!     {"type": "object", "properties": {"name": {"type": "string"}}}}}}
//! ]}
//! ```

use std::path::Path;

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::{Value, json};

/// A whole script: the tools, in the order `tools/list` gives them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpScript {
    /// The tools offered.
    #[serde(default)]
    pub tools: Vec<McpTool>,
    /// Exit at once with this status, before reading anything (a server that fails to start).
    #[serde(default, rename = "exitAtStart")]
    pub exit_at_start: Option<i32>,
}

/// One tool and its scripted answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpTool {
    /// The tool's name.
    pub name: String,
    /// Its description (left out of `tools/list` when absent).
    #[serde(default)]
    pub description: Option<String>,
    /// Its input JSON schema (`{"type": "object"}` when absent).
    #[serde(default, rename = "inputSchema")]
    pub input_schema: Option<Value>,
    /// How every call of it is answered.
    #[serde(default)]
    pub reply: McpReply,
}

/// How a `tools/call` is answered.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpReply {
    /// The text content of a successful result.
    #[serde(default)]
    pub text: Option<String>,
    /// A tool error: a result with this text and `isError: true`.
    #[serde(default)]
    pub error: Option<String>,
    /// Wait this long before answering (a cancellation first drops the answer).
    #[serde(default, rename = "delayMs")]
    pub delay_ms: u64,
    /// A fault instead of an answer.
    #[serde(default)]
    pub fault: Option<Fault>,
    /// Ask the client first: the params of an `elicitation/create` request the server
    /// sends before answering (`message`, `requestedSchema`). The call is answered once the
    /// client responds, with the text [`McpReply::elicited`] makes of its answer.
    #[serde(default)]
    pub elicit: Option<Value>,
}

/// A fault the server commits when a tool is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fault {
    /// The process exits with status 1 without answering.
    Crash,
    /// The answer is a line that is not JSON.
    Malformed,
}

impl McpScript {
    /// Parses a script from JSON text.
    pub fn parse(text: &str) -> anyhow::Result<McpScript> {
        let script: McpScript = serde_json::from_str(text).context("not an MCP script")?;
        for tool in &script.tools {
            let r = &tool.reply;
            if r.text.is_some() && r.error.is_some() {
                bail!("tool {:?}: reply has both text and error", tool.name);
            }
            if r.elicit.is_some() && (r.text.is_some() || r.error.is_some() || r.fault.is_some()) {
                bail!(
                    "tool {:?}: an elicit reply is answered from the client's answer: no \
                     text, error or fault",
                    tool.name
                );
            }
        }
        Ok(script)
    }

    /// Reads and parses the script file at `path`.
    pub fn load(path: &Path) -> anyhow::Result<McpScript> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read MCP script {}", path.display()))?;
        McpScript::parse(&text).with_context(|| format!("MCP script {}", path.display()))
    }

    /// The tool named `name`.
    pub fn tool(&self, name: &str) -> Option<&McpTool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The `tools/list` result.
    pub fn list_result(&self) -> Value {
        let tools: Vec<Value> = self.tools.iter().map(McpTool::descriptor).collect();
        json!({ "tools": tools })
    }
}

impl McpTool {
    /// The tool as `tools/list` describes it.
    pub fn descriptor(&self) -> Value {
        let mut tool = json!({
            "name": self.name,
            "inputSchema": self.input_schema.clone().unwrap_or_else(|| json!({"type": "object"})),
        });
        if let Some(description) = &self.description {
            tool["description"] = json!(description);
        }
        tool
    }
}

impl McpReply {
    /// The `tools/call` result (for replies without a fault).
    pub fn call_result(&self) -> Value {
        match (&self.error, &self.text) {
            (Some(error), _) => json!({
                "content": [{"type": "text", "text": error}],
                "isError": true
            }),
            (None, text) => json!({
                "content": [{"type": "text", "text": text.clone().unwrap_or_default()}],
                "isError": false
            }),
        }
    }
}

impl McpReply {
    /// The text of a call answered after an elicitation: `elicitation ACTION CONTENT`, the
    /// client's action and its content as JSON (`null` when it sent none), or
    /// `elicitation error MESSAGE` when the client answered with an error.
    pub fn elicited(answer: &Value) -> String {
        if let Some(error) = answer.get("error") {
            let message = error["message"].as_str().unwrap_or_default();
            return format!("elicitation error {message}");
        }
        let result = &answer["result"];
        let action = result["action"].as_str().unwrap_or("?");
        let content = result.get("content").cloned().unwrap_or(Value::Null);
        format!("elicitation {action} {content}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tools_and_answers() {
        let script = McpScript::parse(
            r#"{"tools": [
                {"name": "echo", "description": "d", "reply": {"text": "hi"}},
                {"name": "bad", "reply": {"error": "no", "delayMs": 5}},
                {"name": "dies", "reply": {"fault": "crash"}}
            ]}"#,
        )
        .unwrap();
        assert_eq!(
            script.list_result(),
            json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object"}, "description": "d"},
                {"name": "bad", "inputSchema": {"type": "object"}},
                {"name": "dies", "inputSchema": {"type": "object"}}
            ]})
        );
        let bad = &script.tool("bad").unwrap().reply;
        assert_eq!(bad.delay_ms, 5);
        assert_eq!(bad.call_result()["isError"], true);
        assert_eq!(script.tool("dies").unwrap().reply.fault, Some(Fault::Crash));
    }

    #[test]
    fn refuses_unknown_keys_and_double_answers() {
        assert!(McpScript::parse(r#"{"tool": []}"#).is_err());
        let both = r#"{"tools": [{"name": "x", "reply": {"text": "a", "error": "b"}}]}"#;
        assert!(McpScript::parse(both).is_err());
        let elicit = r#"{"tools": [{"name": "x", "reply": {"text": "a", "elicit": {}}}]}"#;
        assert!(McpScript::parse(elicit).is_err());
    }

    #[test]
    fn an_elicitation_answer_becomes_the_calls_text() {
        let accepted = json!({"id": 1, "result": {"action": "accept", "content": {"name": "Ada"}}});
        assert_eq!(
            McpReply::elicited(&accepted),
            r#"elicitation accept {"name":"Ada"}"#
        );
        let declined = json!({"id": 1, "result": {"action": "decline"}});
        assert_eq!(McpReply::elicited(&declined), "elicitation decline null");
        let failed = json!({"id": 1, "error": {"code": -1, "message": "no"}});
        assert_eq!(McpReply::elicited(&failed), "elicitation error no");
    }
}
