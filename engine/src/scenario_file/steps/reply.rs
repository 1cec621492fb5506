//! `do = "reply"`: answers every later server request `method` (approvals, dynamic tool
//! calls) with `result`, or with `error`, or leaves it unanswered.

use std::collections::BTreeMap;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Uses;
use crate::scenario_file::execute::{Answer, Run};
use crate::scenario_file::fields::is_false;

/// A standing answer to a server request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyStep {
    /// The server request method.
    pub method: String,
    /// The result to answer with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error to answer with (`{code, message}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// Leave it unanswered, as a client that never answers.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unanswered: bool,
}

impl ReplyStep {
    pub(super) fn needs_app_server(&self) -> bool {
        true
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        let given = usize::from(self.result.is_some())
            + usize::from(self.error.is_some())
            + usize::from(self.unanswered);
        if given != 1 {
            u.problems.push((
                self.method.clone(),
                format!(
                    "expected exactly one of result, error or unanswered = true in a reply to \
                     {}, found {given}",
                    self.method
                ),
            ));
        }
        u.values.extend(self.result.iter().chain(&self.error));
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let answer = if self.unanswered {
            Answer::Unanswered
        } else if let Some(e) = &self.error {
            Answer::Error(
                serde_json::from_value(run.value(e)?)
                    .context("expected error = { code = N, message = \"…\" } in a reply")?,
            )
        } else {
            let r = self.result.clone().unwrap_or(Value::Null);
            Answer::Result(run.value(&r)?)
        };
        run.register(&*run.app()?, &self.method, &answer);
        run.answers.push((self.method.clone(), answer));
        Ok(())
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        None
    }
}
