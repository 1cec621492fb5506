//! Reasoning events (`parity-scenarios.md` E13): a reasoning item streamed by the model
//! reaches the client as summary deltas and a completed `reasoning` item, and goes back to
//! the model in the next request; and (H34) a second summary part and raw reasoning text.
//!
//! The stream opens the reasoning item with `response.output_item.added` before the
//! summary delta, as the Responses API does: without it no version routes the delta (the
//! catalogue's script omits it; 0.131.0, 0.161.0 and 0.171.0 then send no
//! `item/reasoning/summaryTextDelta`).

use anyhow::Context;
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::json;

use super::setup;
use crate::app_server::turn::{Turn, TurnOptions, TurnStatus, run_turn, text};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "reasoning_events_and_echo",
            "E13",
            "reasoning summary deltas and item reach the client; the item goes back to the \
             model",
            reasoning
        ),
        scenario!(
            "reasoning_summary_parts_and_raw_text",
            "H34",
            "a reasoning item streamed with a second summary part \
             (response.reasoning_summary_part.added) and raw reasoning text deltas reaches \
             the client as item/reasoning/summaryPartAdded (itemId, summaryIndex 1) and \
             item/reasoning/textDelta (itemId, the delta, contentIndex 0), and the completed \
             item holds both summaries and the raw text",
            parts_and_raw
        )
        .applies(|c| {
            c.needs_notification(PART_ADDED)?;
            c.needs_notification(TEXT_DELTA)
        }),
    ]
}

/// The notification of a new reasoning summary part.
const PART_ADDED: &str = "item/reasoning/summaryPartAdded";

/// The notification of a raw reasoning text delta.
const TEXT_DELTA: &str = "item/reasoning/textDelta";

async fn parts_and_raw(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(vec![
        events::response_created("resp-1"),
        events::reasoning_item_added("rs-1", &[]),
        events::reasoning_summary_text_delta("first"),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs-1",
               "output_index": 0, "summary_index": 1,
               "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs-1",
               "delta": "second", "summary_index": 1}),
        events::reasoning_text_delta("raw thought"),
        events::reasoning_item("rs-1", &["first", "second"], &["raw thought"]),
        events::assistant_message("m1", "done"),
        events::completed("resp-1"),
    ])];
    let (world, app, thread) = setup(ctx, script).await?;
    let turn = run_turn(&app, &thread, vec![text("think")], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let parts: Vec<_> = turn
        .notifications(PART_ADDED)
        .into_iter()
        .map(|p| json!([p["itemId"], p["summaryIndex"]]))
        .collect();
    ctx.expect(
        "reasoning.summary_parts_added",
        json!([["rs-1", 1]]),
        json!(parts),
    );
    let raw: Vec<_> = turn
        .notifications(TEXT_DELTA)
        .into_iter()
        .map(|p| json!([p["itemId"], p["delta"], p["contentIndex"]]))
        .collect();
    ctx.expect(
        "reasoning.raw_text_deltas",
        json!([["rs-1", "raw thought", 0]]),
        json!(raw),
    );
    let items = turn.completed_items("reasoning");
    ensure_eq!(items.len(), 1, "completed reasoning items");
    ctx.expect(
        "reasoning.completed_item",
        json!({"summary": ["first", "second"], "content": ["raw thought"]}),
        json!({"summary": items[0]["summary"], "content": items[0]["content"]}),
    );
    world.expect_requests(1).await?;
    world.finish().await
}

/// The opaque reasoning state the mock hands codex.
const ENCRYPTED: &str = "opaque-reasoning-state";

async fn reasoning(ctx: &Ctx) -> anyhow::Result<()> {
    let script = reasoning_script();
    let (world, app, thread) = setup(ctx, script).await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("think first")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    check_reasoning_turn(&turn)?;
    let next = run_turn(
        &app,
        &thread,
        vec![text("and now?")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(next.status, TurnStatus::Completed, "second turn status");
    let requests = world.expect_requests(2).await?;
    check_echoed_reasoning(&requests)?;
    world.finish().await
}

/// The script: a reply with a reasoning item (summary and encrypted content), then a plain one.
fn reasoning_script() -> Vec<Scripted> {
    let mut item = events::reasoning_item("rs-1", &["thinking"], &[]);
    item["item"]["encrypted_content"] = json!(ENCRYPTED);
    vec![
        Scripted::sse(vec![
            events::response_created("resp-1"),
            events::reasoning_item_added("rs-1", &[]),
            events::reasoning_summary_text_delta("thinking"),
            item,
            events::assistant_message("m1", "done"),
            events::completed("resp-1"),
        ]),
        Scripted::sse(bodies::assistant_reply("resp-2", "again")),
    ]
}

/// Asserts the reasoning as the client sees it: the summary delta, the completed item, the reply.
fn check_reasoning_turn(turn: &Turn) -> anyhow::Result<()> {
    let deltas: Vec<_> = turn
        .notifications("item/reasoning/summaryTextDelta")
        .into_iter()
        .map(|p| {
            (
                p["itemId"].clone(),
                p["delta"].clone(),
                p["summaryIndex"].clone(),
            )
        })
        .collect();
    ensure_eq!(
        deltas,
        vec![(json!("rs-1"), json!("thinking"), json!(0))],
        "item/reasoning/summaryTextDelta (itemId, delta, summaryIndex)"
    );
    let items = turn.completed_items("reasoning");
    ensure_eq!(items.len(), 1, "completed reasoning items");
    ensure_eq!(items[0]["id"], json!("rs-1"), "reasoning item id");
    ensure_eq!(
        items[0]["summary"],
        json!(["thinking"]),
        "reasoning item summary"
    );
    ensure_eq!(turn.final_response(), "done", "final response");
    Ok(())
}

/// Asserts the reasoning item echoed back to the model in the second request, as it came.
fn check_echoed_reasoning(requests: &[CapturedRequest]) -> anyhow::Result<()> {
    let echoed = requests[1].inputs_of_type("reasoning");
    ensure_eq!(echoed.len(), 1, "reasoning items in request 2");
    let echoed = echoed[0];
    ensure_eq!(
        echoed["summary"],
        json!([{"type": "summary_text", "text": "thinking"}]),
        "echoed reasoning summary"
    );
    ensure_eq!(
        echoed
            .get("encrypted_content")
            .context("the echoed reasoning item has no encrypted_content")?
            .clone(),
        json!(ENCRYPTED),
        "echoed reasoning encrypted_content"
    );
    Ok(())
}
