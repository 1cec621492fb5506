//! Approvals (`parity-scenarios.md` E11): with a policy that asks, codex sends the client
//! an approval request before it runs a command or applies a patch; the client's decision
//! decides whether it happens, and the model hears the result either way.

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, bail, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::{record_requests, recorded, setup_with};
use crate::app_server::AppServer;
use crate::app_server::turn::{ItemStatus, Turn, TurnOptions, TurnStatus, run_turn, text};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;

/// The server request that asks to run a command.
const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";

/// The server request that asks to apply a file change.
const FILE_APPROVAL: &str = "item/fileChange/requestApproval";

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "approval_command_accept",
            "E11a",
            "an accepted command approval runs the command",
            command_approval(Decision::Accept)
        )
        .applies(|caps| caps.needs_server_request(COMMAND_APPROVAL)),
        scenario!(
            "approval_command_decline",
            "E11b",
            "a declined command approval does not run it; the model still gets an output",
            command_approval(Decision::Decline)
        )
        .applies(|caps| caps.needs_server_request(COMMAND_APPROVAL)),
        scenario!(
            "approval_policy_untrusted_in_config",
            "E11e",
            "approval_policy = \"untrusted\" in config.toml is accepted (the catalogue's recipe)",
            untrusted_in_config
        ),
        scenario!(
            "approval_file_change_accept",
            "E11c",
            "an accepted file change approval writes the file",
            file_approval(Decision::Accept)
        )
        .applies(|caps| caps.needs_server_request(FILE_APPROVAL)),
        scenario!(
            "approval_file_change_decline",
            "E11d",
            "a declined file change approval leaves the workspace alone",
            file_approval(Decision::Decline)
        )
        .golden_transcript()
        .applies(|caps| caps.needs_server_request(FILE_APPROVAL)),
    ]
}

/// What the client answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Accept,
    Decline,
}

impl Decision {
    fn as_str(self) -> &'static str {
        match self {
            Decision::Accept => "accept",
            Decision::Decline => "decline",
        }
    }
}

/// Answers every `method` request with `decision` and keeps the params it got.
fn answer(app: &AppServer, method: &str, decision: Decision) -> Arc<Mutex<Vec<Value>>> {
    record_requests(app, method, move |_| {
        Ok(json!({"decision": decision.as_str()}))
    })
}

/// The one approval request that arrived, checked against the turn.
fn the_request(seen: &Mutex<Vec<Value>>, method: &str, turn: &Turn) -> anyhow::Result<Value> {
    let seen = recorded(seen);
    ensure_eq!(seen.len(), 1, "{method} requests");
    let request = seen[0].clone();
    ensure_eq!(
        request["threadId"],
        json!(turn.thread_id),
        "{method} threadId"
    );
    ensure_eq!(request["turnId"], json!(turn.id), "{method} turnId");
    ensure!(
        request["itemId"].as_str().is_some_and(|s| !s.is_empty()),
        "{method} without an itemId: {request}"
    );
    Ok(request)
}

async fn command_approval(ctx: &Ctx, decision: Decision) -> anyhow::Result<()> {
    // `approval_policy = "untrusted"` in config.toml is refused by some versions (see
    // `approval_policy_untrusted_in_config`); the thread/start parameter is accepted by all.
    let options = WorldOptions {
        approval_policy: "on-request".into(),
        sandbox_mode: "workspace-write".into(),
        ..Default::default()
    };
    let script = vec![
        Scripted::sse(bodies::one_item_reply(
            "resp-1",
            events::exec_command_call("call-ap-1", "touch approved.txt"),
        )),
        Scripted::sse(bodies::assistant_reply("resp-2", "ok")),
    ];
    let (world, app, thread, started) =
        setup_with(ctx, options, script, json!({"approvalPolicy": "untrusted"})).await?;
    ensure_eq!(
        started["approvalPolicy"],
        json!("untrusted"),
        "thread/start approvalPolicy"
    );
    let seen = answer(&app, COMMAND_APPROVAL, decision);
    let turn = run_turn(
        &app,
        &thread,
        vec![text("create approved.txt")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let request = the_request(&seen, COMMAND_APPROVAL, &turn)?;
    ensure!(
        request["command"]
            .as_str()
            .is_some_and(|c| c.contains("touch approved.txt")),
        "the approval request does not show the command: {request}"
    );
    let file = world.workspace.join("approved.txt");
    let notifications = || {
        let methods: Vec<&str> = turn.messages.iter().map(|m| m.method()).collect();
        methods.join(", ")
    };
    match turn.completed_items("commandExecution").as_slice() {
        [item] => {
            ensure_eq!(item["id"], request["itemId"], "the approved item's id");
            check_command_effect(item, decision, &file)?;
        }
        // Codex 0.131.0 sometimes sends no item/completed for an approved command that ran
        // (its output reached the model): reported as drift, the effect still checked.
        [] if decision == Decision::Accept && file.exists() => ctx.drift(
            "command.item_completed",
            json!(false),
            format!(
                "no item/completed for the approved command, though it ran (the turn's \
                 notifications: {})",
                notifications()
            ),
        ),
        items => bail!(
            "completed commandExecution items: expected 1, got {} (the turn's notifications: {})",
            items.len(),
            notifications()
        ),
    }
    ensure_eq!(turn.final_response(), "ok", "final response");
    let requests = world.expect_requests(2).await?;
    check_command_output(&requests, decision)?;
    world.finish().await
}

/// Asserts the command's item and the workspace as the decision has them: run, or not run.
fn check_command_effect(item: &Value, decision: Decision, file: &Path) -> anyhow::Result<()> {
    match decision {
        Decision::Accept => {
            ensure_eq!(
                item["status"],
                json!(ItemStatus::Completed),
                "commandExecution status (exit code {}, output {})",
                item["exitCode"],
                item["aggregatedOutput"]
            );
            ensure_eq!(item["exitCode"], json!(0), "commandExecution exitCode");
            ensure!(
                file.exists(),
                "the accepted command did not create {}",
                file.display()
            );
        }
        Decision::Decline => {
            ensure_eq!(
                item["status"],
                json!(ItemStatus::Declined),
                "commandExecution status"
            );
            ensure!(
                !file.exists(),
                "the declined command created {}",
                file.display()
            );
        }
    }
    Ok(())
}

/// Asserts the command's output sent back to the model says it ran exactly when accepted.
fn check_command_output(requests: &[CapturedRequest], decision: Decision) -> anyhow::Result<()> {
    let output = requests[1]
        .function_call_output_text("call-ap-1")
        .context("request 2 has no text output for call-ap-1")?;
    let ran = output.contains("exited with code 0");
    ensure!(
        ran == (decision == Decision::Accept),
        "request 2's output for call-ap-1 does not match the {} decision: {output}",
        decision.as_str()
    );
    Ok(())
}

async fn untrusted_in_config(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        approval_policy: "untrusted".into(),
        sandbox_mode: "workspace-write".into(),
        ..Default::default()
    };
    let mut world = ctx.world(options).await?;
    let app = world.spawn().await?;
    match app.initialize(true).await {
        Ok(_) => {
            let (_, started) = world.start_thread(&app, json!({})).await?;
            ensure_eq!(
                started["approvalPolicy"],
                json!("untrusted"),
                "thread/start approvalPolicy from config.toml"
            );
        }
        Err(e) => {
            let refusal = app
                .stderr_tail()
                .lines()
                .find(|l| l.contains("approval_policy"))
                .map(str::to_string)
                .with_context(|| format!("codex did not start: {e}"))?;
            ctx.drift(
                "config.approval_policy_untrusted",
                json!("refused at start-up"),
                format!(
                    "codex refuses to start with approval_policy = \"untrusted\" in config.toml: {refusal}"
                ),
            );
        }
    }
    world.finish().await
}

async fn file_approval(ctx: &Ctx, decision: Decision) -> anyhow::Result<()> {
    let options = WorldOptions {
        approval_policy: "on-request".into(),
        sandbox_mode: "read-only".into(),
        ..Default::default()
    };
    let name = "approval_patch.txt";
    let patch =
        format!("*** Begin Patch\n*** Add File: {name}\n+written after approval\n*** End Patch");
    let script = vec![
        Scripted::sse(bodies::one_item_reply(
            "resp-1",
            bodies::apply_patch_exec_call("call-ap-2", &patch),
        )),
        Scripted::sse(bodies::assistant_reply("resp-2", "ok")),
    ];
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let seen = answer(&app, FILE_APPROVAL, decision);
    let turn = run_turn(
        &app,
        &thread,
        vec![text(&format!("create {name}"))],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let request = the_request(&seen, FILE_APPROVAL, &turn)?;
    let items = turn.completed_items("fileChange");
    ensure_eq!(items.len(), 1, "completed fileChange items");
    let item = items[0];
    ensure_eq!(item["id"], request["itemId"], "the approved item's id");
    let file = world.workspace.join(name);
    match decision {
        Decision::Accept => {
            ensure_eq!(
                item["status"],
                json!(ItemStatus::Completed),
                "fileChange status"
            );
            let content = std::fs::read_to_string(&file)
                .with_context(|| format!("the accepted patch did not write {}", file.display()))?;
            ensure_eq!(content.trim_end(), "written after approval", "file content");
        }
        Decision::Decline => {
            ensure_eq!(
                item["status"],
                json!(ItemStatus::Declined),
                "fileChange status"
            );
            ensure!(
                !file.exists(),
                "the declined patch wrote {}",
                file.display()
            );
        }
    }
    let requests = world.expect_requests(2).await?;
    requests[1]
        .function_call_output("call-ap-2")
        .context("request 2 has no output for call-ap-2")?;
    world.finish().await
}
