//! Thread settings changed between turns (group H, H6): `thread/settings/update`, the
//! `thread/settings/updated` notification and what reaches the next model request.

use std::time::Duration;

use anyhow::Context;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::json;

use super::setup;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
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
