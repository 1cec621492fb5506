//! Threads side by side and over time (`parity-scenarios.md` E4–E7): concurrent turns on
//! two threads route by id, `model/list` answers during a turn, thread bookkeeping (name,
//! read, list, archive), and a resume in a new process that returns the history and
//! restores token usage.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::events;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::{SAMPLE_USAGE, header, listed_ids, rpc_error, setup};
use crate::app_server::AppServer;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, start_turn, text, wait_turn};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "interleaved_turns_route_by_thread",
            "E4",
            "concurrent turns on two threads each see only their own events",
            interleaved
        ),
        scenario!(
            "model_list_during_turn",
            "E5",
            "model/list answers while a turn waits for the model, without HTTP",
            model_list_during_turn
        ),
        scenario!(
            "thread_bookkeeping",
            "E6",
            "name, read, list and archive a thread; an archived thread is not resumed",
            bookkeeping
        ),
        scenario!(
            "resume_returns_history_and_token_usage",
            "E7",
            "a resume in a new process returns the history and restores token usage",
            resume_history
        ),
    ]
}

/// How long each routed answer is held back, so both requests are in flight together.
const ROUTE_DELAY_MS: u64 = 300;

/// A streamed answer `<word>-done` for the request whose body names `route <word>`.
fn routed(word: &str) -> Scripted {
    let item = format!("msg-{word}");
    Scripted::sse(vec![
        events::response_created(&format!("resp-{word}")),
        events::message_item_added_empty(&item),
        events::output_text_delta(&format!("{word}-")),
        events::output_text_delta("done"),
        events::assistant_message(&item, &format!("{word}-done")),
        events::completed(&format!("resp-{word}")),
    ])
    .delay_ms(ROUTE_DELAY_MS)
    .when_body_contains(&format!("route {word}"))
}

async fn interleaved(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread_a) = setup(ctx, vec![routed("one"), routed("two")]).await?;
    let (thread_b, _) = world.start_thread(&app, json!({})).await?;
    let no_options = TurnOptions::default();
    let started_a = start_turn(&app, &thread_a, vec![text("route one")], &no_options).await?;
    let started_b = start_turn(&app, &thread_b, vec![text("route two")], &no_options).await?;
    let turn_a = wait_turn(&app, started_a, Duration::from_secs(20)).await?;
    let turn_b = wait_turn(&app, started_b, Duration::from_secs(20)).await?;
    let all = app.messages();
    for (turn, word) in [(&turn_a, "one"), (&turn_b, "two")] {
        ensure_eq!(turn.status, TurnStatus::Completed, "turn status on {word}");
        let item = format!("msg-{word}");
        let deltas: Vec<[&str; 3]> = all
            .iter()
            .filter(|m| m.is("item/agentMessage/delta") && m.thread_id() == Some(&turn.thread_id))
            .map(|m| {
                let p = m.params();
                ["turnId", "itemId", "delta"].map(|k| p[k].as_str().unwrap_or(""))
            })
            .collect();
        let first = format!("{word}-");
        let want = vec![
            [turn.id.as_str(), item.as_str(), first.as_str()],
            [turn.id.as_str(), item.as_str(), "done"],
        ];
        ensure_eq!(deltas, want, "deltas (turn, item, text) on thread {word}");
        ensure_eq!(
            turn.agent_messages(),
            vec![(item.as_str(), &format!("{word}-done")[..], None)],
            "agent messages of thread {word}"
        );
        ensure_eq!(
            turn.final_response(),
            format!("{word}-done"),
            "final response of thread {word}"
        );
        let completions: Vec<Option<&str>> = all
            .iter()
            .filter(|m| m.is("turn/completed") && m.thread_id() == Some(&turn.thread_id))
            .map(|m| m.turn_id())
            .collect();
        ensure_eq!(
            completions,
            vec![Some(turn.id.as_str())],
            "turn/completed on thread {word}"
        );
    }
    let requests = world.expect_requests(2).await?;
    for (thread, word) in [(&thread_a, "one"), (&thread_b, "two")] {
        let r = requests
            .iter()
            .find(|r| r.last_user_text().as_deref() == Some(&format!("route {word}")[..]))
            .with_context(|| format!("no request carries \"route {word}\""))?;
        ensure_eq!(
            header(r, "thread-id")?,
            thread.as_str(),
            "thread-id header of the \"route {word}\" request"
        );
    }
    world.finish().await
}

async fn model_list_during_turn(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-slow", "slow")).delay_ms(1000)];
    let (world, app, thread) = setup(ctx, script).await?;
    let started = start_turn(
        &app,
        &thread,
        vec![text("take a second")],
        &TurnOptions::default(),
    )
    .await?;
    app.wait_notification(
        started.cursor,
        "turn/started",
        Duration::from_secs(10),
        |p| p["turn"]["id"] == started.id.as_str(),
    )
    .await?;
    let models = app
        .call("model/list", json!({}))
        .await
        .context("model/list")?;
    let done_before = app
        .messages()
        .iter()
        .any(|m| m.is("turn/completed") && m.turn_id() == Some(started.id.as_str()));
    ensure!(
        !done_before,
        "model/list answered only after the turn completed"
    );
    let data = models["data"]
        .as_array()
        .with_context(|| format!("model/list result without a data array: {models}"))?;
    ensure!(!data.is_empty(), "model/list returned no models");
    let turn = wait_turn(&app, started, Duration::from_secs(20)).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(turn.final_response(), "slow", "final response");
    world.expect_requests(1).await?;
    let fetched: Vec<String> = world
        .sidecar
        .all_requests()
        .await?
        .iter()
        .filter(|r| r.path.ends_with("/models"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    ensure!(
        fetched.is_empty(),
        "codex fetched the model list: {fetched:?}"
    );
    world.finish().await
}

async fn bookkeeping(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-1", "noted"))];
    let (world, app, thread) = setup(ctx, script).await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("keep books")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    name_then_read(&app, &thread, &turn.id).await?;
    archive_then_list(ctx, &app, &thread).await?;
    resume_archived(ctx, &app, &thread).await?;
    world.expect_requests(1).await?;
    world.finish().await
}

/// Names the thread (notified) and reads it back: its name and its one turn.
async fn name_then_read(app: &AppServer, thread: &str, turn_id: &str) -> anyhow::Result<()> {
    super::thread_metadata::name(app, thread, "parity name").await?;
    let read = app
        .thread_read(thread, json!({"includeTurns": true}))
        .await
        .context("thread/read")?;
    ensure_eq!(
        read["thread"]["name"],
        json!("parity name"),
        "thread/read name"
    );
    let turns = read["thread"]["turns"].as_array().map_or(0, Vec::len);
    ensure_eq!(turns, 1, "thread/read turns");
    ensure_eq!(
        read["thread"]["turns"][0]["id"],
        json!(turn_id),
        "thread/read turn id"
    );
    Ok(())
}

/// Lists the thread, archives it (notified where the schema has `thread/archived`) and lists
/// it again, where only the archived list names it.
async fn archive_then_list(ctx: &Ctx, app: &AppServer, thread: &str) -> anyhow::Result<()> {
    let list = app
        .call("thread/list", json!({}))
        .await
        .context("thread/list")?;
    ensure!(
        listed_ids(&list).iter().any(|id| id == thread),
        "thread/list does not name the thread: {list}"
    );
    let cursor = app.cursor();
    app.call("thread/archive", json!({"threadId": thread}))
        .await
        .context("thread/archive")?;
    if ctx.caps.notifications.contains("thread/archived") {
        app.wait_notification(cursor, "thread/archived", Duration::from_secs(5), |p| {
            p["threadId"] == thread
        })
        .await?;
    }
    let list = app
        .call("thread/list", json!({}))
        .await
        .context("thread/list")?;
    ensure!(
        !listed_ids(&list).iter().any(|id| id == thread),
        "thread/list still names the archived thread"
    );
    let archived = app
        .call("thread/list", json!({"archived": true}))
        .await
        .context("thread/list {archived:true}")?;
    ensure!(
        listed_ids(&archived).iter().any(|id| id == thread),
        "thread/list {{archived:true}} does not name the archived thread: {archived}"
    );
    Ok(())
}

/// Resumes the archived thread: refused naming the archive, or drift where it succeeds.
async fn resume_archived(ctx: &Ctx, app: &AppServer, thread: &str) -> anyhow::Result<()> {
    match app.thread_resume(thread, json!({})).await {
        Ok(resumed) => ctx.drift(
            "thread.resume_archived",
            json!("resumed"),
            format!(
                "thread/resume of an archived thread succeeded (thread.path {})",
                resumed["thread"]["path"]
            ),
        ),
        Err(e) => {
            let refused = rpc_error(Err(e), "thread/resume of an archived thread")?;
            ensure!(
                refused.message.contains("archived"),
                "thread/resume of an archived thread: {}",
                refused.message
            );
        }
    }
    Ok(())
}

/// A text input with one text element (a placeholder over `@notes`).
fn text_with_element() -> Value {
    json!({
        "type": "text",
        "text": "remember @notes please",
        "text_elements": [{"byteRange": {"start": 9, "end": 15}, "placeholder": "@notes"}]
    })
}

async fn resume_history(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(bodies::costed_reply(
        "resp-1",
        "msg-1",
        "remembered",
        SAMPLE_USAGE,
    ))];
    let mut world = ctx.world(WorldOptions::default()).await?;
    world.script(script).await?;
    let first = world.start().await?;
    let (thread, _) = world.start_thread(&first, json!({})).await?;
    let turn = run_turn(
        &first,
        &thread,
        vec![text_with_element()],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "first turn status");
    first.shutdown(Duration::from_secs(5)).await;

    let second = world.start().await?;
    let resumed = resume_checked(&second, &thread, json!({}), ctx).await?;
    let turns = resumed["thread"]["turns"]
        .as_array()
        .context("thread/resume result without thread.turns")?;
    ensure_eq!(turns.len(), 1, "resumed turns");
    ensure_eq!(turns[0]["id"], json!(turn.id), "resumed turn id");
    ensure_eq!(
        turns[0]["status"],
        json!(TurnStatus::Completed),
        "resumed turn status"
    );
    let user = turns[0]["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["type"] == "userMessage")
        .context("the resumed turn has no userMessage")?;
    ensure_eq!(
        user["content"],
        json!([text_with_element()]),
        "the resumed userMessage content (text_elements kept)"
    );
    let restored = second
        .wait_notification(
            0,
            "thread/tokenUsage/updated",
            Duration::from_secs(5),
            |p| p["threadId"] == thread.as_str(),
        )
        .await
        .context("no token usage restored on resume")?;
    ensure_eq!(
        restored.params()["turnId"],
        json!(turn.id),
        "restored token usage turnId"
    );
    ensure_eq!(
        restored.params()["tokenUsage"]["total"]["totalTokens"],
        json!(18),
        "restored tokenUsage.total.totalTokens"
    );
    ensure!(
        !second.messages().iter().any(|m| m.is("turn/started")),
        "a turn started on resume"
    );
    second.shutdown(Duration::from_secs(5)).await;

    let third = world.start().await?;
    let resumed = resume_checked(&third, &thread, json!({"excludeTurns": true}), ctx).await?;
    ensure_eq!(
        resumed["thread"]["turns"],
        json!([]),
        "thread.turns with excludeTurns"
    );
    world.expect_requests(1).await?;
    world.finish().await
}

/// `thread/resume` with `extra`, checking the thread's summary fields.
async fn resume_checked(
    app: &AppServer,
    thread: &str,
    extra: Value,
    ctx: &Ctx,
) -> anyhow::Result<Value> {
    let resumed = app
        .thread_resume(thread, extra.clone())
        .await
        .with_context(|| format!("thread/resume {extra}"))?;
    let t = &resumed["thread"];
    ensure_eq!(t["id"], json!(thread), "resumed thread id");
    ensure_eq!(
        t["preview"],
        json!("remember @notes please"),
        "resumed thread preview"
    );
    ensure_eq!(t["modelProvider"], json!("mock"), "resumed modelProvider");
    ensure_eq!(
        t["cliVersion"],
        json!(ctx.binary.version),
        "resumed cliVersion"
    );
    ensure_eq!(t["status"], json!({"type": "idle"}), "resumed status");
    Ok(resumed)
}
