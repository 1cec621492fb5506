//! Per-turn overrides and structured output (`parity-scenarios.md` G1, G2): what
//! `turn/start`'s `cwd`, `model`, `effort`, `outputSchema`, `sandboxPolicy` and
//! `approvalPolicy` change in the model request and in what commands may do, and which of them
//! outlive their turn. The schema documents every override but `outputSchema` as "for this
//! turn and subsequent turns"; `outputSchema` is for its turn only.

use anyhow::{Context, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::{record_requests, recorded, setup};
use crate::app_server::AppServer;
use crate::app_server::turn::{Turn, TurnOptions, TurnStatus, run_turn, text};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "turn_overrides_and_output_schema",
            "G1",
            "cwd, model and effort overrides reach the request and persist; outputSchema \
             becomes text.format for its turn only",
            overrides_and_output_schema
        )
        .applies(Capabilities::needs_output_schema),
        scenario!(
            "turn_sandbox_and_approval_overrides_persist",
            "G2",
            "a read-only sandbox override stops writes in its turn and the next; an untrusted \
             approval override asks before commands in its turn and the next",
            sandbox_and_approval
        )
        .applies(|c| c.needs_server_request("item/commandExecution/requestApproval")),
    ]
}

/// The structured answer the mock gives to G1's first turn.
const STRUCTURED: &str = r#"{"answer":"42"}"#;

/// The `<cwd>` of the request's environment context, if any.
fn context_cwd(r: &CapturedRequest) -> Option<String> {
    r.message_input_texts("user").iter().find_map(|t| {
        let start = t.find("<cwd>")? + "<cwd>".len();
        let end = t[start..].find("</cwd>")? + start;
        Some(t[start..end].to_string())
    })
}

/// `turn/start` params for `run_turn`.
fn options(extra: Value) -> TurnOptions {
    TurnOptions {
        model: None,
        extra: extra.as_object().cloned().unwrap_or_default(),
    }
}

async fn overrides_and_output_schema(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        Scripted::sse(bodies::assistant_reply("resp-1", STRUCTURED)),
        Scripted::sse(bodies::assistant_reply("resp-2", "plain")),
        Scripted::sse(bodies::assistant_reply("resp-3", "back")),
    ];
    let (world, app, thread) = setup(ctx, script).await?;
    let sub = world.workspace.join("sub");
    std::fs::create_dir_all(&sub).context("creating the override cwd")?;
    let sub = sub.display().to_string();
    let first = run_turn(
        &app,
        &thread,
        vec![text("answer in json")],
        &options(json!({
            "cwd": sub, "model": "mock-override", "effort": "high",
            "outputSchema": super::answer_schema()
        })),
    )
    .await?;
    completed(&first, "first")?;
    ensure_eq!(
        first.final_response(),
        STRUCTURED,
        "first turn final response"
    );
    let second = run_turn(
        &app,
        &thread,
        vec![text("no overrides")],
        &options(json!({})),
    )
    .await?;
    completed(&second, "second")?;
    let third = run_turn(
        &app,
        &thread,
        vec![text("model back")],
        &options(json!({"model": "mock-model"})),
    )
    .await?;
    completed(&third, "third")?;
    let requests = world.expect_requests(3).await?;
    check_override_requests(ctx, &requests, &sub)?;
    check_settings_read(ctx, &app, &thread, &sub).await?;
    world.finish().await
}

/// The three requests of G1: the schema as `text.format` in the first only; the model, the
/// cwd and the effort of the overrides in all three, but the third's model.
fn check_override_requests(
    ctx: &Ctx,
    requests: &[CapturedRequest],
    sub: &str,
) -> anyhow::Result<()> {
    let format = json!({
        "type": "json_schema", "strict": true, "schema": super::answer_schema(),
        "name": "codex_output_schema"
    });
    let body1 = requests[0].body_json()?;
    ensure_eq!(body1["text"]["format"], format, "request 1 text.format");
    for (i, model) in [
        (0, "mock-override"),
        (1, "mock-override"),
        (2, "mock-model"),
    ] {
        let body = requests[i].body_json()?;
        ensure_eq!(body["model"], json!(model), "request {} model", i + 1);
        ensure_eq!(
            context_cwd(&requests[i]),
            Some(sub.to_string()),
            "request {} environment_context cwd",
            i + 1
        );
    }
    // 0.131.0 sends no `reasoning` at all, so the effort cannot reach it (drift).
    let efforts: Vec<Value> = requests
        .iter()
        .map(|r| Ok(r.body_json()?["reasoning"]["effort"].clone()))
        .collect::<anyhow::Result<_>>()?;
    ctx.expect(
        "overrides.request_reasoning_effort",
        json!(["high", "high", "high"]),
        json!(efforts),
    );
    ensure!(
        requests[1].body_json()?["text"]["format"].is_null(),
        "outputSchema outlived its turn: request 2 text {}",
        requests[1].body_json()?["text"]
    );
    Ok(())
}

/// The turn completed; `which` names it.
fn completed(turn: &Turn, which: &str) -> anyhow::Result<()> {
    ensure_eq!(turn.status, TurnStatus::Completed, "{which} turn status");
    Ok(())
}

/// `thread/read` after the overrides: the thread's cwd is the override (drift where a version
/// keeps the thread's start cwd).
async fn check_settings_read(
    ctx: &Ctx,
    app: &AppServer,
    thread: &str,
    sub: &str,
) -> anyhow::Result<()> {
    let read = app
        .thread_read(thread, json!({}))
        .await
        .context("thread/read")?;
    ctx.expect(
        "overrides.thread_read_cwd_is_override",
        json!(true),
        json!(read["thread"]["cwd"] == sub),
    );
    Ok(())
}

/// A reply running `cmd` through `exec_command` as call `call_id`.
fn exec_reply(resp_id: &str, call_id: &str, cmd: &str) -> Scripted {
    Scripted::sse(bodies::one_item_reply(
        resp_id,
        events::exec_command_call(call_id, cmd),
    ))
}

async fn sandbox_and_approval(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        exec_reply("resp-1", "call-ro-1", "touch a.txt"),
        Scripted::sse(bodies::assistant_reply("resp-1b", "one")),
        exec_reply("resp-2", "call-ro-2", "touch b.txt"),
        Scripted::sse(bodies::assistant_reply("resp-2b", "two")),
        exec_reply("resp-3", "call-ask", "touch c.txt"),
        Scripted::sse(bodies::assistant_reply("resp-3b", "three")),
        exec_reply("resp-4", "call-ask-again", "touch d.txt"),
        Scripted::sse(bodies::assistant_reply("resp-4b", "four")),
    ];
    let (world, app, thread) = setup(ctx, script).await?;
    let approvals = record_requests(&app, "item/commandExecution/requestApproval", |_| {
        Ok(json!({"decision": "decline"}))
    });
    let read_only = options(json!({"sandboxPolicy": {"type": "readOnly"}}));
    let turns = [
        ("touch a", read_only),
        ("touch b", options(json!({}))),
        (
            "touch c",
            options(json!({
                "approvalPolicy": "untrusted",
                "sandboxPolicy": {"type": "dangerFullAccess"}
            })),
        ),
        ("touch d", options(json!({}))),
    ];
    for (prompt, opts) in turns {
        let turn = run_turn(&app, &thread, vec![text(prompt)], &opts).await?;
        completed(&turn, prompt)?;
    }
    let requests = world.expect_requests(8).await?;
    for (index, call) in [(1, "call-ro-1"), (3, "call-ro-2")] {
        let output = requests[index]
            .function_call_output_text(call)
            .with_context(|| format!("request {} has no output of {call}", index + 1))?;
        ensure!(
            output.contains("Process exited with code 1")
                && output.contains("Read-only file system"),
            "the {call} output is no read-only failure: {output}"
        );
    }
    // The untrusted policy asks in its turn and in the next one, which names no policy.
    let asked: Vec<Value> = recorded(&approvals)
        .iter()
        .map(|p| json!([p["itemId"], p["command"]]))
        .collect();
    let want = vec![
        json!(["call-ask", "/bin/bash -lc 'touch c.txt'"]),
        json!(["call-ask-again", "/bin/bash -lc 'touch d.txt'"]),
    ];
    ensure_eq!(asked, want, "command approval requests (itemId, command)");
    for (index, call) in [(5, "call-ask"), (7, "call-ask-again")] {
        let declined = requests[index]
            .function_call_output_text(call)
            .with_context(|| format!("request {} has no output of {call}", index + 1))?;
        ensure!(
            declined.contains("rejected by user"),
            "the declined {call} output: {declined}"
        );
    }
    for name in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        ensure!(
            !world.workspace.join(name).exists(),
            "{name} was written despite the override"
        );
    }
    world.finish().await
}
