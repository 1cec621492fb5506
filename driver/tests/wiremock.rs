//! The Responses mock on a `wiremock::MockServer` of the test's own, set up only through
//! `codex_parity_wiremock`: the real codex (pinned) runs a plain turn and a dynamic
//! tool round trip against it, and the plain turn's request, normalised, is the one the
//! same turn sends the sidecar.

use std::sync::Arc;

use anyhow::ensure;
use codex_parity::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use codex_parity::drift::normalize;
use codex_parity::harness::scenario::{Ctx, Scenario};
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::harness::world::WorldOptions;
use codex_parity::plan::session::Session;
use codex_parity_sidecar::{Scripted, bodies};
use codex_parity_wiremock as responses;
use serde_json::json;

async fn session() -> Session {
    let sidecar = SidecarLauncher::codex_parity(env!("CARGO_BIN_EXE_codex-parity"));
    Session::pinned(sidecar)
        .await
        .expect("a session on the pinned codex")
}

/// One plain turn; codex's provider is `provider_url` (the world's sidecar, scripted
/// here, when `None`).
async fn plain_turn(ctx: &Ctx, provider_url: Option<String>) -> anyhow::Result<()> {
    let on_sidecar = provider_url.is_none();
    let mut world = ctx
        .world(WorldOptions {
            provider_url,
            ..WorldOptions::default()
        })
        .await?;
    if on_sidecar {
        world
            .script(vec![Scripted::sse(bodies::assistant_reply("r1", "hi"))])
            .await?;
    }
    let app = world.start().await?;
    let (thread, _) = world.start_thread(&app, json!({})).await?;
    let turn = run_turn(&app, &thread, vec![text("hello")], &TurnOptions::default()).await?;
    ensure!(
        turn.status == TurnStatus::Completed,
        "turn: {:?}",
        turn.error
    );
    ensure!(
        turn.final_response() == "hi",
        "answer: {}",
        turn.final_response()
    );
    world.finish().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_turn_on_wiremock_sends_what_it_sends_the_sidecar() {
    let session = session().await;
    let server = wiremock::MockServer::start().await;
    let capture = responses::mount_one(&server, bodies::assistant_reply("r1", "hi")).await;
    let url = responses::base_url(&server);
    let on_wiremock = Scenario::new("plain_on_wiremock", "WM-1", "a plain turn", move |c| {
        Box::pin(plain_turn(c, Some(url.clone())))
    });
    session
        .check(&on_wiremock)
        .await
        .expect("the turn on wiremock");
    let request = capture.single();
    assert_eq!(request.last_user_text().as_deref(), Some("hello"));
    assert_eq!(request.body["stream"], json!(true));
    capture.assert_pairing();

    let on_sidecar = Scenario::new("plain_on_sidecar", "WM-2", "a plain turn", |c| {
        Box::pin(plain_turn(c, None))
    });
    let ran = session.run(&on_sidecar).await;
    assert!(ran.failure.is_none(), "{:?}", ran.outcome);
    let sidecar: Vec<_> = ran
        .requests
        .into_iter()
        .filter(|r| r.is_model_request())
        .collect();
    assert_eq!(
        normalize::model_requests(&[request]),
        normalize::model_requests(&sidecar),
        "the same turn sends wiremock and the sidecar the same normalised request"
    );
}

/// The model calls `lookup`, the client answers, the model replies: all on wiremock.
async fn lookup(ctx: &Ctx, provider_url: String) -> anyhow::Result<()> {
    let mut world = ctx
        .world(WorldOptions {
            provider_url: Some(provider_url),
            ..WorldOptions::default()
        })
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
    world.finish().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_tool_round_trip_on_wiremock_carries_the_clients_answer() {
    let session = session().await;
    let server = wiremock::MockServer::start().await;
    let capture = responses::mount_sequence(
        &server,
        vec![
            bodies::function_call_reply("r1", "c1", "lookup", "{\"q\":\"x\"}"),
            bodies::assistant_reply("r2", "x is 1"),
        ],
    )
    .await;
    let url = Arc::new(responses::base_url(&server));
    let scenario = Scenario::new(
        "lookup_on_wiremock",
        "WM-3",
        "a tool round trip",
        move |c| Box::pin(lookup(c, url.to_string())),
    );
    session
        .check(&scenario)
        .await
        .expect("the round trip on wiremock");
    let requests = capture.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[0]
            .tool_names()
            .iter()
            .any(|n| n.contains("lookup"))
    );
    assert_eq!(
        requests[1].function_call_output_text("c1").as_deref(),
        Some("looked up \"x\"")
    );
    capture.assert_pairing();
}
