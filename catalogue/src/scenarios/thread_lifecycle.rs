//! A thread's life after its turns (`parity-scenarios.md` G7–G11): unarchive, delete and
//! rollback where the schema has them, `thread/list` paging, search and order, the loaded
//! threads, unsubscribing, and git metadata updates. E6 covers naming, reading and archiving.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::{listed_ids, rpc_error, setup};
use crate::app_server::AppServer;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::World;
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "thread_unarchive_restores_thread",
            "G7",
            "an archived thread unarchived is listed again, notified, and resumes with its \
             history",
            unarchive
        )
        .applies(|c| c.require_methods(&["thread/archive", "thread/unarchive"])),
        scenario!(
            "thread_delete_removes_rollout",
            "G8",
            "thread/delete unloads the thread, notifies, removes its rollout; list, read and \
             resume no longer find it",
            delete
        )
        .applies(|c| c.require_methods(&["thread/delete"])),
        scenario!(
            "thread_rollback_drops_last_turn",
            "G9",
            "thread/rollback drops the last turn from the thread and from the next request",
            rollback
        )
        .applies(|c| c.require_methods(&["thread/rollback"])),
        scenario!(
            "thread_list_pages_search_and_order",
            "G10",
            "thread/list: limit and cursor visit every thread once; searchTerm, cwd and \
             modelProviders filter; sortDirection asc reverses the order",
            list_paging
        )
        .applies(|c| c.require_methods(&["thread/list"])),
        scenario!(
            "thread_loaded_unsubscribe_and_metadata",
            "G11",
            "thread/loaded/list names the live threads; unsubscribe answers unsubscribed then \
             notSubscribed; gitInfo metadata is read back",
            loaded_and_metadata
        )
        .applies(|c| {
            c.require_methods(&[
                "thread/loaded/list",
                "thread/unsubscribe",
                "thread/metadata/update",
            ])
        }),
    ]
}

/// Runs one turn with `prompt` and requires it to complete.
async fn turn_ok(app: &AppServer, thread: &str, prompt: &str) -> anyhow::Result<()> {
    let turn = run_turn(app, thread, vec![text(prompt)], &TurnOptions::default()).await?;
    ensure_eq!(
        turn.status,
        TurnStatus::Completed,
        "turn \"{prompt}\" status"
    );
    Ok(())
}

/// A plain reply `text` with a response id made of `n`.
fn reply(n: usize, text: &str) -> Scripted {
    Scripted::sse(bodies::assistant_reply(&format!("resp-{n}"), text))
}

/// Calls `method {threadId}` and waits for the notification `notified` about the thread.
async fn call_notified(
    app: &AppServer,
    method: &str,
    thread: &str,
    notified: &str,
) -> anyhow::Result<Value> {
    let cursor = app.cursor();
    let result = app
        .call(method, json!({"threadId": thread}))
        .await
        .with_context(|| method.to_string())?;
    app.wait_notification(cursor, notified, Duration::from_secs(5), |p| {
        p["threadId"] == thread
    })
    .await
    .with_context(|| format!("no {notified} after {method}"))?;
    Ok(result)
}

async fn unarchive(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![reply(1, "first answer"), reply(2, "second answer")];
    let (world, app, thread) = setup(ctx, script).await?;
    turn_ok(&app, &thread, "remember the word kumquat").await?;
    call_notified(&app, "thread/archive", &thread, "thread/archived").await?;
    let list = app.call("thread/list", json!({})).await?;
    ensure!(
        !listed_ids(&list).contains(&thread),
        "the archived thread is listed"
    );
    let result = call_notified(&app, "thread/unarchive", &thread, "thread/unarchived").await?;
    ensure_eq!(result["thread"]["id"], json!(thread), "unarchive thread.id");
    ensure_eq!(
        result["thread"]["preview"],
        json!("remember the word kumquat"),
        "unarchive thread.preview"
    );
    let list = app.call("thread/list", json!({})).await?;
    ensure!(
        listed_ids(&list).contains(&thread),
        "the unarchived thread is not listed: {list}"
    );
    let archived = app.call("thread/list", json!({"archived": true})).await?;
    ensure!(
        !listed_ids(&archived).contains(&thread),
        "the unarchived thread is still listed as archived"
    );
    app.thread_resume(&thread, json!({}))
        .await
        .context("thread/resume after unarchive")?;
    turn_ok(&app, &thread, "what was the word?").await?;
    let requests = world.expect_requests(2).await?;
    ensure!(
        requests[1]
            .message_input_texts("user")
            .iter()
            .any(|t| t == "remember the word kumquat"),
        "the turn after unarchive lost the history"
    );
    world.finish().await
}

async fn delete(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread, started) =
        super::setup_with(ctx, Default::default(), vec![reply(1, "kept")], json!({})).await?;
    let path = started["thread"]["path"]
        .as_str()
        .context("thread/start without thread.path")?
        .to_string();
    turn_ok(&app, &thread, "soon deleted").await?;
    ensure!(std::path::Path::new(&path).exists(), "no rollout at {path}");
    let cursor = app.cursor();
    let result = call_notified(&app, "thread/delete", &thread, "thread/deleted").await?;
    ensure_eq!(result, json!({}), "thread/delete result");
    app.wait_notification(
        cursor,
        "thread/status/changed",
        Duration::from_secs(5),
        |p| p["threadId"] == thread.as_str() && p["status"] == json!({"type": "notLoaded"}),
    )
    .await
    .context("no notLoaded status after thread/delete")?;
    ensure!(
        !std::path::Path::new(&path).exists(),
        "the rollout survived thread/delete"
    );
    let list = app.call("thread/list", json!({})).await?;
    ensure!(
        !listed_ids(&list).contains(&thread),
        "the deleted thread is listed"
    );
    let read = rpc_error(
        app.thread_read(&thread, json!({})).await,
        "thread/read of a deleted thread",
    )?;
    ensure_eq!(
        read.message,
        format!("thread not loaded: {thread}"),
        "thread/read error"
    );
    let resume = rpc_error(
        app.thread_resume(&thread, json!({})).await,
        "thread/resume of a deleted thread",
    )?;
    ensure_eq!(
        resume.message,
        format!("no rollout found for thread id {thread}"),
        "thread/resume error"
    );
    world.expect_requests(1).await?;
    world.finish().await
}

async fn rollback(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        reply(1, "answer one"),
        reply(2, "answer two"),
        reply(3, "answer three"),
    ];
    let (world, app, thread) = setup(ctx, script).await?;
    turn_ok(&app, &thread, "prompt one").await?;
    turn_ok(&app, &thread, "prompt two").await?;
    let refused = rpc_error(
        app.call(
            "thread/rollback",
            json!({"threadId": thread, "numTurns": 0}),
        )
        .await,
        "thread/rollback of 0 turns",
    )?;
    ensure_eq!(refused.message, "numTurns must be >= 1", "rollback 0 error");
    let result = match app
        .call(
            "thread/rollback",
            json!({"threadId": thread, "numTurns": 1}),
        )
        .await
    {
        Ok(result) => result,
        Err(e) => {
            // Refused (0.151-0.155 refuse it on their default paginated threads): drift, and
            // the thread stays usable for the scripted third turn.
            let refusal = e
                .rpc()
                .map(|r| r.message.clone())
                .context("thread/rollback")?;
            ctx.drift(
                "thread.rollback_refused",
                json!(refusal),
                format!("thread/rollback of 1 turn was refused: {refusal}"),
            );
            turn_ok(&app, &thread, "prompt three").await?;
            world.expect_requests(3).await?;
            return world.finish().await;
        }
    };
    let turns = result["thread"]["turns"].as_array().map_or(0, Vec::len);
    ensure_eq!(turns, 1, "turns in the rollback result");
    turn_ok(&app, &thread, "prompt three").await?;
    let requests = world.expect_requests(3).await?;
    let assistants = requests[2].message_input_texts("assistant");
    let prompts = super::prompts_of(&requests[2]);
    ensure_eq!(
        prompts,
        vec!["prompt one", "prompt three"],
        "user prompts of the request after the rollback"
    );
    ensure_eq!(
        assistants,
        vec!["answer one".to_string()],
        "assistant messages of the request after the rollback"
    );
    let read = app
        .thread_read(&thread, json!({"includeTurns": true}))
        .await
        .context("thread/read")?;
    ensure_eq!(
        read["thread"]["turns"].as_array().map_or(0, Vec::len),
        2,
        "turns read after rollback and a new turn"
    );
    world.finish().await
}

/// Sleeps until just after the next wall-clock second starts, so the threads made next share
/// one second of `createdAt` (the old cursor's resolution).
async fn align_to_second() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let rest = 1_000 - u64::from(now.subsec_millis());
    tokio::time::sleep(Duration::from_millis(rest + 20)).await;
}

/// Three threads with one turn each, started within one second, the newest in `elsewhere`;
/// returns their ids, oldest first.
async fn three_threads(
    world: &World,
    app: &AppServer,
    first: String,
    elsewhere: &str,
) -> anyhow::Result<Vec<String>> {
    let mut ids = vec![first];
    ids.push(world.start_thread(app, json!({})).await?.0);
    ids.push(world.start_thread(app, json!({"cwd": elsewhere})).await?.0);
    for (i, id) in ids.iter().enumerate() {
        turn_ok(app, id, &format!("thread number {i} says hello")).await?;
    }
    Ok(ids)
}

async fn list_paging(ctx: &Ctx) -> anyhow::Result<()> {
    let script = (0..3).map(|n| reply(n, "hello back")).collect();
    let mut world = ctx.world(Default::default()).await?;
    world.script(script).await?;
    let app = world.start().await?;
    let elsewhere = world.workspace.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).context("creating the other cwd")?;
    let elsewhere = elsewhere.display().to_string();
    align_to_second().await;
    let first = world.start_thread(&app, json!({})).await?.0;
    let ids = three_threads(&world, &app, first, &elsewhere).await?;
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    let all = app.call("thread/list", json!({})).await?;
    ensure_eq!(listed_ids(&all), newest_first, "thread/list order");
    let asc = app
        .call("thread/list", json!({"sortDirection": "asc"}))
        .await?;
    ensure_eq!(listed_ids(&asc), ids, "thread/list sortDirection asc");
    let found = app
        .call("thread/list", json!({"searchTerm": "number 1 says"}))
        .await?;
    ensure_eq!(
        listed_ids(&found),
        vec![ids[1].clone()],
        "thread/list searchTerm"
    );
    let filters = [
        (json!({"cwd": elsewhere}), vec![ids[2].clone()]),
        (
            json!({"cwd": world.workspace.display().to_string()}),
            vec![ids[1].clone(), ids[0].clone()],
        ),
        (json!({"modelProviders": ["mock"]}), newest_first.clone()),
        (json!({"modelProviders": ["elsewhere"]}), Vec::new()),
    ];
    for (params, want) in filters {
        let got = app.call("thread/list", params.clone()).await?;
        ensure_eq!(listed_ids(&got), want, "thread/list {params}");
    }
    check_pages(ctx, &app, &newest_first).await?;
    world.expect_requests(3).await?;
    world.finish().await
}

/// Pages of two: the first names the two newest threads; following `nextCursor` must reach
/// the third. 0.131.0 and 0.161.0 page by a cursor of whole seconds and skip threads created
/// in the cursor's second (drift); 0.171.0's cursor adds the thread id.
async fn check_pages(ctx: &Ctx, app: &AppServer, newest_first: &[String]) -> anyhow::Result<()> {
    let page = app.call("thread/list", json!({"limit": 2})).await?;
    ensure_eq!(listed_ids(&page), newest_first[..2].to_vec(), "first page");
    let cursor = page["nextCursor"]
        .as_str()
        .context("the first page of two has no nextCursor")?;
    let rest = app
        .call("thread/list", json!({"limit": 2, "cursor": cursor}))
        .await?;
    ctx.expect(
        "thread_list.second_page",
        json!({"ids": [newest_first[2]], "nextCursor": null}),
        json!({"ids": listed_ids(&rest), "nextCursor": rest["nextCursor"]}),
    );
    Ok(())
}

async fn loaded_and_metadata(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = setup(ctx, vec![reply(1, "hi")]).await?;
    turn_ok(&app, &thread, "load me").await?;
    let (other, _) = world.start_thread(&app, json!({})).await?;
    let loaded = app.call("thread/loaded/list", json!({})).await?;
    ensure_eq!(
        loaded,
        json!({"data": [thread, other], "nextCursor": null}),
        "thread/loaded/list"
    );
    for want in ["unsubscribed", "notSubscribed"] {
        let answer = app
            .call("thread/unsubscribe", json!({"threadId": thread}))
            .await
            .context("thread/unsubscribe")?;
        ensure_eq!(answer, json!({"status": want}), "thread/unsubscribe answer");
    }
    let loaded = app.call("thread/loaded/list", json!({})).await?;
    ensure_eq!(
        loaded["data"],
        json!([thread, other]),
        "thread/loaded/list after unsubscribe"
    );
    let git = json!({
        "sha": "abc123",
        "branch": "feature/x",
        "originUrl": "https://example.invalid/r.git"
    });
    let updated = app
        .call(
            "thread/metadata/update",
            json!({"threadId": thread, "gitInfo": git}),
        )
        .await
        .context("thread/metadata/update")?;
    ensure_eq!(
        updated["thread"]["gitInfo"],
        git,
        "metadata/update thread.gitInfo"
    );
    let read = app
        .thread_read(&thread, json!({}))
        .await
        .context("thread/read")?;
    ensure_eq!(read["thread"]["gitInfo"], git, "thread/read gitInfo");
    world.expect_requests(1).await?;
    world.finish().await
}
