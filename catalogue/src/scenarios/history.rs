//! Group C: fork and resume carry history (`parity-scenarios.md` C1–C7). A code word planted
//! in a source thread's first turn must reach the model request of the resumed, forked or
//! cloned thread; the proof is the captured request, never the model's reply.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::{header, listed_ids, random_hex, rpc_error};
use crate::app_server::AppServer;
use crate::app_server::turn::{
    TURN_TIMEOUT, TurnOptions, TurnStatus, run_turn, start_turn, text, wait_turn,
};
use crate::codex::capabilities::Capabilities;
use crate::ensure_eq;
use crate::harness::git;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{World, WorldOptions};
use crate::scenario;
use crate::scenarios::support::rollout::{self, ClonedRollout};

/// The source turn's answer.
const ACK: &str = "ACK";

/// The recall turn's text.
const RECALL: &str = "Earlier in this conversation I gave you a code word to remember. Reply with exactly that code word and nothing else.";

/// What codex answers a resume or fork of a thread without a rollout.
const NO_ROLLOUT: &str = "no rollout found for thread id";

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "resume_in_new_process_carries_history",
            "C1",
            "a thread resumed by a new app-server sends its history to the model",
            resume_in_new_process(false)
        )
        .applies(Capabilities::needs_resume),
        scenario!(
            "resume_without_turns_carries_history",
            "C1b",
            "resume with excludeTurns lists no turns and still sends the history",
            resume_in_new_process(true)
        )
        .applies(Capabilities::needs_exclude_turns),
        scenario!(
            "fresh_thread_does_not_know_the_code_word",
            "C2",
            "negative control: a new thread in the same home sends no old history",
            fresh_thread
        ),
        scenario!(
            "fork_branches_history_both_threads_continue",
            "C3",
            "a fork carries the history; fork and source then go on independently",
            fork
        )
        .applies(Capabilities::needs_fork),
        scenario!(
            "rollout_clone_same_directory_carries_history",
            "C4",
            "a rollout cloned into a fresh home under a new id resumes with its history",
            clone(false)
        )
        .applies(Capabilities::needs_resume),
        scenario!(
            "rollout_clone_into_git_worktree_carries_history",
            "C5",
            "a rollout cloned into a new git worktree resumes there with its history",
            clone(true)
        )
        .applies(Capabilities::needs_resume),
        scenario!(
            "resume_or_fork_of_unknown_thread_is_refused",
            "C6",
            "resume and fork of an unknown or unmaterialized thread fail and write nothing",
            refused
        )
        .applies(Capabilities::needs_resume_and_fork),
        scenario!(
            "synthesized_rollout_resumes_with_history",
            "C7",
            "a rollout written by hand resumes with its turn and history",
            synthesized
        )
        .applies(Capabilities::needs_resume),
    ]
}

/// `FORKWORD_` and six random upper-case hex digits.
fn code_word() -> String {
    format!("FORKWORD_{}", random_hex(6).to_uppercase())
}

/// The source turn's text.
fn source_text(word: &str) -> String {
    format!("Remember this code word for later: {word}. Reply with exactly one word: {ACK}")
}

/// The source turn's reply, then the recall turn's.
fn replies(word: &str) -> Vec<Scripted> {
    vec![
        Scripted::sse(bodies::assistant_reply("resp-source", ACK)),
        Scripted::sse(bodies::assistant_reply("resp-recall", word)),
    ]
}

/// A world whose workspace is a git repository with one commit (the catalogue's `W`).
async fn repository_world(ctx: &Ctx, word: &str) -> anyhow::Result<World> {
    ctx.observe(format!("code word {word}"));
    let world = ctx.world(WorldOptions::default()).await?;
    git::init_repository(&world.workspace).await?;
    Ok(world)
}

/// Runs the source turn on `thread`.
async fn source_turn(app: &AppServer, thread: &str, word: &str) -> anyhow::Result<()> {
    let turn = run_turn(
        app,
        thread,
        vec![text(&source_text(word))],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "source turn status");
    ensure_eq!(turn.final_response(), ACK, "source turn answer");
    Ok(())
}

/// Process A: an app-server in the world's home, a thread in its workspace, the source
/// turn, then a clean exit (the rollout is complete only then). Returns the thread id.
async fn plant(world: &mut World, word: &str) -> anyhow::Result<String> {
    let app = world.start().await?;
    let (thread, _) = world.start_thread(&app, json!({})).await?;
    source_turn(&app, &thread, word).await?;
    app.exit_cleanly("process A").await?;
    Ok(thread)
}

/// Runs the recall turn on `thread`; the mock answers with the word.
async fn recall(app: &AppServer, thread: &str, word: &str) -> anyhow::Result<()> {
    let turn = run_turn(app, thread, vec![text(RECALL)], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "recall turn status");
    ensure_eq!(turn.final_response(), word, "recall turn answer");
    Ok(())
}

/// The messages of a request's input, in order: role and texts joined with newlines.
fn input_messages(r: &CapturedRequest) -> anyhow::Result<Vec<(String, String)>> {
    let texts = |content: &Value| match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    Ok(r.input()?
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str).unwrap_or("message") == "message")
        .map(|i| {
            let role = i.get("role").and_then(Value::as_str).unwrap_or("");
            (role.to_string(), texts(&i["content"]))
        })
        .collect())
}

/// H(req): a user message containing the word, later an assistant message `ACK`, and last
/// of the user messages the recall text.
fn carries_history(r: &CapturedRequest, word: &str) -> anyhow::Result<()> {
    let messages = input_messages(r)?;
    let planted = messages
        .iter()
        .position(|(role, t)| role == "user" && t.contains(word))
        .with_context(|| format!("request #{}: no user message contains {word}", r.index))?;
    let ack = messages
        .iter()
        .skip(planted + 1)
        .position(|(role, t)| role == "assistant" && t == ACK)
        .map(|p| p + planted + 1)
        .with_context(|| {
            format!(
                "request #{}: no assistant message {ACK:?} after the code word",
                r.index
            )
        })?;
    let last_user = messages
        .iter()
        .rposition(|(role, _)| role == "user")
        .with_context(|| format!("request #{}: no user message", r.index))?;
    ensure!(
        last_user > ack && messages[last_user].1 == RECALL,
        "request #{}: the last user message is {:?}, not the recall text after the {ACK}",
        r.index,
        messages[last_user].1
    );
    Ok(())
}

/// The model request of the recall turn: history carried, thread id in the `thread-id`
/// header and `prompt_cache_key`.
fn check_recall_request(r: &CapturedRequest, word: &str, thread: &str) -> anyhow::Result<()> {
    carries_history(r, word)?;
    ensure_eq!(header(r, "thread-id")?, thread, "thread-id header");
    ensure_eq!(
        r.body["prompt_cache_key"],
        json!(thread),
        "prompt_cache_key"
    );
    Ok(())
}

/// `thread.turns` of a resume: one completed turn whose user message holds the word.
fn check_planted_turn(turns: &Value, word: &str) -> anyhow::Result<()> {
    let turns = turns
        .as_array()
        .with_context(|| format!("thread.turns is not a list: {turns}"))?;
    ensure_eq!(turns.len(), 1, "number of turns in thread.turns");
    ensure_eq!(
        turns[0]["status"],
        json!(TurnStatus::Completed),
        "the turn's status"
    );
    let items = turns[0]["items"].as_array().cloned().unwrap_or_default();
    let planted = items.iter().any(|i| {
        i["type"] == "userMessage"
            && i["content"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["text"].as_str().is_some_and(|t| t.contains(word)))
    });
    ensure!(planted, "no userMessage with {word} in the turn: {items:?}");
    Ok(())
}

/// `path` is `home/sessions/YYYY/MM/DD/rollout-*-<thread>.jsonl`.
fn check_rollout_place(home: &Path, path: &Path, thread: &str) -> anyhow::Result<()> {
    let relative = path.strip_prefix(home.join("sessions")).with_context(|| {
        format!(
            "{} is not under {}/sessions",
            path.display(),
            home.display()
        )
    })?;
    let parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let digits = |s: &String, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_digit());
    let well_placed = parts.len() == 4
        && digits(&parts[0], 4)
        && digits(&parts[1], 2)
        && digits(&parts[2], 2)
        && parts[3].starts_with("rollout-")
        && parts[3].ends_with(&format!("-{thread}.jsonl"));
    ensure!(
        well_placed,
        "rollout at sessions/{}, not sessions/YYYY/MM/DD/rollout-*-{thread}.jsonl",
        relative.display()
    );
    Ok(())
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// The file's bytes once they stopped changing (200 ms apart), at most 5 s.
async fn settled(path: &Path) -> anyhow::Result<Vec<u8>> {
    let mut last = read(path)?;
    for _ in 0..25 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = read(path)?;
        if now == last {
            return Ok(now);
        }
        last = now;
    }
    bail!("{} was still changing after 5 s", path.display())
}

/// Every file below `dir`, as sorted relative paths.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(r) = p.strip_prefix(dir) {
                out.push(r.to_path_buf());
            }
        }
    }
    out.sort();
    out
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

async fn resume_in_new_process(ctx: &Ctx, exclude_turns: bool) -> anyhow::Result<()> {
    let word = code_word();
    let mut world = repository_world(ctx, &word).await?;
    world.script(replies(&word)).await?;
    let thread = plant(&mut world, &word).await?;
    let path = rollout::find_rollout(&world.home, &thread)?;
    check_rollout_place(&world.home, &path, &thread)?;
    ensure!(
        String::from_utf8_lossy(&read(&path)?).contains(&word),
        "the rollout {} does not contain {word}",
        path.display()
    );

    let app = world.start().await?;
    let extra = if exclude_turns {
        json!({"excludeTurns": true})
    } else {
        json!({})
    };
    let resumed = app.thread_resume(&thread, extra).await?;
    ensure_eq!(resumed["thread"]["id"], json!(thread), "resumed thread.id");
    ensure_eq!(
        resumed["cwd"],
        json!(display(&world.workspace)),
        "resumed cwd"
    );
    if exclude_turns {
        ensure_eq!(resumed["thread"]["turns"], json!([]), "thread.turns");
    } else {
        check_planted_turn(&resumed["thread"]["turns"], &word)?;
    }
    recall(&app, &thread, &word).await?;
    let requests = world.expect_requests(2).await?;
    check_recall_request(&requests[1], &word, &thread)?;
    world.finish().await
}

async fn fresh_thread(ctx: &Ctx) -> anyhow::Result<()> {
    let word = code_word();
    let mut world = repository_world(ctx, &word).await?;
    world
        .script(vec![
            Scripted::sse(bodies::assistant_reply("resp-source", ACK)),
            Scripted::sse(bodies::assistant_reply("resp-recall", "No code word.")),
        ])
        .await?;
    let source = plant(&mut world, &word).await?;
    let app = world.start().await?;
    let (fresh, _) = world.start_thread(&app, json!({})).await?;
    ensure!(
        fresh != source,
        "thread/start reused the source id {source}"
    );
    let turn = run_turn(&app, &fresh, vec![text(RECALL)], &TurnOptions::default()).await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "recall turn status");
    let requests = world.expect_requests(2).await?;
    ensure!(
        requests[0].body_contains_text(&word),
        "the source request lacks {word}: the control would prove nothing"
    );
    let r = &requests[1];
    ensure_eq!(header(r, "thread-id")?, fresh.as_str(), "thread-id header");
    ensure_eq!(
        r.last_user_text(),
        Some(RECALL.to_string()),
        "last user text"
    );
    ensure!(
        !r.body_contains_text(&word),
        "the fresh thread's request contains {word}"
    );
    ensure!(
        carries_history(r, &word).is_err(),
        "H holds on a fresh thread's request"
    );
    world.finish().await
}

async fn fork(ctx: &Ctx) -> anyhow::Result<()> {
    let word = code_word();
    let mut world = repository_world(ctx, &word).await?;
    world
        .script(vec![Scripted::sse(bodies::assistant_reply(
            "resp-source",
            ACK,
        ))])
        .await?;
    let app = world.start().await?;
    let (source, _) = world.start_thread(&app, json!({})).await?;
    source_turn(&app, &source, &word).await?;
    let source_path = rollout::find_rollout(&world.home, &source)?;
    let before = settled(&source_path).await?;

    let cursor = app.cursor();
    let forked = app.thread_fork(&source, json!({})).await?;
    let fork_id = forked_thread(&forked, &source, &source_path)?;
    app.wait_notification(cursor, "thread/started", Duration::from_secs(5), |p| {
        p["thread"]["id"] == fork_id.as_str()
    })
    .await?;
    ensure!(
        read(&source_path)? == before,
        "the fork changed the source's rollout {}",
        source_path.display()
    );

    world
        .script(vec![
            Scripted::sse(bodies::assistant_reply("resp-fork", &word))
                .when_header("thread-id", &fork_id),
            Scripted::sse(bodies::assistant_reply("resp-source-2", "source ok"))
                .when_header("thread-id", &source),
        ])
        .await?;
    let options = TurnOptions::default();
    let on_fork = start_turn(&app, &fork_id, vec![text(RECALL)], &options).await?;
    let on_source = start_turn(&app, &source, vec![text("Source continues")], &options).await?;
    let fork_turn = wait_turn(&app, on_fork, TURN_TIMEOUT).await?;
    let source_done = wait_turn(&app, on_source, TURN_TIMEOUT).await?;
    ensure_eq!(fork_turn.final_response(), word, "the fork's answer");
    ensure_eq!(
        source_done.final_response(),
        "source ok",
        "the source's answer"
    );

    let listed = app.call("thread/list", json!({})).await?;
    let ids = listed_ids(&listed);
    ensure!(
        ids.contains(&source) && ids.contains(&fork_id),
        "thread/list lacks the source or the fork: {ids:?}"
    );

    let requests = world.expect_requests(3).await?;
    fork_requests(&requests, &fork_id, &source, &word)?;
    world.finish().await
}

/// The `thread/fork` result names a new thread forked from `source`, with a new absolute
/// rollout path and no name; returns the fork's id.
fn forked_thread(forked: &Value, source: &str, source_path: &Path) -> anyhow::Result<String> {
    let f = &forked["thread"];
    let fork_id = f["id"]
        .as_str()
        .with_context(|| format!("thread/fork result without thread.id: {forked}"))?
        .to_string();
    ensure!(fork_id != source, "the fork kept the source id {source}");
    ensure_eq!(f["forkedFromId"], json!(source), "fork forkedFromId");
    let fork_path = f["path"].as_str().map(PathBuf::from);
    ensure!(
        fork_path
            .as_ref()
            .is_some_and(|p| p.is_absolute() && *p != *source_path),
        "fork path {} is not a new absolute path",
        f["path"]
    );
    ensure_eq!(
        f.get("name").cloned().unwrap_or(Value::Null),
        Value::Null,
        "fork name"
    );
    Ok(fork_id)
}

/// The fork's one request carries the source's history and nothing of the source's second
/// turn; the source's second request keeps its own history and lacks the fork's recall.
fn fork_requests(
    requests: &[CapturedRequest],
    fork_id: &str,
    source: &str,
    word: &str,
) -> anyhow::Result<()> {
    let of = |id: &str| -> Vec<&CapturedRequest> {
        requests
            .iter()
            .filter(|r| r.header("thread-id") == Some(id))
            .collect()
    };
    let (on_fork, on_source) = (of(fork_id), of(source));
    ensure_eq!(on_fork.len(), 1, "requests with thread-id {fork_id}");
    ensure_eq!(on_source.len(), 2, "requests with thread-id {source}");
    carries_history(on_fork[0], word)?;
    ensure!(
        !on_fork[0].body_contains_text("Source continues"),
        "the fork's request contains the source's second turn"
    );
    let second = on_source[1];
    ensure_eq!(
        second.last_user_text(),
        Some("Source continues".to_string()),
        "the source's second request, last user text"
    );
    ensure!(
        second.body_contains_text(word) && !second.body_contains_text(RECALL),
        "the source's second request should keep its own history and lack the fork's recall"
    );
    Ok(())
}

async fn clone(ctx: &Ctx, into_worktree: bool) -> anyhow::Result<()> {
    let word = code_word();
    let mut world = repository_world(ctx, &word).await?;
    world.script(replies(&word)).await?;
    let source = plant(&mut world, &word).await?;
    let source_home = world.home.clone();
    let source_path = rollout::find_rollout(&source_home, &source)?;
    let source_bytes = read(&source_path)?;
    let source_files = files_below(&source_home);

    let target = if into_worktree {
        let branch = format!("fork-{}", random_hex(6));
        let tree = world.root().join(format!("worktree-{branch}"));
        git::add_worktree(&world.workspace, &branch, &tree).await?;
        tree
    } else {
        world.workspace.clone()
    };
    let home = world.root().join("codex-home-clone");
    let clone = rollout::clone_rollout(&source_home, &source, &home, &target)?;
    check_clone(ctx, &clone, &source, &source_home, &home, &target)?;
    world.write_config(&home)?;

    let app = world.spawn_in(&home, &target).await?;
    app.initialize(world.options.experimental_api)
        .await
        .context("initialize")?;
    let resumed = app.thread_resume(&clone.thread_id, json!({})).await?;
    check_resumed_clone(ctx, &resumed, &clone, &home, &target, &word, into_worktree)?;
    recall(&app, &clone.thread_id, &word).await?;

    let requests = world.expect_requests(2).await?;
    let r = &requests[1];
    check_recall_request(r, &word, &clone.thread_id)?;
    if into_worktree {
        check_worktree_context(ctx, r, &target, &world.workspace)?;
    }
    ensure!(
        read(&source_path)? == source_bytes,
        "the source rollout {} changed",
        source_path.display()
    );
    ensure_eq!(
        files_below(&source_home),
        source_files,
        "the files of the source home"
    );
    world.finish().await
}

/// Asserts the resumed clone: its id, its rollout in the clone's home, the planted turn and the
/// target as its cwd (the branch a worktree's clone reports is observed).
fn check_resumed_clone(
    ctx: &Ctx,
    resumed: &Value,
    clone: &ClonedRollout,
    home: &Path,
    target: &Path,
    word: &str,
    into_worktree: bool,
) -> anyhow::Result<()> {
    let thread = &resumed["thread"];
    ensure_eq!(thread["id"], json!(clone.thread_id), "resumed thread.id");
    let path = thread["path"].as_str().unwrap_or_default();
    ensure!(
        Path::new(path).starts_with(home) && path.ends_with(&format!("-{}.jsonl", clone.thread_id)),
        "resumed thread.path {path} is not the clone in {}",
        home.display()
    );
    check_planted_turn(&thread["turns"], word)?;
    ensure_eq!(resumed["cwd"], json!(display(target)), "resumed cwd");
    if into_worktree {
        ctx.observe(
            format!(
                "the clone in a worktree reports thread.gitInfo.branch {} (the branch recorded by the source)",
                thread["gitInfo"]["branch"]
            ),
        );
    }
    Ok(())
}

/// Asserts the recall request's last environment context names the worktree (whether it names
/// the source workspace too is observed).
fn check_worktree_context(
    ctx: &Ctx,
    r: &CapturedRequest,
    target: &Path,
    workspace: &Path,
) -> anyhow::Result<()> {
    let messages = input_messages(r)?;
    let context = messages
        .iter()
        .rev()
        .find(|(_, t)| t.contains("<environment_context>"))
        .with_context(|| format!("request #{}: no environment context", r.index))?;
    let cwd = format!("<cwd>{}</cwd>", target.display());
    ensure!(
        context.1.contains(&cwd),
        "the last environment context does not name the worktree ({cwd}): {}",
        context.1
    );
    ctx.observe(format!(
        "the recall request names the source workspace: {}",
        r.body_contains_text(&display(workspace))
    ));
    Ok(())
}

/// The clone is where the catalogue says, with the new id and the target cwd recorded; a
/// line that named neither the source id nor the source cwd is byte-identical.
fn check_clone(
    ctx: &Ctx,
    clone: &ClonedRollout,
    source: &str,
    source_home: &Path,
    home: &Path,
    target: &Path,
) -> anyhow::Result<()> {
    check_rollout_place(home, &clone.path, &clone.thread_id)?;
    let same_place = clone
        .source
        .strip_prefix(source_home)
        .ok()
        .map(|p| p.to_string_lossy().replace(source, &clone.thread_id));
    ensure_eq!(
        clone.path.strip_prefix(home).ok().map(display),
        same_place,
        "the clone's place in the new home"
    );
    let (old, new) = (
        String::from_utf8_lossy(&read(&clone.source)?).into_owned(),
        String::from_utf8_lossy(&read(&clone.path)?).into_owned(),
    );
    let (old_lines, new_lines): (Vec<&str>, Vec<&str>) =
        (old.lines().collect(), new.lines().collect());
    ensure_eq!(new_lines.len(), old_lines.len(), "lines in the clone");
    let target = display(target);
    for (n, (was, is)) in old_lines.iter().zip(&new_lines).enumerate() {
        if !was.contains(source) && !was.contains(&clone.source_cwd) {
            ensure!(was == is, "line {} changed in the clone", n + 1);
        }
        let line: Value = serde_json::from_str(is)
            .with_context(|| format!("clone line {} is not JSON", n + 1))?;
        match line["type"].as_str() {
            Some("session_meta") => {
                ensure_eq!(
                    line["payload"]["id"],
                    json!(clone.thread_id),
                    "session_meta id"
                );
                ensure_eq!(line["payload"]["cwd"], json!(target), "session_meta cwd");
            }
            Some("turn_context") => {
                ensure_eq!(line["payload"]["cwd"], json!(target), "turn_context cwd");
            }
            _ => {}
        }
    }
    ctx.observe(format!(
        "the clone rewrote {} of {} lines; the source id occurs in {} line(s) of the clone",
        clone.rewritten_lines,
        new_lines.len(),
        new_lines.iter().filter(|l| l.contains(source)).count()
    ));
    Ok(())
}

async fn refused(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let sessions = world.home.join("sessions");
    let app = world.start().await?;
    let unknown = rollout::mint_thread_id();
    let message = rpc_error(
        app.thread_resume(&unknown, json!({})).await,
        "thread/resume of an unknown thread",
    )?
    .message;
    ensure!(
        message.contains(NO_ROLLOUT) && message.contains(&unknown),
        "thread/resume of an unknown thread: {message}"
    );
    let written = rollout::rollout_files(&sessions);
    ensure!(written.is_empty(), "a refused resume wrote {written:?}");

    let (thread, _) = world.start_thread(&app, json!({})).await?;
    app.exit_cleanly("process A").await?;
    let again = world.start().await?;
    for (method, result) in [
        (
            "thread/resume",
            again.thread_resume(&thread, json!({})).await,
        ),
        ("thread/fork", again.thread_fork(&thread, json!({})).await),
    ] {
        let message = rpc_error(result, &format!("{method} of a thread without a turn"))?.message;
        ensure!(
            message.contains(NO_ROLLOUT) && message.contains(&thread),
            "{method} of a thread without a turn: {message}"
        );
    }
    let written = rollout::rollout_files(&sessions);
    ensure!(written.is_empty(), "refused calls wrote {written:?}");
    world.expect_requests(0).await?;
    world.finish().await
}

/// A rollout written by hand: `session_meta`, `turn_context`, the user message with the
/// word and the assistant's `ACK`, with or without the `event_msg` mirrors of both.
fn synthesized_rollout(ctx: &Ctx, id: &str, cwd: &str, word: &str, mirrors: bool) -> String {
    let at = "2026-01-02T03:04:05.000Z";
    let line =
        |kind: &str, payload: Value| json!({"timestamp": at, "type": kind, "payload": payload});
    let mut lines = vec![
        line(
            "session_meta",
            json!({"id": id, "timestamp": at, "cwd": cwd, "originator": "codex-parity",
                   "cli_version": ctx.binary.version, "model_provider": "mock"}),
        ),
        line(
            "turn_context",
            json!({"turn_id": rollout::mint_thread_id(), "cwd": cwd, "approval_policy": "never",
                   "sandbox_policy": {"type": "danger-full-access"}}),
        ),
        line(
            "response_item",
            json!({"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": source_text(word)}]}),
        ),
    ];
    if mirrors {
        lines.push(line(
            "event_msg",
            json!({"type": "user_message", "message": source_text(word), "images": [],
                   "local_images": [], "text_elements": []}),
        ));
    }
    lines.push(line(
        "response_item",
        json!({"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": ACK}]}),
    ));
    if mirrors {
        lines.push(line(
            "event_msg",
            json!({"type": "agent_message", "message": ACK, "phase": "final_answer"}),
        ));
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

async fn synthesized(ctx: &Ctx) -> anyhow::Result<()> {
    let word = code_word();
    ctx.observe(format!("code word {word}"));
    let mut world = ctx.world(WorldOptions::default()).await?;
    world
        .script(vec![Scripted::sse(bodies::assistant_reply(
            "resp-recall",
            &word,
        ))])
        .await?;
    let dir = world.home.join("sessions/2026/01/02");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let cwd = display(&world.workspace);
    let (with, without) = (rollout::mint_thread_id(), rollout::mint_thread_id());
    for (id, mirrors) in [(&with, true), (&without, false)] {
        let path = dir.join(format!("rollout-2026-01-02T03-04-05-{id}.jsonl"));
        std::fs::write(&path, synthesized_rollout(ctx, id, &cwd, &word, mirrors))
            .with_context(|| format!("writing {}", path.display()))?;
    }

    let app = world.start().await?;
    let resumed = app.thread_resume(&with, json!({})).await?;
    check_planted_turn(&resumed["thread"]["turns"], &word)?;
    let answered = resumed["thread"]["turns"][0]["items"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|i| i["type"] == "agentMessage" && i["text"] == ACK);
    ensure!(
        answered,
        "the synthesized turn lacks the agentMessage {ACK}"
    );
    let bare = app.thread_resume(&without, json!({})).await?;
    ensure_eq!(
        bare["thread"]["turns"],
        json!([]),
        "thread.turns of a synthesized rollout without event mirrors"
    );
    recall(&app, &with, &word).await?;
    let requests = world.expect_requests(1).await?;
    check_recall_request(&requests[0], &word, &with)?;
    world.finish().await
}
