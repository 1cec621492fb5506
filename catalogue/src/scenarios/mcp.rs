//! MCP tools, hermetically (`parity-scenarios.md` G16–G23): codex launches the project's own
//! scripted MCP server (`codex-parity sidecar mcp`, see `docs/mcp-server.md`) from
//! `config.toml`, offers its tools to the model, runs the model's calls on it and reports
//! them as `mcpToolCall` items; errors, interrupts, a server that does not start and faults.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use crate::app_server::AppServer;
use crate::app_server::turn::{
    Turn, TurnOptions, TurnStatus, run_turn, start_turn, text, wait_turn,
};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{World, WorldOptions};
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "mcp_tools_listed_to_model",
            "G16",
            "codex starts the configured MCP server (initialize, tools/list), tells the client \
             starting then ready, and offers its tools to the model as a namespace of functions",
            tools_listed
        )
        .applies(Capabilities::needs_mcp),
        scenario!(
            "mcp_tool_call_round_trip",
            "G17",
            "a model call of an MCP tool reaches the server with its arguments; the result \
             returns to the model and the client sees the mcpToolCall item start and complete",
            round_trip
        )
        .applies(Capabilities::needs_mcp),
        scenario!(
            "mcp_tool_error_reaches_model",
            "G18",
            "a tool result with isError: true fails the mcpToolCall item; the model gets the \
             error text",
            tool_error
        )
        .applies(Capabilities::needs_mcp),
        scenario!(
            "mcp_slow_tool_interrupted",
            "G19",
            "turn/interrupt during a slow MCP call ends the turn interrupted (the started \
             mcpToolCall item never completes); the server is told to cancel; the next \
             request carries the aborted call",
            slow_interrupted
        )
        .applies(Capabilities::needs_mcp),
        scenario!(
            "mcp_server_fails_to_start",
            "G20",
            "an MCP server that exits at once is reported starting then failed; turns go on \
             without its tools",
            fails_to_start
        )
        .applies(Capabilities::needs_mcp),
        scenario!(
            "mcp_server_status_list",
            "G21",
            "mcpServerStatus/list names the configured server with its tools and server info",
            status_list
        )
        .applies(Capabilities::needs_mcp),
        scenario!(
            "mcp_server_crash_mid_call",
            "G22",
            "an MCP server that dies during a call fails the mcpToolCall item; the model is \
             told and the turn completes",
            crash_mid_call
        )
        .applies(Capabilities::needs_mcp),
        scenario!(
            "mcp_malformed_response",
            "G23",
            "a line that is not JSON in answer to a call fails the mcpToolCall item; the turn \
             completes",
            malformed
        )
        .applies(Capabilities::needs_mcp)
        .waits(),
    ]
}

/// The name codex knows the scripted server by (`[mcp_servers.parity]`).
pub(super) const SERVER: &str = "parity";

/// The scripted MCP server's files in a world: its script and its capture.
pub(super) struct McpFiles {
    capture: PathBuf,
}

/// Writes `script` into the world and adds `[mcp_servers.parity]`, started as this
/// executable's `sidecar mcp`, to its `config.toml`.
fn add_mcp_server(
    ctx: &Ctx,
    world: &mut World,
    script: &Value,
    tool_timeout_sec: Option<u64>,
) -> anyhow::Result<McpFiles> {
    let dir = world.root().to_path_buf();
    let script_path = dir.join("mcp-script.json");
    let capture = dir.join("mcp-capture.jsonl");
    std::fs::write(&script_path, script.to_string()).context("writing the MCP script")?;
    let launcher = &ctx.settings.sidecar;
    let mut args: Vec<String> = launcher
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    args.extend(["mcp".into(), "--script".into(), path_str(&script_path)]);
    args.extend(["--capture".into(), path_str(&capture)]);
    let toml_str = |s: &str| Value::String(s.to_string()).to_string();
    let args: Vec<String> = args.iter().map(|a| toml_str(a)).collect();
    world.options.extra_config.extend([
        format!("\n[mcp_servers.{SERVER}]"),
        format!("command = {}", toml_str(&path_str(&launcher.program))),
        format!("args = [{}]", args.join(", ")),
        "startup_timeout_sec = 20".into(),
        format!("tool_timeout_sec = {}", tool_timeout_sec.unwrap_or(60)),
    ]);
    let home = world.home.clone();
    world.write_config(&home)?;
    Ok(McpFiles { capture })
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

/// The capture's lines so far.
pub(super) fn capture_lines(files: &McpFiles) -> anyhow::Result<Vec<Value>> {
    let text = match std::fs::read_to_string(&files.capture) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).context("reading the MCP capture"),
    };
    // A line still being written has no newline yet: it is left for the next read.
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).context("an MCP capture line is not JSON"))
        .collect()
}

/// A world of `options` with the scripted MCP server, `script` queued, an initialized app-server
/// and a thread.
pub(super) async fn mcp_setup(
    ctx: &Ctx,
    options: WorldOptions,
    tools: Value,
    script: Vec<Scripted>,
    tool_timeout_sec: Option<u64>,
) -> anyhow::Result<(World, Arc<AppServer>, String, McpFiles)> {
    let mut world = ctx.world(options).await?;
    let files = add_mcp_server(ctx, &mut world, &tools, tool_timeout_sec)?;
    world.script(script).await?;
    let app = world.start().await?;
    let (thread, _) = world.start_thread(&app, json!({})).await?;
    Ok((world, app, thread, files))
}

/// The echo tool most scenarios offer: one required string argument, answered with `reply`.
fn echo_tool(reply: Value) -> Value {
    json!({
        "name": "echo",
        "description": "Echoes its text",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        },
        "reply": reply
    })
}

/// The namespace tool of the request that holds the scripted server's tools.
fn mcp_namespace(r: &CapturedRequest) -> anyhow::Result<Value> {
    let body = r.body_json()?;
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| {
            t["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("mcp__parity"))
        })
        .cloned()
        .with_context(|| format!("request #{} offers no tool of the MCP server", r.index))
}

/// Runs a first turn answered "ready" and returns the namespace its request offered the MCP
/// tools under: the model then calls them as offered.
pub(super) async fn offered_namespace(
    world: &World,
    app: &AppServer,
    thread: &str,
) -> anyhow::Result<String> {
    world
        .script(vec![Scripted::sse(bodies::assistant_reply(
            "resp-ready",
            "ready",
        ))])
        .await?;
    let turn = run_turn(app, thread, vec![text("hello")], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "first turn status");
    let requests = world.expect_requests(1).await?;
    let namespace = mcp_namespace(&requests[0])?;
    namespace["name"]
        .as_str()
        .map(String::from)
        .context("the MCP namespace has no name")
}

/// The `mcpToolCall` items of `method` (`item/started` or `item/completed`) in `turn`.
fn mcp_items(turn: &Turn, method: &str) -> Vec<Value> {
    turn.notifications(method)
        .into_iter()
        .filter_map(|p| p.get("item"))
        .filter(|i| i["type"] == "mcpToolCall")
        .cloned()
        .collect()
}

/// The one `mcpToolCall` item `turn` completed, with the fields every version gives.
fn completed_item(turn: &Turn) -> anyhow::Result<Value> {
    let items = mcp_items(turn, "item/completed");
    ensure!(
        items.len() == 1,
        "expected one completed mcpToolCall item, got {items:?}"
    );
    let item = &items[0];
    Ok(json!({
        "server": item["server"], "tool": item["tool"], "status": item["status"],
        "arguments": item["arguments"], "result": item["result"], "error": item["error"]
    }))
}

/// The `tools/call` requests the server received.
fn captured_calls(files: &McpFiles) -> anyhow::Result<Vec<Value>> {
    Ok(capture_lines(files)?
        .into_iter()
        .filter(|l| l["event"] == "received" && l["message"]["method"] == "tools/call")
        .map(|l| l["message"]["params"].clone())
        .collect())
}

/// Waits up to `timeout` for the server to have received `n` `tools/call` requests.
async fn calls_arrived(files: &McpFiles, n: usize, timeout: Duration) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if captured_calls(files)?.len() >= n {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the MCP server did not receive {n} tools/call request(s)");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Finishes the world, then requires every MCP server process codex started to be gone.
pub(super) async fn finish(world: World, files: &McpFiles) -> anyhow::Result<()> {
    let pids: Vec<u64> = capture_lines(files)?
        .iter()
        .filter(|l| l["event"] == "start")
        .filter_map(|l| l["pid"].as_u64())
        .collect();
    world.finish().await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    loop {
        let alive: Vec<u64> = pids
            .iter()
            .copied()
            .filter(|p| Path::new(&format!("/proc/{p}")).exists())
            .collect();
        if alive.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("MCP server process(es) {alive:?} outlived codex");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A request's output for `call_id`, with codex's measured wall time left out.
pub(super) fn output_of(r: &CapturedRequest, call_id: &str) -> Value {
    let output = r
        .function_call_output(call_id)
        .map(|o| o["output"].clone())
        .unwrap_or(Value::Null);
    match output {
        Value::String(text) => json!(without_wall_time(&text)),
        Value::Array(parts) => Value::Array(
            parts
                .into_iter()
                .map(|mut part| {
                    if let Some(text) = part["text"].as_str() {
                        part["text"] = json!(without_wall_time(text));
                    }
                    part
                })
                .collect(),
        ),
        other => other,
    }
}

/// `text` with the seconds of its leading `Wall time: N seconds` replaced by `…`.
fn without_wall_time(text: &str) -> String {
    const PREFIX: &str = "Wall time: ";
    match text
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.split_once(" seconds"))
    {
        Some((_, tail)) => format!("{PREFIX}… seconds{tail}"),
        None => text.to_string(),
    }
}

/// `value` with every measured time in its texts (`after 4.999999729s`, as some codex
/// versions print the time they waited rather than the limit) written `after <elapsed>s`,
/// so the drift it shows is the same from run to run. A whole number of seconds (the limit,
/// `after 5s`) is kept.
fn without_elapsed(value: Value) -> Value {
    match value {
        Value::String(text) => match regex::Regex::new(r"after \d+\.\d+s") {
            Ok(measured) => {
                Value::String(measured.replace_all(&text, "after <elapsed>s").into_owned())
            }
            Err(_) => Value::String(text),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(without_elapsed).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, without_elapsed(v)))
                .collect(),
        ),
        other => other,
    }
}

/// What the model gets for a call whose result (or error) is the text `text`: a wall-time
/// part, then the text as a part of its own.
fn model_output(text: &str) -> Value {
    json!([
        {"type": "input_text", "text": "Wall time: … seconds\nOutput:"},
        {"type": "input_text", "text": text}
    ])
}

async fn tools_listed(ctx: &Ctx) -> anyhow::Result<()> {
    let tools = json!({"tools": [echo_tool(json!({"text": "unused"}))]});
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-1", "hi"))];
    let (world, app, thread, files) =
        mcp_setup(ctx, WorldOptions::default(), tools, script, None).await?;
    let turn = run_turn(&app, &thread, vec![text("hello")], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let requests = world.expect_requests(1).await?;
    let namespace = mcp_namespace(&requests[0])?;
    ctx.expect(
        "mcp.namespace_name",
        json!("mcp__parity"),
        namespace["name"].clone(),
    );
    ensure_eq!(
        namespace["type"],
        json!("namespace"),
        "the MCP tools' tool type"
    );
    ensure_eq!(
        namespace["tools"],
        json!([{
            "type": "function", "name": "echo", "description": "Echoes its text",
            "strict": false,
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"]
            }
        }]),
        "the functions of the MCP namespace"
    );
    let statuses: Vec<Value> = app
        .messages()
        .iter()
        .filter(|m| m.is("mcpServer/startupStatus/updated"))
        .map(|m| json!([m.params()["name"], m.params()["status"]]))
        .collect();
    let want = json!([["parity", "starting"], ["parity", "ready"]]);
    ensure_eq!(
        json!(statuses),
        want,
        "mcpServer/startupStatus/updated sequence"
    );
    let methods: Vec<Value> = capture_lines(&files)?
        .iter()
        .filter(|l| l["event"] == "received")
        .map(|l| l["message"]["method"].clone())
        .take(3)
        .collect();
    let want = json!(["initialize", "notifications/initialized", "tools/list"]);
    ensure_eq!(
        json!(methods),
        want,
        "the first messages the MCP server received"
    );
    finish(world, &files).await
}

async fn round_trip(ctx: &Ctx) -> anyhow::Result<()> {
    let reply = json!({"text": "echo: hello"});
    let (world, app, thread, files) = call_world(ctx, reply, None).await?;
    let turn = call_turn(&app, &thread).await?;
    let calls = captured_calls(&files)?;
    ensure_eq!(
        json!(
            calls
                .iter()
                .map(|c| json!([c["name"], c["arguments"]]))
                .collect::<Vec<_>>()
        ),
        json!([["echo", {"text": "hello"}]]),
        "the tools/call requests the MCP server received"
    );
    let started = mcp_items(&turn, "item/started");
    let started: Vec<Value> = started
        .iter()
        .map(|i| json!([i["server"], i["tool"], i["status"], i["arguments"]]))
        .collect();
    ensure_eq!(
        json!(started),
        json!([["parity", "echo", "inProgress", {"text": "hello"}]]),
        "mcpToolCall item/started"
    );
    let text_content = json!([{"type": "text", "text": "echo: hello"}]);
    let item = completed_item(&turn)?;
    ctx.expect(
        "mcp.completed_item",
        json!({
            "server": "parity", "tool": "echo", "status": "completed",
            "arguments": {"text": "hello"},
            "result": {"content": text_content, "structuredContent": null, "_meta": null},
            "error": null
        }),
        item,
    );
    let requests = world.expect_requests(3).await?;
    ctx.expect(
        "mcp.output_to_model",
        model_output("echo: hello"),
        output_of(&requests[2], "call-1"),
    );
    finish(world, &files).await
}

/// The arguments the model calls `echo` with.
const ARGS: &str = r#"{"text":"hello"}"#;

/// A world with the MCP server answering `echo` with `reply`, a first turn that learns the
/// namespace, and a second turn whose model calls `echo` once, then answers "done" (the
/// second turn is started, not awaited).
async fn call_world(
    ctx: &Ctx,
    reply: Value,
    tool_timeout_sec: Option<u64>,
) -> anyhow::Result<(World, Arc<AppServer>, String, McpFiles)> {
    let tools = json!({"tools": [echo_tool(reply)]});
    let (world, app, thread, files) = mcp_setup(
        ctx,
        WorldOptions::default(),
        tools,
        vec![],
        tool_timeout_sec,
    )
    .await?;
    let namespace = offered_namespace(&world, &app, &thread).await?;
    world
        .script(vec![
            Scripted::sse(bodies::one_item_reply(
                "resp-call",
                events::function_call_with_namespace("call-1", &namespace, "echo", ARGS),
            )),
            Scripted::sse(bodies::assistant_reply("resp-done", "done")),
        ])
        .await?;
    Ok((world, app, thread, files))
}

/// The status, result and error of a completed `mcpToolCall` item.
fn outcome(item: &Value) -> Value {
    json!({"status": item["status"], "result": item["result"], "error": item["error"]})
}

/// The outcome of an item failed by codex's MCP client with `cause`.
fn failed_call(cause: &str) -> Value {
    json!({"status": "failed", "result": null, "error": {"message": failure_text(cause)}})
}

/// The message of a call of `echo` that codex's MCP client failed with `cause`.
fn failure_text(cause: &str) -> String {
    format!("tool call error: tool call failed for `parity/echo`\n\nCaused by:\n    {cause}")
}

/// Runs the turn whose model calls `echo` (see [`call_world`]); it must complete.
async fn call_turn(app: &AppServer, thread: &str) -> anyhow::Result<Turn> {
    let turn = run_turn(app, thread, vec![text("use echo")], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(turn.final_response(), "done", "final response");
    Ok(turn)
}

async fn tool_error(ctx: &Ctx) -> anyhow::Result<()> {
    let reply = json!({"error": "no echo today"});
    let (world, app, thread, files) = call_world(ctx, reply, None).await?;
    let turn = call_turn(&app, &thread).await?;
    ensure_eq!(captured_calls(&files)?.len(), 1, "tools/call requests");
    let content = json!([{"type": "text", "text": "no echo today"}]);
    let want = json!({
        "status": "failed",
        "result": {"content": content, "structuredContent": null, "_meta": null},
        "error": null
    });
    ctx.expect("mcp.error_item", want, outcome(&completed_item(&turn)?));
    let requests = world.expect_requests(3).await?;
    let output = output_of(&requests[2], "call-1");
    ctx.expect(
        "mcp.error_output_to_model",
        model_output("no echo today"),
        output,
    );
    finish(world, &files).await
}

/// The model's output for an aborted call, with its duration left out.
fn aborted_output(output: &Value) -> Value {
    match output.as_str() {
        Some(text) if text.starts_with("aborted by user after ") => {
            json!("aborted by user after …")
        }
        _ => output.clone(),
    }
}

async fn slow_interrupted(ctx: &Ctx) -> anyhow::Result<()> {
    let reply = json!({"text": "too late", "delayMs": 30_000});
    let (world, app, thread, files) = call_world(ctx, reply, None).await?;
    // The call's reply is served in this turn; "done" answers the turn after the interrupt.
    let options = TurnOptions::default();
    let started = start_turn(&app, &thread, vec![text("use echo")], &options).await?;
    let turn_id = started.id.clone();
    calls_arrived(&files, 1, Duration::from_secs(10)).await?;
    app.turn_interrupt(&thread, &turn_id)
        .await
        .context("turn/interrupt")?;
    let turn = wait_turn(&app, started, Duration::from_secs(5)).await?;
    ensure_eq!(
        turn.status,
        TurnStatus::Interrupted,
        "interrupted turn status"
    );
    let started = mcp_items(&turn, "item/started").len();
    ensure_eq!(
        started,
        1,
        "mcpToolCall item/started of the interrupted turn"
    );
    let items: Vec<Value> = mcp_items(&turn, "item/completed")
        .iter()
        .map(outcome)
        .collect();
    ctx.expect("mcp.interrupted_item", json!([]), json!(items));
    let next = run_turn(&app, &thread, vec![text("after")], &options).await?;
    ensure_eq!(next.status, TurnStatus::Completed, "next turn status");
    let requests = world.expect_requests(3).await?;
    let output = aborted_output(&output_of(&requests[2], "call-1"));
    ctx.expect(
        "mcp.interrupted_output_to_model",
        json!("aborted by user after …"),
        output,
    );
    let cancelled = capture_lines(&files)?
        .into_iter()
        .filter(|l| l["event"] == "received")
        .filter(|l| l["message"]["method"] == "notifications/cancelled")
        .count();
    ctx.expect("mcp.cancel_sent", json!(1), json!(cancelled));
    finish(world, &files).await
}

/// The start of the error every version reports for a server that exits at once.
const START_FAILURE: &str = concat!(
    "MCP client for `parity` failed to start: ",
    "MCP startup failed: handshaking with MCP server failed: "
);

/// The start of the `toolsError` `mcpServerStatus/list` gives for that server.
const LIST_FAILURE: &str = "MCP startup failed: handshaking with MCP server failed: ";

async fn fails_to_start(ctx: &Ctx) -> anyhow::Result<()> {
    let tools = json!({"tools": [echo_tool(json!({"text": "x"}))], "exitAtStart": 1});
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-1", "fine"))];
    let (world, app, thread, files) =
        mcp_setup(ctx, WorldOptions::default(), tools, script, None).await?;
    let turn = run_turn(&app, &thread, vec![text("hello")], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(turn.final_response(), "fine", "final response");
    let requests = world.expect_requests(1).await?;
    let offered = mcp_namespace(&requests[0]).is_ok();
    ensure!(!offered, "the failed server's tools are offered");
    // The error's tail names the transport's failure, which differs by version and by race
    // (a closed pipe or a closed connection): only its start is the contract.
    let statuses: Vec<Value> = app
        .messages()
        .iter()
        .filter(|m| m.is("mcpServer/startupStatus/updated"))
        .map(|m| {
            let p = m.params();
            let error = p["error"].as_str().map(|e| e.starts_with(START_FAILURE));
            json!([p["name"], p["status"], error, p["failureReason"]])
        })
        .collect();
    let want = json!([
        ["parity", "starting", null, null],
        ["parity", "failed", true, null]
    ]);
    ensure_eq!(
        json!(statuses),
        want,
        "mcpServer/startupStatus/updated sequence"
    );
    let list = app
        .call("mcpServerStatus/list", json!({}))
        .await
        .context("mcpServerStatus/list")?;
    let listed: Vec<Value> = list["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|server| {
            let error = server["toolsError"].as_str();
            let error = error.map(|e| e.starts_with(LIST_FAILURE));
            json!([server["name"], server["tools"], error])
        })
        .collect();
    let want = json!([["parity", {}, true]]);
    ctx.expect("mcp.failed_start_list", want, json!(listed));
    finish(world, &files).await
}

async fn status_list(ctx: &Ctx) -> anyhow::Result<()> {
    let tools = json!({"tools": [echo_tool(json!({"text": "x"}))]});
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-1", "hi"))];
    let (world, app, thread, files) =
        mcp_setup(ctx, WorldOptions::default(), tools, script, None).await?;
    let turn = run_turn(&app, &thread, vec![text("hello")], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let list = app
        .call("mcpServerStatus/list", json!({}))
        .await
        .context("mcpServerStatus/list")?;
    let data = list["data"]
        .as_array()
        .context("mcpServerStatus/list has no data")?;
    ensure_eq!(data.len(), 1, "servers listed");
    let server = &data[0];
    ensure_eq!(server["name"], json!("parity"), "server name");
    ensure_eq!(
        server["tools"]["echo"],
        json!({
            "name": "echo", "description": "Echoes its text",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"]
            }
        }),
        "the listed echo tool"
    );
    ensure_eq!(server["authStatus"], json!("unsupported"), "authStatus");
    let info = server["serverInfo"]["name"].clone();
    ctx.expect("mcp.status_server_info", json!("codex-parity-mcp"), info);
    finish(world, &files).await
}

async fn crash_mid_call(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread, files) = call_world(ctx, json!({"fault": "crash"}), None).await?;
    let turn = call_turn(&app, &thread).await?;
    let item = outcome(&completed_item(&turn)?);
    ensure_eq!(
        item,
        failed_call("Transport closed"),
        "the crashed call's item"
    );
    let requests = world.expect_requests(3).await?;
    let output = output_of(&requests[2], "call-1");
    let want = model_output(&failure_text("Transport closed"));
    ctx.expect("mcp.crash_output_to_model", want, output);
    finish(world, &files).await
}

async fn malformed(ctx: &Ctx) -> anyhow::Result<()> {
    let reply = json!({"fault": "malformed"});
    let (world, app, thread, files) = call_world(ctx, reply, Some(5)).await?;
    let turn = call_turn(&app, &thread).await?;
    let item = without_elapsed(outcome(&completed_item(&turn)?));
    let want = failed_call("timed out awaiting tools/call after 5s");
    ctx.expect("mcp.malformed_item", want, item);
    let requests = world.expect_requests(3).await?;
    let output = without_elapsed(output_of(&requests[2], "call-1"));
    let want = model_output(&failure_text("timed out awaiting tools/call after 5s"));
    ctx.expect("mcp.malformed_output_to_model", want, output);
    finish(world, &files).await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn measured_times_are_written_elapsed_and_the_limit_is_kept() {
        let v = json!({"error": {"message": "timed out awaiting tools/call after 4.999999729s"},
                       "parts": ["after 5s", "after 12.5s and after 3s"]});
        assert_eq!(
            super::without_elapsed(v),
            json!({"error": {"message": "timed out awaiting tools/call after <elapsed>s"},
                   "parts": ["after 5s", "after <elapsed>s and after 3s"]})
        );
    }
}
