//! Group X: `codex exec --json`, the JSONL event stream CI bots and scripts parse instead
//! of the app-server's JSON-RPC, run against the sidecar like every world. This file holds
//! the stream itself (X1–X7: a plain answer, streamed text, a shell command, a file change,
//! the model API failing); `exec_flags` holds the flags integrators pass (X8–X12).
//!
//! Every scenario needs the flags it passes: `codex exec --help` of the binary must list
//! them ([`Capabilities::needs_exec_flags`]), or it is not applicable there.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::random_hex;
use crate::app_server::exec::ExecRun;
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::git;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;

/// The time limit of one `codex exec`.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

/// The flags every exec run of the group passes: `World::exec`'s own (`--json`,
/// `--disable`, `-c`) and `--skip-git-repo-check` (worlds' workspaces are no repository).
pub const BASE_FLAGS: [&str; 4] = ["--json", "--disable", "--config", "--skip-git-repo-check"];

/// [`BASE_FLAGS`] and `extra`, as a scenario's requirement.
pub fn needs_flags(extra: &'static [&'static str]) -> impl Fn(&Capabilities) -> Result<(), String> {
    move |caps: &Capabilities| {
        caps.needs_exec_flags(&BASE_FLAGS)?;
        caps.needs_exec_flags(extra)
    }
}

/// The flags X3 and X4 run with: the sandbox chosen on the command line.
const SANDBOX: [&str; 2] = ["--sandbox", "danger-full-access"];

/// The group's scenarios in this file.
pub fn scenarios() -> Vec<Scenario> {
    let mut all = vec![
        scenario!(
            "exec_plain_prompt",
            "X1",
            "exec --json: a prompt's answer arrives as one agent_message item, exit 0",
            plain
        )
        .applies(needs_flags(&[]))
        .golden_transcript(),
        scenario!(
            "exec_streamed_text_arrives_once",
            "X2",
            "exec --json: a reply streamed in deltas is one agent_message item with the whole \
             text, no delta events, exit 0",
            streamed
        )
        .applies(needs_flags(&[])),
        scenario!(
            "exec_shell_command_item",
            "X3",
            "exec --json: a shell call runs; command_execution started then completed with the \
             command, output and exit code 0; the output goes back to the model; exit 0",
            command
        )
        .applies(needs_flags(&["--sandbox"]))
        .golden_transcript(),
        scenario!(
            "exec_file_change_item",
            "X4",
            "exec --json: an apply_patch call is one completed file_change item (add, the \
             path); the file holds the content; exit 0",
            file_change
        )
        .applies(needs_flags(&["--sandbox"]))
        .golden_transcript(),
    ];
    all.extend(failure_scenarios());
    all
}

/// The request's first and only call output for `call_id`, as text.
pub fn output_text(r: &CapturedRequest, call_id: &str) -> anyhow::Result<String> {
    let item = r
        .function_call_output(call_id)
        .with_context(|| format!("request #{} carries no output of {call_id}", r.index))?;
    Ok(match &item["output"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// Records what one run printed: its event types, exit, and the tail of its stderr.
pub fn observe(ctx: &Ctx, what: &str, run: &ExecRun) {
    ctx.observe(format!(
        "{what}: exit {:?} in {} ms, events {:?}",
        run.code(),
        run.duration.as_millis(),
        run.types()
    ));
    if !run.unparsed.is_empty() {
        ctx.observe(format!("{what}: stdout lines not JSON: {:?}", run.unparsed));
    }
}

/// Fails unless the run exited with `code`, naming what it printed otherwise.
pub fn ensure_exit(run: &ExecRun, code: i32) -> anyhow::Result<()> {
    ensure!(
        run.code() == Some(code),
        "exit status: expected {code}, got {:?} (events {:?}; stderr: {})",
        run.code(),
        run.types(),
        run.stderr_tail(3)
    );
    Ok(())
}

/// X1: one scripted answer; the run prints it as its one `agent_message`.
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
    observe(ctx, "run", &run);
    ctx.observe(format!("all: {}", serde_json::to_string(&run.events)?));
    ensure_exit(&run, 0)?;
    ensure!(
        run.final_message() == Some("exec hello"),
        "final message: {:?}",
        run.final_message()
    );
    world.finish().await
}

/// The parts X2 streams, and their whole.
/// Each part is a word no other event carries, so an event holding one is found by it.
const PARTS: [&str; 4] = ["Quokkas ", "stream ", "xylophone ", "zephyrs."];

/// X2: the reply comes as `output_text.delta` events before its whole message; the exec
/// stream must carry the text once, whole, in one `agent_message` item, and no event with a
/// part of it alone.
async fn streamed(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    world
        .script(vec![Scripted::sse(bodies::streaming_reply(
            "r1", "msg-1", &PARTS,
        ))])
        .await?;
    let run = world
        .exec(&["--skip-git-repo-check", "stream to me"], EXEC_TIMEOUT)
        .await?;
    observe(ctx, "run", &run);
    ensure_exit(&run, 0)?;
    let whole = PARTS.concat();
    let messages = run.completed("agent_message");
    ensure_eq!(messages.len(), 1, "completed agent_message items");
    ensure_eq!(messages[0]["text"], json!(whole), "agent_message text");
    // No event but the completed item carries text of the message: no delta, no partial.
    let carriers: Vec<&str> = run
        .events
        .iter()
        .filter(|e| {
            let text = e.to_string();
            PARTS.iter().any(|p| text.contains(p.trim()))
        })
        .map(crate::app_server::exec::event_type)
        .collect();
    ensure_eq!(
        carriers,
        vec!["item.completed"],
        "events carrying the streamed text"
    );
    let deltas: Vec<&str> = run
        .types()
        .into_iter()
        .filter(|t| t.contains("delta") || *t == "item.updated")
        .collect();
    ensure!(deltas.is_empty(), "delta events in the stream: {deltas:?}");
    world.expect_requests(1).await?;
    world.finish().await
}

/// X3: the model calls `exec_command` (the shell tool the mock model is offered) with a
/// command that writes a file and prints a marker; the stream shows the command item
/// started (in progress) and completed (output, exit code 0), the file exists, the
/// follow-up request carries the output, and the final answer closes the run.
async fn command(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let marker = format!("exec-marker-{}", random_hex(8));
    let name = format!("exec_{}.txt", random_hex(8));
    let cmd = format!("printf 'written by exec' > {name} && echo {marker}");
    let call_id = "call_exec_1";
    world
        .script(vec![
            Scripted::sse(bodies::one_item_reply(
                "r1",
                codex_parity_sidecar::events::exec_command_call(call_id, &cmd),
            )),
            Scripted::sse(bodies::assistant_reply("r2", "Command ran.")),
        ])
        .await?;
    let mut args = vec!["--skip-git-repo-check"];
    args.extend(SANDBOX);
    args.push("Run the command.");
    let run = world.exec(&args, EXEC_TIMEOUT).await?;
    observe(ctx, "run", &run);
    ensure_exit(&run, 0)?;
    let requests = world.expect_requests(2).await?;
    let tools = requests[0].tool_names();
    ensure!(
        tools.iter().any(|t| t == "exec_command"),
        "request #0 offers no exec_command: {tools:?}"
    );
    let started: Vec<&Value> = run
        .of_type("item.started")
        .into_iter()
        .filter_map(|e| e.get("item"))
        .filter(|i| i["type"] == "command_execution")
        .collect();
    ensure_eq!(started.len(), 1, "command_execution item.started count");
    ensure_eq!(started[0]["status"], json!("in_progress"), "started status");
    let done = run.completed("command_execution");
    ensure_eq!(done.len(), 1, "command_execution item.completed count");
    let item = done[0];
    ctx.observe(format!("command_execution item: {item}"));
    ensure_eq!(started[0]["id"], item["id"], "command_execution item id");
    let shown = item["command"].as_str().unwrap_or_default();
    ensure!(
        shown.contains(&cmd),
        "the item's command {shown:?} is not {cmd:?}"
    );
    ensure_eq!(item["status"], json!("completed"), "completed status");
    ensure_eq!(item["exit_code"], json!(0), "exit_code");
    let output = item["aggregated_output"].as_str().unwrap_or_default();
    ensure!(
        output.contains(&marker),
        "aggregated_output {output:?} lacks {marker}"
    );
    let path = world.workspace.join(&name);
    let content =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    ensure_eq!(content.as_str(), "written by exec", "{name} content");
    let sent = output_text(&requests[1], call_id)?;
    ensure!(
        sent.contains(&marker),
        "the follow-up output {sent:?} lacks {marker}"
    );
    ensure_eq!(run.final_message(), Some("Command ran."), "final message");
    world.finish().await
}

/// X4: the model sends `apply_patch` as the mock model's calls carry it (a heredoc through
/// `exec_command`, which codex intercepts); the stream shows one completed `file_change`
/// item adding the file, which holds the content, and no `command_execution` for it.
async fn file_change(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    git::ensure_outside_repository(&world.workspace).await?;
    let name = format!("patched_{}.txt", random_hex(8));
    let patch = format!("*** Begin Patch\n*** Add File: {name}\n+added by exec\n*** End Patch");
    let call_id = "call_patch_1";
    world
        .script(vec![
            Scripted::sse(bodies::one_item_reply(
                "r1",
                bodies::apply_patch_exec_call(call_id, &patch),
            )),
            Scripted::sse(bodies::assistant_reply("r2", "File added.")),
        ])
        .await?;
    let mut args = vec!["--skip-git-repo-check"];
    args.extend(SANDBOX);
    args.push("Add the file.");
    let run = world.exec(&args, EXEC_TIMEOUT).await?;
    observe(ctx, "run", &run);
    ensure_exit(&run, 0)?;
    let changes = run.completed("file_change");
    ensure_eq!(changes.len(), 1, "file_change item.completed count");
    let item = changes[0];
    ctx.observe(format!("file_change item: {item}"));
    ensure_eq!(item["status"], json!("completed"), "file_change status");
    let listed = item["changes"].as_array().cloned().unwrap_or_default();
    ensure_eq!(listed.len(), 1, "changes of the file_change item");
    let path = listed[0]["path"].as_str().unwrap_or_default();
    ensure!(
        path == name || path.ends_with(&format!("/{name}")),
        "file_change path {path} does not name {name}"
    );
    ensure_eq!(listed[0]["kind"], json!("add"), "change kind");
    let commands = run.completed("command_execution");
    ensure!(
        commands.is_empty(),
        "the patch also came as command_execution: {commands:?}"
    );
    let file = world.workspace.join(&name);
    let content =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    ensure!(
        content == "added by exec" || content == "added by exec\n",
        "{name} holds {content:?}"
    );
    let requests = world.expect_requests(2).await?;
    output_text(&requests[1], call_id)?;
    ensure_eq!(run.final_message(), Some("File added."), "final message");
    world.finish().await
}

/// How the model API fails in one of X5–X7.
struct Failure {
    /// The reply to every attempt.
    reply: fn() -> Scripted,
    /// The attempts codex makes (`request_max_retries` and `stream_max_retries` are 1).
    requests: usize,
    /// `turn.failed.error.message` (`{url}`: the mock's `…/v1/responses`).
    message: &'static str,
    /// Whether the stream layer retries once: an `error` event `Reconnecting... 1/1
    /// (MESSAGE)` comes before the terminal `error` event that repeats the message.
    reconnects: bool,
}

impl Failure {
    /// The messages of the `error` events, in order.
    fn errors(&self) -> Vec<String> {
        let mut errors = Vec::new();
        if self.reconnects {
            errors.push(format!("Reconnecting... 1/1 ({})", self.message));
        }
        errors.push(self.message.to_string());
        errors
    }
}

/// The message HTTP 5xx gives (0.161.0 and later spell it with a typographic apostrophe).
const HIGH_DEMAND: &str =
    "We\u{2019}re currently experiencing high demand, which may cause temporary errors.";

/// X5: 500 on every attempt: each of the two stream attempts is retried once over HTTP.
const HTTP_500: Failure = Failure {
    reply: || {
        Scripted::http_error(
            500,
            json!({"error": {"message": "mock 500", "type": "server_error"}}),
        )
    },
    requests: 4,
    message: HIGH_DEMAND,
    reconnects: true,
};

/// X6: 401 on every attempt: not retried over HTTP, retried once by the stream layer.
const HTTP_401: Failure = Failure {
    reply: || Scripted::http_error(401, json!("bad key")),
    requests: 2,
    message: "unexpected status 401 Unauthorized: bad key, url: {url}",
    reconnects: true,
};

/// X7: 429 (no `retry-after`) on every attempt: codex gives up after the first.
const HTTP_429: Failure = Failure {
    reply: || Scripted::http_error(429, json!({"error": {"message": "slow down"}})),
    requests: 1,
    message: "exceeded retry limit, last status: 429 Too Many Requests",
    reconnects: false,
};

/// X5–X7.
fn failure_scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "exec_model_500_fails_the_run",
            "X5",
            "exec --json: HTTP 500, both retry keys at 1: 4 requests, error Reconnecting 1/1, \
             error and turn.failed with the message, no turn.completed, exit 1",
            failure(&HTTP_500)
        )
        .applies(needs_flags(&[]))
        .golden_transcript(),
        scenario!(
            "exec_model_401_fails_the_run",
            "X6",
            "exec --json: HTTP 401, both retry keys at 1: 2 requests (no HTTP retry), \
             turn.failed with status, body and URL, exit 1",
            failure(&HTTP_401)
        )
        .applies(needs_flags(&[])),
        scenario!(
            "exec_model_429_exhausted_fails_the_run",
            "X7",
            "exec --json: HTTP 429 without retry-after, both retry keys at 1: 1 request, \
             error and turn.failed \"exceeded retry limit, last status: 429\", exit 1",
            failure(&HTTP_429)
        )
        .applies(needs_flags(&[])),
    ]
}

/// Scripts the failure for every attempt, runs one exec and compares the stream, the exit
/// status and the number of attempts with the row; differences are drift.
async fn failure(ctx: &Ctx, row: &'static Failure) -> anyhow::Result<()> {
    let options = WorldOptions {
        request_max_retries: 1,
        stream_max_retries: 1,
        ..WorldOptions::default()
    };
    let mut world = ctx.world(options).await?;
    world
        .script((0..row.requests).map(|_| (row.reply)()).collect())
        .await?;
    let run = world
        .exec(&["--skip-git-repo-check", "fail please"], EXEC_TIMEOUT)
        .await?;
    observe(ctx, "run", &run);
    ctx.observe(format!("all: {}", serde_json::to_string(&run.events)?));
    ctx.observe(format!("stderr: {}", run.stderr_tail(3)));
    let url = format!("{}/responses", world.sidecar.base_url());
    let unurl = |v: &Value| -> Value {
        serde_json::from_str(&v.to_string().replace(&url, "{url}")).unwrap_or(v.clone())
    };
    ensure_exit(&run, 1)?;
    let failed = run.of_type("turn.failed");
    ensure_eq!(failed.len(), 1, "turn.failed events");
    ensure!(
        run.of_type("turn.completed").is_empty(),
        "a failed run also printed turn.completed"
    );
    ensure_eq!(
        run.types().last().copied(),
        Some("turn.failed"),
        "the last event"
    );
    ctx.expect(
        "turn.failed.error.message",
        json!(row.message),
        unurl(&failed[0]["error"]["message"]),
    );
    let errors: Vec<Value> = run
        .of_type("error")
        .into_iter()
        .map(|e| unurl(&e["message"]))
        .collect();
    ctx.expect("error.messages", json!(row.errors()), json!(errors));
    let requests = world.captured(row.requests, Duration::from_secs(2)).await?;
    ctx.expect("requests.count", json!(row.requests), json!(requests.len()));
    if requests.len() < row.requests {
        world
            .sidecar
            .reset()
            .await
            .context("discarding the unserved scripted replies")?;
    }
    world.finish().await
}
