//! `do = "release"`: opens a sidecar gate (`"gates"` of a timed response).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Uses;
use crate::scenario_file::execute::Run;

/// A gate opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseStep {
    /// The gate's name.
    pub gate: String,
}

impl ReleaseStep {
    pub(super) fn needs_app_server(&self) -> bool {
        false
    }

    pub(super) fn uses(&self, _: &mut Uses<'_>) {}

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        run.world.release(&self.gate).await.map(|_| ())
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        None
    }
}
