//! A compiled scenario file as a scenario body, like a Rust one: the world is made from
//! `[codex]` and `[workspace]`, the responses are queued, `codex app-server` starts when a
//! step talks to it (and a thread, binding `$thread`), the steps run in order (each kind's
//! own `run`, `super::steps`), the checks are made (`super::checks`), and
//! [`World::finish`](crate::harness::world::World::finish) runs the after-scenario checks. A
//! failed step or check names its place in the file. Whether the file applies to a binary is
//! its `[requires]` ([`applies`]).

use std::collections::HashMap;

use anyhow::Context;
use serde_json::json;

use super::execute::{Run, write_file};
use super::format::Requires;
use super::load::{Compiled, Placed};
use super::matching::Vars;
use crate::codex::capabilities::Capabilities;
use crate::harness::git;
use crate::harness::scenario::Ctx;
use crate::harness::world::{Transport, WorldOptions};

/// The world options a file's `[codex]` asks for, on this binary.
pub fn world_options(c: &Compiled, caps: &Capabilities) -> WorldOptions {
    let d = WorldOptions::default();
    let x = &c.file.codex;
    let mut extra_args = x.args.clone();
    for (feature, method) in &x.enable_when_experimental {
        if caps.is_experimental(method) {
            extra_args.extend(["--enable".to_string(), feature.clone()]);
        }
    }
    WorldOptions {
        request_max_retries: x.request_max_retries.unwrap_or(d.request_max_retries),
        stream_max_retries: x.stream_max_retries.unwrap_or(d.stream_max_retries),
        stream_idle_timeout_ms: x.stream_idle_timeout_ms.unwrap_or(d.stream_idle_timeout_ms),
        transport: if x.websocket == Some(true) {
            Transport::WebSocket
        } else {
            Transport::Http
        },
        approval_policy: x.approval_policy.clone().unwrap_or(d.approval_policy),
        sandbox_mode: x.sandbox_mode.clone().unwrap_or(d.sandbox_mode),
        extra_args,
        extra_config: x.config.clone(),
        experimental_api: x.experimental_api.unwrap_or(d.experimental_api),
        allow_autonomous_turns: x.allow_autonomous_turns.unwrap_or(false),
        ..d
    }
}

/// Whether the binary has what `[requires]` names: `Err` names everything missing.
pub fn applies(c: &Requires, caps: &Capabilities) -> Result<(), String> {
    let mut missing = Vec::new();
    for m in &c.methods {
        if !caps.has_method(m) {
            missing.push(format!("method {m}"));
        }
    }
    for m in &c.server_requests {
        if !caps.server_requests.contains(m) {
            missing.push(format!("server request {m}"));
        }
    }
    for m in &c.notifications {
        if !caps.notifications.contains(m) {
            missing.push(format!("notification {m}"));
        }
    }
    for f in &c.fields {
        let (ty, field) = f.split_once('.').unwrap_or((f, ""));
        if !caps.has_field(ty, field) {
            missing.push(format!("field {f}"));
        }
    }
    for v in &c.enum_values {
        let (ty, value) = v.split_once('.').unwrap_or((v, ""));
        if !caps.enum_has(ty, value) {
            missing.push(format!("enum value {v}"));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "this codex's schema has no {} (the file's [requires])",
            missing.join(", ")
        ))
    }
}

/// Runs the scenario file `c` with `ctx`.
pub async fn run(ctx: &Ctx, c: &Compiled) -> anyhow::Result<()> {
    let mut world = ctx.world(world_options(c, &ctx.caps)).await?;
    if c.file.workspace.git {
        git::init_repository(&world.workspace).await?;
    }
    for (path, content) in &c.file.workspace.files {
        write_file(&world.workspace, path, content)?;
    }
    world.script(c.responses.clone()).await?;
    let app = if c.app_server {
        Some(world.start().await?)
    } else {
        None
    };
    let mut vars = Vars::default();
    vars.set("workspace", json!(world.workspace.display().to_string()));
    vars.set("home", json!(world.home.display().to_string()));
    if let (Some(params), Some(app)) = (&c.thread, &app) {
        let params = vars.substitute(params).map_err(anyhow::Error::msg)?;
        let (thread, _) = world.start_thread(app, params).await?;
        vars.set("thread", json!(thread));
    }
    let mut run = Run {
        ctx,
        world,
        apps: app.iter().cloned().collect(),
        app,
        vars,
        answers: Vec::new(),
        cursor: 0,
        pending: HashMap::new(),
    };
    for (i, Placed { item, place }) in c.steps.iter().enumerate() {
        item.run(&mut run)
            .await
            .with_context(|| format!("step {} ({}) at {place}", i + 1, item.kind()))?;
    }
    for (i, Placed { item, place }) in c.checks.iter().enumerate() {
        item.run(&mut run)
            .await
            .with_context(|| format!("check {} (on {}) at {place}", i + 1, item.kind()))?;
    }
    run.world.finish().await
}
