//! Protocol basics and inventory (E16): handshake errors, the runtime method list against
//! the schema, notification opt-out, and the hermetic check.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::json;

use super::{rpc_error, setup};
use crate::app_server::message::RpcError;
use crate::app_server::turn::{TurnOptions, run_turn, text};
use crate::app_server::{AppServer, CallError};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "protocol_handshake_errors",
            "E16",
            "requests before initialize, a second initialize, a non-JSON line",
            handshake_errors
        ),
        scenario!(
            "protocol_method_inventory",
            "E16",
            "an unknown method lists exactly the schema's client requests",
            method_inventory
        ),
        scenario!(
            "protocol_opt_out_notifications",
            "E16",
            "optOutNotificationMethods suppresses the noise",
            opt_out
        ),
        scenario!(
            "hermetic_no_network_escape",
            "E16",
            "no connection leaves the machine during start-up, a turn and idle",
            hermetic
        ),
    ]
}

/// The code and message of the RPC error a call must have ended with.
fn rpc_message(
    result: Result<serde_json::Value, CallError>,
    what: &str,
) -> anyhow::Result<(i64, String)> {
    let e = rpc_error(result, what)?;
    Ok((e.code, e.message))
}

async fn handshake_errors(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let app = world.spawn().await?;
    let (code, message) = rpc_message(
        app.call("thread/list", json!({})).await,
        "a request before initialize",
    )?;
    ensure_eq!(
        code,
        RpcError::INVALID_REQUEST,
        "error code before initialize"
    );
    ensure_eq!(
        message.as_str(),
        "Not initialized",
        "error before initialize"
    );
    app.initialize(true).await.context("initialize")?;
    let (code, message) = rpc_message(app.initialize(true).await, "a second initialize")?;
    ensure_eq!(
        code,
        RpcError::INVALID_REQUEST,
        "error code of a second initialize"
    );
    ensure_eq!(
        message.as_str(),
        "Already initialized",
        "error of a second initialize"
    );
    app.send_raw("this line is not JSON")?;
    app.call("thread/list", json!({}))
        .await
        .context("the request after a non-JSON line")?;
    ensure!(
        app.exit_status().is_none(),
        "codex exited after a non-JSON line"
    );
    world.expect_requests(0).await?;
    world.finish().await
}

/// The methods named in codex's "unknown variant" error: everything in backticks after
/// "expected one of".
pub fn methods_in_error(message: &str) -> BTreeSet<String> {
    let Some((_, list)) = message.split_once("expected one of") else {
        return BTreeSet::new();
    };
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

async fn method_inventory(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let app = world.start().await?;
    let (code, message) = rpc_message(
        app.call("bogus/method", json!({})).await,
        "an unknown method",
    )?;
    ensure_eq!(
        code,
        RpcError::INVALID_REQUEST,
        "error code of an unknown method"
    );
    ensure!(
        message.contains("bogus/method"),
        "the error does not name the method: {message}"
    );
    let runtime = methods_in_error(&message);
    ensure!(!runtime.is_empty(), "the error lists no methods: {message}");
    // The catalogue says exactly the schema's client requests. One the runtime rejects
    // fails; methods the runtime accepts beyond the schema (legacy v1 methods the v2 schema
    // no longer describes) are drift, the exact list as the observed value.
    let schema = &ctx.caps.client_methods;
    let only_schema: Vec<&String> = schema.difference(&runtime).collect();
    ensure!(
        only_schema.is_empty(),
        "schema client requests that codex rejects at runtime: {only_schema:?}"
    );
    let only_runtime: Vec<&String> = runtime.difference(schema).collect();
    if !only_runtime.is_empty() {
        ctx.drift(
            "methods.runtime_beyond_schema",
            json!(only_runtime),
            format!(
                "accepts {} method(s) its generated schema does not list: {only_runtime:?}",
                only_runtime.len()
            ),
        );
    }
    world.finish().await
}

/// `initialize` with experimental API on and the given notification opt-outs.
async fn initialize_with(app: &AppServer, opt_out: &[&str]) -> anyhow::Result<()> {
    app.initialize_with(json!({"experimentalApi": true, "optOutNotificationMethods": opt_out}))
        .await
        .context("initialize")?;
    Ok(())
}

async fn opt_out(ctx: &Ctx) -> anyhow::Result<()> {
    let noisy = "remoteControl/status/changed";
    if !ctx.caps.notifications.contains(noisy) {
        bail!("this codex has no {noisy} notification to opt out of");
    }
    let mut world = ctx.world(WorldOptions::default()).await?;
    let plain = world.spawn().await?;
    initialize_with(&plain, &[]).await?;
    plain
        .wait_notification(0, noisy, Duration::from_secs(5), |_| true)
        .await
        .context("control: without opt-out the notification must arrive")?;
    let quiet = world.spawn().await?;
    initialize_with(&quiet, &["configWarning", noisy]).await?;
    // The control arrived well within this window on the plain connection.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let leaked: Vec<String> = quiet
        .messages()
        .iter()
        .filter(|m| m.is(noisy) || m.is("configWarning"))
        .map(|m| m.method().to_string())
        .collect();
    ensure!(
        leaked.is_empty(),
        "opted-out notifications arrived: {leaked:?}"
    );
    world.finish().await
}

async fn hermetic(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-1", "sealed"))];
    let (world, app, thread) = setup(ctx, script).await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("stay local")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.final_response(), "sealed", "final response");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let attempts = world.proxy.attempts();
    ensure!(
        attempts.is_empty(),
        "connection attempts through the proxy: {attempts:?}"
    );
    world.expect_requests(1).await?;
    world.finish().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_method_list_from_the_error() {
        let m = "Invalid request: unknown variant `bogus/method`, expected one of `initialize`, `thread/start`";
        let got: Vec<String> = methods_in_error(m).into_iter().collect();
        assert_eq!(got, vec!["initialize", "thread/start"]);
        assert!(methods_in_error("something else").is_empty());
    }
}
