//! Settings changed between turns and inside one (group H): `thread/settings/update`, the
//! `thread/settings/updated` notification and what reaches the next model request (H6);
//! `turn/settings/update` of a running turn and what its next step asks for (H8).

use std::time::Duration;

use anyhow::Context;
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::json;

use super::setup;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, start_turn, text, wait_turn};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "thread_settings_update_reaches_next_request",
            "H6",
            "thread/settings/update of model and effort answers {}, notifies \
             thread/settings/updated with the new settings, and the next turn's model request \
             asks for that model",
            settings_update
        )
        .applies(|c| c.require_methods(&["thread/settings/update"])),
        scenario!(
            "turn_settings_update_reaches_next_step",
            "H8",
            "with step_model_switching on and a model of codex's own catalogue, \
             turn/settings/update of a running turn's model and effort answers applied, the \
             model request already made keeps the old model and the turn's next step asks for \
             the new one",
            turn_settings_update
        )
        .applies(|c| c.require_methods(&["turn/settings/update", "model/list"])),
    ]
}

async fn settings_update(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        Scripted::sse(bodies::assistant_reply("resp-1", "before")),
        Scripted::sse(bodies::assistant_reply("resp-2", "after")),
    ];
    let (world, app, thread) = setup(ctx, script).await?;
    for (n, prompt) in ["before the update", "after the update"].iter().enumerate() {
        if n == 1 {
            let cursor = app.cursor();
            let result = app
                .call(
                    "thread/settings/update",
                    json!({"threadId": thread, "model": "other-model", "effort": "high"}),
                )
                .await
                .context("thread/settings/update")?;
            ensure_eq!(result, json!({}), "thread/settings/update result");
            let updated = app
                .wait_notification(
                    cursor,
                    "thread/settings/updated",
                    Duration::from_secs(5),
                    |p| p["threadId"] == thread.as_str(),
                )
                .await
                .context("no thread/settings/updated")?;
            let settings = &updated.params()["threadSettings"];
            ensure_eq!(settings["model"], json!("other-model"), "updated model");
            ensure_eq!(settings["effort"], json!("high"), "updated effort");
        }
        let turn = run_turn(&app, &thread, vec![text(prompt)], &TurnOptions::default()).await?;
        ensure_eq!(turn.status, TurnStatus::Completed, "turn {n} status");
    }
    let requests = world.expect_requests(2).await?;
    let models: Vec<serde_json::Value> = requests.iter().map(|r| r.body["model"].clone()).collect();
    ensure_eq!(
        models,
        vec![json!("mock-model"), json!("other-model")],
        "the model of each request"
    );
    world.finish().await
}

async fn turn_settings_update(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        extra_args: vec!["--enable".into(), "step_model_switching".into()],
        ..WorldOptions::default()
    };
    let mut world = ctx.world(options).await?;
    let app = world.start().await?;
    let listed = app
        .call("model/list", json!({}))
        .await
        .context("model/list")?;
    let ids: Vec<String> = listed["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["id"].as_str().map(String::from))
        .collect();
    let (first, second) = match ids.as_slice() {
        [a, b, ..] => (a.clone(), b.clone()),
        _ => anyhow::bail!("model/list lists fewer than two models: {listed}"),
    };
    world
        .script(vec![
            Scripted::sse(bodies::one_item_reply(
                "resp-1",
                events::exec_command_call("call-step-1", "true"),
            ))
            .gate("step", 0),
            Scripted::sse(bodies::assistant_reply("resp-2", "switched")),
        ])
        .await?;
    let (thread, _) = world.start_thread(&app, json!({"model": first})).await?;
    let started = start_turn(
        &app,
        &thread,
        vec![text("switch mid-turn")],
        &TurnOptions::default(),
    )
    .await?;
    world.requests_arrived(1, Duration::from_secs(10)).await?;
    let answer = app
        .call(
            "turn/settings/update",
            json!({"threadId": thread, "turnId": started.id, "model": second, "effort": "high"}),
        )
        .await;
    // Codex may refuse the switch (a requirement of the other model): drift, and the turn
    // goes on with the model it had.
    let switched = match answer {
        Ok(answer) => {
            ensure_eq!(
                answer,
                json!({"status": "applied"}),
                "turn/settings/update result"
            );
            true
        }
        Err(e) => {
            let rpc = e
                .rpc()
                .cloned()
                .with_context(|| format!("turn/settings/update: {e}"))?;
            ctx.drift(
                "turn_settings.update_refused",
                json!({"code": rpc.code, "message": rpc.message}),
                format!("turn/settings/update from {first} to {second} refused: {rpc:?}"),
            );
            false
        }
    };
    world.release("step").await?;
    let turn = wait_turn(&app, started, Duration::from_secs(30)).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let requests = world.expect_requests(2).await?;
    let models: Vec<serde_json::Value> = requests.iter().map(|r| r.body["model"].clone()).collect();
    let next = if switched { &second } else { &first };
    ensure_eq!(
        models,
        vec![json!(first), json!(next)],
        "the model of each step's request"
    );
    if switched {
        ensure_eq!(
            requests[1].body["reasoning"]["effort"],
            json!("high"),
            "the next step's reasoning effort"
        );
    }
    world.finish().await
}
