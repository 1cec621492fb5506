//! The catalogue's known changes between two releases: the baseline entries (each a
//! drift a release is known for, with the range of releases it holds on) that hold on one
//! of the two and not the other. They say what codex does differently on B in the
//! catalogue's own scenarios, before any of the integrator's files is run.

use serde::Serialize;

use crate::harness::baseline::Baselines;

/// One known difference between A and B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KnownChange {
    /// The scenario it is of.
    pub scenario: String,
    /// The drift's key.
    pub key: String,
    /// `starts` (on B, not on A) or `ends` (on A, not on B).
    pub change: &'static str,
    /// What codex shows there.
    pub observed: String,
    /// Why, for people.
    pub reason: String,
    /// Whether the drift contradicts the scenario's headline claim.
    pub contradicts: bool,
}

/// The entries of `baselines` that hold on one of `from` and `to` and not the other.
pub fn between(baselines: &Baselines, from: &str, to: &str) -> Vec<KnownChange> {
    baselines
        .entries
        .iter()
        .filter_map(|e| {
            let change = match (e.applies_to(from), e.applies_to(to)) {
                (false, true) => "starts",
                (true, false) => "ends",
                _ => return None,
            };
            Some(KnownChange {
                scenario: e.scenario.clone(),
                key: e.key.clone(),
                change,
                observed: e.listed(),
                reason: e.reason.clone(),
                contradicts: e.contradicts,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_a_change_where_one_end_has_it_and_the_other_not() {
        let baselines = Baselines::parse(
            r#"{"expected": [
                {"scenario": "s1", "key": "k.new", "observed": 1, "versions": [">=0.150.0"],
                 "reason": "new in 0.150", "contradicts": false},
                {"scenario": "s2", "key": "k.old", "observed": 2, "versions": ["<0.140.0"],
                 "reason": "gone in 0.140", "contradicts": true},
                {"scenario": "s3", "key": "k.both", "observed": 3, "versions": [">=0.100.0"],
                 "reason": "always", "contradicts": false}
            ]}"#,
            "test",
        )
        .unwrap();
        let changes = between(&baselines, "0.131.0", "0.171.0");
        let got: Vec<(&str, &str)> = changes.iter().map(|c| (c.key.as_str(), c.change)).collect();
        assert_eq!(got, [("k.new", "starts"), ("k.old", "ends")]);
        assert!(between(&baselines, "0.171.0", "0.171.0").is_empty());
    }
}
