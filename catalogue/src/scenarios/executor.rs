//! Group A: executor and turn parity (`parity-scenarios.md` A1–A8), the turn-level
//! behaviour an executor built on `codex app-server` relies on.

use std::time::Duration;

use anyhow::{Context, bail, ensure};
use codex_parity_sidecar::Scripted;
use codex_parity_sidecar::bodies;
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::events::{self, Phase};
use serde_json::{Value, json};

use super::{
    SAMPLE_USAGE, check_identity_headers, check_route, header, record_requests, recorded, setup,
    setup_with,
};
use crate::app_server::message::RpcError;
use crate::app_server::turn::{
    ItemStatus, Turn, TurnOptions, TurnStatus, run_turn, start_turn, text, wait_turn,
};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{MOCK_MODEL, WorldOptions};
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "smoke_uses_mock_responses",
            "A1",
            "a turn reaches the mock and its answer comes back",
            smoke
        )
        .golden_transcript(),
        scenario!(
            "streaming_deltas",
            "A2",
            "streamed deltas arrive in order, the final text once",
            streaming
        )
        .golden_transcript(),
        scenario!(
            "usage_and_model_override_cross_boundary",
            "A3",
            "exact usage and a per-turn model override cross the boundary",
            usage_override(false)
        ),
        scenario!(
            "usage_and_thread_model_override_cross_boundary",
            "A3b",
            "the model override on thread/start reaches the request",
            usage_override(true)
        ),
        scenario!(
            "uses_last_unknown_phase_message",
            "A4",
            "the last message without a phase is the answer",
            last_unknown_phase
        ),
        scenario!(
            "final_answer_phase_wins",
            "A5",
            "a final_answer message wins over commentary",
            final_answer_wins
        ),
        scenario!(
            "commentary_only_does_not_become_final_response",
            "A6",
            "commentary alone gives an empty final response",
            commentary_only
        ),
        scenario!(
            "ignores_retry_progress_until_terminal_failure",
            "A7",
            "retry progress is progress; one terminal failure after 1 + 5 requests",
            retry_progress
        )
        .timeout(Duration::from_secs(90))
        .waits(),
        scenario!(
            "dynamic_tool_round_trip",
            "A8",
            "a dynamic tool call goes to the client and back",
            dynamic_tool
        )
        .golden_transcript()
        .applies(Capabilities::needs_dynamic_tools),
    ]
}

async fn smoke(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(vec![
        events::response_created("resp-1"),
        events::assistant_message("msg-1", "fixture hello"),
        events::completed("resp-1"),
    ])];
    let (world, app, thread) = setup(ctx, script).await?;
    let turn = run_turn(&app, &thread, vec![text("hello?")], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure!(turn.error.is_none(), "turn error: {:?}", turn.error);
    ensure_eq!(
        turn.agent_messages(),
        vec![("msg-1", "fixture hello", None)],
        "agent messages"
    );
    ensure!(
        turn.notifications("item/agentMessage/delta").is_empty(),
        "a delta arrived although none was streamed"
    );
    ensure_eq!(turn.chunks(), vec!["fixture hello".to_string()], "chunks");
    ensure_eq!(turn.final_response(), "fixture hello", "final response");
    let requests = world.expect_requests(1).await?;
    let r = &requests[0];
    check_route(&world, r)?;
    ensure_eq!(r.body["model"], json!(MOCK_MODEL), "body.model");
    ensure_eq!(r.body["stream"], json!(true), "body.stream");
    ensure_eq!(
        r.last_user_text(),
        Some("hello?".to_string()),
        "last user text"
    );
    check_identity_headers(r)?;
    ensure_eq!(header(r, "thread-id")?, thread.as_str(), "thread-id header");
    ensure_eq!(
        r.body["prompt_cache_key"],
        json!(thread),
        "body.prompt_cache_key"
    );
    world.finish().await
}

async fn streaming(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(vec![
        events::response_created("resp-1"),
        events::message_item_added_empty("msg-stream"),
        events::output_text_delta("he"),
        events::output_text_delta("llo"),
        events::assistant_message("msg-stream", "hello"),
        events::completed("resp-1"),
    ])];
    let (world, app, thread) = setup(ctx, script).await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("stream please")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let mut deltas = Vec::new();
    let mut completed_at = None;
    for (i, m) in turn.messages.iter().enumerate() {
        if m.is("item/agentMessage/delta") {
            ensure_eq!(m.params()["itemId"], json!("msg-stream"), "delta itemId");
            ensure!(
                completed_at.is_none(),
                "a delta arrived after the message completed"
            );
            deltas.push(m.params()["delta"].as_str().unwrap_or("").to_string());
        }
        if m.is("item/completed") && m.params()["item"]["type"] == "agentMessage" {
            completed_at = Some(i);
        }
    }
    ensure_eq!(deltas, vec!["he".to_string(), "llo".to_string()], "deltas");
    ensure_eq!(
        turn.agent_messages(),
        vec![("msg-stream", "hello", None)],
        "agent messages"
    );
    ensure_eq!(
        turn.chunks(),
        vec!["he".to_string(), "llo".to_string()],
        "chunks"
    );
    ensure_eq!(turn.final_response(), "hello", "final response");
    world.expect_requests(1).await?;
    world.finish().await
}

async fn usage_override(ctx: &Ctx, on_thread: bool) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(bodies::costed_reply(
        "resp-1",
        "msg-usage",
        "usage applied",
        SAMPLE_USAGE,
    ))];
    let model = "mock-model-override";
    let (thread_params, options) = if on_thread {
        (json!({"model": model}), TurnOptions::default())
    } else {
        (
            json!({}),
            TurnOptions {
                model: Some(model.into()),
                ..Default::default()
            },
        )
    };
    let (world, app, thread, _) =
        setup_with(ctx, WorldOptions::default(), script, thread_params).await?;
    let mut turn = run_turn(&app, &thread, vec![text("use override")], &options).await?;
    turn.model = model.into();
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let requests = world.expect_requests(1).await?;
    ensure_eq!(requests[0].body["model"], json!(model), "body.model");
    let usage = turn
        .token_usage()
        .context("no thread/tokenUsage/updated for the turn")?;
    let expected = json!({"inputTokens":11,"cachedInputTokens":3,"outputTokens":7,"reasoningOutputTokens":5,"totalTokens":18});
    ensure_eq!(
        serde_json::to_value(usage.last)?,
        expected,
        "tokenUsage.last"
    );
    ensure_eq!(
        serde_json::to_value(usage.total)?,
        expected,
        "tokenUsage.total"
    );
    ensure!(
        usage.model_context_window.is_some(),
        "modelContextWindow missing"
    );
    ensure_eq!(turn.final_response(), "usage applied", "final response");
    ensure_eq!(
        serde_json::to_value(turn.executor_usage())?,
        json!({"input_tokens":8,"output_tokens":7,"total_tokens":18,"cache_read_input_tokens":3,"model":model}),
        "executor usage"
    );
    world.finish().await
}

/// One turn whose single response holds `messages`; checks chunks and final response.
async fn phases(
    ctx: &Ctx,
    prompt: &str,
    messages: Vec<(&str, &str, Option<Phase>)>,
    chunks: &[&str],
    final_response: &str,
) -> anyhow::Result<()> {
    let mut body = vec![events::response_created("resp-1")];
    for (id, text, phase) in &messages {
        body.push(match phase {
            Some(p) => events::assistant_message_with_phase(id, text, *p),
            None => events::assistant_message(id, text),
        });
    }
    body.push(events::completed("resp-1"));
    let (world, app, thread) = setup(ctx, vec![Scripted::sse(body)]).await?;
    let turn = run_turn(&app, &thread, vec![text(prompt)], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let phase_name = |p: &Option<Phase>| match p {
        Some(Phase::Commentary) => Some("commentary"),
        Some(Phase::FinalAnswer) => Some("final_answer"),
        None => None,
    };
    let want: Vec<(&str, &str, Option<&str>)> = messages
        .iter()
        .map(|(i, t, p)| (*i, *t, phase_name(p)))
        .collect();
    ensure_eq!(
        turn.agent_messages(),
        want,
        "agent messages (id, text, phase)"
    );
    ensure_eq!(
        turn.chunks(),
        chunks.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        "chunks"
    );
    ensure_eq!(turn.final_response(), final_response, "final response");
    world.expect_requests(1).await?;
    world.finish().await
}

async fn last_unknown_phase(ctx: &Ctx) -> anyhow::Result<()> {
    phases(
        ctx,
        "case: last unknown phase wins",
        vec![
            ("msg-last-1", "First message", None),
            ("msg-last-2", "Second message", None),
        ],
        &["First message", "Second message"],
        "Second message",
    )
    .await
}

async fn final_answer_wins(ctx: &Ctx) -> anyhow::Result<()> {
    phases(
        ctx,
        "choose final answer",
        vec![
            ("msg-commentary", "Commentary", Some(Phase::Commentary)),
            ("msg-final", "Final answer", Some(Phase::FinalAnswer)),
        ],
        &["Commentary", "Final answer"],
        "Final answer",
    )
    .await
}

async fn commentary_only(ctx: &Ctx) -> anyhow::Result<()> {
    phases(
        ctx,
        "case: commentary only",
        vec![("msg-commentary", "Commentary", Some(Phase::Commentary))],
        &["Commentary"],
        "",
    )
    .await
}

async fn retry_progress(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        stream_max_retries: 5,
        ..Default::default()
    };
    let failing = || {
        Scripted::sse(vec![
            events::response_created("resp-failed"),
            events::failed("resp-failed", "server_error", "boom from mock model"),
        ])
    };
    let script = (0..6).map(|_| failing()).collect();
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let started = start_turn(
        &app,
        &thread,
        vec![text("trigger failure")],
        &TurnOptions::default(),
    )
    .await?;
    let turn = wait_turn(&app, started, Duration::from_secs(45)).await?;
    ensure_eq!(turn.status, TurnStatus::Failed, "turn status");
    // Compared as drift, not asserted: the WebSocket twin (F2) reports every way it differs.
    let progress: Vec<String> = turn
        .retry_progress()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let want: Vec<String> = (1..=5).map(|i| format!("Reconnecting... {i}/5")).collect();
    ctx.expect("turn.retry_progress", json!(want), json!(progress));
    for m in turn.notifications("error") {
        if m["willRetry"] == json!(true) {
            ensure!(
                m.pointer("/error/codexErrorInfo/responseStreamDisconnected")
                    .is_some(),
                "progress error without codexErrorInfo.responseStreamDisconnected: {m}"
            );
        }
    }
    let terminal = turn.terminal_errors();
    ensure_eq!(terminal.len(), 1, "number of terminal errors");
    if !terminal[0].contains("boom from mock model") {
        let message = format!("the terminal error is not the model's: {}", terminal[0]);
        ctx.drift("turn.terminal_error", json!(terminal[0]), message);
    }
    if !turn.error_message().contains("boom from mock model") {
        let message = format!(
            "turn.error.message is not the model's: {}",
            turn.error_message()
        );
        ctx.drift("turn.error.message", json!(turn.error_message()), message);
    }
    ensure!(
        turn.agent_messages().is_empty(),
        "an agent message arrived on a failed turn"
    );
    ensure_eq!(turn.final_response(), "", "final response");
    // The terminal error must come after every progress error.
    let last_progress = turn
        .messages
        .iter()
        .rposition(|m| m.is("error") && m.params()["willRetry"] == json!(true));
    let first_terminal = turn
        .messages
        .iter()
        .position(|m| m.is("error") && m.params()["willRetry"] != json!(true));
    ensure!(
        last_progress < first_terminal,
        "the terminal error came before the retry progress ended"
    );
    let requests = world.captured(6, Duration::from_secs(2)).await?;
    let count = requests.iter().filter(|r| !r.auto_warmup).count();
    ctx.expect("requests.count", json!(6), json!(count));
    world.finish().await
}

async fn dynamic_tool(ctx: &Ctx) -> anyhow::Result<()> {
    let schema =
        json!({"type":"object","properties":{"value":{"type":"integer"}},"required":["value"]});
    let script = vec![
        Scripted::sse(bodies::function_call_reply(
            "resp-1",
            "call-1",
            "calculate",
            "{\"value\": 41}",
        )),
        Scripted::sse(vec![
            events::response_created("resp-2"),
            events::assistant_message("msg-tool", "42"),
            events::completed("resp-2"),
        ]),
    ];
    let tool =
        json!({"type":"function","name":"calculate","description":"Add one.","inputSchema":schema});
    let thread_params = json!({"dynamicTools": [tool]});
    let (world, app, thread, _) =
        setup_with(ctx, WorldOptions::default(), script, thread_params).await?;
    let calls = record_requests(&app, "item/tool/call", |params| {
        if params["tool"] != "calculate" || params["arguments"] != json!({"value": 41}) {
            return Err(RpcError {
                code: RpcError::INVALID_PARAMS,
                message: format!("unexpected tool call {params}"),
                data: None,
            });
        }
        Ok(
            json!({"contentItems":[{"type":"inputText","text":"{\"result\": \"42\"}"}],"success":true}),
        )
    });
    let turn = run_turn(
        &app,
        &thread,
        vec![text("use the tool")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    check_tool_call(&recorded(&calls), &thread, &turn.id)?;
    check_tool_items(&turn)?;
    ensure_eq!(turn.final_response(), "42", "final response");
    let requests = world.expect_requests(2).await?;
    check_tool_requests(&requests, &schema)?;
    world.finish().await
}

/// Asserts the one `item/tool/call` request codex sent the client for the dynamic tool.
fn check_tool_call(calls: &[Value], thread: &str, turn_id: &str) -> anyhow::Result<()> {
    ensure_eq!(calls.len(), 1, "item/tool/call requests");
    let call = &calls[0];
    ensure_eq!(call["callId"], json!("call-1"), "item/tool/call callId");
    ensure_eq!(call["tool"], json!("calculate"), "item/tool/call tool");
    ensure_eq!(call["namespace"], Value::Null, "item/tool/call namespace");
    ensure_eq!(call["threadId"], json!(thread), "item/tool/call threadId");
    ensure_eq!(call["turnId"], json!(turn_id), "item/tool/call turnId");
    Ok(())
}

/// Asserts the turn's `dynamicToolCall` item, as started and as completed.
fn check_tool_items(turn: &Turn) -> anyhow::Result<()> {
    let started = turn
        .notifications("item/started")
        .into_iter()
        .find(|p| p["item"]["type"] == "dynamicToolCall")
        .context("no item/started for the dynamicToolCall")?;
    ensure_eq!(started["item"]["id"], json!("call-1"), "started item id");
    ensure_eq!(
        started["item"]["tool"],
        json!("calculate"),
        "started item tool"
    );
    ensure_eq!(
        started["item"]["arguments"],
        json!({"value": 41}),
        "started item arguments"
    );
    ensure_eq!(
        started["item"]["status"],
        json!(ItemStatus::InProgress),
        "started item status"
    );
    let done = turn.completed_items("dynamicToolCall");
    ensure_eq!(done.len(), 1, "completed dynamicToolCall items");
    ensure_eq!(
        done[0]["status"],
        json!(ItemStatus::Completed),
        "completed item status"
    );
    ensure_eq!(done[0]["success"], json!(true), "completed item success");
    ensure_eq!(
        done[0]["contentItems"],
        json!([{"type":"inputText","text":"{\"result\": \"42\"}"}]),
        "completed item contentItems"
    );
    Ok(())
}

/// Asserts the tool as offered to the model and the call and its output sent back to it.
fn check_tool_requests(requests: &[CapturedRequest], schema: &Value) -> anyhow::Result<()> {
    let spec = requests[0].body["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "calculate"))
        .context("request 1 does not offer the calculate tool")?;
    ensure_eq!(
        spec.clone(),
        json!({"type":"function","name":"calculate","description":"Add one.","strict":false,"parameters":schema}),
        "the tool as the model sees it"
    );
    // Over the WebSocket request 2 is a frame continuing request 1: what it stands for.
    let input = requests[1].full_input()?;
    let call_item = input
        .iter()
        .find(|i| i["type"] == "function_call" && i["call_id"] == "call-1")
        .context("request 2 does not carry the function_call")?;
    ensure_eq!(call_item["name"], json!("calculate"), "function_call name");
    ensure_eq!(
        call_item["arguments"],
        json!("{\"value\": 41}"),
        "function_call arguments"
    );
    let output = requests[1]
        .function_call_output_text("call-1")
        .context("request 2 has no function_call_output for call-1")?;
    if !output.contains("42") {
        bail!("function_call_output does not carry the handler's text: {output}");
    }
    Ok(())
}
