//! Transcripts and codex against its own schema, on the real pinned codex: scenarios record
//! what codex sent the client, every message is checked with the binary's own schema (and
//! whatever does not conform is drift the baseline judges), two runs normalise to the same
//! transcript, and the real schema rejects a message with a field renamed or retyped.

#![cfg(feature = "codex-parity")]

mod support;

use std::sync::Arc;

use codex_parity::app_server::transcript::SentKind;
use codex_parity::codex::binaries::{self};
use codex_parity::codex::conformance::{Conformity, Direction};
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::codex::versions;
use codex_parity::drift::transcript;
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
    let target = support::pinned_target().await;
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
    let target = support::pinned_target().await;
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
    assert_eq!(check(&completed), Conformity::Conforms);
    let mut renamed = completed.clone();
    let turn = renamed.as_object_mut().unwrap().remove("turn").unwrap();
    renamed["turnRenamed"] = turn;
    let Conformity::Violates(found) = check(&renamed) else {
        panic!("a renamed field conforms")
    };
    assert!(found.iter().any(|v| v.wanted.contains("turn")), "{found:?}");
    let mut retyped = completed.clone();
    retyped["turn"]["id"] = Value::from(5);
    let Conformity::Violates(found) = check(&retyped) else {
        panic!("a retyped field conforms")
    };
    assert_eq!(found[0].pointer, "/turn/id", "{found:?}");
    assert_eq!(
        conformance.check(Direction::Notification, "turn/teleported", &completed),
        Conformity::UnknownMethod
    );
}

/// The golden transcripts of the pinned version match a fresh run, by shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_transcripts_match_on_the_pinned_version() {
    use codex_parity::drift::golden_transcript::{self, Compared};
    let target = support::pinned_target().await;
    let expectations = codex_parity::harness::expectations::Expectations::current().unwrap();
    let golden: Vec<&str> = codex_parity::scenarios::registry()
        .iter()
        .filter(|s| s.golden.transcript)
        .map(|s| s.name)
        .collect();
    assert!(!golden.is_empty(), "no scenario keeps a golden transcript");
    for name in golden {
        let ran = run(&target, name).await;
        let record = runner::Cell {
            perf: Default::default(),
            golden: codex_parity::harness::scenario::GoldenKinds {
                requests: false,
                transcript: true,
            },
            scenario: name,
            id: "",
            label: target.binary.label(),
            outcome: ran.outcome,
            duration: ran.duration,
            requests: Vec::new(),
            observations: Vec::new(),
            transcripts: ran.transcripts,
            checked: None,
            drift: Vec::new(),
            failure: None,
        };
        match golden_transcript::compare(&expectations, &record).unwrap() {
            Some(Compared::Matched(_)) => {}
            other => panic!("{name}: {other:?} ({:?})", record.outcome),
        }
    }
}

/// `--transcript-diff` on the real oldest and newest of the comparison set: the client
/// stream of a plain turn changed between them, and a version against itself shows none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_transcript_diff_between_oldest_and_newest() {
    use codex_parity::drift::transcript_diff;
    let set = versions::load().unwrap();
    let mut compare = set.compare.clone();
    compare.sort_by_key(|v| versions::sort_key(v));
    let (cache, progress) = (Cache::from_env().unwrap(), StderrProgress::new());
    let mut records = Vec::new();
    let mut bins = Vec::new();
    for version in [&compare[0], &compare[compare.len() - 1]] {
        let binary = binaries::resolve_spec(version, &cache, &progress)
            .await
            .unwrap();
        let target = support::target_of(binary.clone()).await;
        let ran = run(&target, "smoke_uses_mock_responses").await;
        records.push(runner::Cell {
            perf: Default::default(),
            golden: codex_parity::harness::scenario::GoldenKinds {
                requests: false,
                transcript: true,
            },
            scenario: "smoke_uses_mock_responses",
            id: "A1",
            label: binary.label(),
            outcome: ran.outcome,
            duration: ran.duration,
            requests: Vec::new(),
            observations: Vec::new(),
            transcripts: ran.transcripts,
            checked: None,
            drift: Vec::new(),
            failure: None,
        });
        bins.push(binary);
    }
    let text = transcript_diff::report(&records, &bins);
    let pair = format!("{} -> {}: messages", bins[0].label(), bins[1].label());
    assert!(text.contains(&pair), "{text}");
    assert!(text.contains("change(s)"), "{text}");
    assert!(
        text.contains("+ notification thread/started params.thread."),
        "new thread fields: {text}"
    );
    let same = transcript_diff::changes(
        &transcript_diff::shape(&transcript::normalize(&records[1].transcripts)),
        &transcript_diff::shape(&transcript::normalize(&records[1].transcripts)),
    );
    assert!(same.is_empty());
}
