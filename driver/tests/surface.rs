//! `codex-parity surface`: bad uses files exit 2 naming the line; `init` reads transcripts;
//! and (feature `codex-parity`) `check` on the real 0.131.0 and 0.171.0, where
//! `thread/rollback` is gone; a real run's coverage and the uses it exercised (`--report`).

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

/// A real run's protocol coverage (`run --report DIR`, the executor's first scenarios on
/// 0.171.0) is what its transcripts show, and `surface check --report DIR` tells the uses
/// a scenario exercised from those only the schema checks: a file of exercised methods has
/// no `?`, one naming a method the run never called has exactly that line.
#[cfg(feature = "codex-parity")]
#[test]
fn a_real_runs_coverage_and_the_uses_it_exercised() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_codex-parity"))
        .args([
            "run",
            "--codex-version",
            "0.171.0",
            "--filter",
            "A1",
            "--report",
        ])
        .arg(&report)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("protocol coverage codex 0.171.0: client requests "),
        "{stdout}"
    );
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("results.json")).unwrap())
            .unwrap();
    let coverage = &results["coverage"][0];
    assert_eq!(coverage["version"], "0.171.0");
    let requests = &coverage["client_requests"]["stable"];
    let exercised: Vec<&str> = requests["exercised"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    // What the transcripts hold: every client request answered on a connection.
    let mut answered = std::collections::BTreeSet::new();
    let mut files = Vec::new();
    collect(&report.join("transcripts"), &mut files);
    assert!(
        !files.is_empty(),
        "no transcripts under {}",
        report.display()
    );
    for file in &files {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        for conn in doc["connections"].as_array().unwrap() {
            for m in conn["messages"].as_array().unwrap() {
                if matches!(m["type"].as_str(), Some("response" | "error")) {
                    answered.insert(m["method"].as_str().unwrap().to_string());
                }
            }
        }
    }
    for method in ["initialize", "thread/start", "turn/start"] {
        assert!(exercised.contains(&method), "{method} not in {exercised:?}");
    }
    for method in &exercised {
        assert!(answered.contains(*method), "{method} is in no transcript");
    }
    let never = requests["never"].as_array().unwrap();
    assert_eq!(
        requests["listed"].as_u64().unwrap() as usize,
        exercised.len() + never.len()
    );
    let unexercised = never[0].as_str().unwrap();

    let report_arg = report.display().to_string();
    let all = write(
        dir.path(),
        "all.txt",
        "request thread/start result.thread.id\nrequest turn/start\n\
         notification turn/completed turn.id\n",
    );
    let out = surface(&[
        "check",
        "--uses",
        &all,
        "--report",
        &report_arg,
        "0.171.0",
        "0.171.0",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("(codex-0.171.0): 3 of 3 uses exercised by a scenario"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  = line 1: request thread/start: A1 "),
        "{stdout}"
    );
    assert!(!stdout.contains("  ? "), "{stdout}");

    let some = write(
        dir.path(),
        "some.txt",
        &format!("request thread/start\nrequest {unexercised}\n"),
    );
    let out = surface(&[
        "check",
        "--uses",
        &some,
        "--report",
        &report_arg,
        "0.171.0",
        "0.171.0",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("1 of 2 uses exercised"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "  ? line 2: request {unexercised}: only schema-checked"
        )),
        "{stdout}"
    );

    // Issue 43: a typo'd method or field is no compatible change but a mistake of the
    // file, named at its line with the closest name (exit 2).
    let typo = write(
        dir.path(),
        "typo.txt",
        "request thread/strat\nnotification item/completed item.tpye\n",
    );
    let out = surface(&["check", "--uses", &typo, "0.171.0", "0.171.0"]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{all}");
    for line in [
        "typo.txt:1: request thread/strat: in neither schema (did you mean thread/start?)",
        "typo.txt:2: notification item/completed item.tpye: in neither schema (did you mean \
         item.type?)",
    ] {
        assert!(all.contains(line), "{line} not in {all}");
    }
    assert!(!all.contains("~ line"), "counted as compatible: {all}");

    // A run of another codex is refused, naming what it has.
    let out = surface(&[
        "check",
        "--uses",
        &some,
        "--report",
        &report_arg,
        "0.131.0",
        "0.161.0",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("no column of codex 0.161.0 (it has 0.171.0)"),
        "{}",
        text(&out.stderr)
    );
}

#[cfg(feature = "codex-parity")]
fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}
