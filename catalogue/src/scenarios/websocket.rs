//! The Responses WebSocket at work (group F, `parity-scenarios.md` F, facts in
//! `transports.md`): a turn over the socket, with one upgrade per thread, the warm-up and
//! incremental frames, and the same client-visible results as over HTTP (F1); and the
//! executor group again with the socket on (F2, twins named `…_ws`, same assertions).
//!
//! Each row compares, field by field, what codex did with what its catalogue entry says; a
//! difference is recorded with [`Ctx::drift`] under a stable key, with the value codex gave,
//! and the baselines list what each version is known for.

use std::time::Duration;

use anyhow::ensure;
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::{SAMPLE_USAGE, record_requests, recorded, setup_with};
use crate::app_server::AppServer;
use crate::app_server::message::RpcError;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::codex::capabilities::Capabilities;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{Transport, World, WorldOptions};
use crate::scenario;
use crate::scenarios::support::transport::{errors, transports, upgrades};

/// The rows in catalogue order: F1, then F2's twins of the executor group.
pub fn scenarios() -> Vec<Scenario> {
    let mut all = vec![
        scenario!(
            "transport_websocket_turn",
            "F1",
            "a turn over the Responses WebSocket: one upgrade per thread, the warm-up, \
             incremental frames, the same client-visible results as over HTTP",
            websocket_turn
        )
        .applies(Capabilities::needs_dynamic_tools)
        .timeout(Duration::from_secs(30)),
    ];
    all.extend(executor_over_websocket());
    all
}

/// F2's names: each executor scenario and its twin over the WebSocket.
const WEBSOCKET_TWINS: [(&str, &str); 9] = [
    ("smoke_uses_mock_responses", "smoke_uses_mock_responses_ws"),
    ("streaming_deltas", "streaming_deltas_ws"),
    (
        "usage_and_model_override_cross_boundary",
        "usage_and_model_override_cross_boundary_ws",
    ),
    (
        "usage_and_thread_model_override_cross_boundary",
        "usage_and_thread_model_override_cross_boundary_ws",
    ),
    (
        "uses_last_unknown_phase_message",
        "uses_last_unknown_phase_message_ws",
    ),
    ("final_answer_phase_wins", "final_answer_phase_wins_ws"),
    (
        "commentary_only_does_not_become_final_response",
        "commentary_only_does_not_become_final_response_ws",
    ),
    (
        "ignores_retry_progress_until_terminal_failure",
        "ignores_retry_progress_until_terminal_failure_ws",
    ),
    ("dynamic_tool_round_trip", "dynamic_tool_round_trip_ws"),
];

/// F2: the executor group (A1-A8) again with the Responses WebSocket on in every world, same
/// assertions; the world's after-scenario checks add the transport of every model request.
fn executor_over_websocket() -> Vec<Scenario> {
    super::executor::scenarios()
        .into_iter()
        .filter_map(|s| {
            let (_, twin) = WEBSOCKET_TWINS.iter().find(|(name, _)| *name == s.name)?;
            Some(s.over_websocket(twin, "F2"))
        })
        .collect()
}

/// F1: two turns on one thread over the WebSocket, the second with a dynamic tool.
async fn websocket_turn(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        transport: Transport::WebSocket,
        ..WorldOptions::default()
    };
    let script = websocket_turn_script();
    let tool = calculate_tool();
    let (world, app, thread, _) =
        setup_with(ctx, options, script, json!({"dynamicTools": [tool]})).await?;
    websocket_turns(ctx, &app, &thread).await?;
    let frames = websocket_frames(ctx, &world).await?;
    check_frame_chain(ctx, &frames)?;
    world.finish().await
}

/// F1's script: a streamed reply with usage, then a `calculate` call (with an item id) and the
/// answer after its output.
fn websocket_turn_script() -> Vec<Scripted> {
    let mut first = bodies::streaming_reply("resp-1", "msg-1", &["Hel", "lo"]);
    if let Some(last) = first.last_mut() {
        *last = events::completed_with_usage("resp-1", SAMPLE_USAGE);
    }
    let mut call = events::function_call("call-1", "calculate", "{\"value\": 41}");
    // An id on every output item (`transports.md` §0): 0.161.0 sends the follow-up of an
    // id-less call in full.
    call["item"]["id"] = json!("fc-1");
    vec![
        Scripted::sse(first),
        Scripted::sse(bodies::one_item_reply("resp-2", call)),
        Scripted::sse(bodies::assistant_reply("resp-3", "42")),
    ]
}

/// F1's dynamic tool `calculate`, taking an integer `value`.
fn calculate_tool() -> Value {
    let schema =
        json!({"type":"object","properties":{"value":{"type":"integer"}},"required":["value"]});
    json!({"type":"function","name":"calculate","description":"Add one.","inputSchema":schema})
}

/// F1's two turns (the second calls the tool) and what the client saw of them.
async fn websocket_turns(ctx: &Ctx, app: &AppServer, thread: &str) -> anyhow::Result<()> {
    let calls = record_requests(app, "item/tool/call", |params| {
        if params["tool"] != "calculate" {
            return Err(RpcError {
                code: RpcError::INVALID_PARAMS,
                message: format!("unexpected tool call {params}"),
                data: None,
            });
        }
        Ok(json!({"contentItems":[{"type":"inputText","text":"{\"result\": 42}"}],"success":true}))
    });
    let one = run_turn(app, thread, vec![text("hi")], &TurnOptions::default()).await?;
    ctx.expect_status("turn1.status", TurnStatus::Completed, &one);
    ctx.expect("turn1.chunks", json!(["Hel", "lo"]), json!(one.chunks()));
    ctx.expect("turn1.final", json!("Hello"), json!(one.final_response()));
    let total = one.token_usage().map(|u| u.last.total_tokens);
    ctx.expect("turn1.usage.total", json!(SAMPLE_USAGE.total), json!(total));
    let two = run_turn(
        app,
        thread,
        vec![text("use the tool")],
        &TurnOptions::default(),
    )
    .await?;
    ctx.expect_status("turn2.status", TurnStatus::Completed, &two);
    ctx.expect("turn2.final", json!("42"), json!(two.final_response()));
    ctx.expect("turn2.tool_calls", json!(1), json!(recorded(&calls).len()));
    ctx.expect(
        "errors",
        json!([]),
        json!([errors(&one), errors(&two)].concat()),
    );
    Ok(())
}

/// F1's frames, after checking their transport, the one upgrade with its `OpenAI-Beta` header
/// and each frame's place (connection, frame number).
async fn websocket_frames(ctx: &Ctx, world: &World) -> anyhow::Result<Vec<CapturedRequest>> {
    let frames = world.captured(4, Duration::from_secs(2)).await?;
    ctx.expect(
        "requests.transport",
        json!(vec!["GET /v1/responses websocket"; 4]),
        transports(&frames),
    );
    let up = upgrades(world).await?;
    ctx.expect("upgrades.count", json!(1), json!(up.len()));
    let beta = up.first().and_then(|u| u.all_headers.get("openai-beta"));
    let beta_ok = beta.is_some_and(|b| b.starts_with("responses_websockets="));
    ctx.expect("upgrade.openai_beta", json!(true), json!(beta_ok));
    let places: Vec<Value> = frames
        .iter()
        .map(|f| json!([f.connection, f.frame]))
        .collect();
    ctx.expect(
        "frames.places",
        json!([[0, 0], [0, 1], [0, 2], [0, 3]]),
        json!(places),
    );
    ensure!(
        frames.len() == 4,
        "expected 4 frames, the sidecar captured {}",
        frames.len()
    );
    Ok(frames)
}

/// F1's frame chain: the warm-up answered by the sidecar, each frame's `previous_response_id`,
/// and only the new items in each frame.
fn check_frame_chain(ctx: &Ctx, frames: &[CapturedRequest]) -> anyhow::Result<()> {
    let warm = &frames[0];
    ctx.expect(
        "warmup.generate",
        json!(false),
        warm.body["generate"].clone(),
    );
    ctx.expect("warmup.auto_answered", json!(true), json!(warm.auto_warmup));
    let prev: Vec<Value> = frames[1..]
        .iter()
        .map(|f| f.body["previous_response_id"].clone())
        .collect();
    ctx.expect(
        "frames.previous_response_id",
        json!(["resp_warmup_0_0", "resp-1", "resp-2"]),
        json!(prev),
    );
    let chain: Vec<&String> = frames
        .iter()
        .filter_map(|f| f.chain_error.as_ref())
        .collect();
    ctx.expect("frames.chain_errors", json!([]), json!(chain));
    // Only the new items: the second turn's frame repeats nothing of the first turn, and the
    // tool's follow-up carries only the call's output.
    let turn2 = frames[2].input()?;
    let repeats = turn2.iter().any(|i| {
        let s = i.to_string();
        s.contains("\"hi\"") || s.contains("Hello")
    });
    ctx.expect("frame2.repeats_turn1", json!(false), json!(repeats));
    let asks = frames[2].last_user_text();
    ctx.expect("frame2.user_text", json!("use the tool"), json!(asks));
    let follow: Vec<&Value> = frames[3].input()?.iter().map(|i| &i["type"]).collect();
    ctx.expect(
        "frame3.input_types",
        json!(["function_call_output"]),
        json!(follow),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_executor_scenario_has_its_websocket_twin() {
        let twins = executor_over_websocket();
        let executor = super::super::executor::scenarios();
        assert_eq!(twins.len(), executor.len());
        for (http, ws) in executor.iter().zip(&twins) {
            assert_eq!(ws.name, format!("{}_ws", http.name));
            assert_eq!((ws.id, ws.transport), ("F2", Transport::WebSocket));
            assert_eq!(http.transport, Transport::Http);
            assert_eq!((ws.summary, ws.timeout), (http.summary, http.timeout));
        }
    }
}
