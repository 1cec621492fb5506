//! Where each scenario's outcome changes along the versions of a matrix, oldest first: what
//! a sweep over many releases (`run --releases A..B`) is read for. A matrix of twenty
//! columns is hard to scan; "E9: drift until 0.168.0, pass from 0.169.0" is not.

use crate::codex::versions::sort_key;
use crate::report::matrix::Matrix;
use crate::report::sections::{Item, Section};

/// One scenario whose matrix word changes between two versions next to each other in the
/// matrix (versions without a result are skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The scenario.
    pub scenario: String,
    /// The last version with the old word, and the word.
    pub before: (String, &'static str),
    /// The first version with the new word, and the word.
    pub after: (String, &'static str),
}

impl Change {
    /// The step without the scenario: `drift on 0.168.0, pass on 0.169.0`.
    pub fn step(&self) -> String {
        format!(
            "{} on {}, {} on {}",
            self.before.1, self.before.0, self.after.1, self.after.0
        )
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.scenario, self.step())
    }
}

/// Every change of a scenario's word between consecutive versions, by scenario (matrix row
/// order), then version.
pub fn changes(matrix: &Matrix) -> Vec<Change> {
    let mut order: Vec<usize> = (0..matrix.columns.len()).collect();
    order.sort_by_key(|&c| sort_key(&matrix.columns[c].version));
    let grid = matrix.grid();
    let mut found = Vec::new();
    for (row, cells) in matrix.rows.iter().zip(&grid) {
        let mut last: Option<(String, &'static str)> = None;
        for &c in &order {
            let Some(entry) = cells[c] else { continue };
            let now = (matrix.columns[c].version.clone(), entry.outcome.word());
            if let Some(before) = last.take().filter(|b| b.1 != now.1) {
                found.push(Change {
                    scenario: row.name.clone(),
                    before,
                    after: now.clone(),
                });
            }
            last = Some(now);
        }
    }
    found
}

/// The changes as text, one per line, or a line saying there are none.
pub fn render(changes: &[Change]) -> String {
    if changes.is_empty() {
        return "no scenario's outcome changes from one version to the next\n".into();
    }
    let mut text = format!(
        "outcome changes from one version to the next ({}; `codex-parity bisect` narrows one \
         down to a release when versions were skipped):\n",
        changes.len()
    );
    for c in changes {
        text.push_str(&format!("  {c}\n"));
    }
    text
}

/// The changes as a report section.
pub fn section(changes: &[Change]) -> Section {
    Section {
        id: "version-changes".into(),
        title: "Changes along the versions".into(),
        intro: "Where a scenario's outcome changes from one version to the next, oldest first."
            .into(),
        items: changes
            .iter()
            .map(|c| Item {
                anchor: None,
                title: c.scenario.clone(),
                text: c.step(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::harness::outcome::Outcome;
    use crate::report::matrix::{Column, Entry, Row};

    #[test]
    fn changes_are_found_in_version_order_skipping_missing_cells() {
        let versions = ["0.10.0", "0.2.0", "0.3.0", "0.9.0"];
        let column = |v: &str| Column {
            label: format!("codex-{v}"),
            version: v.to_string(),
            protocol: None,
        };
        let entry = |v: &str, outcome: Outcome| Entry {
            scenario: "e9".into(),
            codex: format!("codex-{v}"),
            outcome,
            duration: Duration::ZERO,
            observations: Vec::new(),
            checked: None,
            drift: Vec::new(),
            failure: None,
            exercised: Default::default(),
            perf: Default::default(),
        };
        let matrix = Matrix {
            shard: None,
            rows: vec![Row {
                name: "e9".into(),
                id: "E9".into(),
                summary: String::new(),
            }],
            columns: versions.iter().map(|v| column(v)).collect(),
            entries: vec![
                entry("0.2.0", Outcome::Drift(vec![])),
                entry("0.3.0", Outcome::Drift(vec![])),
                entry("0.10.0", Outcome::Passed),
            ],
        };
        let found = changes(&matrix);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].to_string(), "e9: drift on 0.3.0, pass on 0.10.0");
        assert!(render(&found).contains("  e9: drift on 0.3.0"));
        assert_eq!(
            section(&found).items[0].text,
            "drift on 0.3.0, pass on 0.10.0"
        );
        assert!(render(&[]).starts_with("no scenario"));
    }
}
