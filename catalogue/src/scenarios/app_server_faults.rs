//! Group I, codex failing on its side (I20–I25): the app-server killed with SIGKILL in the
//! middle of a turn and the thread resumed by a new one; its stdin closed mid-turn; a client
//! that stops reading while codex streams, alone and with requests piling up; the model
//! server gone in the middle of a response, with and without a retry.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::{setup, setup_with};
use crate::app_server::AppServer;
use crate::app_server::turn::{
    Turn, TurnOptions, TurnStatus, run_turn, start_turn, text, wait_turn,
};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::sidecar::Sidecar;
use crate::harness::world::{Listen, WorldOptions};
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "app_server_killed_mid_turn_then_resumed",
            "I20",
            "codex app-server killed (SIGKILL) while a response streams: a new app-server on \
             the same home resumes the thread with the completed turn whole and the cut turn \
             interrupted, holding only its prompt; the next model request carries the completed \
             turn and the cut prompt, and nothing of the cut answer",
            killed_mid_turn
        )
        .applies(Capabilities::needs_resume),
        scenario!(
            "app_server_stdin_closed_mid_turn",
            "I21",
            "the client closes codex's stdin while a turn waits for the model: codex exits with \
             status 0 within 5 s, leaving no process of its group",
            stdin_closed
        ),
        scenario!(
            "app_server_client_stops_reading",
            "I22",
            "a client that stops reading while codex streams 2,000 deltas (over 400 KB of \
             notifications) and then reads again gets every delta, in order, and the turn \
             completes",
            stops_reading(false)
        ),
        scenario!(
            "app_server_client_stops_reading",
            "I22b",
            "as I22, the client on a connection of a ws:// listener",
            stops_reading(false)
        )
        .over_listener(
            "app_server_client_stops_reading_over_ws_listener",
            "I22b",
            Listen::WebSocket,
        ),
        scenario!(
            "model_server_gone_mid_response",
            "I23",
            "the model server killed while a response streams, retries off: the turn fails at \
             once (stream disconnected before completion) and the app-server stays up and \
             answers thread/read",
            model_server_gone(false)
        ),
        scenario!(
            "model_server_gone_waits_for_network",
            "I24",
            "the model server killed while a response streams, one retry allowed: the retry \
             finds the port closed and codex reports \"Reconnecting... waiting for network\" \
             (willRetry) and keeps the turn open; turn/interrupt ends it interrupted",
            model_server_gone(true)
        ),
        scenario!(
            "app_server_requests_while_client_stops_reading",
            "I25",
            "300 thread/read requests sent while the client does not read (codex streaming to \
             it): once it reads again each is answered within 30 s, with the thread or with \
             -32001 \"Server overloaded; retry later.\", none left unanswered, and the turn \
             completes",
            stops_reading(true)
        )
        .waits(),
        scenario!(
            "app_server_requests_while_client_stops_reading",
            "I25b",
            "as I25, the client on a connection of a ws:// listener",
            stops_reading(true)
        )
        .waits()
        .over_listener(
            "app_server_requests_while_client_stops_reading_over_ws_listener",
            "I25b",
            Listen::WebSocket,
        ),
    ]
}

/// Events of a response that streams a first delta of `text`, then holds until the client
/// closes the connection.
fn stalled_reply(resp: &str, item: &str, first: &str) -> Scripted {
    Scripted::sse(vec![
        events::response_created(resp),
        events::message_item_added_empty(item),
        events::output_text_delta(first),
    ])
    .stall_after(3)
}

async fn killed_mid_turn(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        Scripted::sse(bodies::assistant_reply("resp-1", "kept answer")),
        stalled_reply("resp-2", "msg-cut", "cut sho"),
        Scripted::sse(bodies::assistant_reply("resp-3", "after the crash")),
    ];
    let (mut world, first, thread) = setup(ctx, script).await?;
    run_turn(
        &first,
        &thread,
        vec![text("kept prompt")],
        &TurnOptions::default(),
    )
    .await?;
    let cut = start_turn(
        &first,
        &thread,
        vec![text("cut prompt")],
        &TurnOptions::default(),
    )
    .await?;
    first
        .wait_notification(
            cut.cursor,
            "item/agentMessage/delta",
            Duration::from_secs(10),
            |_| true,
        )
        .await
        .context("the cut turn's first delta")?;
    first.kill();
    let second = world.start().await?;
    let resumed = second
        .thread_resume(&thread, json!({}))
        .await
        .context("thread/resume in a new app-server")?;
    let turns = resumed
        .pointer("/thread/turns")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let shape: Vec<(Value, Vec<Value>)> = turns
        .iter()
        .map(|t| {
            let items = t["items"].as_array().into_iter().flatten();
            (
                t["status"].clone(),
                items.map(|i| i["type"].clone()).collect(),
            )
        })
        .collect();
    ensure_eq!(
        shape,
        vec![
            (
                json!("completed"),
                vec![json!("userMessage"), json!("agentMessage")]
            ),
            (json!("interrupted"), vec![json!("userMessage")]),
        ],
        "the resumed thread's turns (status, item types)"
    );
    ensure_eq!(turns[1]["id"], json!(cut.id), "the cut turn's id");
    let next = run_turn(
        &second,
        &thread,
        vec![text("next prompt")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(
        next.final_response(),
        "after the crash",
        "the next turn's answer"
    );
    let requests = world.expect_requests(3).await?;
    let said = requests[2].message_input_texts("user");
    for prompt in ["kept prompt", "cut prompt", "next prompt"] {
        ensure!(
            said.iter().any(|t| t == prompt),
            "the next request does not carry {prompt:?}"
        );
    }
    let answered = requests[2].message_input_texts("assistant");
    ensure_eq!(
        answered,
        vec!["kept answer".to_string()],
        "the next request's assistant texts"
    );
    world.finish().await
}

/// The processes whose process group is `group`.
fn group_members(group: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // `pid (comm) state ppid pgrp …`: comm may hold spaces, so read after ')'.
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse::<u32>().ok())
                    == Some(group)
            })
        })
        .collect()
}

async fn stdin_closed(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![stalled_reply("resp-1", "msg-1", "wait")];
    let (world, app, thread) = setup(ctx, script).await?;
    start_turn(
        &app,
        &thread,
        vec![text("take long")],
        &TurnOptions::default(),
    )
    .await?;
    world.requests_arrived(1, Duration::from_secs(10)).await?;
    let pid = app.pid().context("no pid")?;
    let closed = Instant::now();
    let exit = app.shutdown_exit(Duration::from_secs(5)).await;
    let took = closed.elapsed();
    let exit = exit.context("no exit even after the kill")?;
    ensure!(
        exit.success(),
        "codex ended with {exit} {took:?} after its stdin closed mid-turn (killed after 5 s)"
    );
    ctx.observe(format!(
        "exited 0 {} ms after its stdin closed",
        took.as_millis()
    ));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let left = group_members(pid);
    ensure!(
        left.is_empty(),
        "processes of codex's group left after its exit: {left:?}"
    );
    world.finish().await
}

/// I22's deltas: how many, and each one's text.
const DELTAS: usize = 2000;

fn delta(i: usize) -> String {
    format!("[{i:04}:{}]", "x".repeat(90))
}

/// I22 and I25: 2,000 deltas streamed to a client that does not read; with `requests`, it
/// also sends 300 `thread/read` meanwhile.
async fn stops_reading(ctx: &Ctx, requests: bool) -> anyhow::Result<()> {
    let mut body = vec![
        events::response_created("resp-1"),
        events::message_item_added_empty("msg-big"),
    ];
    let all: String = (0..DELTAS).map(delta).collect();
    body.extend((0..DELTAS).map(|i| events::output_text_delta(&delta(i))));
    body.push(events::assistant_message("msg-big", &all));
    body.push(events::completed("resp-1"));
    let (world, app, thread) = setup(ctx, vec![Scripted::sse(body)]).await?;
    let started = start_turn(
        &app,
        &thread,
        vec![text("say a lot")],
        &TurnOptions::default(),
    )
    .await?;
    app.pause_reading();
    world.requests_arrived(1, Duration::from_secs(10)).await?;
    if requests {
        let reads = (0..READS).map(|_| {
            let params = json!({"threadId": thread});
            app.call_with_timeout("thread/read", params, Duration::from_secs(30))
        });
        let reads = futures_util::future::join_all(reads);
        tokio::pin!(reads);
        // Codex streams into a pipe nobody reads while the requests pile up.
        let _ = tokio::time::timeout(Duration::from_secs(2), &mut reads).await;
        app.resume_reading();
        judge_answers(ctx, &app, reads.await)?;
    } else {
        tokio::time::sleep(Duration::from_secs(2)).await;
        app.resume_reading();
    }
    let turn = wait_turn(&app, started, Duration::from_secs(30)).await?;
    check_every_delta(&turn, &all)?;
    world.finish().await
}

/// How many `thread/read` I25 sends while it does not read.
const READS: usize = 300;

/// I25: every request answered, with a result or -32001; unanswered ones are drift.
fn judge_answers(
    ctx: &Ctx,
    app: &AppServer,
    answers: Vec<Result<Value, crate::app_server::CallError>>,
) -> anyhow::Result<()> {
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut unanswered = 0;
    for answer in &answers {
        let kind = match answer {
            Ok(_) => "the thread".to_string(),
            Err(e) => match e.rpc() {
                Some(r)
                    if (r.code, r.message.as_str())
                        == (-32001, "Server overloaded; retry later.") =>
                {
                    "-32001".to_string()
                }
                Some(r) => {
                    anyhow::bail!("a thread/read answered otherwise: {} {}", r.code, r.message)
                }
                None if matches!(e, crate::app_server::CallError::Timeout { .. }) => {
                    unanswered += 1;
                    "no answer within 30 s".to_string()
                }
                None => anyhow::bail!("a thread/read failed: {e}"),
            },
        };
        *kinds.entry(kind).or_default() += 1;
    }
    ctx.observe(format!(
        "{READS} thread/read sent while not reading ({}): {kinds:?}",
        app.label()
    ));
    if unanswered > 0 {
        ctx.drift(
            "overload.unanswered_requests",
            json!(true),
            format!("{unanswered} of {READS} thread/read sent while the client did not read got no answer within 30 s ({kinds:?})"),
        );
    }
    Ok(())
}

/// I22's checks: the turn completed with every delta, in order, and the whole text.
fn check_every_delta(turn: &Turn, all: &str) -> anyhow::Result<()> {
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let chunks = turn.chunks();
    ensure_eq!(chunks.len(), DELTAS, "deltas that arrived");
    let out_of_order = chunks.iter().enumerate().find(|(i, c)| **c != delta(*i));
    ensure!(
        out_of_order.is_none(),
        "delta {:?} arrived out of order",
        out_of_order.map(|(i, _)| i)
    );
    ensure_eq!(turn.final_response(), all, "final response");
    Ok(())
}

/// I23 and I24: the model server (a sidecar of the scenario's own, the world's provider)
/// killed while its response streams; `retry`: one stream retry allowed.
async fn model_server_gone(ctx: &Ctx, retry: bool) -> anyhow::Result<()> {
    let model = Sidecar::start(&ctx.settings.sidecar).await?;
    model
        .enqueue(&[stalled_reply("resp-1", "msg-1", "half an ans")])
        .await?;
    let retries = u32::from(retry);
    let options = WorldOptions {
        provider_url: Some(model.base_url().to_string()),
        stream_max_retries: retries,
        request_max_retries: retries,
        ..WorldOptions::default()
    };
    let (world, app, thread, _) = setup_with(ctx, options, vec![], json!({})).await?;
    let started = start_turn(
        &app,
        &thread,
        vec![text("are you there")],
        &TurnOptions::default(),
    )
    .await?;
    let cursor = started.cursor;
    app.wait_notification(
        cursor,
        "item/agentMessage/delta",
        Duration::from_secs(10),
        |_| true,
    )
    .await
    .context("the first delta")?;
    let pid = model.pid().context("the model server has no pid")?;
    let pid = rustix::process::Pid::from_raw(pid as i32).context("a pid")?;
    rustix::process::kill_process(pid, rustix::process::Signal::KILL)?;
    let turn = if retry {
        let waiting = app
            .wait_for(
                cursor,
                Duration::from_secs(15),
                "waiting for the network, or the end",
                |m| {
                    m.is("turn/completed")
                        || (m.is("error")
                            && m.params().pointer("/error/message").and_then(Value::as_str)
                                == Some("Reconnecting... waiting for network"))
                },
            )
            .await?;
        if waiting.is("turn/completed") {
            // The turn ended by itself instead of waiting for the network.
            let turn = wait_turn(&app, started, Duration::from_secs(1)).await?;
            let info = turn
                .error
                .as_ref()
                .map_or(Value::Null, |e| e["codexErrorInfo"].clone());
            ctx.drift(
                "network_gone.turn_ended",
                json!({"status": turn.status, "codexErrorInfo": info}),
                format!(
                    "the retry found the port closed and the turn ended {:?} ({}) instead of \
                     waiting for the network",
                    turn.status,
                    turn.error_message()
                ),
            );
            turn
        } else {
            ensure_eq!(
                waiting.params()["willRetry"],
                json!(true),
                "willRetry of the waiting error"
            );
            app.turn_interrupt(&thread, &started.id)
                .await
                .context("turn/interrupt")?;
            let turn = wait_turn(&app, started, Duration::from_secs(5)).await?;
            ensure_eq!(
                turn.status,
                TurnStatus::Interrupted,
                "the interrupted turn's status"
            );
            turn
        }
    } else {
        let turn = wait_turn(&app, started, Duration::from_secs(10)).await?;
        ensure_eq!(turn.status, TurnStatus::Failed, "the turn's status");
        let message = turn.error_message();
        ensure!(
            message.starts_with("stream disconnected before completion"),
            "the turn's error: {message:?}"
        );
        turn
    };
    ctx.observe(format!(
        "the turn ended {:?}: {:?}",
        turn.status, turn.error
    ));
    app.thread_read(&thread, json!({}))
        .await
        .context("thread/read after the model server went")?;
    drop(model);
    world.finish().await
}
