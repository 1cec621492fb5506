//! Golden requests: the [`normalize`]d model requests a scenario made on a codex version,
//! kept in `fixtures/golden/VERSION/SCENARIO.json` (compiled into the binary, see
//! [`crate::harness::expectations`]), so that any drift in what codex sends the model shows
//! as a structural diff ([`crate::drift::request_diff`]).
//!
//! A golden file holds from its release until the next release that has its own, as a
//! baseline range does: a release is compared with the golden file of the nearest release
//! at or below it ([`Expectations::covering`]), so every release since the oldest golden
//! file is judged, none fails for a missing file. Only scenarios declared with
//! `.golden_requests()` have golden files; they check their requests with [`assert_matches`]:
//! - the requests must equal the covering golden file, else the scenario fails with the
//!   diff and how to bless (a release where codex changed its requests gets a file of its
//!   own, which then judges the releases after it);
//! - a release older than every golden file fails, naming the oldest.
//!
//! `codex-parity run --bless` turns the comparison off and, after the run, proposes the
//! golden files of those scenarios that ran to their end on each binary (passed, or
//! differed only in drift, listed or not: drift is the baselines' to judge, see
//! [`Cell::ran_to_end`]), from the requests they captured ([`bless`]), as pending files
//! in a checkout's `fixtures/` ([`Expectations::bless_dir`]) that `codex-parity review`
//! shows and accepts; a release whose requests equal the file that already covers it gets
//! none.
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
use crate::drift::normalize;
use crate::drift::request_diff::diff_requests;
use crate::harness::expectations::Expectations;
use crate::harness::outcome::Outcome;
use crate::harness::pending;
use crate::harness::runner::Cell;
use crate::harness::scenario::Ctx;

/// The folder of the expectations that holds golden requests.
pub const KIND: &str = "golden";

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

/// `root/golden/VERSION/SCENARIO.json`, for an expectations directory `root`.
pub fn path(root: &Path, version: &str, scenario: &str) -> PathBuf {
    root.join(KIND)
        .join(version)
        .join(format!("{scenario}.json"))
}

/// The golden file that judges `scenario` on `version` (see the module docs), with its
/// name for messages; `None` when no release at or below `version` has one.
pub fn covering(
    expectations: &Expectations,
    version: &str,
    scenario: &str,
) -> anyhow::Result<Option<(Golden, String)>> {
    let Some((from, name, text)) = expectations.read_covering(KIND, scenario, version)? else {
        return Ok(None);
    };
    let golden: Golden = serde_json::from_str(&text).with_context(|| {
        format!("{name} is not a golden file ({{\"codex\", \"scenario\", \"requests\"}})")
    })?;
    if golden.codex != from || golden.scenario != scenario {
        bail!(
            "{name} describes {} on codex {}, not {scenario} on {from}",
            golden.scenario,
            golden.codex
        );
    }
    Ok(Some((golden, name)))
}

/// The text of a golden file.
fn text_of(golden: &Golden) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(golden)? + "\n")
}

/// Proposes a golden file for the expectations directory `root`: written beside the
/// accepted file as a pending one (see [`crate::harness::pending`]); `None` when the
/// accepted file already holds it.
pub fn propose(root: &Path, golden: &Golden) -> anyhow::Result<Option<PathBuf>> {
    let path = path(root, &golden.codex, &golden.scenario);
    pending::propose(&path, &text_of(golden)?)
}

/// Writes an accepted golden file into `root` (what accepting a proposal does); returns
/// its path and whether its content changed.
#[cfg(test)]
pub fn write(root: &Path, golden: &Golden) -> anyhow::Result<(PathBuf, bool)> {
    let path = path(root, &golden.codex, &golden.scenario);
    let unchanged = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str::<Golden>(&text).ok())
        .is_some_and(|old| old == *golden);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&path, text_of(golden)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok((path, !unchanged))
}

/// How a comparison with a golden file went, when it did not fail: the file that matched
/// and the release it was recorded on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// The golden file, as messages name it.
    pub file: String,
    /// The release it was recorded on (at or below the one compared).
    pub recorded_on: String,
}

/// Compares normalised `requests` of `scenario` on `version` with the golden file that
/// covers it. A mismatch, or no golden file at or below `version`, is an error saying
/// what differs and how to bless.
pub fn check(
    expectations: &Expectations,
    version: &str,
    scenario: &str,
    requests: &[Value],
) -> anyhow::Result<Matched> {
    let bless = format!("codex-parity run --codex-version {version} --bless --filter {scenario}");
    let Some((golden, file)) = covering(expectations, version, scenario)? else {
        let oldest = expectations.subdirs(KIND)?.into_iter().next();
        bail!(
            "no golden file for {scenario} at or below codex {version} in {} (the oldest is \
             {}): review its requests (`codex-parity run --compare --request-diff --filter \
             {scenario}`), then write one with `{bless}`",
            expectations.describe(),
            oldest.as_deref().unwrap_or("none")
        );
    };
    let diff = diff_requests(&golden.requests, requests);
    if diff.is_empty() {
        return Ok(Matched {
            file,
            recorded_on: golden.codex,
        });
    }
    let since = if golden.codex == version {
        String::new()
    } else {
        format!(
            ", recorded on {} and judging the releases up to this one",
            golden.codex
        )
    };
    bail!(
        "{} change(s) from the golden file {file}{since} (if expected, review and write this \
         release's own with `{bless}`); - golden, + this run:\n{}",
        diff.count(),
        diff.to_text(DIFF_LINES).trim_end()
    )
}

/// Checks a scenario's requests (every request its worlds captured) against the golden
/// file that covers this codex (see the module docs), and observes which one it was. With
/// `--bless` it checks nothing: the run rewrites the file.
pub fn assert_matches(ctx: &Ctx, requests: &[CapturedRequest]) -> anyhow::Result<()> {
    let scenario = ctx.scenario().name;
    if !ctx.scenario().golden.requests {
        bail!(
            "scenario bug: {scenario} does not declare .golden_requests(), so --bless would never write its golden file"
        );
    }
    let label = ctx.binary.label();
    if ctx.settings.bless {
        eprintln!(
            "{scenario}[{label}]: --bless: golden comparison skipped, the file is rewritten after the run"
        );
        return Ok(());
    }
    let normalised = normalize::model_requests(requests);
    let matched = check(
        &Expectations::current()?,
        &ctx.binary.version,
        scenario,
        &normalised,
    )?;
    if matched.recorded_on != ctx.binary.version {
        ctx.observe(format!(
            "requests equal the golden file of {} ({}), which covers {}",
            matched.recorded_on, matched.file, ctx.binary.version
        ));
    }
    Ok(())
}

/// What [`bless`] did with one scenario run. Shown (`Display`) as the line `--bless`
/// prints for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlessOutcome {
    /// A golden file was proposed (it was new or differed): written as a pending file,
    /// for `codex-parity review`.
    Proposed {
        /// The pending file.
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
            BlessOutcome::Proposed { path, requests } => write!(
                f,
                "blessed: proposed {} ({requests} request(s); pending until `codex-parity review --accept`)",
                path.display()
            ),
            BlessOutcome::Unchanged { path } => write!(f, "blessed: {} unchanged", path.display()),
            BlessOutcome::Skipped { name, why } => write!(f, "not blessed: {name}{why}"),
            BlessOutcome::Error { name, error } => write!(f, "could not bless {name}: {error}"),
        }
    }
}

/// Writes the golden files of the listed scenarios from `records` (those that ran to their
/// end), for the binaries that ran them, into the expectations directory
/// `root`; returns what happened to each scenario run (one [`BlessOutcome`] each). A
/// release whose requests equal the golden file already covering it gets no file.
pub fn bless(records: &[Cell], binaries: &[CodexBinary], root: &Path) -> Vec<BlessOutcome> {
    let mut report = Vec::new();
    let there = Expectations::Dir(root.to_path_buf());
    for r in records.iter().filter(|r| r.golden.requests) {
        let name = format!("{}[{}]", r.scenario, r.label);
        let skipped = |why: String| BlessOutcome::Skipped {
            name: name.clone(),
            why,
        };
        let Some(binary) = binaries.iter().find(|b| b.label() == r.label) else {
            report.push(skipped(": no binary with that label".into()));
            continue;
        };
        if !r.ran_to_end() {
            let why = match &r.outcome {
                Outcome::NotApplicable(why) => format!(" is not applicable: {why}"),
                other => {
                    let why = r
                        .failure
                        .clone()
                        .or_else(|| other.detail())
                        .unwrap_or_default();
                    format!(" failed: {}", why.lines().next().unwrap_or(""))
                }
            };
            report.push(skipped(why));
            continue;
        }
        let golden = Golden {
            codex: binary.version.clone(),
            scenario: r.scenario.to_string(),
            requests: normalize::model_requests(&r.requests),
        };
        let covered = covering(&there, &binary.version, r.scenario);
        if let Ok(Some((old, _))) = &covered
            && old.requests == golden.requests
        {
            report.push(BlessOutcome::Unchanged {
                path: path(root, &old.codex, r.scenario),
            });
            continue;
        }
        report.push(match propose(root, &golden) {
            Ok(Some(path)) => BlessOutcome::Proposed {
                path,
                requests: golden.requests.len(),
            },
            Ok(None) => BlessOutcome::Unchanged {
                path: path(root, &golden.codex, r.scenario),
            },
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
        let e = Expectations::Dir(d.to_path_buf());
        let (file, changed) = write(d, &golden("0.161.0", true)).unwrap();
        assert!(changed);
        assert!(file.ends_with("golden/0.161.0/request_shape_plain.json"));
        assert!(
            !write(d, &golden("0.161.0", true)).unwrap().1,
            "same content"
        );
        let s = "request_shape_plain";
        let matched = check(&e, "0.161.0", s, &requests(true)).unwrap();
        assert_eq!(matched.recorded_on, "0.161.0");
        assert_eq!(matched.file, file.display().to_string());
        // A release between golden files is judged by the nearest one below it.
        let between = check(&e, "0.165.0", s, &requests(true)).unwrap();
        assert_eq!(between.recorded_on, "0.161.0");
        let e2 = format!(
            "{:#}",
            check(&e, "0.165.0", s, &requests(false)).unwrap_err()
        );
        assert!(e2.contains("~ body.stream: true -> false"), "{e2}");
        assert!(e2.contains("recorded on 0.161.0"), "{e2}");
        assert!(
            e2.contains(
                "codex-parity run --codex-version 0.165.0 --bless --filter request_shape_plain"
            ),
            "{e2}"
        );
        // Once 0.165.0 has its own, it judges 0.165.0 and what follows.
        write(d, &golden("0.165.0", false)).unwrap();
        assert_eq!(
            check(&e, "0.171.0", s, &requests(false))
                .unwrap()
                .recorded_on,
            "0.165.0"
        );
        assert!(check(&e, "0.164.0", s, &requests(true)).is_ok());
        // Older than every golden file: an error naming the oldest.
        let e3 = format!(
            "{:#}",
            check(&e, "0.131.0", s, &requests(true)).unwrap_err()
        );
        assert!(
            e3.contains("no golden file") && e3.contains("the oldest is 0.161.0"),
            "{e3}"
        );
    }

    #[test]
    fn files_that_describe_something_else_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = Expectations::Dir(dir.path().to_path_buf());
        let p = path(dir.path(), "0.1.0", "request_shape_plain");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, serde_json::to_string(&golden("0.2.0", true)).unwrap()).unwrap();
        assert!(covering(&e, "0.1.0", "request_shape_plain").is_err());
        std::fs::write(&p, "{").unwrap();
        assert!(covering(&e, "0.1.0", "request_shape_plain").is_err());
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
        let record = |scenario: &'static str, outcome: Outcome| Cell {
            // Only the request-shape scenarios declare golden requests.
            perf: Default::default(),
            golden: crate::harness::scenario::GoldenKinds {
                requests: scenario.starts_with("request_shape"),
                transcript: false,
            },
            scenario,
            id: "E1",
            label: binary.label(),
            failure: match &outcome {
                Outcome::Failed(why) if why.starts_with("boom") => Some(why.clone()),
                _ => None,
            },
            outcome,
            duration: Duration::ZERO,
            requests: vec![captured.clone()],
            observations: Vec::new(),
            transcripts: Vec::new(),
            checked: None,
            drift: Vec::new(),
        };
        let records = vec![
            record("request_shape_plain", Outcome::Passed),
            record(
                "request_shape_base_instructions",
                Outcome::Failed("boom\nmore".into()),
            ),
            record("smoke_uses_mock_responses", Outcome::Passed),
            // Failed only by drift no baseline lists: it ran to its end, so it is blessed.
            record(
                "request_shape_developer_instructions",
                Outcome::Failed("drift not in the baseline: k = 1 (m)".into()),
            ),
        ];
        let report = bless(&records, std::slice::from_ref(&binary), dir.path());
        assert_eq!(report.len(), 3, "{report:?}");
        assert!(
            matches!(&report[2], BlessOutcome::Proposed { .. }),
            "{report:?}"
        );
        assert!(
            matches!(&report[0], BlessOutcome::Proposed { requests: 1, .. }),
            "{report:?}"
        );
        assert!(report[0].to_string().starts_with("blessed: proposed"));
        // Proposals are pending: nothing accepted judges a run until they are accepted.
        let there = Expectations::Dir(dir.path().to_path_buf());
        assert!(
            covering(&there, "0.171.0", "request_shape_plain")
                .unwrap()
                .is_none()
        );
        let proposed = pending::list(dir.path()).unwrap();
        assert_eq!(proposed.len(), 2, "{proposed:?}");
        proposed.iter().for_each(|p| p.accept().unwrap());
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
        let (written, _) = covering(&there, "0.171.0", "request_shape_plain")
            .unwrap()
            .unwrap();
        assert_eq!(
            written.requests[0]["body"]["prompt_cache_key"],
            "<thread-1>"
        );
        assert!(
            covering(&there, "0.171.0", "smoke_uses_mock_responses")
                .unwrap()
                .is_none()
        );
        // A later release with the same requests needs no file of its own.
        let later = CodexBinary {
            path: "/c/codex-later".into(),
            version: "0.172.0".into(),
        };
        let mut same = records[0].clone();
        same.label = later.label();
        let report = bless(&[same], &[later], dir.path());
        assert!(
            matches!(&report[0], BlessOutcome::Unchanged { path } if path.ends_with("0.171.0/request_shape_plain.json")),
            "{report:?}"
        );
        assert!(!dir.path().join("golden/0.172.0").exists());
    }
}
