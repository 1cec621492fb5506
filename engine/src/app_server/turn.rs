//! The turn layer: start a turn, collect what codex sends for it until `turn/completed`,
//! and derive the outcome an executor reports (`parity-scenarios.md` §0.3): streamed
//! chunks, the final response chosen by phase, usage, retry progress and the final error,
//! tool calls. The transcript comes from `item/completed`, never from `turn/completed`.

use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::app_server::{AppServer, Inbound};

/// The model the worlds configure for the mock provider: what a turn reports when
/// its options name none.
pub const MOCK_MODEL: &str = "mock-model";

/// The default time one turn may take.
pub const TURN_TIMEOUT: Duration = Duration::from_secs(30);

/// `turn.status` as codex reports it in `turn/completed` (and in `thread/read`'s turns).
///
/// Read from codex's strings; a status this driver does not know is kept as
/// [`TurnStatus::Other`], so a new codex version does not break parsing. Shown (`Display`
/// and `Debug`) as codex's string, so messages read as they did when it was one. Compared
/// with statuses only, not with strings: a check names the variant it wants.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum TurnStatus {
    /// `completed`.
    Completed,
    /// `failed`.
    Failed,
    /// `interrupted`.
    Interrupted,
    /// `inProgress`.
    InProgress,
    /// Any other string (the empty string when codex sent none).
    Other(String),
}

impl TurnStatus {
    /// Codex's string for this status.
    pub fn as_str(&self) -> &str {
        match self {
            TurnStatus::Completed => "completed",
            TurnStatus::Failed => "failed",
            TurnStatus::Interrupted => "interrupted",
            TurnStatus::InProgress => "inProgress",
            TurnStatus::Other(s) => s,
        }
    }

    /// The status of a `turn` object (`turn.status`); [`TurnStatus::Other`] of `""` when
    /// it has none.
    pub fn of_turn(turn: &Value) -> TurnStatus {
        TurnStatus::from(turn["status"].as_str().unwrap_or(""))
    }
}

impl From<&str> for TurnStatus {
    fn from(s: &str) -> TurnStatus {
        match s {
            "completed" => TurnStatus::Completed,
            "failed" => TurnStatus::Failed,
            "interrupted" => TurnStatus::Interrupted,
            "inProgress" => TurnStatus::InProgress,
            other => TurnStatus::Other(other.to_string()),
        }
    }
}

impl From<String> for TurnStatus {
    fn from(s: String) -> TurnStatus {
        TurnStatus::from(s.as_str())
    }
}

impl From<TurnStatus> for String {
    fn from(s: TurnStatus) -> String {
        s.as_str().to_string()
    }
}

impl std::fmt::Display for TurnStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for TurnStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

/// The `status` of a turn's item (`commandExecution`, `fileChange`, `dynamicToolCall`) as
/// codex writes it. Serialized as codex's string, so a check compares it with the item's JSON
/// (`json!(ItemStatus::Completed)`) and its message shows the item's value as it came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ItemStatus {
    /// `inProgress`.
    InProgress,
    /// `completed`.
    Completed,
    /// `failed`.
    Failed,
    /// `declined`.
    Declined,
}

/// The turn ids `turn/start` returned on one connection, in order: what tells a turn the
/// client asked for from one codex started on its own. Filled by
/// [`AppServer::turn_start`], read by [`AppServer::started_turns`].
#[derive(Debug, Default)]
pub struct StartedTurns(std::sync::Mutex<Vec<String>>);

impl StartedTurns {
    /// Records the turn of a `turn/start` result (`turn.id`), when it has one.
    pub(crate) fn record(&self, result: &Value) {
        if let Some(id) = result.pointer("/turn/id").and_then(Value::as_str) {
            crate::lock(&self.0).push(id.to_string());
        }
    }

    /// The recorded ids, in order.
    fn ids(&self) -> Vec<String> {
        crate::lock(&self.0).clone()
    }
}

impl AppServer {
    /// Turn ids returned by `turn/start` calls on this connection.
    pub fn started_turns(&self) -> Vec<String> {
        self.started_turns.ids()
    }

    /// Records a turn the server started without a `turn/start` (a compaction's, announced
    /// by `turn/started`), so that [`AppServer::started_turns`] lists it too.
    pub fn note_started_turn(&self, id: &str) {
        self.started_turns
            .record(&serde_json::json!({"turn": {"id": id}}));
    }
}

/// A `text` user input item.
pub fn text(t: &str) -> Value {
    json!({"type": "text", "text": t, "text_elements": []})
}

/// Token counts as `thread/tokenUsage/updated` reports them (the five common keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenBreakdown {
    /// `inputTokens`.
    pub input_tokens: u64,
    /// `cachedInputTokens`.
    pub cached_input_tokens: u64,
    /// `outputTokens`.
    pub output_tokens: u64,
    /// `reasoningOutputTokens`.
    pub reasoning_output_tokens: u64,
    /// `totalTokens`.
    pub total_tokens: u64,
}

/// The `tokenUsage` of a `thread/tokenUsage/updated` notification.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// The last model response.
    pub last: TokenBreakdown,
    /// Accumulated over the thread.
    pub total: TokenBreakdown,
    /// The model's context window, when codex knows it.
    #[serde(default)]
    pub model_context_window: Option<u64>,
}

/// The usage an executor reports for a turn (§0.3): non-cached input, output, total, cached
/// reads when any, and the model. Reasoning tokens are dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecutorUsage {
    /// Input tokens minus cached ones.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Total tokens.
    pub total_tokens: u64,
    /// Cached input tokens, only when there were some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    /// The turn's model.
    pub model: String,
}

/// One thing that happened in a turn, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// `item/agentMessage/delta`.
    TextDelta {
        /// The message item.
        item_id: String,
        /// The text.
        delta: String,
    },
    /// `item/completed` of an `agentMessage`.
    Message {
        /// The item id (the Responses item id).
        item_id: String,
        /// The full text.
        text: String,
        /// `commentary`, `final_answer`, or none.
        phase: Option<String>,
    },
    /// `item/tool/call`, a dynamic tool call codex asks the client to run.
    ToolCallRequested {
        /// The call id.
        call_id: String,
        /// The tool name.
        tool: String,
        /// The namespace, if any.
        namespace: Option<String>,
        /// The parsed arguments.
        arguments: Value,
    },
    /// `item/completed` of a `dynamicToolCall`.
    ToolCallCompleted {
        /// The call id.
        call_id: String,
        /// `success` as reported.
        success: Option<bool>,
        /// The content items.
        content_items: Value,
    },
    /// `thread/tokenUsage/updated`.
    Usage(TokenUsage),
    /// An `error` with `willRetry: true`: progress, not failure.
    RetryProgress {
        /// The message (e.g. `Reconnecting... 1/5`).
        message: String,
        /// The whole error object.
        error: Value,
    },
    /// An `error` with `willRetry: false`: the terminal error.
    Error {
        /// The message.
        message: String,
        /// The whole error object.
        error: Value,
    },
}

/// A turn that has been started and not yet collected.
#[derive(Debug, Clone)]
pub struct StartedTurn {
    /// The turn id.
    pub id: String,
    /// The thread id.
    pub thread_id: String,
    /// The log cursor just before `turn/start` was sent.
    pub cursor: usize,
    /// The `turn/start` result.
    pub result: Value,
    /// The model the turn runs with (override or configured).
    pub model: String,
}

/// A completed turn.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The turn id.
    pub id: String,
    /// The thread id.
    pub thread_id: String,
    /// The `turn/start` result.
    pub start_result: Value,
    /// `turn.status` of `turn/completed` (`completed`, `failed`, `interrupted`).
    pub status: TurnStatus,
    /// `turn.error` of `turn/completed`, when not null.
    pub error: Option<Value>,
    /// The `turn` object of `turn/completed`.
    pub completed: Value,
    /// The derived events, in order.
    pub events: Vec<TurnEvent>,
    /// Every message that belonged to the turn, `turn/completed` included.
    pub messages: Vec<Inbound>,
    /// The model the turn ran with.
    pub model: String,
}

/// Extra `turn/start` parameters.
#[derive(Debug, Clone, Default)]
pub struct TurnOptions {
    /// `model`: a per-turn override.
    pub model: Option<String>,
    /// Other params merged into `turn/start`.
    pub extra: serde_json::Map<String, Value>,
}

/// Sends `turn/start`.
pub async fn start_turn(
    app: &AppServer,
    thread_id: &str,
    input: Vec<Value>,
    options: &TurnOptions,
) -> anyhow::Result<StartedTurn> {
    let cursor = app.cursor();
    let mut extra = Value::Object(options.extra.clone());
    if let Some(model) = &options.model {
        extra["model"] = json!(model);
    }
    let result = app
        .turn_start(thread_id, input, extra)
        .await
        .context("turn/start")?;
    let id = result
        .pointer("/turn/id")
        .and_then(Value::as_str)
        .with_context(|| format!("turn/start result without turn.id: {result}"))?
        .to_string();
    Ok(StartedTurn {
        id,
        thread_id: thread_id.to_string(),
        cursor,
        result,
        model: options
            .model
            .clone()
            .unwrap_or_else(|| MOCK_MODEL.to_string()),
    })
}

/// Waits for the turn's `turn/completed` and collects it.
pub async fn wait_turn(
    app: &AppServer,
    started: StartedTurn,
    timeout: Duration,
) -> anyhow::Result<Turn> {
    let done = app
        .wait_for(
            started.cursor,
            timeout,
            &format!("turn/completed of turn {}", started.id),
            |m| m.is("turn/completed") && m.turn_id() == Some(started.id.as_str()),
        )
        .await?;
    let after = app.messages().into_iter().skip(started.cursor);
    Ok(collect_turn(started, after, &done))
}

/// The turn `started` from the messages after its `turn/start` (those up to its
/// `turn/completed` `done` that belong to it): what [`wait_turn`] does with the log, and a
/// recording with the lines it relayed.
pub fn collect_turn(
    started: StartedTurn,
    after_start: impl IntoIterator<Item = Inbound>,
    done: &Inbound,
) -> Turn {
    let messages: Vec<Inbound> = after_start
        .into_iter()
        .take_while(|m| m.index <= done.index)
        .filter(|m| belongs(m, &started))
        .collect();
    let turn = done.params().get("turn").cloned().unwrap_or(Value::Null);
    Turn {
        id: started.id,
        thread_id: started.thread_id,
        start_result: started.result,
        status: TurnStatus::of_turn(&turn),
        error: turn.get("error").filter(|e| !e.is_null()).cloned(),
        completed: turn,
        events: messages.iter().filter_map(event_of).collect(),
        messages,
        model: started.model,
    }
}

/// `turn/start` and wait for `turn/completed`.
pub async fn run_turn(
    app: &AppServer,
    thread_id: &str,
    input: Vec<Value>,
    options: &TurnOptions,
) -> anyhow::Result<Turn> {
    let started = start_turn(app, thread_id, input, options).await?;
    wait_turn(app, started, TURN_TIMEOUT).await
}

/// A message belongs to the turn if it names the turn, or names the thread and no turn.
fn belongs(m: &Inbound, turn: &StartedTurn) -> bool {
    match m.turn_id() {
        Some(id) => id == turn.id,
        None => m.thread_id() == Some(turn.thread_id.as_str()),
    }
}

fn string(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn event_of(m: &Inbound) -> Option<TurnEvent> {
    let p = m.params();
    match m.method() {
        "item/agentMessage/delta" => Some(TurnEvent::TextDelta {
            item_id: string(p, "itemId"),
            delta: string(p, "delta"),
        }),
        "item/completed" => {
            let item = p.get("item")?;
            match item["type"].as_str()? {
                "agentMessage" => Some(TurnEvent::Message {
                    item_id: string(item, "id"),
                    text: string(item, "text"),
                    phase: item.get("phase").and_then(Value::as_str).map(String::from),
                }),
                "dynamicToolCall" => Some(TurnEvent::ToolCallCompleted {
                    call_id: string(item, "id"),
                    success: item.get("success").and_then(Value::as_bool),
                    content_items: item.get("contentItems").cloned().unwrap_or(Value::Null),
                }),
                _ => None,
            }
        }
        "item/tool/call" => Some(TurnEvent::ToolCallRequested {
            call_id: string(p, "callId"),
            tool: string(p, "tool"),
            namespace: p.get("namespace").and_then(Value::as_str).map(String::from),
            arguments: p.get("arguments").cloned().unwrap_or(Value::Null),
        }),
        "thread/tokenUsage/updated" => serde_json::from_value(p.get("tokenUsage")?.clone())
            .ok()
            .map(TurnEvent::Usage),
        "error" => {
            let error = p.get("error").cloned().unwrap_or(Value::Null);
            let message = string(&error, "message");
            if p.get("willRetry").and_then(Value::as_bool) == Some(true) {
                Some(TurnEvent::RetryProgress { message, error })
            } else {
                Some(TurnEvent::Error { message, error })
            }
        }
        _ => None,
    }
}

impl Turn {
    /// Streamed text (§0.3): every non-empty delta, plus the text of each completed message
    /// that got no delta.
    pub fn chunks(&self) -> Vec<String> {
        let streamed: std::collections::BTreeSet<&str> = self
            .events
            .iter()
            .filter_map(|e| match e {
                TurnEvent::TextDelta { item_id, delta } if !delta.is_empty() => {
                    Some(item_id.as_str())
                }
                _ => None,
            })
            .collect();
        self.events
            .iter()
            .filter_map(|e| match e {
                TurnEvent::TextDelta { delta, .. } if !delta.is_empty() => Some(delta.clone()),
                TurnEvent::Message { item_id, text, .. }
                    if !text.is_empty() && !streamed.contains(item_id.as_str()) =>
                {
                    Some(text.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// The completed agent messages: (item id, text, phase).
    pub fn agent_messages(&self) -> Vec<(&str, &str, Option<&str>)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                TurnEvent::Message {
                    item_id,
                    text,
                    phase,
                } => Some((item_id.as_str(), text.as_str(), phase.as_deref())),
                _ => None,
            })
            .collect()
    }

    /// The final response: the last `final_answer` message, else the last message without a
    /// phase; `commentary` never counts; none gives `""`.
    pub fn final_response(&self) -> String {
        let messages = self.agent_messages();
        let pick = |want: Option<&str>| {
            messages
                .iter()
                .rev()
                .find(|m| m.2 == want)
                .map(|m| m.1.to_string())
        };
        pick(Some("final_answer"))
            .or_else(|| pick(None))
            .unwrap_or_default()
    }

    /// The turn's last `thread/tokenUsage/updated`.
    pub fn token_usage(&self) -> Option<&TokenUsage> {
        self.events.iter().rev().find_map(|e| match e {
            TurnEvent::Usage(u) => Some(u),
            _ => None,
        })
    }

    /// The executor usage derived from the last `tokenUsage.last`.
    pub fn executor_usage(&self) -> Option<ExecutorUsage> {
        let last = self.token_usage()?.last;
        let cached = last.cached_input_tokens.min(last.input_tokens);
        Some(ExecutorUsage {
            input_tokens: last.input_tokens - cached,
            output_tokens: last.output_tokens,
            total_tokens: last.total_tokens,
            cache_read_input_tokens: (cached > 0).then_some(cached),
            model: self.model.clone(),
        })
    }

    /// Messages of retry progress (`error` with `willRetry: true`), in order.
    pub fn retry_progress(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                TurnEvent::RetryProgress { message, .. } => Some(message.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Terminal errors (`error` with `willRetry: false`).
    pub fn terminal_errors(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                TurnEvent::Error { message, .. } => Some(message.as_str()),
                _ => None,
            })
            .collect()
    }

    /// `turn.error.message`, or `""`.
    pub fn error_message(&self) -> &str {
        self.error
            .as_ref()
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The params of every message with this method, in order.
    pub fn notifications(&self, method: &str) -> Vec<&Value> {
        self.messages
            .iter()
            .filter(|m| m.is(method))
            .map(|m| m.params())
            .collect()
    }

    /// The items of `item/completed` of the given type, in order.
    pub fn completed_items(&self, item_type: &str) -> Vec<&Value> {
        self.notifications("item/completed")
            .into_iter()
            .filter_map(|p| p.get("item"))
            .filter(|i| i["type"] == item_type)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app_server::message::Message;
    use std::time::Instant;

    #[test]
    fn turn_status_reads_codex_strings_and_keeps_unknown_ones() {
        let read = |v: Value| serde_json::from_value::<TurnStatus>(v).unwrap();
        assert_eq!(read(json!("completed")), TurnStatus::Completed);
        assert_eq!(read(json!("failed")), TurnStatus::Failed);
        assert_eq!(read(json!("interrupted")), TurnStatus::Interrupted);
        assert_eq!(read(json!("inProgress")), TurnStatus::InProgress);
        let new = read(json!("paused"));
        assert_eq!(new, TurnStatus::Other("paused".into()));
        assert_eq!(serde_json::to_value(&new).unwrap(), json!("paused"));
        assert_eq!(
            TurnStatus::of_turn(&json!({"id": "u"})),
            TurnStatus::Other(String::new())
        );
        assert_eq!(format!("{:?}", TurnStatus::Failed), "\"failed\"");
        assert_eq!(TurnStatus::InProgress.to_string(), "inProgress");
    }

    #[test]
    fn item_status_is_written_as_codex_writes_it() {
        let written = [
            ItemStatus::InProgress,
            ItemStatus::Completed,
            ItemStatus::Failed,
            ItemStatus::Declined,
        ]
        .map(|s| json!(s));
        assert_eq!(written, ["inProgress", "completed", "failed", "declined"]);
    }

    #[test]
    fn started_turns_keep_the_ids_of_turn_start_results() {
        let started = StartedTurns::default();
        started.record(&json!({"turn": {"id": "t1", "status": "inProgress"}}));
        started.record(&json!({"thread": {"id": "not a turn"}}));
        started.record(&json!({"turn": {"id": "t2"}}));
        assert_eq!(started.ids(), ["t1", "t2"]);
    }

    fn turn_of(events: Vec<TurnEvent>) -> Turn {
        Turn {
            id: "u".into(),
            thread_id: "t".into(),
            start_result: Value::Null,
            status: TurnStatus::Completed,
            error: None,
            completed: Value::Null,
            events,
            messages: vec![],
            model: "m".into(),
        }
    }

    fn msg(id: &str, text: &str, phase: Option<&str>) -> TurnEvent {
        TurnEvent::Message {
            item_id: id.into(),
            text: text.into(),
            phase: phase.map(String::from),
        }
    }

    fn delta(id: &str, d: &str) -> TurnEvent {
        TurnEvent::TextDelta {
            item_id: id.into(),
            delta: d.into(),
        }
    }

    #[test]
    fn final_answer_beats_commentary_and_unknown() {
        let t = turn_of(vec![
            msg("a", "x", None),
            msg("b", "Final", Some("final_answer")),
            msg("c", "y", None),
        ]);
        assert_eq!(t.final_response(), "Final");
    }

    #[test]
    fn last_unknown_phase_wins_and_empty_counts() {
        assert_eq!(
            turn_of(vec![msg("a", "First", None), msg("b", "Second", None)]).final_response(),
            "Second"
        );
        assert_eq!(
            turn_of(vec![msg("a", "First", None), msg("b", "", None)]).final_response(),
            ""
        );
    }

    #[test]
    fn commentary_only_gives_empty() {
        let t = turn_of(vec![msg("a", "Commentary", Some("commentary"))]);
        assert_eq!(t.final_response(), "");
        assert_eq!(t.chunks(), vec!["Commentary"]);
    }

    #[test]
    fn streamed_text_is_not_repeated() {
        let t = turn_of(vec![
            delta("m", "he"),
            delta("m", ""),
            delta("m", "llo"),
            msg("m", "hello", None),
            msg("n", "extra", None),
        ]);
        assert_eq!(t.chunks(), vec!["he", "llo", "extra"]);
    }

    #[test]
    fn executor_usage_subtracts_cached_input() {
        let b = TokenBreakdown {
            input_tokens: 11,
            cached_input_tokens: 3,
            output_tokens: 7,
            reasoning_output_tokens: 5,
            total_tokens: 18,
        };
        let t = turn_of(vec![TurnEvent::Usage(TokenUsage {
            last: b,
            total: b,
            model_context_window: None,
        })]);
        let u = serde_json::to_value(t.executor_usage().unwrap()).unwrap();
        assert_eq!(
            u,
            json!({"input_tokens":8,"output_tokens":7,"total_tokens":18,"cache_read_input_tokens":3,"model":"m"})
        );
        let b0 = TokenBreakdown {
            cached_input_tokens: 0,
            ..b
        };
        let t0 = turn_of(vec![TurnEvent::Usage(TokenUsage {
            last: b0,
            total: b0,
            model_context_window: None,
        })]);
        assert_eq!(t0.executor_usage().unwrap().cache_read_input_tokens, None);
    }

    #[test]
    fn errors_split_by_will_retry() {
        let inbound = |line: &str| Inbound {
            index: 0,
            message: Message::parse(line).unwrap(),
            at: Instant::now(),
        };
        let p = event_of(&inbound(
            r#"{"method":"error","params":{"error":{"message":"Reconnecting... 1/5"},"willRetry":true}}"#,
        ));
        assert!(matches!(p, Some(TurnEvent::RetryProgress { .. })));
        let f = event_of(&inbound(
            r#"{"method":"error","params":{"error":{"message":"boom"},"willRetry":false}}"#,
        ));
        assert_eq!(
            f,
            Some(TurnEvent::Error {
                message: "boom".into(),
                error: json!({"message":"boom"})
            })
        );
    }
}
