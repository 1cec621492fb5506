//! Group J, the configuration integrators launch codex with (`codex-parity config check`
//! judges an integrator's own): how `config.toml`, `-c` overrides, `--enable`/`--disable`,
//! `[features]`, `--strict-config` and the `thread/start` params are taken, remapped, warned
//! about or refused by the real app-server, and `config/value/write`'s validation. No model
//! turn: each scenario starts codex, shakes hands and reads what it applied.
//!
//! The catalogue states the newest behaviour; where older releases differ (the `on-failure`
//! approval policy until 0.142, the legacy `profile` key until 0.133, unknown keys passed
//! over in silence until 0.155), the difference is drift with its baseline by range.

use anyhow::{Context, ensure};
use serde_json::{Value, json};

use super::rpc_error;
use crate::app_server::{AppServer, CallError};
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{World, WorldOptions};
use crate::scenario;

/// How long a notification codex owes may take.
const NOTICE: std::time::Duration = std::time::Duration::from_secs(10);

/// A feature listed as removed by every release 0.131.0–0.171.0.
const RETIRED_FEATURE: &str = "undo";

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "config_on_failure_is_applied_as_on_request",
            "J1",
            "approval_policy = \"on-failure\" in config.toml: the server starts, thread/start's \
             approvalPolicy and config/read's approval_policy are on-request, no warning",
            config_on_failure
        ),
        scenario!(
            "override_on_failure_is_applied_as_on_request",
            "J2",
            "-c approval_policy=\"on-failure\": the same remapping through a command-line \
             override: the thread's approvalPolicy is on-request",
            override_on_failure
        ),
        scenario!(
            "thread_start_on_failure_is_refused",
            "J3",
            "thread/start approvalPolicy: \"on-failure\" is refused (-32600, unknown variant \
             `on-failure`, the accepted values listed); the same server then starts a thread \
             with on-request",
            thread_on_failure
        ),
        scenario!(
            "thread_config_untrusted_is_refused",
            "J4",
            "thread/start config {approval_policy: \"untrusted\"} is refused (-32600, failed to \
             load configuration: no longer supported), while approvalPolicy: \"untrusted\" as a \
             param is accepted",
            thread_config_untrusted
        ),
        scenario!(
            "config_type_error_is_soft",
            "J5",
            "a type error in config.toml (model_context_window = \"big\"): the server starts \
             and sends configWarning \"Invalid configuration; using defaults.\" with the file \
             and line; every thread/start then fails naming file:line:column",
            config_type_error
        ),
        scenario!(
            "override_type_error_is_hard",
            "J6",
            "the same type error through -c: codex exits 1 before answering initialize, its \
             stderr naming the key and the expected type",
            override_type_error
        ),
        scenario!(
            "unknown_key_is_warned",
            "J7",
            "an unknown top-level key in config.toml: the server starts; a configWarning and \
             the new thread's warning name it as ignored",
            unknown_key
        ),
        scenario!(
            "strict_config_refuses_unknown_key",
            "J8",
            "--strict-config with an unknown key: codex exits 1 before initialize, stderr \
             naming config.toml:LINE:1 and the field",
            strict_unknown_key
        ),
        scenario!(
            "enable_unknown_feature_is_refused",
            "J9",
            "--enable of a name that is no feature: codex exits 1 before initialize with \
             \"Unknown feature flag: NAME\"",
            enable_unknown_feature
        ),
        scenario!(
            "features_table_unknown_feature_is_warned",
            "J10",
            "the same name under [features] in config.toml: the server starts; a configWarning \
             names features.NAME as ignored",
            features_unknown_feature
        ),
        scenario!(
            "legacy_feature_alias_is_deprecated",
            "J11",
            "[features] codex_hooks = true (renamed hooks): accepted with a deprecationNotice \
             naming the new key; experimentalFeature/list shows hooks, not codex_hooks",
            legacy_alias
        ),
        scenario!(
            "retired_feature_is_accepted",
            "J12",
            "--enable of a feature listed as removed: the server starts; \
             experimentalFeature/list lists it with stage removed",
            retired_feature
        ),
        scenario!(
            "legacy_profile_is_refused_at_thread_start",
            "J13",
            "a top-level profile = \"work\" with [profiles.work]: the server starts with \
             configWarning \"Invalid configuration\", and thread/start fails (-32600, legacy \
             profile no longer supported)",
            legacy_profile
        ),
        scenario!(
            "config_value_write_validates",
            "J14",
            "config/value/write: a bad enum value is refused (-32600, configValidationError, \
             the key named) and the file unchanged; an unknown key is written; \
             approval_policy = \"untrusted\" is refused",
            value_write
        ),
    ]
}

/// The warning notifications codex sent so far: `(method, text)`.
fn warnings(app: &AppServer) -> Vec<(String, String)> {
    app.messages()
        .iter()
        .filter_map(|m| {
            let p = m.params();
            let field = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let text = match m.method() {
                "configWarning" | "deprecationNotice" => {
                    format!("{} {}", field("summary"), field("details"))
                }
                "warning" => field("message"),
                _ => return None,
            };
            Some((m.method().to_string(), text.trim().to_string()))
        })
        .collect()
}

/// The warnings that mention `needle`.
fn mentioning(app: &AppServer, needle: &str) -> Vec<(String, String)> {
    warnings(app)
        .into_iter()
        .filter(|(_, t)| t.contains(needle))
        .collect()
}

/// A thread started with `params` in the world's workspace; its `thread/start` result.
async fn thread(world: &World, app: &AppServer, params: Value) -> anyhow::Result<Value> {
    Ok(world.start_thread(app, params).await?.1)
}

/// `config/read`'s `config`.
async fn config(app: &AppServer) -> anyhow::Result<Value> {
    let read = app
        .call("config/read", json!({}))
        .await
        .context("config/read")?;
    Ok(read["config"].clone())
}

/// Starts the world's app-server and calls `initialize`: `Ok(app)` when it answered,
/// `Err(stderr)` with codex's stderr when it exited first (and its exit code is 1).
async fn start_or_refusal(
    world: &mut World,
) -> anyhow::Result<Result<std::sync::Arc<AppServer>, String>> {
    let app = world.spawn().await?;
    match app.initialize(true).await {
        Ok(_) => Ok(Ok(app)),
        Err(CallError::Exited { stderr, .. }) => {
            let exit = app.exit_status();
            ensure!(
                exit.as_ref().and_then(|e| e.code()) == Some(1),
                "codex exited before initialize with {exit:?}, not 1; stderr:\n{stderr}"
            );
            Ok(Err(stderr))
        }
        Err(e) => Err(e).context("initialize"),
    }
}

/// J1.
async fn config_on_failure(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        approval_policy: "on-failure".into(),
        ..Default::default()
    };
    remapped(ctx, options).await
}

/// J2.
async fn override_on_failure(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        extra_args: vec!["-c".into(), "approval_policy=\"on-failure\"".into()],
        ..Default::default()
    };
    remapped(ctx, options).await
}

/// J1, J2: on-failure becomes on-request without a word (older releases apply it, with a
/// deprecation warning: drift `config.on_failure`).
async fn remapped(ctx: &Ctx, options: WorldOptions) -> anyhow::Result<()> {
    let mut world = ctx.world(options).await?;
    let app = world.start().await?;
    let started = thread(&world, &app, json!({})).await?;
    let read = config(&app).await?;
    let seen = json!({
        "thread": started["approvalPolicy"],
        "config_read": read["approval_policy"],
        "warned": !mentioning(&app, "on-failure").is_empty(),
    });
    ctx.observe(format!("on-failure: {seen}"));
    ctx.expect(
        "config.on_failure",
        json!({"thread": "on-request", "config_read": "on-request", "warned": false}),
        seen,
    );
    world.finish().await
}

/// J3.
async fn thread_on_failure(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let app = world.start().await?;
    let cwd = world.workspace.display().to_string();
    match app
        .call(
            "thread/start",
            json!({"cwd": cwd, "approvalPolicy": "on-failure"}),
        )
        .await
    {
        Err(e) => {
            let error = e
                .rpc()
                .cloned()
                .with_context(|| format!("thread/start: {e}"))?;
            ensure_eq!(error.code, -32600, "the error's code");
            ensure!(
                error.message.contains("unknown variant `on-failure`")
                    && error.message.contains("`on-request`"),
                "the error does not name the value and the accepted ones: {}",
                error.message
            );
        }
        Ok(started) => {
            // The thread's warning comes before config/read's answer, not always before
            // thread/start's.
            config(&app).await?;
            let warned = !mentioning(&app, "on-failure").is_empty();
            ctx.drift(
                "thread_start.on_failure",
                json!({"approvalPolicy": started["approvalPolicy"], "warned": warned}),
                format!(
                    "thread/start accepted approvalPolicy on-failure: {}",
                    started["approvalPolicy"]
                ),
            );
        }
    }
    let started = thread(&world, &app, json!({"approvalPolicy": "on-request"})).await?;
    ensure_eq!(
        started["approvalPolicy"],
        json!("on-request"),
        "the next thread's policy"
    );
    world.finish().await
}

/// J4.
async fn thread_config_untrusted(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let app = world.start().await?;
    let cwd = world.workspace.display().to_string();
    let as_param = thread(&world, &app, json!({"approvalPolicy": "untrusted"})).await?;
    ensure_eq!(
        as_param["approvalPolicy"],
        json!("untrusted"),
        "the param's policy"
    );
    match app
        .call(
            "thread/start",
            json!({"cwd": cwd, "config": {"approval_policy": "untrusted"}}),
        )
        .await
    {
        Err(e) => {
            let error = e
                .rpc()
                .cloned()
                .with_context(|| format!("thread/start: {e}"))?;
            ensure_eq!(error.code, -32600, "the error's code");
            ensure!(
                error.message.contains("failed to load configuration")
                    && error.message.contains("no longer supported"),
                "the error: {}",
                error.message
            );
        }
        Ok(started) => ctx.drift(
            "thread_config.untrusted",
            json!({"approvalPolicy": started["approvalPolicy"]}),
            "thread/start config approval_policy = untrusted was accepted",
        ),
    }
    world.finish().await
}

/// The line (from 1) of the world's config.toml where `key` is set: what codex must name.
fn line_of(world: &World, key: &str) -> anyhow::Result<usize> {
    let path = world.home.join("config.toml");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .position(|l| l.starts_with(&format!("{key} =")))
        .map(|i| i + 1)
        .with_context(|| format!("{} does not set {key}", path.display()))
}

/// J5.
async fn config_type_error(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        extra_config: vec!["model_context_window = \"big\"".into()],
        ..Default::default()
    };
    let mut world = ctx.world(options).await?;
    let app = world.start().await?;
    let path = world.home.join("config.toml").display().to_string();
    let line = line_of(&world, "model_context_window")?;
    let warning = app
        .wait_notification(0, "configWarning", NOTICE, |p| {
            p["summary"] == "Invalid configuration; using defaults."
        })
        .await?;
    let p = warning.params();
    ensure_eq!(p["path"], json!(path), "configWarning path");
    ensure_eq!(
        p["range"]["start"]["line"],
        json!(line),
        "configWarning line"
    );
    for attempt in 1..=2 {
        let cwd = world.workspace.display().to_string();
        let error = rpc_error(
            app.call("thread/start", json!({"cwd": cwd})).await,
            "thread/start with a bad config.toml",
        )?;
        ensure_eq!(error.code, -32600, "thread/start #{attempt}'s code");
        ensure!(
            error.message.contains("failed to load configuration")
                && error.message.contains(&format!("{path}:{line}:")),
            "thread/start #{attempt} does not name {path}:{line}: {}",
            error.message
        );
    }
    world.finish().await
}

/// J6.
async fn override_type_error(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        extra_args: vec!["-c".into(), "model_context_window=big".into()],
        ..Default::default()
    };
    let mut world = ctx.world(options).await?;
    match start_or_refusal(&mut world).await? {
        Ok(_) => ctx.drift(
            "override.type_error",
            json!("started"),
            "codex started with -c model_context_window=big",
        ),
        Err(stderr) => ensure!(
            stderr.contains("invalid type: string \"big\", expected i64")
                && stderr.contains("model_context_window"),
            "stderr does not name the key and the type:\n{stderr}"
        ),
    }
    world.finish().await
}

/// J7.
async fn unknown_key(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        extra_config: vec!["codex_parity_unknown_key = 1".into()],
        ..Default::default()
    };
    let mut world = ctx.world(options).await?;
    let app = world.start().await?;
    thread(&world, &app, json!({})).await?;
    // Sent before config/read's answer, so read it after that answer.
    config(&app).await?;
    let said: Vec<String> = mentioning(&app, "`codex_parity_unknown_key` is ignored")
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    ctx.expect(
        "config.unknown_key_warnings",
        json!(["configWarning", "warning"]),
        json!(said),
    );
    world.finish().await
}

/// J8.
async fn strict_unknown_key(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        extra_config: vec!["codex_parity_unknown_key = 1".into()],
        extra_args: vec!["--strict-config".into()],
        ..Default::default()
    };
    let mut world = ctx.world(options).await?;
    let path = world.home.join("config.toml").display().to_string();
    let line = line_of(&world, "codex_parity_unknown_key")?;
    match start_or_refusal(&mut world).await? {
        Ok(_) => ctx.drift(
            "config.strict",
            json!("started"),
            "--strict-config did not refuse",
        ),
        Err(stderr) => ensure!(
            stderr.contains(&format!(
                "{path}:{line}:1: unknown configuration field `codex_parity_unknown_key`"
            )),
            "stderr does not name {path}:{line}:1 and the field:\n{stderr}"
        ),
    }
    world.finish().await
}

/// J9.
async fn enable_unknown_feature(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        extra_args: vec!["--enable".into(), "codex_parity_no_feature".into()],
        ..Default::default()
    };
    let mut world = ctx.world(options).await?;
    match start_or_refusal(&mut world).await? {
        Ok(_) => ctx.drift(
            "features.enable_unknown",
            json!("started"),
            "--enable of no feature started",
        ),
        Err(stderr) => ensure!(
            stderr.contains("Unknown feature flag: codex_parity_no_feature"),
            "stderr:\n{stderr}"
        ),
    }
    world.finish().await
}

/// J10.
async fn features_unknown_feature(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        extra_config: vec!["[features]".into(), "codex_parity_no_feature = true".into()],
        ..Default::default()
    };
    let mut world = ctx.world(options).await?;
    let app = world.start().await?;
    thread(&world, &app, json!({})).await?;
    config(&app).await?;
    let said: Vec<String> = mentioning(&app, "`features.codex_parity_no_feature` is ignored")
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    let on_stderr = app
        .stderr_tail()
        .contains("unknown feature key in config: codex_parity_no_feature");
    ctx.expect(
        "features.unknown_in_table",
        json!({"notifications": ["configWarning", "warning"], "stderr": true}),
        json!({"notifications": said, "stderr": on_stderr}),
    );
    world.finish().await
}

/// Every feature of `experimentalFeature/list`, page after page.
async fn features(app: &AppServer) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    let mut cursor = Value::Null;
    for _ in 0..50 {
        let page = app
            .call(
                "experimentalFeature/list",
                json!({"cursor": cursor, "limit": 200}),
            )
            .await
            .context("experimentalFeature/list")?;
        out.extend(page["data"].as_array().cloned().unwrap_or_default());
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            return Ok(out);
        }
    }
    anyhow::bail!("experimentalFeature/list kept paging after 50 pages")
}

/// J11.
async fn legacy_alias(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        extra_config: vec!["[features]".into(), "codex_hooks = true".into()],
        ..Default::default()
    };
    let mut world = ctx.world(options).await?;
    let app = world.start().await?;
    thread(&world, &app, json!({})).await?;
    let listed = features(&app).await?;
    let names: Vec<&str> = listed.iter().filter_map(|f| f["name"].as_str()).collect();
    ensure!(
        names.contains(&"hooks"),
        "experimentalFeature/list lacks hooks"
    );
    ensure!(
        !names.contains(&"codex_hooks"),
        "experimentalFeature/list lists the alias codex_hooks"
    );
    let notice = app
        .wait_notification(0, "deprecationNotice", NOTICE, |p| {
            p["summary"]
                .as_str()
                .is_some_and(|s| s.contains("`[features].codex_hooks` is deprecated"))
        })
        .await?;
    ensure!(
        notice.params()["summary"]
            .as_str()
            .is_some_and(|s| s.contains("`[features].hooks`")),
        "the notice names no new key: {}",
        notice.params()
    );
    world.finish().await
}

/// J12.
async fn retired_feature(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        extra_args: vec!["--enable".into(), RETIRED_FEATURE.into()],
        ..Default::default()
    };
    let mut world = ctx.world(options).await?;
    let app = world.start().await?;
    let listed = features(&app).await?;
    let feature = listed
        .iter()
        .find(|f| f["name"] == RETIRED_FEATURE)
        .with_context(|| format!("experimentalFeature/list lacks {RETIRED_FEATURE}"))?;
    ensure_eq!(
        feature["stage"],
        json!("removed"),
        "{RETIRED_FEATURE}'s stage"
    );
    thread(&world, &app, json!({})).await?;
    world.finish().await
}

/// J13.
async fn legacy_profile(ctx: &Ctx) -> anyhow::Result<()> {
    let options = WorldOptions {
        extra_config: vec![
            "profile = \"work\"".into(),
            "[profiles.work]".into(),
            "model_reasoning_effort = \"high\"".into(),
        ],
        ..Default::default()
    };
    let mut world = ctx.world(options).await?;
    let app = world.start().await?;
    let cwd = world.workspace.display().to_string();
    match app.call("thread/start", json!({"cwd": cwd})).await {
        Err(e) => {
            let error = e
                .rpc()
                .cloned()
                .with_context(|| format!("thread/start: {e}"))?;
            ensure_eq!(error.code, -32600, "the error's code");
            ensure!(
                error
                    .message
                    .contains("legacy `profile = \"work\"` config is no longer supported"),
                "the error: {}",
                error.message
            );
            app.wait_notification(0, "configWarning", NOTICE, |p| {
                p["summary"] == "Invalid configuration; using defaults."
            })
            .await?;
        }
        Ok(started) => ctx.drift(
            "config.legacy_profile",
            json!("accepted"),
            format!("thread/start took the legacy profile: {}", started["model"]),
        ),
    }
    world.finish().await
}

/// J14.
async fn value_write(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let app = world.start().await?;
    let path = world.home.join("config.toml");
    let before = std::fs::read_to_string(&path).context("reading config.toml")?;
    let write = |key: &str, value: Value| {
        app.call(
            "config/value/write",
            json!({"keyPath": key, "value": value, "mergeStrategy": "replace"}),
        )
    };
    let bad = rpc_error(
        write("sandbox_mode", json!("bogus")).await,
        "writing sandbox_mode = bogus",
    )?;
    ensure_eq!(bad.code, -32600, "the refusal's code");
    ensure_eq!(
        bad.data
            .as_ref()
            .map(|d| d["config_write_error_code"].clone()),
        Some(json!("configValidationError")),
        "the refusal's data"
    );
    ensure!(
        bad.message.contains("sandbox_mode"),
        "the refusal names no key: {}",
        bad.message
    );
    ensure_eq!(
        std::fs::read_to_string(&path).context("reading config.toml")?,
        before,
        "config.toml after a refused write"
    );
    let unknown = write("codex_parity_unknown_key", json!(1))
        .await
        .context("writing an unknown key")?;
    ensure_eq!(unknown["status"], json!("ok"), "the unknown key's write");
    let text = std::fs::read_to_string(&path).context("reading config.toml")?;
    ensure!(
        text.contains("codex_parity_unknown_key = 1"),
        "not written:\n{text}"
    );
    match write("approval_policy", json!("untrusted")).await {
        Err(e) => {
            let error = e
                .rpc()
                .cloned()
                .with_context(|| format!("config/value/write: {e}"))?;
            ensure_eq!(
                error
                    .data
                    .as_ref()
                    .map(|d| d["config_write_error_code"].clone()),
                Some(json!("configValidationError")),
                "untrusted's refusal data"
            );
        }
        Ok(written) => ctx.drift(
            "config_write.untrusted",
            written["status"].clone(),
            "config/value/write took approval_policy = untrusted",
        ),
    }
    world.finish().await
}
