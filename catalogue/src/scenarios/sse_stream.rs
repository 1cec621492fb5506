//! HTTP streams (SSE) that stall, are cut or drip (group F, `parity-scenarios.md` F, facts in
//! `transports.md`): a stream that stalls past `stream_idle_timeout_ms` and is retried (F10),
//! a body cut mid-stream, close-delimited (F11) or chunked (F11a), and retried with the
//! partial item, and events that come slowly, each gap under the idle timeout, which is no
//! stall (F12). The rows check the retry notices and the turn's outcome, how each captured
//! stream ended and, on the sidecar's clock, the time between events and between attempts.
//!
//! Each row compares, field by field, what codex did with what its catalogue entry says; a
//! difference is recorded with [`Ctx::drift`] under a stable key, with the value codex gave,
//! and the baselines list what each version is known for. F10 and F12 configure the idle
//! timeout down (`stream_idle_timeout_ms` 1500) and say so.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::json;

use super::setup_with;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{World, WorldOptions};
use crate::scenario;
use crate::scenarios::support::transport::{cut_then_whole, errors, progress, transports};

/// The rows F10 to F12, in catalogue order.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "transport_http_stall_idle_timeout",
            "F10",
            "an HTTP stream that stalls mid-stream fails after stream_idle_timeout_ms (1.5 s), \
             is retried, and the turn fails or succeeds on the retry",
            http_stall
        )
        .timeout(Duration::from_secs(40))
        .waits(),
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
    ]
}

/// The idle timeout the stall rows configure (`stream_idle_timeout_ms`).
const IDLE_MS: u64 = 1500;

/// The progress and terminal detail of a stalled SSE stream.
const IDLE_SSE: &str = "stream disconnected before completion: idle timeout waiting for SSE";

/// The progress and terminal detail of an SSE body cut before `response.completed`.
const CLOSED_SSE: &str =
    "stream disconnected before completion: stream closed before response.completed";

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
    ctx.expect_status("turn1.status", TurnStatus::Failed, &one);
    let terminal = json!({
        "willRetry": false,
        "message": IDLE_SSE,
        "codexErrorInfo": "other",
        "additionalDetails": null,
    });
    ctx.expect(
        "turn1.errors",
        json!([progress(1, 1, IDLE_SSE), terminal]),
        json!(errors(&one)),
    );
    ctx.expect(
        "turn1.error.message",
        json!(IDLE_SSE),
        json!(one.error_message()),
    );
    let two = run_turn(&app, &thread, vec![text("again")], &TurnOptions::default()).await?;
    ctx.expect_status("turn2.status", TurnStatus::Completed, &two);
    ctx.expect(
        "turn2.errors",
        json!([progress(1, 1, IDLE_SSE)]),
        json!(errors(&two)),
    );
    ctx.expect(
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
    let requests = world.captured(4, Duration::from_secs(2)).await?;
    ctx.expect(
        "requests.transport",
        json!(vec!["POST /v1/responses http"; 4]),
        transports(&requests),
    );
    let ends: Vec<Option<&str>> = requests.iter().map(|r| r.stream_end.as_deref()).collect();
    ctx.expect(
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
    ctx.expect_status("turn.status", TurnStatus::Completed, &turn);
    ctx.expect(
        "turn.errors",
        json!([progress(1, 1, detail)]),
        json!(errors(&turn)),
    );
    let texts: Vec<&str> = turn.agent_messages().iter().map(|m| m.1).collect();
    ctx.expect(
        "turn.agentMessages",
        json!(["partial", "whole"]),
        json!(texts),
    );
    let requests = world.captured(2, Duration::from_secs(2)).await?;
    ctx.expect(
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
    ctx.expect(
        "requests.stream_end",
        json!(["disconnected", "completed"]),
        json!(ends),
    );
    let (first, retry) = (requests[0].input()?, requests[1].input()?);
    let kept = retry.iter().any(|i| {
        i["type"] == "message" && i["role"] == "assistant" && i.to_string().contains("partial")
    });
    ctx.expect("retry.keeps_partial_item", json!(true), json!(kept));
    let grew = retry.len() as i64 - first.len() as i64;
    ctx.expect("retry.input_growth", json!(1), json!(grew));
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
    ctx.expect_status("turn.status", TurnStatus::Completed, &turn);
    ctx.expect("turn.chunks", json!(parts), json!(turn.chunks()));
    ctx.expect(
        "turn.final",
        json!(parts.concat()),
        json!(turn.final_response()),
    );
    ctx.expect("turn.errors", json!([]), json!(errors(&turn)));
    let requests = world.captured(1, Duration::from_secs(2)).await?;
    ctx.expect(
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
    ctx.expect(
        "request.stream_end",
        json!("completed"),
        json!(request.stream_end),
    );
    world.finish().await
}
