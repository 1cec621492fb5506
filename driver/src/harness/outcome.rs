//! How a scenario ended on one binary: the word of the results matrix and what there is to
//! say beyond it.

/// How a scenario ended on one binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every assertion held.
    Passed,
    /// Every assertion held except divergences this version's baseline lists: each with
    /// the baseline's reason and what was seen.
    Drift(Vec<String>),
    /// Something did not hold: the reason.
    Failed(String),
    /// The binary cannot do what the scenario needs: the reason. Never counted as passed.
    NotApplicable(String),
}

impl Outcome {
    /// The matrix word: `pass`, `drift` (as the baseline expects), `FAIL` or `n/a`.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Passed => "pass",
            Outcome::Drift(_) => "drift",
            Outcome::Failed(_) => "FAIL",
            Outcome::NotApplicable(_) => "n/a",
        }
    }

    /// What there is to say beyond the word: the reason (failed, not applicable) or the
    /// known drift, one per line; `None` for a pass.
    pub fn detail(&self) -> Option<String> {
        match self {
            Outcome::Passed => None,
            Outcome::Drift(notes) => Some(notes.join("\n")),
            Outcome::Failed(reason) | Outcome::NotApplicable(reason) => Some(reason.clone()),
        }
    }
}
