//! Transcripts and codex against its own schema, on the real pinned codex: scenarios record
//! what codex sent the client, every message is checked with the binary's own schema (and
//! whatever does not conform is drift the baseline judges), two runs normalise to the same
//! transcript, and the real schema rejects a message with a field renamed or retyped.

#![cfg(feature = "codex-parity")]

use std::sync::Arc;

use codex_parity::app_server::transcript::SentKind;
use codex_parity::codex::binaries::{self, CodexBinary};
use codex_parity::codex::conformance::{Direction, Verdict};
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::codex::versions;
use codex_parity::drift::transcript;
use codex_parity::harness::baseline::Baseline;
use codex_parity::harness::conformance::{NONCONFORMING, UNKNOWN};
use codex_parity::harness::outcome::Outcome;
use codex_parity::harness::runner::{self, Ran, Target};
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::harness::world::Settings;
use codex_parity::scenarios::registry;
use serde_json::Value;

/// A plain turn, streaming deltas, a dynamic tool round trip, a file change, an approval.
const SCENARIOS: &[&str] = &[
    "smoke_uses_mock_responses",
    "streaming_deltas",
    "dynamic_tool_text_and_image_output",
    "approval_file_change_decline",
];

async fn pinned() -> Target {
    let pinned = versions::load().unwrap().pinned;
    let binary: CodexBinary =
        binaries::resolve_spec(&pinned, &Cache::from_env().unwrap(), &StderrProgress::new())
            .await
            .unwrap();
    let mut targets = runner::prepare(vec![binary], &Baseline::default_dir())
        .await
        .unwrap();
    targets.remove(0)
}

async fn run(target: &Target, name: &str) -> Ran {
    let scenario = registry::registry()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}"));
    let settings = Arc::new(Settings::new(
        SidecarLauncher::codex_parity(env!("CARGO_BIN_EXE_codex-parity")),
        false,
    ));
    runner::run_scenario(&scenario, target, settings).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transcripts_validate_or_drift_and_normalise_stably() {
    let target = pinned().await;
    assert!(
        target.caps.conformance.is_some(),
        "the pinned codex's schema compiles"
    );
    for name in SCENARIOS {
        let ran = run(&target, name).await;
        assert!(
            !matches!(ran.outcome, Outcome::Failed(_)),
            "{name}: {:?}",
            ran.outcome
        );
        let checked = ran.checked.as_ref().expect("checked");
        let messages: usize = ran.transcripts.iter().map(|c| c.messages.len()).sum();
        assert!(checked.validated > 0, "{name}: nothing validated");
        assert_eq!(
            checked.validated + checked.unknown + checked.unchecked,
            messages,
            "{name}: every message is counted once"
        );
        // Whatever did not conform is drift the outcome carries (the baseline judged it).
        for d in &checked.drift {
            assert!([NONCONFORMING, UNKNOWN].contains(&d.key.as_str()));
            let notes = ran.outcome.detail().unwrap_or_default();
            assert!(notes.contains(&d.key), "{name}: {d} not in {notes}");
        }
    }
    let (a, b) = (
        run(&target, "streaming_deltas").await,
        run(&target, "streaming_deltas").await,
    );
    let (a, b) = (
        transcript::normalize(&a.transcripts),
        transcript::normalize(&b.transcripts),
    );
    assert_eq!(
        serde_json::to_string_pretty(&a).unwrap(),
        serde_json::to_string_pretty(&b).unwrap(),
        "two runs give the same normalised transcript"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_schema_rejects_a_renamed_or_retyped_field() {
    let target = pinned().await;
    let conformance = target.caps.conformance.clone().expect("compiled");
    let ran = run(&target, "streaming_deltas").await;
    let completed = ran
        .transcripts
        .iter()
        .flat_map(|c| &c.messages)
        .find(|m| m.kind == SentKind::Notification && m.method == "turn/completed")
        .expect("a turn/completed")
        .payload
        .clone();
    let check =
        |payload: &Value| conformance.check(Direction::Notification, "turn/completed", payload);
    assert_eq!(check(&completed), Verdict::Conforms);
    let mut renamed = completed.clone();
    let turn = renamed.as_object_mut().unwrap().remove("turn").unwrap();
    renamed["turnRenamed"] = turn;
    let Verdict::Violates(found) = check(&renamed) else {
        panic!("a renamed field conforms")
    };
    assert!(found.iter().any(|v| v.wanted.contains("turn")), "{found:?}");
    let mut retyped = completed.clone();
    retyped["turn"]["id"] = Value::from(5);
    let Verdict::Violates(found) = check(&retyped) else {
        panic!("a retyped field conforms")
    };
    assert_eq!(found[0].pointer, "/turn/id", "{found:?}");
    assert_eq!(
        conformance.check(Direction::Notification, "turn/teleported", &completed),
        Verdict::UnknownMethod
    );
}
