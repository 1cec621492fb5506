//! `do = "request"`: one JSON-RPC request to the app-server; its result (or error) is
//! checked and captured.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Uses;
use crate::scenario_file::execute::Run;

/// A JSON-RPC request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestStep {
    /// The method.
    pub method: String,
    /// The params.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
    /// A subset the result must match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<Value>,
    /// A subset the JSON-RPC error must match (the call must fail).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect_error: Option<Value>,
    /// Variables bound from the result: name → JSON pointer.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capture: BTreeMap<String, String>,
    /// How long to wait for the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A mismatch is drift under this key instead of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
}

impl RequestStep {
    pub(super) fn needs_app_server(&self) -> bool {
        true
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        u.values.push(&self.params);
        u.expectations
            .extend(self.expect.iter().chain(&self.expect_error));
        u.captures = Some(&self.capture);
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let method = &self.method;
        let params = run.value(&self.params)?;
        let app = run.app()?;
        let timeout = self
            .timeout_ms
            .map_or(app.call_timeout, Duration::from_millis);
        let result = app.call_with_timeout(method, params, timeout).await;
        if method == "turn/start"
            && let Ok(v) = &result
        {
            app.started_turns.record(v);
        }
        let drift = self.drift.as_ref();
        let value = match &self.expect_error {
            Some(expected) => run.expect_failure(method, result, expected, drift)?,
            None => {
                let v = result.with_context(|| format!("{method} failed"))?;
                if let Some(expected) = &self.expect {
                    run.expect(drift, expected, &v, &format!("{method} result"))?;
                }
                v
            }
        };
        run.bind(&self.capture, &value)
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        Some(&mut self.capture)
    }
}
