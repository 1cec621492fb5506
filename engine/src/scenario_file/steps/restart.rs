//! `do = "restart"`: the app-server exits cleanly and a new one starts in the same home (a
//! resume in a new process); the replies registered so far hold for it too.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Uses;
use crate::scenario_file::execute::Run;

/// A restart of the app-server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestartStep {}

impl RestartStep {
    pub(super) fn needs_app_server(&self) -> bool {
        true
    }

    pub(super) fn uses(&self, _: &mut Uses<'_>) {}

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        run.app()?
            .exit_cleanly("the app-server before the restart")
            .await?;
        let app = run.world.start().await?;
        for (method, answer) in &run.answers {
            run.register(&app, method, answer);
        }
        run.apps.push(app.clone());
        run.app = Some(app);
        run.cursor = 0;
        Ok(())
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        None
    }
}
