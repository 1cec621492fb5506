//! The sections under the matrix in `report.html` and `report.md`: failures, known drift
//! and not-applicable reasons, from the matrix itself.
//!
//! This is also the hook for drift found by other means: a schema diff between codex
//! versions or a diff of the requests they build becomes one more [`Section`] appended to
//! the list handed to [`crate::report::write_dir`]; the renderers need no change.

use crate::harness::outcome::Outcome;
use crate::report::matrix::{Entry, Matrix};

/// One titled part of the report below the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// HTML anchor (`failures`), unique in the report.
    pub id: String,
    /// Heading (`Failures`).
    pub title: String,
    /// One plain-text sentence under the heading: what the items are.
    pub intro: String,
    /// The items; a section without items says so.
    pub items: Vec<Item>,
}

/// One entry of a section: a heading and its plain text (escaped by every renderer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// HTML anchor the matrix cell links to, if the item belongs to a cell.
    pub anchor: Option<String>,
    /// One line (`smoke_uses_mock_responses on codex-0.171.0`).
    pub title: String,
    /// The detail, any number of lines.
    pub text: String,
}

/// The HTML anchor of a cell's item (`None` for a pass): `fail-<scenario>-<label>` and the
/// like, with every character that is not a letter, digit, `-` or `_` replaced.
pub fn anchor(entry: &Entry) -> Option<String> {
    if entry.outcome == Outcome::Passed {
        return None;
    }
    let kind = entry.outcome.kind().class();
    let anchor = format!("{kind}-{}-{}", entry.scenario, entry.codex)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Some(anchor)
}

/// The sections every report has: failures (full reasons), known drift (what the
/// version's baseline expects, with what was seen) and not-applicable reasons.
pub fn standard(matrix: &Matrix) -> Vec<Section> {
    let mut failures = Vec::new();
    let mut drift = Vec::new();
    let mut contradicting = Vec::new();
    let mut not_applicable = Vec::new();
    let mut observations = Vec::new();
    for e in &matrix.entries {
        let title = format!(
            "{} ({}) on {}",
            e.scenario,
            matrix.id_of(&e.scenario),
            e.codex
        );
        if !e.observations.is_empty() {
            observations.push(Item {
                anchor: None,
                title: title.clone(),
                text: e.observations.join("\n"),
            });
        }
        let list = match &e.outcome {
            Outcome::Passed => continue,
            Outcome::Failed(_) => &mut failures,
            Outcome::Drift(_) => &mut drift,
            Outcome::Contradicts(_) => &mut contradicting,
            Outcome::NotApplicable(_) => &mut not_applicable,
        };
        list.push(Item {
            anchor: anchor(e),
            title,
            text: e.outcome.detail().unwrap_or_default(),
        });
    }
    vec![
        Section {
            id: "failures".into(),
            title: "Failures".into(),
            intro: "Scenarios that did not behave as the catalogue says, with the full reason."
                .into(),
            items: failures,
        },
        Section {
            id: "contradicting-drift".into(),
            title: "Drift that contradicts the claim".into(),
            intro: "Where a version differs as its baseline (fixtures/expected/baselines.json) \
                    expects, but the difference means the scenario's headline claim does not \
                    hold on that version: why, and what was seen."
                .into(),
            items: contradicting,
        },
        Section {
            id: "known-drift".into(),
            title: "Known drift".into(),
            intro: "Where a version differs from the catalogue in a detail, as its baseline \
                    (fixtures/expected/baselines.json) expects: why, and what was seen."
                .into(),
            items: drift,
        },
        Section {
            id: "not-applicable".into(),
            title: "Not applicable".into(),
            intro: "Scenarios a binary cannot run, read from its own protocol schema; never counted as passed."
                .into(),
            items: not_applicable,
        },
        Section {
            id: "observations".into(),
            title: "Observations".into(),
            intro: "Facts scenarios recorded about each codex without judging them (which path \
                    it took, what it answered beyond the catalogue)."
                .into(),
            items: observations,
        },
    ]
}

/// The schema drift between consecutive versions: one item per pair, titled with the
/// counts, holding the whole `schema-diff` text.
pub fn schema_drift(diffs: &[crate::codex::schema_diff::SchemaDiff]) -> Section {
    Section {
        id: "schema-drift".into(),
        title: "Schema drift".into(),
        intro: "What changed in the protocol schema (generate-json-schema --experimental) from \
                each version to the next, oldest first, as `codex-parity schema-diff A B` shows it."
            .into(),
        items: diffs
            .iter()
            .map(|d| Item {
                anchor: None,
                title: format!("{} -> {}: {}", d.from, d.to, d.summary()),
                text: d.to_text(),
            })
            .collect(),
    }
}

/// The request drift: the normalised model requests of each scenario compared from each
/// version to the next (`codex-parity run --request-diff`).
pub fn request_drift(text: String) -> Section {
    Section {
        id: "request-drift".into(),
        title: "Request drift".into(),
        intro: "What changed in the model requests codex builds, per scenario, from each version \
                to the next (ids, times and paths normalised)."
            .into(),
        items: vec![Item {
            anchor: None,
            title: "per scenario, oldest version first".into(),
            text,
        }],
    }
}

/// The transcript drift: what codex sent the client in each scenario compared from each
/// version to the next (`codex-parity run --transcript-diff`).
pub fn transcript_drift(text: String) -> Section {
    Section {
        id: "transcript-drift".into(),
        title: "Transcript drift".into(),
        intro: "What changed in the messages codex sends its client (answers, notifications, \
                server requests), per scenario, from each version to the next (normalised)."
            .into(),
        items: vec![Item {
            anchor: None,
            title: "per scenario, oldest version first".into(),
            text,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::matrix::tests::sample;

    #[test]
    fn standard_sections_list_each_non_passing_cell_once() {
        let s = standard(&sample());
        let ids: Vec<&str> = s.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "failures",
                "contradicting-drift",
                "known-drift",
                "not-applicable",
                "observations"
            ]
        );
        assert!(s[1].items.is_empty());
        assert_eq!(s[0].items.len(), 1);
        assert_eq!(s[0].items[0].title, "alpha (A1) on codex-0.171.0");
        assert!(s[0].items[0].text.ends_with("second line"));
        assert_eq!(
            s[0].items[0].anchor.as_deref(),
            Some("fail-alpha-codex-0_171_0")
        );
        assert_eq!(
            s[2].items[0].text,
            "test.key = \"seen\": injects output (goal_objective) (as seen)"
        );
        assert_eq!(s[3].items[0].text, "no thread/goal methods");
    }

    #[test]
    fn contradicting_drift_has_its_own_section_and_anchor() {
        let mut m = sample();
        m.entries[4].outcome =
            Outcome::Contradicts(vec![crate::harness::outcome::KnownDrift::with_reason(
                "the goal stays active",
                true,
            )]);
        let s = standard(&m);
        assert_eq!(s[1].id, "contradicting-drift");
        assert_eq!(s[1].items.len(), 1);
        assert_eq!(
            s[1].items[0].text,
            "contradicts the claim: test.key = \"seen\": the goal stays active (as seen)"
        );
        assert_eq!(
            s[1].items[0].anchor.as_deref(),
            Some("contra-gamma-codex-0_171_0")
        );
        assert_eq!(s[2].items.len(), 1, "known drift stays apart");
    }

    #[test]
    fn drift_sections_carry_one_item_per_version_pair() {
        use crate::codex::schema::Schema;
        let (a, b) = (Schema::default(), Schema::default());
        let d = crate::codex::schema_diff::diff("codex-a", &a, "codex-b", &b);
        let section = schema_drift(&[d.clone(), d]);
        assert_eq!(section.id, "schema-drift");
        assert_eq!(section.items.len(), 2);
        assert!(
            section.items[0]
                .title
                .starts_with("codex-a -> codex-b: client requests +0 -0")
        );
        let r = request_drift("scenario x\n  no change".into());
        assert_eq!(r.items[0].text, "scenario x\n  no change");
    }
}
