//! Group D: file changes (`parity-scenarios.md` D1–D5). The scripted model edits files
//! through codex's own patch path; codex must report each change as an add, an update or a
//! delete (`fileChange` items, `turn/diff/updated`), and the disk must match.
//!
//! Two edit paths, both codex's own: with the configured mock model every version offers
//! `exec_command` and no patch tool, and codex intercepts an `apply_patch` heredoc sent
//! through `exec_command`; with a model of codex's bundled catalogue ([`PATCH_TOOL_MODEL`])
//! every version offers the freeform `apply_patch` custom tool.

use std::path::Path;

use anyhow::{Context, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies, events};
use serde_json::{Value, json};

use super::{random_hex, setup_with};
use crate::app_server::AppServer;
use crate::app_server::turn::{ItemStatus, Turn, TurnOptions, TurnStatus, run_turn, text};
use crate::ensure_eq;
use crate::harness::git;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::{World, WorldOptions};
use crate::scenario;

/// A model of codex's bundled catalogue (0.131.0 – 0.171.0) for which codex offers the
/// freeform `apply_patch` tool; the mock model gets `exec_command` only.
pub const PATCH_TOOL_MODEL: &str = "gpt-5.5";

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "file_change_add_reported",
            "D1",
            "a file created through apply_patch is reported as add and exists",
            single_edit(Change::Add)
        )
        .golden_transcript(),
        scenario!(
            "file_change_update_reported",
            "D2",
            "an overwrite of a file that existed before the turn is reported as update",
            single_edit(Change::Update)
        ),
        scenario!(
            "file_change_delete_reported",
            "D3",
            "a deletion is reported as delete and the file is gone",
            single_edit(Change::Delete)
        ),
        scenario!(
            "file_changes_via_apply_patch_tool",
            "D1b",
            "add, update and delete through the apply_patch tool are reported alike",
            patch_tool
        ),
        scenario!(
            "shell_write_not_reported_as_file_change",
            "D4",
            "a file written by a plain shell command is no fileChange",
            shell_write
        ),
        scenario!(
            "file_changes_in_git_repository_match_plain",
            "D5",
            "add, update and delete are reported the same in a git repository",
            git_repository
        ),
    ]
}

/// What an edit does to its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Add,
    Update,
    Delete,
}

/// The content a D2 file has before the turn.
const ORIGINAL: &str = "original content written before the turn";

/// One edit of the catalogue: its file, patch, prompt and expected report.
#[derive(Debug, Clone)]
struct Edit {
    change: Change,
    name: String,
    call_id: &'static str,
}

impl Edit {
    fn new(change: Change) -> Edit {
        let (prefix, call_id) = match change {
            Change::Add => ("create", "call_write_1"),
            Change::Update => ("edit", "call_write_2"),
            Change::Delete => ("delete", "call_write_3"),
        };
        Edit {
            change,
            name: format!("{prefix}_{}.txt", random_hex(8)),
            call_id,
        }
    }

    /// `kind.type` codex reports.
    fn kind(&self) -> &'static str {
        match self.change {
            Change::Add => "add",
            Change::Update => "update",
            Change::Delete => "delete",
        }
    }

    /// What the file holds before the turn, if it exists then.
    fn seed(&self) -> Option<String> {
        match self.change {
            Change::Add => None,
            Change::Update => Some(format!("{ORIGINAL}\n")),
            Change::Delete => Some("to be deleted by the e2e test\n".into()),
        }
    }

    /// What the file holds after the turn; `None`: it is gone.
    fn after(&self) -> Option<&'static str> {
        match self.change {
            Change::Add => Some("created by e2e test"),
            Change::Update => Some("overwritten by e2e edit test"),
            Change::Delete => None,
        }
    }

    fn patch(&self) -> String {
        let name = &self.name;
        let body = match self.change {
            Change::Add => format!("*** Add File: {name}\n+created by e2e test"),
            Change::Update => {
                format!("*** Update File: {name}\n@@\n-{ORIGINAL}\n+overwritten by e2e edit test")
            }
            Change::Delete => format!("*** Delete File: {name}"),
        };
        format!("*** Begin Patch\n{body}\n*** End Patch")
    }

    fn prompt(&self) -> String {
        let name = &self.name;
        match self.change {
            Change::Add => format!(
                "Write a file named '{name}' containing exactly: 'created by e2e test'. Confirm with one sentence."
            ),
            Change::Update => format!(
                "Overwrite the file '{name}' so it contains exactly: 'overwritten by e2e edit test'. Confirm with one sentence."
            ),
            Change::Delete => format!("Delete the file '{name}'. Confirm with one sentence."),
        }
    }

    fn reply(&self) -> &'static str {
        match self.change {
            Change::Add => "File created successfully.",
            Change::Update | Change::Delete => "File overwritten successfully.",
        }
    }

    /// Texts the reported diff must contain.
    fn diff_texts(&self) -> Vec<&'static str> {
        match self.change {
            Change::Add => vec!["created by e2e test"],
            Change::Update => vec![ORIGINAL, "overwritten by e2e edit test"],
            Change::Delete => vec![],
        }
    }
}

/// The tool the scripted model edits with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    /// `exec_command` with an `apply_patch` heredoc, which codex intercepts.
    ExecCommand,
    /// The freeform `apply_patch` custom tool.
    ApplyPatch,
}

impl Tool {
    fn call(self, call_id: &str, patch: &str) -> Value {
        match self {
            Tool::ExecCommand => bodies::apply_patch_exec_call(call_id, patch),
            Tool::ApplyPatch => events::apply_patch_custom_tool_call(call_id, patch),
        }
    }

    /// The input item that carries the call's output back to the model.
    fn output_type(self) -> &'static str {
        match self {
            Tool::ExecCommand => "function_call_output",
            Tool::ApplyPatch => "custom_tool_call_output",
        }
    }

    /// `thread/start` params that make codex offer this tool.
    fn thread_params(self) -> Value {
        match self {
            Tool::ExecCommand => json!({}),
            Tool::ApplyPatch => json!({"model": PATCH_TOOL_MODEL}),
        }
    }

    /// Fails unless the request offers this tool; notes a patch tool offered beside
    /// `exec_command`.
    fn check_offered(self, ctx: &Ctx, r: &CapturedRequest) -> anyhow::Result<()> {
        let names = r.tool_names();
        match self {
            Tool::ExecCommand => {
                ensure!(
                    names.iter().any(|n| n == "exec_command"),
                    "request #{} offers no exec_command: {names:?}",
                    r.index
                );
                if names.iter().any(|n| n == "apply_patch") {
                    ctx.observe("the mock model is also offered an apply_patch tool");
                }
            }
            Tool::ApplyPatch => {
                let tool = r.tool_by_name(None, "apply_patch").with_context(|| {
                    format!(
                        "request #{} offers no apply_patch tool to model {PATCH_TOOL_MODEL}: {names:?}",
                        r.index
                    )
                })?;
                if r.index == 0 {
                    ctx.observe(format!(
                        "{PATCH_TOOL_MODEL} is offered apply_patch as a {} tool",
                        tool["type"]
                    ));
                }
            }
        }
        Ok(())
    }
}

/// What codex reported for one edit, with paths relative to the workspace.
#[derive(Debug, Clone, PartialEq)]
struct Report {
    /// `changes` of the completed `fileChange` item.
    changes: Value,
    /// The diff of the turn's last `turn/diff/updated`, if any came.
    diff: Option<String>,
}

/// The two scripted bodies of an edit: the tool call, then the confirmation.
fn edit_script(edit: &Edit, tool: Tool) -> Vec<Scripted> {
    let id = format!("resp-{}", edit.call_id);
    vec![
        Scripted::sse(bodies::one_item_reply(
            &id,
            tool.call(edit.call_id, &edit.patch()),
        )),
        Scripted::sse(bodies::assistant_reply(
            &format!("resp-{}-done", edit.call_id),
            edit.reply(),
        )),
    ]
}

/// Seeds the edit's file in `workspace`, runs its turn on `thread` and checks codex's
/// report and the disk.
async fn edit_turn(
    world: &World,
    app: &AppServer,
    thread: &str,
    workspace: &Path,
    edit: &Edit,
    tool: Tool,
) -> anyhow::Result<Report> {
    let path = workspace.join(&edit.name);
    if let Some(seed) = edit.seed() {
        std::fs::write(&path, seed).with_context(|| format!("seeding {}", path.display()))?;
    }
    world.script(edit_script(edit, tool)).await?;
    let turn = run_turn(
        app,
        thread,
        vec![text(&edit.prompt())],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(
        turn.status,
        TurnStatus::Completed,
        "{} turn status",
        edit.kind()
    );
    ensure_eq!(
        turn.final_response(),
        edit.reply(),
        "{} turn answer",
        edit.kind()
    );
    let approvals: Vec<&str> = turn
        .messages
        .iter()
        .map(|m| m.method())
        .filter(|m| m.contains("pproval"))
        .collect();
    ensure!(approvals.is_empty(), "approval requests: {approvals:?}");
    let report = file_change_report(&turn, workspace, edit)?;
    match (edit.after(), std::fs::read_to_string(&path)) {
        (Some(want), Ok(got)) => ensure!(
            got == want || got == format!("{want}\n"),
            "{} holds {got:?}, not {want:?}",
            path.display()
        ),
        (Some(_), Err(e)) => anyhow::bail!("{} is not readable: {e}", path.display()),
        (None, _) => ensure!(!path.exists(), "{} still exists", path.display()),
    }
    Ok(report)
}

/// The turn's one `fileChange` item (started and completed) with one change of the
/// edit's kind, and the last `turn/diff/updated`.
fn file_change_report(turn: &Turn, workspace: &Path, edit: &Edit) -> anyhow::Result<Report> {
    let of_type = |method: &str| -> Vec<Value> {
        turn.notifications(method)
            .into_iter()
            .filter_map(|p| p.get("item"))
            .filter(|i| i["type"] == "fileChange")
            .cloned()
            .collect()
    };
    let (started, completed) = (of_type("item/started"), of_type("item/completed"));
    ensure_eq!(started.len(), 1, "fileChange item/started count");
    ensure_eq!(completed.len(), 1, "fileChange item/completed count");
    let item = &completed[0];
    ensure_eq!(started[0]["id"], item["id"], "fileChange item id");
    ensure_eq!(
        item["status"],
        json!(ItemStatus::Completed),
        "fileChange status"
    );
    let changes = item["changes"].as_array().cloned().unwrap_or_default();
    ensure_eq!(changes.len(), 1, "changes in the fileChange item");
    let change = &changes[0];
    let path = change["path"].as_str().unwrap_or_default();
    ensure!(
        path == edit.name || path.ends_with(&format!("/{}", edit.name)),
        "fileChange path {path} does not name {}",
        edit.name
    );
    ensure_eq!(change["kind"]["type"], json!(edit.kind()), "change kind");
    let diff = change["diff"].as_str().unwrap_or_default();
    for want in edit.diff_texts() {
        ensure!(diff.contains(want), "change diff lacks {want:?}: {diff:?}");
    }
    let turn_diff = turn
        .notifications("turn/diff/updated")
        .last()
        .and_then(|p| p["diff"].as_str())
        .map(String::from);
    if let Some(d) = &turn_diff {
        ensure!(
            d.contains(&edit.name),
            "turn/diff/updated does not name {}: {d}",
            edit.name
        );
    }
    let mut relative = change.clone();
    let prefix = format!("{}/", workspace.display());
    relative["path"] = json!(path.strip_prefix(&prefix).unwrap_or(path));
    Ok(Report {
        changes: json!([relative]),
        diff: turn_diff,
    })
}

/// Checks the requests of `edits` run in order from request `first`: each edit's first
/// request offers the tool, its second carries the call's output.
fn check_edit_requests(
    ctx: &Ctx,
    requests: &[CapturedRequest],
    first: usize,
    edits: &[Edit],
    tool: Tool,
) -> anyhow::Result<()> {
    for (i, edit) in edits.iter().enumerate() {
        let (call, answer) = (&requests[first + 2 * i], &requests[first + 2 * i + 1]);
        tool.check_offered(ctx, call)?;
        answer
            .call_output(edit.call_id, tool.output_type())
            .with_context(|| format!("the {} edit's second request", edit.kind()))?;
    }
    Ok(())
}

/// A world whose workspace is outside any git repository, with a thread started in it.
async fn plain_world(
    ctx: &Ctx,
    tool: Tool,
) -> anyhow::Result<(World, std::sync::Arc<AppServer>, String)> {
    let (world, app, thread, _) =
        setup_with(ctx, WorldOptions::default(), vec![], tool.thread_params()).await?;
    git::ensure_outside_repository(&world.workspace).await?;
    Ok((world, app, thread))
}

async fn single_edit(ctx: &Ctx, change: Change) -> anyhow::Result<()> {
    let tool = Tool::ExecCommand;
    let (world, app, thread) = plain_world(ctx, tool).await?;
    let edit = Edit::new(change);
    let report = edit_turn(&world, &app, &thread, &world.workspace, &edit, tool).await?;
    ctx.observe(format!(
        "{} via exec_command: turn/diff/updated {}",
        edit.kind(),
        if report.diff.is_some() {
            "sent"
        } else {
            "not sent"
        }
    ));
    let requests = world.expect_requests(2).await?;
    check_edit_requests(ctx, &requests, 0, &[edit], tool)?;
    world.finish().await
}

/// The three catalogue edits, each on its own file.
fn three_edits() -> Vec<Edit> {
    [Change::Add, Change::Update, Change::Delete]
        .into_iter()
        .map(Edit::new)
        .collect()
}

async fn patch_tool(ctx: &Ctx) -> anyhow::Result<()> {
    let tool = Tool::ApplyPatch;
    let (world, app, thread) = plain_world(ctx, tool).await?;
    let edits = three_edits();
    for edit in &edits {
        edit_turn(&world, &app, &thread, &world.workspace, edit, tool).await?;
    }
    let requests = world.expect_requests(6).await?;
    check_edit_requests(ctx, &requests, 0, &edits, tool)?;
    world.finish().await
}

async fn shell_write(ctx: &Ctx) -> anyhow::Result<()> {
    let (world, app, thread) = plain_world(ctx, Tool::ExecCommand).await?;
    let name = format!("shell_{}.txt", random_hex(8));
    let call_id = "call_shell_1";
    world
        .script(vec![
            Scripted::sse(bodies::one_item_reply(
                "resp-shell",
                events::exec_command_call(call_id, &format!("printf 'shell wrote this' > {name}")),
            )),
            Scripted::sse(bodies::assistant_reply("resp-shell-done", "Written.")),
        ])
        .await?;
    let turn = run_turn(
        &app,
        &thread,
        vec![text(&format!(
            "Write 'shell wrote this' into {name} with the shell."
        ))],
        &TurnOptions::default(),
    )
    .await?;
    ensure_eq!(turn.status, TurnStatus::Completed, "turn status");
    let commands = turn.completed_items("commandExecution");
    ensure_eq!(commands.len(), 1, "commandExecution items");
    ensure_eq!(
        commands[0]["exitCode"],
        json!(0),
        "commandExecution exitCode"
    );
    let file_changes = turn.completed_items("fileChange");
    ensure!(
        file_changes.is_empty(),
        "a plain shell write was reported as a file change: {file_changes:?}"
    );
    ctx.observe(format!(
        "shell write: turn/diff/updated {}",
        if turn.notifications("turn/diff/updated").is_empty() {
            "not sent"
        } else {
            "sent"
        }
    ));
    let path = world.workspace.join(&name);
    let content =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    ensure_eq!(content.as_str(), "shell wrote this", "{name} content");
    let requests = world.expect_requests(2).await?;
    requests[1]
        .function_call_output(call_id)
        .context("the shell call's output")?;
    world.finish().await
}

async fn git_repository(ctx: &Ctx) -> anyhow::Result<()> {
    let tool = Tool::ExecCommand;
    let (world, app, plain_thread) = plain_world(ctx, tool).await?;
    let repository = world.root().join("repository");
    std::fs::create_dir_all(&repository)
        .with_context(|| format!("creating {}", repository.display()))?;
    let head = git::init_repository(&repository).await?;
    let repository_cwd = repository.display().to_string();
    let (git_thread, _) = world
        .start_thread(&app, json!({"cwd": repository_cwd}))
        .await?;

    let edits = three_edits();
    let mut reports = Vec::new();
    for (thread, workspace) in [
        (&plain_thread, world.workspace.as_path()),
        (&git_thread, repository.as_path()),
    ] {
        let mut per_edit = Vec::new();
        for edit in &edits {
            per_edit.push(edit_turn(&world, &app, thread, workspace, edit, tool).await?);
        }
        reports.push(per_edit);
    }
    let requests = world.expect_requests(12).await?;
    check_edit_requests(ctx, &requests, 0, &edits, tool)?;
    check_edit_requests(ctx, &requests, 6, &edits, tool)?;

    for ((edit, plain), in_git) in edits.iter().zip(&reports[0]).zip(&reports[1]) {
        if plain != in_git {
            ctx.drift(
                "file_change.report_in_git_differs",
                json!(edit.kind()),
                format!(
                    "in a git repository the {} report differs: plain {plain:?}, git {in_git:?}",
                    edit.kind()
                ),
            );
        }
    }
    let (plain_info, repo_info) = (
        git_info(&app, &plain_thread).await?,
        git_info(&app, &git_thread).await?,
    );
    ensure_eq!(
        plain_info,
        Value::Null,
        "thread.gitInfo outside a repository"
    );
    ensure_eq!(repo_info["branch"], json!("main"), "thread.gitInfo.branch");
    ensure_eq!(repo_info["sha"], json!(head), "thread.gitInfo.sha");
    ctx.observe(
        format!(
            "plain vs git repository: fileChange items and turn/diff/updated {}; thread.gitInfo null vs {repo_info}",
            if reports[0] == reports[1] {
                "identical"
            } else {
                "differ"
            }
        ),
    );
    world.finish().await
}

/// `thread.gitInfo` as `thread/read` reports it.
async fn git_info(app: &AppServer, thread: &str) -> anyhow::Result<Value> {
    let read = app.thread_read(thread, json!({})).await?;
    Ok(read["thread"]["gitInfo"].clone())
}
