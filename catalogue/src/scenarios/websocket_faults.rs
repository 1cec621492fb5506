//! Faults on an open Responses WebSocket, and what codex does with the turn and the socket
//! (group F, `parity-scenarios.md` F, facts in `transports.md`): a socket closed mid-stream,
//! retried on a new socket with the partial item (F7); an error frame with status 429 and
//! rate-limit headers, which fails the turn and drops the socket (F8); and
//! `previous_response_not_found`, retried on a new socket with the full input (F9).
//!
//! Each row compares, field by field, what codex did with what its catalogue entry says; a
//! difference is recorded with [`Ctx::drift`] under a stable key, with the value codex gave,
//! and the baselines list what each version is known for.

use std::time::Duration;

use anyhow::ensure;
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::rate_limits::{self, Window};
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::setup_with;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{Transport, WorldOptions};
use crate::scenario;
use crate::scenarios::support::transport::{
    cut_then_whole, errors, on_websocket, transports, upgrades,
};

/// The rows F7 to F9, in catalogue order.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "transport_websocket_closed_mid_stream",
            "F7",
            "a socket closed mid-stream: the partial item reaches the client and the full-input \
             retry on a new socket, one silent retry, the turn succeeds",
            websocket_closed
        )
        .timeout(Duration::from_secs(30)),
        scenario!(
            "transport_websocket_usage_limit_429",
            "F8",
            "an error frame with status 429 and rate-limit headers: account/rateLimits/updated, \
             then usageLimitExceeded without retry, the turn failed, the socket dropped",
            websocket_usage_limit
        )
        .timeout(Duration::from_secs(30)),
        scenario!(
            "transport_websocket_previous_response_not_found",
            "F9",
            "previous_response_not_found on an incremental frame: a silent retry on a new \
             socket with the full input, the turn succeeds",
            previous_response_not_found
        )
        .timeout(Duration::from_secs(30)),
    ]
}

/// F7: over the WebSocket (`stream_max_retries` 2), the turn's first frame gets
/// `response.created` and an assistant message, then a close frame; the retry completes.
async fn websocket_closed(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        transport: Transport::WebSocket,
        stream_max_retries: 2,
        ..WorldOptions::default()
    };
    let script = cut_then_whole();
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let turn = run_turn(&app, &thread, vec![text("cut")], &TurnOptions::default()).await?;
    ctx.expect_status("turn.status", TurnStatus::Completed, &turn);
    ctx.expect("turn.errors", json!([]), json!(errors(&turn)));
    let texts: Vec<&str> = turn.agent_messages().iter().map(|m| m.1).collect();
    ctx.expect(
        "turn.agentMessages",
        json!(["partial", "whole"]),
        json!(texts),
    );
    let frames = world.captured(2, Duration::from_secs(2)).await?;
    // The turn's frames, without the warm-ups the sidecar answered itself.
    let turn_frames: Vec<&CapturedRequest> = frames.iter().filter(|f| !f.auto_warmup).collect();
    let transport: Vec<CapturedRequest> = turn_frames.iter().map(|f| (*f).clone()).collect();
    ctx.expect(
        "requests.transport",
        json!(vec!["GET /v1/responses websocket"; 2]),
        transports(&transport),
    );
    ensure!(
        turn_frames.len() == 2,
        "expected 2 turn frames, got {}",
        turn_frames.len()
    );
    let (first, retry) = (turn_frames[0], turn_frames[1]);
    let places = json!([first.connection, retry.connection]);
    ctx.expect("frames.connections", json!([0, 1]), places);
    ctx.expect(
        "upgrades.count",
        json!(2),
        json!(upgrades(&world).await?.len()),
    );
    let ends = json!([first.stream_end, retry.stream_end]);
    ctx.expect(
        "frames.stream_end",
        json!(["disconnected", "completed"]),
        ends,
    );
    ctx.expect(
        "retry.previous_response_id",
        Value::Null,
        retry.body["previous_response_id"].clone(),
    );
    let kept = retry.input()?.iter().any(|i| {
        i["type"] == "message" && i["role"] == "assistant" && i.to_string().contains("partial")
    });
    ctx.expect("retry.keeps_partial_item", json!(true), json!(kept));
    let asks = retry.last_user_text();
    ctx.expect("retry.user_text", json!("cut"), json!(asks));
    world.finish().await
}

/// F8: over the WebSocket, the turn's frame gets an error frame with status 429,
/// `usage_limit_reached` and rate-limit headers (primary window 100 % of 15 minutes). The
/// catalogue: `account/rateLimits/updated` (usedPercent rounded, the window) before the final
/// error (`usageLimitExceeded`, `willRetry` false), the turn failed, the socket dropped (the
/// next turn opens a new one).
async fn websocket_usage_limit(ctx: &Ctx) -> anyhow::Result<()> {
    let full = Window {
        used_percent: 100.0,
        window_minutes: Some(15),
        reset_at: None,
    };
    let body = json!({"error": {"type": "usage_limit_reached", "message": "usage limit reached"}});
    let mut limited = on_websocket(Scripted::http_error(429, body), "f8-limit");
    for (name, value) in rate_limits::headers("codex", Some(&full), None) {
        limited = limited.header(&name, &value);
    }
    let after = Scripted::sse(bodies::assistant_reply("resp-2", "after"));
    let options = WorldOptions {
        transport: Transport::WebSocket,
        stream_max_retries: 2,
        ..WorldOptions::default()
    };
    let script = vec![limited, on_websocket(after, "f8-again")];
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let cursor = app.cursor();
    let one = run_turn(
        &app,
        &thread,
        vec![text("f8-limit")],
        &TurnOptions::default(),
    )
    .await?;
    ctx.expect_status("turn1.status", TurnStatus::Failed, &one);
    let want = json!([{"willRetry": false, "message": "You've hit your usage limit. Try again later.",
        "codexErrorInfo": "usageLimitExceeded", "additionalDetails": null}]);
    ctx.expect("turn1.errors", want, json!(errors(&one)));
    ctx.expect(
        "turn1.order",
        json!(["account/rateLimits/updated", "error"]),
        json!(limit_then_error(&app.messages()[cursor..])),
    );
    let primary = app
        .messages()
        .iter()
        .skip(cursor)
        .find(|m| m.is("account/rateLimits/updated"))
        .map(|m| m.params()["rateLimits"]["primary"].clone());
    let want = json!({"usedPercent": 100, "windowDurationMins": 15, "resetsAt": null});
    ctx.expect("turn1.rateLimits.primary", want, json!(primary));
    let two = run_turn(
        &app,
        &thread,
        vec![text("f8-again")],
        &TurnOptions::default(),
    )
    .await?;
    ctx.expect_status("turn2.status", TurnStatus::Completed, &two);
    let requests = world.captured(3, Duration::from_secs(2)).await?;
    let conns: Vec<Value> = requests
        .iter()
        .filter(|r| !r.auto_warmup)
        .map(|r| json!([r.transport, r.connection]))
        .collect();
    let want = json!([["websocket", 0], ["websocket", 1]]);
    ctx.expect("frames.connections", want, json!(conns));
    world.finish().await
}

/// The methods of the rate-limit update and the `error` notifications among `messages`, in
/// order.
fn limit_then_error(messages: &[crate::app_server::Inbound]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| m.is("account/rateLimits/updated") || m.is("error"))
        .map(|m| m.method())
        .collect()
}

/// F9: the turn's frame on the warm-up socket is answered `previous_response_not_found`
/// (status 400). The catalogue: codex retries silently on a new socket with the full input
/// (no `previous_response_id`) and the turn succeeds; 0.131.0 fails the turn (drift).
async fn previous_response_not_found(ctx: &Ctx) -> anyhow::Result<()> {
    let body = json!({"error": {"type": "invalid_request_error", "code": "previous_response_not_found",
        "message": "Previous response with id 'resp_warmup_0_0' not found."}});
    let options = WorldOptions {
        transport: Transport::WebSocket,
        stream_max_retries: 2,
        ..WorldOptions::default()
    };
    let script = vec![
        on_websocket(Scripted::http_error(400, body), "f9-chain"),
        on_websocket(
            Scripted::sse(bodies::assistant_reply("resp-2", "found")),
            "f9-chain",
        ),
    ];
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("f9-chain")],
        &TurnOptions::default(),
    )
    .await?;
    ctx.expect_status("turn.status", TurnStatus::Completed, &turn);
    ctx.expect("turn.errors", json!([]), json!(errors(&turn)));
    ctx.expect("turn.final", json!("found"), json!(turn.final_response()));
    let requests = world.captured(3, Duration::from_secs(2)).await?;
    let frames: Vec<Value> = requests
        .iter()
        .filter(|r| !r.auto_warmup)
        .map(|r| {
            let user = r.last_user_text();
            json!([r.connection, r.body["previous_response_id"], user])
        })
        .collect();
    let want = json!([[0, "resp_warmup_0_0", "f9-chain"], [1, null, "f9-chain"]]);
    ctx.expect("frames", want, json!(frames));
    if world.sidecar.status().await?.pending > 0 {
        // Drift is recorded above; the retry this version never made is dropped.
        world.sidecar.reset().await?;
    }
    world.finish().await
}
