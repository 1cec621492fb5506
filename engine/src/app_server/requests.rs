//! Typed helpers for the client requests integrations use most. Each takes the required
//! ids and a map of optional params (merged in as given, so fields a version adds pass
//! through) and returns codex's result as JSON: versions disagree on result shapes.

use serde_json::{Value, json};

use crate::app_server::{AppServer, CallError};

/// Merges `extra` (an object, or null) into `base`.
fn with(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
    base
}

impl AppServer {
    /// `thread/start` with the given params (e.g. `cwd`, `model`, `dynamicTools`, `ephemeral`).
    pub async fn thread_start(&self, params: Value) -> Result<Value, CallError> {
        self.call("thread/start", with(json!({}), params)).await
    }

    /// `thread/resume {threadId, ...extra}`.
    pub async fn thread_resume(&self, thread_id: &str, extra: Value) -> Result<Value, CallError> {
        self.call("thread/resume", with(json!({"threadId": thread_id}), extra))
            .await
    }

    /// `thread/read {threadId, ...extra}` (e.g. `includeTurns`).
    pub async fn thread_read(&self, thread_id: &str, extra: Value) -> Result<Value, CallError> {
        self.call("thread/read", with(json!({"threadId": thread_id}), extra))
            .await
    }

    /// `thread/fork {threadId, ...extra}`.
    pub async fn thread_fork(&self, thread_id: &str, extra: Value) -> Result<Value, CallError> {
        self.call("thread/fork", with(json!({"threadId": thread_id}), extra))
            .await
    }

    /// `turn/start {threadId, input, ...extra}` (see [`crate::app_server::turn`] to run a whole
    /// turn). The turn id it returns is recorded (see [`AppServer::started_turns`]).
    pub async fn turn_start(
        &self,
        thread_id: &str,
        input: Vec<Value>,
        extra: Value,
    ) -> Result<Value, CallError> {
        let result = self
            .call(
                "turn/start",
                with(json!({"threadId": thread_id, "input": input}), extra),
            )
            .await?;
        self.started_turns.record(&result);
        Ok(result)
    }

    /// `turn/steer {threadId, expectedTurnId, input}`.
    pub async fn turn_steer(
        &self,
        thread_id: &str,
        turn_id: &str,
        input: Vec<Value>,
    ) -> Result<Value, CallError> {
        self.call(
            "turn/steer",
            json!({"threadId": thread_id, "expectedTurnId": turn_id, "input": input}),
        )
        .await
    }

    /// `turn/interrupt {threadId, turnId}`.
    pub async fn turn_interrupt(&self, thread_id: &str, turn_id: &str) -> Result<Value, CallError> {
        self.call(
            "turn/interrupt",
            json!({"threadId": thread_id, "turnId": turn_id}),
        )
        .await
    }

    /// `thread/goal/set {threadId, ...fields}` (`objective`, `status`, `tokenBudget`, `origin`;
    /// a `tokenBudget: null` in `fields` is sent as null, an absent one is not sent).
    pub async fn goal_set(&self, thread_id: &str, fields: Value) -> Result<Value, CallError> {
        self.call(
            "thread/goal/set",
            with(json!({"threadId": thread_id}), fields),
        )
        .await
    }

    /// `thread/goal/get {threadId}`.
    pub async fn goal_get(&self, thread_id: &str) -> Result<Value, CallError> {
        self.call("thread/goal/get", json!({"threadId": thread_id}))
            .await
    }

    /// `thread/goal/clear {threadId}`.
    pub async fn goal_clear(&self, thread_id: &str) -> Result<Value, CallError> {
        self.call("thread/goal/clear", json!({"threadId": thread_id}))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_params_are_merged_and_null_is_kept() {
        let v = with(
            json!({"threadId": "t"}),
            json!({"tokenBudget": null, "objective": "o"}),
        );
        assert_eq!(
            v,
            json!({"threadId": "t", "tokenBudget": null, "objective": "o"})
        );
        assert_eq!(
            with(json!({"threadId": "t"}), Value::Null),
            json!({"threadId": "t"})
        );
    }
}
