//! `codex-parity client-check` without a codex: a transcript written here is the session.
//! Bad input is refused naming the fix; a client that never starts codex fails its row; a
//! client that escapes its process group (`setsid`) leaves nothing running and fails.

mod support;

use std::path::Path;
use std::time::Duration;

use support::{Sandbox, assert_exit_2_naming, text};

/// A plain turn's transcript, as a report holds it (normalised).
const TURN: &str = r#"[
  {"type": "response", "method": "initialize", "result": {"userAgent": "x"}},
  {"type": "response", "method": "thread/start", "result": {"thread": {"id": "<thread-1>"}}},
  {"type": "response", "method": "turn/start", "result": {"turn": {"id": "<turn-1>"}}},
  {"type": "notification", "method": "turn/started", "params": {"threadId": "<thread-1>",
   "turn": {"id": "<turn-1>"}}},
  {"type": "notification", "method": "item/completed", "params": {"threadId": "<thread-1>",
   "item": {"type": "agentMessage", "id": "<id>", "text": "hi"}}},
  {"type": "notification", "method": "turn/completed", "params": {"threadId": "<thread-1>",
   "turn": {"id": "<turn-1>", "status": "completed"}}}
]"#;

/// A plain turn whose text is streamed in two deltas before its item completes.
const STREAMED: &str = r#"[
  {"type": "response", "method": "initialize", "result": {"userAgent": "x"}},
  {"type": "response", "method": "thread/start", "result": {"thread": {"id": "<thread-1>"}}},
  {"type": "response", "method": "turn/start", "result": {"turn": {"id": "<turn-1>"}}},
  {"type": "notification", "method": "turn/started", "params": {"threadId": "<thread-1>",
   "turn": {"id": "<turn-1>"}}},
  {"type": "notification", "method": "item/agentMessage/delta", "params":
   {"threadId": "<thread-1>", "itemId": "<id>", "delta": "Hello "}},
  {"type": "notification", "method": "item/agentMessage/delta", "params":
   {"threadId": "<thread-1>", "itemId": "<id>", "delta": "from the mock"}},
  {"type": "notification", "method": "item/completed", "params": {"threadId": "<thread-1>",
   "item": {"type": "agentMessage", "id": "<id>", "text": "Hello from the mock"}}},
  {"type": "notification", "method": "turn/completed", "params": {"threadId": "<thread-1>",
   "turn": {"id": "<turn-1>", "status": "completed"}}}
]"#;

/// Two turns on one thread: the test client runs only the first.
const TWO_TURNS: &str = r#"[
  {"type": "response", "method": "initialize", "result": {"userAgent": "x"}},
  {"type": "response", "method": "thread/start", "result": {"thread": {"id": "<thread-1>"}}},
  {"type": "response", "method": "turn/start", "result": {"turn": {"id": "<turn-1>"}}},
  {"type": "notification", "method": "turn/started", "params": {"threadId": "<thread-1>",
   "turn": {"id": "<turn-1>"}}},
  {"type": "notification", "method": "turn/completed", "params": {"threadId": "<thread-1>",
   "turn": {"id": "<turn-1>", "status": "completed"}}},
  {"type": "response", "method": "turn/start", "result": {"turn": {"id": "<turn-2>"}}},
  {"type": "notification", "method": "turn/started", "params": {"threadId": "<thread-1>",
   "turn": {"id": "<turn-2>"}}},
  {"type": "notification", "method": "turn/completed", "params": {"threadId": "<thread-1>",
   "turn": {"id": "<turn-2>", "status": "completed"}}}
]"#;

/// Writes a transcript of one connection with `messages` (a JSON array's items).
fn transcript(dir: &Path, name: &str, messages: &str) -> String {
    let path = dir.join(name);
    let doc = format!(
        r#"{{"codex": "0.171.0", "scenario": "s",
            "connections": [{{"world": 1, "connection": 1, "messages": {messages}}}]}}"#
    );
    std::fs::write(&path, doc).unwrap();
    path.display().to_string()
}

#[test]
fn bad_input_is_refused_naming_the_fix() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root.path();
    let go = |args: &[&str]| {
        let mut cmd = sandbox.command(args);
        support::wait_with_timeout(
            cmd.spawn().unwrap(),
            Duration::from_secs(60),
            "client-check",
        )
    };
    let missing = dir.join("nope.json").display().to_string();
    assert_exit_2_naming(
        &go(&["client-check", "--from", &missing, "--", "true"]),
        "no such source",
    );
    // A transcript in which codex answers nothing: no client request to serve.
    let silent = transcript(
        dir,
        "silent.json",
        r#"[{"type": "notification", "method": "thread/started", "params": {}}]"#,
    );
    assert_exit_2_naming(
        &go(&["client-check", "--from", &silent, "--", "true"]),
        "holds no answer to any client request",
    );
    let plain = transcript(dir, "plain.json", TURN);
    assert_exit_2_naming(
        &go(&["client-check", "--from", &plain, "--", "no-such-client-xyz"]),
        "command not found: no-such-client-xyz",
    );
    assert_exit_2_naming(
        &go(&[
            "client-check",
            "--from",
            &plain,
            "--mutations",
            "shuffle",
            "--",
            "true",
        ]),
        "unknown mutation `shuffle`",
    );
    assert_exit_2_naming(
        &go(&[
            "client-check",
            "--from",
            &plain,
            "--must-survive",
            "reorder",
            "--mutations",
            "none",
            "--",
            "true",
        ]),
        "not among --mutations",
    );
    assert_exit_2_naming(
        &go(&["client-check", "--from", &plain]),
        "no command to check",
    );
    // Nothing that must pass is no check at all.
    assert_exit_2_naming(
        &go(&[
            "client-check",
            "--from",
            &plain,
            "--must-survive",
            "",
            "--",
            "true",
        ]),
        "--must-survive names no mutation",
    );
    // Without `none`, every mutation run must pass: a client that never starts codex
    // passed a check of `extra-field` alone (nothing had to survive).
    let alone = go(&[
        "client-check",
        "--from",
        &plain,
        "--mutations",
        "extra-field",
        "--",
        "true",
    ]);
    assert_eq!(alone.status.code(), Some(1), "{}", text(&alone));
    assert!(text(&alone).contains("1 must survive"), "{}", text(&alone));
    // A client that never starts codex fails its row, saying how the shim is found.
    let output = go(&[
        "client-check",
        "--from",
        &plain,
        "--mutations",
        "none",
        "--",
        "true",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("never started `codex app-server`"),
        "{}",
        text(&output)
    );
    sandbox.assert_clean("client-check's bad input");
}

/// The test client of `tests/client_check/client.py`.
fn client() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/client_check/client.py")
        .display()
        .to_string()
}

#[test]
fn a_client_that_leaves_its_process_group_leaves_nothing_running_and_fails() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root.path();
    let session = transcript(dir, "turn.json", TURN);
    // The strict client hangs when turn/completed never comes; started with setsid by a
    // wrapper that exits 0 at once, it is out of the wrapper's process group.
    let wrapper = format!(
        "setsid python3 {} strict > /dev/null 2>&1 & sleep 1; exit 0",
        client()
    );
    let mut cmd = sandbox.command(&[
        "client-check",
        "--from",
        &session,
        "--mutations",
        "none,drop:turn/completed",
        "--timeout-secs",
        "10",
        "--",
        "sh",
        "-c",
        &wrapper,
    ]);
    let output = support::wait_with_timeout(
        cmd.spawn().unwrap(),
        Duration::from_secs(60),
        "client-check",
    );
    let all = text(&output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "none must survive, and did: {all}"
    );
    assert!(all.contains("drop:turn/completed"), "{all}");
    assert!(all.contains("left COMMAND's process group"), "{all}");
    sandbox.assert_clean("an escaped client");
}

#[test]
fn a_written_transcript_meets_the_strict_client_as_its_code_predicts() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root.path();
    let session = transcript(dir, "turn.json", TURN);
    let report = dir.join("cc");
    let mut cmd = sandbox.command(&[
        "client-check",
        "--from",
        &session,
        "--mutations",
        "none,unknown-notification,overloaded,exit-mid-turn,unknown-enum,extra-field",
        "--report",
        report.to_str().unwrap(),
        "--",
        "python3",
        &client(),
        "strict",
    ]);
    let output = support::wait_with_timeout(
        cmd.spawn().unwrap(),
        Duration::from_secs(60),
        "client-check",
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("client-check.json")).unwrap())
            .unwrap();
    let rows = support::rows(&json);
    let row = |m: &str, r: &str, exit: i64| (m.to_string(), r.to_string(), exit.into());
    assert_eq!(
        rows,
        vec![
            row("none", "passed", 0),
            row("unknown-notification", "failed", 3),
            row("overloaded", "failed", 6),
            row("exit-mid-turn", "passed", 5),
            row("unknown-enum", "passed", 4),
            row("extra-field", "passed", 0),
        ],
        "{}",
        text(&output)
    );
    let junit = std::fs::read_to_string(report.join("junit.xml")).unwrap();
    assert!(junit.contains("tests=\"6\" failures=\"0\""), "{junit}");
    assert!(report.join("runs/01-none/served/1.json").is_file());
    sandbox.assert_clean("client-check of a transcript");
}

/// The headline false green of issue 43: a `--report DIR` used before held the mock's
/// records of that run, which the second check read as its own, so a program that never
/// starts codex (`true`) passed. A directory holding another run's files is refused; with
/// `--replace-report` its files are removed first and `true` fails as it should.
#[test]
fn a_reused_report_directory_never_passes_a_client_that_never_starts_codex() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root.path();
    let session = transcript(dir, "turn.json", TURN);
    let report = dir.join("cc");
    let go = |command: &[&str], extra: &[&str]| {
        let mut args = vec![
            "client-check",
            "--from",
            &session,
            "--mutations",
            "none",
            "--report",
            report.to_str().unwrap(),
        ];
        args.extend(extra);
        args.push("--");
        args.extend(command);
        let mut cmd = sandbox.command(&args);
        support::wait_with_timeout(
            cmd.spawn().unwrap(),
            Duration::from_secs(60),
            "client-check",
        )
    };
    let client = client();
    let first = go(&["python3", &client, "strict"], &[]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    assert!(report.join("runs/01-none/served/1.json").is_file());
    let again = go(&["true"], &[]);
    assert_exit_2_naming(&again, "holds another run's files");
    assert!(
        text(&again).contains("--replace-report"),
        "{}",
        text(&again)
    );
    let replaced = go(&["true"], &["--replace-report"]);
    assert_eq!(replaced.status.code(), Some(1), "{}", text(&replaced));
    assert!(
        text(&replaced).contains("never started `codex app-server`"),
        "{}",
        text(&replaced)
    );
    let json = std::fs::read_to_string(report.join("client-check.json")).unwrap();
    assert!(json.contains("\"passed\": false"), "{json}");
    assert!(!report.join("runs/01-none/served/1.json").exists());
    sandbox.assert_clean("a reused report directory");
}

/// `client-check --report DIR … -- COMMAND` on `session`: the exit status, the output and
/// `client-check.json`.
fn check_json(
    sandbox: &Sandbox,
    session: &str,
    extra: &[&str],
    command: &[&str],
) -> (std::process::Output, serde_json::Value) {
    let report = sandbox
        .root
        .path()
        .join(format!("cc-{}", std::process::id() ^ rand_part()));
    let mut args = vec![
        "client-check",
        "--from",
        session,
        "--report",
        report.to_str().unwrap(),
    ];
    args.extend(extra);
    args.push("--");
    args.extend(command);
    let mut cmd = sandbox.command(&args);
    let output = support::wait_with_timeout(
        cmd.spawn().unwrap(),
        Duration::from_secs(120),
        "client-check",
    );
    let json = std::fs::read_to_string(report.join("client-check.json"))
        .unwrap_or_else(|e| panic!("no client-check.json ({e}): {}", text(&output)));
    (output, serde_json::from_str(&json).unwrap())
}

/// A number that differs from call to call.
fn rand_part() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(1);
    N.fetch_add(1, Ordering::Relaxed) << 20
}

/// Issue 43's false note: every timeout row said its app-server "left the process group",
/// because the mock, killed with COMMAND's group, was looked for before it was gone. The
/// group is now reaped first, and a mock in it is never called escaped.
#[test]
fn a_timeout_row_whose_group_is_reaped_names_no_escape() {
    let sandbox = Sandbox::new();
    let session = transcript(sandbox.root.path(), "turn.json", TURN);
    let client = client();
    let (output, json) = check_json(
        &sandbox,
        &session,
        // The strict client waits for turn/completed without end: the limit ends it. It is
        // long enough for a loaded machine to start the client and its app-server first.
        &["--mutations", "drop:turn/completed", "--timeout-secs", "10"],
        &["python3", &client, "strict"],
    );
    let row = &json["rows"][0];
    assert_eq!(row["timed_out"], true, "{}", text(&output));
    let reasons: Vec<&str> = row["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(
        reasons[0].starts_with("timed out after 10 s"),
        "{reasons:?}"
    );
    assert!(
        !text(&output).contains("process group"),
        "{}",
        text(&output)
    );
    sandbox.assert_clean("a timed-out client");
}

/// The rows of `client-check.json` as (mutation, result).
fn results(json: &serde_json::Value) -> Vec<(String, String)> {
    json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("mutation"), s("result"))
        })
        .collect()
}

/// Issue 43's false green: a client whose text came out doubled under
/// `duplicate:item/agentMessage/delta` passed on its exit status alone. Its output is now
/// held against the `none` run's, and the difference is in the row and fails it; a client
/// that prints the completed item's text passes.
#[test]
fn a_client_that_doubles_deltas_fails_with_the_difference_shown() {
    let sandbox = Sandbox::new();
    let session = transcript(sandbox.root.path(), "streamed.json", STREAMED);
    let client = client();
    let mutations = "none,duplicate:item/agentMessage/delta,reorder";
    let args = ["--mutations", mutations, "--must-survive", "all"];
    let (output, json) = check_json(
        &sandbox,
        &session,
        &args,
        &["python3", &client, "tolerant", "--print-deltas"],
    );
    let all = text(&output);
    assert_eq!(output.status.code(), Some(1), "{all}");
    let row = &json["rows"][1];
    assert_eq!(row["result"], "failed", "{all}");
    assert_eq!(row["exit"], 0, "it exited 0: {all}");
    let reason = row["reasons"][0].as_str().unwrap();
    assert_eq!(
        reason,
        "printed other output than with `none` (line 1: \"final: Hello Hello from the \
         mockfrom the mock\" where `none` printed \"final: Hello from the mock\")"
    );
    assert!(
        all.contains("Hello Hello from the mockfrom the mock"),
        "{all}"
    );
    let (output, json) = check_json(&sandbox, &session, &args, &["python3", &client, "tolerant"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let passed = |m: &str| (m.to_string(), "passed".to_string());
    assert_eq!(
        results(&json),
        vec![
            passed("none"),
            passed("duplicate:item/agentMessage/delta"),
            passed("reorder")
        ]
    );
    sandbox.assert_clean("a client that doubles deltas");
}

/// Issue 43's false note: a client that ends its app-server right after `turn/completed`
/// was said, at random, to have stopped before the session's end (the mock counted the
/// line after sending it). With the whole session asked for, such a note would fail it:
/// every row passes.
#[test]
fn a_client_that_exits_right_after_turn_completed_went_through_the_whole_session() {
    let sandbox = Sandbox::new();
    let session = transcript(sandbox.root.path(), "streamed.json", STREAMED);
    let client = client();
    let (output, json) = check_json(
        &sandbox,
        &session,
        &[
            "--mutations",
            "none,extra-field,slow:1,unknown-notification",
            "--must-survive",
            "all",
            "--whole-session",
        ],
        &["python3", &client, "tolerant", "--kill-at-end"],
    );
    let all = text(&output);
    assert_eq!(output.status.code(), Some(0), "{all}");
    assert!(!all.contains("before the session's end"), "{all}");
    assert_eq!(json["whole_session"], true);
    assert!(results(&json).iter().all(|(_, r)| r == "passed"), "{all}");
    sandbox.assert_clean("a client that kills its app-server at the end");
}

/// A client that runs one of the session's two turns and exits 0 did what `none`
/// expects but not all of it: `stopped early`, a result of its own, which passes unless
/// the whole session is asked for (`--whole-session`), where it fails naming where it
/// stopped.
#[test]
fn a_client_that_stops_after_one_of_two_turns_stopped_early() {
    let sandbox = Sandbox::new();
    let session = transcript(sandbox.root.path(), "two.json", TWO_TURNS);
    let client = client();
    let strict = ["python3", client.as_str(), "strict"];
    let (output, json) = check_json(&sandbox, &session, &["--mutations", "none"], &strict);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(0), "{all}");
    assert_eq!(json["rows"][0]["result"], "stopped_early", "{all}");
    assert_eq!(json["whole_session"], false);
    assert!(all.contains("stopped early"), "{all}");
    assert!(
        all.contains("stopped 3 step(s) before the session's end (next: the answer to turn/start)"),
        "{all}"
    );
    assert!(all.contains("1 stopped early"), "{all}");
    let whole = ["--mutations", "none", "--whole-session"];
    let (output, json) = check_json(&sandbox, &session, &whole, &strict);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(1), "{all}");
    assert_eq!(json["rows"][0]["result"], "failed", "{all}");
    assert!(
        json["rows"][0]["reasons"][0]
            .as_str()
            .unwrap()
            .ends_with("(next: the answer to turn/start) (--whole-session)"),
        "{all}"
    );
    // A session of two app-servers, of which the client starts one.
    let two = sandbox.root.path().join("two-servers.json");
    let doc = format!(
        r#"{{"codex": "0.171.0", "scenario": "s", "connections": [
            {{"world": 1, "connection": 1, "messages": {TURN}}},
            {{"world": 1, "connection": 2, "messages": {TURN}}}]}}"#
    );
    std::fs::write(&two, doc).unwrap();
    let (output, json) = check_json(
        &sandbox,
        two.to_str().unwrap(),
        &["--mutations", "none"],
        &strict,
    );
    assert_eq!(
        json["rows"][0]["result"],
        "stopped_early",
        "{}",
        text(&output)
    );
    assert!(
        text(&output).contains("started 1 of the session's 2 app-server(s)"),
        "{}",
        text(&output)
    );
    sandbox.assert_clean("a client that stops early");
}

/// `--mutations all` runs every mutation with its default argument, as the default list.
#[test]
fn mutations_all_is_the_whole_list() {
    let sandbox = Sandbox::new();
    let session = transcript(sandbox.root.path(), "streamed.json", STREAMED);
    let client = client();
    let (output, json) = check_json(
        &sandbox,
        &session,
        &["--mutations", "all", "--timeout-secs", "3"],
        &["python3", &client, "tolerant"],
    );
    let names: Vec<String> = results(&json).into_iter().map(|(m, _)| m).collect();
    assert_eq!(
        names,
        [
            "none",
            "drop:turn/completed",
            "duplicate:item/agentMessage/delta",
            "unknown-notification",
            "unknown-enum",
            "extra-field",
            "reorder",
            "overloaded",
            "exit-mid-turn",
            "slow"
        ],
        "{}",
        text(&output)
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    sandbox.assert_clean("--mutations all");
}

/// client-check killed with SIGKILL while COMMAND (a `sh -c` whose own child holds the
/// session open) runs: COMMAND dies with it (the parent-death signal), the guard kills the
/// rest of its process group, and no directory of the check is left in `TMPDIR`. A client
/// that prints a secret of its environment writes it into no kept output.
#[test]
fn a_killed_client_check_leaves_no_process_and_no_directory() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root.path();
    let from = transcript(dir, "turn.json", TURN);
    let mut cmd = sandbox.command(&[
        "client-check",
        "--from",
        &from,
        "--mutations",
        "none",
        "--",
        "sh",
        "-c",
        "sleep 600 & wait",
    ]);
    let mut child = cmd.spawn().unwrap();
    let started = support::wait_until(Duration::from_secs(30), || {
        let running = sandbox.processes();
        running.iter().filter(|p| p.contains("sleep 600")).count() == 1
            || child.try_wait().is_ok_and(|ended| ended.is_some())
    });
    if let Ok(Some(status)) = child.try_wait() {
        let output = child.wait_with_output().unwrap();
        panic!(
            "client-check ended ({status}) before it was killed:\n{}",
            text(&output)
        );
    }
    assert!(
        started,
        "the client did not start: {:?}",
        sandbox.processes()
    );
    support::signal(child.id(), rustix::process::Signal::KILL);
    child.wait().unwrap();
    let left = sandbox.wait_for_no_processes(Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "processes left by the killed client-check: {left:?}"
    );
    // The guard removes the killed command's directory at once; on a loaded machine it may
    // not have yet: the next command that makes one removes it then, and leaves nothing.
    let (o, _) = sandbox.run(&["client-check", "--from", "/nonexistent.json", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        Sandbox::leftovers(&sandbox.tmp).is_empty(),
        "left in TMPDIR after the next command: {:?}",
        Sandbox::leftovers(&sandbox.tmp)
    );
    // A client that prints its key: the kept output does not hold it.
    let report = dir.join("report");
    let mut cmd = sandbox.command(&[
        "client-check",
        "--from",
        &from,
        "--mutations",
        "none",
        "--report",
        report.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "echo my key is $MY_SERVICE_TOKEN; echo $MY_SERVICE_TOKEN >&2",
    ]);
    cmd.env("MY_SERVICE_TOKEN", "tok-PLANTED-0123456789");
    let o = support::wait_with_timeout(cmd.spawn().unwrap(), Duration::from_secs(60), "check");
    assert!(!text(&o).contains("PLANTED"), "{}", text(&o));
    for file in Sandbox::leftovers(&report) {
        let path = report.join(&file);
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains("PLANTED"),
                "{file} holds the planted token"
            );
        }
    }
}

/// Two runs of `codex exec` on one thread, the second a resume, as a report holds them
/// (normalised): the usage of the second is the thread's running total, as codex reports it.
const EXEC_TURNS: &str = r#"{"codex": "0.171.0", "scenario": "exec_two_turns", "connections": [
  {"world": 1, "connection": 1, "messages": [
    {"type": "event", "method": "thread.started", "params": {"type": "thread.started", "thread_id": "<thread-1>"}},
    {"type": "event", "method": "turn.started", "params": {"type": "turn.started"}},
    {"type": "event", "method": "item.completed", "params": {"type": "item.completed",
     "item": {"id": "item_0", "type": "agent_message", "text": "blue"}}},
    {"type": "event", "method": "turn.completed", "params": {"type": "turn.completed",
     "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 3, "reasoning_output_tokens": 0}}}]},
  {"world": 1, "connection": 2, "messages": [
    {"type": "event", "method": "thread.started", "params": {"type": "thread.started", "thread_id": "<thread-1>"}},
    {"type": "event", "method": "turn.started", "params": {"type": "turn.started"}},
    {"type": "event", "method": "item.completed", "params": {"type": "item.completed",
     "item": {"id": "item_0", "type": "agent_message", "text": "still blue"}}},
    {"type": "event", "method": "turn.completed", "params": {"type": "turn.completed",
     "usage": {"input_tokens": 30, "cached_input_tokens": 0, "output_tokens": 7, "reasoning_output_tokens": 0}}}]}
]}"#;

/// The exec test client (`tests/exec/client.py`, shaped like OpenAI's TypeScript SDK)
/// with `flags`, running two turns.
fn exec_client(flags: &[&str]) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/exec/client.py");
    let mut out = vec!["python3".to_string(), path.display().to_string()];
    out.extend(flags.iter().map(|f| f.to_string()));
    out.extend(["pick a colour".to_string(), "and again".to_string()]);
    out
}

/// An exec transcript is served to a client of `codex exec`: each process it starts plays
/// the next run, its `resume` of the thread it was given matches, and every exec mutation
/// gets the result the client's code predicts. A resume of a thread the session never
/// served fails the run, and an app-server client of an exec session is told what it ran.
#[test]
fn a_written_exec_transcript_meets_the_exec_client_as_its_code_predicts() {
    let sandbox = Sandbox::new();
    let session = sandbox.root.path().join("exec.json");
    std::fs::write(&session, EXEC_TURNS).unwrap();
    let session = session.display().to_string();
    let exec = exec_client(&["--print-usage"]);
    let command: Vec<&str> = exec.iter().map(String::as_str).collect();
    let (output, json) = check_json(&sandbox, &session, &["--timeout-secs", "10"], &command);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(0), "{all}");
    let rows = support::rows(&json);
    let row = |m: &str, r: &str, exit: i64| (m.to_string(), r.to_string(), exit.into());
    // The default (`all`) for an exec session is the exec list. This client reads only
    // `agent_message` items: the older names leave it without a message, exit 0.
    assert_eq!(
        rows,
        vec![
            row("none", "passed", 0),
            row("no-terminal-event", "passed", 1),
            row("turn-failed", "passed", 1),
            row("unknown-event", "passed", 0),
            row("unknown-item", "passed", 0),
            row("renamed-field", "failed", 0),
            row("duplicate-items", "passed", 0),
            row("other-usage", "passed", 0),
            row("exit-mid-stream", "passed", 1),
            row("extra-field", "passed", 0),
            row("slow", "passed", 0),
        ],
        "{all}"
    );
    let by_name = |m: &str| {
        json["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["mutation"] == m)
            .unwrap()
            .clone()
    };
    assert_eq!(by_name("none")["exec_runs"], 2, "{all}");
    assert_eq!(by_name("none")["expect"], "survive");
    assert_eq!(by_name("turn-failed")["expect"], "fail");
    assert_eq!(
        by_name("renamed-field")["reasons"][0],
        "printed other output than with `none` (line 1: \"turn 1: \" where `none` printed \
         \"turn 1: blue\")"
    );
    // Per turn, the second run reports 20 + 4 tokens where the running total was 30 + 7:
    // a difference worth a note, not a failure.
    let usage = by_name("other-usage")["notes"].to_string();
    assert!(
        usage.contains("\\\"turn 2 tokens: 24\\\" where `none` printed \\\"turn 2 tokens: 37\\\""),
        "{usage}"
    );
    assert!(usage.contains("usage served per turn"), "{usage}");
    // A client that takes a turn without an outcome for success fails `no-terminal-event`.
    let careless = "\"$CODEX_PARITY_CODEX\" exec --json - </dev/null | tail -1";
    let (output, json) = check_json(
        &sandbox,
        &session,
        &["--mutations", "none,no-terminal-event"],
        &["sh", "-c", careless],
    );
    assert_eq!(json["rows"][1]["result"], "failed", "{}", text(&output));
    assert_eq!(
        json["rows"][1]["reasons"][0],
        "exited 0: it took a run whose stream ended without turn.completed or turn.failed for \
         success"
    );
    // A resume of a thread the session never served.
    let stranger = "echo hi | \"$CODEX_PARITY_CODEX\" exec --json resume \
                    00000000-0000-4000-8000-00000000dead > /dev/null";
    let (output, json) = check_json(
        &sandbox,
        &session,
        &["--mutations", "none"],
        &["sh", "-c", stranger],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let reason = json["rows"][0]["reasons"][0].as_str().unwrap();
    assert!(
        reason.starts_with(
            "exec 1: resume 00000000-0000-4000-8000-00000000dead: a thread the session never \
             served"
        ),
        "{reason}"
    );
    // An app-server client of an exec session: what it ran is named.
    let (output, json) = check_json(
        &sandbox,
        &session,
        &["--mutations", "none"],
        &["python3", &client(), "strict"],
    );
    let all = text(&output);
    assert_eq!(output.status.code(), Some(1), "{all}");
    assert!(
        json["rows"][0]["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("never ran `codex exec`"),
        "{all}"
    );
    assert!(
        all.contains("ran what the session does not serve: `codex app-server`")
            && all.contains("the session holds codex exec runs only"),
        "{all}"
    );
    sandbox.assert_clean("client-check of an exec transcript");
}

/// The Rust example `record_client`, which connects to `$CODEX_PARITY_LISTEN` when it is
/// set (built by `cargo test`).
fn listener_client(mode: &str) -> Vec<String> {
    support::record_client(mode)
}

/// `--listen`: the mock listens on a WebSocket and the client, finding the URL in
/// `$CODEX_PARITY_LISTEN`, is served over it, every mutation included (codex exiting mid-turn
/// takes the listener with it). A client that never connects is told where it should have.
/// A client-check killed outright leaves no listener behind.
#[test]
fn a_client_of_a_listener_is_served_over_websocket() {
    let sandbox = Sandbox::new();
    let session = transcript(sandbox.root.path(), "turn.json", TURN);
    let client = listener_client("plain");
    let command: Vec<&str> = client.iter().map(String::as_str).collect();
    let listen = [
        "--listen",
        "ws://127.0.0.1:0",
        "--mutations",
        "none,unknown-notification,extra-field,reorder,exit-mid-turn,unknown-enum,slow:20",
    ];
    let (output, json) = check_json(&sandbox, &session, &listen, &command);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(0), "{all}");
    assert_eq!(
        results(&json),
        [
            ("none", "passed"),
            ("unknown-notification", "passed"),
            ("extra-field", "passed"),
            ("reorder", "not_applicable"),
            ("exit-mid-turn", "passed"),
            ("unknown-enum", "passed"),
            ("slow:20", "passed"),
        ]
        .map(|(m, r)| (m.to_string(), r.to_string())),
        "{all}"
    );
    assert_eq!(json["listen"], "ws://127.0.0.1:0");
    assert_eq!(json["rows"][0]["launches"], 1);
    assert_eq!(
        json["rows"][4]["exit"], 1,
        "codex closed the WebSocket: {all}"
    );
    assert!(
        all.contains("served on a WebSocket listener (ws://127.0.0.1:0)"),
        "{all}"
    );
    let never = check_json(
        &sandbox,
        &session,
        &["--listen", "ws://127.0.0.1:0", "--mutations", "none"],
        &["true"],
    );
    let reason = never.1["rows"][0]["reasons"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.starts_with("never connected to the mock app-server's listener at ws://127.0.0.1:")
            && reason.ends_with("(in $CODEX_PARITY_LISTEN)"),
        "{reason}"
    );
    let mut cmd = sandbox.command(&[
        "client-check",
        "--from",
        &session,
        "--listen",
        "unix:///tmp/x.sock",
        "--",
        "true",
    ]);
    let bad = support::wait_with_timeout(cmd.spawn().unwrap(), Duration::from_secs(60), "bad");
    assert_exit_2_naming(&bad, "expected ws://HOST:PORT");
    sandbox.assert_clean("a listener's client");
    // Killed outright while its client runs: the listener dies with it. (That its
    // directory goes too is `a_killed_client_check_leaves_no_process_and_no_directory`'s.)
    let mut cmd = sandbox.command(&[
        "client-check",
        "--from",
        &session,
        "--listen",
        "ws://127.0.0.1:0",
        "--mutations",
        "none",
        "--",
        "sh",
        "-c",
        "sleep 600 & wait",
    ]);
    let mut child = cmd.spawn().unwrap();
    sandbox.wait_for_running("sleep 600", 1, Duration::from_secs(30));
    assert!(
        sandbox.processes().iter().any(|p| p.contains("--listen")),
        "the listener runs: {:?}",
        sandbox.processes()
    );
    support::signal(child.id(), rustix::process::Signal::KILL);
    child.wait().unwrap();
    let left = sandbox.wait_for_no_processes(Duration::from_secs(10));
    assert!(left.is_empty(), "left by the killed client-check: {left:?}");
}
