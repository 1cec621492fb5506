//! Group E14: the failure matrix (`parity-scenarios.md` E14, `codex-app-server.md` §9,
//! `responses-wire-format.md` §5). One scenario per fault the mock can produce; every row
//! runs through [`run_fault`], which scripts the fault as often as the row expects codex
//! to ask, runs one turn and compares what came back with the row: the number of requests,
//! `turn.status`, `turn.error.message` and `codexErrorInfo`, the retry progress
//! (`willRetry: true`, in order, before the one terminal `error`) and, where the row says
//! so, the least gap between attempts.
//!
//! Each row holds the catalogue's answer. A version that answers otherwise is recorded with
//! [`Ctx::drift`], field by field (the key names the field, `turn.error.codexErrorInfo`;
//! the observed value is what codex gave, exactly), and the baselines
//! (`fixtures/expected/baselines.json`) must list it: that is how the matrix shows which
//! release changed its error handling.

use std::time::Duration;

use anyhow::Context;
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::events;
use codex_parity_sidecar::{Scripted, bodies, sse};
use serde_json::{Value, json};

use super::setup_with;
use crate::app_server::turn::{Turn, TurnOptions, TurnStatus, start_turn, text, wait_turn};
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{World, WorldOptions};

/// The message HTTP 5xx gives (0.161.0 and later spell it with a typographic apostrophe).
const HIGH_DEMAND: &str =
    "We\u{2019}re currently experiencing high demand, which may cause temporary errors.";

/// What codex must answer to one fault.
struct Fault {
    /// The reply the mock gives to each attempt (scripted `requests` times).
    reply: fn() -> anyhow::Result<Scripted>,
    /// `request_max_retries` (HTTP level).
    request_retries: u32,
    /// `stream_max_retries` (turn level); also the expected number of progress errors
    /// when `progress_info` is set.
    stream_retries: u32,
    /// `stream_idle_timeout_ms`.
    idle_timeout_ms: u64,
    /// Model requests codex makes.
    requests: usize,
    /// Whether the turn completes (`turn.status` `completed`) or fails (`failed`).
    completes: bool,
    /// `turn.error.message` (`{url}` stands for the mock's `…/v1/responses`); empty for a
    /// turn that completes.
    message: &'static str,
    /// The texts of the agent messages the turn delivers (`item/completed`), in order.
    texts: &'static [&'static str],
    /// `turn.error.codexErrorInfo` as JSON text (`null` for a completed turn).
    info: &'static str,
    /// `error.codexErrorInfo` of each progress error as JSON text; `None`: no progress.
    progress_info: Option<&'static str>,
    /// Least time between two attempts (a `retry-after` honoured), in milliseconds.
    min_gap_ms: Option<u64>,
}

impl Fault {
    /// A row with retries off: one request, a failed turn, no progress.
    const fn failed(
        reply: fn() -> anyhow::Result<Scripted>,
        message: &'static str,
        info: &'static str,
    ) -> Fault {
        Fault {
            reply,
            request_retries: 0,
            stream_retries: 0,
            idle_timeout_ms: 10_000,
            requests: 1,
            completes: false,
            message,
            texts: &[],
            info,
            progress_info: None,
            min_gap_ms: None,
        }
    }

    /// A row whose turn completes with these agent messages after one request.
    const fn completed(
        reply: fn() -> anyhow::Result<Scripted>,
        texts: &'static [&'static str],
    ) -> Fault {
        Fault {
            completes: true,
            texts,
            ..Fault::failed(reply, "", "null")
        }
    }

    /// The `turn.status` the row expects.
    fn status(&self) -> TurnStatus {
        if self.completes {
            TurnStatus::Completed
        } else {
            TurnStatus::Failed
        }
    }

    /// The same fault with both retry layers at `retries`, `requests` attempts and a
    /// progress error per stream retry.
    const fn retried(self, retries: u32, requests: usize, progress_info: &'static str) -> Fault {
        Fault {
            request_retries: retries,
            stream_retries: retries,
            requests,
            progress_info: Some(progress_info),
            ..self
        }
    }
}

/// The group's rows, in catalogue order: scenario name, catalogue id, summary and the
/// fault. The rows whose fault retries may take the default 60 s, the others 30 s.
const ROWS: &[(&str, &str, &str, &Fault)] = &[
    (
        "fault_http_500_fails_the_turn",
        "E14a",
        "HTTP 500, retries off: 1 request, internalServerError",
        &HTTP_500,
    ),
    (
        "fault_http_400_body_becomes_the_message",
        "E14b",
        "HTTP 400 with a JSON error: the raw body is the message, category other",
        &HTTP_400,
    ),
    (
        "fault_http_401_unauthorized",
        "E14c",
        "HTTP 401: status, body and URL in the message, httpConnectionFailed 401",
        &HTTP_401,
    ),
    (
        "fault_http_429_exceeds_retry_limit",
        "E14d",
        "HTTP 429, retries off: responseTooManyFailedAttempts 429",
        &HTTP_429,
    ),
    (
        "fault_http_429_with_retry_after",
        "E14e",
        "HTTP 429 with retry-after, retries off: the same single failure",
        &HTTP_429_RETRY_AFTER,
    ),
    (
        "fault_response_failed_server_error",
        "E14f",
        "response.failed server_error, retries off: stream disconnected, category other",
        &SERVER_ERROR,
    ),
    (
        "fault_context_length_exceeded",
        "E14g",
        "response.failed context_length_exceeded: contextWindowExceeded",
        &CONTEXT_LENGTH,
    ),
    (
        "fault_insufficient_quota",
        "E14h",
        "response.failed insufficient_quota: usageLimitExceeded",
        &INSUFFICIENT_QUOTA,
    ),
    (
        "fault_rate_limit_exceeded",
        "E14i",
        "response.failed rate_limit_exceeded: rateLimitExceeded",
        &RATE_LIMIT,
    ),
    (
        "fault_stream_ends_before_completed",
        "E14j",
        "a stream without response.completed fails the turn",
        &TRUNCATED,
    ),
    (
        "fault_malformed_sse_body",
        "E14k",
        "a body whose event data is not JSON, then the end: stream closed",
        &MALFORMED_BODY,
    ),
    (
        "fault_malformed_sse_event_is_skipped",
        "E14l",
        "one event that is not JSON between good ones is skipped; the turn completes",
        &MALFORMED_EVENT,
    ),
    (
        "fault_slow_headers_are_not_an_idle_timeout",
        "E14m",
        "a reply whose headers come after stream_idle_timeout_ms still completes: the idle \
         timeout runs between body bytes, not before the headers (a stall mid-stream is F10)",
        &SLOW_RESPONSE,
    ),
    (
        "fault_http_500_retried_by_both_layers",
        "E14n",
        "HTTP 500, both retry keys at 2: 9 requests, 2 progress errors, one failure",
        &HTTP_500_RETRIED,
    ),
    (
        "fault_server_error_retried_by_stream_layer",
        "E14o",
        "response.failed server_error, both retry keys at 2: 3 requests, 2 progress errors",
        &SERVER_ERROR_RETRIED,
    ),
    (
        "fault_http_429_retry_after_retried_by_stream_layer",
        "E14p",
        "HTTP 429 retry-after 1, both retry keys at 2: 3 requests a second apart",
        &HTTP_429_RETRY_AFTER_RETRIED,
    ),
];

/// The group's scenarios: one per row of [`ROWS`].
pub fn scenarios() -> Vec<Scenario> {
    ROWS.iter()
        .map(|&(name, id, summary, fault)| {
            let scenario = Scenario::new(name, id, summary, move |c| Box::pin(run_fault(c, fault)));
            if fault.progress_info.is_some() {
                scenario
            } else {
                scenario.timeout(Duration::from_secs(30))
            }
        })
        .collect()
}

fn failed_reply(code: &'static str, message: &'static str) -> anyhow::Result<Scripted> {
    Ok(Scripted::sse(bodies::failed_reply("resp-1", code, message)))
}

fn http_500() -> anyhow::Result<Scripted> {
    Ok(Scripted::http_error(
        500,
        json!({"error": {"message": "mock 500", "type": "server_error"}}),
    ))
}

fn http_429_retry_after() -> anyhow::Result<Scripted> {
    Ok(
        Scripted::http_error(429, json!({"error": {"message": "slow down"}}))
            .header("retry-after", "1"),
    )
}

fn server_error() -> anyhow::Result<Scripted> {
    failed_reply("server_error", "mock says no")
}

/// `response.created` framed as SSE, the start of the hand-made bodies.
fn created_frame() -> anyhow::Result<String> {
    Ok(sse::frame(&[events::response_created("resp-1")])?)
}

const HTTP_500: Fault = Fault::failed(http_500, HIGH_DEMAND, r#""internalServerError""#);

const HTTP_400: Fault = Fault::failed(
    || {
        Ok(Scripted::http_error(
            400,
            json!({"error": {"message": "bad thing"}}),
        ))
    },
    r#"{"error":{"message":"bad thing"}}"#,
    r#""other""#,
);

const HTTP_401: Fault = Fault::failed(
    || Ok(Scripted::http_error(401, json!("bad key"))),
    "unexpected status 401 Unauthorized: bad key, url: {url}",
    r#"{"httpConnectionFailed":{"httpStatusCode":401}}"#,
);

const HTTP_429: Fault = Fault::failed(
    || {
        Ok(Scripted::http_error(
            429,
            json!({"error": {"message": "slow down"}}),
        ))
    },
    "exceeded retry limit, last status: 429 Too Many Requests",
    r#"{"responseTooManyFailedAttempts":{"httpStatusCode":429}}"#,
);

const HTTP_429_RETRY_AFTER: Fault = Fault {
    reply: http_429_retry_after,
    ..HTTP_429
};

const SERVER_ERROR: Fault = Fault::failed(
    server_error,
    "stream disconnected before completion: mock says no",
    r#""other""#,
);

const CONTEXT_LENGTH: Fault = Fault::failed(
    || failed_reply("context_length_exceeded", "mock context is full"),
    "Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.",
    r#""contextWindowExceeded""#,
);

const INSUFFICIENT_QUOTA: Fault = Fault::failed(
    || failed_reply("insufficient_quota", "mock quota is gone"),
    "Quota exceeded. Check your plan and billing details.",
    r#""usageLimitExceeded""#,
);

const RATE_LIMIT: Fault = Fault::failed(
    || {
        failed_reply(
            "rate_limit_exceeded",
            "Rate limit reached for mock-model. Please try again in 1ms.",
        )
    },
    "rate limit exceeded: Rate limit reached for mock-model. Please try again in 1ms.",
    r#""rateLimitExceeded""#,
);

const STREAM_CLOSED: &str =
    "stream disconnected before completion: stream closed before response.completed";

/// The message item done before the cut is still delivered, on a failed turn.
const TRUNCATED: Fault = Fault {
    texts: &["cut short"],
    ..Fault::failed(
        || {
            Ok(Scripted::sse(vec![
                events::response_created("resp-1"),
                events::assistant_message("msg-1", "cut short"),
            ]))
        },
        STREAM_CLOSED,
        r#""other""#,
    )
};

/// `response.created`, then an event whose data is not JSON, then the end of the body.
const MALFORMED_BODY: Fault = Fault::failed(
    || {
        Ok(Scripted::raw(format!(
            "{}event: response.output_item.done\ndata: {{not json\n\n",
            created_frame()?
        )))
    },
    STREAM_CLOSED,
    r#""other""#,
);

const MALFORMED_EVENT: Fault = Fault::completed(
    || {
        Ok(Scripted::raw(format!(
            "{}event: response.output_item.done\ndata: {{not json\n\n{}",
            created_frame()?,
            sse::frame(&[
                events::assistant_message("msg-1", "after the bad event"),
                events::completed("resp-1"),
            ])?
        )))
    },
    &["after the bad event"],
);

/// The whole reply (headers included) waits 1.5 s; the idle timeout is 0.3 s. The sidecar
/// delays whole responses only: a stall in the middle of a stream, which is what
/// `stream_idle_timeout_ms` guards, cannot be scripted with it yet.
const SLOW_RESPONSE: Fault = Fault {
    idle_timeout_ms: 300,
    ..Fault::completed(
        || Ok(Scripted::sse(bodies::assistant_reply("resp-1", "late but whole")).delay_ms(1500)),
        &["late but whole"],
    )
};

const STREAM_DISCONNECTED: &str = r#"{"responseStreamDisconnected":{"httpStatusCode":null}}"#;

const HTTP_500_RETRIED: Fault = HTTP_500.retried(2, 9, STREAM_DISCONNECTED);

const SERVER_ERROR_RETRIED: Fault = SERVER_ERROR.retried(2, 3, STREAM_DISCONNECTED);

const HTTP_429_RETRY_AFTER_RETRIED: Fault = Fault {
    min_gap_ms: Some(1000),
    ..HTTP_429_RETRY_AFTER.retried(
        2,
        3,
        r#"{"responseStreamDisconnected":{"httpStatusCode":429}}"#,
    )
};

fn parse(text: &str, what: &str) -> anyhow::Result<Value> {
    serde_json::from_str(text).with_context(|| format!("the row's {what} is not JSON: {text}"))
}

/// Scripts the fault, runs one turn and compares it with the row; every difference is
/// recorded as this version's drift.
async fn run_fault(ctx: &Ctx, fault: &Fault) -> anyhow::Result<()> {
    let options = WorldOptions {
        request_max_retries: fault.request_retries,
        stream_max_retries: fault.stream_retries,
        stream_idle_timeout_ms: fault.idle_timeout_ms,
        ..WorldOptions::default()
    };
    let script = (0..fault.requests)
        .map(|_| (fault.reply)())
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let started = start_turn(&app, &thread, vec![text("fault")], &TurnOptions::default()).await?;
    // Shorter than the scenario's own limit, so a hang is reported with what was awaited.
    let turn = wait_turn(&app, started, Duration::from_secs(20)).await?;
    let url = format!("{}/responses", world.sidecar.base_url());
    // Each difference is drift keyed by the field; the observed value names the sidecar's
    // address `{url}`, so it is the same on every run.
    let differ = |key: &str, want: Value, got: Value| {
        if want != got {
            let got: Value =
                serde_json::from_str(&got.to_string().replace(&url, "{url}")).unwrap_or(got);
            let message = format!("{key}: expected {want}, got {got}").replace(&url, "{url}");
            ctx.drift(key, got, message);
        }
    };
    differ("turn.status", json!(fault.status()), json!(turn.status));
    differ(
        "turn.error.message",
        json!(fault.message.replace("{url}", &url)),
        json!(turn.error_message()),
    );
    let texts: Vec<&str> = turn.agent_messages().iter().map(|m| m.1).collect();
    differ("turn.agentMessages", json!(fault.texts), json!(texts));
    let info = turn
        .error
        .as_ref()
        .and_then(|e| e.get("codexErrorInfo"))
        .cloned()
        .unwrap_or(Value::Null);
    differ(
        "turn.error.codexErrorInfo",
        parse(fault.info, "codexErrorInfo")?,
        info,
    );
    compare_progress(fault, &turn, &differ)?;
    let requests = world
        .captured(fault.requests, Duration::from_secs(2))
        .await?;
    differ(
        "requests.count",
        json!(fault.requests),
        json!(requests.len()),
    );
    compare_gaps(ctx, fault, &requests);
    check_terminal(&turn)?;
    if requests.len() < fault.requests {
        discard_unserved(&world).await?;
    }
    world.finish().await
}

/// Compares the turn's retry progress (`willRetry: true` errors) with the row's, through
/// `differ` (what, expected, got).
fn compare_progress(
    fault: &Fault,
    turn: &Turn,
    differ: &dyn Fn(&str, Value, Value),
) -> anyhow::Result<()> {
    let want_progress = match fault.progress_info {
        Some(_) => (1..=fault.stream_retries)
            .map(|i| format!("Reconnecting... {i}/{}", fault.stream_retries))
            .collect(),
        None => Vec::new(),
    };
    differ(
        "turn.retryProgress",
        json!(want_progress),
        json!(turn.retry_progress()),
    );
    if let Some(progress_info) = fault.progress_info {
        let want = parse(progress_info, "progress codexErrorInfo")?;
        for p in progress_errors(turn) {
            differ(
                "progress.codexErrorInfo",
                want.clone(),
                p["codexErrorInfo"].clone(),
            );
            differ(
                "progress.additionalDetails",
                json!(turn.error_message()),
                p["additionalDetails"].clone(),
            );
        }
    }
    Ok(())
}

/// Records as drift every pair of consecutive requests closer than the row's least gap.
fn compare_gaps(ctx: &Ctx, fault: &Fault, requests: &[CapturedRequest]) {
    if let Some(min) = fault.min_gap_ms {
        for pair in requests.windows(2) {
            let gap = pair[1]
                .received_at_ms
                .saturating_sub(pair[0].received_at_ms);
            if gap < min {
                // The gap itself varies from run to run: the drift is that it is short.
                ctx.drift("requests.retry_after_honoured", json!(false), format!(
                    "request #{} came {gap} ms after the one before; retry-after asks for {min} ms",
                    pair[1].index
                ));
            }
        }
    }
}

/// The `error` objects of the progress notifications, in order.
fn progress_errors(turn: &Turn) -> Vec<&Value> {
    turn.notifications("error")
        .into_iter()
        .filter(|p| p["willRetry"] == json!(true))
        .map(|p| &p["error"])
        .collect()
}

/// What holds whatever the version: a failed turn has exactly one terminal `error`, the same
/// as `turn.error`, after every progress error; any other turn has neither.
fn check_terminal(turn: &Turn) -> anyhow::Result<()> {
    let errors: Vec<(usize, &Value)> = turn
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is("error"))
        .map(|(i, m)| (i, m.params()))
        .collect();
    let terminal: Vec<&(usize, &Value)> = errors
        .iter()
        .filter(|(_, p)| p["willRetry"] != json!(true))
        .collect();
    if turn.status != TurnStatus::Failed {
        anyhow::ensure!(
            terminal.is_empty() && turn.error.is_none(),
            "a {} turn carries an error: {:?} / {:?}",
            turn.status,
            turn.error,
            terminal
        );
        return Ok(());
    }
    anyhow::ensure!(
        terminal.len() == 1,
        "a failed turn must have exactly one error with willRetry false, got {}: {terminal:?}",
        terminal.len()
    );
    let (at, last) = terminal[0];
    anyhow::ensure!(
        Some(&last["error"]) == turn.error.as_ref(),
        "the terminal error {} is not turn.error {:?}",
        last["error"],
        turn.error
    );
    if let Some((after, _)) = errors
        .iter()
        .find(|(i, p)| i > at && p["willRetry"] == json!(true))
    {
        anyhow::bail!("progress error #{after} arrived after the terminal error");
    }
    Ok(())
}

/// Drops the scripted replies a version never asked for (its drift is already recorded),
/// so that the after-scenario checks judge the rest.
async fn discard_unserved(world: &World) -> anyhow::Result<()> {
    world
        .sidecar
        .reset()
        .await
        .context("discarding the unserved scripted replies")?;
    Ok(())
}
