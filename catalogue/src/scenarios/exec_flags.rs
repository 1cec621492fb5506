//! Group X, the flags integrators pass to `codex exec --json` (X8–X12): a JSON schema for
//! the final answer, the last message written to a file, a resumed session, an attached
//! image, and the git-repository check. Each is not applicable where `codex exec --help`
//! (or `codex exec resume --help`) lists no flag it passes.

use std::time::Duration;

use anyhow::{Context, ensure};
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use super::exec::{EXEC_TIMEOUT, ensure_exit, needs_flags, observe};
use super::random_hex;
use super::support::png;
use crate::app_server::exec::ExecRun;
use crate::ensure_eq;
use crate::harness::git;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{World, WorldOptions};
use crate::scenario;

/// The group's scenarios in this file (listed after `exec`'s).
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "exec_output_schema_shapes_the_answer",
            "X8",
            "exec --output-schema FILE: the request's text.format carries the file's schema \
             (json_schema, strict); the final message is the JSON answer; exit 0",
            output_schema
        )
        .applies(needs_flags(&["--output-schema"])),
        scenario!(
            "exec_output_last_message_file",
            "X9",
            "exec -o FILE: the file holds the final message, the same as the stream's last \
             agent_message; exit 0",
            last_message
        )
        .applies(needs_flags(&["--output-last-message"])),
        scenario!(
            "exec_resume_carries_history",
            "X10",
            "exec resume ID and resume --last: the same thread id, and the next request \
             carries the earlier runs' prompts and answers; exit 0",
            resume
        )
        .applies(|caps| {
            needs_flags(&[])(caps)?;
            caps.needs_exec_resume(&["--last", "--json", "--skip-git-repo-check"])
        }),
        scenario!(
            "exec_image_is_sent_as_input_image",
            "X11",
            "exec --image FILE: the request's user message carries the file's PNG, byte for \
             byte, as an input_image data URL beside the prompt; exit 0",
            image
        )
        .applies(needs_flags(&["--image"])),
        scenario!(
            "exec_outside_git_repository_needs_skip_flag",
            "X12",
            "exec outside a git repository: refused without --skip-git-repo-check (exit 1, \
             no request, the flag named on stderr), accepted with it and inside a repository",
            git_check
        )
        .applies(needs_flags(&[])),
    ]
}

/// X8: the schema file is passed with `--output-schema`; the request's `text.format` must
/// be a strict `json_schema` whose `schema` is the file's, and the JSON answer the model
/// gives is the final message as it came.
async fn output_schema(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let schema_path = world.root().join("answer-schema.json");
    std::fs::write(&schema_path, super::answer_schema().to_string())
        .with_context(|| format!("writing {}", schema_path.display()))?;
    let answer = r#"{"answer":"forty-two"}"#;
    world
        .script(vec![Scripted::sse(bodies::assistant_reply("r1", answer))])
        .await?;
    let schema_arg = path_arg(&schema_path)?;
    let run = world
        .exec(
            &[
                "--skip-git-repo-check",
                "--output-schema",
                &schema_arg,
                "Answer in JSON.",
            ],
            EXEC_TIMEOUT,
        )
        .await?;
    observe(ctx, "run", &run);
    ensure_exit(&run, 0)?;
    let requests = world.expect_requests(1).await?;
    let format = requests[0].body["text"]["format"].clone();
    ctx.observe(format!("text.format: {format}"));
    ensure_eq!(format["type"], json!("json_schema"), "text.format.type");
    ensure_eq!(format["strict"], json!(true), "text.format.strict");
    ensure_eq!(
        format["schema"],
        super::answer_schema(),
        "text.format.schema"
    );
    ensure_eq!(run.final_message(), Some(answer), "final message");
    let parsed: Value = serde_json::from_str(answer).context("the answer is JSON")?;
    ensure_eq!(parsed["answer"], json!("forty-two"), "the answer's field");
    world.finish().await
}

/// A path as an argument.
fn path_arg(path: &std::path::Path) -> anyhow::Result<String> {
    path.to_str()
        .map(str::to_string)
        .with_context(|| format!("{} is not UTF-8", path.display()))
}

/// X9: `-o FILE` (its long name `--output-last-message`); after the run the file holds the
/// final message exactly.
async fn last_message(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let out = world.root().join("last-message.txt");
    let text = "The last word of the run.";
    world
        .script(vec![Scripted::sse(bodies::assistant_reply("r1", text))])
        .await?;
    let out_arg = path_arg(&out)?;
    let run = world
        .exec(
            &[
                "--skip-git-repo-check",
                "--output-last-message",
                &out_arg,
                "Say the last word.",
            ],
            EXEC_TIMEOUT,
        )
        .await?;
    observe(ctx, "run", &run);
    ensure_exit(&run, 0)?;
    ensure_eq!(run.final_message(), Some(text), "final message");
    let written =
        std::fs::read_to_string(&out).with_context(|| format!("reading {}", out.display()))?;
    ensure_eq!(written.as_str(), text, "{} content", out.display());
    world.expect_requests(1).await?;
    world.finish().await
}

/// The thread id of a run's `thread.started`.
fn thread_id(run: &ExecRun) -> anyhow::Result<String> {
    run.of_type("thread.started")
        .first()
        .and_then(|e| e["thread_id"].as_str())
        .map(str::to_string)
        .with_context(|| format!("no thread.started with a thread_id: {:?}", run.types()))
}

/// X10: a first run; `exec resume ID` with a second prompt; `exec resume --last` with a
/// third. Each resumed run reports the first run's thread id and its request carries every
/// earlier prompt and answer, in order, before the new prompt.
async fn resume(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let word = format!("apricot-{}", random_hex(6));
    let turns = [
        (format!("Remember the word {word}."), "Remembered."),
        ("What was the word?".to_string(), "It was the word."),
        ("Say it once more.".to_string(), "Once more."),
    ];
    world
        .script(
            turns
                .iter()
                .enumerate()
                .map(|(i, (_, a))| Scripted::sse(bodies::assistant_reply(&format!("r{i}"), a)))
                .collect(),
        )
        .await?;
    let first = world
        .exec(&["--skip-git-repo-check", &turns[0].0], EXEC_TIMEOUT)
        .await?;
    observe(ctx, "first", &first);
    ensure_exit(&first, 0)?;
    let id = thread_id(&first)?;
    let by_id = world
        .exec(
            &["resume", "--skip-git-repo-check", &id, &turns[1].0],
            EXEC_TIMEOUT,
        )
        .await?;
    observe(ctx, "resume ID", &by_id);
    check_resumed(&world, &by_id, &id, &turns, 1, "resume ID").await?;
    let last = world
        .exec(
            &["resume", "--skip-git-repo-check", "--last", &turns[2].0],
            EXEC_TIMEOUT,
        )
        .await?;
    observe(ctx, "resume --last", &last);
    check_resumed(&world, &last, &id, &turns, 2, "resume --last").await?;
    world.finish().await
}

/// The resumed run `n` (1 or 2) answered, kept the thread id, and its request carried the
/// prompts and answers of the runs before it, then its own prompt.
async fn check_resumed(
    world: &World,
    run: &ExecRun,
    id: &str,
    turns: &[(String, &str)],
    n: usize,
    what: &str,
) -> anyhow::Result<()> {
    ensure_exit(run, 0)?;
    ensure_eq!(thread_id(run)?, id, "{what}: thread id");
    ensure_eq!(
        run.final_message(),
        Some(turns[n].1),
        "{what}: final message"
    );
    let requests = world.expect_requests(n + 1).await?;
    let r = &requests[n];
    let users = r.message_input_texts("user");
    let answers = r.message_input_texts("assistant");
    for (prompt, answer) in &turns[..n] {
        ensure!(
            users.iter().any(|u| u == prompt),
            "{what}: request #{} lacks the earlier prompt {prompt:?}: {users:?}",
            r.index
        );
        ensure!(
            answers.iter().any(|a| a == answer),
            "{what}: request #{} lacks the earlier answer {answer:?}: {answers:?}",
            r.index
        );
    }
    ensure_eq!(
        r.last_user_text(),
        Some(turns[n].0.clone()),
        "{what}: the last user message"
    );
    let at = |texts: &[String], t: &str| texts.iter().position(|x| x == t);
    let order: Vec<Option<usize>> = turns[..=n].iter().map(|(p, _)| at(&users, p)).collect();
    ensure!(
        order.windows(2).all(|w| w[0] < w[1]),
        "{what}: prompts out of order: {users:?}"
    );
    Ok(())
}

/// X11: a 1×1 PNG passed with `--image`; the request's user message has an `input_image`
/// whose URL is the file's bytes as a PNG data URL, and the prompt's text.
async fn image(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let bytes = png::one_pixel([10, 200, 30, 255]);
    let file = world.root().join("pixel.png");
    std::fs::write(&file, &bytes).with_context(|| format!("writing {}", file.display()))?;
    world
        .script(vec![Scripted::sse(bodies::assistant_reply(
            "r1",
            "A green pixel.",
        ))])
        .await?;
    let prompt = "What colour is this pixel?";
    // `--image` takes several values: a flag after it ends them before the prompt.
    let file_arg = path_arg(&file)?;
    let run = world
        .exec(
            &["--image", &file_arg, "--skip-git-repo-check", prompt],
            EXEC_TIMEOUT,
        )
        .await?;
    observe(ctx, "run", &run);
    ensure_exit(&run, 0)?;
    ensure_eq!(run.final_message(), Some("A green pixel."), "final message");
    let requests = world.expect_requests(1).await?;
    let urls = requests[0].message_input_image_urls("user");
    ensure_eq!(urls.len(), 1, "input_image parts of the user messages");
    let url = &urls[0];
    let want = format!(
        "data:image/png;base64,{}",
        codex_parity_sidecar::base64::encode(&bytes)
    );
    ensure!(
        *url == want,
        "the input_image is not the file's PNG as a data URL: {}",
        &url[..url.len().min(80)]
    );
    ensure!(
        requests[0]
            .message_input_texts("user")
            .iter()
            .any(|t| t.contains(prompt)),
        "the prompt's text is not in a user message"
    );
    world.finish().await
}

/// What the refusal names: the flag that lifts it.
const REFUSAL: &str = "--skip-git-repo-check";

/// X12: the world's workspace is outside every repository. Without the flag codex must
/// refuse: exit 1, no turn, no model request, stderr naming the flag (a version that runs
/// the turn instead is drift, and its request goes unanswered; unless a `.git` entry above
/// the world explains it: then the scenario fails naming the entry). With the flag the run
/// answers; in a fresh repository it answers without the flag.
async fn git_check(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    git::ensure_outside_repository(&world.workspace).await?;
    let refused = world.exec(&["Hello?"], EXEC_TIMEOUT).await?;
    observe(ctx, "without the flag", &refused);
    let said = refused.stderr_tail(2);
    ctx.observe(format!("without the flag, stderr ends: {said}"));
    let asked = world.captured(0, Duration::from_millis(500)).await?.len();
    if let Some(marker) = git::markers_above(&world.workspace).first()
        && (asked > 0 || refused.code() != Some(1))
    {
        anyhow::bail!(
            "codex ran without --skip-git-repo-check, but {} exists above the world's \
             workspace: some codex versions (0.131.0) take it for a repository, even empty, so \
             the refusal outside one cannot be judged here; remove it, or set TMPDIR to a \
             directory without it above",
            marker.display()
        );
    }
    ctx.expect(
        "exec.outside_repository.refusal",
        json!({"exit": 1, "names_flag": true, "turn_started": false, "requests": 0}),
        json!({
            "exit": refused.code(),
            "names_flag": said.contains(REFUSAL),
            "turn_started": !refused.of_type("turn.started").is_empty(),
            "requests": asked,
        }),
    );
    world
        .script(vec![
            Scripted::sse(bodies::assistant_reply("r1", "Skipped the check.")),
            Scripted::sse(bodies::assistant_reply("r2", "Inside a repository.")),
        ])
        .await?;
    let accepted = world
        .exec(&["--skip-git-repo-check", "Hello?"], EXEC_TIMEOUT)
        .await?;
    observe(ctx, "with the flag", &accepted);
    ensure_exit(&accepted, 0)?;
    ensure_eq!(
        accepted.final_message(),
        Some("Skipped the check."),
        "final message with the flag"
    );
    let repository = world.root().join("repository");
    std::fs::create_dir_all(&repository)
        .with_context(|| format!("creating {}", repository.display()))?;
    git::init_repository(&repository).await?;
    let home = world.home.clone();
    let in_repo = world
        .exec_in(&home, &repository, &["Hello?"], None, EXEC_TIMEOUT)
        .await?;
    observe(ctx, "in a repository", &in_repo);
    ensure_exit(&in_repo, 0)?;
    ensure_eq!(
        in_repo.final_message(),
        Some("Inside a repository."),
        "final message in a repository"
    );
    world.expect_requests(asked + 2).await?;
    world.finish().await
}
