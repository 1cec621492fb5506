//! Rollout files: the JSON-lines history codex keeps for each thread, at
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<timestamp>-<thread id>.jsonl`. Finding them,
//! cloning one into another `CODEX_HOME` under a new thread id, which is how an integrator
//! forks a conversation into a private home or into a new git worktree, and writing one turn
//! by turn ([`RolloutWriter`]), which is how the performance scenarios make homes at scale
//! (`crate::scenarios::support::history_home`).
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use std::path::Path;
//! // The source app-server has exited (its rollout is flushed); the target home has its
//! // config.toml, and no app-server runs there yet.
//! let clone = codex_parity_catalogue::scenarios::support::rollout::clone_rollout(
//!     Path::new("/homes/source"),
//!     "01a229ef-36fa-7a12-aa86-35ad4e7d3ea9",
//!     Path::new("/homes/private"),
//!     Path::new("/work/repo-fork"),
//! )?;
//! // Start `codex app-server` with CODEX_HOME=/homes/private in /work/repo-fork, then
//! // `thread/resume {"threadId": clone.thread_id}`.
//! # Ok(()) }
//! ```

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail, ensure};
use serde_json::Value;

/// Every `rollout-*` file below `dir` (recursively), sorted; a missing `dir` gives none.
pub fn rollout_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rollout-"))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Checks that `id` can name a rollout: non-empty hex digits and dashes (a UUID), so it
/// cannot reach outside `sessions/` or match another thread's file by pattern.
pub fn check_thread_id(id: &str) -> anyhow::Result<()> {
    ensure!(
        !id.is_empty() && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-'),
        "thread id {id:?} is not a UUID (only hex digits and dashes are allowed)"
    );
    Ok(())
}

/// The rollout of thread `thread_id` in `home`: the newest (by modification time) file
/// `home/sessions/**/rollout-*-<thread_id>.jsonl`.
pub fn find_rollout(home: &Path, thread_id: &str) -> anyhow::Result<PathBuf> {
    check_thread_id(thread_id)?;
    let sessions = home.join("sessions");
    let suffix = format!("-{thread_id}.jsonl");
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = rollout_files(&sessions)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(&suffix))
        })
        .map(|p| {
            let modified = fs::metadata(&p)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (modified, p)
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, path)) => Ok(path),
        None => bail!(
            "no rollout of thread {thread_id} under {} (rollout-*{suffix})",
            sessions.display()
        ),
    }
}

/// A fresh thread id in codex's form: a UUIDv7, lower-case with dashes.
pub fn mint_thread_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// What [`clone_rollout`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClonedRollout {
    /// The new thread id (resume this one in the target home).
    pub thread_id: String,
    /// The new rollout file, inside the target home.
    pub path: PathBuf,
    /// The rollout that was copied (left untouched).
    pub source: PathBuf,
    /// The working directory the source recorded (`session_meta.payload.cwd`).
    pub source_cwd: String,
    /// How many lines differ from the source (the others are byte-identical).
    pub rewritten_lines: usize,
}

/// Clones thread `thread_id` of `source_home` into `target_home` under a freshly minted
/// thread id (UUIDv7), recorded as having run in `target_cwd`. See [`clone_rollout_as`].
pub fn clone_rollout(
    source_home: &Path,
    thread_id: &str,
    target_home: &Path,
    target_cwd: &Path,
) -> anyhow::Result<ClonedRollout> {
    clone_rollout_as(
        source_home,
        thread_id,
        target_home,
        target_cwd,
        &mint_thread_id(),
    )
}

/// Clones thread `thread_id` of `source_home` into `target_home` as thread `new_id`,
/// recorded as having run in `target_cwd`.
///
/// The source is the newest `sessions/**/rollout-*-<thread_id>.jsonl` (see
/// [`find_rollout`]). The copy goes to the same `sessions/YYYY/MM/DD/` directory of the
/// target home, with the same file name except the id. Every line is copied byte for
/// byte, except that every occurrence of the thread id becomes `new_id`, and every
/// occurrence of the recorded working directory (the source's `session_meta.payload.cwd`,
/// as a whole path: also as the start of a longer path, never inside another name) becomes
/// `target_cwd`. That covers `session_meta`, every `turn_context`, the settings and world
/// state later versions record, and the `<environment_context>` and tool outputs the model
/// saw: the clone reads as if the conversation had run in `target_cwd` all along, so a
/// clone into a git worktree points the model at the worktree's files, not the source's.
/// The recorded git information (branch, commit) is left as the source recorded it.
///
/// The file is written through a temporary file and a rename, and never replaces an
/// existing file. Use it while no app-server runs on the target home, and after the
/// source's app-server has exited (the rollout is flushed slightly after a turn ends).
pub fn clone_rollout_as(
    source_home: &Path,
    thread_id: &str,
    target_home: &Path,
    target_cwd: &Path,
    new_id: &str,
) -> anyhow::Result<ClonedRollout> {
    check_thread_id(new_id)?;
    let source = find_rollout(source_home, thread_id)?;
    let text =
        fs::read_to_string(&source).with_context(|| format!("reading {}", source.display()))?;
    let source_cwd = recorded_cwd(&text, thread_id)
        .with_context(|| format!("reading the session_meta of {}", source.display()))?;
    let target_cwd = target_cwd
        .to_str()
        .with_context(|| format!("{} is not UTF-8", target_cwd.display()))?;
    let rewrite = rewrite_rollout(&text, thread_id, new_id, &source_cwd, target_cwd)
        .with_context(|| format!("rewriting {}", source.display()))?;

    let relative = source
        .parent()
        .and_then(|dir| dir.strip_prefix(source_home.join("sessions")).ok())
        .with_context(|| format!("{} is not under its home's sessions/", source.display()))?;
    let name = source
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(&format!("{thread_id}.jsonl")))
        .map(|stem| format!("{stem}{new_id}.jsonl"))
        .with_context(|| format!("unexpected rollout name {}", source.display()))?;
    let dir = target_home.join("sessions").join(relative);
    let path = dir.join(name);
    ensure!(
        !path.exists(),
        "{} already exists: refusing to replace it",
        path.display()
    );
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    write_atomically(&path, rewrite.text.as_bytes())?;
    Ok(ClonedRollout {
        thread_id: new_id.to_string(),
        path,
        source,
        source_cwd,
        rewritten_lines: rewrite.changed_lines,
    })
}

/// A rollout's text after [`rewrite_rollout`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The new text.
    pub text: String,
    /// How many lines changed.
    pub changed_lines: usize,
}

/// Rewrites a rollout's text: every occurrence of `old_id` becomes `new_id`, and every
/// occurrence of the path `old_cwd` (as it appears inside JSON strings, as a whole path)
/// becomes `new_cwd`; other bytes are kept. Fails if a changed line is no longer JSON, or
/// if the `session_meta` does not end up with `new_id` and `new_cwd`.
pub fn rewrite_rollout(
    text: &str,
    old_id: &str,
    new_id: &str,
    old_cwd: &str,
    new_cwd: &str,
) -> anyhow::Result<Rewrite> {
    check_thread_id(old_id)?;
    check_thread_id(new_id)?;
    ensure!(
        old_cwd.len() > 1 && old_cwd.starts_with('/'),
        "the recorded cwd {old_cwd:?} is not an absolute path below /"
    );
    ensure!(
        new_cwd.starts_with('/'),
        "the target cwd {new_cwd:?} is not absolute"
    );
    let (old_path, new_path) = (json_escaped(old_cwd), json_escaped(new_cwd));
    let mut out = String::with_capacity(text.len());
    let mut changed_lines = 0;
    for (number, line) in text.split_inclusive('\n').enumerate() {
        let rewritten = replace_path(&line.replace(old_id, new_id), &old_path, &new_path);
        if rewritten != line {
            changed_lines += 1;
            serde_json::from_str::<Value>(rewritten.trim_end())
                .with_context(|| format!("line {} is no longer JSON", number + 1))?;
        }
        out.push_str(&rewritten);
    }
    let meta_cwd = recorded_cwd(&out, new_id)?;
    ensure!(
        meta_cwd == new_cwd,
        "session_meta.payload.cwd is {meta_cwd:?} after the rewrite, not {new_cwd:?}"
    );
    Ok(Rewrite {
        text: out,
        changed_lines,
    })
}

/// `session_meta.payload.cwd` of the first line, which must be the `session_meta` of
/// thread `thread_id`.
fn recorded_cwd(text: &str, thread_id: &str) -> anyhow::Result<String> {
    let first = text.lines().next().context("the rollout is empty")?;
    let meta: Value = serde_json::from_str(first).context("line 1 is not JSON")?;
    ensure!(
        meta["type"] == "session_meta",
        "line 1 is a {} line, not session_meta",
        meta["type"]
    );
    let id = meta["payload"]["id"].as_str().unwrap_or_default();
    ensure!(
        id.eq_ignore_ascii_case(thread_id),
        "session_meta.payload.id is {id:?}, not {thread_id:?}"
    );
    meta["payload"]["cwd"]
        .as_str()
        .map(String::from)
        .context("session_meta.payload.cwd is missing")
}

/// `text` as it appears inside a JSON string (without the quotes).
fn json_escaped(text: &str) -> String {
    let quoted = Value::from(text).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// Whether `c` can continue a file name (so a match ending before it is only part of a name).
fn continues_name(c: char) -> bool {
    c.is_alphanumeric() || "._-~+@".contains(c)
}

/// Replaces every occurrence of the path `old` in `line` that stands as a whole path: not
/// preceded by a name character, and followed by the end, `/`, or a character that cannot
/// continue a name.
fn replace_path(line: &str, old: &str, new: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut copied = 0;
    for (at, _) in line.match_indices(old) {
        let before = line[..at].chars().last();
        let after = line[at + old.len()..].chars().next();
        if !before.is_some_and(continues_name) && !after.is_some_and(continues_name) {
            out.push_str(&line[copied..at]);
            out.push_str(new);
            copied = at + old.len();
        }
    }
    out.push_str(&line[copied..]);
    out
}

/// Writes `bytes` to a temporary file next to `path`, then renames it into place.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .with_context(|| format!("{} has no parent directory", path.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("writing a temporary file in {}", dir.display()))?;
    tmp.persist_noclobber(path)
        .map_err(|e| e.error)
        .with_context(|| format!("moving the clone into place at {}", path.display()))?;
    Ok(())
}

/// A rollout written line by line in the legacy layout every release reads: the
/// `session_meta`, then per turn its `task_started`, `turn_context`, the user message (as
/// the model's `response_item` and as the `user_message` event a resumed thread's turns are
/// rebuilt from), optionally a tool call and its output (model context only, where a real
/// rollout's bulk is), the assistant's answer (both forms again) and `task_complete`. Lines
/// are compact JSON; every timestamp is the one given, so the same arguments give the same
/// bytes. (`codex migrate-rollouts --apply`, from 0.171.0, turns such a rollout into the
/// paginated layout.)
pub struct RolloutWriter {
    out: std::io::BufWriter<fs::File>,
    path: PathBuf,
    thread_id: String,
    at: String,
    cwd: String,
    records: usize,
    turns: usize,
}

/// One turn of a [`RolloutWriter`].
#[derive(Debug, Clone, Copy)]
pub struct TurnLines<'a> {
    /// The turn id.
    pub turn_id: &'a str,
    /// The user's text.
    pub prompt: &'a str,
    /// The assistant's text.
    pub answer: &'a str,
    /// A tool call's output before the answer (a `function_call` and its
    /// `function_call_output`), if any.
    pub tool_output: Option<&'a str>,
}

impl RolloutWriter {
    /// Creates `home/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDTHH-MM-SS-<thread_id>.jsonl` for a
    /// thread started at `at` (`YYYY-MM-DDTHH:MM:SS.mmmZ`), recorded as run in `cwd` by
    /// codex `cli_version` with the model provider `provider` (what `thread/list` filters
    /// on), and writes its `session_meta`. Refuses an existing file.
    pub fn create(
        home: &Path,
        thread_id: &str,
        at: &str,
        cwd: &str,
        cli_version: &str,
        provider: &str,
    ) -> anyhow::Result<RolloutWriter> {
        check_thread_id(thread_id)?;
        ensure!(
            at.len() >= 19 && at.as_bytes().get(10) == Some(&b'T'),
            "timestamp {at:?} is not YYYY-MM-DDTHH:MM:SS..."
        );
        let dir = home
            .join("sessions")
            .join(&at[0..4])
            .join(&at[5..7])
            .join(&at[8..10]);
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let stamp = at[0..19].replace(':', "-");
        let path = dir.join(format!("rollout-{stamp}-{thread_id}.jsonl"));
        let file = fs::File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        let mut writer = RolloutWriter {
            out: std::io::BufWriter::new(file),
            path,
            thread_id: thread_id.to_string(),
            at: at.to_string(),
            cwd: cwd.to_string(),
            records: 0,
            turns: 0,
        };
        writer.line(
            "session_meta",
            serde_json::json!({"session_id": thread_id, "id": thread_id, "timestamp": at,
                "cwd": cwd, "originator": "codex-parity", "cli_version": cli_version,
                "source": "vscode", "model_provider": provider}),
        )?;
        Ok(writer)
    }

    /// Writes one line.
    fn line(&mut self, kind: &str, payload: Value) -> anyhow::Result<()> {
        let line = serde_json::json!({"timestamp": self.at, "type": kind, "payload": payload});
        serde_json::to_writer(&mut self.out, &line)
            .map_err(anyhow::Error::from)
            .and_then(|()| self.out.write_all(b"\n").map_err(anyhow::Error::from))
            .with_context(|| format!("writing {}", self.path.display()))?;
        self.records += 1;
        Ok(())
    }

    /// Writes one completed turn: 7 lines, 9 with a tool output.
    pub fn turn(&mut self, turn: TurnLines<'_>) -> anyhow::Result<()> {
        use serde_json::json;
        let id = turn.turn_id;
        self.line("event_msg", json!({"type": "task_started", "turn_id": id}))?;
        self.line(
            "turn_context",
            json!({"turn_id": id, "cwd": self.cwd, "approval_policy": "never",
                   "sandbox_policy": {"type": "danger-full-access"}, "model": "mock-model",
                   "summary": "auto"}),
        )?;
        self.line(
            "response_item",
            json!({"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": turn.prompt}]}),
        )?;
        self.line(
            "event_msg",
            json!({"type": "user_message", "message": turn.prompt, "images": [],
                   "local_images": [], "text_elements": []}),
        )?;
        if let Some(output) = turn.tool_output {
            let call = format!("call-{id}");
            self.line(
                "response_item",
                json!({"type": "function_call", "name": "shell", "call_id": call,
                       "arguments": "{\"command\":[\"cat\",\"notes.txt\"]}"}),
            )?;
            self.line(
                "response_item",
                json!({"type": "function_call_output", "call_id": call, "output": output}),
            )?;
        }
        self.line(
            "response_item",
            json!({"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": turn.answer}]}),
        )?;
        self.line(
            "event_msg",
            json!({"type": "agent_message", "message": turn.answer}),
        )?;
        self.line(
            "event_msg",
            json!({"type": "task_complete", "turn_id": id, "last_agent_message": turn.answer}),
        )?;
        self.turns += 1;
        Ok(())
    }

    /// Flushes the file and gives it the thread's start as its modification time (codex
    /// orders threads by it on some releases); returns what was written.
    pub fn finish(mut self, modified: std::time::SystemTime) -> anyhow::Result<Written> {
        self.out
            .flush()
            .with_context(|| format!("writing {}", self.path.display()))?;
        self.out
            .get_ref()
            .set_modified(modified)
            .with_context(|| format!("setting the time of {}", self.path.display()))?;
        Ok(Written {
            path: self.path,
            thread_id: self.thread_id,
            records: self.records,
            turns: self.turns,
        })
    }
}

/// What a [`RolloutWriter`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The file.
    pub path: PathBuf,
    /// The thread id.
    pub thread_id: String,
    /// Its lines (records), the `session_meta` included.
    pub records: usize,
    /// Its turns.
    pub turns: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "01a229ef-36fa-7a12-aa86-35ad4e7d3ea9";
    const N: &str = "01a229ff-0000-7000-8000-0000000000aa";

    /// A hand-made rollout of thread T run in /work/src: one line of each kind that matters.
    fn rollout() -> String {
        [
            format!(
                r#"{{"timestamp":"2026-11-30T00:51:12.816Z","type":"session_meta","payload":{{"session_id":"{T}","id":"{T}","timestamp":"2026-11-30T00:51:12.768Z","cwd":"/work/src","runtime_workspace_roots":["/work/src"],"originator":"codex-parity","cli_version":"0.171.0","model_provider":"mock"}}}}"#
            ),
            r#"{"timestamp":"2026-11-30T00:51:12.870Z", "type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/work/src</cwd>\n</environment_context>"}]}}"#.to_string(),
            r#"{"timestamp":"2026-11-30T00:51:12.872Z","type":"turn_context","payload":{"turn_id":"01a229ef-3725-7281-a7bd-8ea28f0a8678","cwd":"/work/src","approval_policy":"never","sandbox_policy":{"type":"danger-full-access"}}}"#.to_string(),
            format!(
                r#"{{"timestamp":"2026-11-30T00:51:12.880Z","type":"event_msg","payload":{{"type":"item_completed","thread_id":"{T}","item":{{"text":"see /work/src/lib.rs, /work/src2 and /old/work/src"}}}}}}"#
            ),
            r#"{"timestamp":"2026-11-30T00:51:12.910Z",  "type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ACK"}]}}"#.to_string(),
        ]
        .map(|l| l + "\n")
        .concat()
    }

    fn home_with_rollout(text: &str) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("sessions/2026/11/30");
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join(format!("rollout-2026-11-30T00-51-12-{T}.jsonl")),
            text,
        )
        .unwrap();
        home
    }

    #[test]
    fn clone_rewrites_id_and_cwd_and_keeps_other_bytes() {
        let source_home = home_with_rollout(&rollout());
        let target = tempfile::tempdir().unwrap();
        let clone = clone_rollout_as(
            source_home.path(),
            T,
            target.path(),
            Path::new("/work/fork"),
            N,
        )
        .unwrap();
        assert_eq!(
            clone.path,
            target.path().join(format!(
                "sessions/2026/11/30/rollout-2026-11-30T00-51-12-{N}.jsonl"
            ))
        );
        assert_eq!(clone.thread_id, N);
        assert_eq!(clone.source_cwd, "/work/src");
        assert_eq!(clone.rewritten_lines, 4);
        let text = fs::read_to_string(&clone.path).unwrap();
        assert!(!text.contains(T), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let meta: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(meta["payload"]["id"], N);
        assert_eq!(meta["payload"]["session_id"], N);
        assert_eq!(meta["payload"]["cwd"], "/work/fork");
        assert_eq!(meta["payload"]["runtime_workspace_roots"][0], "/work/fork");
        assert!(lines[1].contains("<cwd>/work/fork</cwd>"));
        assert!(lines[1].contains(r#""timestamp":"2026-11-30T00:51:12.870Z", "type""#));
        let context: Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(context["payload"]["cwd"], "/work/fork");
        // A path below the cwd moves; a sibling name and a longer path do not.
        assert!(
            lines[3].contains("see /work/fork/lib.rs, /work/src2 and /old/work/src"),
            "{}",
            lines[3]
        );
        // A line without the id or the cwd is byte-identical.
        assert_eq!(lines[4], rollout().lines().nth(4).unwrap());
        // The source is untouched.
        let source = find_rollout(source_home.path(), T).unwrap();
        assert_eq!(fs::read_to_string(source).unwrap(), rollout());
    }

    #[test]
    fn clone_into_the_same_directory_changes_only_the_id() {
        let source_home = home_with_rollout(&rollout());
        let target = tempfile::tempdir().unwrap();
        let clone =
            clone_rollout(source_home.path(), T, target.path(), Path::new("/work/src")).unwrap();
        assert_ne!(clone.thread_id, T);
        check_thread_id(&clone.thread_id).unwrap();
        let text = fs::read_to_string(&clone.path).unwrap();
        assert_eq!(text, rollout().replace(T, &clone.thread_id));
        assert_eq!(clone.rewritten_lines, 2);
    }

    #[test]
    fn errors_name_what_and_where() {
        let target = tempfile::tempdir().unwrap();
        let fork = Path::new("/work/fork");
        let source_home = home_with_rollout(&rollout());
        let err = clone_rollout(source_home.path(), "../etc", target.path(), fork).unwrap_err();
        assert!(format!("{err:#}").contains("is not a UUID"), "{err:#}");
        let err = clone_rollout(source_home.path(), N, target.path(), fork).unwrap_err();
        assert!(
            format!("{err:#}").contains(&format!("no rollout of thread {N} under")),
            "{err:#}"
        );

        let bad = home_with_rollout(&rollout().replacen(T, N, 2));
        let err = clone_rollout(bad.path(), T, target.path(), fork).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("reading the session_meta of"), "{text}");
        assert!(
            text.contains(&format!("rollout-2026-11-30T00-51-12-{T}.jsonl")),
            "{text}"
        );
        assert!(text.contains("session_meta.payload.id"), "{text}");

        let not_meta = home_with_rollout("{\"type\":\"turn_context\",\"payload\":{}}\n");
        let err = clone_rollout(not_meta.path(), T, target.path(), fork).unwrap_err();
        assert!(format!("{err:#}").contains("not session_meta"), "{err:#}");

        clone_rollout_as(source_home.path(), T, target.path(), fork, N).unwrap();
        let err = clone_rollout_as(source_home.path(), T, target.path(), fork, N).unwrap_err();
        assert!(format!("{err:#}").contains("already exists"), "{err:#}");
    }

    #[test]
    fn the_writer_writes_a_legacy_rollout_that_clones_and_reads_back() {
        let home = tempfile::tempdir().unwrap();
        let mut w = RolloutWriter::create(
            home.path(),
            T,
            "2026-01-02T03:04:05.000Z",
            "/work/src",
            "0.171.0",
            "mock",
        )
        .unwrap();
        w.turn(TurnLines {
            turn_id: "t-1",
            prompt: "prompt 1",
            answer: "answer 1",
            tool_output: None,
        })
        .unwrap();
        w.turn(TurnLines {
            turn_id: "t-2",
            prompt: "prompt 2",
            answer: "answer 2",
            tool_output: Some("lots of output"),
        })
        .unwrap();
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_767_323_045);
        let written = w.finish(at).unwrap();
        assert_eq!((written.records, written.turns), (1 + 7 + 9, 2));
        assert_eq!(find_rollout(home.path(), T).unwrap(), written.path);
        assert!(written.path.ends_with(format!(
            "sessions/2026/01/02/rollout-2026-01-02T03-04-05-{T}.jsonl"
        )));
        assert_eq!(fs::metadata(&written.path).unwrap().modified().unwrap(), at);
        let text = fs::read_to_string(&written.path).unwrap();
        assert_eq!(text.lines().count(), written.records);
        assert_eq!(recorded_cwd(&text, T).unwrap(), "/work/src");
        let kinds: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|v| match v["payload"]["type"].as_str() {
                Some(t) => format!("{}:{t}", v["type"].as_str().unwrap()),
                None => v["type"].as_str().unwrap().to_string(),
            })
            .collect();
        assert_eq!(
            kinds[..8],
            [
                "session_meta",
                "event_msg:task_started",
                "turn_context",
                "response_item:message",
                "event_msg:user_message",
                "response_item:message",
                "event_msg:agent_message",
                "event_msg:task_complete"
            ]
        );
        assert!(kinds.contains(&"response_item:function_call_output".to_string()));
        // A clone of it rewrites the id and cwd like a rollout codex wrote.
        let target = tempfile::tempdir().unwrap();
        let clone =
            clone_rollout_as(home.path(), T, target.path(), Path::new("/work/fork"), N).unwrap();
        assert_eq!(clone.rewritten_lines, 1 + 2);
        // The same arguments give the same bytes; an existing file is refused.
        let again = tempfile::tempdir().unwrap();
        let mut w = RolloutWriter::create(
            again.path(),
            T,
            "2026-01-02T03:04:05.000Z",
            "/work/src",
            "0.171.0",
            "mock",
        )
        .unwrap();
        for (id, tool) in [("t-1", None), ("t-2", Some("lots of output"))] {
            let n = &id[2..];
            w.turn(TurnLines {
                turn_id: id,
                prompt: &format!("prompt {n}"),
                answer: &format!("answer {n}"),
                tool_output: tool,
            })
            .unwrap();
        }
        let twin = w.finish(at).unwrap();
        assert_eq!(fs::read(&twin.path).unwrap(), text.as_bytes());
        let refused = RolloutWriter::create(
            again.path(),
            T,
            "2026-01-02T03:04:05.000Z",
            "/",
            "0.171.0",
            "mock",
        );
        assert!(refused.is_err());
        assert!(RolloutWriter::create(again.path(), T, "yesterday", "/", "x", "mock").is_err());
    }

    #[test]
    fn paths_are_replaced_only_as_whole_paths() {
        assert_eq!(replace_path("/a/b", "/a/b", "/c"), "/c");
        assert_eq!(replace_path("x /a/b/y /a/bz", "/a/b", "/c"), "x /c/y /a/bz");
        assert_eq!(replace_path("q/a/b \"/a/b\"", "/a/b", "/c"), "q/a/b \"/c\"");
        assert_eq!(
            replace_path("<cwd>/a/b</cwd>", "/a/b", "/c"),
            "<cwd>/c</cwd>"
        );
        assert_eq!(replace_path("/a/b\\n", "/a/b", "/c"), "/c\\n");
        assert_eq!(json_escaped("/a \"b\""), "/a \\\"b\\\"");
    }

    #[test]
    fn finds_the_newest_rollout_and_lists_all() {
        let home = home_with_rollout(&rollout());
        let older = home.path().join(format!(
            "sessions/2026/11/29/rollout-2026-11-29T00-00-00-{T}.jsonl"
        ));
        fs::create_dir_all(older.parent().unwrap()).unwrap();
        fs::write(&older, rollout()).unwrap();
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        fs::File::options()
            .write(true)
            .open(&older)
            .unwrap()
            .set_modified(past)
            .unwrap();
        let newest = find_rollout(home.path(), T).unwrap();
        assert!(
            newest.to_str().unwrap().contains("2026/11/30"),
            "{newest:?}"
        );
        assert_eq!(rollout_files(&home.path().join("sessions")).len(), 2);
        assert!(rollout_files(&home.path().join("nothing")).is_empty());
    }
}
