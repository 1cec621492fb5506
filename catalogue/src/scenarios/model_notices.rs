//! The model-side notifications of group H: what codex tells the client when the Responses
//! stream or its headers say something about the model rather than the answer. A response
//! served by another model than the one asked for (`OpenAI-Model` header: `model/rerouted`),
//! a verification recommendation and moderation metadata in a `response.metadata` event
//! (`model/verification`, `turn/moderationMetadata`) and a response held for a safety check
//! (`safety_buffering` on `response.created`: `model/safetyBuffering/updated`). Each is new
//! to strict clients; each scenario applies where the binary's schema lists the method.

use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::setup;
use crate::app_server::turn::{MOCK_MODEL, TurnOptions, TurnStatus, run_turn, text};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::scenario;

/// The model the scripted response says served the request instead of the one asked for.
const SERVED_MODEL: &str = "parity-rerouted-model";

/// The faster model a safety-buffered response offers.
const FASTER_MODEL: &str = "parity-faster-model";

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "model_rerouted_notice",
            "H30",
            "a response whose OpenAI-Model header names another model than the thread's is \
             reported as model/rerouted (from the thread's model to the served one, reason \
             highRiskCyberActivity) before the turn completes normally",
            notice(Notice::Rerouted)
        )
        .applies(|c| c.needs_notification(Notice::Rerouted.method())),
        scenario!(
            "model_verification_notice",
            "H31",
            "a response.metadata event recommending trusted_access_for_cyber verification is \
             reported as model/verification [trustedAccessForCyber]; the turn completes",
            notice(Notice::Verification)
        )
        .applies(|c| c.needs_notification(Notice::Verification.method())),
        scenario!(
            "turn_moderation_metadata_notice",
            "H32",
            "moderation metadata in a response.metadata event reaches the client verbatim as \
             turn/moderationMetadata; the turn completes",
            notice(Notice::Moderation)
        )
        .applies(|c| c.needs_notification(Notice::Moderation.method())),
        scenario!(
            "model_safety_buffering_notice",
            "H33",
            "safety_buffering on response.created is reported as model/safetyBuffering/updated \
             (the thread's model, use cases, reasons, the faster model, showBufferingUi true); \
             the turn completes",
            notice(Notice::SafetyBuffering)
        )
        .applies(|c| c.needs_notification(Notice::SafetyBuffering.method())),
    ]
}

/// Which model-side notice a scenario provokes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Notice {
    Rerouted,
    Verification,
    Moderation,
    SafetyBuffering,
}

impl Notice {
    /// The notification codex should send.
    fn method(self) -> &'static str {
        match self {
            Notice::Rerouted => "model/rerouted",
            Notice::Verification => "model/verification",
            Notice::Moderation => "turn/moderationMetadata",
            Notice::SafetyBuffering => "model/safetyBuffering/updated",
        }
    }

    /// The scripted reply that should make codex send it: an answer "ok" with the signal.
    fn reply(self) -> Scripted {
        let id = "resp-1";
        match self {
            Notice::Rerouted => Scripted::sse(bodies::assistant_reply(id, "ok"))
                .header("OpenAI-Model", SERVED_MODEL),
            Notice::Verification => Scripted::sse(vec![
                events::response_created(id),
                events::model_verification_metadata(id, json!(["trusted_access_for_cyber"])),
                events::assistant_message("msg-1", "ok"),
                events::completed(id),
            ]),
            Notice::Moderation => Scripted::sse(vec![
                events::response_created(id),
                json!({
                    "type": "response.metadata",
                    "sequence_number": 1,
                    "response_id": id,
                    "metadata": {"openai_chatgpt_moderation_metadata": moderation()}
                }),
                events::assistant_message("msg-1", "ok"),
                events::completed(id),
            ]),
            Notice::SafetyBuffering => {
                let mut created = events::response_created(id);
                created["safety_buffering"] = json!({
                    "use_cases": ["cyber"],
                    "reasons": ["user_risk"],
                    "retry_model": FASTER_MODEL
                });
                Scripted::sse(vec![
                    created,
                    events::assistant_message("msg-1", "ok"),
                    events::completed(id),
                ])
            }
        }
    }

    /// What the notification's params should hold besides `threadId` and `turnId`.
    fn expected(self) -> Value {
        match self {
            Notice::Rerouted => json!({
                "fromModel": MOCK_MODEL,
                "toModel": SERVED_MODEL,
                "reason": "highRiskCyberActivity"
            }),
            Notice::Verification => json!({"verifications": ["trustedAccessForCyber"]}),
            Notice::Moderation => json!({"metadata": moderation()}),
            Notice::SafetyBuffering => json!({
                "model": MOCK_MODEL,
                "useCases": ["cyber"],
                "reasons": ["user_risk"],
                "fasterModel": FASTER_MODEL,
                "showBufferingUi": true
            }),
        }
    }
}

/// The moderation metadata H32 scripts (an opaque object codex passes on).
fn moderation() -> Value {
    json!({"flagged": false, "categories": {"parity": 0.0}, "note": "scripted"})
}

async fn notice(ctx: &Ctx, notice: Notice) -> anyhow::Result<()> {
    let (world, app, thread) = setup(ctx, vec![notice.reply()]).await?;
    let turn = run_turn(&app, &thread, vec![text("hello")], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    ensure_eq!(turn.final_response(), "ok", "final response");
    let method = notice.method();
    let sent: Vec<&Value> = turn.notifications(method);
    match sent.as_slice() {
        [params] => {
            ensure_eq!(params["threadId"], json!(thread), "{method} threadId");
            ensure_eq!(params["turnId"], json!(turn.id), "{method} turnId");
            let expected = notice.expected();
            let got: serde_json::Map<String, Value> = expected
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| (k.clone(), params[k].clone()))
                .collect();
            ctx.expect(&format!("{method}.params"), expected, Value::Object(got));
        }
        [] => ctx.drift(
            "notice.sent",
            json!(false),
            format!("codex sent no {method} for the scripted signal"),
        ),
        many => ctx.drift(
            "notice.count",
            json!(many.len()),
            format!("codex sent {method} {} times for one signal", many.len()),
        ),
    }
    world.expect_requests(1).await?;
    world.finish().await
}
