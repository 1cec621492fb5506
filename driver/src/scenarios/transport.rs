//! Group F: transports, stream timing, compaction and rate limits (`parity-scenarios.md` F,
//! facts in `transports.md`). The rows here script what the sidecar's v2 transports can do:
//! the executor group again over the WebSocket (F2, twins named `…_ws`), a turn over the
//! Responses WebSocket (F1), an upgrade refused with 426 (F3), failing (F4) or hanging past
//! the connect timeout (F5), a socket closed before the first event (F6) or mid-stream (F7),
//! an error frame with a 429 and rate limits (F8), `previous_response_not_found` (F9),
//! HTTP streams that stall (F10), are cut mid-body (F11, close-delimited; F11a, chunked) or
//! drip slowly (F12), retry hints (F13), and rate-limit headers (F17).
//!
//! Every row compares, field by field, what codex did with what its catalogue entry says:
//! request and connection counts, the transport of each captured request, the `error`
//! notifications in order (`willRetry`, message, `codexErrorInfo`, `additionalDetails`) and
//! the turn's status. A difference is recorded with [`Ctx::drift`] under a stable key, with
//! the value codex gave; the baselines list what each version is known for. The rows that
//! wait on codex's timeouts configure them down (`stream_idle_timeout_ms` and
//! `websocket_connect_timeout_ms` 1500) and say so.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::rate_limits::{self, Window};
use codex_parity_sidecar::{ConnectionScript, Scripted, bodies, events};
use serde_json::{Value, json};

use super::{SAMPLE_USAGE, captured_requests, expect, record_requests, recorded, setup_with};
use crate::app_server::AppServer;
use crate::app_server::message::RpcError;
use crate::app_server::turn::{Turn, TurnOptions, run_turn, text};
use crate::codex::capabilities::Capabilities;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{Transport, World, WorldOptions};
use crate::scenario;

/// The group's scenarios in catalogue order: F1, F2's twins of the executor group, the rest.
pub fn scenarios() -> Vec<Scenario> {
    let mut all = rows();
    let rest = all.split_off(1);
    all.extend(executor_over_websocket());
    all.extend(rest);
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

/// The rows other than F2.
fn rows() -> Vec<Scenario> {
    vec![
        scenario!(
            "transport_websocket_turn",
            "F1",
            "a turn over the Responses WebSocket: one upgrade per thread, the warm-up, \
             incremental frames, the same client-visible results as over HTTP",
            websocket_turn
        )
        .applies(Capabilities::needs_dynamic_tools)
        .timeout(Duration::from_secs(30)),
        scenario!(
            "transport_websocket_refused_426",
            "F3",
            "an upgrade refused with 426: no retry, no notification, HTTP for the session",
            refused_426
        )
        .timeout(Duration::from_secs(30)),
        scenario!(
            "transport_websocket_upgrade_500",
            "F4",
            "every upgrade answered 500: 1 + stream_max_retries attempts at backoff spacing, the \
             first retry silent, then HTTP in the same turn; later turns on HTTP",
            upgrade_fails(500)
        )
        .timeout(Duration::from_secs(30)),
        scenario!(
            "transport_websocket_upgrade_404",
            "F4a",
            "every upgrade answered 404: as F4, and the retry notice carries httpStatusCode 404",
            upgrade_fails(404)
        )
        .timeout(Duration::from_secs(30)),
        scenario!(
            "transport_websocket_upgrade_hangs",
            "F5",
            "an upgrade that hangs past websocket_connect_timeout_ms (1.5 s): retries, then \
             HTTP in the same turn, later turns on HTTP",
            upgrade_hangs
        )
        .timeout(Duration::from_secs(45)),
        scenario!(
            "transport_websocket_closed_before_first_event",
            "F6",
            "a socket closed right after response.create: reconnects on new sockets, then HTTP \
             in the same turn, with the websocket-closed notice",
            websocket_closed_early
        )
        .timeout(Duration::from_secs(30)),
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
        scenario!(
            "transport_http_stall_idle_timeout",
            "F10",
            "an HTTP stream that stalls mid-stream fails after stream_idle_timeout_ms (1.5 s), \
             is retried, and the turn fails or succeeds on the retry",
            http_stall
        )
        .timeout(Duration::from_secs(40)),
        scenario!(
            "transport_http_closed_mid_stream",
            "F11",
            "an HTTP connection closed mid-stream: stream closed, the partial item in the \
             retry's input, success on the retry",
            http_closed(Framing::CloseDelimited)
        )
        .timeout(Duration::from_secs(30)),
        scenario!(
            "transport_http_chunked_body_cut_mid_stream",
            "F11a",
            "F11 with a chunked body, as gateways send it: the cut chunk is a body error \
             (error decoding response body), the rest as F11",
            http_closed(Framing::Chunked)
        )
        .timeout(Duration::from_secs(30)),
        scenario!(
            "transport_http_slow_drip_is_not_a_stall",
            "F12",
            "events 400 ms apart under a 1.5 s idle timeout: no retry, deltas in order",
            slow_drip
        )
        .timeout(Duration::from_secs(30)),
        scenario!(
            "transport_retry_after_and_try_again_hints",
            "F13",
            "Retry-After 2 on a 500 and a \"try again in 1.5s\" rate-limit failure: each retry \
             waits what the hint asks (within +700 ms)",
            retry_hints
        )
        .timeout(Duration::from_secs(30)),
        scenario!(
            "transport_rate_limit_headers",
            "F17",
            "rate-limit headers on an HTTP response become account/rateLimits/updated (percent \
             rounded); without headers the notification still comes, with nulls",
            rate_limit_headers
        )
        .timeout(Duration::from_secs(30)),
    ]
}

/// The idle timeout the stall rows configure (`stream_idle_timeout_ms`).
const IDLE_MS: u64 = 1500;

/// The progress and terminal detail of a stalled SSE stream.
const IDLE_SSE: &str = "stream disconnected before completion: idle timeout waiting for SSE";

/// The progress and terminal detail of an SSE body cut before `response.completed`.
const CLOSED_SSE: &str =
    "stream disconnected before completion: stream closed before response.completed";

/// The turn's `error` notifications in order, each as `willRetry`, `message`,
/// `codexErrorInfo` and `additionalDetails`.
fn errors(turn: &Turn) -> Vec<Value> {
    turn.notifications("error")
        .into_iter()
        .map(|p| {
            json!({
                "willRetry": p["willRetry"],
                "message": p["error"]["message"],
                "codexErrorInfo": p["error"]["codexErrorInfo"],
                "additionalDetails": p["error"]["additionalDetails"],
            })
        })
        .collect()
}

/// One retry notice of an HTTP stream failure (`Reconnecting... k/n`, `details`).
fn progress(k: u32, n: u32, details: &str) -> Value {
    json!({
        "willRetry": true,
        "message": format!("Reconnecting... {k}/{n}"),
        "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": null}},
        "additionalDetails": details,
    })
}

/// The transport of each captured request as `METHOD path transport`.
fn transports(requests: &[CapturedRequest]) -> Value {
    requests
        .iter()
        .map(|r| {
            json!(format!(
                "{} {} {}",
                r.method,
                r.path,
                r.transport.as_deref().unwrap_or("http")
            ))
        })
        .collect()
}

/// The WebSocket upgrades among every captured request (frames carry a `frame` number).
async fn upgrades(world: &World) -> anyhow::Result<Vec<CapturedRequest>> {
    Ok(world
        .sidecar
        .all_requests()
        .await?
        .into_iter()
        .filter(|r| r.transport.as_deref() == Some("websocket") && r.frame.is_none())
        .collect())
}

/// Waits up to `timeout` for `n` WebSocket upgrades (codex opens its socket at
/// `thread/start`, before any turn).
async fn wait_upgrades(
    world: &World,
    n: usize,
    timeout: Duration,
) -> anyhow::Result<Vec<CapturedRequest>> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let seen = upgrades(world).await?;
        if seen.len() >= n || tokio::time::Instant::now() >= deadline {
            return Ok(seen);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
        super::call_reply("resp-2", call),
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
    expect(ctx, "turn1.status", json!("completed"), json!(one.status));
    expect(
        ctx,
        "turn1.chunks",
        json!(["Hel", "lo"]),
        json!(one.chunks()),
    );
    expect(
        ctx,
        "turn1.final",
        json!("Hello"),
        json!(one.final_response()),
    );
    let total = one.token_usage().map(|u| u.last.total_tokens);
    expect(
        ctx,
        "turn1.usage.total",
        json!(SAMPLE_USAGE.total),
        json!(total),
    );
    let two = run_turn(
        app,
        thread,
        vec![text("use the tool")],
        &TurnOptions::default(),
    )
    .await?;
    expect(ctx, "turn2.status", json!("completed"), json!(two.status));
    expect(ctx, "turn2.final", json!("42"), json!(two.final_response()));
    expect(
        ctx,
        "turn2.tool_calls",
        json!(1),
        json!(recorded(&calls).len()),
    );
    expect(
        ctx,
        "errors",
        json!([]),
        json!([errors(&one), errors(&two)].concat()),
    );
    Ok(())
}

/// F1's frames, after checking their transport, the one upgrade with its `OpenAI-Beta` header
/// and each frame's place (connection, frame number).
async fn websocket_frames(ctx: &Ctx, world: &World) -> anyhow::Result<Vec<CapturedRequest>> {
    let frames = captured_requests(world, 4, Duration::from_secs(2)).await?;
    expect(
        ctx,
        "requests.transport",
        json!(vec!["GET /v1/responses websocket"; 4]),
        transports(&frames),
    );
    let up = upgrades(world).await?;
    expect(ctx, "upgrades.count", json!(1), json!(up.len()));
    let beta = up.first().and_then(|u| u.all_headers.get("openai-beta"));
    let beta_ok = beta.is_some_and(|b| b.starts_with("responses_websockets="));
    expect(ctx, "upgrade.openai_beta", json!(true), json!(beta_ok));
    let places: Vec<Value> = frames
        .iter()
        .map(|f| json!([f.connection, f.frame]))
        .collect();
    expect(
        ctx,
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
    expect(
        ctx,
        "warmup.generate",
        json!(false),
        warm.body["generate"].clone(),
    );
    expect(
        ctx,
        "warmup.auto_answered",
        json!(true),
        json!(warm.auto_warmup),
    );
    let prev: Vec<Value> = frames[1..]
        .iter()
        .map(|f| f.body["previous_response_id"].clone())
        .collect();
    expect(
        ctx,
        "frames.previous_response_id",
        json!(["resp_warmup_0_0", "resp-1", "resp-2"]),
        json!(prev),
    );
    let chain: Vec<&String> = frames
        .iter()
        .filter_map(|f| f.chain_error.as_ref())
        .collect();
    expect(ctx, "frames.chain_errors", json!([]), json!(chain));
    // Only the new items: the second turn's frame repeats nothing of the first turn, and the
    // tool's follow-up carries only the call's output.
    let turn2 = frames[2].input()?;
    let repeats = turn2.iter().any(|i| {
        let s = i.to_string();
        s.contains("\"hi\"") || s.contains("Hello")
    });
    expect(ctx, "frame2.repeats_turn1", json!(false), json!(repeats));
    let asks = frames[2].last_user_text();
    expect(ctx, "frame2.user_text", json!("use the tool"), json!(asks));
    let follow: Vec<&Value> = frames[3].input()?.iter().map(|i| &i["type"]).collect();
    expect(
        ctx,
        "frame3.input_types",
        json!(["function_call_output"]),
        json!(follow),
    );
    Ok(())
}

/// F3: the upgrade is refused with 426; both turns of the session go over HTTP.
async fn refused_426(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        transport: Transport::WebSocket,
        stream_max_retries: 2,
        ..WorldOptions::default()
    };
    let mut world = ctx.world(options).await?;
    world.websocket(vec![ConnectionScript::refuse(426)]).await?;
    world
        .script(vec![
            Scripted::sse(bodies::assistant_reply("resp-1", "one")),
            Scripted::sse(bodies::assistant_reply("resp-2", "two")),
        ])
        .await?;
    let app = world.start().await?;
    let (thread, _) = world.start_thread(&app, json!({})).await?;
    // The warm-up upgrade comes right after thread/start; the turns follow its refusal.
    wait_upgrades(&world, 1, Duration::from_secs(5)).await?;
    let one = run_turn(&app, &thread, vec![text("hi")], &TurnOptions::default()).await?;
    let two = run_turn(&app, &thread, vec![text("again")], &TurnOptions::default()).await?;
    let status = json!([one.status, two.status]);
    expect(
        ctx,
        "turns.status",
        json!(["completed", "completed"]),
        status,
    );
    let finals = json!([one.final_response(), two.final_response()]);
    expect(ctx, "turns.final", json!(["one", "two"]), finals);
    expect(
        ctx,
        "errors",
        json!([]),
        json!([errors(&one), errors(&two)].concat()),
    );
    let requests = captured_requests(&world, 2, Duration::from_secs(2)).await?;
    expect(
        ctx,
        "requests.transport",
        json!(vec!["POST /v1/responses http"; 2]),
        transports(&requests),
    );
    expect(
        ctx,
        "upgrades.count",
        json!(1),
        json!(upgrades(&world).await?.len()),
    );
    world.finish().await
}

/// The detail of a socket closed before `response.completed`.
const WS_CLOSED: &str =
    "stream disconnected before completion: websocket closed by server before response.completed";

/// Routes a scripted reply to the WebSocket frames of the turn asking `prompt`: an HTTP body
/// has no `type`, and a warm-up frame carries no prompt (so the sidecar answers it itself).
/// Prompts must be words codex's own instructions do not contain.
fn on_websocket(scripted: Scripted, prompt: &str) -> Scripted {
    scripted
        .when_body_contains("\"type\":\"response.create\"")
        .when_body_contains(prompt)
}

/// F6: over the WebSocket (`stream_max_retries` 2), every turn frame is answered by a close
/// frame before any event; the turn goes on over HTTP. The catalogue's count (F4's rule) is
/// 1 + `stream_max_retries` socket attempts: the first frame on the warm-up socket, then one
/// new socket per retry.
async fn websocket_closed_early(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        transport: Transport::WebSocket,
        stream_max_retries: 2,
        ..WorldOptions::default()
    };
    let closed = || {
        on_websocket(
            Scripted::sse(bodies::empty_response("resp-ws")).disconnect_after(0),
            "f6-close",
        )
    };
    let mut script: Vec<Scripted> = (0..4).map(|_| closed()).collect();
    script.push(Scripted::sse(bodies::assistant_reply(
        "resp-http",
        "over http",
    )));
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("f6-close")],
        &TurnOptions::default(),
    )
    .await?;
    expect(ctx, "turn.status", json!("completed"), json!(turn.status));
    expect(
        ctx,
        "turn.final",
        json!("over http"),
        json!(turn.final_response()),
    );
    expect(
        ctx,
        "turn.errors",
        json!([progress(2, 2, WS_CLOSED)]),
        json!(errors(&turn)),
    );
    let requests = captured_requests(&world, 4, Duration::from_secs(2)).await?;
    let asked: Vec<CapturedRequest> = requests.into_iter().filter(|r| !r.auto_warmup).collect();
    let mut want = vec!["GET /v1/responses websocket"; 3];
    want.push("POST /v1/responses http");
    expect(ctx, "requests.transport", json!(want), transports(&asked));
    let conns: Vec<Option<u64>> = asked.iter().map(|r| r.connection).collect();
    expect(
        ctx,
        "frames.connections",
        json!([0, 1, 2, null]),
        json!(conns),
    );
    expect(
        ctx,
        "upgrades.count",
        json!(3),
        json!(upgrades(&world).await?.len()),
    );
    if world.sidecar.status().await?.pending > 0 {
        // Drift is recorded above; the replies this version never asked for are dropped.
        world.sidecar.reset().await?;
    }
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
    expect(ctx, "turn1.status", json!("failed"), json!(one.status));
    let want = json!([{"willRetry": false, "message": "You've hit your usage limit. Try again later.",
        "codexErrorInfo": "usageLimitExceeded", "additionalDetails": null}]);
    expect(ctx, "turn1.errors", want, json!(errors(&one)));
    expect(
        ctx,
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
    expect(ctx, "turn1.rateLimits.primary", want, json!(primary));
    let two = run_turn(
        &app,
        &thread,
        vec![text("f8-again")],
        &TurnOptions::default(),
    )
    .await?;
    expect(ctx, "turn2.status", json!("completed"), json!(two.status));
    let requests = captured_requests(&world, 3, Duration::from_secs(2)).await?;
    let conns: Vec<Value> = requests
        .iter()
        .filter(|r| !r.auto_warmup)
        .map(|r| json!([r.transport, r.connection]))
        .collect();
    let want = json!([["websocket", 0], ["websocket", 1]]);
    expect(ctx, "frames.connections", want, json!(conns));
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
    expect(ctx, "turn.status", json!("completed"), json!(turn.status));
    expect(ctx, "turn.errors", json!([]), json!(errors(&turn)));
    expect(
        ctx,
        "turn.final",
        json!("found"),
        json!(turn.final_response()),
    );
    let requests = captured_requests(&world, 3, Duration::from_secs(2)).await?;
    let frames: Vec<Value> = requests
        .iter()
        .filter(|r| !r.auto_warmup)
        .map(|r| {
            let user = r.last_user_text();
            json!([r.connection, r.body["previous_response_id"], user])
        })
        .collect();
    let want = json!([[0, "resp_warmup_0_0", "f9-chain"], [1, null, "f9-chain"]]);
    expect(ctx, "frames", want, json!(frames));
    if world.sidecar.status().await?.pending > 0 {
        // Drift is recorded above; the retry this version never made is dropped.
        world.sidecar.reset().await?;
    }
    world.finish().await
}

/// How F13 judges a retry's gap: `honoured` within the window the hint asks for (from the
/// hint to the hint + 700 ms: codex's own send and our capture add a little), `own backoff`
/// under 1 s (codex's 200 ms x 2^n schedule, the hint ignored), `other` otherwise.
fn judge_gap(gap_ms: u64, hint_ms: u64) -> &'static str {
    if (hint_ms..=hint_ms + 700).contains(&gap_ms) {
        "honoured"
    } else if gap_ms < 1000 {
        "own backoff"
    } else {
        "other"
    }
}

/// F13: turn 1 gets a 500 with `Retry-After: 2` (request-level retry, `request_max_retries` 1),
/// turn 2 a `response.failed` `rate_limit_exceeded` saying "try again in 1.5s" (stream-level
/// retry, `stream_max_retries` 1); each retry succeeds. The catalogue: both hints are
/// honoured (0.131.0 ignores `Retry-After`: drift), judged on the capture's arrival times
/// with [`judge_gap`]'s tolerance; the request-level retry is silent, the stream retry has
/// one notice whose detail is the failure's message after `stream disconnected before
/// completion:` (`transports.md` §2.3).
async fn retry_hints(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        request_max_retries: 1,
        stream_max_retries: 1,
        ..WorldOptions::default()
    };
    let unavailable = json!({"error": {"type": "server_error", "message": "overloaded"}});
    let hint = "Rate limit reached for requests. Please try again in 1.5s.";
    let script = vec![
        Scripted::http_error(500, unavailable).header("retry-after", "2"),
        Scripted::sse(bodies::assistant_reply("resp-1", "after retry-after")),
        Scripted::sse(vec![
            events::response_created("resp-2"),
            events::failed("resp-2", "rate_limit_exceeded", hint),
        ]),
        Scripted::sse(bodies::assistant_reply("resp-3", "after the hint")),
    ];
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let one = run_turn(
        &app,
        &thread,
        vec![text("f13-one")],
        &TurnOptions::default(),
    )
    .await?;
    let two = run_turn(
        &app,
        &thread,
        vec![text("f13-two")],
        &TurnOptions::default(),
    )
    .await?;
    let finals = json!([one.final_response(), two.final_response()]);
    expect(
        ctx,
        "turns.final",
        json!(["after retry-after", "after the hint"]),
        finals,
    );
    expect(ctx, "turn1.errors", json!([]), json!(errors(&one)));
    let notice = json!([{"willRetry": true, "message": "Reconnecting... 1/1",
        "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": null}},
        "additionalDetails": format!("stream disconnected before completion: {hint}")}]);
    expect(ctx, "turn2.errors", notice, json!(errors(&two)));
    let requests = captured_requests(&world, 4, Duration::from_secs(2)).await?;
    expect(
        ctx,
        "requests.transport",
        json!(vec!["POST /v1/responses http"; 4]),
        transports(&requests),
    );
    ensure!(
        requests.len() == 4,
        "expected 4 requests, got {}",
        requests.len()
    );
    let gap = |a: usize| {
        requests[a + 1]
            .received_at_ms
            .saturating_sub(requests[a].received_at_ms)
    };
    for (key, first, hint_ms) in [("retry_after.gap", 0, 2000), ("try_again_in.gap", 2, 1500)] {
        let judged = judge_gap(gap(first), hint_ms);
        if judged != "honoured" {
            let message = format!(
                "request #{} came {} ms after the failure; the hint asks for {hint_ms} ms",
                requests[first + 1].index,
                gap(first)
            );
            ctx.drift(key, json!(judged), message);
        }
    }
    world.finish().await
}

/// The connect timeout F5 configures (`websocket_connect_timeout_ms`).
const CONNECT_MS: u64 = 1500;

/// F5: every upgrade hangs (TCP accepted, no 101) under a 1.5 s connect timeout; the
/// counts and the fallback are F4's. The retry notice's `additionalDetails` is recorded per
/// version, as the catalogue asks.
async fn upgrade_hangs(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        websocket_connect_timeout_ms: Some(CONNECT_MS),
        ..fallback_options()
    };
    let (world, one, _) = upgrade_fallback(ctx, options, ConnectionScript::hang).await?;
    let notices = errors(&one);
    let shape: Vec<Value> = notices
        .iter()
        .map(|e| json!([e["willRetry"], e["message"], e["codexErrorInfo"]]))
        .collect();
    let want = json!([[true, "Reconnecting... 2/2", {"responseStreamDisconnected": {"httpStatusCode": null}}]]);
    expect(ctx, "turn1.errors", want, json!(shape));
    // The catalogue asks for the detail per version: it is recorded whatever it says.
    let details: Vec<&Value> = notices.iter().map(|e| &e["additionalDetails"]).collect();
    ctx.drift(
        "turn1.errors.additionalDetails",
        json!(details),
        format!("the hang's retry notice says {}", json!(details)),
    );
    world.finish().await
}

/// F4: every upgrade is answered `status` (500 or 404). The first retry is silent; the
/// notice of the second carries `httpStatusCode` 404 for a 404 (null otherwise, where the
/// catalogue names none). The turn's attempts are spaced by codex's backoff: about 200 ms,
/// then 400 ms (200 ms x 2^(k-1), jitter 0.9-1.1); a gap under 0.7x of that, or over 2x plus
/// 1 s (a busy machine delays codex's next connect, never its sleep), is drift.
async fn upgrade_fails(ctx: &Ctx, status: u16) -> anyhow::Result<()> {
    let refuse = move || ConnectionScript::refuse(status);
    let (world, one, up) = upgrade_fallback(ctx, fallback_options(), refuse).await?;
    let code = if status == 404 {
        json!(404)
    } else {
        json!(null)
    };
    let shape: Vec<Value> = errors(&one)
        .iter()
        .map(|e| json!([e["willRetry"], e["message"], e["codexErrorInfo"]]))
        .collect();
    let want = json!([[true, "Reconnecting... 2/2", {"responseStreamDisconnected": {"httpStatusCode": code}}]]);
    expect(ctx, "turn1.errors", want, json!(shape));
    let gaps: Vec<u64> = up
        .windows(2)
        .skip(1)
        .map(|p| p[1].received_at_ms.saturating_sub(p[0].received_at_ms))
        .collect();
    let spaced: Vec<bool> = gaps
        .iter()
        .zip([200.0, 400.0])
        .map(|(gap, base)| (0.7 * base..=2.0 * base + 1000.0).contains(&(*gap as f64)))
        .collect();
    if spaced != [true, true] {
        let message = format!("the turn's upgrade attempts came {gaps:?} ms apart");
        ctx.drift("upgrades.backoff", json!(spaced), message);
    }
    world.finish().await
}

/// F4's and F5's provider: the WebSocket on, `stream_max_retries` 2.
fn fallback_options() -> WorldOptions {
    WorldOptions {
        transport: Transport::WebSocket,
        stream_max_retries: 2,
        ..WorldOptions::default()
    }
}

/// F4's counts, shared by F5: every upgrade fails as `connection` scripts it; two turns. The
/// catalogue: the warm-up's upgrade (silent), then 1 + `stream_max_retries` attempts in the
/// first turn, then HTTP in the same turn, which succeeds; the second turn stays on HTTP
/// with no notice. Returns the world, the first turn and the upgrades for the row's own
/// checks.
async fn upgrade_fallback(
    ctx: &Ctx,
    options: WorldOptions,
    connection: impl Fn() -> ConnectionScript,
) -> anyhow::Result<(World, Turn, Vec<CapturedRequest>)> {
    let mut world = ctx.world(options).await?;
    world
        .websocket((0..6).map(|_| connection()).collect())
        .await?;
    world
        .script(vec![
            Scripted::sse(bodies::assistant_reply("resp-1", "one")),
            Scripted::sse(bodies::assistant_reply("resp-2", "two")),
        ])
        .await?;
    let app = world.start().await?;
    let (thread, _) = world.start_thread(&app, json!({})).await?;
    let one = run_turn(&app, &thread, vec![text("fail")], &TurnOptions::default()).await?;
    let two = run_turn(&app, &thread, vec![text("again")], &TurnOptions::default()).await?;
    let status = json!([one.status, two.status]);
    expect(
        ctx,
        "turns.status",
        json!(["completed", "completed"]),
        status,
    );
    let finals = json!([one.final_response(), two.final_response()]);
    expect(ctx, "turns.final", json!(["one", "two"]), finals);
    expect(ctx, "turn2.errors", json!([]), json!(errors(&two)));
    let requests = captured_requests(&world, 2, Duration::from_secs(2)).await?;
    expect(
        ctx,
        "requests.transport",
        json!(vec!["POST /v1/responses http"; 2]),
        transports(&requests),
    );
    let up = upgrades(&world).await?;
    expect(ctx, "upgrades.count", json!(4), json!(up.len()));
    if world.sidecar.status().await?.pending > 0 || world.sidecar.websocket(None, vec![]).await? > 0
    {
        // Drift is recorded above; the connection scripts no upgrade took are dropped.
        world.sidecar.reset().await?;
    }
    Ok((world, one, up))
}

/// F7's and F11's script: `response.created` and an assistant message, then the stream is
/// cut (before `response.completed`); the retry gets a whole reply.
fn cut_then_whole() -> Vec<Scripted> {
    vec![
        Scripted::sse(vec![
            events::response_created("resp-1"),
            events::assistant_message("msg-partial", "partial"),
            events::completed("resp-1"),
        ])
        .disconnect_after(2),
        Scripted::sse(bodies::assistant_reply("resp-2", "whole")),
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
    expect(ctx, "turn.status", json!("completed"), json!(turn.status));
    expect(ctx, "turn.errors", json!([]), json!(errors(&turn)));
    let texts: Vec<&str> = turn.agent_messages().iter().map(|m| m.1).collect();
    expect(
        ctx,
        "turn.agentMessages",
        json!(["partial", "whole"]),
        json!(texts),
    );
    let frames = captured_requests(&world, 2, Duration::from_secs(2)).await?;
    // The turn's frames, without the warm-ups the sidecar answered itself.
    let turn_frames: Vec<&CapturedRequest> = frames.iter().filter(|f| !f.auto_warmup).collect();
    let transport: Vec<CapturedRequest> = turn_frames.iter().map(|f| (*f).clone()).collect();
    expect(
        ctx,
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
    expect(ctx, "frames.connections", json!([0, 1]), places);
    expect(
        ctx,
        "upgrades.count",
        json!(2),
        json!(upgrades(&world).await?.len()),
    );
    let ends = json!([first.stream_end, retry.stream_end]);
    expect(
        ctx,
        "frames.stream_end",
        json!(["disconnected", "completed"]),
        ends,
    );
    expect(
        ctx,
        "retry.previous_response_id",
        Value::Null,
        retry.body["previous_response_id"].clone(),
    );
    let kept = retry.input()?.iter().any(|i| {
        i["type"] == "message" && i["role"] == "assistant" && i.to_string().contains("partial")
    });
    expect(ctx, "retry.keeps_partial_item", json!(true), json!(kept));
    let asks = retry.last_user_text();
    expect(ctx, "retry.user_text", json!("cut"), json!(asks));
    world.finish().await
}

/// A reply that sends `response.created` and then stalls until codex gives up.
fn stalled(resp_id: &str) -> Scripted {
    Scripted::sse(bodies::assistant_reply(resp_id, "never sent")).stall_after(1)
}

/// F10: `stream_idle_timeout_ms` 1500 and `stream_max_retries` 1. Turn 1 stalls on both
/// attempts and fails; turn 2 stalls once and the retry completes.
async fn http_stall(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        stream_max_retries: 1,
        stream_idle_timeout_ms: IDLE_MS,
        ..WorldOptions::default()
    };
    let script = vec![
        stalled("resp-1"),
        stalled("resp-2"),
        stalled("resp-3"),
        Scripted::sse(bodies::assistant_reply("resp-4", "after the stall")),
    ];
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let one = run_turn(&app, &thread, vec![text("stall")], &TurnOptions::default()).await?;
    expect(ctx, "turn1.status", json!("failed"), json!(one.status));
    let terminal = json!({
        "willRetry": false,
        "message": IDLE_SSE,
        "codexErrorInfo": "other",
        "additionalDetails": null,
    });
    expect(
        ctx,
        "turn1.errors",
        json!([progress(1, 1, IDLE_SSE), terminal]),
        json!(errors(&one)),
    );
    expect(
        ctx,
        "turn1.error.message",
        json!(IDLE_SSE),
        json!(one.error_message()),
    );
    let two = run_turn(&app, &thread, vec![text("again")], &TurnOptions::default()).await?;
    expect(ctx, "turn2.status", json!("completed"), json!(two.status));
    expect(
        ctx,
        "turn2.errors",
        json!([progress(1, 1, IDLE_SSE)]),
        json!(errors(&two)),
    );
    expect(
        ctx,
        "turn2.final",
        json!("after the stall"),
        json!(two.final_response()),
    );
    stall_requests(ctx, &world).await?;
    world.finish().await
}

/// F10's requests: all over HTTP, the stalled attempts closed by codex, and each retry no
/// sooner than the idle timeout.
async fn stall_requests(ctx: &Ctx, world: &World) -> anyhow::Result<()> {
    let requests = captured_requests(world, 4, Duration::from_secs(2)).await?;
    expect(
        ctx,
        "requests.transport",
        json!(vec!["POST /v1/responses http"; 4]),
        transports(&requests),
    );
    let ends: Vec<Option<&str>> = requests.iter().map(|r| r.stream_end.as_deref()).collect();
    expect(
        ctx,
        "requests.stream_end",
        json!([
            "client_closed",
            "client_closed",
            "client_closed",
            "completed"
        ]),
        json!(ends),
    );
    ensure!(
        requests.len() == 4,
        "expected 4 requests, got {}",
        requests.len()
    );
    retries_after_idle_timeout(ctx, &requests);
    Ok(())
}

/// Records drift (`retry.before_idle_timeout`) for each retry that came before the idle timeout
/// after its stalled attempt (`requests` holds F10's four requests).
fn retries_after_idle_timeout(ctx: &Ctx, requests: &[CapturedRequest]) {
    // Not before the timeout: each retry comes at least stream_idle_timeout_ms after the
    // stalled attempt's last event left (the sidecar's clock; a retry sooner is drift).
    for (a, b) in [(&requests[0], &requests[1]), (&requests[2], &requests[3])] {
        let last = a.events_sent_ms.last().copied().unwrap_or(0.0);
        let gap = b.received_at_ms.saturating_sub(a.received_at_ms) as f64 - last;
        if gap + 1.0 < IDLE_MS as f64 {
            let message = format!(
                "request #{} came {gap:.0} ms after request #{}'s last event, before the \
                 {IDLE_MS} ms idle timeout",
                b.index, a.index
            );
            ctx.drift("retry.before_idle_timeout", json!(true), message);
        }
    }
}

/// How F11's cut body is framed.
#[derive(Debug, Clone, Copy)]
enum Framing {
    /// Ended by the connection's close, as the probe's raw server wrote it (F11): the cut
    /// reads as the body's end before `response.completed`.
    CloseDelimited,
    /// Chunked, as HTTP/1.1 servers and gateways send a stream of unknown length (F11a): the
    /// cut breaks a chunk, which codex's HTTP client reports as a body error.
    Chunked,
}

/// The detail of a chunked SSE body cut mid-stream (F11a, the same on all three versions).
const CUT_CHUNK: &str = "stream disconnected before completion: Transport error: network error: \
                         error decoding response body";

/// F11: `response.created` and an assistant message, then the TCP connection closes; the
/// retry (`stream_max_retries` 1) completes. `framing` says how the cut body was framed, and
/// so which detail the retry notice gives.
async fn http_closed(ctx: &Ctx, framing: Framing) -> anyhow::Result<()> {
    let options = WorldOptions {
        stream_max_retries: 1,
        ..WorldOptions::default()
    };
    let mut script = cut_then_whole();
    let detail = match framing {
        Framing::CloseDelimited => {
            script[0] = script[0].clone().close_delimited();
            CLOSED_SSE
        }
        Framing::Chunked => CUT_CHUNK,
    };
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let turn = run_turn(&app, &thread, vec![text("cut")], &TurnOptions::default()).await?;
    expect(ctx, "turn.status", json!("completed"), json!(turn.status));
    expect(
        ctx,
        "turn.errors",
        json!([progress(1, 1, detail)]),
        json!(errors(&turn)),
    );
    let texts: Vec<&str> = turn.agent_messages().iter().map(|m| m.1).collect();
    expect(
        ctx,
        "turn.agentMessages",
        json!(["partial", "whole"]),
        json!(texts),
    );
    let requests = captured_requests(&world, 2, Duration::from_secs(2)).await?;
    expect(
        ctx,
        "requests.transport",
        json!(vec!["POST /v1/responses http"; 2]),
        transports(&requests),
    );
    ensure!(
        requests.len() == 2,
        "expected 2 requests, got {}",
        requests.len()
    );
    let ends: Vec<Option<&str>> = requests.iter().map(|r| r.stream_end.as_deref()).collect();
    expect(
        ctx,
        "requests.stream_end",
        json!(["disconnected", "completed"]),
        json!(ends),
    );
    let (first, retry) = (requests[0].input()?, requests[1].input()?);
    let kept = retry.iter().any(|i| {
        i["type"] == "message" && i["role"] == "assistant" && i.to_string().contains("partial")
    });
    expect(ctx, "retry.keeps_partial_item", json!(true), json!(kept));
    let grew = retry.len() as i64 - first.len() as i64;
    expect(ctx, "retry.input_growth", json!(1), json!(grew));
    world.finish().await
}

/// F12: five events 400 ms apart under a 1500 ms idle timeout.
async fn slow_drip(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        stream_idle_timeout_ms: IDLE_MS,
        ..WorldOptions::default()
    };
    let parts = ["drip", " drip", " drop"];
    let body = bodies::streaming_reply("resp-1", "msg-1", &parts);
    let count = body.len();
    let script = vec![Scripted::sse(body).gap_ms(400)];
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let turn = run_turn(&app, &thread, vec![text("drip")], &TurnOptions::default()).await?;
    expect(ctx, "turn.status", json!("completed"), json!(turn.status));
    expect(ctx, "turn.chunks", json!(parts), json!(turn.chunks()));
    expect(
        ctx,
        "turn.final",
        json!(parts.concat()),
        json!(turn.final_response()),
    );
    expect(ctx, "turn.errors", json!([]), json!(errors(&turn)));
    let requests = captured_requests(&world, 1, Duration::from_secs(2)).await?;
    expect(
        ctx,
        "requests.transport",
        json!(["POST /v1/responses http"]),
        transports(&requests),
    );
    let request = requests.first().context("no request captured")?;
    let sent = &request.events_sent_ms;
    ensure!(
        sent.len() == count,
        "{} event times for {count} events",
        sent.len()
    );
    // The sidecar's own clock: every gap at least 400 ms, and the whole stream longer than
    // the idle timeout, so only the gaps, not the total, are under it.
    for pair in sent.windows(2) {
        ensure!(
            pair[1] - pair[0] >= 399.0,
            "events left {:.0} ms apart",
            pair[1] - pair[0]
        );
    }
    let span = sent.last().copied().unwrap_or(0.0);
    ensure!(span > IDLE_MS as f64, "the stream lasted {span:.0} ms");
    expect(
        ctx,
        "request.stream_end",
        json!("completed"),
        json!(request.stream_end),
    );
    world.finish().await
}

/// The fields of `account/rateLimits/updated` the catalogue names (0.161.0 and later add
/// more, all null in these rows).
const RATE_LIMIT_FIELDS: [&str; 6] = [
    "limitId",
    "limitName",
    "primary",
    "secondary",
    "credits",
    "planType",
];

/// Runs one turn and returns the catalogued fields of the first `account/rateLimits/updated`
/// that came after `turn/start` (waiting briefly for it), or null when none came.
async fn rate_limit_turn(
    app: &AppServer,
    thread: &str,
    prompt: &str,
) -> anyhow::Result<(Turn, Value)> {
    let cursor = app.cursor();
    let turn = run_turn(app, thread, vec![text(prompt)], &TurnOptions::default()).await?;
    let update = app
        .wait_for(
            cursor,
            Duration::from_secs(2),
            "account/rateLimits/updated",
            |m| m.is("account/rateLimits/updated"),
        )
        .await
        .ok();
    let fields = match update {
        Some(m) => {
            let limits = &m.params()["rateLimits"];
            RATE_LIMIT_FIELDS
                .iter()
                .map(|k| (k.to_string(), limits[*k].clone()))
                .collect::<serde_json::Map<_, _>>()
                .into()
        }
        None => Value::Null,
    };
    Ok((turn, fields))
}

/// F17: turn 1's response carries the primary, secondary and credit headers; turn 2's none.
async fn rate_limit_headers(ctx: &Ctx) -> anyhow::Result<()> {
    let primary = Window {
        used_percent: 42.5,
        window_minutes: Some(300),
        reset_at: Some(1_796_089_227),
    };
    let secondary = Window {
        used_percent: 7.0,
        window_minutes: Some(10_080),
        reset_at: Some(1_796_172_027),
    };
    let mut limited = Scripted::sse(bodies::assistant_reply("resp-1", "limited"));
    let mut headers = rate_limits::headers("codex", Some(&primary), Some(&secondary));
    headers.extend(rate_limits::credits_headers(true, false, "12.34"));
    for (name, value) in &headers {
        limited = limited.header(name, value);
    }
    let script = vec![
        limited,
        Scripted::sse(bodies::assistant_reply("resp-2", "plain")),
    ];
    let (world, app, thread, _) =
        setup_with(ctx, WorldOptions::default(), script, json!({})).await?;
    let (one, got) = rate_limit_turn(&app, &thread, "limits").await?;
    expect(ctx, "turn1.status", json!("completed"), json!(one.status));
    let want = json!({
        "limitId": "codex",
        "limitName": null,
        "primary": {"usedPercent": 43, "windowDurationMins": 300, "resetsAt": 1_796_089_227},
        "secondary": {"usedPercent": 7, "windowDurationMins": 10_080, "resetsAt": 1_796_172_027},
        "credits": {"hasCredits": true, "unlimited": false, "balance": "12.34"},
        "planType": null,
    });
    expect(ctx, "turn1.rateLimits", want, got);
    let (two, got) = rate_limit_turn(&app, &thread, "no limits").await?;
    expect(ctx, "turn2.status", json!("completed"), json!(two.status));
    let want = json!({
        "limitId": "codex",
        "limitName": null,
        "primary": null,
        "secondary": null,
        "credits": null,
        "planType": null,
    });
    expect(ctx, "turn2.rateLimits", want, got);
    let requests = captured_requests(&world, 2, Duration::from_secs(2)).await?;
    expect(
        ctx,
        "requests.transport",
        json!(vec!["POST /v1/responses http"; 2]),
        transports(&requests),
    );
    world.finish().await
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
