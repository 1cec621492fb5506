//! The parity scenarios, grouped as in `parity-scenarios.md`: `executor` (group A), `goal`
//! and `goal_continuation` (group B), `history` (group C), `files` (group D), `request_shape`
//! (E1), `lifecycle` (E2, E3, E15), `protocol` (E16), `threads` (E4–E7), `dynamic_tools`
//! (E8), `interaction` (E9, E10, E12), `approvals` (E11), `reasoning` (E13) and `fault` (E14).

pub mod approvals;
pub mod dynamic_tools;
pub mod executor;
pub mod fault;
pub mod files;
pub mod goal;
pub mod goal_continuation;
pub mod history;
pub mod interaction;
pub mod lifecycle;
pub mod protocol;
pub mod reasoning;
pub mod request_shape;
pub mod threads;

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::sync::Arc;

use codex_parity_sidecar::Scripted;
use codex_parity_sidecar::captured::CapturedRequest;

use crate::app_server::{AppServer, CallError};
use crate::message::RpcError;
use crate::scenario::Ctx;
use crate::world::WorldOptions;

use crate::world::World;

/// Exactly `n` model requests were captured (waits briefly for them to arrive).
pub async fn expect_requests(world: &World, n: usize) -> anyhow::Result<Vec<CapturedRequest>> {
    let requests = world
        .sidecar
        .requests(n, Duration::from_millis(2000))
        .await
        .context("reading captured requests")?;
    if requests.len() != n {
        bail!(
            "expected exactly {n} model request(s), the sidecar captured {}",
            requests.len()
        );
    }
    Ok(requests)
}

/// The header `name` of a captured request, or an error naming it.
pub fn header<'a>(r: &'a CapturedRequest, name: &str) -> anyhow::Result<&'a str> {
    r.header(name)
        .with_context(|| format!("request #{} has no {name} header", r.index))
}

/// A world with `options` and `script` queued, an initialized app-server and a thread
/// started with `thread_params` in the workspace: the start of most scenarios. Returns the
/// world, the app-server, the thread id and the `thread/start` result.
pub async fn setup_with(
    ctx: &Ctx,
    options: WorldOptions,
    script: Vec<Scripted>,
    thread_params: Value,
) -> anyhow::Result<(World, Arc<AppServer>, String, Value)> {
    let mut world = ctx.world(options).await?;
    world.script(script).await?;
    let app = world.start().await?;
    let (thread, started) = world.start_thread(&app, thread_params).await?;
    Ok((world, app, thread, started))
}

/// [`setup_with`] with the default options and a plain thread.
pub async fn setup(
    ctx: &Ctx,
    script: Vec<Scripted>,
) -> anyhow::Result<(World, Arc<AppServer>, String)> {
    let (world, app, thread, _) =
        setup_with(ctx, WorldOptions::default(), script, json!({})).await?;
    Ok((world, app, thread))
}

/// The JSON-RPC error a call must have ended with; fails if it succeeded or failed
/// otherwise (timeout, exit).
pub fn rpc_error(result: Result<Value, CallError>, what: &str) -> anyhow::Result<RpcError> {
    match result {
        Ok(v) => bail!("{what} succeeded: {v}"),
        Err(e) => e.rpc().cloned().with_context(|| format!("{what}: {e}")),
    }
}
