//! `do = "sleep"`: waits.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Uses;
use crate::scenario_file::execute::Run;

/// A pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SleepStep {
    /// How long, in milliseconds.
    pub ms: u64,
}

impl SleepStep {
    pub(super) fn needs_app_server(&self) -> bool {
        false
    }

    pub(super) fn uses(&self, _: &mut Uses<'_>) {}

    pub(super) async fn run(&self, _: &mut Run<'_>) -> anyhow::Result<()> {
        tokio::time::sleep(Duration::from_millis(self.ms)).await;
        Ok(())
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        None
    }
}
