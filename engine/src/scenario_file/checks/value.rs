//! `on = "value"`: a value bound by an earlier step (`capture`), e.g. a whole completed
//! turn (`capture = { done = "" }`), so each field can be its own check and drift key.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scenario_file::execute::Run;
use crate::scenario_file::steps::Uses;

/// A captured value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueCheck {
    /// The variable, `"$name"`.
    pub value: String,
    /// A subset it must match.
    #[serde(rename = "match")]
    pub matches: Value,
    /// A mismatch is drift under this key instead of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
}

impl ValueCheck {
    pub(super) fn needs_app_server(&self) -> bool {
        false
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        if !self.value.starts_with('$') || self.value.starts_with("${") {
            u.problems.push((
                self.value.clone(),
                format!(
                    "expected a variable (\"$name\") as the value to check, found {:?}",
                    self.value
                ),
            ));
        }
        u.texts.push(&self.value);
        u.expectations.push(&self.matches);
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let actual = run.value(&Value::String(self.value.clone()))?;
        run.expect(self.drift.as_ref(), &self.matches, &actual, &self.value)
    }
}
