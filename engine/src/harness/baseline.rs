//! Expected-results baselines: what codex versions are known to do differently from the
//! catalogue (`fixtures/expected/baselines.json`).
//!
//! A scenario reports a divergence with [`crate::harness::scenario::Ctx::drift`] as a
//! [`Drift`]: a stable key (`goal.interrupt_leaves_status`), the value codex showed (JSON)
//! and a sentence for people. The after-scenario checks report codex-built requests that
//! no script answered (`requests.unscripted`) or that break the tool-call pairing
//! (`requests.tool_call_pairing`) the same way. At the end every drift must match an entry
//! that applies to the binary's version: same scenario, same key, and the observed value
//! equal to the entry's `observed` (or one of its `observed_any`, where codex is genuinely
//! nondeterministic). Matching never looks at the sentence, so rewording it touches no
//! fixture.
//!
//! An unlisted drift fails the scenario; so does a drift whose value is not the listed
//! one, and an applicable entry that did not happen (a baseline never goes stale), unless
//! the entry says `"intermittent": true` (a race inside codex that shows only sometimes). A
//! failure is always a failure. Each entry says whether the drift `contradicts` the
//! scenario's headline claim: such a run is [`Outcome::Contradicts`], apart from drift in a
//! detail ([`Outcome::Drift`]). In strict mode any drift fails.
//!
//! ```json
//! {
//!   "expected": [
//!     {"scenario": "goal_interrupted_continuation_pauses_goal",
//!      "key": "goal.interrupt_leaves_status",
//!      "observed": "active",
//!      "versions": [">=0.161.0"],
//!      "reason": "interrupting a continuation leaves the goal active",
//!      "contradicts": true}
//!   ]
//! }
//! ```
//!
//! `versions` lists exact versions (`"0.131.0"`) and ranges: `">=0.161.0"`, `">0.131.0"`,
//! `"<=0.161.0"`, `"<0.171.0"`, and `"A..B"` (from A included to B excluded).

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::codex::versions::sort_key;
use crate::harness::expectations::Expectations;
use crate::harness::outcome::{Drift, KnownDrift, Outcome};

/// The environment variable that points at another baselines file (or a directory holding
/// `baselines.json`).
pub const EXPECTED_DIR_ENV: &str = "CODEX_PARITY_EXPECTED";

/// The environment variable that makes the parity tests strict (any drift fails).
pub const STRICT_ENV: &str = "CODEX_PARITY_STRICT";

/// The baselines file's name inside a baselines directory.
pub const FILE_NAME: &str = "baselines.json";

/// The stable part of a tool-call pairing violation (as the sidecar words it): without
/// the item's position in `input`, which moves with the history before it
/// (`function_call_output "agent/goal_objective" has no call_id`).
pub fn pairing_kind(violation: &str) -> String {
    match violation.split_once(" at input[") {
        Some((before, after)) => match after.split_once(']') {
            Some((_, rest)) => format!("{before}{rest}"),
            None => violation.to_string(),
        },
        None => violation.to_string(),
    }
}

/// One known divergence of one scenario on some versions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The scenario's name.
    pub scenario: String,
    /// The drift's key.
    pub key: String,
    /// The value codex shows, exactly.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub observed: Option<Value>,
    /// The values codex may show (it is nondeterministic here); one of them each time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_any: Option<Vec<Value>>,
    /// The versions it applies to: exact versions and ranges (see the module docs).
    pub versions: Vec<String>,
    /// Why these versions differ, for people.
    pub reason: String,
    /// Whether the drift contradicts the scenario's headline claim (rather than a detail).
    pub contradicts: bool,
    /// Whether codex shows it only sometimes (a race inside codex): a run without it does not
    /// make the entry stale. A run with it is still reported, never counted as a pass.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub intermittent: bool,
}

/// `observed: null` is a value, not an absent field.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl Expected {
    /// Whether `value` is what this entry expects.
    pub fn admits(&self, value: &Value) -> bool {
        self.observed.as_ref() == Some(value)
            || self.observed_any.iter().flatten().any(|v| v == value)
    }

    /// What it expects, for messages: the value or the set.
    pub fn listed(&self) -> String {
        match (&self.observed, &self.observed_any) {
            (Some(v), _) => v.to_string(),
            (None, Some(set)) => format!("one of {}", Value::Array(set.clone())),
            (None, None) => "nothing".into(),
        }
    }

    /// Whether it applies to `version`.
    pub fn applies_to(&self, version: &str) -> bool {
        self.versions
            .iter()
            .any(|spec| version_matches(spec, version))
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.observed.is_some() != self.observed_any.is_some(),
            "needs exactly one of \"observed\" and \"observed_any\""
        );
        if let Some(set) = &self.observed_any {
            anyhow::ensure!(set.len() >= 2, "\"observed_any\" lists fewer than 2 values");
        }
        anyhow::ensure!(!self.key.is_empty(), "empty \"key\"");
        anyhow::ensure!(!self.reason.trim().is_empty(), "empty \"reason\"");
        anyhow::ensure!(!self.versions.is_empty(), "empty \"versions\"");
        for spec in &self.versions {
            check_spec(spec)?;
        }
        Ok(())
    }
}

/// Fails when `location` is a directory of the former per-version files (`0.171.0.json`)
/// without a `baselines.json`: reading no baseline there would silently drop them.
fn old_layout(location: &Path) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(location) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(version) = name.strip_suffix(".json")
            && crate::codex::versions::is_version(version)
        {
            anyhow::bail!(
                "{} is a per-version baseline of the former layout: move its entries into {} (key, observed, versions, contradicts)",
                entry.path().display(),
                location.join(FILE_NAME).display()
            );
        }
    }
    Ok(())
}

/// Splits a version spec into its comparison and version(s).
fn parse_spec(spec: &str) -> Option<(&str, &str, &str)> {
    let spec = spec.trim();
    if let Some((low, high)) = spec.split_once("..") {
        return Some(("..", low.trim(), high.trim()));
    }
    for op in [">=", "<=", ">", "<"] {
        if let Some(v) = spec.strip_prefix(op) {
            return Some((op, v.trim(), ""));
        }
    }
    Some(("=", spec, ""))
}

fn check_spec(spec: &str) -> anyhow::Result<()> {
    let (_, a, b) = parse_spec(spec).with_context(|| format!("bad version spec {spec:?}"))?;
    for v in [a, b].into_iter().filter(|v| !v.is_empty()) {
        anyhow::ensure!(
            crate::codex::versions::is_version(v),
            "bad version {v:?} in {spec:?} (exact \"0.171.0\", \">=0.161.0\", \"<0.171.0\" or \"0.131.0..0.171.0\")"
        );
    }
    Ok(())
}

/// Whether `version` is in `spec` (an exact version or a range).
pub fn version_matches(spec: &str, version: &str) -> bool {
    let Some((op, a, b)) = parse_spec(spec) else {
        return false;
    };
    let v = sort_key(version);
    match op {
        "=" => a == version,
        ">=" => v >= sort_key(a),
        "<=" => v <= sort_key(a),
        ">" => v > sort_key(a),
        "<" => v < sort_key(a),
        _ => v >= sort_key(a) && v < sort_key(b),
    }
}

/// The baselines file's shape.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(rename = "_comment", default)]
    _comment: Option<Value>,
    expected: Vec<Expected>,
}

/// Every entry of one or more baselines files, checked, and where they came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Baselines {
    /// Where the entries were read from, for messages.
    pub source: String,
    /// The entries, in file order.
    pub entries: Vec<Expected>,
}

/// The baselines file inside an expectations directory (`fixtures/`).
pub const RELATIVE_PATH: &str = "expected/baselines.json";

impl Baselines {
    /// The built-in baselines: `$CODEX_PARITY_EXPECTED` (a file, or a directory holding
    /// `baselines.json`; it must exist), else `expected/baselines.json` of this process's
    /// expectations (compiled in, or `--fixtures DIR`), which must have one.
    pub fn builtin() -> anyhow::Result<Baselines> {
        if let Some(location) = std::env::var_os(EXPECTED_DIR_ENV).filter(|v| !v.is_empty()) {
            return Baselines::read(Path::new(&location))
                .with_context(|| format!("{EXPECTED_DIR_ENV}={}", location.to_string_lossy()));
        }
        let expectations = Expectations::current()?;
        let source = expectations.name_of(RELATIVE_PATH);
        match expectations.read(RELATIVE_PATH)? {
            Some(text) => Baselines::parse(&text, &source),
            None => anyhow::bail!(
                "{source} does not exist: an expectations directory holds its baselines there \
                 ({{\"expected\": []}} for none)"
            ),
        }
    }

    /// The baselines at `location`: a file, or a directory holding `baselines.json`. A
    /// missing or unreadable file is an error naming it, never an empty baseline.
    pub fn read(location: &Path) -> anyhow::Result<Baselines> {
        let path = if location.is_dir() {
            old_layout(location)?;
            location.join(FILE_NAME)
        } else {
            location.to_path_buf()
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading the baselines file {}", path.display()))?;
        Baselines::parse(&text, &path.display().to_string())
    }

    /// Parses and checks the text of a baselines file read from `source`.
    pub fn parse(text: &str, source: &str) -> anyhow::Result<Baselines> {
        let file: File = serde_json::from_str(text).with_context(|| {
            format!(
                "{source} is not a baselines file ({{\"expected\": [{{\"scenario\", \"key\", \"observed\" or \"observed_any\", \"versions\", \"reason\", \"contradicts\"}}]}})"
            )
        })?;
        for (i, e) in file.expected.iter().enumerate() {
            e.check()
                .with_context(|| format!("{source} entry #{i} ({} {})", e.scenario, e.key))?;
        }
        Ok(Baselines {
            source: source.to_string(),
            entries: file.expected,
        })
    }

    /// Fails naming every entry whose `scenario` is none of `known` (a typo, or a scenario
    /// renamed or removed): such an entry judges nothing, and the drift it was meant for
    /// would fail as unlisted with no word on why.
    pub fn check_scenarios(&self, known: &[&str]) -> anyhow::Result<()> {
        let unknown: Vec<String> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| !known.contains(&e.scenario.as_str()))
            .map(|(i, e)| {
                format!(
                    "entry #{i} ({} {}) names no scenario{}",
                    e.scenario,
                    e.key,
                    crate::suggest::hint(&e.scenario, known.iter().copied())
                )
            })
            .collect();
        anyhow::ensure!(
            unknown.is_empty(),
            "{}: {} (`codex-parity list --scenarios DIR` shows the scenarios)",
            self.source,
            unknown.join("; ")
        );
        Ok(())
    }

    /// The baseline of `version`: the entries that apply to it.
    pub fn for_version(&self, version: &str) -> Baseline {
        Baseline {
            codex: version.to_string(),
            expected: self
                .entries
                .iter()
                .filter(|e| e.applies_to(version))
                .cloned()
                .collect(),
            source: self.source.clone(),
            strict: false,
        }
    }
}

/// The baseline of one version: the entries that apply to it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Baseline {
    /// The codex version it describes.
    pub codex: String,
    /// The known divergences that apply to it.
    pub expected: Vec<Expected>,
    /// Where it was read from, for messages (empty when there is no file).
    pub source: String,
    /// Any drift fails (`run --strict`, `CODEX_PARITY_STRICT=1`).
    pub strict: bool,
}

impl Baseline {
    /// The built-in baseline of `version` (see [`Baselines::builtin`]).
    pub fn builtin(version: &str) -> anyhow::Result<Baseline> {
        Ok(Baselines::builtin()?.for_version(version))
    }

    /// Adds the entries of the baselines at `location` (a file, or a directory holding
    /// `baselines.json`) that apply to this baseline's version: an integrator's own
    /// baselines beside the built-in ones. A missing file is an error.
    pub fn add(&mut self, location: &Path) -> anyhow::Result<()> {
        let more = Baselines::read(location)?.for_version(&self.codex);
        self.source = format!("{} + {}", self.source, more.source);
        self.expected.extend(more.expected);
        Ok(())
    }

    /// The entries for `scenario`.
    pub fn entries(&self, scenario: &str) -> impl Iterator<Item = &Expected> {
        self.expected.iter().filter(move |e| e.scenario == scenario)
    }

    /// Judges one scenario run: `failure` is its error, if it failed; `drift` what it
    /// reported as this version's divergences.
    pub fn judge(&self, scenario: &str, failure: Option<String>, drift: Vec<Drift>) -> Outcome {
        let entries: Vec<&Expected> = self.entries(scenario).collect();
        // What each entry matched: one note per entry, however often codex repeated it.
        let mut seen: Vec<Vec<Drift>> = vec![Vec::new(); entries.len()];
        let mut problems = Vec::new();
        for d in drift {
            let same_key = || entries.iter().filter(|e| e.key == d.key);
            match entries
                .iter()
                .position(|e| e.key == d.key && e.admits(&d.observed))
            {
                Some(i) => seen[i].push(d),
                None if same_key().next().is_none() => {
                    problems.push(format!("drift not in the baseline: {d}"))
                }
                None => {
                    let listed: Vec<String> = same_key().map(|e| e.listed()).collect();
                    problems.push(format!(
                        "drift {} = {} is not the value the baseline lists ({}): {}",
                        d.key,
                        d.observed,
                        listed.join(" or "),
                        d.message
                    ));
                }
            }
        }
        if let Some(failure) = failure {
            // A scenario that did not get to the end cannot say which entries are stale.
            let mut lines = vec![failure];
            lines.extend(problems);
            return Outcome::Failed(lines.join("\n"));
        }
        let (mut known, mut contradicting) = (Vec::new(), false);
        for (entry, seen) in entries.iter().zip(&seen) {
            match seen.as_slice() {
                [] if entry.intermittent => {}
                [] => problems.push(format!(
                    "{} expects {} = {} on {} ({}), but it did not happen: remove or narrow the entry",
                    self.source,
                    entry.key,
                    entry.listed(),
                    self.codex,
                    entry.reason
                )),
                [first, rest @ ..] => known.push(KnownDrift {
                    drift: first.clone(),
                    more: rest.len(),
                    reason: entry.reason.clone(),
                    versions: entry.versions.clone(),
                    contradicts: entry.contradicts,
                }),
            }
            contradicting |= entry.contradicts && !seen.is_empty();
        }
        if !problems.is_empty() {
            Outcome::Failed(problems.join("\n"))
        } else if known.is_empty() {
            Outcome::Passed
        } else if self.strict {
            Outcome::Failed(format!(
                "strict mode: any drift fails, even drift the baseline lists:\n{}",
                Outcome::lines(&known).join("\n")
            ))
        } else if contradicting {
            Outcome::Contradicts(known)
        } else {
            Outcome::Drift(known)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(key: &str, observed: Value, contradicts: bool) -> Expected {
        Expected {
            scenario: "s".into(),
            key: key.into(),
            observed: Some(observed),
            observed_any: None,
            versions: vec!["0.171.0".into()],
            reason: format!("reason of {key}"),
            contradicts,
            intermittent: false,
        }
    }

    fn baseline() -> Baseline {
        let mut racy = entry("goal.tokens_used", json!(null), false);
        racy.observed = None;
        racy.observed_any = Some(vec![json!(0), json!(87)]);
        racy.scenario = "racy".into();
        Baseline {
            codex: "0.171.0".into(),
            expected: vec![
                entry(
                    "requests.tool_call_pairing",
                    json!("output_without_call"),
                    false,
                ),
                entry("goal.interrupt_leaves_status", json!("active"), true),
                racy,
            ],
            source: "fixtures/expected/baselines.json".into(),
            strict: false,
        }
    }

    fn pairing() -> Drift {
        Drift::new(
            "requests.tool_call_pairing",
            json!("output_without_call"),
            "request #1: output without its call",
        )
    }

    #[test]
    fn clean_runs_pass_and_listed_drift_is_known() {
        let mut b = baseline();
        b.expected.remove(1);
        assert_eq!(b.judge("other", None, vec![]), Outcome::Passed);
        let o = b.judge("s", None, vec![pairing()]);
        assert_eq!(
            o.detail().unwrap_or_default(),
            "requests.tool_call_pairing = \"output_without_call\": reason of \
             requests.tool_call_pairing (request #1: output without its call)"
        );
        assert_eq!(
            o,
            Outcome::Drift(vec![KnownDrift {
                drift: pairing(),
                more: 0,
                reason: "reason of requests.tool_call_pairing".into(),
                versions: b.expected[0].versions.clone(),
                contradicts: false,
            }])
        );
        // A failure is never excused by an entry.
        let o = b.judge("s", Some("checks failed".into()), vec![pairing()]);
        assert_eq!(o, Outcome::Failed("checks failed".into()));
    }

    #[test]
    fn contradicting_drift_has_its_own_outcome() {
        let b = baseline();
        let interrupt = Drift::new(
            "goal.interrupt_leaves_status",
            json!("active"),
            "not paused",
        );
        match b.judge("s", None, vec![pairing(), interrupt]) {
            Outcome::Contradicts(notes) => {
                assert_eq!(notes.len(), 2, "{notes:?}");
                assert!(notes[1].contradicts && !notes[0].contradicts, "{notes:?}");
                let text = notes[1].to_string();
                assert!(text.starts_with("contradicts the claim: "), "{text}");
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn the_message_is_never_matched() {
        let mut b = baseline();
        b.expected.remove(1);
        let reworded = Drift::new(
            "requests.tool_call_pairing",
            json!("output_without_call"),
            "entirely different words",
        );
        assert!(matches!(
            b.judge("s", None, vec![reworded]),
            Outcome::Drift(_)
        ));
        let other_key = Drift::new("requests.pairing", json!("output_without_call"), "same");
        assert!(matches!(
            b.judge("s", None, vec![other_key, pairing()]),
            Outcome::Failed(_)
        ));
    }

    #[test]
    fn repeated_drift_is_one_note() {
        let mut b = baseline();
        b.expected.remove(1);
        let o = b.judge("s", None, vec![pairing(), pairing(), pairing()]);
        match o {
            Outcome::Drift(notes) => {
                assert_eq!(notes.len(), 1);
                assert_eq!(notes[0].more, 2, "{notes:?}");
                let text = notes[0].to_string();
                assert!(text.ends_with("; and 2 more like it)"), "{text}");
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn unlisted_drift_fails() {
        let b = baseline();
        let unlisted = Drift::new("turn.trigger", json!(null), "no turn_trigger");
        match b.judge("other", None, vec![unlisted]) {
            Outcome::Failed(m) => assert_eq!(
                m,
                "drift not in the baseline: turn.trigger = null (no turn_trigger)"
            ),
            o => panic!("{o:?}"),
        }
        // An unlisted drift is named even when the scenario also failed.
        let unlisted = Drift::new("turn.trigger", json!(null), "no turn_trigger");
        match b.judge("other", Some("timed out".into()), vec![unlisted]) {
            Outcome::Failed(m) => {
                assert!(m.starts_with("timed out\ndrift not in the baseline"), "{m}")
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn an_intermittent_entry_is_not_stale_when_absent_and_reported_when_present() {
        let mut b = baseline();
        b.expected.retain(|e| e.key == "requests.tool_call_pairing");
        b.expected[0].intermittent = true;
        assert_eq!(b.judge("s", None, vec![]), Outcome::Passed);
        assert!(matches!(
            b.judge("s", None, vec![pairing()]),
            Outcome::Drift(_)
        ));
        b.expected[0].intermittent = false;
        assert!(matches!(b.judge("s", None, vec![]), Outcome::Failed(_)));
    }

    #[test]
    fn a_stale_entry_fails() {
        let b = baseline();
        match b.judge("s", None, vec![pairing()]) {
            Outcome::Failed(m) => {
                assert!(
                    m.contains("expects goal.interrupt_leaves_status = \"active\" on 0.171.0"),
                    "{m}"
                );
                assert!(m.contains("remove or narrow the entry"), "{m}");
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn an_observed_value_outside_the_listed_set_fails() {
        let b = baseline();
        let usage = |n: i64| Drift::new("goal.tokens_used", json!(n), "usage lost");
        assert!(matches!(
            b.judge("racy", None, vec![usage(0)]),
            Outcome::Drift(_)
        ));
        assert!(matches!(
            b.judge("racy", None, vec![usage(87)]),
            Outcome::Drift(_)
        ));
        match b.judge("racy", None, vec![usage(12)]) {
            Outcome::Failed(m) => assert!(
                m.starts_with(
                    "drift goal.tokens_used = 12 is not the value the baseline lists (one of [0,87])"
                ),
                "{m}"
            ),
            o => panic!("{o:?}"),
        }
        // An exact entry refuses another value the same way.
        let b = baseline();
        let paused = Drift::new("goal.interrupt_leaves_status", json!("complete"), "x");
        match b.judge("s", None, vec![pairing(), paused]) {
            Outcome::Failed(m) => assert!(m.contains("not the value the baseline lists"), "{m}"),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn strict_mode_fails_on_listed_drift() {
        let mut b = baseline();
        b.expected.remove(1);
        b.strict = true;
        match b.judge("s", None, vec![pairing()]) {
            Outcome::Failed(m) => assert!(m.starts_with("strict mode: any drift fails"), "{m}"),
            o => panic!("{o:?}"),
        }
        assert_eq!(b.judge("other", None, vec![]), Outcome::Passed);
    }

    #[test]
    fn pairing_kinds_drop_the_position() {
        assert_eq!(
            pairing_kind(
                "function_call_output \"agent/goal_objective\" at input[3] has no call_id"
            ),
            "function_call_output \"agent/goal_objective\" has no call_id"
        );
        let other = "function_call \"c1\" has no function_call_output in the same input";
        assert_eq!(pairing_kind(other), other);
    }

    #[test]
    fn versions_are_exact_or_ranges() {
        assert!(version_matches("0.161.0", "0.161.0"));
        assert!(!version_matches("0.161.0", "0.161.1"));
        assert!(version_matches(">=0.161.0", "0.171.0"));
        assert!(version_matches(">=0.161.0", "0.161.0"));
        assert!(!version_matches(">=0.161.0", "0.131.0"));
        assert!(version_matches("<0.161.0", "0.131.0"));
        assert!(!version_matches("<0.161.0", "0.161.0"));
        assert!(version_matches("<=0.161.0", "0.161.0"));
        assert!(version_matches(">0.131.0", "0.161.0"));
        assert!(version_matches("0.131.0..0.171.0", "0.161.0"));
        assert!(version_matches("0.131.0..0.171.0", "0.131.0"));
        assert!(!version_matches("0.131.0..0.171.0", "0.171.0"));
        assert!(
            version_matches(">=0.100.0", "0.200.0"),
            "numeric, not textual"
        );
    }

    #[test]
    fn files_load_check_and_filter_by_version() {
        let dir = tempfile::tempdir().unwrap();
        // A named file that is not there is an error naming it, never an empty baseline.
        let e = Baselines::read(dir.path()).unwrap_err();
        assert!(
            format!("{e:#}").contains(&dir.path().join(FILE_NAME).display().to_string()),
            "{e:#}"
        );
        assert!(Baselines::read(&dir.path().join("none.json")).is_err());
        // A directory of the former per-version files is refused, not read as empty.
        let old = tempfile::tempdir().unwrap();
        std::fs::write(old.path().join("0.171.0.json"), "{}").unwrap();
        let e = Baselines::read(old.path()).unwrap_err();
        assert!(format!("{e:#}").contains("former layout"), "{e:#}");
        let write = |text: &str| std::fs::write(dir.path().join(FILE_NAME), text).unwrap();
        write(
            r#"{"expected":[
              {"scenario":"s","key":"k","observed":null,"versions":[">=0.2.0"],"reason":"r","contradicts":false},
              {"scenario":"s","key":"j","observed_any":[0,87],"versions":["0.1.0"],"reason":"r","contradicts":true}
            ]}"#,
        );
        let all = Baselines::read(dir.path()).unwrap();
        let b = all.for_version("0.2.0");
        assert_eq!(b.expected.len(), 1);
        assert_eq!(b.expected[0].observed, Some(Value::Null));
        assert_eq!(all.for_version("0.1.0").expected.len(), 1);
        // A file path works as well as its directory.
        let file = dir.path().join(FILE_NAME);
        let from_file = Baselines::read(&file).unwrap();
        assert_eq!(from_file.for_version("0.3.0").expected.len(), 1);
        assert_eq!(from_file.source, file.display().to_string());
        for bad in [
            // no contradicts
            r#"{"expected":[{"scenario":"s","key":"k","observed":1,"versions":["0.1.0"],"reason":"r"}]}"#,
            // prose matching is gone
            r#"{"expected":[{"scenario":"s","contains":"x","reason":"r"}]}"#,
            // neither observed nor observed_any
            r#"{"expected":[{"scenario":"s","key":"k","versions":["0.1.0"],"reason":"r","contradicts":false}]}"#,
            // both
            r#"{"expected":[{"scenario":"s","key":"k","observed":1,"observed_any":[1,2],"versions":["0.1.0"],"reason":"r","contradicts":false}]}"#,
            // a bad version
            r#"{"expected":[{"scenario":"s","key":"k","observed":1,"versions":[">=latest"],"reason":"r","contradicts":false}]}"#,
            "{",
        ] {
            write(bad);
            assert!(Baselines::read(dir.path()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_release_without_entries_of_its_own_is_judged_by_the_ranges() {
        // No entry names 0.165.0 or 0.168.0: E9's range "<0.169.0" covers them, and
        // bisect found the drift gone in 0.169.0, where the range ends.
        let (scenario, key) = (
            "turn_interrupt_ends_turn_interrupted",
            "turn.interrupt_after_end",
        );
        let observed =
            json!({"while_idle": "no answer within 1 s", "after_next_turn": {"result": {}}});
        let drift = || {
            vec![Drift::new(
                key,
                observed.clone(),
                "held until the next turn",
            )]
        };
        for (version, listed) in [("0.165.0", true), ("0.168.0", true), ("0.169.0", false)] {
            let b = Baseline::builtin(version).unwrap();
            assert_eq!(
                b.entries(scenario).count(),
                usize::from(listed),
                "{version}"
            );
            let outcome = b.judge(scenario, None, drift());
            assert_eq!(
                matches!(outcome, Outcome::Drift(_)),
                listed,
                "{version}: {outcome:?}"
            );
            assert_eq!(
                b.judge(scenario, None, Vec::new()) == Outcome::Passed,
                !listed
            );
        }
    }

    #[test]
    fn the_repository_baselines_parse() {
        let all = Baselines::builtin().unwrap();
        assert!(!all.entries.is_empty(), "{} has no entries", all.source);
        for e in &all.entries {
            assert!(!e.key.is_empty() && !e.reason.is_empty(), "{}", e.scenario);
        }
    }
}
