//! `codex-parity client-check` with stand-in integrators of our own
//! (`tests/client_check/client.py`: a strict client that rejects what it does not know and
//! a tolerant one; `tests/exec/client.py`, a client of `codex exec` shaped like OpenAI's
//! TypeScript SDK, in three modes; the example `record_client` on an app-server listener),
//! served sessions from each source: the transcripts of a real run of the default catalogue
//! on the comparison set, sessions recorded with `record --keep` (their relay logs, the
//! client's answers checked) and the scenario files `record` wrote, run on codex for them.
//! Each client gets the table its code predicts, and a strict exec client recorded on
//! 0.131.0 is caught breaking on 0.140.0's stream; bad input is refused. Every transcript
//! of the whole catalogue served to a client is a long test, run with `--ignored`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codex_parity::codex::binaries::{self, CodexBinary};
use codex_parity::codex::install::{CACHE_ENV, Cache, StderrProgress};
use codex_parity::codex::versions;
use codex_parity::harness::sidecar::{Sidecar, SidecarLauncher};
use codex_parity_sidecar::mock::script::Scripted;
use codex_parity_sidecar::wire::{bodies, events};
use serde_json::Value;
use support::{CODEX_PARITY, Sandbox, text};

/// The test client in `mode` (strict or tolerant).
fn client(mode: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/client_check/client.py");
    vec!["python3".into(), path.display().to_string(), mode.into()]
}

/// `codex-parity ARGS -- COMMAND` in `sandbox`, with the real codex cache, to its end.
fn run(sandbox: &Sandbox, args: &[String], command: &[String]) -> Output {
    let mut all: Vec<String> = args.to_vec();
    all.push("--".into());
    all.extend(command.iter().cloned());
    run_all(sandbox, &all)
}

/// `codex-parity ARGS` in `sandbox`, with the real codex cache, to its end.
fn run_all(sandbox: &Sandbox, args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = sandbox.command(&args);
    cmd.env(CACHE_ENV, Cache::from_env().unwrap().root());
    support::wait_with_timeout(
        cmd.spawn().unwrap(),
        Duration::from_secs(300),
        "codex-parity",
    )
}

/// `client-check --from SOURCE --report DIR …` of `mode`'s client; its output and the
/// result of each mutation in `client-check.json` as (mutation, result, exit).
fn check(
    sandbox: &Sandbox,
    source: &Path,
    mode: &str,
    extra: &[&str],
) -> (Output, Vec<(String, String, Value)>, Value) {
    check_command(sandbox, source, &client(mode), extra)
}

/// [`check`] of any client `command`.
fn check_command(
    sandbox: &Sandbox,
    source: &Path,
    command: &[String],
    extra: &[&str],
) -> (Output, Vec<(String, String, Value)>, Value) {
    let report = sandbox.root.path().join(format!("cc-{}", rand_suffix()));
    let mut args: Vec<String> = vec![
        "client-check".into(),
        "--from".into(),
        source.display().to_string(),
        "--report".into(),
        report.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let output = run(sandbox, &args, command);
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(report.join("client-check.json"))
            .unwrap_or_else(|e| panic!("no client-check.json ({e}): {}", text(&output))),
    )
    .unwrap();
    let rows = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["mutation"].as_str().unwrap().to_string(),
                r["result"].as_str().unwrap().to_string(),
                r["exit"].clone(),
            )
        })
        .collect();
    (output, rows, json)
}

fn rand_suffix() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::Relaxed).to_string()
}

/// Rows of `mutations`, each passed with exit status 0.
fn passed(mutations: &[&str]) -> Vec<(String, String, Value)> {
    mutations
        .iter()
        .map(|m| (m.to_string(), "passed".to_string(), Value::from(0)))
        .collect()
}

/// What each client's code predicts for the default mutations (plus `as:`): strict fails
/// on an unknown method (3), an error answer (6), and hangs without `turn/completed`
/// (killed by the time limit); tolerant survives all and ends (7) when `turn/completed`
/// never comes. Both end on an unknown status (strict 4, tolerant 0) and when codex exits
/// mid-turn (5).
fn expected(mode: &str, other: &str) -> Vec<(String, String, Value)> {
    let strict = mode == "strict";
    let row = |m: &str, result: &str, exit: Value| (m.to_string(), result.to_string(), exit);
    let pass = |m: &str| row(m, "passed", Value::from(0));
    vec![
        pass("none"),
        if strict {
            row("drop:turn/completed", "failed", Value::Null)
        } else {
            row("drop:turn/completed", "passed", Value::from(7))
        },
        pass("duplicate:item/agentMessage/delta"),
        if strict {
            row("unknown-notification", "failed", Value::from(3))
        } else {
            pass("unknown-notification")
        },
        // No exit status is right for a status nobody knows: ending is what counts.
        row(
            "unknown-enum",
            "passed",
            Value::from(if strict { 4 } else { 0 }),
        ),
        pass("extra-field"),
        pass("reorder"),
        if strict {
            row("overloaded", "failed", Value::from(6))
        } else {
            pass("overloaded")
        },
        row("exit-mid-turn", "passed", Value::from(5)),
        pass("slow:20"),
        pass(&format!("as:{other}")),
    ]
}

/// The default mutations with a short `slow`, and `as:VERSION`.
fn mutations(other: &str) -> String {
    format!(
        "none,drop:turn/completed,duplicate:item/agentMessage/delta,unknown-notification,\
         unknown-enum,extra-field,reorder,overloaded,exit-mid-turn,slow:20,as:{other}"
    )
}

#[test]
fn the_catalogues_transcripts_meet_a_strict_and_a_tolerant_client() {
    let v = versions::load().unwrap();
    let sandbox = Sandbox::with_real_baselines();
    let report = sandbox.root.path().join("report");
    let mut args: Vec<String> = vec!["run".into(), "--filter".into(), "A".into()];
    for version in &v.compare {
        args.extend(["--codex-version".into(), version.clone()]);
    }
    args.extend(["--report".into(), report.display().to_string()]);
    let output = run_all(&sandbox, &args);
    assert!(output.status.success(), "{}", text(&output));
    let other = v.compare.iter().find(|c| **c != v.pinned).unwrap().clone();
    let streaming = report.join(format!("transcripts/{}/streaming_deltas.json", v.pinned));
    for mode in ["strict", "tolerant"] {
        let (output, rows, json) = check(
            &sandbox,
            &streaming,
            mode,
            &[
                "--mutations",
                &mutations(&other),
                "--timeout-secs",
                "8",
                "--must-survive",
                "all",
            ],
        );
        println!("{}", text(&output));
        assert_eq!(rows, expected(mode, &other), "{mode}: {}", text(&output));
        // --must-survive all: strict fails the check, tolerant passes it.
        let code = if mode == "strict" { 1 } else { 0 };
        assert_eq!(output.status.code(), Some(code), "{}", text(&output));
        assert_eq!(json["passed"], mode == "tolerant");
        assert_eq!(json["codex"], v.pinned.as_str());
        assert_eq!(json["whole_session"], false, "a transcript is no recording");
        let table = String::from_utf8_lossy(&output.stdout);
        assert!(
            table.contains("mutation") && table.contains("exit-mid-turn"),
            "{table}"
        );
    }
    // A server request on the way: the dynamic tool's call is answered by both clients.
    let tool = report.join(format!(
        "transcripts/{}/dynamic_tool_round_trip.json",
        v.pinned
    ));
    for mode in ["strict", "tolerant"] {
        let (output, rows, _) = check(&sandbox, &tool, mode, &["--mutations", "none"]);
        assert_eq!(rows, passed(&["none"]), "{}", text(&output));
        assert_eq!(output.status.code(), Some(0));
    }
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "client-check left processes: {left:?}");
}

/// Long: the whole catalogue's run on the pinned version, then every transcript of it served
/// to a client. CI runs it in a step of its own (`cargo test --features codex-parity --test
/// client_check -- --ignored`, see README).
#[test]
#[ignore = "long (about a minute): CI runs it with --ignored"]
fn every_transcript_of_the_catalogue_is_served_to_a_client() {
    let v = versions::load().unwrap();
    let sandbox = Sandbox::with_real_baselines();
    // Every transcript of the whole catalogue on the pinned version is served unmutated:
    // the app-server ones to the tolerant client, the exec streams (group X) to the exec
    // client. Each ends, none hangs (a failed turn exits 1, which the table says).
    let whole = sandbox.root.path().join("whole");
    let args = ["run".into(), "--report".into(), whole.display().to_string()];
    let output = run_all(&sandbox, &args);
    assert!(output.status.success(), "{}", text(&output));
    let dir = whole.join(format!("transcripts/{}", v.pinned));
    let entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    // Each check mostly waits on its client and its mock: four at once.
    let next = AtomicUsize::new(0);
    let (seen, execs) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                while let Some(path) = entries.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let doc: Value =
                        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
                    let exec = doc["connections"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .flat_map(|c| c["messages"].as_array().unwrap())
                        .all(|m| m["type"] == "event");
                    let command = if exec {
                        execs.fetch_add(1, Ordering::Relaxed);
                        exec_client(&[])
                    } else {
                        seen.fetch_add(1, Ordering::Relaxed);
                        client("tolerant")
                    };
                    let (output, rows, _) = check_command(
                        &sandbox,
                        path,
                        &command,
                        &["--mutations", "none", "--timeout-secs", "20"],
                    );
                    assert_eq!(rows.len(), 1, "{}", text(&output));
                    assert!(rows[0].2.is_i64(), "{}: {}", path.display(), text(&output));
                }
            });
        }
    });
    let (seen, execs) = (seen.into_inner(), execs.into_inner());
    println!("served {seen} app-server transcripts and {execs} exec streams of the catalogue");
    assert!(
        seen >= 100 && execs >= 10,
        "only {seen} transcripts, {execs} exec streams"
    );
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "client-check left processes: {left:?}");
}

/// The upstream of a recording: a sidecar answering `script`.
async fn upstream(script: Vec<Scripted>) -> Sidecar {
    let sidecar = Sidecar::start(&SidecarLauncher::codex_parity(CODEX_PARITY))
        .await
        .unwrap();
    sidecar.enqueue(&script).await.unwrap();
    sidecar
}

/// `record --keep` of the record tests' Python client in `mode`: the file and the kept
/// directory.
fn record(
    sandbox: &Sandbox,
    codex: &Path,
    upstream: &str,
    mode: &str,
    extra: &[&str],
) -> (PathBuf, PathBuf) {
    let recorder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/record/client.py");
    let client = [
        "python3".into(),
        recorder.display().to_string(),
        mode.into(),
    ];
    record_client(sandbox, codex, upstream, mode, extra, &client)
}

/// `record --keep` of `client` into `NAME.toml`: the file and the kept directory.
fn record_client(
    sandbox: &Sandbox,
    codex: &Path,
    upstream: &str,
    name: &str,
    extra: &[&str],
    client: &[String],
) -> (PathBuf, PathBuf) {
    let out = sandbox.root.path().join(format!("{name}.toml"));
    let extra: Vec<&str> = extra.iter().copied().chain(["--keep"]).collect();
    let output = run_all(
        sandbox,
        &support::record_args(codex, upstream, &out, &extra, client),
    );
    assert!(output.status.success(), "record: {}", text(&output));
    let all = text(&output);
    let kept = all
        .lines()
        .find_map(|l| {
            l.strip_prefix("codex-parity: kept the recording's directory (redacted, private): ")
        })
        .unwrap_or_else(|| panic!("no kept directory in {all}"));
    (out, PathBuf::from(kept.trim()))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_session_and_its_scenario_file_are_served_with_the_answers_checked() {
    let v = versions::load().unwrap();
    let pinned = Cache::from_env().unwrap().binary_path(&v.pinned);
    let sandbox = Sandbox::with_real_baselines();
    // An approval: codex asks the client, which accepts, as ours does.
    let approval = upstream(vec![
        Scripted::sse(bodies::one_item_reply(
            "r1",
            events::function_call("call_ap", "exec_command", r#"{"cmd":"touch approved.txt"}"#),
        )),
        Scripted::sse(bodies::assistant_reply("r2", "ran it")),
    ])
    .await;
    let extra = [
        "--approval-policy",
        "on-request",
        "--sandbox",
        "workspace-write",
    ];
    let (file, kept) = record(&sandbox, &pinned, approval.base_url(), "approval", &extra);
    let _ = approval.shutdown().await;
    for mode in ["strict", "tolerant"] {
        let (output, rows, json) =
            check(&sandbox, &kept, mode, &["--mutations", "none,extra-field"]);
        assert_eq!(rows, passed(&["none", "extra-field"]), "{}", text(&output));
        assert!(
            json["source"]
                .as_str()
                .unwrap()
                .starts_with("recorded session")
        );
        assert_eq!(json["codex"], v.pinned.as_str());
        // A recording of the user's own client: the whole session is asked for.
        assert_eq!(json["whole_session"], true);
    }
    // The recorded session with its scenario file: run on codex for it, and on another
    // version for as:VERSION; a client that declines where the recording accepted fails.
    let other = v.compare.iter().find(|c| **c != v.pinned).unwrap().clone();
    let mutations = format!("none,as:{other}");
    let args = [
        "--mutations",
        &mutations,
        "--codex-bin",
        pinned.to_str().unwrap(),
    ];
    let (output, rows, json) = check(&sandbox, &file, "strict", &args);
    let as_other = format!("as:{other}");
    assert_eq!(rows, passed(&["none", &as_other]), "{}", text(&output));
    assert!(
        json["source"]
            .as_str()
            .unwrap()
            .contains(&format!("on codex {}", v.pinned))
    );
    assert_eq!(json["whole_session"], true, "the file `record` wrote");
    // A client that refuses the approval: its answer differs from the recorded one, and
    // from the scenario file's reply step.
    let refuse = sandbox.root.path().join("refuse.py");
    let original = std::fs::read_to_string(&client("strict")[1]).unwrap();
    std::fs::write(&refuse, original.replace("\"accept\"", "\"decline\"")).unwrap();
    let refusing = [
        "python3".to_string(),
        refuse.display().to_string(),
        "strict".into(),
    ];
    let pinned_bin = pinned.display().to_string();
    for (source, extra) in [(&kept, vec![]), (&file, vec!["--codex-bin", &pinned_bin])] {
        let mut args: Vec<String> = ["client-check", "--from", source.to_str().unwrap()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(
            ["--mutations", "none"]
                .iter()
                .chain(&extra)
                .map(|s| s.to_string()),
        );
        let output = run(&sandbox, &args, &refusing);
        let all = text(&output);
        assert_eq!(output.status.code(), Some(1), "{all}");
        assert!(all.contains("requestApproval answered with"), "{all}");
        assert!(all.contains("the recording has"), "{all}");
    }
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "client-check left processes: {left:?}");
}

/// A scenario file that fails on the codex it runs on still gives a session to serve, but
/// one of a failed run: every row says so, not only a warning on stderr.
#[test]
fn a_scenario_file_that_failed_on_codex_is_said_on_every_row() {
    let sandbox = Sandbox::with_real_baselines();
    let file = sandbox.root.path().join("wrong.toml");
    std::fs::write(
        &file,
        r#"name = "wrong_expectation"
id = "W-1"
summary = "expects an interrupted turn that completes"

[[response]]
events = [
  { type = "response.created", response = { id = "r1" } },
  { type = "response.output_item.done", item = { type = "message", role = "assistant", id = "m1", content = [{ type = "output_text", text = "hi" }] } },
  { type = "response.completed", response = { id = "r1" } },
]

[[step]]
do = "turn"
input = "hello"
expect = { status = "interrupted" }
"#,
    )
    .unwrap();
    let (output, rows, json) = check(
        &sandbox,
        &file,
        "tolerant",
        &["--mutations", "none,extra-field"],
    );
    assert_eq!(rows, passed(&["none", "extra-field"]), "{}", text(&output));
    for row in json["rows"].as_array().unwrap() {
        let notes = row["notes"].to_string();
        assert!(
            notes.contains("that failed on codex"),
            "{}: {notes}",
            row["mutation"]
        );
    }
    sandbox.assert_clean("a failed scenario file as a source");
}

/// Codex `version`, installed into the cache when it is not there yet.
async fn install(version: &str) -> CodexBinary {
    binaries::resolve_spec(version, &Cache::from_env().unwrap(), &StderrProgress::new())
        .await
        .unwrap()
}

/// The exec test client (`tests/exec/client.py`) with `flags`, running two turns.
fn exec_client(flags: &[&str]) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/exec/client.py");
    let mut out = vec!["python3".to_string(), path.display().to_string()];
    out.extend(flags.iter().map(|f| f.to_string()));
    out.extend(["pick a colour".to_string(), "and again".to_string()]);
    out
}

/// A client of `codex exec` shaped like OpenAI's TypeScript SDK (one process per turn, the
/// prompt on stdin, the second turn a `resume` of the first's thread), recorded on codex
/// 0.131.0, meets every exec mutation in three modes, each with the table its code
/// predicts. Then the same recording, as the scenario file `record` wrote, is served as
/// 0.140.0 prints it: the strict client, which knows the item types of 0.131.0 only, is
/// caught on the `error` item 0.140.0 prints before `turn.started` (docs/exec.md), where
/// the SDK-like one goes on.
#[tokio::test(flavor = "multi_thread")]
async fn an_exec_client_is_checked_and_a_strict_one_caught_on_0_140_0() {
    let old = install("0.131.0").await;
    install("0.140.0").await;
    let sandbox = Sandbox::with_real_baselines();
    let usage = |input, output| events::Usage {
        input,
        output,
        total: input + output,
        ..events::Usage::default()
    };
    let model = upstream(vec![
        Scripted::sse(bodies::costed_reply("r1", "m1", "blue", usage(10, 3))),
        Scripted::sse(bodies::costed_reply("r2", "m2", "still blue", usage(20, 4))),
    ])
    .await;
    let (file, kept) = record_client(
        &sandbox,
        &old.path,
        model.base_url(),
        "exec_turns",
        &[],
        &exec_client(&[]),
    );
    let _ = model.shutdown().await;
    let row =
        |m: &str, result: &str, exit: i64| (m.to_string(), result.to_string(), Value::from(exit));
    // What each mode's code predicts: every mode fails without a terminal event, on a
    // failed turn and when codex exits mid-stream (exit 1, as expected); the SDK-like
    // client reads only `agent_message` items and prints no message for the older names;
    // the strict one exits on what 0.131.0 does not print, and fails cleanly on the older
    // names; the tolerant one reads both.
    let expected = |mode: &str| {
        let strict = mode == "strict";
        let pass = |m: &str| row(m, "passed", 0);
        let strict_fails = |m: &str| if strict { row(m, "failed", 1) } else { pass(m) };
        vec![
            pass("none"),
            row("no-terminal-event", "passed", 1),
            row("turn-failed", "passed", 1),
            strict_fails("unknown-event"),
            strict_fails("unknown-item"),
            match mode {
                "sdk" => row("renamed-field", "failed", 0),
                "strict" => row("renamed-field", "passed", 1),
                _ => pass("renamed-field"),
            },
            pass("duplicate-items"),
            pass("other-usage"),
            row("exit-mid-stream", "passed", 1),
            strict_fails("extra-field"),
            pass("slow:20"),
        ]
    };
    let mutations = "none,no-terminal-event,turn-failed,unknown-event,unknown-item,\
                     renamed-field,duplicate-items,other-usage,exit-mid-stream,extra-field,\
                     slow:20";
    for (mode, flags) in [
        ("sdk", vec![]),
        ("strict", vec!["--strict"]),
        ("tolerant", vec!["--tolerant"]),
    ] {
        let (output, rows, json) = check_command(
            &sandbox,
            &kept,
            &exec_client(&flags),
            &["--mutations", mutations, "--timeout-secs", "15"],
        );
        assert_eq!(rows, expected(mode), "{mode}: {}", text(&output));
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        assert_eq!(json["codex"], "0.131.0");
        assert_eq!(json["whole_session"], true, "a recording of the client");
        assert_eq!(json["rows"][0]["exec_runs"], 2, "{}", text(&output));
        // codex 0.131.0 reports a resumed thread's usage as its running total.
        assert!(
            json["rows"][7]["notes"]
                .to_string()
                .contains("usage served per turn"),
            "{}",
            text(&output)
        );
    }
    // The file `record` wrote, run on 0.131.0 for `none` and on 0.140.0 for `as:0.140.0`.
    let old_bin = old.path.display().to_string();
    let args = ["--mutations", "none,as:0.140.0", "--codex-bin", &old_bin];
    let (output, rows, json) = check_command(&sandbox, &file, &exec_client(&["--strict"]), &args);
    assert_eq!(
        rows,
        vec![row("none", "passed", 0), row("as:0.140.0", "failed", 1)],
        "{}",
        text(&output)
    );
    let reason = json["rows"][1]["reasons"][0].as_str().unwrap();
    assert!(
        reason.starts_with("exited with status 1: exec-client: unknown item type 'error'"),
        "{reason}"
    );
    let (output, rows, _) = check_command(&sandbox, &file, &exec_client(&[]), &args);
    assert_eq!(
        rows,
        vec![row("none", "passed", 0), row("as:0.140.0", "passed", 0)],
        "{}",
        text(&output)
    );
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "client-check left processes: {left:?}");
}

/// The example `record_client` (built by `cargo test`) in `mode`; it connects to
/// `$CODEX_PARITY_LISTEN` when that is set.
fn listener_client(mode: &str) -> Vec<String> {
    support::record_client(mode)
}

/// A client of the app-server's WebSocket listener, recorded with `record --listen`, is
/// served over a listener of the mock (chosen by itself: the recording says how it was
/// made), with every app-server mutation, and gets the table its code predicts: it waits
/// 30 s for a `turn/completed` that never comes, treats an error answer as fatal, and
/// takes an unknown turn status for a turn that ended.
#[tokio::test(flavor = "multi_thread")]
async fn a_listener_client_is_recorded_and_checked_over_websocket() {
    let v = versions::load().unwrap();
    let pinned = install(&v.pinned).await;
    let sandbox = Sandbox::with_real_baselines();
    let model = upstream(vec![
        Scripted::sse(bodies::function_call_reply(
            "r1",
            "call_1",
            "lookup",
            r#"{"key":"x"}"#,
        )),
        Scripted::sse(bodies::assistant_reply("r2", "x is 42")),
    ])
    .await;
    let (file, kept) = record_client(
        &sandbox,
        &pinned.path,
        model.base_url(),
        "listener_tool",
        &["--listen", "ws://127.0.0.1:0"],
        &listener_client("tool"),
    );
    let _ = model.shutdown().await;
    let mutations = "none,drop:turn/completed,duplicate:item/completed,unknown-notification,\
                     unknown-enum,extra-field,reorder,overloaded,exit-mid-turn,slow:20";
    let (output, rows, json) = check_command(
        &sandbox,
        &kept,
        &listener_client("tool"),
        &["--mutations", mutations, "--timeout-secs", "8"],
    );
    let all = text(&output);
    let row = |m: &str, result: &str, exit: Value| (m.to_string(), result.to_string(), exit);
    let pass = |m: &str| row(m, "passed", Value::from(0));
    assert_eq!(
        rows,
        vec![
            pass("none"),
            row("drop:turn/completed", "failed", Value::Null),
            pass("duplicate:item/completed"),
            pass("unknown-notification"),
            pass("unknown-enum"),
            pass("extra-field"),
            pass("reorder"),
            row("overloaded", "failed", Value::from(1)),
            row("exit-mid-turn", "passed", Value::from(1)),
            pass("slow:20"),
        ],
        "{all}"
    );
    assert!(
        all.contains("was recorded over an app-server listener: serving it on one"),
        "{all}"
    );
    assert_eq!(json["listen"], "ws://127.0.0.1:0");
    assert_eq!(json["rows"][0]["launches"], 1);
    assert!(
        json["rows"][1]["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("timed out after 8 s"),
        "{all}"
    );
    // The file `record` wrote says it too; --no-listen serves it on stdio, where this
    // client starts codex itself.
    for extra in [vec![], vec!["--no-listen"]] {
        let mut args = vec!["--mutations", "none"];
        args.extend(extra.iter().copied());
        let (output, rows, json) = check_command(&sandbox, &file, &listener_client("tool"), &args);
        assert_eq!(rows, vec![pass("none")], "{}", text(&output));
        assert_eq!(
            json["listen"].is_null(),
            !extra.is_empty(),
            "{}",
            text(&output)
        );
    }
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "client-check left processes: {left:?}");
}
