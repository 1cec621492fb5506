//! `do = "wait_turn"`: waits for a turn started with `wait = false` to complete.

use std::collections::BTreeMap;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Uses;
use crate::app_server::turn::wait_turn;
use crate::scenario_file::execute::{Run, TURN_WAIT, wait_of};
use crate::scenario_file::fields::{is_turn_var, turn_var};

/// The wait for a turn's end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitTurnStep {
    /// The turn (`$turn` by default).
    #[serde(default = "turn_var", skip_serializing_if = "is_turn_var")]
    pub turn: String,
    /// A subset the completed turn must match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<Value>,
    /// Variables bound from the completed turn.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capture: BTreeMap<String, String>,
    /// How long to wait.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A mismatch is drift under this key instead of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
}

impl WaitTurnStep {
    pub(super) fn needs_app_server(&self) -> bool {
        true
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        u.texts.push(&self.turn);
        u.expectations.extend(&self.expect);
        u.captures = Some(&self.capture);
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let id = run.text(&self.turn)?;
        let started = run.pending.remove(&id).with_context(|| {
            format!("expected a turn started with wait = false, found {id}, which is not waiting")
        })?;
        let turn = wait_turn(&*run.app()?, started, wait_of(self.timeout_ms, TURN_WAIT)).await?;
        run.finished_turn(
            &turn,
            self.expect.as_ref(),
            &self.capture,
            self.drift.as_ref(),
        )
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        Some(&mut self.capture)
    }
}
