//! Golden transcripts: what codex sent the client in a handful of scenarios (a plain turn,
//! streaming deltas, a dynamic tool round trip, a goal round trip, a file change, an
//! approval), normalised, kept per version in
//! `fixtures/golden-transcripts/VERSION/SCENARIO.json` (the document of
//! [`crate::drift::transcript::document`]).
//!
//! After a run, each scenario declared with `.golden_transcript()` is compared with the
//! golden file that covers its release (that of the nearest release at or below it: a file
//! holds until the next release that has its own, see [`crate::harness::expectations`]) by
//! [`crate::drift::transcript_diff`] shape (messages, counts, order, fields and their JSON
//! types, enum values; not texts or ids): any difference fails the scenario's cell
//! ([`judge`], as each record comes in), with the lines, so the matrix, its totals and the
//! reports count it like any other failure.
//! `codex-parity run --bless` proposes the files instead (pending until `codex-parity
//! review` accepts them), from the scenarios that ran to their end, only for a release
//! whose shape differs from the file already covering it.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

use crate::drift::transcript::{self, document};
use crate::drift::transcript_diff::{changes, shape};
use crate::harness::expectations::Expectations;
use crate::harness::outcome::Outcome;
use crate::harness::pending;
use crate::harness::runner::Cell;

/// The folder of the expectations that holds golden transcripts.
pub const KIND: &str = "golden-transcripts";

/// `root/golden-transcripts/VERSION/SCENARIO.json`, for an expectations directory `root`.
pub fn path(root: &Path, version: &str, scenario: &str) -> PathBuf {
    root.join(KIND)
        .join(version)
        .join(format!("{scenario}.json"))
}

/// How one record compared with the golden file that covers its release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compared {
    /// Same shape as the file named.
    Matched(String),
    /// No golden file at or below this release.
    Missing,
    /// Different from the file named (recorded on the release given): the lines from the
    /// golden file to this run.
    Differs(String, String, Vec<String>),
}

/// Whether a record is one a golden transcript is kept for: a listed scenario that ran to
/// its end ([`Cell::ran_to_end`]: drift, listed or not, is the baselines' to judge).
fn golden_worthy(record: &Cell) -> bool {
    record.golden.transcript && !record.transcripts.is_empty() && record.ran_to_end()
}

fn version_of(record: &Cell) -> &str {
    record.label.strip_prefix("codex-").unwrap_or(&record.label)
}

/// The lines from the golden file covering `record`'s release to the record, with the
/// file's name and release; `None` when no release at or below it has one.
fn against_covering(
    expectations: &Expectations,
    record: &Cell,
) -> anyhow::Result<Option<(String, String, Vec<String>)>> {
    let Some((from, name, text)) =
        expectations.read_covering(KIND, record.scenario, version_of(record))?
    else {
        return Ok(None);
    };
    let golden: Value =
        serde_json::from_str(&text).with_context(|| format!("{name} is not JSON"))?;
    let connections = golden
        .get("connections")
        .and_then(Value::as_array)
        .with_context(|| format!("{name} has no connections"))?;
    let lines = changes(
        &shape(connections),
        &shape(&transcript::normalize(&record.transcripts)),
    );
    Ok(Some((name, from, lines)))
}

/// Compares one record with the golden file covering its release (the nearest release at
/// or below it that has one); `None` when the record has none to compare.
pub fn compare(expectations: &Expectations, record: &Cell) -> anyhow::Result<Option<Compared>> {
    if !golden_worthy(record) {
        return Ok(None);
    }
    Ok(Some(match against_covering(expectations, record)? {
        None => Compared::Missing,
        Some((name, _, lines)) if lines.is_empty() => Compared::Matched(name),
        Some((name, from, lines)) => Compared::Differs(name, from, lines),
    }))
}

/// Judges one record by the golden transcript covering its release: a record whose
/// transcript differs from it is failed, the reason naming the file and each change (as
/// the matrix counts every failure, a golden file's among them). Returns whether it failed.
pub fn judge(expectations: &Expectations, record: &mut Cell) -> bool {
    let why = match compare(expectations, record) {
        Ok(Some(Compared::Differs(file, from, lines))) => {
            let since = if from == version_of(record) {
                String::new()
            } else {
                format!(", recorded on {from}")
            };
            let mut why = format!(
                "golden transcript {file}{since} differs ({} change(s); review, then bless with \
                 codex-parity run --codex-version {} --bless --filter {})",
                lines.len(),
                version_of(record),
                record.scenario
            );
            for line in lines {
                why.push_str(&format!("\n    {line}"));
            }
            why
        }
        Ok(_) => return false,
        Err(e) => format!("golden transcript cannot be compared: {e:#}"),
    };
    // A record compared ran to its end: it failed, if at all, on drift the baselines do not
    // list, which stays said after.
    record.outcome = Outcome::Failed(match &record.outcome {
        Outcome::Failed(before) => format!("{why}\nand: {before}"),
        _ => why.clone(),
    });
    record.failure = Some(why);
    true
}

/// The records of listed scenarios on a release older than every golden file: one line
/// each, saying how to make one (not a failure).
pub fn missing(expectations: &Expectations, records: &[Cell]) -> anyhow::Result<String> {
    let mut text = String::new();
    for r in records {
        if let Some(Compared::Missing) = compare(expectations, r)? {
            text.push_str(&format!(
                "golden transcript: none for {} at or below codex {} yet (codex-parity run \
                 --codex-version {} --bless --filter {})\n",
                r.scenario,
                version_of(r),
                version_of(r),
                r.scenario
            ));
        }
    }
    Ok(text)
}

/// Proposes the golden files of the listed scenarios that ran to the end for the
/// expectations directory `root`, as pending files (see [`crate::harness::pending`]), but
/// none for a transcript with the shape of the golden file already covering its release
/// there (its own or an earlier release's); returns the pending files written.
pub fn bless(root: &Path, records: &[Cell]) -> anyhow::Result<Vec<PathBuf>> {
    let there = Expectations::Dir(root.to_path_buf());
    let mut written = Vec::new();
    for r in records.iter().filter(|r| golden_worthy(r)) {
        let own = path(root, version_of(r), r.scenario);
        // Same shape as the file covering it (its own or an earlier release's): nothing to
        // write (texts and ids may differ from run to run; the shape is what is compared).
        if let Some((_, _, lines)) = against_covering(&there, r)?
            && lines.is_empty()
        {
            continue;
        }
        let doc = document(r, version_of(r));
        let text = serde_json::to_string_pretty(&doc).context("serialising a transcript")?;
        if let Some(pending) = pending::propose(&own, &(text + "\n"))? {
            written.push(pending);
        }
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

    fn record(status: &str) -> Cell {
        let message = Sent::new(
            SentKind::Notification,
            "turn/completed",
            json!({"turn": {"status": status}}),
        );
        Cell {
            perf: Default::default(),
            golden: crate::harness::scenario::GoldenKinds {
                requests: false,
                transcript: true,
            },
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
                requested: Vec::new(),
            }],
            checked: None,
            drift: Vec::new(),
            failure: None,
        }
    }

    #[test]
    fn bless_then_compare_matches_and_a_change_differs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let e = Expectations::Dir(d.to_path_buf());
        assert!(matches!(
            compare(&e, &record("completed")).unwrap(),
            Some(Compared::Missing)
        ));
        let written = bless(d, &[record("completed")]).unwrap();
        let own = path(d, "0.171.0", "streaming_deltas");
        assert_eq!(written, [pending::pending_path(&own)]);
        // Pending until accepted: it judges nothing yet.
        assert!(matches!(
            compare(&e, &record("completed")).unwrap(),
            Some(Compared::Missing)
        ));
        for p in pending::list(d).unwrap() {
            p.accept().unwrap();
        }
        // The same shape again: the file is left as it is.
        assert!(bless(d, &[record("completed")]).unwrap().is_empty());
        assert!(matches!(
            compare(&e, &record("completed")).unwrap(),
            Some(Compared::Matched(_))
        ));
        let mut differs = record("interrupted");
        assert!(judge(&e, &mut differs));
        let Outcome::Failed(text) = &differs.outcome else {
            panic!("not failed: {:?}", differs.outcome)
        };
        assert!(text.contains("value \"interrupted\""), "{text}");
        assert!(text.starts_with("golden transcript "), "{text}");
        assert!(text.contains("--bless --filter streaming_deltas"), "{text}");
        assert_eq!(differs.failure.as_deref(), Some(text.as_str()));
        let mut same = record("completed");
        assert!(!judge(&e, &mut same));
        assert_eq!(same.outcome, Outcome::Passed);
        let mut unlisted = record("completed");
        unlisted.scenario = "other";
        unlisted.golden = crate::harness::scenario::GoldenKinds::default();
        assert_eq!(compare(&e, &unlisted).unwrap(), None);
        // A later release is judged by 0.171.0's file, and needs none of its own while its
        // transcript keeps that shape.
        let mut later = record("completed");
        later.label = "codex-0.172.0".into();
        assert!(matches!(
            compare(&e, &later).unwrap(),
            Some(Compared::Matched(_))
        ));
        assert!(bless(d, std::slice::from_ref(&later)).unwrap().is_empty());
        let mut r = record("interrupted");
        r.label = "codex-0.173.0".into();
        assert!(judge(&e, &mut r));
        assert!(
            format!("{:?}", r.outcome).contains("recorded on 0.171.0"),
            "{:?}",
            r.outcome
        );
        let mut old = record("completed");
        old.label = "codex-0.131.0".into();
        assert!(
            missing(&e, &[old])
                .unwrap()
                .contains("none for streaming_deltas")
        );
    }
}
