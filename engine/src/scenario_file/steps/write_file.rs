//! `do = "write_file"`: writes a file into the workspace.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Uses;
use crate::scenario_file::execute::{Run, write_file};

/// A file written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFileStep {
    /// The path, relative to the workspace.
    pub path: String,
    /// The content.
    pub content: String,
}

impl WriteFileStep {
    pub(super) fn needs_app_server(&self) -> bool {
        false
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        u.paths.push(&self.path);
        u.texts.extend([self.path.as_str(), self.content.as_str()]);
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let (path, content) = (run.text(&self.path)?, run.text(&self.content)?);
        write_file(&run.world.workspace, &path, &content)
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        None
    }
}
