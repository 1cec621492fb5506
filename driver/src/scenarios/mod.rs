//! The parity scenarios, grouped as in `parity-scenarios.md`: `executor` (group A), `goal`
//! (group B, not yet registered),
//! `lifecycle` (E2, E3, E15) and `protocol` (E16).

pub mod executor;
pub mod goal;
pub mod lifecycle;
pub mod protocol;

use std::time::Duration;

use anyhow::{Context, bail};
use std::sync::Arc;

use codex_parity_sidecar::Scripted;
use codex_parity_sidecar::captured::CapturedRequest;

use crate::app_server::AppServer;
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

/// A world with the default options and `script` queued, an initialized app-server and a
/// thread in the workspace: the start of most scenarios.
pub async fn setup(
    ctx: &Ctx,
    script: Vec<Scripted>,
) -> anyhow::Result<(World, Arc<AppServer>, String)> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    world.script(script).await?;
    let app = world.start().await?;
    let (thread, _) = world.start_thread(&app, serde_json::json!({})).await?;
    Ok((world, app, thread))
}
