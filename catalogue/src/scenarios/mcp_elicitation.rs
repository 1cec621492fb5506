//! MCP elicitation in group H (`mcpServer/elicitation/request`): the project's MCP server
//! asks for input in the middle of a tool call (`elicitation/create` with a form schema,
//! see `docs/mcp-server.md`), codex asks the client, and the client accepts with content,
//! declines or cancels. Each scenario asserts the server request, what the MCP server got
//! back, and what the model is told the tool returned.

use anyhow::ensure;
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::mcp::{SERVER, capture_lines, finish, mcp_setup, offered_namespace, output_of};
use super::{record_requests, recorded};
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;

/// The server request that carries an MCP server's elicitation to the client.
const ELICITATION: &str = "mcpServer/elicitation/request";

/// What the MCP server asks.
const QUESTION: &str = "Which colour should the parity test use?";

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    let applies = |c: &Capabilities| {
        c.needs_mcp()?;
        c.needs_server_request(ELICITATION)
    };
    vec![
        scenario!(
            "mcp_elicitation_accepted",
            "H26",
            "an MCP server's elicitation/create during a tool call reaches the client as \
             mcpServer/elicitation/request (serverName, threadId, turnId, the message and the \
             requested schema); the client's accept with content goes back to the server as \
             its answer, and the model gets the tool's result built from it",
            elicit(Reply::Accept)
        )
        .applies(applies),
        scenario!(
            "mcp_elicitation_declined",
            "H27",
            "an elicitation the client declines reaches the MCP server as action decline \
             without content; the tool call still completes and the turn too",
            elicit(Reply::Decline)
        )
        .applies(applies),
        scenario!(
            "mcp_elicitation_cancelled",
            "H28",
            "an elicitation the client cancels reaches the MCP server as action cancel; the \
             tool call still completes and the turn too",
            elicit(Reply::Cancel)
        )
        .applies(applies),
    ]
}

/// The client's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    /// `accept` with `{"colour": "blue"}`.
    Accept,
    /// `decline`.
    Decline,
    /// `cancel`.
    Cancel,
}

impl Reply {
    fn action(self) -> &'static str {
        match self {
            Reply::Accept => "accept",
            Reply::Decline => "decline",
            Reply::Cancel => "cancel",
        }
    }

    /// The answer to the server request.
    fn answer(self) -> Value {
        match self {
            Reply::Accept => json!({"action": "accept", "content": {"colour": "blue"}}),
            other => json!({"action": other.action(), "content": null}),
        }
    }
}

/// The form the MCP server asks codex to fill: one required string.
fn requested_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"colour": {"type": "string", "title": "Colour"}},
        "required": ["colour"]
    })
}

/// The texts of the MCP tool's content in what the model was given for a call, in either
/// form codex gives it (G17 records which): a list of `input_text` parts, or one string of
/// the wall-time line, `Output:` and the content as JSON.
fn tool_texts(output: &Value) -> Vec<String> {
    match output {
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str().map(String::from))
            .collect(),
        Value::String(text) => text
            .split_once("Output:\n")
            .and_then(|(_, content)| serde_json::from_str::<Vec<Value>>(content).ok())
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p["text"].as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether an elicitation request is codex's own approval of a tool call rather than the
/// MCP server's question.
fn is_approval(params: &Value) -> bool {
    params["_meta"]["codex_approval_kind"].is_string()
}

/// The answers to elicitation requests the MCP server received (the responses codex wrote to
/// it for an id the server gave an `elicitation/create`).
fn server_got(files: &super::mcp::McpFiles) -> anyhow::Result<Vec<Value>> {
    Ok(capture_lines(files)?
        .into_iter()
        .filter(|l| l["event"] == "received")
        .map(|l| l["message"].clone())
        .filter(|m| {
            m.get("method").is_none()
                && m["id"].as_str().is_some_and(|id| id.starts_with("elicit-"))
        })
        .collect())
}

async fn elicit(ctx: &Ctx, reply: Reply) -> anyhow::Result<()> {
    let tools = json!({"tools": [{
        "name": "pick_colour",
        "description": "Asks the user for a colour",
        "inputSchema": {"type": "object"},
        "reply": {"elicit": {"mode": "form", "message": QUESTION,
                             "requestedSchema": requested_schema()}}
    }]});
    let options = WorldOptions {
        approval_policy: "on-request".into(),
        sandbox_mode: "workspace-write".into(),
        ..Default::default()
    };
    let (world, app, thread, files) = mcp_setup(ctx, options, tools, vec![], None).await?;
    let namespace = offered_namespace(&world, &app, &thread).await?;
    world
        .script(vec![
            Scripted::sse(bodies::one_item_reply(
                "resp-call",
                events::function_call_with_namespace("call-ask", &namespace, "pick_colour", "{}"),
            )),
            Scripted::sse(bodies::assistant_reply("resp-done", "done")),
        ])
        .await?;
    // Under on-request, codex may first ask to approve the tool call, in the same request
    // marked as its own (`_meta.codex_approval_kind`): approved, and told apart.
    let seen = record_requests(&app, ELICITATION, move |params| {
        Ok(if is_approval(params) {
            json!({"action": "accept", "content": null})
        } else {
            reply.answer()
        })
    });
    let turn = run_turn(
        &app,
        &thread,
        vec![text("pick one")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(turn.final_response(), "done", "final response");
    let (approvals, asked): (Vec<Value>, Vec<Value>) =
        recorded(&seen).into_iter().partition(is_approval);
    ctx.observe(format!(
        "{} tool-call approval(s) asked as {ELICITATION} first",
        approvals.len()
    ));
    ensure_eq!(asked.len(), 1, "{ELICITATION} requests of the MCP server");
    let request = &asked[0];
    ensure_eq!(
        request["serverName"],
        json!(SERVER),
        "{ELICITATION} serverName"
    );
    ensure_eq!(request["threadId"], json!(thread), "{ELICITATION} threadId");
    ctx.expect(
        "elicitation.turn_id",
        json!(turn.id),
        request["turnId"].clone(),
    );
    ctx.expect(
        "elicitation.message",
        json!(QUESTION),
        request["message"].clone(),
    );
    ctx.expect(
        "elicitation.requested_schema",
        requested_schema(),
        request["requestedSchema"].clone(),
    );
    ctx.observe(format!("{ELICITATION} mode: {}", request["mode"]));
    let got = server_got(&files)?;
    ensure!(
        got.len() == 1,
        "the MCP server got {} answers to its elicitation: {got:?}",
        got.len()
    );
    let result = &got[0]["result"];
    ctx.expect(
        "elicitation.server_got_action",
        json!(reply.action()),
        result["action"].clone(),
    );
    let content = result.get("content").cloned().unwrap_or(Value::Null);
    let want_content = match reply {
        Reply::Accept => json!({"colour": "blue"}),
        _ => Value::Null,
    };
    ctx.expect(
        "elicitation.server_got_content",
        want_content.clone(),
        content,
    );
    let requests = world.expect_requests(3).await?;
    let output = output_of(&requests[2], "call-ask");
    let parts = tool_texts(&output);
    // What the MCP server answered the call with, from the client's answer.
    let told = format!("elicitation {} {want_content}", reply.action());
    ctx.expect(
        "elicitation.model_told",
        json!(told),
        json!(parts.iter().find(|p| p.starts_with("elicitation "))),
    );
    finish(world, &files).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_texts_reads_both_forms_of_the_output() {
        let parts = json!([{"type": "input_text", "text": "Wall time: … seconds\nOutput:"},
                           {"type": "input_text", "text": "elicitation cancel null"}]);
        assert_eq!(tool_texts(&parts)[1], "elicitation cancel null");
        let one = json!("Wall time: … seconds\nOutput:\n[{\"type\":\"text\",\"text\":\"x y\"}]");
        assert_eq!(tool_texts(&one), ["x y"]);
        assert!(tool_texts(&json!("no output")).is_empty());
    }
}
