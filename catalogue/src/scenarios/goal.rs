//! Group B: goal operations (`parity-scenarios.md` B1–B6, B9–B12; continuations are in
//! `goal_continuation`). Goals differ by version: where
//! the schema marks `thread/goal/*` experimental, the `goals` feature is off by default and
//! is enabled with `--enable goals`; statuses come from the schema's `ThreadGoalStatus`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::{rpc_error, setup_with};
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::app_server::{AppServer, Inbound};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{World, WorldOptions};
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "goal_set_get_clear_round_trip",
            "B1",
            "set, pause, resume, get, clear twice",
            round_trip
        )
        .golden_transcript()
        .applies(Capabilities::needs_goals),
        scenario!(
            "goal_set_preserves_null_token_budget",
            "B2",
            "an explicit null budget stays null",
            null_budget
        )
        .applies(Capabilities::needs_goals),
        scenario!(
            "goal_budget_absent_keeps_null_clears",
            "B3",
            "absent keeps the budget, null clears it, 0 and -1 are refused",
            budget_semantics
        )
        .applies(Capabilities::needs_goals),
        scenario!(
            "goal_set_preserves_budget_limited_same_objective",
            "B4",
            "re-setting the objective keeps budgetLimited",
            budget_limited_kept
        )
        .applies(Capabilities::needs_goals),
        scenario!(
            "goal_set_persists_resumable_stopped_statuses",
            "B5",
            "blocked and usageLimited persist",
            stopped_statuses
        )
        .applies(Capabilities::needs_stopped_statuses),
        scenario!(
            "goal_on_thread_before_first_turn",
            "B6",
            "a goal can be set before the first turn",
            goal_first
        )
        .applies(Capabilities::needs_goals),
        scenario!(
            "goal_refused_on_ephemeral_thread",
            "B9",
            "ephemeral threads refuse goals",
            ephemeral
        )
        .applies(Capabilities::needs_goals),
        scenario!(
            "goal_availability_gates",
            "B10",
            "goals need experimentalApi and the goals feature where the schema says so",
            availability_gates
        )
        .applies(Capabilities::needs_goals),
        scenario!(
            "goal_paused_survives_restart",
            "B11",
            "a paused goal survives an app-server restart",
            survives_restart
        )
        .applies(Capabilities::needs_goals),
        scenario!(
            "goal_invalid_input_rejected",
            "B12",
            "empty, over-long objectives and unknown statuses are refused; nothing changes",
            invalid_input
        )
        .applies(Capabilities::needs_goals),
    ]
}

/// World options for goals: autonomous turns allowed, the feature enabled where it is
/// experimental in this binary.
pub(super) fn goal_options(caps: &Capabilities) -> WorldOptions {
    let mut options = WorldOptions {
        allow_autonomous_turns: true,
        ..Default::default()
    };
    if caps.is_experimental("thread/goal/set") {
        options.extra_args = vec!["--enable".into(), "goals".into()];
    }
    options
}

/// A goal world with a bootstrapped thread (§0.6): 1 request.
pub(super) async fn bootstrap(ctx: &Ctx) -> anyhow::Result<(World, Arc<AppServer>, String)> {
    let script = vec![Scripted::sse(bodies::assistant_reply(
        "resp-boot",
        "thread ready",
    ))];
    let (world, app, thread, _) =
        setup_with(ctx, goal_options(&ctx.caps), script, json!({})).await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("bootstrap a goal thread")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "bootstrap turn status");
    Ok((world, app, thread))
}

/// Queues the two settle bodies (§0.5); call before the `set` that leaves the goal active.
pub(super) async fn script_settle(world: &World, n: usize) -> anyhow::Result<()> {
    let (call, done) = (format!("resp-goal-{n}"), format!("resp-goal-done-{n}"));
    world
        .script(vec![
            Scripted::sse(bodies::function_call_reply(
                &call,
                &format!("call-goal-{n}"),
                "update_goal",
                "{\"status\":\"complete\"}",
            )),
            Scripted::sse(bodies::assistant_reply(&done, "Goal complete.")),
        ])
        .await
}

/// Waits for the continuation turn started after `cursor` to complete with the goal
/// `complete`, then checks that no other turn starts within 1 s. Returns the turn id.
pub(super) async fn await_settle(app: &AppServer, cursor: usize) -> anyhow::Result<String> {
    let (_, turn) = continuation_started(app, cursor).await?;
    let done = app
        .wait_for(
            cursor,
            Duration::from_secs(20),
            "the continuation's turn/completed",
            |m| m.is("turn/completed") && m.turn_id() == Some(turn.as_str()),
        )
        .await?;
    ensure_eq!(
        done.params()["turn"]["status"],
        json!(TurnStatus::Completed),
        "continuation turn status"
    );
    goal_becomes(app, cursor, "complete", Duration::from_secs(5)).await?;
    no_turn_within(app, done.index + 1, Duration::from_secs(1)).await?;
    Ok(turn)
}

/// Waits for the continuation turn codex starts after `cursor` (an active goal was set);
/// returns its `turn/started` and the turn id.
pub(super) async fn continuation_started(
    app: &AppServer,
    cursor: usize,
) -> anyhow::Result<(Inbound, String)> {
    let started = app
        .wait_notification(cursor, "turn/started", Duration::from_secs(15), |_| true)
        .await
        .context("no continuation turn started after an active goal was set")?;
    let turn = started
        .turn_id()
        .context("turn/started without a turn id")?
        .to_string();
    Ok((started, turn))
}

/// Waits for a `thread/goal/updated` with `status` at or after `from`.
pub(super) async fn goal_becomes(
    app: &AppServer,
    from: usize,
    status: &str,
    timeout: Duration,
) -> anyhow::Result<Inbound> {
    app.wait_notification(from, "thread/goal/updated", timeout, |p| {
        p["goal"]["status"] == status
    })
    .await
    .with_context(|| format!("the goal never became {status}"))
}

/// The end of a scenario in which the goal never turns active: no turn starts at or after
/// `cursor` within `wait`, the bootstrap's is the only model request, the world finishes.
async fn end_without_turns(
    world: World,
    app: &AppServer,
    cursor: usize,
    wait: Duration,
) -> anyhow::Result<()> {
    no_turn_within(app, cursor, wait).await?;
    world.expect_requests(1).await?;
    world.finish().await
}

/// Fails if a `turn/started` arrives at or after `from` within `wait`.
pub(super) async fn no_turn_within(
    app: &AppServer,
    from: usize,
    wait: Duration,
) -> anyhow::Result<()> {
    tokio::time::sleep(wait).await;
    if let Some(m) = app
        .messages()
        .iter()
        .skip(from)
        .find(|m| m.is("turn/started"))
    {
        bail!("an unexpected turn started: {}", m.params());
    }
    Ok(())
}

pub(super) fn goal(result: &Value) -> anyhow::Result<&Value> {
    result
        .get("goal")
        .filter(|g| g.is_object())
        .with_context(|| format!("no goal in {result}"))
}

/// `(status, tokenBudget)` of the goal in a set/get result.
fn status_budget(result: &Value) -> anyhow::Result<(Value, Value)> {
    let g = goal(result)?;
    Ok((g["status"].clone(), g["tokenBudget"].clone()))
}

async fn round_trip(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = bootstrap(ctx).await?;
    script_settle(&world, 1).await?;
    let cursor = app.cursor();
    let set = app
        .goal_set(
            &thread,
            json!({"objective": "Finish the migration", "tokenBudget": 40000}),
        )
        .await?;
    let g = goal(&set)?;
    check_new_goal(g, &thread)?;
    check_goal_updated(&app, cursor, &thread, g).await?;
    await_settle(&app, cursor).await?;
    pause_then_resume(&world, &app, &thread).await?;
    get_then_clear_twice(&app, &thread).await?;
    check_continuation_trigger(ctx, &world).await?;
    world.finish().await
}

/// Asserts the fields of the goal a first `thread/goal/set` returned.
fn check_new_goal(g: &Value, thread: &str) -> anyhow::Result<()> {
    ensure_eq!(g["threadId"], json!(thread), "goal.threadId");
    ensure_eq!(
        g["objective"],
        json!("Finish the migration"),
        "goal.objective"
    );
    ensure_eq!(g["status"], json!("active"), "goal.status");
    ensure_eq!(g["tokenBudget"], json!(40000), "goal.tokenBudget");
    ensure!(
        g["tokensUsed"].is_u64(),
        "tokensUsed is not an integer: {}",
        g["tokensUsed"]
    );
    ensure!(
        g["timeUsedSeconds"].is_number(),
        "timeUsedSeconds is not a number"
    );
    for key in ["createdAt", "updatedAt"] {
        ensure!(
            g[key].is_u64() || g[key].is_i64(),
            "{key} is not an integer: {}",
            g[key]
        );
    }
    Ok(())
}

/// Asserts the `thread/goal/updated` notification the first set sent (after `cursor`).
async fn check_goal_updated(
    app: &AppServer,
    cursor: usize,
    thread: &str,
    g: &Value,
) -> anyhow::Result<()> {
    let updated = app
        .wait_notification(
            cursor,
            "thread/goal/updated",
            Duration::from_secs(5),
            |_| true,
        )
        .await?;
    ensure_eq!(
        updated.params()["threadId"],
        json!(thread),
        "thread/goal/updated threadId"
    );
    ensure_eq!(
        updated.params()["turnId"],
        Value::Null,
        "thread/goal/updated turnId"
    );
    ensure_eq!(&updated.params()["goal"], g, "thread/goal/updated goal");
    Ok(())
}

/// Pauses the goal (no turn starts), then resumes it (its continuation settles).
async fn pause_then_resume(world: &World, app: &AppServer, thread: &str) -> anyhow::Result<()> {
    let cursor = app.cursor();
    let paused = app.goal_set(thread, json!({"status": "paused"})).await?;
    ensure_eq!(goal(&paused)?["status"], json!("paused"), "paused status");
    ensure_eq!(
        goal(&paused)?["objective"],
        json!("Finish the migration"),
        "objective after pause"
    );
    ensure_eq!(
        goal(&paused)?["tokenBudget"],
        json!(40000),
        "budget after pause"
    );
    no_turn_within(app, cursor, Duration::from_secs(1)).await?;

    script_settle(world, 2).await?;
    let cursor = app.cursor();
    let resumed = app.goal_set(thread, json!({"status": "active"})).await?;
    ensure_eq!(goal(&resumed)?["status"], json!("active"), "resumed status");
    ensure_eq!(
        goal(&resumed)?["objective"],
        json!("Finish the migration"),
        "objective after resume"
    );
    await_settle(app, cursor).await?;
    Ok(())
}

/// Gets the goal, clears it (notified) and clears it again (nothing removed, not notified).
async fn get_then_clear_twice(app: &AppServer, thread: &str) -> anyhow::Result<()> {
    let got = app.goal_get(thread).await?;
    ensure_eq!(
        goal(&got)?["objective"],
        json!("Finish the migration"),
        "get objective"
    );
    ensure_eq!(goal(&got)?["tokenBudget"], json!(40000), "get tokenBudget");
    let cursor = app.cursor();
    ensure_eq!(
        app.goal_clear(thread).await?,
        json!({"cleared": true}),
        "first clear"
    );
    app.wait_notification(cursor, "thread/goal/cleared", Duration::from_secs(5), |p| {
        p["threadId"] == json!(thread)
    })
    .await?;
    ensure_eq!(
        app.goal_get(thread).await?,
        json!({"goal": null}),
        "get after clear"
    );
    let cursor = app.cursor();
    ensure_eq!(
        app.goal_clear(thread).await?,
        json!({"cleared": false}),
        "second clear"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    ensure!(
        !app.messages()
            .iter()
            .skip(cursor)
            .any(|m| m.is("thread/goal/cleared")),
        "a clear that removed nothing sent thread/goal/cleared"
    );
    Ok(())
}

/// Reports drift when the continuation's request does not name a goal as its turn trigger.
async fn check_continuation_trigger(ctx: &Ctx, world: &World) -> anyhow::Result<()> {
    let requests = world.expect_requests(5).await?;
    // Step 2's settle: its continuation request (after the bootstrap's) says it is a goal's.
    let trigger = requests[1].turn_metadata()?["turn_trigger"].clone();
    if trigger != json!("goal") {
        ctx.drift(
            "goal.continuation_turn_trigger",
            trigger.clone(),
            format!(
                "the continuation request's x-codex-turn-metadata has turn_trigger {trigger} instead of \"goal\""
            ),
        );
    }
    Ok(())
}

async fn null_budget(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = bootstrap(ctx).await?;
    script_settle(&world, 1).await?;
    let cursor = app.cursor();
    let set = app
        .goal_set(
            &thread,
            json!({"objective": "Finish the migration", "tokenBudget": null}),
        )
        .await?;
    let g = goal(&set)?;
    ensure!(
        g.get("tokenBudget").is_some_and(Value::is_null),
        "tokenBudget is not present and null: {g}"
    );
    await_settle(&app, cursor).await?;
    let got = app.goal_get(&thread).await?;
    ensure!(
        goal(&got)?.get("tokenBudget").is_some_and(Value::is_null),
        "get: tokenBudget not null: {got}"
    );
    world.expect_requests(3).await?;
    world.finish().await
}

async fn budget_semantics(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = bootstrap(ctx).await?;
    let cursor = app.cursor();
    let g = app
        .goal_set(
            &thread,
            json!({"objective": "Keep budget", "status": "paused", "tokenBudget": 5000}),
        )
        .await?;
    ensure_eq!(
        status_budget(&g)?,
        (json!("paused"), json!(5000)),
        "first set"
    );
    let g = app
        .goal_set(&thread, json!({"objective": "Keep budget"}))
        .await?;
    ensure_eq!(
        status_budget(&g)?,
        (json!("paused"), json!(5000)),
        "objective only"
    );
    let g = app.goal_set(&thread, json!({"status": "paused"})).await?;
    ensure_eq!(
        goal(&g)?["tokenBudget"],
        json!(5000),
        "status only keeps the budget"
    );
    let g = app.goal_set(&thread, json!({"tokenBudget": null})).await?;
    ensure_eq!(
        status_budget(&g)?,
        (json!("paused"), Value::Null),
        "null budget"
    );
    for bad in [0, -1] {
        let message = rpc_error(
            app.goal_set(&thread, json!({"tokenBudget": bad})).await,
            &format!("tokenBudget {bad}"),
        )?
        .message;
        ensure!(
            message.contains("goal budgets must be positive when provided"),
            "tokenBudget {bad}: {message}"
        );
    }
    ensure_eq!(
        goal(&app.goal_get(&thread).await?)?["tokenBudget"],
        Value::Null,
        "get tokenBudget"
    );
    // No continuation may start. There is no event that says "none will", so this waits:
    // a set that leaves a goal active starts its continuation at once (the settles of B1
    // and B2), and §0.5 gives a continuation 1 s to show; B3 waits twice that after its
    // last set, so a late continuation would be seen.
    end_without_turns(world, &app, cursor, Duration::from_secs(2)).await
}

async fn budget_limited_kept(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = bootstrap(ctx).await?;
    let cursor = app.cursor();
    let g = app
        .goal_set(
            &thread,
            json!({"objective": "Keep polishing", "status": "budgetLimited", "tokenBudget": 10}),
        )
        .await?;
    ensure_eq!(goal(&g)?["status"], json!("budgetLimited"), "set status");
    let g = app
        .goal_set(&thread, json!({"objective": "Keep polishing"}))
        .await?;
    let g = goal(&g)?;
    ensure_eq!(
        g["status"],
        json!("budgetLimited"),
        "status after re-setting the objective"
    );
    ensure_eq!(g["tokenBudget"], json!(10), "tokenBudget");
    ensure_eq!(g["tokensUsed"], json!(0), "tokensUsed");
    ensure_eq!(g["timeUsedSeconds"], json!(0), "timeUsedSeconds");
    end_without_turns(world, &app, cursor, Duration::from_secs(1)).await
}

async fn stopped_statuses(ctx: &Ctx) -> anyhow::Result<()> {
    for status in ["blocked", "usageLimited"] {
        let (world, app, thread) = bootstrap(ctx).await?;
        let cursor = app.cursor();
        let g = app
            .goal_set(
                &thread,
                json!({"objective": "Keep polishing", "status": status}),
            )
            .await?;
        ensure_eq!(goal(&g)?["status"], json!(status), "set status");
        goal_becomes(&app, cursor, status, Duration::from_secs(5)).await?;
        ensure_eq!(
            goal(&app.goal_get(&thread).await?)?["status"],
            json!(status),
            "get status"
        );
        no_turn_within(&app, cursor, Duration::from_secs(1)).await?;
        world.expect_requests(1).await?;
        world
            .finish()
            .await
            .with_context(|| format!("status {status}"))?;
    }
    Ok(())
}

async fn goal_first(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread, _) =
        setup_with(ctx, goal_options(&ctx.caps), vec![], json!({})).await?;
    let g = app
        .goal_set(
            &thread,
            json!({"objective": "Goal first", "status": "paused"}),
        )
        .await?;
    ensure_eq!(goal(&g)?["status"], json!("paused"), "set status");
    ensure_eq!(
        goal(&app.goal_get(&thread).await?)?["objective"],
        json!("Goal first"),
        "get objective"
    );
    ensure_eq!(
        app.goal_clear(&thread).await?,
        json!({"cleared": true}),
        "clear"
    );
    world.expect_requests(0).await?;
    world.finish().await
}

async fn ephemeral(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread, started) = setup_with(
        ctx,
        goal_options(&ctx.caps),
        vec![],
        json!({"ephemeral": true}),
    )
    .await?;
    ensure_eq!(started["thread"]["path"], Value::Null, "thread.path");
    let m = rpc_error(app.goal_get(&thread).await, "get on an ephemeral thread")?.message;
    ensure!(
        m.starts_with("ephemeral thread does not support goals"),
        "get: {m}"
    );
    let m = rpc_error(
        app.goal_set(&thread, json!({"objective": "x", "status": "paused"}))
            .await,
        "set on an ephemeral thread",
    )?
    .message;
    ensure!(
        m.starts_with("ephemeral thread does not support goals"),
        "set: {m}"
    );
    world.expect_requests(0).await?;
    world.finish().await
}

async fn survives_restart(ctx: &Ctx) -> anyhow::Result<()> {
    let (mut world, app, thread) = bootstrap(ctx).await?;
    app.goal_set(
        &thread,
        json!({"objective": "Survive restart", "status": "paused", "tokenBudget": 777}),
    )
    .await?;
    app.exit_cleanly("process A").await?;
    let again = world.start().await?;
    again.thread_resume(&thread, json!({})).await?;
    let snapshot = again
        .wait_notification(0, "thread/goal/updated", Duration::from_secs(2), |_| true)
        .await;
    match snapshot {
        Ok(m) => ensure_eq!(
            m.params()["goal"]["status"],
            json!("paused"),
            "the resume's goal snapshot"
        ),
        Err(_) => ctx.drift(
            "goal.resume_snapshot",
            json!("absent"),
            "thread/resume sent no thread/goal/updated snapshot of the goal",
        ),
    }
    no_turn_within(&again, 0, Duration::from_secs(1)).await?;
    let g = again.goal_get(&thread).await?;
    let g = goal(&g)?;
    ensure_eq!(
        g["objective"],
        json!("Survive restart"),
        "objective after restart"
    );
    ensure_eq!(g["status"], json!("paused"), "status after restart");
    ensure_eq!(g["tokenBudget"], json!(777), "tokenBudget after restart");
    world.expect_requests(1).await?;
    world.finish().await
}

/// `thread/goal/get` on a fresh thread of a world made with `experimental_api` and
/// `extra_args`: its result, or the error message.
async fn gated_get(
    ctx: &Ctx,
    experimental_api: bool,
    extra_args: &[&str],
) -> anyhow::Result<Result<Value, String>> {
    let options = WorldOptions {
        experimental_api,
        extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
        ..Default::default()
    };
    let (world, app, thread, _) = setup_with(ctx, options, vec![], json!({})).await?;
    let result = app.goal_get(&thread).await;
    world.finish().await?;
    Ok(match result {
        Ok(v) => Ok(v),
        Err(e) => Err(e
            .rpc()
            .map(|r| r.message.clone())
            .with_context(|| format!("thread/goal/get: {e}"))?),
    })
}

async fn availability_gates(ctx: &Ctx) -> anyhow::Result<()> {
    let none = Ok(json!({"goal": null}));
    if ctx.caps.is_experimental("thread/goal/get") {
        let without_api = gated_get(ctx, false, &["--enable", "goals"]).await?;
        ensure!(
            without_api
                .as_ref()
                .is_err_and(|m| m.contains("thread/goal/get requires experimentalApi capability")),
            "without experimentalApi: {without_api:?}"
        );
        let without_feature = gated_get(ctx, true, &[]).await?;
        ensure!(
            without_feature
                .as_ref()
                .is_err_and(|m| m.contains("goals feature is disabled")),
            "without --enable goals: {without_feature:?}"
        );
        ensure_eq!(
            gated_get(ctx, true, &["--enable", "goals"]).await?,
            none,
            "with both"
        );
    } else {
        ensure_eq!(
            gated_get(ctx, false, &[]).await?,
            none,
            "a stable method without experimentalApi"
        );
        let disabled = gated_get(ctx, true, &["--disable", "goals"]).await?;
        ensure!(
            disabled
                .as_ref()
                .is_err_and(|m| m.contains("goals feature is disabled")),
            "with --disable goals: {disabled:?}"
        );
    }
    Ok(())
}

async fn invalid_input(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = bootstrap(ctx).await?;
    let cursor = app.cursor();
    app.goal_set(
        &thread,
        json!({"objective": "Valid objective", "status": "paused"}),
    )
    .await?;
    let rejected = [
        (json!(""), "paused", "goal objective must not be empty"),
        (
            json!("x".repeat(4001)),
            "paused",
            "goal objective must be at most 4000 characters",
        ),
        (json!("Valid objective"), "bogus", "unknown variant"),
    ];
    for (objective, status, expected) in rejected {
        let before = app.goal_get(&thread).await?;
        let what = format!("set {expected:?}");
        let message = rpc_error(
            app.goal_set(&thread, json!({"objective": objective, "status": status}))
                .await,
            &what,
        )?
        .message;
        ensure!(message.contains(expected), "{what}: {message}");
        ensure_eq!(
            app.goal_get(&thread).await?,
            before,
            "get after the refused {what}"
        );
    }
    let long = "y".repeat(4000);
    let g = app
        .goal_set(&thread, json!({"objective": long, "status": "paused"}))
        .await?;
    ensure_eq!(
        goal(&g)?["objective"],
        json!(long),
        "a 4000-character objective"
    );
    end_without_turns(world, &app, cursor, Duration::from_millis(500)).await
}
