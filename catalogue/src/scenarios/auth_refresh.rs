//! The ChatGPT token refresh of group H (`account/chatgptAuthTokens/refresh`): a client
//! that supplies codex's ChatGPT tokens itself (`account/login/start` with type
//! `chatgptAuthTokens`) is asked for a new one when the model answers 401. Answered with a
//! token, refused with an error, or never answered. The provider takes codex's OpenAI auth
//! ([`WorldOptions::openai_auth`]), so the bearer of each model request shows which token
//! codex used; the tokens are unsigned JWTs ([`chatgpt_token`]).

use anyhow::{Context, ensure};
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::support::chatgpt_token::{self, ACCOUNT, token};
use super::{record_requests, recorded};
use crate::app_server::AppServer;
use crate::app_server::message::{Message, RpcError};
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;

/// The server request that asks the client for a new ChatGPT access token.
const REFRESH: &str = "account/chatgptAuthTokens/refresh";

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "token_refresh_answered",
            "H23",
            "logged in with ChatGPT tokens the client supplies (account/login/start \
             chatgptAuthTokens), a 401 from the model makes codex send \
             account/chatgptAuthTokens/refresh (reason unauthorized, previousAccountId the \
             login's account); the token the client answers is the bearer of the retried \
             model request and the turn completes",
            refresh(Answer::Token)
        )
        .applies(|c| c.needs_server_request(REFRESH)),
        scenario!(
            "token_refresh_refused",
            "H24",
            "a token refresh answered with a JSON-RPC error is not retried: the turn fails \
             with an error, after one model request",
            refresh(Answer::Error)
        )
        .applies(|c| c.needs_server_request(REFRESH)),
        scenario!(
            "token_refresh_unanswered",
            "H25",
            "a token refresh the client never answers gives up on its own: the turn fails \
             with an error, after one model request",
            refresh(Answer::Nothing)
        )
        .applies(|c| c.needs_server_request(REFRESH))
        .waits(),
    ]
}

/// How the client answers the refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// A new token for the same account.
    Token,
    /// A JSON-RPC error.
    Error,
    /// Nothing.
    Nothing,
}

/// The params of every refresh request `app` received.
fn asked(app: &AppServer) -> Vec<Value> {
    app.messages()
        .iter()
        .filter(|m| matches!(&m.message, Message::Request { method, .. } if method == REFRESH))
        .map(|m| m.params().clone())
        .collect()
}

async fn refresh(ctx: &Ctx, answer: Answer) -> anyhow::Result<()> {
    let options = WorldOptions {
        openai_auth: true,
        ..Default::default()
    };
    let expired = Scripted::http_error(
        401,
        json!({"error": {"message": "the access token expired", "type": "invalid_request_error",
                         "code": "token_expired"}}),
    );
    let mut script = vec![expired];
    if answer == Answer::Token {
        script.push(Scripted::sse(bodies::assistant_reply(
            "resp-refreshed",
            "refreshed",
        )));
    }
    let mut world = ctx.world(options).await?;
    world.script(script).await?;
    let app = world.start().await?;
    let login = app
        .call(
            "account/login/start",
            json!({"type": "chatgptAuthTokens", "accessToken": token("first"),
                   "chatgptAccountId": ACCOUNT}),
        )
        .await
        .context("account/login/start with chatgptAuthTokens")?;
    ensure_eq!(login["type"], json!("chatgptAuthTokens"), "login type");
    let seen = match answer {
        Answer::Token => Some(record_requests(&app, REFRESH, |_| {
            Ok(json!({"accessToken": token("refreshed"), "chatgptAccountId": ACCOUNT}))
        })),
        Answer::Error => Some(record_requests(&app, REFRESH, |_| {
            Err(RpcError {
                code: -32000,
                message: "this client cannot refresh".into(),
                data: None,
            })
        })),
        Answer::Nothing => {
            app.leave_unanswered(REFRESH);
            None
        }
    };
    let (thread, _) = world.start_thread(&app, json!({})).await?;
    let turn = run_turn(&app, &thread, vec![text("hello")], &TurnOptions::default()).await?;
    let requests = asked(&app);
    ensure_eq!(requests.len(), 1, "{REFRESH} requests");
    if let Some(seen) = &seen {
        ensure_eq!(recorded(seen).len(), 1, "{REFRESH} requests handled");
    }
    ensure_eq!(
        requests[0]["reason"],
        json!("unauthorized"),
        "{REFRESH} reason"
    );
    ensure_eq!(
        requests[0]["previousAccountId"],
        json!(ACCOUNT),
        "{REFRESH} previousAccountId"
    );
    let completed = app
        .messages()
        .iter()
        .find(|m| m.is("account/login/completed"))
        .map(|m| m.params()["success"].clone());
    ctx.observe(format!(
        "account/login/completed success: {}",
        completed.map_or("not sent".into(), |s| s.to_string())
    ));
    let model = world
        .expect_requests(if answer == Answer::Token { 2 } else { 1 })
        .await?;
    let bearer = |i: usize| {
        model[i]
            .header("authorization")
            .and_then(chatgpt_token::subject)
            .unwrap_or_default()
    };
    ensure_eq!(bearer(0), "first", "the first model request's token");
    match answer {
        Answer::Token => {
            ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
            ensure_eq!(turn.final_response(), "refreshed", "final response");
            ensure_eq!(bearer(1), "refreshed", "the retried model request's token");
        }
        Answer::Error | Answer::Nothing => {
            ensure_eq!(turn.status, TurnStatus::Failed, "turn status");
            let message = turn
                .error
                .as_ref()
                .and_then(|e| e["message"].as_str())
                .unwrap_or_default()
                .to_string();
            ensure!(!message.is_empty(), "the failed turn has no error message");
            ctx.observe(format!("the turn's error: {message}"));
        }
    }
    world.finish().await
}
