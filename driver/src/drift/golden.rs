//! Golden requests: the [`normalize`]d model requests a scenario made on a codex version,
//! kept in `fixtures/golden/VERSION/SCENARIO.json`, so that any drift in what codex sends
//! the model shows as a structural diff ([`crate::drift::request_diff`]).
//!
//! Only scenarios listed in [`SCENARIOS`] have golden files; they check their requests with
//! [`assert_matches`]:
//! - a golden file for the version exists: the requests must equal it, else the scenario
//!   fails with the diff and how to bless;
//! - none: the scenario fails, naming the missing file and how to bless it (E1 passes only
//!   when the comparison ran; [`check`] itself reports a missing file of a version that is
//!   not pinned as skipped, with the reason).
//!
//! `codex-parity run --bless` turns the comparison off and, after the run, writes the golden
//! files of the listed scenarios that passed (or drifted as their baseline expects) on each
//! binary run, from the requests they captured ([`bless`]). Review the diff first.
//!
//! ```json
//! {"codex": "0.171.0", "scenario": "request_shape_plain", "requests": [{"method": "POST", …}]}
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use codex_parity_sidecar::captured::CapturedRequest;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::codex::binaries::CodexBinary;
use crate::codex::versions;
use crate::drift::normalize;
use crate::drift::request_diff::diff_requests;
use crate::harness::outcome::Outcome;
use crate::harness::runner::Record;
use crate::harness::scenario::Ctx;

/// The environment variable that points at another golden directory.
pub const GOLDEN_DIR_ENV: &str = "CODEX_PARITY_GOLDEN";

/// The scenarios that have golden files (`--bless` writes only these).
pub const SCENARIOS: &[&str] = &[
    "request_shape_plain",
    "request_shape_base_instructions",
    "request_shape_developer_instructions",
];

/// Diff lines shown per request in a mismatch.
const DIFF_LINES: usize = 40;

/// One golden file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Golden {
    /// The codex version that made the requests.
    pub codex: String,
    /// The scenario's name.
    pub scenario: String,
    /// The normalised model requests, in order.
    pub requests: Vec<Value>,
}

/// The default golden directory: `$CODEX_PARITY_GOLDEN`, else the repository's
/// `fixtures/golden`.
pub fn default_dir() -> PathBuf {
    std::env::var_os(GOLDEN_DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let driver = Path::new(env!("CARGO_MANIFEST_DIR"));
            driver.parent().unwrap_or(driver).join("fixtures/golden")
        })
}

/// `dir/VERSION/SCENARIO.json`.
pub fn path(dir: &Path, version: &str, scenario: &str) -> PathBuf {
    dir.join(version).join(format!("{scenario}.json"))
}

/// The golden file of `scenario` on `version`, if there is one.
pub fn load(dir: &Path, version: &str, scenario: &str) -> anyhow::Result<Option<Golden>> {
    let path = path(dir, version, scenario);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let golden: Golden = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a golden file ({{\"codex\", \"scenario\", \"requests\"}})",
            path.display()
        )
    })?;
    if golden.codex != version || golden.scenario != scenario {
        bail!(
            "{} describes {} on codex {}, not {scenario} on {version}",
            path.display(),
            golden.scenario,
            golden.codex
        );
    }
    Ok(Some(golden))
}

/// Writes a golden file; returns its path and whether its content changed.
pub fn write(dir: &Path, golden: &Golden) -> anyhow::Result<(PathBuf, bool)> {
    let path = path(dir, &golden.codex, &golden.scenario);
    let unchanged = load(dir, &golden.codex, &golden.scenario)
        .ok()
        .flatten()
        .is_some_and(|old| old == *golden);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let text = serde_json::to_string_pretty(golden)? + "\n";
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok((path, !unchanged))
}

/// How a comparison with a golden file went, when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// The requests equal the golden file.
    Matched(PathBuf),
    /// No golden file for this (not pinned) version: the reason it was skipped.
    Skipped(String),
}

/// Compares normalised `requests` of `scenario` on `version` with the golden file in `dir`;
/// `pinned` is the version that must have one. A mismatch, or a missing file for the pinned
/// version, is an error saying what differs and how to bless.
pub fn check(
    dir: &Path,
    version: &str,
    pinned: &str,
    scenario: &str,
    requests: &[Value],
) -> anyhow::Result<Checked> {
    let file = path(dir, version, scenario);
    let bless = format!("codex-parity run --codex-version {version} --bless --filter {scenario}");
    let Some(golden) = load(dir, version, scenario)? else {
        if version == pinned {
            bail!(
                "no golden file {} for the pinned codex {version}: review its requests \
                 (`codex-parity run --compare --request-diff --filter {scenario}`), then write it \
                 with `{bless}`",
                file.display()
            );
        }
        return Ok(Checked::Skipped(format!(
            "no golden file {} for codex {version} (only the pinned {pinned} needs one): \
             golden comparison skipped",
            file.display()
        )));
    };
    let diff = diff_requests(&golden.requests, requests);
    if diff.is_empty() {
        return Ok(Checked::Matched(file));
    }
    bail!(
        "{} change(s) from the golden file {} (if expected, review and rewrite it with `{bless}`); \
         - golden, + this run:\n{}",
        diff.count(),
        file.display(),
        diff.to_text(DIFF_LINES).trim_end()
    )
}

/// Checks a scenario's requests (every request its worlds captured) against its golden
/// file on this codex (see the module docs). With `--bless` it checks nothing: the run
/// rewrites the file.
pub fn assert_matches(ctx: &Ctx, requests: &[CapturedRequest]) -> anyhow::Result<()> {
    let scenario = ctx.scenario().name;
    if !SCENARIOS.contains(&scenario) {
        bail!(
            "scenario bug: {scenario} is not in golden::SCENARIOS, so --bless would never write its golden file"
        );
    }
    let label = ctx.binary.label();
    if ctx.settings.bless {
        eprintln!(
            "{scenario}[{label}]: --bless: golden comparison skipped, the file is rewritten after the run"
        );
        return Ok(());
    }
    let pinned = versions::load()?.pinned;
    let normalised = normalize::model_requests(requests);
    match check(
        &default_dir(),
        &ctx.binary.version,
        &pinned,
        scenario,
        &normalised,
    )? {
        Checked::Matched(_) => {}
        // E1's claim is the comparison: without a golden file the scenario cannot pass.
        Checked::Skipped(why) => bail!(
            "{why}; E1 needs one for every version it runs on: review the requests, then \
             `codex-parity run --bless --filter request_shape` with this binary"
        ),
    }
    Ok(())
}

/// What [`bless`] did with one scenario run. Shown (`Display`) as the line `--bless`
/// prints for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlessOutcome {
    /// The golden file was written (it was new or differed).
    Wrote {
        /// The file.
        path: PathBuf,
        /// How many model requests it holds.
        requests: usize,
    },
    /// The golden file already held what this run captured.
    Unchanged {
        /// The file.
        path: PathBuf,
    },
    /// Not blessed: the run failed, was not applicable, or names no known binary.
    Skipped {
        /// `scenario[label]`.
        name: String,
        /// Why, e.g. `failed: boom` or `is not applicable: ...`.
        why: String,
    },
    /// The golden file could not be written.
    Error {
        /// `scenario[label]`.
        name: String,
        /// The error, with its context.
        error: String,
    },
}

impl BlessOutcome {
    /// Whether the golden file could not be written (the run then exits with 2).
    pub fn is_error(&self) -> bool {
        matches!(self, BlessOutcome::Error { .. })
    }
}

impl std::fmt::Display for BlessOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlessOutcome::Wrote { path, requests } => write!(
                f,
                "blessed: wrote {} ({requests} request(s))",
                path.display()
            ),
            BlessOutcome::Unchanged { path } => write!(f, "blessed: {} unchanged", path.display()),
            BlessOutcome::Skipped { name, why } => write!(f, "not blessed: {name}{why}"),
            BlessOutcome::Error { name, error } => write!(f, "could not bless {name}: {error}"),
        }
    }
}

/// Writes the golden files of the listed scenarios from `records` (those that passed or
/// drifted as expected), for the binaries that ran them; returns what happened to each
/// scenario run (one [`BlessOutcome`] each).
pub fn bless(records: &[Record], binaries: &[CodexBinary], dir: &Path) -> Vec<BlessOutcome> {
    let mut report = Vec::new();
    for r in records.iter().filter(|r| SCENARIOS.contains(&r.scenario)) {
        let name = format!("{}[{}]", r.scenario, r.label);
        let skipped = |why: String| BlessOutcome::Skipped {
            name: name.clone(),
            why,
        };
        let Some(binary) = binaries.iter().find(|b| b.label() == r.label) else {
            report.push(skipped(": no binary with that label".into()));
            continue;
        };
        match &r.outcome {
            Outcome::Passed | Outcome::Drift(_) | Outcome::Contradicts(_) => {}
            Outcome::Failed(why) => {
                let first = why.lines().next().unwrap_or("");
                report.push(skipped(format!(" failed: {first}")));
                continue;
            }
            Outcome::NotApplicable(why) => {
                report.push(skipped(format!(" is not applicable: {why}")));
                continue;
            }
        }
        let golden = Golden {
            codex: binary.version.clone(),
            scenario: r.scenario.to_string(),
            requests: normalize::model_requests(&r.requests),
        };
        report.push(match write(dir, &golden) {
            Ok((path, true)) => BlessOutcome::Wrote {
                path,
                requests: golden.requests.len(),
            },
            Ok((path, false)) => BlessOutcome::Unchanged { path },
            Err(e) => BlessOutcome::Error {
                name,
                error: format!("{e:#}"),
            },
        });
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn requests(stream: bool) -> Vec<Value> {
        vec![json!({"method": "POST", "path": "/v1/responses", "body": {"stream": stream}})]
    }

    fn golden(version: &str, stream: bool) -> Golden {
        Golden {
            codex: version.into(),
            scenario: "request_shape_plain".into(),
            requests: requests(stream),
        }
    }

    #[test]
    fn golden_files_match_mismatch_or_are_missing() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (file, changed) = write(d, &golden("0.171.0", true)).unwrap();
        assert!(changed);
        assert!(file.ends_with("0.171.0/request_shape_plain.json"));
        assert!(
            !write(d, &golden("0.171.0", true)).unwrap().1,
            "same content"
        );
        let s = "request_shape_plain";
        assert_eq!(
            check(d, "0.171.0", "0.171.0", s, &requests(true)).unwrap(),
            Checked::Matched(file)
        );
        let e = format!(
            "{:#}",
            check(d, "0.171.0", "0.171.0", s, &requests(false)).unwrap_err()
        );
        assert!(e.contains("~ body.stream: true -> false"), "{e}");
        assert!(
            e.contains(
                "codex-parity run --codex-version 0.171.0 --bless --filter request_shape_plain"
            ),
            "{e}"
        );
        // Missing: an error for the pinned version, a skip for another.
        let e = format!(
            "{:#}",
            check(d, "0.180.0", "0.180.0", s, &requests(true)).unwrap_err()
        );
        assert!(
            e.contains("no golden file") && e.contains("pinned codex 0.180.0"),
            "{e}"
        );
        match check(d, "0.131.0", "0.171.0", s, &requests(true)).unwrap() {
            Checked::Skipped(why) => assert!(why.contains("skipped"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_repository_golden_files_belong_to_listed_scenarios_and_the_pinned_version_has_all() {
        let dir = default_dir();
        for version in std::fs::read_dir(&dir).unwrap() {
            let version = version.unwrap().path();
            let v = version.file_name().unwrap().to_str().unwrap().to_string();
            for file in std::fs::read_dir(&version).unwrap() {
                let file = file.unwrap().path();
                let scenario = file.file_stem().unwrap().to_str().unwrap();
                assert!(SCENARIOS.contains(&scenario), "{}", file.display());
                assert!(load(&dir, &v, scenario).unwrap().is_some());
            }
        }
        let pinned = versions::load().unwrap().pinned;
        for s in SCENARIOS {
            assert!(
                load(&dir, &pinned, s).unwrap().is_some(),
                "no golden file for {s} on the pinned {pinned}"
            );
        }
    }

    #[test]
    fn files_that_describe_something_else_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = path(dir.path(), "0.1.0", "request_shape_plain");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, serde_json::to_string(&golden("0.2.0", true)).unwrap()).unwrap();
        assert!(load(dir.path(), "0.1.0", "request_shape_plain").is_err());
        std::fs::write(&p, "{").unwrap();
        assert!(load(dir.path(), "0.1.0", "request_shape_plain").is_err());
    }

    #[test]
    fn bless_writes_only_listed_scenarios_that_passed() {
        let dir = tempfile::tempdir().unwrap();
        let binary = CodexBinary {
            path: "/c/codex".into(),
            version: "0.171.0".into(),
        };
        let captured: CapturedRequest = serde_json::from_value(json!({
            "method": "POST", "path": "/v1/responses",
            "all_headers": {"thread-id": "01a22a00-d984-78c0-836b-c95f90401a77"},
            "body": {"prompt_cache_key": "01a22a00-d984-78c0-836b-c95f90401a77"}
        }))
        .unwrap();
        let record = |scenario: &'static str, outcome: Outcome| Record {
            scenario,
            id: "E1",
            label: binary.label(),
            outcome,
            duration: Duration::ZERO,
            requests: vec![captured.clone()],
            observations: Vec::new(),
            transcripts: Vec::new(),
            checked: None,
        };
        let records = vec![
            record("request_shape_plain", Outcome::Passed),
            record(
                "request_shape_base_instructions",
                Outcome::Failed("boom\nmore".into()),
            ),
            record("smoke_uses_mock_responses", Outcome::Passed),
        ];
        let report = bless(&records, std::slice::from_ref(&binary), dir.path());
        assert_eq!(report.len(), 2, "{report:?}");
        assert!(
            matches!(&report[0], BlessOutcome::Wrote { requests: 1, .. }),
            "{report:?}"
        );
        assert!(report[0].to_string().starts_with("blessed: wrote"));
        assert_eq!(
            report[1].to_string(),
            "not blessed: request_shape_base_instructions[codex-0.171.0] failed: boom"
        );
        assert!(!report.iter().any(BlessOutcome::is_error));
        let again = bless(&records[..1], std::slice::from_ref(&binary), dir.path());
        assert!(
            matches!(&again[0], BlessOutcome::Unchanged { .. }),
            "{again:?}"
        );
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, "").unwrap();
        let failed = bless(&records[..1], std::slice::from_ref(&binary), &blocked);
        assert!(failed[0].is_error(), "{failed:?}");
        assert!(
            failed[0]
                .to_string()
                .starts_with("could not bless request_shape_plain[codex-0.171.0]: "),
            "{failed:?}"
        );
        let written = load(dir.path(), "0.171.0", "request_shape_plain")
            .unwrap()
            .unwrap();
        assert_eq!(
            written.requests[0]["body"]["prompt_cache_key"],
            "<thread-1>"
        );
        assert!(
            load(dir.path(), "0.171.0", "smoke_uses_mock_responses")
                .unwrap()
                .is_none()
        );
    }
}
