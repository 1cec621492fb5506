//! `do = "script"`: queues more scripted responses.

use std::collections::BTreeMap;

use codex_parity_sidecar::Scripted;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Uses;
use crate::scenario_file::execute::Run;
use crate::scenario_file::matching::literals;

/// More responses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptStep {
    /// The responses, in the sidecar's JSON form (`"$null"` is null, `"$$…"` a `$…`).
    pub response: Vec<Value>,
}

impl ScriptStep {
    pub(super) fn needs_app_server(&self) -> bool {
        false
    }

    pub(super) fn uses(&self, u: &mut Uses<'_>) {
        for (i, r) in self.response.iter().enumerate() {
            if let Err(e) = Scripted::from_json(&literals(r)) {
                u.problems.push((
                    String::new(),
                    format!(
                        "expected a scripted response (docs/sidecar-protocol.md §2) as \
                         response #{i}: {e}"
                    ),
                ));
            }
        }
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let scripts = self
            .response
            .iter()
            .map(|r| Scripted::from_json(&literals(r)).map_err(|e| anyhow::anyhow!("{e}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        run.world.script(scripts).await
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        None
    }
}
