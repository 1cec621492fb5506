//! The harness as a library, used the way another crate's tests use it (public API only,
//! `docs/library.md`): a scenario written in Rust that starts a world, scripts the mock,
//! runs a thread with a dynamic tool answered by the client, reads what codex sent the
//! client and what it sent the model, and ends with the after-scenario checks; then a
//! scenario that leaves a scripted response unused must fail.

use anyhow::{Context, ensure};
use codex_parity::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use codex_parity::harness::outcome::Outcome;
use codex_parity::harness::scenario::{Ctx, Scenario};
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::harness::world::WorldOptions;
use codex_parity::plan::session::Session;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::json;

/// Our integration's flow: the model calls our `lookup` tool, we answer, it replies.
async fn lookup_round_trip(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    world
        .script(vec![
            Scripted::sse(bodies::function_call_reply(
                "r1",
                "c1",
                "lookup",
                "{\"q\":\"x\"}",
            )),
            Scripted::sse(bodies::assistant_reply("r2", "x is 1")),
        ])
        .await?;
    let app = world.start().await?;
    app.handle("item/tool/call", |params| {
        Ok(json!({"success": true, "contentItems": [
            {"type": "inputText", "text": format!("looked up {}", params["arguments"]["q"])}
        ]}))
    });
    let tool = json!({"type": "function", "name": "lookup", "description": "Look up.",
                      "inputSchema": {"type": "object"}});
    let (thread, _) = world
        .start_thread(&app, json!({"dynamicTools": [tool]}))
        .await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("look up x")],
        &TurnOptions::default(),
    )
    .await?;
    ensure!(
        turn.status == TurnStatus::Completed,
        "turn: {:?}",
        turn.error
    );
    ensure!(
        turn.final_response() == "x is 1",
        "answer: {}",
        turn.final_response()
    );
    // What codex sent the client, in order: the tool call request came before the answer.
    let methods: Vec<String> = app.transcript().into_iter().map(|s| s.method).collect();
    ensure!(
        methods.iter().any(|m| m == "item/tool/call"),
        "no item/tool/call in {methods:?}"
    );
    // What codex sent the model: the tool's output in the second request.
    let requests = world.sidecar.all_requests().await?;
    let second = requests
        .iter()
        .filter(|r| r.is_model_request())
        .nth(1)
        .context("no second model request")?;
    let output = second
        .function_call_output_text("c1")
        .context("no output for c1")?;
    ensure!(output.contains("looked up \"x\""), "output: {output}");
    world.finish().await
}

/// A world that scripts a reply nothing asks for: the after-scenario checks must fail it.
async fn leaves_a_reply(ctx: &Ctx) -> anyhow::Result<()> {
    let world = ctx.world(WorldOptions::default()).await?;
    world
        .script(vec![Scripted::sse(bodies::assistant_reply("r1", "unused"))])
        .await?;
    world.finish().await
}

fn sidecar() -> SidecarLauncher {
    // Another crate uses `SidecarLauncher::from_env()` (CODEX_PARITY_SIDECAR or PATH).
    SidecarLauncher::codex_parity(env!("CARGO_BIN_EXE_codex-parity"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_of_our_own_runs_on_the_pinned_codex() {
    let session = Session::pinned(sidecar()).await.unwrap();
    let scenario: Scenario = codex_parity::scenario!(
        "lookup_round_trip",
        "MY-1",
        "our lookup tool goes to the client and back",
        lookup_round_trip
    )
    .applies(|caps| caps.needs_dynamic_tools());
    let outcome = session.check(&scenario).await.unwrap();
    assert_eq!(outcome, Outcome::Passed);
    let ran = session.run(&scenario).await;
    assert_eq!(
        ran.requests.iter().filter(|r| r.is_model_request()).count(),
        2
    );
    assert_eq!(ran.transcripts.len(), 1, "one app-server, one transcript");

    let broken = codex_parity::scenario!("leaves_a_reply", "MY-2", "", leaves_a_reply);
    let err = session.check(&broken).await.unwrap_err().to_string();
    assert!(err.contains("1 scripted response(s) never served"), "{err}");
}
