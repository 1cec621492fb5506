//! Review mode (`parity-scenarios.md` G24): `review/start` on the uncommitted changes of a
//! git workspace runs an inline review turn: entered and exited review-mode items around the
//! model's answer, whose JSON findings codex renders as the review text.

use std::time::Duration;

use anyhow::Context;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::{expect, expect_requests, setup_with};
use crate::app_server::AppServer;
use crate::app_server::client::Inbound;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;
use crate::scenarios::support::git;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "review_uncommitted_changes",
            "G24",
            "review/start on uncommitted changes runs an inline review turn: enteredReviewMode, \
             the review prompt, exitedReviewMode with the findings rendered as text, and that \
             text as the final message",
            review_uncommitted
        )
        .applies(|c| c.require_methods(&["review/start"])),
    ]
}

/// The review the mock answers with, in the JSON shape review mode asks the model for.
fn review_json() -> Value {
    json!({
        "findings": [{
            "title": "[P1] Greeting lost",
            "body": "The README no longer greets.",
            "confidence_score": 0.9,
            "priority": 1,
            "code_location": {
                "absolute_file_path": "README.md",
                "line_range": {"start": 1, "end": 1}
            }
        }],
        "overall_correctness": "patch is incorrect",
        "overall_explanation": "It drops the greeting.",
        "overall_confidence_score": 0.8
    })
}

/// The review text codex renders from [`review_json`].
const RENDERED: &str = "It drops the greeting.\n\nReview comment:\n\n\
     - [P1] Greeting lost — README.md:1-1\n  The README no longer greets.";

/// The prompt review mode sends for uncommitted changes.
const PROMPT: &str = "Review the current code changes (staged, unstaged, and untracked files) \
     and provide prioritized findings.";

/// `[method, item type, text]` of the item notifications after `from`, in order (the text is
/// the item's `review`, its user text or its message text).
fn item_sequence(app: &AppServer, from: usize) -> Vec<Value> {
    let describe = |m: &Inbound| {
        let item = &m.params()["item"];
        let text = match item["type"].as_str() {
            Some("userMessage") => item["content"][0]["text"].clone(),
            Some("agentMessage") => item["text"].clone(),
            _ => item["review"].clone(),
        };
        json!([m.method(), item["type"], text])
    };
    app.messages()
        .iter()
        .skip(from)
        .filter(|m| m.is("item/started") || m.is("item/completed"))
        .map(describe)
        .collect()
}

async fn review_uncommitted(ctx: &Ctx) -> anyhow::Result<()> {
    let answer = review_json().to_string();
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-1", &answer))];
    // review/start's turn/started names an inner turn that never completes (checked below).
    let options = WorldOptions {
        allow_autonomous_turns: true,
        allow_unpaired_turn_started: true,
        ..WorldOptions::default()
    };
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    git::init_repository(&world.workspace).await?;
    std::fs::write(world.workspace.join("README.md"), "changed\n").context("changing README.md")?;
    let cursor = app.cursor();
    let params = json!({"threadId": thread, "target": {"type": "uncommittedChanges"}});
    let result = app
        .call("review/start", params)
        .await
        .context("review/start")?;
    ensure_eq!(
        result["reviewThreadId"],
        json!(thread),
        "reviewThreadId (inline)"
    );
    let review_turn = result["turn"]["id"]
        .as_str()
        .context("no turn id")?
        .to_string();
    let shown = &result["turn"]["items"][0];
    ensure_eq!(
        json!([shown["type"], shown["content"][0]["text"]]),
        json!(["userMessage", "current changes"]),
        "the review turn's item in the review/start result"
    );
    let is_completed = |m: &Inbound| m.is("turn/completed") && m.thread_id() == Some(&thread);
    let done = app
        .wait_for(
            cursor,
            Duration::from_secs(20),
            "the review's turn/completed",
            is_completed,
        )
        .await?;
    ensure_eq!(
        done.turn_id(),
        Some(review_turn.as_str()),
        "turn/completed's turn"
    );
    ensure_eq!(
        done.params()["turn"]["status"],
        json!("completed"),
        "review turn status"
    );
    check_items(ctx, &app, cursor)?;
    check_turn_started(ctx, &app, cursor, &review_turn);
    let requests = expect_requests(&world, 1).await?;
    let r = &requests[0];
    ensure_eq!(
        r.last_user_text().as_deref(),
        Some(PROMPT),
        "the review prompt"
    );
    let in_instructions = r
        .instructions_text()
        .is_some_and(|t| t.starts_with("# Review guidelines:"));
    let in_developer = r
        .message_input_texts("developer")
        .iter()
        .any(|t| t.starts_with("# Review guidelines:"));
    let place = json!({"instructions": in_instructions, "developer": in_developer});
    let want = json!({"instructions": true, "developer": false});
    expect(ctx, "review.guidelines_place", want, place);
    world.finish().await
}

/// The review's items: entered, the prompt, the model's JSON (started, never completed),
/// exited with the rendered review, the rendered review as the final message; the exited
/// item has an id of its own.
fn check_items(ctx: &Ctx, app: &AppServer, cursor: usize) -> anyhow::Result<()> {
    let answer = review_json().to_string();
    let want = json!([
        ["item/started", "enteredReviewMode", "current changes"],
        ["item/completed", "enteredReviewMode", "current changes"],
        ["item/started", "userMessage", PROMPT],
        ["item/completed", "userMessage", PROMPT],
        ["item/started", "agentMessage", answer],
        ["item/started", "exitedReviewMode", RENDERED],
        ["item/completed", "exitedReviewMode", RENDERED],
        ["item/started", "agentMessage", RENDERED],
        ["item/completed", "agentMessage", RENDERED]
    ]);
    ensure_eq!(
        json!(item_sequence(app, cursor)),
        want,
        "the review's item notifications"
    );
    let id_of = |kind: &str| {
        app.messages()
            .iter()
            .skip(cursor)
            .filter(|m| m.is("item/completed") && m.params()["item"]["type"] == kind)
            .find_map(|m| m.params()["item"]["id"].as_str().map(String::from))
    };
    let same = id_of("enteredReviewMode") == id_of("exitedReviewMode");
    expect(
        ctx,
        "review.exited_item_shares_entered_id",
        json!(false),
        json!(same),
    );
    Ok(())
}

/// `turn/started` of the review names the turn review/start returned (the contract every
/// turn keeps); codex names an inner turn instead, linked by `rootTurnId` where it has one.
fn check_turn_started(ctx: &Ctx, app: &AppServer, cursor: usize, review_turn: &str) {
    let started: Vec<Value> = app
        .messages()
        .iter()
        .skip(cursor)
        .filter(|m| m.is("turn/started"))
        .map(|m| {
            let turn = &m.params()["turn"];
            let root = turn["rootTurnId"].as_str().map(|r| r == review_turn);
            json!({"sameId": turn["id"] == review_turn, "rootIsReviewTurn": root})
        })
        .collect();
    let want = json!([{"sameId": true, "rootIsReviewTurn": null}]);
    expect(
        ctx,
        "review.turn_started_names_review_turn",
        want,
        json!(started),
    );
}
