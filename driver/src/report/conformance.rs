//! The report section "codex against its own schema": per version, how many of the
//! messages codex sent its client were validated against the schema the same binary
//! publishes, which did not conform (method, place, what the schema wanted, what came, in
//! which scenarios) and which methods the schema does not know
//! (see [`crate::harness::conformance`]).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::harness::conformance::{Checked, NONCONFORMING, UNKNOWN};
use crate::report::matrix::Matrix;
use crate::report::sections::{Item, Section};

/// The totals of one version.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Scenarios whose transcripts were checked.
    pub scenarios: usize,
    /// Messages validated against a schema type.
    pub validated: usize,
    /// Of those, messages that did not conform.
    pub nonconforming: usize,
    /// Messages whose method the schema lacks.
    pub unknown: usize,
    /// Messages with nothing to check them against.
    pub unchecked: usize,
    /// The time the checks took, all scenarios together.
    pub time: Duration,
}

/// The totals per binary label, in column order (columns nothing was checked on are left
/// out).
pub fn totals(matrix: &Matrix) -> Vec<(String, Totals)> {
    let mut out = Vec::new();
    for column in &matrix.columns {
        let mut t = Totals::default();
        for c in checked_in(matrix, &column.label) {
            t.scenarios += 1;
            t.validated += c.1.validated;
            t.nonconforming += c.1.nonconforming;
            t.unknown += c.1.unknown;
            t.unchecked += c.1.unchecked;
            t.time += c.1.time;
        }
        if t.scenarios > 0 {
            out.push((column.label.clone(), t));
        }
    }
    out
}

/// The checked cells of the column `label`: (scenario, what was found).
fn checked_in<'a>(
    matrix: &'a Matrix,
    label: &'a str,
) -> impl Iterator<Item = (&'a str, &'a Checked)> {
    matrix
        .entries
        .iter()
        .filter(move |e| e.codex == label)
        .filter_map(|e| e.checked.as_ref().map(|c| (e.scenario.as_str(), c)))
}

/// One line of totals: `codex-0.171.0: 812 messages validated, 3 did not conform, …`.
pub fn line(label: &str, t: &Totals) -> String {
    format!(
        "{label}: {} message(s) validated in {} scenario(s), {} did not conform, {} of unknown \
         method(s), {} without a published type",
        t.validated, t.scenarios, t.nonconforming, t.unknown, t.unchecked,
    )
}

/// The section: one item per version, titled with its totals, listing each distinct
/// observation with the scenarios it came from.
pub fn section(matrix: &Matrix) -> Section {
    let items = totals(matrix)
        .into_iter()
        .map(|(label, t)| {
            // Observation (key and value) -> (first message, scenarios).
            let mut found: BTreeMap<(String, String), (String, Vec<&str>)> = BTreeMap::new();
            let drift =
                checked_in(matrix, &label).flat_map(|(s, c)| c.drift.iter().map(move |d| (s, d)));
            for (scenario, d) in drift {
                let entry = found
                    .entry((d.key.clone(), d.observed.to_string()))
                    .or_insert_with(|| (d.message.clone(), Vec::new()));
                entry.1.push(scenario);
            }
            let text = if found.is_empty() {
                "every message validated conforms; no unknown method".to_string()
            } else {
                found
                    .into_iter()
                    .map(|((key, observed), (message, scenarios))| {
                        format!(
                            "{key} = {observed}\n  {message}\n  in: {}",
                            scenarios.join(", ")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            Item {
                anchor: None,
                title: line(&label, &t),
                text,
            }
        })
        .collect();
    Section {
        id: "schema-conformance".into(),
        title: "codex against its own schema".into(),
        intro: format!(
            "Every message codex sent its client (answers, notifications, server requests) \
             checked against the schema the same binary prints (generate-json-schema \
             --experimental). Drift keys: {NONCONFORMING}, {UNKNOWN}; each version's baseline \
             judges them like any drift."
        ),
        items,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::harness::outcome::Drift;
    use crate::harness::outcome::Outcome;
    use crate::report::matrix::{Column, Entry};

    fn entry(scenario: &str, label: &str, checked: Option<Checked>) -> Entry {
        Entry {
            scenario: scenario.into(),
            codex: label.into(),
            outcome: Outcome::Passed,
            duration: Duration::ZERO,
            observations: Vec::new(),
            checked,
            drift: Vec::new(),
            failure: None,
            exercised: Default::default(),
            perf: Default::default(),
        }
    }

    #[test]
    fn totals_per_version_and_one_line_per_observation() {
        let drift = Drift::new(
            NONCONFORMING,
            json!({"type": "notification", "method": "m", "pointer": "/a", "wanted": "x"}),
            "m does not conform",
        );
        let bad = Checked {
            validated: 4,
            nonconforming: 1,
            drift: vec![drift],
            ..Checked::default()
        };
        let good = Checked {
            validated: 6,
            unchecked: 1,
            ..Checked::default()
        };
        let column = |label: &str| Column {
            label: label.into(),
            version: label.trim_start_matches("codex-").into(),
            protocol: None,
        };
        let matrix = Matrix {
            shard: None,
            rows: Vec::new(),
            columns: vec![column("codex-0.131.0"), column("codex-0.171.0")],
            entries: vec![
                entry("one", "codex-0.131.0", Some(bad.clone())),
                entry("two", "codex-0.131.0", Some(bad)),
                entry("one", "codex-0.171.0", Some(good)),
                entry("three", "codex-0.171.0", None),
            ],
        };
        let s = section(&matrix);
        assert_eq!(s.items.len(), 2);
        assert!(
            s.items[0]
                .title
                .starts_with("codex-0.131.0: 8 message(s) validated in 2")
        );
        assert!(
            s.items[0].text.contains("in: one, two"),
            "{}",
            s.items[0].text
        );
        assert_eq!(s.items[0].text.lines().count(), 3);
        assert!(
            s.items[1]
                .text
                .starts_with("every message validated conforms")
        );
        assert_eq!(totals(&matrix)[1].1.unchecked, 1);
    }
}
