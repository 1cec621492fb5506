//! A thread's name and git metadata across app-servers (group H, H17): what a client sets is
//! what another process reads back, as a UI that lists threads by name relies on.

use std::time::Duration;

use anyhow::Context;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::{listed_ids, rpc_error, setup};
use crate::app_server::AppServer;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "thread_name_and_metadata_survive_a_new_app_server",
            "H17",
            "a thread named with thread/name/set and given gitInfo with thread/metadata/update \
             is listed under its name and read back with both by a second app-server on the \
             same home; a rename there is notified and read back; naming an unknown thread is \
             refused",
            name_and_metadata
        )
        .applies(|c| {
            c.require_methods(&[
                "thread/name/set",
                "thread/metadata/update",
                "thread/list",
                "thread/read",
            ])
        }),
    ]
}

/// The git metadata H17 sets.
fn git() -> Value {
    json!({
        "sha": "0123abcd",
        "branch": "parity/names",
        "originUrl": "https://example.invalid/names.git"
    })
}

/// Sets the thread's name and waits for `thread/name/updated` naming it.
pub(crate) async fn name(app: &AppServer, thread: &str, name: &str) -> anyhow::Result<()> {
    let cursor = app.cursor();
    app.call("thread/name/set", json!({"threadId": thread, "name": name}))
        .await
        .context("thread/name/set")?;
    let named = app
        .wait_notification(cursor, "thread/name/updated", Duration::from_secs(5), |p| {
            p["threadId"] == thread
        })
        .await?;
    ensure_eq!(
        named.params()["threadName"],
        json!(name),
        "thread/name/updated threadName"
    );
    Ok(())
}

async fn name_and_metadata(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-1", "named"))];
    let (mut world, first, thread) = setup(ctx, script).await?;
    let turn = run_turn(
        &first,
        &thread,
        vec![text("name me")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    name(&first, &thread, "first name").await?;
    first
        .call(
            "thread/metadata/update",
            json!({"threadId": thread, "gitInfo": git()}),
        )
        .await
        .context("thread/metadata/update")?;
    first.exit_cleanly("the first app-server").await?;

    let second = world.start().await?;
    let list = second
        .call("thread/list", json!({}))
        .await
        .context("thread/list in the second app-server")?;
    let listed = list["data"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["id"] == thread.as_str())
        .with_context(|| {
            format!(
                "thread/list does not name {thread}: {:?}",
                listed_ids(&list)
            )
        })?;
    ensure_eq!(listed["name"], json!("first name"), "thread/list name");
    let read = second
        .thread_read(&thread, json!({}))
        .await
        .context("thread/read in the second app-server")?;
    ensure_eq!(
        read["thread"]["name"],
        json!("first name"),
        "thread/read name"
    );
    ensure_eq!(read["thread"]["gitInfo"], git(), "thread/read gitInfo");
    second
        .thread_resume(&thread, json!({}))
        .await
        .context("thread/resume in the second app-server")?;
    name(&second, &thread, "second name").await?;
    let read = second.thread_read(&thread, json!({})).await?;
    ensure_eq!(
        read["thread"]["name"],
        json!("second name"),
        "the renamed thread's name"
    );
    let unknown = rpc_error(
        second
            .call(
                "thread/name/set",
                json!({"threadId": "00000000-0000-7000-8000-000000000000", "name": "nobody"}),
            )
            .await,
        "thread/name/set of an unknown thread",
    )?;
    ensure_eq!(unknown.code, -32600, "code of naming an unknown thread");
    ctx.observe(format!("naming an unknown thread: {}", unknown.message));
    world.expect_requests(1).await?;
    world.finish().await
}
