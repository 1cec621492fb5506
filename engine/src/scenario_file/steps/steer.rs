//! `do = "steer"`: `turn/steer` of a running turn.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Uses;
use crate::scenario_file::execute::Run;
use crate::scenario_file::fields::{Input, is_thread_var, is_turn_var, thread_var, turn_var};

/// A steer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SteerStep {
    /// The thread (`$thread` by default).
    #[serde(default = "thread_var", skip_serializing_if = "is_thread_var")]
    pub thread: String,
    /// The turn (`$turn` by default).
    #[serde(default = "turn_var", skip_serializing_if = "is_turn_var")]
    pub turn: String,
    /// The input.
    pub input: Input,
    /// A subset the result must match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<Value>,
    /// A subset the error must match (the steer must fail).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect_error: Option<Value>,
}

impl SteerStep {
    pub(super) fn needs_app_server(&self) -> bool {
        true
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        u.texts.extend([self.thread.as_str(), self.turn.as_str()]);
        match &self.input {
            Input::Items(items) => u.values.extend(items),
            Input::Text(t) => u.texts.push(t),
        }
        u.expectations
            .extend(self.expect.iter().chain(&self.expect_error));
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let (thread, turn) = (run.text(&self.thread)?, run.text(&self.turn)?);
        let input = run.input(&self.input)?;
        let result = run.app()?.turn_steer(&thread, &turn, input).await;
        run.answered(
            "turn/steer",
            result,
            self.expect.as_ref(),
            self.expect_error.as_ref(),
        )
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        None
    }
}
