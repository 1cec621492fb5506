//! Group I, what a listener adds to stdio: each connection its own `initialize` (I11), two
//! clients on one thread (I12), a client that disconnects mid-turn and one that comes back
//! and resumes (I13), `--ws-auth capability-token` by file (I14) and by digest (I14c) and
//! `signed-bearer-token` (I14b), the HTTP side of a ws:// listener (`/readyz`, `/healthz`,
//! the `Origin` refusal: I15) and the lack of one on a unix:// listener (I15b), and the
//! control socket's other clients, `codex app-server proxy` and `daemon version` (I16).
//!
//! Applicability comes from `codex app-server --help` (the values of `--listen`, the
//! `--ws-auth` modes, the subcommands), never from a version number.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::support::jwt;
use super::{record_requests, recorded, rpc_error};
use crate::app_server::AppServer;
use crate::app_server::listener::{ConnectError, ListenAt, Listener};
use crate::app_server::message::Message;
use crate::app_server::proxy::{control_socket, daemon_version};
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, start_turn, text};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{World, WorldOptions};
use crate::scenario;

/// The server request that asks to run a command.
const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "listener_initialize_per_connection",
            "I11",
            "each connection to a ws:// listener is initialized on its own: a request before its \
             initialize is refused (-32600 Not initialized) while another connection works, and \
             a second initialize on a connection is refused",
            initialize_per_connection
        )
        .applies(|c: &Capabilities| c.needs_listen("ws")),
        scenario!(
            "listener_two_clients_share_a_thread",
            "I12",
            "two clients of one ws:// listener on one thread (one started it, the other resumed \
             it): both get the turn's notifications and its turn/completed; the command \
             approval goes to both, the first answer settles it and the other client gets \
             serverRequest/resolved",
            two_clients
        )
        .applies(|c: &Capabilities| {
            c.needs_listen("ws")?;
            c.needs_resume()
        }),
        scenario!(
            "listener_client_reconnects_and_resumes",
            "I13",
            "a client that disconnects mid-turn does not stop the turn: a new connection that \
             resumes the thread while it runs gets its turn/completed (completed), thread/read \
             says completed, and its next turn's request carries the first turn",
            reconnect
        )
        .applies(|c: &Capabilities| {
            c.needs_listen("ws")?;
            c.needs_resume()
        }),
        scenario!(
            "listener_ws_auth_capability_token",
            "I14",
            "--ws-auth capability-token: a handshake without a token or with a wrong one is \
             refused with HTTP 401, one with the token as a bearer is accepted and works; \
             /readyz needs no token",
            ws_auth
        )
        .applies(|c: &Capabilities| c.needs_ws_auth("capability-token")),
        scenario!(
            "listener_ws_auth_signed_bearer_token",
            "I14b",
            "--ws-auth signed-bearer-token with a shared secret, an issuer and an audience: a \
             handshake without a token, with an HS256 token signed by another secret, expired, \
             for another issuer or another audience, or unsigned (alg none) is refused with \
             HTTP 401; a token signed with the secret for the issuer and audience is accepted \
             and works",
            ws_auth_signed
        )
        .applies(|c: &Capabilities| c.needs_ws_auth("signed-bearer-token")),
        scenario!(
            "listener_ws_auth_token_digest",
            "I14c",
            "--ws-auth capability-token given as --ws-token-sha256 (the token's SHA-256 in \
             hex, no file): a handshake without a token, with a wrong one, or with the digest \
             itself as the bearer is refused with HTTP 401; the token whose digest it is is \
             accepted and works",
            ws_auth_digest
        )
        .applies(|c: &Capabilities| {
            c.needs_ws_auth("capability-token")?;
            c.needs_app_server_flags(&["--ws-token-sha256"])
        }),
        scenario!(
            "listener_health_and_origin",
            "I15",
            "a ws:// listener answers GET /readyz and /healthz with 200, a plain GET elsewhere \
             with 400, and refuses with 403 any request with an Origin header (health check or \
             handshake); it keeps serving other clients",
            health_and_origin
        )
        .applies(|c: &Capabilities| c.needs_listen("ws")),
        scenario!(
            "unix_listener_no_http_side",
            "I15b",
            "a unix:// listener has no HTTP side: a plain GET of /readyz, /healthz or / over \
             its socket gets the connection closed with no answer; a WebSocket handshake \
             carrying an Origin header is accepted (no 403 as on ws://: the socket's file \
             permissions guard it) and that connection initializes and starts a thread",
            unix_no_http_side
        )
        .applies(|c: &Capabilities| c.needs_listen("unix")),
        scenario!(
            "control_socket_proxy_and_daemon_version",
            "I16",
            "--listen unix:// makes the control socket in CODEX_HOME; daemon version finds it \
             running with the app-server's version, and a WebSocket client through \
             `codex app-server proxy` initializes, starts a thread and runs a turn",
            control_socket_clients
        )
        .applies(|c: &Capabilities| {
            c.needs_listen("unix")?;
            c.needs_app_server_command("proxy")?;
            c.needs_app_server_command("daemon")
        }),
    ]
}

/// A world with `options` and `script` queued, and a ws:// listener in its home and
/// workspace started with `extra` arguments.
async fn listening(
    ctx: &Ctx,
    options: WorldOptions,
    script: Vec<Scripted>,
    extra: &[String],
) -> anyhow::Result<(World, Arc<Listener>)> {
    let mut world = ctx.world(options).await?;
    world.script(script).await?;
    let listener = world.listen(&ListenAt::WebSocket, extra).await?;
    Ok((world, listener))
}

/// A new connection of the world to `listener`, initialized.
async fn client(world: &mut World, listener: &Listener) -> anyhow::Result<Arc<AppServer>> {
    let app = world.connect(listener, &[]).await?;
    app.initialize(true).await.context("initialize")?;
    Ok(app)
}

async fn initialize_per_connection(ctx: &Ctx) -> anyhow::Result<()> {
    let (mut world, listener) = listening(ctx, WorldOptions::default(), vec![], &[]).await?;
    let first = client(&mut world, &listener).await?;
    let second = world.connect(&listener, &[]).await?;
    let early = rpc_error(
        second.thread_start(json!({})).await,
        "thread/start before initialize on the second connection",
    )?;
    ensure_eq!(
        (early.code, early.message.as_str()),
        (-32600, "Not initialized"),
        "thread/start before this connection's initialize"
    );
    let (thread, _) = world.start_thread(&first, json!({})).await?;
    ensure!(!thread.is_empty(), "the first connection started no thread");
    let result = second
        .initialize(true)
        .await
        .context("the second initialize")?;
    ensure!(
        result["userAgent"]
            .as_str()
            .is_some_and(|a| a.contains("codex-parity")),
        "the second connection's initialize has no userAgent naming its client: {result}"
    );
    let again = rpc_error(
        second.initialize(true).await,
        "a second initialize on the same connection",
    )?;
    ensure_eq!(
        (again.code, again.message.as_str()),
        (-32600, "Already initialized"),
        "a repeated initialize"
    );
    let (other, _) = world.start_thread(&second, json!({})).await?;
    ensure!(other != thread, "both connections got thread {thread}");
    world.finish().await
}

async fn two_clients(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        approval_policy: "on-request".into(),
        sandbox_mode: "workspace-write".into(),
        ..Default::default()
    };
    let script = vec![
        Scripted::sse(bodies::assistant_reply("resp-0", "ready")),
        Scripted::sse(bodies::one_item_reply(
            "resp-1",
            events::exec_command_call("call-two-1", "touch shared.txt"),
        )),
        Scripted::sse(bodies::assistant_reply("resp-2", "both saw it")),
    ];
    let (mut world, listener) = listening(ctx, options, script, &[]).await?;
    let starter = client(&mut world, &listener).await?;
    let (thread, _) = world
        .start_thread(&starter, json!({"approvalPolicy": "untrusted"}))
        .await?;
    // A thread has a rollout to resume only after its first turn.
    run_turn(
        &starter,
        &thread,
        vec![text("get ready")],
        &TurnOptions::default(),
    )
    .await?;
    let watcher = client(&mut world, &listener).await?;
    watcher
        .thread_resume(&thread, json!({}))
        .await
        .context("thread/resume by the second client")?;
    let at_starter = record_requests(&starter, COMMAND_APPROVAL, |_| {
        Ok(json!({"decision": "accept"}))
    });
    watcher.leave_unanswered(COMMAND_APPROVAL);
    let watched_from = watcher.cursor();
    let turn = run_turn(
        &starter,
        &thread,
        vec![text("create shared.txt")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(
        turn.status,
        TurnStatus::Completed,
        "the starter's turn status"
    );
    ensure_eq!(
        turn.final_response(),
        "both saw it",
        "the starter's final response"
    );
    ensure_eq!(
        recorded(&at_starter).len(),
        1,
        "approval requests to the starter"
    );
    ensure!(
        world.workspace.join("shared.txt").exists(),
        "the approved command did not run"
    );
    let done = watcher
        .wait_notification(
            watched_from,
            "turn/completed",
            Duration::from_secs(5),
            |p| p.pointer("/turn/id").and_then(Value::as_str) == Some(turn.id.as_str()),
        )
        .await
        .context("the second client's turn/completed")?;
    let seen: Vec<String> = watcher
        .messages()
        .into_iter()
        .skip(watched_from)
        .take_while(|m| m.index <= done.index)
        .map(|m| m.method().to_string())
        .collect();
    for method in ["turn/started", "item/completed", "turn/completed"] {
        ensure!(
            seen.iter().any(|m| m == method),
            "the second client got no {method} of the turn (it saw: {})",
            seen.join(", ")
        );
    }
    // The approval went to both clients; the starter's answer settled it for both.
    let asked = recorded(&at_starter);
    let at_watcher: Vec<Value> = watcher
        .messages()
        .into_iter()
        .skip(watched_from)
        .filter(|m| m.is(COMMAND_APPROVAL))
        .map(|m| m.params().clone())
        .collect();
    ensure_eq!(
        at_watcher.len(),
        1,
        "approval requests to the second client"
    );
    ensure_eq!(
        at_watcher[0]["itemId"],
        asked[0]["itemId"],
        "the second client's approval request: itemId"
    );
    for (who, app) in [("starter", &starter), ("second client", &watcher)] {
        let request_id = app
            .messages()
            .iter()
            .find_map(|m| match &m.message {
                Message::Request { id, method, .. } if method == COMMAND_APPROVAL => {
                    Some(id.clone())
                }
                _ => None,
            })
            .with_context(|| format!("the {who}'s approval request has no id"))?;
        let resolved: Vec<Value> = app
            .messages()
            .iter()
            .filter(|m| m.is("serverRequest/resolved"))
            .map(|m| m.params()["requestId"].clone())
            .collect();
        ensure_eq!(
            resolved,
            vec![serde_json::to_value(&request_id)?],
            "serverRequest/resolved to the {who} (its request's id)"
        );
    }
    world.expect_requests(3).await?;
    world.finish().await
}

async fn reconnect(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![
        Scripted::sse(bodies::assistant_reply("resp-1", "finished alone")).gate("answer", 0),
        Scripted::sse(bodies::assistant_reply("resp-2", "welcome back")),
    ];
    let (mut world, listener) = listening(ctx, WorldOptions::default(), script, &[]).await?;
    let leaving = client(&mut world, &listener).await?;
    let (thread, _) = world.start_thread(&leaving, json!({})).await?;
    let started = start_turn(
        &leaving,
        &thread,
        vec![text("work while I am away")],
        &TurnOptions::default(),
    )
    .await?;
    world.requests_arrived(1, Duration::from_secs(10)).await?;
    leaving.kill();
    // Back while the turn still waits for the model: the new connection resumes it running.
    let back = client(&mut world, &listener).await?;
    let resumed = back
        .thread_resume(&thread, json!({}))
        .await
        .context("thread/resume after the reconnect")?;
    ensure_eq!(
        status_of(&resumed, &started.id),
        Some(json!("inProgress")),
        "the left turn's status in thread/resume"
    );
    let cursor = back.cursor();
    world.release("answer").await?;
    let done = back
        .wait_notification(cursor, "turn/completed", Duration::from_secs(10), |p| {
            p.pointer("/turn/id").and_then(Value::as_str) == Some(started.id.as_str())
        })
        .await
        .context("the left turn's turn/completed on the new connection")?;
    ensure_eq!(
        done.params()["turn"]["status"],
        json!("completed"),
        "the left turn's turn/completed status"
    );
    let read = back
        .thread_read(&thread, json!({"includeTurns": true}))
        .await
        .context("thread/read after the left turn completed")?;
    let status = status_of(&read, &started.id);
    if status == Some(json!("interrupted")) {
        // Read right after turn/completed, some releases rebuild the turn from a rollout
        // that does not hold its end yet.
        ctx.drift(
            "thread_read.completed_turn_interrupted",
            json!(true),
            "thread/read right after turn/completed says the turn is interrupted",
        );
    } else {
        ensure_eq!(
            status,
            Some(json!("completed")),
            "the left turn's status in thread/read"
        );
    }
    let second = run_turn(
        &back,
        &thread,
        vec![text("and now?")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(
        second.final_response(),
        "welcome back",
        "the next turn's answer"
    );
    let requests = world.expect_requests(2).await?;
    let carried = requests[1].body.to_string();
    for said in ["work while I am away", "finished alone"] {
        ensure!(
            carried.contains(said),
            "the next request does not carry {said:?}"
        );
    }
    world.finish().await
}

/// The status of the turn `id` in a `thread/resume` or `thread/read` result.
fn status_of(result: &Value, id: &str) -> Option<Value> {
    result
        .pointer("/thread/turns")?
        .as_array()?
        .iter()
        .find(|t| t["id"] == id)
        .map(|t| t["status"].clone())
}

/// The token I14's listener is given (in a file, as `--ws-token-file` wants).
const TOKEN: &str = "codex-parity-capability-token-0123456789";

async fn ws_auth(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let file = world.root().join("ws-token");
    std::fs::write(&file, TOKEN).with_context(|| format!("writing {}", file.display()))?;
    let extra = [
        "--ws-auth".to_string(),
        "capability-token".to_string(),
        "--ws-token-file".to_string(),
        file.display().to_string(),
    ];
    let listener = world.listen(&ListenAt::WebSocket, &extra).await?;
    let refused = [
        ("without a token", None),
        ("with a wrong token", Some(format!("not-{TOKEN}"))),
    ];
    expect_refused(&mut world, &listener, refused).await?;
    let (status, _) = listener.http_get("/readyz", &[]).await?;
    ensure_eq!(status, 200, "GET /readyz without a token");
    accepted(&mut world, &listener, TOKEN).await?;
    world.finish().await
}

async fn ws_auth_digest(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let hex: String = ring::digest::digest(&ring::digest::SHA256, TOKEN.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let extra = ["--ws-auth", "capability-token", "--ws-token-sha256", &hex].map(String::from);
    let listener = world.listen(&ListenAt::WebSocket, &extra).await?;
    let refused = [
        ("without a token", None),
        ("with a wrong token", Some(format!("not-{TOKEN}"))),
        ("with the digest itself", Some(hex.clone())),
    ];
    expect_refused(&mut world, &listener, refused).await?;
    accepted(&mut world, &listener, TOKEN).await?;
    world.finish().await
}

/// Each handshake of `cases` (what it is, its bearer token if any) is refused with HTTP
/// 401; every one that is not is named in the error.
async fn expect_refused<const N: usize>(
    world: &mut World,
    listener: &Listener,
    cases: [(&str, Option<String>); N],
) -> anyhow::Result<()> {
    let mut wrong = Vec::new();
    for (what, token) in cases {
        let bearer = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = bearer
            .as_deref()
            .map(|b| vec![("Authorization", b)])
            .unwrap_or_default();
        match world.connect(listener, &headers).await {
            Err(ConnectError::Refused { status: 401, .. }) => {}
            Err(ConnectError::Refused { status, body }) => {
                wrong.push(format!("{what}: HTTP {status} (body {body:?})"))
            }
            Err(e) => wrong.push(format!("{what}: failed otherwise: {e}")),
            Ok(_) => wrong.push(format!("{what}: accepted")),
        }
    }
    ensure!(
        wrong.is_empty(),
        "handshakes not refused with 401: {}",
        wrong.join("; ")
    );
    Ok(())
}

/// A handshake with `token` as the bearer is accepted, and the connection works.
async fn accepted(world: &mut World, listener: &Listener, token: &str) -> anyhow::Result<()> {
    let bearer = format!("Bearer {token}");
    let headers = [("Authorization", bearer.as_str())];
    works(world, listener, "with the right token", &headers).await
}

/// A handshake with `headers` (`what` they are) is accepted, and the connection
/// initializes and starts a thread.
async fn works(
    world: &mut World,
    listener: &Listener,
    what: &str,
    headers: &[(&str, &str)],
) -> anyhow::Result<()> {
    let app = world
        .connect(listener, headers)
        .await
        .with_context(|| format!("the handshake {what}"))?;
    app.initialize(true)
        .await
        .with_context(|| format!("initialize {what}"))?;
    world.start_thread(&app, json!({})).await?;
    Ok(())
}

/// The shared secret I14b's listener is given (in a file, as `--ws-shared-secret-file`
/// wants), its issuer and its audience.
const SECRET: &str = "codex-parity-shared-secret-0123456789abcdef0123456789";
const ISSUER: &str = "codex-parity";
const AUDIENCE: &str = "codex-app-server";

async fn ws_auth_signed(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let file = world.root().join("ws-secret");
    std::fs::write(&file, SECRET).with_context(|| format!("writing {}", file.display()))?;
    let extra = [
        "--ws-auth",
        "signed-bearer-token",
        "--ws-shared-secret-file",
        &file.display().to_string(),
        "--ws-issuer",
        ISSUER,
        "--ws-audience",
        AUDIENCE,
    ]
    .map(String::from);
    let listener = world.listen(&ListenAt::WebSocket, &extra).await?;
    let now = jwt::now();
    let claims = |iss: &str, aud: &str, exp: u64| json!({"iss": iss, "aud": aud, "sub": "parity", "iat": now, "exp": exp});
    let good = claims(ISSUER, AUDIENCE, now + 600);
    let secret = SECRET.as_bytes();
    let refused = [
        ("without a token", None),
        (
            "signed by another secret",
            Some(jwt::hs256(
                &good,
                b"another-secret-0123456789abcdef0123456789",
            )),
        ),
        (
            "expired an hour ago",
            Some(jwt::hs256(&claims(ISSUER, AUDIENCE, now - 3600), secret)),
        ),
        (
            "for another issuer",
            Some(jwt::hs256(
                &claims("someone-else", AUDIENCE, now + 600),
                secret,
            )),
        ),
        (
            "for another audience",
            Some(jwt::hs256(
                &claims(ISSUER, "another-server", now + 600),
                secret,
            )),
        ),
        ("unsigned (alg none)", Some(jwt::unsigned(&good))),
    ];
    expect_refused(&mut world, &listener, refused).await?;
    accepted(&mut world, &listener, &jwt::hs256(&good, secret)).await?;
    world.finish().await
}

async fn health_and_origin(ctx: &Ctx) -> anyhow::Result<()> {
    let (mut world, listener) = listening(ctx, WorldOptions::default(), vec![], &[]).await?;
    let origin = [("Origin", "http://attacker.example")];
    for (path, headers, want) in [
        ("/readyz", &[][..], 200),
        ("/healthz", &[][..], 200),
        ("/", &[][..], 400),
        ("/readyz", &origin[..], 403),
        ("/healthz", &origin[..], 403),
    ] {
        let (status, body) = listener.http_get(path, headers).await?;
        let with = if headers.is_empty() {
            ""
        } else {
            " with an Origin header"
        };
        ensure_eq!(status, want, "GET {path}{with} (body {body:?})");
    }
    match world.connect(&listener, &origin).await {
        Err(ConnectError::Refused { status, .. }) => {
            ensure_eq!(status, 403, "a handshake with an Origin header")
        }
        Err(e) => bail!("a handshake with an Origin header failed otherwise: {e}"),
        Ok(_) => bail!("a handshake with an Origin header was accepted"),
    }
    let app = client(&mut world, &listener).await?;
    world.start_thread(&app, json!({})).await?;
    world.finish().await
}

async fn unix_no_http_side(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let socket = world.root().join("http-side.sock");
    let listener = world.listen(&ListenAt::Unix(socket), &[]).await?;
    for path in ["/readyz", "/healthz", "/"] {
        let answer = listener.http_raw(path, &[]).await?;
        ensure!(
            answer.is_empty(),
            "GET {path} over the unix socket was answered: {answer:?}"
        );
    }
    let origin = [("Origin", "http://attacker.example")];
    works(&mut world, &listener, "with an Origin header", &origin).await?;
    world.finish().await
}

async fn control_socket_clients(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(bodies::assistant_reply(
        "resp-1",
        "through the proxy",
    ))];
    let mut world = ctx.world(WorldOptions::default()).await?;
    world.script(script).await?;
    let (home, cwd) = (world.home.clone(), world.workspace.clone());
    let socket = control_socket(&home);
    world
        .listen_in(&home, &cwd, &ListenAt::ControlSocket(socket.clone()), &[])
        .await?;
    let version = daemon_version(&world.command(&home, &cwd)).await?;
    ensure_eq!(
        version["status"],
        json!("running"),
        "daemon version: status ({version})"
    );
    ensure_eq!(
        version["appServerVersion"],
        json!(ctx.binary.version),
        "daemon version: appServerVersion ({version})"
    );
    ensure_eq!(
        version["socketPath"],
        json!(socket.display().to_string()),
        "daemon version: socketPath"
    );
    let app = world.connect_proxy(&home).await?;
    app.initialize(true)
        .await
        .context("initialize through the proxy")?;
    let (thread, _) = world.start_thread(&app, json!({})).await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text("hello proxy")],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(
        turn.final_response(),
        "through the proxy",
        "the answer through the proxy"
    );
    world.finish().await
}
