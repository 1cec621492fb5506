//! Asking the user (`parity-scenarios.md` G3–G6): the model's `request_user_input` call
//! becomes the `item/tool/requestUserInput` server request in plan mode; the client's answers,
//! a declined request and a request never answered before `turn/interrupt` each reach the
//! model as the call's output. In the default mode codex answers the model itself.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::{record_requests, recorded, setup};
use crate::app_server::AppServer;
use crate::app_server::message::RpcError;
use crate::app_server::turn::{
    Turn, TurnOptions, TurnStatus, run_turn, start_turn, text, wait_turn,
};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::scenario;

/// The server request codex asks the client with.
const ASK: &str = "item/tool/requestUserInput";

/// The model's call id.
const CALL: &str = "call-ask-user";

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "user_input_answer_reaches_model",
            "G3",
            "request_user_input in plan mode asks the client the model's questions; the \
             answers are the call's output",
            answered
        )
        .applies(Capabilities::needs_user_input),
        scenario!(
            "user_input_declined_gives_empty_answers",
            "G4",
            "a request_user_input the client refuses with an error reaches the model as no \
             answers; the turn completes",
            declined
        )
        .applies(Capabilities::needs_user_input),
        scenario!(
            "user_input_unavailable_in_default_mode",
            "G5",
            "outside plan mode request_user_input asks nobody; the model is told it is \
             unavailable",
            default_mode
        )
        .applies(Capabilities::needs_user_input),
        scenario!(
            "user_input_unanswered_then_interrupted",
            "G6",
            "a question never answered: turn/interrupt ends the turn, resolves the request, \
             and the next turn tells the model the call was aborted",
            unanswered
        )
        .applies(Capabilities::needs_user_input),
    ]
}

/// The questions the model asks (the call's `questions`, as the model sends them).
fn model_questions() -> Value {
    json!([{
        "id": "db_choice",
        "header": "Database",
        "question": "Which database?",
        "options": [
            {"label": "Postgres (Recommended)", "description": "Relational."},
            {"label": "SQLite", "description": "Embedded."}
        ]
    }])
}

/// The questions as codex passes them to the client: `isOther` true (codex adds the
/// free-form choice), `isSecret` false.
fn client_questions() -> Value {
    let mut questions = model_questions();
    if let Some(q) = questions.get_mut(0).and_then(Value::as_object_mut) {
        q.insert("isOther".into(), json!(true));
        q.insert("isSecret".into(), json!(false));
    }
    questions
}

/// The model asks, then answers `reply` once it has the output.
fn script(reply: &str) -> Vec<Scripted> {
    let args = json!({"questions": model_questions()}).to_string();
    vec![
        Scripted::sse(bodies::one_item_reply(
            "resp-ask",
            events::function_call(CALL, "request_user_input", &args),
        )),
        Scripted::sse(bodies::assistant_reply("resp-after", reply)),
    ]
}

/// `turn/start` params selecting plan mode, where request_user_input is offered (G15 uses it
/// too).
pub fn plan_mode() -> TurnOptions {
    let mode = json!({
        "mode": "plan",
        "settings": {
            "model": "mock-model",
            "reasoning_effort": null,
            "developer_instructions": null
        }
    });
    let mut extra = serde_json::Map::new();
    extra.insert("collaborationMode".into(), mode);
    TurnOptions { model: None, extra }
}

/// The output the model got for the call.
fn call_output(r: &CapturedRequest) -> anyhow::Result<String> {
    r.function_call_output_text(CALL)
        .with_context(|| format!("request #{} has no output of {CALL}", r.index))
}

/// Runs the asking turn in plan mode and checks it completed with the final `reply`.
async fn asking_turn(app: &AppServer, thread: &str, reply: &str) -> anyhow::Result<Turn> {
    let turn = run_turn(app, thread, vec![text("ask me first")], &plan_mode()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(turn.final_response(), reply, "final response");
    Ok(turn)
}

async fn answered(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = setup(ctx, script("thanks")).await?;
    let asked = record_requests(&app, ASK, |_| {
        Ok(json!({"answers": {"db_choice": {"answers": ["SQLite"]}}}))
    });
    let turn = asking_turn(&app, &thread, "thanks").await?;
    let asked = recorded(&asked);
    ensure_eq!(asked.len(), 1, "{ASK} requests");
    let p = &asked[0];
    ensure_eq!(p["threadId"], json!(thread), "{ASK} threadId");
    ensure_eq!(p["turnId"], json!(turn.id), "{ASK} turnId");
    ensure_eq!(p["itemId"], json!(CALL), "{ASK} itemId");
    ensure_eq!(p["questions"], client_questions(), "{ASK} questions");
    if ctx
        .caps
        .has_field("ToolRequestUserInputParams", "isBlocking")
    {
        ensure_eq!(p["isBlocking"], json!(true), "{ASK} isBlocking");
    }
    check_waiting_then_resolved(&app, &thread)?;
    let requests = world.expect_requests(2).await?;
    ensure_eq!(
        call_output(&requests[1])?,
        r#"{"answers":{"db_choice":{"answers":["SQLite"]}}}"#,
        "the call's output"
    );
    world.finish().await
}

/// The thread was flagged `waitingOnUserInput` before the request, and the request was
/// resolved (`serverRequest/resolved`) after it.
fn check_waiting_then_resolved(app: &AppServer, thread: &str) -> anyhow::Result<()> {
    let all = app.messages();
    let position = |f: &dyn Fn(&crate::app_server::Inbound) -> bool, what: &str| {
        all.iter()
            .position(f)
            .with_context(|| format!("no {what} arrived"))
    };
    let waiting = position(
        &|m| {
            m.is("thread/status/changed")
                && m.thread_id() == Some(thread)
                && m.params()["status"]["activeFlags"] == json!(["waitingOnUserInput"])
        },
        "thread/status/changed with waitingOnUserInput",
    )?;
    let asked = position(&|m| m.is(ASK), ASK)?;
    let resolved = position(
        &|m| m.is("serverRequest/resolved") && m.thread_id() == Some(thread),
        "serverRequest/resolved",
    )?;
    ensure!(
        waiting < asked && asked < resolved,
        "order: waitingOnUserInput at {waiting}, {ASK} at {asked}, resolved at {resolved}"
    );
    Ok(())
}

async fn declined(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = setup(ctx, script("no answers then")).await?;
    let asked = record_requests(&app, ASK, |_| {
        Err(RpcError {
            code: -32000,
            message: "the user declined to answer".into(),
            data: None,
        })
    });
    asking_turn(&app, &thread, "no answers then").await?;
    ensure_eq!(recorded(&asked).len(), 1, "{ASK} requests");
    check_waiting_then_resolved(&app, &thread)?;
    let requests = world.expect_requests(2).await?;
    ensure_eq!(
        call_output(&requests[1])?,
        r#"{"answers":{}}"#,
        "the declined call's output"
    );
    world.finish().await
}

async fn default_mode(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = setup(ctx, script("unavailable")).await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("ask me first")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(turn.final_response(), "unavailable", "final response");
    ensure!(
        !app.messages().iter().any(|m| m.is(ASK)),
        "codex asked the client in the default mode"
    );
    let requests = world.expect_requests(2).await?;
    ensure_eq!(
        call_output(&requests[1])?,
        "request_user_input is unavailable in Default mode",
        "the call's output"
    );
    world.finish().await
}

async fn unanswered(ctx: &Ctx) -> anyhow::Result<()> {
    let mut script = script("unused");
    script.truncate(1);
    script.push(Scripted::sse(bodies::assistant_reply(
        "resp-next",
        "next answer",
    )));
    let (world, app, thread) = setup(ctx, script).await?;
    app.leave_unanswered(ASK);
    let started = start_turn(&app, &thread, vec![text("ask me first")], &plan_mode()).await?;
    world.requests_arrived(1, Duration::from_secs(10)).await?;
    app.wait_for(started.cursor, Duration::from_secs(10), ASK, |m| m.is(ASK))
        .await?;
    app.turn_interrupt(&thread, &started.id)
        .await
        .context("turn/interrupt")?;
    let turn = wait_turn(&app, started, Duration::from_secs(2))
        .await
        .context("the turn did not end within 2 s of turn/interrupt")?;
    ensure_eq!(turn.status, TurnStatus::Interrupted, "turn status");
    app.wait_notification(0, "serverRequest/resolved", Duration::from_secs(5), |p| {
        p["threadId"] == thread.as_str()
    })
    .await
    .context("the unanswered request was never resolved")?;
    let next = run_turn(&app, &thread, vec![text("next")], &TurnOptions::default()).await?;
    ensure_eq!(next.status, TurnStatus::Completed, "next turn status");
    let requests = world.expect_requests(2).await?;
    let output = call_output(&requests[1])?;
    ensure!(
        output.starts_with("aborted by user after "),
        "the unanswered call's output: {output}"
    );
    ensure!(
        requests[1]
            .message_input_texts("user")
            .iter()
            .any(|t| t.starts_with("<turn_aborted>")),
        "the next request has no <turn_aborted> message"
    );
    world.finish().await
}
