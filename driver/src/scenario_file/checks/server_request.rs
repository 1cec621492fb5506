//! `on = "server_request"`: the requests codex sent its client.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::count_matching;
use crate::app_server::message::Message;
use crate::scenario_file::execute::Run;
use crate::scenario_file::steps::Uses;

/// Server requests of one method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerRequestCheck {
    /// The method.
    pub method: String,
    /// A subset the params must match.
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub matches: Option<Value>,
    /// Exactly this many match (at least one when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
    /// A mismatch is drift under this key instead of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
}

impl ServerRequestCheck {
    pub(super) fn needs_app_server(&self) -> bool {
        true
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        u.expectations.extend(&self.matches);
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let method = &self.method;
        let all = run.messages(|m| matches!(m, Message::Request { method: x, .. } if x == method));
        count_matching(
            run,
            &all,
            method,
            self.matches.as_ref(),
            self.count,
            self.drift.as_ref(),
        )
    }
}
