//! The Responses WebSocket failing before a turn's first event, and codex falling back to HTTP
//! (group F, `parity-scenarios.md` F, facts in `transports.md`): an upgrade refused with 426
//! (F3), failing with 500 or 404 (F4, F4a) or hanging past the connect timeout (F5), and a
//! socket closed right after `response.create` (F6). The rows count the upgrades and the
//! attempts, check the transport of each request and the retry notices, and that the turns
//! succeed over HTTP.
//!
//! Each row compares, field by field, what codex did with what its catalogue entry says; a
//! difference is recorded with [`Ctx::drift`] under a stable key, with the value codex gave,
//! and the baselines list what each version is known for. F5 configures the connect timeout
//! down (`websocket_connect_timeout_ms` 1500) and says so.

use std::time::Duration;

use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{ConnectionScript, Scripted, bodies};
use serde_json::{Value, json};

use super::setup_with;
use crate::app_server::turn::{Turn, TurnOptions, TurnStatus, run_turn, text};
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{Transport, World, WorldOptions};
use crate::scenario;
use crate::scenarios::support::transport::{
    errors, on_websocket, progress, transports, upgrades, wait_upgrades,
};

/// The rows F3 to F6, in catalogue order.
pub fn scenarios() -> Vec<Scenario> {
    vec![
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
        .timeout(Duration::from_secs(45))
        .waits(),
        scenario!(
            "transport_websocket_closed_before_first_event",
            "F6",
            "a socket closed right after response.create: reconnects on new sockets, then HTTP \
             in the same turn, with the websocket-closed notice",
            websocket_closed_early
        )
        .timeout(Duration::from_secs(30)),
    ]
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
    ctx.expect(
        "turns.status",
        json!([TurnStatus::Completed, TurnStatus::Completed]),
        status,
    );
    let finals = json!([one.final_response(), two.final_response()]);
    ctx.expect("turns.final", json!(["one", "two"]), finals);
    ctx.expect(
        "errors",
        json!([]),
        json!([errors(&one), errors(&two)].concat()),
    );
    let requests = world.captured(2, Duration::from_secs(2)).await?;
    ctx.expect(
        "requests.transport",
        json!(vec!["POST /v1/responses http"; 2]),
        transports(&requests),
    );
    ctx.expect(
        "upgrades.count",
        json!(1),
        json!(upgrades(&world).await?.len()),
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
    ctx.expect("turn1.errors", want, json!(shape));
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
    ctx.expect("turn1.errors", want, json!(shape));
    // The catalogue asks for the detail per version: it is recorded whatever it says.
    let details: Vec<&Value> = notices.iter().map(|e| &e["additionalDetails"]).collect();
    ctx.drift(
        "turn1.errors.additionalDetails",
        json!(details),
        format!("the hang's retry notice says {}", json!(details)),
    );
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
    ctx.expect(
        "turns.status",
        json!([TurnStatus::Completed, TurnStatus::Completed]),
        status,
    );
    let finals = json!([one.final_response(), two.final_response()]);
    ctx.expect("turns.final", json!(["one", "two"]), finals);
    ctx.expect("turn2.errors", json!([]), json!(errors(&two)));
    let requests = world.captured(2, Duration::from_secs(2)).await?;
    ctx.expect(
        "requests.transport",
        json!(vec!["POST /v1/responses http"; 2]),
        transports(&requests),
    );
    let up = upgrades(&world).await?;
    ctx.expect("upgrades.count", json!(4), json!(up.len()));
    if world.sidecar.status().await?.pending > 0 || world.sidecar.websocket(None, vec![]).await? > 0
    {
        // Drift is recorded above; the connection scripts no upgrade took are dropped.
        world.sidecar.reset().await?;
    }
    Ok((world, one, up))
}

/// The detail of a socket closed before `response.completed`.
const WS_CLOSED: &str =
    "stream disconnected before completion: websocket closed by server before response.completed";

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
    ctx.expect_status("turn.status", TurnStatus::Completed, &turn);
    ctx.expect(
        "turn.final",
        json!("over http"),
        json!(turn.final_response()),
    );
    ctx.expect(
        "turn.errors",
        json!([progress(2, 2, WS_CLOSED)]),
        json!(errors(&turn)),
    );
    let requests = world.captured(4, Duration::from_secs(2)).await?;
    let asked: Vec<CapturedRequest> = requests.into_iter().filter(|r| !r.auto_warmup).collect();
    let mut want = vec!["GET /v1/responses websocket"; 3];
    want.push("POST /v1/responses http");
    ctx.expect("requests.transport", json!(want), transports(&asked));
    let conns: Vec<Option<u64>> = asked.iter().map(|r| r.connection).collect();
    ctx.expect("frames.connections", json!([0, 1, 2, null]), json!(conns));
    ctx.expect(
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
