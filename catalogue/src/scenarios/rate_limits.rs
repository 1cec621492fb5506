//! What an HTTP response tells codex of the provider's limits (group F, `parity-scenarios.md`
//! F, facts in `transports.md`): retry hints, `Retry-After` on a 500 and "try again in" in a
//! rate-limit failure, each honoured by the wait before the retry (F13); and rate-limit
//! headers, which become `account/rateLimits/updated` (F17).
//!
//! Each row compares, field by field, what codex did with what its catalogue entry says; a
//! difference is recorded with [`Ctx::drift`] under a stable key, with the value codex gave,
//! and the baselines list what each version is known for.

use std::time::Duration;

use anyhow::ensure;
use codex_parity_sidecar::rate_limits::{self, Window};
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::setup_with;
use crate::app_server::AppServer;
use crate::app_server::turn::{Turn, TurnOptions, TurnStatus, run_turn, text};
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;
use crate::scenarios::support::transport::{errors, transports};

/// The rows F13 and F17, in catalogue order.
pub fn scenarios() -> Vec<Scenario> {
    vec![
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
    ctx.expect(
        "turns.final",
        json!(["after retry-after", "after the hint"]),
        finals,
    );
    ctx.expect("turn1.errors", json!([]), json!(errors(&one)));
    let notice = json!([{"willRetry": true, "message": "Reconnecting... 1/1",
        "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": null}},
        "additionalDetails": format!("stream disconnected before completion: {hint}")}]);
    ctx.expect("turn2.errors", notice, json!(errors(&two)));
    let requests = world.captured(4, Duration::from_secs(2)).await?;
    ctx.expect(
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
    ctx.expect_status("turn1.status", TurnStatus::Completed, &one);
    let want = json!({
        "limitId": "codex",
        "limitName": null,
        "primary": {"usedPercent": 43, "windowDurationMins": 300, "resetsAt": 1_796_089_227},
        "secondary": {"usedPercent": 7, "windowDurationMins": 10_080, "resetsAt": 1_796_172_027},
        "credits": {"hasCredits": true, "unlimited": false, "balance": "12.34"},
        "planType": null,
    });
    ctx.expect("turn1.rateLimits", want, got);
    let (two, got) = rate_limit_turn(&app, &thread, "no limits").await?;
    ctx.expect_status("turn2.status", TurnStatus::Completed, &two);
    let want = json!({
        "limitId": "codex",
        "limitName": null,
        "primary": null,
        "secondary": null,
        "credits": null,
        "planType": null,
    });
    ctx.expect("turn2.rateLimits", want, got);
    let requests = world.captured(2, Duration::from_secs(2)).await?;
    ctx.expect(
        "requests.transport",
        json!(vec!["POST /v1/responses http"; 2]),
        transports(&requests),
    );
    world.finish().await
}
