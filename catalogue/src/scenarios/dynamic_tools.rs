//! Dynamic tool edge cases (`parity-scenarios.md` E8): the experimental gate, namespaced
//! and deferred tools, specs codex refuses, rich and failed tool results, and a tool schema
//! the model API rejects. The plain round trip is A8.

use anyhow::{Context, ensure};
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::{record_requests, recorded, rpc_error, setup_with};
use crate::app_server::message::RpcError;
use crate::app_server::turn::{ItemStatus, Turn, TurnOptions, TurnStatus, run_turn, text};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{World, WorldOptions};
use crate::scenario;
use crate::scenarios::support::png;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "dynamic_tools_need_experimental_api",
            "E8a",
            "dynamicTools without experimentalApi is refused",
            needs_experimental
        )
        .applies(Capabilities::needs_dynamic_tools),
        scenario!(
            "dynamic_tool_namespace_and_deferred",
            "E8b",
            "a namespaced tool call names its namespace; a deferred tool is not offered",
            namespaced
        )
        .applies(Capabilities::needs_dynamic_tools),
        scenario!(
            "dynamic_tool_specs_refused",
            "E8c",
            "a deferred tool without namespace and a dotted name are refused",
            refused_specs
        )
        .applies(Capabilities::needs_dynamic_tools),
        scenario!(
            "dynamic_tool_text_and_image_output",
            "E8d",
            "text and image content items reach the model as input_text and input_image",
            rich_output
        )
        .applies(Capabilities::needs_dynamic_tools),
        scenario!(
            "dynamic_tool_failure_reaches_model",
            "E8e",
            "success:false is reported and its output still reaches the model",
            failed_tool
        )
        .applies(Capabilities::needs_dynamic_tools),
        scenario!(
            "dynamic_tool_schema_rejected_by_model_api",
            "E8f",
            "an invalid_function_parameters 400 fails the turn naming the tool schema",
            schema_rejected
        )
        .applies(Capabilities::needs_turn_error_data),
    ]
}

/// The input schema of every test tool.
fn schema() -> Value {
    json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]})
}

/// A tagged function tool named `name`, with extra fields.
fn function(name: &str, extra: Value) -> Value {
    let mut tool = json!({"type": "function", "name": name, "description": "Look up a ticket.", "inputSchema": schema()});
    if let (Some(t), Value::Object(e)) = (tool.as_object_mut(), extra) {
        t.extend(e);
    }
    tool
}

/// `lookup` and the deferred `hidden` in namespace `ns`, in the form this binary's schema
/// describes: a `namespace` spec where it has that variant, else flat specs with a
/// `namespace` field.
fn namespaced_tools(caps: &Capabilities) -> Value {
    if caps.variant_has_field("DynamicToolSpec", "namespace", "tools") {
        json!([{"type": "namespace", "name": "ns", "description": "Ticket tools.", "tools": [
            function("lookup", json!({})),
            function("hidden", json!({"deferLoading": true})),
        ]}])
    } else {
        json!([
            {"namespace": "ns", "name": "lookup", "description": "Look up a ticket.", "inputSchema": schema()},
            {"namespace": "ns", "name": "hidden", "description": "Look up a ticket.", "inputSchema": schema(), "deferLoading": true},
        ])
    }
}

/// A two-request tool turn: `call-1` to `lookup` (in namespace `ns` when given), then
/// `body("done")`.
fn tool_script(namespace: Option<&str>) -> Vec<Scripted> {
    let arguments = "{\"id\":\"T-1\"}";
    let call = match namespace {
        Some(ns) => events::function_call_with_namespace("call-1", ns, "lookup", arguments),
        None => events::function_call("call-1", "lookup", arguments),
    };
    vec![
        Scripted::sse(bodies::one_item_reply("resp-1", call)),
        Scripted::sse(bodies::assistant_reply("resp-2", "done")),
    ]
}

/// Runs the `lookup` tool turn with `tools`, the handler answering `result`.
async fn tool_turn(
    ctx: &Ctx,
    tools: Value,
    namespace: Option<&str>,
    result: Value,
) -> anyhow::Result<(World, Turn, Value)> {
    let (world, app, thread, _) = setup_with(
        ctx,
        WorldOptions::default(),
        tool_script(namespace),
        json!({"dynamicTools": tools}),
    )
    .await?;
    let calls = record_requests(&app, "item/tool/call", move |_| Ok(result.clone()));
    let turn = run_turn(
        &app,
        &thread,
        vec![text("look up T-1")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(turn.final_response(), "done", "final response");
    let calls = recorded(&calls);
    ensure_eq!(calls.len(), 1, "item/tool/call requests");
    Ok((world, turn, calls[0].clone()))
}

async fn needs_experimental(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        experimental_api: false,
        ..Default::default()
    };
    let mut world = ctx.world(options).await?;
    let app = world.start().await?;
    let error = rpc_error(
        app.thread_start(json!({"dynamicTools": [function("lookup", json!({}))]}))
            .await,
        "thread/start with dynamicTools without experimentalApi",
    )?;
    ensure_eq!(error.code, RpcError::INVALID_REQUEST, "error code");
    ensure_eq!(
        error.message.as_str(),
        "thread/start.dynamicTools requires experimentalApi capability",
        "error message"
    );
    world.finish().await
}

async fn namespaced(ctx: &Ctx) -> anyhow::Result<()> {
    let text_result = json!({"contentItems": [{"type": "inputText", "text": "ticket T-1 is open"}], "success": true});
    let (world, turn, call) =
        tool_turn(ctx, namespaced_tools(&ctx.caps), Some("ns"), text_result).await?;
    ensure_eq!(call["namespace"], json!("ns"), "item/tool/call namespace");
    ensure_eq!(call["tool"], json!("lookup"), "item/tool/call tool");
    ensure_eq!(
        call["arguments"],
        json!({"id": "T-1"}),
        "item/tool/call arguments"
    );
    let done = turn.completed_items("dynamicToolCall");
    ensure_eq!(done.len(), 1, "completed dynamicToolCall items");
    ensure_eq!(
        done[0]["namespace"],
        json!("ns"),
        "completed item namespace"
    );
    let requests = world.expect_requests(2).await?;
    let names = requests[0].tool_names();
    ensure!(
        names.iter().any(|n| n == "ns/lookup"),
        "request 1 does not offer ns/lookup: {names:?}"
    );
    ensure!(
        !names.iter().any(|n| n.ends_with("hidden")),
        "request 1 offers the deferred tool: {names:?}"
    );
    let output = requests[1]
        .function_call_output_text("call-1")
        .context("request 2 has no text output for call-1")?;
    ensure_eq!(output.as_str(), "ticket T-1 is open", "call-1 output");
    world.finish().await
}

async fn refused_specs(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let app = world.start().await?;
    let deferred = rpc_error(
        app.thread_start(
            json!({"dynamicTools": [function("lookup", json!({"deferLoading": true}))]}),
        )
        .await,
        "a deferred tool without a namespace",
    )?;
    ensure_eq!(
        deferred.code,
        RpcError::INVALID_REQUEST,
        "error code of a deferred tool without namespace"
    );
    ensure!(
        deferred.message.contains("lookup") && deferred.message.contains("namespace"),
        "error of a deferred tool without namespace: {}",
        deferred.message
    );
    let dotted = rpc_error(
        app.thread_start(json!({"dynamicTools": [function("lookup.ticket", json!({}))]}))
            .await,
        "a tool named lookup.ticket",
    )?;
    ensure_eq!(
        dotted.code,
        RpcError::INVALID_REQUEST,
        "error code of a dotted tool name"
    );
    ensure!(
        dotted.message.contains("Responses API") && dotted.message.contains("lookup.ticket"),
        "error of a dotted tool name: {}",
        dotted.message
    );
    world.finish().await
}

async fn rich_output(ctx: &Ctx) -> anyhow::Result<()> {
    let url = format!(
        "data:image/png;base64,{}",
        codex_parity_sidecar::base64::encode(&png::one_pixel([0, 128, 255, 255]))
    );
    let result = json!({"contentItems": [
        {"type": "inputText", "text": "ticket T-1 has a screenshot"},
        {"type": "inputImage", "imageUrl": url},
    ], "success": true});
    let tools = json!([function("lookup", json!({}))]);
    let (world, _, _) = tool_turn(ctx, tools, None, result).await?;
    let requests = world.expect_requests(2).await?;
    let output = requests[1]
        .function_call_output("call-1")
        .context("request 2 has no output for call-1")?;
    ensure_eq!(
        output["output"],
        json!([
            {"type": "input_text", "text": "ticket T-1 has a screenshot"},
            {"type": "input_image", "image_url": url, "detail": "high"},
        ]),
        "call-1 output"
    );
    world.finish().await
}

async fn failed_tool(ctx: &Ctx) -> anyhow::Result<()> {
    let result = json!({"contentItems": [{"type": "inputText", "text": "ticket service unavailable"}], "success": false});
    let tools = json!([function("lookup", json!({}))]);
    let (world, turn, _) = tool_turn(ctx, tools, None, result).await?;
    let done = turn.completed_items("dynamicToolCall");
    ensure_eq!(done.len(), 1, "completed dynamicToolCall items");
    ensure_eq!(done[0]["success"], json!(false), "completed item success");
    ensure_eq!(
        done[0]["status"],
        json!(ItemStatus::Failed),
        "completed item status"
    );
    let requests = world.expect_requests(2).await?;
    let (content, _) = requests[1]
        .function_call_output_content_and_success("call-1")
        .context("request 2 has no output for call-1")?;
    ensure_eq!(
        content.as_deref(),
        Some("ticket service unavailable"),
        "call-1 output text"
    );
    world.finish().await
}

async fn schema_rejected(ctx: &Ctx) -> anyhow::Result<()> {
    let body = json!({"error": {
        "message": "Invalid schema for function 'lookup': In context=('properties', 'id'), 'anyOf' is not allowed.",
        "type": "invalid_request_error",
        "param": "tools[0].parameters",
        "code": "invalid_function_parameters"
    }});
    let tools = json!([function("lookup", json!({}))]);
    let (world, app, thread, _) = setup_with(
        ctx,
        WorldOptions::default(),
        vec![Scripted::http_error(400, body)],
        json!({"dynamicTools": tools}),
    )
    .await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("look up T-1")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Failed, "turn status");
    ensure!(
        turn.error_message().contains("invalid_function_parameters"),
        "turn.error.message: {}",
        turn.error_message()
    );
    let errors: Vec<&Value> = turn
        .notifications("error")
        .into_iter()
        .filter(|p| p["willRetry"] != json!(true))
        .collect();
    ensure_eq!(errors.len(), 1, "terminal error notifications");
    let reason = errors[0].pointer("/error/data/reason").cloned();
    if reason != Some(json!("dynamicToolInputSchema")) {
        ctx.drift(
            "error.data.reason",
            reason.clone().unwrap_or(Value::Null),
            format!(
                "the error names no dynamic tool schema: error.data.reason is {}, codexErrorInfo {}",
                reason.map_or("absent".to_string(), |r| r.to_string()),
                errors[0]["error"]["codexErrorInfo"]
            ),
        );
    }
    world.expect_requests(1).await?;
    world.finish().await
}
