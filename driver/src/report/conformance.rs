//! The report section "codex against its own schema": per version, how many of the
//! messages codex sent its client were validated against the schema the same binary
//! publishes, which did not conform (method, place, what the schema wanted, what came, in
//! which scenarios) and which methods the schema does not know
//! (see [`crate::harness::conformance`]).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::harness::conformance::{NONCONFORMING, UNKNOWN};
use crate::harness::runner::Record;
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

/// The totals per binary label, in the order the labels first appear.
pub fn totals(records: &[Record]) -> Vec<(String, Totals)> {
    let mut out: Vec<(String, Totals)> = Vec::new();
    for r in records {
        let Some(c) = &r.checked else { continue };
        let at = match out.iter().position(|(l, _)| *l == r.label) {
            Some(i) => i,
            None => {
                out.push((r.label.clone(), Totals::default()));
                out.len() - 1
            }
        };
        let t = &mut out[at].1;
        t.scenarios += 1;
        t.validated += c.validated;
        t.nonconforming += c.nonconforming;
        t.unknown += c.unknown;
        t.unchecked += c.unchecked;
        t.time += c.time;
    }
    out
}

/// One line of totals: `codex-0.171.0: 812 messages validated, 3 did not conform, …`.
pub fn line(label: &str, t: &Totals) -> String {
    format!(
        "{label}: {} message(s) validated in {} scenario(s), {} did not conform, {} of unknown \
         method(s), {} without a published type; checks took {} ms",
        t.validated,
        t.scenarios,
        t.nonconforming,
        t.unknown,
        t.unchecked,
        t.time.as_millis()
    )
}

/// The section: one item per version, titled with its totals, listing each distinct
/// observation with the scenarios it came from.
pub fn section(records: &[Record]) -> Section {
    let items = totals(records)
        .into_iter()
        .map(|(label, t)| {
            // Observation (key and value) -> (first message, scenarios).
            let mut found: BTreeMap<(String, String), (String, Vec<&str>)> = BTreeMap::new();
            let drift = records
                .iter()
                .filter(|r| r.label == label)
                .filter_map(|r| r.checked.as_ref().map(|c| (r.scenario, c)))
                .flat_map(|(s, c)| c.drift.iter().map(move |d| (s, d)));
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
    use crate::harness::baseline::Drift;
    use crate::harness::conformance::Checked;
    use crate::harness::outcome::Outcome;

    fn record(scenario: &'static str, label: &str, checked: Option<Checked>) -> Record {
        Record {
            scenario,
            id: "A1",
            label: label.into(),
            outcome: Outcome::Passed,
            duration: Duration::ZERO,
            requests: Vec::new(),
            observations: Vec::new(),
            transcripts: Vec::new(),
            checked,
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
        let records = [
            record("one", "codex-0.131.0", Some(bad.clone())),
            record("two", "codex-0.131.0", Some(bad)),
            record("one", "codex-0.171.0", Some(good)),
            record("three", "codex-0.171.0", None),
        ];
        let s = section(&records);
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
        assert_eq!(totals(&records)[1].1.unchecked, 1);
    }
}
