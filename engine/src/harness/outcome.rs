//! How a scenario ended on one binary, typed from the scenario to the report: the word of
//! the results matrix, the divergences a scenario reported ([`Drift`]) and those the
//! baseline listed ([`KnownDrift`], with the entry that listed them).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a scenario ended on one binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every assertion held.
    Passed,
    /// Every assertion held except divergences this version's baseline lists, none of
    /// which contradicts the scenario's headline claim: each with the baseline's reason and
    /// what was seen.
    Drift(Vec<KnownDrift>),
    /// Differed only as the baseline lists, but at least one listed divergence contradicts
    /// the scenario's headline claim (the claim did not hold on this version): the notes,
    /// as for [`Outcome::Drift`].
    Contradicts(Vec<KnownDrift>),
    /// Something did not hold: the reason.
    Failed(String),
    /// The binary cannot do what the scenario needs: the reason. Never counted as passed.
    NotApplicable(String),
}

impl Outcome {
    /// Its kind, without what there is to say.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Passed => OutcomeKind::Passed,
            Outcome::Drift(_) => OutcomeKind::Drift,
            Outcome::Contradicts(_) => OutcomeKind::Contradicts,
            Outcome::Failed(_) => OutcomeKind::Failed,
            Outcome::NotApplicable(_) => OutcomeKind::NotApplicable,
        }
    }

    /// The matrix word of its kind (see [`OutcomeKind::word`]).
    pub fn word(&self) -> &'static str {
        self.kind().word()
    }

    /// What there is to say beyond the word: the reason (failed, not applicable) or the
    /// known drift, one per line; `None` for a pass.
    pub fn detail(&self) -> Option<String> {
        match self {
            Outcome::Passed => None,
            Outcome::Drift(known) | Outcome::Contradicts(known) => {
                Some(Outcome::lines(known).join("\n"))
            }
            Outcome::Failed(reason) | Outcome::NotApplicable(reason) => Some(reason.clone()),
        }
    }

    /// The listed drift of a drift or contradicting outcome (empty for any other).
    pub fn known(&self) -> &[KnownDrift] {
        match self {
            Outcome::Drift(known) | Outcome::Contradicts(known) => known,
            _ => &[],
        }
    }

    /// Each listed drift as its line of text (see [`KnownDrift`]'s `Display`).
    pub fn lines(known: &[KnownDrift]) -> Vec<String> {
        known.iter().map(ToString::to_string).collect()
    }
}

/// The kind of an [`Outcome`], and every way it is spelled: the matrix word, the name in
/// `results.json` and JUnit, the class in HTML (and the anchors of its sections).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// Every assertion held.
    Passed,
    /// Listed drift in a detail.
    Drift,
    /// Listed drift that contradicts the headline claim.
    Contradicts,
    /// Something did not hold.
    Failed,
    /// The binary cannot do what the scenario needs.
    NotApplicable,
}

impl OutcomeKind {
    /// Every kind, in the order the matrix counts them.
    pub const ALL: [OutcomeKind; 5] = [
        OutcomeKind::Passed,
        OutcomeKind::Drift,
        OutcomeKind::Contradicts,
        OutcomeKind::Failed,
        OutcomeKind::NotApplicable,
    ];

    /// The matrix word: `pass`, `drift` (as the baseline expects), `CONTRA` (listed drift
    /// that contradicts the headline claim), `FAIL` or `n/a`.
    pub fn word(self) -> &'static str {
        match self {
            OutcomeKind::Passed => "pass",
            OutcomeKind::Drift => "drift",
            OutcomeKind::Contradicts => "CONTRA",
            OutcomeKind::Failed => "FAIL",
            OutcomeKind::NotApplicable => "n/a",
        }
    }

    /// The name in `results.json` (`status`) and JUnit (`parity.status`): `passed`,
    /// `drift`, `contradicts`, `failed`, `not_applicable`.
    pub fn name(self) -> &'static str {
        match self {
            OutcomeKind::Passed => "passed",
            OutcomeKind::Drift => "drift",
            OutcomeKind::Contradicts => "contradicts",
            OutcomeKind::Failed => "failed",
            OutcomeKind::NotApplicable => "not_applicable",
        }
    }

    /// The HTML class of a cell and the prefix of its item's anchor: `pass`, `drift`,
    /// `contra`, `fail`, `na`.
    pub fn class(self) -> &'static str {
        match self {
            OutcomeKind::Passed => "pass",
            OutcomeKind::Drift => "drift",
            OutcomeKind::Contradicts => "contra",
            OutcomeKind::Failed => "fail",
            OutcomeKind::NotApplicable => "na",
        }
    }
}

/// One divergence a scenario reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    /// A stable dotted name for what differs (`goal.interrupt_leaves_status`).
    pub key: String,
    /// What codex showed, as JSON: what the baseline matches.
    pub observed: Value,
    /// The same for people; never matched.
    pub message: String,
}

impl Drift {
    /// A drift with its key, observed value and message.
    pub fn new(key: impl Into<String>, observed: Value, message: impl Into<String>) -> Drift {
        Drift {
            key: key.into(),
            observed,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {} ({})", self.key, self.observed, self.message)
    }
}

/// A divergence the baseline lists, as one run saw it: the first drift its entry matched,
/// how many more like it followed, and the entry (its reason, its versions, whether it
/// contradicts the scenario's headline claim).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownDrift {
    /// The first drift the entry matched.
    pub drift: Drift,
    /// How many more drifts the same entry matched in the run.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: usize,
    /// The entry's reason.
    pub reason: String,
    /// The entry's versions (`>=0.161.0`, `A..B`).
    pub versions: Vec<String>,
    /// Whether the entry contradicts the scenario's headline claim.
    #[serde(default)]
    pub contradicts: bool,
}

impl KnownDrift {
    /// A listed drift (key `test.key`) whose entry gives `reason`: what the tests of the
    /// reports (in the `codex-parity` crate) build their rows from.
    pub fn with_reason(reason: &str, contradicts: bool) -> KnownDrift {
        KnownDrift {
            drift: Drift::new("test.key", Value::from("seen"), "as seen"),
            more: 0,
            reason: reason.to_string(),
            versions: vec![">=0.1.0".into()],
            contradicts,
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl std::fmt::Display for KnownDrift {
    /// `[contradicts the claim: ]KEY = OBSERVED: REASON (MESSAGE[; and N more like it])`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.contradicts {
            write!(f, "contradicts the claim: ")?;
        }
        let d = &self.drift;
        write!(
            f,
            "{} = {}: {} ({}",
            d.key, d.observed, self.reason, d.message
        )?;
        if self.more > 0 {
            write!(f, "; and {} more like it", self.more)?;
        }
        write!(f, ")")
    }
}
