//! The example scenario files (`examples/scenarios/`) against the built-in scenarios they
//! re-express, on the real codex: the same outcome on the pinned version (and a pass for the
//! files no built-in mirrors); the same wrong expectation (a baseline entry for drift that
//! does not happen) fails both; and where a real codex breaks the expectation (0.131.0's
//! ASCII apostrophe in E14a's message) both report it, failing without a baseline entry and
//! passing as drift with one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codex_parity::codex::binaries::{self, BinaryRequest, CodexBinary};
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::harness::baseline::{Baseline, Expected};
use codex_parity::harness::outcome::Outcome;
use codex_parity::harness::runner::{self, Target};
use codex_parity::harness::scenario::Scenario;
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::harness::world::Settings;
use codex_parity::plan::{Options, Plan};
use codex_parity::scenario_file;
use codex_parity::scenarios::registry;

/// Each example file's scenario and the built-in scenario it mirrors.
const PAIRS: [(&str, &str); 8] = [
    ("file_streaming_deltas", "streaming_deltas"),
    (
        "file_streaming_deltas_over_ws_listener",
        "streaming_deltas_over_ws_listener",
    ),
    (
        "file_goal_on_thread_before_first_turn",
        "goal_on_thread_before_first_turn",
    ),
    (
        "file_resume_in_new_process_carries_history",
        "resume_in_new_process_carries_history",
    ),
    ("file_file_change_add_reported", "file_change_add_reported"),
    ("file_approval_command_accept", "approval_command_accept"),
    (
        "file_fault_http_500_fails_the_turn",
        "fault_http_500_fails_the_turn",
    ),
    ("file_exec_plain_prompt", "exec_plain_prompt"),
];

/// The example files no built-in scenario mirrors: they pass on their own.
const ALONE: [&str; 1] = ["file_exec_resume_carries_history"];

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/scenarios")
}

fn settings() -> Arc<Settings> {
    Arc::new(Settings::new(
        SidecarLauncher::codex_parity(env!("CARGO_BIN_EXE_codex-parity")),
        false,
    ))
}

async fn binary(versions: Vec<String>) -> CodexBinary {
    let request = BinaryRequest {
        paths: Vec::new(),
        versions,
        env: None,
    };
    let cache = Cache::from_env().unwrap();
    let mut found = binaries::resolve_request(&request, &cache, &StderrProgress::new())
        .await
        .unwrap();
    found.remove(0)
}

/// The target of `binary` judged by `baseline` (its version's entries of it).
async fn target(binary: CodexBinary, baseline: Baseline) -> Target {
    let sidecar = SidecarLauncher::codex_parity(env!("CARGO_BIN_EXE_codex-parity"));
    let plan = Plan::builder(Options::default())
        .unwrap()
        .build(vec![binary], sidecar)
        .await
        .unwrap();
    let mut t = plan.targets.into_iter().next().unwrap();
    t.baseline = Arc::new(baseline);
    t
}

/// The example files' scenarios and the built-ins, by name.
fn scenarios() -> (Vec<Scenario>, Vec<Scenario>) {
    let builtins = registry();
    let names: Vec<&str> = builtins.iter().map(|s| s.name).collect();
    let files = scenario_file::load_dirs(&[examples()], &names)
        .unwrap()
        .scenarios;
    (files, builtins)
}

fn find<'a>(all: &'a [Scenario], name: &str) -> &'a Scenario {
    all.iter().find(|s| s.name == name).unwrap()
}

/// A baseline of `version` with one entry per scenario expecting drift that never happens.
fn wrong_expectations(version: &str, names: &[&str]) -> Baseline {
    let entries = names
        .iter()
        .map(|n| {
            serde_json::from_value::<Expected>(serde_json::json!({
                "scenario": n, "key": "parity.wrong_expectation", "observed": "never",
                "versions": [version], "reason": "a wrong expectation", "contradicts": false
            }))
            .unwrap()
        })
        .collect();
    Baseline {
        codex: version.into(),
        expected: entries,
        source: "wrong.json".into(),
        strict: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_files_reach_the_outcome_of_the_built_ins() {
    let (files, builtins) = scenarios();
    assert_eq!(files.len(), PAIRS.len() + ALONE.len());
    let pinned = binary(Vec::new()).await;
    let version = pinned.version.clone();
    let real = Baseline::builtin(&version).unwrap();
    let judged = target(pinned.clone(), real).await;
    let all: Vec<&str> = PAIRS.iter().flat_map(|(f, b)| [*f, *b]).collect();
    let wrong = target(pinned, wrong_expectations(&version, &all)).await;
    for (file, builtin) in PAIRS {
        let (f, b) = (find(&files, file), find(&builtins, builtin));
        let of_file = runner::run_scenario(f, &judged, settings()).await.outcome;
        let of_builtin = runner::run_scenario(b, &judged, settings()).await.outcome;
        assert_eq!(
            of_file.word(),
            of_builtin.word(),
            "{file} vs {builtin} on {version}: {of_file:?} / {of_builtin:?}"
        );
        assert_eq!(of_file, Outcome::Passed, "{file} on {version}");
        // The same wrong expectation fails both, with the same complaint.
        for s in [f, b] {
            match runner::run_scenario(s, &wrong, settings()).await.outcome {
                Outcome::Failed(reason) => assert!(
                    reason.contains("parity.wrong_expectation")
                        && reason.contains("did not happen"),
                    "{}: {reason}",
                    s.name
                ),
                other => panic!("{} with a wrong expectation: {other:?}", s.name),
            }
        }
    }
    for file in ALONE {
        let outcome = runner::run_scenario(find(&files, file), &judged, settings())
            .await
            .outcome;
        assert_eq!(outcome, Outcome::Passed, "{file} on {version}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_that_breaks_the_expectation_fails_both_alike() {
    let (files, builtins) = scenarios();
    let (f, b) = (
        find(&files, "file_fault_http_500_fails_the_turn"),
        find(&builtins, "fault_http_500_fails_the_turn"),
    );
    let old = binary(vec!["0.131.0".into()]).await;
    // No baseline: 0.131.0's ASCII apostrophe is drift nothing lists, for both.
    let bare = target(
        old.clone(),
        Baseline {
            codex: "0.131.0".into(),
            ..Baseline::default()
        },
    )
    .await;
    // The same key and value from both: the file checks the field the built-in does.
    for s in [f, b] {
        match runner::run_scenario(s, &bare, settings()).await.outcome {
            Outcome::Failed(reason) => assert!(
                reason
                    .contains("drift not in the baseline: turn.error.message = \"We're currently"),
                "{}: {reason}",
                s.name
            ),
            other => panic!("{} on 0.131.0 without baselines: {other:?}", s.name),
        }
    }
    // With the built-in baselines and the examples' own, both are known drift.
    let mut listed = Baseline::builtin("0.131.0").unwrap();
    listed.add(&examples().join("baselines.json")).unwrap();
    let listed = target(old, listed).await;
    for s in [f, b] {
        let outcome = runner::run_scenario(s, &listed, settings()).await.outcome;
        assert_eq!(outcome.word(), "drift", "{}: {outcome:?}", s.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_file_names_the_step_and_its_place() {
    let text = std::fs::read_to_string(examples().join("a2_streaming_deltas.toml"))
        .unwrap()
        .replace("delta = \"llo\" }", "delta = \"llx\" }");
    let path = examples().join("a2_streaming_deltas.toml");
    let c = scenario_file::load::compile(&path, &text).unwrap();
    let s = scenario_file::scenario(c);
    let pinned = binary(Vec::new()).await;
    let version = pinned.version.clone();
    let t = target(pinned, Baseline::builtin(&version).unwrap()).await;
    match runner::run_scenario(&s, &t, settings()).await.outcome {
        Outcome::Failed(reason) => {
            assert!(
                reason.contains("step 3 (wait) at ")
                    && reason.contains("a2_streaming_deltas.toml:37:1"),
                "{reason}"
            );
            assert!(
                reason.contains("no item/agentMessage/delta within"),
                "{reason}"
            );
        }
        other => panic!("a wrong delta passed: {other:?}"),
    }
}
