//! `codex-parity client-check` with two stand-in integrators of our own
//! (`tests/client_check/client.py`: a strict client that rejects what it does not know and
//! a tolerant one), served sessions from each source: the transcripts of a real run of the
//! default catalogue on the comparison set, a session recorded with `record --keep` (its
//! relay logs, the client's answers checked) and the scenario file `record` wrote, run on
//! codex for it. Each client gets the table its code predicts; bad input is refused.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use codex_parity::codex::install::{CACHE_ENV, Cache};
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
    let report = sandbox
        .root
        .path()
        .join(format!("cc-{mode}-{}", rand_suffix()));
    let mut args: Vec<String> = vec![
        "client-check".into(),
        "--from".into(),
        source.display().to_string(),
        "--report".into(),
        report.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let output = run(sandbox, &args, &client(mode));
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
    use std::sync::atomic::{AtomicUsize, Ordering};
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
    // Every transcript of the whole catalogue on the pinned version is served to the
    // tolerant client unmutated: each ends, none hangs (a failed turn exits 1, which the
    // table says). The exec scenarios' streams hold no app-server answer: refused.
    let whole = sandbox.root.path().join("whole");
    let args = ["run".into(), "--report".into(), whole.display().to_string()];
    let output = run_all(&sandbox, &args);
    assert!(output.status.success(), "{}", text(&output));
    let dir = whole.join(format!("transcripts/{}", v.pinned));
    let (mut seen, mut refused) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(entry.path()).unwrap()).unwrap();
        let answers = doc["connections"][0]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["type"] == "response");
        if !answers {
            let args: Vec<String> = vec![
                "client-check".into(),
                "--from".into(),
                entry.path().display().to_string(),
            ];
            let output = run(&sandbox, &args, &client("tolerant"));
            assert_eq!(output.status.code(), Some(2), "{}", text(&output));
            assert!(text(&output).contains("holds no answer to any client request"));
            refused += 1;
            continue;
        }
        let (output, rows, _) = check(
            &sandbox,
            &entry.path(),
            "tolerant",
            &["--mutations", "none", "--timeout-secs", "20"],
        );
        assert_eq!(rows.len(), 1, "{}", text(&output));
        assert!(
            rows[0].2.is_i64(),
            "{}: {}",
            entry.path().display(),
            text(&output)
        );
        seen += 1;
    }
    println!("served {seen} transcripts of the catalogue, {refused} exec streams refused");
    assert!(
        seen >= 100 && refused >= 1,
        "only {seen} transcripts, {refused} refused"
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
    let out = sandbox.root.path().join(format!("{mode}.toml"));
    let recorder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/record/client.py");
    let client = [
        "python3".into(),
        recorder.display().to_string(),
        mode.into(),
    ];
    let extra: Vec<&str> = extra.iter().copied().chain(["--keep"]).collect();
    let output = run_all(
        sandbox,
        &support::record_args(codex, upstream, &out, &extra, &client),
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
