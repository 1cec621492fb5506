//! `do = "wait"`: waits for a notification (after the one the previous `wait` found) whose
//! params match.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Uses;
use crate::app_server::message::Message;
use crate::scenario_file::execute::{DEFAULT_WAIT, Run, wait_of};
use crate::scenario_file::matching;

/// The wait for a notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitStep {
    /// The notification method.
    pub notification: String,
    /// A subset its params must match.
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub matches: Option<Value>,
    /// Variables bound from its params.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capture: BTreeMap<String, String>,
    /// How long to wait.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl WaitStep {
    pub(super) fn needs_app_server(&self) -> bool {
        true
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        u.expectations.extend(&self.matches);
        u.captures = Some(&self.capture);
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let notification = &self.notification;
        let expected = self.matches.as_ref().map(|m| run.value(m)).transpose()?;
        let found = run
            .app()?
            .wait_for(
                run.cursor,
                wait_of(self.timeout_ms, DEFAULT_WAIT),
                notification,
                |m| {
                    matches!(m.message, Message::Notification { .. })
                        && m.is(notification)
                        && expected
                            .as_ref()
                            .is_none_or(|e| matching::check(e, Some(m.params()), "").is_ok())
                },
            )
            .await?;
        run.cursor = found.index + 1;
        run.bind(&self.capture, found.params())
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        Some(&mut self.capture)
    }
}
