//! Group X: `codex exec --json`, the JSONL event stream CI bots and scripts parse instead
//! of the app-server's JSON-RPC, run against the sidecar like every world.

use std::time::Duration;

use anyhow::ensure;
use codex_parity_sidecar::Scripted;
use codex_parity_sidecar::bodies;

use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;

/// The time limit of one `codex exec`.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "exec_plain_prompt",
            "X1",
            "exec --json: a prompt's answer arrives as one agent_message item, exit 0",
            plain
        )
        .golden_transcript(),
    ]
}

async fn plain(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    world
        .script(vec![Scripted::sse(bodies::assistant_reply(
            "r1",
            "exec hello",
        ))])
        .await?;
    let run = world
        .exec(&["--skip-git-repo-check", "say hello"], EXEC_TIMEOUT)
        .await?;
    ctx.observe(format!("events: {:?}", run.types()));
    ctx.observe(format!("all: {}", serde_json::to_string(&run.events)?));
    ctx.observe(format!("stderr: {}", run.stderr_tail(5)));
    ensure_eq!(run.code(), Some(0), "exit status");
    ensure!(
        run.final_message() == Some("exec hello"),
        "final message: {:?}",
        run.final_message()
    );
    world.finish().await
}
