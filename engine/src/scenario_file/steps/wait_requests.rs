//! `do = "wait_requests"`: waits until the sidecar has captured at least `count` model
//! requests (codex then waits on the last one: steer or interrupt now).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Uses;
use crate::scenario_file::execute::{DEFAULT_WAIT, Run, wait_of};

/// The wait for model requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitRequestsStep {
    /// How many.
    pub count: usize,
    /// How long to wait.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl WaitRequestsStep {
    pub(super) fn needs_app_server(&self) -> bool {
        false
    }

    pub(super) fn uses(&self, _: &mut Uses<'_>) {}

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        run.world
            .requests_arrived(self.count, wait_of(self.timeout_ms, DEFAULT_WAIT))
            .await
            .map(|_| ())
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        None
    }
}
