//! Golden transcripts: what codex sent the client in a handful of scenarios (a plain turn,
//! streaming deltas, a dynamic tool round trip, a goal round trip, a file change, an
//! approval), normalised, kept per version in
//! `fixtures/golden-transcripts/VERSION/SCENARIO.json` (the document of
//! [`crate::drift::transcript::document`]).
//!
//! After a run, each listed scenario that ran on a version with a golden file is compared
//! with it by [`crate::drift::transcript_diff`] shape (messages, counts, order, fields and
//! their JSON types, enum values; not texts or ids): any difference fails the run with the
//! lines. `codex-parity run --bless` writes the files instead, from the scenarios that
//! passed (or drifted as their baseline expects); review the diff first.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

use crate::drift::transcript::{self, document};
use crate::drift::transcript_diff::{changes, shape};
use crate::harness::outcome::Outcome;
use crate::harness::runner::Record;

/// The environment variable that points at another golden-transcript directory.
pub const DIR_ENV: &str = "CODEX_PARITY_GOLDEN_TRANSCRIPTS";

/// The scenarios that have golden transcripts.
pub const SCENARIOS: &[&str] = &[
    "smoke_uses_mock_responses",
    "streaming_deltas",
    "dynamic_tool_round_trip",
    "goal_set_get_clear_round_trip",
    "file_change_add_reported",
    "approval_file_change_decline",
];

/// `fixtures/golden-transcripts` of the repository, or `$CODEX_PARITY_GOLDEN_TRANSCRIPTS`.
pub fn default_dir() -> PathBuf {
    std::env::var_os(DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let driver = Path::new(env!("CARGO_MANIFEST_DIR"));
            driver
                .parent()
                .unwrap_or(driver)
                .join("fixtures/golden-transcripts")
        })
}

/// The golden file of `scenario` on `version`.
pub fn path(dir: &Path, version: &str, scenario: &str) -> PathBuf {
    dir.join(version).join(format!("{scenario}.json"))
}

/// How one record compared with its golden file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compared {
    /// Same shape.
    Matched(PathBuf),
    /// No golden file for this version.
    Missing(PathBuf),
    /// Different: the lines from the golden file to this run.
    Differs(PathBuf, Vec<String>),
}

/// Whether a record is one a golden transcript is kept for: a listed scenario that ran to
/// the end (passed or drifted as its baseline expects).
fn golden_worthy(record: &Record) -> bool {
    SCENARIOS.contains(&record.scenario)
        && !record.transcripts.is_empty()
        && matches!(
            record.outcome,
            Outcome::Passed | Outcome::Drift(_) | Outcome::Contradicts(_)
        )
}

fn version_of(record: &Record) -> &str {
    record.label.strip_prefix("codex-").unwrap_or(&record.label)
}

/// Compares one record with its golden file; `None` when the record has none to compare.
pub fn compare(dir: &Path, record: &Record) -> anyhow::Result<Option<Compared>> {
    if !golden_worthy(record) {
        return Ok(None);
    }
    let file = path(dir, version_of(record), record.scenario);
    if !file.exists() {
        return Ok(Some(Compared::Missing(file)));
    }
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let golden: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    let connections = golden
        .get("connections")
        .and_then(Value::as_array)
        .with_context(|| format!("{} has no connections", file.display()))?;
    let lines = changes(
        &shape(connections),
        &shape(&transcript::normalize(&record.transcripts)),
    );
    Ok(Some(if lines.is_empty() {
        Compared::Matched(file)
    } else {
        Compared::Differs(file, lines)
    }))
}

/// Compares every record that has a golden file: the text to print, and whether all
/// matched (a missing file is said, not failed).
pub fn check_all(dir: &Path, records: &[Record]) -> anyhow::Result<(String, bool)> {
    let (mut text, mut ok) = (String::new(), true);
    for r in records {
        match compare(dir, r)? {
            None | Some(Compared::Matched(_)) => {}
            Some(Compared::Missing(file)) => text.push_str(&format!(
                "golden transcript: no {} yet (codex-parity run --codex-version {} --bless \
                 --filter {})\n",
                file.display(),
                version_of(r),
                r.scenario
            )),
            Some(Compared::Differs(file, lines)) => {
                ok = false;
                // `FAIL name[label]` as the matrix says it: CI re-runs such a cell alone.
                text.push_str(&format!(
                    "FAIL {}[{}]: golden transcript {} differs ({} change(s); review, then \
                     bless with codex-parity run --codex-version {} --bless --filter {}):\n",
                    r.scenario,
                    r.label,
                    file.display(),
                    lines.len(),
                    version_of(r),
                    r.scenario
                ));
                for line in lines {
                    text.push_str(&format!("    {line}\n"));
                }
            }
        }
    }
    Ok((text, ok))
}

/// Writes the golden files of the listed scenarios that ran to the end; returns them.
pub fn bless(dir: &Path, records: &[Record]) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for r in records.iter().filter(|r| golden_worthy(r)) {
        let file = path(dir, version_of(r), r.scenario);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let doc = document(r, version_of(r));
        let text = serde_json::to_string_pretty(&doc).context("serialising a transcript")?;
        std::fs::write(&file, text + "\n")
            .with_context(|| format!("writing {}", file.display()))?;
        written.push(file);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::app_server::transcript::{Sent, SentKind};
    use crate::harness::tally::Connection;

    fn record(status: &str) -> Record {
        let message = Sent::new(
            SentKind::Notification,
            "turn/completed",
            json!({"turn": {"status": status}}),
        );
        Record {
            scenario: "streaming_deltas",
            id: "A2",
            label: "codex-0.171.0".into(),
            outcome: Outcome::Passed,
            duration: Duration::ZERO,
            requests: Vec::new(),
            observations: Vec::new(),
            transcripts: vec![Connection {
                world: 1,
                connection: 1,
                root: "/tmp/x".into(),
                messages: vec![message],
            }],
            checked: None,
        }
    }

    #[test]
    fn the_repository_golden_transcripts_are_listed_and_the_pinned_version_has_all() {
        let dir = default_dir();
        for version in std::fs::read_dir(&dir).unwrap() {
            for file in std::fs::read_dir(version.unwrap().path()).unwrap() {
                let file = file.unwrap().path();
                let scenario = file.file_stem().unwrap().to_str().unwrap();
                assert!(SCENARIOS.contains(&scenario), "{}", file.display());
                let doc: Value =
                    serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
                assert_eq!(doc["scenario"], scenario, "{}", file.display());
            }
        }
        let pinned = crate::codex::versions::load().unwrap().pinned;
        for s in SCENARIOS {
            assert!(
                path(&dir, &pinned, s).exists(),
                "no golden transcript {s} on {pinned}"
            );
        }
    }

    #[test]
    fn bless_then_compare_matches_and_a_change_differs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(matches!(
            compare(d, &record("completed")).unwrap(),
            Some(Compared::Missing(_))
        ));
        let written = bless(d, &[record("completed")]).unwrap();
        assert_eq!(written, [path(d, "0.171.0", "streaming_deltas")]);
        assert!(matches!(
            compare(d, &record("completed")).unwrap(),
            Some(Compared::Matched(_))
        ));
        let (text, ok) = check_all(d, &[record("interrupted")]).unwrap();
        assert!(!ok);
        assert!(text.contains("value \"interrupted\""), "{text}");
        assert!(
            text.starts_with("FAIL streaming_deltas[codex-0.171.0]: "),
            "{text}"
        );
        assert!(text.contains("--bless --filter streaming_deltas"), "{text}");
        let mut unlisted = record("completed");
        unlisted.scenario = "other";
        assert_eq!(compare(d, &unlisted).unwrap(), None);
    }
}
