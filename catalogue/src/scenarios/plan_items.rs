//! Plans and other items (`parity-scenarios.md` G12–G15): the plan tool's
//! `turn/plan/updated`, a plan-mode `<proposed_plan>` block as a `plan` item, a scripted
//! `web_search_call` rendered as `webSearch` items, and `command/exec` outside any turn.

use anyhow::{Context, ensure};
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::setup;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "plan_tool_updates_plan",
            "G12",
            "an update_plan call becomes turn/plan/updated with camelCase statuses; the model \
             gets \"Plan updated\"",
            plan_tool
        )
        .applies(|c| {
            if c.notifications.contains("turn/plan/updated") {
                Ok(())
            } else {
                Err("this codex sends no turn/plan/updated".into())
            }
        }),
        scenario!(
            "plan_mode_proposed_plan_becomes_plan_item",
            "G15",
            "in plan mode a <proposed_plan> block of a streamed message becomes a plan item \
             with item/plan/delta; the message keeps the rest",
            proposed_plan
        )
        .applies(Capabilities::needs_plan_items),
        scenario!(
            "web_search_call_items_reach_client",
            "G13",
            "a scripted web_search_call becomes webSearch item/started (no query yet) and \
             item/completed (query and action)",
            web_search
        ),
        scenario!(
            "command_exec_outside_turn",
            "G14",
            "command/exec runs a command without a turn: exit code, stdout, stderr, cwd and \
             timeout; no model request",
            command_exec
        )
        .applies(|c| c.require_methods(&["command/exec"])),
    ]
}

/// The plan the model sends (`in_progress`, as the tool takes it).
fn plan_arguments() -> String {
    json!({
        "explanation": "two steps",
        "plan": [
            {"step": "read code", "status": "completed"},
            {"step": "write fix", "status": "in_progress"}
        ]
    })
    .to_string()
}

// The catalogue's expectation is 0.131.0's: update_plan is offered and answered. From 0.161.0
// the tool is not offered; a call gets "unsupported call: update_plan" and no plan
// notification (listed drift).
async fn plan_tool(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        Scripted::sse(bodies::one_item_reply(
            "resp-plan",
            events::function_call("call-plan", "update_plan", &plan_arguments()),
        )),
        Scripted::sse(bodies::assistant_reply("resp-planned", "planned")),
    ];
    let (world, app, thread) = setup(ctx, script).await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("make a plan")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(turn.final_response(), "planned", "final response");
    let requests = world.expect_requests(2).await?;
    ctx.expect(
        "plan.tool_offered",
        json!(true),
        json!(requests[0].tool_names().iter().any(|n| n == "update_plan")),
    );
    let plans: Vec<Value> = turn
        .notifications("turn/plan/updated")
        .into_iter()
        .map(|p| json!({"turnId": p["turnId"], "explanation": p["explanation"], "plan": p["plan"]}))
        .collect();
    let want = json!([{
        "turnId": turn.id,
        "explanation": "two steps",
        "plan": [
            {"step": "read code", "status": "completed"},
            {"step": "write fix", "status": "inProgress"}
        ]
    }]);
    ctx.expect("plan.updated_notifications", want, json!(plans));
    let output = requests[1]
        .function_call_output_text("call-plan")
        .context("request 2 has no output of call-plan")?;
    ctx.expect("plan.tool_output", json!("Plan updated"), json!(output));
    world.finish().await
}

/// The text before the plan block, and the plan inside it.
const PLAN_INTRO: &str = "Here is my plan.\n";
const PLAN_BODY: &str = "# Fix\n- read code\n- write fix\n";

/// What G15 checks of one item notification: method, type, id, text.
fn plan_mode_item(method: &str, p: &Value) -> Value {
    let i = &p["item"];
    json!([method, i["type"], i["id"], i["text"]])
}

async fn proposed_plan(ctx: &Ctx) -> anyhow::Result<()> {
    let full = format!("{PLAN_INTRO}<proposed_plan>\n{PLAN_BODY}</proposed_plan>");
    let script = vec![Scripted::sse(vec![
        events::response_created("resp-plan"),
        events::message_item_added_empty("msg-plan"),
        events::output_text_delta(&full[..20]),
        events::output_text_delta(&full[20..]),
        events::assistant_message("msg-plan", &full),
        events::completed("resp-plan"),
    ])];
    let (world, app, thread) = setup(ctx, script).await?;
    let options = super::user_input::plan_mode();
    let turn = run_turn(&app, &thread, vec![text("plan please")], &options).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(
        turn.chunks(),
        vec![PLAN_INTRO.to_string()],
        "message chunks"
    );
    ensure_eq!(turn.final_response(), PLAN_INTRO, "final response");
    let plan_id = turn
        .notifications("item/started")
        .into_iter()
        .find(|p| p["item"]["type"] == "plan")
        .and_then(|p| p["item"]["id"].as_str().map(String::from))
        .context("no plan item started")?;
    // 0.131.0 and 0.161.0 name the plan item after the turn; 0.171.0 gives it an id of its own.
    ctx.expect(
        "plan_item.id_is_turn_id_plan",
        json!(true),
        json!(plan_id == format!("{}-plan", turn.id)),
    );
    let items: Vec<Value> = turn
        .messages
        .iter()
        .filter(|m| m.is("item/started") || m.is("item/completed"))
        .filter(|m| m.params()["item"]["type"] != "userMessage")
        .map(|m| plan_mode_item(m.method(), m.params()))
        .collect();
    let want = vec![
        json!(["item/started", "agentMessage", "msg-plan", ""]),
        json!(["item/started", "plan", plan_id, ""]),
        json!(["item/completed", "plan", plan_id, PLAN_BODY]),
        json!(["item/completed", "agentMessage", "msg-plan", PLAN_INTRO]),
    ];
    ensure_eq!(items, want, "items (method, type, id, text) in order");
    let deltas: Vec<Value> = turn
        .notifications("item/plan/delta")
        .into_iter()
        .map(|p| json!([p["itemId"], p["delta"]]))
        .collect();
    ensure_eq!(deltas, vec![json!([plan_id, PLAN_BODY])], "item/plan/delta");
    world.expect_requests(1).await?;
    world.finish().await
}

async fn web_search(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        Scripted::sse(vec![
            events::response_created("resp-search"),
            events::web_search_call_added_partial("ws-1", "in_progress"),
            events::web_search_call_done("ws-1", "completed", "rust async"),
            events::assistant_message("msg-found", "found it"),
            events::completed("resp-search"),
        ]),
        Scripted::sse(bodies::assistant_reply("resp-next", "next")),
    ];
    let (world, app, thread) = setup(ctx, script).await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("search the web")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(turn.final_response(), "found it", "final response");
    let items = |method: &str| -> Vec<Value> {
        turn.notifications(method)
            .into_iter()
            .filter(|p| p["item"]["type"] == "webSearch")
            .map(|p| {
                let i = &p["item"];
                json!({"id": i["id"], "query": i["query"], "action": i["action"]})
            })
            .collect()
    };
    ensure_eq!(
        items("item/started"),
        vec![json!({"id": "ws-1", "query": "", "action": {"type": "other"}})],
        "webSearch item/started"
    );
    let done = json!({"type": "search", "query": "rust async", "queries": null});
    ensure_eq!(
        items("item/completed"),
        vec![json!({"id": "ws-1", "query": "rust async", "action": done})],
        "webSearch item/completed"
    );
    let next = run_turn(
        &app,
        &thread,
        vec![text("and now?")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(next.status, TurnStatus::Completed, "next turn status");
    let requests = world.expect_requests(2).await?;
    let echoed: Vec<&Value> = requests[1].inputs_of_type("web_search_call");
    let want = json!({
        "type": "web_search_call", "status": "completed",
        "action": {"type": "search", "query": "rust async"}
    });
    ensure_eq!(
        echoed,
        vec![&want],
        "the web_search_call in the next request (kept in the history, no id)"
    );
    world.finish().await
}

async fn command_exec(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, _thread) = setup(ctx, Vec::new()).await?;
    let cursor = app.cursor();
    // A cwd inside the world: codex's sandbox makes a `.codex` mount point in the directory a
    // command runs in, and one in /tmp would be seen by every other world (outside_config).
    let sub = world.workspace.join("sub");
    std::fs::create_dir(&sub).context("creating the workspace's sub directory")?;
    let sub = sub.to_string_lossy().to_string();
    let cases = [
        (
            json!({"command": ["bash", "-c", "echo out; echo err >&2; exit 3"]}),
            json!({"exitCode": 3, "stdout": "out\n", "stderr": "err\n"}),
        ),
        (
            json!({"command": ["pwd"], "cwd": sub}),
            json!({"exitCode": 0, "stdout": format!("{sub}\n"), "stderr": ""}),
        ),
        (
            json!({"command": ["sleep", "5"], "timeoutMs": 300}),
            json!({"exitCode": 124, "stdout": "", "stderr": ""}),
        ),
    ];
    for (params, want) in cases {
        let got = app
            .call("command/exec", params.clone())
            .await
            .with_context(|| format!("command/exec {params}"))?;
        ensure_eq!(got, want, "command/exec {params}");
    }
    let turn_events: Vec<String> = app
        .messages()
        .iter()
        .skip(cursor)
        .filter(|m| m.is("turn/started") || m.is("item/started"))
        .map(|m| m.method().to_string())
        .collect();
    ensure!(
        turn_events.is_empty(),
        "command/exec started turn events: {turn_events:?}"
    );
    world.expect_requests(0).await?;
    world.finish().await
}
