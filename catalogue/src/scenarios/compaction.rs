//! Group F, compaction rows (`parity-scenarios.md` F14–F16, facts in `transports.md` §3):
//! manual local compaction with a custom provider (F14), automatic compaction past
//! `model_auto_compact_token_limit` before a turn (F15) and in the middle of one, after a
//! function call (F15a), and remote compaction for a provider named `OpenAI` (F16), with a
//! v2 answer that is not a compaction item (F16a).
//!
//! Each row asserts the requests codex sends (count, the summary request's prompt and tools,
//! what the request after the compaction carries), the `contextCompaction` item, the turns
//! it runs in and their outcome. A difference from the catalogue is recorded with
//! [`Ctx::drift`] under a stable key, with the value codex gave; the baselines list what each
//! version is known for.
//!
//! Remote compaction has two protocols (v1 `POST {base}/responses/compact`, v2 a
//! `/responses` request ending in `compaction_trigger`). Codex announces v2 in the
//! `x-codex-beta-features` header of every model request; F16 reads the announcement from
//! the first turn's request, scripts the matching answer and holds codex to that protocol.
//! The F16 world keeps `base_url` on the sidecar: nothing leaves the machine.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies, compaction, events};
use serde_json::{Value, json};

use super::{record_requests, recorded, setup_with};
use crate::app_server::AppServer;
use crate::app_server::turn::{
    MOCK_MODEL, StartedTurn, TURN_TIMEOUT, Turn, TurnOptions, TurnStatus, run_turn, text, wait_turn,
};
use crate::codex::capabilities::Capabilities;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{World, WorldOptions};
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "compaction_manual_local",
            "F14",
            "thread/compact/start after two turns, custom provider: a summary request with the \
             checkpoint prompt and no tools, a contextCompaction item in a turn of its own, the \
             next request carries the summary and no earlier assistant message",
            manual_local
        )
        .applies(needs_compact_start)
        .timeout(Duration::from_secs(30)),
        scenario!(
            "compaction_auto_pre_turn",
            "F15",
            "usage past model_auto_compact_token_limit: the next turn/start compacts first (a \
             summary request without the new message), then sends the turn with the summary",
            auto_pre_turn
        )
        .timeout(Duration::from_secs(30)),
        scenario!(
            "compaction_auto_mid_turn",
            "F15a",
            "a function call whose response is past model_auto_compact_token_limit: codex \
             compacts (the call and its output in the summary request) before the follow-up",
            auto_mid_turn
        )
        .applies(Capabilities::needs_dynamic_tools)
        .timeout(Duration::from_secs(30)),
        scenario!(
            "compaction_remote",
            "F16",
            "a provider named OpenAI compacts remotely: v1 POST /responses/compact with the full \
             history or v2 /responses ending in compaction_trigger, as codex announces; the \
             next turn's input carries the compaction item",
            remote
        )
        .applies(needs_compact_start)
        .timeout(Duration::from_secs(30)),
        scenario!(
            "compaction_remote_wrong_answer",
            "F16a",
            "remote compaction v2 answered with an assistant message instead of one compaction \
             item: the compaction turn fails with codex's error",
            remote_wrong_answer
        )
        .applies(needs_compact_start)
        .timeout(Duration::from_secs(30)),
    ]
}

/// The client request that compacts a thread by hand.
const COMPACT_START: &str = "thread/compact/start";

/// The binary accepts `thread/compact/start`.
fn needs_compact_start(caps: &Capabilities) -> Result<(), String> {
    caps.require_methods(&[COMPACT_START])
}

/// What the local summary request's prompt contains (`transports.md` §3.2).
const CHECKPOINT_PROMPT: &str = "CONTEXT CHECKPOINT COMPACTION";

/// The summary the mock answers a local compaction with.
const SUMMARY: &str = "SUMMARY-OF-THE-THREAD: questions asked and answered so far.";

/// The usage past the limit the F15 rows report (as probed in `transports.md` §3.5).
const OVER_LIMIT: u64 = 500_001;

/// The `model_auto_compact_token_limit` the F15 rows configure.
const LIMIT: u64 = 1000;

/// The encrypted summary F16's compaction item carries.
const ENCRYPTED: &str = "ENCRYPTED-F16-SUMMARY";

/// Codex's error for a v2 answer without a compaction item (`transports.md` §3.4).
const V2_WRONG_ANSWER: &str = "Error running remote compact task: Fatal error: remote \
                               compaction v2 expected exactly one compaction output item, got \
                               0 from 1 output items";

/// Sends `thread/compact/start` and collects the turn codex runs for it: its `turn/started`
/// names the turn, which is recorded as one the client asked for (it did, with this request),
/// then waits for its `turn/completed`. Returns the request's result and the turn.
async fn compact(app: &AppServer, thread: &str) -> anyhow::Result<(Value, Turn)> {
    let cursor = app.cursor();
    let result = app
        .call(COMPACT_START, json!({"threadId": thread}))
        .await
        .context(COMPACT_START)?;
    let started = app
        .wait_notification(cursor, "turn/started", Duration::from_secs(10), |p| {
            p["threadId"] == thread
        })
        .await?;
    let id = started
        .turn_id()
        .context("turn/started without a turn id")?
        .to_string();
    app.note_started_turn(&id);
    let started = StartedTurn {
        id,
        thread_id: thread.to_string(),
        cursor,
        result: result.clone(),
        model: MOCK_MODEL.to_string(),
    };
    Ok((result, wait_turn(app, started, TURN_TIMEOUT).await?))
}

/// The `type` of each item the turn started (`item/started`), in order.
fn started_items(turn: &Turn) -> Value {
    turn.notifications("item/started")
        .into_iter()
        .map(|p| p["item"]["type"].clone())
        .collect()
}

/// The turn's `error` notifications as `willRetry`, `message` and `codexErrorInfo`.
fn errors(turn: &Turn) -> Value {
    turn.notifications("error")
        .into_iter()
        .map(|p| {
            json!({
                "willRetry": p["willRetry"],
                "message": p["error"]["message"],
                "codexErrorInfo": p["error"]["codexErrorInfo"],
            })
        })
        .collect()
}

/// Exactly `n` model requests were captured (recorded as `requests.count` drift otherwise);
/// fails when fewer than `need` arrived, as the checks after it read them.
async fn model_requests(
    ctx: &Ctx,
    world: &World,
    n: usize,
    need: usize,
) -> anyhow::Result<Vec<CapturedRequest>> {
    let requests = world.captured(n, Duration::from_secs(2)).await?;
    ctx.expect("requests.count", json!(n), json!(requests.len()));
    ensure!(
        requests.len() >= need,
        "expected at least {need} model requests, the sidecar captured {}",
        requests.len()
    );
    Ok(requests)
}

/// A reply whose one assistant message is `text` and whose usage totals `total` tokens.
fn costly_reply(resp_id: &str, text: &str, total: u64) -> Scripted {
    Scripted::sse(vec![
        events::response_created(resp_id),
        events::assistant_message(&format!("msg-{resp_id}"), text),
        events::completed_with_tokens(resp_id, total),
    ])
}

/// The local summary request (`transports.md` §3.2), checked under `summary_request.*`: its
/// last input item is a user message with the checkpoint prompt, it offers no tools, and it
/// carries the assistant messages `history` (the thread so far).
fn check_summary_request(ctx: &Ctx, r: &CapturedRequest, history: &[&str]) {
    let last = r.input().ok().and_then(|i| i.last());
    let prompt = last.is_some_and(|i| {
        i["type"] == "message" && i["role"] == "user" && i.to_string().contains(CHECKPOINT_PROMPT)
    });
    ctx.expect("summary_request.prompt", json!(true), json!(prompt));
    ctx.expect("summary_request.tools", json!([]), r.body["tools"].clone());
    ctx.expect(
        "summary_request.assistant_messages",
        json!(history),
        json!(r.message_input_texts("assistant")),
    );
}

/// The request after a local compaction, checked under `PREFIX.*`: a user message carries
/// the summary, no assistant message is left, no `previous_response_id`, and its last user
/// text is `last_user` (the new message, or the summary itself mid-turn).
fn check_after_summary(ctx: &Ctx, prefix: &str, r: &CapturedRequest, last_user: &str) {
    let summary = r
        .message_input_texts("user")
        .iter()
        .any(|t| t.contains(SUMMARY));
    ctx.expect(&format!("{prefix}.summary"), json!(true), json!(summary));
    ctx.expect(
        &format!("{prefix}.assistant_messages"),
        json!([]),
        json!(r.message_input_texts("assistant")),
    );
    ctx.expect(
        &format!("{prefix}.previous_response_id"),
        Value::Null,
        r.body["previous_response_id"].clone(),
    );
    // Mid-turn the last user message is codex's summary message: its text ends with ours.
    let last = r.last_user_text();
    let got = match &last {
        Some(t) if t.ends_with(last_user) => json!(last_user),
        other => json!(other),
    };
    ctx.expect(&format!("{prefix}.last_user_text"), json!(last_user), got);
}

/// F14: two turns, `thread/compact/start`, a third turn.
async fn manual_local(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        Scripted::sse(bodies::assistant_reply("resp-1", "answer one")),
        Scripted::sse(bodies::assistant_reply("resp-2", "answer two")),
        Scripted::sse(bodies::assistant_reply("resp-sum", SUMMARY)),
        Scripted::sse(bodies::assistant_reply("resp-3", "answer three")),
    ];
    let (world, app, thread, _) =
        setup_with(ctx, WorldOptions::default(), script, json!({})).await?;
    let opts = TurnOptions::default();
    let one = run_turn(&app, &thread, vec![text("question one")], &opts).await?;
    let two = run_turn(&app, &thread, vec![text("question two")], &opts).await?;
    let (result, compacted) = compact(&app, &thread).await?;
    let three = run_turn(&app, &thread, vec![text("after compact")], &opts).await?;
    ctx.expect("compact_start.result", json!({}), result);
    let statuses = json!([one.status, two.status, compacted.status, three.status]);
    ctx.expect(
        "turns.status",
        json!(vec![TurnStatus::Completed; 4]),
        statuses,
    );
    let own = ![&one.id, &two.id, &three.id].contains(&&compacted.id);
    ctx.expect("compact_turn.own_turn", json!(true), json!(own));
    ctx.expect(
        "compact_turn.items_started",
        json!(["contextCompaction"]),
        started_items(&compacted),
    );
    let completed: Vec<&Value> = compacted
        .notifications("item/completed")
        .into_iter()
        .map(|p| &p["item"]["type"])
        .collect();
    ctx.expect(
        "compact_turn.items_completed",
        json!(["contextCompaction"]),
        json!(completed),
    );
    ctx.expect(
        "turn3.final",
        json!("answer three"),
        json!(three.final_response()),
    );
    let requests = model_requests(ctx, &world, 4, 4).await?;
    check_summary_request(ctx, &requests[2], &["answer one", "answer two"]);
    check_after_summary(ctx, "next_request", &requests[3], "after compact");
    world.finish().await
}

/// The options of the F15 rows: `model_auto_compact_token_limit` [`LIMIT`].
fn auto_options() -> WorldOptions {
    WorldOptions {
        auto_compact_token_limit: Some(LIMIT),
        ..WorldOptions::default()
    }
}

/// F15: turn 1's response reports usage over the limit; turn 2 compacts first.
async fn auto_pre_turn(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        costly_reply("resp-1", "a long answer", OVER_LIMIT),
        Scripted::sse(bodies::assistant_reply("resp-sum", SUMMARY)),
        Scripted::sse(bodies::assistant_reply("resp-2", "after compaction")),
    ];
    let (world, app, thread, _) = setup_with(ctx, auto_options(), script, json!({})).await?;
    let opts = TurnOptions::default();
    let one = run_turn(&app, &thread, vec![text("fill the context")], &opts).await?;
    let two = run_turn(&app, &thread, vec![text("next question")], &opts).await?;
    let statuses = json!([one.status, two.status]);
    ctx.expect(
        "turns.status",
        json!(vec![TurnStatus::Completed; 2]),
        statuses,
    );
    ctx.expect(
        "turn1.items_started",
        json!(["userMessage", "agentMessage"]),
        started_items(&one),
    );
    // Compaction first, then the turn's own message and answer.
    ctx.expect(
        "turn2.items_started",
        json!(["contextCompaction", "userMessage", "agentMessage"]),
        started_items(&two),
    );
    ctx.expect(
        "turn2.final",
        json!("after compaction"),
        json!(two.final_response()),
    );
    let requests = model_requests(ctx, &world, 3, 3).await?;
    check_summary_request(ctx, &requests[1], &["a long answer"]);
    let new_message = requests[1].body.to_string().contains("next question");
    ctx.expect(
        "summary_request.has_new_message",
        json!(false),
        json!(new_message),
    );
    check_after_summary(ctx, "turn_request", &requests[2], "next question");
    world.finish().await
}

/// F15a's dynamic tool `lookup`, taking a string `id`.
fn lookup_tool() -> Value {
    let schema = json!({"type": "object", "properties": {"id": {"type": "string"}},
                        "required": ["id"]});
    json!({"type": "function", "name": "lookup", "description": "Look up a ticket.",
           "inputSchema": schema})
}

/// F15a: the turn's first response is a tool call with usage over the limit; codex compacts
/// before the follow-up.
async fn auto_mid_turn(ctx: &Ctx) -> anyhow::Result<()> {
    let mut call = events::function_call("call-1", "lookup", "{\"id\": \"T-1\"}");
    call["item"]["id"] = json!("fc-1");
    let script = vec![
        Scripted::sse(vec![
            events::response_created("resp-1"),
            call,
            events::completed_with_tokens("resp-1", OVER_LIMIT),
        ]),
        Scripted::sse(bodies::assistant_reply("resp-sum", SUMMARY)),
        Scripted::sse(bodies::assistant_reply("resp-2", "done")),
    ];
    let params = json!({"dynamicTools": [lookup_tool()]});
    let (world, app, thread, _) = setup_with(ctx, auto_options(), script, params).await?;
    let calls = record_requests(&app, "item/tool/call", |_| {
        Ok(
            json!({"contentItems": [{"type": "inputText", "text": "ticket T-1 is open"}],
                  "success": true}),
        )
    });
    let opts = TurnOptions::default();
    let turn = run_turn(&app, &thread, vec![text("use the tool")], &opts).await?;
    ctx.expect_status("turn.status", TurnStatus::Completed, &turn);
    ctx.expect("turn.final", json!("done"), json!(turn.final_response()));
    ctx.expect("turn.tool_calls", json!(1), json!(recorded(&calls).len()));
    // The call, then compaction, then the follow-up's answer, all in the one turn.
    ctx.expect(
        "turn.items_started",
        json!([
            "userMessage",
            "dynamicToolCall",
            "contextCompaction",
            "agentMessage"
        ]),
        started_items(&turn),
    );
    let requests = model_requests(ctx, &world, 3, 3).await?;
    let summary = &requests[1];
    check_summary_request(ctx, summary, &[]);
    let has_both = summary.has_function_call("call-1")
        && summary.function_call_output_text("call-1").as_deref() == Some("ticket T-1 is open");
    ctx.expect(
        "summary_request.call_and_output",
        json!(true),
        json!(has_both),
    );
    check_after_summary(ctx, "follow_up", &requests[2], SUMMARY);
    world.finish().await
}

/// The remote compaction protocol a codex announces (`x-codex-beta-features`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Remote {
    /// `POST {base}/responses/compact` (`transports.md` §3.3).
    V1,
    /// A `/responses` request ending in `compaction_trigger` (§3.4).
    V2,
}

impl Remote {
    /// The protocol the request's `x-codex-beta-features` announces.
    fn announced_by(r: &CapturedRequest) -> Remote {
        let beta = r.all_headers.get("x-codex-beta-features");
        let v2 = beta.is_some_and(|b| b.split(',').any(|f| f.trim() == "remote_compaction_v2"));
        if v2 { Remote::V2 } else { Remote::V1 }
    }

    /// The name the drift and the observation use.
    fn name(self) -> &'static str {
        match self {
            Remote::V1 => "v1 POST /responses/compact",
            Remote::V2 => "v2 /responses with compaction_trigger",
        }
    }
}

/// A world whose provider is named `OpenAI` (remote compaction; `base_url` stays the
/// sidecar's), after a first turn `hi` answered `hello`; returns the world, the app-server,
/// the thread, the first turn and the remote protocol its request announced.
async fn remote_setup(
    ctx: &Ctx,
) -> anyhow::Result<(World, std::sync::Arc<AppServer>, String, Turn, Remote)> {
    let options = WorldOptions {
        provider_name: "OpenAI".into(),
        ..WorldOptions::default()
    };
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-1", "hello"))];
    let (world, app, thread, _) = setup_with(ctx, options, script, json!({})).await?;
    let opts = TurnOptions::default();
    let one = run_turn(&app, &thread, vec![text("hi")], &opts).await?;
    let first = world.captured(1, Duration::from_secs(2)).await?;
    let remote = first
        .first()
        .map(Remote::announced_by)
        .context("the first turn's request was not captured")?;
    ctx.observe(format!("remote compaction: {}", remote.name()));
    Ok((world, app, thread, one, remote))
}

/// The `POST …/responses/compact` requests the sidecar captured.
async fn compact_posts(world: &World) -> anyhow::Result<Vec<CapturedRequest>> {
    Ok(world
        .sidecar
        .all_requests()
        .await?
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/responses/compact"))
        .collect())
}

/// F16: one turn, `thread/compact/start` answered remotely, a second turn.
async fn remote(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread, one, remote) = remote_setup(ctx).await?;
    let answer = match remote {
        Remote::V1 => Scripted::compact(compaction::compact_body(vec![
            compaction::user_message("hi"),
            compaction::item("cmp_1", ENCRYPTED),
        ])),
        Remote::V2 => Scripted::sse(compaction::compaction_response(
            "resp-cmp", "cmp_1", ENCRYPTED,
        )),
    };
    let after = Scripted::sse(bodies::assistant_reply("resp-2", "after"));
    world.script(vec![answer, after]).await?;
    let (_, compacted) = compact(&app, &thread).await?;
    let opts = TurnOptions::default();
    let two = run_turn(&app, &thread, vec![text("after compact")], &opts).await?;
    let statuses = json!([one.status, compacted.status, two.status]);
    ctx.expect(
        "turns.status",
        json!(vec![TurnStatus::Completed; 3]),
        statuses,
    );
    ctx.expect(
        "compact_turn.items_started",
        json!(["contextCompaction"]),
        started_items(&compacted),
    );
    ctx.expect("compact_turn.errors", json!([]), errors(&compacted));
    let posts = compact_posts(&world).await?;
    let requests = match remote {
        Remote::V1 => {
            ctx.expect("compact_posts.count", json!(1), json!(posts.len()));
            if let Some(post) = posts.first() {
                check_v1_request(ctx, post);
            }
            model_requests(ctx, &world, 2, 2).await?
        }
        Remote::V2 => {
            ctx.expect("compact_posts.count", json!(0), json!(posts.len()));
            let requests = model_requests(ctx, &world, 3, 3).await?;
            check_v2_request(ctx, &requests[1]);
            requests
        }
    };
    check_after_remote(ctx, requests.last().context("no request captured")?);
    world.finish().await
}

/// The v1 `POST …/responses/compact` (`transports.md` §3.3): not streamed, the full history.
fn check_v1_request(ctx: &Ctx, post: &CapturedRequest) {
    ctx.expect("v1.stream", Value::Null, post.body["stream"].clone());
    let history = json!([
        post.message_input_texts("user").last(),
        post.message_input_texts("assistant")
    ]);
    ctx.expect("v1.history", json!(["hi", ["hello"]]), history);
}

/// The v2 request (`transports.md` §3.4): the full history, then `compaction_trigger` last.
fn check_v2_request(ctx: &Ctx, r: &CapturedRequest) {
    let last = r.input().ok().and_then(|i| i.last()).cloned();
    ctx.expect(
        "v2.last_input",
        json!({"type": "compaction_trigger"}),
        json!(last),
    );
    let history = json!([
        r.message_input_texts("user").last(),
        r.message_input_texts("assistant")
    ]);
    ctx.expect("v2.history", json!(["hi", ["hello"]]), history);
}

/// The turn after a remote compaction carries the compaction item and no assistant message.
fn check_after_remote(ctx: &Ctx, r: &CapturedRequest) {
    let carried: Vec<&Value> = r
        .inputs_of_type("compaction")
        .into_iter()
        .map(|i| &i["encrypted_content"])
        .collect();
    ctx.expect(
        "next_request.compaction_items",
        json!([ENCRYPTED]),
        json!(carried),
    );
    ctx.expect(
        "next_request.assistant_messages",
        json!([]),
        json!(r.message_input_texts("assistant")),
    );
    ctx.expect(
        "next_request.user_text",
        json!("after compact"),
        json!(r.last_user_text()),
    );
}

/// F16a: as F16, but the compaction is answered with an assistant message. On a codex that
/// speaks only v1 the same wrong answer goes to `/responses/compact`, and the protocol is
/// drift.
async fn remote_wrong_answer(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread, one, remote) = remote_setup(ctx).await?;
    ctx.expect(
        "remote.protocol",
        json!(Remote::V2.name()),
        json!(remote.name()),
    );
    let answer = match remote {
        Remote::V1 => Scripted::compact(compaction::compact_body(vec![json!({
            "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "not a compaction"}]})])),
        Remote::V2 => Scripted::sse(bodies::assistant_reply("resp-cmp", "not a compaction")),
    };
    world.script(vec![answer]).await?;
    let (_, compacted) = compact(&app, &thread).await?;
    ctx.expect_status("turn1.status", TurnStatus::Completed, &one);
    let outcome = json!({
        "status": compacted.status,
        "errors": errors(&compacted),
        "turn_error": compacted.error_message(),
    });
    let want = json!({
        "status": TurnStatus::Failed,
        "errors": [{"willRetry": false, "message": V2_WRONG_ANSWER, "codexErrorInfo": "other"}],
        "turn_error": V2_WRONG_ANSWER,
    });
    ctx.expect("compact_turn.outcome", want, outcome);
    ctx.expect(
        "compact_turn.items_started",
        json!(["contextCompaction"]),
        started_items(&compacted),
    );
    world.finish().await
}
