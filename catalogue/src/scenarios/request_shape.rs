//! Request shape per version (E1): what codex sends the model on one plain turn. The parts
//! the catalogue states for every version (the headers of `codex-app-server.md` §6 and the
//! body flags) are asserted here; the whole request, including what differs by version by
//! design (whether `instructions` is sent, the tools, the input messages), is compared with
//! the version's golden file ([`crate::drift::golden`]). Variants: `baseInstructions` and
//! `developerInstructions` on `thread/start`.

use anyhow::{Context, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::{check_identity_headers, header, setup_with};
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::drift::golden;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{MOCK_MODEL, WorldOptions};
use crate::scenario;

/// The `baseInstructions` of the variant.
pub const BASE_INSTRUCTIONS: &str = "You are a mock agent.";

/// The `developerInstructions` of the variant.
pub const DEVELOPER_INSTRUCTIONS: &str = "Be brief.";

/// The start of codex's own base prompt (every version so far).
const CODEX_BASE_PROMPT: &str = "You are a coding agent running in the Codex CLI";

/// The prompt of the turn.
const PROMPT: &str = "describe the request shape";

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "request_shape_plain",
            "E1",
            "a plain turn's headers and body flags; the request equals the golden file",
            plain
        )
        .golden_requests(),
        scenario!(
            "request_shape_base_instructions",
            "E1",
            "baseInstructions replace codex's base prompt in the request",
            base_instructions
        )
        .golden_requests()
        .applies(|caps| caps.needs_thread_field("baseInstructions")),
        scenario!(
            "request_shape_developer_instructions",
            "E1",
            "developerInstructions arrive in a developer message",
            developer_instructions
        )
        .golden_requests()
        .applies(|caps| caps.needs_thread_field("developerInstructions")),
    ]
}

/// One plain turn on a thread started with `thread_params`: checks the invariant headers
/// and body fields, then `check` on the model request, then the golden file of the scenario.
async fn one_turn(
    ctx: &Ctx,
    thread_params: Value,
    check: impl FnOnce(&CapturedRequest) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-1", "shape ok"))];
    let (world, app, thread, _) =
        setup_with(ctx, WorldOptions::default(), script, thread_params).await?;
    let turn = run_turn(&app, &thread, vec![text(PROMPT)], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(turn.final_response(), "shape ok", "final response");
    let started = turn
        .messages
        .iter()
        .find(|m| m.is("turn/started"))
        .context("no turn/started for the turn")?;
    let started_turn = started.params()["turn"]["id"]
        .as_str()
        .context("turn/started without turn.id")?;
    ensure_eq!(started_turn, turn.id.as_str(), "turn/started turn id");
    let requests = world.expect_requests(1).await?;
    let r = &requests[0];
    headers(ctx, r, &thread, started_turn)?;
    body(ctx, r, &thread)?;
    check(r)?;
    // The world ends first, so that the run keeps its requests (for `--request-diff` and
    // `--bless`) even when they differ from the golden file.
    let all = world.sidecar.all_requests().await?;
    world.finish().await?;
    golden::assert_matches(ctx, &all)
}

/// The headers of `codex-app-server.md` §6 that the catalogue states for every version.
fn headers(ctx: &Ctx, r: &CapturedRequest, thread: &str, turn: &str) -> anyhow::Result<()> {
    check_identity_headers(r)?;
    for name in ["session-id", "thread-id", "x-client-request-id"] {
        ensure_eq!(header(r, name)?, thread, "{name} header (the thread id)");
    }
    ensure_eq!(
        header(r, "x-codex-window-id")?.to_string(),
        format!("{thread}:0"),
        "x-codex-window-id header"
    );
    let agent = header(r, "user-agent")?;
    let prefix = format!("codex-parity/{} ", ctx.binary.version);
    ensure!(
        agent.starts_with(&prefix),
        "user-agent {agent:?} does not start with {prefix:?}"
    );
    ensure_eq!(header(r, "accept")?, "text/event-stream", "accept header");
    ensure_eq!(
        header(r, "content-type")?,
        "application/json",
        "content-type header"
    );
    let meta = r.turn_metadata()?;
    ensure_eq!(
        meta["thread_id"],
        json!(thread),
        "x-codex-turn-metadata.thread_id"
    );
    ensure_eq!(
        meta["turn_id"],
        json!(turn),
        "x-codex-turn-metadata.turn_id (the id of turn/started)"
    );
    Ok(())
}

/// The body fields the catalogue states for every version.
fn body(ctx: &Ctx, r: &CapturedRequest, thread: &str) -> anyhow::Result<()> {
    let b = r.body_json()?;
    ensure_eq!(b["model"], json!(MOCK_MODEL), "body.model");
    ensure_eq!(b["stream"], json!(true), "body.stream");
    ensure_eq!(b["store"], json!(false), "body.store");
    ensure_eq!(b["tool_choice"], json!("auto"), "body.tool_choice");
    ensure_eq!(
        b["prompt_cache_key"],
        json!(thread),
        "body.prompt_cache_key"
    );
    let parallel = &b["parallel_tool_calls"];
    if *parallel != json!(true) {
        ctx.drift(
            "body.parallel_tool_calls",
            parallel.clone(),
            format!("body.parallel_tool_calls is {parallel}, the catalogue says true"),
        );
    }
    ensure_eq!(
        r.last_user_text().as_deref(),
        Some(PROMPT),
        "last user text"
    );
    ensure!(
        !r.tool_names().is_empty(),
        "the request offers the model no tools"
    );
    Ok(())
}

/// Every text codex sent as instructions: `instructions` and the developer messages.
fn instruction_texts(r: &CapturedRequest) -> Vec<String> {
    let mut texts: Vec<String> = r
        .instructions_text()
        .map(str::to_string)
        .into_iter()
        .collect();
    texts.extend(r.message_input_texts("developer"));
    texts
}

async fn plain(ctx: &Ctx) -> anyhow::Result<()> {
    one_turn(ctx, json!({}), |r| {
        // The base prompt reaches the model, as `instructions` or as a developer message
        // (which one is the version's, in its golden file).
        ensure!(
            instruction_texts(r)
                .iter()
                .any(|t| t.starts_with(CODEX_BASE_PROMPT)),
            "codex's base prompt is neither in instructions nor in a developer message"
        );
        Ok(())
    })
    .await
}

async fn base_instructions(ctx: &Ctx) -> anyhow::Result<()> {
    let params = json!({"baseInstructions": BASE_INSTRUCTIONS});
    one_turn(ctx, params, |r| {
        let texts = instruction_texts(r);
        ensure!(
            texts.iter().any(|t| t == BASE_INSTRUCTIONS),
            "baseInstructions {BASE_INSTRUCTIONS:?} are neither the instructions nor a developer text: {:?}",
            texts.iter().map(|t| t.chars().take(60).collect::<String>()).collect::<Vec<_>>()
        );
        ensure!(
            !r.body_contains_text(CODEX_BASE_PROMPT),
            "codex's base prompt is still in the request although baseInstructions replace it"
        );
        Ok(())
    })
    .await
}

async fn developer_instructions(ctx: &Ctx) -> anyhow::Result<()> {
    let params = json!({"developerInstructions": DEVELOPER_INSTRUCTIONS});
    one_turn(ctx, params, |r| {
        ensure!(
            r.has_message_with_input_texts("developer", |texts| texts
                .iter()
                .any(|t| t.contains(DEVELOPER_INSTRUCTIONS))),
            "no developer message contains {DEVELOPER_INSTRUCTIONS:?}"
        );
        ensure!(
            r.instructions_text() != Some(DEVELOPER_INSTRUCTIONS),
            "developerInstructions became the instructions"
        );
        Ok(())
    })
    .await
}
