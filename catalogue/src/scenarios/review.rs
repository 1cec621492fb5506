//! Review mode (group G): `review/start` on the uncommitted changes of a git workspace runs an
//! inline review turn: entered and exited review-mode items around the model's answer, whose
//! JSON findings codex renders as the review text (G24); a commit and a base branch as
//! targets (G25); detached delivery on a thread of its own where the schema has it (G26);
//! the targets codex refuses (G27).

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::setup_with;
use crate::app_server::AppServer;
use crate::app_server::client::Inbound;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::git;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;

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
        scenario!(
            "review_commit_and_base_branch_targets",
            "G25",
            "review/start on a commit and on a base branch: each is one inline review turn whose \
             prompt names the commit (sha and title) or the branch and its merge base, labelled \
             in the enteredReviewMode item",
            review_targets
        )
        .applies(|c| c.require_methods(&["review/start"])),
        scenario!(
            "review_detached_delivery",
            "G26",
            "delivery detached runs the review on a new thread (reviewThreadId, announced by \
             thread/started) and leaves the original thread without a turn",
            review_detached(json!({}))
        )
        .applies(needs_detached),
        scenario!(
            "review_detached_delivery_legacy_history",
            "G26a",
            "as G26 on a thread started with historyMode legacy, where the schema has history \
             modes (0.161.0 refuses detached reviews of its default, paginated threads)",
            review_detached(json!({"historyMode": "legacy"}))
        )
        .applies(|c| {
            needs_detached(c)?;
            if c.has_field("ThreadStartParams", "historyMode") {
                Ok(())
            } else {
                Err("this codex has no thread history modes (ThreadStartParams.historyMode)".into())
            }
        }),
        scenario!(
            "review_refusals",
            "G27",
            "review/start refuses an empty custom instruction, an empty branch, an empty sha and \
             an unknown thread with invalid-request errors, and sends the model nothing",
            review_refusals
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
    let done = review_completed(&app, cursor, &thread).await?;
    ensure_eq!(
        done.turn_id(),
        Some(review_turn.as_str()),
        "turn/completed's turn"
    );
    ensure_eq!(
        done.params()["turn"]["status"],
        json!(TurnStatus::Completed),
        "review turn status"
    );
    check_items(ctx, &app, cursor)?;
    check_turn_started(ctx, &app, cursor, &review_turn);
    let requests = world.expect_requests(1).await?;
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
    ctx.expect("review.guidelines_place", want, place);
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
    let got = json!(item_sequence(app, cursor));
    if got != want {
        // The same items, started and completed in the same order each, one item's
        // notifications between another's: a race inside codex, reported, not failed.
        ensure!(
            interleaved(&got, &want),
            "the review's item notifications: expected {want}, got {got}"
        );
        ctx.drift(
            "review.items_interleaved",
            json!(true),
            format!("the review's items arrived interleaved: {got}"),
        );
    }
    let id_of = |kind: &str| {
        app.messages()
            .iter()
            .skip(cursor)
            .filter(|m| m.is("item/completed") && m.params()["item"]["type"] == kind)
            .find_map(|m| m.params()["item"]["id"].as_str().map(String::from))
    };
    let same = id_of("enteredReviewMode") == id_of("exitedReviewMode");
    ctx.expect(
        "review.exited_item_shares_entered_id",
        json!(false),
        json!(same),
    );
    Ok(())
}

/// Whether `got` holds the notifications of `want` in another order that keeps the order of
/// the `item/started` notifications, that of the `item/completed` ones, and each item's
/// start before its completion.
fn interleaved(got: &Value, want: &Value) -> bool {
    let (Some(got), Some(want)) = (got.as_array(), want.as_array()) else {
        return false;
    };
    let only = |list: &[Value], method: &str| -> Vec<Value> {
        list.iter().filter(|n| n[0] == method).cloned().collect()
    };
    let started_before_completed = got.iter().enumerate().all(|(i, n)| {
        n[0] != "item/completed"
            || got[..i]
                .iter()
                .any(|s| s[0] == "item/started" && s[1] == n[1] && s[2] == n[2])
    });
    got.len() == want.len()
        && only(got, "item/started") == only(want, "item/started")
        && only(got, "item/completed") == only(want, "item/completed")
        && started_before_completed
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
    ctx.expect(
        "review.turn_started_names_review_turn",
        want,
        json!(started),
    );
}

/// `review/start` exists and its delivery can be `detached`.
fn needs_detached(c: &Capabilities) -> Result<(), String> {
    c.require_methods(&["review/start"])?;
    if c.enum_has("ReviewDelivery", "detached") {
        Ok(())
    } else {
        Err("this codex has no detached review delivery (ReviewDelivery is inline only)".into())
    }
}

/// The `turn/completed` of the review running on `review_thread` (looked for after `cursor`).
async fn review_completed(
    app: &AppServer,
    cursor: usize,
    review_thread: &str,
) -> anyhow::Result<Inbound> {
    let is_completed = |m: &Inbound| m.is("turn/completed") && m.thread_id() == Some(review_thread);
    app.wait_for(
        cursor,
        Duration::from_secs(20),
        "the review's turn/completed",
        is_completed,
    )
    .await
}

/// Runs one review of `target` on `thread` to its `turn/completed`; returns the review turn
/// and the `enteredReviewMode` item's label.
async fn run_review(
    app: &AppServer,
    thread: &str,
    target: Value,
) -> anyhow::Result<(Value, Option<String>)> {
    let cursor = app.cursor();
    let params = json!({"threadId": thread, "target": target});
    let result = app
        .call("review/start", params)
        .await
        .context("review/start")?;
    let review_thread = result["reviewThreadId"]
        .as_str()
        .context("no reviewThreadId")?
        .to_string();
    let done = review_completed(app, cursor, &review_thread).await?;
    ensure_eq!(
        done.params()["turn"]["status"],
        json!(TurnStatus::Completed),
        "review turn status"
    );
    let label = app
        .messages()
        .iter()
        .skip(cursor)
        .filter(|m| m.is("item/completed") && m.params()["item"]["type"] == "enteredReviewMode")
        .find_map(|m| m.params()["item"]["review"].as_str().map(String::from));
    Ok((result, label))
}

/// `text` with each `(value, placeholder)` replaced, so shas made at run time compare.
fn placeholders(text: &str, values: &[(&str, &str)]) -> String {
    values
        .iter()
        .fold(text.to_string(), |t, (value, name)| t.replace(value, name))
}

/// The commit a review of [`COMMIT_TITLE`] names.
const COMMIT_TITLE: &str = "Change the greeting";

async fn review_targets(ctx: &Ctx) -> anyhow::Result<()> {
    let answer = review_json().to_string();
    let script = vec![
        Scripted::sse(bodies::assistant_reply("resp-1", &answer)),
        Scripted::sse(bodies::assistant_reply("resp-2", &answer)),
    ];
    let options = WorldOptions {
        allow_autonomous_turns: true,
        allow_unpaired_turn_started: true,
        ..WorldOptions::default()
    };
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let base = git::init_repository(&world.workspace).await?;
    git::git(&world.workspace, &["checkout", "-q", "-b", "feature"]).await?;
    std::fs::write(world.workspace.join("README.md"), "changed\n").context("changing README.md")?;
    git::git(&world.workspace, &["commit", "-q", "-am", COMMIT_TITLE]).await?;
    let head = git::git(&world.workspace, &["rev-parse", "HEAD"]).await?;
    let short = head.get(..7).context("a short sha")?;
    let shas = [
        (head.as_str(), "<head>"),
        (base.as_str(), "<base>"),
        (short, "<head>"),
    ];

    let commit = json!({"type": "commit", "sha": head, "title": COMMIT_TITLE});
    let (_, commit_label) = run_review(&app, &thread, commit).await?;
    let branch = json!({"type": "baseBranch", "branch": "main"});
    let (_, branch_label) = run_review(&app, &thread, branch).await?;
    let requests = world.expect_requests(2).await?;
    let prompt = |i: usize| {
        requests[i]
            .last_user_text()
            .map(|t| placeholders(&t, &shas))
    };
    let labels = json!([commit_label.map(|l| placeholders(&l, &shas)), branch_label]);
    ctx.expect(
        "review.target_labels",
        json!([COMMIT_LABEL, "changes against 'main'"]),
        labels,
    );
    ctx.expect(
        "review.commit_prompt",
        json!(COMMIT_PROMPT),
        json!(prompt(0)),
    );
    ctx.expect(
        "review.base_branch_prompt",
        json!(BRANCH_PROMPT),
        json!(prompt(1)),
    );
    // Each review starts from a context of its own: the second carries only its own prompt.
    let prompts: Vec<String> = requests[1]
        .message_input_texts("user")
        .into_iter()
        .filter(|t| !t.starts_with('<'))
        .map(|t| placeholders(&t, &shas))
        .collect();
    ensure_eq!(
        prompts,
        vec![BRANCH_PROMPT.to_string()],
        "the user prompts of the second review's request (none of the first review's)"
    );
    ensure_eq!(
        requests[1].message_input_texts("assistant").len(),
        0,
        "assistant messages in the second review's request"
    );
    world.finish().await
}

/// The `enteredReviewMode` label of a commit review.
const COMMIT_LABEL: &str = "commit <head>: Change the greeting";

/// The prompt of a commit review.
const COMMIT_PROMPT: &str = "Review the code changes introduced by commit <head> \
     (\"Change the greeting\"). Provide prioritized, actionable findings.";

/// The prompt of a base-branch review.
const BRANCH_PROMPT: &str = "Review the code changes against the base branch 'main'. The \
     merge base commit for this comparison is <base>. Run `git diff <base>` to inspect the \
     changes relative to main. Provide prioritized, actionable findings.";

async fn review_detached(ctx: &Ctx, thread_params: Value) -> anyhow::Result<()> {
    let answer = review_json().to_string();
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-1", &answer))];
    let options = WorldOptions {
        allow_autonomous_turns: true,
        allow_unpaired_turn_started: true,
        ..WorldOptions::default()
    };
    let (world, app, thread, _) = setup_with(ctx, options, script, thread_params).await?;
    let cursor = app.cursor();
    let params = json!({
        "threadId": thread,
        "delivery": "detached",
        "target": {"type": "custom", "instructions": "Check the README."}
    });
    let result = match app.call("review/start", params).await {
        Ok(result) => result,
        Err(e) => {
            let refusal = e.rpc().map(|r| r.message.clone()).context("review/start")?;
            ctx.expect("review.detached_refused", Value::Null, json!(refusal));
            // The refusal leaves the thread usable: a plain turn takes the scripted reply.
            let opts = TurnOptions::default();
            let turn = run_turn(&app, &thread, vec![text("hello")], &opts).await?;
            ensure_eq!(
                turn.status,
                TurnStatus::Completed,
                "the turn after the refusal"
            );
            return world.finish().await;
        }
    };
    let review_thread = result["reviewThreadId"]
        .as_str()
        .context("no reviewThreadId")?
        .to_string();
    anyhow::ensure!(
        review_thread != thread,
        "detached review ran on the original thread {thread}"
    );
    review_completed(&app, cursor, &review_thread).await?;
    let messages = app.messages();
    let after = || messages.iter().skip(cursor);
    let announced = after()
        .any(|m| m.is("thread/started") && m.params()["thread"]["id"] == json!(review_thread));
    ensure_eq!(announced, true, "thread/started for the review thread");
    let original_turns = after()
        .filter(|m| m.is("turn/started") && m.thread_id() == Some(thread.as_str()))
        .count();
    ensure_eq!(original_turns, 0, "turns on the original thread");
    let notice: Vec<Value> = after()
        .filter(|m| m.is("deprecationNotice"))
        .map(|m| m.params()["summary"].clone())
        .collect();
    ctx.expect(
        "review.detached_deprecation_notice",
        json!([]),
        json!(notice),
    );
    let requests = world.expect_requests(1).await?;
    // The instructions reach the model, and nothing else is asked of it: the first line of
    // each user text after the environment context is the instructions alone.
    let home = world.home.to_string_lossy().to_string();
    let texts = requests[0].message_input_texts("user");
    let sent = texts.iter().any(|t| t.contains("Check the README."));
    ensure_eq!(sent, true, "the custom instructions in the review request");
    let first_lines: Vec<Value> = texts
        .iter()
        .filter(|t| !t.starts_with("<environment_context>"))
        .map(|t| {
            json!(
                t.lines()
                    .next()
                    .unwrap_or_default()
                    .replace(&home, "<codex_home>")
            )
        })
        .collect();
    ctx.expect(
        "review.detached_user_texts",
        json!(["Check the README."]),
        json!(first_lines),
    );
    world.finish().await
}

/// A thread id no thread has.
const UNKNOWN_THREAD: &str = "00000000-0000-7000-8000-000000000000";

async fn review_refusals(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = super::setup(ctx, Vec::new()).await?;
    let cases = [
        (
            "empty custom instructions",
            json!(thread),
            json!({"type": "custom", "instructions": "  "}),
        ),
        (
            "empty branch",
            json!(thread),
            json!({"type": "baseBranch", "branch": ""}),
        ),
        (
            "empty sha",
            json!(thread),
            json!({"type": "commit", "sha": ""}),
        ),
        (
            "unknown thread",
            json!(UNKNOWN_THREAD),
            json!({"type": "uncommittedChanges"}),
        ),
    ];
    let mut got = Vec::new();
    for (what, thread_id, target) in cases {
        let params = json!({"threadId": thread_id, "target": target});
        let error = super::rpc_error(app.call("review/start", params).await, what)?;
        got.push(json!([what, error.code, error.message]));
    }
    let want = json!([
        [
            "empty custom instructions",
            -32600,
            "instructions must not be empty"
        ],
        ["empty branch", -32600, "branch must not be empty"],
        ["empty sha", -32600, "sha must not be empty"],
        [
            "unknown thread",
            -32600,
            format!("thread not found: {UNKNOWN_THREAD}")
        ]
    ]);
    ctx.expect("review.refusals", want, json!(got));
    world.expect_requests(0).await?;
    world.finish().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_items_keep_each_kind_in_order() {
        let want = json!([
            ["item/started", "a", "1"],
            ["item/completed", "a", "1"],
            ["item/started", "b", "2"],
            ["item/completed", "b", "2"]
        ]);
        let race = json!([
            ["item/started", "a", "1"],
            ["item/started", "b", "2"],
            ["item/completed", "a", "1"],
            ["item/completed", "b", "2"]
        ]);
        assert!(interleaved(&race, &want));
        let reordered = json!([
            ["item/started", "b", "2"],
            ["item/started", "a", "1"],
            ["item/completed", "a", "1"],
            ["item/completed", "b", "2"]
        ]);
        assert!(!interleaved(&reordered, &want));
        let completed_first = json!([
            ["item/completed", "a", "1"],
            ["item/started", "a", "1"],
            ["item/started", "b", "2"],
            ["item/completed", "b", "2"]
        ]);
        assert!(!interleaved(&completed_first, &want));
        let missing = json!([["item/started", "a", "1"], ["item/completed", "a", "1"]]);
        assert!(!interleaved(&missing, &want));
    }
}
