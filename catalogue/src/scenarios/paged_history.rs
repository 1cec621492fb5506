//! Paginated history (group H, H1–H5, H7): a thread whose history is paged with
//! `thread/turns/list` and `thread/items/list` cursors, `thread/revert` before a turn and
//! `thread/fork` before a turn, as integrators call them since paginated history became
//! the default; and (H7) the refusal of a second app-server writing a thread the first
//! holds.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::{rpc_error, setup_with};
use std::sync::Arc;

use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::app_server::{AppServer, CallError};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::World;
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "paged_history_is_the_default",
            "H1",
            "a thread started without historyMode is paginated (thread/start and thread/read \
             say historyMode paginated)",
            default_mode
        )
        .applies(Capabilities::needs_history_mode),
        scenario!(
            "paged_turns_list_by_cursor",
            "H2",
            "thread/turns/list pages newest first by limit and nextCursor to a last page \
             without a cursor, sortDirection asc reverses it, and a cursor of another thread \
             is refused",
            turns_list
        )
        .applies(|c| {
            c.needs_history_mode()?;
            c.require_methods(&["thread/turns/list"])
        }),
        scenario!(
            "paged_items_list_by_cursor",
            "H3",
            "thread/items/list pages a thread's items oldest first across turns to a last page \
             without a cursor; turnId keeps one turn's items",
            items_list
        )
        .applies(|c| {
            c.needs_history_mode()?;
            c.require_methods(&["thread/items/list"])
        }),
        scenario!(
            "thread_revert_before_turn",
            "H4",
            "thread/revert before a turn notifies thread/reverted, returns the thread without \
             turns, keeps only the earlier turns in thread/turns/list and in the next model \
             request",
            revert
        )
        .applies(|c| {
            c.needs_history_mode()?;
            c.require_methods(&["thread/revert", "thread/turns/list"])
        }),
        scenario!(
            "thread_fork_before_turn",
            "H5",
            "thread/fork with beforeTurnId makes a thread holding only the turns before it, and \
             its next model request carries only those",
            fork_before
        )
        .applies(|c| {
            c.needs_fork_before_turn()?;
            c.require_methods(&["thread/turns/list"])
        }),
        scenario!(
            "second_writer_refused",
            "H7",
            "a second app-server on the same home that resumes a thread the first still has \
             loaded is refused (JSON-RPC -32600: the thread already has an active writer), \
             so a turn from it finds no thread; the first app-server's next turn on the \
             thread completes",
            second_writer
        )
        .applies(|c| c.require_methods(&["thread/resume"])),
    ]
}

/// A plain reply `text` with a response id made of `n`.
fn reply(n: usize, text: &str) -> Scripted {
    Scripted::sse(bodies::assistant_reply(&format!("resp-{n}"), text))
}

/// Runs one turn with `prompt`, requires it to complete and returns its id.
async fn turn_ok(app: &AppServer, thread: &str, prompt: &str) -> anyhow::Result<String> {
    let turn = run_turn(app, thread, vec![text(prompt)], &TurnOptions::default()).await?;
    ensure_eq!(
        turn.status,
        TurnStatus::Completed,
        "turn \"{prompt}\" status"
    );
    Ok(turn.id)
}

/// The start of the paged scenarios: a paginated thread with `turns` completed turns
/// ("prompt N" answered "answer N", from 1). Returns the world, app-server, thread and turn
/// ids; `None` when codex refused the paginated thread as not supported yet (drift recorded,
/// the world finished: the scenario ends there).
async fn paged_thread(ctx: &Ctx, turns: usize) -> anyhow::Result<Option<PagedThread>> {
    let mut world = ctx.world(Default::default()).await?;
    let app = world.start().await?;
    let started = world
        .start_thread(&app, json!({"historyMode": "paginated"}))
        .await;
    let (thread, started) = match started {
        Ok(started) => started,
        Err(e) if not_supported_yet(ctx, "paged.thread_start_refused", &e) => {
            world.finish().await?;
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    ensure_eq!(
        started["thread"]["historyMode"],
        json!("paginated"),
        "thread/start historyMode"
    );
    world.script(replies(1..=turns)).await?;
    let mut ids = Vec::new();
    for n in 1..=turns {
        ids.push(turn_ok(&app, &thread, &format!("prompt {n}")).await?);
    }
    Ok(Some((world, app, thread, ids)))
}

/// A paged thread: its world, app-server, id and turn ids.
type PagedThread = (World, Arc<AppServer>, String, Vec<String>);

/// The replies "answer N" for the turns `range`.
fn replies(range: std::ops::RangeInclusive<usize>) -> Vec<Scripted> {
    range.map(|n| reply(n, &format!("answer {n}"))).collect()
}

/// Whether `error` is codex refusing what its schema lists as not implemented yet (JSON-RPC
/// -32601, e.g. "paginated_threads is not supported yet"): then recorded as drift under
/// `key`, with the code and message.
fn not_supported_yet(ctx: &Ctx, key: &str, error: &anyhow::Error) -> bool {
    let Some(rpc) = error.downcast_ref::<CallError>().and_then(CallError::rpc) else {
        return false;
    };
    if rpc.code != -32601 {
        return false;
    }
    ctx.drift(
        key,
        json!({"code": rpc.code, "message": rpc.message}),
        format!(
            "codex refused it as not supported: {} {}",
            rpc.code, rpc.message
        ),
    );
    true
}

/// The ids of a page's `data` (turns).
fn page_ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str().map(String::from))
        .collect()
}

/// The texts of a user message or agent message item.
fn item_text(item: &Value) -> Option<String> {
    match item["type"].as_str()? {
        "userMessage" => item["content"][0]["text"].as_str().map(String::from),
        "agentMessage" => item["text"].as_str().map(String::from),
        _ => None,
    }
}

/// The user and agent texts of a turn's items.
fn turn_texts(turn: &Value) -> Vec<String> {
    turn["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(item_text)
        .collect()
}

async fn default_mode(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread, started) = setup_with(
        ctx,
        Default::default(),
        vec![reply(1, "answer 1")],
        json!({}),
    )
    .await?;
    let mode = started["thread"]["historyMode"].clone();
    if mode != json!("paginated") {
        ctx.drift(
            "history.default_mode",
            mode.clone(),
            format!("a thread started without historyMode is {mode}, not paginated"),
        );
    }
    turn_ok(&app, &thread, "prompt 1").await?;
    let read = app.thread_read(&thread, json!({})).await?;
    ensure_eq!(
        read["thread"]["historyMode"],
        mode,
        "thread/read historyMode against thread/start"
    );
    world.expect_requests(1).await?;
    world.finish().await
}

async fn turns_list(ctx: &Ctx) -> anyhow::Result<()> {
    let Some((world, app, thread, ids)) = paged_thread(ctx, 3).await? else {
        return Ok(());
    };
    world.script(replies(4..=4)).await?;
    let first = app
        .call("thread/turns/list", json!({"threadId": thread, "limit": 2}))
        .await
        .context("thread/turns/list limit 2")?;
    ensure_eq!(
        page_ids(&first),
        vec![ids[2].clone(), ids[1].clone()],
        "first page, newest first"
    );
    ensure_eq!(
        first["data"]
            .as_array()
            .map(|d| d.iter().map(turn_texts).collect::<Vec<_>>()),
        Some(vec![
            vec!["prompt 3".to_string(), "answer 3".to_string()],
            vec!["prompt 2".to_string(), "answer 2".to_string()],
        ]),
        "first page items (summary view)"
    );
    let cursor = first["nextCursor"].clone();
    ensure!(
        !cursor.is_null(),
        "the first page of two of three turns has no nextCursor"
    );
    let last = app
        .call(
            "thread/turns/list",
            json!({"threadId": thread, "limit": 2, "cursor": cursor}),
        )
        .await
        .context("thread/turns/list with nextCursor")?;
    ensure_eq!(page_ids(&last), vec![ids[0].clone()], "last page");
    ensure_eq!(last["nextCursor"], Value::Null, "last page nextCursor");
    let asc = app
        .call(
            "thread/turns/list",
            json!({"threadId": thread, "limit": 2, "sortDirection": "asc"}),
        )
        .await
        .context("thread/turns/list asc")?;
    ensure_eq!(
        page_ids(&asc),
        vec![ids[0].clone(), ids[1].clone()],
        "first page, asc"
    );
    let (other, _) = world
        .start_thread(&app, json!({"historyMode": "paginated"}))
        .await?;
    turn_ok(&app, &other, "prompt 4").await?;
    let refused = rpc_error(
        app.call(
            "thread/turns/list",
            json!({"threadId": other, "limit": 2, "cursor": first["nextCursor"]}),
        )
        .await,
        "thread/turns/list with another thread's cursor",
    )?;
    ensure_eq!(
        refused.code,
        crate::app_server::message::RpcError::INVALID_REQUEST,
        "error code of another thread's cursor ({})",
        refused.message
    );
    world.expect_requests(4).await?;
    world.finish().await
}

async fn items_list(ctx: &Ctx) -> anyhow::Result<()> {
    let Some((world, app, thread, ids)) = paged_thread(ctx, 2).await? else {
        return Ok(());
    };
    let mut texts = Vec::new();
    let mut turn_ids = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let mut params = json!({"threadId": thread, "limit": 2});
        if !cursor.is_null() {
            params["cursor"] = cursor.clone();
        }
        let page = app
            .call("thread/items/list", params)
            .await
            .context("thread/items/list")?;
        pages += 1;
        for entry in page["data"].as_array().into_iter().flatten() {
            if let Some(t) = item_text(&entry["item"]) {
                texts.push(t);
                turn_ids.push(entry["turnId"].as_str().unwrap_or("").to_string());
            }
        }
        cursor = page["nextCursor"].clone();
        if cursor.is_null() || pages >= 6 {
            break;
        }
    }
    ensure!(
        cursor.is_null(),
        "thread/items/list still pages after {pages} pages"
    );
    ensure!(pages >= 2, "two turns of items came in one page of two");
    ensure_eq!(
        texts,
        vec!["prompt 1", "answer 1", "prompt 2", "answer 2"],
        "items across the pages, oldest first"
    );
    ensure_eq!(
        turn_ids,
        vec![
            ids[0].clone(),
            ids[0].clone(),
            ids[1].clone(),
            ids[1].clone()
        ],
        "the items' turnId"
    );
    let one = app
        .call(
            "thread/items/list",
            json!({"threadId": thread, "turnId": ids[1]}),
        )
        .await
        .context("thread/items/list turnId")?;
    let only: Vec<String> = one["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| item_text(&e["item"]))
        .collect();
    ensure_eq!(
        only,
        vec!["prompt 2", "answer 2"],
        "items of the second turn"
    );
    world.expect_requests(2).await?;
    world.finish().await
}

async fn revert(ctx: &Ctx) -> anyhow::Result<()> {
    let Some((world, app, thread, ids)) = paged_thread(ctx, 2).await? else {
        return Ok(());
    };
    world.script(replies(3..=3)).await?;
    let cursor = app.cursor();
    let result = app
        .call(
            "thread/revert",
            json!({"threadId": thread, "beforeTurnId": ids[1]}),
        )
        .await
        .context("thread/revert")?;
    ensure_eq!(
        result["thread"]["id"],
        json!(thread),
        "thread/revert thread.id"
    );
    ensure_eq!(
        result["thread"]["turns"],
        json!([]),
        "thread/revert thread.turns"
    );
    app.wait_notification(cursor, "thread/reverted", Duration::from_secs(5), |p| {
        p["threadId"] == thread.as_str()
    })
    .await
    .context("no thread/reverted after thread/revert")?;
    let kept = app
        .call("thread/turns/list", json!({"threadId": thread}))
        .await
        .context("thread/turns/list after revert")?;
    ensure_eq!(page_ids(&kept), vec![ids[0].clone()], "turns after revert");
    turn_ok(&app, &thread, "prompt 3").await?;
    let requests = world.expect_requests(3).await?;
    let prompts = super::prompts_of(&requests[2]);
    ensure_eq!(
        prompts,
        vec!["prompt 1", "prompt 3"],
        "user prompts of the request after the revert"
    );
    ensure_eq!(
        requests[2].message_input_texts("assistant"),
        vec!["answer 1".to_string()],
        "assistant messages of the request after the revert"
    );
    world.finish().await
}

async fn fork_before(ctx: &Ctx) -> anyhow::Result<()> {
    let Some((world, app, thread, ids)) = paged_thread(ctx, 2).await? else {
        return Ok(());
    };
    let forked = app
        .call(
            "thread/fork",
            json!({"threadId": thread, "beforeTurnId": ids[1]}),
        )
        .await
        .map_err(anyhow::Error::from);
    let forked = match forked {
        Ok(forked) => forked,
        Err(e) if not_supported_yet(ctx, "fork_before.refused", &e) => return world.finish().await,
        Err(e) => return Err(e.context("thread/fork beforeTurnId")),
    };
    world.script(replies(3..=3)).await?;
    let fork = forked["thread"]["id"]
        .as_str()
        .context("thread/fork without thread.id")?
        .to_string();
    ensure!(fork != thread, "the fork has the source's id");
    let turns = app
        .call("thread/turns/list", json!({"threadId": fork}))
        .await
        .context("thread/turns/list of the fork")?;
    let texts: Vec<Vec<String>> = turns["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(turn_texts)
        .collect();
    ensure_eq!(
        texts,
        vec![vec!["prompt 1".to_string(), "answer 1".to_string()]],
        "the fork's turns"
    );
    turn_ok(&app, &fork, "prompt 3").await?;
    let requests = world.expect_requests(3).await?;
    let prompts = super::prompts_of(&requests[2]);
    ensure_eq!(
        prompts,
        vec!["prompt 1", "prompt 3"],
        "user prompts of the fork's first request"
    );
    world.finish().await
}

async fn second_writer(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![reply(1, "answer 1"), reply(2, "answer 2")];
    let (mut world, app, thread, _) =
        setup_with(ctx, Default::default(), script, json!({})).await?;
    turn_ok(&app, &thread, "prompt 1").await?;
    let second = world.start().await?;
    let resumed = second.thread_resume(&thread, json!({})).await;
    match resumed {
        Ok(_) => {
            // Both hold the thread: what the second one's turn does is the drift's to show.
            world.script(vec![reply(3, "answer 3")]).await?;
            let turn = run_turn(
                &second,
                &thread,
                vec![text("from the second")],
                &TurnOptions::default(),
            )
            .await;
            let status = turn.map_or_else(
                |e| format!("error: {e:#}"),
                |t| t.status.as_str().to_string(),
            );
            ctx.drift(
                "writer.second_resume",
                json!("resumed"),
                format!(
                    "a second app-server resumed a thread the first has loaded; its turn: {status}"
                ),
            );
        }
        Err(e) => {
            let error = e
                .rpc()
                .cloned()
                .with_context(|| format!("thread/resume from the second app-server: {e}"))?;
            ensure_eq!(error.code, -32600, "the refusal's code");
            ensure!(
                error.message.contains("active writer"),
                "the refusal does not name an active writer: {}",
                error.message
            );
            ctx.observe(format!("the refusal: {}", error.message));
            let turn = rpc_error(
                second
                    .turn_start(&thread, vec![text("from the second")], json!({}))
                    .await,
                "turn/start from the refused app-server",
            )?;
            ctx.observe(format!("its turn/start: {} {}", turn.code, turn.message));
        }
    }
    turn_ok(&app, &thread, "prompt 2").await?;
    world.finish().await
}
