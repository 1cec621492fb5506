//! Interacting with a running turn (`parity-scenarios.md` E9–E12): interrupt and steer
//! while the mock holds its answer back, approvals codex asks the client for, and image
//! input.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};
use tokio::time::error::Elapsed;

use super::{rpc_error, setup};
use crate::app_server::AppServer;
use crate::app_server::client::CallError;
use crate::app_server::message::RpcError;
use crate::app_server::turn::{
    Turn, TurnOptions, TurnStatus, run_turn, start_turn, text, wait_turn,
};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::World;
use crate::scenario;
use crate::scenarios::support::png;

/// How long the mock holds back the answer a turn is interrupted in.
const INTERRUPT_DELAY_MS: u64 = 5000;

/// How long the mock holds back the answer a turn is steered in.
const STEER_DELAY_MS: u64 = 1500;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "turn_interrupt_ends_turn_interrupted",
            "E9",
            "turn/interrupt ends a waiting turn at once; the thread takes a new turn",
            interrupt
        ),
        scenario!(
            "turn_steer_reaches_next_request",
            "E10",
            "steered input reaches the next request of the same turn; bad steers are errors",
            steer
        ),
        scenario!(
            "image_input_reaches_request",
            "E12",
            "image and localImage inputs arrive as input_image parts",
            image_input
        ),
    ]
}

/// The `turn_id` of a request's `x-codex-turn-metadata`.
fn metadata_turn_id(r: &CapturedRequest) -> anyhow::Result<String> {
    r.turn_metadata()?
        .get("turn_id")
        .and_then(Value::as_str)
        .map(String::from)
        .with_context(|| format!("request #{}'s turn metadata has no turn_id", r.index))
}

async fn interrupt(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        Scripted::sse(bodies::assistant_reply("resp-late", "too late"))
            .delay_ms(INTERRUPT_DELAY_MS),
        Scripted::sse(bodies::assistant_reply("resp-after", "after interrupt")),
    ];
    let (world, app, thread) = setup(ctx, script).await?;
    let started = start_turn(
        &app,
        &thread,
        vec![text("take your time")],
        &TurnOptions::default(),
    )
    .await?;
    world.requests_arrived(1, Duration::from_secs(10)).await?;
    let turn_id = started.id.clone();
    let answer = app
        .turn_interrupt(&thread, &turn_id)
        .await
        .context("turn/interrupt")?;
    ensure_eq!(answer, json!({}), "turn/interrupt result");
    // The mock answers only after INTERRUPT_DELAY_MS; the catalogue wants the turn to end
    // within 1 s of the interrupt.
    let turn = wait_turn(&app, started, Duration::from_secs(1))
        .await
        .context("the interrupted turn did not end within 1 s of turn/interrupt")?;
    check_interrupted(&turn)?;
    // Interrupting the turn again, now that it has ended: "no active turn to interrupt".
    let again = app.turn_interrupt(&thread, &turn_id);
    tokio::pin!(again);
    let idle_answer = tokio::time::timeout(Duration::from_secs(1), &mut again).await;
    let second = run_turn(
        &app,
        &thread,
        vec![text("second prompt")],
        &TurnOptions::default(),
    )
    .await?;
    check_interrupt_after_end(ctx, idle_answer, again).await?;
    check_after_interrupt(&world, &second, &turn_id).await?;
    world.finish().await
}

/// Asserts the interrupted turn ended `interrupted` with no agent message.
fn check_interrupted(turn: &Turn) -> anyhow::Result<()> {
    ensure_eq!(turn.status, TurnStatus::Interrupted, "turn status");
    ensure!(
        turn.agent_messages().is_empty(),
        "the interrupted turn got a message: {:?}",
        turn.agent_messages()
    );
    Ok(())
}

/// Judges the answer to interrupting the ended turn: refused while the thread was idle
/// (`idle_answer`), else drift with what the held request (`again`) answered in the end.
async fn check_interrupt_after_end(
    ctx: &Ctx,
    idle_answer: Result<Result<Value, CallError>, Elapsed>,
    again: impl Future<Output = Result<Value, CallError>>,
) -> anyhow::Result<()> {
    match idle_answer {
        Ok(answer) => {
            let refused = rpc_error(answer, "turn/interrupt of the ended turn")?;
            ensure!(
                refused.message.contains("no active turn to interrupt"),
                "turn/interrupt of the ended turn: {}",
                refused.message
            );
        }
        Err(_) => {
            // What the held request answers in the end is part of the drift: exactly.
            let late = match again.await {
                Ok(v) => json!({"result": v}),
                Err(e) => match rpc_error(Err(e), "the late answer") {
                    Ok(refused) => json!({"error": refused.message}),
                    Err(e) => json!({"failure": format!("{e:#}")}),
                },
            };
            ctx.drift(
                "turn.interrupt_after_end",
                json!({"while_idle": "no answer within 1 s", "after_next_turn": late}),
                format!(
                    "turn/interrupt of a turn that already ended interrupted got no answer while the \
                     thread was idle (1 s); after the next turn it answered {late}"
                ),
            );
        }
    }
    Ok(())
}

/// Asserts the turn after the interrupt: a new turn that completed, and the request it sent.
async fn check_after_interrupt(world: &World, second: &Turn, turn_id: &str) -> anyhow::Result<()> {
    ensure_eq!(second.status, TurnStatus::Completed, "second turn status");
    ensure!(second.id != turn_id, "the second turn reused the turn id");
    ensure_eq!(
        second.final_response(),
        "after interrupt",
        "second turn final response"
    );
    let requests = world.expect_requests(2).await?;
    ensure_eq!(
        requests[1].last_user_text(),
        Some("second prompt".to_string()),
        "last user text of request 2"
    );
    Ok(())
}

async fn steer(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        Scripted::sse(bodies::assistant_reply("resp-first", "first answer"))
            .delay_ms(STEER_DELAY_MS),
        Scripted::sse(bodies::assistant_reply("resp-steered", "steered answer")),
    ];
    let (world, app, thread) = setup(ctx, script).await?;
    let started = start_turn(
        &app,
        &thread,
        vec![text("write a fruit list")],
        &TurnOptions::default(),
    )
    .await?;
    let turn_id = started.id.clone();
    world.requests_arrived(1, Duration::from_secs(10)).await?;
    refuse_wrong_turn(&app, &thread, &turn_id).await?;
    let answer = app
        .turn_steer(&thread, &turn_id, vec![text("also mention bananas")])
        .await
        .context("turn/steer")?;
    ensure_eq!(answer, json!({"turnId": turn_id}), "turn/steer result");
    let turn = wait_turn(&app, started, Duration::from_secs(20)).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(
        turn.final_response(),
        "steered answer",
        "final response of the steered turn"
    );
    let requests = world.expect_requests(2).await?;
    check_steered_requests(&requests, &turn_id)?;
    check_steer_after_end(&app, &thread, &turn_id).await?;
    world.finish().await
}

/// Steers with an `expectedTurnId` that is not the running turn's: refused, naming the running
/// turn.
async fn refuse_wrong_turn(app: &AppServer, thread: &str, turn_id: &str) -> anyhow::Result<()> {
    let wrong = rpc_error(
        app.turn_steer(thread, "not-the-running-turn", vec![text("ignored")])
            .await,
        "turn/steer with a wrong expectedTurnId",
    )?;
    ensure_eq!(
        wrong.code,
        RpcError::INVALID_REQUEST,
        "error code of a steer with a wrong expectedTurnId"
    );
    ensure!(
        wrong.message.contains(turn_id),
        "a steer with a wrong expectedTurnId does not name the running turn: {}",
        wrong.message
    );
    Ok(())
}

/// Asserts the steered turn's requests: the steer as the last user text, the original prompt
/// kept, and the one turn's id in every request's turn metadata.
fn check_steered_requests(requests: &[CapturedRequest], turn_id: &str) -> anyhow::Result<()> {
    ensure_eq!(
        requests[1].last_user_text(),
        Some("also mention bananas".to_string()),
        "last user text of request 2"
    );
    ensure!(
        requests[1]
            .message_input_texts("user")
            .iter()
            .any(|t| t == "write a fruit list"),
        "request 2 lost the original prompt"
    );
    for r in requests {
        ensure_eq!(
            metadata_turn_id(r)?,
            turn_id,
            "turn_id in request #{}'s turn metadata",
            r.index
        );
    }
    Ok(())
}

/// Asserts the steer made no turn of its own, then that steering the ended turn is refused.
async fn check_steer_after_end(app: &AppServer, thread: &str, turn_id: &str) -> anyhow::Result<()> {
    let turn_starts = app
        .messages()
        .iter()
        .filter(|m| m.is("turn/started"))
        .count();
    ensure_eq!(turn_starts, 1, "turn/started notifications");
    let idle = rpc_error(
        app.turn_steer(thread, turn_id, vec![text("too late")])
            .await,
        "turn/steer with no running turn",
    )?;
    ensure!(
        idle.message.contains("no active turn to steer"),
        "turn/steer with no running turn: {}",
        idle.message
    );
    Ok(())
}

async fn image_input(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        Scripted::sse(bodies::assistant_reply("resp-url", "a pixel")),
        Scripted::sse(bodies::assistant_reply("resp-local", "a local pixel")),
    ];
    let (world, app, thread) = setup(ctx, script).await?;
    let pixel = png::one_pixel([255, 0, 0, 255]);
    let url = format!(
        "data:image/png;base64,{}",
        codex_parity_sidecar::base64::encode(&pixel)
    );
    let first = run_turn(
        &app,
        &thread,
        vec![text("describe this"), json!({"type": "image", "url": url})],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(first.status, TurnStatus::Completed, "image turn status");
    let path = world.workspace.join("pixel.png");
    std::fs::write(&path, &pixel).with_context(|| format!("writing {}", path.display()))?;
    let second = run_turn(
        &app,
        &thread,
        vec![
            text("describe the file"),
            json!({"type": "localImage", "path": path.display().to_string()}),
        ],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(
        second.status,
        TurnStatus::Completed,
        "localImage turn status"
    );
    let requests = world.expect_requests(2).await?;
    let last = last_user_message(&requests[0])?;
    ensure!(
        parts_of(&last, "input_text").contains(&"describe this".to_string()),
        "request 1's last user message has no input_text \"describe this\": {last}"
    );
    ensure_eq!(
        parts_of(&last, "input_image"),
        vec![url.clone()],
        "request 1's input_image urls"
    );
    let last = last_user_message(&requests[1])?;
    let images = parts_of(&last, "input_image");
    ensure_eq!(images.len(), 1, "request 2's input_image parts: {last}");
    ensure!(
        images[0].starts_with("data:image/png;base64,"),
        "localImage url: {}",
        images[0]
    );
    ensure!(
        parts_of(&last, "input_text")
            .iter()
            .any(|t| t == "describe the file"),
        "request 2's last user message has no input_text \"describe the file\": {last}"
    );
    world.finish().await
}

/// The last user `message` item of a request's input.
fn last_user_message(r: &CapturedRequest) -> anyhow::Result<Value> {
    r.input()?
        .iter()
        .rev()
        .find(|i| i["type"] == "message" && i["role"] == "user")
        .cloned()
        .with_context(|| format!("request #{} has no user message", r.index))
}

/// The texts (`input_text`) or urls (`input_image`) of a message's parts of `kind`.
fn parts_of(message: &Value, kind: &str) -> Vec<String> {
    let key = if kind == "input_image" {
        "image_url"
    } else {
        "text"
    };
    message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"] == kind)
        .filter_map(|p| p[key].as_str().map(String::from))
        .collect()
}
