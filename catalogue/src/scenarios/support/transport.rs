//! What the transport rows of group F (`websocket`, `websocket_fallback`,
//! `websocket_faults`, `sse_stream`, `rate_limits`) read and script alike: a turn's `error`
//! notifications, a retry notice, the transport of each captured request, the WebSocket
//! upgrades, a reply routed to the socket's frames, and the cut stream F7 and F11 both send.

use std::time::Duration;

use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use crate::app_server::turn::Turn;
use crate::harness::world::World;

/// The turn's `error` notifications in order, each as `willRetry`, `message`,
/// `codexErrorInfo` and `additionalDetails`.
pub fn errors(turn: &Turn) -> Vec<Value> {
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
pub fn progress(k: u32, n: u32, details: &str) -> Value {
    json!({
        "willRetry": true,
        "message": format!("Reconnecting... {k}/{n}"),
        "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": null}},
        "additionalDetails": details,
    })
}

/// The transport of each captured request as `METHOD path transport`.
pub fn transports(requests: &[CapturedRequest]) -> Value {
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
pub async fn upgrades(world: &World) -> anyhow::Result<Vec<CapturedRequest>> {
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
pub async fn wait_upgrades(
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

/// Routes a scripted reply to the WebSocket frames of the turn asking `prompt`: an HTTP body
/// has no `type`, and a warm-up frame carries no prompt (so the sidecar answers it itself).
/// Prompts must be words codex's own instructions do not contain.
pub fn on_websocket(scripted: Scripted, prompt: &str) -> Scripted {
    scripted
        .when_body_contains("\"type\":\"response.create\"")
        .when_body_contains(prompt)
}

/// F7's and F11's script: `response.created` and an assistant message, then the stream is
/// cut (before `response.completed`); the retry gets a whole reply.
pub fn cut_then_whole() -> Vec<Scripted> {
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
