//! Group B, the turns codex runs by itself for an `active` goal (`parity-scenarios.md` B7,
//! B8, B13–B16): how a continuation is asked for, how it ends (`update_goal`, budget,
//! failure, interrupt, no activity) and what it costs.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::events::Usage;
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::goal::{
    await_settle, bootstrap, continuation_started, goal, goal_becomes, no_turn_within,
    script_settle,
};
use crate::app_server::turn::TurnStatus;
use crate::app_server::{AppServer, Inbound};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::scenario;

/// The usage of every costed reply: 100 input (20 cached) + 7 output = 87 goal tokens.
const USAGE: Usage = Usage {
    input: 100,
    cached: 20,
    output: 7,
    reasoning: 0,
    total: 107,
};

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!("goal_continuation_ends_with_update_goal", "B7", "an active goal runs turns until update_goal completes it", continuation)
        .applies(Capabilities::needs_goals),
        scenario!("goal_budget_exhaustion_stops_at_budget_limited", "B8", "continuations stop at budgetLimited after exactly the budget's worth of turns", budget_exhaustion)
        .applies(Capabilities::needs_goals),
        scenario!("goal_edit_objective_keeps_usage_and_created_at", "B13", "editing the objective keeps tokensUsed, createdAt and the budget", edit_objective)
        .applies(Capabilities::needs_goals),
        scenario!("goal_edit_objective_keeps_usage_of_a_plain_continuation", "B13a", "B13 with deterministic usage: a plain costed continuation, then a zero-usage settle", edit_objective_deterministic)
        .applies(Capabilities::needs_goals),
        scenario!("goal_failing_continuation_blocks_goal", "B14", "a failed continuation blocks the goal (server_error) or limits it (insufficient_quota)", failing_continuation)
        .applies(Capabilities::needs_stopped_statuses),
        scenario!("goal_interrupted_continuation_pauses_goal", "B15", "interrupting a continuation pauses the goal", interrupted_continuation)
        .applies(Capabilities::needs_goals),
        scenario!("goal_three_empty_continuations_block_goal", "B16", "three continuations without activity block the goal", empty_continuations)
        .applies(Capabilities::needs_stopped_statuses),
    ]
}

/// Waits until every turn started at or after `from` has completed; returns their
/// `turn/completed` messages in start order.
async fn all_completed(app: &AppServer, from: usize) -> anyhow::Result<Vec<Inbound>> {
    let mut done = Vec::new();
    let log = app.messages();
    for started in log.iter().skip(from).filter(|m| m.is("turn/started")) {
        let id = started.turn_id().unwrap_or_default().to_string();
        let completed = app
            .wait_for(
                started.index,
                Duration::from_secs(20),
                &format!("turn/completed of continuation {id}"),
                |m| m.is("turn/completed") && m.turn_id() == Some(id.as_str()),
            )
            .await?;
        done.push(completed);
    }
    Ok(done)
}

/// The goal of the last `thread/goal/updated` at or after `from`.
fn last_goal_update(app: &AppServer, from: usize) -> anyhow::Result<Value> {
    app.messages()
        .into_iter()
        .skip(from)
        .rfind(|m| m.is("thread/goal/updated"))
        .map(|m| m.params()["goal"].clone())
        .context("no thread/goal/updated arrived")
}

async fn continuation(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = bootstrap(ctx).await?;
    script_settle(&world, 1).await?;
    let cursor = app.cursor();
    app.goal_set(&thread, json!({"objective": "Improve benchmark coverage"}))
        .await?;
    let turn = await_settle(&app, cursor).await?;
    // turn/started, then the goal completes, then turn/completed of the same turn.
    let log = app.messages();
    let position = |pred: &dyn Fn(&Inbound) -> bool| log.iter().skip(cursor).position(pred);
    let started = position(&|m| m.is("turn/started"));
    let complete =
        position(&|m| m.is("thread/goal/updated") && m.params()["goal"]["status"] == "complete");
    let completed = position(&|m| m.is("turn/completed") && m.turn_id() == Some(turn.as_str()));
    ensure!(
        started < complete && complete < completed,
        "expected turn/started, then the goal complete, then turn/completed; positions {started:?}, {complete:?}, {completed:?}"
    );
    ensure_eq!(
        goal(&app.goal_get(&thread).await?)?["status"],
        json!("complete"),
        "get status"
    );
    let requests = world.expect_requests(3).await?;
    let r2 = &requests[1];
    let meta = r2.turn_metadata()?;
    if meta["turn_trigger"] != json!("goal") {
        ctx.drift(
            "goal.continuation_turn_trigger",
            meta["turn_trigger"].clone(),
            format!(
                "the continuation request's x-codex-turn-metadata has turn_trigger {} instead of \"goal\"",
                meta["turn_trigger"]
            ),
        );
    }
    ensure!(
        r2.body_contains_text("Improve benchmark coverage"),
        "request 2 lacks the objective"
    );
    let last = r2.last_user_text().unwrap_or_default();
    ensure!(
        last.contains("Continue working toward the active thread goal."),
        "request 2's last user message does not ask to continue the goal: {last}"
    );
    if !last.starts_with("<codex_internal_context source=\"goal\">") {
        let start: String = last.chars().take(40).collect();
        // The opening tag (or the first words when there is none) identifies the wrapper.
        let opening = match last.find('>') {
            Some(end) if last.starts_with('<') => last[..=end].to_string(),
            _ => start.clone(),
        };
        ctx.drift(
            "goal.continuation_prompt_wrapper",
            json!(opening),
            format!(
                "the continuation's last user message starts {start:?}, not with <codex_internal_context source=\"goal\">"
            ),
        );
    }
    ensure!(
        r2.tool_names().iter().any(|t| t == "update_goal"),
        "request 2 does not offer update_goal"
    );
    ensure!(
        requests[2].function_call_output("call-goal-1").is_ok(),
        "request 3 lacks the update_goal output"
    );
    world.finish().await
}

async fn budget_exhaustion(ctx: &Ctx) -> anyhow::Result<()> {
    const TURNS: usize = 12;
    let (world, app, thread) = bootstrap(ctx).await?;
    let script = (1..=TURNS)
        .map(|n| {
            Scripted::sse(bodies::costed_reply(
                &format!("resp-budget-{n}"),
                &format!("msg-budget-{n}"),
                "working",
                USAGE,
            ))
        })
        .collect();
    world.script(script).await?;
    let cursor = app.cursor();
    app.goal_set(
        &thread,
        json!({"objective": "Spend the budget", "tokenBudget": 1000}),
    )
    .await?;
    goal_becomes(&app, cursor, "budgetLimited", Duration::from_secs(30)).await?;
    let completed = all_completed(&app, cursor).await?;
    no_turn_within(&app, app.cursor(), Duration::from_secs(1)).await?;
    ensure_eq!(completed.len(), TURNS, "continuation turns");
    for done in &completed {
        ensure_eq!(
            done.params()["turn"]["status"],
            json!(TurnStatus::Completed),
            "continuation status"
        );
    }
    let last = last_goal_update(&app, cursor)?;
    ensure_eq!(last["status"], json!("budgetLimited"), "last goal status");
    ensure_eq!(last["tokensUsed"], json!(87 * TURNS), "last tokensUsed");
    let requests = world.expect_requests(TURNS + 1).await?;
    for needle in [
        "Tokens used: 87",
        "Token budget: 1000",
        "Tokens remaining: 913",
    ] {
        ensure!(
            requests[2].body_contains_text(needle),
            "the 2nd continuation request lacks {needle:?}"
        );
    }
    let got = app.goal_get(&thread).await?;
    let g = goal(&got)?;
    ensure_eq!(
        (&g["status"], &g["tokensUsed"], &g["tokenBudget"]),
        (&json!("budgetLimited"), &json!(87 * TURNS), &json!(1000)),
        "get (status, tokensUsed, tokenBudget)"
    );
    world.finish().await
}

/// B13 as catalogued: both settle bodies report `USAGE`, so `tokensUsed` should be 174.
/// Codex races `update_goal` completing the goal against the accounting of the same
/// responses (0 or 87 seen, never 174): that is drift `goal.tokens_used_after_settle` with
/// the value seen. The edit must keep whatever was counted, and the creation time and
/// budget (the headline claim).
async fn edit_objective(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = bootstrap(ctx).await?;
    world
        .script(vec![
            Scripted::sse(vec![
                events::response_created("resp-goal-1"),
                events::function_call("call-goal-1", "update_goal", "{\"status\":\"complete\"}"),
                events::completed_with_usage("resp-goal-1", USAGE),
            ]),
            Scripted::sse(bodies::costed_reply(
                "resp-goal-done-1",
                "msg-goal-done-1",
                "Goal complete.",
                USAGE,
            )),
        ])
        .await?;
    let cursor = app.cursor();
    app.goal_set(
        &thread,
        json!({"objective": "First objective", "tokenBudget": 100000}),
    )
    .await?;
    await_settle(&app, cursor).await?;
    let before = app.goal_get(&thread).await?;
    let before = goal(&before)?.clone();
    let used = before["tokensUsed"].clone();
    if used != json!(2 * 87) {
        ctx.drift(
            "goal.tokens_used_after_settle",
            used.clone(),
            format!(
                "tokensUsed after a settle whose two replies report 87 goal tokens each is {used}, not 174 (update_goal races the accounting)"
            ),
        );
    }
    edit_and_check(&app, &thread, &before, &used).await?;
    world.expect_requests(3).await?;
    world.finish().await
}

/// The B13 edit: `set {objective:"Second objective", status:"paused"}` changes the
/// objective and keeps `tokensUsed` (`used`), `createdAt` and the budget.
async fn edit_and_check(
    app: &AppServer,
    thread: &str,
    before: &Value,
    used: &Value,
) -> anyhow::Result<()> {
    let edited = app
        .goal_set(
            thread,
            json!({"objective": "Second objective", "status": "paused"}),
        )
        .await?;
    let g = goal(&edited)?;
    ensure_eq!(
        g["objective"],
        json!("Second objective"),
        "edited objective"
    );
    ensure_eq!(g["status"], json!("paused"), "edited status");
    ensure_eq!(g["tokensUsed"], *used, "tokensUsed after the edit");
    ensure_eq!(
        g["createdAt"],
        before["createdAt"],
        "createdAt after the edit"
    );
    ensure_eq!(
        g["tokenBudget"],
        json!(100000),
        "tokenBudget after the edit"
    );
    Ok(())
}

/// B13a, the deterministic variant of B13 (not the catalogue's recipe): the tokens are
/// spent by a plain continuation first (87, exact), then a zero-usage settle ends the goal,
/// so `tokensUsed` does not depend on the race B13 reports.
async fn edit_objective_deterministic(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = bootstrap(ctx).await?;
    world
        .script(vec![Scripted::sse(bodies::costed_reply(
            "resp-work",
            "msg-work",
            "working",
            USAGE,
        ))])
        .await?;
    script_settle(&world, 1).await?;
    let cursor = app.cursor();
    app.goal_set(
        &thread,
        json!({"objective": "First objective", "tokenBudget": 100000}),
    )
    .await?;
    goal_becomes(&app, cursor, "complete", Duration::from_secs(20)).await?;
    let completed = all_completed(&app, cursor).await?;
    ensure_eq!(completed.len(), 2, "continuation turns");
    no_turn_within(&app, app.cursor(), Duration::from_secs(1)).await?;
    let before = app.goal_get(&thread).await?;
    let before = goal(&before)?.clone();
    ensure_eq!(
        before["tokensUsed"],
        json!(87),
        "tokensUsed before the edit"
    );
    edit_and_check(&app, &thread, &before, &json!(87)).await?;
    world.expect_requests(4).await?;
    world.finish().await
}

async fn failing_continuation(ctx: &Ctx) -> anyhow::Result<()> {
    let cases = [
        (
            "server_error",
            "goal model failed",
            "stream disconnected before completion: goal model failed",
            "blocked",
        ),
        (
            "insufficient_quota",
            "You exceeded your current quota.",
            "Quota exceeded. Check your plan and billing details.",
            "usageLimited",
        ),
    ];
    for (code, message, expected, status) in cases {
        let (world, app, thread) = bootstrap(ctx).await?;
        world
            .script(vec![Scripted::sse(bodies::failed_reply(
                "resp-fail",
                code,
                message,
            ))])
            .await?;
        let cursor = app.cursor();
        app.goal_set(&thread, json!({"objective": "Fail softly"}))
            .await?;
        let key = format!("goal.{code}.unstopped");
        let wait = Duration::from_secs(15);
        if !becomes_or_drift(ctx, (&app, &thread), cursor, status, 1, wait, &key)
            .await
            .with_context(|| format!("case {code}"))?
        {
            world
                .finish()
                .await
                .with_context(|| format!("case {code}"))?;
            continue;
        }
        let completed = all_completed(&app, cursor).await?;
        ensure_eq!(completed.len(), 1, "{code}: continuation turns");
        ensure_eq!(
            completed[0].params()["turn"]["status"],
            json!(TurnStatus::Failed),
            "{code}: continuation status"
        );
        let error = app
            .messages()
            .into_iter()
            .skip(cursor)
            .find(|m| m.is("error") && m.params()["willRetry"] == json!(false))
            .with_context(|| format!("{code}: no error with willRetry false"))?;
        ensure_eq!(
            error.params()["error"]["message"],
            json!(expected),
            "{code}: error message"
        );
        no_turn_within(&app, app.cursor(), Duration::from_secs(1)).await?;
        ensure_eq!(
            goal(&app.goal_get(&thread).await?)?["status"],
            json!(status),
            "{code}: get status"
        );
        world.expect_requests(2).await?;
        world
            .finish()
            .await
            .with_context(|| format!("case {code}"))?;
    }
    Ok(())
}

async fn interrupted_continuation(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = bootstrap(ctx).await?;
    world
        .script(vec![
            Scripted::sse(bodies::assistant_reply("resp-slow", "too late")).delay_ms(5000),
        ])
        .await?;
    let cursor = app.cursor();
    app.goal_set(&thread, json!({"objective": "Be interrupted"}))
        .await?;
    let (started, turn) = continuation_started(&app, cursor).await?;
    // The request must be in flight before the interrupt.
    world
        .requests_arrived(2, Duration::from_secs(5))
        .await
        .context("waiting for the continuation's request")?;
    ensure_eq!(
        app.turn_interrupt(&thread, &turn).await?,
        json!({}),
        "turn/interrupt result"
    );
    let done = app
        .wait_for(
            started.index,
            Duration::from_secs(1),
            "turn/completed within 1 s of the interrupt",
            |m| m.is("turn/completed") && m.turn_id() == Some(turn.as_str()),
        )
        .await?;
    ensure_eq!(
        done.params()["turn"]["status"],
        json!(TurnStatus::Interrupted),
        "continuation status"
    );
    let paused = goal_becomes(&app, cursor, "paused", Duration::from_secs(2))
        .await
        .is_ok();
    let status = goal(&app.goal_get(&thread).await?)?["status"].clone();
    if paused {
        ensure_eq!(status, json!("paused"), "get status");
    } else {
        ctx.drift(
            "goal.interrupt_leaves_status",
            status.clone(),
            format!(
                "the goal is not paused after its continuation was interrupted: get says {status}"
            ),
        );
    }
    no_turn_within(&app, done.index + 1, Duration::from_secs(1)).await?;
    world.expect_requests(2).await?;
    world.finish().await
}

/// Waits up to `wait` for the goal to become `status`: true when it does. When instead
/// continuation number `limit + 1` starts first, nothing stops the goal on this codex (0.132
/// to 0.137 start continuation after continuation for ever): that is drift `key` (the
/// number of the continuation that started), and so that the run ends the same way each
/// time the goal is cleared and that continuation interrupted and waited for; false.
async fn becomes_or_drift(
    ctx: &Ctx,
    (app, thread): (&AppServer, &str),
    cursor: usize,
    status: &str,
    limit: usize,
    wait: Duration,
    key: &str,
) -> anyhow::Result<bool> {
    let deadline = tokio::time::Instant::now() + wait;
    let (mut from, mut started) = (cursor, 0);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let seen = app
            .wait_for(from, left, "a goal update or a continuation", |m| {
                (m.is("thread/goal/updated") && m.params()["goal"]["status"] == status)
                    || m.is("turn/started")
            })
            .await
            .with_context(|| format!("the goal never became {status}"))?;
        if seen.is("thread/goal/updated") {
            return Ok(true);
        }
        started += 1;
        from = seen.index + 1;
        if started <= limit {
            continue;
        }
        ctx.drift(
            key,
            json!(started),
            format!("continuation {started} started: nothing made the goal {status}"),
        );
        let turn = seen
            .turn_id()
            .context("turn/started without a turn id")?
            .to_string();
        app.goal_clear(thread).await?;
        app.turn_interrupt(thread, &turn).await?;
        app.wait_for(
            seen.index,
            Duration::from_secs(10),
            "the interrupted continuation",
            |m| m.is("turn/completed") && m.turn_id() == Some(turn.as_str()),
        )
        .await?;
        return Ok(false);
    }
}

async fn empty_continuations(ctx: &Ctx) -> anyhow::Result<()> {
    const TURNS: usize = 3;
    let (world, app, thread) = bootstrap(ctx).await?;
    let script = (1..=TURNS)
        .map(|n| Scripted::sse(bodies::empty_response(&format!("resp-empty-{n}"))))
        .collect();
    world.script(script).await?;
    let cursor = app.cursor();
    app.goal_set(&thread, json!({"objective": "Finish the work"}))
        .await?;
    let (key, wait) = (
        "goal.empty_continuations.unstopped",
        Duration::from_secs(20),
    );
    if !becomes_or_drift(
        ctx,
        (&app, &thread),
        cursor,
        "blocked",
        TURNS + 1,
        wait,
        key,
    )
    .await?
    {
        return world.finish().await;
    }
    let completed = all_completed(&app, cursor).await?;
    no_turn_within(&app, app.cursor(), Duration::from_secs(1)).await?;
    let statuses: Vec<Value> = completed
        .iter()
        .map(|m| m.params()["turn"]["status"].clone())
        .collect();
    let mut expected = vec![json!(TurnStatus::Completed); TURNS];
    if completed.len() == TURNS + 1 {
        // No rule: a 4th continuation runs, its request is unscripted (the sidecar's 500
        // names it) and that failure is what blocks the goal.
        ctx.drift(
            "goal.continuations_before_block",
            json!(completed.len()),
            format!(
                "codex started continuation {} after {TURNS} empty ones instead of blocking the goal",
                TURNS + 1
            ),
        );
        expected.push(json!(TurnStatus::Failed));
    }
    ensure_eq!(statuses, expected, "continuation turn statuses");
    world.expect_requests(completed.len() + 1).await?;
    world.finish().await
}
