//! The parity scenarios, grouped as in the catalogue (`docs/scenarios.md`): `executor`
//! (group A), `goal` and `goal_continuation` (group B), `history` (group C), `files` (group D),
//! `request_shape` (E1), `lifecycle` (E2, E3, E15), `protocol` (E16), `threads` (E4–E7),
//! `dynamic_tools` (E8), `interaction` (E9, E10, E12), `approvals` (E11), `reasoning` (E13),
//! `fault` (E14); group F: `websocket` (F1, F2), `websocket_fallback` (F3–F6),
//! `websocket_faults` (F7–F9), `sse_stream` (F10–F12), `rate_limits` (F13, F17) and
//! `compaction` (F14–F16); group G: `overrides` (G1, G2), `user_input` (G3–G6),
//! `thread_lifecycle` (G7–G11), `plan_items` (G12–G15), `mcp` (G16–G23) and `review`
//! (G24–G27); group H: `paged_history` (H1–H5, H7), `settings_updates` (H6, H8),
//! `startup_reads` (H10–H16), `thread_metadata` (H17), `server_requests` (H20–H22),
//! `auth_refresh` (H23–H25), `mcp_elicitation` (H26–H28), `model_notices` (H30–H33) and
//! `reasoning` (H34); group I: `listeners` (I1–I10), `listener_clients` (I11–I16) and
//! `app_server_faults` (I20–I25); group J: `configuration` (J1–J14); and group X: `exec`
//! (X1–X7) and `exec_flags` (X8–X12).
//! [`registry()`] lists them all. An integrator's scenario files become scenarios of the same
//! kind in the layer below (`crate::scenario_file`). Each group file declares its scenarios
//! with [`scenario!`](crate::scenario) in its `scenarios()`.

pub mod app_server_faults;
pub mod approvals;
pub mod auth_refresh;
pub mod catalogue;
pub mod compaction;
pub mod configuration;
pub mod dynamic_tools;
pub mod exec;
pub mod exec_flags;
pub mod executor;
pub mod fault;
pub mod files;
pub mod goal;
pub mod goal_continuation;
pub mod history;
pub mod interaction;
pub mod lifecycle;
pub mod listener_clients;
pub mod listeners;
pub mod mcp;
pub mod mcp_elicitation;
pub mod model_notices;
pub mod overrides;
pub mod paged_history;
pub mod performance;
pub mod plan_items;
pub mod protocol;
pub mod rate_limits;
pub mod reasoning;
pub mod registry;
pub mod request_shape;
pub mod review;
pub mod server_requests;
pub mod settings_updates;
pub mod sse_stream;
pub mod startup_reads;
pub mod support;
pub mod thread_lifecycle;
pub mod thread_metadata;
pub mod threads;
pub mod user_input;
pub mod websocket;
pub mod websocket_fallback;
pub mod websocket_faults;

pub use registry::registry;

use std::sync::{Arc, Mutex};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use codex_parity_sidecar::Scripted;
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::events::Usage;

use crate::app_server::message::RpcError;
use crate::app_server::{AppServer, CallError};
use crate::ensure_eq;
use crate::harness::scenario::Ctx;
use crate::harness::world::{MOCK_API_KEY, Transport, World, WorldOptions};

/// A model request came the way the world's transport sends it: `POST /v1/responses` over
/// HTTP, or a frame on the `GET /v1/responses` WebSocket.
pub fn check_route(world: &World, r: &CapturedRequest) -> anyhow::Result<()> {
    let want = match world.options.transport {
        Transport::Http => ("POST", None),
        Transport::WebSocket => ("GET", Some("websocket")),
    };
    let got = (r.method.as_str(), r.transport.as_deref());
    ensure_eq!(got, want, "request #{} method and transport", r.index);
    ensure_eq!(r.path.as_str(), "/v1/responses", "path");
    Ok(())
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

/// The structured-output schema G1 (`outputSchema`) and X8 (`--output-schema`) constrain
/// the answer with: one required string field.
pub fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": false
    })
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

/// The identity headers every model request carries: `originator` and the mock's bearer
/// token.
pub fn check_identity_headers(r: &CapturedRequest) -> anyhow::Result<()> {
    ensure_eq!(
        header(r, "originator")?,
        "codex-parity",
        "originator header"
    );
    ensure_eq!(
        header(r, "authorization")?.to_string(),
        format!("Bearer {MOCK_API_KEY}"),
        "authorization header"
    );
    Ok(())
}

/// Answers every `method` server request with `answer(params)` and keeps the params of
/// each; read them with [`recorded`].
pub fn record_requests(
    app: &AppServer,
    method: &str,
    answer: impl Fn(&Value) -> Result<Value, RpcError> + Send + Sync + 'static,
) -> Arc<Mutex<Vec<Value>>> {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = seen.clone();
    app.handle(method, move |params| {
        log.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(params.clone());
        answer(params)
    });
    seen
}

/// The params [`record_requests`] kept so far.
pub fn recorded(seen: &Mutex<Vec<Value>>) -> Vec<Value> {
    seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// `n` random lower-case hex digits: the random tail of a UUIDv7 (`n` at most 15).
pub fn random_hex(n: usize) -> String {
    let id = uuid::Uuid::now_v7().simple().to_string();
    id[id.len() - n..].to_string()
}

/// The usage A3 and E7 script: 11 input (3 cached), 7 output (5 reasoning), 18 in all.
pub const SAMPLE_USAGE: Usage = Usage {
    input: 11,
    cached: 3,
    output: 7,
    reasoning: 5,
    total: 18,
};

/// The thread ids a `thread/list` result names.
pub fn listed_ids(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str().map(String::from))
        .collect()
}

/// The user texts of `request` that are a scenario's own prompts (those starting with
/// "prompt"), in order: codex adds user messages of its own (the environment context).
pub(crate) fn prompts_of(request: &CapturedRequest) -> Vec<String> {
    request
        .message_input_texts("user")
        .into_iter()
        .filter(|t| t.starts_with("prompt"))
        .collect()
}
