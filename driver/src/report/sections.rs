//! The sections under the matrix in `report.html` and `report.md`: failures, known drift
//! and not-applicable reasons, from the matrix itself.
//!
//! This is also the hook for drift found by other means: a schema diff between codex
//! versions or a diff of the requests they build becomes one more [`Section`] appended to
//! the list handed to [`crate::report::write_dir`]; the renderers need no change.

use crate::report::matrix::Matrix;
use crate::scenario::Outcome;

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

/// The anchor of a cell's item: `fail-<scenario>-<label>` and the like, with every
/// character that is not a letter, digit, `-` or `_` replaced.
pub fn cell_anchor(kind: &str, scenario: &str, label: &str) -> String {
    format!("{kind}-{scenario}-{label}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The anchor kind of an outcome's item (`None` for a pass).
pub fn anchor_kind(outcome: &Outcome) -> Option<&'static str> {
    match outcome {
        Outcome::Passed => None,
        Outcome::Drift(_) => Some("drift"),
        Outcome::Failed(_) => Some("fail"),
        Outcome::NotApplicable(_) => Some("na"),
    }
}

/// The sections every report has: failures (full reasons), known drift (what the
/// version's baseline expects, with what was seen) and not-applicable reasons.
pub fn standard(matrix: &Matrix) -> Vec<Section> {
    let mut failures = Vec::new();
    let mut drift = Vec::new();
    let mut not_applicable = Vec::new();
    for e in &matrix.entries {
        let title = format!(
            "{} ({}) on {}",
            e.scenario,
            matrix.id_of(&e.scenario),
            e.codex
        );
        let anchor = anchor_kind(&e.outcome).map(|k| cell_anchor(k, &e.scenario, &e.codex));
        let (list, text) = match &e.outcome {
            Outcome::Passed => continue,
            Outcome::Failed(reason) => (&mut failures, reason.clone()),
            Outcome::Drift(notes) => (&mut drift, notes.join("\n")),
            Outcome::NotApplicable(reason) => (&mut not_applicable, reason.clone()),
        };
        list.push(Item {
            anchor,
            title,
            text,
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
            id: "known-drift".into(),
            title: "Known drift".into(),
            intro: "Where a version differs from the catalogue as its baseline \
                    (fixtures/expected/VERSION.json) expects: why, and what was seen."
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
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::matrix::tests::sample;

    #[test]
    fn standard_sections_list_each_non_passing_cell_once() {
        let s = standard(&sample());
        let ids: Vec<&str> = s.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["failures", "known-drift", "not-applicable"]);
        assert_eq!(s[0].items.len(), 1);
        assert_eq!(s[0].items[0].title, "alpha (A1) on codex-0.171.0");
        assert!(s[0].items[0].text.ends_with("second line"));
        assert_eq!(
            s[0].items[0].anchor.as_deref(),
            Some("fail-alpha-codex-0_171_0")
        );
        assert_eq!(s[1].items[0].text, "injects output (goal_objective)");
        assert_eq!(s[2].items[0].text, "no thread/goal methods");
    }
}
