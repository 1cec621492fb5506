//! Expected-results baselines: what a codex version is known to do differently from the
//! catalogue (`fixtures/expected/VERSION.json`).
//!
//! A scenario reports a version's divergence with [`crate::harness::scenario::Ctx::drift`] and goes
//! on; the after-scenario checks report codex-built requests that break the tool-call
//! pairing, or that no script answered, the same way. At the end each divergence must match
//! an entry of the version's baseline (the entry's `contains` text is part of the message),
//! and every entry for the scenario must have matched something: an unlisted divergence
//! fails the scenario, and so does an entry that no longer happens, so a baseline never
//! goes stale. A failure stays a failure unless an entry says `"fails": true`: a scenario
//! known to fail on that version, with a message containing `contains`.
//!
//! ```json
//! {
//!   "codex": "0.171.0",
//!   "expected": [
//!     {"scenario": "goal_continuation_ends_through_update_goal",
//!      "contains": "goal_objective",
//!      "reason": "the continuation request carries a goal_objective output without its call"}
//!   ]
//! }
//! ```

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::harness::outcome::Outcome;

/// The environment variable that points at another baselines directory.
pub const EXPECTED_DIR_ENV: &str = "CODEX_PARITY_EXPECTED";

/// One known divergence of one scenario on one version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The scenario's name.
    pub scenario: String,
    /// Text the divergence or failure message contains.
    pub contains: String,
    /// Why this version differs, for people.
    pub reason: String,
    /// The scenario is known to fail (its failure message contains `contains`), rather than
    /// to report drift and pass.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fails: bool,
}

/// A version's baseline: every known divergence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The codex version it describes.
    pub codex: String,
    /// The known divergences.
    pub expected: Vec<Expected>,
    /// Where it was read from (empty when there is no file).
    #[serde(skip)]
    pub path: PathBuf,
}

impl Baseline {
    /// The default baselines directory: `$CODEX_PARITY_EXPECTED`, else the repository's
    /// `fixtures/expected`.
    pub fn default_dir() -> PathBuf {
        std::env::var_os(EXPECTED_DIR_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/expected"))
    }

    /// The baseline of `version` in `dir`; an empty one when the file does not exist.
    pub fn load(dir: &Path, version: &str) -> anyhow::Result<Baseline> {
        let path = dir.join(format!("{version}.json"));
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Baseline {
                    codex: version.to_string(),
                    ..Baseline::default()
                });
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let mut baseline: Baseline = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a baseline ({{\"codex\": VERSION, \"expected\": [{{\"scenario\", \"contains\", \"reason\"}}]}})",
                path.display()
            )
        })?;
        anyhow::ensure!(
            baseline.codex == version,
            "{} describes codex {}, not {version}",
            path.display(),
            baseline.codex
        );
        baseline.path = path;
        Ok(baseline)
    }

    /// Judges one scenario run: `failure` is its error, if it failed; `drift` what it
    /// reported as this version's divergences.
    pub fn judge(&self, scenario: &str, failure: Option<String>, drift: Vec<String>) -> Outcome {
        let entries: Vec<&Expected> = self
            .expected
            .iter()
            .filter(|e| e.scenario == scenario)
            .collect();
        // What each entry matched: one note per entry, however often codex repeated it.
        let mut seen: Vec<Vec<String>> = vec![Vec::new(); entries.len()];
        let mut problems = Vec::new();
        let observed = drift
            .into_iter()
            .map(|d| (d, false))
            .chain(failure.map(|f| (f, true)));
        for (message, is_failure) in observed {
            let matching = |e: &&Expected| e.fails == is_failure && message.contains(&e.contains);
            match entries.iter().position(matching) {
                Some(i) => seen[i].push(message),
                None if is_failure => problems.push(message),
                None => problems.push(format!("drift not in the baseline: {message}")),
            }
        }
        let mut known = Vec::new();
        for (entry, seen) in entries.iter().zip(&seen) {
            match seen.as_slice() {
                [] => problems.push(format!(
                    "{} expects \"{}\" ({}), but it did not happen: remove the entry",
                    self.path.display(),
                    entry.contains,
                    entry.reason
                )),
                [one] => known.push(format!("{} ({one})", entry.reason)),
                [first, rest @ ..] => known.push(format!(
                    "{} ({first}; and {} more like it)",
                    entry.reason,
                    rest.len()
                )),
            }
        }
        if !problems.is_empty() {
            Outcome::Failed(problems.join("\n"))
        } else if !known.is_empty() {
            Outcome::Drift(known)
        } else {
            Outcome::Passed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baseline() -> Baseline {
        Baseline {
            codex: "0.171.0".into(),
            expected: vec![
                Expected {
                    scenario: "s".into(),
                    contains: "goal_objective".into(),
                    reason: "injected output".into(),
                    fails: false,
                },
                Expected {
                    scenario: "known_failure".into(),
                    contains: "no such method".into(),
                    reason: "not implemented here".into(),
                    fails: true,
                },
            ],
            path: "fixtures/expected/0.171.0.json".into(),
        }
    }

    #[test]
    fn clean_runs_pass_and_listed_drift_is_known() {
        let b = baseline();
        assert_eq!(b.judge("other", None, vec![]), Outcome::Passed);
        let o = b.judge("s", None, vec!["output goal_objective has no call".into()]);
        assert_eq!(
            o,
            Outcome::Drift(vec![
                "injected output (output goal_objective has no call)".into()
            ])
        );
        // A failure is never excused by a drift entry, only by one that says it fails.
        let o = b.judge("s", Some("checks failed: goal_objective".into()), vec![]);
        assert!(matches!(o, Outcome::Failed(_)), "{o:?}");
        let o = b.judge(
            "known_failure",
            Some("-32601 no such method".into()),
            vec![],
        );
        assert!(matches!(o, Outcome::Drift(_)), "{o:?}");
        let o = b.judge("known_failure", None, vec![]);
        assert!(
            matches!(o, Outcome::Failed(_)),
            "a known failure that passes: {o:?}"
        );
    }

    #[test]
    fn repeated_drift_is_one_note() {
        let drift = (1..=3)
            .map(|n| format!("request #{n}: goal_objective"))
            .collect();
        assert_eq!(
            baseline().judge("s", None, drift),
            Outcome::Drift(vec![
                "injected output (request #1: goal_objective; and 2 more like it)".into()
            ])
        );
    }

    #[test]
    fn unlisted_drift_and_stale_entries_fail() {
        let b = baseline();
        match b.judge("other", None, vec!["no turn_trigger".into()]) {
            Outcome::Failed(m) => assert!(m.contains("drift not in the baseline: no turn_trigger")),
            o => panic!("{o:?}"),
        }
        match b.judge("s", None, vec![]) {
            Outcome::Failed(m) => {
                assert!(m.contains("expects \"goal_objective\""), "{m}");
                assert!(m.contains("remove the entry"), "{m}");
            }
            o => panic!("{o:?}"),
        }
        match b.judge("s", Some("timed out".into()), vec!["goal_objective".into()]) {
            Outcome::Failed(m) => assert_eq!(m, "timed out"),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn files_load_and_missing_files_are_empty() {
        let dir = tempfile::tempdir().unwrap();
        let empty = Baseline::load(dir.path(), "0.1.0").unwrap();
        assert!(empty.expected.is_empty());
        std::fs::write(
            dir.path().join("0.2.0.json"),
            r#"{"codex":"0.2.0","expected":[{"scenario":"s","contains":"x","reason":"y"}]}"#,
        )
        .unwrap();
        assert_eq!(
            Baseline::load(dir.path(), "0.2.0").unwrap().expected.len(),
            1
        );
        std::fs::write(
            dir.path().join("0.3.0.json"),
            r#"{"codex":"0.2.0","expected":[]}"#,
        )
        .unwrap();
        let e = Baseline::load(dir.path(), "0.3.0").unwrap_err();
        assert!(format!("{e:#}").contains("not 0.3.0"), "{e:#}");
        std::fs::write(dir.path().join("0.4.0.json"), "{").unwrap();
        assert!(Baseline::load(dir.path(), "0.4.0").is_err());
    }

    #[test]
    fn the_repository_baselines_parse() {
        let dir = Baseline::default_dir();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let version = path.file_stem().unwrap().to_str().unwrap().to_string();
            let b = Baseline::load(&dir, &version).unwrap();
            assert_eq!(b.codex, version, "{}", path.display());
        }
    }
}
