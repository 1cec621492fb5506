//! How a scenario ended on one binary: the word of the results matrix and what there is to
//! say beyond it.

/// How a scenario ended on one binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every assertion held.
    Passed,
    /// Every assertion held except divergences this version's baseline lists, none of
    /// which contradicts the scenario's headline claim: each with the baseline's reason and
    /// what was seen.
    Drift(Vec<String>),
    /// Differed only as the baseline lists, but at least one listed divergence contradicts
    /// the scenario's headline claim (the claim did not hold on this version): the notes,
    /// as for [`Outcome::Drift`].
    Contradicts(Vec<String>),
    /// Something did not hold: the reason.
    Failed(String),
    /// The binary cannot do what the scenario needs: the reason. Never counted as passed.
    NotApplicable(String),
}

impl Outcome {
    /// The matrix word: `pass`, `drift` (as the baseline expects), `CONTRA` (listed drift
    /// that contradicts the headline claim), `FAIL` or `n/a`.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Passed => "pass",
            Outcome::Drift(_) => "drift",
            Outcome::Contradicts(_) => "CONTRA",
            Outcome::Failed(_) => "FAIL",
            Outcome::NotApplicable(_) => "n/a",
        }
    }

    /// What there is to say beyond the word: the reason (failed, not applicable) or the
    /// known drift, one per line; `None` for a pass.
    pub fn detail(&self) -> Option<String> {
        match self {
            Outcome::Passed => None,
            Outcome::Drift(notes) | Outcome::Contradicts(notes) => Some(notes.join("\n")),
            Outcome::Failed(reason) | Outcome::NotApplicable(reason) => Some(reason.clone()),
        }
    }
}
