//! `do = "turn"`: `turn/start`, then (unless `wait = false`) its `turn/completed`, checked
//! and captured; binds `$turn`.

use std::collections::BTreeMap;

use anyhow::bail;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Uses;
use crate::app_server::turn::{TurnOptions, start_turn, wait_turn};
use crate::scenario_file::execute::{Run, TURN_WAIT, wait_of};
use crate::scenario_file::fields::{Input, is_thread_var, is_true, thread_var, yes};

/// A turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnStep {
    /// The thread (`$thread` by default).
    #[serde(default = "thread_var", skip_serializing_if = "is_thread_var")]
    pub thread: String,
    /// The input.
    pub input: Input,
    /// Other `turn/start` params.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
    /// Wait for the turn to complete (true by default).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub wait: bool,
    /// A subset the completed turn (with `finalResponse` and `chunks`) must match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<Value>,
    /// Variables bound from the completed turn (or the `turn/start` result).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capture: BTreeMap<String, String>,
    /// How long to wait for `turn/completed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A mismatch is drift under this key instead of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
}

impl TurnStep {
    /// A turn of `input` on `$thread` that is waited for, with nothing else.
    pub fn new(input: Input) -> TurnStep {
        TurnStep {
            thread: thread_var(),
            input,
            params: Value::Null,
            wait: true,
            expect: None,
            capture: BTreeMap::new(),
            timeout_ms: None,
            drift: None,
        }
    }

    pub(super) fn needs_app_server(&self) -> bool {
        true
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        u.texts.push(&self.thread);
        match &self.input {
            Input::Items(items) => u.values.extend(items),
            Input::Text(t) => u.texts.push(t),
        }
        u.values.push(&self.params);
        u.expectations.extend(&self.expect);
        u.captures = Some(&self.capture);
        u.binds.push("turn");
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let thread = run.text(&self.thread)?;
        let input = run.input(&self.input)?;
        let extra = match run.value(&self.params)? {
            Value::Object(map) => map,
            Value::Null => Default::default(),
            other => bail!("expected turn params as a table, found {other}"),
        };
        let options = TurnOptions { model: None, extra };
        let app = run.app()?;
        let started = start_turn(&app, &thread, input, &options).await?;
        run.vars.set("turn", json!(started.id));
        if self.wait {
            let turn = wait_turn(&app, started, wait_of(self.timeout_ms, TURN_WAIT)).await?;
            run.finished_turn(
                &turn,
                self.expect.as_ref(),
                &self.capture,
                self.drift.as_ref(),
            )
        } else {
            let result = started.result.clone();
            run.pending.insert(started.id.clone(), started);
            run.bind(&self.capture, &result)
        }
    }

    pub(super) fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
        Some(&mut self.capture)
    }
}
