//! `codex-parity surface`: bad uses files exit 2 naming the line; `init` reads transcripts;
//! and (feature `codex-parity`) `check` on the real 0.131.0 and 0.171.0, where
//! `thread/rollback` is gone.

use std::path::Path;
use std::process::{Command, Output};

fn surface(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codex-parity"))
        .arg("surface")
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn write(dir: &Path, name: &str, content: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path.display().to_string()
}

#[test]
fn a_malformed_uses_file_exits_two_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "uses.txt",
        "# mine\nrequest thread/start\nnotifcation turn/completed\n",
    );
    // The file is read before any codex is looked for.
    let out = surface(&["check", "--uses", &bad, "0.0.1", "0.0.2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("line 3: unknown kind \"notifcation\""),
        "{err}"
    );
    assert!(err.contains("uses.txt"), "{err}");
}

#[test]
fn an_unreadable_uses_file_exits_two_naming_it() {
    let out = surface(&["check", "--uses", "/nonexistent/uses.txt", "0.0.1", "0.0.2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent/uses.txt"));
}

#[test]
fn init_lists_the_methods_of_transcripts() {
    let dir = tempfile::tempdir().unwrap();
    let doc = serde_json::json!({"codex": "0.171.0", "scenario": "s", "connections": [
        {"world": 1, "connection": 1, "messages": [
            {"type": "response", "method": "thread/start", "result": {}},
            {"type": "notification", "method": "turn/completed", "params": {}},
            {"type": "request", "method": "item/tool/call", "params": {}},
            {"type": "error", "method": "bogus/method", "error": {"code": -32600}},
            {"type": "response", "method": "?", "result": {}},
            {"type": "event", "method": "turn.completed", "params": {"type": "turn.completed"}}]}]});
    std::fs::create_dir_all(dir.path().join("0.171.0")).unwrap();
    write(&dir.path().join("0.171.0"), "s.json", &doc.to_string());
    let out = surface(&["init", "--from", &dir.path().display().to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(String::from)
        .collect();
    assert_eq!(
        lines,
        [
            "request thread/start",
            "notification turn/completed",
            "server-request item/tool/call",
            "exec-event turn.completed"
        ]
    );
    let empty = tempfile::tempdir().unwrap();
    let out = surface(&["init", "--from", &empty.path().display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
}

/// The real binaries: `thread/rollback` is gone in 0.171.0, so a surface naming it fails
/// forward; a surface of what both have passes; backward, the removal is a new method.
#[cfg(feature = "codex-parity")]
#[test]
fn real_check_between_oldest_and_newest() {
    let dir = tempfile::tempdir().unwrap();
    let rollback = write(
        dir.path(),
        "rollback.txt",
        "request thread/start result.thread.id\nrequest thread/rollback\n\
         notification turn/completed turn.id\n",
    );
    let out = surface(&["check", "--uses", &rollback, "0.131.0", "0.171.0"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("! line 2: request thread/rollback: removed"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("line 1:"),
        "thread.id did not change: {stdout}"
    );
    let stable = write(
        dir.path(),
        "stable.txt",
        "request thread/start result.thread.id\nnotification turn/completed turn.id\n",
    );
    let out = surface(&["check", "--uses", &stable, "0.131.0", "0.171.0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = surface(&["check", "--uses", &rollback, "0.171.0", "0.131.0"]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("~ line 2: request thread/rollback: new in"),
        "{stdout}"
    );
}

/// `codex exec --json` uses, held against the golden exec streams of each release: the
/// answer item and the turn's end hold from 0.131.0 to 0.171.0; the usage field that
/// 0.161.0 added is gone going back.
#[cfg(feature = "codex-parity")]
#[test]
fn exec_events_are_checked_against_the_golden_exec_streams() {
    let dir = tempfile::tempdir().unwrap();
    let uses = write(
        dir.path(),
        "exec.txt",
        "exec-event item.completed item.type=agent_message item.text\n\
         exec-event turn.completed usage.input_tokens usage.cache_write_input_tokens\n",
    );
    let out = surface(&["check", "--uses", &uses, "0.161.0", "0.171.0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = surface(&["check", "--uses", &uses, "0.171.0", "0.131.0"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("! line 2: exec-event turn.completed usage.cache_write_input_tokens: gone"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("line 1:"),
        "the answer item did not change: {stdout}"
    );
}
