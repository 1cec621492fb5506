//! The server requests of group H that no other group asks for: a permissions approval
//! (`item/permissions/requestApproval`, from the model's `request_permissions` tool) granted
//! and declined, and a request withdrawn: an approval still pending when its turn is
//! interrupted (`serverRequest/resolved` without an answer). Each scenario also asserts the
//! `serverRequest/resolved` codex sends once a request is settled, and what the model is
//! told. The ChatGPT token refresh is in `auth_refresh`.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::{record_requests, recorded, setup_with};
use crate::app_server::message::Message;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, start_turn, text, wait_turn};
use crate::app_server::{AppServer, Inbound};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;

/// The server request that asks the client to grant the model more permissions.
const PERMISSIONS: &str = "item/permissions/requestApproval";

/// The server request that asks to run a command (the one H22 leaves pending).
const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";

/// The notification that says a server request is settled.
const RESOLVED: &str = "serverRequest/resolved";

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "permissions_request_granted",
            "H20",
            "with the request_permissions tool on, a model call of it becomes \
             item/permissions/requestApproval (thread, turn, the call's id as itemId, the \
             reason and the permissions asked); the client's grant is settled by \
             serverRequest/resolved and the model gets the granted permissions as the call's \
             output",
            permissions(Grant::Network)
        )
        .applies(|c| {
            c.needs_server_request(PERMISSIONS)?;
            c.needs_notification(RESOLVED)
        }),
        scenario!(
            "permissions_request_declined",
            "H21",
            "a permissions request answered with nothing granted is settled by \
             serverRequest/resolved; the model gets an empty grant as the call's output and \
             the turn completes",
            permissions(Grant::Nothing)
        )
        .applies(|c| {
            c.needs_server_request(PERMISSIONS)?;
            c.needs_notification(RESOLVED)
        }),
        scenario!(
            "approval_withdrawn_on_interrupt",
            "H22",
            "turn/interrupt while a command approval is still unanswered ends the turn \
             interrupted and withdraws the request: serverRequest/resolved names its id \
             though the client never answered, the command does not run and the next turn \
             works",
            withdrawn
        )
        .applies(|c| {
            c.needs_server_request(COMMAND_APPROVAL)?;
            c.needs_notification(RESOLVED)
        }),
    ]
}

/// What the client grants a permissions request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grant {
    /// The network the model asked for, for the turn.
    Network,
    /// Nothing: a decline.
    Nothing,
}

/// The `request_permissions` arguments H20 and H21 script: network access, with a reason.
fn permissions_call() -> Value {
    events::function_call(
        "call-perm-1",
        "request_permissions",
        &json!({
            "reason": "parity needs the network",
            "permissions": {"network": {"enabled": true}}
        })
        .to_string(),
    )
}

/// The request id of the one server request `method` that `app` received.
fn request_id_of(app: &AppServer, method: &str) -> anyhow::Result<Value> {
    let ids: Vec<Value> = app
        .messages()
        .iter()
        .filter_map(|m| match &m.message {
            Message::Request {
                id, method: got, ..
            } if got == method => serde_json::to_value(id).ok(),
            _ => None,
        })
        .collect();
    ensure_eq!(ids.len(), 1, "{method} requests received");
    Ok(ids[0].clone())
}

/// The params of every `serverRequest/resolved` `app` received.
fn resolved(app: &AppServer) -> Vec<Value> {
    app.messages()
        .iter()
        .filter(|m| m.is(RESOLVED))
        .map(|m| m.params().clone())
        .collect()
}

/// Asserts that the request `id` was settled once on `thread`, before its turn completed.
fn check_resolved(app: &AppServer, thread: &str, id: &Value) -> anyhow::Result<()> {
    let messages = app.messages();
    let position = |pred: &dyn Fn(&Inbound) -> bool| messages.iter().position(pred);
    let settled: Vec<Value> = resolved(app)
        .into_iter()
        .filter(|p| p["requestId"] == *id)
        .collect();
    ensure_eq!(settled.len(), 1, "{RESOLVED} for request {id}");
    ensure_eq!(settled[0]["threadId"], json!(thread), "{RESOLVED} threadId");
    let at = position(&|m| m.is(RESOLVED) && m.params()["requestId"] == *id);
    let completed = position(&|m| m.is("turn/completed"));
    ensure!(
        at < completed,
        "{RESOLVED} for {id} came after turn/completed"
    );
    Ok(())
}

async fn permissions(ctx: &Ctx, grant: Grant) -> anyhow::Result<()> {
    let options = WorldOptions {
        approval_policy: "on-request".into(),
        sandbox_mode: "workspace-write".into(),
        extra_args: vec!["--enable".into(), "request_permissions_tool".into()],
        ..Default::default()
    };
    let script = vec![
        Scripted::sse(bodies::one_item_reply("resp-1", permissions_call())),
        Scripted::sse(bodies::assistant_reply("resp-2", "ok")),
    ];
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let granted = match grant {
        Grant::Network => json!({"network": {"enabled": true}}),
        Grant::Nothing => json!({}),
    };
    let answer = json!({"permissions": granted, "scope": "turn"});
    let seen = record_requests(&app, PERMISSIONS, move |_| Ok(answer.clone()));
    let turn = run_turn(
        &app,
        &thread,
        vec![text("go online")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let asked = recorded(&seen);
    ensure_eq!(asked.len(), 1, "{PERMISSIONS} requests");
    let request = &asked[0];
    ensure_eq!(request["threadId"], json!(thread), "{PERMISSIONS} threadId");
    ensure_eq!(request["turnId"], json!(turn.id), "{PERMISSIONS} turnId");
    ensure_eq!(
        request["itemId"],
        json!("call-perm-1"),
        "{PERMISSIONS} itemId"
    );
    ensure_eq!(
        request["reason"],
        json!("parity needs the network"),
        "{PERMISSIONS} reason"
    );
    ensure_eq!(
        request["permissions"]["network"]["enabled"],
        json!(true),
        "{PERMISSIONS} permissions.network"
    );
    let id = request_id_of(&app, PERMISSIONS)?;
    check_resolved(&app, &thread, &id)?;
    ensure_eq!(turn.final_response(), "ok", "final response");
    let requests = world.expect_requests(2).await?;
    let output = requests[1]
        .function_call_output_text("call-perm-1")
        .context("request 2 has no text output for call-perm-1")?;
    let told: Value = serde_json::from_str(&output)
        .with_context(|| format!("the model's output for call-perm-1 is not JSON: {output}"))?;
    let network = told["permissions"]["network"]["enabled"].clone();
    let want = match grant {
        Grant::Network => json!(true),
        Grant::Nothing => Value::Null,
    };
    ctx.expect("permissions.model_told_network", want, network);
    world.finish().await
}

async fn withdrawn(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        approval_policy: "on-request".into(),
        sandbox_mode: "workspace-write".into(),
        ..Default::default()
    };
    let script = vec![
        Scripted::sse(bodies::one_item_reply(
            "resp-1",
            events::exec_command_call("call-wd-1", "touch withdrawn.txt"),
        )),
        Scripted::sse(bodies::assistant_reply("resp-after", "after")),
    ];
    let (world, app, thread, _) =
        setup_with(ctx, options, script, json!({"approvalPolicy": "untrusted"})).await?;
    app.leave_unanswered(COMMAND_APPROVAL);
    let cursor = app.cursor();
    let started = start_turn(
        &app,
        &thread,
        vec![text("create withdrawn.txt")],
        &TurnOptions::default(),
    )
    .await?;
    app.wait_for(cursor, Duration::from_secs(20), COMMAND_APPROVAL, |m| {
        m.is(COMMAND_APPROVAL)
    })
    .await?;
    let id = request_id_of(&app, COMMAND_APPROVAL)?;
    app.turn_interrupt(&thread, &started.id)
        .await
        .context("turn/interrupt")?;
    let turn = wait_turn(&app, started, Duration::from_secs(10))
        .await
        .context("the interrupted turn did not end")?;
    ensure_eq!(turn.status, TurnStatus::Interrupted, "turn status");
    let file = world.workspace.join("withdrawn.txt");
    ensure!(
        !file.exists(),
        "the unanswered command ran: {}",
        file.display()
    );
    // The withdrawal may be announced after turn/completed: it is given 3 s to come.
    let wanted = id.clone();
    let _ = app
        .wait_for(cursor, Duration::from_secs(3), RESOLVED, move |m| {
            m.is(RESOLVED) && m.params()["requestId"] == wanted
        })
        .await;
    let settled: Vec<Value> = resolved(&app)
        .into_iter()
        .filter(|p| p["requestId"] == id)
        .collect();
    match settled.as_slice() {
        [params] => {
            ensure_eq!(params["threadId"], json!(thread), "{RESOLVED} threadId");
            // The protocol does not order a withdrawal against turn/completed: recorded.
            let messages = app.messages();
            let at = |pred: &dyn Fn(&Inbound) -> bool| messages.iter().position(pred);
            let after = at(&|m| m.is(RESOLVED)) > at(&|m| m.is("turn/completed"));
            ctx.observe(format!(
                "the withdrawn request's {RESOLVED} came {} turn/completed",
                if after { "after" } else { "before" }
            ));
        }
        [] => ctx.drift(
            "withdrawn.resolved",
            json!(false),
            format!("no {RESOLVED} for the approval request {id} withdrawn by the interrupt"),
        ),
        many => ctx.drift(
            "withdrawn.resolved",
            json!(many.len()),
            format!("{} {RESOLVED} for the request {id}", many.len()),
        ),
    }
    // The next turn works: the withdrawn request left nothing behind.
    let next = run_turn(&app, &thread, vec![text("again")], &TurnOptions::default()).await?;
    ensure_eq!(next.status, TurnStatus::Completed, "the next turn's status");
    ensure_eq!(next.final_response(), "after", "the next turn's answer");
    world.expect_requests(2).await?;
    world.finish().await
}
