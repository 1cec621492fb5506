//! Worlds seeded from a home template stay isolated, on the real pinned codex: a thread (with
//! its rollout), a goal and a setting made in one world are invisible in the next world of
//! the same binary, the template (in memory and in the cache) is not changed by a world
//! that used it, and the next world's home starts as the template and its own
//! `config.toml`, byte for byte, nothing more.

#![cfg(feature = "codex-parity")]

mod support;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use codex_parity::app_server::turn::{TurnOptions, run_turn, text};
use codex_parity::codex::fingerprint;
use codex_parity::harness::home_template;
use codex_parity::harness::runner::Target;
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::harness::world::{Settings, World, WorldOptions};
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

/// The files directly in `dir` with their contents.
fn files(dir: &Path) -> BTreeMap<OsString, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| (e.file_name(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// Every path below `dir`, relative to it.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            out.push(path.strip_prefix(dir).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

/// World options with goals on where they are experimental.
fn options(target: &Target) -> WorldOptions {
    let mut options = WorldOptions {
        allow_autonomous_turns: true,
        ..Default::default()
    };
    if target.caps.is_experimental("thread/goal/set") {
        options.extra_args = vec!["--enable".into(), "goals".into()];
    }
    options
}

const SETTING: &str = "model_reasoning_summary";

#[tokio::test(flavor = "multi_thread")]
async fn what_one_world_makes_is_invisible_in_the_next() {
    let target = support::pinned_target().await;
    let has_goals = target.caps.has_method("thread/goal/set");
    let template = home_template::ensure(&target.binary)
        .await
        .expect("the pinned codex has a home template");
    let template_files = template.files().clone();
    assert!(
        template_files
            .keys()
            .any(|n| n.to_string_lossy().starts_with("state_")),
        "the template lacks the state database: {:?}",
        template_files.keys()
    );
    let settings = Settings::new(
        SidecarLauncher::codex_parity(env!("CARGO_BIN_EXE_codex-parity")),
        false,
    );

    // The first world: a thread with one turn (a rollout), a goal, a setting.
    let mut first = World::new(&target.binary, &settings, options(&target), Arc::default())
        .await
        .unwrap();
    first
        .script(vec![Scripted::sse(bodies::assistant_reply(
            "resp-1",
            "first world",
        ))])
        .await
        .unwrap();
    let app = first.start().await.unwrap();
    let seeded = files(&first.home);
    for (name, bytes) in &template_files {
        assert!(
            seeded.contains_key(name),
            "the first world's home was not seeded with {name:?}"
        );
        assert_eq!(seeded[name].len(), bytes.len(), "{name:?} as seeded");
    }
    let (thread, _) = first.start_thread(&app, json!({})).await.unwrap();
    run_turn(
        &app,
        &thread,
        vec![text("remember this world")],
        &TurnOptions::default(),
    )
    .await
    .unwrap();
    if has_goals {
        app.call(
            "thread/goal/set",
            json!({"threadId": thread, "objective": "stay in the first world", "status": "paused"}),
        )
        .await
        .unwrap();
    }
    app.call(
        "config/value/write",
        json!({"keyPath": SETTING, "value": "detailed", "mergeStrategy": "replace"}),
    )
    .await
    .unwrap();
    // What the next world must not see, seen here.
    if has_goals {
        let goal = app
            .call("thread/goal/get", json!({"threadId": thread}))
            .await
            .unwrap();
        assert!(
            goal.to_string().contains("stay in the first world"),
            "the first world's goal: {goal}"
        );
    }
    let config = app.call("config/read", json!({})).await.unwrap();
    assert_eq!(
        config["config"][SETTING],
        json!("detailed"),
        "the first world's setting"
    );
    let listed = app.call("thread/list", json!({})).await.unwrap();
    assert!(
        listed.to_string().contains(&thread),
        "the first world lists its own thread: {listed}"
    );
    assert!(
        tree(&first.home).iter().any(|p| p.starts_with("sessions/")),
        "the first world wrote no rollout"
    );
    first.finish().await.unwrap();
    assert_eq!(
        home_template::ready(&target.binary)
            .expect("the template")
            .files(),
        &template_files,
        "a world changed the template it was seeded from"
    );
    if let Some(dir) = fingerprint::cache_dir(&target.binary) {
        let stored: BTreeMap<OsString, Vec<u8>> = files(&dir.join("home-template"));
        assert_eq!(
            stored, template_files,
            "a world changed the template kept in the cache"
        );
    }

    // The next world: nothing of the first.
    let mut next = World::new(&target.binary, &settings, options(&target), Arc::default())
        .await
        .unwrap();
    assert_eq!(tree(&next.home), ["config.toml"], "a new world's home");
    let app = next.spawn().await.unwrap();
    let mut expected = template_files.clone();
    let config = std::fs::read(next.home.join("config.toml")).unwrap();
    expected.insert("config.toml".into(), config);
    assert_eq!(
        files(&next.home),
        expected,
        "the seeded home before codex starts: the template and its own config, byte for byte"
    );
    app.initialize(next.options.experimental_api).await.unwrap();
    let listed = app.call("thread/list", json!({})).await.unwrap();
    assert_eq!(
        listed["data"],
        json!([]),
        "the next world lists threads: {listed}"
    );
    let read = app.call("thread/read", json!({"threadId": thread})).await;
    assert!(
        read.is_err(),
        "the next world reads the first world's thread: {read:?}"
    );
    let resumed = app.thread_resume(&thread, json!({})).await;
    assert!(
        resumed.is_err(),
        "the next world resumes the first world's thread: {resumed:?}"
    );
    if has_goals {
        let goal = app
            .call("thread/goal/get", json!({"threadId": thread}))
            .await;
        let goal_text = format!("{goal:?}");
        assert!(
            !goal_text.contains("stay in the first world"),
            "the next world sees the first world's goal: {goal_text}"
        );
    }
    let config: Value = app.call("config/read", json!({})).await.unwrap();
    assert!(
        config["config"].get(SETTING).is_none_or(Value::is_null),
        "the next world has the first world's setting: {}",
        config["config"][SETTING]
    );
    assert!(
        !tree(&next.home).iter().any(|p| p.starts_with("sessions")),
        "the next world has rollouts: {:?}",
        tree(&next.home)
    );
    next.finish().await.unwrap();
}

/// The directories above `dir` that hold what codex reads as a project's root or
/// configuration (`.git`, `.codex`).
fn project_markers_above(dir: &Path) -> Vec<String> {
    dir.ancestors()
        .skip(1)
        .flat_map(|d| [d.join(".git"), d.join(".codex")])
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect()
}

/// Issue 43: a world's sandboxed command made codex's sandbox mount points `/tmp/.git` and
/// `/tmp/.codex` for as long as it ran (`/tmp` is a writable root of the sandbox), and a
/// concurrent world under `/tmp` then started its thread in a "project" whose untrusted
/// configuration codex warned about (`configWarning`): a false FAIL of its golden transcript.
/// A world's sandbox now writes only in roots of its own, so while one world's command runs,
/// another world sees nothing above its workspace and gets no warning.
#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxed_command_in_one_world_is_invisible_to_a_concurrent_one() {
    use codex_parity_sidecar::wire::events;
    let target = support::pinned_target().await;
    let settings = Settings::new(
        SidecarLauncher::codex_parity(env!("CARGO_BIN_EXE_codex-parity")),
        false,
    );
    let sandboxed = WorldOptions {
        approval_policy: "never".into(),
        sandbox_mode: "workspace-write".into(),
        ..Default::default()
    };
    let mut busy = World::new(&target.binary, &settings, sandboxed.clone(), Arc::default())
        .await
        .unwrap();
    // The command says it started, then waits for the test's word.
    let command = "touch started; while [ ! -e release ]; do sleep 0.05; done";
    busy.script(vec![
        Scripted::sse(bodies::one_item_reply(
            "resp-1",
            events::exec_command_call("call-1", command),
        )),
        Scripted::sse(bodies::assistant_reply("resp-2", "done")),
    ])
    .await
    .unwrap();
    let app = busy.start().await.unwrap();
    let (thread, _) = busy.start_thread(&app, json!({})).await.unwrap();
    let turn = tokio::spawn({
        let app = app.clone();
        async move {
            run_turn(
                &app,
                &thread,
                vec![text("wait for the word")],
                &TurnOptions::default(),
            )
            .await
        }
    });
    let started = busy.workspace.join("started");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the sandboxed command never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    // While it runs: another world, its thread started.
    let mut other = World::new(&target.binary, &settings, sandboxed, Arc::default())
        .await
        .unwrap();
    let seen = project_markers_above(&other.workspace);
    let other_app = other.start().await.unwrap();
    other.start_thread(&other_app, json!({})).await.unwrap();
    let warnings: Vec<String> = other_app
        .transcript()
        .iter()
        .filter(|m| m.method == "configWarning")
        .map(|m| m.payload.to_string())
        .filter(|w| w.contains(".codex") || w.to_lowercase().contains("project"))
        .collect();
    std::fs::write(busy.workspace.join("release"), "").unwrap();
    let done = turn.await.unwrap().unwrap();
    assert_eq!(done.final_response(), "done");
    assert!(
        seen.is_empty(),
        "while a world's sandboxed command ran, another world had above its workspace: {seen:?}"
    );
    assert!(
        warnings.is_empty(),
        "the other world's codex warned about project configuration: {warnings:?}"
    );
    other.finish().await.unwrap();
    busy.finish().await.unwrap();
}
