//! `on = "requests"`: the number of model requests the sidecar captured.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::scenario_file::execute::Run;
use crate::scenario_file::steps::Uses;

/// The count of model requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestsCheck {
    /// Exactly this many.
    pub count: usize,
    /// A mismatch is drift under this key instead of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
}

impl RequestsCheck {
    pub(super) fn needs_app_server(&self) -> bool {
        false
    }

    pub(super) fn uses(&self, _: &mut Uses<'_>) {}

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let count = self.count;
        let n = run.model_requests(count).await?.len();
        let result = if n == count {
            Ok(())
        } else {
            Err(format!(
                "at /: expected {count} model request(s), found {n}"
            ))
        };
        run.judge(self.drift.as_ref(), result, &json!(n), "model requests")
    }
}
